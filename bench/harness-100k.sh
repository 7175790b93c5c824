#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1 OR MIT
#
# The runs of docs/records/bench/harness-100k.txt: dq-user and uring-timeout at
# 100k and 10k msg/s offered, delays 0-1 s, 500 B, 5 s, seed 1, with the
# harness and configuration of main (BEFORE, a bench/build directory built
# from main) and of this branch (AFTER).  Each run holds the machine lock;
# the systems alternate within a repetition so that a noisy neighbour
# spreads over all of them.
#
#   bench/harness-100k.sh BEFORE_DIR AFTER_DIR OUT.jsonl [REPS]
set -u
before=$1 after=$2 out=$3 reps=${4:-3}
common=(--workload lateness --duration 5 --dmin-ms 0 --dmax-ms 1000 --payload 500 --seed 1)
# label|dir|peer|options
lock=(flock /tmp/dq-vm.lock)
[ "${DQ_LOCK_HELD:-0}" = 1 ] && lock=()
cfgs=("dq-user main (default gran 50us)|$before|dq|--opt backend=user"
      "dq-user main harness, gran 500us|$before|dq|--opt backend=user --opt granularity-us=500"
      "dq-user branch, default gran|$after|dq|--opt backend=user"
      "dq-user branch, gran 500us (run.sh)|$after|dq|--opt backend=user --opt granularity-us=500"
      "uring-timeout main|$before|uring-timeout|"
      "uring-timeout branch|$after|uring-timeout|")
for rep in $(seq 1 "$reps"); do
	for rate in 100000 10000; do
		for c in "${cfgs[@]}"; do
			IFS='|' read -r label dir peer opts <<< "$c"
			# shellcheck disable=SC2086 # opts is a word list
			"${lock[@]}" timeout 120 "$dir/peer-$peer" "${common[@]}" \
				--rate "$rate" --rep "$rep" --label "$label" $opts \
				--json "$out" 2>&1 | tail -n 1 | sed "s|^|$label rate=$rate rep=$rep: |"
		done
	done
done
