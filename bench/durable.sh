#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1 OR MIT
#
# Durable delayed messages on one disk: dq's journal (libdqshim's embedded
# engine, natively, DQ_BACKEND_USER) against the durable designs it
# replaces, each a real server on 127.0.0.1 started here:
#
#   dq-batch          durability batch (group commit, default 2 ms window)
#   dq-always         durability always (dq_flush() returns once durable)
#   redis-everysec    a sorted set scored by due time (ZADD), AOF with
#                     appendfsync everysec
#   redis-always      the same, appendfsync always
#   beanstalkd-50ms   put with a delay, binlog (-b), default fsync (at most
#                     every 50 ms)
#   beanstalkd-f0     the same with -f 0 (fsync at every binlog write)
#
# All of them write under one directory on one filesystem (DQ_DURABLE_DIR,
# default /var/tmp), 500-byte messages, one producer, batches (dq) and
# pipelines (peers) of DQ_DURABLE_BATCH (256) messages.  First the disk's
# own limits in the same run (fdatasync latency, sequential bandwidth),
# then, interleaved repeat by repeat so that drift hits every system alike:
#
#   max       as fast as each goes (closed loop), DQ_DURABLE_SECONDS each
#   equal     the same offered load for all (DQ_DURABLE_EQUAL_RATE msg/s)
#   seed      dq-batch at 100k msg/s x 500 B (~55 MB/s of journal)
#   consume   dq-batch at 100k msg/s offered, delays 0..100 ms, a consumer
#             releasing and finishing every message while the producer
#             writes (retire records; segments reclaimed)
#   crash     a producer SIGKILLed mid-stream; every message it had seen
#             durable must come back, once, intact
#   recovery  1 M and 4 M held messages (due 1..2 h ahead): a fresh
#             process times dq_queue_open_durable(), page cache warm and
#             cold (posix_fadvise DONTNEED on the journal's files)
#   idle      wake-ups per second of an idle durable queue
#
# Medians of DQ_DURABLE_REPEATS (3) repeats.  The table goes to stdout and,
# with --write, to docs/records/bench/durable.txt with date, machine, kernel and
# commit.  Exits 1 when a run fails or a correctness check does (a message
# acknowledged as durable then missing, duplicated or corrupt; recovery
# finding fewer messages than were durable; a peer holding fewer than it
# acknowledged); the file is still written, saying so.
#
# Usage: bench/durable.sh [--write]  (after make -C bench durable-bench;
# make -C bench durable does both)
set -euo pipefail
cd "$(dirname "$0")/.."

BIN=${DQ_DURABLE_BIN:-bench/build/durable-bench}
SECS=${DQ_DURABLE_SECONDS:-3}
REPEATS=${DQ_DURABLE_REPEATS:-3}
BATCH=${DQ_DURABLE_BATCH:-256}
EQUAL_RATE=${DQ_DURABLE_EQUAL_RATE:-20000}
SEED_RATE=${DQ_DURABLE_SEED_RATE:-100000}
REC_NS=${DQ_DURABLE_REC_N:-1000000 4000000}
BASE=${DQ_DURABLE_DIR:-/var/tmp}
OUT=docs/records/bench/durable.txt
SYSTEMS=(dq-batch dq-always redis-everysec redis-always beanstalkd-50ms beanstalkd-f0)

[ -x "$BIN" ] || { echo "durable: $BIN missing (make -C bench durable-bench)" >&2; exit 1; }
command -v redis-server > /dev/null || { echo "durable: redis-server missing (make deps)" >&2; exit 1; }
command -v beanstalkd > /dev/null || { echo "durable: beanstalkd missing (make deps)" >&2; exit 1; }
command -v python3 > /dev/null || { echo "durable: python3 missing" >&2; exit 1; }

mkdir -p "$BASE"
WORK=$(mktemp -d "$BASE/dq-durable.XXXXXX")
RES=$WORK/results
LOG=$WORK/log
FAILS=$WORK/failures
: > "$RES"
: > "$FAILS"
SERVER_PID=
T_START=$(date +%s)

