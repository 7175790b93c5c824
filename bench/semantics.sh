#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1 OR MIT
#
# What delivery tracking and application keys cost, next to plain commits,
# on libdqshim's embedded engine natively (bench/build/peer-dq
# --opt backend=user), the same workload for each variant:
#
#   instructions per message  callgrind's instruction count (stable, unlike
#                             time here): the marginal count between a run
#                             of N1 and one of N2 messages of the throughput
#                             workload (submit, release, reap, done), so the
#                             fixed costs of start-up cancel out
#   bytes per held message    the pending workload's RSS growth per message
#                             beyond the payload, median of REPEATS runs
#
# Variants: plain; track (DQ_OPEN_F_TRACK: in flight until done);
# keys (DQ_OPEN_F_KEYS, every commit keyed); track+keys.
# Writes the table to stdout and, with --write, to docs/bench/semantics.txt
# with the date, machine and commit.  Exits 1 when a run fails or reports a
# correctness violation (early, lost, duplicated, corrupt).
#
# Usage: bench/semantics.sh [--write]   (after make user && make -C bench)
set -euo pipefail
cd "$(dirname "$0")/.."

N1=${DQ_SEM_N1:-10000}
N2=${DQ_SEM_N2:-30000}
PENDING_N=${DQ_SEM_PENDING_N:-200000}
REPEATS=${DQ_SEM_REPEATS:-3}
PEER=bench/build/peer-dq
OUT=docs/bench/semantics.txt
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

# instructions NAME OPTS N: callgrind's total for one throughput run
instructions() {
	local name=$1 opts=$2 n=$3 f=$WORK/cg.$1.$3
	# shellcheck disable=SC2086
	timeout 900 valgrind --tool=callgrind --callgrind-out-file="$f.out" \
		"$PEER" --workload throughput --n "$n" --seed 42 \
		--opt backend=user $opts --json "$f.json" > "$f.log" 2>&1 ||
		{ echo "semantics: $name n=$n failed:" >&2; tail -5 "$f.log" >&2; exit 1; }
	verdict "$f.json"
	sed -nE 's/^summary: ([0-9]+).*/\1/p' "$f.out"
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
printf '%-12s %14s %10s %14s\n' variant "instr/msg" "vs plain" "bytes/held" > "$table"
plain_ir=
for v in "${VARIANTS[@]}"; do
	name=${v%%:*}
	opts=${v#*:}
	i1=$(instructions "$name" "$opts" "$N1")
	i2=$(instructions "$name" "$opts" "$N2")
	ir=$(( (i2 - i1) / (N2 - N1) ))
	[ -n "$plain_ir" ] || plain_ir=$ir
	b=$(bytes "$name" "$opts")
	printf '%-12s %14d %9.2fx %14s\n' "$name" "$ir" \
		"$(awk -v a="$ir" -v b="$plain_ir" 'BEGIN { print a / b }')" "$b" >> "$table"
done

{
	echo "# bench/semantics.sh: delivery tracking and keys against plain commits"
	echo "# $(date -u +%F) on $(uname -r), $(nproc) cores, $(git rev-parse --short HEAD)"
	echo "# embedded engine, native; instr/msg: callgrind, marginal between"
	echo "# n=$N1 and n=$N2 throughput runs (submit+release+reap+done, both"
	echo "# threads); bytes/held: pending n=$PENDING_N, RSS beyond the payload,"
	echo "# median of $REPEATS"
	cat "$table"
} > "$WORK/report"
cat "$WORK/report"
if [ "${1:-}" = --write ]; then
	cp "$WORK/report" "$OUT"
	echo "semantics: wrote $OUT"
fi
