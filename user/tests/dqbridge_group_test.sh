#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1 OR MIT
#
# Three dqbridge instances in one Redis consumer group (issue 17, several
# instances): three processes on one stream, consumers c1 c2 c3, each with
# its own durable journal directory and metrics port, in front of the same
# nginx (limit_req) + recorder.py as dqbridge_test.sh.  c2 is killed with
# SIGKILL twice:
#   round 1, direct mode: slow answers (300 ms), no 429s, so c2 has entries
#     read and not acked (in flight) when it dies; they must be claimed by
#     c1/c3 (XAUTOCLAIM after redis_claim_idle_ms) and delivered by them
#     while c2 is down, which the test sees in Redis (XPENDING per consumer)
#     and in the recorder's log;
#   round 2, divert mode: a burst over the limit, so c2 holds a backlog in
#     its journal when it dies; restarted, it recovers it (its dq_open
#     line) and delivers it.
# Judged on the test's records: every XADDed id delivered with a 200 and
# an identical payload, XPENDING empty, nothing dead-lettered, duplicate
# deliveries at most max_inflight per kill -9 (docs/dqbridge.md: a kill
# repeats at most the requests in flight, and the claim bound is
# redis_claim_idle_ms > sink_timeout_ms so no live member's entry is
# claimed).  TAP; last line "N passed, N failed".
#
# usage: dqbridge_group_test.sh DQBRIDGE_BINARY
set -euo pipefail
BIN=${1:?usage: dqbridge_group_test.sh DQBRIDGE_BINARY}
HERE=$(cd "$(dirname "$0")" && pwd)
LIMIT=100 BURST=10 INFLIGHT=16 FAIL_ID=none
for tool in redis-server redis-cli; do
	command -v "$tool" > /dev/null ||
		{ echo "1..0 # SKIP $tool not installed (scripts/deps.sh)"; echo "0 passed, 0 failed, 1 skipped"; exit 0; }
done
. "$HERE/dqbridge/lib.sh"
RP=$(free_port)
declare -A BPID MPORT
for i in 1 2 3; do MPORT[$i]=$(free_port); BPID[$i]=; done
stop_all() {	# without errexit: lib.sh's cleanup is not written for it
	local i
	set +e
	for i in 1 2 3; do [ -z "${BPID[$i]}" ] || kill -9 "${BPID[$i]}" 2> /dev/null || true; done
	cleanup
}
# A TERM/INT/HUP (timeout, ^C) ends through it (lib.sh's traps):
# nothing left running.
trap stop_all EXIT
rcli() { redis-cli -p "$RP" "$@"; }

redis-server --port "$RP" --bind 127.0.0.1 --save "" --appendonly no --dir "$T" \
	--logfile "$T/redis.log" --daemonize yes --pidfile "$T/redis.pid" > /dev/null 2>&1
for _ in $(seq 50); do rcli ping > /dev/null 2>&1 && break; sleep 0.1; done
pids+=("$(cat "$T/redis.pid")")
start_downstream

for i in 1 2 3; do
	cat > "$T/c$i.conf" <<-CONF
	source = redis
	redis_port = $RP
	redis_stream = in
	redis_group = bridge
	redis_consumer = c$i
	redis_claim_idle_ms = 3000
	redis_claim_interval_ms = 500
	sink_url = http://127.0.0.1:$NP/ingest
	sink_timeout_ms = 2000
	max_inflight = $INFLIGHT
	max_attempts = 50
	backoff_base_ms = 200
	rate_floor = 5
	rate_ceiling = 200
	rate_increase = 10
	dq_dir = $T/dq$i
	dq_slots = 4096
	dq_slot_size = 1024
	metrics_listen = 127.0.0.1:${MPORT[$i]}
	drain_timeout_ms = 3000
	CONF
done

start_inst() {	# N
	"$BIN" -c "$T/c$1.conf" >> "$T/bridge$1.log" 2>&1 &
	BPID[$1]=$!
	for _ in $(seq 50); do
		curl -sf "http://127.0.0.1:${MPORT[$1]}/metrics" > /dev/null && return 0
		sleep 0.1
	done
	return 1
}
kill9_inst() {	# N
	kill -9 "${BPID[$1]}"
	wait "${BPID[$1]}" 2> /dev/null || true
	BPID[$1]=
}
imetric() {	# N NAME
	{ curl -sf "http://127.0.0.1:${MPORT[$1]}/metrics" || true; } |
		awk -v m="dqbridge_$2" '$1 == m {print $2}'
}
# Entry ids pending for consumer $1, by Redis.
pending_of() { rcli XPENDING in bridge - + 100000 "$1" | grep -E '^[0-9]+-[0-9]+$' || true; }

for i in 1 2 3; do check "instance c$i starts (own journal $T/dq$i)" start_inst "$i"; done

