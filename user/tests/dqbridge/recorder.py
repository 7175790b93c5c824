#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1 OR MIT
"""The downstream app of dqbridge_test.sh, behind nginx (the rate limiter).

Records every request as one line, flushed at once:
    <arrival unix time> <Idempotency-Key> <sha256 of body> <status>
and answers 200, or 500 to a body containing FAIL500 (a message the
downstream fails forever: it must end in the dead-letter stream after
max_attempts; a failure, not a 429/503, which would not spend them).  A
body starting with SLOW is answered after 300 ms (requests in flight when
the test sends SIGTERM).
"""
import hashlib
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PORT = int(sys.argv[1])
LOG = open(sys.argv[2], "a", buffering=1)
LOCK = threading.Lock()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"   # keep-alive with nginx's upstream pool

    def do_POST(self):
        n = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(n)
        key = self.headers.get("Idempotency-Key", "-")
        status = 500 if b"FAIL500" in body else 200
        if body.startswith(b"SLOW"):
            time.sleep(0.3)
        with LOCK:
            LOG.write("%.6f %s %s %d\n" % (time.time(), key,
                                           hashlib.sha256(body).hexdigest(), status))
        self.send_response(status)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


ThreadingHTTPServer.daemon_threads = True
ThreadingHTTPServer(("127.0.0.1", PORT), Handler).serve_forever()
