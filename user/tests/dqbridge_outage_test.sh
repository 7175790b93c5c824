#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1 OR MIT
#
# dqbridge when its components are away (docs/dqbridge.md, "Faults"):
#   A. the source unreachable at start: the bridge stays up, logs that it
#      cannot reach Redis, and starts consuming once Redis is there;
#   B. the downstream down for DQB_OUTAGE_S (30) seconds, nginx stopped
#      (connection refused): what arrives meanwhile is diverted into dq
#      (retry_on "connect"), the source is acknowledged only for what is
#      durable, and once nginx is back everything is delivered, payloads
#      identical, against the test's own records.
# usage: dqbridge_outage_test.sh DQBRIDGE_BINARY
set -u
BIN=${1:?usage: dqbridge_outage_test.sh DQBRIDGE_BINARY}
HERE=$(cd "$(dirname "$0")" && pwd)
LIMIT=${DQB_LIMIT:-400}
BURST=${DQB_BURST:-50}
OUTAGE=${DQB_OUTAGE_S:-30}
COUNT=${DQB_COUNT:-1500}
OFFER=${DQB_OFFER:-40}		# messages/s: the run spans the outage
FAIL_ID=none

for tool in redis-server redis-cli; do
	command -v "$tool" > /dev/null ||
		{ echo "1..0 # SKIP $tool not installed (scripts/deps.sh)"; echo "0 passed, 0 failed, 1 skipped"; exit 0; }
done
. "$HERE/dqbridge/lib.sh"
RP=$(free_port)
rcli() { redis-cli -p "$RP" "$@"; }
start_redis() {
	redis-server --port "$RP" --bind 127.0.0.1 --save "" --appendonly no \
		--dir "$T" --logfile "$T/redis.log" \
		--daemonize yes --pidfile "$T/redis.pid" > /dev/null 2>&1
	local i
	for i in $(seq 50); do
		rcli ping > /dev/null 2>&1 && REDIS_PID=$(cat "$T/redis.pid") &&
			pids+=($REDIS_PID) && return 0
		sleep 0.1
	done
	return 1
}

cat > "$T/dqbridge.conf" <<CONF
# dqbridge_outage_test.sh
source = redis
redis_port = $RP
redis_stream = in
redis_group = bridge
redis_consumer = c1
sink_url = http://127.0.0.1:$NP/ingest
sink_timeout_ms = 2000
max_inflight = 8
max_attempts = 1000
backoff_base_ms = 200
retry_on = 429,503,5xx,timeout,connect
rate_floor = 5
rate_ceiling = 400
dq_dir = $T/dq
dq_slots = 8192
dq_slot_size = 1024
metrics_listen = 127.0.0.1:$MP
drain_timeout_ms = 3000
CONF

# ---- A. the source unreachable at start -----------------------------------
start_downstream
check "dqbridge starts with Redis unreachable (metrics endpoint answers)" start_bridge
sleep 2
check "... and is still running 2 s later" kill -0 "$BRIDGE_PID"
check "... and says it cannot reach Redis" grep -q "redis_connect_failed" "$T/bridge.log"
check "Redis starts" start_redis
python3 "$HERE/dqbridge/producer.py" "$RP" in 20 100 "$T/early.txt"
check "the bridge connects by itself and delivers what was sent meanwhile" \
	wait_delivered "$T/early.txt" 30

# ---- B. the downstream down for $OUTAGE s ---------------------------------
poll_metrics &
pids+=($!)
python3 "$HERE/dqbridge/producer.py" "$RP" in "$COUNT" "$OFFER" "$T/produced.txt" &
prod=$!
sleep 3
kill -TERM "$NGINX_PID"
wait "$NGINX_PID" 2> /dev/null
NGINX_PID=
t_down=$(date +%s.%N)
echo "# nginx stopped after 3 s of the run; down for $OUTAGE s"
sleep "$OUTAGE"
div_down=$(metric diverted_total)
held_down=$(metric held)
alive=0
kill -0 "$BRIDGE_PID" 2> /dev/null && alive=1
# Back up on the same port (nginx only: the recorder kept running).
"$NGINX" -p "$T" -e "$T/nginx-error.log" -c "$T/nginx.conf" > /dev/null 2>&1 &
NGINX_PID=$!
t_up=$(date +%s.%N)
echo "# nginx back; during the outage: diverted ${div_down:-?}, held ${held_down:-?}"
check "the bridge stayed up through the outage" [ "$alive" = 1 ]
check "messages arriving during the outage were diverted into dq (${div_down:-?} diverted, ${held_down:-?} held)" \
	[ "${div_down:-0}" -gt 0 ] && [ "${held_down:-0}" -gt 0 ]
wait "$prod"
check "every message of the run delivered once the downstream is back" \
	wait_delivered "$T/produced.txt" 120
# Nothing reached the downstream while it was down; the payloads are the
# ones sent; nothing left pending in Redis.
python3 - "$T/produced.txt" "$T/recorder.log" "$t_down" "$t_up" > "$T/judge.out" <<'PY'
import sys
want = {l.split()[0]: l.split()[1] for l in open(sys.argv[1])}
down, up = float(sys.argv[3]), float(sys.argv[4])
ok = {}
during = bad = 0
for l in open(sys.argv[2]):
    f = l.split()
    t, mid, sha, status = float(f[0]), f[1], f[2], f[3]
    if down + 0.5 < t < up - 0.1:
        during += 1
    if status == "200" and mid in want:
        ok[mid] = ok.get(mid, 0) + 1
        if sha != want[mid]:
            bad += 1
dups = sum(c - 1 for c in ok.values())
print(f"delivered {len(ok)} of {len(want)}, duplicates {dups}, altered {bad}, "
      f"recorded during the outage {during}")
sys.exit(0 if bad == 0 and during == 0 and len(ok) == len(want) else 1)
PY
jrc=$?
echo "# $(cat "$T/judge.out")"
check "payloads identical, nothing reached the recorder while nginx was down" [ "$jrc" = 0 ]
pending=$(rcli XPENDING in bridge | head -1)
check "nothing left pending in the consumer group (${pending:-?})" [ "${pending:-1}" = 0 ]
finish
