#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1 OR MIT
#
# bench_overhead.sh - what running dqlat costs a dq workload.  A benchmark,
# not a test: it prints figures and judges nothing.
#
#   make module && make -C ebpf && make -C user     (dqbench, optional)
#   selftests/vm/run -- ebpf/bench_overhead.sh [REPS]
#
# Each workload runs REPS times (default 3) without and with `dqlat --json`
# attached, alternating off/on to spread drift evenly, and the medians are
# compared:
#
#   dqload   ebpf/tests/dqload -r 0 -m 0 -M 0: submit as fast as slots
#            allow, every message due at once (released inside the submit
#            call), one consumer thread in DQ_IOC_WAIT.  Every message
#            fires dq_submit and dq_ready; every wake-up dq_release,
#            dq_wake, dq_wait_park, dq_reap and the sched events.
#   dqbench  user/build/dqbench --delay fixed:0 over libdqshim (io_uring).
#
# Figures: messages per second through the consumer, and the process's
# CPU time (user + sys) per message.  The softirq time of the release path
# is not in the process's CPU time; throughput covers it.  "paired" is the
# median over reps of on/off within each rep, which cancels slow drift of
# the machine better than the ratio of the medians.
#
# Last, ebpf/build/tests/progcost prints the kernel's own accounting of
# each dq program's run time per event (BPF_ENABLE_STATS), driven by
# BPF_PROG_TEST_RUN: it needs no dq.ko, so on the build host
# (`ebpf/build/tests/progcost`) it gives the native per-message cost that
# the emulated VM cannot.

set -u

REPS=${1:-3}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(dirname "$HERE")
DQLAT=$HERE/build/dqlat
DQLOAD=$HERE/build/tests/dqload
DQBENCH=${DQBENCH:-$REPO/user/build/dqbench}
TMP=$(mktemp -d /tmp/dqlat-bench.XXXXXX)

[ -c /dev/dq ] || { echo "bench_overhead: /dev/dq missing (dq.ko not loaded)" >&2; exit 1; }
[ -x "$DQLAT" ] && [ -x "$DQLOAD" ] || { echo "bench_overhead: make -C ebpf first" >&2; exit 1; }
command -v jq > /dev/null || { echo "bench_overhead: needs jq" >&2; exit 1; }

dqlat_on() {
	"$DQLAT" --json > "$TMP/dqlat.json" 2> "$TMP/dqlat.err" &
	DQLAT_PID=$!
	for _ in $(seq 1 600); do
		grep -q tracing "$TMP/dqlat.err" && return 0
		sleep 0.1
	done
	echo "bench_overhead: dqlat did not start" >&2
	cat "$TMP/dqlat.err" >&2
	exit 1
}

dqlat_off() {
	kill -INT "$DQLAT_PID"
	wait "$DQLAT_PID"
}

# run_one NAME -> one JSON line {rate, cpu} on stdout
# A run that fails (or hangs: 120 s) is shown and left out of the medians.
keep() {
	local out=$1 rc=$2 name=$3
	if [ "$rc" != 0 ]; then
		echo "# $name FAILED (exit $rc): $out" >&2
		return
	fi
	echo "$out" | jq -c "$4"
}

run_dqload() {
	local out rc
	out=$(timeout 120 "$DQLOAD" -r 0 -m 0 -M 0 -d 3 -b 64 -s 8192)
	rc=$?
	keep "$out" $rc dqload '{rate: .msgs_per_s, cpu: .cpu_ns_per_msg}'
}

run_dqbench() {
	local out rc
	out=$(timeout 120 "$DQBENCH" --backend kernel --count 30000 --delay fixed:0 --batch 64 --json)
	rc=$?
	keep "$out" $rc dqbench '{rate: .release_rate, cpu: .cpu_ns_per_msg}'
}

median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

bench() {
	local name=$1 fn=$2 i
	: > "$TMP/$name.off"
	: > "$TMP/$name.on"
	for i in $(seq 1 "$REPS"); do
		local off on
		off=$($fn)
		dqlat_on
		on=$($fn)
		dqlat_off
		echo "# $name rep $i: off $off  on $on  dqlat saw $(jq -c '{ready: .counters.ready, wakeups: .parts.release_to_reap.count}' "$TMP/dqlat.json")"
		# Pairs only: a failed run drops its whole rep.
		if [ -n "$off" ] && [ -n "$on" ]; then
			echo "$off" >> "$TMP/$name.off"
			echo "$on" >> "$TMP/$name.on"
		fi
	done
	local r0 r1 c0 c1 pr pc
	# (files, not <(...): the VM has no /dev/fd)
	jq '.rate' "$TMP/$name.off" > "$TMP/r.off"
	jq '.rate' "$TMP/$name.on" > "$TMP/r.on"
	jq '.cpu' "$TMP/$name.off" > "$TMP/c.off"
	jq '.cpu' "$TMP/$name.on" > "$TMP/c.on"
	pr=$(paste -d' ' "$TMP/r.off" "$TMP/r.on" | awk '{ print ($2 - $1) * 100 / $1 }' | median)
	pc=$(paste -d' ' "$TMP/c.off" "$TMP/c.on" | awk '{ print ($2 - $1) * 100 / $1 }' | median)
	r0=$(jq '.rate' "$TMP/$name.off" | median)
	r1=$(jq '.rate' "$TMP/$name.on" | median)
	c0=$(jq '.cpu' "$TMP/$name.off" | median)
	c1=$(jq '.cpu' "$TMP/$name.on" | median)
	awk -v n="$name" -v r0="$r0" -v r1="$r1" -v c0="$c0" -v c1="$c1" \
		-v pr="$pr" -v pc="$pc" 'BEGIN {
		printf "%-8s %11.0f %11.0f %+7.1f%% %+7.1f%% %11.0f %11.0f %+7.1f%% %+7.1f%%\n",
			n, r0, r1, (r1 - r0) * 100 / r0, pr, c0, c1, (c1 - c0) * 100 / c0, pc }' >> "$TMP/table"
	printf '{"workload":"%s","reps":%d,"msgs_per_s":{"off":%s,"on":%s,"paired_change_pct":%s},"cpu_ns_per_msg":{"off":%s,"on":%s,"paired_change_pct":%s}}\n' \
		"$name" "$REPS" "$r0" "$r1" "$pr" "$c0" "$c1" "$pc" >> "$TMP/json"
}

echo "# kernel $(uname -r), $(nproc) CPUs, $REPS reps, medians"
bench dqload run_dqload
[ -x "$DQBENCH" ] && bench dqbench run_dqbench

printf '%-8s %11s %11s %8s %8s %11s %11s %8s %8s\n' workload "msg/s off" "msg/s on" \
	change paired "cpu ns off" "cpu ns on" change paired
cat "$TMP/table"
cat "$TMP/json"
echo "# progcost (BPF_ENABLE_STATS, here):"
"$HERE/build/tests/progcost" 20000 16
