#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1 OR MIT
#
# Run the dq kernel-ABI selftests (and libdqshim's kernel-backend tests)
# and close with one aggregate line "N passed, N failed, N skipped".  Meant
# to run inside the test VM with dq.ko loaded (selftests/vm/run --
# selftests/run-vm-tests.sh); the programs must have been built on the
# host (make -C selftests).
#
# usage: run-vm-tests.sh [-j JOBS] [PROGRAM...]
#        (default: every program of the build dir's TESTS; a PROGRAM with a
#        slash is a path, else a name in the build dir)
# env:   DQ_TEST_BUILD  directory of the programs (default: selftests/build)
#        DQ_TEST_JOBS   programs at a time (default: the CPUs online; -j wins)
#        DQ_TIMEOUT_SCALE, DQ_SEED  passed on to the programs
#
# Two at a time: under TCG the guest's vCPUs are host threads, and one
# program at a time left one of them idle (make check's VM lane is its
# critical path: 2026-12-06, ~205 s a kernel, one core busy).  The
# programs in ALONE run with nothing beside them, one after the other,
# first; the rest then run JOBS at a time, each one's output printed
# whole when it ends (a "# started" line says what runs, for a run cut
# short by the VM's timeout).
#
# Exit status: 0 when every test passed (or skipped), 1 otherwise, including
# when a program crashed, did not finish its plan, or the kernel log shows a
# splat during the run.

# What must not share the machine, and why (a program not named here
# must not depend on the rest of the machine: no module parameter, no
# node-wide counter, no timing verdict finer than ~0.5 s):
#   dq_timing dq_timens dq_order  lateness judged against the boot's timer
#                     floor: a neighbour's CPU time would be measured as
#                     dq's (dq_order also writes test_arm_delay_ns)
#   dq_errno          sets max_arena_bytes to 1 MiB for a while
#   dq_memlock        switches memlock_accounting
#   dq_memcg          mounts cgroup2 when nothing is mounted, reads charges
#   dq_limits         judges leaks by the node's pending count and free memory
#   dq_cancel         judges a node's timer fires and pending count
#   dq_uring_park     counts kmalloc-cg objects in /proc/slabinfo
ALONE=" dq_timing dq_timens dq_order dq_errno dq_memlock dq_memcg dq_limits dq_cancel dq_uring_park "
# Started first among the rest, the longest first (seconds on 6.1 under
# TCG, 2026-12-06): the pool ends when its longest program does.
LONGEST="kernel_backend_test durable_test thread_test keys_test track_test"

here=$(cd "$(dirname "$0")" && pwd)
build=${DQ_TEST_BUILD:-$here/build}
jobs=${DQ_TEST_JOBS:-$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 1)}
if [ "${1:-}" = -j ]; then
	jobs=$2
	shift 2
fi
case $jobs in
'' | *[!0-9]* | 0) echo "$0: JOBS must be a positive number, not '$jobs'" >&2; exit 2 ;;
esac

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

tmp=$(mktemp -d 2>/dev/null || mktemp -d -p /dev/shm 2>/dev/null) || {
	echo "# no temporary directory"
	echo "0 passed, 1 failed"
	exit 1
}
cleanup() {
	# A run cut short (TERM from the VM's timeout) takes its programs along.
	kill $(jobs -p) 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 143' INT TERM

# The guest's uptime in tenths of a second (no date(1) with %N needed).
uptime_ds() {
	awk '{ printf "%d\n", $1 * 10 }' /proc/uptime
}

# path PROGRAM: where it is.
path() {
	case $1 in
	*/*) echo "$1" ;;
	*) echo "$build/$1" ;;
	esac
}

# start PROGRAM: run it in the background into $tmp/NAME.out, its exit
# status into $tmp/NAME.rc (written last: the program is done when it is
# there), its start and end times into $tmp/NAME.t0 and NAME.t1.
start() {
	local bin name

	bin=$(path "$1")
	name=$(basename "$1")
	uptime_ds > "$tmp/$name.t0"
	if [ ! -x "$bin" ]; then
		echo "# $bin: missing or not executable" > "$tmp/$name.out"
		uptime_ds > "$tmp/$name.t1"
		echo 127 > "$tmp/$name.rc"
		return
	fi
	{ "$bin" > "$tmp/$name.out" 2>&1; echo $? > "$tmp/$name.rc.new"
	  uptime_ds > "$tmp/$name.t1"
	  mv "$tmp/$name.rc.new" "$tmp/$name.rc"; } &
}

# judge PROGRAM: print its output and fold its results into the totals.
judge() {
	local p rc text plan nok nnotok summary pass fail skip broken missing t

	p=$(basename "$1")
	rc=$(cat "$tmp/$p.rc" 2>/dev/null || echo 255)
	text=$(cat "$tmp/$p.out")
	echo "# ===== $p ====="
	printf '%s\n' "$text"

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
	t=$(($(cat "$tmp/$p.t1" 2>/dev/null || uptime_ds) - $(cat "$tmp/$p.t0")))
	echo "# $p took $((t / 10)).$((t % 10)) s (the whole program)"
}

# Two programs of one name would share their files here.
names=" "
for p in $progs; do
	n=$(basename "$p")
	case $names in
	*" $n "*) echo "# $n given twice"; echo "0 passed, 1 failed"; exit 1 ;;
	esac
	names="$names$n "
done

# Kernel log lines before the run, so only new lines are scanned after.
klog_start=$(dmesg 2>/dev/null | wc -l)

# The ALONE ones, one after the other, nothing beside them.
pool=
for p in $progs; do
	case $ALONE in
	*" $(basename "$p") "*)
		echo "# started $(basename "$p") (alone)"
		start "$p"
		wait
		judge "$p"
		;;
	*) pool="$pool $p" ;;
	esac
done

# The rest, the longest first, then in the order given.
ordered=
for l in $LONGEST; do
	for p in $pool; do
		[ "$(basename "$p")" = "$l" ] && ordered="$ordered $p"
	done
done
for p in $pool; do
	case " $LONGEST " in
	*" $(basename "$p") "*) ;;
	*) ordered="$ordered $p" ;;
	esac
done

running=
for p in $ordered; do
	# A free place: wait for one of the running programs to end.
	while [ "$(echo $running | wc -w)" -ge "$jobs" ]; do
		wait -n || [ $? -ne 127 ] || break
		left=
		for r in $running; do
			if [ -e "$tmp/$(basename "$r").rc" ]; then
				judge "$r"
			else
				left="$left $r"
			fi
		done
		running=$left
	done
	echo "# started $(basename "$p")${running:+ (beside$(for r in $running; do printf ' %s' "$(basename "$r")"; done))}"
	start "$p"
	running="$running $p"
done
wait
for r in $running; do judge "$r"; done

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
