#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1 OR MIT
#
# The durability contract of durable queues under kill -9, clean close,
# rmmod/insmod (docs/durability-tests.md; the program is
# user/tests/durable_torture.c, the power cut selftests/vm/durable-powercut.sh).
#
# usage: durable_torture.sh native     host: the user backend, kill -9 loop
#                                      plus crash points (strace kills the
#                                      process at chosen system calls)
#        durable_torture.sh vm         in the VM (dq.ko loaded): the kernel
#                                      backend, kill -9 loop, then the
#                                      rmmod/insmod loop
#        durable_torture.sh rmmod      in the VM: the rmmod/insmod loop only
#                                      (the debug kernel)
# env:   DQ_DURABLE_SECONDS (kill loop bound; native 40, vm 75),
#        DQ_DURABLE_ITERATIONS (native 300, vm 40), DQ_DURABLE_RMMOD (runs
#        of the rmmod loop, 6), DQ_DURABLE_KILL_MS (its longest kill delay,
#        2000; the debug kernel's open alone takes up to ~1 s),
#        DQ_DURABLE_BIN (the program),
#        DQ_DURABLE_KEEP=1 (keep the journal and logs), DQ_SEED.
# Output: each part's TAP, then one line "N passed, N failed, N skipped".
set -u

here=$(cd "$(dirname "$0")" && pwd)
bin=${DQ_DURABLE_BIN:-$here/../build/tests/durable_torture}
mode=${1:-native}
work=$(mktemp -d "${TMPDIR:-/tmp}/dq-durable.XXXXXX") || exit 1
cleanup() { [ "${DQ_DURABLE_KEEP:-0}" = 1 ] || rm -rf "$work"; }
trap cleanup EXIT

pass=0 fail=0 skip=0
seed_args=()
[ -n "${DQ_SEED:-}" ] && seed_args=(--seed "$DQ_SEED")

