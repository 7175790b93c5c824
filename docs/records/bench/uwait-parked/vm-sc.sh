#!/bin/bash
# System calls per message of peer-dq, two builds by turns in one boot
# (perf stat of the process).  vm-sc.sh OLD_BENCH_BUILD NEW_BENCH_BUILD OUT
OLD=$1 NEW=$2 OUT=$3
mkdir -p "$OUT"
EV=syscalls:sys_enter_io_uring_enter,syscalls:sys_enter_clock_gettime,raw_syscalls:sys_enter,sched:sched_switch
for r in 1 2; do
	for v in old new; do
		B=$OLD; [ "$v" = new ] && B=$NEW
		for g in 50 5000; do
			perf stat -x, -e "$EV" -o "$OUT/sc-$v-$g-$r.csv" -- "$B/peer-dq" --workload lateness \
				--rate 1000 --duration 5 --dmin-ms 0 --dmax-ms 1000 --payload 500 --env vm \
				--timeout 60 --grace-s 10 --opt backend=kernel --opt path=uring \
				--opt consumer=wait --opt granularity-us=$g > /dev/null 2> "$OUT/err-$v-$g-$r.txt"
		done
	done
done
