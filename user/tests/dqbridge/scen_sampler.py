#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1 OR MIT
"""The dqbridge scenario's one sampler: every sample of the run from one
process, no fork per sample (issue 35: the bash/curl/awk/date samplers it
replaces used about half of the two cores while they measured).

usage: scen_sampler.py DIR METRICS_PORT STUB_PORT REDIS_PORT SHELL_PID

Writes into DIR, in the formats scen_analyze.py reads:
  metrics.log  every 200 ms: <t> <metric> <value> for the bridge's gauges
               and counters the analysis uses
  stub.log     every 100 ms: <t> <active> <reading> <writing> <waiting>
               (nginx stub_status)
  held.log     every 500 ms: <t> <XLEN> <pending> <lag> <delivered> <h0>
               <h1>, the Redis and recorder reads bracketed by two reads
               of the bridge's held gauge (XLEN as entries-read + lag:
               one XINFO GROUPS reply)
  progress     every 250 ms, replaced atomically: <offered> <delivered>
               <held> <released_total> <t of the metrics read, in us> (the
               script's per-second loop; it trusts a held of 0 only when
               read after it began waiting)
On SIGTERM it writes harness.txt (key=value): its own CPU time and the
script's (SHELL_PID, utime + stime from /proc), the wall time, and their
share of the machine (CPU time / (wall x CPUs)); then exits.
"""
import os
import signal
import socket
import sys
import time

D = sys.argv[1]
MP, SP, RP, SHELL = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
WANT = ("dqbridge_held", "dqbridge_inflight", "dqbridge_rate", "dqbridge_released_total",
        "dqbridge_delivered_total", "dqbridge_diverted_total", "dqbridge_direct_total",
        "dqbridge_rate_decreases_total", "dqbridge_pauses_total", "dqbridge_unacked")
T_START = time.time()
stop = False


def on_term(*_):
    global stop
    stop = True


signal.signal(signal.SIGTERM, on_term)


