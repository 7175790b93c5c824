#!/bin/bash
# Inside the lab VM (repo root = cwd): dq-uring consumer shapes vs uring-timeout vs cyclictest.
# SHAPES: words like thread, wait, wait-unlinked, or SHAPE@CPU (pinned with taskset).
OUT=$1; REPS=${2:-3}; SHAPES=${3:-"thread wait wait-unlinked"}; RATE=${4:-1000}; DUR=${5:-8}; UT=${6:-"ut"}
B=bench/build
common="--workload lateness --rate $RATE --duration $DUR --dmin-ms 0 --dmax-ms 1000 --payload 500 --env vm --timeout 120"
for r in $(seq 1 $REPS); do
  for sv in $SHAPES; do
    v=${sv%@*}; pin=()
    [ "$sv" != "$v" ] && pin=(taskset -c ${sv#*@})
    "${pin[@]}" $B/peer-dq $common --seed $r --rep $r --label dq-uring-$sv --opt backend=kernel --opt path=uring --opt consumer=$v --json $OUT/shape.jsonl > /dev/null 2>>$OUT/err.log
  done
  for u in $UT; do
    uv=${u%@*}; pin=()
    [ "$u" != "$uv" ] && pin=(taskset -c ${u#*@})
    "${pin[@]}" $B/peer-uring-timeout $common --seed $r --rep $r --label uring-timeout-$u --json $OUT/shape.jsonl > /dev/null 2>>$OUT/err.log
  done
  cyclictest -q -m -t 2 -a -i 1000 -p 0 --policy=other -D $DUR -h 100000 --histfile=$OUT/cyc-$r.hist > /dev/null 2>&1
done
cat /sys/devices/system/node/node*/cpulist 2>/dev/null | tr '\n' ' '; echo
echo done
