#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1 OR MIT
#
# A dqbridge test ended from outside leaves nothing running: each case
# starts one of the end-to-end tests in a session of its own, waits for
# its bridge, records every process of it then (the session's, and
# redis-server and nginx by the pidfiles in its directory: redis-server
# daemonizes into a session of its own), signals it as a timeout or a
# person would, and checks that none of those processes is still there
# within a bound (lib.sh's watcher, which polls every 1 s, included).
# A process is the same one if its pid and start time
# (/proc/PID/stat) are; a zombie counts as gone.
#   TERM to the test's shell alone        its traps run cleanup
#   TERM to its process group (timeout)   the same, errexit test
#   KILL to its process group (timeout    no trap runs: lib.sh's watcher
#     -k, check.sh's end of a session)    ends redis-server
#   the same to dqbridge_shed_test.sh     its redis-server is not
#     (no lib.sh)                         daemonized: the KILL takes it
# TAP; last line "N passed, N failed".
#
# usage: dqbridge_term_test.sh DQBRIDGE_BINARY
set -u
BIN=${1:?usage: dqbridge_term_test.sh DQBRIDGE_BINARY}
BIN=$(cd "$(dirname "$BIN")" && pwd)/$(basename "$BIN")
HERE=$(cd "$(dirname "$0")" && pwd)
pass=0 fail=0 n=0
ok() { n=$((n + 1)); pass=$((pass + 1)); echo "ok $n - $*"; }
not_ok() { n=$((n + 1)); fail=$((fail + 1)); echo "not ok $n - $*"; }
for tool in redis-server redis-cli nginx python3 curl setsid; do
	command -v "$tool" > /dev/null || [ -x "/usr/sbin/$tool" ] ||
		{ echo "1..0 # SKIP $tool not installed (scripts/deps.sh)"; echo "0 passed, 0 failed, 1 skipped"; exit 0; }
done
[ -x "$BIN" ] || { echo "Bail out! no $BIN"; exit 1; }

W=$(mktemp -d /tmp/dqbridge-term.XXXXXX)
SID=
# pkill -s 0 is pkill's own session: never without a SID.
trap '[ -n "$SID" ] && pkill -KILL -s "$SID"; rm -rf "$W"' EXIT
trap 'exit 143' TERM
trap 'exit 130' INT

# stamp PID: "PID STARTTIME", or nothing if PID is gone or a zombie.
stamp() {
	local st
	st=$(cat "/proc/$1/stat" 2> /dev/null) || return 0
	st=${st##*) }		# after the command's name: state ppid ...
	set -- "$1" $st
	[ "$2" = Z ] || echo "$1 ${21}"
}
# alive FILE: the recorded processes (FILE: "PID STARTTIME CMD") still there.
alive() {
	local p s cmd
	while read -r p s cmd; do
		[ "$(stamp "$p")" = "$p $s" ] && echo "$p $cmd"
	done < "$1"
}

# run_case WHAT TEST SIGNAL TARGET BOUND READY: TEST (user/tests/NAME)
# until its bridge and a process matching READY (pgrep -f) run, then
# SIGNAL to TARGET (shell: its pid; group: its process group), nothing of
# it left BOUND seconds later.
run_case() {
	local what=$1 test=$2 sig=$3 target=$4 bound=$5 ready=$6 i d T rec left
	d=$W/$n
	mkdir -p "$d"
	DQB_TMPDIR=$d setsid bash -c 'exec "$@"' run "$HERE/$test" "$BIN" \
		> "$d/out.txt" 2>&1 < /dev/null &
	SID=$!		# setsid did not fork: a job of a shell without job control
	T=
	for i in $(seq 600); do		# its bridge running, up to 60 s
		T=$(ls -d "$d"/dqbridge-* 2> /dev/null | head -1)
		[ -n "$T" ] && pgrep -s "$SID" -f -- "-c $T/" > /dev/null &&
			pgrep -s "$SID" -f -- "$ready" > /dev/null && break
		T=
		sleep 0.1
	done
	if [ -z "$T" ]; then
		not_ok "$what: $test did not get its bridge and $ready running in 60 s"
		pkill -KILL -s "$SID"
		wait "$SID" 2> /dev/null
		return
	fi
	sleep 0.5
	rec=$d/recorded.txt
	# pgrep -f $T: lib.sh's watcher too (a session of its own).
	for p in $(pgrep -s "$SID") $(pgrep -f -- "$T") $(cat "$T/redis.pid" "$T/nginx.pid" 2> /dev/null); do
		s=$(stamp "$p")
		[ -n "$s" ] && echo "$s $(tr '\0' ' ' < "/proc/$p/cmdline" | cut -c1-120)"
	done | sort -u -n > "$rec"
	if [ "$target" = shell ]; then
		kill "-$sig" "$SID"
	else
		kill "-$sig" -- "-$SID"
	fi
	for i in $(seq $((bound * 10))); do
		[ -z "$(alive "$rec")" ] && break
		sleep 0.1
	done
	left=$(alive "$rec")
	if [ -z "$left" ]; then
		ok "$what: none of its $(wc -l < "$rec") processes ($(grep -c redis-server "$rec") redis-server, $(grep -c nginx "$rec") nginx, $(grep -c "$BIN" "$rec") dqbridge) left after $(((i - 1) / 10)).$(((i - 1) % 10)) s (bound $bound s)"
	else
		not_ok "$what: left running after $bound s: $(echo "$left" | tr '\n' ';')"
		echo "$left" | while read -r p _; do kill -9 "$p" 2> /dev/null; done
	fi
	pkill -KILL -s "$SID"
	wait "$SID" 2> /dev/null
	SID=
}

# dqbridge_test.sh in its main phase (producer.py running, the test's
# shell in a 4 s sleep), dqbridge_sync_test.sh with its producer in the
# foreground.
run_case "TERM to dqbridge_test.sh's shell alone" dqbridge_test.sh TERM shell 10 producer.py
run_case "TERM to dqbridge_sync_test.sh's process group (set -e)" dqbridge_sync_test.sh TERM group 10 producer.py
run_case "KILL to dqbridge_test.sh's process group" dqbridge_test.sh KILL group 5 producer.py
# A test without lib.sh: its redis-server a child in its process group.
run_case "KILL to dqbridge_shed_test.sh's process group" dqbridge_shed_test.sh KILL group 5 shed_sink.py

echo "1..$n"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