cleanup() {
	stop_server
	rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

log() { echo "durable: $*" >&2; }

fail() {
	log "FAILED: $*"
	echo "$*" >> "$FAILS"
}

# run LABEL TIMEOUT ARGS...: one driver run; its result line goes to $RES
# as "label=LABEL ..."; a violation (exit 3) or a failure is recorded.
run() {
	local label=$1 to=$2 rc=0 out=$WORK/run.out
	shift 2
	timeout -k 5 "$to" "$BIN" "$@" > "$out" 2>> "$LOG" || rc=$?
	grep '^result ' "$out" | sed "s/^result /label=$label /" >> "$RES" || true
	case $rc in
	0) ;;
	3) fail "$label: correctness violation ($(grep -h VIOLATION "$LOG" | tail -1))" ;;
	124|137) fail "$label: timed out after ${to}s" ;;
	*) fail "$label: exit $rc ($(tail -1 "$LOG"))" ;;
	esac
	return 0
}

# ------------------------------------------------------------ servers
port_open() {
	(exec 3<> "/dev/tcp/127.0.0.1/$1") 2> /dev/null
}

free_port() {
	local p _
	for _ in $(seq 1 50); do
		p=$(($1 + RANDOM % 2000))
		port_open "$p" || { echo "$p"; return 0; }
	done
	return 1
}

# start_server KIND DIR: redis-everysec|redis-always|beanstalkd-50ms|
# beanstalkd-f0, data in DIR; sets SERVER_PID, SERVER_PORT
start_server() {
	local kind=$1 dir=$2 _
	rm -rf "$dir"
	mkdir -p "$dir"
	case $kind in
	redis-*)
		SERVER_PORT=$(free_port 26000) || return 1
		redis-server --port "$SERVER_PORT" --bind 127.0.0.1 \
			--protected-mode yes --daemonize no --loglevel warning \
			--dir "$dir" --save '' --appendonly yes \
			--appendfsync "${kind#redis-}" \
			--auto-aof-rewrite-percentage 0 \
			>> "$WORK/redis.log" 2>&1 &
		SERVER_PID=$!
		;;
	beanstalkd-50ms)
		SERVER_PORT=$(free_port 29000) || return 1
		beanstalkd -l 127.0.0.1 -p "$SERVER_PORT" -b "$dir" \
			>> "$WORK/beanstalkd.log" 2>&1 &
		SERVER_PID=$!
		;;
	beanstalkd-f0)
		SERVER_PORT=$(free_port 29000) || return 1
		beanstalkd -l 127.0.0.1 -p "$SERVER_PORT" -b "$dir" -f 0 \
			>> "$WORK/beanstalkd.log" 2>&1 &
		SERVER_PID=$!
		;;
	esac
	for _ in $(seq 1 100); do
		port_open "$SERVER_PORT" && return 0
		kill -0 "$SERVER_PID" 2> /dev/null || break
		sleep 0.1
	done
	fail "$kind did not come up on port $SERVER_PORT"
	stop_server
	return 1
}

stop_server() {
	local _
	[ -n "$SERVER_PID" ] || return 0
	kill "$SERVER_PID" 2> /dev/null || true
	for _ in $(seq 1 100); do
		kill -0 "$SERVER_PID" 2> /dev/null || break
		sleep 0.1
	done
	kill -9 "$SERVER_PID" 2> /dev/null || true
	wait "$SERVER_PID" 2> /dev/null || true
	SERVER_PID=
}

