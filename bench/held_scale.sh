#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1 OR MIT
#
# How dq's cost and memory per held message scale from 10 k to 12 M held
# (issue 18: "12 M x 500 B held in one VM sized for it, with insert and
# release cost flat from 10 k to 12 M").
#
# For each N: peer-dq's pending workload (bench/common/bench.c) in a
# fresh memory cgroup: fill N messages of 500 B due an hour ahead (fill
# cost per message), bytes per held message beyond the payload (the
# cgroup's memory.current growth: dq.ko's arena and records are charged to
# the process), then, with N held, 10 k probe messages all due at one
# instant: their insert cost and their release (drain) cost per message.
# One line per run into OUT/held.jsonl, a table into OUT/held.txt (OUT:
# default docs/records/bench/held-vm for --vm, docs/records/bench/held-host for --host;
# make bench writes bench/results/held-{vm,host}, which bench/report.sh
# copies there).
#
# usage:
#   bench/held_scale.sh --vm [--out DIR] [--sizes "10000 1000000 ..."]
#       boots the lab VM (kernel 6.1) with dq.ko (max_arena_bytes 8 GiB:
#       the default cap, 4 GiB, refuses 12 M x 512 B slots with -E2BIG) and
#       runs the kernel backend over io_uring.  The VM is sized for the
#       largest size (see need_mb: 16 GiB for 12 M) within what the host
#       has (MemAvailable less HOST_RESERVE_MB); a size it cannot hold is
#       not run and OUT/held.meta says so ("not_measured=N:why"), which
#       bench/report.sh shows.  DQ_VM_MEM fixes the VM's size instead.
#   bench/held_scale.sh --plan [--sizes ...]   (print the VM's size and the
#       sizes it would run, from /proc/meminfo or DQ_HELD_MEMINFO; no VM)
#   bench/held_scale.sh --inside OUT SIZES BACKEND   (what the VM runs)
#   bench/held_scale.sh --host [--out DIR] [--sizes ...]
#       the embedded engine natively (smaps: the harness's RSS growth).
# Repeats: DQ_HELD_REPEATS (default 3; the table shows median and min-max).
# DQ_HELD_READY=N: peer-dq's ready=N (the ready ring's entries; default:
# dq.ko's own default; 16777216: one entry per slot, as dq.ko's default formerly was).
# DQ_HELD_OPTS="k=v ...": more peer-dq options, each passed as --opt k=v
# (e.g. "slot-align=8": 504-byte slots for the 500-byte payloads).
# DQ_HELD_LABEL: appended to the run's label (dq-kernel-LABEL) to tell
# runs with different settings apart in one OUT.
# --append: add to OUT's runs instead of starting afresh.
#   bench/held_scale.sh --summary [--out DIR]: OUT/held.txt from held.jsonl.
# Every run writes OUT/held.meta (key=value: mode, date, git, src (the last
# commit changing kmod/ user/ uapi/), the host's 1-minute load average at
# the start and the end, machine, VM size, sizes run, sizes not measured and
# why, the VM's exit status): the
# record bench/report.sh cites next to each figure.
# Bounds: each run 3000 s (timeout), the VM DQ_HELD_VM_TIMEOUT s (default
# 5400), the wait for the VM lock (DQ_HELD_LOCK, default /tmp/dq-vm.lock)
# DQ_HELD_LOCK_WAIT s (default 3600).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
TOP=$(cd "$HERE/.." && pwd)
SIZES="10000 1000000 4000000 12000000"
OUT=
MODE=
APPEND=0

while [ $# -gt 0 ]; do
	case $1 in
	--vm | --host | --summary | --plan) MODE=${1#--}; shift ;;
	--out) OUT=$2; shift 2 ;;
	--sizes) SIZES=$2; shift 2 ;;
	--append) APPEND=1; shift ;;
	--inside) MODE=inside; OUT=$2; SIZES=$3; BACKEND=$4; shift 4 ;;
	*) echo "usage: see the header of $0" >&2; exit 2 ;;
	esac
