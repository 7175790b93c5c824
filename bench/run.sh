#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1 OR MIT
#
# bench/run.sh - run every delay-queue system through every workload and
# append one JSON line per run to OUT/results.jsonl (plus lateness CDFs in
# OUT/cdf/ and a run log).  bench/report.sh turns the results into
# docs/benchmarks.md.
#
# Usage: bench/run.sh --host|--vm [--out DIR] [--quick] [--only REGEX]
#        bench/run.sh --host|--vm --check-systems
#   --host   native part: every system that needs no dq.ko
#   --vm     inside the test VM (selftests/vm/run), dq.ko loaded: all of them
#   --only   run only the systems whose name matches REGEX (e.g. 'dq|timerfd';
#            also DQ_BENCH_ONLY)
#   --check-systems  print how each system runs in that mode and exit 1 if
#            one has no definition (bench/test.sh; nothing is run)
#
# Exit status: 0 when every run completed with no early, lost, duplicated or
# corrupt message and no consumer error; 1 otherwise (the runs that broke
# the rule are listed at the end).  Runs that were skipped (a server not
# installed, not enough memory) or not run (a size cap) do not fail it; a
# run that died or timed out does.  A system that misses its deadlines but
# still holds every message (fifo-sleep's head-of-line blocking) is reported
# as overdue, not as a failure.
#
# Systems: redis-10ms redis-100ms redis-200ms (ZSET polling), fifo-sleep,
# beanstalkd, timerfd, uring-timeout, dq-uring, dq-ioctl, dq-user, and
# cyclictest as the floor of timer -> thread latency; in the VM also
# dq-uring-2t (dq-uring with a consumer thread) and dq-uring-budget
# (dq-uring at the lateness budget's slack), offered rate only, at the
# lowest rate.
#
# Workloads and their sizes (environment, forwarded into the VM).  Every
# run is repeated DQ_BENCH_REPEAT times (default 3; --rep in its JSON line)
# and the report gives the median with min-max; correctness counts every
# repetition.
#   a throughput   DQ_BENCH_N messages, delays 0 (the rate messages go
#                  through, not the delay window), 500 B; submit and release
#                  cost apart
#   b offered rate DQ_BENCH_RATES msg/s offered (10k 100k 1M natively) for
#                  DQ_BENCH_RATE_S s each, delays 0-1 s, 500 B; a system that
#                  falls 1 s behind the offered rate is cut off and reported
#                  as "cannot offer"; cyclictest as the floor; the lowest rate
#                  also under stress-ng on every CPU
#   b long hold    DQ_BENCH_LONG_RATE msg/s with delays DQ_BENCH_LONG_S - 1 to
#                  DQ_BENCH_LONG_S s (120 s; quick: 3 s) for the systems in
#                  DQ_BENCH_LONG_SYSTEMS (default: all; in the VM dq-uring
#                  and uring-timeout)
#   f capacity     DQ_BENCH_CAP_N messages (500k; quick 50k) submitted ahead,
#                  all due within the same second: how many within 50 ms of
#                  their due time, and when the last one came out
#   c scale        DQ_BENCH_SCALE_NS: held messages (due in an hour), then a
#                  burst of DQ_BENCH_PROBE messages due at one instant
#   d idle         at DQ_BENCH_IDLE_N held, DQ_BENCH_IDLE_S s of nothing due
#   e memory       bytes per held message, from the scale runs (dq also at
#                  DQ_BENCH_BIG_N held)
# DQ_BENCH_QUICK=1 picks small sizes for a smoke test.  Every ratio the report
# draws needs both systems at the same size, so dq runs workload a also at
# each capped peer's size, the host runs it also at the VM's sizes (for the
# TCG slowdown table), and dq gets the long idle window at every held size.
#
# Memory (workload c/e): in the VM each run's peer and server live in a fresh
# cgroup v2 and bytes/msg is the growth of its memory.current (user pages
# and accounted kernel objects); on the host it is the RSS growth of the
# peer and its server (smaps_rollup), which cannot see kernel objects.
#
# Servers (redis-server, beanstalkd) are started per run on 127.0.0.1 on a
# free private port, without persistence, and stopped after it.

set -u -o pipefail

MODE=
OUT=
ONLY=${DQ_BENCH_ONLY:-}
QUICK=${DQ_BENCH_QUICK:-0}
CHECK_SYSTEMS=0

usage() {
	sed -n '/^# Usage:/,/^# Systems:/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2
	exit 2
}

while [ $# -gt 0 ]; do
	case "$1" in
	--host) MODE=host; shift ;;
	--vm) MODE=vm; shift ;;
	--out) [ $# -ge 2 ] || usage; OUT=$2; shift 2 ;;
	--quick) QUICK=1; shift ;;
	--only) [ $# -ge 2 ] || usage; ONLY=$2; shift 2 ;;
	--check-systems) CHECK_SYSTEMS=1; shift ;;
	-h | --help) usage ;;
	*) echo "run.sh: unknown option $1" >&2; usage ;;
	esac
done
[ -n "$MODE" ] || usage

# sets PEER, SERVER, OPTS for system $1
system_def() {
	PEER=
	SERVER=
	OPTS=()
	case "$1" in
	redis-*ms) PEER=redis-zset SERVER=redis
		local ms=${1#redis-}
		OPTS=(--opt "poll-ms=${ms%ms}") ;;
	fifo-sleep) PEER=fifo-sleep ;;
	beanstalkd) PEER=beanstalkd SERVER=beanstalkd ;;
	timerfd) PEER=timerfd ;;
	uring-timeout) PEER=uring-timeout ;;
	# One thread, like uring-timeout's: commit, then dq_flush_reap()
	# (SUBMIT and the wait for the parked WAIT in one io_uring_enter();
	# before 0cdd498, SUBMIT linked to a WAIT); a consumer thread
	# parked in WAIT paid a cross-thread wake per release: p99 4.7 vs
	# 1.9 ms, docs/records/bench/uring-shape.txt.
	dq-uring) PEER=dq OPTS=(--opt backend=kernel --opt path=uring --opt consumer=wait) ;;
	# The two-thread shape an application writes first: the harness
	# thread commits and flushes, a consumer thread parks in WAIT over
	# io_uring.  VM only, offered rate at the lowest rate (issue 38;
	# selftests/vm/tail-bench.sh splits its tail by variant).
	dq-uring-2t) PEER=dq OPTS=(--opt backend=kernel --opt path=uring --opt consumer=thread) ;;
	dq-ioctl) PEER=dq OPTS=(--opt backend=kernel --opt path=ioctl --opt consumer=loop) ;;
	# dq-uring at the VM's lateness budget, the rule dq-user follows
	# natively (below): half of the p99 target (report.sh's
	# TARGET_VM_US, 10 ms) is the queue's slack.  VM only, offered rate
	# at the lowest rate: the CPU goal at equal lateness (issue 38).
	dq-uring-budget) PEER=dq OPTS=(--opt backend=kernel --opt path=uring --opt consumer=wait --opt granularity-us=5000) ;;
	# natively the application states a 1 ms lateness budget: half of it
	# is the queue's slack (granularity), half is left for the wake-up
	# and the consumer (bench/README.md); the VM keeps the default
	dq-user) PEER=dq OPTS=(--opt backend=user)
		# an if, not "[ ] &&": the branch's status is the function's,
		# and a false test here once skipped dq-user in the VM as an
		# "unknown system" (--check-systems catches it)
		if [ "$MODE" = host ]; then
			OPTS+=(--opt granularity-us=500)
		fi ;;
	*) return 1 ;;
	esac
}

