#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1 OR MIT
#
# dqbridge end to end, with real components started here on loopback in a
# temporary directory:
#   redis-server   the source stream and the dead-letter stream (killed
#                  with -9 and restarted mid-run)
#   nginx          the downstream's rate limiter: limit_req at LIMIT r/s
#                  (burst BURST), 429 with Retry-After: 1 beyond it
#   recorder.py    the downstream app behind nginx: logs each request's
#                  Idempotency-Key, body sha256, arrival time and status;
#                  answers 500 forever to a body with FAIL500
#   producer.py    XADDs the messages and records their ids and sha256
#   dqbridge       between them (the binary under test)
# Everything is judged on what the test recorded (producer's list,
# recorder's log, nginx's access log, the metrics endpoint), not on what
# dqbridge says about itself.  TAP; last line "N passed, N failed".
#
# usage: dqbridge_test.sh DQBRIDGE_BINARY
set -u
BIN=${1:?usage: dqbridge_test.sh DQBRIDGE_BINARY}
HERE=$(cd "$(dirname "$0")" && pwd)
LIMIT=${DQB_LIMIT:-100}		# downstream limit, requests/s
BURST=${DQB_BURST:-10}
COUNT=${DQB_COUNT:-2000}	# messages in the main phase
OFFER=${DQB_OFFER:-250}		# offered rate, messages/s
FAIL_INDEX=${DQB_FAIL_INDEX:-100}
MAX_ATTEMPTS=4

for tool in redis-server redis-cli; do
	command -v "$tool" > /dev/null ||
		{ echo "1..0 # SKIP $tool not installed (scripts/deps.sh)"; echo "0 passed, 0 failed, 1 skipped"; exit 0; }
done
. "$HERE/dqbridge/lib.sh"
RP=$(free_port)
rcli() { redis-cli -p "$RP" "$@"; }

# The judge first: the rate windows are on nginx's clock, so a recorder
# stalled by a loaded host (200 ms here, synthetic logs) is not a burst.
mkdir -p "$T/stall"
python3 "$HERE/dqbridge/analyze_stall.py" "$T/stall"
python3 "$HERE/dqbridge/analyze.py" "$T/stall/produced.txt" "$T/stall/recorder.log" \
	"$T/stall/nginx-access.log" 100 10 none > "$T/stall/figures.txt"
check "analyze.py: a recorder stalled 200 ms is no burst: accepted and offered <= 101 in every 1 s ($(grep -E '^(accepted|offered)_max_1s' "$T/stall/figures.txt" | tr '\n' ' '))" \
	eval 'grep -qx "accepted_max_1s=10[01]" "$T/stall/figures.txt" &&
		grep -qx "offered_max_1s=10[01]" "$T/stall/figures.txt"'

# ---- the components ----------------------------------------------------
# appendfsync always: what Redis acknowledged survives its kill -9 (the
# test restarts it mid-run).
start_redis() {
	# Daemonized (not a job of this shell: no "Killed" notice at -9).
	redis-server --port "$RP" --bind 127.0.0.1 --save "" --appendonly yes \
		--appendfsync always --dir "$T" --logfile "$T/redis.log" \
		--daemonize yes --pidfile "$T/redis.pid" > /dev/null 2>&1
	local i
	for i in $(seq 50); do
		rcli ping > /dev/null 2>&1 && REDIS_PID=$(cat "$T/redis.pid") &&
			pids+=($REDIS_PID) && return 0
		sleep 0.1
	done
	return 1
}
start_redis
start_downstream

cat > "$T/dqbridge.conf" <<CONF
# dqbridge_test.sh
source = redis
redis_port = $RP
redis_stream = in
redis_group = bridge
redis_consumer = c1
redis_claim_idle_ms = 5000
redis_claim_interval_ms = 1000
sink_url = http://127.0.0.1:$NP/ingest
sink_timeout_ms = 3000
max_inflight = 16
max_attempts = $MAX_ATTEMPTS
backoff_base_ms = 200
rate_floor = 10
rate_ceiling = 400
rate_increase = 10
rate_decrease = 0.7
dq_dir = $T/dq
dq_slots = 8192
dq_slot_size = 1024
# Back-pressure well below the slots: phase 1 must pause the source.
high_watermark = 400
low_watermark = 200
metrics_listen = 127.0.0.1:$MP
drain_timeout_ms = 5000
CONF

