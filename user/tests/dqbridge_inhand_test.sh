#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1 OR MIT
#
# dqbridge: a Redis entry read again while the bridge still has it in hand
# (its own XAUTOCLAIM takes back what it has not acked yet) is dropped,
# counted in dqbridge_duplicates_total, and delivered once.  The check is
# bridge.c's in_hand(), a table of the source jobs by id since Cost lever
# 12 (before: a walk of every job a message read).
#
# Construction: nginx in front of recorder.py, which answers a body
# starting with SLOW after 300 ms; producer.py offers N = 20 such
# messages at once (1000/s), max_inflight 32, so all of them wait for
# their answer together.  redis_claim_idle_ms and
# redis_claim_interval_ms are 50: every entry pending 50 ms is claimed
# back, so each is read again while in hand at least once within the 300
# ms (claims at 50-ms intervals; idle past 50 ms by 100 ms after its read:
# a margin of 3x on a loaded host).  Judged against the test's own
# records (the producer's ids and payload hashes, the recorder's
# requests): every message delivered exactly once with its payload
# (a bridge that missed an id in hand sends each claim again: 2 or more),
# and dqbridge_duplicates_total >= N.  ~4 s.
#
# usage: dqbridge_inhand_test.sh DQBRIDGE_BINARY
set -euo pipefail
BIN=${1:?usage: dqbridge_inhand_test.sh DQBRIDGE_BINARY}
HERE=$(cd "$(dirname "$0")" && pwd)
LIMIT=100000 BURST=10000
. "$HERE/dqbridge/lib.sh"
need redis-server redis-cli
errexit_traps
N=20

start_redis
start_downstream

cat > "$T/dqbridge.conf" <<CONF
source = redis
redis_port = $RP
redis_stream = in
redis_group = bridge
redis_consumer = b1
redis_claim_idle_ms = 50
redis_claim_interval_ms = 50
max_inflight = 32
rate_state_file = none
sink_url = http://127.0.0.1:$NP/ingest
sink_timeout_ms = 5000
dq_dir = $T/dq
dq_slots = 1024
dq_slot_size = 1024
metrics_listen = 127.0.0.1:$MP
drain_timeout_ms = 2000
CONF
start_bridge || true
check "dqbridge starts" kill -0 "$BRIDGE_PID"
python3 "$HERE/dqbridge/producer.py" "$RP" in "$N" 1000 "$T/produced.txt" -1 SLOW
done_all=0
for _ in $(seq 100); do
	[ "$(group pending)" = 0 ] && [ "$(awk '$4 == 200' "$T/recorder.log" | wc -l)" -ge "$N" ] &&
		{ done_all=1; break; }
	sleep 0.1
done
check "every message answered and acked (pending $(group pending))" [ "$done_all" = 1 ]
# Claims that were in flight as the last answers came: let them land.
sleep 0.3
dups=$(metric duplicates_total)
check "read again while in hand: duplicates_total $dups >= $N" [ "${dups:-0}" -ge "$N" ]
bad=$(python3 "$HERE/dqbridge/judge.py" "$T/produced.txt" "$T/recorder.log" --any-status --requests)
check "every message sent exactly once with its payload (bad: $bad)" [ "${bad%% *}" = 0 ]
kill -TERM "$BRIDGE_PID"
rc=0
wait "$BRIDGE_PID" || rc=$?
BRIDGE_PID=
check "SIGTERM: exit 0" [ "$rc" = 0 ]
finish
