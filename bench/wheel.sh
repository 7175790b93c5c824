#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1 OR MIT
#
# The release structure before and after, in one run: bench/wheel_bench.c
# built against this tree's kmod/shared/dq_wheel.c ("after") and against
# an older commit's ("before", default fa64362: the last one with nine
# levels of 64 buckets and one list per bucket; e102d4b is the last with
# the list-linked wheel, 56-byte records and the 9-level scan), both
# natively, as libdqshim builds them.
#
#   instructions per message  callgrind, measured phase only (insert +
#                             release, the wheel and the record touches
#                             the engine does, plus ~55 of the driver's
#                             own: random due time, free stack, loop), at
#                             10k and 1 M in flight; deterministic; also
#                             the after wheel with dq.ko's directory
#                             lookup (DQ_WHEEL_DIR_LOOKUP), 10k
#   LL misses per message     callgrind's cache model (no prefetch, no
#                             TLB), last level set to 16 MiB 16-way, at
#                             1 M in flight: the memory traffic the noisy
#                             ns figures cannot show reliably here
#   ns per message            median of REPEATS native runs at 10k and
#                             4 M in flight (noisy on a shared machine);
#                             the index wheel also without huge pages;
#                             and the floor: the same record touches with
#                             no wheel (wheel_bench --floor), so that what
#                             the wheel itself costs is after - floor; the
#                             variants run in turn, REPEATS rounds
#   bytes per held message    the embedded engine's RSS beyond the payload,
#                             bench/build/peer-dq --workload pending
#                             --n 1000000 --opt backend=user, before and
#                             after (the before tree is built whole in a
#                             scratch directory), median of 3
#                             (DQ_WHEEL_RSS=0 skips it)
#
# DQ_WHEEL_MID=<commit> adds a column between the two: that commit's wheel
# and bench/wheel_bench.c's record touches as they were then (e.g. main,
# to show what a branch changes against it in the same run; no RSS row).
#
# Writes the table to stdout and, with --write, to docs/records/bench/wheel.txt
# with the date, machine and commits.
#
# Usage: bench/wheel.sh [--write]      (DQ_WHEEL_BASE=<commit> to compare
#                                        with another "before")
set -euo pipefail
cd "$(dirname "$0")/.."

BASE=${DQ_WHEEL_BASE:-fa64362}
MID=${DQ_WHEEL_MID:-}
REPEATS=${DQ_WHEEL_REPEATS:-9}
OUT=docs/records/bench/wheel.txt
WORK=$(mktemp -d /tmp/dq-wheel.XXXXXX)
trap 'rm -rf "$WORK"' EXIT

command -v valgrind > /dev/null || { echo "wheel: valgrind missing (make deps)" >&2; exit 1; }

mkdir -p "$WORK/before"
git archive "$BASE" kmod/shared user/compat | tar -x -C "$WORK/before"
build() {
	local root=$1 out=$2 src=${3:-bench/wheel_bench.c}
	${CC:-cc} -O2 -g -std=gnu11 -D_GNU_SOURCE -Wall -Wextra \
		-Wno-unused-parameter -I"$root/user/compat" \
		-I"$root/kmod/shared" -Iuapi -o "$out" "$src" \
		"$root/kmod/shared/dq_wheel.c"
}
build "$WORK/before" "$WORK/before.bin"
build "$PWD" "$WORK/after.bin"
if [ -n "$MID" ]; then
	mkdir -p "$WORK/mid"
	git archive "$MID" kmod/shared user/compat bench/wheel_bench.c |
		tar -x -C "$WORK/mid"
	# the mid commit's bench too: its record touches are part of it
	build "$WORK/mid" "$WORK/mid.bin" "$WORK/mid/bench/wheel_bench.c"
fi
# dq.ko's way to a record (through the directory), for its instructions
CC="${CC:-cc} -DDQ_WHEEL_DIR_LOOKUP" build "$PWD" "$WORK/after-dir.bin"

# field LINE KEY: one key=value of a wheel_bench line
field() { tr ' ' '\n' <<< "$1" | sed -n "s/^$2=//p"; }