# ---- phase 1: offered > limit, kill -9 in the middle -----------------------
check "dqbridge starts, metrics endpoint answers" start_bridge
# Idle (nothing in the stream, nothing held), the loop sleeps until its
# outstanding XREADGROUP ... BLOCK answers or its 50 ms housekeeping:
# ~21 wake-ups a second, ~42 in 2 s.  Before it woke every
# source_read_interval_ms (10 ms): >= 200 in 2 s.  A slow or loaded
# machine only stretches timers (fewer wake-ups), so < 100 separates the
# two with a factor 2 either side.
idle_wakes() {	# voluntary context switches of the main thread
	awk '/^voluntary_ctxt_switches/ {print $2}' "/proc/$BRIDGE_PID/task/$BRIDGE_PID/status"
}
sleep 0.5
w0=$(idle_wakes)
sleep 2
w1=$(idle_wakes)
check "idle bridge: its loop woke < 100 times in 2 s ($((w1 - w0)))" [ $((w1 - w0)) -lt 100 ]
poll_metrics &
pids+=($!)
t0=$SECONDS
python3 "$HERE/dqbridge/producer.py" "$RP" in "$COUNT" "$OFFER" "$T/produced.txt" "$FAIL_INDEX" &
prod=$!
sleep 4
held_at_kill=$(metric held)
kill -9 "$BRIDGE_PID"
wait "$BRIDGE_PID" 2> /dev/null
echo "# kill -9 after 4 s: held was ${held_at_kill:-?}, $(wc -l < "$T/produced.txt") produced"
sleep 0.5
check "dqbridge restarts on the same journal after kill -9" start_bridge
wait "$prod"
FAIL_ID=$(sed -n "$((FAIL_INDEX + 1))p" "$T/produced.txt" | cut -d' ' -f1)
check "every message delivered after kill -9 and restart (within 120 s)" \
	wait_delivered "$T/produced.txt" 120
echo "# phase 1: $COUNT messages in $((SECONDS - t0)) s"

# ---- phase 2: SIGTERM with requests in flight --------------------------------
# The recorder answers these after 300 ms: at SIGTERM requests are in
# flight, and the drain must see them through (delivered and acked, so
# not delivered again after the restart).
python3 "$HERE/dqbridge/producer.py" "$RP" in 400 400 "$T/produced2.txt" -1 SLOW &
prod=$!
sleep 1.5
inflight_at_term=$(metric inflight)
t_term=$(date +%s%N)
kill -TERM "$BRIDGE_PID"
wait "$BRIDGE_PID"
rc=$?
t_exit=$(( ($(date +%s%N) - t_term) / 1000000 ))
echo "# SIGTERM with ${inflight_at_term:-?} requests in flight: exit $rc after $t_exit ms"
drained=$(sed -n 's/.*event=draining signal=15 inflight=\([0-9]*\).*/\1/p' "$T/bridge.log" | tail -1)
check "SIGTERM came with requests in flight (${drained:-?} by the bridge's log)" [ "${drained:-0}" -gt 0 ]
check "SIGTERM with requests in flight: exit 0 (got $rc)" [ "$rc" -eq 0 ]
check "SIGTERM: exit within 8 s (drain_timeout 5 s; took $t_exit ms)" [ "$t_exit" -lt 8000 ]
wait "$prod"
check "dqbridge restarts after SIGTERM" start_bridge
check "every message of phase 2 delivered after SIGTERM and restart" \
	wait_delivered "$T/produced2.txt" 60
dups2=$(python3 - "$T/produced2.txt" "$T/recorder.log" <<'PY'
import collections, sys
want = {l.split()[0] for l in open(sys.argv[1])}
n = collections.Counter(l.split()[1] for l in open(sys.argv[2]) if l.split()[3] == "200")
print(sum(c - 1 for k, c in n.items() if k in want))
PY
)
check "SIGTERM drained cleanly: no message of phase 2 delivered twice ($dups2)" [ "$dups2" = 0 ]

# ---- phase 3: Redis killed and restarted under the bridge -------------------
# A backlog in dq, Redis gone for 2 s: the bridge keeps delivering what dq
# holds, keeps the acks it could not send, reconnects, sends them.
python3 "$HERE/dqbridge/producer.py" "$RP" in 300 300 "$T/produced3.txt"
sleep 0.5
kill -9 "$REDIS_PID"
sleep 2
check "redis-server restarts on its append-only file" start_redis
check "every message of phase 3 delivered across the Redis restart" \
	wait_delivered "$T/produced3.txt" 60
grep -q 'event=redis_disconnected' "$T/bridge.log" && grep -q 'event=redis_acks_resent' "$T/bridge.log" &&
	echo "# the bridge saw Redis go and resent its acks after the reconnect"