done
[ -n "$MODE" ] || { echo "usage: see the header of $0" >&2; exit 2; }
# default: the committed results, docs/records/bench/held-vm/ and docs/records/bench/held-host/
[ -n "$OUT" ] || OUT=$TOP/docs/records/bench/held-${MODE/summary/vm}
REPEATS=${DQ_HELD_REPEATS:-3}
PEER=$TOP/bench/build/peer-dq
HOST_RESERVE_MB=${DQ_HELD_HOST_RESERVE_MB:-1024}
# when and what was measured: taken at the start (the tree may change
# later); --vm takes the date and the load again once it has the VM lock
START=$(date -u +%Y-%m-%dT%H:%M:%SZ)
# (-dirty: the sources or the harness differ from the commit; prose does not count)
GIT=$(git -C "$TOP" rev-parse --short HEAD 2> /dev/null || echo unknown)$(git -C "$TOP" diff --quiet HEAD -- kmod user uapi bench ':!*.md' 2> /dev/null || echo -dirty)
# the last commit that changed what is measured (dq.ko, libdqshim, the uapi)
SRC=$(git -C "$TOP" log -1 --format=%h -- kmod user uapi 2> /dev/null || echo unknown)
LOAD_START=$(cut -d' ' -f1 /proc/loadavg)

# The guest memory N held needs, MiB, rounded up to whole GiB: 1250 B per
# message (its 512 B arena slot, dq.ko's 64 B record, the ready ring's
# share, the harness's per-message arrays, and slack for the arena landing
# on one of the VM's two NUMA nodes) plus 1.5 GiB for the guest itself.
# Anchored on the runs: 12 M held ran in 16 GiB (docs/records/bench/held-vm/), 4 M in
# make bench's 6-7 GiB; at least 2 GiB (the lab's default).
need_mb() {	# N
	local mb=$(( ($1 * 1250 + (1536 << 20)) >> 20 ))
	mb=$(( (mb + 1023) / 1024 * 1024 ))
	[ "$mb" -ge 2048 ] || mb=2048
	echo "$mb"
}
gib() { awk -v m="$1" 'BEGIN { printf "%.1f", m / 1024 }'; }
# VM_MB and RUN_SIZES from SIZES and what the host has (or DQ_VM_MEM);
# SKIPPED: a "N:why" line for each size that does not fit
plan_vm() {
	local meminfo=${DQ_HELD_MEMINFO:-/proc/meminfo} avail total n need cap why
	avail=$(awk '/^MemAvailable:/ { print int($2 / 1024) }' "$meminfo")
	total=$(awk '/^MemTotal:/ { print int($2 / 1024) }' "$meminfo")
	if [ -z "$avail" ] || [ -z "$total" ]; then
		echo "held_scale.sh: no MemAvailable/MemTotal in $meminfo" >&2
		exit 1
	fi
	HOST_AVAIL_MB=$avail
	if [ -n "${DQ_VM_MEM:-}" ]; then
		case $DQ_VM_MEM in
		*[Gg]) cap=$(( ${DQ_VM_MEM%[Gg]} * 1024 )) ;;
		*[Mm]) cap=${DQ_VM_MEM%[Mm]} ;;
		*) echo "held_scale.sh: DQ_VM_MEM=$DQ_VM_MEM: want e.g. 16G or 6144M" >&2; exit 2 ;;
		esac
		why="the VM was given DQ_VM_MEM=$DQ_VM_MEM"
	else
		cap=$(( avail - HOST_RESERVE_MB ))
		why="host has $(gib "$avail") GiB available (MemAvailable of $(gib "$total") GiB)"
	fi
	VM_MB=0 RUN_SIZES="" SKIPPED=""
	for n in $SIZES; do
		need=$(need_mb "$n")
		if [ -z "${DQ_VM_MEM:-}" ] && [ "$need" -gt "$cap" ]; then
			SKIPPED+="$n:$why, needs $(gib "$need") GiB for the VM + $(gib "$HOST_RESERVE_MB") GiB"$'\n'
			continue
		elif [ -n "${DQ_VM_MEM:-}" ] && [ "$need" -gt "$cap" ]; then
			SKIPPED+="$n:$why, needs $(gib "$need") GiB"$'\n'
			continue
		fi
		RUN_SIZES+="${RUN_SIZES:+ }$n"
		[ "$need" -le "$VM_MB" ] || VM_MB=$need
	done
	[ -z "${DQ_VM_MEM:-}" ] || VM_MB=$cap
}
# OUT/held.meta: what bench/report.sh cites with the figures
write_meta() {	# vm-exit-status
	{
		echo "mode=$MODE"
		echo "date=$START"
		echo "end=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
		echo "git=$GIT"
		echo "src=$SRC"
		echo "load=$LOAD_START $(cut -d' ' -f1 /proc/loadavg)"
		echo "host=$(hostname)"
		echo "cpu=$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)"
		echo "ncpu=$(nproc)"
		echo "host_mem_mb=$(awk '/^MemTotal:/ { print int($2 / 1024) }' /proc/meminfo)"
		[ "$MODE" != vm ] || echo "host_avail_mb=$HOST_AVAIL_MB"
		[ "$MODE" != vm ] || echo "vm_mem_mb=$VM_MB"
		echo "kernel=$(uname -r)"
		echo "sizes=$SIZES"
		echo "repeats=$REPEATS"
		echo "exit=$1"
		printf '%s' "$SKIPPED" | sed 's/^/not_measured=/'
	} > "$OUT/held.meta"
}

