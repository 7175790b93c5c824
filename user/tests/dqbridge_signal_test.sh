#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1 OR MIT
#
# dqbridge: "slow down" answers do not dead-letter work (issue 35).  A
# 429 or 503 is the downstream saying "not now", not "this message is
# bad": it lowers the rate and the message is retried, but it does not
# spend one of the message's max_attempts.  The bridge of before counted
# every such answer as a failed attempt, so a message that met
# max_attempts of them went to the dead letters under a rate limit
# alone (a cold make check's dqbridge_kafka_test.sh: two
# http_429_max_attempts).
#
# Construction (no timing verdict): fault_sink.py refuses each message
# (by its Idempotency-Key) REFUSALS times before it accepts it, and the
# bridge has max_attempts 2.  Run A: 429 without Retry-After; run B: 503
# with "Retry-After: 0".  Every message must reach the downstream exactly
# once with a 200 and the payload the producer recorded (sha256 of the
# random binary bytes), after exactly REFUSALS refusals (the sink's log:
# the construction held), with nothing in the dead-letter stream and the
# group's pending list empty.  Run C: the bound that does exist, a time
# one: with max_wait_s 1 a message refused forever goes to the dead
# letters with reason http_429_max_wait, 0 attempts spent, its payload
# intact.  Judged on Redis and the sink's log only.  ~10 s.
#
# DQB_SINK_CLIENT=curl runs it on libcurl (sink_client = curl) rather
# than the native HTTP/1.1 client (auto): dqbridge-check runs both.
#
# usage: [DQB_SINK_CLIENT=auto|curl] dqbridge_signal_test.sh DQBRIDGE_BINARY
set -euo pipefail
BIN=${1:?usage: dqbridge_signal_test.sh DQBRIDGE_BINARY}
HERE=$(cd "$(dirname "$0")" && pwd)
LIMIT=0 BURST=0
. "$HERE/dqbridge/lib.sh"
need redis-server redis-cli
errexit_traps
N=20 REFUSALS=10 MAX_ATTEMPTS=2
CLIENT=${DQB_SINK_CLIENT:-auto}
# The client the bridge says it took for an http:// sink_url.
case $CLIENT in curl) WANT_CLIENT=curl ;; *) WANT_CLIENT=native ;; esac

start_redis
ctl ok
python3 "$HERE/dqbridge/fault_sink.py" "$NP" "$T/sink.log" "$T/control" > "$T/sink.err" 2>&1 &
pids+=($!)
for _ in $(seq 50); do curl -sf -o /dev/null "http://127.0.0.1:$NP/" -d x && break; sleep 0.1; done

# rate_floor 100: a downstream refusing everything takes the rate there
# (x0.7 per 500 ms); the 2 x 20 x 11 requests of runs A and B then take
# ~4.4 s at worst.  backoff_base_ms 20: a refusal without Retry-After
# comes back 10-20 ms later.
write_conf() {	# EXTRA_LINE
	cat > "$T/dqbridge.conf" <<-CONF
	source = redis
	redis_port = $RP
	redis_stream = in
	redis_group = bridge
	redis_consumer = b1
	max_inflight = 8
	max_attempts = $MAX_ATTEMPTS
	backoff_base_ms = 20
	backoff_max_ms = 100
	rate_floor = 100
	rate_ceiling = 1000
	direct_cooldown_ms = 200
	sink_url = http://127.0.0.1:$NP/ingest
	sink_client = $CLIENT
	dq_dir = $T/dq
	dq_slots = 1024
	dq_slot_size = 1024
	metrics_listen = 127.0.0.1:$MP
	drain_timeout_ms = 3000
	$1
	CONF
}
write_conf ""
start_bridge || true
check "dqbridge starts (max_attempts $MAX_ATTEMPTS)" kill -0 "$BRIDGE_PID"
# The metrics endpoint (what start_bridge waits for) opens before the
# sink does: wait for the sink's start line.
client_logged() {
	for _ in $(seq 50); do
		grep -q "event=sink_client client=$WANT_CLIENT " "$T/bridge.log" && return 0
		sleep 0.1
	done
	return 1
}
check "its HTTP client is $WANT_CLIENT (sink_client = $CLIENT)" client_logged

