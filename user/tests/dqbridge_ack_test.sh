#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1 OR MIT
#
# dqbridge: at a low rate an XACK rides in the reader's write, ahead of
# its next XREADGROUP, rather than in a write of its own on the other
# connection (issue 35: at 300 msg/s the Redis source was a quarter of
# the bridge's CPU, a write and a read of it the acks').
#
# Construction: nginx (no limit to speak of) in front of recorder.py,
# answering 200 in about a ms; producer.py offers N = 100 messages at
# 50/s.  Each read comes back short (one message or two), so the next
# waits source_read_interval_ms (100 ms here): the message is delivered
# and acked well within that, and the ack waits for the read.  Redis's
# MONITOR (its own record of every command and the connection it came
# on) is kept meanwhile; judged: the XACKs that came on the connection
# that sent XREADGROUP ... > (the reader) against all XACKs.  The old
# bridge sends every XACK on its first connection: 0 on the reader.
# Verdict: at least half on the reader (an answer slower than the
# interval, or a read that came back full, sends its ack the old way).
# Then every message delivered with its payload, the group's pending
# list empty, so no ack was lost on the way.  ~6 s.
#
# usage: dqbridge_ack_test.sh DQBRIDGE_BINARY
set -euo pipefail
BIN=${1:?usage: dqbridge_ack_test.sh DQBRIDGE_BINARY}
HERE=$(cd "$(dirname "$0")" && pwd)
LIMIT=100000 BURST=10000
. "$HERE/dqbridge/lib.sh"
need redis-server redis-cli
errexit_traps
N=100

start_redis
start_downstream

cat > "$T/dqbridge.conf" <<CONF
source = redis
redis_port = $RP
redis_stream = in
redis_group = bridge
redis_consumer = b1
source_read_interval_ms = 100
max_inflight = 8
rate_state_file = none
sink_url = http://127.0.0.1:$NP/ingest
sink_timeout_ms = 3000
dq_dir = $T/dq
dq_slots = 1024
dq_slot_size = 1024
metrics_listen = 127.0.0.1:$MP
drain_timeout_ms = 2000
CONF
start_bridge || true
check "dqbridge starts" kill -0 "$BRIDGE_PID"
timeout 30 redis-cli -p "$RP" MONITOR > "$T/monitor.txt" 2> /dev/null &
MON=$!
pids+=("$MON")
sleep 0.3
python3 "$HERE/dqbridge/producer.py" "$RP" in "$N" 50 "$T/produced.txt"
done_all=0
for _ in $(seq 300); do
	[ "$(group pending)" = 0 ] && [ "$(awk '$4 == 200' "$T/recorder.log" | wc -l)" -ge "$N" ] &&
		{ done_all=1; break; }
	sleep 0.1
done
check "every message delivered and acked (pending $(group pending))" [ "$done_all" = 1 ]
kill "$MON" 2> /dev/null || true
wait "$MON" 2> /dev/null || true
# MONITOR lines: <time> [<db> <addr>] "CMD" "arg" ...
read -r on_reader all < <(awk '
	{ addr = $3; sub(/\]$/, "", addr); cmd = toupper($4); gsub(/"/, "", cmd) }
	cmd == "XREADGROUP" && $NF == "\">\"" { reader[addr] = 1 }
	cmd == "XACK" { n++; by[addr]++ }
	END { r = 0; for (a in by) if (a in reader) r += by[a]; print r + 0, n + 0 }' "$T/monitor.txt")
check "XACKs on the reader's connection: $on_reader of $all (>= half)" \
	[ "$all" -gt 0 -a $((2 * on_reader)) -ge "$all" ]
bad=$(python3 "$HERE/dqbridge/judge.py" "$T/produced.txt" "$T/recorder.log")
check "every message delivered exactly once with its payload (bad: $bad)" [ "$bad" = 0 ]
kill -TERM "$BRIDGE_PID"
rc=0
wait "$BRIDGE_PID" || rc=$?
BRIDGE_PID=
check "SIGTERM: exit 0" [ "$rc" = 0 ]
finish