# One run of N held; the JSON line goes to OUT/held.jsonl.
one_run() {	# N BACKEND REPEAT
	local n=$1 be=$2 r=$3 cg="" rc=0 o extra=()
	for o in ${DQ_HELD_OPTS:-}; do extra+=(--opt "$o"); done
	if [ -n "${CG_ROOT:-}" ]; then
		cg=$CG_ROOT/dq-held-$n-$r
		mkdir "$cg"
	fi
	sh -c 'if [ -n "$0" ]; then echo $$ > "$0/cgroup.procs" || exit 125; fi; exec "$@"' "$cg" \
		timeout -k 10 3000 "$PEER" --workload pending --n "$n" --probe 10000 \
		--idle-s 1 --far-s 3600 --payload 500 --seed "$((41 + r))" --timeout 2400 \
		--env "$MODE_LABEL" --label "dq-$be${DQ_HELD_LABEL:+-$DQ_HELD_LABEL}" --opt "backend=$be" \
		${DQ_HELD_READY:+--opt "ready=$DQ_HELD_READY"} "${extra[@]}" \
		${cg:+--memcg "$cg"} --json "$OUT/held.jsonl" 2>> "$OUT/held.log" || rc=$?
	[ -z "$cg" ] || rmdir "$cg" 2> /dev/null || true
	echo "# n=$n backend=$be repeat=$r: exit $rc" >> "$OUT/held.log"
	return 0
}

summary() {
	python3 - "$OUT/held.jsonl" <<-'PY'
	import json, statistics, sys
	runs = {}
	for line in open(sys.argv[1]):
	    try:
	        j = json.loads(line)
	    except ValueError:
	        continue
	    # dq-kernel-LABEL (DQ_HELD_LABEL) runs get a row of their own
	    suf = str(j.get("label", "")).split("-", 2)[2:]
	    key = "dq-" + str(j.get("env")) + ("-" + suf[0] if suf else "")
	    runs.setdefault((key, j.get("n")), []).append(j)
	def fig(rs, key, scale=1.0):
	    v = [r[key] * scale for r in rs if isinstance(r.get(key), (int, float))]
	    if not v:
	        return "-", None
	    m = statistics.median(v)
	    return "%.1f (%.1f-%.1f)" % (m, min(v), max(v)), m
	cols = [("fill_ns_per_msg", "fill ns/msg", 1), ("fill_cpu_us_per_msg", "fill CPU ns/msg", 1e3),
	        ("insert_ns_per_msg", "probe insert ns/msg", 1), ("release_ns_per_msg", "release ns/msg", 1),
	        ("release_cpu_us_per_msg", "release CPU ns/msg", 1e3), ("mem_bytes_per_msg", "B/msg beyond payload", 1)]
	print("| run | held | runs | verdicts | " + " | ".join(c[1] for c in cols) + " |")
	print("|---" * (4 + len(cols)) + "|")
	base = {}
	for (label, n), rs in sorted(runs.items(), key=lambda k: (str(k[0][0]), k[0][1] or 0)):
	    cells, meds = [], {}
	    for key, name, sc in cols:
	        s, m = fig(rs, key, sc)
	        cells.append(s)
	        meds[key] = m
	    verdicts = ",".join(sorted({str(r.get("verdict")) for r in rs}))
	    print("| %s | %s | %d | %s | %s |" % (label, n, len(rs), verdicts, " | ".join(cells)))
	    base.setdefault(label, (n, meds))
	print()
	for (label, n), rs in sorted(runs.items(), key=lambda k: (str(k[0][0]), k[0][1] or 0)):
	    n0, m0 = base[label]
	    if n == n0:
	        continue
	    parts = []
	    for key, name, sc in cols[:5]:
	        s, m = fig(rs, key, sc)
	        if m and m0.get(key):
	            parts.append("%s %.2fx" % (name, m / m0[key]))
	    print("%s: %d held vs %d: %s" % (label, n, n0, ", ".join(parts)))
	PY
}

