#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1 OR MIT
#
# dqbridge on the kernel backend: run inside the VM lab with dq.ko loaded
# (scripts/check.sh suite dqbridge-6.1:
#   selftests/vm/run --kernel 6.1 -- user/tests/dqbridge_vm_test.sh BIN).
# A short Redis end to end as dqbridge_test.sh's first phase, smaller for
# TCG: redis-server, nginx (limit_req 20 r/s, burst 5, 429 + Retry-After)
# in front of recorder.py, and dqbridge with dq_backend = auto, which must
# open /dev/dq (its dq_open and started log lines say backend=kernel).
# 300 messages offered at 60/s: 429s, diverts into the durable queue,
# paced releases; kill -9 of the bridge while dq holds messages, restart
# on the same journal (recovered > 0 by its dq_open line); every XADDed
# id delivered with an identical payload, duplicates at most max_inflight,
# XPENDING empty, SIGTERM exit 0, and no WARNING/BUG in the kernel log
# (the lab's run checks that too: exit 3).  TAP; last line
# "N passed, N failed".
#
# usage: dqbridge_vm_test.sh DQBRIDGE_BINARY
set -euo pipefail
BIN=${1:?usage: dqbridge_vm_test.sh DQBRIDGE_BINARY}
HERE=$(cd "$(dirname "$0")" && pwd)
LIMIT=20 BURST=5 INFLIGHT=8 FAIL_ID=none
for tool in redis-server redis-cli; do
	command -v "$tool" > /dev/null ||
		{ echo "1..0 # SKIP $tool not installed (scripts/deps.sh)"; echo "0 passed, 0 failed, 1 skipped"; exit 0; }
done
. "$HERE/dqbridge/lib.sh"
# lib.sh's cleanup is not written for errexit (a kill of a process gone
# already fails): it runs without it.  A TERM/INT/HUP (timeout, ^C) ends
# through the EXIT trap (lib.sh's traps): nothing left running.
trap 'set +e; cleanup' EXIT
if [ ! -c /dev/dq ]; then
	echo "Bail out! /dev/dq is missing: run this in the VM lab with dq.ko loaded"
	echo "0 passed, 1 failed"
	exit 1
fi
# The lab's guest leaves the loopback interface down.
if ! ip -o link show lo | grep -q 'state UNKNOWN\|state UP\|,UP'; then
	ip link set lo up
fi
RP=$(free_port)
rcli() { redis-cli -p "$RP" "$@"; }
klog0=$(dmesg | wc -l)

t0=$SECONDS
say() { echo "# [$((SECONDS - t0)) s] $*"; }
# TCG is slow (a python3 start is 1-3 s there): everything waits longer
# than on the host, and says where it is.
redis-server --port "$RP" --bind 127.0.0.1 --save "" --appendonly no --dir "$T" \
	--logfile "$T/redis.log" --daemonize yes --pidfile "$T/redis.pid" > /dev/null 2>&1
for _ in $(seq 300); do rcli ping > /dev/null 2>&1 && break; sleep 0.1; done
pids+=("$(cat "$T/redis.pid")")
say "redis-server up"
# lib.sh's start_downstream, with bounded probes (TCG is slow): the
# recorder first, then nginx with lib.sh's configuration.
python3 "$HERE/dqbridge/recorder.py" "$AP" "$T/recorder.log" > "$T/recorder.err" 2>&1 &
pids+=($!)
for _ in $(seq 300); do curl -s -m 5 -o /dev/null "http://127.0.0.1:$AP/" -d x && break; sleep 0.2; done
say "recorder up"
downstream_nginx_conf
"$NGINX" -p "$T" -e "$T/nginx-error.log" -c "$T/nginx.conf" > "$T/nginx.out" 2>&1 &
NGINX_PID=$!
up=0
for _ in $(seq 150); do
	curl -sf -m 5 -o /dev/null "http://127.0.0.1:$NP/" -d x && up=1 && break
	sleep 0.2
done
if [ "$up" = 0 ]; then
	echo "Bail out! the downstream did not come up"
	tail -5 "$T/nginx-error.log" "$T/nginx.out" "$T/recorder.err" 2> /dev/null | sed 's/^/# /'
	echo "0 passed, 1 failed"
	exit 1
fi
forget_probe
say "nginx up"

