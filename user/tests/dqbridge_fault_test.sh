#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1 OR MIT
#
# dqbridge under faults (issue 17): one bridge, a real redis-server, and
# fault_sink.py as the downstream, steered by the test through a control
# file (200, a status with a Retry-After, or hanging answers).
#   A. bad Retry-After: garbage, negative, over-long, fractional ones are
#      counted and the backoff used; a huge number and a far HTTP-date are
#      capped at retry_after_max_s; every message still delivered, no crash
#   B. a message larger than a slot goes direct while it can
#   C. ... and is dead-lettered with reason too_large (counted, payload
#      intact, acked) when it must be diverted
#   D. journal full: dq_max_bytes 3 MiB while the downstream refuses:
#      commits get -ENOSPC and the bridge stops reading, which the test
#      sees in Redis (XINFO GROUPS: entries-read stops, lag grows); the
#      downstream recovers and everything is delivered, nothing dropped
#   E. drain_timeout: SIGTERM with requests hanging: exit 0 after
#      drain_timeout_ms, not before, not much after; the abandoned
#      messages come back at the restart
#   F. dqbridge_oldest_age_seconds follows the oldest held message's age
#      by the test's own clock, across a kill -9 and restart too
# Judged on the test's records (producer's list, the sink's log, Redis).
# TAP; last line "N passed, N failed".
#
# usage: dqbridge_fault_test.sh DQBRIDGE_BINARY
set -euo pipefail
BIN=${1:?usage: dqbridge_fault_test.sh DQBRIDGE_BINARY}
HERE=$(cd "$(dirname "$0")" && pwd)
LIMIT=0 BURST=0 FAIL_ID=none
for tool in redis-server redis-cli; do
	command -v "$tool" > /dev/null ||
		{ echo "1..0 # SKIP $tool not installed (scripts/deps.sh)"; echo "0 passed, 0 failed, 1 skipped"; exit 0; }
done
. "$HERE/dqbridge/lib.sh"
# lib.sh's cleanup is not written for errexit (a kill of a process gone
# already fails): it runs without it.  A TERM/INT/HUP (timeout, ^C) ends
# through the EXIT trap (lib.sh's traps): nothing left running.
trap 'set +e; cleanup' EXIT
RP=$(free_port)
rcli() { redis-cli -p "$RP" "$@"; }
TOOLS=$HERE/dqbridge/fault_tools.py
LOG=$T/recorder.log

redis-server --port "$RP" --bind 127.0.0.1 --save "" --appendonly no --dir "$T" \
	--logfile "$T/redis.log" --daemonize yes --pidfile "$T/redis.pid" > /dev/null 2>&1
for _ in $(seq 50); do rcli ping > /dev/null 2>&1 && break; sleep 0.1; done
pids+=("$(cat "$T/redis.pid")")
ctl ok
python3 "$HERE/dqbridge/fault_sink.py" "$NP" "$LOG" "$T/control" > "$T/sink.err" 2>&1 &
pids+=($!)
for _ in $(seq 50); do curl -sf -o /dev/null "http://127.0.0.1:$NP/" -d x && break; sleep 0.1; done
: > "$LOG"

cat > "$T/dqbridge.conf" <<CONF
source = redis
redis_port = $RP
redis_stream = in
redis_group = bridge
redis_consumer = f1
sink_url = http://127.0.0.1:$NP/ingest
sink_timeout_ms = 20000
source_batch = 16
max_inflight = 8
max_attempts = 1000
backoff_base_ms = 200
backoff_max_ms = 1000
retry_after_max_s = 2
direct_cooldown_ms = 500
rate_floor = 50
rate_ceiling = 500
dq_dir = $T/dq
dq_slots = 4096
dq_slot_size = 4096
dq_max_bytes = 3145728
dq_segment_bytes = 1048576
high_watermark = 4000
low_watermark = 100
metrics_listen = 127.0.0.1:$MP
drain_timeout_ms = 1500
CONF
metric0() { local v; v=$({ curl -sf "http://127.0.0.1:$MP/metrics" || true; } |
	awk -v m="dqbridge_$1" '$1 == m {print $2}'); echo "${v:-0}"; }
