#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1 OR MIT
#
# The dqbridge scenario (issue 17): 10k msg/s offered through a Redis
# stream to a downstream that accepts 2k/s, then 500/s, then 3k/s (nginx
# limit_req, reloaded with the new limit mid-run), until every message is
# delivered; then a tail: the limit at 100 r/s and 300 messages at once
# with dq empty (what holds a retry back there is its due time alone).
# Everything runs on loopback in a temporary directory:
#   redis-server   the stream (no persistence: it is not killed here)
#   scen_producer  XADDs at RATE, pipelined, recording id, sha256, send time
#   nginx          limit_req at the phase's limit (burst BURST, 429 with
#                  Retry-After: 1), stub_status on a second port
#   scen_recorder  the app behind nginx: 200 after LATENCY_US, logs
#                  arrival, Idempotency-Key, body sha256, its concurrency
#   dqbridge       the binary under test, in between
# Judged on the test's own records (producer, recorder, nginx's access
# log and stub_status, Redis), never on the bridge's log: scen_analyze.py.
# The bridge's metrics endpoint is sampled for figures (diverted, rate)
# and for the checks on its own gauges (held, inflight).
# docs/dqbridge.md, "The load scenario", says what is asserted and why
# the tolerances are what they are.
#
# usage: dqbridge_scenario.sh [--offer-s N] [--report FILE] [--demo]
#                             DQBRIDGE PRODUCER RECORDER
#   --offer-s N   offer for N seconds (default 15: the make check run;
#                 the limit changes at N/3 and 2N/3; 3k/s from then until
#                 the backlog is drained)
#   --report F    write the figures with date, machine and commit to F
#   --demo        print a per-second table (offered, limit, held,
#                 released, delivered) while it runs
# TAP; last line "N passed, N failed".
set -euo pipefail

OFFER_S=15
REPORT=
DEMO=0
args=()
while [ $# -gt 0 ]; do
	case $1 in
	--offer-s) OFFER_S=$2; shift 2 ;;
	--report) REPORT=$2; shift 2 ;;
	--demo) DEMO=1; shift ;;
	-*) echo "dqbridge_scenario.sh: unknown option $1" >&2; exit 1 ;;
	*) args+=("$1"); shift ;;
	esac
