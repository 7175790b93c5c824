#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1 OR MIT
#
# dqbridge: a held backlog leaves dq in bursts of the token bucket's
# depth, one loop turn each, not a turn per token (issue 35; the bridge's
# cost per message while it holds, bench/bridge_peer.sh).  The bridge of
# before woke when the next single token was due and released that one
# message: at 400 r/s a wake-up every 2.5 ms, one per message.
#
# Construction: the rate pinned at R = 400 r/s (floor = ceiling), burst_ms
# 50 (depth D = 20 tokens), max_inflight 32; the downstream is nginx
# answering 200 itself (return 200, no app behind it, so that a burst's
# answers come back together rather than paced by an app).  N = 300
# entries are in the stream before the bridge starts: its first message
# goes direct (its one token), the rest into dq (no token: diverted,
# held) and then out of dq at R.  Between nginx's 40th and 240th request
# (200 releases, ~0.5 s at R) the test counts the main thread's voluntary
# context switches (its wake-ups; the kernel's count,
# /proc/PID/task/PID/status): the old bridge woke for each token and for
# most answers (332-406 seen, >= 200 unless its turns came > 2.5 ms
# late); this one wakes for a burst (200 / D = 10) and its answers
# (together: about one more), plus its 50 ms housekeeping (~10): 18-20
# seen.  Verdict: < 100, a factor 3 from the old and 5 from the new.
# Then every entry delivered exactly once (nginx's log, by
# Idempotency-Key: nginx answering itself keeps no body; the payloads
# are other tests' to check), the group's pending list empty.  ~3 s.
#
# usage: dqbridge_release_test.sh DQBRIDGE_BINARY
set -euo pipefail
BIN=${1:?usage: dqbridge_release_test.sh DQBRIDGE_BINARY}
HERE=$(cd "$(dirname "$0")" && pwd)
LIMIT=100000 BURST=10000
. "$HERE/dqbridge/lib.sh"
need redis-server redis-cli
errexit_traps
N=300 R=400

start_redis
# nginx answering 200 itself (return 200: no app behind it), so that the
# answers of a burst come back together, not paced by an app's thread.
downstream_nginx_conf
sed -i 's|proxy_pass http://recorder;|return 200;|' "$T/nginx.conf"
"$NGINX" -p "$T" -e "$T/nginx-error.log" -c "$T/nginx.conf" > /dev/null 2>&1 &
NGINX_PID=$!
for _ in $(seq 50); do curl -sf -o /dev/null "http://127.0.0.1:$NP/" -d x && break; sleep 0.1; done
forget_probe
: > "$T/produced.txt"
for i in $(seq $N); do
	echo "XADD in * payload release-$i-$RANDOM$RANDOM"
done | rcli > "$T/ids.txt"
rcli XRANGE in - + | awk 'NR % 3 == 1 {id = $0} NR % 3 == 0 {print id, $0}' |
	while read -r id body; do
		echo "$id $(printf '%s' "$body" | sha256sum | cut -d' ' -f1)"
	done > "$T/produced.txt"

cat > "$T/dqbridge.conf" <<CONF
source = redis
redis_port = $RP
redis_stream = in
redis_group = bridge
redis_consumer = b1
source_batch = 128
max_inflight = 32
rate_floor = $R
rate_ceiling = $R
rate_initial = $R
burst_ms = 50
rate_state_file = none
sink_url = http://127.0.0.1:$NP/ingest
sink_timeout_ms = 30000
dq_dir = $T/dq
dq_slots = 1024
dq_slot_size = 1024
metrics_listen = 127.0.0.1:$MP
drain_timeout_ms = 3000
CONF
start_bridge || true
check "dqbridge starts" kill -0 "$BRIDGE_PID"
check "the stream holds $N entries" [ "$(wc -l < "$T/produced.txt")" = "$N" ]

sent() { wc -l < "$T/nginx-access.log"; }
wakes() { awk '/^voluntary_ctxt_switches/ {print $2}' "/proc/$BRIDGE_PID/task/$BRIDGE_PID/status"; }
w0= w1= s0= s1=
for _ in $(seq 3000); do
	s=$(sent)
	if [ -z "$w0" ] && [ "$s" -ge 40 ]; then w0=$(wakes) s0=$s; fi
	if [ -n "$w0" ] && [ "$s" -ge 240 ]; then w1=$(wakes) s1=$s; break; fi
	sleep 0.01
done
check "the sink saw 40, then 240 requests (${s0:-?}, ${s1:-?})" [ -n "$w1" ]
if [ -n "$w1" ]; then
	check "released in bursts: $((w1 - w0)) wake-ups for $((s1 - s0)) releases (< 100)" \
		[ $((w1 - w0)) -lt 100 ]
fi

done_all=0
for _ in $(seq 300); do
	[ "$(group pending)" = 0 ] && [ "$(awk '$2 == 200' "$T/nginx-access.log" | wc -l)" -ge "$N" ] &&
		{ done_all=1; break; }
	sleep 0.1
done
check "released: every entry acked (pending $(group pending))" [ "$done_all" = 1 ]
sleep 0.3	# the access log (unbuffered) has the last line
bad=$(python3 - "$T/produced.txt" "$T/nginx-access.log" <<'PY'
import collections, sys
want = [l.split()[0] for l in open(sys.argv[1])]
got = collections.Counter(l.split()[2] for l in open(sys.argv[2]) if l.split()[1] == "200")
bad = [k for k in want if got[k] != 1] + [k for k in got if k not in set(want)]
print(len(bad))
PY
)
check "every entry delivered exactly once (nginx's log by Idempotency-Key; bad: $bad)" [ "$bad" = 0 ]
kill -TERM "$BRIDGE_PID"
rc=0
wait "$BRIDGE_PID" || rc=$?
BRIDGE_PID=
check "SIGTERM: exit 0" [ "$rc" = 0 ]
finish
