#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# bench/engine_ab.sh BEFORE_REV [RUNS] [OUT]: the embedded engine (peer-dq,
# dq-user as make bench runs it natively: granularity 500 us) of git
# revision BEFORE_REV against the working tree's, at 100k msg/s offered
# (DQ_AB_RATE), delays 0-1 s, 500 B, 5 s a run; RUNS (default 7) runs of
# each, alternating, every run under perf's cpu-clock sampling.
#
# Why sampling: the whole-process CPU per message (getrusage) moves by
# +-20% between runs of the same binary on a shared 2-core machine, more
# than a change of one function does; perf's samples per function, one per
# 100 us of CPU (a fixed period, not a rate), give that function's CPU
# per message directly.  Both columns are printed; compare medians.
#
# Output: OUT (default stdout) gets one line per run and a summary.
set -euo pipefail

BEFORE=${1:?usage: bench/engine_ab.sh BEFORE_REV [RUNS] [OUT]}
RUNS=${2:-7}
OUT=${3:-/dev/stdout}
RATE=${DQ_AB_RATE:-100000}
PERIOD_NS=100000
ROOT=$(cd "$(dirname "$0")/.." && pwd)
# The functions of the engine and the library on the path of a message,
# and the harness's own consumer check (record) as a yardstick.
FUNCS="dq_wheel_advance dq_wheel_insert dq_ue_hand_out dq_ue_submit dq_reserve dq_reaped_mark dq_commit record"

command -v perf >/dev/null || { echo "engine_ab: needs perf (linux-perf)" >&2; exit 2; }
WORK=$(mktemp -d /tmp/dq-engine-ab.XXXXXX)
trap 'rm -rf "$WORK"' EXIT

mkdir -p "$WORK/before"
git -C "$ROOT" archive "$BEFORE" | tar -x -C "$WORK/before"
timeout 900 make -s -C "$WORK/before/bench" >/dev/null
timeout 900 make -s -C "$ROOT/bench" >/dev/null
cp "$WORK/before/bench/build/peer-dq" "$WORK/peer-dq.before"
cp "$ROOT/bench/build/peer-dq" "$WORK/peer-dq.after"

one() {	# VARIANT SEED: one line
	local v=$1 seed=$2 json
	timeout 120 perf record -q -e cpu-clock -c $PERIOD_NS -o "$WORK/perf.data" \
		"$WORK/peer-dq.$v" --workload lateness --rate "$RATE" --duration 5 \
		--dmin-ms 0 --dmax-ms 1000 --payload 500 --seed "$seed" \
		--opt backend=user --opt granularity-us=500 >"$WORK/out" 2>&1
	json=$(grep '"verdict"' "$WORK/out" | tail -1)
	perf report -i "$WORK/perf.data" --no-children --sort sym -F sample,sym \
		2>/dev/null | grep -v '^#' |
	awk -v v="$v" -v seed="$seed" -v funcs="$FUNCS" -v p=$PERIOD_NS -v json="$json" '
	function field(k,   r) {
		if (match(json, "\"" k "\":[^,}]*")) {
			r = substr(json, RSTART + length(k) + 3, RLENGTH - length(k) - 3)
			gsub(/"/, "", r); return r
		}
		return "?"
	}
	/\[/ { s = $NF; sub(/\.(isra|part|constprop)\..*/, "", s); n[s] += $1 }
	END {
		d = field("delivered")
		printf "%s seed=%s delivered=%s verdict=%s cpu_us_per_msg=%s p99_us=%s", v, seed, d, field("verdict"), field("cpu_us_per_msg"), field("late_p99_us")
		k = split(funcs, f, " ")
		for (i = 1; i <= k; i++)
			printf " %s=%.1f", f[i], (d + 0 > 0 ? n[f[i]] * p / d : 0)
		printf "\n"
	}'
}

{
	echo "# bench/engine_ab.sh $BEFORE $RUNS: before = $(git -C "$ROOT" rev-parse --short "$BEFORE"), after = the tree at $(git -C "$ROOT" rev-parse --short HEAD)$(git -C "$ROOT" diff --quiet HEAD -- kmod user bench || echo ' + uncommitted changes')"
	echo "# $(date -u '+%F %T UTC'), $(uname -r), $(nproc) CPUs, rate $RATE msg/s; per function: ns of CPU per delivered message (perf cpu-clock samples x ${PERIOD_NS} ns)"
	for i in $(seq 1 "$RUNS"); do
		if [ $((i % 2)) = 1 ]; then one before "$i"; one after "$i"
		else one after "$i"; one before "$i"; fi
	done
} | tee "$WORK/lines" >"$OUT"

# Medians per variant and column.
awk '
/^(before|after) / {
	v = $1
	for (i = 2; i <= NF; i++) {
		split($i, kv, "="); k = kv[1]
		if (k == "seed" || k == "verdict" || k == "delivered") continue
		if (!(k in seen)) { seen[k] = 1; keys[++nk] = k }
		val[v, k, ++cnt[v, k]] = kv[2]
	}
}
function median(v, k,   n, i, j, t, a) {
	n = cnt[v, k]
	for (i = 1; i <= n; i++) a[i] = val[v, k, i] + 0
	for (i = 2; i <= n; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
	return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
END {
	printf "# medians of %d runs each\n%-18s %10s %10s\n", cnt["before", "cpu_us_per_msg"], "column", "before", "after"
	for (i = 1; i <= nk; i++)
		printf "%-18s %10.3f %10.3f\n", keys[i], median("before", keys[i]), median("after", keys[i])
}' "$WORK/lines" >>"$OUT"
