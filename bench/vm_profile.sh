#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1 OR MIT
#
# bench/vm_profile.sh [OUT] : where the whole VM's CPU goes for dq over
# io_uring (dq-uring, as make bench runs it: consumer=wait, the harness's
# one thread submitting and waiting with dq_flush_reap()) and for one
# IORING_OP_TIMEOUT per message (uring-timeout), in one boot, by turns.
#
# Each run is bench's offered-rate workload (delays 0-1 s, 500 B) under
# `perf record -a -g -e cpu-clock` (one sample per 100 us of CPU, every
# CPU), summarised by bench/vm_profile.py: busy samples of the process,
# of the idle task and of the rest; the process's samples by system call;
# the callers of the clocksource read; the timer functions run in hrtimer
# context; the process's leaf functions.  Why: the harness's whole-VM
# CPU per message of one run moves by 2x between sittings under TCG,
# and says nothing about where it went; sample counts taken side by side
# in one boot do.  perf's own sampling interrupts inflate the run's
# cpu_us_per_msg (shown, not comparable with make bench's).
#
# Environment: DQ_PROF_KERNEL (6.1), DQ_PROF_RATES ("1000 10000"),
# DQ_PROF_SECONDS (5), DQ_PROF_REPEAT (2).  OUT defaults to
# /tmp/dq-vm-profile; one file per run (SYSTEM.RATE.REP.txt) and
# summary.txt.  Needs perf (linux-perf) and bench's peers built
# (make -C bench); the VM loads the dq.ko of this tree.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

if [ "${1:-}" = --inner ]; then
	OUT=$2
	echo 0 >/proc/sys/kernel/kptr_restrict
	echo -1 >/proc/sys/kernel/perf_event_paranoid
	read -r cs </sys/devices/system/clocksource/clocksource0/current_clocksource
	echo "# $(uname -r), $(nproc) CPUs, clocksource $cs" >"$OUT/boot.txt"
	for rate in ${DQ_PROF_RATES:-1000 10000}; do
		for rep in $(seq 1 "${DQ_PROF_REPEAT:-2}"); do
			for sys in dq-uring uring-timeout; do
				case $sys in
				dq-uring) bin=peer-dq
					opts=(--opt backend=kernel --opt path=uring --opt consumer=wait) ;;
				uring-timeout) bin=peer-uring-timeout; opts=() ;;
				esac
				f=$OUT/$sys.$rate.$rep.txt
				timeout 300 perf record -a -g -q -e cpu-clock -c 100000 \
					-o /tmp/p.data "bench/build/$bin" --workload lateness \
					--rate "$rate" --duration "${DQ_PROF_SECONDS:-5}" \
					--dmin-ms 0 --dmax-ms 1000 --payload 500 --seed "$rep" \
					"${opts[@]}" >/tmp/run.out 2>&1 || true
				{
					echo "# $sys, $rate msg/s, run $rep"
					grep '"verdict"' /tmp/run.out | tail -1
					perf script -i /tmp/p.data -F comm,ip,sym 2>/dev/null |
						python3 bench/vm_profile.py "${bin:0:15}"
				} >"$f"
			done
		done
	done
	exit 0
fi

OUT=${1:-/tmp/dq-vm-profile}
command -v perf >/dev/null || { echo "vm_profile: needs perf (linux-perf)" >&2; exit 2; }
[ -x bench/build/peer-dq ] && [ -x bench/build/peer-uring-timeout ] ||
	{ echo "vm_profile: build the peers first (make -C bench)" >&2; exit 2; }
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
rm -f "$OUT"/*.txt
timeout -k 30 1800 selftests/vm/run --kernel "${DQ_PROF_KERNEL:-6.1}" \
	--rw "$OUT" --timeout 1700 -- env \
	DQ_PROF_RATES="${DQ_PROF_RATES:-1000 10000}" \
	DQ_PROF_SECONDS="${DQ_PROF_SECONDS:-5}" \
	DQ_PROF_REPEAT="${DQ_PROF_REPEAT:-2}" \
	"$ROOT/bench/vm_profile.sh" --inner "$OUT"

# One line per run: busy samples and the main ways in, side by side.
{
	echo "# bench/vm_profile.sh, $(date -u '+%F %T UTC'), git $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- kmod user bench || echo ' + uncommitted changes')"
	cat "$OUT/boot.txt"
	echo "# samples of 100 us of CPU; busy = the process + the idle task's non-halted work + other tasks"
	printf '%-14s %6s %4s %7s %7s %7s %8s %8s %8s %8s\n' system rate run cpu_us p99_us \
		process idle_work io_uring clock_gettime user
	for f in "$OUT"/*.*.*.txt; do
		awk -v f="${f##*/}" '
			/^#/ && !sys { sys = $2; sub(/,/, "", sys); rate = $3; run = $NF }
			/"verdict"/ { match($0, /"cpu_us_per_msg":[^,]*/); cpu = substr($0, RSTART + 17, RLENGTH - 17)
				match($0, /"late_p99_us":[^,]*/); p99 = substr($0, RSTART + 14, RLENGTH - 14) }
			/^  *[0-9]+  the process$/ { proc = $1 }
			/^  *[0-9]+  idle task, not halted$/ { idle = $1 }
			/^  *[0-9]+  syscall __do_sys_io_uring_enter$/ { ring = $1 }
			/^  *[0-9]+  syscall __x64_sys_clock_gettime$/ { clk = $1 }
			/^  *[0-9]+  user space$/ { user = $1 }
			END { printf "%-14s %6s %4s %7.1f %7.0f %8d %8d %8d %8d %8d\n", sys, rate, run, cpu, p99, proc, idle, ring, clk, user }' "$f"
	done | sort -k2,2n -k1,1 -k3,3n
} | tee "$OUT/summary.txt"
