#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1 OR MIT
#
# Run the dq kernel-ABI selftests, one TAP program after another, and close
# with one aggregate line "N passed, N failed, N skipped".  Meant to run
# inside the test VM with dq.ko loaded (selftests/vm/run -- selftests/run-vm-tests.sh);
# the programs must have been built on the host (make -C selftests).
#
# usage: run-vm-tests.sh [PROGRAM...]     (default: every program, in order;
#        a PROGRAM with a slash is a path, else a name in the build dir)
# env:   DQ_TEST_BUILD  directory of the programs (default: selftests/build)
#        DQ_TIMEOUT_SCALE, DQ_SEED  passed on to the programs
#
# Exit status: 0 when every test passed (or skipped), 1 otherwise, including
# when a program crashed, did not finish its plan, or the kernel log shows a
# splat during the run.

here=$(cd "$(dirname "$0")" && pwd)
build=${DQ_TEST_BUILD:-$here/build}

if [ $# -gt 0 ]; then
	progs="$*"
elif [ -r "$build/TESTS" ]; then
	progs=$(cat "$build/TESTS")
else
	progs=$(cd "$build" 2>/dev/null && ls dq_* 2>/dev/null | grep -v '\.o$')
fi

total_pass=0
total_fail=0
total_skip=0

if [ -z "$progs" ]; then
	echo "# no test programs in $build: run 'make -C selftests' first"
	echo "0 passed, 1 failed"
	exit 1
fi

if [ ! -c /dev/dq ]; then
	echo "# /dev/dq is missing: is dq.ko loaded?"
fi

tmp=$(mktemp -d 2>/dev/null || mktemp -d -p /dev/shm 2>/dev/null || echo "")
cleanup() { [ -n "$tmp" ] && rm -rf "$tmp"; }
trap cleanup EXIT INT TERM

# The guest's uptime in tenths of a second (no date(1) with %N needed).
uptime_ds() {
	awk '{ printf "%d\n", $1 * 10 }' /proc/uptime
}

# Kernel log lines before the run, so only new lines are scanned after.
klog_start=$(dmesg 2>/dev/null | wc -l)

for p in $progs; do
	case $p in
	*/*) bin=$p; p=$(basename "$p") ;;
	*) bin=$build/$p ;;
	esac
	echo "# ===== $p ====="
	t0=$(uptime_ds)
	if [ ! -x "$bin" ]; then
		echo "# $bin: missing or not executable"
		total_fail=$((total_fail + 1))
		continue
	fi
	if [ -n "$tmp" ]; then
		out=$tmp/$p.out
		{ "$bin"; echo $? > "$tmp/$p.rc"; } 2>&1 | tee "$out"
		rc=$(cat "$tmp/$p.rc" 2>/dev/null || echo 255)
		text=$(cat "$out")
	else
		text=$("$bin" 2>&1)
		rc=$?
		printf '%s\n' "$text"
	fi

	plan=$(printf '%s\n' "$text" | sed -n 's/^1\.\.\([0-9][0-9]*\)$/\1/p' | head -n 1)
	nok=$(printf '%s\n' "$text" | grep -c '^ok [0-9]')
	nnotok=$(printf '%s\n' "$text" | grep -c '^not ok [0-9]')
	summary=$(printf '%s\n' "$text" | grep -E '^[0-9]+ passed, [0-9]+ failed(, [0-9]+ skipped)?$' | tail -n 1)

	if [ -n "$summary" ]; then
		pass=$(echo "$summary" | sed 's/^\([0-9]*\) passed.*/\1/')
		fail=$(echo "$summary" | sed 's/^[0-9]* passed, \([0-9]*\) failed.*/\1/')
		skip=$(echo "$summary" | sed -n 's/.*, \([0-9]*\) skipped$/\1/p')
		skip=${skip:-0}
	else
		pass=$(printf '%s\n' "$text" | grep '^ok [0-9]' | grep -vc '# SKIP')
		skip=$(printf '%s\n' "$text" | grep '^ok [0-9]' | grep -c '# SKIP')
		fail=$nnotok
	fi

	broken=""
	[ -z "$summary" ] && broken="no closing line"
	[ -z "$plan" ] && broken="${broken:+$broken, }no plan"
	if [ -n "$plan" ] && [ $((nok + nnotok)) -ne "$plan" ]; then
		broken="${broken:+$broken, }$((nok + nnotok)) results for a plan of $plan"
		missing=$((plan - nok - nnotok))
		[ "$missing" -gt 0 ] && fail=$((fail + missing))
	fi
	if [ "$rc" -ne 0 ] && [ "$fail" -eq 0 ]; then
		broken="${broken:+$broken, }exit status $rc with no failed test"
	fi
	if [ "$rc" -eq 0 ] && [ "$fail" -ne 0 ]; then
		broken="${broken:+$broken, }exit status 0 with failed tests"
	fi
	if [ -n "$broken" ]; then
		echo "# $p: broken run ($broken, exit status $rc)"
		fail=$((fail + 1))
	fi

	total_pass=$((total_pass + pass))
	total_fail=$((total_fail + fail))
	total_skip=$((total_skip + skip))
	# Where a suite's minutes go, program by program (make check's
	# budget is spent here).
	t=$(($(uptime_ds) - t0))
	echo "# $p took $((t / 10)).$((t % 10)) s (the whole program)"
done

# A kernel splat during the run fails it.
if [ -n "$klog_start" ] && dmesg >/dev/null 2>&1; then
	splat=$(dmesg | tail -n +"$((klog_start + 1))" |
		grep -E 'BUG:|WARNING:|KASAN:|UBSAN:|Oops|general protection|kernel BUG|possible circular locking|possible recursive locking|inconsistent lock state|suspicious RCU|unreferenced object|INFO: task .* blocked|rcu_sched self-detected stall|soft lockup|hard LOCKUP|Call Trace:')
	if [ -n "$splat" ]; then
		echo "# kernel log shows a splat during the run:"
		printf '%s\n' "$splat" | sed 's/^/#   /'
		total_fail=$((total_fail + 1))
	fi
else
	echo "# (kernel log not readable: splats not checked here)"
fi

echo "$total_pass passed, $total_fail failed, $total_skip skipped"
[ "$total_fail" -eq 0 ]