cat > "$T/dqbridge.conf" <<CONF
source = redis
redis_port = $RP
redis_stream = in
redis_group = bridge
redis_consumer = vm1
sink_url = http://127.0.0.1:$NP/ingest
sink_timeout_ms = 5000
max_inflight = $INFLIGHT
max_attempts = 50
backoff_base_ms = 200
rate_floor = 5
rate_ceiling = 100
rate_increase = 5
dq_dir = $T/dq
dq_backend = auto
dq_slots = 1024
dq_slot_size = 1024
metrics_listen = 127.0.0.1:$MP
drain_timeout_ms = 5000
CONF
# Started: its "started" line logged (after dq_open; the metrics endpoint
# answers before the queue is open).  TCG: give it 30 s.
start_bridge_slow() {
	local n
	n=$(cat "$T/bridge.log" 2> /dev/null | grep -c 'event=started ' || true)
	"$BIN" -c "$T/dqbridge.conf" >> "$T/bridge.log" 2>&1 &
	BRIDGE_PID=$!
	for _ in $(seq 300); do
		[ "$(grep -c 'event=started ' "$T/bridge.log" || true)" -gt "$n" ] &&
			curl -sf -m 5 "http://127.0.0.1:$MP/metrics" > /dev/null && return 0
		sleep 0.1
	done
	return 1
}
metric0() { local v; v=$({ curl -sf -m 5 "http://127.0.0.1:$MP/metrics" || true; } |
	awk -v m="dqbridge_$1" '$1 == m {print $2}'); echo "${v:-0}"; }

check "dqbridge starts (dq_backend auto)" start_bridge_slow
say "dqbridge up"
check "it opened the kernel backend: $(grep -o 'event=dq_open .*backend=[a-z]*' "$T/bridge.log" | grep -o 'backend=[a-z]*' | head -1)" \
	grep -q 'event=dq_open .*backend=kernel ' "$T/bridge.log"
check "and runs on it (started ... backend=kernel)" grep -q 'event=started .*backend=kernel ' "$T/bridge.log"
python3 "$HERE/dqbridge/producer.py" "$RP" in 300 60 "$T/produced.txt" &
prod=$!
pids+=("$prod")
held=0
for _ in $(seq 150); do
	held=$(metric0 held)
	[ "$held" -gt 20 ] && break
	sleep 0.1
done
div=$(metric0 diverted_total)
kill -9 "$BRIDGE_PID"
wait "$BRIDGE_PID" 2> /dev/null || true
say "kill -9 with $held held in dq.ko's queue, $div diverted, $(wc -l < "$T/produced.txt") produced"
check "messages diverted into the kernel queue and held there at the kill ($held > 20)" [ "$held" -gt 20 ]
sleep 0.5
check "dqbridge restarts on its journal after kill -9" start_bridge_slow
recovered=$(sed -n 's/.*event=dq_open .*recovered=\([0-9]*\).*/\1/p' "$T/bridge.log" | tail -1)
check "the journal came back into a kernel queue (recovered=${recovered:-?})" [ "${recovered:-0}" -gt 0 ]
nages=$(sed -n 's/.*event=ages_recovered n=\([0-9]*\).*/\1/p' "$T/bridge.log" | tail -1)
check "the recovered messages' first-diverted times read from dq.ko's arena (ages_recovered n=${nages:-?} = $recovered)" \
	[ "${nages:-x}" = "${recovered:-y}" ]
check "again on the kernel backend" [ "$(grep -c 'event=started .*backend=kernel ' "$T/bridge.log")" = 2 ]
wait "$prod"
check "every XADDed id delivered (within 120 s)" wait_delivered "$T/produced.txt" 120
say "all delivered"
python3 "$HERE/dqbridge/fault_tools.py" judge "$T/produced.txt" "$T/recorder.log" > "$T/figures.txt"
sed 's/^/# /' "$T/figures.txt"
fig() { sed -n "s/^$1=//p" "$T/figures.txt"; }
check "nothing lost: $(fig produced) produced, missing $(fig missing)" [ "$(fig missing)" = 0 ]
check "payloads identical (sha256 mismatches: $(fig bad_payload))" [ "$(fig bad_payload)" = 0 ]
check "duplicates within one kill -9 (max_inflight $INFLIGHT): $(fig duplicates)" \
	[ "$(fig duplicates)" -le "$INFLIGHT" ]
n429=$(awk '$2 == 429' "$T/nginx-access.log" | wc -l)
check "nginx answered 429s ($n429) and the bridge released at the paced rate after them" [ "$n429" -gt 0 ]
xpending_empty() {
	for _ in $(seq 40); do
		[ "$(rcli XPENDING in bridge | head -1)" = 0 ] && return 0
		sleep 0.5
	done
	return 1
}
check "XPENDING empty at the end" xpending_empty
for _ in $(seq 50); do [ "$(metric0 held)" = 0 ] && break; sleep 0.2; done
check "dq.ko's queue empty at the end (held $(metric0 held))" [ "$(metric0 held)" = 0 ]
kill -TERM "$BRIDGE_PID"
rc=0
wait "$BRIDGE_PID" || rc=$?
BRIDGE_PID=
check "SIGTERM: exit 0 (got $rc)" [ "$rc" -eq 0 ]
dmesg | tail -n +"$((klog0 + 1))" > "$T/dmesg.txt"
check "no WARNING/BUG in the kernel log during the run" \
	bash -c '! grep -E "WARNING|BUG|Oops|Call Trace" "$1"' _ "$T/dmesg.txt"
finish