# part NAME CMD...: run one torture, fold its closing line into the totals.
part() {
	local name=$1 line p f
	shift
	echo "# ===== $name: ${*:1:4} ..."
	"$@" 2>&1 | tee "$work/$name.out"
	line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$work/$name.out" | tail -n 1)
	if [ -z "$line" ]; then
		echo "# $name: no result line"
		fail=$((fail + 1))
		return
	fi
	p=${line%% passed*}
	f=${line#*passed, }
	f=${f%% failed*}
	pass=$((pass + p))
	fail=$((fail + f))
}

[ -x "$bin" ] || { echo "# $bin missing: make -C user"; echo "0 passed, 1 failed"; exit 1; }

# The floor beside the runs (durable_torture.c, floor_bound()): while
# the runs of a part go, a probe writes 4 KiB and fdatasync()s it in the
# journal's file system every 50 ms and keeps its slowest sync and latest
# wake-up in FILE ("SYNC_MAX_MS WAKE_MAX_MS PROBES", replaced whole);
# the verdict's on-time bound grows by them.  probe_start FILE,
# probe_stop.
probe_pid=
probe_start() {
	/usr/bin/python3 - "$1" <<'PY' &
import os, sys, time
out = sys.argv[1]
fd = os.open(out + ".data", os.O_WRONLY | os.O_CREAT, 0o600)
sync_max = wake_max = 0.0
n = 0
while True:
    t0 = time.monotonic()
    os.pwrite(fd, b"p" * 4096, 0)
    os.fdatasync(fd)
    t1 = time.monotonic()
    time.sleep(0.05)
    t2 = time.monotonic()
    sync_max = max(sync_max, (t1 - t0) * 1e3)
    wake_max = max(wake_max, (t2 - t1 - 0.05) * 1e3)
    n += 1
    with open(out + ".new", "w") as f:
        f.write("%d %d %d\n" % (sync_max + 0.999, wake_max + 0.999, n))
    os.rename(out + ".new", out)
PY
	probe_pid=$!
}
probe_stop() {
	[ -n "$probe_pid" ] && kill "$probe_pid" 2> /dev/null && wait "$probe_pid" 2> /dev/null
	probe_pid=
}
trap 'probe_stop; cleanup' EXIT

# Crash points: the process is killed (SIGKILL) at the Nth call of one
# system call (strace's fault injection), in the open (recovery, segment
# creation, rename into place, reclamation), in a flush or in the sync
# thread; the next run must recover (DQ_CRASH_SYSCALLS picks the calls).
# Deterministic where the kill loop's random delays land rarely, e.g.
# between creating a segment file and writing its header (before ca38252
# that left a headerless newest segment, and every later open failed
# with -EXDEV: the fallocate crash point).  Each call on a journal of its own:
# a warm-up run (killed after 300 ms) fills it, then runs killed at the
# 1st, 2nd, 3rd, 5th and 8th call, then the final and the verify run.
# lock_free DIR: wait (at most 10 s) until no process holds the journal's
# LOCK.  A killed run's flock goes with its last descriptor of the file,
# and that can outlive the kill and the wait for strace: a traced run
# killed by us (not at its call) exits after strace is reaped, and
# io_uring's workers share the run's file table until they are gone.
# The next run would meet it: "dq_queue_open_durable: Device or resource
# busy" (2026-12-07, a loaded host: the final and verify runs of
# crash-fsync, 529 acked messages never drained).
lock_free() {
	local i
	command -v flock > /dev/null && [ -e "$1/LOCK" ] || return 0
	for i in $(seq 400); do
		flock -n "$1/LOCK" true 2> /dev/null && return 0
		sleep 0.025
	done
	echo "# $1/LOCK still held 10 s after the run ended"
}

crash_point() {
	local sc=$1 dir=$work/cp-$1-j logs=$work/cp-$1-logs run=1 when pid i hit=0
	# Fast producers (1 MiB segments fill in a fraction of a second):
	# rotation, sealing and reclamation come within the runs.
	local fast=(--batch-max 64 --hold-max 3000 --long-permille 0)
	mkdir -p "$logs"
	probe_start "$work/cp-$sc-floor"
	"$bin" child --dir "$dir" --run 1 "${fast[@]}" "${seed_args[@]}" --log "$logs/run-000001.log" &
	pid=$!
	sleep 0.3
	kill -KILL "$pid"
	wait "$pid" 2> /dev/null
	for when in 1 2 3 5 8; do
		run=$((run + 1))
		lock_free "$dir"
		strace -f -qq -o /dev/null -e trace="$sc" \
			-e inject="$sc:signal=SIGKILL:when=$when" \
			"$bin" child --dir "$dir" --run "$run" "${fast[@]}" "${seed_args[@]}" \
			--log "$logs/run-$(printf %06d "$run").log" 2> /dev/null &
		pid=$!
		for i in $(seq 80); do
			kill -0 "$pid" 2> /dev/null || break
			sleep 0.025
		done
		if kill -0 "$pid" 2> /dev/null; then
			# $pid is strace's: kill the run it traces first.  A
			# tracee outlives a tracer killed with SIGKILL
			# (detached, still running) and held the journal's
			# lock into the final run: "dq_queue_open_durable:
			# Device or resource busy", its messages never drained.
			pkill -KILL -P "$pid" 2> /dev/null
			kill -KILL "$pid" 2> /dev/null
		else
			hit=$((hit + 1))
		fi
		wait "$pid" 2> /dev/null
	done
	echo "# crash points $sc: $hit of 5 runs killed at their system call (the others kill -9 after 2 s)"
	run=$((run + 1))
	lock_free "$dir"
	"$bin" child --dir "$dir" --run "$run" --final --log "$logs/run-$(printf %06d "$run").log" ||
		echo "# final run exited $?"
	run=$((run + 1))
	"$bin" child --dir "$dir" --run "$run" --verify --log "$logs/run-$(printf %06d "$run").log" ||
		echo "# verify run exited $?"
	probe_stop
	part "crash-$sc" "$bin" verify --floor-file "$work/cp-$sc-floor" final "$logs"/run-*.log
}

crash_points() {
	local sc
	if ! command -v strace > /dev/null; then
		echo "ok 1 - crash points # SKIP strace is not installed"
		skip=$((skip + 1))
		return
	fi
	for sc in ${DQ_CRASH_SYSCALLS:-openat fallocate pwrite64 pwritev fdatasync fsync renameat2 unlinkat io_uring_enter}; do
		crash_point "$sc"
	done
}

case "$mode" in
reload)
	# rmmod dq, insmod it again.  A killed process's io_uring lets go of
	# /dev/dq a moment after the process is gone (the ring is torn down
	# by a kernel worker): rmmod is retried for up to 10 s, and how long
	# it took is said when it was not at once.
	trap - EXIT
	rm -rf "$work"
	for i in $(seq 100); do
		rmmod dq 2> /dev/null && break
		sleep 0.1
	done
	if grep -q '^dq ' /proc/modules; then
		echo "# rmmod dq failed for 10 s: $(rmmod dq 2>&1)"
		exit 1
	fi
	[ "$i" -gt 1 ] && echo "# rmmod dq succeeded at try $i"
	insmod "$DQ_KO"
	exit
	;;
