#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1 OR MIT
"""Where one delivered message's bridge cost goes (issue 35), for A/B.

One rate run of bench/bridge.py's lab (redis-server, nginx answering
200, the producer offering --rate msg/s for --seconds) around one
dqbridge, measured from the first offer to the last delivery (nginx's
access log against the producer's ids):

  cpu         CPU per delivered message (schedstat of all its threads),
              the main thread's wake-ups (voluntary context switches) per
              message and per second
  --strace    + system calls per delivered message (strace -c -f -p,
              attached after start-up, detached after the last delivery)
  --callgrind + instructions per delivered message (valgrind
              --tool=callgrind; counters zeroed after start-up and dumped
              after the last delivery with callgrind_control, so start-up
              is not in them), the file kept for callgrind_annotate

usage: bench/bridge_probe.py [--bin DQBRIDGE] [--rate 300] [--seconds 5]
                             [--strace | --callgrind] [--set KEY=VALUE]... [--out DIR]
Instruction counts do not depend on the machine's load: use them for
A/B on a shared host; CPU and wake-ups do.
"""
import argparse
import glob
import os
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.dont_write_bytecode = True	# no bench/__pycache__ in the tree
import bridge as B  # noqa: E402


def sched_ns(pid):
    """CPU ns of all threads (schedstat) and the main thread's wake-ups."""
    ns = 0
    for f in glob.glob("/proc/%d/task/*/schedstat" % pid):
        with open(f) as fh:
            ns += int(fh.read().split()[0])
    vol = 0
    with open("/proc/%d/status" % pid) as fh:
        for ln in fh:
            if ln.startswith("voluntary_ctxt_switches"):
                vol = int(ln.split()[1])
    return ns, vol


def ticks(pid):
    """utime, stime of the process in clock ticks (/proc/PID/stat)."""
    with open("/proc/%d/stat" % pid) as f:
        p = f.read().rsplit(")", 1)[1].split()
    return int(p[11]), int(p[12])


def epoll_table(path):
    """epoll_wait calls of an strace -e trace=epoll_wait log: how many
    returned nothing (a timer) and with what timeout, how many returned
    events."""
    timeouts, ready, tmo = 0, 0, {}
    for ln in open(path):
        if "epoll_wait(" not in ln or "resumed" in ln and "= " not in ln:
            continue
        try:
            ret = int(ln.rsplit("= ", 1)[1].split()[0])
        except (IndexError, ValueError):
            continue
        arg = ln.split("epoll_wait(", 1)[1].rsplit(")", 1)[0].split(",")[-1].strip()
        if ret == 0:
            timeouts += 1
            tmo[arg] = tmo.get(arg, 0) + 1
        else:
            ready += 1
    return timeouts, ready, tmo


def strace_table(path):
    """{syscall: calls} from strace -c's table."""
    calls = {}
    with open(path) as f:
        for ln in f:
            p = ln.split()
            if len(p) >= 5 and p[0][0].isdigit() and not p[-1].startswith("total"):
                try:
                    calls[p[-1]] = int(p[3])
                except ValueError:
                    pass
    return calls


def perf_split(path):
    """Samples by who asked (libcurl, hiredis/the source, the loop's
    epoll_wait, the rest) and where they ran (user space or kernel)."""
    out = subprocess.run(["perf", "script", "-i", path, "-F", "ip,sym,dso"],
                         capture_output=True, text=True).stdout
    who_of = (("libcurl", ("curl_multi_", "curl_easy_", "sink_")),
              ("redis", ("srcr_", "rd_event", "redis")),
              ("epoll_wait", ("ev_wait",)))
    tally, n = {}, 0
    for blk in out.split("\n\n"):
        fr = [ln.split() for ln in blk.strip().splitlines() if ln.strip()]
        if not fr:
            continue
        n += 1
        where = "kernel" if "kernel" in fr[0][-1] else "user"
        who = "other"
        for f in fr:
            sym = f[1] if len(f) > 2 else ""
            hit = [w for w, pre in who_of if sym.startswith(pre)]
            if "libcurl" in f[-1]:
                hit = ["libcurl"]
            elif "libhiredis" in f[-1]:
                hit = ["redis"]
            if hit:
                who = hit[0]
                break
        tally[(who, where)] = tally.get((who, where), 0) + 1
    for (who, where), c in sorted(tally.items(), key=lambda kv: -kv[1]):
        print("  split %-10s %-6s %5.1f %%" % (who, where, 100.0 * c / max(n, 1)))


