#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1 OR MIT
#
# Two dqbridge instances in one Kafka consumer group (issue 17, Kafka
# rebalance), against librdkafka's mock cluster (dqbridge/kafka_mock.c;
# not a Kafka broker, see dqbridge_kafka_test.sh) with 4 partitions, and
# fault_sink.py as the downstream.
#   A. downstream takes everything (no divert): k2 killed with -9 mid-run,
#      its partitions move to k1 after the session timeout, k2 restarted
#      and the group rebalances again.  The group's committed offsets are
#      watched all along (kafka_mock watch, every 200 ms): every offset
#      below a commit must have had its 200 at the downstream before the
#      broker showed the commit, or have been committed into the bridge's
#      dq before (its debug log; the ack rule's durable divert).
#   B. downstream refuses for 3 s: both bridges divert into their journals;
#      k1 killed with -9 while it holds messages; k2 takes its partitions;
#      k1 restarted recovers its journal and delivers what it held.
#   C. k2 leaves with SIGTERM while messages arrive: its drain releases
#      what it holds that is due (its diverts of the moment, when its
#      in-flight cap was reached) and exits holding nothing due; k1 takes
#      its partitions and everything is delivered.  The downstream holds
#      its answers until k2 has begun draining, so k2 holds due messages
#      at the signal by construction.
#   D. the broker refuses every offset commit (as the mock's coordinator
#      does while a group rebalances) while 300 messages arrive for k1,
#      alone in the group: k1 may deliver at most max_unacked of them
#      until commits are taken again (what it read and had not committed
#      is what a partition's next owner reads again), then all of them,
#      none twice (no partition moved).
# Judged on the test's records: every produced message delivered with an
# identical payload, group lag 0 at the end, duplicates within the bound
# derived below, SIGTERM exits 0.  TAP; last line "N passed, N failed".
#
# usage: dqbridge_rebalance_test.sh DQBRIDGE_BINARY KAFKA_MOCK_BINARY
set -euo pipefail
BIN=${1:?usage: dqbridge_rebalance_test.sh DQBRIDGE KAFKA_MOCK}
MOCK=${2:?usage: dqbridge_rebalance_test.sh DQBRIDGE KAFKA_MOCK}
HERE=$(cd "$(dirname "$0")" && pwd)
LIMIT=0 BURST=0 FAIL_ID=none PARTS=4 INFLIGHT=8 UNACKED=48
. "$HERE/dqbridge/lib.sh"
[ -x "$MOCK" ] || { echo "Bail out! no $MOCK"; exit 1; }
declare -A BPID MPORT
for i in 1 2; do MPORT[$i]=$(free_port); BPID[$i]=; done
WATCH=
stop_all() {	# without errexit: lib.sh's cleanup is not written for it
	local i
	set +e
	for i in 1 2; do [ -z "${BPID[$i]}" ] || kill -9 "${BPID[$i]}" 2> /dev/null || true; done
	[ -z "$WATCH" ] || kill -TERM "$WATCH" 2> /dev/null || true
	cleanup
}
# A TERM/INT/HUP (timeout, ^C) ends through it (lib.sh's traps):
# nothing left running.
trap stop_all EXIT
LOG=$T/recorder.log
MOCK_PID=

"$MOCK" serve in "$PARTS" "$T/bootstrap" > "$T/mock.log" 2>&1 &
MOCK_PID=$!
pids+=($!)
ctl ok
python3 "$HERE/dqbridge/fault_sink.py" "$NP" "$LOG" "$T/control" > "$T/sink.err" 2>&1 &
pids+=($!)
for _ in $(seq 50); do [ -s "$T/bootstrap" ] && curl -sf -o /dev/null "http://127.0.0.1:$NP/" -d x && break; sleep 0.1; done
: > "$LOG"
BOOT=$(cat "$T/bootstrap")