# ---- the dead letter -------------------------------------------------------
dead_ok() {
	local end=$((SECONDS + 30))
	while [ $SECONDS -lt $end ]; do
		python3 "$HERE/dqbridge/deadletters.py" "$RP" in:dead > "$T/dead.txt"
		grep -q "^$FAIL_ID " "$T/dead.txt" && return 0
		sleep 0.5
	done
	return 1
}
check "refused-forever message ($FAIL_ID) in the dead-letter stream" dead_ok
sed 's/^/# dead letter: /' "$T/dead.txt"
fail_sha=$(sed -n "$((FAIL_INDEX + 1))p" "$T/produced.txt" | cut -d' ' -f2)
check "dead letter: reason http_500_max_attempts, attempts $MAX_ATTEMPTS, payload intact, only it" \
	[ "$(cat "$T/dead.txt")" = "$FAIL_ID http_500_max_attempts $MAX_ATTEMPTS $fail_sha" ]
cat "$T/produced.txt" "$T/produced2.txt" "$T/produced3.txt" > "$T/produced-all.txt"

# ---- judged on the records -------------------------------------------------
sleep 1
final_429=$(metric http_429_total)
xpending_empty() {
	local i
	for i in $(seq 20); do
		rcli XPENDING in bridge > "$T/xpending.txt"
		[ "$(head -1 "$T/xpending.txt")" = 0 ] && return 0
		sleep 0.5
	done
	return 1
}
check "XPENDING empty at the end (nothing read and left unacked)" xpending_empty
python3 "$HERE/dqbridge/analyze.py" "$T/produced-all.txt" "$T/recorder.log" \
	"$T/nginx-access.log" "$LIMIT" "$BURST" "$FAIL_ID" > "$T/figures.txt"
sed 's/^/# /' "$T/figures.txt"
fig() { sed -n "s/^$1=//p" "$T/figures.txt"; }
check "every XADDed id delivered with a 200 (missing $(fig missing))" [ "$(fig missing)" = 0 ]
check "payloads identical (sha256 mismatches: $(fig bad_payload))" [ "$(fig bad_payload)" = 0 ]
check "the refused message never got a 200" [ "$(fig fail_delivered)" = 0 ]
cap=$(( LIMIT * 105 / 100 + BURST ))
check "accepted rate <= limit + 5 % + burst ($cap) in every 1 s window after adapting (max $(fig accepted_max_1s))" \
	[ "$(fig accepted_max_1s)" -le "$cap" ]
check "the bridge's own pace after adapting: offered <= 1.5 x limit + burst in every 1 s window (max $(fig offered_max_1s))" \
	[ "$(fig offered_max_1s)" -le $(( LIMIT * 3 / 2 + BURST )) ]
check "429s happened at nginx ($(fig nginx_429)) and dqbridge counted them (${final_429:-0} since the last start)" \
	[ "$(fig nginx_429)" -gt 0 ]
check "the bridge adapted: 429 share of the second half of the run <= 25 % ($(fig late_429_pct) %)" \
	python3 -c "import sys; sys.exit(0 if float('$(fig late_429_pct)') <= 25 else 1)"
max_held=$(awk '$2 == "dqbridge_held" && $3 > m {m = $3} END {print m + 0}' "$T/metrics.log")
max_div=$(awk '$2 == "dqbridge_diverted_total" && $3 > m {m = $3} END {print m + 0}' "$T/metrics.log")
check "messages were diverted into dq (max diverted_total $max_div) and held there (max held $max_held)" \
	[ "$max_held" -gt 0 -a "$max_div" -gt 0 ]
pauses=$(awk '$2 == "dqbridge_pauses_total" && $3 > m {m = $3} END {print m + 0}' "$T/metrics.log")
# held stops at the high watermark plus what was in hand (max_unacked 128,
# max_inflight 16): the source waits in Redis, not in memory or dq.
check "back-pressure: the source was paused ($pauses times) and dq never held more than 400 + 144 (max $max_held)" \
	[ "$pauses" -gt 0 -a "$max_held" -le 544 ]
# docs/dqbridge.md's bound: a kill -9 can repeat at most the requests in
# flight (max_inflight 16); the SIGTERM and the Redis restart none.
check "duplicate deliveries within the bound of one kill -9 (<= 16): $(fig duplicates)" \
	[ "$(fig duplicates)" -le 16 ]

# ---- SIGHUP: the rate keys reload -------------------------------------------
sed -i 's/^rate_ceiling = .*/rate_ceiling = 30/' "$T/dqbridge.conf"
kill -HUP "$BRIDGE_PID"
sleep 0.5
rate_after=$(metric rate)
check "SIGHUP reloads the rate keys (ceiling 30: rate now ${rate_after:-?})" \
	python3 -c "import sys; sys.exit(0 if 0 < float('${rate_after:-0}') <= 30 else 1)"