ALL_SYSTEMS=(redis-10ms redis-100ms redis-200ms fifo-sleep beanstalkd timerfd
	uring-timeout dq-uring dq-ioctl dq-user)
# --check-systems: every system has a definition in this mode (bench/test.sh)
if [ "$CHECK_SYSTEMS" = 1 ]; then
	rc=0
	for s in "${ALL_SYSTEMS[@]}"; do
		if system_def "$s"; then
			echo "$MODE $s: peer-$PEER${SERVER:+ server $SERVER}${OPTS[*]:+ ${OPTS[*]}}"
		else
			echo "$MODE $s: no definition" >&2
			rc=1
		fi
	done
	exit $rc
fi

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TOP=$(dirname "$HERE")
BIN=$HERE/build
DQBENCH=$TOP/user/build/dqbench
OUT=${OUT:-$HERE/results/$MODE}
mkdir -p "$OUT" || exit 1
OUT=$(cd "$OUT" && pwd)
RES=$OUT/results.jsonl
LOG=$OUT/run.log
rm -rf "$OUT/cdf" "$RES" "$LOG" "$OUT/env.json"
mkdir -p "$OUT/cdf"
: > "$RES"
TMPD=$(mktemp -d "${TMPDIR:-/tmp}/dq-bench.XXXXXX") || exit 1
NCPU=$(nproc)

# ------------------------------------------------------------------ sizes
# Full sizes are the issue's where the time allows.  Under TCG the guest is
# 10-100x slower than the host (worst for syscall- and wake-up-heavy
# designs), so the VM runs a lower steady rate and caps the slowest systems'
# sizes (see caps below); the host runs the steady rate as specified.
# the throughput size of each mode (the host also runs the VM's)
default_n() { # mode
	if [ -n "${DQ_BENCH_N:-}" ]; then
		echo "$DQ_BENCH_N"
	elif [ "$QUICK" = 1 ]; then
		[ "$1" = host ] && echo 20000 || echo 5000
	else
		[ "$1" = host ] && echo 1000000 || echo 100000
	fi
}
if [ "$QUICK" = 1 ]; then
	D_N=5000 D_RATES="1000 10000" D_LAT_S=1 D_SCALE="10000" D_PROBE=1000
	D_IDLE_N=10000 D_IDLE_S=3 D_BIG= D_LONG_S=3 D_LONG_RATE=1000 D_CAP_N=50000
	D_LEAD_S=3 D_REPEAT=3
	[ "$MODE" = host ] && D_N=20000 D_RATES="10000 100000 1000000"
	[ "$MODE" = host ] && D_LONG_RATE=10000
	# under TCG: one repetition (a smoke test), a fill that fits the lead
	[ "$MODE" = vm ] && D_REPEAT=1 D_LEAD_S=10 D_CAP_N=20000
elif [ "$MODE" = vm ]; then
	D_N=100000 D_RATES="1000 10000 100000" D_LAT_S=5 D_SCALE="10000 100000 1000000"
	D_PROBE=5000 D_IDLE_N=1000000 D_IDLE_S=30 D_BIG=4000000 D_LONG_S=120
	D_LONG_RATE=1000 D_CAP_N=500000 D_LEAD_S=60 D_REPEAT=3
else
	D_N=1000000 D_RATES="10000 100000 1000000" D_LAT_S=5 D_SCALE="10000 100000 1000000"
	D_PROBE=5000 D_IDLE_N=1000000 D_IDLE_S=10 D_BIG=4000000 D_LONG_S=120
	D_LONG_RATE=10000 D_CAP_N=500000 D_LEAD_S=8 D_REPEAT=3
fi
N=${DQ_BENCH_N:-$D_N}
RATES=${DQ_BENCH_RATES:-$D_RATES}
LAT_S=${DQ_BENCH_RATE_S:-$D_LAT_S}
LONG_S=${DQ_BENCH_LONG_S:-$D_LONG_S}
LONG_RATE=${DQ_BENCH_LONG_RATE:-$D_LONG_RATE}
# in the VM (TCG) the long hold is for the goal's pair only: 120 s a run
D_LONG_SYSTEMS=
[ "$MODE" = vm ] && [ "$QUICK" != 1 ] && D_LONG_SYSTEMS="dq-uring uring-timeout"
LONG_SYSTEMS=${DQ_BENCH_LONG_SYSTEMS-$D_LONG_SYSTEMS}
CAP_N=${DQ_BENCH_CAP_N:-$D_CAP_N}
LEAD_S=${DQ_BENCH_LEAD_S:-$D_LEAD_S}
REPEAT=${DQ_BENCH_REPEAT:-$D_REPEAT}
RATE=${RATES%% *} # the lowest offered rate: the stress variant's
SCALE_NS=${DQ_BENCH_SCALE_NS:-$D_SCALE}
PROBE=${DQ_BENCH_PROBE:-$D_PROBE}
IDLE_N=${DQ_BENCH_IDLE_N:-$D_IDLE_N}
IDLE_S=${DQ_BENCH_IDLE_S:-$D_IDLE_S}
BIG_N=${DQ_BENCH_BIG_N-$D_BIG}
SEED=${DQ_BENCH_SEED:-1}
CAPS=${DQ_BENCH_CAPS:-1}
PAYLOAD=500
SHORT_IDLE_S=2
# what kind of run this is, for the report: full (the defaults), quick
# (DQ_BENCH_QUICK), or reduced (sizes or systems overridden)
OVERRIDES=
for v in DQ_BENCH_N DQ_BENCH_RATES DQ_BENCH_RATE_S DQ_BENCH_SCALE_NS DQ_BENCH_PROBE \
	DQ_BENCH_IDLE_N DQ_BENCH_IDLE_S DQ_BENCH_BIG_N DQ_BENCH_SEED DQ_BENCH_CAPS \
	DQ_BENCH_LONG_S DQ_BENCH_LONG_RATE DQ_BENCH_LONG_SYSTEMS DQ_BENCH_CAP_N \
	DQ_BENCH_LEAD_S DQ_BENCH_REPEAT; do
	[ -n "${!v+x}" ] && OVERRIDES+="${OVERRIDES:+ }$v=${!v}"
