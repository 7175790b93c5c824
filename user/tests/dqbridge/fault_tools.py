#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1 OR MIT
"""Helpers of dqbridge_fault_test.sh (RESP spoken here: payloads are binary).

fault_tools.py produce PORT STREAM COUNT RATE OUT MIN MAX [PREFIX]
    XADD COUNT random payloads of MIN..MAX bytes at RATE/s, PREFIX first;
    OUT gets "<id> <sha256>" per message (the test's own record)
fault_tools.py judge PRODUCED LOG [EXCLUDE_ID...]
    on the downstream's log (recorder.py / fault_sink.py format): prints
    produced, missing, bad_payload, duplicates (200s beyond the first for
    the produced ids), first_ok.<id>=time of the first 200 is not printed;
    missing_ids when some are missing
fault_tools.py times LOG ID
    "<first request time> <first 200 time>" of ID
"""
import hashlib
import random
import socket
import sys
import time


def resp(sock, rf, *args):
    msg = b"*%d\r\n" % len(args)
    for a in args:
        msg += b"$%d\r\n%s\r\n" % (len(a), a)
    sock.sendall(msg)
    line = rf.readline()
    if line[:1] == b"$":
        return rf.read(int(line[1:]) + 2)[:-2]
    raise SystemExit("redis: %r" % line)


def produce(port, stream, count, rate, out, lo, hi, prefix=b""):
    sock = socket.create_connection(("127.0.0.1", int(port)))
    rf = sock.makefile("rb")
    rnd = random.Random(int(count) * 7919 + int(lo))
    start = time.monotonic()
    with open(out, "a", buffering=1) as f:
        for i in range(int(count)):
            d = start + i / float(rate) - time.monotonic()
            if d > 0:
                time.sleep(d)
            body = prefix + rnd.randbytes(rnd.randint(int(lo), int(hi)))
            mid = resp(sock, rf, b"XADD", stream.encode(), b"*", b"payload", body)
            f.write("%s %s\n" % (mid.decode(), hashlib.sha256(body).hexdigest()))


def judge(produced, log, *exclude):
    want = {}
    for line in open(produced):
        mid, sha = line.split()
        want[mid] = sha
    ok, bad, dups = {}, 0, 0
    for line in open(log):
        t, key, sha, status = line.split()
        if status != "200" or key not in want:
            continue
        if key in ok:
            dups += 1
            continue
        ok[key] = sha
        if want[key] != sha:
            bad += 1
    missing = [m for m in want if m not in ok and m not in exclude]
    print("produced=%d" % len(want))
    print("missing=%d" % len(missing))
    if missing:
        print("missing_ids=%s" % ",".join(missing[:10]))
    print("bad_payload=%d" % bad)
    print("duplicates=%d" % dups)


def times(log, mid):
    first = ok = None
    for line in open(log):
        t, key, sha, status = line.split()
        if key != mid:
            continue
        first = first or t
        if status == "200" and ok is None:
            ok = t
    print(first or "-", ok or "-")


if __name__ == "__main__":
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "produce":
        produce(*args[:7], *(a.encode() for a in args[7:8]))
    elif cmd == "judge":
        judge(*args)
    elif cmd == "times":
        times(*args)
    else:
        raise SystemExit("usage: see fault_tools.py")
