#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1 OR MIT
#
# dqbridge: dq_sync_interval_ms paces the journal's group commit (issue
# 35: the library's 2 ms synced each lone retire, an fdatasync per
# message delivered from dq, 40 % of the bridge's CPU at 500 r/s), and a
# longer interval keeps the ack rule: a diverted message is acked only
# once its commit is durable, so a kill -9 loses nothing.
#
# Construction: dq_sync_interval_ms 100; fault_sink.py answers 429 with
# Retry-After 3 to everything, so each message is diverted (committed,
# acked once durable) and none is due again before the kill.  The bridge runs
# under strace -f -c -e trace=fdatasync (seccomp-bpf: only fdatasync
# stops).  producer.py trickles N = 200 messages at 100/s; the bridge
# reads one or two each source_read_interval_ms (10 ms) and commits them,
# ~100 commits a second: the group commit of 2 ms would sync each (>= 100
# fdatasyncs in the 2 s); one every 100 ms is <= 30 in the bridge's ~3 s
# under strace, start-up and recovery included.  Verdict: < 60.  The
# bridge is killed -9 as the last message is produced (commits of the
# last interval not yet durable, so not acked) and restarted without
# strace against a sink answering 200: every message delivered, with its
# payload, the group's pending list empty.
#
# Then the ack rule with the group commit held up (the bridge does not
# block for it: it waits on the journal's descriptor, dq_durable_fd()):
# the bridge runs under strace with every fdatasync delayed by HOLD_S =
# 2 s on entry, the sink answering 429 again; once start-up's syncs are
# through (its "started" line), M = 20 more messages are produced, and once the
# bridge has read and diverted all 20 (its metrics), the group's pending
# list must still hold all 20: their commits cannot be durable before
# the delayed fdatasync returns, so an ack now is an ack before durable.
# The look must come within HOLD_S of the first of them being diverted
# (timed; a slower look fails as unable to judge).  Then all 20 acked
# once the syncs return, and SIGTERM exits 0.  ~8 + ~10 s.
#
# usage: dqbridge_sync_test.sh DQBRIDGE_BINARY
set -euo pipefail
BIN=${1:?usage: dqbridge_sync_test.sh DQBRIDGE_BINARY}
HERE=$(cd "$(dirname "$0")" && pwd)
LIMIT=0 BURST=0
. "$HERE/dqbridge/lib.sh"
need redis-server redis-cli strace
errexit_traps
N=200

start_redis
ctl ok
python3 "$HERE/dqbridge/fault_sink.py" "$NP" "$T/sink.log" "$T/control" > "$T/sink.err" 2>&1 &
pids+=($!)
for _ in $(seq 50); do curl -sf -o /dev/null "http://127.0.0.1:$NP/" -d x && break; sleep 0.1; done
ctl status 429 3
rcli XGROUP CREATE in bridge '$' MKSTREAM > /dev/null

cat > "$T/dqbridge.conf" <<CONF
source = redis
redis_port = $RP
redis_stream = in
redis_group = bridge
redis_consumer = b1
max_inflight = 8
rate_state_file = none
sink_url = http://127.0.0.1:$NP/ingest
sink_timeout_ms = 3000
dq_dir = $T/dq
dq_slots = 1024
dq_slot_size = 1024
dq_sync_interval_ms = 100
metrics_listen = 127.0.0.1:$MP
drain_timeout_ms = 2000
CONF
strace -f -qq -c --seccomp-bpf -e trace=fdatasync -o "$T/strace.txt" \
	"$BIN" -c "$T/dqbridge.conf" >> "$T/bridge.log" 2>&1 &
TRACER=$!
pids+=("$TRACER")
up=0
for _ in $(seq 100); do
	curl -sf -o /dev/null "http://127.0.0.1:$MP/metrics" && { up=1; break; }
	sleep 0.05