xadd() {	# BODY-FILE: XADD it, print its id and record it
	local id
	id=$(rcli -x XADD in '*' payload < "$1")
	echo "$id $(sha256sum < "$1" | cut -d' ' -f1)" >> "$T/produced.txt"
	echo "$id"
}
delivered() { python3 "$TOOLS" times "$LOG" "$1" | awk '{exit ($2 == "-")}'; }
wait_ok() {	# ID SECONDS
	local end=$((SECONDS + $2))
	while [ $SECONDS -lt $end ]; do delivered "$1" && return 0; sleep 0.2; done
	return 1
}
alive() { kill -0 "$BRIDGE_PID" 2> /dev/null; }
# start_bridge, and wait for its started line: the metrics endpoint
# answers before the queue is open and recovered.
start_bridge_open() {
	local n
	n=$(cat "$T/bridge.log" 2> /dev/null | grep -c 'event=started ' || true)
	start_bridge || return 1
	for _ in $(seq 100); do
		[ "$(grep -c 'event=started ' "$T/bridge.log")" -gt "$n" ] && return 0
		sleep 0.1
	done
	return 1
}
: > "$T/produced.txt"
check "dqbridge starts" start_bridge_open

# ---- A. bad Retry-After ------------------------------------------------------
# Each body gets one 429 with this Retry-After, then 200s.
declare -A RA_ID
ras=("soon" "-5" "99999999999999999999" "1.5" "$(printf 'x%.0s' $(seq 200))"
	"86400000" "Fri, 01 Jan 2100 00:00:00 GMT" "Wed, 21 Oct 2015 07:28:00 GMT")
bad_expected=5
for k in "${!ras[@]}"; do
	{ printf 'RA=%s;' "${ras[$k]}"; head -c 64 /dev/urandom; } > "$T/ra$k"
	RA_ID[$k]=$(xadd "$T/ra$k")
	sleep 0.05
done
for k in "${!ras[@]}"; do
	ra=${ras[$k]}
	check "Retry-After '${ra:0:32}': 429 then delivered (within 15 s)" wait_ok "${RA_ID[$k]}" 15
done
check "the bridge is alive after the bad Retry-Afters" alive
n_bad=$(metric0 bad_retry_after_total)
check "bad Retry-Afters counted: $n_bad of $bad_expected (garbage, negative, over-long, fractional, 200 x's)" \
	[ "$n_bad" = "$bad_expected" ]
waited() { python3 "$TOOLS" times "$LOG" "$1" | awk '{printf "%.2f", $2 - $1}'; }
for k in 5 6; do
	w=$(waited "${RA_ID[$k]}")
	check "Retry-After '${ras[$k]}' capped at retry_after_max_s 2: delivered 2 s after its 429 (waited $w s, <= 6)" \
		python3 -c "import sys; sys.exit(0 if 1.95 <= $w <= 6 else 1)"
done
for k in 0 1 2 3 4; do
	w=$(waited "${RA_ID[$k]}")
	check "bad Retry-After '${ras[$k]:0:24}': backoff (200 ms base) used: waited $w s (< 1.9, not the 2 s cap)" \
		python3 -c "import sys; sys.exit(0 if $w < 1.9 else 1)"
done

# ---- B/C. a message over the slot size ---------------------------------------
sleep 1	# past direct_cooldown_ms; dq empty: direct sends allowed
{ printf 'BIG'; head -c 6000 /dev/urandom; } > "$T/big1"
big1=$(xadd "$T/big1")
check "a message over dq_slot_size (6 KB > 4 KB) goes direct while it can: delivered" wait_ok "$big1" 10
ctl status 503 1
head -c 200 /dev/urandom > "$T/small1"
small1=$(xadd "$T/small1")
sleep 0.5	# its 503: diverted, the bridge in divert mode
{ printf 'BIG'; head -c 6000 /dev/urandom; } > "$T/big2"
big2=$(xadd "$T/big2")
dead_big() {
	local end=$((SECONDS + 10))
	while [ $SECONDS -lt $end ]; do
		python3 "$HERE/dqbridge/deadletters.py" "$RP" in:dead > "$T/dead.txt"
		grep -q "^$big2 " "$T/dead.txt" && return 0
		sleep 0.2
	done
	return 1
}
check "a message over the slot size that must be diverted: dead-lettered" dead_big
sha_big2=$(sha256sum < "$T/big2" | cut -d' ' -f1)
check "dead letter: reason too_large, attempts 0, payload intact ($(grep "^$big2 " "$T/dead.txt" | cut -c1-60)...)" \
	[ "$(grep "^$big2 " "$T/dead.txt")" = "$big2 too_large 0 $sha_big2" ]