done
[ ${#args[@]} -eq 3 ] || { echo "usage: dqbridge_scenario.sh [--offer-s N] [--report FILE] [--demo] DQBRIDGE PRODUCER RECORDER" >&2; exit 1; }
BIN=${args[0]} PRODUCER=${args[1]} RECORDER=${args[2]}
HERE=$(cd "$(dirname "$0")" && pwd)
TOP=$(cd "$HERE/../.." && pwd)

RATE=${SCEN_RATE:-10000}		# offered, msgs/s
LIMITS=(${SCEN_LIMITS:-2000 500 3000})	# the downstream's limit per phase
BURST=${SCEN_BURST:-50}			# nginx limit_req burst (nodelay)
CAP=${SCEN_CAP:-32}			# the bridge's max_inflight
LATENCY_US=${SCEN_LATENCY_US:-5000}	# the app's service time
ADAPT_S=${SCEN_ADAPT_S:-2.5}		# allowed adaptation after a change
REACH_S=${SCEN_REACH_S:-5}		# allowed to reach half a new limit
TAIL_LIMIT=100 TAIL_N=300		# the tail: a burst, dq empty

pass=0 fail=0 n=0
# --demo: the table, then only what failed and the verdict.
ok() { n=$((n + 1)); pass=$((pass + 1)); echo "ok $n - $*" >> "$T/tap.txt"; [ "$DEMO" = 1 ] || echo "ok $n - $*"; }
not_ok() { n=$((n + 1)); fail=$((fail + 1)); echo "not ok $n - $*" | tee -a "$T/tap.txt"; }
check() { local what=$1; shift; if "$@"; then ok "$what"; else not_ok "$what"; fi; }
skip_all() { echo "1..0 # SKIP $*"; echo "0 passed, 0 failed, 1 skipped"; exit 0; }
say() { echo "# $*"; }

for tool in redis-server redis-cli nginx curl python3; do
	command -v "$tool" > /dev/null || [ -x "/usr/sbin/$tool" ] ||
		skip_all "$tool not installed (scripts/deps.sh)"
done
NGINX=$(command -v nginx || echo /usr/sbin/nginx)
for b in "$BIN" "$PRODUCER" "$RECORDER"; do
	[ -x "$b" ] || { echo "Bail out! no $b"; exit 1; }
done

T=$(mktemp -d "${DQB_TMPDIR:-/tmp}/dqbridge-scen.XXXXXX")
pids=()
NGINX_PID= BRIDGE_PID= PROD_PID=
cleanup() {
	local p
	set +e
	[ -n "$NGINX_PID" ] && kill -TERM "$NGINX_PID" 2> /dev/null
	[ -f "$T/redis.pid" ] && kill -9 "$(cat "$T/redis.pid")" 2> /dev/null
	for p in "${pids[@]}" $BRIDGE_PID $PROD_PID; do kill -9 "$p" 2> /dev/null; done
	wait 2> /dev/null
	if [ "$fail" -eq 0 ] && [ -z "${DQB_KEEP:-}" ]; then rm -rf "$T"; else echo "# kept $T"; fi
}
trap cleanup EXIT
# A timeout or ^C: exit, so that the EXIT trap stops what was started
# (the bridge, nginx, the sampler: a TERM reaches only the shell).
trap "exit 143" TERM
trap "exit 130" INT

free_port() {
	python3 "$HERE/free_port.py"
}
RP=$(free_port) AP=$(free_port) NP=$(free_port) SP=$(free_port) MP=$(free_port)
rcli() { timeout 10 redis-cli -p "$RP" "$@"; }

# ---- the components ----------------------------------------------------
# Not daemonized: a child in the test's process group and session, so
# that a KILL of either (timeout -k, check.sh's end of a suite) ends it.
redis-server --port "$RP" --bind 127.0.0.1 --save "" --appendonly no \
	--dir "$T" --logfile "$T/redis.log" --daemonize no < /dev/null > /dev/null 2>&1 &
echo $! > "$T/redis.pid"
pids+=($!)
for i in $(seq 50); do rcli ping > /dev/null 2>&1 && break; sleep 0.1; done

"$RECORDER" "$AP" "$T/recorder.log" "$LATENCY_US" 2> "$T/recorder.err" &
pids+=($!)

nginx_conf() {	# LIMIT
	local user_line=""
	[ "$(id -u)" = 0 ] && user_line="user root;"
	cat > "$T/nginx.conf" <<-NGX
	$user_line
	daemon off;
	worker_processes 1;
	pid $T/nginx.pid;
	error_log $T/nginx-error.log warn;
	events { worker_connections 1024; }
	http {
		access_log off;
		client_body_temp_path $T/ngx/body;
		proxy_temp_path $T/ngx/proxy;
		fastcgi_temp_path $T/ngx/fastcgi;
		uwsgi_temp_path $T/ngx/uwsgi;
		scgi_temp_path $T/ngx/scgi;
		log_format rec '\$msec \$request_time \$status \$http_idempotency_key';
		limit_req_zone \$server_port zone=down:1m rate=${1}r/s;
		limit_req_status 429;
		upstream app { server 127.0.0.1:$AP; keepalive 64; }
		server {
			listen 127.0.0.1:$NP;
			access_log $T/nginx-access.log rec buffer=64k flush=200ms;
			location / {
				limit_req zone=down burst=$BURST nodelay;
				add_header Retry-After 1 always;
				proxy_pass http://app;
				proxy_http_version 1.1;
				proxy_set_header Connection "";
			}
		}
		server {
			listen 127.0.0.1:$SP;
			location / { stub_status; }
		}
	}
	NGX
}
mkdir -p "$T/ngx"
nginx_conf "${LIMITS[0]}"
"$NGINX" -p "$T" -e "$T/nginx-error.log" -c "$T/nginx.conf" > /dev/null 2>&1 &
NGINX_PID=$!
for i in $(seq 50); do
	curl -sf -m 2 -o /dev/null "http://127.0.0.1:$SP/" && break
	sleep 0.1
done

cat > "$T/dqbridge.conf" <<CONF
# dqbridge_scenario.sh
source = redis
redis_port = $RP
redis_stream = in
redis_group = bridge
redis_consumer = c1
source_batch = 128
sink_url = http://127.0.0.1:$NP/ingest
sink_timeout_ms = 10000
max_inflight = $CAP
max_attempts = 100
rate_floor = 50
rate_ceiling = 5000
rate_increase = 1000
rate_decrease = 0.7
rate_decrease_interval_ms = 100
burst_ms = 15
rate_state_file = none
dq_dir = $T/dq
dq_slots = 65536
dq_slot_size = 1024
metrics_listen = 127.0.0.1:$MP
drain_timeout_ms = 5000
CONF
"$BIN" -c "$T/dqbridge.conf" >> "$T/bridge.log" 2>&1 &
BRIDGE_PID=$!
started=0
for i in $(seq 50); do
	curl -sf -m 2 "http://127.0.0.1:$MP/metrics" > /dev/null && { started=1; break; }
	sleep 0.1
done
check "dqbridge starts, metrics endpoint answers" [ "$started" = 1 ]
[ "$started" = 1 ] || { echo "1..$n"; echo "$pass passed, $fail failed"; exit 1; }

# One sampler for the whole run (scen_sampler.py: one python3 process,
# no fork per sample; the bash/curl/awk/date loops it replaced used about
# half of the two cores): the bridge's metrics every 200 ms (figures),
# nginx's stub_status every 100 ms (the in-flight check), and every 0.5 s
# what dq must hold by the records against the bridge's held gauge read
# just before and just after: messages in Redis (XLEN) minus not yet
# read by the group (lag) minus read and not acked (pending) minus
# delivered (the recorder's lines, all 200s) = acked and not delivered =
# in dq.  It also keeps $T/progress (offered, delivered, held, released)
# for the loop below, and measures its own CPU and this script's.
python3 "$HERE/dqbridge/scen_sampler.py" "$T" "$MP" "$SP" "$RP" $$ 2> "$T/sampler.err" &
SAMPLER_PID=$!
pids+=($SAMPLER_PID)

# ---- the run -------------------------------------------------------------
total=$((RATE * OFFER_S))
# Bounded: the backlog drains at >= ~2.5k/s on a quiet host; the
# deadline allows half that.
deadline_s=$((OFFER_S + total / 1250 + 30))
say "offering $RATE msg/s for $OFFER_S s ($total messages); limits ${LIMITS[*]} r/s at 0, $((OFFER_S / 3)), $((2 * OFFER_S / 3)) s; max_inflight $CAP; deadline $deadline_s s"
# The clock and the sleeps of the run are bash builtins ($EPOCHREALTIME,
# read -t on a pipe nobody writes): no fork a second while it measures.
now() { echo "$EPOCHREALTIME"; }
us() { local t=${1/./}; echo $((10#$t)); }	# a 6-decimal time in microseconds
since() { local d=$(($(us "$EPOCHREALTIME") - $(us "$1"))); printf '%d.%d' $((d / 1000000)) $((d % 1000000 / 100000)); }
exec {NAP}<> <(:)
sleep_until() {	# T0 K: until T0 + K seconds
	local d=$(($(us "$1") + $2 * 1000000 - $(us "$EPOCHREALTIME")))
	[ "$d" -gt 0 ] || return 0
	read -r -t "$((d / 1000000)).$(printf '%06d' $((d % 1000000)))" -u "$NAP" _ || true
}
t0=$(now)
echo "$t0 ${LIMITS[0]}" > "$T/phases.txt"
"$PRODUCER" "$RP" in "$RATE" "$OFFER_S" "$T/produced.txt" 2> "$T/producer.err" &
PROD_PID=$!
# The limit changes at OFFER_S/3 and 2 OFFER_S/3: nginx re-reads its
# configuration (SIGHUP); the time is taken when the reload is asked.
(for k in $(seq 1 $((${#LIMITS[@]} - 1))); do
	d=$(($(us "$t0") + k * OFFER_S * 1000000 / 3 - $(us "$EPOCHREALTIME")))
	[ "$d" -le 0 ] || read -r -t "$((d / 1000000)).$(printf '%06d' $((d % 1000000)))" -u "$NAP" _ || true
	nginx_conf "${LIMITS[$k]}"
	kill -HUP "$NGINX_PID"
	echo "$(now) ${LIMITS[$k]}" >> "$T/phases.txt"
done) &
pids+=($!)
sec=0 prev_off=0 prev_rel=0 prev_del=0 last_limit=${LIMITS[0]}
# One line a second (--demo: the table) until every message offered so
# far was delivered and dq is empty, or DEADLINE (seconds of $SECONDS).
run_until() {
	local limit off del held rel prc l mt begin
	# Only a held gauge read after this call counts (the tail's messages
	# are offered just before it: an older reading is of dq before them).
	begin=$(us "$EPOCHREALTIME")
	while :; do
		sec=$((sec + 1))
		sleep_until "$t0" "$sec"
		while read -r _ l; do limit=$l; done < "$T/phases.txt"
		[ ! -f "$T/tail.txt" ] || read -r _ limit < "$T/tail.txt"
		[ "$limit" = "$last_limit" ] || [ "$DEMO" = 1 ] || say "t=$(since "$t0") s: nginx reloaded, limit $limit r/s"
		last_limit=$limit
		off=0 del=0 held=- rel=- mt=0
		[ ! -f "$T/progress" ] || read -r off del held rel mt < "$T/progress"
		[ "$mt" -gt "$begin" ] || held=-
		if [ "$DEMO" = 1 ]; then
			[ "$rel" != - ] || rel=$prev_rel
			printf '%5d %9d %7d %7s %10d %11d %10d\n' "$sec" $((off - prev_off)) "$limit" \
				"${held:-?}" $((rel - prev_rel)) $((del - prev_del)) "$del"
			prev_rel=$rel
		fi
		prev_off=$off prev_del=$del
		if [ -n "$PROD_PID" ] && ! kill -0 "$PROD_PID" 2> /dev/null; then
			prc=0
			wait "$PROD_PID" || prc=$?
			PROD_PID=
			check "producer offered $total messages (exit $prc: $(cat "$T/producer.err"))" [ "$prc" = 0 ]
		fi
		if [ -z "$PROD_PID" ] && [ "$del" -ge "$off" ] && [ "$held" = 0 ]; then
			return 0
		fi
		[ "$SECONDS" -lt "$1" ] || return 1
	done
}
[ "$DEMO" = 1 ] && printf '%5s %9s %7s %7s %10s %11s %10s\n' t offered/s limit held released/s delivered/s delivered
done_run=0
run_until $((SECONDS + deadline_s)) && done_run=1
el=$(since "$t0")
check "the backlog drained within the deadline ($deadline_s s; took $el s)" [ "$done_run" = 1 ]
# The bridge's CPU for the run (the tail below not included).
read -r utime stime < <(awk '{print $14, $15}' "/proc/$BRIDGE_PID/stat")
cpu_s=$(python3 -c "print(($utime + $stime) / $(getconf CLK_TCK))")

# ---- the tail: a burst against a low limit with dq empty -------------------
# In the run a retried message waits behind the backlog, far longer than
# its Retry-After; here dq is empty, so what keeps a message that met a
# 429 from coming back early is its due time alone.
say "tail: limit $TAIL_LIMIT r/s, $TAIL_N messages at once with dq empty"
nginx_conf "$TAIL_LIMIT"
kill -HUP "$NGINX_PID"
echo "$(now) $TAIL_LIMIT" > "$T/tail.txt"
sleep 1
prc=0
"$PRODUCER" "$RP" in $((TAIL_N * 10)) 0.1 "$T/produced-tail.txt" 18 2> "$T/producer-tail.err" || prc=$?
check "tail: producer offered $TAIL_N messages (exit $prc: $(cat "$T/producer-tail.err"))" [ "$prc" = 0 ]
tail_ok=0
run_until $((SECONDS + 60)) && tail_ok=1
check "tail: delivered within 60 s" [ "$tail_ok" = 1 ]

sleep 0.5	# the last access-log lines (flush=200ms)
kill -TERM "$BRIDGE_PID"
rc=0
timeout 15 tail --pid="$BRIDGE_PID" -f /dev/null || true
wait "$BRIDGE_PID" || rc=$?
BRIDGE_PID=
check "SIGTERM: dqbridge exits 0 (got $rc)" [ "$rc" = 0 ]
pend=$(rcli XPENDING in bridge | head -1)
check "XPENDING empty: every message read was acked (${pend:-?})" [ "${pend:-x}" = 0 ]
dead=$(rcli XLEN in:dead)
check "nothing dead-lettered (in:dead holds ${dead:-?})" [ "${dead:-x}" = 0 ]
kill -TERM "$NGINX_PID" 2> /dev/null || true
wait "$NGINX_PID" 2> /dev/null || true
NGINX_PID=
kill -TERM "$SAMPLER_PID"
wait "$SAMPLER_PID" || true

# ---- judged on the records -------------------------------------------------
python3 "$HERE/dqbridge/scen_analyze.py" "$T" "$CAP" "$BURST" "$ADAPT_S" "$cpu_s" > "$T/figures.txt"
cat "$T/harness.txt" >> "$T/figures.txt" 2> /dev/null || true
fig() { sed -n "s/^$1=//p" "$T/figures.txt"; }
le() { python3 -c "import sys; sys.exit(0 if float('$1') <= float('$2') else 1)"; }
[ "$DEMO" = 1 ] || sed 's/^/# /' "$T/figures.txt"
check "every offered message delivered ($(fig delivered) of $(fig produced) + $(fig tail_produced) in the tail, missing $(fig missing))" \
	[ "$(fig missing)" = 0 -a "$(fig produced)" = "$total" ]
check "exactly once: no message got a second 200 ($(fig duplicates)), none unknown ($(fig unknown_ids))" \
	[ "$(fig duplicates)" = 0 -a "$(fig unknown_ids)" = 0 ]
check "payloads identical (sha256 mismatches: $(fig bad_payload))" [ "$(fig bad_payload)" = 0 ]
check "no retry before its Retry-After: $(fig retries_after_429) retries after a 429, $(fig early) early (min gap $(fig retry_gap_min_s) s)" \
	[ "$(fig early)" = 0 ]
check "tail (dq empty, limit $TAIL_LIMIT r/s): $(fig tail_delivered) of $(fig tail_produced) delivered, $(fig tail_retries_after_429) retries after a 429, none early (min gap $(fig tail_retry_gap_min_s) s)" \
	[ "$(fig tail_produced)" = "$TAIL_N" -a "$(fig tail_delivered)" = "$TAIL_N" -a "$(fig tail_retries_after_429)" -gt 0 ]
check "no request before its message was offered ($(fig before_offer))" [ "$(fig before_offer)" = 0 ]
for i in $(seq 0 $((${#LIMITS[@]} - 1))); do
	if [ "$(fig phase${i}_judged)" != 1 ]; then
		ok "phase $i: # SKIP rates not judged: the phase ($(fig phase${i}_span_s) s) is shorter than the adaptation time + 1 s"
		continue
	fi
	check "phase $i (limit $(fig phase${i}_limit)/s): accepted on average <= 1.05 x limit from $ADAPT_S s after the change ($(fig phase${i}_accepted_rate_adapted)/s)" \
		le "$(fig phase${i}_accepted_rate_adapted)" "$(python3 -c "print($(fig phase${i}_limit) * 1.05)")"
	check "phase $i: accepted <= 1.05 x limit + burst ($(fig phase${i}_accepted_bound)) in every 1 s window from $ADAPT_S s after the change (max $(fig phase${i}_accepted_max_1s))" \
		le "$(fig phase${i}_accepted_max_1s)" "$(fig phase${i}_accepted_bound)"
	check "phase $i: the bridge's offered rate <= 1.5 x limit + burst ($(fig phase${i}_offered_bound)) in every 1 s window from $ADAPT_S s (max $(fig phase${i}_offered_max_1s))" \
		le "$(fig phase${i}_offered_max_1s)" "$(fig phase${i}_offered_bound)"
	check "phase $i: the bridge's rate follows the change: offered within bound from $(fig phase${i}_settle_s) s on (<= $ADAPT_S s), accepted >= 50 % of the limit at $(fig phase${i}_reach_s) s (<= $REACH_S s)" \
		le "$(python3 -c "print(max(float('$(fig phase${i}_settle_s)') - $ADAPT_S, float('$(fig phase${i}_reach_s)') - $REACH_S))")" 0
	check "phase $i: 429s <= 25 % of requests once adapted ($(fig phase${i}_429_pct_adapted) %)" \
		le "$(fig phase${i}_429_pct_adapted)" 25
done
check "the bridge's held gauge matches what the records say dq holds (XLEN - lag - pending - delivered): worst |difference| $(fig held_err_max) at $(fig held_err_at) (allowed: between the two gauge readings around it, +- 1000 + 5 %)" \
	[ "$(fig held_err_ok)" = 1 ]
check "in flight never above max_inflight $CAP: recorder concurrency max $(fig recorder_concurrency_max), nginx writing max $(fig nginx_writing_max) (sampled), bridge gauge max $(fig metrics_inflight_max) (sampled)" \
	[ "$(fig recorder_concurrency_max)" -le "$CAP" -a "$(fig nginx_writing_max)" -le "$CAP" -a "$(fig metrics_inflight_max)" -le "$CAP" ]

# The harness's own cost: the sampler and this script, against the whole
# machine for the run (its CPU time is what it costs whatever the load).
check "the harness (sampler + this script) used <= 5 % of the machine's CPU ($(fig harness_cpu_pct_of_machine) %: $(fig harness_sampler_cpu_s) + $(fig harness_shell_cpu_s) s in $(fig harness_wall_s) s x $(fig harness_cpus) CPUs)" \
	le "$(fig harness_cpu_pct_of_machine)" 5
# Issue 35's goal, reported, not asserted: once adapted, the accepted rate
# within 10 % of each limit. On two cores shared with other jobs it
# depends on what the host has left for the chain (producer, Redis,
# bridge, nginx, recorder): a verdict on the host, not a check.
goal_met=0 goal_n=0
for i in $(seq 0 $((${#LIMITS[@]} - 1))); do
	[ "$(fig phase${i}_judged)" = 1 ] || continue
	goal_n=$((goal_n + 1))
	if le "$(python3 -c "print(abs(float('$(fig phase${i}_accepted_vs_limit_pct)')))")" 10; then
		goal_met=$((goal_met + 1))
	fi
done
say "goal (issue 35): accepted within 10 % of the limit once adapted: $goal_met of $goal_n phases ($(for i in $(seq 0 $((${#LIMITS[@]} - 1))); do printf '%s/s vs %s: %s %%; ' "$(fig phase${i}_accepted_rate_adapted)" "$(fig phase${i}_limit)" "$(fig phase${i}_accepted_vs_limit_pct)"; done))"

summary="delivered $(fig delivered) of $(fig produced) + $(fig tail_produced) offered, $(fig duplicates) twice, $(fig missing) missing, $(fig bad_payload) altered"
if [ "$(fig missing)" = 0 ] && [ "$(fig duplicates)" = 0 ] && [ "$(fig bad_payload)" = 0 ] && [ "$(fig produced)" = "$total" ]; then
	verdict="every message delivered exactly once, payloads identical ($summary)"
else
	verdict="NOT every message delivered exactly once ($summary)"
fi

table() {
	echo "offered: $(fig produced) msgs in $(fig offer_s) s ($(fig offered_rate)/s); drained $(fig actual_last_s) s after the first offer (ideal $(fig ideal_last_s) s)"
	echo "delivered $(fig delivered), missing $(fig missing), duplicates $(fig duplicates), payload mismatches $(fig bad_payload)"
	echo "diverted into dq $(fig bridge_diverted), sent direct $(fig bridge_direct) (bridge's counters); source paused $(fig bridge_pauses) times; dq held at most $(fig metrics_held_max)"
	echo "requests $(fig requests_total), 429s $(fig requests_429); attempts per message mean $(fig attempts_mean), max $(fig attempts_max) ($(fig attempts_hist))"
	echo "retries after a 429: $(fig retries_after_429) ($(fig early) early; min gap $(fig retry_gap_min_s) s against Retry-After 1 s); in the tail (dq empty, $TAIL_N at once against $TAIL_LIMIT r/s): $(fig tail_retries_after_429), min gap $(fig tail_retry_gap_min_s) s"
	echo "lateness against the ideal paced schedule: p50 $(fig lateness_p50_s) s, p99 $(fig lateness_p99_s) s, max $(fig lateness_max_s) s, min $(fig lateness_min_s) s"
	echo "  delivered at the first try ($(fig lateness_first_try_n)): p50 $(fig lateness_first_try_p50_s) s, p99 $(fig lateness_first_try_p99_s) s, max $(fig lateness_first_try_max_s) s; after a 429 ($(fig lateness_retried_n)): p50 $(fig lateness_retried_p50_s) s, p99 $(fig lateness_retried_p99_s) s, max $(fig lateness_retried_max_s) s"
	echo "in flight: recorder concurrency max $(fig recorder_concurrency_max), nginx writing max $(fig nginx_writing_max), bridge gauge max $(fig metrics_inflight_max) (cap $CAP)"
	echo "bridge CPU $(fig cpu_s) s = $(fig cpu_us_per_msg) us per delivered message"
	echo "harness (scen_sampler.py + the script) CPU $(fig harness_sampler_cpu_s) + $(fig harness_shell_cpu_s) s in $(fig harness_wall_s) s = $(fig harness_cpu_pct_of_machine) % of $(fig harness_cpus) CPUs"
	echo "goal: accepted within 10 % of the limit once adapted: $goal_met of $goal_n phases"
	printf '%-6s %6s %7s %9s %10s %8s %9s %9s %9s %8s %8s %9s\n' phase limit span_s accepted/s acc.adapt vs.limit acc.max1s off.max1s 429%adapt settle_s reach_s bridge.rate
	for i in $(seq 0 $((${#LIMITS[@]} - 1))); do
		printf '%-6s %6s %7s %9s %10s %7s%% %9s %9s %9s %8s %8s %9s\n' "$i" "$(fig phase${i}_limit)" "$(fig phase${i}_span_s)" \
			"$(fig phase${i}_accepted_rate)" "$(fig phase${i}_accepted_rate_adapted)" "$(fig phase${i}_accepted_vs_limit_pct)" "$(fig phase${i}_accepted_max_1s)" \
			"$(fig phase${i}_offered_max_1s)" "$(fig phase${i}_429_pct_adapted)" "$(fig phase${i}_settle_s)" "$(fig phase${i}_reach_s)" "$(fig phase${i}_bridge_rate_median)"
	done
}
table | sed 's/^/# /'
if [ -n "$REPORT" ]; then
	{
		echo "# dqbridge scenario: $(basename "$0") --offer-s $OFFER_S"
		echo "date: $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
		echo "commit: $(git -C "$TOP" rev-parse --short HEAD 2> /dev/null || echo ?)$(git -C "$TOP" diff --quiet HEAD -- user scripts Makefile 2> /dev/null || echo ' (code modified)')"
		echo "machine: $(uname -srm), $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), load average at the end $(cut -d' ' -f1-3 /proc/loadavg)"
		echo "setup: offered $RATE msg/s for $OFFER_S s; nginx limit_req ${LIMITS[*]} r/s (changes at $((OFFER_S / 3)) and $((2 * OFFER_S / 3)) s, burst $BURST, Retry-After 1); app service time $((LATENCY_US / 1000)) ms; dqbridge max_inflight $CAP, rate 50..5000, +1000/s per s, lowered by the refused share, at most x0.7 every 100 ms, burst_ms 15, embedded engine, dq_slots 65536 (back-pressure at 80 %); after the drain a tail: limit $TAIL_LIMIT r/s, $TAIL_N messages at once with dq empty (due times)"
		echo "assertion windows from $ADAPT_S s after each change"
		echo "result: $pass passed, $fail failed"
		echo "verdict: $verdict"
		echo
		table
		echo
		echo "# the assertions"
		cat "$T/tap.txt"
		echo
		echo "# raw figures (scen_analyze.py)"
		cat "$T/figures.txt"
	} > "$T/report.txt"
	cp "$T/report.txt" "$REPORT"
	echo "# report written to $REPORT"
fi
echo "# $verdict"
echo "1..$n"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