# ir BIN N MSGS: instructions per message of the measured phase
ir() {
	local f=$WORK/cg.$RANDOM
	timeout 1800 valgrind --tool=callgrind --toggle-collect=bench_run \
		--callgrind-out-file="$f" "$1" "$2" "$3" > "$f.log" 2>&1 ||
		{ echo "wheel: callgrind $1 $2 failed" >&2; tail -5 "$f.log" >&2; exit 1; }
	awk -v m="$3" '/Collected :/ { gsub(",", "", $4); printf "%d", $4 / m }' "$f.log"
}

# llmiss BIN N MSGS: last-level data misses per message (cache model)
llmiss() {
	local f=$WORK/cgc.$RANDOM
	timeout 1800 valgrind --tool=callgrind --cache-sim=yes \
		--LL=16777216,16,64 --toggle-collect=bench_run \
		--callgrind-out-file="$f" "$1" "$2" "$3" > "$f.log" 2>&1 ||
		{ echo "wheel: callgrind $1 $2 failed" >&2; tail -5 "$f.log" >&2; exit 1; }
	awk -v m="$3" '/LLd misses:/ { gsub(",", "", $4); printf "%.2f", $4 / m }' "$f.log"
}

# rss PEER: median bytes per held message beyond the payload, 3 runs
rss() {
	local i vals=()
	for i in 1 2 3; do
		timeout 600 "$1" --workload pending --n 1000000 --seed "$i" \
			--idle-s 1 --opt backend=user --json "$WORK/p.$i.json" \
			> "$WORK/p.$i.log" 2>&1 ||
			{ echo "wheel: pending run failed" >&2; tail -5 "$WORK/p.$i.log" >&2; exit 1; }
		vals+=("$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["verdict"] == "ok", d["verdict"]; print(d["mem_rss_bytes_per_msg"])' "$WORK/p.$i.json")")
		rm -f "$WORK/p.$i.json"
	done
	printf '%s\n' "${vals[@]}" | sort -g | awk '{ v[NR] = $1 } END { printf "%.1f", v[2] }'
}

# nsrow N MSGS: REPEATS rounds, each running before, (mid,) after, after
# without huge pages and the floor once, in turn (so that a change in the
# machine's load hits all alike); one line per variant: median (all runs)
VARIANTS="before${MID:+ mid} after after-nohuge floor"
nsrow() {
	local n=$1 m=$2 i v line
	for i in $(seq "$REPEATS"); do
		for v in $VARIANTS; do
			case $v in
			before) line=$(timeout 600 "$WORK/before.bin" "$n" "$m") ;;
			mid) line=$(timeout 600 "$WORK/mid.bin" "$n" "$m") ;;
			after) line=$(timeout 600 "$WORK/after.bin" "$n" "$m") ;;
			floor) line=$(timeout 600 "$WORK/after.bin" "$n" "$m" --floor) ;;
			*) line=$(timeout 600 "$WORK/after.bin" "$n" "$m" --no-huge) ;;
			esac
			echo "$v $(field "$line" ns_per_msg)"
		done
	done > "$WORK/ns"
	for v in $VARIANTS; do
		printf '    %-17s ' "$v"
		awk -v v="$v" '$1 == v { print $2 }' "$WORK/ns" | sort -g |
			awk '{ a[NR] = $1; all = all (NR > 1 ? "," : "") $1 }
			     END { printf "%s (%s)\n", a[int((NR + 1) / 2)], all }'
	done
}

