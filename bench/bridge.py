#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1 OR MIT
"""make bench's bridge part: what dqbridge costs per message (issue 35).

One python3 process is the whole harness: it starts redis-server, nginx
and the bridge on 127.0.0.1 in a scratch directory, drives the producer
(user/tests/dqbridge/scen_producer.c, a paced pipelined XADD), and
samples /proc and the bridge's metrics endpoint itself (no fork per
sample).  Every delivered count is the test's own: nginx's access log
(status and Idempotency-Key of each request, against the ids the producer
recorded) and Redis's consumer group (entries read, pending), never the
bridge's counters.

Workloads, each repeated (--repeats, default 3), the median reported:

  rate-3000, rate-300  the producer offers R msg/s for --seconds; nginx
                       answers 200 (`return 200`, no app behind it: the
                       bridge's cost, not an app's).  Bridge CPU
                       (its threads' schedstat run time) from the first
                       offer to the last delivery, over the messages
                       delivered (access log).  Goals <= 15 and <= 50 us.
  divert               N messages in the stream, then the bridge starts
                       against a downstream that answers 429 (Retry-After
                       1) with its rate pinned at 1/s: every message goes
                       source -> durable dq commit -> XACK.  Messages per
                       second of bridge CPU (one core), from its start to
                       the group's pending list empty with N read (Redis);
                       goal >= 100k.  Also the wall rate.
  release              the same journal, the bridge restarted against a
                       downstream that answers 200, rate ceiling 10^6:
                       recovery, then every held message released and
                       delivered; messages per second of bridge CPU from
                       "started" to the N-th 200 in the access log; goal
                       >= 30k.
  floor                wrk (1 thread, --conns connections, keep-alive)
                       POSTing the same sizes to the same nginx for
                       --seconds: its CPU (rusage) per request (access
                       log); verdict: the bridge's release cost within 2x.
  peer                 bench/bridge_peer.sh --repeats times for the seeds'
                       design 1 built as a bridge (bench/peers/zset_bridge.c,
                       a 429 ZADDed, ZRANGEBYSCORE + ZREM every 200 ms)
                       and for dqbridge, alternating, the same load (1000 msg/s for
                       10 s against nginx limit_req 500 r/s + Retry-After
                       1 before scen_recorder), each killed -9 at 6 s and
                       restarted: CPU per delivered message side by side,
                       medians (verdict: dqbridge <= 0.2x the peer's; and
                       with redis-server's CPU added to each), Redis
                       commands per second, lateness of a retry against
                       its 429 + Retry-After, messages lost, duplicates
                       (~25 s a run; its own redis and nginx, its records
                       its own: bridge_peer.sh says how).
  adapt                once each (after the peer runs): the scenario
                       user/tests/dqbridge_scenario.sh (10k msg/s offered
                       to nginx limit_req 2000, 500, then 3000 r/s): the
                       accepted rate once adapted against each limit
                       (goal within 10 %), and its harness's share of the
                       machine (goal <= 5 %); and
                       user/tests/dqbridge_shed_test.sh (a downstream of
                       200 r/s that sheds with 503 + Retry-After, 503
                       alone, or slow 200s): requests arriving over its
                       capacity once adapted, on average (the overshoot,
                       goal <= 10 %).  Both are make check's tests; a
                       test that fails is a failed run here too.
  memory               the bridge's VmRSS idle (the rate runs, 0.5 s
                       after a start, nothing offered), at the divert
                       run's start (N waiting in the stream, being
                       read) and holding N (after divert), with dq_slots
                       x dq_slot_size of arena configured.

The harness's own CPU (getrusage of this process) over its wall time,
as a share of the machine (all CPUs): goal <= 5 %.

usage: bench/bridge.py [--bin DQBRIDGE] [--producer P] [--repeats 3]
                       [--seconds 10] [--n 100000] [--write FILE]
                       [--label TEXT] [--only rate,divert,floor,peer,adapt]
                       [--zset-bridge BIN] [--recorder BIN]
Exits 1 when a run failed (a message not delivered, not acked, the bridge
died); a missed goal is a MISS in the table, not a failure.
"""
import argparse
import http.client
import os
import platform
import re
import resource
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(HERE)
NCPU = os.cpu_count() or 1


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Redis:
    """The few commands the harness needs, over RESP, no module."""

    def __init__(self, port):
        self.s = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.f = self.s.makefile("rb")

    def cmd(self, *args):
        out = [b"*%d\r\n" % len(args)]
        for a in args:
            a = a if isinstance(a, bytes) else str(a).encode()
            out.append(b"$%d\r\n%s\r\n" % (len(a), a))
        self.s.sendall(b"".join(out))
        return self._read()

    def _read(self):
        line = self.f.readline()
        t, rest = line[:1], line[1:-2]
        if t == b"+":
            return rest.decode()
        if t == b"-":
            raise RuntimeError(rest.decode())
        if t == b":":
            return int(rest)
        if t == b"$":
            n = int(rest)
            if n < 0:
                return None
            data = self.f.read(n + 2)[:-2]
            return data.decode(errors="replace")
        if t == b"*":
            n = int(rest)
            return None if n < 0 else [self._read() for _ in range(n)]
        raise RuntimeError("bad reply %r" % line)

    def group(self, stream, group):
        """(entries-read, pending, lag) of @group, or None."""
        try:
            rows = self.cmd("XINFO", "GROUPS", stream)
        except RuntimeError:
            return None
        for row in rows:
            d = dict(zip(row[::2], row[1::2]))
            if d.get("name") == group:
                return (d.get("entries-read") or 0, d.get("pending") or 0,
                        d.get("lag"))
        return None


