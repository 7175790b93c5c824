#!/bin/bash
# Inside the lab VM (repo root = cwd): peer-dq consumer=thread over io_uring
# with the process on CPU 0 or 1 and its consumer thread on the same CPU or
# the other one (consumer-cpu=), dqlat tracing each run; cyclictest after
# each round.  Produced docs/records/bench/tail38/dqlat.txt.
P=bench/build/peer-dq
C="--workload lateness --env vm --rate 1000 --duration 5 --dmin-ms 0 --dmax-ms 1000 --grace-s 2 --payload 500 --timeout 100"
cyc() { cyclictest -q -m -t 2 -a -i 1000 -p 0 --policy=other -D 5 -h 100000 --histfile=/tmp/h >/dev/null 2>&1
awk '/^#/{next} NF>=2{b=$1+0; for(i=2;i<=NF;i++){c[b]+=$i;t+=$i} if(b>m)m=b} END{w=.99*t; for(b=0;b<=m;b++){s+=c[b]; if(s>=w){print "cyc p99 " b; exit}}}' /tmp/h; }
echo "load $(cat /proc/loadavg)"
for r in 1 2 3; do
for v in same:0: cross:0:1 same1:1: cross1:1:0; do
  IFS=: read -r l pin cc <<< "$v"
  ebpf/build/dqlat 9 1 > /tmp/dl 2>&1 & dl=$!
  sleep 1.5
  taskset -c "$pin" $P $C --label "$l" --json /tmp/j --opt backend=kernel --opt path=uring --opt consumer=thread ${cc:+--opt consumer-cpu=$cc} >/dev/null 2>/tmp/err
  wait $dl
  echo "r=$r $l p$pin c${cc:-$pin} $(jq -r '"p50 \(.late_p50_us) p99 \(.late_p99_us) \(.verdict)"' /tmp/j)"
  grep -E "^(timer|wake|runq|reap|e2e|release_to_reap) " /tmp/dl | sort -u | sed 's/^/    /'
  rm -f /tmp/j
done
cyc
done