table=$WORK/table
# row LABEL BEFORE MID AFTER: one line of the table (MID only with a mid)
row() {
	if [ -n "$MID" ]; then
		printf '%-28s %14s %14s %14s\n' "$1" "$2" "$3" "$4"
	else
		printf '%-28s %14s %14s\n' "$1" "$2" "$4"
	fi
}
# mid CMD ARGS: CMD's output for the mid column, empty without one
mid() { if [ -n "$MID" ]; then "$@"; fi; }
{
	row "" "before" "mid" "after"
	line_b=$("$WORK/before.bin" 10000 200000)
	line_m=$(mid "$WORK/mid.bin" 10000 200000)
	line_a=$("$WORK/after.bin" 10000 200000)
	row "bytes/record (wheel+cold)" "$(field "$line_b" node_bytes)" \
		"$(field "$line_m" node_bytes)" "$(field "$line_a" node_bytes)"
	row "struct dq_wheel bytes" "$(field "$line_b" wheel_bytes)" \
		"$(field "$line_m" wheel_bytes)" "$(field "$line_a" wheel_bytes)"
	row "cascades/msg (10k)" "$(field "$line_b" cascades_per_msg)" \
		"$(field "$line_m" cascades_per_msg)" "$(field "$line_a" cascades_per_msg)"
	row "instructions/msg, 10k" "$(ir "$WORK/before.bin" 10000 200000)" \
		"$(mid ir "$WORK/mid.bin" 10000 200000)" "$(ir "$WORK/after.bin" 10000 200000)"
	row "instructions/msg, 1M" "$(ir "$WORK/before.bin" 1000000 500000)" \
		"$(mid ir "$WORK/mid.bin" 1000000 500000)" "$(ir "$WORK/after.bin" 1000000 500000)"
	row "  after, dq.ko's lookup, 10k" "" "" \
		"$(ir "$WORK/after-dir.bin" 10000 200000)"
	row "LL misses/msg, 1M (model)" "$(llmiss "$WORK/before.bin" 1000000 200000)" \
		"$(mid llmiss "$WORK/mid.bin" 1000000 200000)" "$(llmiss "$WORK/after.bin" 1000000 200000)"
	if [ "${DQ_WHEEL_RSS:-1}" != 0 ]; then
		mkdir -p "$WORK/tree"
		git archive "$BASE" | tar -x -C "$WORK/tree"
		# libdqshim.a needs ISA-L, which bench/Makefile's peer-dq line
		# does not name: LDLIBS=-lisal.
		for t in "$WORK/tree" "$PWD"; do
			make -s -C "$t/user" > "$WORK/build.log" 2>&1 &&
			make -s -C "$t/bench" "$t/bench/build/peer-dq" LDLIBS=-lisal \
				>> "$WORK/build.log" 2>&1 ||
				{ echo "wheel: building $t's peer-dq failed" >&2; tail -5 "$WORK/build.log" >&2; exit 1; }
		done
		row "RSS bytes/held msg, 1M" \
			"$(rss "$WORK/tree/bench/build/peer-dq")" "" "$(rss "$PWD/bench/build/peer-dq")"
	fi
	echo "ns/msg: median of $REPEATS (all runs), the variants run in turn"
	echo "  10k in flight, 1M msgs"
	nsrow 10000 1000000
	echo "  4M in flight, 4M msgs after 8M warm-up"
	nsrow 4000000 4000000
} > "$table"

{
	echo "# bench/wheel.sh: the release structure alone, before and after"
	echo "# $(date -u +%F) on $(uname -r), $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //')),"
	echo "# shared with other work (load $(cut -d' ' -f1-3 /proc/loadavg) at the end)"
	echo "# before: $(git rev-parse --short "$BASE")${MID:+  mid: $(git rev-parse --short "$MID")}  after: $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- kmod/shared bench/wheel_bench.c || echo ' + uncommitted changes')"
	echo "# THP: $(cat /sys/kernel/mm/transparent_hugepage/enabled 2> /dev/null || echo n/a), HugePages_Total: $(awk '/HugePages_Total/ { print $2 }' /proc/meminfo)"
	echo "# bench/wheel_bench.c: delays uniform in [0, 1 s), clock 0.5 s / N per"
	echo "# message, an advance every 16; per message one insert and one release"
	echo "# (record touches as the embedded engine does them); instructions:"
	echo "# callgrind, measured phase only, ~55 of them the driver's own;"
	echo "# LL misses: callgrind's cache model with a 16 MiB 16-way last level;"
	echo "# RSS: the embedded engine (peer-dq, pending, 1M held, 500 B payload),"
	echo "# bytes beyond the payload, median of 3; floor: the same record"
	echo "# touches with no wheel (wheel_bench --floor): the wheel's own cost"
	echo "# is after - floor"
	cat "$table"
} > "$WORK/report"
cat "$WORK/report"
if [ "${1:-}" = --write ]; then
	cp "$WORK/report" "$OUT"
	echo "wheel: wrote $OUT"
fi
