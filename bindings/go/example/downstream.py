#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1 OR MIT
"""The example test's downstream: an HTTP server on loopback that pushes
back in phases and records every request it gets.

Accepts the first ACCEPT requests; then answers 429 with Retry-After: 1
for 1 s, then 503 without Retry-After for 0.5 s, then accepts all but
every 10th request (429, Retry-After: 1) until 3 s after the first
refusal, then everything.  Each request is logged as one
line "MONO_NS ID STATUS RETRY_S BODY_HEX" (CLOCK_MONOTONIC, the same
clock in every process) before it is answered.

Usage: downstream.py PORT_FILE LOG_FILE ACCEPT"""
import http.server
import sys
import threading
import time

port_file, log_file, accept = sys.argv[1], sys.argv[2], int(sys.argv[3])
lock = threading.Lock()
state = {"n": 0, "first_refusal": None}
log = open(log_file, "a", buffering=1)


class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        sid = self.headers.get("X-Stream-Id", "-")
        with lock:
            now = time.monotonic_ns()
            state["n"] += 1
            n = state["n"]
            if n <= accept:
                status, retry = 200, -1
            else:
                if state["first_refusal"] is None:
                    state["first_refusal"] = now
                since = now - state["first_refusal"]
                if since < 1_000_000_000:
                    status, retry = 429, 1
                elif since < 1_500_000_000:
                    status, retry = 503, -1
                elif since < 3_000_000_000 and n % 10 == 0:
                    status, retry = 429, 1
                else:
                    status, retry = 200, -1
            log.write("%d %s %d %d %s\n" % (now, sid, status, retry, body.hex() or "-"))
        self.send_response(status)
        if retry >= 0:
            self.send_header("Retry-After", str(retry))
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
with open(port_file + ".tmp", "w") as f:
    f.write(str(srv.server_address[1]))
import os
os.rename(port_file + ".tmp", port_file)
srv.serve_forever()
