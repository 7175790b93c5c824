#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The debug lab's suites in one boot of the debug kernel (make check's
# "debug" suite), so that the boot (~65 s under TCG) and the kmemleak scan
# after rmmod (~80 s) are paid once, not four times:
#
#   1. kunit   with --kunit KO: the KUnit suites, which run as dq_kunit.ko
#              loads (it needs dq.ko's KUnit-only exports); every
#              KUNIT_CASE() of kmod/tests/dq_kunit.c must report
#   2. abi     the kernel-ABI selftests and libdqshim's kernel-backend and
#              thread tests (selftests/run-vm-tests.sh PROGRAM...)
#   3. stress  the randomized ABI stress (dq_stress -t SECS), beside
#   4. nlstress  the randomized stress of the generic netlink family
#              (selftests/ctl/nlstress -t SECS, default 60) in a network
#              namespace of its own, with the arena limit at 16 MiB; its
#              closing line counts checks
#   5. ctl     the control plane's kernel paths (selftests/ctl/run.sh
#              TEST...); last, because one of its tests reloads dq.ko
#
# stress and nlstress run at once (each its minute, beside the other:
# ~60 s of the suite saved, 2026-12-06), nlstress in a network namespace
# of its own: its model holds that a queue id it neither made nor saw at
# its start, or one it deleted, names no queue (ENOENT), and dq_stress
# makes and frees private queues all the time, in the initial namespace,
# whose ids the kernel's xa_alloc() hands out again; another namespace's
# queue is no queue at all to it (the ctl test netns_isolation).  Its
# E2BIG is no obstacle either: dq_stress asks for arenas of at most
# 16 MiB, the limit nlstress sets, and dq.ko refuses only above it.
#
# Runs inside the VM:
#   selftests/vm/run --kernel debug -- selftests/vm/debug-suites.sh \
#       [--kunit KO] --stress SECS [--nlstress SECS] --ctl 'TEST...' \
#       -- PROGRAM...
# Each part's own output is streamed as it runs, then a line
# "# part NAME: N passed, N failed, N skipped (exit RC, T s)"; the last
# line sums the parts.  A part without a closing line counts as one
# failure.  Exit status 0 when nothing failed.  Splats and kmemleak are
# judged by selftests/vm/run around the whole boot, as for any CMD.

set -u -o pipefail

REPO=$(cd "$(dirname "$0")/../.." && pwd)
STRESS_SECS=60
NLSTRESS_SECS=60
CTL_TESTS=()
KUNIT_KO=
while [ $# -gt 0 ]; do
	case "$1" in
	--kunit) KUNIT_KO=$2; shift 2 ;;
	--stress) STRESS_SECS=$2; shift 2 ;;
	--nlstress) NLSTRESS_SECS=$2; shift 2 ;;
	--ctl) read -r -a CTL_TESTS <<< "$2"; shift 2 ;;
	--) shift; break ;;
	*) echo "usage: $0 [--kunit KO] [--stress SECS] [--nlstress SECS] [--ctl 'TEST...'] -- PROGRAM..." >&2; exit 2 ;;
	esac