grep -q 'event=reloaded rate_floor=10 rate_ceiling=30' "$T/bridge.log" ||
	echo "# no reloaded line in the log"
cpu=$(awk '{printf "%.2f", ($14 + $15) / 100}' "/proc/$BRIDGE_PID/stat" 2> /dev/null)
echo "# CPU of the last dqbridge process (phase-2 backlog and tail): ${cpu:-?} s"

kill -TERM "$BRIDGE_PID"
wait "$BRIDGE_PID"
rc=$?
BRIDGE_PID=
check "final SIGTERM: exit 0" [ "$rc" -eq 0 ]

# ---- bad configuration: a clear error, exit 1 -------------------------------
printf 'sink_url = http://x\nredis_stream = s\nmax_inflight = lots\n' > "$T/bad.conf"
"$BIN" -c "$T/bad.conf" > /dev/null 2> "$T/bad.err"
rc=$?
bad_ok() { [ "$rc" -eq 1 ] && grep -q "bad.conf:3: bad value 'lots' for max_inflight" "$T/bad.err"; }
check "malformed config: exit 1 naming file, line and key ($(head -1 "$T/bad.err"))" bad_ok
"$BIN" --sink-url http://x > /dev/null 2> "$T/bad.err"
rc=$?
check "missing redis_stream: exit 1 ($(head -1 "$T/bad.err"))" [ "$rc" -eq 1 ]
# sink_url is parsed once, at start (sink.c): a URL libcurl cannot take
# stops the start with its reason.  Before, the bridge ran and every
# request failed (CURLE_URL_MALFORMAT).  3 s bound: exits in ~0.1 s.
printf 'sink_url = http://[::1\nredis_stream = s\nredis_port = 1\ndq_dir = %s\nmetrics_listen = 127.0.0.1:0\nrate_state_file = none\n' \
	"$T/dq-badurl" > "$T/badurl.conf"
timeout 3 "$BIN" -c "$T/badurl.conf" > /dev/null 2> "$T/badurl.err"
rc=$?
badurl_ok() { [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] && grep -q 'event=sink_url_invalid' "$T/badurl.err"; }
check "unparsable sink_url: the start stops naming it (exit $rc, $(grep -o 'event=sink_url_invalid.*' "$T/badurl.err" | head -1))" badurl_ok
# Which HTTP client (sink.c): the native one for a plain http:// URL,
# libcurl for https://, credentials, an IPv6 zone, a proxy from the
# environment, or sink_client = curl.  The bridges run all at once (Redis
# unreachable: each starts anyway), until each has logged its client or
# 10 s pass; judged on that start log line.
client_of() {	# NAME URL [ENV...] [-- EXTRA_LINE]
	local name=$1 url=$2
	shift 2
	printf 'sink_url = %s\nredis_stream = s\nredis_port = 1\ndq_dir = %s\nmetrics_listen = 127.0.0.1:0\nrate_state_file = none\n%s\n' \
		"$url" "$T/dq-cl-$name" "${EXTRA:-}" > "$T/cl-$name.conf"
	env "$@" timeout 10 "$BIN" -c "$T/cl-$name.conf" > /dev/null 2> "$T/cl-$name.err" &
	CL_PIDS+=($!)
}
CL_PIDS=()
client_of plain http://127.0.0.1:9/x
client_of https https://127.0.0.1:9/x
client_of creds http://u:p@127.0.0.1:9/x
client_of zone 'http://[fe80::1%25lo]:9/x'
client_of proxy http://127.0.0.1:9/x http_proxy=http://127.0.0.1:3
EXTRA='sink_client = curl' client_of forced http://127.0.0.1:9/x
for _ in $(seq 100); do
	[ "$(grep -l 'event=sink_client ' "$T"/cl-*.err 2> /dev/null | wc -l)" -eq 6 ] && break
	sleep 0.1
done
kill -TERM "${CL_PIDS[@]}" 2> /dev/null
wait "${CL_PIDS[@]}"
took() { grep -o 'event=sink_client client=[a-z]*' "$T/cl-$1.err" | head -1 | cut -d= -f3; }
clients_ok() {
	[ "$(took plain)" = native ] && [ "$(took https)" = curl ] &&
	[ "$(took creds)" = curl ] && [ "$(took zone)" = curl ] &&
	[ "$(took proxy)" = curl ] && [ "$(took forced)" = curl ]
}
check "HTTP client: plain $(took plain), https $(took https), credentials $(took creds), IPv6 zone $(took zone), http_proxy $(took proxy), sink_client=curl $(took forced)" clients_ok
grep -c 'level=error' "$T/bridge.log" | sed 's/^/# error log lines: /'
finish
