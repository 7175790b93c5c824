# SPDX-License-Identifier: LGPL-2.1 OR MIT
#
# What dqbridge_test.sh and dqbridge_kafka_test.sh share (sourced): TAP
# helpers, the temporary directory and its cleanup, the downstream (nginx
# with limit_req in front of recorder.py), starting dqbridge, reading its
# metrics, and waiting for deliveries in the recorder's log.
# Set before sourcing: BIN, HERE, LIMIT, BURST; optionally
#   DQB_RECORDER   the app behind nginx: a program taking PORT LOG ARG
#                  (dqbridge_scen_recorder for rates recorder.py cannot
#                  hold), with DQB_RECORDER_ARG (its service time, us);
#                  default recorder.py
#   DQB_NGX_KEEPALIVE  nginx's idle upstream connections (32)
#   DQB_NGX_LOG_BUF    nginx access-log buffering, e.g. "buffer=64k
#                  flush=200ms" (default: a write per request)
# bench/bridge_peer.sh sources it too.

pass=0 fail=0 n=0
ok() { n=$((n + 1)); pass=$((pass + 1)); echo "ok $n - $*"; }
not_ok() { n=$((n + 1)); fail=$((fail + 1)); echo "not ok $n - $*"; }
check() { local what=$1; shift; if "$@"; then ok "$what"; else not_ok "$what"; fi; }
finish() {
	echo "1..$n"
	echo "$pass passed, $fail failed"
	[ "$fail" -eq 0 ]
	exit
}
skip_all() { echo "1..0 # SKIP $*"; echo "0 passed, 0 failed, 1 skipped"; exit 0; }
# ctl WORDS...: a command for fault_sink.py's control file, $T/control.
# Replaced whole (rename), never truncated in place: the sink reads it
# on every request and must never see it empty.
ctl() { echo "$*" > "$T/control.tmp" && mv "$T/control.tmp" "$T/control"; }

for tool in nginx python3 curl; do
	command -v "$tool" > /dev/null || [ -x "/usr/sbin/$tool" ] ||
		skip_all "$tool not installed (scripts/deps.sh)"
done
# For a test under set -e: cleanup without errexit (it kills processes
# that may be gone).  TERM, INT and HUP run it too (the traps below).
errexit_traps() {
	trap 'set +e; cleanup' EXIT
}

# need TOOL...: skip the whole test when one of them is not installed.
need() {
	local t
	for t; do command -v "$t" > /dev/null || skip_all "$t not installed (scripts/deps.sh)"; done
}
NGINX=$(command -v nginx || echo /usr/sbin/nginx)
[ -x "$BIN" ] || { echo "Bail out! no $BIN"; exit 1; }