def http_get(port):
    """The body of GET / on 127.0.0.1:port, or None (connection: close)."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1) as s:
            s.sendall(b"GET /metrics HTTP/1.0\r\nHost: x\r\n\r\n")
            chunks = []
            while True:
                b = s.recv(65536)
                if not b:
                    break
                chunks.append(b)
    except OSError:
        return None
    data = b"".join(chunks)
    head, _, body = data.partition(b"\r\n\r\n")
    if b" 200 " not in head.split(b"\r\n", 1)[0]:
        return None
    return body.decode("latin-1")


def metrics():
    body = http_get(MP)
    if body is None:
        return None
    m = {}
    for line in body.splitlines():
        p = line.split()
        if len(p) == 2 and p[0] in WANT:
            m[p[0]] = p[1]
    return m


class Redis:
    """A minimal RESP client: enough for XLEN and XINFO GROUPS."""

    def __init__(self, port):
        self.port, self.s, self.buf = port, None, b""

    def _line(self):
        while b"\r\n" not in self.buf:
            b = self.s.recv(65536)
            if not b:
                raise OSError("closed")
            self.buf += b
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def _reply(self):
        line = self._line()
        t, rest = line[:1], line[1:]
        if t in (b"+", b"-"):
            return rest.decode()
        if t == b":":
            return int(rest)
        if t == b"$":
            n = int(rest)
            if n < 0:
                return None
            while len(self.buf) < n + 2:
                b = self.s.recv(65536)
                if not b:
                    raise OSError("closed")
                self.buf += b
            v, self.buf = self.buf[:n], self.buf[n + 2:]
            return v.decode("latin-1")
        if t == b"*":
            return [self._reply() for _ in range(int(rest))]
        raise OSError("bad reply")

    def cmd(self, *args):
        try:
            if self.s is None:
                self.s = socket.create_connection(("127.0.0.1", self.port), timeout=2)
                self.buf = b""
            out = b"*%d\r\n" % len(args)
            for a in args:
                a = a.encode()
                out += b"$%d\r\n%s\r\n" % (len(a), a)
            self.s.sendall(out)
            return self._reply()
        except OSError:
            if self.s:
                self.s.close()
            self.s = None
            return None


class Lines:
    """Lines appended to a file so far, read incrementally."""

    def __init__(self, path):
        self.path, self.off, self.n = path, 0, 0

    def count(self):
        try:
            with open(self.path, "rb") as f:
                f.seek(self.off)
                b = f.read()
        except FileNotFoundError:
            return self.n
        # only whole lines: a partial last one is counted next time
        k = b.rfind(b"\n") + 1
        self.n += b.count(b"\n", 0, k)
        self.off += k
        return self.n


def cpu_of(pid):
    try:
        f = open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()
        return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return None


def main():
    rd = Redis(RP)
    recorder = Lines(D + "/recorder.log")
    produced = [Lines(D + "/produced.txt"), Lines(D + "/produced-tail.txt")]
    mlog = open(D + "/metrics.log", "a")
    slog = open(D + "/stub.log", "a")
    hlog = open(D + "/held.log", "a")
    shell_cpu = cpu_of(SHELL) or 0.0
    shell_cpu0 = shell_cpu
    last, last_t = {}, 0.0
    nxt = {"m": 0.0, "s": 0.0, "h": 0.0, "p": 0.0}
    while not stop:
        now = time.time()
        if now >= nxt["m"]:
            nxt["m"] = now + 0.2
            m = metrics()
            if m:
                last.update(m)
                last_t = now
                for k in WANT:
                    if k in m:
                        mlog.write("%.6f %s %s\n" % (now, k, m[k]))
                mlog.flush()
        if now >= nxt["s"]:
            nxt["s"] = now + 0.1
            body = http_get(SP)
            if body:
                a = r = w = wa = None
                for line in body.splitlines():
                    p = line.split()
                    if p[:1] == ["Active"]:
                        a = p[2]
                    elif p[:1] == ["Reading:"] and len(p) >= 6:
                        r, w, wa = p[1], p[3], p[5]
                if a is not None and r is not None:
                    slog.write("%.6f %s %s %s %s\n" % (now, a, r, w, wa))
                    slog.flush()
        if now >= nxt["h"]:
            nxt["h"] = now + 0.5
            m0 = metrics()
            groups = rd.cmd("XINFO", "GROUPS", "in")
            dl = recorder.count()
            m1 = metrics()
            if m0 and m1 and isinstance(groups, list) and groups:
                g = groups[0]
                kv = dict(zip(g[0::2], g[1::2])) if isinstance(g, list) else {}
                pend, lag, rd_n = kv.get("pending"), kv.get("lag"), kv.get("entries-read")
                if isinstance(pend, int) and isinstance(lag, int) and isinstance(rd_n, int):
                    # The stream's length from the same reply as lag
                    # (entries-read + lag): a separate XLEN read before
                    # it missed what the producer added in between, up
                    # to 1387 entries at 10k/s on a loaded host.
                    xlen = rd_n + lag
                    hlog.write("%.6f %d %d %d %d %s %s\n" % (
                        time.time(), xlen, pend, lag, dl,
                        m0.get("dqbridge_held", "0"), m1.get("dqbridge_held", "0")))
                    hlog.flush()
        if now >= nxt["p"]:
            nxt["p"] = now + 0.25
            off = sum(p.count() for p in produced)
            tmp = D + "/progress.tmp"
            with open(tmp, "w") as f:
                f.write("%d %d %s %s %d\n" % (off, recorder.count(),
                                              last.get("dqbridge_held", "-"),
                                              last.get("dqbridge_released_total", "-"),
                                              int(last_t * 1e6)))
            os.rename(tmp, D + "/progress")
            c = cpu_of(SHELL)
            if c is not None:
                shell_cpu = c
        wake = min(nxt.values())
        d = wake - time.time()
        if d > 0 and not stop:
            time.sleep(d)
    wall = time.time() - T_START
    own = sum(os.times()[:2])
    c = cpu_of(SHELL)
    if c is not None:
        shell_cpu = c
    sh = shell_cpu - shell_cpu0
    ncpu = os.cpu_count() or 1
    with open(D + "/harness.txt", "w") as f:
        f.write("harness_sampler_cpu_s=%.2f\n" % own)
        f.write("harness_shell_cpu_s=%.2f\n" % sh)
        f.write("harness_wall_s=%.1f\n" % wall)
        f.write("harness_cpus=%d\n" % ncpu)
        f.write("harness_cpu_pct_of_machine=%.2f\n" % (100.0 * (own + sh) / max(1e-9, wall * ncpu)))


main()
