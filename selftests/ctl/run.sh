#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1 OR MIT
#
# Control-plane tests of dq: the generic netlink family through dqctl, named
# queues through dqpeer (DQ_IOC_ATTACH + mmap + DQ_IOC_SUBMIT/WAIT), pacing.
# Runs inside the test VM as root with dq.ko loaded:
#
#   make -C selftests/ctl            (builds dqpeer and user/build/dqctl)
#   selftests/vm/run -- selftests/ctl/run.sh [TEST...]
#
# Prints TAP; the last line is "N passed, N failed, N skipped".  Exit status
# 0 when nothing failed.  A known kernel limitation is reported as "# TODO"
# and counted in neither; a test exits 77 when the kernel lacks a feature it
# needs: "# SKIP", counted as skipped.  env: DQCTL, DQPEER (the
# binaries), DQ_CTL_WORKDIR (parent of the work directory, default /tmp),
# DQ_CTL_KEEP=1 keeps it, DQ_CTL_TIMEOUT_SCALE (a whole number)
# multiplies every test's time limit (default 1), NLSTRESS (the binary) and DQ_NLSTRESS_SECS (default
# 20) for nlstress, DQ_CTL_SERIAL=1 runs every test alone (see TESTS:
# tests that cannot disturb each other run two at a time).

set -u

REPO=$(cd "$(dirname "$0")/../.." && pwd)
DQCTL_SRC=${DQCTL:-$REPO/user/build/dqctl}
DQPEER_SRC=${DQPEER:-$REPO/selftests/build/ctl/dqpeer}
ATTACH_PEER_SRC=${ATTACH_PEER:-$REPO/user/build/tests/attach_peer}
export DQ_KO=${DQ_KO:-$REPO/dq.ko}
WORK=$(mktemp -d "${DQ_CTL_WORKDIR:-/tmp}/dqctl-test.XXXXXX")
export WORK
export NOBODY_UID=65534 NOBODY_GID=65534

# ------------------------------------------------------------ helpers
# Each test runs in a bash of its own (see run_test); these are exported.

die() {
	echo "$*"
	exit 1
}

# run CMD...: stdout to $WORK/out, stderr to $WORK/err, status in $RC.
run() {
	"$@" > "$WORK/out" 2> "$WORK/err"
	RC=$?
}

show_io() {
	sed 's/^/  out: /' "$WORK/out" | head -n 20
	sed 's/^/  err: /' "$WORK/err" | head -n 20
}

# ok CMD...: must exit 0.
ok() {
	run "$@"
	if [ "$RC" -ne 0 ]; then
		echo "'$*' exited $RC, expected 0"
		show_io
		exit 1
	fi
}

# fails RC TEXT CMD...: must exit RC with TEXT (fixed string) on stderr.
fails() {
	local want=$1 text=$2
	shift 2
	run "$@"
	if [ "$RC" -ne "$want" ]; then
		echo "'$*' exited $RC, expected $want"
		show_io
		exit 1
	fi
	# Read and matched by bash itself: a grep and a head per check cost
	# ~2 process starts, seconds each on the debug kernel under TCG.
	read_err
	if [[ "$ERR" != *"$text"* ]]; then
		echo "'$*': stderr lacks '$text'"
		show_io
		exit 1
	fi
	echo "  '$*' -> $RC: ${ERR%%$'\n'*}"
}

# read_err: $WORK/err into $ERR, without starting a process.
read_err() {
	ERR=
	IFS= read -r -d '' ERR < "$WORK/err"
}

# has_errno N: the last command (dqctl -v) reported errno N, exactly.
has_errno() {
	read_err
	[[ "$ERR" == *"(errno $1:"* ]] ||
		die "expected errno $1; stderr: ${ERR//$'\n'/ }"
}

# py_dq OP...: ioctls on one /dev/dq file, in order; prints, flushed, one
# line per OP: "ok" (setup: "ok id=QUEUE_ID pid=PID") or the errno's name.
#   setup          DQ_IOC_SETUP of a 4 x 64 B private queue
#   attach NAME    DQ_IOC_ATTACH
#   sleep SECONDS
py_dq() {
	python3 - "$@" <<'PY'
import errno, fcntl, os, struct, sys, time

def iowr(nr, size):
    return (3 << 30) | (size << 16) | (0xDA << 8) | nr

SETUP, ATTACH = iowr(0x00, 152), iowr(0x06, 192)
fd = os.open("/dev/dq", os.O_RDWR)
args = sys.argv[1:]
while args:
    op = args.pop(0)
    if op == "sleep":
        time.sleep(float(args.pop(0)))
        continue
    if op == "setup":
        req = SETUP
        buf = bytearray(struct.pack("8I", 0, 4, 64, 0, 0, 0xFFFFFFFF, 0, 0) + bytes(120))
    elif op == "attach":
        req = ATTACH
        buf = bytearray(args.pop(0).encode().ljust(32, b"\0") + bytes(8 + 152))
    else:
        sys.exit("py_dq: unknown op " + op)
    try:
        fcntl.ioctl(fd, req, buf)
        qid = struct.unpack_from("I", buf, 40 if req == SETUP else 80)[0]
        print("ok id=%d pid=%d" % (qid, os.getpid()) if req == SETUP else "ok",
              flush=True)
    except OSError as e:
        print(errno.errorcode[e.errno], flush=True)
PY
}

# jq on $WORK/out (or a file given with -f FILE).
j() {
	local f=$WORK/out
	if [ "$1" = -f ]; then
		f=$2
		shift 2
	fi
	jq -r "$@" "$f"
}

eq() {
	[ "$1" = "$2" ] || die "$3: got '$1', expected '$2'"
}

