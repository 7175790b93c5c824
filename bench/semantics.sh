#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1 OR MIT
#
# What delivery tracking and application keys cost, next to plain commits,
# on libdqshim's embedded engine natively (bench/build/peer-dq
# --opt backend=user), the same workload for each variant:
#
#   instructions per message  callgrind's instruction count (stable, unlike
#                             time here) of the library's calls with the
#                             engine under them, per message, throughput
#                             workload: produce (reserve + commit + flush),
#                             finish (done), reap; median of REPEATS seeds
#   bytes per held message    the pending workload's RSS growth per message
#                             beyond the payload, median of REPEATS runs
#                             (memory touched only when a message goes in
#                             flight, like a tracked queue's per-slot
#                             delivery record, is not in it)
#
# Variants: plain; track (DQ_OPEN_F_TRACK: in flight until done);
# keys (DQ_OPEN_F_KEYS, every commit keyed); track+keys.
# Writes the table to stdout and, with --write, to docs/records/bench/semantics.txt
# with the date, machine and commit.  Exits 1 when a run fails or reports a
# correctness violation (early, lost, duplicated, corrupt).
#
# Usage: bench/semantics.sh [--write]   (after make user && make -C bench)
set -euo pipefail
cd "$(dirname "$0")/.."

N=${DQ_SEM_N:-20000}
PENDING_N=${DQ_SEM_PENDING_N:-200000}
REPEATS=${DQ_SEM_REPEATS:-3}
PEER=bench/build/peer-dq
OUT=docs/records/bench/semantics.txt
WORK=$(mktemp -d /tmp/dq-sem.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
export LD_LIBRARY_PATH=$PWD/user/build

command -v valgrind > /dev/null || { echo "semantics: valgrind missing (make deps)" >&2; exit 1; }
[ -x "$PEER" ] || { echo "semantics: $PEER missing (make -C bench)" >&2; exit 1; }

VARIANTS=("plain:" "track:--opt track=1" "keys:--opt keys=1"
	"track+keys:--opt track=1 --opt keys=1")

# json FILE KEY: one number of a peer's JSON line
json() {
	python3 -c 'import json,sys; v=json.load(open(sys.argv[1]))[sys.argv[2]]; print("" if v is None else v)' "$1" "$2"
}

# verdict FILE: fails the script on anything but "ok"
verdict() {
	local v
	v=$(json "$1" verdict)
	[ "$v" = ok ] || { echo "semantics: $1: verdict $v" >&2; exit 1; }
}

# instructions NAME OPTS SEED: one throughput run of N messages under
# callgrind; prints the instructions per message of the library's calls,
# inclusive of the engine: "produce finish reap reaps", where produce is
# dq_reserve + dq_commit[_key] + dq_flush, finish dq_done (dq_finish on a
# tracked queue), reap dq_reap (its cost per message depends on how many
# messages one call finds: reaps is the number of calls).
instructions() {
	local name=$1 opts=$2 f=$WORK/cg.$1.$3
	# shellcheck disable=SC2086
	timeout 900 valgrind --tool=callgrind --callgrind-out-file="$f.out" \
		"$PEER" --workload throughput --n "$N" --seed "$3" \
		--opt backend=user $opts --json "$f.json" > "$f.log" 2>&1 ||
		{ echo "semantics: $name failed:" >&2; tail -5 "$f.log" >&2; exit 1; }
	verdict "$f.json"
	callgrind_annotate --inclusive=yes "$f.out" 2> /dev/null |
		awk -v n="$N" '
		/^ *[0-9,]+ .*dq_queue.c:dq_[a-z_]+ \[/ {
			ir = $1; gsub(",", "", ir)
			fn = $0; sub(/.*dq_queue.c:/, "", fn); sub(/ .*/, "", fn)
			cost[fn] = ir
		}
		/=> .*dq_queue.c:dq_reap \(/ {
			c = $0; sub(/.*\(/, "", c); sub(/x\).*/, "", c)
			gsub(",", "", c); if (c + 0 > reaps) reaps = c + 0
		}
		END {
			p = cost["dq_reserve"] + cost["dq_commit"] + \
			    cost["dq_commit_key"] + cost["dq_flush"]
			printf "%d %d %d %d\n", p / n, cost["dq_done"] / n, \
			       cost["dq_reap"] / n, reaps
		}'
}

# median COL: the median of column COL of the lines on stdin
median() {
	awk -v c="$1" '{ print $c }' | sort -g |
		awk '{ v[NR] = $1 } END { printf "%d", v[int((NR + 1) / 2)] }'
}

# bytes NAME OPTS: median bytes per held message beyond the payload
bytes() {
	local name=$1 opts=$2 i vals=()
	for i in $(seq "$REPEATS"); do
		# shellcheck disable=SC2086
		timeout 300 "$PEER" --workload pending --n "$PENDING_N" --seed "$i" \
			--opt backend=user $opts --json "$WORK/p.$name.$i.json" \
			> "$WORK/p.$name.$i.log" 2>&1 ||
			{ echo "semantics: pending $name failed:" >&2
			  tail -5 "$WORK/p.$name.$i.log" >&2; exit 1; }
		verdict "$WORK/p.$name.$i.json"
		vals+=("$(json "$WORK/p.$name.$i.json" mem_rss_bytes_per_msg)")
	done
	printf '%s\n' "${vals[@]}" | sort -g | awk '{ v[NR] = $1 }
		END { printf "%.1f", v[int((NR + 1) / 2)] }'
}

table=$WORK/table
printf '%-12s %9s %9s %9s %9s %11s\n' variant produce finish "p+f" "reap" \
	"bytes/held" > "$table"
plain_pf=
for v in "${VARIANTS[@]}"; do
	name=${v%%:*}
	opts=${v#*:}
	for seed in $(seq "$REPEATS"); do
		instructions "$name" "$opts" "$seed"
	done > "$WORK/ir.$name"
	prod=$(median 1 < "$WORK/ir.$name")
	fin=$(median 2 < "$WORK/ir.$name")
	reap=$(median 3 < "$WORK/ir.$name")
	reaps=$(median 4 < "$WORK/ir.$name")
	pf=$((prod + fin))
	[ -n "$plain_pf" ] || plain_pf=$pf
	b=$(bytes "$name" "$opts")
	printf '%-12s %9d %9d %5d %3.2fx %5d/%-5d %9s\n' "$name" "$prod" "$fin" \
		"$pf" "$(awk -v a="$pf" -v b="$plain_pf" 'BEGIN { print a / b }')" \
		"$reap" "$reaps" "$b" >> "$table"
done

{
	echo "# bench/semantics.sh: delivery tracking and keys against plain commits"
	echo "# $(date -u +%F) on $(uname -r), $(nproc) cores, $(git rev-parse --short HEAD)"
	echo "# embedded engine, native; instructions per message (callgrind,"
	echo "# throughput n=$N, median of $REPEATS seeds), inclusive of the engine:"
	echo "# produce = dq_reserve + dq_commit[_key] + dq_flush, finish = dq_done"
	echo "# (dq_finish when tracked), p+f and its ratio to plain; reap = dq_reap"
	echo "# per message / number of dq_reap calls (depends on batching, not on"
	echo "# the variant); bytes/held: pending n=$PENDING_N, RSS beyond the"
	echo "# payload, median of $REPEATS"
	cat "$table"
} > "$WORK/report"
cat "$WORK/report"
if [ "${1:-}" = --write ]; then
	cp "$WORK/report" "$OUT"
	echo "semantics: wrote $OUT"
fi