for i in 1 2; do
	cat > "$T/k$i.conf" <<-CONF
	source = kafka
	kafka_brokers = $BOOT
	kafka_topic = in
	kafka_group = bridge
	kafka_session_timeout_ms = 6000
	redis_consumer = k$i
	sink_url = http://127.0.0.1:$NP/ingest
	sink_timeout_ms = 3000
	max_inflight = $INFLIGHT
	max_unacked = $UNACKED
	max_attempts = 100
	backoff_base_ms = 200
	backoff_max_ms = 1000
	retry_after_max_s = 2
	rate_floor = 50
	rate_ceiling = 400
	dq_dir = $T/dq$i
	dq_slots = 4096
	dq_slot_size = 1024
	metrics_listen = 127.0.0.1:${MPORT[$i]}
	# Long enough for a leaving member to drain what it holds (C).
	drain_timeout_ms = 20000
	log_level = debug
	CONF
done
start_inst() {	# N
	"$BIN" -c "$T/k$1.conf" >> "$T/bridge$1.log" 2>&1 &
	BPID[$1]=$!
	for _ in $(seq 50); do
		curl -sf "http://127.0.0.1:${MPORT[$1]}/metrics" > /dev/null && return 0
		sleep 0.1
	done
	return 1
}
kill9_inst() { kill -9 "${BPID[$1]}"; wait "${BPID[$1]}" 2> /dev/null || true; BPID[$1]=; }
imetric() {
	local v
	v=$({ curl -sf "http://127.0.0.1:${MPORT[$1]}/metrics" || true; } |
		awk -v m="dqbridge_$2" '$1 == m {print $2}')
	echo "${v:-0}"
}
produce() {	# COUNT RATE: appends "id sha256" to produced.txt
	"$MOCK" produce "$BOOT" in "$1" "$2" "$T/p.hex"
	python3 - "$T/p.hex" >> "$T/produced.txt" <<-'PY'
	import hashlib, sys
	for line in open(sys.argv[1]):
	    mid, hx = line.split()
	    print(mid, hashlib.sha256(bytes.fromhex(hx)).hexdigest())
	PY
}
: > "$T/produced.txt"
for i in 1 2; do check "k$i starts" start_inst "$i"; done
sleep 4	# both join the group

# ---- A. no divert: kill -9, partitions move, offsets only after delivery ----
"$MOCK" watch "$BOOT" bridge in "$PARTS" 200 > "$T/commits.txt" 2> /dev/null &
WATCH=$!
produce 1500 150 &
prod=$!
sleep 3
kill9_inst 2
echo "# A: k2 killed with -9 after 3 s"
sleep 8
check "k2 restarts (the group rebalances again)" start_inst 2
wait "$prod"
check "A: every message delivered (within 60 s)" wait_delivered "$T/produced.txt" 60
sleep 1
kill -TERM "$WATCH"
wait "$WATCH" || true
WATCH=
python3 - "$T/commits.txt" "$LOG" "$T"/bridge[12].log > "$T/commit-check.txt" <<'PY'
import datetime, re, sys
ok = {}
for line in open(sys.argv[2]):
    t, key, sha, status = line.split()
    if status == "200" and key not in ok:
        ok[key] = float(t)
# Diverted: committed into dq (the bridges' debug lines), which the ack
# rule lets Kafka's offset pass once durable; they must have been put
# before the commit was seen, and be delivered in the end (checked below).
put = {}
for f in sys.argv[3:]:
    for line in open(f):
        m = re.match(r"ts=(\S+)Z level=debug event=committed id=(\S+)", line)
        if m and m.group(2) not in put:
            put[m.group(2)] = datetime.datetime.fromisoformat(m.group(1)).replace(
                tzinfo=datetime.timezone.utc).timestamp()
bad, samples, seen, parts, div = [], 0, set(), set(), set()
last, back = {}, []
for line in open(sys.argv[1]):
    t, p, c = line.split()
    t, c = float(t), int(c)
    samples += 1
    # A member that lost a partition must not commit it any more: a late
    # ack of what it had in hand would move its new owner's offset back.
    if c < last.get(p, -1):
        back.append("partition %s moved back from %d to %d at %.3f" % (p, last[p], c, t))
    last[p] = c
    if (p, c) in seen:
        continue
    seen.add((p, c))
    parts.add(p)
    for o in range(c):
        k = "in/%s/%d" % (p, o)
        if k in ok and ok[k] <= t:
            continue
        if k in put and put[k] <= t + 0.001:
            div.add(k)
            continue
        bad.append("%s committed at %.3f, its 200 %s" % (k, t, ok.get(k, "never")))