# one_run SYSTEM LABEL ARGS...: a throughput run of SYSTEM on a fresh
# directory (the arguments: --rate etc.)
one_run() {
	local sys=$1 label=$2 dir=$WORK/data to=$((SECS * 4 + 60))
	shift 2
	rm -rf "$dir"
	case $sys in
	dq-batch|dq-always)
		run "$label" "$to" dq --dir "$dir" --mode "${sys#dq-}" \
			--seconds "$SECS" --batch "$BATCH" --max-n 4000000 --verify-reopen "$@"
		;;
	redis-*)
		start_server "$sys" "$dir" || return 0
		run "$label" "$to" redis --port "$SERVER_PORT" \
			--server-pid "$SERVER_PID" --mode "${sys#redis-}" \
			--seconds "$SECS" --batch "$BATCH" "$@"
		stop_server
		;;
	beanstalkd-*)
		start_server "$sys" "$dir" || return 0
		run "$label" "$to" beanstalkd --port "$SERVER_PORT" \
			--server-pid "$SERVER_PID" --mode "${sys#beanstalkd-}" \
			--seconds "$SECS" --batch "$BATCH" "$@"
		stop_server
		;;
	esac
	rm -rf "$dir"
}

# other work on the machine: load average and the processes busy over a
# second, before and after (they are in the report's header)
busy() {
	top -b -w 200 -n 2 -d 1 2> /dev/null | awk '/^top -/ { n++ }
		n == 2 && $1 ~ /^[0-9]+$/ && $9 + 0 >= 10 { printf "%s %s%%, ", $12, $9 }' |
		sed 's/, $//'
}
LOAD_BEFORE="load $(cut -d' ' -f1-3 /proc/loadavg); busy: $(busy)"

# ------------------------------------------------------------- the runs
log "work directory $WORK ($(findmnt -n -o SOURCE,FSTYPE -T "$WORK" | tr -s ' '))"
log "disk"
run disk 300 disk --dir "$WORK" --sync-n 300 --bw-mib 256

for rep in $(seq "$REPEATS"); do
	log "repeat $rep/$REPEATS: max, equal ($EQUAL_RATE msg/s), seed ($SEED_RATE msg/s), consume"
	for sys in "${SYSTEMS[@]}"; do
		one_run "$sys" "max:$sys" --seed "$rep"
	done
	for sys in "${SYSTEMS[@]}"; do
		one_run "$sys" "equal:$sys" --rate "$EQUAL_RATE" --seed "$rep"
	done
	one_run dq-batch "seed:dq-batch" --rate "$SEED_RATE" --seed "$rep"
	rm -rf "$WORK/data"
	run "consume:dq-batch" 120 consume --dir "$WORK/data" --mode batch \
		--seconds "$SECS" --batch "$BATCH" --rate "$SEED_RATE" \
		--dmax-ms 100 --seed "$rep"
	rm -rf "$WORK/data"
done

log "crash checks"
for mode in batch always; do
	for k in 200 500 900; do
		rm -rf "$WORK/data"
		run "crash:dq-$mode" 120 crash --dir "$WORK/data" --mode "$mode" \
			--batch "$BATCH" --kill-ms "$k" --max-n 1500000
	done
done
rm -rf "$WORK/data"

log "idle"
run "idle:dq-batch" 60 idle --dir "$WORK/data" --mode batch --seconds 2 --n 10000
rm -rf "$WORK/data"

for n in $REC_NS; do
	log "recovery: fill $n"
	rm -rf "$WORK/data"
	run "fill:$n" 600 fill --dir "$WORK/data" --mode batch --batch "$BATCH" \
		--due-spread-s 3600 \
		--seconds 600 --max-n "$n"
	grep -q "^label=fill:$n " "$RES" || continue
	for rep in $(seq "$REPEATS"); do
		log "recovery: $n warm $rep/$REPEATS"
		run "recover-warm:$n" 600 recover --dir "$WORK/data" --n "$n"
		log "recovery: $n cold $rep/$REPEATS"
		run "dropcache:$n" 60 dropcache --dir "$WORK/data"
		run "recover-cold:$n" 600 recover --dir "$WORK/data" --n "$n"
	done
	du -sb "$WORK/data" | awk -v l="label=du:$n" '{ print l, "bytes=" $1 }' >> "$RES"
	rm -rf "$WORK/data"
done
T_END=$(date +%s)
LOAD_AFTER="load $(cut -d' ' -f1-3 /proc/loadavg); busy: $(busy)"

