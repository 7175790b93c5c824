#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The two-thread shape's tail (issue 38, item 4), in one VM boot: dq.ko's
# lateness with a producer thread and a consumer thread parked in a WAIT,
# against the one-thread dq_flush_reap() shape and cyclictest, by turns so
# that every variant sees the same host load.
#
# Variants (VARIANTS, words):
#   thread        bench/'s peer-dq consumer=thread over io_uring: the
#                 harness thread commits and flushes, a consumer thread
#                 blocks in dq_reap() (DQ_URING_CMD_WAIT)
#   thread-ioctl  the same over the ioctls (DQ_IOC_WAIT)
#   thread-fixed  thread with fixed_slack=1 (the test build's parameter:
#                 the whole granularity as slack, dq.ko before it adapted)
#   same          thread, the process on CPU 0 (its queue then on CPU 0's
#                 node, whose engine timer releases on CPU 0): the consumer
#                 wakes on the CPU that released
#   cross         thread, the process on CPU 0, its consumer thread on CPU
#                 1 (peer-dq consumer-cpu=1): every wake-up crosses CPUs
#   wait          one thread, dq_flush_reap(): make bench's dq-uring row
#   cyc           cyclictest -t NCPU -a -i 1000, SCHED_OTHER: the floor
# Workload: peer-dq --workload lateness, RATE msg/s (1000) for SECS s (5),
# delays uniform 0-1 s, 500 B, GRACE s (2) after the last due time.
# Lateness = the consumer's clock when it read the message - the due time
# the harness chose; early, lost, duplicated messages checked per run.
#
# Run from the host, after make module user selftests and make -C bench:
#   selftests/vm/run --kernel 6.1 --timeout 300 -- \
#     selftests/vm/tail-bench.sh [RUNS]
# Prints one line per run and per variant, then the medians (min-max) and
# each variant's p99 over cyclictest's p99 of the same run.
set -u
runs=${1:-2}
variants=${VARIANTS:-thread same cross thread-ioctl thread-fixed wait cyc}
rate=${RATE:-1000}
secs=${SECS:-5}
grace=${GRACE:-2}
peer=bench/build/peer-dq
param=/sys/module/dq/parameters/fixed_slack
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
ncpu=$(nproc)

[ "$ncpu" -ge 2 ] || variants=${variants/cross/}
[ -x "$peer" ] || { echo "tail-bench: $peer missing (make -C bench)"; exit 1; }
command -v cyclictest > /dev/null || { echo "tail-bench: no cyclictest"; exit 1; }

# cyclictest's p99 (us) over all its threads, from the histogram
cyc_p99() {
	awk '/^#/ { if ($0 ~ /Histogram Overflows/) for (i = 4; i <= NF; i++) ovf += $i; next }
	NF >= 2 { b = $1 + 0; for (i = 2; i <= NF; i++) { c[b] += $i; tot += $i } if (b > mb) mb = b }
	END { want = 0.99 * (tot + ovf); for (b = 0; b <= mb; b++) { cum += c[b]; if (cum >= want) { print b; exit } } print "inf" }' "$1"
}

echo "# tail-bench: $(uname -r), $ncpu CPUs, load $(cut -d' ' -f1-3 /proc/loadavg); $rate msg/s, $secs s per run, $runs runs: $variants"
bad=0
for run in $(seq 1 "$runs"); do
	for v in $variants; do
		opts=(--opt backend=kernel --opt path=uring --opt consumer=thread)
		fixed=0
		pin=()
		case "$v" in
		thread) ;;
		same) pin=(taskset -c 0) ;;
		cross) pin=(taskset -c 0); opts+=(--opt consumer-cpu=1) ;;
		thread-ioctl) opts=(--opt backend=kernel --opt path=ioctl --opt consumer=thread) ;;
		thread-fixed) fixed=1 ;;
		wait) opts=(--opt backend=kernel --opt path=uring --opt consumer=wait) ;;
		cyc)
			timeout -k 5 $((secs + 30)) cyclictest -q -m -t "$ncpu" -a -i 1000 -p 0 \
				--policy=other -D "$secs" -h 100000 --histfile="$tmp/hist" > /dev/null 2>&1
			echo "run=$run v=cyc p99_us=$(cyc_p99 "$tmp/hist")" | tee -a "$tmp/lines"
			continue ;;
		*) echo "tail-bench: unknown variant $v"; exit 2 ;;
		esac
		if [ -w "$param" ]; then
			echo "$fixed" > "$param"
		elif [ "$fixed" = 1 ]; then
			echo "run=$run v=$v: skipped ($param missing: not the test build)"
			continue
		fi
		rm -f "$tmp/json"
		"${pin[@]}" timeout -k 10 $((secs * 3 + 120)) "$peer" --workload lateness --env vm \
			--label "dq-$v" --rep "$run" --seed "$run" --rate "$rate" \
			--duration "$secs" --dmin-ms 0 --dmax-ms 1000 --grace-s "$grace" \
			--payload 500 --timeout $((secs * 3 + 60)) --json "$tmp/json" \
			"${opts[@]}" > /dev/null 2> "$tmp/err"
		if [ ! -s "$tmp/json" ]; then
			echo "run=$run v=$v: no result: $(tail -n 2 "$tmp/err" | tr '\n' ' ')"
			bad=1
			continue
		fi
		jq -r --arg run "$run" --arg v "$v" '"run=\($run) v=\($v)" +
			" p50_us=\(.late_p50_us) p99_us=\(.late_p99_us) max_us=\(.late_max_us)" +
			" delivered=\(.delivered) early=\(.early) lost=\(.lost) dup=\(.dup)" +
			" verdict=\(.verdict | gsub(" "; "_"))"' "$tmp/json" | tee -a "$tmp/lines"
		grep -q '"verdict":"ok"' "$tmp/json" || bad=1
	done
done
[ -w "$param" ] && echo 0 > "$param"

echo "# medians of $runs runs (min-max); ratio: p99 / cyclictest's p99 of the same run"
for v in $variants; do
	awk -v v="$v" '
		{ split($1, rr, "="); split($2, w, "="); for (i = 3; i <= NF; i++) { split($i, kv, "="); val[rr[2], w[2], kv[1]] = kv[2] } runs[rr[2]] = 1 }
		function med(s,   n, i, j, t, a) {
			n = split(s, a, " ")
			for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
			if (!n) return "-"
			return sprintf("%s (%s-%s)", n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2, a[1], a[n])
		}
		END {
			for (r in runs) {
				if ((r, v, "p99_us") in val) {
					p99 = p99 " " val[r, v, "p99_us"]
					if ((r, v, "p50_us") in val) p50 = p50 " " val[r, v, "p50_us"]
					c = val[r, "cyc", "p99_us"] + 0
					if (c > 0) ratio = ratio " " sprintf("%.2f", val[r, v, "p99_us"] / c)
				}
			}
			printf "%-13s p50_us %s  p99_us %s  p99/cyc %s\n", v, med(p50), med(p99), med(ratio)
		}' "$tmp/lines"
done
exit "$bad"