print("samples=%d distinct_commits=%d partitions=%d diverted_first=%d moved_back=%d early=%d" %
      (samples, len(seen), len(parts), len(div), len(back), len(bad)))
for b in bad[:5]:
    print("early: " + b)
for b in back[:5]:
    print("back: " + b)
PY
sed 's/^/# /' "$T/commit-check.txt"
check "A: commits seen on all $PARTS partitions while watching" grep -q "partitions=$PARTS " "$T/commit-check.txt"
check "A: no offset committed before its 200 ($(grep -o 'early=[0-9]*' "$T/commit-check.txt"))" \
	grep -q ' early=0$' "$T/commit-check.txt"
check "A: no committed offset moved back ($(grep -o 'moved_back=[0-9]*' "$T/commit-check.txt"))" \
	grep -q ' moved_back=0 ' "$T/commit-check.txt"

# ---- B. divert, kill -9 of a member holding messages ------------------------
ctl status 503 1
produce 600 200 &
prod=$!
held=0
for _ in $(seq 100); do
	held=$(imetric 1 held)
	[ "$held" -gt 10 ] && break
	sleep 0.05
done
kill9_inst 1
echo "# B: k1 killed with -9 holding $held messages in its journal"
check "B: k1 held messages in its journal at the kill ($held > 10)" [ "$held" -gt 10 ]
wait "$prod"
ctl ok
sleep 8	# k1's partitions move to k2 (session timeout 6 s)
check "B: k1 restarts on its journal" start_inst 1
for _ in $(seq 100); do
	[ "$(grep -c 'event=started ' "$T/bridge1.log")" -ge 2 ] && break
	sleep 0.1
done
recovered=$(sed -n 's/.*event=dq_open .*recovered=\([0-9]*\).*/\1/p' "$T/bridge1.log" | tail -1)
check "B: k1's journal came back (recovered=${recovered:-?})" [ "${recovered:-0}" -gt 0 ]
check "B: every message delivered (within 60 s)" wait_delivered "$T/produced.txt" 60

# ---- C. a member leaves ------------------------------------------------------
# The downstream holds every answer: once a member has max_inflight
# requests out, what it reads next is diverted into its dq, due at once.
# k2 is signalled once it holds such messages (whenever the group's
# rebalances let it read), and the answers go only after it has begun
# draining: it holds due messages at SIGTERM by construction.  The answers
# are let go well within sink_timeout_ms (3 s) of k2's first request:
# k2 diverts from its 9th message on, and the test reads its held gauge
# every 50 ms.
ctl hold
produce 300 100 &
prod=$!
held2=0
for _ in $(seq 600); do	# up to 30 s for the group to settle
	held2=$(imetric 2 held)
	[ "$held2" -gt 0 ] && break
	sleep 0.05
done
kill -TERM "${BPID[2]}"
for _ in $(seq 100); do grep -q 'event=draining ' "$T/bridge2.log" && break; sleep 0.05; done
ctl ok
rc=0
wait "${BPID[2]}" || rc=$?
BPID[2]=
check "C: k2 leaves with SIGTERM mid-run, exit 0 (got $rc)" [ "$rc" -eq 0 ]
# What k2 held at the signal (its diverts of the moment, all due: the
# downstream answers 200 once let go) is delivered by its drain, not
# left in its journal for a restart that a member leaving the group may
# never have.
term_held=$(sed -n 's/.*event=draining .*held=\([0-9]*\).*/\1/p' "$T/bridge2.log" | tail -1)
stop_held=$(sed -n 's/.*event=stopped .*held=\([0-9]*\).*/\1/p' "$T/bridge2.log" | tail -1)
check "C: k2 held due messages at SIGTERM (${term_held:-?} > 0)" [ "${term_held:-0}" -gt 0 ]
check "C: k2's drain released what was due (held ${term_held:-?} at SIGTERM, ${stop_held:-?} at exit)" \
	[ "${stop_held:-1}" = 0 ]