# ------------------------------------------------------------- the report
cpu_model=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
mem_mb=$(awk '/^MemTotal/ { printf "%d", $2 / 1024 }' /proc/meminfo)
src=$(findmnt -n -o SOURCE -T "$BASE")
fstype=$(findmnt -n -o FSTYPE -T "$BASE")
dev=$(basename "$src")
rot=$(cat "/sys/block/$dev/queue/rotational" 2> /dev/null || echo "?")
git_desc=$(git rev-parse --short HEAD 2> /dev/null || echo "?")
if [ -n "$(git status --porcelain -- user bench 2> /dev/null)" ]; then
	git_desc="$git_desc + uncommitted changes in user/ bench/"
fi
header=$WORK/header
{
	echo "# bench/durable.sh: durable delayed messages on one disk, dq's journal against Redis AOF and beanstalkd's binlog"
	echo "# $(date -u '+%F %H:%M UTC'), host $(hostname), kernel $(uname -r), $(nproc) cores ($cpu_model), $mem_mb MB RAM, git $git_desc"
	echo "# disk: $src ($fstype, rotational=$rot) holding $BASE: journal and server data directories all there"
	echo "# redis $(redis-server --version | awk '{ print $3 }' | sed 's/v=//'), beanstalkd $(beanstalkd -v | awk '{ print $2 }'), libdqshim $(sed -n 's/^VERSION := //p' user/Makefile)"
	echo "# 500-byte messages, 1 producer, batches/pipelines of $BATCH, ${SECS} s per run, median of $REPEATS repeats (systems interleaved); whole script $((T_END - T_START)) s"
	echo "# other work on the machine before the runs: ${LOAD_BEFORE}; after: ${LOAD_AFTER}"
} > "$header"

python3 - "$RES" "$header" "$FAILS" "$SEED_RATE" "$EQUAL_RATE" "$BATCH" > "$WORK/report" <<'PY'
import sys, statistics

res_path, header_path, fails_path = sys.argv[1:4]
seed_rate, equal_rate, batch = float(sys.argv[4]), float(sys.argv[5]), int(sys.argv[6])
rows = []
for line in open(res_path):
    d = {}
    for tok in line.split():
        if "=" in tok:
            k, v = tok.split("=", 1)
            try:
                d[k] = float(v)
            except ValueError:
                d[k] = v
    rows.append(d)
fails = [l.strip() for l in open(fails_path) if l.strip()]

def runs(label):
    return [r for r in rows if r.get("label") == label]

def med(label, key):
    v = [r[key] for r in runs(label) if isinstance(r.get(key), float)]
    return statistics.median(v) if v else None

def fmt_rate(x):
    if x is None: return "-"
    if x >= 1e6: return "%.2f M" % (x / 1e6)
    if x >= 1e3: return "%.1f k" % (x / 1e3)
    return "%.0f" % x

def fmt_us(x):
    if x is None: return "-"
    if x >= 1e6: return "%.2f s" % (x / 1e6)
    if x >= 1e5: return "%.0f ms" % (x / 1e3)
    if x >= 1e4: return "%.1f ms" % (x / 1e3)
    if x >= 1e3: return "%.2f ms" % (x / 1e3)
    return "%.0f us" % x

def fmt_f(x, f="%.2f"):
    return "-" if x is None else f % x

def ratio(a, b):
    if a is None or b is None or b == 0: return "-"
    r = a / b
    return ("%.0fx" % r) if r >= 100 else ("%.1fx" % r) if r >= 10 else ("%.2fx" % r)

out = []
P = out.append
P(open(header_path).read().rstrip())
P("")
if fails:
    P("FAILED: %d check(s) failed in this run:" % len(fails))
    for f in fails: P("  - " + f)
    P("")

