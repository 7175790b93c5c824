#!/bin/bash
for v in wait wait-unlinked thread; do
  strace -f -c -e trace=io_uring_enter,ioctl -o /tmp/st-$v.txt bench/build/peer-dq --workload lateness --rate 500 --duration 4 --dmin-ms 0 --dmax-ms 500 --payload 500 --env vm --timeout 60 --opt backend=kernel --opt path=uring --opt consumer=$v > /dev/null 2>/tmp/err-$v.txt
  echo "== $v: $(tail -1 /tmp/err-$v.txt | cut -c1-90)"
  grep -E "io_uring_enter|ioctl" /tmp/st-$v.txt
done