def perf_shares(path):
    """Share of the samples whose call chain passes through each of a few
    entry points (children included: kernel time of their system calls
    counts for them)."""
    rep = subprocess.run(["perf", "report", "-i", path, "--children", "--stdio",
                          "--no-demangle", "-g", "none", "--percent-limit", "0.5",
                          "--sort", "sym"], capture_output=True, text=True).stdout
    want = ("curl_multi_socket_action", "curl_multi_add_handle", "curl_multi_remove_handle",
            "curl_multi_info_read", "sink_send", "srcr_poll", "rd_event", "srcr_ack",
            "ack_settled", "epoll_wait", "ev_wait", "store_counts", "release",
            "make_durable", "publish", "metrics_publish", "report", "logkv",
            "schedule", "tcp_sendmsg", "tcp_recvmsg", "do_sys_poll", "sink_run_timers",
            "on_fd", "route", "send_job")
    for ln in rep.splitlines():
        p = ln.split()
        if len(p) >= 4 and p[0].endswith("%") and p[-1] in want:
            print("  perf %-28s children %s self %s" % (p[-1], p[0], p[1]))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=B.TOP + "/user/build/dqbridge")
    ap.add_argument("--producer", default=B.TOP + "/user/build/tests/dqbridge_scen_producer")
    ap.add_argument("--rate", type=int, default=300)
    ap.add_argument("--seconds", type=float, default=5)
    ap.add_argument("--strace", action="store_true")
    ap.add_argument("--callgrind", action="store_true")
    ap.add_argument("--perf", action="store_true",
                    help="perf record -e cpu-clock --call-graph dwarf the window: "
                    "share of the bridge's CPU under libcurl, hiredis, epoll_wait")
    ap.add_argument("--trace", action="store_true",
                    help="strace -f -tt every system call of the window into OUT/trace.probe")
    ap.add_argument("--epoll", action="store_true",
                    help="strace the epoll_wait calls: timers vs events")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="a bridge option on top of the lab's (e.g. sink_client=curl "
                    "for the libcurl client against the native one)")
    ap.add_argument("--out", default="/tmp")
    ap.add_argument("--keep", action="store_true")
    a = ap.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    cg = None
    if a.callgrind:
        cg = os.path.join(os.path.abspath(a.out), "callgrind.out.probe")
        real = a.bin
        a.bin = os.path.join(a.out, "dqbridge-under-callgrind.sh")
        with open(a.bin, "w") as f:
            f.write("#!/bin/sh\nexec valgrind -q --tool=callgrind "
                    "--callgrind-out-file=%s %s \"$@\"\n" % (cg, real))
        os.chmod(a.bin, 0o755)
    lab = B.Lab(a)
    st = None
    try:
        lab.reset("probe")
        conf = {"rate_ceiling": 100000, "rate_floor": 100, "burst_ms": 20}
        conf.update(kv.split("=", 1) for kv in a.set)
        lab.start_bridge("ok", lab.t + "/dq", conf)
        pid = lab.bridge.pid
        time.sleep(3 if cg else 0.5)
        if cg:
            subprocess.run(["callgrind_control", "-z", str(pid)], check=True,
                           stdout=subprocess.DEVNULL)
        if a.strace:
            so = os.path.join(a.out, "strace.probe")
            st = subprocess.Popen(["strace", "-c", "-f", "-q", "-o", so, "-p", str(pid)])
            time.sleep(0.5)
        elif a.perf:
            so = os.path.join(a.out, "perf.data.probe")
            st = subprocess.Popen(["perf", "record", "-q", "-e", "cpu-clock", "-F", "2000",
                                   "--call-graph", "dwarf,16384", "-o", so,
                                   "-p", str(pid)], stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL)
            time.sleep(1)
        elif a.trace:
            so = os.path.join(a.out, "trace.probe")
            st = subprocess.Popen(["strace", "-f", "-q", "-tt", "-o", so, "-p", str(pid)])
            time.sleep(0.5)
        elif a.epoll:
            so = os.path.join(a.out, "epoll.probe")
            st = subprocess.Popen(["strace", "-f", "-q", "-e", "trace=epoll_wait",
                                   "-o", so, "-p", str(pid)])
            time.sleep(0.5)
        log = B.AccessLog(lab.t + "/access.log")
        c0, v0 = sched_ns(pid)
        u0, s0 = ticks(pid)
        t0 = time.monotonic()
        p, out = lab.produce(a.rate, a.seconds, wait=False)
        while p.poll() is None:
            log.poll()
            time.sleep(0.2)
        if p.returncode:
            raise RuntimeError("producer failed")
        ids = B.ids_of(out)
        B.wait_until(lab, lambda: (log.poll(), ids <= log.ok)[1], 120, "delivery")
        c1, v1 = sched_ns(pid)
        u1, s1 = ticks(pid)
        t1 = time.monotonic()
        n = len(ids & log.ok)
        if st:
            st.send_signal(signal.SIGINT)
            st.wait()
            st = None
        if cg:
            subprocess.run(["callgrind_control", "-d", str(pid)], check=True,
                           stdout=subprocess.DEVNULL)
        print("rate %d msg/s, %d delivered of %d offered, %.1f s" %
              (a.rate, n, len(ids), t1 - t0))
        print("cpu_us_per_msg %.1f" % ((c1 - c0) / 1e3 / n))
        hz = os.sysconf("SC_CLK_TCK")
        print("user_us_per_msg %.1f sys_us_per_msg %.1f" %
              ((u1 - u0) * 1e6 / hz / n, (s1 - s0) * 1e6 / hz / n))
        print("wakeups_per_msg %.3f wakeups_per_s %.0f" %
              ((v1 - v0) / n, (v1 - v0) / (t1 - t0)))
        if a.strace:
            calls = strace_table(so)
            tot = sum(calls.values())
            print("syscalls_per_msg %.2f" % (tot / n))
            for k, v in sorted(calls.items(), key=lambda kv: -kv[1]):
                print("  %-16s %.3f" % (k, v / n))
        if a.perf:
            perf_shares(so)
            perf_split(so)
        if a.epoll:
            tmo, ready, by = epoll_table(so)
            print("epoll_wait per msg: %.3f returned events, %.3f timed out %s" %
                  (ready / n, tmo / n, sorted(by.items(), key=lambda kv: -kv[1])[:8]))
        if cg:
            # the dump after zeroing: the one with the highest part number
            parts = sorted(glob.glob(cg + "*"), key=os.path.getmtime)
            tot = 0
            with open(parts[-1]) as f:
                for ln in f:
                    if ln.startswith("totals:") or ln.startswith("summary:"):
                        tot = int(ln.split()[1])
            print("instructions_per_msg %.0f (%s)" % (tot / n, parts[-1]))
    finally:
        if st:
            st.kill()
            st.wait()
        lab.close()


if __name__ == "__main__":
    main()