# ---- disk
d = runs("disk")
disk = d[0] if d else {}
bw = disk.get("bw_direct_mbs")
P("## The disk: the physical limit (same run, same filesystem)")
P("")
if disk:
    P("write 4 KiB + fdatasync, %d times each:" % disk["sync_n"])
    P("  appending into a fallocate()d file (what a journal segment is): p50 %s, p99 %s"
      % (fmt_us(disk["prealloc_p50_us"]), fmt_us(disk["prealloc_p99_us"])))
    P("  overwriting one written block (no metadata; the device flush alone): p50 %s, p99 %s"
      % (fmt_us(disk["overwrite_p50_us"]), fmt_us(disk["overwrite_p99_us"])))
    P("  => at most %.0f dependent fdatasyncs/s (1 / appending p50)" % (1e6 / disk["prealloc_p50_us"]))
    P("sequential write of %d MiB, 1 MiB writes to a new file:" % disk["bw_mib"])
    P("  O_DIRECT + fdatasync at the end: %.0f MB/s;  buffered + fdatasync at the end: %.0f MB/s"
      % (disk["bw_direct_mbs"], disk["bw_buffered_mbs"]))
    P("  => a journal of 552-byte COMMIT records (500 B payload + 48 B header, padded to 8)")
    P("     is bounded at %.0f k msgs/s by the O_DIRECT figure" % (disk["bw_direct_mbs"] * 1e6 / 552 / 1e3))
P("")

names = ["dq-batch", "dq-always", "redis-everysec", "redis-always", "beanstalkd-50ms", "beanstalkd-f0"]
durable_when = {
    "dq-batch": "<= 2 ms + fdatasync after flush, observed",
    "dq-always": "before dq_flush returns, observed",
    "redis-everysec": "up to ~1-2 s later, not observable",
    "redis-always": "before the reply (round trip)",
    "beanstalkd-50ms": "up to ~50 ms + fsync later, not observable",
    "beanstalkd-f0": "before the reply (fsync per put)",
}

def sys_table(prefix, title, note):
    P("## " + title)
    P("")
    P(note)
    P("")
    P("%-16s %10s %10s %11s %11s %11s %12s  %s" % ("system", "msgs/s", "MB/s", "CPU us/msg",
      "  p50", "  p99", "held ok", "durable when"))
    for s in names:
        lab = prefix + s
        if not runs(lab):
            P("%-16s %10s" % (s, "(no run)"))
            continue
        rate = med(lab, "rate")
        cpu = med(lab, "cpu_us")
        p50, p99 = med(lab, "lat_p50_us"), med(lab, "lat_p99_us")
        ok = sum(1 for r in runs(lab) if r.get("violations") == 0.0)
        mbs = rate * 500 / 1e6 if rate else None
        P("%-16s %10s %10s %11s %11s %11s %12s  %s" % (s, fmt_rate(rate), fmt_f(mbs, "%.1f"),
          fmt_f(cpu), fmt_us(p50), fmt_us(p99), "%d/%d" % (ok, len(runs(lab))), durable_when[s]))
    P("")
    ref = prefix + "dq-batch"
    P("dq-batch against each (throughput: dq / peer; CPU per message: peer / dq; above 1 dq does better):")
    for s in names[1:]:
        lab = prefix + s
        P("  %-16s throughput %8s   CPU/msg %8s" % (s, ratio(med(ref, "rate"), med(lab, "rate")),
          ratio(med(lab, "cpu_us"), med(ref, "cpu_us"))))
    ref = prefix + "dq-always"
    P("dq-always against the peers that are durable before they answer:")
    for s in ["redis-always", "beanstalkd-f0"]:
        lab = prefix + s
        P("  %-16s throughput %8s   CPU/msg %8s   p50 commit->durable %8s" % (s,
          ratio(med(ref, "rate"), med(lab, "rate")),
          ratio(med(lab, "cpu_us"), med(ref, "cpu_us")),
          ratio(med(lab, "lat_p50_us"), med(ref, "lat_p50_us"))))
    P("")