done
[ -n "$ONLY" ] && OVERRIDES+="${OVERRIDES:+ }only=$ONLY"
KIND=full
[ "$QUICK" = 1 ] && KIND=quick
[ -n "$OVERRIDES" ] && KIND=reduced
HIST_US=100000 # cyclictest histogram range
[ "$QUICK" = 1 ] && HIST_US=20000

# cap WORKLOAD SYSTEM [MODE]: the largest size this system runs in MODE
# (default: here; "" = no cap).
# Each cap keeps one run of the slowest designs under about a minute.
# (CAPS_TEXT below says the same for the report: keep them in step.)
cap() {
	local mode=${3:-$MODE}
	[ "$CAPS" = 1 ] || return 0
	if [ "$QUICK" = 1 ] && [ "$mode" = vm ]; then
		case "$1:$2" in
		throughput:redis-*) echo 2000 ;;
		throughput:beanstalkd) echo 500 ;;
		esac
		return 0
	fi
	case "$mode:$1:$2" in
	vm:throughput:redis-*) echo 20000 ;;
	vm:throughput:beanstalkd) echo 5000 ;;
	vm:pending:redis-200ms) echo 100000 ;;
	vm:pending:redis-*) echo 10000 ;;
	vm:pending:beanstalkd) echo 10000 ;;
	vm:pending:timerfd) echo 100000 ;;
	host:throughput:beanstalkd) echo 200000 ;;
	host:pending:beanstalkd) echo 100000 ;;
	esac
}

caps_text() {
	[ "$CAPS" = 1 ] || return 0
	if [ "$QUICK" = 1 ]; then
		[ "$MODE" = vm ] && echo "throughput: redis 2000, beanstalkd 500"
		return 0
	fi
	case "$MODE" in
	vm) echo "throughput: redis 20000, beanstalkd 5000; held: redis-200ms 100000, redis-10ms/100ms 10000, beanstalkd 10000, timerfd 100000; 4000000 held for dq-uring only" ;;
	host) echo "throughput: beanstalkd 200000, timerfd 100000 when RLIMIT_NOFILE cannot be raised; held: beanstalkd 100000" ;;
	esac
}

log() {
	printf '%s %s\n' "$(date +%T)" "$*" | tee -a "$LOG" >&2
}

# ------------------------------------------------------------------ cleanup
SERVER_PID=
STRESS_PID=
MEMCG=
# shellcheck disable=SC2317 # called from the trap
cleanup() {
	[ -n "${LOAD_PID:-}" ] && kill "$LOAD_PID" 2> /dev/null
	[ -n "$SERVER_PID" ] && kill "$SERVER_PID" 2> /dev/null
	[ -n "$STRESS_PID" ] && kill "$STRESS_PID" 2> /dev/null
	[ -n "$MEMCG" ] && rmdir "$MEMCG" 2> /dev/null
	rm -rf "$TMPD"
}
trap cleanup EXIT
trap 'log "interrupted"; exit 130' INT TERM

# ------------------------------------------------------------------ environment
if [ "$MODE" = vm ]; then
	# the guest's loopback may come up down
	if ! ip -o link show lo 2> /dev/null | grep -q 'state UNKNOWN\|state UP\|,UP'; then
		ip link set lo up 2> /dev/null || log "cannot bring lo up"
	fi
	ip addr show lo 2> /dev/null | grep -q 127.0.0.1 ||
		ip addr add 127.0.0.1/8 dev lo 2> /dev/null
fi

json_escape() {
	printf '%s' "$1" | sed 's/\\/\\\\/g; s/"/\\"/g' | tr -d '\n\r'
}

# the commit measured, and whether the measured code differs from it
git_state() {
	local h
	h=$(git -C "$TOP" rev-parse --short HEAD 2> /dev/null) || return 0
	if [ -n "$(git -C "$TOP" status --porcelain -- bench user kmod uapi 2> /dev/null)" ]; then
		h+=" + uncommitted changes in bench/ user/ kmod/ uapi/"
	fi
	printf '%s' "$h"
}
cpu_model=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)
mem_kb=$(sed -n 's/^MemTotal:[[:space:]]*\([0-9]*\).*/\1/p' /proc/meminfo)
{
	printf '{"env":"%s","date":"%s","host":"%s","kernel":"%s",' "$MODE" \
		"$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$(json_escape "$(hostname)")" "$(uname -r)"
	printf '"cpu":"%s","ncpu":%s,"mem_mb":%s,"quick":%s,"kind":"%s","overrides":"%s",' \
		"$(json_escape "$cpu_model")" "$NCPU" "$((mem_kb / 1024))" "$QUICK" \
		"$KIND" "$(json_escape "$OVERRIDES")"
	printf '"n":%s,"rate":"%s","lat_s":%s,"scale_ns":"%s","probe":%s,' \
		"$N" "$RATES" "$LAT_S" "$SCALE_NS${BIG_N:+ $BIG_N}" "$PROBE"
	printf '"repeat":%s,"long_s":%s,"long_rate":%s,"cap_n":%s,"lead_s":%s,' \
		"$REPEAT" "$LONG_S" "$LONG_RATE" "$CAP_N" "$LEAD_S"
	printf '"idle_n":%s,"idle_s":%s,"payload":%s,"caps":"%s",' "$IDLE_N" "$IDLE_S" \
		"$PAYLOAD" "$(caps_text)"
	printf '"redis":"%s","beanstalkd":"%s","git":"%s"}\n' \
		"$(redis-server --version 2> /dev/null | awk '{print $3}' | sed 's/v=//')" \
		"$(beanstalkd -v 2> /dev/null | awk '{print $2}')" \
		"$(git_state)"
} > "$OUT/env.json"
log "bench $MODE $KIND${OVERRIDES:+ ($OVERRIDES)}: x$REPEAT n=$N rates=[$RATES] ${LAT_S}s long=${LONG_S}s@$LONG_RATE capacity=$CAP_N scale=[$SCALE_NS${BIG_N:+ $BIG_N}] idle=${IDLE_N}x${IDLE_S}s -> $OUT"

