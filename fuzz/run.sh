#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1 OR MIT
#
# `make -C fuzz run`: each target from its committed corpus
# (fuzz/corpus/<target>, read only; new units go to
# fuzz/build/work/<target>), at nice 19, until its coverage stops
# growing, then one summary line per target and a result line:
#
#   fuzz_intake: 571234 execs, 9520 exec/s, cov 702 ft 3011, 412 new units, 0 crashes (41 s, cov flat 20 s)
#   3 passed, 0 failed
#
# How long: a target runs at least FUZZ_MIN_SECONDS (default 20) and at
# most FUZZ_SECONDS (default 60, libFuzzer's -max_total_time); in between
# it is stopped (SIGINT, libFuzzer's own orderly exit) once its edge
# coverage ("cov:") has not grown for FUZZ_PLATEAU seconds (default 20).
# From the committed corpus on a loaded 2-core host (2026-12-06) the
# targets' last new edges came at 42 s (intake), 3 s then 55 s (scan),
# 50 s (recover): a fresh tree mostly runs to the cap; a tree whose
# build/work/ holds earlier runs' units starts near its plateau and stops
# after FUZZ_MIN_SECONDS.  FUZZ_PLATEAU=0 turns the plateau off (the cap
# only, as before).
#
# FUZZ_JOBS targets (default: the number of CPUs, at most 2) run at once:
# each is one single-threaded process, and make check runs this suite
# alone.
#
# A crash, sanitizer report or harness invariant keeps its input in
# fuzz/crashes/<target>-crash-<sha1> (docs/fuzzing.md: reproducing) and
# makes the exit status non-zero.  Usage: run.sh TARGET...
set -u -o pipefail
cd "$(dirname "$0")" || exit 1

secs=${FUZZ_SECONDS:-60}
min_secs=${FUZZ_MIN_SECONDS:-20}
plateau=${FUZZ_PLATEAU:-20}
flags=${FUZZ_FLAGS:-}
jobs=${FUZZ_JOBS:-$(nproc)}
[ "$jobs" -ge 1 ] 2> /dev/null || jobs=1
[ -n "${FUZZ_JOBS:-}" ] || [ "$jobs" -le 2 ] || jobs=2
# libFuzzer's exit status after SIGINT (its -interrupted_exitcode), named
# so that no crash status can be mistaken for it.
INT_RC=72
mkdir -p build/work crashes build/logs
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

# cov_now LOG: the highest "cov: N" of the log's last status lines (cov
# never falls; empty before the first one).
cov_now() {
	tail -c 65536 "$1" 2> /dev/null | grep -aoE ' cov: [0-9]+' |
		sed 's/ cov: //' | sort -n | tail -n 1
}

# fuzz_one TARGET: run it, write its summary line to build/logs/T.sum
# and its verdict (0 pass, 1 fail) to build/logs/T.rc.
fuzz_one() {
	local t=$1 log=build/logs/$1.log before after crashes start pid rc
	local best='' cov flat_since stopped='' why
	mkdir -p "build/work/$t"
	before=$(find crashes -maxdepth 1 -name "$t-*" | wc -l)
	start=$SECONDS
	flat_since=$SECONDS
	# -timeout: an input taking 10 s is a hang; -rss_limit_mb: a leak
	# that grows without bound is one too.
	# shellcheck disable=SC2086
	nice -n 19 "build/$t" -max_total_time="$secs" -print_final_stats=1 \
		-timeout=10 -rss_limit_mb=2048 -max_len=4096 \
		-interrupted_exitcode=$INT_RC \
		-artifact_prefix="crashes/$t-" $flags \
		"build/work/$t" "corpus/$t" > "$log" 2>&1 &
	pid=$!
	while kill -0 "$pid" 2> /dev/null; do
		sleep 1
		cov=$(cov_now "$log")
		if [ -n "$cov" ] && { [ -z "$best" ] || [ "$cov" -gt "$best" ]; }; then
			best=$cov
			flat_since=$SECONDS
		fi
		if [ "$plateau" -gt 0 ] && [ -z "$stopped" ] &&
			[ $((SECONDS - start)) -ge "$min_secs" ] &&
			[ $((SECONDS - flat_since)) -ge "$plateau" ]; then
			stopped="cov flat $((SECONDS - flat_since)) s"
			kill -INT "$pid" 2> /dev/null
		fi
	done
	wait "$pid"
	rc=$?
	# Our SIGINT's exit is the orderly end of the run; any other
	# non-zero status (a crash, a leak, a timeout, out of memory) is not.
	[ -n "$stopped" ] && [ "$rc" -eq $INT_RC ] && rc=0
	why=${stopped:-cap}
	[ "$rc" -eq 0 ] || why="exit $rc"
	after=$(find crashes -maxdepth 1 -name "$t-*" | wc -l)
	crashes=$((after - before))
	stat() { sed -nE "s/^stat::$1: *([0-9]+).*/\1/p" "$log" | tail -1; }
	local execs eps new last ft
	execs=$(stat number_of_executed_units)
	eps=$(stat average_exec_per_sec)
	new=$(stat new_units_added)
	last=$(grep -aE '^#[0-9]+' "$log" | tail -1)
	cov=$(sed -nE 's/.* cov: ([0-9]+).*/\1/p' <<< "$last")
	ft=$(sed -nE 's/.* ft: ([0-9]+).*/\1/p' <<< "$last")
	if [ "$rc" -ne 0 ] && [ "$crashes" -eq 0 ]; then
		crashes=1	# died without an artifact (e.g. OOM of the host)
	fi
	{
		printf '%s: %s execs, %s exec/s, cov %s ft %s, %s new units, %d crashes (%d s, %s)\n' \
			"$t" "${execs:-?}" "${eps:-?}" "${cov:-?}" "${ft:-?}" "${new:-?}" \
			"$crashes" $((SECONDS - start)) "$why"
		if [ "$rc" -ne 0 ] || [ "$crashes" -ne 0 ]; then
			echo "$t: exit $rc; log $PWD/$log:"
			grep -aE 'INVARIANT|ERROR: |SUMMARY|runtime error|Test unit written' "$log" |
				head -8 | sed 's/^/    /'
		fi
	} > "build/logs/$t.sum"
	[ "$rc" -eq 0 ] && [ "$crashes" -eq 0 ]
	echo $? > "build/logs/$t.rc"
}

running=()
for t in "$@"; do
	rm -f "build/logs/$t.sum" "build/logs/$t.rc"
	while [ ${#running[@]} -ge "$jobs" ]; do
		wait -n
		alive=()
		for p in "${running[@]}"; do kill -0 "$p" 2> /dev/null && alive+=("$p"); done
		running=("${alive[@]}")
	done
	fuzz_one "$t" &
	running+=("$!")
done
wait

pass=0
fail=0
for t in "$@"; do
	cat "build/logs/$t.sum" 2> /dev/null || echo "$t: no summary (the runner died)"
	if [ "$(cat "build/logs/$t.rc" 2> /dev/null)" = 0 ]; then
		pass=$((pass + 1))
	else
		fail=$((fail + 1))
	fi
done
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
