#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1 OR MIT
#
# example_test.sh EXAMPLE_BINARY: the Go example end to end on loopback,
# against a real redis-server and downstream.py (which refuses in phases
# and records every request).  300 stream entries, the example killed -9
# once while the downstream pushes back and dq holds entries, restarted on
# its journal.  Judged on what this test and the downstream recorded:
# every id XADDed is accepted (200) by the downstream, with its body; no
# id it did not XADD; at most 2 ids twice (one in flight per goroutine at
# the kill); never retried before the Retry-After (or the -backoff) that
# refused it; and the divert and the recovery were exercised.  ~5 s.
# Ends with "N passed, N failed".
set -u
ex=$(readlink -f "$1")
here=$(cd "$(dirname "$0")" && pwd)
py=/usr/bin/python3
w=$(mktemp -d /tmp/dqgo-example.XXXXXX)
pids=()
cleanup() {
	local p
	for p in "${pids[@]}"; do kill -9 "$p" 2> /dev/null; done
	wait 2> /dev/null
	[ -n "${KEEP:-}" ] || rm -rf "$w"
}
trap cleanup EXIT
fail() { echo "example_test: $*"; echo "0 passed, 1 failed"; exit 1; }
mono() { $py -c 'import time; print(time.monotonic_ns())'; }

port=$($py "$here/../../../user/tests/free_port.py")
redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no > "$w/redis.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do
	[ "$(redis-cli -p "$port" ping 2> /dev/null)" = PONG ] && break
	sleep 0.1
done
[ "$(redis-cli -p "$port" ping 2> /dev/null)" = PONG ] || fail "redis-server did not start"
$py "$here/downstream.py" "$w/port" "$w/down.log" 40 &
pids+=($!)
for _ in $(seq 100); do [ -s "$w/port" ] && break; sleep 0.1; done
[ -s "$w/port" ] || fail "downstream did not start"
dport=$(cat "$w/port")

start() {
	"$ex" -redis "127.0.0.1:$port" -stream jobs -downstream "http://127.0.0.1:$dport/" \
		-journal "$w/journal" -slots 1024 -slot-size 512 -backoff 300ms 2>> "$w/example.log" &
	epid=$!
	pids+=($epid)
}
# add FIRST LAST: XADD entries FIRST..LAST, "ID BODY" into sent.
add() {
	local i
	for i in $(seq "$1" "$2"); do
		echo "XADD jobs * body m$i-$((i * 7919 % 10007))-$RANDOM$RANDOM"
	done > "$w/cmds"
	awk '{print $5}' "$w/cmds" > "$w/bodies"
	redis-cli -p "$port" < "$w/cmds" > "$w/ids" || fail "XADD failed"
	paste -d' ' "$w/ids" "$w/bodies" >> "$w/sent"
}
refused() { awk '$3 != 200' "$w/down.log" 2> /dev/null | wc -l; }

start
add 1 150
# Kill -9 while the downstream refuses (dq holds the refused entries).
for _ in $(seq 200); do [ "$(refused)" -ge 3 ] && break; sleep 0.05; done
[ "$(refused)" -ge 3 ] || fail "the downstream never refused ($(wc -l < "$w/down.log") requests)"
kill -9 "$epid"
wait "$epid" 2> /dev/null
kill_ns=$(mono)
start
add 151 300
sent=$(wc -l < "$w/sent")
[ "$sent" = 300 ] || fail "$sent entries added, not 300"
# Until every id was accepted, at most 40 s.
for _ in $(seq 400); do
	left=$(awk 'NR == FNR { if ($3 == 200) ok[$2] = 1; next } !($1 in ok)' \
		"$w/down.log" "$w/sent" | wc -l)
	[ "$left" = 0 ] && break
	sleep 0.1
done
kill -TERM "$epid"
wait "$epid"
echo "example: exit $? after SIGTERM; log:"
tail -n 5 "$w/example.log"

$py - "$w/sent" "$w/down.log" "$kill_ns" <<'PY'
import sys
from collections import defaultdict
sent = {}
for l in open(sys.argv[1]):
    i, b = l.split()
    sent[i] = b.encode().hex()
kill_ns = int(sys.argv[3])
reqs = defaultdict(list)
for l in open(sys.argv[2]):
    t, i, st, retry, body = l.split()
    reqs[i].append((int(t), int(st), int(retry), body))
ok = fail = 0
def check(cond, what):
    global ok, fail
    print(("ok     " if cond else "FAILED ") + what)
    if cond: ok += 1
    else: fail += 1
lost = [i for i in sent if not any(r[1] == 200 for r in reqs[i])]
check(not lost, "none lost: %d of %d ids accepted %s" % (len(sent) - len(lost), len(sent), lost[:5]))
unknown = [i for i in reqs if i not in sent]
check(not unknown, "nothing invented %s" % unknown[:5])
bad = [i for i in sent if any(r[3] != sent[i] for r in reqs[i])]
check(not bad, "bodies intact %s" % bad[:5])
dups = [i for i in sent if sum(r[1] == 200 for r in reqs[i]) > 1]
check(len(dups) <= 2, "%d ids accepted twice (<= 2: one per goroutine at the kill) %s" % (len(dups), dups))
early = []
diverted = recovered = 0
for i, rs in reqs.items():
    rs.sort()
    for a, b in zip(rs, rs[1:]):
        wait = a[2] * 10**9 if a[2] >= 0 else 300 * 10**6
        if a[1] != 200 and b[0] < a[0] + wait:
            early.append("%s %.3f s after its %d" % (i, (b[0] - a[0]) / 1e9, a[1]))
        if a[1] != 200 and b[1] == 200:
            diverted += 1
            if a[0] < kill_ns < b[0]:
                recovered += 1
check(not early, "never before the Retry-After %s" % early[:5])
check(diverted > 0, "%d refused ids delivered later through dq" % diverted)
check(recovered > 0, "%d ids refused before the kill -9, delivered after it" % recovered)
print("%d requests, %d passed, %d failed" % (sum(map(len, reqs.values())), ok, fail))
print("%d passed, %d failed" % (ok, fail))
sys.exit(1 if fail else 0)
PY