def cpu_s(pid):
    """The bridge's CPU seconds: the run time of each of its threads
    (/proc/PID/task/*/schedstat, ns).  utime + stime of /proc/PID/stat
    count in clock ticks (10 ms): ~20 of them for a 300 msg/s run, so
    +-5 % of quantisation, more than a lever moves."""
    ns = 0
    for t in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/schedstat" % (pid, t)) as f:
                ns += int(f.read().split()[0])
        except (OSError, ValueError, IndexError):
            pass	# a thread that just ended
    return ns / 1e9


def rss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


class AccessLog:
    """nginx's access log read incrementally: 200s per producer id."""

    def __init__(self, path):
        self.path = path
        self.off = 0
        self.ok = set()
        self.lines = 0
        self.partial = b""

    def poll(self):
        try:
            with open(self.path, "rb") as f:
                f.seek(self.off)
                data = f.read()
        except FileNotFoundError:
            return
        self.off += len(data)
        data = self.partial + data
        lines = data.split(b"\n")
        self.partial = lines.pop()
        for ln in lines:
            p = ln.split()
            if len(p) < 3:
                continue
            self.lines += 1
            if p[1] == b"200":
                self.ok.add(p[2])


class Metrics:
    """The bridge's metrics endpoint over one kept-alive connection."""

    def __init__(self, port):
        self.port = port
        self.c = None

    def get(self):
        try:
            if not self.c:
                self.c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=2)
            self.c.request("GET", "/metrics")
            body = self.c.getresponse().read().decode()
        except (OSError, http.client.HTTPException):
            self.c = None
            return None
        out = {}
        for ln in body.splitlines():
            if ln and not ln.startswith("#"):
                k, _, v = ln.partition(" ")
                try:
                    out[k] = float(v)
                except ValueError:
                    pass
        return out


