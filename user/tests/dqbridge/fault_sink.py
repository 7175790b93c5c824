#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1 OR MIT
"""A downstream for dqbridge_fault_test.sh whose behaviour the test steers.

usage: fault_sink.py PORT LOG CONTROL
Logs each request like recorder.py, one line flushed at once:
    <arrival unix time> <Idempotency-Key> <sha256 of body> <status>
CONTROL is a file read at every request, one line:
    ok                      200
    status CODE [RA [PFX]]  CODE, with "Retry-After: RA" when RA is given
                            (and not "-"); with PFX only to bodies starting
                            with PFX, 200 to the others
    hang SECONDS            200 after SECONDS (requests left in flight)
    refuse CODE TIMES [RA]  CODE (with "Retry-After: RA" when RA is given)
                            to the first TIMES requests of each
                            Idempotency-Key, 200 after that: a message
                            told "not now" TIMES times, then accepted
    hold                    no answer while CONTROL says hold; then the
                            answer CONTROL says (a test's precondition
                            built, not timed: requests in flight until
                            it lets them go)
A body starting with "RA=<value>;" gets 429 with "Retry-After: <value>"
(the value verbatim, garbage included) the first time its key is seen and
the CONTROL answer after that.
"""
import hashlib
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PORT = int(sys.argv[1])
LOG = open(sys.argv[2], "a", buffering=1)
CONTROL = sys.argv[3]
LOCK = threading.Lock()
SEEN = set()
REFUSED = {}	# "refuse": Idempotency-Key -> refusals so far


def control():
    try:
        with open(CONTROL) as f:
            return f.read().split()
    except OSError:
        return ["ok"]


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self):
        n = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(n)
        key = self.headers.get("Idempotency-Key", "-")
        status, ra = 200, None
        c = control()
        while c[:1] == ["hold"]:
            time.sleep(0.01)
            c = control()
        if body.startswith(b"RA=") and b";" in body:
            with LOCK:
                first = key not in SEEN
                SEEN.add(key)
            if first:
                status, ra = 429, body[3:body.index(b";")].decode("latin-1")
                c = ["ok"]
        if c[0] == "status" and (len(c) < 4 or body.startswith(c[3].encode())):
            status = int(c[1])
            ra = c[2] if len(c) > 2 and c[2] != "-" else None
        elif c[0] == "refuse":
            with LOCK:
                k = REFUSED.get(key, 0)
                if k < int(c[2]):
                    REFUSED[key] = k + 1
                    status = int(c[1])
                    ra = c[3] if len(c) > 3 else None
        elif c[0] == "hang":
            time.sleep(float(c[1]))
        with LOCK:
            LOG.write("%.6f %s %s %d\n" % (time.time(), key,
                                           hashlib.sha256(body).hexdigest(), status))
        self.send_response(status)
        if ra is not None:
            self.send_header("Retry-After", ra)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


ThreadingHTTPServer.daemon_threads = True
ThreadingHTTPServer(("127.0.0.1", PORT), Handler).serve_forever()