done
check "dqbridge starts under strace" [ "$up" = 1 ]
python3 "$HERE/dqbridge/producer.py" "$RP" in "$N" 100 "$T/produced.txt"
BPID=$(pgrep -P "$TRACER" | head -1 || true)
[ -z "$BPID" ] || kill -9 "$BPID" 2> /dev/null || true
wait "$TRACER" 2> /dev/null || true
syncs=$(awk '$NF == "fdatasync" {print $4}' "$T/strace.txt")
syncs=${syncs:-0}
check "the group commit every 100 ms: $syncs fdatasyncs while $N messages were diverted over 2 s (< 60)" \
	[ "$syncs" -gt 0 -a "$syncs" -lt 60 ]

ctl ok
start_bridge || true
check "dqbridge restarts after kill -9" kill -0 "$BRIDGE_PID"
done_all=0
for _ in $(seq 600); do
	[ "$(group pending)" = 0 ] &&
		[ "$(awk '$4 == 200 && $2 != "-"' "$T/sink.log" | cut -d' ' -f2 | sort -u | wc -l)" -ge "$N" ] &&
		{ done_all=1; break; }
	sleep 0.1
done
check "every message delivered after kill -9 and restart, pending $(group pending)" [ "$done_all" = 1 ]
bad=$(python3 "$HERE/dqbridge/judge.py" "$T/produced.txt" "$T/sink.log" --probe --some)
check "none lost, each with its payload (bad: $bad)" [ "$bad" = 0 ]
kill -TERM "$BRIDGE_PID"
rc=0
wait "$BRIDGE_PID" || rc=$?
BRIDGE_PID=
check "SIGTERM: exit 0" [ "$rc" = 0 ]

M=20 HOLD_S=2
ctl status 429 3
strace -f -qq --seccomp-bpf -e trace=fdatasync \
	-e inject=fdatasync:delay_enter=$((HOLD_S * 1000000)) -o /dev/null \
	"$BIN" -c "$T/dqbridge.conf" >> "$T/bridge.log" 2>&1 &
TRACER=$!
pids+=("$TRACER")
# Started: its "started" line (the metrics listen before the journal's
# open, whose syncs are held too).
starts=$(grep -c 'event=started' "$T/bridge.log" || true)
up=0
for _ in $(seq 300); do
	[ "$(grep -c 'event=started' "$T/bridge.log" || true)" -gt "$starts" ] && { up=1; break; }
	sleep 0.1
done
check "dqbridge starts with its fdatasyncs held ${HOLD_S} s" [ "$up" = 1 ]
p0=$(group pending)
d0=$(metric diverted_total)
python3 "$HERE/dqbridge/producer.py" "$RP" in "$M" 1000 "$T/produced2.txt"
t0=$(date +%s.%N) t1=
for _ in $(seq 100); do
	d=$(metric diverted_total)
	[ -n "$t1" ] || [ "$((${d:-0} - d0))" -lt 1 ] || t1=$(date +%s.%N)
	[ "$((${d:-0} - d0))" -ge "$M" ] && break
	sleep 0.02
done
pend=$(group pending)
t2=$(date +%s.%N)
look=$(awk -v a="${t1:-$t0}" -v b="$t2" 'BEGIN {printf "%.2f", b - a}')
check "all $M diverted ($((${d:-0} - d0)))" [ "$((${d:-0} - d0))" -ge "$M" ]
check "looked ${look} s after the first was diverted (< ${HOLD_S} s: else no verdict)" \
	awk -v l="$look" -v h="$HOLD_S" 'BEGIN {exit !(l < h)}'
check "none of the $M acked before its commit's fdatasync returned (pending $p0 -> $pend)" \
	[ "$pend" = "$((p0 + M))" ]
acked=0
group_reaches pending "$p0" 300 && acked=1
check "all $M acked once the held syncs returned (pending $(group pending))" [ "$acked" = 1 ]
BPID=$(pgrep -P "$TRACER" | head -1 || true)
[ -n "$BPID" ] && kill -TERM "$BPID"
rc=0
wait "$TRACER" || rc=$?
check "SIGTERM with syncs held: exit 0" [ "$rc" = 0 ]
finish
