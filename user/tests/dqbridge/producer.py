#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1 OR MIT
"""XADD messages to a Redis stream at a steady rate, for dqbridge_test.sh.

usage: producer.py PORT STREAM COUNT RATE OUT [FAIL_INDEX [PREFIX]]
Writes "<id> <sha256 of payload>" per message to OUT: the test's own
record of what went in.  Payloads are random bytes (binary, 16..600 B);
message FAIL_INDEX carries "FAIL500" (the recorder refuses it forever);
PREFIX starts every payload (SLOW: the recorder answers slowly).
Speaks RESP itself: no Python Redis module needed.
"""
import hashlib
import os
import random
import socket
import sys
import time

port, stream, count, rate, out = (int(sys.argv[1]), sys.argv[2].encode(),
                                  int(sys.argv[3]), float(sys.argv[4]), sys.argv[5])
fail = int(sys.argv[6]) if len(sys.argv) > 6 else -1
prefix = sys.argv[7].encode() if len(sys.argv) > 7 else b""
sock = socket.create_connection(("127.0.0.1", port))
rf = sock.makefile("rb")


def command(*args):
    msg = b"*%d\r\n" % len(args)
    for a in args:
        msg += b"$%d\r\n%s\r\n" % (len(a), a)
    sock.sendall(msg)
    line = rf.readline()
    if line[:1] == b"$":
        data = rf.read(int(line[1:]) + 2)[:-2]
        return data
    raise SystemExit("redis: %r" % line)


rnd = random.Random(17)
start = time.monotonic()
with open(out, "w", buffering=1) as f:
    for i in range(count):
        due = start + i / rate
        d = due - time.monotonic()
        if d > 0:
            time.sleep(d)
        body = prefix + bytes(rnd.getrandbits(8) for _ in range(rnd.randint(16, 600)))
        if i == fail:
            body = b"FAIL500 " + body
        mid = command(b"XADD", stream, b"*", b"payload", body)
        f.write("%s %s\n" % (mid.decode(), hashlib.sha256(body).hexdigest()))
