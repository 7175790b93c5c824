#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1 OR MIT
#
# A bridge under load (issue 35, item 2), SYSTEM one of
#   zset_bridge  the seeds' design 1 as a bridge (bench/peers/zset_bridge.c:
#                Redis stream -> HTTP, a refused message ZADDed into a
#                sorted set scored by its Retry-After due time, a poller
#                every 200 ms doing ZRANGEBYSCORE + ZREM and POSTing again)
#   dqbridge     user/build/dqbridge with the scenario's settings
#                (max_inflight 32, rate 50..5000, +1000/s, lowered by the
#                refused share, at most x0.7 per 100 ms,
#                burst_ms 15, embedded engine)
# so that both run the same load, one after the other, against the same
# downstream as dqbridge's scenario: nginx limit_req (LIMIT r/s, burst 50,
# 429 with Retry-After: 1) in front of scen_recorder. scen_producer offers
# RATE msg/s for OFFER_S s; the bridge is killed with -9 at KILL_AT s and
# restarted at once under the same consumer name (dqbridge: on the same
# journal); the run ends when every offered message was delivered, or
# when nothing was delivered for 5 s with nothing held (the set empty /
# dq empty) and nothing pending (what was lost never comes), or at the
# deadline.
#
# Figures, from the run's own records (the producer's list, the
# recorder's log, nginx's access log, Redis's INFO commandstats, /proc),
# one SYSTEM_KEY=VALUE line each, on stdout (and into OUT when given):
#   _cpu_us_per_msg      the bridge's CPU (both processes: the run time
#                        of their threads, schedstat ns) per message
#                        delivered
#   _redis_cpu_us_per_msg, _with_redis_cpu_us_per_msg
#                        redis-server's CPU (schedstat of its threads,
#                        the producer's XADDs included) per message
#                        delivered, and the bridge's plus it: the peer
#                        keeps its held messages there
#   _redis_cmds_per_s    the bridge's Redis commands (XREADGROUP, XACK,
#                        XAUTOCLAIM, XGROUP, ZADD, ZRANGEBYSCORE, ZREM:
#                        INFO commandstats delta) per second of the run
#   _lateness_p50_s, _p99_s, _max_s, _min_s, _early
#                        a retry's start at nginx minus (the 429 nginx
#                        answered + Retry-After 1 s), per 429 followed by
#                        a request for the same id; early: < -5 ms (a
#                        message in flight at the kill -9 is redelivered
#                        at once: early by construction)
#   _lost                offered ids never delivered
#   _duplicates          extra 200s for an id
#   and the setup (rate, limit, offered, delivered, requests, 429s, run_s)
#   _phase_P_*           per phase P: start1 (exec to the metrics
#                        answering), run1 (to the kill -9), start2 (the
#                        restart's exec to its metrics: recovery), offer2
#                        (to the producer's end), drain2 (to the end): its
#                        s, cpu_ms, delivered and requests (nginx's log in
#                        that window), cpu_us_per_msg, wakeups_per_s (the
#                        threads' timeslices), threads_ms (CPU per
#                        thread, comm.tid), and with PEER_SYSCALLS=1
#                        syscalls and syscalls_top (perf trace -s)
#
# usage: bridge_peer.sh [--out FILE] SYSTEM BIN SCEN_PRODUCER SCEN_RECORDER
# env: PEER_RATE (1000), PEER_OFFER_S (10), PEER_LIMIT (500),
#      PEER_KILL_AT (6), PEER_CAP (max in flight, 32),
#      PEER_SET ("KEY=VALUE ...": dqbridge options after the ones below,
#      for an A/B of one option on one binary, e.g. dq_retire_sync_ms=10)
set -euo pipefail
OUTF=
if [ "${1:-}" = --out ]; then OUTF=$2; shift 2; fi
[ $# -eq 4 ] || { echo "usage: bridge_peer.sh [--out FILE] zset_bridge|dqbridge BIN SCEN_PRODUCER SCEN_RECORDER" >&2; exit 1; }
SYSTEM=$1 PEER=$2 PRODUCER=$3 RECORDER=$4
case $SYSTEM in zset_bridge|dqbridge) ;; *) echo "bridge_peer.sh: unknown system $SYSTEM" >&2; exit 1 ;; esac
RATE=${PEER_RATE:-1000} OFFER_S=${PEER_OFFER_S:-10} LIMIT=${PEER_LIMIT:-500}
KILL_AT=${PEER_KILL_AT:-6} CAP=${PEER_CAP:-32} BURST=50
for b in "$PEER" "$PRODUCER" "$RECORDER"; do
	[ -x "$b" ] || { echo "bridge_peer.sh: no $b" >&2; exit 1; }