check "too_large counted (dead_lettered_total $(metric0 dead_lettered_total))" [ "$(metric0 dead_lettered_total)" = 1 ]
FAIL_ID=$big2	# wait_delivered (lib.sh) does not wait for it
ctl ok
check "the diverted small message delivered after the downstream recovered" wait_ok "$small1" 10

# ---- D. journal full -> back-pressure ----------------------------------------
# 3 KB messages, journal limit 3 MiB (about 1000 of them): the downstream
# refuses while 1500 arrive, so the journal fills.
ctl status 503 2
python3 "$TOOLS" produce "$RP" in 1500 300 "$T/produced.txt" 2800 3400 &
prod=$!
pids+=("$prod")
wait "$prod"
sleep 1
read1=$(group entries-read) lag1=$(group lag) pend1=$(group pending)
sleep 3
read2=$(group entries-read) lag2=$(group lag) pend2=$(group pending)
xlen=$(rcli XLEN in)
echo "# journal full: stream $xlen entries, group entries-read $read1 -> $read2 in 3 s, lag $lag1 -> $lag2, pending $pend1 -> $pend2; bridge: enospc_total $(metric0 enospc_total), source_paused $(metric0 source_paused), held $(metric0 held)"
check "journal full: the bridge stopped reading (Redis: entries-read $read2 < XLEN $xlen, unchanged over 3 s)" \
	[ "$read1" = "$read2" -a "$read2" -lt "$xlen" ]
check "journal full: Redis keeps the rest (lag $lag2 > 0)" [ "${lag2:-0}" -gt 0 ]
# Paused, not merely read up to max_unacked (4 x 8 + 16 = 48): in hand at
# most the one batch that met the full journal.
check "journal full: at most one batch (16) read and unacked (Redis pending $pend2)" \
	[ "${pend2:-99}" -le 16 ]
check "the bridge saw -ENOSPC ($(metric0 enospc_total)) and paused the source ($(metric0 source_paused))" \
	[ "$(metric0 enospc_total)" -gt 0 -a "$(metric0 source_paused)" = 1 ]
check "the bridge is alive with its journal full" alive
ctl ok
t_rec=$SECONDS
check "downstream back: every message delivered (within 90 s)" wait_delivered "$T/produced.txt" 90
echo "# journal-full backlog drained in $((SECONDS - t_rec)) s"
check "Redis: the group read the whole stream (entries-read $(group entries-read) = XLEN $(rcli XLEN in))" \
	[ "$(group entries-read)" = "$(rcli XLEN in)" ]

# ---- E. drain_timeout --------------------------------------------------------
for _ in $(seq 50); do [ "$(metric0 held)" = 0 ] && break; sleep 0.2; done
sleep 1
ctl hang 6
: > "$T/produced-e.txt"
python3 "$TOOLS" produce "$RP" in 6 100 "$T/produced-e.txt" 50 100
cat "$T/produced-e.txt" >> "$T/produced.txt"
sleep 0.7
inflight=$(metric0 inflight)
t0=$(date +%s%N)
kill -TERM "$BRIDGE_PID"
rc=0
wait "$BRIDGE_PID" || rc=$?
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
BRIDGE_PID=
echo "# SIGTERM with $inflight requests hanging: exit $rc after $ms ms (drain_timeout_ms 1500)"
check "SIGTERM with hanging requests ($inflight in flight): exit 0 (got $rc)" [ "$rc" -eq 0 -a "$inflight" -gt 0 ]
check "drain_timeout honoured: exit after 1.5 s, before 4 s ($ms ms)" [ "$ms" -ge 1450 -a "$ms" -lt 4000 ]
check "drain_timeout logged" grep -q 'event=drain_timeout' "$T/bridge.log"
ctl ok
check "dqbridge restarts" start_bridge_open
check "the abandoned messages come back and are delivered" wait_delivered "$T/produced-e.txt" 30