class Lab:
    def __init__(self, args):
        self.a = args
        self.t = tempfile.mkdtemp(prefix="dq-bridge-bench.")
        self.rp, self.np = free_port(), free_port()
        self.procs = []
        self.bridge = None
        self.samples = 0
        subprocess.run(["redis-server", "--port", str(self.rp), "--bind", "127.0.0.1",
                        "--save", "", "--appendonly", "no", "--dir", self.t,
                        "--logfile", self.t + "/redis.log", "--daemonize", "yes",
                        "--pidfile", self.t + "/redis.pid"], check=True,
                       stdout=subprocess.DEVNULL)
        for _ in range(100):
            try:
                self.r = Redis(self.rp)
                self.r.cmd("PING")
                break
            except OSError:
                time.sleep(0.05)
        self.nginx()

    def nginx(self):
        os.makedirs(self.t + "/ngx", exist_ok=True)
        user = "user root;" if os.getuid() == 0 else ""
        conf = f"""{user}
daemon off;
worker_processes 1;
pid {self.t}/nginx.pid;
error_log {self.t}/nginx-error.log warn;
events {{ worker_connections 1024; }}
http {{
    client_body_temp_path {self.t}/ngx/body;
    proxy_temp_path {self.t}/ngx/proxy;
    fastcgi_temp_path {self.t}/ngx/fastcgi;
    uwsgi_temp_path {self.t}/ngx/uwsgi;
    scgi_temp_path {self.t}/ngx/scgi;
    client_body_buffer_size 64k;
    keepalive_requests 1000000;
    log_format rec '$msec $status $http_idempotency_key';
    server {{
        listen 127.0.0.1:{self.np};
        access_log {self.t}/access.log rec buffer=256k flush=100ms;
        location /ok {{ return 200; }}
        location /refuse {{ add_header Retry-After 1 always; return 429; }}
    }}
}}
"""
        with open(self.t + "/nginx.conf", "w") as f:
            f.write(conf)
        p = subprocess.Popen(["nginx", "-p", self.t, "-e", self.t + "/nginx-error.log",
                              "-c", self.t + "/nginx.conf"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.procs.append(p)
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", self.np), timeout=1).close()
                return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("nginx did not start")

    def reset(self, name):
        """A fresh stream and access log for one run."""
        self.r.cmd("FLUSHALL")
        log = self.t + "/access.log"
        if os.path.exists(log):
            os.unlink(log)
        os.kill(self.procs[0].pid, signal.SIGUSR1)	# reopen the log
        time.sleep(0.15)
        self.stream = name

    def start_bridge(self, sink, dqdir, extra):
        self.mp = free_port()
        conf = {
            "source": "redis", "redis_port": self.rp, "redis_stream": self.stream,
            "redis_group": "g", "redis_consumer": "c1", "source_batch": 256,
            "sink_url": "http://127.0.0.1:%d/%s" % (self.np, sink),
            "max_inflight": 32, "rate_state_file": "none", "dq_dir": dqdir,
            "dq_slots": 131072, "dq_slot_size": 1024,
            "metrics_listen": "127.0.0.1:%d" % self.mp, "drain_timeout_ms": 2000,
            "log_level": os.environ.get("DQ_BRIDGE_BENCH_LOG", "warn"),
        }
        conf.update(extra)
        path = self.t + "/bridge.conf"
        with open(path, "w") as f:
            for k, v in conf.items():
                f.write("%s = %s\n" % (k, v))
        logf = open(self.t + "/bridge.log", "a")
        self.bridge = subprocess.Popen([self.a.bin, "-c", path], stdout=logf,
                                       stderr=subprocess.STDOUT)
        logf.close()
        self.met = Metrics(self.mp)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if self.bridge.poll() is not None:
                raise RuntimeError("dqbridge exited %d (%s/bridge.log)" %
                                   (self.bridge.returncode, self.t))
            if self.met.get() is not None:
                return
            time.sleep(0.05)
        raise RuntimeError("dqbridge's metrics never answered")

    def stop_bridge(self):
        if not self.bridge:
            return
        if self.bridge.poll() is None:
            self.bridge.send_signal(signal.SIGTERM)
            try:
                self.bridge.wait(15)
            except subprocess.TimeoutExpired:
                self.bridge.kill()
                self.bridge.wait()
        self.bridge = None

    def produce(self, rate, seconds, wait=True):
        out = self.t + "/produced"
        p = subprocess.Popen([self.a.producer, str(self.rp), self.stream, str(rate),
                              str(seconds), out], stderr=subprocess.PIPE)
        if wait:
            _, err = p.communicate()
            if p.returncode:
                raise RuntimeError("producer: " + err.decode())
        return p, out

    def sample(self):
        """One sample of the bridge: /proc and its metrics (figures, RSS)."""
        self.samples += 1
        if self.bridge and self.bridge.poll() is None:
            self.met.get()
            return rss_kib(self.bridge.pid)
        return 0

    def close(self):
        self.stop_bridge()
        for p in self.procs:
            p.terminate()
            p.wait()
        try:
            with open(self.t + "/redis.pid") as f:
                os.kill(int(f.read()), signal.SIGTERM)
        except (OSError, ValueError):
            pass
        time.sleep(0.2)
        if not self.a.keep:
            shutil.rmtree(self.t, ignore_errors=True)


def ids_of(path):
    with open(path, "rb") as f:
        return set(ln.split()[0] for ln in f if ln.strip())


def wait_until(lab, cond, timeout, what):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if lab.bridge and lab.bridge.poll() is not None:
            raise RuntimeError("dqbridge died during %s (exit %d)" %
                               (what, lab.bridge.returncode))
        if cond():
            return time.monotonic()
        lab.sample()
        time.sleep(0.02)
    raise RuntimeError("%s: not done within %d s" % (what, timeout))


def run_rate(lab, rate, rep):
    a = lab.a
    lab.reset("rate%d_%d" % (rate, rep))
    dqdir = "%s/dq-rate%d-%d" % (lab.t, rate, rep)
    lab.start_bridge("ok", dqdir, {"rate_ceiling": 100000, "rate_floor": 100,
                                   "burst_ms": 20})
    time.sleep(0.5)
    idle_rss = rss_kib(lab.bridge.pid)
    log = AccessLog(lab.t + "/access.log")
    c0, t0 = cpu_s(lab.bridge.pid), time.monotonic()
    p, out = lab.produce(rate, a.seconds, wait=False)
    while p.poll() is None:
        lab.sample()
        log.poll()
        time.sleep(0.2)
    if p.returncode:
        raise RuntimeError("producer failed")
    ids = ids_of(out)
    wait_until(lab, lambda: (log.poll(), ids <= log.ok)[1], 60, "rate %d delivery" % rate)
    c1, t1 = cpu_s(lab.bridge.pid), time.monotonic()
    delivered = len(ids & log.ok)
    g = lab.r.group(lab.stream, "g")
    lab.stop_bridge()
    if g is None or g[1] != 0:
        raise RuntimeError("rate %d: pending not empty at the end: %r" % (rate, g))
    return {"us_per_msg": (c1 - c0) * 1e6 / delivered, "delivered": delivered,
            "wall_s": t1 - t0, "idle_rss_kib": idle_rss}


def run_divert_release(lab, rep):
    a = lab.a
    lab.reset("div%d" % rep)
    dqdir = "%s/dq-div-%d" % (lab.t, rep)
    # The offer first: N entries in the stream (as fast as Redis takes).
    _, out = lab.produce(max(a.n, 1) * 4, 0.25)
    ids = ids_of(out)
    n = len(ids)
    lab.start_bridge("refuse", dqdir, {"rate_ceiling": 1, "rate_floor": 1,
                                       "rate_initial": 1, "burst_ms": 1000,
                                       "high_watermark": 131072, "low_watermark": 1000,
                                       "max_unacked": 4096})
    c0, t0 = cpu_s(lab.bridge.pid), time.monotonic()
    rss0 = rss_kib(lab.bridge.pid)

    def acked():
        g = lab.r.group(lab.stream, "g")
        return g is not None and g[0] >= n and g[1] == 0

    t1 = wait_until(lab, acked, 120, "divert")
    c1 = cpu_s(lab.bridge.pid)
    held_rss = rss_kib(lab.bridge.pid)
    m = lab.met.get() or {}
    lab.stop_bridge()
    div = {"per_core": n / max(c1 - c0, 1e-9), "wall_rate": n / (t1 - t0),
           "n": n, "idle_rss_kib": rss0, "held_rss_kib": held_rss,
           "held_gauge": m.get("dqbridge_held", -1)}
    # Release: the same journal against an accepting downstream.
    log = AccessLog(lab.t + "/access.log")
    log.poll()
    lab.start_bridge("ok", dqdir, {"rate_ceiling": 1000000, "rate_initial": 1000000,
                                   "rate_floor": 1000, "burst_ms": 20,
                                   "max_inflight": 64})
    c0, t0 = cpu_s(lab.bridge.pid), time.monotonic()
    t1 = wait_until(lab, lambda: (log.poll(), ids <= log.ok)[1], 120, "release")
    c1 = cpu_s(lab.bridge.pid)
    lab.stop_bridge()
    rel = {"per_core": n / max(c1 - c0, 1e-9), "wall_rate": n / (t1 - t0), "n": n}
    return div, rel


def run_floor(lab, rep):
    a = lab.a
    lab.reset("floor%d" % rep)
    body = lab.t + "/body.bin"
    with open(body, "wb") as f:
        f.write(os.urandom(308))	# the producer's mean size (16..600)
    script = lab.t + "/post.lua"
    with open(script, "w") as f:
        f.write('wrk.method = "POST"\n'
                'local f = io.open("%s", "rb"); wrk.body = f:read("*a"); f:close()\n'
                'wrk.headers["Content-Type"] = "application/octet-stream"\n'
                'local n = 0\n'
                'request = function()\n'
                '  n = n + 1\n'
                '  wrk.headers["Idempotency-Key"] = "w" .. n\n'
                '  return wrk.format()\n'
                'end\n' % body)
    log = AccessLog(lab.t + "/access.log")
    p = subprocess.Popen(["wrk", "-t1", "-c%d" % a.conns, "-d%ds" % a.floor_seconds,
                          "-s", script, "http://127.0.0.1:%d/ok" % lab.np],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    while True:
        pid, status, ru = os.wait4(p.pid, os.WNOHANG)
        if pid:
            break
        log.poll()
        time.sleep(0.2)
    p.returncode = os.waitstatus_to_exitcode(status)
    time.sleep(0.3)
    log.poll()
    n = len(log.ok)
    if p.returncode or not n:
        raise RuntimeError("wrk failed (exit %d, %d requests)" % (p.returncode, n))
    return {"us_per_req": (ru.ru_utime + ru.ru_stime) * 1e6 / n, "n": n,
            "rate": n / a.floor_seconds}


def run_peer(a, system, binary, options=""):
    """bench/bridge_peer.sh once: its SYSTEM_KEY=VALUE figures (options:
    dqbridge KEY=VALUE settings, bridge_peer.sh's PEER_SET)."""
    fd, out = tempfile.mkstemp(prefix="dq-bridge-peer.")
    os.close(fd)
    try:
        p = subprocess.run([HERE + "/bridge_peer.sh", "--out", out, system, binary,
                            a.producer, a.recorder], stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE, timeout=400,
                           env=dict(os.environ, PEER_SET=options))
        with open(out) as f:
            text = f.read()
    finally:
        os.unlink(out)
    fig = {}
    for ln in text.splitlines():
        k, _, v = ln.partition("=")
        if k.startswith(system + "_"):
            fig[k[len(system) + 1:]] = v
    if p.returncode or "cpu_us_per_msg" not in fig:
        raise RuntimeError("bridge_peer.sh %s: exit %d: %s" %
                           (system, p.returncode, p.stderr.decode()[-300:]))
    # The peer losing messages at its kill -9 is its figure; dqbridge
    # losing one breaks the ack rule: a failed run.
    if system == "dqbridge" and fig.get("lost") != "0":
        raise RuntimeError("bridge_peer.sh %s: %s messages lost" % (system, fig.get("lost")))
    return fig


def run_adapt(a):
    """The scenario and the shed test once each: {figure: value} from
    their "# key=value" lines (the shed test's prefixed by its run)."""
    tests = TOP + "/user/tests/"
    fig = {}
    for name, argv, budget in (
            ("scenario", [tests + "dqbridge_scenario.sh", a.bin, a.producer, a.recorder], 330),
            ("shed", [tests + "dqbridge_shed_test.sh", a.bin], 300)):
        p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                           timeout=budget, cwd=TOP)
        out = p.stdout.decode(errors="replace")
        for ln in out.splitlines():
            m = re.match(r"# (?:(\w+): )?(\w+)=(-?[0-9.]+)$", ln)
            if m:
                fig[name + ":" + (m.group(1) + ":" if m.group(1) else "") + m.group(2)] = \
                    float(m.group(3))
        last = out.strip().splitlines()[-1:] or ["no output"]
        if p.returncode or not re.match(r"\d+ passed, 0 failed", last[0]):
            raise RuntimeError("adapt: %s: exit %d, %s" % (name, p.returncode, last[0]))
    return fig


def med(xs):
    return statistics.median(xs)


def rng(xs, fmt):
    lo, hi = min(xs), max(xs)
    return (fmt % lo) + "-" + (fmt % hi) if len(xs) > 1 else ""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=TOP + "/user/build/dqbridge")
    ap.add_argument("--producer", default=TOP + "/user/build/tests/dqbridge_scen_producer")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=10)
    ap.add_argument("--floor-seconds", type=int, default=5)
    ap.add_argument("--conns", type=int, default=32)
    ap.add_argument("--n", type=int, default=100000)
    ap.add_argument("--only", default="rate,divert,floor,peer,adapt")
    ap.add_argument("--zset-bridge", default=HERE + "/build/zset-bridge")
    ap.add_argument("--recorder", default=TOP + "/user/build/tests/dqbridge_scen_recorder")
    ap.add_argument("--write")
    ap.add_argument("--label", default="")
    ap.add_argument("--keep", action="store_true")
    a = ap.parse_args()
    only = set(a.only.split(","))
    for tool in ("redis-server", "nginx", "wrk"):
        if not shutil.which(tool):
            sys.exit("bench/bridge.py: %s missing (scripts/deps.sh)" % tool)
    for f in (a.bin, a.producer):
        if not os.access(f, os.X_OK):
            sys.exit("bench/bridge.py: %s missing (make -C user dqbridge "
                     "%s)" % (f, "user/build/tests/dqbridge_scen_producer"))
    # A TERM (timeout, make's ^C) ends through the finally below, so
    # that redis-server (daemonized), nginx and the bridge do not outlive
    # the run.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    wall0 = time.monotonic()
    ru0 = resource.getrusage(resource.RUSAGE_SELF)
    lab = Lab(a)
    res = {3000: [], 300: [], "div": [], "rel": [], "floor": []}
    failed = []
    try:
        for rep in range(a.repeats):
            # interleaved, so that drift on a shared host hits every figure
            for rate in (3000, 300):
                if "rate" in only:
                    try:
                        res[rate].append(run_rate(lab, rate, rep))
                    except RuntimeError as e:
                        failed.append(str(e))
                        lab.stop_bridge()
            if "divert" in only:
                try:
                    d, r = run_divert_release(lab, rep)
                    res["div"].append(d)
                    res["rel"].append(r)
                except RuntimeError as e:
                    failed.append(str(e))
                    lab.stop_bridge()
            if "floor" in only:
                try:
                    res["floor"].append(run_floor(lab, rep))
                except RuntimeError as e:
                    failed.append(str(e))
    finally:
        lab.close()
    # dqbridge as shipped, dqbridge on libcurl (the peer's HTTP client:
    # the two designs with equal HTTP costs), the peer.
    runs = (("dqbridge", "dqbridge", a.bin, ""),
            ("dqbridge_curl", "dqbridge", a.bin, "sink_client=curl"),
            ("zset_bridge", "zset_bridge", a.zset_bridge, ""))
    peer = {name: [] for name, _, _, _ in runs}
    if "peer" in only:
        for rep in range(a.repeats):
            for name, system, binary, options in runs:
                try:
                    if not os.access(binary, os.X_OK) or not os.access(a.recorder, os.X_OK):
                        raise RuntimeError("peer: %s or %s missing (make -C bench bridge "
                                           "builds them)" % (binary, a.recorder))
                    peer[name].append(run_peer(a, system, binary, options))
                except (RuntimeError, OSError, subprocess.TimeoutExpired) as e:
                    failed.append(str(e))
    adapt = None
    if "adapt" in only:
        try:
            adapt = run_adapt(a)
        except (RuntimeError, OSError, subprocess.TimeoutExpired) as e:
            failed.append(str(e))
    ru1 = resource.getrusage(resource.RUSAGE_SELF)
    wall = time.monotonic() - wall0
    self_cpu = (ru1.ru_utime - ru0.ru_utime) + (ru1.ru_stime - ru0.ru_stime)
    share = self_cpu / (wall * NCPU) * 100

    rows = []

    def row(what, xs, fmt, goal, ok, unit):
        if not xs:
            rows.append("%-44s %12s  %-14s %s" % (what, "not run", goal, ""))
            return
        m = med(xs)
        rows.append("%-44s %12s  %-14s %s  (%s)" % (what, (fmt % m) + " " + unit, goal,
                                                     "PASS" if ok(m) else "MISS",
                                                     "min-max " + (rng(xs, fmt) or "one run")))
    for rate, goal in ((3000, 15), (300, 50)):
        row("bridge CPU per delivered msg at %d msg/s" % rate,
            [x["us_per_msg"] for x in res[rate]], "%.1f", "<= %d us" % goal,
            lambda m, g=goal: m <= g, "us")
    row("divert path, msgs per bridge-CPU second", [x["per_core"] for x in res["div"]],
        "%.0f", ">= 100000/s", lambda m: m >= 100000, "/s")
    row("release path, msgs per bridge-CPU second", [x["per_core"] for x in res["rel"]],
        "%.0f", ">= 30000/s", lambda m: m >= 30000, "/s")
    fl = [x["us_per_req"] for x in res["floor"]]
    rel_us = [1e6 / x["per_core"] for x in res["rel"]]
    row("HTTP client floor: wrk CPU per request", fl, "%.1f", "(reference)", lambda m: True, "us")
    if fl and rel_us:
        ratio = med(rel_us) / med(fl)
        rows.append("%-44s %12s  %-14s %s" % ("release CPU per msg / wrk's", "%.2fx" % ratio,
                                              "<= 2x", "PASS" if ratio <= 2 else "MISS"))
        if res[3000]:
            r3 = med([x["us_per_msg"] for x in res[3000]]) / med(fl)
            rows.append("%-44s %12s  %-14s %s" % ("3000 msg/s CPU per msg / wrk's",
                                                  "%.2fx" % r3, "(figure)", ""))
    rows.append("%-44s %12s  %-14s %s" % ("harness (this process) CPU, % of machine",
                                          "%.2f %%" % share, "<= 5 %",
                                          "PASS" if share <= 5 else "MISS"))
    if peer["dqbridge"] and peer["zset_bridge"]:
        D, C, Z = peer["dqbridge"], peer["dqbridge_curl"], peer["zset_bridge"]

        def pm(runs, k, fmt="%.1f"):
            """The median of a figure over the runs, or "-"."""
            v = [float(r[k]) for r in runs if r.get(k, "-") not in ("-", "")]
            return fmt % med(v) if v else "-"

        def each(runs, k):
            return ",".join(r.get(k, "-") for r in runs)
        ratio = float(pm(D, "cpu_us_per_msg")) / max(float(pm(Z, "cpu_us_per_msg")), 1e-9)
        wd, wz = pm(D, "with_redis_cpu_us_per_msg"), pm(Z, "with_redis_cpu_us_per_msg")
        d = D[0]
        rows.append("")
        rows.append("the seeds' design 1 as a bridge (bench/bridge_peer.sh, %d/%d runs, alternating, "
                    "medians: %s msg/s for %s s, limit %s r/s, kill -9 at %s s)" %
                    (len(D), len(Z), d["rate"], d["offer_s"], d["limit"], d["kill_at_s"]))
        rows.append("%-44s %12s  %12s  %12s" % ("", "dqbridge", "zset_bridge",
                                                "dqbridge/curl"))
        for what, k in (("CPU per delivered msg, us", "cpu_us_per_msg"),
                        ("redis-server's CPU per delivered msg, us", "redis_cpu_us_per_msg"),
                        ("both, us", "with_redis_cpu_us_per_msg"),
                        ("Redis commands per second", "redis_cmds_per_s"),
                        ("HTTP requests", "requests"), ("HTTP 429s", "http_429"),
                        ("retry lateness vs Retry-After p50, s", "lateness_p50_s"),
                        ("retry lateness vs Retry-After p99, s", "lateness_p99_s")):
            f = "%.3f" if k.startswith("lateness") else "%.0f" if "redis_cmds" in k or \
                k in ("requests", "http_429") else "%.1f"
            rows.append("%-44s %12s  %12s  %12s" % (what, pm(D, k, f), pm(Z, k, f),
                                                    pm(C, k, f) if C else "-"))
        for what, k in (("messages lost (kill -9 + restart), each run", "lost"),
                        ("duplicate deliveries, each run", "duplicates"),
                        ("delivered, each run", "delivered")):
            rows.append("%-44s %12s  %12s  %12s" % (what, each(D, k), each(Z, k),
                                                    each(C, k) if C else "-"))
        rows.append("%-44s %12s  %-14s %s" % ("dqbridge CPU per msg / the peer's", "%.2fx" % ratio,
                                              "<= 0.2x", "PASS" if ratio <= 0.2 else "MISS"))
        if wd != "-" and wz != "-":
            rows.append("%-44s %12s  %-14s" % ("the same with redis-server's CPU",
                                               "%.2fx" % (float(wd) / max(float(wz), 1e-9)),
                                               "(figure)"))
        if C:
            rows.append("%-44s %12s  %-14s" % (
                "dqbridge on libcurl (the peer's client) / peer",
                "%.2fx" % (float(pm(C, "cpu_us_per_msg")) /
                           max(float(pm(Z, "cpu_us_per_msg")), 1e-9)),
                "(figure: the designs at equal HTTP cost)"))
    elif "peer" in only:
        rows.append("%-44s %12s" % ("the seeds' design 1 as a bridge", "not run"))
    if "adapt" in only:
        rows.append("")
        rows.append("adapting to the downstream (once each: user/tests/dqbridge_scenario.sh, "
                    "user/tests/dqbridge_shed_test.sh)")
        ph = ["scenario:phase%d_accepted_vs_limit_pct" % i for i in range(3)]
        if adapt and all(k in adapt for k in ph):
            v = [adapt[k] for k in ph]
            rows.append("%-44s %12s  %-14s %s" % (
                "scenario 2000/500/3000 r/s: accepted vs limit",
                "/".join("%+.1f" % x for x in v) + " %", "within 10 %",
                "PASS" if all(abs(x) <= 10 for x in v) else "MISS"))
        else:
            rows.append("%-44s %12s" % ("scenario: accepted vs limit", "not run"))
        k = "scenario:harness_cpu_pct_of_machine"
        if adapt and k in adapt:
            rows.append("%-44s %12s  %-14s %s" % (
                "scenario's harness CPU, % of machine", "%.2f %%" % adapt[k], "<= 5 %",
                "PASS" if adapt[k] <= 5 else "MISS"))
        runs = ("ra", "none", "slow")
        ks = ["shed:%s:overshoot_mean_pct" % r for r in runs]
        if adapt and all(k in adapt for k in ks):
            v = [adapt[k] for k in ks]
            rows.append("%-44s %12s  %-14s %s" % (
                "overshoot, 503+Retry-After/503/slow 200",
                "/".join("%+.1f" % x for x in v) + " %", "<= 10 %",
                "PASS" if max(v) <= 10 else "MISS"))
            rows.append("%-44s %12s  %-14s" % (
                "  the busiest second over capacity",
                "/".join("%+.1f" % adapt["shed:%s:overshoot_max_1s_pct" % r] for r in runs)
                + " %", "(figure)"))
        else:
            rows.append("%-44s %12s" % ("overshoot over a shedding downstream", "not run"))
    extra = []
    if res["div"]:
        extra.append("divert wall rate (2 shared cores, redis + nginx too): %.0f msg/s; "
                     "release wall rate: %.0f msg/s; N = %d" %
                     (med([x["wall_rate"] for x in res["div"]]),
                      med([x["wall_rate"] for x in res["rel"]]), res["div"][0]["n"]))
        # Idle: the rate runs' 0.5 s after a start with nothing offered.
        # The divert run's start already reads the N waiting in the
        # stream: how far it got moves with how fast the bridge starts.
        idle = [x["idle_rss_kib"] for x in res[3000] + res[300]]
        extra.append("memory: VmRSS idle %s MiB (0.5 s after a start, nothing offered), "
                     "%.1f MiB at the divert run's start (reading the %d waiting), holding "
                     "%d %.1f MiB (arena configured: 131072 slots x 1024 B = 128 MiB; "
                     "messages 16-600 B)" %
                     ("%.1f" % (med(idle) / 1024) if idle else "-",
                      med([x["idle_rss_kib"] for x in res["div"]]) / 1024, res["div"][0]["n"],
                      res["div"][0]["n"], med([x["held_rss_kib"] for x in res["div"]]) / 1024))
    if res["floor"]:
        extra.append("wrk: %.0f req/s closed loop, %d connections, 308 B bodies" %
                     (med([x["rate"] for x in res["floor"]]), a.conns))
    extra.append("wall time of this run: %.0f s; samples taken: %d" % (wall, lab.samples))
    try:
        commit = subprocess.run(["git", "-C", TOP, "rev-parse", "--short", "HEAD"],
                                capture_output=True, text=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", TOP, "status", "--porcelain", "--untracked-files=no",
                                "--", "user", "bench"],
                               capture_output=True, text=True).stdout.strip()
    except OSError:
        commit, dirty = "?", ""
    head = ["dqbridge cost (bench/bridge.py, make -C bench bridge)%s" %
            (" -- " + a.label if a.label else ""),
            "date %s; commit %s%s; %s, %d CPUs, kernel %s; load %s" %
            (time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), commit,
             " (dirty)" if dirty else "", platform.node(), NCPU, platform.release(),
             " ".join("%.2f" % x for x in os.getloadavg())),
            "binary %s; %d repeats, medians (min-max); rate runs %g s of offer" %
            (a.bin, a.repeats, a.seconds),
            ""]
    text = "\n".join(head + rows + [""] + extra +
                     (["", "FAILED runs:"] + failed if failed else [])) + "\n"
    sys.stdout.write(text)
    if a.write:
        with open(a.write, "w") as f:
            f.write(text)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
