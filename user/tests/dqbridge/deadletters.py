#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1 OR MIT
"""Print the entries of a dead-letter stream, one line each:
    <id field> <reason> <attempts> <sha256 of the payload field>
usage: deadletters.py PORT STREAM   (RESP spoken here: payloads are binary)
"""
import hashlib
import socket
import sys

sock = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
rf = sock.makefile("rb")


def reply():
    line = rf.readline()
    kind, rest = line[:1], line[1:-2]
    if kind == b"*":
        n = int(rest)
        return None if n < 0 else [reply() for _ in range(n)]
    if kind == b"$":
        n = int(rest)
        return None if n < 0 else rf.read(n + 2)[:-2]
    if kind in (b"+", b":"):
        return rest
    raise SystemExit("redis: %r" % line)


args = [b"XRANGE", sys.argv[2].encode(), b"-", b"+"]
sock.sendall(b"*%d\r\n" % len(args) + b"".join(b"$%d\r\n%s\r\n" % (len(a), a) for a in args))
for _, fields in reply():
    rec = dict(zip(fields[::2], fields[1::2]))
    print(rec.get(b"id", b"-").decode(), rec.get(b"reason", b"-").decode(),
          rec.get(b"attempts", b"-").decode(),
          hashlib.sha256(rec.get(b"payload", b"")).hexdigest())