done
for tool in redis-server redis-cli; do
	command -v "$tool" > /dev/null || { echo "bridge_peer.sh: $tool not installed" >&2; exit 1; }
done

# The downstream, its records and the cleanup are dqbridge's tests' own
# (user/tests/dqbridge/lib.sh): nginx limit_req at LIMIT r/s, burst
# BURST, 429 with Retry-After 1, in front of scen_recorder (a C app that
# holds the rate recorder.py does not), the access log buffered.
BIN=$PEER HERE=$(cd "$(dirname "$0")/../user/tests" && pwd)
DQB_RECORDER=$RECORDER DQB_RECORDER_ARG=1000 DQB_NGX_KEEPALIVE=64
DQB_NGX_LOG_BUF="buffer=64k flush=200ms"
. "$HERE/dqbridge/lib.sh"
# lib.sh's cleanup is not written for errexit: it runs without it (a
# TERM/INT/HUP ends through it: lib.sh's traps).
trap 'set +e; cleanup' EXIT
RP=$(free_port)
rcli() { timeout 10 redis-cli -p "$RP" "$@"; }

redis-server --port "$RP" --bind 127.0.0.1 --save "" --appendonly no --dir "$T" \
	--logfile "$T/redis.log" --daemonize yes --pidfile "$T/redis.pid" > /dev/null
for _ in $(seq 50); do rcli ping > /dev/null 2>&1 && break; sleep 0.1; done
pids+=("$(cat "$T/redis.pid")")	# daemonized: killed by pid in cleanup
start_downstream