dead() { python3 "$HERE/dqbridge/deadletters.py" "$RP" in:dead; }
pending() { rcli XPENDING in bridge | head -1; }
# FILE: how many of its ids have a 200 in the sink's log, or are in the
# dead-letter stream (both ends: the bridge of before dead-letters them).
settled() {
	python3 - "$1" "$T/sink.log" "$T/dead.txt" <<-'PY'
	import sys
	want = {l.split()[0] for l in open(sys.argv[1])}
	done = {l.split()[1] for l in open(sys.argv[2]) if l.split()[3] == "200"}
	done |= {l.split()[0] for l in open(sys.argv[3])}
	print(len(want & done))
	PY
}
# FILE REFUSED_STATUS: every id of FILE has exactly one 200 with the
# recorded sha256, after exactly REFUSALS answers REFUSED_STATUS and
# nothing else; and no id the test did not produce.  Prints the bad ones.
judge() {
	python3 - "$1" "$T/sink.log" "$2" "$REFUSALS" <<-'PY'
	import collections, sys
	want = dict(l.split() for l in open(sys.argv[1]))
	st = collections.defaultdict(list)
	sha = collections.defaultdict(set)
	for l in open(sys.argv[2]):
	    t, key, h, status = l.split()
	    if key in want:
	        st[key].append(status)
	        if status == "200":
	            sha[key].add(h)
	refused, times = sys.argv[3], int(sys.argv[4])
	bad = [k for k in want
	       if st[k] != [refused] * times + ["200"] or sha[k] != {want[k]}]
	print(len(bad), " ".join("%s:%s" % (k, ",".join(st[k])) for k in bad[:3]))
	PY
}

# run NAME STATUS RA: N messages, each refused REFUSALS times with STATUS
# (and Retry-After RA, "-" for none) before it is accepted.
run() {
	local name=$1 status=$2 ra=$3 s=0 bad
	if [ "$ra" = - ]; then ctl refuse "$status" "$REFUSALS"; else ctl refuse "$status" "$REFUSALS" "$ra"; fi
	python3 "$HERE/dqbridge/producer.py" "$RP" in "$N" 1000 "$T/produced-$name.txt"
	for _ in $(seq 150); do
		dead > "$T/dead.txt"
		s=$(settled "$T/produced-$name.txt")
		[ "$s" = "$N" ] && break
		sleep 0.1
	done
	echo "# run $name: $s of $N settled (delivered or dead-lettered)"
	bad=$(judge "$T/produced-$name.txt" "$status")
	check "run $name ($status, Retry-After $ra, $REFUSALS refusals a message, max_attempts $MAX_ATTEMPTS): every message delivered once with its payload after its $REFUSALS refusals (bad: $bad)" \
		[ "${bad%% *}" = 0 ]
	check "run $name: nothing dead-lettered ($(wc -l < "$T/dead.txt"): $(cut -d' ' -f1-3 "$T/dead.txt" | head -3 | tr '\n' ' '))" \
		[ ! -s "$T/dead.txt" ]
	# Each run judged on its own dead letters.
	rcli DEL in:dead > /dev/null
}
run A 429 -
run B 503 0
for _ in $(seq 50); do [ "$(pending)" = 0 ] && break; sleep 0.1; done
check "every entry acked (XPENDING $(pending))" [ "$(pending)" = 0 ]

kill -TERM "$BRIDGE_PID"
rc=0
wait "$BRIDGE_PID" || rc=$?
BRIDGE_PID=
check "SIGTERM: exit 0" [ "$rc" = 0 ]

# Run C: max_wait_s, the time bound; one message refused for ever.
write_conf "max_wait_s = 1"
start_bridge || true
check "dqbridge restarts with max_wait_s 1" kill -0 "$BRIDGE_PID"
ctl status 429 - FOREVER
python3 "$HERE/dqbridge/producer.py" "$RP" in 1 1000 "$T/produced-C.txt" -1 FOREVER
cid=$(cut -d' ' -f1 "$T/produced-C.txt") csha=$(cut -d' ' -f2 "$T/produced-C.txt")
for _ in $(seq 100); do
	dead > "$T/dead.txt"
	grep -q "^$cid " "$T/dead.txt" && break
	sleep 0.1
done
check "run C (max_wait_s 1, 429 for ever): dead letter reason http_429_max_wait, attempts 0, payload intact ($(head -1 "$T/dead.txt" | cut -c1-60))" \
	[ "$(cat "$T/dead.txt")" = "$cid http_429_max_wait 0 $csha" ]
for _ in $(seq 50); do [ "$(pending)" = 0 ] && break; sleep 0.1; done
check "run C: acked once dead-lettered (XPENDING $(pending))" [ "$(pending)" = 0 ]
kill -TERM "$BRIDGE_PID"
rc=0
wait "$BRIDGE_PID" || rc=$?
BRIDGE_PID=
check "SIGTERM: exit 0" [ "$rc" = 0 ]
finish
