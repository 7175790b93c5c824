#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1 OR MIT
"""A downstream of fixed capacity that sheds load with 503, or slows
down, for dqbridge_shed_test.sh (issue 35: every "slow down" heard).

usage: shed_sink.py PORT LOG CAPACITY DEPTH MODE
Accepts CAPACITY requests a second (a token bucket of DEPTH requests,
refilled at CAPACITY/s on this process's clock) and answers 503 to the
others:
    MODE ra     with "Retry-After": "1" (delay-seconds) to even-numbered
                refusals, an IMF-fixdate two seconds ahead (whole seconds)
                to odd ones
    MODE none   without Retry-After
    MODE slow   refuses nothing: a request over capacity is answered 200
                after 100 ms (a queue building up: only the answer time
                says "slow down")
Logs each request, one line, written when it is answered:
    <arrival unix time> <status> <Idempotency-Key> <over>
where over is 1 for a request over capacity (refused, or held back), 0
for one within it.  The log is the test's clock: it judges the bridge on
these arrival times only.
"""
import email.utils
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PORT = int(sys.argv[1])
LOG = open(sys.argv[2], "a", buffering=1)
CAP = float(sys.argv[3])
DEPTH = float(sys.argv[4])
MODE = sys.argv[5]
LOCK = threading.Lock()
BUCKET = {"tokens": DEPTH, "t": time.monotonic(), "refused": 0}


def admit():
    """One token from the bucket (under LOCK): True if there was one."""
    now = time.monotonic()
    b = BUCKET
    b["tokens"] = min(DEPTH, b["tokens"] + (now - b["t"]) * CAP)
    b["t"] = now
    if b["tokens"] >= 1:
        b["tokens"] -= 1
        return True
    b["refused"] += 1
    return False


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self):
        t = time.time()
        n = int(self.headers.get("Content-Length", "0"))
        self.rfile.read(n)
        key = self.headers.get("Idempotency-Key", "-")
        with LOCK:
            ok = admit()
            k = BUCKET["refused"]
        ra = None
        if ok:
            status = 200
        elif MODE == "slow":
            time.sleep(0.1)
            status = 200
        else:
            status = 503
            if MODE == "ra" and k % 2 == 0:
                ra = "1"
            elif MODE == "ra":
                ra = email.utils.formatdate(int(t) + 2, usegmt=True)
        self.send_response(status)
        if ra:
            self.send_header("Retry-After", ra)
        self.send_header("Content-Length", "0")
        self.end_headers()
        with LOCK:
            LOG.write("%.6f %d %s %d\n" % (t, status, key, 0 if ok else 1))

    def log_message(self, *args):
        pass


ThreadingHTTPServer.daemon_threads = True
ThreadingHTTPServer.request_queue_size = 128
ThreadingHTTPServer(("127.0.0.1", PORT), Handler).serve_forever()
