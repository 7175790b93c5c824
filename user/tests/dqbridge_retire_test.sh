#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1 OR MIT
#
# dqbridge: dq_retire_sync_ms spaces the journal's fdatasyncs while the
# bridge drains a held backlog (issue 35: with only retire entries
# waiting, the group commit of dq_sync_interval_ms, 10 ms, synced every
# interval: ~45 % of the bridge's CPU in the drain at 500 r/s).
#
# Construction (dqbridge_release_test.sh's): the rate pinned at R = 100
# r/s (floor = ceiling), burst_ms 50, nginx answering 200 itself; N = 240
# entries in the stream before the bridge starts: the first goes direct,
# the rest are diverted into dq (their commits synced at the start) and
# released at R, ~2.4 s.  The bridge runs under strace -f -ttt
# -e trace=fdatasync,fsync (seccomp-bpf: only those stop); the window is
# nginx's own clock ($msec) from its 40th to its 240th answer, W ~2 s,
# where the only records the bridge writes are retire entries.  Run twice,
# fresh stream and journal each:
#   dq_retire_sync_ms 1000: at most one sync a second, so the window
#     holds at most int(W) + 1; verdict <= int(W) + 2 (2 seen);
#   dq_retire_sync_ms 10 (as the interval, the behaviour of before): a
#     sync each interval in which answers retired messages, at least one
#     per burst (every 50 ms at R), >= W / 50 ms = 40 (60 seen); verdict
#     >= 10 a second of window.  The library's lazy path disabled, the
#     1000 ms run made 51: the first verdict bites.
# And each run delivers every entry exactly once (nginx's log by
# Idempotency-Key), SIGTERM exits 0.  ~10 s.
#
# usage: dqbridge_retire_test.sh DQBRIDGE_BINARY
set -euo pipefail
BIN=${1:?usage: dqbridge_retire_test.sh DQBRIDGE_BINARY}
HERE=$(cd "$(dirname "$0")" && pwd)
LIMIT=100000 BURST=10000
. "$HERE/dqbridge/lib.sh"
need redis-server redis-cli strace
errexit_traps
N=240 R=100

start_redis
downstream_nginx_conf
sed -i 's|proxy_pass http://recorder;|return 200;|' "$T/nginx.conf"
"$NGINX" -p "$T" -e "$T/nginx-error.log" -c "$T/nginx.conf" > /dev/null 2>&1 &
NGINX_PID=$!
for _ in $(seq 50); do curl -sf -o /dev/null "http://127.0.0.1:$NP/" -d x && break; sleep 0.1; done
forget_probe

run() {	# RETIRE_MS: syncs in the window -> $T/syncs.$1, window -> $T/window.$1
	local ms=$1 stream=in$1 i tracer bpid rc
	for i in $(seq $N); do
		echo "XADD $stream * payload retire-$ms-$i-$RANDOM$RANDOM"
	done | rcli > /dev/null
	rcli XRANGE "$stream" - + | awk 'NR % 3 == 1 {print}' > "$T/produced.$ms"
	: > "$T/nginx-access.log"
	cat > "$T/dqbridge.$ms.conf" <<-CONF
	source = redis
	redis_port = $RP
	redis_stream = $stream
	redis_group = bridge
	redis_consumer = b1
	source_batch = 128
	max_inflight = 32
	rate_floor = $R
	rate_ceiling = $R
	rate_initial = $R
	burst_ms = 50
	rate_state_file = none
	sink_url = http://127.0.0.1:$NP/ingest
	sink_timeout_ms = 30000
	dq_dir = $T/dq.$ms
	dq_slots = 1024
	dq_slot_size = 1024
	dq_sync_interval_ms = 10
	dq_retire_sync_ms = $ms
	metrics_listen = 127.0.0.1:$MP
	drain_timeout_ms = 3000
	CONF
	rcli XGROUP CREATE "$stream" bridge 0 > /dev/null
	strace -f -qq -ttt --seccomp-bpf -e trace=fdatasync,fsync -o "$T/strace.$ms" \
		"$BIN" -c "$T/dqbridge.$ms.conf" >> "$T/bridge.log" 2>&1 &
	tracer=$!
	pids+=("$tracer")
	for _ in $(seq 300); do
		[ "$(awk '$2 == 200' "$T/nginx-access.log" | wc -l)" -ge "$N" ] && break
		sleep 0.1
	done
	sleep 0.3	# the access log (unbuffered) has the last line
	bpid=$(pgrep -P "$tracer" | head -1 || true)
	[ -z "$bpid" ] || kill -TERM "$bpid"
	rc=0
	wait "$tracer" || rc=$?
	check "dq_retire_sync_ms $ms: SIGTERM: exit 0" [ "$rc" = 0 ]
	bad=$(python3 - "$T/produced.$ms" "$T/nginx-access.log" <<-'PY'
	import collections, sys
	want = [l.split()[0] for l in open(sys.argv[1])]
	got = collections.Counter(l.split()[2] for l in open(sys.argv[2]) if l.split()[1] == "200")
	bad = [k for k in want if got[k] != 1] + [k for k in got if k not in set(want)]
	print(len(bad))
	PY
	)
	check "dq_retire_sync_ms $ms: every entry delivered exactly once (bad: $bad)" [ "$bad" = 0 ]
	# The window: nginx's 40th and 240th answers ($msec, wall clock).
	awk '$2 == 200 {n++; if (n == 40) a = $1; if (n == '$N') b = $1}
		END {printf "%.3f %.3f\n", a, b}' "$T/nginx-access.log" > "$T/window.$ms"
	read -r w0 w1 < "$T/window.$ms"
	awk -v a="$w0" -v b="$w1" '/fdatasync\(|fsync\(/ {
			for (i = 1; i <= NF; i++) if ($i ~ /^[0-9]+\.[0-9]+$/) { t = $i; break }
			if (t >= a && t <= b) n++
		} END {print n + 0}' "$T/strace.$ms" > "$T/syncs.$ms"
}

run 1000
run 10
read -r a1 b1 < "$T/window.1000"
read -r a2 b2 < "$T/window.10"
s1=$(cat "$T/syncs.1000") s2=$(cat "$T/syncs.10")
w1=$(awk -v a="$a1" -v b="$b1" 'BEGIN {printf "%.2f", b - a}')
w2=$(awk -v a="$a2" -v b="$b2" 'BEGIN {printf "%.2f", b - a}')
bound=$(awk -v w="$w1" 'BEGIN {print int(w) + 2}')
many=$(awk -v w="$w2" 'BEGIN {print int(10 * w)}')
check "windows measured (${w1} s, ${w2} s)" \
	awk -v a="$w1" -v b="$w2" 'BEGIN {exit !(a >= 1 && b >= 1)}'
check "dq_retire_sync_ms 1000: $s1 syncs in the ${w1} s of retires only (<= $bound)" \
	[ "$s1" -le "$bound" ]
check "dq_retire_sync_ms 10: $s2 syncs in the ${w2} s of retires only (>= $many)" \
	[ "$s2" -ge "$many" ]
finish