# ---- F. the oldest held message's age ----------------------------------------
# dqbridge_oldest_age_seconds against the test's clock: M1 first refused
# at t1, M2 (HOLD...) at t2 = t1 + 2.5 s, both refused again and again; the metric must follow
# now - t1, across a kill -9 and restart too (the ages of the recovered
# messages come from their slots), then now - t2 once only M2 is refused
# and M1 delivered, then 0.
ctl status 503 1
head -c 100 /dev/urandom > "$T/m1"
{ printf 'HOLD'; head -c 100 /dev/urandom; } > "$T/m2"
# The clock starts at each one's first refusal, as the sink logged it
# (the bridge diverts it right after; a loaded host can take a while to
# get the request out, which is not the age of anything held).
first_refusal() {	# ID: the sink's time of its first request
	local t
	for _ in $(seq 100); do
		t=$(python3 "$TOOLS" times "$LOG" "$1" | cut -d' ' -f1)
		[ "$t" != - ] && echo "$t" && return 0
		sleep 0.1
	done
	return 1
}
m1=$(xadd "$T/m1")
t1=$(first_refusal "$m1")
sleep 2.5
m2=$(xadd "$T/m2")
t2=$(first_refusal "$m2")
age_near() {	# T0 WHAT: the metric within 0.6 s of now - T0 (3 samples)
	local k age now
	for k in 1 2 3; do
		age=$(metric0 oldest_age_seconds)
		now=$(date +%s.%N)
		echo "# oldest_age_seconds $age, test's clock: $(python3 -c "print('%.3f' % ($now - $1))") since $2"
		python3 -c "import sys; sys.exit(0 if abs($age - ($now - $1)) <= 0.6 else 1)" || return 1
		sleep 0.7
	done
}
sleep 1
check "oldest age = now - t(M1) while M1 and M2 are held" age_near "$t1" M1
kill -9 "$BRIDGE_PID"
wait "$BRIDGE_PID" 2> /dev/null || true
check "dqbridge restarts after kill -9 (M1, M2 in its journal)" start_bridge_open
check "after the restart still now - t(M1): the recovered messages' ages ($(grep -o 'event=ages_recovered.*' "$T/bridge.log" | tail -1))" \
	age_near "$t1" M1
ctl status 503 1 HOLD
check "M1 delivered once the downstream takes it" wait_ok "$m1" 10
sleep 0.3
check "M1 gone, M2 held: oldest age = now - t(M2)" age_near "$t2" M2
ctl ok
check "M2 delivered" wait_ok "$m2" 10
zero_age() {
	for _ in $(seq 20); do
		[ "$(metric0 held)" = 0 ] && [ "$(metric0 oldest_age_seconds)" = 0 ] && return 0
		sleep 0.2
	done
	return 1
}
check "dq empty: oldest age 0" zero_age

# ---- the whole run ---------------------------------------------------------
python3 "$TOOLS" judge "$T/produced.txt" "$LOG" "$big2" > "$T/figures.txt"
sed 's/^/# /' "$T/figures.txt"
fig() { sed -n "s/^$1=//p" "$T/figures.txt"; }
check "nothing lost: $(fig produced) produced (one dead-lettered), missing $(fig missing)" [ "$(fig missing)" = 0 ]
check "payloads identical (sha256 mismatches: $(fig bad_payload))" [ "$(fig bad_payload)" = 0 ]
# The requests abandoned at the drain timeout reached the sink (it answers
# after 6 s) and come again from Redis: at most those are delivered twice.
check "duplicates at most the requests abandoned by the drain ($inflight): $(fig duplicates)" \
	[ "$(fig duplicates)" -le "$inflight" ]
python3 "$HERE/dqbridge/deadletters.py" "$RP" in:dead > "$T/dead.txt"
check "in:dead holds only the too_large message ($(wc -l < "$T/dead.txt") entries)" \
	[ "$(cut -d' ' -f1 "$T/dead.txt")" = "$big2" ]
xpending_empty() {
	for _ in $(seq 30); do
		[ "$(rcli XPENDING in bridge | head -1)" = 0 ] && return 0
		sleep 0.5
	done
	return 1
}
check "XPENDING empty at the end" xpending_empty
kill -TERM "$BRIDGE_PID"
rc=0
wait "$BRIDGE_PID" || rc=$?
BRIDGE_PID=
check "final SIGTERM: exit 0 (got $rc)" [ "$rc" -eq 0 ]
grep -c 'level=error' "$T/bridge.log" | sed 's/^/# error log lines: /' || true
finish
