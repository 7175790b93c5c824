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
# One line per run into OUT/held.jsonl, a table into OUT/held.txt.
#
# usage:
#   bench/held_scale.sh --vm [--out DIR] [--sizes "10000 1000000 ..."]
#       boots the lab VM (kernel 6.1, DQ_VM_MEM, default 16G) with dq.ko
#       (max_arena_bytes 8 GiB: the default cap, 4 GiB, refuses 12 M x
#       512 B slots with -E2BIG) and runs the kernel backend over io_uring;
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
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
TOP=$(cd "$HERE/.." && pwd)
SIZES="10000 1000000 4000000 12000000"
OUT=$TOP/docs/bench/held
MODE=
APPEND=0

while [ $# -gt 0 ]; do
	case $1 in
	--vm | --host | --summary) MODE=${1#--}; shift ;;
	--out) OUT=$2; shift 2 ;;
	--sizes) SIZES=$2; shift 2 ;;
	--append) APPEND=1; shift ;;
	--inside) MODE=inside; OUT=$2; SIZES=$3; BACKEND=$4; shift 4 ;;
	*) echo "usage: see the header of $0" >&2; exit 2 ;;
	esac
done
[ -n "$MODE" ] || { echo "usage: see the header of $0" >&2; exit 2; }
REPEATS=${DQ_HELD_REPEATS:-3}
PEER=$TOP/bench/build/peer-dq

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
vm)
	make -s -C "$TOP/bench" "$PEER" > /dev/null
	[ "$APPEND" = 1 ] || rm -rf "$OUT"
	mkdir -p "$OUT"
	# 12 M x 512 B slots = 6.1 GB of arena, ~1.2 GB of dq.ko records,
	# the harness's own arrays: 16 G leaves room on either NUMA node.
	DQ_VM_MEM=${DQ_VM_MEM:-16G} flock /tmp/dq-vm.lock "$TOP/selftests/vm/run" \
		--kernel 6.1 --params "max_arena_bytes=$((8 << 30))" --rw "$OUT" --timeout 5400 -- \
		bench/held_scale.sh --inside "$OUT" "$SIZES" kernel
	;;
host)
	MODE_LABEL=host
	make -s -C "$TOP/bench" "$PEER" > /dev/null
	[ "$APPEND" = 1 ] || rm -rf "$OUT"
	mkdir -p "$OUT"
	for n in $SIZES; do
		for r in $(seq "$REPEATS"); do one_run "$n" user "$r"; done
	done
	;;
summary) ;;
esac
if [ "$MODE" != inside ]; then
	{
		echo "# bench/held_scale.sh --$MODE, $(date -u +%Y-%m-%d), $(uname -m), $(nproc) host CPUs; sizes: $SIZES; repeats: $REPEATS"
		sed -n 's/^# \([0-9].*kB\)$/# guest: \1/p' "$OUT/held.log" | sort -u
		echo "# median (min-max) of the repeats; ns are TCG's in the VM (10-100x off): compare ratios"
		summary
	} > "$OUT/held.txt"
	cat "$OUT/held.txt"
fi