native)
	probe_start "$work/loop-floor"
	part kill-loop-user "$bin" torture --backend user --dir "$work/j" --logdir "$work/logs" \
		--iterations "${DQ_DURABLE_ITERATIONS:-300}" --seconds "${DQ_DURABLE_SECONDS:-40}" \
		--late-ms 200 --floor-file "$work/loop-floor" "${seed_args[@]}"
	probe_stop
	crash_points
	;;
vm | rmmod)
	if [ ! -c /dev/dq ]; then
		echo "# /dev/dq is missing: is dq.ko loaded?"
		echo "0 passed, 1 failed"
		exit 1
	fi
	if [ "$mode" = vm ]; then
		# TCG: a guest's CPU is ~10-50x slower and its timers coarse;
		# on time means within 1.5 s here.  Overdue order within 1 ms
		# (the default): inversions of up to 4.2 ms were seen here
		# (2026-12-03) until the library read its clock pairs as one
		# instant (2683b24); see docs/durability-tests.md, "Seen".
		part kill-loop-kernel "$bin" torture --backend kernel --track \
			--dir "$work/j" --logdir "$work/logs" \
			--iterations "${DQ_DURABLE_ITERATIONS:-40}" \
			--seconds "${DQ_DURABLE_SECONDS:-75}" --max-kill-ms 1500 \
			--late-ms 1500 --order-tol-us 1000 --final-timeout 60 "${seed_args[@]}"
	fi
	# Every run ends with /dev/dq closed (kill -9 or clean close), then
	# dq.ko is unloaded and loaded again: the next run recovers into a
	# queue of a fresh module.
	[ -n "${DQ_KO:-}" ] || { echo "# DQ_KO is not set"; echo "0 passed, 1 failed"; exit 1; }
	part rmmod-insmod "$bin" torture --backend kernel --dir "$work/rj" --logdir "$work/rlogs" \
		--iterations "${DQ_DURABLE_RMMOD:-6}" --seconds 600 \
		--max-kill-ms "${DQ_DURABLE_KILL_MS:-2000}" \
		--term-percent 30 --late-ms 3000 --order-tol-us 1000 --final-timeout 60 \
		"${seed_args[@]}" \
		--between "$here/durable_torture.sh reload"
	;;
*)
	echo "usage: $0 native|vm|rmmod" >&2
	exit 2
	;;
esac
if [ "$skip" -gt 0 ]; then
	echo "$pass passed, $fail failed, $skip skipped"
else
	echo "$pass passed, $fail failed"
fi
[ "$fail" -eq 0 ]