# DQB_TMPDIR: where the test's directory goes (default /tmp);
# dqbridge_term_test.sh finds it there.
T=$(mktemp -d "${DQB_TMPDIR:-/tmp}/dqbridge-test.XXXXXX")
pids=()
# pidfile_kill SIG FILE COMM: the process FILE names, if it is still COMM
# (not a pid reused since).
pidfile_kill() {
	local p c
	read -r p 2> /dev/null < "$2" || return 0
	read -r c 2> /dev/null < "/proc/$p/comm" || return 0
	[ "$c" = "$3" ] && kill "-$1" "$p" 2> /dev/null
	return 0
}
# descendants PID: every process below PID (children, theirs, ...).
descendants() {
	ps -e -o pid= -o ppid= | awk -v top="$1" -v self="$BASHPID" '
		{ parent[$1] = $2 }
		END { for (p in parent) {
			for (q = parent[p]; q > 1; q = parent[q]) {
				if (q == self || p == self) break
				if (q == top) { print p; break }
			} } }'
}
# Everything the test started: nginx (master and workers), redis-server
# (daemonized: not a child, by its pidfile, the one running now after a
# restart too), the pids recorded, the bridge, and whatever else of this
# shell's still runs (producers, pollers, subshells, the watcher below).
# A second TERM or INT does not cut it short.
cleanup() {
	local p
	trap '' TERM INT HUP PIPE
	# nginx: TERM, so that the master takes its workers with it.
	[ -n "${NGINX_PID:-}" ] && kill -TERM "$NGINX_PID" 2> /dev/null
	pidfile_kill TERM "$T/nginx.pid" nginx
	pidfile_kill KILL "$T/redis.pid" redis-server
	for p in "${pids[@]}" ${BRIDGE_PID:-}; do kill -9 "$p" 2> /dev/null; done
	for p in $(descendants $$); do kill -9 "$p" 2> /dev/null; done
	wait 2> /dev/null
	rm -f "$T/redis.pid" "$T/nginx.pid"
	if [ "$fail" -eq 0 ] && [ -z "${DQB_KEEP:-}" ]; then rm -rf "$T"; else echo "# kept $T"; fi
}
# Every test: cleanup on exit, and on TERM (timeout(1), check.sh), INT
# (^C) and HUP, which end the test through it.  A trap runs once the
# foreground command returns: check.sh signals the whole suite, that
# command too.  The signal's trap ignores the next one first: a TERM
# often comes twice (pkill, then timeout and make passing it on), and an
# "exit" run again in the EXIT trap would end the shell mid-cleanup.
# Tests with an EXIT trap of their own set it after this.
on_signal() {
	trap '' TERM INT HUP PIPE
	exit "$1"
}
trap cleanup EXIT
trap 'on_signal 143' TERM
trap 'on_signal 130' INT
trap 'on_signal 129' HUP
# A KILL runs no trap: what the test started goes with the process group
# or session signalled (check.sh kills the suite's session), but for
# redis-server, daemonized into a session of its own, and nginx if only
# this shell was killed.  A watcher out of both (setsid) ends them by
# their pidfiles once this shell is gone; cleanup kills it with the rest.
setsid bash -c "$(declare -f pidfile_kill)"'
	while kill -0 "$1" 2> /dev/null; do sleep 1; done
	pidfile_kill TERM "$2/nginx.pid" nginx
	pidfile_kill KILL "$2/redis.pid" redis-server' dqb-watch "$$" "$T" < /dev/null > /dev/null 2>&1 &

free_port() {
	python3 "$HERE/free_port.py"
}

# A redis-server of the test's own on a free port, RP; rcli talks to it.
rcli() { timeout 10 redis-cli -p "$RP" "$@"; }
# FIELD of the first consumer group of stream "in" (XINFO GROUPS: the
# tests use one group, "bridge"), e.g. pending, entries-read, lag.
group() { rcli XINFO GROUPS in | awk -v f="$1" 'p {print; exit} $0 == f {p = 1}'; }
# FIELD VALUE TRIES: poll group FIELD every 0.1 s until it is VALUE (0),
# at most TRIES times (1).
group_reaches() {
	local i
	for i in $(seq "$3"); do
		[ "$(group "$1" 2> /dev/null)" = "$2" ] && return 0
		sleep 0.1
	done
	return 1
}
start_redis() {
	RP=$(free_port)
	redis-server --port "$RP" --bind 127.0.0.1 --save "" --appendonly no --dir "$T" \
		--logfile "$T/redis.log" --daemonize yes --pidfile "$T/redis.pid" > /dev/null 2>&1
	for _ in $(seq 50); do rcli ping > /dev/null 2>&1 && break; sleep 0.1; done
	pids+=("$(cat "$T/redis.pid")")
}
AP=$(free_port) NP=$(free_port) MP=$(free_port)