# ---- round 1: direct mode, c2 killed with entries in flight ------------------
# 60/s of 300 ms answers over three bridges: about 6 requests in flight
# each, no 429s (limit 100/s), so every message goes direct and c2's are
# pending in Redis while in flight.
python3 "$HERE/dqbridge/producer.py" "$RP" in 600 60 "$T/produced1.txt" -1 SLOW &
prod=$!
pids+=("$prod")
sleep 4
t_kill=$(date +%s.%N)
kill9_inst 2
pending_of c2 > "$T/c2-pending.txt"
npend=$(wc -l < "$T/c2-pending.txt")
echo "# round 1: c2 killed after 4 s with $npend entries pending in Redis"
check "c2 left entries read and not acked at its kill -9 ($npend, by XPENDING)" [ "$npend" -gt 0 ]
claimed_away() {	# c2 owns none of them any more, by Redis
	local t0=$SECONDS
	while [ $SECONDS -lt $((t0 + 25)) ]; do
		if [ -z "$(pending_of c2)" ]; then
			echo "# c2's entries claimed away after $((SECONDS - t0)) s (claim idle 3 s)"
			return 0
		fi
		sleep 0.5
	done
	return 1
}
check "while c2 is down its pending entries leave it (XAUTOCLAIM by c1/c3, XPENDING)" claimed_away
claimed_delivered() {	# every entry c2 left has a 200, sent while c2 was down
	local end=$((SECONDS + 20))
	while [ $SECONDS -lt $end ]; do
		# A 200 at least 1 s after the kill: not c2's own request in
		# flight (answered within 300 ms) but another member's.
		python3 - "$T/c2-pending.txt" "$T/recorder.log" "$t_kill" <<-'PY' && return 0
		import sys
		want = {l.strip() for l in open(sys.argv[1]) if l.strip()}
		got = {l.split()[1] for l in open(sys.argv[2])
		       if l.split()[3] == "200" and float(l.split()[0]) >= float(sys.argv[3]) + 1}
		sys.exit(0 if want <= got else 1)
		PY
		sleep 0.5
	done
	return 1
}
check "the $npend entries c2 left were delivered again by the others while c2 was down (200s >= 1 s after the kill)" claimed_delivered
nclaims=$(cat "$T/bridge1.log" "$T/bridge3.log" | grep -c 'event=redis_claimed' || true)
echo "# claims logged by c1/c3: $nclaims"
check "c2 restarts on its journal" start_inst 2
wait "$prod"

# ---- round 2: divert mode, c2 killed holding a backlog in its journal --------
python3 "$HERE/dqbridge/producer.py" "$RP" in 800 400 "$T/produced2.txt" &
prod=$!
pids+=("$prod")
held=0
for _ in $(seq 100); do
	held=$(imetric 2 held)
	[ "${held:-0}" -gt 50 ] && break
	sleep 0.05
done
kill9_inst 2
echo "# round 2: c2 killed holding ${held:-?} messages in dq"
check "c2 held a backlog in its journal at its second kill -9 (${held:-0} > 50)" [ "${held:-0}" -gt 50 ]
sleep 1
check "c2 restarts on its journal again" start_inst 2
wait "$prod"
# The metrics endpoint answers before the queue is open: wait for c2's
# third started line (after its dq_open).
for _ in $(seq 100); do
	[ "$(grep -c 'event=started ' "$T/bridge2.log")" -ge 3 ] && break
	sleep 0.1
done
recovered=$(sed -n 's/.*event=dq_open .*recovered=\([0-9]*\).*/\1/p' "$T/bridge2.log" | tail -1)
check "c2's journal came back at the restart (recovered=${recovered:-?}, dq_open log line)" \
	[ "${recovered:-0}" -gt 0 ]

# ---- judged on the records ---------------------------------------------------
cat "$T/produced1.txt" "$T/produced2.txt" > "$T/produced.txt"
check "every XADDed id delivered (within 90 s)" wait_delivered "$T/produced.txt" 90
python3 "$HERE/dqbridge/fault_tools.py" judge "$T/produced.txt" "$T/recorder.log" > "$T/figures.txt"
sed 's/^/# /' "$T/figures.txt"
fig() { sed -n "s/^$1=//p" "$T/figures.txt"; }
check "nothing lost: $(fig produced) produced, missing $(fig missing)" [ "$(fig missing)" = 0 ]
check "payloads identical (sha256 mismatches: $(fig bad_payload))" [ "$(fig bad_payload)" = 0 ]
check "duplicates within 2 kills x max_inflight ($((2 * INFLIGHT))): $(fig duplicates)" \
	[ "$(fig duplicates)" -le $((2 * INFLIGHT)) ]
n429=$(awk '$2 == 429' "$T/nginx-access.log" | wc -l)
check "round 2 met the limit: nginx answered 429s ($n429)" [ "$n429" -gt 0 ]
xpending_empty() {
	for _ in $(seq 30); do
		[ "$(rcli XPENDING in bridge | head -1)" = 0 ] && return 0
		sleep 0.5
	done
	return 1
}
check "XPENDING empty at the end" xpending_empty
check "nothing dead-lettered ($(rcli XLEN in:dead) entries in in:dead)" [ "$(rcli XLEN in:dead)" = 0 ]
for i in 1 2 3; do
	d=$(imetric "$i" delivered_total)
	echo "# c$i delivered ${d:-?} since its last start"
done
for i in 1 2 3; do
	kill -TERM "${BPID[$i]}"
	rc=0
	wait "${BPID[$i]}" || rc=$?
	BPID[$i]=
	check "c$i: SIGTERM, exit 0 (got $rc)" [ "$rc" -eq 0 ]
done
finish