# ------------------------------------------------------------------ memory cgroups
# VM only (the host's cgroups belong to whoever runs the machine): each run
# gets a fresh cgroup v2 holding the peer and its server, and the harness
# reads the memory the kernel charged to it (--memcg).
MEMCG_ROOT=
RUN_SEQ=0
memcg_init() {
	local root
	[ "$MODE" = vm ] || return 0
	root=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/mounts)
	if [ -z "$root" ]; then
		mount -t cgroup2 cgroup2 /sys/fs/cgroup 2>> "$LOG" && root=/sys/fs/cgroup
	fi
	if [ -z "$root" ] || ! grep -qw memory "$root/cgroup.controllers" 2> /dev/null; then
		log "no cgroup v2 memory controller: bytes/msg from smaps (no kernel objects)"
		return 0
	fi
	if ! grep -qw memory "$root/cgroup.subtree_control" &&
		! echo +memory > "$root/cgroup.subtree_control" 2>> "$LOG"; then
		log "cannot enable the memory controller: bytes/msg from smaps"
		return 0
	fi
	MEMCG_ROOT=$root
}
memcg_new() {
	MEMCG=
	[ -n "$MEMCG_ROOT" ] || return 0
	RUN_SEQ=$((RUN_SEQ + 1))
	MEMCG=$MEMCG_ROOT/dq-bench-$$-$RUN_SEQ
	mkdir "$MEMCG" 2>> "$LOG" || MEMCG=
}
memcg_done() {
	[ -n "$MEMCG" ] && rmdir "$MEMCG" 2> /dev/null
	MEMCG=
}
# IN_MEMCG "$MEMCG" CMD...: exec CMD inside the run's cgroup (when there is
# one).  A plain command, not a function, so that "... &" gives $! = CMD's
# own pid (a function in the background would be a subshell's).
# shellcheck disable=SC2016 # expanded by that sh
IN_MEMCG=(sh -c 'if [ -n "$0" ]; then echo $$ > "$0/cgroup.procs" || exit 125; fi; exec "$@"')
memcg_init

# ------------------------------------------------------------------ systems
HAVE_DQ=0
[ -c /dev/dq ] && HAVE_DQ=1

SYSTEMS=("${ALL_SYSTEMS[@]}")
DQBENCH_RUNS=(user kernel kernel-ioctl)
drop_system() {
	local keep=() x
	for x in "${SYSTEMS[@]}"; do
		[ "$x" = "$1" ] || keep+=("$x")
	done
	SYSTEMS=("${keep[@]}")
}
if [ "$HAVE_DQ" = 0 ] && [ "$MODE" = host ]; then
	# the host has no module support: dq.ko runs in the VM part
	drop_system dq-uring
	drop_system dq-ioctl
	DQBENCH_RUNS=(user)
fi
if [ "$QUICK" = 1 ]; then
	# a smoke test: one poll interval stands for the three
	drop_system redis-10ms
	drop_system redis-200ms
fi

# why system $1 cannot run here (empty: it can)
unavailable() {
	system_def "$1" || { echo "unknown system"; return; }
	[ -x "$BIN/peer-$PEER" ] || { echo "peer-$PEER not built"; return; }
	case "$1" in
	dq-uring | dq-uring-2t | dq-uring-budget | dq-ioctl) [ "$HAVE_DQ" = 1 ] || { echo "no /dev/dq (dq.ko not loaded)"; return; } ;;
	esac
	case "$SERVER" in
	redis) command -v redis-server > /dev/null || echo "redis-server not installed" ;;
	beanstalkd) command -v beanstalkd > /dev/null || echo "beanstalkd not installed" ;;
	esac
}

selected() {
	[ -z "$ONLY" ] || [[ "$1" =~ $ONLY ]]
}

# a JSON line for a run that did not happen or died without writing one;
# an error that starts with "skipped:" or "not run:" is a run that was not
# attempted here, anything else a failed run
stub_line() { # system label workload n error
	local vd
	case "$5" in
	skipped:* | "not run:"*) vd=$5 ;;
	*) vd="failed: $5" ;;
	esac
	printf '{"system":"%s","label":"%s","workload":"%s","env":"%s","stress":%s,"rep":%s,"n":%s,%s"ok":false,"error":"%s","violation":false,"verdict":"%s"}\n' \
		"$1" "$2" "$3" "$MODE" "${STRESS_LABEL:-0}" "${RUN_REP:-1}" "$4" "${STUB_EXTRA:-}" \
		"$(json_escape "$5")" "$(json_escape "$vd")" >> "$RES"
}

# ------------------------------------------------------------------ servers
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

start_server() {
	local kind=$1 _
	SERVER_PID=
	SERVER_PORT=
	[ -n "$kind" ] || return 0
	case "$kind" in
	redis)
		SERVER_PORT=$(free_port 20000) || return 1
		"${IN_MEMCG[@]}" "$MEMCG" redis-server --port "$SERVER_PORT" --bind 127.0.0.1 --save '' \
			--appendonly no --daemonize no --dir "$TMPD" \
			--loglevel warning --protected-mode yes \
			>> "$OUT/redis.log" 2>&1 &
		SERVER_PID=$!
		;;
	beanstalkd)
		SERVER_PORT=$(free_port 23000) || return 1
		"${IN_MEMCG[@]}" "$MEMCG" beanstalkd -l 127.0.0.1 -p "$SERVER_PORT" >> "$OUT/beanstalkd.log" 2>&1 &
		SERVER_PID=$!
		;;
	esac
	for _ in $(seq 1 200); do
		port_open "$SERVER_PORT" && return 0
		kill -0 "$SERVER_PID" 2> /dev/null || break
		sleep 0.1
	done
	log "$kind did not come up on port $SERVER_PORT"
	stop_server
	return 1
}

