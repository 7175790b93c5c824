#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1 OR MIT
#
# gobench/run.sh GOBENCH OUT: the Go comparison of `make bench` (issue 37,
# item 4), natively: dq-go against a buffered channel with sleeping
# goroutines, time.AfterFunc per message and a Redis ZSET polled every
# 200 ms, at 10k and 100k msg/s offered, delays 0-1 s, 500 B, each rate
# once more with dq-go's granularity at 1 ms; then the verdicts.  Writes
# the tables and verdicts to OUT.  ~2 min.
set -u -o pipefail
bin=$(readlink -f "$1")
out=$2
secs=${GOBENCH_SECONDS:-5}
w=$(mktemp -d /tmp/gobench.XXXXXX)
rpid=
cleanup() {
	[ -n "$rpid" ] && kill "$rpid" 2> /dev/null
	wait 2> /dev/null
	rm -rf "$w"
}
trap cleanup EXIT
port=$(/usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no > "$w/redis.log" 2>&1 &
rpid=$!
for _ in $(seq 100); do
	[ "$(redis-cli -p "$port" ping 2> /dev/null)" = PONG ] && break
	sleep 0.1
done
rc=0
{
	echo "# Go designs against dq-go, $(date -u +%F), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
	# Each system in a process of its own (after the driver's baseline),
	# so that its RSS growth is its own.
	for rate in 10000 100000; do
		for s in dq-go chan-sleep afterfunc redis-zset; do
			"$bin" -rate "$rate" -seconds "$secs" -redis "127.0.0.1:$port" -redis-pid "$rpid" \
				-systems "baseline,$s" || rc=1
		done
		"$bin" -rate "$rate" -seconds "$secs" -systems baseline,dq-go -granularity 1ms || rc=1
	done | awk '/^(# gobench|system )/ { if (!seen[$0]++) print; next }
		$1 != "baseline" { print }' 
} | tee "$w/table"
# Verdicts from the table: net CPU (the driver's baseline subtracted) and p99.
awk '
function us(s) { sub(/us$/, "", s); return s + 0 }
function dur(s) {
	if (s ~ /ms$/) { sub(/ms$/, "", s); return s * 1000 }
	if (s ~ /µs$/) { sub(/µs$/, "", s); return s + 0 }
	if (s ~ /s$/) { sub(/s$/, "", s); return s * 1e6 }
	return s + 0
}
$1 ~ /^(dq-go|chan-sleep|afterfunc|redis-zset)/ && $2 ~ /^[0-9]+$/ {
	key = $1 "@" $2; cpu[key] = us($6); p99[key] = dur($8); rates[$2] = 1; sys[$1] = 1
}
END {
	k = "dq-go@100000"
	met = (k in cpu) && cpu[k] <= 2 && p99[k] <= 1000
	printf "goal: dq-go <= 2 us CPU/msg at 100k msg/s with p99 <= 1 ms: %s (%.2f us net, p99 %.0f us)\n",
		met ? "met" : "missed", cpu[k], p99[k]
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
}' "$w/table" | sort | tee "$w/verdicts"
{
	cat "$w/table"
	echo
	cat "$w/verdicts"
} > "$out"
exit $rc