case $MODE in
inside)
	MODE_LABEL=vm
	mkdir -p "$OUT"
	CG_ROOT=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/mounts)
	if [ -z "$CG_ROOT" ]; then
		mount -t cgroup2 cgroup2 /sys/fs/cgroup && CG_ROOT=/sys/fs/cgroup
	fi
	echo +memory > "$CG_ROOT/cgroup.subtree_control" || CG_ROOT=
	echo "# $(uname -r), $(nproc) CPUs, $(awk '/MemTotal/ {print $2}' /proc/meminfo) kB" >> "$OUT/held.log"
	for n in $SIZES; do
		for r in $(seq "$REPEATS"); do one_run "$n" "$BACKEND" "$r"; done
	done
	;;
plan)
	plan_vm
	echo "vm_mem_mb=$VM_MB"
	echo "sizes=$RUN_SIZES"
	printf '%s' "$SKIPPED" | sed 's/^/not_measured=/'
	exit 0
	;;
vm)
	timeout 600 make -s -C "$TOP/bench" "$PEER" > /dev/null || { echo "held_scale.sh: cannot build $PEER" >&2; exit 1; }
	[ "$APPEND" = 1 ] || rm -rf "$OUT"
	mkdir -p "$OUT"
	# 12 M x 512 B slots = 6.1 GB of arena, ~1.2 GB of dq.ko records,
	# the harness's own arrays: 16 G leaves room on either NUMA node.
	touch "$OUT/held.jsonl" "$OUT/held.log"
	plan_vm
	ASKED=$SIZES SIZES=$RUN_SIZES
	vrc=0
	if [ -z "$SIZES" ]; then
		echo "held_scale.sh: no size fits: $SKIPPED" >&2
		vrc=1
	else
		echo "held_scale.sh: VM of $VM_MB MiB for $SIZES${SKIPPED:+; not measured: ${SKIPPED//$'\n'/; }}" >&2
		# the lock on a descriptor of ours, so that the date and the load
		# are the measurement's, not the wait's (selftests/vm/run sees the
		# inherited descriptor as its caller's lock)
		LOCK=${DQ_HELD_LOCK:-/tmp/dq-vm.lock}
		exec {LOCK_FD}> "$LOCK"
		if ! flock -w "${DQ_HELD_LOCK_WAIT:-3600}" "$LOCK_FD"; then
			echo "held_scale.sh: $LOCK not free within ${DQ_HELD_LOCK_WAIT:-3600} s (another VM run)" >&2
			vrc=1
		else
			START=$(date -u +%Y-%m-%dT%H:%M:%SZ)
			LOAD_START=$(cut -d' ' -f1 /proc/loadavg)
			DQ_VM_MEM=${VM_MB}M "$TOP/selftests/vm/run" \
				--kernel 6.1 --params "max_arena_bytes=$((8 << 30))" --rw "$OUT" \
				--timeout "${DQ_HELD_VM_TIMEOUT:-5400}" -- \
				bench/held_scale.sh --inside "$OUT" "$SIZES" kernel || vrc=$?
			[ "$vrc" = 0 ] || echo "held_scale.sh: the VM failed (exit $vrc; 124: the VM's timeout)" >&2
		fi
		exec {LOCK_FD}>&-
	fi
	SIZES=$ASKED
	write_meta "$vrc"
	;;
host)
	MODE_LABEL=host
	timeout 600 make -s -C "$TOP/bench" "$PEER" > /dev/null || { echo "held_scale.sh: cannot build $PEER" >&2; exit 1; }
	[ "$APPEND" = 1 ] || rm -rf "$OUT"
	mkdir -p "$OUT"
	touch "$OUT/held.jsonl" "$OUT/held.log"
	for n in $SIZES; do
		for r in $(seq "$REPEATS"); do one_run "$n" user "$r"; done
	done
	SKIPPED=""
	write_meta 0
	;;
summary) ;;
esac
if [ "$MODE" != inside ]; then
	{
		echo "# bench/held_scale.sh --$MODE, $(date -u +%Y-%m-%d), $(uname -m), $(nproc) host CPUs; sizes: $SIZES; repeats: $REPEATS"
		sed -n 's/^# \([0-9].*kB\)$/# guest: \1/p' "$OUT/held.log" | sort -u
		echo "# median (min-max) of the repeats$([ "$MODE" = host ] || echo "; ns are TCG's in the VM (10-100x off): compare ratios")"
		summary
	} > "$OUT/held.txt"
	cat "$OUT/held.txt"
	# a run that did not exit 0 fails the script (held.log says which)
	if grep -q '^# n=.*: exit [1-9]' "$OUT/held.log" 2> /dev/null; then
		echo "held_scale.sh: runs failed:" >&2
		grep '^# n=.*: exit [1-9]' "$OUT/held.log" >&2
		exit 1
	fi
	[ "${vrc:-0}" = 0 ] || exit "$vrc"
fi