stop_server() {
	local _
	[ -n "$SERVER_PID" ] || return 0
	kill "$SERVER_PID" 2> /dev/null
	for _ in $(seq 1 100); do
		kill -0 "$SERVER_PID" 2> /dev/null || break
		sleep 0.1
	done
	kill -9 "$SERVER_PID" 2> /dev/null
	wait "$SERVER_PID" 2> /dev/null
	SERVER_PID=
}

start_stress() {
	STRESS_PID=
	command -v stress-ng > /dev/null || { log "stress-ng not installed"; return 1; }
	stress-ng --cpu "$NCPU" --cpu-method int64 --timeout "$1" --quiet \
		> /dev/null 2>&1 &
	STRESS_PID=$!
	sleep 0.5
}

stop_stress() {
	[ -n "$STRESS_PID" ] || return 0
	kill "$STRESS_PID" 2> /dev/null
	wait "$STRESS_PID" 2> /dev/null
	STRESS_PID=
}

# What a run frees may go back to the kernel after it exits (io_uring tears
# its requests down in a workqueue, files go through RCU): wait until the
# unreclaimable slab and free memory stop moving before the next baseline.
settle_memory() {
	local a b _
	a=$(awk '/^(MemFree|SUnreclaim):/ { s = s $2 " " } END { print s }' /proc/meminfo)
	for _ in $(seq 1 60); do
		sleep 0.5
		b=$(awk '/^(MemFree|SUnreclaim):/ { s = s $2 " " } END { print s }' /proc/meminfo)
		# both within 1 MB of the last reading
		echo "$a $b" | awk '{ d1 = $1 - $3; d2 = $2 - $4; exit !((d1 < 1024 && d1 > -1024) && (d2 < 1024 && d2 > -1024)) }' && return 0
		a=$b
	done
	log "memory did not settle in 30 s"
}

# ------------------------------------------------------------------ one run
# run_peer SYSTEM WORKLOAD TIMEOUT_S [peer args...]
run_peer() {
	local sys=$1 wl=$2 tmo=$3 why before after rc tag
	shift 3
	why=$(unavailable "$sys")
	system_def "$sys"
	if [ -n "$why" ]; then
		log "skip $sys $wl: $why"
		stub_line "$PEER" "$sys" "$wl" "${RUN_N:-null}" "skipped: $why"
		return 0
	fi
	memcg_new
	if ! start_server "$SERVER"; then
		stub_line "$PEER" "$sys" "$wl" "${RUN_N:-null}" "$SERVER did not start"
		memcg_done
		return 0
	fi
	tag="$sys-$wl${RUN_TAG:-}"
	before=$(wc -l < "$RES" 2> /dev/null || echo 0)
	log "run $tag ($(($(mem_avail_bytes) >> 20)) MB available)"
	"${IN_MEMCG[@]}" "$MEMCG" timeout -k 10 "$((tmo + 60))" "$BIN/peer-$PEER" --workload "$wl" \
		--env "$MODE" --stress "${STRESS_LABEL:-0}" --label "$sys" \
		--seed "$SEED" --payload "$PAYLOAD" --timeout "$tmo" --rep "${RUN_REP:-1}" \
		--json "$RES" --cdf "$OUT/cdf/$tag.txt" \
		${SERVER_PID:+--server-pid "$SERVER_PID"} \
		${SERVER_PORT:+--opt "port=$SERVER_PORT"} \
		${MEMCG:+--memcg "$MEMCG"} \
		"${OPTS[@]}" "$@" 2>> "$LOG"
	rc=$?
	stop_server
	memcg_done
	after=$(wc -l < "$RES" 2> /dev/null || echo 0)
	if [ "$after" = "$before" ]; then
		stub_line "$PEER" "$sys" "$wl" "${RUN_N:-null}" "peer exited with status $rc without a result"
	fi
	[ "$rc" = 4 ] && log "VIOLATION in $tag (see the verdict in $RES)"
	tail -n 1 "$LOG" | grep -q "^\[" && tail -n 1 "$LOG" >&2
	return 0
}

# ------------------------------------------------------------------ cyclictest
# run_cyclictest LABEL PRIO DURATION: SCHED_OTHER (PRIO 0) or SCHED_FIFO
run_cyclictest() {
	local label=$1 prio=$2 dur=$3 hist=$TMPD/cyclictest.hist pol
	command -v cyclictest > /dev/null || {
		stub_line cyclictest "$label" lateness null "skipped: cyclictest not installed"
		return
	}
	pol=other
	[ "$prio" -gt 0 ] && pol=fifo
	log "run $label lateness${RUN_TAG:-}"
	rm -f "$hist"
	timeout -k 5 "$((dur + 30))" cyclictest -q -m -t "$NCPU" -a -i 1000 \
		-p "$prio" --policy="$pol" -D "$dur" -h "$HIST_US" --histfile="$hist" \
		> "$TMPD/cyclictest.out" 2>> "$LOG"
	if [ ! -s "$hist" ]; then
		stub_line cyclictest "$label" lateness null "cyclictest failed"
		return
	fi
	awk -v label="$label" -v env="$MODE" -v stress="${STRESS_LABEL:-0}" \
		-v dur="$dur" -v prio="$prio" -v cdf="$OUT/cdf/$label-lateness${RUN_TAG:-}.txt" '
		/^#/ {
			if ($0 ~ /Max Latencies/) { for (i = 4; i <= NF; i++) if ($i + 0 > mx) mx = $i + 0 }
			if ($0 ~ /Histogram Overflows/) { for (i = 4; i <= NF; i++) ovf += $i }
			next
		}
		NF >= 2 { b = $1 + 0; for (i = 2; i <= NF; i++) { c[b] += $i; tot += $i }
			if (b > maxb) maxb = b }
		function pct(q,   want, cum, b) {
			want = q * (tot + ovf); cum = 0
			for (b = 0; b <= maxb; b++) { cum += c[b]; if (cum >= want && want > 0) return b }
			return mx
		}
		END {
			n = tot + ovf
			sum = 0; for (b = 0; b <= maxb; b++) sum += b * c[b]
			print "# lateness_us cumulative_fraction (cyclictest)" > cdf
			cum = 0
			for (b = 0; b <= maxb; b++) if (c[b]) { cum += c[b]; printf "%d %.6f\n", b, cum / n > cdf }
			printf "{\"system\":\"cyclictest\",\"rep\":'"${RUN_REP:-1}"',\"label\":\"%s\",\"variant\":\"%s prio %d, 1 ms interval, %d threads\",", label, prio ? "SCHED_FIFO" : "SCHED_OTHER", prio, '"$NCPU"'
			printf "\"workload\":\"lateness\",\"env\":\"%s\",\"stress\":%d,\"n\":%d,\"duration_s\":%s,", env, stress, n, dur
			# wake-up samples, not messages: nothing to lose or duplicate
			printf "\"sent\":\"n/a\",\"delivered\":\"n/a\",\"early\":\"n/a\",\"lost\":\"n/a\",\"dup\":\"n/a\",\"corrupt\":\"n/a\",\"violation\":false,\"verdict\":\"ok (no messages: n = wake-up samples)\","
			printf "\"late_p50_us\":%s,\"late_p90_us\":%s,\"late_p99_us\":%s,\"late_p999_us\":%s,", pct(0.5), pct(0.9), pct(0.99), pct(0.999)
			printf "\"late_max_us\":%d,\"late_mean_us\":%.1f,\"ok\":true,\"error\":null,", mx, tot ? sum / tot : 0
			printf "\"notes\":\"timer-to-thread wake-up latency, the floor for every system%s\"}\n", ovf ? "; " ovf " samples over '"$((HIST_US / 1000))"' ms" : ""
		}' "$hist" >> "$RES"
}