sys_table("max:", "A. Durable throughput, as fast as each goes",
  "Closed loop: dq commits batches of %d and flushes, a waiter thread (batch) or the producer\n"
  "(always) sees each batch durable; msgs/s = messages / (first commit .. last batch seen\n"
  "durable).  Peers: %d commands pipelined, the next batch after the replies; msgs/s counts\n"
  "acknowledged messages.  p50/p99: per batch, dq_flush() call -> dq_durable_pos() >= the batch's\n"
  "mark (dq), first byte sent -> last reply (peers: a durable round trip for redis-always and\n"
  "beanstalkd-f0, only an acknowledgement for the others).  CPU: the process (getrusage, every\n"
  "thread) + the server (/proc/PID/stat utime+stime), per message; kernel threads (jbd2, block\n"
  "I/O) are nobody's.  Messages are due in an hour (held), MB/s is payload." % (batch, batch))
sys_table("equal:", "B. Equal offered load: %.0f msgs/s for every system" % equal_rate,
  "The producer sends a batch of %d every %.1f ms (open loop); a system that cannot keep up\n"
  "shows a lower msgs/s." % (batch, batch / equal_rate * 1e3))

# ---- seed
lab = "seed:dq-batch"
P("## C. The seed scenario: dq-batch at %.0f k msgs/s x 500 B" % (seed_rate / 1e3))
P("")
if runs(lab):
    rate = med(lab, "rate")
    wb = med(lab, "write_bytes_per_msg")
    need = seed_rate * 552 / 1e6
    P("offered %.0f k msgs/s = %.1f MB/s of COMMIT records; durable %s msgs/s (median), CPU %s us/msg,"
      % (seed_rate / 1e3, need, fmt_rate(rate), fmt_f(med(lab, "cpu_us"))))
    P("commit->durable p50 %s, p99 %s, max %s; %.0f records per fdatasync, mean fdatasync %s;"
      % (fmt_us(med(lab, "lat_p50_us")), fmt_us(med(lab, "lat_p99_us")), fmt_us(med(lab, "lat_max_us")),
         med(lab, "synced_records") / max(med(lab, "fsyncs"), 1),
         fmt_us(med(lab, "sync_ns_total") / max(med(lab, "fsyncs"), 1) / 1e3)))
    P("page-cache bytes dirtied per message (write_bytes): %s." % fmt_f(wb, "%.0f"))
    if bw:
        verdict = "sustained" if rate and rate >= 0.97 * seed_rate else "NOT sustained"
        P("Verdict: %s (>= 97%% of the offered rate made durable).  The disk's sequential bandwidth"
          % verdict)
        P("(%.0f MB/s O_DIRECT) is %.1fx the %.1f MB/s the journal needs." % (bw, bw / need, need))
        if bw < need:
            P("The disk's bandwidth is BELOW what the scenario needs: %.0f MB/s < %.1f MB/s." % (bw, need))
P("")

# ---- consume
lab = "consume:dq-batch"
P("## D. With a consumer: releases and retires while the producer writes")
P("")
if runs(lab):
    n = med(lab, "n")
    P("dq-batch, %.0f k msgs/s offered, delays uniform 0..100 ms, a consumer thread reaps and dq_done()s" % (seed_rate / 1e3))
    P("every message (checked: each id once, payload intact).  Medians of %d:" % len(runs(lab)))
    P("  durable msgs/s %s, CPU %s us/msg (producer + consumer + sync thread), commit->durable p50 %s, p99 %s"
      % (fmt_rate(med(lab, "rate")), fmt_f(med(lab, "cpu_us")), fmt_us(med(lab, "lat_p50_us")),
         fmt_us(med(lab, "lat_p99_us"))))
    P("  page-cache bytes dirtied per message (write_bytes): %s; COMMIT 552 + RETIRE entry 8 = 560 by the format"
      % fmt_f(med(lab, "write_bytes_per_msg"), "%.0f"))
    P("  retires %s of %s commits; segments at the end %s, reclaimed %s (64 MiB segments); the journal"
      % (fmt_f(med(lab, "retires"), "%.0f"), fmt_f(med(lab, "commits"), "%.0f"),
         fmt_f(med(lab, "segments"), "%.0f"), fmt_f(med(lab, "reclaimed"), "%.0f")))
    P("  directory takes %s MB on disk at the end (st_blocks) for %s MB of records written (%.0f messages);"
      % (fmt_f(med(lab, "dir_bytes") / 1e6 if med(lab, "dir_bytes") else None, "%.0f"),
         fmt_f(n * 560 / 1e6, "%.0f"), n))
    P("  dq_journal_stats.bytes says %s MB; reopened after close: %s messages came back"
      % (fmt_f(med(lab, "bytes") / 1e6, "%.0f"), fmt_f(med(lab, "reopen_recovered"), "%.0f")))