wait "$prod"
check "C: every message delivered (within 60 s)" wait_delivered "$T/produced.txt" 60
lag_zero() {
	local end=$((SECONDS + 30)) l=
	while [ $SECONDS -lt $end ]; do
		l=$("$MOCK" lag "$BOOT" bridge in "$PARTS" 2> /dev/null || true)
		[ "$l" = 0 ] && return 0
		sleep 1
	done
	echo "# lag: ${l:-?}"
	return 1
}
check "group offsets committed to the end of every partition (lag 0)" lag_zero

# ---- D. commits refused: read-ahead stops at max_unacked ---------------------
kill -USR1 "$MOCK_PID"
for _ in $(seq 100); do grep -q '^commits refused' "$T/mock.log" && break; sleep 0.05; done
mv "$T/produced.txt" "$T/produced-abc.txt"
produce 300 150	# 2 s
sleep 3		# k1 reads and delivers what it may (400/s, 8 in flight)
mv "$T/produced.txt" "$T/produced-d.txt"
cat "$T/produced-abc.txt" "$T/produced-d.txt" > "$T/produced.txt"
d_sent=$(python3 - "$T/produced-d.txt" "$LOG" <<'PY'
import sys
want = {l.split()[0] for l in open(sys.argv[1])}
print(len({l.split()[1] for l in open(sys.argv[2]) if l.split()[1] in want}))
PY
)
kill -USR2 "$MOCK_PID"
# Read-ahead counts until the broker took the commit: what a member read
# and did not commit is what its partitions' next owner reads again.
check "D: while commits were refused k1 sent 1..$UNACKED of the 300 (got $d_sent)" \
	[ "$d_sent" -ge 1 -a "$d_sent" -le "$UNACKED" ]
check "D: every message delivered once commits are taken (within 60 s)" \
	wait_delivered "$T/produced-d.txt" 60
check "D: group offsets committed to the end again (lag 0)" lag_zero
python3 "$HERE/dqbridge/fault_tools.py" judge "$T/produced-d.txt" "$LOG" > "$T/figures-d.txt"
# k1 alone: no partition moved, so nothing may come twice (a rebalance of
# k1's own partitions gives them back to it, and what it settled since
# its last accepted commit is acked again, not sent again).
check "D: none delivered twice ($(sed -n 's/^duplicates=//p' "$T/figures-d.txt"))" \
	grep -qx 'duplicates=0' "$T/figures-d.txt"

python3 "$HERE/dqbridge/fault_tools.py" judge "$T/produced.txt" "$LOG" > "$T/figures.txt"
sed 's/^/# /' "$T/figures.txt"
fig() { sed -n "s/^$1=//p" "$T/figures.txt"; }
check "nothing lost: $(fig produced) produced, missing $(fig missing)" [ "$(fig missing)" = 0 ]
check "payloads identical (sha256 mismatches: $(fig bad_payload))" [ "$(fig bad_payload)" = 0 ]
# The bound, from the design (docs/dqbridge.md, Keys, attempts,
# duplicates):
#  - a kill -9 costs at most max_inflight releases from dq whose 200 came
#    and whose finish did not reach the journal (sent again after the
#    restart); its source messages are counted in the next term;
#  - a partition that moves costs at most what its old owner had read and
#    not committed: the read-ahead bound, max_unacked for all of the old
#    owner's partitions together (acked or not: commits the broker refused
#    while the group rebalanced count too);
#  - a partition that comes back to the member that had it (the eager
#    protocol revokes all of them at every rebalance) costs nothing: what
#    the member settled since its last accepted commit is acked again when
#    read again, and what it still has in hand is dropped as in hand.
# The test moves partitions 5 times (A: k2's to k1, then some of k1's back
# to the restarted k2; B: k1's to k2, some back to k1; C: k2's to k1 as it
# leaves) and kills twice: 2 x max_inflight + 5 x max_unacked.  D adds
# none (checked above).
bound=$((2 * INFLIGHT + 5 * UNACKED))
check "duplicates within 2 x $INFLIGHT + 5 x $UNACKED = $bound: $(fig duplicates)" \
	[ "$(fig duplicates)" -le "$bound" ]
kill -TERM "${BPID[1]}"
rc=0
wait "${BPID[1]}" || rc=$?
BPID[1]=
check "k1: SIGTERM, exit 0 (got $rc)" [ "$rc" -eq 0 ]
finish
