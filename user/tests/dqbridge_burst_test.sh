#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1 OR MIT
#
# dqbridge: a read burst past max_inflight waits in hand, it is not
# diverted through dq (issue 35).  With nothing held in dq, no throttling
# and tokens to spare, only the in-flight cap stands between a message
# and a direct send: such messages wait (unacked, in read order) for a
# request to finish.  The bridge of before committed them into dq (and
# acked them once durable), and then every later message followed them
# through the journal for as long as messages kept coming: its commit,
# group commit, reap and finish for a downstream that never refused.
#
# Construction (no timing verdict): fault_sink.py holds every answer
# (CONTROL "hold") and the bridge may have 2 requests in flight; 10
# entries are added in one MULTI once it has run idle 200 ms (a full
# token bucket), so its first read takes them all.  Once Redis shows all 10 read by the group, the test waits
# 1 s (a divert is durable and acked within one group commit, 20 ms) and
# reads the group's pending list: 10 (nothing acked: 2 in flight, 8 in
# hand).  The bridge of before shows 2 (8 diverted and acked).  Then the
# answers are let go: every entry delivered once with its payload, the
# pending list empty.  Judged on Redis and the sink's log.  ~6 s.
#
# usage: dqbridge_burst_test.sh DQBRIDGE_BINARY
set -euo pipefail
BIN=${1:?usage: dqbridge_burst_test.sh DQBRIDGE_BINARY}
HERE=$(cd "$(dirname "$0")" && pwd)
LIMIT=0 BURST=0
. "$HERE/dqbridge/lib.sh"
need redis-server redis-cli
errexit_traps
N=10

start_redis
ctl ok
python3 "$HERE/dqbridge/fault_sink.py" "$NP" "$T/sink.log" "$T/control" > "$T/sink.err" 2>&1 &
pids+=($!)
for _ in $(seq 50); do curl -sf -o /dev/null "http://127.0.0.1:$NP/" -d x && break; sleep 0.1; done
ctl hold

cat > "$T/dqbridge.conf" <<CONF
source = redis
redis_port = $RP
redis_stream = in
redis_group = bridge
redis_consumer = b1
source_batch = 16
max_inflight = 2
rate_ceiling = 1000
sink_url = http://127.0.0.1:$NP/ingest
sink_timeout_ms = 20000
dq_dir = $T/dq
dq_slots = 1024
dq_slot_size = 1024
metrics_listen = 127.0.0.1:$MP
drain_timeout_ms = 3000
CONF
start_bridge || true
check "dqbridge starts" kill -0 "$BRIDGE_PID"
# The token bucket starts with one token and fills at rate_ceiling: idle
# for a while first, then the burst in one MULTI, so that one read takes
# all of it (a burst read 1 ms after start found no tokens to wait with:
# diverted, once, in a make check).
sleep 0.2
: > "$T/produced.txt"
{
	echo MULTI
	for i in $(seq $N); do
		body="burst message $i $RANDOM$RANDOM"
		echo "$body" >> "$T/bodies.txt"
		echo "XADD in * payload \"$body\""
	done
	echo EXEC
} | rcli > "$T/multi.txt"
paste -d' ' <(tail -n "$N" "$T/multi.txt") <(while read -r body; do
	printf '%s' "$body" | sha256sum | cut -d' ' -f1; done < "$T/bodies.txt") > "$T/produced.txt"

check "the group read all $N entries" group_reaches entries-read "$N" 100
sleep 1
pending=$(group pending)
check "a burst past max_inflight waits unacked, not diverted: pending $pending of $N (2 in flight, the rest in hand)" \
	[ "$pending" = "$N" ]

ctl ok
done_all=0
for _ in $(seq 100); do
	[ "$(group pending)" = 0 ] && [ "$(awk '$4 == 200 && $2 != "-"' "$T/sink.log" | wc -l)" -ge "$N" ] &&
		{ done_all=1; break; }
	sleep 0.1
done
check "released: every entry acked (pending $(group pending))" [ "$done_all" = 1 ]
bad=$(python3 "$HERE/dqbridge/judge.py" "$T/produced.txt" "$T/sink.log" --probe)
check "every entry delivered exactly once with its payload (bad: $bad)" [ "$bad" = 0 ]
kill -TERM "$BRIDGE_PID"
rc=0
wait "$BRIDGE_PID" || rc=$?
BRIDGE_PID=
check "SIGTERM: exit 0" [ "$rc" = 0 ]
finish
