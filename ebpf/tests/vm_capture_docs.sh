#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1 OR MIT
#
# vm_capture_docs.sh - regenerate the sample outputs quoted in
# docs/observability.md, inside the test VM:
#
#   selftests/vm/run -- ebpf/tests/vm_capture_docs.sh
#
# perf list / record / script on dq:*, bpftool on dqlat's pinned maps,
# dqlat's text and JSON output under dqbench (or dqload), and cyclictest
# in the same VM for comparison.  Not a test: it prints, it does not judge.

set -u

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
EBPF=$(dirname "$HERE")
REPO=$(dirname "$EBPF")
DQLAT=$EBPF/build/dqlat
DQBENCH=${DQBENCH:-$REPO/user/build/dqbench}
TMP=$(mktemp -d /tmp/dqdocs.XXXXXX)

section() { printf '\n===== %s =====\n' "$*"; }

workload() {
	if [ -x "$DQBENCH" ]; then
		"$DQBENCH" --backend kernel --count "${1:-3000}" \
			--delay uniform:1ms-2s --batch 16
	else
		"$EBPF/build/tests/dqload" -r 1000 -d 3
	fi
}

wait_tracing() {
	local i
	for i in $(seq 1 300); do
		grep -q tracing "$1" 2>/dev/null && return 0
		sleep 0.1
	done
	return 1
}

# cyclictest's summary lines and p50/p99/p99.9 from its 1-us histogram.
cyc_summary() {
	grep -E '^# (Total|Min|Avg|Max|Histogram Overflows)' "$1"
	awk '!/^#/ && NF > 1 { t = 0; for (i = 2; i <= NF; i++) t += $i; h[$1 + 0] = t; n += t }
	     /^# Histogram Overflows/ { for (i = 4; i <= NF; i++) ov += $i }
	     END { n += ov; split("0.5 0.99 0.999", q, " ");
		for (k = 1; k <= 3; k++) { c = 0; want = q[k] * n; p = ">999";
			for (us = 0; us < 1000; us++) { c += h[us]; if (c >= want) { p = us; break } }
			printf "p%s %s us  ", q[k] * 100, p }
		printf "(%d samples, %d over 999 us)\n", n, ov }' "$1"
}

grep -q ' /sys/fs/bpf bpf ' /proc/mounts || mount -t bpf bpf /sys/fs/bpf
echo "kernel $(uname -r), $(nproc) CPUs"

section "perf list 'dq:*'"
perf list 'dq:*' 2>&1

section "perf record -e dq:dq_release -e dq:dq_wake -e dq:dq_reap -a"
perf record -e dq:dq_release -e dq:dq_wake -e dq:dq_reap -a \
	-o "$TMP/perf.data" -- "$EBPF/build/tests/dqload" -r 200 -d 1 > /dev/null 2> "$TMP/perf.err"
tail -n 3 "$TMP/perf.err"
section "perf script | head -12"
perf script -i "$TMP/perf.data" 2>/dev/null | head -12
section "perf script | awk (release -> reap per wake-up, us)"
perf script -i "$TMP/perf.data" -F event,trace 2>/dev/null | awk '
	/dq_release:/ { for (i = 1; i <= NF; i++) if ($i ~ /^now=/) rel = substr($i, 5) }
	/dq_reap:/ && rel { for (i = 1; i <= NF; i++) if ($i ~ /^now=/) {
		d = (substr($i, 5) - rel) / 1000; n++; s += d; if (d > m) m = d } rel = 0 }
	END { printf "%d wake-ups, mean %.1f us, max %.1f us\n", n, s / n, m }'
section "perf stat -e 'dq:*' (dqload 1 s at 500 msg/s)"
perf stat -e 'dq:*' -a -- "$EBPF/build/tests/dqload" -r 500 -d 1 2>&1 > /dev/null | grep -E 'dq:|elapsed'

section "dqlat (text) under the workload"
"$DQLAT" > "$TMP/text.out" 2> "$TMP/text.err" &
pid=$!
wait_tracing "$TMP/text.err"
workload 3000
kill -INT $pid
wait $pid
cat "$TMP/text.out"

section "dqlat --json --pin under the workload, bpftool meanwhile"
"$DQLAT" --json --pin > "$TMP/json.out" 2> "$TMP/json.err" &
pid=$!
wait_tracing "$TMP/json.err"
workload 3000 > "$TMP/bench.out" &
wl=$!
sleep 1.5
echo "\$ ls /sys/fs/bpf/dq"
ls /sys/fs/bpf/dq
echo "\$ bpftool map show pinned /sys/fs/bpf/dq/hists"
bpftool map show pinned /sys/fs/bpf/dq/hists
echo "\$ bpftool map dump pinned /sys/fs/bpf/dq/counters   (first CPU)"
bpftool map dump pinned /sys/fs/bpf/dq/counters | sed -n '1,30p'
echo "\$ bpftool -j map dump pinned /sys/fs/bpf/dq/queues | jq -c '.[].formatted | select(.value.valid == 1)'"
bpftool -j map dump pinned /sys/fs/bpf/dq/queues | jq -M -c '.[].formatted | select(.value.valid == 1)'
echo "\$ bpftool map dump pinned /sys/fs/bpf/dq/consumers"
bpftool map dump pinned /sys/fs/bpf/dq/consumers
echo "\$ bpftool -j map dump pinned /sys/fs/bpf/dq/hists | jq ...   (run-queue delay, CPUs summed)"
bpftool -j map dump pinned /sys/fs/bpf/dq/hists |
	jq -M -c '.[] | select(.formatted.key == 2) | .formatted.values | map(.value) |
		{count: (map(.count) | add), sum_ns: (map(.sum_ns) | add),
		 slots: [range(0; 32) as $i | map(.slots[$i]) | add]}'
echo "\$ bpftool prog show | grep -A1 dq_"
bpftool prog show | grep -E -A1 'name (dq_|sched_)' | head -20
wait $wl
kill -INT $pid
wait $pid
cat "$TMP/bench.out"
section "dqlat --json (raw line)"
cat "$TMP/json.out"
section "dqlat --json | jq (summary)"
jq -M -c '.parts | map_values({count, mean_us, p50_us, p99_us, p999_us, max_us})' "$TMP/json.out"
jq -M -c '{counters, unreaped, check}' "$TMP/json.out"

section "dq at 1 kHz (dqload -r 1000 -d 10, delays 1-20 ms) under dqlat, idle otherwise"
"$DQLAT" --json > "$TMP/khz.json" 2> "$TMP/khz.err" &
pid=$!
wait_tracing "$TMP/khz.err"
"$EBPF/build/tests/dqload" -r 1000 -d 10 -m 1000 -M 20000 > "$TMP/khz.load"
kill -INT $pid
wait $pid
cat "$TMP/khz.load"
jq -M -c '.parts | map_values({count, mean_us, p50_us, p99_us, p999_us, max_us})' "$TMP/khz.json"
jq -M -c '.parts.timer.hist | map("\(.lo_us)-\(.hi_us): \(.count)")' "$TMP/khz.json"

# rt-tests 2.x has no -n any more (clock_nanosleep is the only mode).
section "cyclictest -m -q -D 10 -i 1000 -h 1000 (idle VM)"
cyclictest -m -q -D 10 -i 1000 -h 1000 > "$TMP/cyc.out" 2>&1
cyc_summary "$TMP/cyc.out"

section "cyclictest while the workload runs"
workload 3000 > /dev/null &
wl=$!
cyclictest -m -q -D 5 -i 1000 -h 1000 > "$TMP/cyc2.out" 2>&1
wait $wl
cyc_summary "$TMP/cyc2.out"