# ------------------------------------------------------------------ dqbench
# the library's own tool, as a cross-check of the dq-* throughput rows
run_dqbench() { # label backend [--ioctl]
	local label=$1 backend=$2 line
	shift 2
	[ -x "$DQBENCH" ] || { stub_line dqbench "$label" throughput "$N" "skipped: dqbench not built"; return; }
	if [ "$backend" = kernel ] && [ "$HAVE_DQ" = 0 ]; then
		stub_line dqbench "$label" throughput "$N" "skipped: no /dev/dq"
		return
	fi
	log "run $label throughput"
	line=$(timeout -k 5 600 "$DQBENCH" --count "$N" --delay uniform:0-1s \
		--payload "$PAYLOAD" --backend "$backend" --seed "$SEED" --json "$@" 2>> "$LOG" | tail -n 1)
	if [ -z "$line" ]; then
		stub_line dqbench "$label" throughput "$N" "dqbench failed"
		return
	fi
	# flatten its JSON into this file's field names
	echo "$line" | awk -v label="$label" -v env="$MODE" '
		function num(k,   m) {
			if (match($0, "\"" k "\":-?[0-9.e+]+")) { m = substr($0, RSTART, RLENGTH); sub(/^[^:]*:/, "", m); return m }
			return "null"
		}
		function str(k,   m) {
			if (match($0, "\"" k "\":\"[^\"]*\"")) { m = substr($0, RSTART, RLENGTH); sub(/^[^:]*:"/, "", m); sub(/"$/, "", m); return m }
			return ""
		}
		{
			late = ""; if (match($0, /"late_us":\{[^}]*\}/)) late = substr($0, RSTART, RLENGTH)
			split("p50 p99 p999 max", ks, " ")
			for (i = 1; i <= 4; i++) {
				v[ks[i]] = "null"
				if (match(late, "\"" ks[i] "\":[0-9.]+")) { m = substr(late, RSTART, RLENGTH); sub(/^[^:]*:/, "", m); v[ks[i]] = m }
			}
			cpu = num("cpu_ns_per_msg")
			# its own verdict (ok) and every count it gives; a count it
			# does not give is a failure, not a zero
			bad = ""
			split("early lost duplicated corrupt rejected errors", cs, " ")
			for (i = 1; i <= 6; i++) {
				x = num(cs[i])
				if (x == "null") bad = bad (bad ? ", " : "") "no " cs[i] " count"
				else if (x + 0 > 0) bad = bad (bad ? ", " : "") cs[i] " " x
			}
			if (bad == "" && $0 !~ /"ok":true/) bad = "dqbench says FAIL"
			vd = bad == "" ? "ok" : "violation: " bad
			printf "{\"system\":\"dqbench\",\"rep\":'"${RUN_REP:-1}"',\"label\":\"%s\",\"variant\":\"%s/%s\",\"workload\":\"throughput\",\"env\":\"%s\",\"stress\":0,", label, str("backend"), str("path"), env
			printf "\"n\":%s,\"payload\":%s,\"sent\":%s,\"delivered\":%s,\"early\":%s,\"lost\":%s,\"dup\":%s,\"corrupt\":%s,", num("count"), num("payload"), num("submitted"), num("released"), num("early"), num("lost"), num("duplicated"), num("corrupt")
			printf "\"msgs_per_s\":%s,\"submit_per_s\":%s,\"cpu_us_per_msg\":%s,", num("release_rate"), num("submit_rate"), cpu == "null" ? "null" : cpu / 1000
			printf "\"late_p50_us\":%s,\"late_p99_us\":%s,\"late_p999_us\":%s,\"late_max_us\":%s,", v["p50"], v["p99"], v["p999"], v["max"]
			printf "\"errors\":%s,\"violation\":%s,\"verdict\":\"%s\",", num("errors"), bad == "" ? "false" : "true", vd
			printf "\"ok\":%s,\"error\":null,\"notes\":\"user/tools/dqbench --json; msgs/s is its release rate (first to last release)\"}\n", ($0 ~ /"ok":true/) ? "true" : "false"
		}' >> "$RES"
}

# ------------------------------------------------------------------ memory guard
mem_avail_bytes() {
	# %.0f: mawk's %d stops at 2^31
	awk '/^MemAvailable:/ { printf "%.0f\n", $2 * 1024 }' /proc/meminfo
}

# rough bytes per held message (payload included), to skip what cannot fit
est_bytes_per_msg() {
	case "$1" in
	redis-*) echo 1100 ;;
	beanstalkd) echo 1200 ;;
	timerfd) echo 2000 ;;
	uring-timeout) echo 1200 ;;
	fifo-sleep) echo 800 ;;
	dq-*) echo 640 ;; # 512 B slot, its record, the harness's 9 B
	*) echo 1500 ;;
	esac
}

