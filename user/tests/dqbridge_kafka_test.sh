#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1 OR MIT
#
# dqbridge's Kafka source end to end.  Debian has no Kafka broker: the
# "broker" here is librdkafka's mock cluster (rd_kafka_mock_cluster_new,
# in the helper dqbridge/kafka_mock.c), which speaks the Kafka protocol on
# loopback TCP to the real librdkafka consumer in dqbridge, consumer
# groups and offset commits included.  It is not a Kafka broker: no
# replication, no disk, its own rebalance timing.  The downstream is the
# same nginx (limit_req) + recorder.py as dqbridge_test.sh.
#
# Judged on the test's records: every produced message delivered with an
# identical payload after a kill -9 and restart of the bridge; the
# refused one in the dead-letter topic with reason and attempts; the
# group's committed offsets at the end of every partition (lag 0); exit 0
# on SIGTERM; a bridge with a 256 MiB arena holding nothing does not
# keep it resident.  TAP; last line "N passed, N failed".
#
# usage: dqbridge_kafka_test.sh DQBRIDGE_BINARY KAFKA_MOCK_BINARY
set -u
BIN=${1:?usage: dqbridge_kafka_test.sh DQBRIDGE KAFKA_MOCK}
MOCK=${2:?usage: dqbridge_kafka_test.sh DQBRIDGE KAFKA_MOCK}
HERE=$(cd "$(dirname "$0")" && pwd)
LIMIT=100 BURST=10 COUNT=1500 OFFER=250 FAIL_INDEX=50 MAX_ATTEMPTS=3 PARTS=3
. "$HERE/dqbridge/lib.sh"
[ -x "$MOCK" ] || { echo "Bail out! no $MOCK"; exit 1; }

"$MOCK" serve in "$PARTS" "$T/bootstrap" > "$T/mock.log" 2>&1 &
pids+=($!)
start_downstream
for i in $(seq 50); do [ -s "$T/bootstrap" ] && break; sleep 0.1; done
BOOT=$(cat "$T/bootstrap")
echo "# mock cluster at $BOOT"

cat > "$T/dqbridge.conf" <<CONF
source = kafka
kafka_brokers = $BOOT
kafka_topic = in
kafka_group = bridge
kafka_session_timeout_ms = 6000
sink_url = http://127.0.0.1:$NP/ingest
max_inflight = 16
max_attempts = $MAX_ATTEMPTS
rate_floor = 10
rate_ceiling = 400
rate_increase = 10
dq_dir = $T/dq
dq_slots = 4096
dq_slot_size = 1024
metrics_listen = 127.0.0.1:$MP
drain_timeout_ms = 5000
CONF

check "dqbridge (kafka source) starts" start_bridge
"$MOCK" produce "$BOOT" in "$COUNT" "$OFFER" "$T/produced.hex" "$FAIL_INDEX" &
prod=$!
sleep 5
kill -9 "$BRIDGE_PID"
wait "$BRIDGE_PID" 2> /dev/null
echo "# kill -9 after 5 s, $(wc -l < "$T/produced.hex") produced"
check "dqbridge restarts after kill -9" start_bridge
wait "$prod"
check "producer: all $COUNT messages stored by the mock cluster" [ "$(wc -l < "$T/produced.hex")" = "$COUNT" ]
python3 - "$T/produced.hex" > "$T/produced.txt" <<'PY'
import hashlib, sys
for line in open(sys.argv[1]):
    mid, hx = line.split()
    print(mid, hashlib.sha256(bytes.fromhex(hx)).hexdigest())
PY
# The refused message: its payload starts with "FAIL500 " (hex below).
FAIL_ID=$(grep -m1 ' 4641494c35303020' "$T/produced.hex" | cut -d' ' -f1)
echo "# refused message: ${FAIL_ID:-?}"
check "every message delivered after kill -9 and restart (within 90 s)" \
	wait_delivered "$T/produced.txt" 90
