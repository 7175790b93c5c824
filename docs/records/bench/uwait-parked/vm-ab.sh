#!/bin/bash
# A/B in one VM boot: peer-dq of two trees (same dq.ko), by turns, beside
# uring-timeout.  vm-ab.sh OLD_BENCH_BUILD NEW_BENCH_BUILD OUT ROUNDS
set -u
OLD=$1 NEW=$2 OUT=$3 ROUNDS=${4:-5}
mkdir -p "$OUT"
common=(--workload lateness --env vm --stress 0 --seed 1 --payload 500 --timeout 120
	--rate 1000 --duration 5 --dmin-ms 0 --dmax-ms 1000 --grace-s 10)
dq=(--opt backend=kernel --opt path=uring --opt consumer=wait)
for r in $(seq 1 "$ROUNDS"); do
	for v in old new ut; do
		case $v in
		old) B=$OLD ;; new) B=$NEW ;; ut) B=$NEW ;;
		esac
		if [ "$v" = ut ]; then
			"$B/peer-uring-timeout" "${common[@]}" --label uring-timeout --rep "$r" --json "$OUT/res.jsonl" 2>> "$OUT/log"
			continue
		fi
		"$B/peer-dq" "${common[@]}" "${dq[@]}" --label "dq-uring-$v" --rep "$r" --json "$OUT/res.jsonl" 2>> "$OUT/log"
		"$B/peer-dq" "${common[@]}" "${dq[@]}" --opt granularity-us=5000 --label "dq-uring-budget-$v" --rep "$r" --json "$OUT/res.jsonl" 2>> "$OUT/log"
	done
	echo "round $r done $(cut -d' ' -f1-3 /proc/loadavg)"
done