cmdstats() {	# the peer's commands, summed: name calls
	rcli INFO commandstats | tr -d '\r' |
		sed -n 's/^cmdstat_\(xreadgroup\|xack\|xautoclaim\|zadd\|zrangebyscore\|zrem\|xgroup\):calls=\([0-9]*\).*/\1 \2/p'
}
# redis-server's CPU (all its threads' run time, ns): the source both
# bridges read, and the peer's sorted set too.  printf, not print: mawk
# prints a sum past 2^31 as 2.19608e+09, which the figures' reader refused.
redis_ns() {
	cat /proc/"$(cat "$T/redis.pid")"/task/*/schedstat 2> /dev/null |
		awk '{ s += $1 } END { printf "%.0f\n", s }'
}
cat > "$T/dqbridge.conf" <<CONF
source = redis
redis_port = $RP
redis_stream = in
redis_group = peer
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
dq_backend = user
dq_slots = 65536
dq_slot_size = 1024
metrics_listen = 127.0.0.1:$MP
drain_timeout_ms = 2000
CONF
for kv in ${PEER_SET:-}; do echo "${kv%%=*} = ${kv#*=}" >> "$T/dqbridge.conf"; done
# The bridge's CPU: the run time of each of its threads in ns
# (/proc/PID/task/*/schedstat, as bench/bridge.py reads it; utime + stime
# count 10 ms ticks, +-5 % of a phase).  snap NAME writes, at a phase's
# edge, the wall time and each thread's "tid comm run_ns timeslices"
# (timeslices: times it was put on a CPU, so its wake-ups) into
# $T/snap.NAME; the phases' figures are the differences.
snap() {
	local pid=$BRIDGE_PID f=$T/snap.$1 t
	{
		echo "time $(date +%s.%N) $pid"
		for t in /proc/"$pid"/task/*; do
			[ -r "$t/schedstat" ] || continue
			echo "${t##*/} $(tr ' ' _ < "$t/comm" 2> /dev/null) $(cat "$t/schedstat" 2> /dev/null)"
		done
	} > "$f" 2> /dev/null || true
}
# PEER_SYSCALLS=1: each phase's system calls by name (perf trace -s
# attached to the bridge at the phase's start, so the first ms after an
# exec are not in start-up's; it slows the bridge: a diagnostic run, its
# CPU figures are not the bench's).
TRACER=
trace_phase() {
	[ "${PEER_SYSCALLS:-0}" = 1 ] || return 0
	if [ -n "$TRACER" ]; then
		kill -INT "$TRACER" 2> /dev/null || true
		wait "$TRACER" 2> /dev/null || true
		TRACER=
	fi
	[ -n "$1" ] || return 0
	perf trace -s -p "$BRIDGE_PID" -o "$T/sys.$1" 2> /dev/null &
	TRACER=$!
	sleep 0.2	# attached
}
start_peer() {	# $1: the phase's name
	if [ "$SYSTEM" = dqbridge ]; then
		"$PEER" -c "$T/dqbridge.conf" 2>> "$T/peer.err" &
	else
		"$PEER" "$RP" in peer c1 "http://127.0.0.1:$NP/ingest" in:retry "$CAP" 2>> "$T/peer.err" &
	fi
	BRIDGE_PID=$!
	echo "$BRIDGE_PID" > "$T/bridge.pid"
	trace_phase "start$1"
	if [ "$SYSTEM" = dqbridge ]; then
		for _ in $(seq 200); do
			curl -sf -m 1 -o /dev/null "http://127.0.0.1:$MP/metrics" && break
			sleep 0.02
		done
	fi
	snap "up$1"
	trace_phase "run$1"
}
held() {	# what the bridge holds: the set, or dq
	if [ "$SYSTEM" = dqbridge ]; then
		curl -sf -m 1 "http://127.0.0.1:$MP/metrics" | awk '$1 == "dqbridge_held" {print $2}'
	else
		rcli ZCARD in:retry
	fi
}

# The per-second series (one process, never a fork per sample): the
# bridge's CPU (schedstat ns, all threads) and timeslices each second,
# into $T/series.txt, for the phases' shape.
python3 - "$T" <<'PY' &
import os, sys, time
d = sys.argv[1]
out = open(d + "/series.txt", "w")
while not os.path.exists(d + "/series.stop"):
    time.sleep(1 - time.time() % 1)
    try:
        pid = int(open(d + "/bridge.pid").read())
        ns = sl = 0
        for t in os.listdir("/proc/%d/task" % pid):
            with open("/proc/%d/task/%s/schedstat" % (pid, t)) as f:
                v = f.read().split()
            ns += int(v[0])
            sl += int(v[2])
    except (OSError, ValueError, IndexError):
        continue
    out.write("%.3f %d %d %d\n" % (time.time(), pid, ns, sl))
    out.flush()
PY
SAMPLER=$!
pids+=("$SAMPLER")
cmdstats > "$T/cmd0.txt"
redis_ns > "$T/rcpu0.txt"
t_start=$(date +%s.%N)
"$PRODUCER" "$RP" in "$RATE" "$OFFER_S" "$T/produced.txt" 2> "$T/producer.err" &
PROD_PID=$!
start_peer 1
sleep "$KILL_AT"
snap kill1
trace_phase ""
kill -9 "$BRIDGE_PID"
wait "$BRIDGE_PID" 2> /dev/null || true
t_kill=$(date +%s.%N)
start_peer 2
wait "$PROD_PID"
snap offered2
trace_phase drain2
offered=$(wc -l < "$T/produced.txt")
deadline=$((SECONDS + OFFER_S + offered / (LIMIT / 2) + 60))
last_del=-1 still=0
while [ "$SECONDS" -lt "$deadline" ]; do
	sleep 1
	del=$(cut -d' ' -f2 "$T/recorder.log" | sort -u | wc -l)
	[ "$del" -ge "$offered" ] && break
	if [ "$del" = "$last_del" ]; then still=$((still + 1)); else still=0; fi
	last_del=$del
	if [ "$still" -ge 5 ] && [ "$(held)" = 0 ] &&
		[ "$(rcli XPENDING in peer | head -1)" = 0 ]; then
		break
	fi