done
[[ "$STRESS_SECS" =~ ^[1-9][0-9]*$ ]] || { echo "$0: --stress needs seconds" >&2; exit 2; }
[[ "$NLSTRESS_SECS" =~ ^[1-9][0-9]*$ ]] || { echo "$0: --nlstress needs seconds" >&2; exit 2; }
[ ${#CTL_TESTS[@]} -gt 0 ] || { echo "$0: --ctl needs the tests to run" >&2; exit 2; }
[ $# -gt 0 ] || { echo "$0: no ABI programs given" >&2; exit 2; }

TMP=$(mktemp -d) || exit 1
trap 'rm -rf "$TMP"' EXIT
total_pass=0 total_fail=0 total_skip=0

# part NAME CMD...: run it, stream its output, fold its closing line in.
part() {
	local name=$1 start=$SECONDS rc
	shift
	echo "# ===== part $name: $*"
	"$@" 2>&1 | tee "$TMP/$name.out"
	rc=${PIPESTATUS[0]}
	fold_part "$name" "$rc" $((SECONDS - start))
}

# part_beside NAME CMD...: start it in the background, its output kept
# for part_wait NAME, which prints it whole and folds its closing line in.
part_beside() {
	local name=$1
	shift
	echo "# ===== part $name (in the background): $*"
	(
		start=$SECONDS
		"$@" > "$TMP/$name.out" 2>&1
		echo "$? $((SECONDS - start))" > "$TMP/$name.end"
	) &
	eval "pid_$name=\$!"
}
part_wait() {
	local name=$1 pid rc secs
	eval "pid=\$pid_$name"
	wait "$pid"
	echo "# ===== part $name: its output"
	cat "$TMP/$name.out"
	read -r rc secs < "$TMP/$name.end" 2> /dev/null || { rc=1 secs=?; }
	fold_part "$name" "$rc" "$secs"
}

# fold_part NAME RC SECS: the counts of $TMP/NAME.out's closing line.
# Read by bash alone: a process start costs ~1 s on this kernel under TCG.
fold_part() {
	local name=$1 rc=$2 secs=$3 l p= f k=0
	local re='^([0-9]+) passed, ([0-9]+) failed(, ([0-9]+) skipped)?'
	while IFS= read -r l; do
		if [[ "$l" =~ $re ]]; then
			p=${BASH_REMATCH[1]} f=${BASH_REMATCH[2]} k=${BASH_REMATCH[4]:-0}
		fi
	done < "$TMP/$name.out"
	if [ -z "$p" ]; then
		echo "# part $name: no closing line (exit $rc, $secs s)"
		total_fail=$((total_fail + 1))
		return
	fi
	# A non-zero exit with nothing failed is a failure of its own.
	[ "$rc" -ne 0 ] && [ "$f" -eq 0 ] && f=1
	total_pass=$((total_pass + p))
	total_fail=$((total_fail + f))
	total_skip=$((total_skip + k))
	echo "# part $name: $p passed, $f failed, $k skipped (exit $rc, $secs s)"
}

# The KUnit cases from the kernel log (the whole KTAP stream; debugfs
# keeps only 512 bytes of each case's log on 6.1), counted by
# scripts/kunit-count.sh.
kunit() {
	local ktap=$TMP/ktap pass fail skip since

	# By the kernel's timestamps: a full log buffer drops lines at its head.
	read -r since _ < /proc/uptime
	if ! insmod "$KUNIT_KO"; then
		echo "# insmod $KUNIT_KO failed"
		echo "0 passed, 1 failed"
		return 1
	fi
	dmesg | awk -v since="$since" '
		match($0, /^\[ *[0-9]+\.[0-9]+\] /) {
			t = substr($0, 2, RLENGTH - 3) + 0
			if (t >= since) print substr($0, RLENGTH + 1)
		}' | grep -E '^ *(ok|not ok|# |KTAP|1\.\.)' > "$ktap"
	grep -qE '^[[:space:]]+(not )?ok [0-9]+ ' "$ktap" ||
		cat /sys/kernel/debug/kunit/*/results > "$ktap" 2> /dev/null
	rmmod dq_kunit || echo "# rmmod dq_kunit failed"
	read -r pass fail skip <<< "$("$REPO/scripts/kunit-count.sh" "$ktap")"
	echo "$pass passed, $fail failed, $skip skipped"
	[ "$fail" -eq 0 ]
}

stress() {
	if "$REPO/selftests/stress/build/dq_stress" -t "$STRESS_SECS" -p 4 -j 3; then
		echo "1 passed, 0 failed"
	else
		echo "0 passed, 1 failed"
		return 1
	fi
}

# The netlink stress counts as one test, like the ABI stress: its own
# closing line counts its checks (thousands of replies judged), which
# would swamp make check's totals; the last line printed here is what
# part() folds in.  The arena limit at 16 MiB keeps what a request may
# create small.
nlstress() {
	local p=/sys/module/dq/parameters/max_arena_bytes old rc
	old=$(cat "$p") && echo 16777216 > "$p" || {
		echo "# cannot set $p"
		echo "0 passed, 1 failed"
		return 1
	}
	unshare --net "$REPO/selftests/build/ctl/nlstress" -t "$NLSTRESS_SECS"
	rc=$?
	echo "$old" > "$p"
	if [ "$rc" -eq 0 ]; then
		echo "1 passed, 0 failed, 0 skipped"
	else
		echo "0 passed, 1 failed, 0 skipped"
	fi
	return "$rc"
}

[ -n "$KUNIT_KO" ] && part kunit kunit
# dq_timing's tail bounds get 3x their fixed slack here (see
# selftests/dq_timing.c); its p50 bound stays as on the stock kernels.
part abi env DQ_TIMING_TAIL_SCALE="${DQ_TIMING_TAIL_SCALE:-3}" \
	"$REPO/selftests/run-vm-tests.sh" "$@"
part_beside stress stress
part nlstress nlstress
part_wait stress
part ctl env DQ_CTL_TIMEOUT_SCALE="${DQ_CTL_TIMEOUT_SCALE:-4}" \
	"$REPO/selftests/ctl/run.sh" "${CTL_TESTS[@]}"

echo "$total_pass passed, $total_fail failed, $total_skip skipped"
[ "$total_fail" -eq 0 ]