fits() { # system n
	local need avail
	need=$(($2 * $(est_bytes_per_msg "$1")))
	avail=$(mem_avail_bytes)
	[ "$need" -lt $((avail * 8 / 10)) ] && return 0
	log "$1 with $2 held needs about $((need >> 20)) MB, $((avail >> 20)) MB available"
	return 1
}

fd_ok() { # n: can this process hold n descriptors?
	local hard
	hard=$(ulimit -Hn)
	[ "$hard" = unlimited ] && return 0
	[ "$1" -lt "$hard" ] && return 0
	(ulimit -Hn "$(($1 + 512))") 2> /dev/null
}

# ------------------------------------------------------------------ the runs
START=$(date +%s)
# the machine's 1-minute load average every 10 s while the runs go (this
# machine is shared: the report says how loaded it was)
(while :; do cut -d' ' -f1 /proc/loadavg; sleep 10; done) > "$OUT/load.txt" 2> /dev/null &
LOAD_PID=$!

# a. throughput
# tp_n SYSTEM MODE: the size SYSTEM runs workload a at in MODE (caps applied)
tp_n() {
	local n c
	n=$(default_n "$2")
	c=$(cap throughput "$1" "$2")
	[ -n "$c" ] && [ "$c" -lt "$n" ] && n=$c
	# without CAP_SYS_RESOURCE the descriptor limit throttles timerfd
	[ "$1" = timerfd ] && [ "$n" -gt 100000 ] && ! fd_ok "$n" && n=100000
	echo "$n"
}
# every size SYSTEM runs workload a at here, largest first: its own; for dq,
# also every other system's (each dq/peer ratio needs both at the same N);
# on the host, also the VM's (the TCG slowdown table compares the same N)
tp_sizes() {
	local sys=$1 x
	{
		tp_n "$sys" "$MODE"
		if [[ "$sys" == dq-* ]]; then
			for x in "${SYSTEMS[@]}"; do
				selected "$x" && tp_n "$x" "$MODE"
			done
		fi
		[ "$MODE" = host ] && tp_n "$sys" vm
	} | sort -u -n -r | awk -v top="$(tp_n "$sys" "$MODE")" '$1 <= top'
}
# run_peer, DQ_BENCH_REPEAT times (RUN_REP = 1..REPEAT)
rep_peer() {
	local rep
	for rep in $(seq 1 "$REPEAT"); do
		RUN_REP=$rep
		run_peer "$@"
	done
	RUN_REP=1
}

for s in "${SYSTEMS[@]}"; do
	selected "$s" || continue
	for n in $(tp_sizes "$s"); do
		RUN_N=$n
		RUN_TAG=-$n
		# delays 0: msgs/s is how fast messages go through, not the window
		rep_peer "$s" throughput 900 --n "$n" --grace-s 10 --dmin-ms 0 --dmax-ms 0
	done
done
RUN_TAG=
if selected dqbench; then
	for d in "${DQBENCH_RUNS[@]}"; do
		case "$d" in
		user) run_dqbench dqbench-user user ;;
		kernel) run_dqbench dqbench-uring kernel ;;
		kernel-ioctl) run_dqbench dqbench-ioctl kernel --ioctl ;;
		esac
	done
fi

# b. offered rate: each rate for LAT_S s, delays 0-1 s; then the lowest rate
# under CPU load; then the long hold
# can system $1 hold $2 messages here (descriptors, memory)? else why not
hold_problem() {
	if [ "$1" = timerfd ] && ! fd_ok "$(($2 + 256))"; then
		echo "one descriptor per message: RLIMIT_NOFILE cannot reach $2"
		return
	fi
	if ! fits "$1" "$2"; then
		echo "not enough memory for $2 held"
	fi
}
offer() { # system rate duration dmin_ms dmax_ms
	local sys=$1 r=$2 d=$3 held why
	# in flight at once: the rate times the longest delay (plus a tenth)
	held=$(awk -v r="$r" -v d="$d" -v m="$5" 'BEGIN { x = r * m / 1000 * 1.1; y = r * d; printf "%.0f", x < y ? x : y }')
	RUN_N=$((r * d))
	why=$(hold_problem "$sys" "$held")
	if [ -n "$why" ]; then
		system_def "$sys"
		for RUN_REP in $(seq 1 "$REPEAT"); do
			STUB_EXTRA="\"rate\":$r,\"offered_rate\":$r,\"dmin_ms\":$4,\"dmax_ms\":$5,\"cannot_offer\":1," \
				stub_line "$PEER" "$sys" lateness "$RUN_N" "skipped: cannot offer $r msg/s: $why"
		done
		RUN_REP=1
		log "skip $sys lateness at $r msg/s: $why"
		return
	fi
	rep_peer "$sys" lateness "$((d * 3 + $5 / 1000 + 120))" --rate "$r" \
		--duration "$d" --dmin-ms "$4" --dmax-ms "$5" --grace-s 10
}
for stress in 0 1; do
	STRESS_LABEL=$stress
	RUN_TAG=
	[ "$stress" = 1 ] && RUN_TAG=-stress
	if selected cyclictest; then
		for RUN_REP in $(seq 1 "$REPEAT"); do
			[ "$stress" = 1 ] && start_stress "$((LAT_S + 60))"
			run_cyclictest cyclictest-other 0 "$LAT_S"
			run_cyclictest cyclictest-fifo 95 "$LAT_S"
			stop_stress
		done
		RUN_REP=1
	fi
	# a smoke test checks the stress plumbing with cyclictest alone
	[ "$stress" = 1 ] && [ "$QUICK" = 1 ] && continue
	for s in "${SYSTEMS[@]}"; do
		selected "$s" || continue
		if [ "$stress" = 1 ]; then
			start_stress "$(((LAT_S * 3 + 130) * REPEAT))"
			RUN_TAG=-stress-$RATE
			offer "$s" "$RATE" "$LAT_S" 0 1000
			stop_stress
			continue
		fi
		for r in $RATES; do
			RUN_TAG=-$r
			offer "$s" "$r" "$LAT_S" 0 1000
		done
	done
done
STRESS_LABEL=0
# the two-thread shape beside dq-uring's one thread, in the same boot as
# cyclictest: the lowest rate only (its goal row in the report)
if [ "$MODE" = vm ] && selected dq-uring-2t; then
	r=${RATES%% *}
	RUN_TAG=-$r
	offer dq-uring-2t "$r" "$LAT_S" 0 1000