done
sleep 0.5	# nginx's access log: flush=200ms
snap end2
trace_phase ""
touch "$T/series.stop"
t_end=$(date +%s.%N)
cmdstats > "$T/cmd1.txt"
redis_ns > "$T/rcpu1.txt"
kill -TERM "$BRIDGE_PID"
wait "$BRIDGE_PID" 2> /dev/null || true
BRIDGE_PID=
wait "$SAMPLER" 2> /dev/null || true

python3 - "$T" "$t_start" "$t_end" "$t_kill" "$RATE" "$LIMIT" "$OFFER_S" "$SYSTEM" <<'PY' | tee "$T/figures.txt"
import collections, glob, os, sys
d, t0, t1, tk, rate, limit, offer_s, system = sys.argv[1:]
t0, t1, tk = float(t0), float(t1), float(tk)
def snap(name):
	"""A snap: (time, {tid: (comm, run_ns, timeslices)})."""
	th = {}
	with open(d + "/snap." + name) as f:
		t = float(f.readline().split()[1])
		for l in f:
			p = l.split()
			if len(p) >= 5:
				th[p[0]] = (p[1], int(p[2]), int(p[4]))
	return t, th
S = {n: snap(n) for n in ("up1", "kill1", "up2", "offered2", "end2")}
Z = (None, {})
# The phases: a process's start (exec to its metrics answering; the peer
# has none: exec to spawned), and then its life in three.
phases = [("start1", (t0, {}), S["up1"]), ("run1", S["up1"], S["kill1"]),
	  ("start2", (tk, {}), S["up2"]), ("offer2", S["up2"], S["offered2"]),
	  ("drain2", S["offered2"], S["end2"])]
def delta(a, b):
	"""CPU ns, timeslices, per-thread ns by comm, between two snaps."""
	ns = sl = 0
	per = collections.Counter()
	for tid, (comm, r, n) in b[1].items():
		ra, na = a[1].get(tid, (comm, 0, 0))[1:]
		ns += r - ra
		sl += n - na
		per["%s.%s" % (comm, tid)] += r - ra
	return ns, sl, per
c1 = delta((0, {}), S["kill1"])[0] / 1e9
c2 = delta((0, {}), S["end2"])[0] / 1e9
produced = [l.split()[0] for l in open(d + "/produced.txt")]
got = collections.Counter(l.split()[1] for l in open(d + "/recorder.log") if len(l.split()) >= 4)
delivered = sum(1 for i in produced if got[i])
lost = sum(1 for i in produced if not got[i])
dups = sum(n - 1 for n in got.values() if n > 1)
def cmds(p):
	return {l.split()[0]: int(l.split()[1]) for l in open(p)}
a, b = cmds(d + "/cmd0.txt"), cmds(d + "/cmd1.txt")
ncmd = sum(b[k] - a.get(k, 0) for k in b)
rcpu = (int(open(d + "/rcpu1.txt").read()) - int(open(d + "/rcpu0.txt").read())) / 1e9
per = collections.defaultdict(list)
reqlog = []
n429 = nreq = 0
for l in open(d + "/nginx-access.log"):
	p = l.split()
	if len(p) != 4:
		continue
	nreq += 1
	n429 += p[1] == "429"
	per[p[2]].append((float(p[0]) - float(p[3]), float(p[0]), p[1]))
	reqlog.append((float(p[0]), p[1]))
