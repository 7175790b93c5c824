#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1 OR MIT
#
# gobench/run.sh GOBENCH OUT: the Go comparison of `make bench` (issue 37,
# item 4), natively, in one sitting:
#  1. the goal: dq-go at 100k msg/s offered, delays 0-1 s, 500 B, with a
#     500 us granularity (half of the 1 ms lateness budget, as bench/run.sh
#     runs dq-user natively) and Reap waiting in Go's netpoller
#     (Params.ReapNetpoll, the cheaper wait at this rate: README),
#     GOBENCH_REPEATS times (3): the medians of net
#     CPU per message and of p99 lateness, min-max, and the verdict
#     (dq-go <= 2 us with p99 <= 1 ms).  GOBENCH_GOAL_ONLY=1 runs this part
#     alone (~45 s) and prints it, OUT untouched.
#  2. dq-go against a buffered channel with sleeping goroutines,
#     time.AfterFunc per message and a Redis ZSET polled every 200 ms, at
#     10k and 100k msg/s offered, and dq-go once more at 500 us, with
#     Reap's wait in C and in the netpoller; then the verdicts (~2.5 min).
# Writes the goal, the tables and the verdicts to OUT (date, commit,
# machine and load average in its first line); bench/report.sh puts the
# goal line into docs/benchmarks.md's goals.
set -u -o pipefail
bin=$(readlink -f "$1")
out=$2
secs=${GOBENCH_SECONDS:-5}
reps=${GOBENCH_REPEATS:-3}
goal_only=${GOBENCH_GOAL_ONLY:-0}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
w=$(mktemp -d /tmp/gobench.XXXXXX)
rpid=
cleanup() {
	[ -n "$rpid" ] && kill "$rpid" 2> /dev/null
	wait 2> /dev/null
	rm -rf "$w"
}
trap cleanup EXIT
head="# Go designs against dq-go, $(date -u '+%F %H:%M') UTC, commit $(git -C "$here" rev-parse --short HEAD 2> /dev/null || echo '?'), machine $(uname -n) ($(nproc) CPUs, $(sed -n 's/^model name[^:]*: //p' /proc/cpuinfo | head -n 1)), load $(cut -d' ' -f1-3 /proc/loadavg)"
rc=0
# gobench's units in both awk programs below: "12.3us" and "45µs",
# "1.2ms", "1.5s", as microseconds.
units='function us(s) { sub(/us$/, "", s); return s + 0 }
function dur(s) {
	if (s ~ /ms$/) { sub(/ms$/, "", s); return s * 1000 }
	if (s ~ /µs$/) { sub(/µs$/, "", s); return s + 0 }
	if (s ~ /s$/) { sub(/s$/, "", s); return s * 1e6 }
	return s + 0
}
'
# 1. The goal, repeated; medians of net CPU and p99 (each its own median).
{
	for r in $(seq "$reps"); do
		"$bin" -rate 100000 -seconds "$secs" -systems baseline,dq-go -granularity 500us -netpoll |
			awk -v r="$r" '$1 ~ /^dq-go/ { print "goal-run " r ": " $0 }' || rc=1
	done
} > "$w/goal-runs"
awk -v reps="$reps" -v load="$(cut -d' ' -f1-3 /proc/loadavg)" "$units"'
function med(a, n,   i, j, t) {
	for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j - 1] > a[j]; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
	lo = a[1]; hi = a[n]
	return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
# goal-run R: LABEL rate delivered early cpu/msg net p50 p99 ...
{ print; n++; c[n] = us($8); p[n] = dur($10); if ($6 + 0 != 0) bad = 1 }
END {
	if (n < reps || bad) { printf "goal: dq-go <= 2 us CPU/msg at 100k msg/s with p99 <= 1 ms: not measured (%d of %d runs complete)\n", n, reps; exit 1 }
	mc = med(c, n); clo = lo; chi = hi
	mp = med(p, n); plo = lo; phi = hi
	printf "goal-figures: cpu_net_us=%.2f cpu_min=%.2f cpu_max=%.2f p99_us=%.0f p99_min=%.0f p99_max=%.0f reps=%d gran_us=500 netpoll=1 load=%s\n", mc, clo, chi, mp, plo, phi, n, load
	printf "goal: dq-go <= 2 us CPU/msg at 100k msg/s with p99 <= 1 ms: %s (median of %d: %.2f us net (%.2f-%.2f), p99 %.0f us (%.0f-%.0f), granularity 500 us, ReapNetpoll)\n",
		mc <= 2 && mp <= 1000 ? "met" : "missed", n, mc, clo, chi, mp, plo, phi
}' "$w/goal-runs" > "$w/goal" || rc=1
if [ "$goal_only" = 1 ]; then
	echo "$head"
	cat "$w/goal"
	exit $rc
fi
# 2. The comparison.
port=$(/usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no > "$w/redis.log" 2>&1 &
rpid=$!
for _ in $(seq 100); do
	[ "$(redis-cli -p "$port" ping 2> /dev/null)" = PONG ] && break
	sleep 0.1
done
{
	# Each system in a process of its own (after the driver's baseline),
	# so that its RSS growth is its own.
	for rate in 10000 100000; do
		for s in dq-go chan-sleep afterfunc redis-zset; do
			"$bin" -rate "$rate" -seconds "$secs" -redis "127.0.0.1:$port" -redis-pid "$rpid" \
				-systems "baseline,$s" || rc=1
		done
		"$bin" -rate "$rate" -seconds "$secs" -systems baseline,dq-go -granularity 500us || rc=1
		"$bin" -rate "$rate" -seconds "$secs" -systems baseline,dq-go -granularity 500us -netpoll || rc=1
	done | awk '/^(# gobench|system )/ { if (!seen[$0]++) print; next }
		$1 != "baseline" { print }' 
} | tee "$w/table"
# Verdicts from the table: net CPU (the driver's baseline subtracted) and p99.
awk "$units"'
$1 ~ /^(dq-go|chan-sleep|afterfunc|redis-zset)/ && $2 ~ /^[0-9]+$/ {
	key = $1 "@" $2; cpu[key] = us($6); p99[key] = dur($8); rates[$2] = 1; sys[$1] = 1
}
END {
	for (r in rates) for (d in sys) {
		if (d !~ /^dq-go/) continue
		for (p in sys) {
			if (p ~ /^dq-go/) continue
			a = d "@" r; b = p "@" r
			if (!(a in cpu) || !(b in cpu)) continue
			if (p99[b] > p99[a])
				printf "%s vs %s at %d msg/s: %s late (p99 %.0f us vs %.0f us), CPU %.2f vs %.2f us/msg\n",
					d, p, r, p, p99[b], p99[a], cpu[a], cpu[b]
			else
				printf "%s vs %s at %d msg/s (%s p99 %.0f us <= %.0f us): CPU %.2f vs %.2f us/msg: %s\n",
					d, p, r, p, p99[b], p99[a], cpu[a], cpu[b], cpu[a] < cpu[b] ? "dq-go ahead" : "dq-go BEHIND"
		}
	}
}' "$w/table" | sort -u | tee "$w/verdicts"
{
	echo "$head"
	cat "$w/goal"
	echo
	cat "$w/table"
	echo
	cat "$w/verdicts"
} > "$out"
exit $rc
