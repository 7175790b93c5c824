#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# docs/records/bench/kslack.txt: dq.ko's adaptive timer slack against
# fixed_slack=1 (the whole granularity less the wheel's tick, dq.ko's slack
# before it adapted), in one VM boot, by turns at each offered rate (the
# first mode alternates from run to run) so that both see the same host
# load.
#
# The workload is bench/'s offered-rate run, unchanged: bench/build/peer-dq
# --workload lateness (dq.ko through io_uring, a consumer thread blocked in
# dq_reap(), delays uniform 0-1 s, 500 B, 1 ms producer ticks; lateness =
# the consumer's clock when it read the message - the due time the harness
# chose; early, lost and duplicated messages checked).  The same seed for
# both modes of a run, another per run.  Per run:
#   p50/p99/p999/max lateness  from the harness's JSON line
#   fires      expiries of the engines' hrtimers (DQ_IOC_NODE_STATS
#              timer_fires, summed over the nodes, read by dqctl before
#              and after the run): the wake-ups the slack is about
#   nvcsw      the peer's voluntary context switches (all its threads,
#              GNU time's %w): its consumer's wake-ups plus the producer's
#              1000 ticks a second
#   busy_s     CPU busy on all CPUs during the run (/proc/stat: user, nice,
#              system, irq, softirq, steal), softirq included: releases
#              run in the engine's timer softirq
# and at the end, per rate and mode, the median of the runs (min-max).
#
# Run from the host, after `make module`, `make -C user` and
# `make -C bench all` (bench/build/peer-dq):
#   flock /tmp/dq-vm.lock selftests/vm/run --kernel 6.1 --timeout 1500 -- \
#     selftests/vm/kslack-bench.sh [RUNS]
# Environment: DQ_KS_RATES (default "1000 10000"), DQ_KS_SECONDS (10: how
# long each run offers), DQ_KS_GRACE (2 s after the last due time).
set -u
runs=${1:-3}
rates=${DQ_KS_RATES:-1000 10000}
secs=${DQ_KS_SECONDS:-10}
grace=${DQ_KS_GRACE:-2}
peer=bench/build/peer-dq
dqctl=user/build/dqctl
param=/sys/module/dq/parameters/fixed_slack
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT

for f in "$peer" "$dqctl" "$param"; do
	[ -e "$f" ] || { echo "kslack-bench: $f missing"; exit 1; }
done

busy_jiffies() {
	awk '/^cpu /{print $2 + $3 + $4 + $7 + $8 + $9}' /proc/stat
}

# timer_fires of every node's engine, summed
fires() {
	local n sum=0 f
	for n in /sys/devices/system/node/node[0-9]*; do
		f=$("$dqctl" --json stats --node "${n##*node}" | jq -r .timer_fires) || return 1
		sum=$((sum + f))
	done
	echo "$sum"
}

hz=$(getconf CLK_TCK)
echo "# kslack-bench: $(uname -r), $(nproc) CPUs, $(ls -d /sys/devices/system/node/node[0-9]* | wc -l) nodes; rates $rates; $secs s per run, $runs runs"
echo "# $peer --workload lateness --rate R --duration $secs --dmin-ms 0 --dmax-ms 1000 --grace-s $grace --payload 500 --seed RUN --opt backend=kernel --opt path=uring"
bad=0
for run in $(seq 1 "$runs"); do
	for rate in $rates; do
		if [ $((run % 2)) = 1 ]; then modes="adaptive fixed"; else modes="fixed adaptive"; fi
		for mode in $modes; do
			if [ "$mode" = fixed ]; then echo 1 > "$param"; else echo 0 > "$param"; fi
			rm -f "$tmp/json"
			f0=$(fires) || { echo "kslack-bench: dqctl stats failed"; exit 1; }
			b0=$(busy_jiffies)
			/usr/bin/time -f '%w %c' -o "$tmp/time" \
				timeout -k 10 $((secs * 3 + 120)) "$peer" --workload lateness \
				--env vm --label "dq-uring-$mode" --rep "$run" --seed "$run" \
				--rate "$rate" --duration "$secs" --dmin-ms 0 --dmax-ms 1000 \
				--grace-s "$grace" --payload 500 --timeout $((secs * 3 + 60)) \
				--json "$tmp/json" --opt backend=kernel --opt path=uring \
				2> "$tmp/err"
			rc=$?
			b1=$(busy_jiffies)
			f1=$(fires)
			if [ ! -s "$tmp/json" ]; then
				echo "rate=$rate mode=$mode run=$run: no result (exit $rc): $(tail -n 2 "$tmp/err" | tr '\n' ' ')"
				bad=1
				continue
			fi
			read -r nvcsw _ < "$tmp/time"
			jq -r --arg rate "$rate" --arg mode "$mode" --arg run "$run" \
				--arg fires $((f1 - f0)) --arg nvcsw "${nvcsw:-0}" \
				--arg busy "$(awk -v j=$((b1 - b0)) -v hz="$hz" 'BEGIN { printf "%.2f", j / hz }')" '
				"rate=\($rate) mode=\($mode) run=\($run)" +
				" p50_us=\(.late_p50_us) p99_us=\(.late_p99_us)" +
				" p999_us=\(.late_p999_us) max_us=\(.late_max_us)" +
				" delivered=\(.delivered) early=\(.early) lost=\(.lost) dup=\(.dup)" +
				" wall_s=\(.wall_s * 100 | round / 100) fires=\($fires)" +
				" fires_per_s=\(($fires | tonumber) / .wall_s | round)" +
				" nvcsw_per_s=\(($nvcsw | tonumber) / .wall_s | round)" +
				" busy_s=\($busy) cannot_offer=\(.cannot_offer) verdict=\(.verdict)"' \
				"$tmp/json" | tee -a "$tmp/lines"
			grep -q '"verdict":"ok"' "$tmp/json" || bad=1
		done
	done
done
echo 0 > "$param"

# medians (min-max) per rate and mode
echo "# medians of $runs runs (min-max)"
for rate in $rates; do
	for mode in adaptive fixed; do
		grep "^rate=$rate mode=$mode " "$tmp/lines" | awk -v rate="$rate" -v mode="$mode" '
			function med(k,   n, i, j, t, a) {
				n = split(vals[k], a, " ")
				for (i = 1; i <= n; i++)
					for (j = i + 1; j <= n; j++)
						if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
				return sprintf("%s (%s-%s)", n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2, a[1], a[n])
			}
			{
				for (i = 1; i <= NF; i++) {
					split($i, kv, "=")
					vals[kv[1]] = vals[kv[1]] " " kv[2]
				}
			}
			END {
				if (!NR) { printf "rate=%s mode=%s: no runs\n", rate, mode; exit }
				printf "rate=%-6s %-8s p50_us %s  p99_us %s  fires_per_s %s  nvcsw_per_s %s  busy_s %s\n",
					rate, mode, med("p50_us"), med("p99_us"), med("fires_per_s"),
					med("nvcsw_per_s"), med("busy_s")
			}'
	done
done
[ "$bad" = 0 ] || echo "kslack-bench: some run failed or broke a rule (see above)"
exit "$bad"