# jeq [-f FILE] PATH WANT WHAT...: eq for each (jq PATH on $WORK/out or
# FILE, WANT, WHAT), in order, with one jq for all of them: a jq start
# costs ~0.1 s on a stock kernel under TCG and seconds on the debug one.
jeq() {
	local f=$WORK/out prog='' sep='' k
	local -a a v
	if [ "$1" = -f ]; then
		f=$2
		shift 2
	fi
	a=("$@")
	[ $((${#a[@]} % 3)) -eq 0 ] || die "jeq: PATH WANT WHAT triples expected: $*"
	for ((k = 0; k < ${#a[@]}; k += 3)); do
		prog+="$sep(${a[k]})"
		sep=", "
	done
	# a file, not <(...): the VM lab's guest has no /dev/fd
	jq -r "$prog" "$f" > "$WORK/jeq.out"
	mapfile -t v < "$WORK/jeq.out"
	[ ${#v[@]} -eq $((${#a[@]} / 3)) ] ||
		die "jq '$prog' on $f gave ${#v[@]} values, expected $((${#a[@]} / 3))"
	for ((k = 0; k < ${#a[@]}; k += 3)); do
		eq "${v[k / 3]}" "${a[k + 1]}" "${a[k + 2]}"
	done
}

# in_range VALUE LO HI WHAT (numbers, may be fractional)
in_range() {
	awk -v v="$1" -v lo="$2" -v hi="$3" 'BEGIN { exit !(v >= lo && v <= hi) }' ||
		die "$4: $1 not in [$2, $3]"
	echo "  $4 = $1 (want $2 .. $3)"
}

# A queue's field (jq path) from dqctl show/stats --json.
qget() {
	local cmd=$1 name=$2 path=$3
	"$DQCTL" --json "$cmd" "$name" > "$WORK/q.json" 2> "$WORK/q.err" ||
		die "dqctl $cmd $name failed: $(cat "$WORK/q.err")"
	jq -r "$path" "$WORK/q.json"
}

as_nobody() {
	setpriv --reuid="$NOBODY_UID" --regid="$NOBODY_GID" --clear-groups "$@"
}

now_ns() {
	"$DQPEER" now
}

node_memfree_kb() {
	awk '/MemFree/ { print $4 }' "/sys/devices/system/node/node$1/meminfo"
}

# A fresh memory cgroup, $CG: what a queue created from inside it allocates
# (arena, rings, records: all __GFP_ACCOUNT) is charged to it, and stays
# until the queue is freed, whoever frees it.  Its memory.current is the
# queue's own page accounting, unlike a node's MemFree, which misses the
# pages freed onto per-CPU lists (large on 6.7+ kernels).
cg_make() {
	local root=/sys/fs/cgroup
	[ -f "$root/cgroup.controllers" ] || mount -t cgroup2 cgroup2 "$root" ||
		die "no cgroup2 on $root"
	grep -qw memory "$root/cgroup.controllers" || die "no memory controller"
	grep -qw memory "$root/cgroup.subtree_control" ||
		echo +memory > "$root/cgroup.subtree_control" || die "cannot enable memory"
	CG=$root/dq-ctl-test.$$
	mkdir "$CG" || die "cannot make $CG"
}

# in_cg CMD...: CMD inside $CG.
in_cg() {
	sh -c 'echo $$ > "$0/cgroup.procs" && exec "$@"' "$CG" "$@"
}

cg_kb() {
	echo $(($(cat "$CG/memory.current") / 1024))
}

# Wait until FILE contains TEXT (up to 20 s).  Read by bash itself, not
# grep: a process start per look costs seconds on the debug kernel.
wait_for_text() {
	local i c
	for i in $(seq 200); do
		c=
		{ IFS= read -r -d '' c < "$1"; } 2> /dev/null
		[[ "$c" == *"$2"* ]] && return 0
		sleep 0.1
	done
	die "timed out waiting for '$2' in $1"
}

export -f die run show_io ok fails read_err has_errno py_dq j eq jeq in_range qget \
	as_nobody now_ns node_memfree_kb cg_make in_cg cg_kb wait_for_text

cleanup_queues() {
	"$DQCTL" --json list 2> /dev/null | jq -r '.[].name' 2> /dev/null |
		while IFS= read -r n; do
			[ -n "$n" ] && "$DQCTL" delete "$n" --force > /dev/null 2>&1
		done
}

# ------------------------------------------------------------- tests

# The randomized stress of the netlink family (selftests/ctl/nlstress.c)
# for ${DQ_NLSTRESS_SECS:-20} s: every answer judged against the family's
# policies and a model of the queues, the socket usable throughout, none
# of its queues left.  With the arena limit (module parameter
# max_arena_bytes) at 16 MiB, restored after.
t_nlstress() {
	local p=/sys/module/dq/parameters/max_arena_bytes old rc
	old=$(cat "$p") || die "cannot read $p"
	echo 16777216 > "$p" || die "cannot set $p"
	"$NLSTRESS" -t "${DQ_NLSTRESS_SECS:-20}"
	rc=$?
	echo "$old" > "$p"
	return "$rc"
}
export -f t_nlstress

# dqctl finds the family; empty list; JSON shapes.
t_family_and_empty_list() {
	ok "$DQCTL" list
	grep -q '^ID  NAME' "$WORK/out" || die "no table header"
	ok "$DQCTL" --json list
	jeq 'type' array "list --json type" \
		'length' 0 "queues at start"
	ok "$DQCTL" --json stats
	eq "$(j 'type')" array "stats --json type"
	ok "$DQCTL" --version
}

# Usage errors are caught before the kernel is asked: exit 1.
t_usage_errors() {
	fails 1 "create needs --slots" "$DQCTL" create q
	fails 1 "create needs one queue NAME" "$DQCTL" create --slots 1 --slot-size 64
	fails 1 "is not a whole number" "$DQCTL" create q --slots 12x --slot-size 64
	fails 1 "is not a whole number" "$DQCTL" create q --slots -1 --slot-size 64
	fails 1 "is too large" "$DQCTL" create q --slots 4294967296 --slot-size 64
	fails 1 "needs a unit" "$DQCTL" create q --slots 1 --slot-size 64 --granularity 50
	fails 1 "unknown unit" "$DQCTL" create q --slots 1 --slot-size 64 --granularity 5d
	# minutes are a unit (for --visibility), but far above the granularity limit
	fails 1 "too large" "$DQCTL" create q --slots 1 --slot-size 64 --granularity 5m
	fails 1 "too large" "$DQCTL" create q --slots 1 --slot-size 64 --granularity 5s
	fails 1 "not an octal mode" "$DQCTL" create q --slots 1 --slot-size 64 --mode 0999
	fails 1 "no user" "$DQCTL" create q --slots 1 --slot-size 64 --uid no-such-user
	fails 1 "too long" "$DQCTL" create q23456789012345678901234567890123 --slots 1 --slot-size 64
	fails 1 "unknown option '--bogus'" "$DQCTL" list --bogus
	fails 1 "unknown command 'frob'" "$DQCTL" frob
	fails 1 "set needs one of" "$DQCTL" set q
	fails 1 "does not take --slots" "$DQCTL" set q --slots 5
	fails 1 "give NAME or --id" "$DQCTL" show q --id 3
	fails 1 "monitor takes no arguments" "$DQCTL" monitor q
	"$DQCTL" --help | grep -q '^usage: dqctl' || die "--help"
}

# create with every attribute; show/list report each one back.
t_create_every_attribute() {
	ok "$DQCTL" create all --slots 100 --slot-size 500 --submit-entries 100 \
		--ready-entries 200 --node 1 --granularity 100us --max-pending 80 \
		--rate 500 --burst 4 --high-wm 60 --uid "$NOBODY_UID" \
		--gid "$NOBODY_GID" --mode 0640
	grep -q '^all  id [0-9]*  node 1' "$WORK/out" || die "create prints the queue"
	ok "$DQCTL" --json show all
	jeq .name all name \
		.slots 100 slots \
		.slot_size 512 "slot_size (500 rounded up to 64)" \
		.submit_entries 128 "submit_entries (rounded to 2^n)" \
		.ready_entries 256 "ready_entries (rounded to 2^n)" \
		.node 1 node \
		.granularity_ns 100000 granularity_ns \
		.max_pending 80 max_pending \
		.rate 500 rate \
		.burst 4 burst \
		.high_wm 60 high_wm \
		.uid "$NOBODY_UID" uid \
		.gid "$NOBODY_GID" gid \
		.mode 0640 mode \
		.users 0 users
	ok "$DQCTL" show all
	grep -q 'granularity 100us  max pending 80  high watermark 60' "$WORK/out" ||
		die "human show: granularity line"
	grep -q 'pacing 500/s  burst 4' "$WORK/out" || die "human show: pacing"
	grep -q 'mode 0640' "$WORK/out" || die "human show: mode"
	# by name for uid/gid, and defaults
	ok "$DQCTL" create dflt --slots 10 --slot-size 64 --uid nobody --gid root
	ok "$DQCTL" --json show dflt
	jeq .uid "$NOBODY_UID" "uid by name" \
		.gid 0 "gid by name" \
		.granularity_ns 50000 "default granularity" \
		.max_pending 10 "default max_pending = slots" \
		.rate 0 "default rate (unpaced)" \
		.high_wm 0 "default high_wm" \
		.mode 0600 "default mode" \
		.submit_entries 64 "default submit ring"
	# --node -1: the caller's node; a burst alone is kept for a later rate
	ok "$DQCTL" create anynode --slots 10 --slot-size 64 --node -1 --burst 7
	ok "$DQCTL" --json show anynode
	case "$(j .node)" in 0 | 1) ;; *) die "node -1 gave node $(j .node)" ;; esac
	jeq .burst 7 "burst without rate" \
		.rate 0 "rate with burst alone"
	# list: table and JSON array, sorted by id
	ok "$DQCTL" list
	grep -q '^ *[0-9]*  all  *1  *100  *512  *500/s  *4  *80  *60  nobody:nogroup  0640  *0  *no  *-  *no$' "$WORK/out" ||
		{ cat "$WORK/out"; die "list table row"; }
	ok "$DQCTL" --json list
	jeq 'length' 3 "list length" \
		'[.[].name] | join(",")' "all,dflt,anynode" "list order"
	# by id
	id=$(qget show all .id)
	ok "$DQCTL" --json show --id "$id"
	eq "$(j .name)" all "show --id"
	ok "$DQCTL" --json stats --id "$id"
	eq "$(j .stats.submitted)" 0 "stats --id"
}

# set: every attribute, by name and by id; takes effect in show.
t_set_every_attribute() {
	ok "$DQCTL" create s --slots 64 --slot-size 64
	ok "$DQCTL" --json set s --rate 250 --burst 3 --max-pending 50 --high-wm 40
	eq "$(j .rate)" 250 "set prints the new rate"
	ok "$DQCTL" --json show s
	jeq .rate 250 rate \
		.burst 3 burst \
		.max_pending 50 max_pending \
		.high_wm 40 high_wm
	ok "$DQCTL" set s --rate 1000
	ok "$DQCTL" --json show s
	jeq .rate 1000 "rate alone" \
		.burst 3 "burst kept"
	ok "$DQCTL" set s --burst 9
	ok "$DQCTL" --json show s
	jeq .burst 9 "burst alone" \
		.rate 1000 "rate kept"
	ok "$DQCTL" set s --max-pending 0
	eq "$(qget show s .max_pending)" 64 "max-pending 0 = slots"
	ok "$DQCTL" set s --high-wm 0
	eq "$(qget show s .high_wm)" 0 "high-wm off"
	ok "$DQCTL" set s --rate 0
	eq "$(qget show s .rate)" 0 "rate 0 (unpaced)"
	ok "$DQCTL" show s
	grep -q 'pacing off' "$WORK/out" || die "human: pacing off"
	id=$(qget show s .id)
	ok "$DQCTL" set --id "$id" --rate 77
	eq "$(qget show s .rate)" 77 "set --id"
	fails 2 "no such queue" "$DQCTL" -v set nope --rate 1
	has_errno 2	# ENOENT
	fails 2 "integer out of range" "$DQCTL" -v set s --burst 0
	has_errno 34	# ERANGE
	fails 2 "integer out of range" "$DQCTL" set s --rate 1000000001
	fails 2 "max_pending above the slot count" "$DQCTL" -v set s --max-pending 65
	has_errno 34	# ERANGE
	eq "$(qget show s .max_pending)" 64 "max_pending after the refused set"
}

# stats: one queue (object), all (array), per node; human tables.
t_stats() {
	ok "$DQCTL" create st --slots 64 --slot-size 64 --node 0
	ok "$DQPEER" produce st -n 10 --delay 60000000000
	ok "$DQCTL" --json stats st
	jeq 'type' object "stats NAME --json type" \
		.stats.submitted 10 submitted \
		.stats.pending 10 pending \
		.stats.released 0 released \
		.stats.rejected_total 0 rejected_total \
		'.stats.rejected | keys | join(",")' "busy,flags,full,key,len,resv,slot,time" \
		"rejected reasons"
	missing=$(j '[("paced", "ready_backlog", "cancelled", "ring_errors",
		"late_ewma_ns", "late_max_ns", "timer_fires", "throttled") as $k |
		select(.stats[$k] == null) | "stats." + $k] | join(" ")')
	[ -z "$missing" ] || die "${missing%% *} missing"
	# a busy slot is rejected and counted by reason
	ok "$DQPEER" produce st -n 1 --allow-reject
	eq "$(qget stats st .stats.rejected.busy)" 1 "rejected.busy"
	ok "$DQCTL" stats st
	grep -q 'pending 10  paced 0' "$WORK/out" || die "human stats"
	grep -q 'rejected 1 (busy 1)' "$WORK/out" || die "human stats rejected"
	ok "$DQCTL" stats
	grep -q '^ID  NAME  NODE  PENDING' "$WORK/out" || die "stats table header"
	grep -q '  st  ' "$WORK/out" || die "stats table row"
	ok "$DQCTL" --json stats
	eq "$(j '.[] | select(.name == "st") | .stats.pending')" 10 "stats dump"
	ok "$DQCTL" --json stats --node 0
	eq "$(j .node)" 0 "node stats node"
	p0=$(j .pending)
	[ "$p0" -ge 10 ] || die "node 0 pending $p0 < 10"
	[ "$(j .timer_fires)" != null ] || die "node timer_fires"
	ok "$DQCTL" --json stats --node 1
	ok "$DQCTL" stats --node 0
	grep -q '^node 0  pending' "$WORK/out" || die "human node stats"
	fails 2 "no engine on that node" "$DQCTL" -v stats --node 7
	has_errno 2	# ENOENT
	fails 2 "no engine on that node" "$DQCTL" -v stats --node -1
	has_errno 2	# ENOENT: -1 names no node here
	fails 2 "valid range" "$DQCTL" -v stats --node 5000
	has_errno 34	# ERANGE
	fails 2 "no such queue" "$DQCTL" -v stats nope
	has_errno 2	# ENOENT
	fails 2 "no such queue" "$DQCTL" stats --id 99999
}

# Bad attributes, built raw: each refused with an extack message.
t_bad_attributes() {
	# wrong type
	fails 2 "invalid attribute length (slots: u32" \
		"$DQCTL" -v raw new name=x slots:u64=10 slot_size=64
	has_errno 22	# EINVAL
	fails 2 "invalid attribute length (rate: u64" \
		"$DQCTL" raw new name=x slots=1 slot_size=64 rate:u32=5
	fails 2 "Attribute failed policy validation (name: a NUL-terminated string" \
		"$DQCTL" -v raw new name:bytes=abc slots=1 slot_size=64
	has_errno 22	# EINVAL
	fails 2 "(force: a flag" "$DQCTL" -v raw del name=x force:u32=1
	has_errno 34	# ERANGE: a flag with a payload
	# out of range
	fails 2 "integer out of range (slots: u32, valid range 1..16777216)" \
		"$DQCTL" -v create x --slots 0 --slot-size 64
	has_errno 34	# ERANGE
	fails 2 "(slots: u32, valid range 1..16777216)" \
		"$DQCTL" create x --slots 16777217 --slot-size 64
	fails 2 "(slot-size: u32, valid range 64..1048576)" \
		"$DQCTL" create x --slots 1 --slot-size 63
	fails 2 "(slot-size: u32, valid range 64..1048576)" \
		"$DQCTL" create x --slots 1 --slot-size 1048577
	fails 2 "(submit-entries: u32, valid range 0..1048576)" \
		"$DQCTL" create x --slots 1 --slot-size 64 --submit-entries 2000000
	fails 2 "(ready-entries: u32, valid range 0..1048576)" \
		"$DQCTL" create x --slots 1 --slot-size 64 --ready-entries 2000000
	fails 2 "(granularity: u32, valid range 0..1000000000)" \
		"$DQCTL" create x --slots 1 --slot-size 64 --granularity 2s
	fails 2 "(rate: u64, valid range 0..1000000000)" \
		"$DQCTL" create x --slots 1 --slot-size 64 --rate 1000000001
	fails 2 "(burst: u32, valid range 1..16777216)" \
		"$DQCTL" create x --slots 1 --slot-size 64 --rate 1 --burst 0
	fails 2 "(node: s32, valid range -1.." \
		"$DQCTL" create x --slots 1 --slot-size 64 --node 5000
	fails 2 "(node: s32, valid range -1.." \
		"$DQCTL" raw new name=x slots=1 slot_size=64 node:s32=-2
	fails 2 "(mode: u32, valid range 0..511)" \
		"$DQCTL" raw new name=x slots=1 slot_size=64 mode=512
	fails 2 "(id: u32, valid range 1.." "$DQCTL" -v raw get id=0
	has_errno 34	# ERANGE
	# semantic checks in dq.ko
	fails 2 "node not online" "$DQCTL" -v create x --slots 1 --slot-size 64 --node 3
	has_errno 22	# EINVAL
	fails 2 "max_arena_bytes" "$DQCTL" -v create x --slots 16777216 --slot-size 1048576
	has_errno 7	# E2BIG
	fails 2 "uid not mapped" "$DQCTL" -v create x --slots 1 --slot-size 64 --uid 4294967295
	has_errno 22	# EINVAL
	fails 2 "gid not mapped" "$DQCTL" create x --slots 1 --slot-size 64 --gid 4294967295
	fails 2 "max_pending above the slot count" \
		"$DQCTL" -v create x --slots 4 --slot-size 64 --max-pending 5
	has_errno 34	# ERANGE
	# missing required attributes (reported by type: dq.ko sets no text)
	fails 2 "missing SLOTS" "$DQCTL" -v raw new name=x slot_size=64
	has_errno 22	# EINVAL
	fails 2 "missing SLOT_SIZE" "$DQCTL" raw new name=x slots=1
	fails 2 "missing the queue NAME" "$DQCTL" raw new slots=1 slot_size=64
	fails 2 "name the queue: NAME or ID" "$DQCTL" -v raw get
	has_errno 22	# EINVAL
	fails 2 "name the queue: NAME or ID" "$DQCTL" raw del
	fails 2 "name the queue: NAME or ID" "$DQCTL" raw set rate=5
	# empty and too long names
	fails 2 "queue name: 1 to 31 of" "$DQCTL" -v create "" --slots 1 --slot-size 64
	has_errno 22	# EINVAL
	fails 2 "queue name: 1 to 31 of" "$DQCTL" raw new name= slots=1 slot_size=64
	fails 2 "queue name: 1 to 31 of" "$DQCTL" create "bad name" --slots 1 --slot-size 64
	# ISO 8859-1 letters are not A-Z a-z (the kernel's isalnum() takes them)
	fails 2 "queue name: 1 to 31 of" "$DQCTL" raw new "name=$(printf '\xe9x')" slots=1 slot_size=64
	fails 2 "queue name: 1 to 31 of" "$DQCTL" raw new "name=a$(printf '\xc0')" slots=1 slot_size=64
	fails 2 "queue name: 1 to 31 of" "$DQCTL" raw new "name=$(printf "\001")" slots=1 slot_size=64
	fails 2 "(name: a NUL-terminated string" \
		"$DQCTL" -v raw new name=q23456789012345678901234567890123 slots=1 slot_size=64
	has_errno 22	# EINVAL
	# unknown attribute and command
	fails 2 "Unknown attribute type (attribute type 99)" \
		"$DQCTL" -v raw new name=x slots=1 slot_size=64 99=1
	has_errno 22	# EINVAL
	# each command takes its own attributes only (docs/netlink/dq.yaml)
	fails 2 "Unsupported attribute" "$DQCTL" -v raw del name=x rate=5
	has_errno 22	# EINVAL
	fails 2 "Unsupported attribute" "$DQCTL" raw get name=x slots=1
	fails 2 "Unsupported attribute" "$DQCTL" raw set name=x slot_size=64
	fails 2 "Unsupported attribute" "$DQCTL" raw new name=x slots=1 slot_size=64 force
	fails 2 "Unsupported attribute" "$DQCTL" raw stats name=x mode=0600
	fails 2 "Operation not supported" "$DQCTL" -v raw 99
	has_errno 95	# EOPNOTSUPP
	fails 2 "Operation not supported" "$DQCTL" -v raw event
	has_errno 95	# EOPNOTSUPP: multicast only
	fails 2 "Operation not supported" "$DQCTL" -v raw --dump new
	has_errno 95	# EOPNOTSUPP: no dump of QUEUE_NEW
	# unknown queue
	fails 2 "show nope: no such queue" "$DQCTL" -v show nope
	has_errno 2	# ENOENT
	fails 2 "delete nope: no such queue" "$DQCTL" -v delete nope
	has_errno 2	# ENOENT
	fails 2 "set nope: no such queue" "$DQCTL" set nope --rate 5
	fails 2 "stats nope: no such queue" "$DQCTL" stats nope
	fails 2 "no such queue" "$DQCTL" show --id 4000
	# duplicate name
	ok "$DQCTL" create dup --slots 1 --slot-size 64
	fails 2 "create dup: a queue with this name exists" \
		"$DQCTL" -v create dup --slots 1 --slot-size 64
	has_errno 17	# EEXIST
	# nothing above left a queue behind
	ok "$DQCTL" --json list
	eq "$(j '[.[].name] | join(",")')" dup "queues after the bad requests"
}

# Unprivileged: no create/delete/set (EPERM + message); reads are fine.
t_permission_netlink() {
	ok "$DQCTL" create p --slots 8 --slot-size 64
	fails 2 "dqctl: permission denied: creating queues needs CAP_NET_ADMIN" \
		as_nobody "$DQCTL" create z --slots 1 --slot-size 64
	# the message above is dqctl's wording of EPERM; the errno itself:
	fails 2 "(errno 1:" as_nobody "$DQCTL" -v raw new name=z slots=1 slot_size=64
	fails 2 "dqctl: permission denied: deleting queues needs CAP_NET_ADMIN" \
		as_nobody "$DQCTL" delete p
	fails 2 "dqctl: permission denied: deleting queues needs CAP_NET_ADMIN" \
		as_nobody "$DQCTL" delete p --force
	fails 2 "dqctl: permission denied: changing queues needs CAP_NET_ADMIN" \
		as_nobody "$DQCTL" set p --rate 5
	ok as_nobody "$DQCTL" list
	ok as_nobody "$DQCTL" --json show p
	eq "$(j .name)" p "show as nobody"
	ok as_nobody "$DQCTL" --json stats p
	ok as_nobody "$DQCTL" --json stats
	ok as_nobody "$DQCTL" stats --node 0
	ok "$DQCTL" --json show p
	eq "$(j .rate)" 0 "rate unchanged"
	eq "$(qget show p .name)" p "queue still there"
}

# DQ_IOC_ATTACH obeys the queue's uid/gid/mode like a file (rw needed).
t_permission_attach() {
	ok "$DQCTL" create priv --slots 8 --slot-size 64
	ok "$DQCTL" create open --slots 8 --slot-size 64 --mode 0666
	ok "$DQCTL" create mine --slots 8 --slot-size 64 --uid "$NOBODY_UID" --mode 0600
	ok "$DQCTL" create grp --slots 8 --slot-size 64 --gid 4242 --mode 0060
	ok "$DQCTL" create ro --slots 8 --slot-size 64 --mode 0644
	ok "$DQCTL" create none --slots 8 --slot-size 64 --mode 0000
	fails 2 "Permission denied (EACCES)" as_nobody "$DQPEER" attach priv
	ok as_nobody "$DQPEER" attach open
	eq "$(j .attached)" true "nobody attaches a 0666 queue"
	ok as_nobody "$DQPEER" attach mine
	fails 2 "(EACCES)" setpriv --reuid=65533 --regid=65533 --clear-groups \
		"$DQPEER" attach mine
	fails 2 "(EACCES)" as_nobody "$DQPEER" attach grp
	ok setpriv --reuid="$NOBODY_UID" --regid="$NOBODY_GID" --groups=4242 \
		"$DQPEER" attach grp
	fails 2 "(EACCES)" as_nobody "$DQPEER" attach ro
	ok "$DQPEER" attach none	# root: CAP_DAC_OVERRIDE, as for files
	ok "$DQPEER" attach priv
	fails 2 "(ENOENT)" as_nobody "$DQPEER" attach nope
	# an unprivileged producer and consumer on the open queue
	# (the producer's table through a descriptor: $WORK is root's)
	install -m 0666 /dev/null "$WORK/open.tab"
	ok as_nobody "$DQPEER" produce open -n 8 --table /proc/self/fd/3 3> "$WORK/open.tab"
	ok as_nobody "$DQPEER" consume open -n 8 --timeout 10000000000 \
		--table /proc/self/fd/3 3< "$WORK/open.tab"
	eq "$(j .reaped)" 8 "nobody reaped"
}

# libdqshim's dq_queue_attach(): reap what a gone producer left, then
# produce and reap on the same queue through the library.
t_library_attach() {
	ok "$DQCTL" create lib --slots 256 --slot-size 64
	ok "$DQPEER" produce lib -n 200 --delay 300000000 --spacing 100000 \
		--table "$WORK/lib.tab"
	ok "$ATTACH_PEER" lib 200 "$WORK/lib.tab"
	jeq .reaped 200 reaped \
		.own 50 "own messages"
	ok "$DQCTL" --json stats lib
	eq "$(j .stats.released)" 250 released
}

# A queue outlives its producer: another process attaches and reaps all.
t_survives_producer_exit() {
	ok "$DQCTL" create keep --slots 512 --slot-size 128
	ok "$DQPEER" produce keep -n 300 --delay 1000000000 --spacing 1000000 --len 128 \
		--table "$WORK/keep.tab"
	eq "$(j .accepted)" 300 accepted
	# the producer is gone; the kernel still holds everything
	ok "$DQCTL" --json stats keep
	jeq .users 0 "users after the producer exited" \
		.stats.submitted 300 submitted
	held=$(j '.stats.pending + .stats.paced + .stats.ready_backlog + .stats.released')
	eq "$held" 300 "pending+paced+backlog+released"
	ok "$DQPEER" consume keep -n 300 --timeout 20000000000 --linger 300000000 \
		--table "$WORK/keep.tab"
	jeq .out_of_order 0 "out of order" \
		.early 0 "released early" \
		.bad_payload 0 "payload damaged" \
		.extra 0 "duplicates"
	ok "$DQCTL" --json stats keep
	jeq .stats.released 300 released \
		.stats.pending 0 pending
	# a third process continues on the same rings
	ok "$DQPEER" produce keep -n 100 --first 300 --slot-base 300 --table "$WORK/keep2.tab"
	ok "$DQPEER" consume keep -n 100 --first 300 --timeout 20000000000 \
		--table "$WORK/keep2.tab"
}

# delete refuses while messages are pending; --force frees everything: the
# queue's pages, as its memory cgroup counts them.
t_delete_pending_and_force() {
	cg_make
	trap 'rmdir "$CG" 2> /dev/null' EXIT
	# dqctl's own pages (page cache of the binary) charged before "before".
	ok in_cg "$DQCTL" list
	cg_before=$(cg_kb)
	p_before=$(qget stats "--node=1" .pending 2> /dev/null || echo 0)
	# Placement: the pages come from node 1 (a drop, on allocation).
	# MemFree is the node's, not the queue's: pages another test's exit
	# frees meanwhile (deferred, or onto per-CPU lists that MemFree does
	# not count) hide part of the drop; it once measured 54560 kB for
	# the 64 MiB arena (CI, 6.1).  A queue placed elsewhere drops it by
	# ~0 every time, so the best of three tries still tells.
	for try in 1 2 3; do
		before=$(node_memfree_kb 1)
		ok in_cg "$DQCTL" create big --slots 131072 --slot-size 512 --node 1
		created=$(node_memfree_kb 1)
		echo "  node 1 MemFree: $before kB before, $created kB (try $try)"
		[ $((before - created)) -ge 57344 ] && break
		[ "$try" = 3 ] && die "arena not allocated on node 1? (3 tries)"
		ok "$DQCTL" delete big
		sleep 1
	done
	cg_created=$(cg_kb)
	echo "  queue's memcg: $cg_before kB before, $cg_created kB with a 64 MiB arena"
	[ $((cg_created - cg_before)) -ge 65536 ] || die "arena not charged to the creator's memcg?"
	ok "$DQPEER" produce big -n 50 --delay 60000000000
	fails 2 "delete big: messages are pending or not reaped; FORCE drops them" "$DQCTL" -v delete big
	has_errno 16	# EBUSY
	grep -qF -- "--force" "$WORK/err" || die "no hint about --force"
	eq "$(qget stats big .stats.pending)" 50 "pending after the refused delete"
	ok "$DQCTL" --json stats --node 1
	eq "$(j .pending)" $((p_before + 50)) "node 1 engine pending"
	ok "$DQCTL" delete big --force
	fails 2 "no such queue" "$DQCTL" show big
	fails 2 "no such queue" "$DQCTL" stats big
	ok "$DQCTL" --json stats
	eq "$(j '[.[] | select(.name == "big")] | length')" 0 "big in the stats dump"
	ok "$DQCTL" --json stats --node 1
	eq "$(j .pending)" "$p_before" "node 1 engine pending after force"
	cg_after=$(cg_kb)
	echo "  queue's memcg after the forced delete: $cg_after kB"
	# Everything the queue was charged for is uncharged, up to the
	# per-CPU charge batches (64 pages a CPU) and partly freed slabs.
	[ $((cg_created - cg_after)) -ge 65536 ] ||
		die "arena not freed ($cg_created -> $cg_after kB)"
	[ $((cg_after - cg_before)) -le 2048 ] ||
		die "queue memory left charged ($cg_before -> $cg_after kB)"
	# the name is free again, for a fresh queue
	ok "$DQCTL" create big --slots 8 --slot-size 64
	eq "$(qget stats big .stats.submitted)" 0 "fresh queue"
	# deleting an empty queue needs no force
	ok "$DQCTL" delete big
	# by id
	ok "$DQCTL" create byid --slots 8 --slot-size 64
	ok "$DQCTL" delete --id "$(qget show byid .id)"
	fails 2 "no such queue" "$DQCTL" show byid
}

# A forced delete while a process is attached: its later submit fails with
# ENODEV; the queue is gone from the registry at once.
t_delete_while_attached() {
	ok "$DQCTL" create att --slots 8 --slot-size 64
	rm -f "$WORK/hold.go"
	mkfifo "$WORK/hold.go"
	"$DQPEER" hold att < "$WORK/hold.go" > "$WORK/hold.out" 2> "$WORK/hold.err" &
	pid=$!
	# The peer submits once this end closes: after the delete, however
	# slow the kernel is.
	exec 9> "$WORK/hold.go"
	wait_for_text "$WORK/hold.err" attached
	eq "$(qget show att .users)" 1 "users while attached"
	ok "$DQCTL" delete att --force
	fails 2 "no such queue" "$DQCTL" show att
	exec 9>&-
	wait "$pid" || die "dqpeer hold failed: $(cat "$WORK/hold.err")"
	eq "$(j -f "$WORK/hold.out" .submit)" ENODEV "submit after delete"
	ok "$DQCTL" create att --slots 8 --slot-size 64
}

# Released but unreaped messages are lost by a plain delete.
t_delete_unreaped_refused() {
	ok "$DQCTL" create unr --slots 64 --slot-size 64
	ok "$DQPEER" produce unr -n 10
	for _ in $(seq 50); do
		[ "$(qget stats unr .stats.released)" = 10 ] && break
		sleep 0.1
	done
	eq "$(qget stats unr .stats.pending)" 0 "pending"
	fails 2 "delete unr: messages are pending or not reaped" "$DQCTL" -v delete unr
	has_errno 16	# EBUSY
	eq "$(qget stats unr .stats.released)" 10 "released after the refused delete"
}

# DQ_IOC_ATTACH or DQ_IOC_SETUP on a file that has a queue: EBUSY.
t_attach_setup_ebusy() {
	command -v python3 > /dev/null || die "python3 is needed"
	ok "$DQCTL" create ab --slots 8 --slot-size 64
	run py_dq attach ab attach ab setup attach nope
	eq "$(tr '\n' ' ' < "$WORK/out")" "ok EBUSY EBUSY EBUSY " "attach, attach, setup, attach"
	run py_dq setup attach ab
	eq "$(sed -n 2p "$WORK/out")" EBUSY "attach after setup"
	run py_dq attach nope attach ab
	eq "$(tr '\n' ' ' < "$WORK/out")" "ENOENT ok " "a failed attach leaves the file free"
	eq "$(qget show ab .users)" 0 "users after the files closed"
}

# A file's private queue is listed by id but cannot be deleted: EINVAL.
t_delete_private_queue() {
	command -v python3 > /dev/null || die "python3 is needed"
	py_dq setup sleep 30 > "$WORK/priv.out" 2>&1 &
	wait_for_text "$WORK/priv.out" "ok id="
	id=$(sed -n 's/^ok id=\([0-9]*\) .*/\1/p' "$WORK/priv.out")
	pid=$(sed -n 's/^ok id=.* pid=//p' "$WORK/priv.out")
	ok "$DQCTL" --json show --id "$id"
	eq "$(j .name)" "" "a private queue has no name"
	fails 2 "a file's private queue goes away with the file" \
		"$DQCTL" -v delete --id "$id" --force
	has_errno 22	# EINVAL
	ok "$DQCTL" --json show --id "$id"
	kill "$pid"
	wait
	fails 2 "no such queue" "$DQCTL" show --id "$id"
}

# Events: high watermark, full, deleted; JSON lines and the human form.
t_events() {
	"$DQCTL" -v --json monitor --count 3 --timeout 30s > "$WORK/mon.out" \
		2> "$WORK/mon.err" &
	pid=$!
	wait_for_text "$WORK/mon.err" "monitoring dq events"
	ok "$DQCTL" create ev --slots 64 --slot-size 64 --max-pending 20 --high-wm 10
	ok "$DQPEER" produce ev -n 25 --delay 60000000000 --allow-reject
	jeq .accepted 20 accepted \
		.rejected_full 5 "rejected full"
	eq "$(qget stats ev .stats.rejected.full)" 5 "stats rejected.full"
	ok "$DQCTL" delete ev --force
	wait "$pid" || die "monitor exited $?: $(cat "$WORK/mon.err")"
	sed 's/^/  event: /' "$WORK/mon.out"
	eq "$(wc -l < "$WORK/mon.out")" 3 "event lines"
	while IFS= read -r line; do
		echo "$line" | jq -e 'type == "object"' > /dev/null || die "not JSON: $line"
	done < "$WORK/mon.out"
	eq "$(jq -r 'select(.event == "high_wm") | "\(.name) \(.high_wm)"' "$WORK/mon.out")" \
		"ev 10" "high_wm event"
	eq "$(jq -r 'select(.event == "full") | "\(.name) \(.max_pending)"' "$WORK/mon.out")" \
		"ev 20" "full event"
	eq "$(jq -r 'select(.event == "deleted") | .name' "$WORK/mon.out")" ev "deleted event"
	eq "$(jq -r .event "$WORK/mon.out" | tail -n 1)" deleted "deleted comes last"
	# human form, --count and --timeout
	"$DQCTL" -v monitor --count 1 > "$WORK/mon2.out" 2> "$WORK/mon2.err" &
	pid=$!
	wait_for_text "$WORK/mon2.err" "monitoring dq events"
	ok "$DQCTL" create ev2 --slots 8 --slot-size 64
	ok "$DQCTL" delete ev2
	wait "$pid" || die "monitor (human) failed"
	grep -q 'deleted  ev2 (id [0-9]*)' "$WORK/mon2.out" ||
		{ cat "$WORK/mon2.out"; die "human event line"; }
	# The 1 s is judged against a plain netlink command timed the same
	# way: starting dqctl costs ~0.15 s on the stock kernel and 3-4 s on
	# the debug one under TCG.
	t0=$(date +%s%N)
	ok "$DQCTL" list
	t1=$(date +%s%N)
	ok "$DQCTL" monitor --timeout 1s
	t2=$(date +%s%N)
	eq "$(wc -c < "$WORK/out")" 0 "no events, no output"
	echo "  dqctl list took $(( (t1 - t0) / 1000000 )) ms, monitor --timeout 1s $(( (t2 - t1) / 1000000 )) ms"
	in_range "$(( (t2 - t1) / 1000000 ))" 900 999999 "monitor --timeout 1s took (ms)"
	# Only where starting a process is cheap and steady: on the debug
	# kernel (DQ_CTL_TIMEOUT_SCALE > 1) one dqctl start varied by more
	# than the 1 s measured (list 2689 ms, monitor 2844 ms, 2026-12-01).
	if [ "${DQ_CTL_TIMEOUT_SCALE:-1}" = 1 ]; then
		in_range "$(( (t2 - t1 - (t1 - t0)) / 1000000 ))" 200 2500 \
			"monitor --timeout 1s minus a plain dqctl list (ms)"
	fi
	# SIGINT ends it cleanly
	"$DQCTL" monitor > /dev/null 2>&1 &
	pid=$!
	sleep 0.5
	kill -INT "$pid"
	wait "$pid" || die "monitor exited $? on SIGINT"
}

# Pacing: over 10 s the release rate is within 5% of the set rate, in order.
t_pacing_accuracy() {
	ok "$DQCTL" create pace --slots 8192 --slot-size 64 --ready-entries 8192 --rate 500
	ok "$DQPEER" produce pace -n 5600 --table "$WORK/pace.tab"
	start=$(j .start_ns)
	ok "$DQPEER" consume pace -n 5600 --timeout 30000000000 --dump "$WORK/pace.txt" \
		--table "$WORK/pace.tab"
	jeq .out_of_order 0 "out of order" \
		.early 0 early
	first=$(j .first_release_ns)
	ok "$DQPEER" window "$WORK/pace.txt" "$first" $((first + 10000000000)) 2000000
	echo "  window: $(cat "$WORK/out")"
	echo "  stalls: $(j .stalls) release gaps over 12 ms (1/rate + 10 ms), $(j '.stall_excess_ns / 1e6') ms in excess"
	in_range "$(j .rate)" 475 525 "release rate over 10 s at --rate 500 (msg/s)"
	in_range "$(( (first - start) / 1000 ))" 0 100000 "first release after submit (us)"
	ok "$DQCTL" --json stats pace
	eq "$(j .stats.released)" 5600 released
	[ "$(j .stats.throttled)" -ge 5000 ] || die "throttled $(j .stats.throttled)"
}

# Pacing is smooth, not only right on average, for messages due in the
# future: 6,000 messages due over 0.6 s starting 1 s out (10,000/s, far
# above the rate) at --rate 500.  Judged on the consumer's own clock:
# every 1 s window of the steady state (the first and last second left
# out) within 5% of 500/s, no gap between releases over 1/rate + 150 ms
# plus the largest stall a witness beside it saw then (dqpeer sleeper:
# under TCG the guest itself stalls, 267 ms once in a make check; a
# pacer's own gap has no such company), and (dqpeer
# consume, against the producer's table) none early, in due order, each
# once.  The windows' bounds are widened by what the largest gap holds
# (its length x the rate): a stall the gap bound lets pass moves that
# many releases into the next window (the pacer catches up), and failed
# the window bound alone (ctl-newest of a quiet make check, 2026-12-07:
# windows 500, 470, 527, 502, a 90.8 ms gap).  A pacer slow or fast
# throughout still fails it, and pacing_accuracy's 10 s rate.
t_pacing_smooth() {
	local wpid wmax
	ok "$DQCTL" create smooth --slots 8192 --slot-size 64 --ready-entries 8192 --rate 500
	# A stall witness beside the consumer: a gap the machine made
	# (the guest's vCPUs stopped by a busy TCG host: 267 ms seen in a
	# make check) shows in its wakes too; one of the pacer's own does not.
	"$DQPEER" sleeper 60000000000 "$WORK/smooth.sleep" > /dev/null &
	wpid=$!
	ok "$DQPEER" produce smooth -n 6000 --delay 1000000000 --spacing 100000 \
		--table "$WORK/smooth.tab"
	ok "$DQPEER" consume smooth -n 6000 --timeout 40000000000 \
		--dump "$WORK/smooth.txt" --table "$WORK/smooth.tab"
	kill "$wpid" 2> /dev/null
	wait "$wpid" 2> /dev/null
	jeq .out_of_order 0 "out of order" \
		.early 0 early
	first=$(awk 'NR == 1 { print $4 }' "$WORK/smooth.txt")
	last=$(awk 'END { print $4 }' "$WORK/smooth.txt")
	[ -n "$first" ] && [ -n "$last" ] || die "empty dump"
	ok "$DQPEER" windows "$WORK/smooth.txt" $((first + 1000000000)) \
		$((last - 1000000000)) 1000000000
	echo "  1 s windows: $(j -c .windows), max gap $(j '.max_gap_ns / 1e6') ms"
	wmax=$(awk -v a=$((first + 1000000000)) -v b=$((last - 1000000000)) \
		'$1 >= a && $1 - $2 < b && $2 > m { m = $2 } END { print m + 0 }' \
		"$WORK/smooth.sleep")
	echo "  the witness's largest stall then: $((wmax / 1000000)) ms ($(wc -l < "$WORK/smooth.sleep") wakes over 5 ms late in the run)"
	in_range "$(j .max_gap_ns)" 0 $((152000000 + wmax)) "largest gap between releases (ns; 152 ms + the witness's largest stall)"
	local gap
	gap=$(j '(.max_gap_ns * 500 / 1e9) | ceil')
	in_range "$(j .min_rate)" $((475 - gap)) $((525 + gap)) "slowest 1 s window (msg/s, set 500; the largest gap holds $gap)"
	in_range "$(j .max_rate)" $((475 - gap)) $((525 + gap)) "fastest 1 s window (msg/s, set 500; the largest gap holds $gap)"
	[ "$(j '.windows | length')" -ge 8 ] || die "steady state too short"
}

# A rate change at run time takes effect at once: 200/s, then 1000/s,
# then 0 (unpaced: the rest goes out at once).
t_rate_change() {
	ok "$DQCTL" create rc --slots 4096 --slot-size 64 --ready-entries 4096 --rate 200
	ok "$DQPEER" produce rc -n 4000 --table "$WORK/rc.tab"
	"$DQPEER" consume rc -n 4000 --timeout 30000000000 --dump "$WORK/rc.txt" \
		--table "$WORK/rc.tab" \
		> "$WORK/rc.out" 2> "$WORK/rc.err" &
	pid=$!
	sleep 3
	t1=$(now_ns)
	ok "$DQCTL" set rc --rate 1000
	t1b=$(now_ns)
	sleep 1.5
	t2=$(now_ns)
	ok "$DQCTL" set rc --rate 0
	t2b=$(now_ns)
	wait "$pid" || die "consumer failed: $(cat "$WORK/rc.out" "$WORK/rc.err")"
	jeq -f "$WORK/rc.out" .out_of_order 0 "out of order" \
		.early 0 early
	ok "$DQPEER" window "$WORK/rc.txt" $((t1 - 2000000000)) "$t1" 5000000
	echo "  stalls: $(j .stalls) release gaps over 15 ms (1/rate + 10 ms), $(j '.stall_excess_ns / 1e6') ms in excess"
	in_range "$(j .rate)" 190 210 "rate before the change (msg/s, set 200)"
	ok "$DQPEER" window "$WORK/rc.txt" "$t1" "$t1b"
	echo "  released during 'dqctl set --rate 1000': $(j .count)"
	ok "$DQPEER" window "$WORK/rc.txt" "$t1b" $((t1b + 1000000000)) 1000000
	echo "  stalls: $(j .stalls) release gaps over 11 ms (1/rate + 10 ms), $(j '.stall_excess_ns / 1e6') ms in excess"
	in_range "$(j .rate)" 950 1050 "rate in the second after the change (msg/s, set 1000)"
	ok "$DQPEER" window "$WORK/rc.txt" "$t1" $((t1b + 10000000))
	[ "$(j .count)" -ge 1 ] || die "nothing released within 10 ms of the change"
	ok "$DQPEER" window "$WORK/rc.txt" "$t2b" 99999999999999999
	eq "$(j .count)" 0 "releases after 'set --rate 0' returned"
	ok "$DQPEER" window "$WORK/rc.txt" "$t2" "$t2b"
	echo "  released by 'dqctl set --rate 0' at once: $(j .count)"
	[ "$(j .count)" -ge 100 ] || die "rate 0 did not release the paced rest"
}

# The issue's "done when" scenario.
t_done_when() {
	ok "$DQCTL" create q --slots 65536 --slot-size 512 --rate 1000
	ok "$DQPEER" produce q -n 5000 --len 512 --table "$WORK/q.tab"
	cp "$WORK/out" "$WORK/produce.json"
	# nothing slow between the producer's exit and the consumer's attach
	"$DQCTL" stats q --json > "$WORK/stats.json" 2>&1 ||
		die "dqctl stats q --json: $(cat "$WORK/stats.json")"
	ok "$DQPEER" consume q -n 5000 --timeout 20000000000 --linger 200000000 \
		--table "$WORK/q.tab" \
		--dump "$WORK/dw.txt"
	cp "$WORK/out" "$WORK/consume.json"
	eq "$(j -f "$WORK/produce.json" .accepted)" 5000 accepted
	start=$(j -f "$WORK/produce.json" .start_ns)
	sed 's/^/  /' "$WORK/stats.json"
	eq "$(j -f "$WORK/stats.json" .stats.submitted)" 5000 submitted
	waiting=$(j -f "$WORK/stats.json" '.stats.pending + .stats.paced')
	[ "$waiting" -gt 0 ] || die "nothing pending or paced"
	echo "  pending+paced right after the producer exited: $waiting"
	cp "$WORK/consume.json" "$WORK/out"
	sed 's/^/  /' "$WORK/out"
	jeq .reaped 5000 reaped \
		.out_of_order 0 "out of order" \
		.early 0 early \
		.extra 0 duplicates
	last_reap=$(j .last_reap_ns)
	first_rel=$(j .first_release_ns)
	last_rel=$(j .last_release_ns)
	ok "$DQPEER" window "$WORK/dw.txt" 0 99999999999999999 1000000
	echo "  stalls: $(j .stalls) release gaps over 11 ms (1/rate + 10 ms), $(j '.stall_excess_ns / 1e6') ms in excess"
	in_range "$(awk -v a="$last_reap" -v b="$start" 'BEGIN { printf "%.3f", (a - b) / 1e9 }')" \
		4.5 6 "submit to last reap (s)"
	in_range "$(awk -v a="$last_rel" -v b="$first_rel" 'BEGIN { printf "%.3f", (a - b) / 1e9 }')" \
		4.5 6 "first to last release (s)"
}

# rmmod with named queues left (one with pending messages) is clean;
# dqctl then says the module is missing; load it again for the harness.
t_rmmod_with_queues() {
	ok "$DQCTL" create left --slots 64 --slot-size 64
	ok "$DQPEER" produce left -n 20 --delay 60000000000
	ok "$DQCTL" create left2 --slots 64 --slot-size 64 --rate 10
	ok "$DQPEER" produce left2 -n 20
	ok rmmod dq
	# What the teardown of held queues leaked is judged by the VM lab
	# after the boot's last rmmod (selftests/vm/guest/runner.sh: kmemleak
	# reports objects allocated since the first insmod, these included).
	# A scan of its own here cost ~55 s of the debug suite under TCG
	# (two scans of the whole guest, 2026-12-06) and found nothing that
	# scan does not.
	fails 2 "dqctl: module dq not loaded (no generic netlink family 'dq')" "$DQCTL" list
	fails 2 "module dq not loaded" "$DQCTL" monitor --timeout 1s
	ok insmod "$DQ_KO"
	ok "$DQCTL" --json list
	eq "$(j length)" 0 "queues after reloading"
}

# A tracked named queue: kill -9 of its consumer loses nothing.  The first
# consumer takes 15 of the 40 messages off its ring and finishes 5; the
# other 25 sit on the ring unread.  While it lives a second consumer is
# refused; once it is killed, the next consumer gets the 35 it held, each
# once, in the producer's due order, never early, with redeliveries 1.
# Judged by dqpeer against the producer's table.
t_track_redelivery() {
	ok "$DQCTL" create trk --slots 64 --slot-size 64 --track
	ok "$DQPEER" produce trk -n 40 --delay 0 --spacing 1000000 --len 64 \
		--table "$WORK/trk.tab"
	eq "$(j .accepted)" 40 accepted
	# no consumer yet: nothing is released
	sleep 0.3
	ok "$DQCTL" --json stats trk
	eq "$(j .stats.released)" 0 "released before a consumer attached"
	"$DQPEER" consume trk -n 15 --track --done 5 --hold \
		--timeout 30000000000 --table "$WORK/trk.tab" \
		> "$WORK/c1.out" 2> "$WORK/c1.err" &
	local pid=$!
	wait_for_text "$WORK/c1.out" '"reaped"'
	jeq -f "$WORK/c1.out" .reaped 15 "first consumer reaped" \
		.bad_redeliveries 0 "first delivery count" \
		.done_delivered 5 "first consumer done" \
		.inflight 35 "in flight on the first consumer"
	fails 2 EBUSY "$DQPEER" attach trk --consumer
	kill -9 "$pid"
	wait "$pid" 2> /dev/null
	ok "$DQPEER" consume trk -n 35 --first 5 --track --redeliveries 1 \
		--linger 300000000 --timeout 30000000000 --table "$WORK/trk.tab"
	jeq .reaped 35 "redelivered to the next consumer" \
		.extra 0 "duplicates" \
		.out_of_order 0 "out of order" \
		.early 0 "released early" \
		.bad_payload 0 "payload damaged" \
		.bad_redeliveries 0 "entries without redeliveries 1" \
		.redelivered 35 "redelivered counter" \
		.inflight 0 "in flight at the end"
	# nothing is held any more: a plain delete works
	ok "$DQCTL" delete trk
}

# Delivery tracking and keys at create, the cap changed at run time, and
# the kernel's answer for each: what a named queue was created with comes
# back in QUEUE_GET and in what an attacher sees.
t_track_keys_attrs() {
	ok "$DQCTL" create tk --slots 16 --slot-size 64 --track --inflight 3 --keys
	ok "$DQCTL" --json show tk
	jeq .track true "track" \
		.keys true "keys" \
		.max_inflight 3 "max_inflight at create"
	ok "$DQCTL" set tk --inflight 7
	ok "$DQCTL" --json show tk
	eq "$(j .max_inflight)" 7 "max_inflight after set"
	ok "$DQCTL" set tk --inflight none
	ok "$DQCTL" --json show tk
	eq "$(j .max_inflight)" 0 "no cap after set none"
	ok "$DQCTL" --json stats tk
	jeq .stats.replaced 0 "replaced" \
		.stats.inflight 0 "in flight" \
		.stats.consumer false "no consumer yet"
	ok "$DQPEER" attach tk --consumer
	ok "$DQCTL" create plain --slots 4 --slot-size 64
	ok "$DQCTL" --json show plain
	jeq .track false "plain queue track" \
		.keys false "plain queue keys"
	fails 2 "does not track delivery" "$DQCTL" set plain --inflight 3
	fails 2 EINVAL "$DQPEER" attach plain --consumer
	ok "$DQCTL" delete tk
	ok "$DQCTL" delete plain
}

# ------------------------------------------------------------ namespaces
# Named queues and the family are per network namespace; changes need
# CAP_NET_ADMIN in the user namespace owning it.  A test that needs a
# kernel feature the running kernel lacks exits 77: "# SKIP".

need_netns() {
	unshare -n true 2> /dev/null || { echo "no network namespaces (CONFIG_NET_NS)"; exit 77; }
	command -v ip > /dev/null || { echo "no ip(8)"; exit 77; }
	command -v nsenter > /dev/null || { echo "no nsenter(1)"; exit 77; }
}

need_userns() {
	unshare -U true 2> /dev/null || { echo "no user namespaces (CONFIG_USER_NS)"; exit 77; }
}

# in NS CMD...: CMD in the named network namespace NS.
# in_ns NAME CMD...: CMD in the network namespace `ip netns add NAME` made.
# setns(2) through nsenter, not `ip netns exec`, which also makes a mount
# namespace and mounts a sysfs for it: nothing here reads /sys/class/net,
# and on the debug kernel under TCG those mounts cost ~0.4 s a call
# (netns_isolation's 13 calls: 70.2 s -> 64.8 s there, 2026-12-06).
in_ns() {
	local ns=$1
	shift
	nsenter --net="/run/netns/$ns" "$@"
}

node0_pending() {
	"$DQCTL" --json stats --node 0 > "$WORK/n0.json" || die "node stats"
	jq -r .pending "$WORK/n0.json"
}

# Two namespaces and the initial one each have a queue "same": each sees
# and reaches only its own, by name, by id, in dumps and through attach;
# events stay in their namespace; deleting a namespace deletes its queues,
# messages and all.
t_netns_isolation() {
	need_netns
	ip netns del dqa 2> /dev/null
	ip netns del dqb 2> /dev/null
	ok ip netns add dqa
	ok ip netns add dqb
	p0=$(node0_pending)
	ok "$DQCTL" create same --slots 8 --slot-size 64
	ok in_ns dqa "$DQCTL" create same --slots 16 --slot-size 64 --node 0
	ok in_ns dqb "$DQCTL" create same --slots 32 --slot-size 64
	fails 2 "a queue with this name exists" in_ns dqa "$DQCTL" create same --slots 8 --slot-size 64
	id0=$(qget show same .id)
	ida=$(in_ns dqa "$DQCTL" --json show same | jq -r .id)
	idb=$(in_ns dqb "$DQCTL" --json show same | jq -r .id)
	echo "  ids: initial $id0, dqa $ida, dqb $idb"
	[ "$id0" != "$ida" ] && [ "$ida" != "$idb" ] && [ "$id0" != "$idb" ] ||
		die "three queues, three ids expected"
	# each namespace lists exactly its own
	eq "$(qget show same .slots)" 8 "initial ns: its own queue"
	ok in_ns dqa "$DQCTL" --json list
	eq "$(j '[.[] | "\(.name) \(.slots)"] | join(",")')" "same 16" "dqa lists"
	ok in_ns dqb "$DQCTL" --json stats
	eq "$(j '[.[] | .id] | join(",")')" "$idb" "dqb's stats dump"
	ok "$DQCTL" --json list
	eq "$(j '[.[] | .id] | join(",")')" "$id0" "initial ns lists"
	# another namespace's id is no queue at all
	fails 2 "no such queue" in_ns dqa "$DQCTL" show --id "$idb"
	fails 2 "no such queue" in_ns dqa "$DQCTL" delete --id "$id0" --force
	fails 2 "no such queue" "$DQCTL" stats --id "$ida"
	# attach by name reaches the caller's namespace's queue
	ok in_ns dqa "$DQPEER" produce same -n 5 --delay 60000000000
	eq "$(in_ns dqa "$DQCTL" --json stats same | jq -r .stats.pending)" 5 "dqa pending"
	eq "$(in_ns dqb "$DQCTL" --json stats same | jq -r .stats.pending)" 0 "dqb pending"
	eq "$(qget stats same .stats.pending)" 0 "initial ns pending"
	# events: a listener in dqb sees dqb's delete, not the initial ns's
	in_ns dqb "$DQCTL" -v --json monitor --count 1 --timeout 30s > "$WORK/monb.out" \
		2> "$WORK/monb.err" &
	pid=$!
	wait_for_text "$WORK/monb.err" "monitoring dq events"
	ok "$DQCTL" delete same
	ok in_ns dqb "$DQCTL" delete same
	wait "$pid" || die "monitor in dqb exited $?: $(cat "$WORK/monb.err")"
	eq "$(jq -r '"\(.event) \(.id)"' "$WORK/monb.out")" "deleted $idb" "dqb's only event"
	# the namespace goes, its queue with it (messages and all)
	eq "$(node0_pending)" $((p0 + 5)) "node 0 pending before the netns goes"
	ok ip netns del dqa
	ip netns del dqb
	for _ in $(seq 100); do
		[ "$(node0_pending)" = "$p0" ] && break
		sleep 0.1
	done
	eq "$(node0_pending)" "$p0" "node 0 pending after the netns went"
	# and the name is free in a new namespace of the same name
	ok ip netns add dqa
	ok in_ns dqa "$DQCTL" --json list
	eq "$(j length)" 0 "a fresh dqa is empty"
	ip netns del dqa
}

# CAP_NET_ADMIN in a child user namespace is nothing over the host's
# queues; with its own network namespace it manages its own, which the
# host does not see.  Attach's CAP_DAC_OVERRIDE is a file's: only over
# queues whose owner is mapped in the caller's user namespace.
t_netns_userns_perm() {
	need_netns
	need_userns
	ok "$DQCTL" create host1 --slots 8 --slot-size 64
	ok "$DQCTL" create nob --slots 8 --slot-size 64 --uid "$NOBODY_UID" --mode 0600
	fails 2 "permission denied: deleting queues needs CAP_NET_ADMIN" \
		unshare -Ur "$DQCTL" delete host1 --force
	fails 2 "permission denied: changing queues needs CAP_NET_ADMIN" \
		unshare -Ur "$DQCTL" set host1 --rate 5
	fails 2 "permission denied: creating queues needs CAP_NET_ADMIN" \
		unshare -Ur "$DQCTL" create c1 --slots 8 --slot-size 64
	ok unshare -Ur "$DQCTL" --json show host1	# reads need nothing
	eq "$(qget show host1 .rate)" 0 "host1 unchanged"
	# root of a child user namespace: CAP_DAC_OVERRIDE there, but nobody's
	# uid is not mapped in it, so no override; host root overrides.
	fails 2 "(EACCES)" unshare -Ur "$DQPEER" attach nob
	ok "$DQPEER" attach nob
	# its own network namespace: full control there, invisible here
	ok unshare -Urn sh -c "'$DQCTL' create c1 --slots 8 --slot-size 64 &&
		'$DQCTL' --json list > '$WORK/inner.json' &&
		'$DQCTL' delete host1 --force 2> '$WORK/inner.err'; echo \$? > '$WORK/inner.rc'"
	eq "$(jq -r '[.[] | .name] | join(",")' "$WORK/inner.json")" c1 "inner ns lists"
	eq "$(cat "$WORK/inner.rc")" 2 "inner delete of host1 exit"
	grep -qF "no such queue" "$WORK/inner.err" || die "inner delete: $(cat "$WORK/inner.err")"
	ok "$DQCTL" --json list
	eq "$(j '[.[] | .name] | sort | join(",")')" "host1,nob" "host lists"
	ok "$DQCTL" delete host1
	ok "$DQCTL" delete nob
}

# no_ipc_lock KIB CMD...: CMD as root without CAP_IPC_LOCK (gone from the
# bounding and inheritable sets before the exec), RLIMIT_MEMLOCK KIB KiB.
no_ipc_lock() {
	local kib=$1
	shift
	bash -c 'ulimit -l "$0" && exec setpriv --bounding-set=-ipc_lock --inh-caps=-ipc_lock "$@"' \
		"$kib" "$@"
}

# RLIMIT_MEMLOCK (docs/api.md, "Memory accounting"): dqctl's words for a
# create over the limit, and the node's counters in stats --node.  The
# queue: 1024 x 1024 B, 64-entry rings = 256 arena + 1 + 1 ring + 16
# record pages = 274 pages, 1096 KiB (selftests/dq_memlock.c: the rest).
t_memlock() {
	local refused pages big=(--slots 1024 --slot-size 1024 --submit-entries 64
		--ready-entries 64 --node 0)
	ok "$DQCTL" --json stats --node 0
	refused=$(j .memlock_refused)
	pages=$(j .memlock_pages)
	[ "$refused" != null ] && [ "$pages" != null ] || die "stats --node: no memlock counters"
	ok "$DQCTL" stats --node 0
	grep -q '^  memlock pages [0-9]*  memlock refused [0-9]*$' "$WORK/out" ||
		die "human node stats: no memlock line"
	fails 2 "create big: the queue's pinned memory is over the caller's RLIMIT_MEMLOCK" \
		no_ipc_lock 1092 "$DQCTL" -v create big "${big[@]}"
	has_errno 12	# ENOMEM
	ok "$DQCTL" --json stats --node 0
	eq "$(j .memlock_refused)" $((refused + 1)) "memlock_refused after the refusal"
	eq "$(j .memlock_pages)" "$pages" "memlock_pages after the refusal"
	ok no_ipc_lock 4096 "$DQCTL" create big "${big[@]}"
	ok "$DQCTL" --json stats --node 0
	eq "$(j .memlock_pages)" $((pages + 274)) "memlock_pages with the queue"
	ok "$DQCTL" delete big
	ok "$DQCTL" --json stats --node 0
	eq "$(j .memlock_pages)" "$pages" "memlock_pages after delete"
	# Root with CAP_IPC_LOCK: not charged, whatever the limit.
	ok bash -c 'ulimit -l 4 && exec "$0" "$@"' "$DQCTL" create big "${big[@]}"
	ok "$DQCTL" --json stats --node 0
	eq "$(j .memlock_pages)" "$pages" "memlock_pages, CAP_IPC_LOCK"
	ok "$DQCTL" delete big
}

export -f t_family_and_empty_list t_usage_errors t_create_every_attribute \
	t_set_every_attribute t_stats t_bad_attributes t_permission_netlink \
	t_permission_attach t_survives_producer_exit t_library_attach \
	t_delete_pending_and_force \
	t_delete_while_attached t_delete_unreaped_refused t_attach_setup_ebusy \
	t_delete_private_queue t_events \
	t_pacing_accuracy t_pacing_smooth t_rate_change t_done_when \
	t_rmmod_with_queues t_track_redelivery t_track_keys_attrs t_memlock \
	no_ipc_lock t_netns_isolation t_netns_userns_perm need_netns need_userns \
	in_ns node0_pending

# name function timeout mode [todo-reason]
#
# mode: "pair" runs beside the next pair test of the run, each in a bash
# of its own (two vCPUs, two tests): such a test touches only queues of
# its own names (no two pair tests share one) and judges nothing global:
# no whole list or dump, no module parameter, no rmmod, no namespace, no
# node counter but as a lower bound, no events, no timing.  "pace": the
# release-rate tests (pacing_*, rate_change, done_when), a few processes
# each waiting on a paced queue of its own (500-1000 msg/s, a small part
# of a vCPU), all four at once, never beside a pair test (whose dozens of
# process starts would take the vCPUs from their consumers): ~16 s of
# each ctl suite instead of ~28 s two by two, ~58 s one by one.  "alone" for the others: those
# judging time (events' monitor timeout), the whole queue list (family_and_empty_list,
# create_every_attribute, bad_attributes, netns_userns_perm) or node-wide
# counters and memory (delete_pending_and_force, memlock, netns_isolation),
# events, rmmod, and nlstress (its model holds every queue id).
TESTS=(
	"family_and_empty_list t_family_and_empty_list 60 alone"
	"create_every_attribute t_create_every_attribute 120 alone"
	"bad_attributes t_bad_attributes 180 alone"
	# the pair tests, as they pair up (similar times)
	"set_every_attribute t_set_every_attribute 120 pair"
	"stats t_stats 120 pair"
	"usage_errors t_usage_errors 60 pair"
	"survives_producer_exit t_survives_producer_exit 90 pair"
	"permission_netlink t_permission_netlink 60 pair"
	"permission_attach t_permission_attach 60 pair"
	"attach_setup_ebusy t_attach_setup_ebusy 60 pair"
	"delete_unreaped_refused t_delete_unreaped_refused 60 pair"
	"delete_while_attached t_delete_while_attached 60 pair"
	"delete_private_queue t_delete_private_queue 60 pair"
	"track_redelivery t_track_redelivery 90 pair"
	"track_keys_attrs t_track_keys_attrs 60 pair"
	"library_attach t_library_attach 90 pair"
	# alone again
	"delete_pending_and_force t_delete_pending_and_force 90 alone"
	"events t_events 90 alone"
	"pacing_accuracy t_pacing_accuracy 90 pace"
	"pacing_smooth t_pacing_smooth 90 pace"
	"rate_change t_rate_change 90 pace"
	"done_when t_done_when 90 pace"
	"rmmod_with_queues t_rmmod_with_queues 60 alone"
	"netns_isolation t_netns_isolation 120 alone"
	"netns_userns_perm t_netns_userns_perm 90 alone"
	"memlock t_memlock 60 alone"
	"nlstress t_nlstress 120 alone"
)

# ------------------------------------------------------------ runner

# Private copies: a rebuild on the host must not pull them from under us.
mkdir -p "$WORK/bin"
for bin in "$DQCTL_SRC" "$DQPEER_SRC" "$ATTACH_PEER_SRC"; do
	if [ ! -x "$bin" ] || ! cp "$bin" "$WORK/bin/"; then
		echo "# $bin missing: run 'make -C selftests/ctl' on the host first"
		echo "0 passed, 1 failed"
		exit 1
	fi
done
export DQCTL=$WORK/bin/${DQCTL_SRC##*/}
export DQPEER=$WORK/bin/${DQPEER_SRC##*/}
export ATTACH_PEER=$WORK/bin/${ATTACH_PEER_SRC##*/}
NLSTRESS_SRC=${NLSTRESS:-$REPO/selftests/build/ctl/nlstress}
if [ ! -x "$NLSTRESS_SRC" ] || ! cp "$NLSTRESS_SRC" "$WORK/bin/"; then
	echo "# $NLSTRESS_SRC missing: run 'make -C selftests/ctl' on the host first"
	echo "0 passed, 1 failed"
	exit 1
fi
export NLSTRESS=$WORK/bin/${NLSTRESS_SRC##*/}
for tool in jq setpriv; do
	command -v "$tool" > /dev/null || {
		echo "# $tool is needed"
		echo "0 passed, 1 failed"
		exit 1
	}
done

[[ "${DQ_CTL_TIMEOUT_SCALE:-1}" =~ ^[1-9][0-9]*$ ]] || {
	echo "# DQ_CTL_TIMEOUT_SCALE=$DQ_CTL_TIMEOUT_SCALE: want a whole number"
	echo "0 passed, 1 failed"
	exit 1
}
# The selection in bash alone: a grep per test cost ~1 s each on the
# debug kernel under TCG (~35 s of the debug suite's ctl part).
declare -A wanted=() known=()
for w in "$@"; do wanted[$w]=1; done
selected=()
for t in "${TESTS[@]}"; do
	read -r name _ <<< "$t"
	known[$name]=1
	if [ $# -eq 0 ] || [ -n "${wanted[$name]:-}" ]; then
		selected+=("$t")
	fi
done
# A misspelt test name must not shrink a run silently.
for w in "$@"; do
	[ -n "${known[$w]:-}" ] || {
		echo "# no such test: $w"
		echo "0 passed, 1 failed"
		exit 1
	}
done

# start_test NAME FN LIMIT: run it in the background, in a bash and a work
# directory of its own ($WORK/NAME: its out, err and other files); its
# output, exit status and seconds land in $WORK/NAME.{log,rc,secs}.
# The runner's own arithmetic and clock are bash's (no awk, no date): on
# the debug kernel under TCG a process start costs ~1 s, four a test.
start_test() {
	local name=$1 fn=$2 limit=$3
	# DQ_CTL_TIMEOUT_SCALE: slower kernels (the debug lab's KASAN kernel
	# spawns a process ~5x slower than the stock one under TCG).
	limit=$((limit * ${DQ_CTL_TIMEOUT_SCALE:-1}))
	mkdir -p "$WORK/$name"
	(
		t0=${EPOCHREALTIME/./}
		WORK=$WORK/$name timeout -k 5 "$limit" bash -c "$fn" > "$WORK/$name.log" 2>&1
		rc=$?
		t=$(((${EPOCHREALTIME/./} - t0) / 100000))
		[ "$rc" -eq 124 ] && echo "timed out after $limit s" >> "$WORK/$name.log"
		echo "$((t / 10)).$((t % 10))" > "$WORK/$name.secs"
		echo "$rc" > "$WORK/$name.rc"
	) &
}

# report_test NAME [REASON]: its output and TAP line, counted.
report_test() {
	local name=$1 reason=$2 rc secs line
	read -r rc < "$WORK/$name.rc" || rc=1
	read -r secs < "$WORK/$name.secs" || secs='?'
	i=$((i + 1))
	while IFS= read -r line || [ -n "$line" ]; do
		printf '# %s\n' "$line"
	done < "$WORK/$name.log"
	if [ -n "$reason" ]; then
		if [ "$rc" -eq 0 ]; then
			echo "ok $i - $name # TODO fixed? $reason"
			pass=$((pass + 1))
		else
			echo "not ok $i - $name # TODO $reason"
			todo=$((todo + 1))
		fi
	elif [ "$rc" -eq 0 ]; then
		echo "ok $i - $name (${secs}s)"
		pass=$((pass + 1))
	elif [ "$rc" -eq 77 ]; then
		echo "ok $i - $name # SKIP $(tail -n 1 "$WORK/$name.log")"
		skip=$((skip + 1))
	else
		echo "not ok $i - $name (${secs}s)"
		fail=$((fail + 1))
	fi
}

echo "TAP version 13"
echo "1..${#selected[@]}"
pass=0
fail=0
skip=0
todo=0
i=0
cleanup_queues
# Each round: one "alone" test, two "pair" tests or up to four "pace"
# tests (the first left and the next ones of its mode after it, wherever
# they are in the list), then the queues they left are deleted.
left=("${selected[@]}")
while [ ${#left[@]} -gt 0 ]; do
	round=("${left[0]}")
	left=("${left[@]:1}")
	read -r _ _ _ mode _ <<< "${round[0]}"
	width=1
	if [ "${DQ_CTL_SERIAL:-0}" != 1 ]; then
		case $mode in
		pair) width=2 ;;
		pace) width=4 ;;
		esac
	fi
	for k in "${!left[@]}"; do
		[ ${#round[@]} -lt "$width" ] || break
		read -r _ _ _ mode2 _ <<< "${left[k]}"
		if [ "$mode2" = "$mode" ]; then
			round+=("${left[k]}")
			unset 'left[k]'
		fi
	done
	left=("${left[@]}")
	for t in "${round[@]}"; do
		read -r name fn limit _ <<< "$t"
		start_test "$name" "$fn" "$limit"
	done
	wait
	for t in "${round[@]}"; do
		read -r name _ _ _ reason <<< "$t"
		report_test "$name" "$reason"
	done
	# timeout(1) ends the test's whole process group; then its queues
	[ -c /dev/dq ] || insmod "$DQ_KO" 2> /dev/null
	cleanup_queues
done

if [ "${DQ_CTL_KEEP:-0}" = 1 ]; then
	echo "# work directory: $WORK"
else
	rm -rf "$WORK"
fi
[ "$todo" -gt 0 ] && echo "# $todo TODO (known kernel issue, not counted)"
echo "$pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ]
