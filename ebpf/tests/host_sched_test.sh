#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1 OR MIT
#
# host_sched_test.sh - dqlat's sched part on the build host (no dq.ko).
#
#   make -C ebpf check        (as root: loads BPF programs)
#
# pingpong (ebpf/tests/pingpong.c) bounces a byte between two threads over
# pipes while a CPU hog shares their CPU; dqlat --sched-only -p PID fills
# the run-queue histogram from sched_wakeup -> sched_switch.  Checked
# against what the kernel itself accounted to pingpong's threads:
#
#  - every voluntary context switch (a sleep) of the two ping-pong threads
#    ends in a wake-up and a switch back in, so the sample count is at
#    least their voluntary switches, and at most all switches of all three
#    threads (a wake-up of a preempted, not yet sleeping, thread adds one);
#  - dqlat's summed run-queue delay is at most the schedstat run_delay of
#    the three threads (which also counts waits after preemption), plus
#    2 us per sample for the distance between the tracepoints and the
#    schedstat hooks.
#
# Both attach modes (tp_btf, and the raw_tp fallback forced with --raw-tp),
# interval/count, --pin (in a private mount namespace with its own bpffs),
# and the error path without dq.ko are covered too.
#
# Prints TAP and a final "N passed, N failed" line; exits 1 on failure.

set -u

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
B=$(dirname "$HERE")/build
DQLAT=$B/dqlat
PINGPONG=$B/tests/pingpong
TMP=$(mktemp -d /tmp/dqlat-host.XXXXXX)
ROUNDS=${ROUNDS:-3000}
PASS=0
FAIL=0
N=0

trap 'rm -rf "$TMP"' EXIT

ok() {
	N=$((N + 1))
	if [ "$1" = 0 ]; then
		PASS=$((PASS + 1))
		echo "ok $N - $2"
	else
		FAIL=$((FAIL + 1))
		echo "not ok $N - $2"
	fi
}

check() {
	local desc=$1 expr=$2 r
	shift 2
	r=$(jq -e -s "$expr" "$@" 2>&1)
	if [ "$r" = true ]; then
		ok 0 "$desc"
	else
		ok 1 "$desc"
		echo "#   jq: $expr -> $r"
	fi
}

finish() {
	echo "1..$N"
	echo "$PASS passed, $FAIL failed"
	[ "$FAIL" = 0 ]
	exit $?
}

wait_tracing() {
	local err=$1 pid=$2 i
	for i in $(seq 1 200); do
		grep -q tracing "$err" 2>/dev/null && return 0
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.05
	done
	sed 's/^/#   /' "$err"
	return 1
}

# run_pingpong NAME [dqlat options]: pingpong traced by dqlat --sched-only.
run_pingpong() {
	local name=$1 pp dl
	shift
	rm -f "$TMP/go"
	mkfifo "$TMP/go"
	"$PINGPONG" -n "$ROUNDS" < "$TMP/go" > "$TMP/$name.pp" &
	pp=$!
	exec 3> "$TMP/go"
	"$DQLAT" --sched-only --json -p $pp "$@" > "$TMP/$name.json" 2> "$TMP/$name.err" &
	dl=$!
	if ! wait_tracing "$TMP/$name.err" $dl; then
		exec 3>&-
		kill $pp 2>/dev/null
		wait $pp
		return 1
	fi
	echo go >&3
	exec 3>&-
	wait $pp || return 1
	kill -INT $dl
	wait $dl
}