late = []
for reqs in per.values():
	reqs.sort()
	for k in range(len(reqs) - 1):
		if reqs[k][2] == "429":
			late.append(reqs[k + 1][0] - (reqs[k][1] + 1.0))
late.sort()
def q(x):
	return "%.3f" % late[min(len(late) - 1, int(x * len(late)))] if late else "-"
run = t1 - t0
fig = [
	("system", system), ("rate", rate), ("limit", limit), ("offer_s", offer_s),
	("kill_at_s", "%.1f" % (tk - t0)), ("offered", len(produced)), ("delivered", delivered),
	("run_s", "%.1f" % run), ("requests", nreq), ("http_429", n429),
	("cpu_s", "%.2f" % (c1 + c2)),
	("cpu_us_per_msg", "%.1f" % (1e6 * (c1 + c2) / max(1, delivered))),
	("redis_cmds", ncmd), ("redis_cmds_per_s", "%.0f" % (ncmd / run)),
	("redis_cpu_us_per_msg", "%.1f" % (1e6 * rcpu / max(1, delivered))),
	("with_redis_cpu_us_per_msg", "%.1f" % (1e6 * (c1 + c2 + rcpu) / max(1, delivered))),
	("retries_after_429", len(late)),
	("lateness_p50_s", q(0.5)), ("lateness_p99_s", q(0.99)),
	("lateness_max_s", "%.3f" % late[-1] if late else "-"),
	("lateness_min_s", "%.3f" % late[0] if late else "-"),
	("early", sum(1 for x in late if x < -0.005)),
	("lost", lost), ("duplicates", dups),
]
def syscalls(name):
	"""perf trace -s's summary, summed over threads: {syscall: calls}."""
	calls = collections.Counter()
	try:
		for l in open(d + "/sys." + name):
			p = l.split()
			if len(p) >= 3 and p[1].isdigit() and p[2].isdigit():
				calls[p[0]] += int(p[1])
	except OSError:
		pass
	return calls
for name, a, b in phases:
	ns, sl, thr = delta(a, b)
	ok = sum(1 for t, st in reqlog if a[0] <= t < b[0] and st == "200")
	nr = sum(1 for t, st in reqlog if a[0] <= t < b[0])
	dur = b[0] - a[0]
	fig += [("phase_%s_s" % name, "%.2f" % dur), ("phase_%s_cpu_ms" % name, "%.1f" % (ns / 1e6)),
		("phase_%s_delivered" % name, ok), ("phase_%s_requests" % name, nr),
		("phase_%s_cpu_us_per_msg" % name, "%.1f" % (ns / 1e3 / ok) if ok else "-"),
		("phase_%s_wakeups_per_s" % name, "%.0f" % (sl / dur) if dur > 0 else "-"),
		("phase_%s_threads_ms" % name, ",".join("%s:%.1f" % (c, v / 1e6) for c, v in thr.most_common()))]
	sc = syscalls(name)
	if sc:
		fig += [("phase_%s_syscalls" % name, sum(sc.values())),
			("phase_%s_syscalls_top" % name, ",".join("%s:%d" % kv for kv in sc.most_common(8)))]
for k, v in fig:
	print("%s_%s=%s" % (system, k, v))
PY
[ -z "$OUTF" ] || cp "$T/figures.txt" "$OUTF"
# PEER_KEEP=DIR: the run's phase records (snaps, system calls, the
# per-second series, the bridge's log) kept there.
if [ -n "${PEER_KEEP:-}" ]; then
	mkdir -p "$PEER_KEEP"
	cp "$T"/snap.* "$T"/series.txt "$T"/figures.txt "$T"/peer.err "$PEER_KEEP"/ 2> /dev/null || true
	cp "$T"/sys.* "$PEER_KEEP"/ 2> /dev/null || true
fi