python3 "$HERE/dqbridge/analyze.py" "$T/produced.txt" "$T/recorder.log" \
	"$T/nginx-access.log" "$LIMIT" "$BURST" "$FAIL_ID" > "$T/figures.txt"
sed 's/^/# /' "$T/figures.txt"
fig() { sed -n "s/^$1=//p" "$T/figures.txt"; }
check "every id delivered with a 200 (missing $(fig missing))" [ "$(fig missing)" = 0 ]
check "payloads identical (sha256 mismatches: $(fig bad_payload))" [ "$(fig bad_payload)" = 0 ]
check "429s happened ($(fig nginx_429)) and the accepted rate stayed within limit + 5 % + burst (max $(fig accepted_max_1s)/s)" \
	[ "$(fig nginx_429)" -gt 0 -a "$(fig accepted_max_1s)" -le $(( LIMIT * 105 / 100 + BURST )) ]
dead_ok() {
	local end=$((SECONDS + 30))
	while [ $SECONDS -lt $end ]; do
		"$MOCK" dump "$BOOT" in.dead > "$T/dead.txt" 2> /dev/null
		grep -q "^$FAIL_ID " "$T/dead.txt" && return 0
		sleep 1
	done
	return 1
}
check "refused message in the dead-letter topic" dead_ok
fail_hex=$(grep "^$FAIL_ID " "$T/produced.hex" | cut -d' ' -f2)
check "dead letter: reason http_500_max_attempts, attempts $MAX_ATTEMPTS, payload intact" \
	[ "$(grep "^$FAIL_ID " "$T/dead.txt" | head -1)" = "$FAIL_ID http_500_max_attempts $MAX_ATTEMPTS $fail_hex" ]
lag_zero() {
	local end=$((SECONDS + 20)) l
	while [ $SECONDS -lt $end ]; do
		l=$("$MOCK" lag "$BOOT" bridge in "$PARTS" 2> /dev/null)
		[ "$l" = 0 ] && return 0
		sleep 1
	done
	echo "# lag: ${l:-?}"
	return 1
}
check "group offsets committed to the end of every partition (lag 0)" lag_zero
echo "# duplicates delivered (kill -9 window): $(fig duplicates)"
kill -TERM "$BRIDGE_PID"
wait "$BRIDGE_PID"
rc=$?
BRIDGE_PID=
check "SIGTERM: exit 0" [ "$rc" -eq 0 ]

# Memory: a bridge sized for a peak (65536 slots of 4 KiB: a 256 MiB
# arena) holding nothing (an empty topic) must not keep the arena resident (it used to:
# VmRSS 270 MiB idle).  The rest of the process (libraries, librdkafka's
# threads and buffers, the journal's) measured 14 MiB; a quarter of the
# arena leaves that room four times over and still fails a populated one.
RSS_MP=$(free_port)
cat > "$T/rss.conf" <<CONF
source = kafka
kafka_brokers = $BOOT
kafka_topic = idle
kafka_group = rss
sink_url = http://127.0.0.1:$NP/ingest
dq_dir = $T/dq-rss
dq_slots = 65536
dq_slot_size = 4096
metrics_listen = 127.0.0.1:$RSS_MP
CONF
"$BIN" -c "$T/rss.conf" > "$T/rss.log" 2>&1 &
rss_pid=$!
pids+=($rss_pid)
# "started": the queue is open, its arena mapped (and, before, populated).
for i in $(seq 100); do grep -q 'event=started ' "$T/rss.log" && break; sleep 0.1; done
rss_kib=$(awk '/^VmRSS/ {print $2}' "/proc/$rss_pid/status" 2> /dev/null)
check "idle bridge with a 256 MiB arena: VmRSS ${rss_kib:-?} KiB < 65536 KiB" \
	[ "${rss_kib:-999999}" -lt 65536 ]
kill -TERM "$rss_pid"
wait "$rss_pid" 2> /dev/null
finish
