#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1 OR MIT
#
# `make -C fuzz run`: each target FUZZ_SECONDS (default 60) from its
# committed corpus (fuzz/corpus/<target>, read only; new units go to
# fuzz/build/work/<target>), at nice 19, then one summary line per
# target and a result line:
#
#   fuzz_intake: 571234 execs, 9520 exec/s, cov 702 ft 3011, 412 new units, 0 crashes (60 s)
#   3 passed, 0 failed
#
# A crash, sanitizer report or harness invariant keeps its input in
# fuzz/crashes/<target>-crash-<sha1> (docs/fuzzing.md: reproducing) and
# makes the exit status non-zero.  Usage: run.sh TARGET...
set -u -o pipefail
cd "$(dirname "$0")" || exit 1

secs=${FUZZ_SECONDS:-60}
flags=${FUZZ_FLAGS:-}
pass=0
fail=0
mkdir -p build/work crashes build/logs
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

for t in "$@"; do
	log=build/logs/$t.log
	mkdir -p "build/work/$t"
	before=$(ls crashes | grep -c "^$t-" || true)
	start=$SECONDS
	# -timeout: an input taking 10 s is a hang; -rss_limit_mb: a leak
	# that grows without bound is one too.
	# shellcheck disable=SC2086
	nice -n 19 "build/$t" -max_total_time="$secs" -print_final_stats=1 \
		-timeout=10 -rss_limit_mb=2048 -max_len=4096 \
		-artifact_prefix="crashes/$t-" $flags \
		"build/work/$t" "corpus/$t" > "$log" 2>&1
	rc=$?
	after=$(ls crashes | grep -c "^$t-" || true)
	crashes=$((after - before))
	stat() { sed -nE "s/^stat::$1: *([0-9]+).*/\1/p" "$log" | tail -1; }
	execs=$(stat number_of_executed_units)
	eps=$(stat average_exec_per_sec)
	new=$(stat new_units_added)
	last=$(grep -E '^#[0-9]+' "$log" | tail -1)
	cov=$(sed -nE 's/.* cov: ([0-9]+).*/\1/p' <<< "$last")
	ft=$(sed -nE 's/.* ft: ([0-9]+).*/\1/p' <<< "$last")
	if [ "$rc" -ne 0 ] && [ "$crashes" -eq 0 ]; then
		crashes=1	# died without an artifact (e.g. OOM of the host)
	fi
	printf '%s: %s execs, %s exec/s, cov %s ft %s, %s new units, %d crashes (%d s)\n' \
		"$t" "${execs:-?}" "${eps:-?}" "${cov:-?}" "${ft:-?}" "${new:-?}" \
		"$crashes" $((SECONDS - start))
	if [ "$rc" -eq 0 ] && [ "$crashes" -eq 0 ]; then
		pass=$((pass + 1))
	else
		fail=$((fail + 1))
		echo "$t: exit $rc; log $PWD/$log:"
		grep -E 'INVARIANT|ERROR: |SUMMARY|runtime error|Test unit written' "$log" |
			head -8 | sed 's/^/    /'
	fi
done
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