fi
# dq-uring at the budget's slack, the same rate and boot: its CPU goal row
if [ "$MODE" = vm ] && selected dq-uring-budget; then
	r=${RATES%% *}
	RUN_TAG=-$r
	offer dq-uring-budget "$r" "$LAT_S" 0 1000
fi
for s in "${SYSTEMS[@]}"; do
	selected "$s" || continue
	[ -z "$LONG_SYSTEMS" ] || [[ " $LONG_SYSTEMS " == *" $s "* ]] || continue
	RUN_TAG=-long-$LONG_S
	offer "$s" "$LONG_RATE" "$LAT_S" "$(((LONG_S - 1) * 1000))" "$((LONG_S * 1000))"
done
RUN_TAG=

# f. release capacity: CAP_N messages submitted ahead, all due in one second.
# The lead (how long the fill may take before the second starts) is longer
# for the servers, which take one round trip per message.
lead_for() {
	case "$1" in
	redis-* | beanstalkd) echo $((LEAD_S * 4)) ;;
	*) echo "$LEAD_S" ;;
	esac
}
for s in "${SYSTEMS[@]}"; do
	selected "$s" || continue
	RUN_N=$CAP_N
	RUN_TAG=
	why=$(hold_problem "$s" "$CAP_N")
	if [ -n "$why" ]; then
		system_def "$s"
		for RUN_REP in $(seq 1 "$REPEAT"); do
			stub_line "$PEER" "$s" capacity "$CAP_N" "skipped: cannot hold $CAP_N: $why"
		done
		RUN_REP=1
		log "skip $s capacity: $why"
		continue
	fi
	lead=$(lead_for "$s")
	settle_memory
	rep_peer "$s" capacity "$((lead * 3 + 120))" --n "$CAP_N" --lead-s "$lead" \
		--ontime-ms 50 --grace-s 10
done

# c, d, e. held messages: scale, idle, memory.  Each system gets the long
# idle window at the largest size it runs (IDLE_N unless capped lower).
# dq goes first: its biggest size needs the most memory.
PENDING_ORDER=()
for s in "${SYSTEMS[@]}"; do
	[[ "$s" == dq-* ]] && PENDING_ORDER=("$s" "${PENDING_ORDER[@]}") ||
		PENDING_ORDER+=("$s")
done
for s in "${PENDING_ORDER[@]}"; do
	selected "$s" || continue
	c=$(cap pending "$s")
	ns=()
	for n in $SCALE_NS $BIG_N; do
		# the biggest size (memory permitting) is for dq only: dq-uring
		# in the VM, dq-user natively
		if [ "$n" = "$BIG_N" ] && [[ "$s" != dq-uring ]] &&
			! { [ "$MODE" = host ] && [ "$s" = dq-user ]; }; then
			continue
		fi
		if [ -n "$c" ] && [ "$n" -gt "$c" ]; then
			system_def "$s"
			stub_line "$PEER" "$s" pending "$n" "not run: above this system's size cap ($c) under $MODE, see Reproducing"
			continue
		fi
		ns+=("$n")
	done
	long=
	for n in "${ns[@]}"; do
		[ "$n" -le "$IDLE_N" ] && long=$n
	done
	grace=30
	[ "$s" = fifo-sleep ] && grace=5 # blocked behind the held messages, by design
	for n in "${ns[@]}"; do
		idle=$SHORT_IDLE_S
		[ "$n" = "$long" ] && idle=$IDLE_S
		# dq: the long window at every size, so that each peer's long
		# window has a dq one at the same size to compare with
		[[ "$s" == dq-* ]] && [ "$n" -le "$IDLE_N" ] && idle=$IDLE_S
		RUN_N=$n
		RUN_TAG=-$n
		system_def "$s"
		settle_memory
		if ! fits "$s" "$((n + PROBE))"; then
			log "skip $s pending n=$n: not enough memory"
			stub_line "$PEER" "$s" pending "$n" "skipped: not enough memory for $n held"
			continue
		fi
		if [ "$s" = timerfd ] && ! fd_ok "$((n + PROBE + 256))"; then
			log "skip $s pending n=$n: descriptor limit"
			stub_line timerfd timerfd pending "$n" "skipped: RLIMIT_NOFILE below $((n + PROBE)) and cannot be raised"
			continue
		fi
		for RUN_REP in $(seq 1 "$REPEAT"); do
			settle_memory
			run_peer "$s" pending 1500 --n "$n" --probe "$PROBE" --idle-s "$idle" \
				--grace-s "$grace"
		done
		RUN_REP=1
	done
done
RUN_TAG=

log "done in $(($(date +%s) - START)) s: $(wc -l < "$RES") results in $RES"
kill "$LOAD_PID" 2> /dev/null
LOAD_PID=
# into env.json: "load":"min median max (samples)"
load=$(sort -n "$OUT/load.txt" 2> /dev/null | awk '{ a[++n] = $1 } END { if (n) printf "%s %s %s (%d samples)", a[1], a[int((n + 1) / 2)], a[n], n }')
sed -i "s/}\$/,\"load\":\"$load\"}/" "$OUT/env.json"

# the verdict of the whole run: every violation and every failed run
BAD=$(awk '
	function str(k,   m) {
		if (match($0, "\"" k "\":\"[^\"]*\"")) { m = substr($0, RSTART, RLENGTH); sub(/^[^:]*:"/, "", m); sub(/"$/, "", m); return m }
		return ""
	}
	function num(k,   m) {
		if (match($0, "\"" k "\":[^,}]*")) { m = substr($0, RSTART, RLENGTH); sub(/^[^:]*:/, "", m); return m }
		return ""
	}
	{
		vd = str("verdict")
		if ($0 ~ /"violation":true/ || vd ~ /^failed/ || vd == "")
			printf "  %s %s n=%s%s: %s\n", str("label"), str("workload"), num("n"),
				num("stress") == "1" ? " (stress)" : "", vd == "" ? "no verdict" : vd
	}' "$RES")
if [ -n "$BAD" ]; then
	log "FAILED: correctness violations or failed runs:"
	printf '%s\n' "$BAD" | tee -a "$LOG" >&2
	exit 1
fi
log "every run: no early, lost, duplicated or corrupt message"
exit 0