# The downstream: recorder.py on AP behind nginx on NP (limit_req,
# LIMIT r/s, burst BURST, 429 with Retry-After 1 over it); each request's
# time, status and Idempotency-Key in $T/nginx-access.log.
downstream_nginx_conf() {
	local user_line=""
	[ "$(id -u)" = 0 ] && user_line="user root;"
	mkdir -p "$T/ngx"
	cat > "$T/nginx.conf" <<-NGX
	$user_line
	daemon off;
	worker_processes 1;
	pid $T/nginx.pid;
	error_log $T/nginx-error.log warn;
	events { worker_connections 512; }
	http {
		access_log off;
		client_body_temp_path $T/ngx/body;
		proxy_temp_path $T/ngx/proxy;
		fastcgi_temp_path $T/ngx/fastcgi;
		uwsgi_temp_path $T/ngx/uwsgi;
		scgi_temp_path $T/ngx/scgi;
		log_format rec '\$msec \$status \$http_idempotency_key \$request_time';
		limit_req_zone \$server_port zone=down:1m rate=${LIMIT}r/s;
		limit_req_status 429;
		upstream recorder { server 127.0.0.1:$AP; keepalive ${DQB_NGX_KEEPALIVE:-32}; }
		server {
			listen 127.0.0.1:$NP;
			access_log $T/nginx-access.log rec ${DQB_NGX_LOG_BUF:-};
			location / {
				limit_req zone=down burst=$BURST nodelay;
				add_header Retry-After 1 always;
				proxy_pass http://recorder;
				proxy_http_version 1.1;
				proxy_set_header Connection "";
			}
		}
	}
	NGX
}

# Empty the downstream's records of the readiness probe.  nginx logs a
# request after answering it, so the probe's access-log line can land
# after curl has returned (and after a truncation made then: a line of
# no Idempotency-Key among the bridge's); wait for it first, up to 5 s.
# The recorders log a request before answering it.
forget_probe() {
	local i
	for i in $(seq 50); do
		[ -s "$T/nginx-access.log" ] && break
		sleep 0.1
	done
	: > "$T/recorder.log"; : > "$T/nginx-access.log"
}

start_downstream() {
	local i
	if [ -n "${DQB_RECORDER:-}" ]; then
		"$DQB_RECORDER" "$AP" "$T/recorder.log" "${DQB_RECORDER_ARG:-0}" > "$T/recorder.err" 2>&1 &
	else
		python3 "$HERE/dqbridge/recorder.py" "$AP" "$T/recorder.log" > "$T/recorder.err" 2>&1 &
	fi
	pids+=($!)
	downstream_nginx_conf
	"$NGINX" -p "$T" -e "$T/nginx-error.log" -c "$T/nginx.conf" > /dev/null 2>&1 &
	NGINX_PID=$!
	for i in $(seq 50); do
		curl -sf -o /dev/null "http://127.0.0.1:$NP/" -d x && break
		sleep 0.1
	done
	forget_probe
}

BRIDGE_PID=
start_bridge() {
	"$BIN" -c "$T/dqbridge.conf" >> "$T/bridge.log" 2>&1 &
	BRIDGE_PID=$!
	local i
	for i in $(seq 50); do
		curl -sf "http://127.0.0.1:$MP/metrics" > /dev/null && return 0
		sleep 0.1
	done
	return 1
}
metric() { curl -sf "http://127.0.0.1:$MP/metrics" | awk -v m="dqbridge_$1" '$1 == m {print $2}'; }
# Every 200 ms: the metrics the test asserts on, with a time stamp.
poll_metrics() {
	while sleep 0.2; do
		curl -sf "http://127.0.0.1:$MP/metrics" |
			awk -v t="$(date +%s.%N)" '/^dqbridge_(held|diverted_total|http_429_total|rate|inflight|source_paused|pauses_total) / {printf "%s %s %s\n", t, $1, $2}'
	done >> "$T/metrics.log" 2> /dev/null
}
delivered_all() {	# every id of $1 but the refused one has a 200
	python3 - "$1" "$T/recorder.log" "$FAIL_ID" <<'PY'
import sys
want = [l.split()[0] for l in open(sys.argv[1])]
got = {l.split()[1] for l in open(sys.argv[2]) if l.split()[3] == "200"}
sys.exit(0 if all(m in got or m == sys.argv[3] for m in want) else 1)
PY
}
wait_delivered() {	# FILE SECONDS
	local end=$((SECONDS + $2))
	while [ $SECONDS -lt $end ]; do
		delivered_all "$1" && return 0
		sleep 0.5
	done
	return 1
}
