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

# The guest's uptime in tenths of a second, into $up (no process: on the
# debug kernel under TCG a process start costs about a second, and the
# runner of 2026-12-05 spent ~10 s a program in sed and grep there).
uptime_ds() {
	local u
	read -r u _ < /proc/uptime
	up=$((${u%.*} * 10 + 10#${u#*.} / 10))
}

# start PROGRAM: run it in the background, its output into $tmp/NAME.out,
# its start and end times (tenths of a second) and exit status into
# $tmp/NAME.rc as "T0 T1 RC", written last: it is done when that is there.
start() {
	local bin=$1 name=${1##*/} t0

	case $1 in */*) ;; *) bin=$build/$1 ;; esac
	uptime_ds
	t0=$up
	if [ ! -x "$bin" ]; then
		echo "# $bin: missing or not executable" > "$tmp/$name.out"
		echo "$t0 $t0 127" > "$tmp/$name.rc"
		return
	fi
	{ "$bin" > "$tmp/$name.out" 2>&1
	  rc=$?
	  uptime_ds
	  echo "$t0 $up $rc" > "$tmp/$name.rc.new"
	  mv "$tmp/$name.rc.new" "$tmp/$name.rc"; } &
}

# judge PROGRAM: print its output and fold its results into the totals:
# its plan, ok and not-ok lines, skips and closing line.
judge() {
	local p=${1##*/} t0 t1 rc plan nok nnotok okskip summary pass fail skip broken missing t

	read -r t0 t1 rc < "$tmp/$p.rc" || { t0=0 t1=0 rc=255; }
	echo "# ===== $p ====="
	# Printed and counted by bash alone, no cat or awk: on the debug
	# kernel under TCG a process start costs 0.5-0.7 s (2026-12-06), two
	# a program.
	plan=- nok=0 nnotok=0 okskip=0 summary=0 pass=0 fail=0 skip=0
	local l re='^([0-9]+) passed, ([0-9]+) failed(, ([0-9]+) skipped)?$'
	while IFS= read -r l || [ -n "$l" ]; do
		printf '%s\n' "$l"
		case $l in
		"ok "[0-9]*)
			nok=$((nok + 1))
			[[ "$l" == *"# SKIP"* ]] && okskip=$((okskip + 1))
			;;
		"not ok "[0-9]*) nnotok=$((nnotok + 1)) ;;
		1..*)
			[ "$plan" = - ] && [[ "$l" =~ ^1\.\.([0-9]+)$ ]] &&
				plan=$((10#${BASH_REMATCH[1]}))
			;;
		*)
			if [[ "$l" =~ $re ]]; then
				summary=1 pass=${BASH_REMATCH[1]} fail=${BASH_REMATCH[2]}
				skip=${BASH_REMATCH[4]:-0}
			fi
			;;
		esac
	done < "$tmp/$p.out"
	if [ "$summary" != 1 ]; then
		pass=$((nok - okskip))
		skip=$okskip
		fail=$nnotok
	fi

	broken=""
	[ "$summary" != 1 ] && broken="no closing line"
	[ "$plan" = - ] && broken="${broken:+$broken, }no plan"
	if [ "$plan" != - ] && [ $((nok + nnotok)) -ne "$plan" ]; then
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
	t=$((t1 - t0))
	echo "# $p took $((t / 10)).$((t % 10)) s (the whole program)"
}

# Two programs of one name would share their files here.
names=" "
for p in $progs; do
	case $names in
	*" ${p##*/} "*) echo "# ${p##*/} given twice"; echo "0 passed, 1 failed"; exit 1 ;;
	esac
	names="$names${p##*/} "
done

# Kernel log lines before the run, so only new lines are scanned after.
klog_start=$(dmesg 2>/dev/null | wc -l)

# The ALONE ones, one after the other, nothing beside them.
pool=()
for p in $progs; do
	case $ALONE in
	*" ${p##*/} "*)
		echo "# started ${p##*/} (alone)"
		start "$p"
		wait
		judge "$p"
		;;
	*) pool+=("$p") ;;
	esac
done

# The rest, the longest first, then in the order given.
ordered=()
for l in $LONGEST; do
	for p in "${pool[@]}"; do
		[ "${p##*/}" = "$l" ] && ordered+=("$p")
	done
done
for p in "${pool[@]}"; do
	case " $LONGEST " in
	*" ${p##*/} "*) ;;
	*) ordered+=("$p") ;;
	esac
done

running=()
for p in "${ordered[@]}"; do
	# A free place: wait for one of the running programs to end.
	while [ ${#running[@]} -ge "$jobs" ]; do
		wait -n || [ $? -ne 127 ] || break
		left=()
		for r in "${running[@]}"; do
			if [ -e "$tmp/${r##*/}.rc" ]; then
				judge "$r"
			else
				left+=("$r")
			fi
		done
		running=("${left[@]}")
	done
	beside=
	for r in "${running[@]}"; do beside="$beside ${r##*/}"; done
	echo "# started ${p##*/}${beside:+ (beside$beside)}"
	start "$p"
	running+=("$p")
done
wait
for r in "${running[@]}"; do judge "$r"; done

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