P("")

# ---- recovery
P("## E. Recovery: a fresh process opens a journal holding N messages")
P("")
P("A producer (dq-batch) commits N messages due 1..2 h ahead (uniform: due order is not commit")
P("order), waits until they are durable, closes the queue (close keeps held messages in the")
P("journal) and exits; then a fresh process times dq_queue_open_durable() (wall: open + recovery)")
P("and reads rec_ns (recovery alone); warm: the files in the page cache as the producer left")
P("them; cold: posix_fadvise(DONTNEED) on every journal file first.  Every open must find all N.")
P("")
P("%-6s %9s %9s %9s %10s %10s %10s %10s %10s %9s" % ("N", "fill/s", "records", "on disk",
  "warm wall", "warm rec", "cold wall", "cold rec", "recovered", "cold MB/s"))
for r in [x for x in rows if str(x.get("label", "")).startswith("fill:")]:
    n = int(r["n"])
    w, c = "recover-warm:%d" % n, "recover-cold:%d" % n
    jb = med(w, "journal_used_bytes")
    du = med("du:%d" % n, "bytes")
    cw = med(c, "wall_ms")
    recd = min([x.get("rec_recovered", 0) for x in runs(w) + runs(c)] or [0])
    ms = lambda lab, k: fmt_us(med(lab, k) * 1e3) if med(lab, k) is not None else "-"
    P("%-6s %9s %9s %9s %10s %10s %10s %10s %10s %9s" % ("%g M" % (n / 1e6) if n >= 1e6 else n,
      fmt_rate(r.get("rate")), fmt_f(jb / 1e6 if jb else None, "%.0f MB"),
      fmt_f(du / 1e6 if du else None, "%.0f MB"),
      ms(w, "wall_ms"), ms(w, "rec_ms"), ms(c, "wall_ms"), ms(c, "rec_ms"),
      "%.0f" % recd, fmt_f(jb / 1e6 / (cw / 1e3) if jb and cw else None, "%.0f")))
P("(records: bytes of records in the segments; on disk: du of the directory after the opens,")
P("which each seal the last segment and start a new preallocated one)")
P("")

# ---- crash
P("## F. Crash checks (kill -9 of a producer mid-stream, then recovery and a full reap)")
P("")
for mode in ["batch", "always"]:
    rs = runs("crash:dq-" + mode)
    if not rs: continue
    P("dq-%s: %s" % (mode, "; ".join("killed at %d ms: %d acknowledged durable, %d recovered, missing %d, dup %d, corrupt %d"
      % (r["kill_ms"], r["acked"], r["recovered"], r["missing"], r["dup"], r["corrupt"]) for r in rs)))
P("(kill -9 leaves written records in the page cache: this checks the library's own ordering")
P("and recovery, not the disk's behaviour on power loss.)")
P("")

# ---- idle
r = runs("idle:dq-batch")
if r:
    r = r[0]
    P("## G. Idle: wake-ups of an open durable queue (dq-batch), context switches of every thread")
    P("")
    P("empty: %.0f /s; holding %d messages, all durable: %.0f /s (the non-durable queue: 0)"
      % (r["wakeups_per_s_empty"], r["held"], r["wakeups_per_s_held"]))
    P("")
P("## Raw result lines (one per run, in run order)")
P("")
for line in open(res_path):
    P(line.rstrip())
print("\n".join(out))
PY

cat "$WORK/report"
if [ "${1:-}" = --write ]; then
	cp "$WORK/report" "$OUT"
	log "wrote $OUT"
fi
if [ -s "$FAILS" ]; then
	log "FAILED: $(wc -l < "$FAILS") check(s), see above"
	exit 1
fi
