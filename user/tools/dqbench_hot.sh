#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1 OR MIT
#
# The figures of docs/records/bench/hotpath.txt: dqbench_hot (user/tools/
# dqbench_hot.c) before and after, on the embedded engine.
#
#   user/tools/dqbench_hot.sh BEFORE AFTER [callgrind|strace|rates|all]
#
# BEFORE and AFTER are dqbench_hot binaries; one built against an older
# library refuses the options it has no calls for, so BEFORE runs the
# plain configuration only.  To build the 0.6 one (main at 2a3e8b6):
#
#   git worktree add /tmp/dq-06 2a3e8b6
#   make -C /tmp/dq-06/user O=/tmp/dq-06-build /tmp/dq-06-build/libdqshim.a
#   cc -O2 -g -pthread -D_GNU_SOURCE -I/tmp/dq-06/user/include -Iuapi \
#      -o /tmp/hot-before user/tools/dqbench_hot.c \
#      /tmp/dq-06-build/libdqshim.a -luring -lisal
#
#  callgrind: instructions inside hot_loop() per message, 200k messages,
#             all due at once (submit + reap + done, one thread)
#  strace:    futex, timerfd_settime, ppoll per message at 10k and 100k
#             msg/s offered, 2 s, 3 runs (strace -f -c slows every call:
#             the consumer sleeps differently than without it)
#  rates:     CPU/msg, lateness p50/p99, the consumer's sleeps/s and the
#             engine's counters at 1k, 10k, 100k msg/s offered (delays
#             uniform 0-100 ms), 3 runs alternating, medians (min-max)
set -u
before=$1 after=$2 what=${3:-all}
out=$(mktemp -d /tmp/dqbench_hot.XXXXXX)
# name binary args
cfgs=("before|$before|" "after|$after|" "after-fixed-slack|$after|--fixed-slack"
      "after-sp-commit_n|$after|--sp --commit-n")

callgrind() {
	local name bin args ir f
	echo "## callgrind: instructions per message in hot_loop()"
	for extra in "" "--single"; do
		for c in "${cfgs[@]}" "after-sp|$after|--sp" "after-commit_n|$after|--commit-n"; do
			IFS='|' read -r name bin args <<< "$c"
			[ "$name" = after-fixed-slack ] && continue
			f=$out/callgrind.$name$extra
			valgrind --tool=callgrind --callgrind-out-file="$f" \
				--collect-atstart=no --toggle-collect=hot_loop \
				"$bin" --count 200000 $args $extra > /dev/null 2>&1
			ir=$(callgrind_annotate "$f" 2> /dev/null |
			     awk '/PROGRAM TOTALS/ {gsub(",", "", $1); print $1}')
			printf '%-20s %-9s %s instructions/msg\n' "$name" \
				"${extra:---reserve_n}" "$((ir / 200000))"
		done
	done
}

strace_counts() {
	local name bin args rate run msgs
	echo "## strace -f -c: system calls per message"
	for rate in 10000 100000; do
		for run in 1 2 3; do
			for c in "${cfgs[@]}"; do
				IFS='|' read -r name bin args <<< "$c"
				msgs=$((rate * 2))
				strace -f -c -e trace=futex,timerfd_settime,ppoll \
					-o "$out/st.txt" "$bin" --rate $rate --secs 2 $args > /dev/null
				awk -v n="$name" -v r=$rate -v run=$run -v m=$msgs '
					$NF == "futex" { f = $4 } $NF == "timerfd_settime" { t = $4 }
					$NF == "ppoll" { p = $4 }
					END { printf "rate=%-6d run=%d %-18s futex/msg=%.3f settime/msg=%.3f ppoll/msg=%.3f settime/ppoll=%.2f\n",
					      r, run, n, f / m, t / m, p / m, p ? t / p : 0 }' "$out/st.txt"
			done
		done
	done
}

rates() {
	local name bin args rate run secs
	echo "## fixed offered rates (medians of 3, min-max)"
	: > "$out/rates.jsonl"
	for run in 1 2 3; do
		for rate in 1000 10000 100000; do
			secs=2
			[ $rate = 1000 ] && secs=4
			for c in "${cfgs[@]}"; do
				IFS='|' read -r name bin args <<< "$c"
				printf '{"cfg":"%s","r":' "$name" >> "$out/rates.jsonl"
				"$bin" --rate $rate --secs $secs $args >> "$out/rates.jsonl" ||
					echo "FAILED: $name $rate" >&2
				sed -i '$ s/$/}/' "$out/rates.jsonl"
			done
		done
	done
	python3 - "$out/rates.jsonl" <<'EOF'
import json, statistics as st, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
by = {}
for r in rows:
    by.setdefault((r["r"]["rate"], r["cfg"]), []).append(r["r"])
def f(v, scale=1, fmt="%.0f"):
    v = sorted(x / scale for x in v)
    return (fmt % st.median(v)) + " (" + (fmt % v[0]) + "-" + (fmt % v[-1]) + ")"
print("%-7s %-18s %-21s %-13s %-22s %-19s %-19s %s" % ("rate", "config",
      "cpu ns/msg", "p50 late us", "p99 late us", "consumer sleeps/s",
      "engine wakeups/s", "settime/wakeup"))
for k in sorted(by):
    rs = by[k]
    new = "wakeups_per_s" in rs[0]
    print("%-7d %-18s %-21s %-13s %-22s %-19s %-19s %s" % (k[0], k[1],
          f([r["cpu_ns_per_msg"] for r in rs]),
          f([r["late_p50_ns"] for r in rs], 1000),
          f([r["late_p99_ns"] for r in rs], 1000),
          f([r["consumer_sleeps_per_s"] for r in rs]),
          f([r["wakeups_per_s"] for r in rs]) if new else "-",
          f([r["timer_sets_per_wakeup"] for r in rs], 1, "%.3f") if new else "-"))
EOF
}

echo "# $(date -u +%FT%TZ) $(uname -r), $(nproc) cores, load: $(cut -d' ' -f1-3 /proc/loadavg)"
case $what in
callgrind) callgrind ;;
strace) strace_counts ;;
rates) rates ;;
all) callgrind; strace_counts; rates ;;
*) echo "usage: $0 BEFORE AFTER [callgrind|strace|rates|all]" >&2; exit 2 ;;
esac
rm -rf "$out"
