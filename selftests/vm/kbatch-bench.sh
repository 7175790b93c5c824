#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# docs/records/bench/kbatch.txt: two dq.ko builds, old and new, in one VM boot,
# run by turns (old, new, old, new, ...) on the same workloads:
#  - dqbench over io_uring and over the ioctls: CPU per message from
#    dqbench (the process's own) and from /proc/stat (every CPU's busy
#    time, softirqs included: the release path runs in the engine's timer
#    softirq, which the process's rusage does not see);
#  - dq_uring_park, which must fail on the old module (a kzalloc per
#    parked WAIT) and pass on the new;
#  - dq_purge_bench: close() of a queue with many slots and few pending,
#    and with many pending, and another queue's worst release lateness
#    on the same node meanwhile.
#
# Run from the host (the VM boots without dq.ko; this loads each):
#   flock /tmp/dq-vm.lock selftests/vm/run --kernel newest --no-module \
#     --timeout 2400 -- selftests/vm/kbatch-bench.sh OLD.ko NEW.ko [RUNS]
set -u
old=$1 new=$2 runs=${3:-3}
count=${DQ_KB_COUNT:-200000}
delay=${DQ_KB_DELAY:-uniform:0-100ms}

busy_jiffies() {
	# user nice system irq softirq steal: everything but idle and iowait
	awk '/^cpu /{print $2 + $3 + $4 + $7 + $8 + $9}' /proc/stat
}

load() {
	rmmod dq 2> /dev/null
	insmod "$1" || { echo "insmod $1 failed"; exit 1; }
}

hz=$(getconf CLK_TCK)
# dq_uring_park against each: the old module's kzalloc per parked WAIT
# shows in kmalloc-cg-* (the test must fail there), the new one's not.
# DQ_KB_PARK=0 / DQ_KB_PURGE=0 leave that part (or the purge bench) out.
[ "${DQ_KB_PARK:-1}" = 1 ] && for which in old new; do
	if [ $which = old ]; then load "$old"; else load "$new"; fi
	echo "# dq_uring_park on $which:"
	selftests/build/dq_uring_park 2>&1 | grep -E '^(ok|not ok|# .*(parked|FAIL|deadline))' | sed 's/^/#   /'
done
echo "# kernel $(uname -r), $(nproc) CPUs, dqbench --count $count --delay $delay, $runs runs each, by turns"
for run in $(seq 1 "$runs"); do
	for which in old new; do
		if [ $which = old ]; then load "$old"; else load "$new"; fi
		for mode in uring ioctl; do
			flag=
			[ $mode = ioctl ] && flag=--ioctl
			b0=$(busy_jiffies)
			out=$(user/build/dqbench --backend kernel $flag --count "$count" \
				--delay "$delay" --json 2>&1)
			b1=$(busy_jiffies)
			sys_ns=$(( (b1 - b0) * 1000000000 / hz / count ))
			proc_ns=$(printf '%s' "$out" | sed -n 's/.*"cpu_ns_per_msg":\([0-9]*\).*/\1/p')
			p99=$(printf '%s' "$out" | sed -n 's/.*"p99":\([0-9.]*\).*/\1/p')
			ok=$(printf '%s' "$out" | sed -n 's/.*"ok":\([a-z]*\).*/\1/p')
			echo "run $run $which $mode proc_cpu_ns_per_msg $proc_ns all_cpu_ns_per_msg $sys_ns p99_us $p99 ok $ok"
		done
		[ "${DQ_KB_PURGE:-1}" = 1 ] || continue
		echo "run $run $which purge"
		selftests/build/dq_purge_bench 1048576 64 1 262144 262144 1 | sed 's/^/    /'
	done
done
rmmod dq