pingpong_checks() {
	local name=$1 attach=$2 J=$TMP/$1.json P=$TMP/$1.pp
	echo "# pingpong: $(cat "$P")"
	echo "# dqlat:    $(jq -c '{sched_attach, runq: .parts.runq | del(.hist)}' "$J")"
	check "$name: attached with $attach" ".[0].sched_attach == \"$attach\"" "$J"
	check "$name: run-queue histogram filled" '.[0].parts.runq.count > 0 and .[0].parts.runq.sum_ns > 0' "$J"
	check "$name: samples >= voluntary switches of the ping-pong threads" \
		'.[0].parts.runq.count >= (.[1].threads[1:] | map(.nvcsw) | add)' "$J" "$P"
	check "$name: samples <= all context switches of the process" \
		'.[0].parts.runq.count <= (.[1].threads | map(.nvcsw + .nivcsw) | add)' "$J" "$P"
	check "$name: sum <= schedstat run_delay (+2 us per sample)" \
		'.[0].parts.runq.sum_ns <= (.[1].threads | map(.run_delay_ns) | add) + 2000 * .[0].parts.runq.count' "$J" "$P"
	check "$name: histogram buckets add up to the count" \
		'.[0].parts.runq | (.hist | map(.count) | add) == .count' "$J"
	check "$name: p50 <= p99 <= p99.9, max within the last bucket" \
		'.[0].parts.runq | .p50_us <= .p99_us and .p99_us <= .p999_us and .max_us < (.hist[-1].hi_us) and .max_us >= (.hist[-1].lo_us)' "$J"
	check "$name: only the run-queue part is filled" \
		'.[0].parts | [.timer, .wake, .reap, .e2e, .release_to_reap] | all(.count == 0)' "$J"
}

if [ "$(id -u)" != 0 ]; then
	echo "1..0 # SKIP needs root to load BPF programs"
	exit 0
fi
for t in jq bpftool unshare "$DQLAT" "$PINGPONG"; do
	command -v "$t" > /dev/null || { ok 1 "$t is available (make -C ebpf)"; finish; }
done
echo "# kernel $(uname -r), $(nproc) CPUs"

run_pingpong btf
ok $? "tp_btf: pingpong traced"
pingpong_checks btf tp_btf

run_pingpong raw --raw-tp
ok $? "raw_tp: pingpong traced"
pingpong_checks raw raw_tp

# Interval and count: two objects, then exit by itself.
timeout 20 "$DQLAT" --sched-only --json 1 2 > "$TMP/iv.json" 2> "$TMP/iv.err"
ok $? "interval 1 count 2: exits by itself"
check "interval 1 count 2: two JSON objects about 1 s apart" \
	'length == 2 and all(.interval_s > 0.9 and .interval_s < 1.5) and all(.parts.runq.count > 0)' \
	"$TMP/iv.json"

# Text output: the header line and a histogram.
timeout 20 "$DQLAT" --sched-only 1 1 > "$TMP/text.out" 2>&1
grep -q '^runq ' "$TMP/text.out" && grep -q 'usecs .*: count .*distribution' "$TMP/text.out"
ok $? "text output: summary line and histogram"

# --pin, in a private mount namespace with a fresh bpffs on /sys/fs/bpf.
unshare -m bash -c '
	mount -t bpf bpf /sys/fs/bpf || exit 1
	"$1" --sched-only --pin 3 1 > /dev/null 2> "$2/pin.err" &
	dl=$!
	for i in $(seq 1 100); do grep -q tracing "$2/pin.err" && break; sleep 0.05; done
	sleep 0.5
	ls /sys/fs/bpf/dq > "$2/pin.ls"
	bpftool -j map dump pinned /sys/fs/bpf/dq/hists > "$2/pin.json"
	wait $dl
	[ ! -e /sys/fs/bpf/dq ]
' pin "$DQLAT" "$TMP"
ok $? "--pin: pinned, dumped with bpftool, unpinned on exit"
grep -qx hists "$TMP/pin.ls" && grep -qx counters "$TMP/pin.ls" && grep -qx consumers "$TMP/pin.ls"
ok $? "--pin: hists, counters, consumers under /sys/fs/bpf/dq"
check "--pin: bpftool shows the run-queue histogram with its fields" \
	'.[0] | map(select(.formatted.key == 2)) | .[0].formatted.values | map(.value.count) | add > 0' \
	"$TMP/pin.json"

# Without dq.ko the dq:* tracepoints do not exist: a clear error.
if [ -e /sys/module/dq ]; then
	echo "ok $((N + 1)) # SKIP dq.ko is loaded here"
	N=$((N + 1))
	PASS=$((PASS + 1))
else
	timeout 20 "$DQLAT" 1 1 > /dev/null 2> "$TMP/nodq.err"
	rc=$?
	[ $rc = 1 ] && grep -q 'dq.ko' "$TMP/nodq.err"
	ok $? "without dq.ko: exit 1 naming dq.ko"
fi

"$DQLAT" --bogus > /dev/null 2>&1
[ $? = 2 ]
ok $? "bad option: exit 2"

finish
