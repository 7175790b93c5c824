#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1 OR MIT
"""Judge a dqbridge_scenario.sh run on what the test itself recorded.

usage: scen_analyze.py DIR CAP BURST ADAPT_S CPU_S

DIR holds the test's own records (never the bridge's log):
  produced.txt     scen_producer: <id> <sha256> <send time> <len>
  recorder.log     scen_recorder: <arrival> <key> <sha256> <status> <concurrency>
  nginx-access.log nginx: <$msec> <$request_time> <$status> <key>
  phases.txt       the test: <unix time> <limit r/s> at each nginx limit
                   change (the first line: the producer's start)
  stub.log         the test sampling nginx stub_status every 100 ms:
                   <t> <active> <reading> <writing> <waiting>
  metrics.log      the test sampling the bridge's metrics endpoint:
                   <t> <metric> <value> (figures only, never ground truth
                   for delivery)
CAP is max_inflight, BURST nginx's burst, ADAPT_S the adaptation time the
assertions allow after each limit change, CPU_S the bridge's utime+stime.

Prints key=value lines, then "table" lines (the per-phase figures).
Definitions (all times are arrival/send times on this host's clock):
  offered rate   requests reaching nginx per 1 s (start = $msec -
                 $request_time), whatever nginx answered
  accepted rate  200s the recorder logged per 1 s
  max windows    the most events in any [t, t+1 s) with t in the phase's
                 judged span [change + ADAPT_S, next change - 1 s]
  settle_s       after a change, the time from which every such window of
                 offered requests stays <= 1.5 x limit + burst
  reach_s        after a change, the first window whose accepted count
                 is >= 50 % of the new limit (not more: on 2 shared cores
                 the whole chain, producer to recorder, tops out at
                 2-2.9k/s, so 80 % of 3000 would judge the host)
  early          a request sent less than Retry-After (1 s) after the
                 429 that nginx answered the message's previous attempt
  ideal schedule message k (offer order) at max(offer_k, ideal_{k-1} +
                 1/limit(t)): what a downstream taking exactly its limit,
                 first come first served, would have done
"""
import bisect
import collections
import sys

d, cap, burst, adapt, cpu_s = (sys.argv[1], int(sys.argv[2]), int(sys.argv[3]),
                               float(sys.argv[4]), float(sys.argv[5]))
TOL_EARLY = 0.005   # nginx's cached clock ($msec, $request_time): ms granularity


def out(k, v):
    print("%s=%s" % (k, v))


produced = []       # (id, sha, send_t)
for line in open(d + "/produced.txt"):
    p = line.split()
    produced.append((p[0], p[1], float(p[2])))
want = {m: (sha, t) for m, sha, t in produced}
tail = []          # the tail's burst (dq empty): judged for delivery and due times
try:
    for line in open(d + "/produced-tail.txt"):
        p = line.split()
        tail.append((p[0], p[1], float(p[2])))
        want[p[0]] = (p[1], float(p[2]))
except FileNotFoundError:
    pass
tail_ids = {m for m, _, _ in tail}

ok = {}             # key -> first 200 arrival
bad = dups = unknown = 0
acc_t = []
conc_max = 0
for line in open(d + "/recorder.log"):
    p = line.split()
    if len(p) < 5:
        continue
    t, key, sha, status, conc = float(p[0]), p[1], p[2], p[3], int(p[4])
    conc_max = max(conc_max, conc)
    if status != "200":
        continue
    acc_t.append(t)
    if key not in want:
        unknown += 1
        continue
    if key in ok:
        dups += 1
        continue
    ok[key] = t
    if want[key][0] != sha:
        bad += 1
acc_t.sort()

reqs = collections.defaultdict(list)    # key -> [(start, end, status)]
off_t = []
st_t = collections.defaultdict(list)
for line in open(d + "/nginx-access.log"):
    p = line.split()
    if len(p) < 4:
        continue
    end, rt, status, key = float(p[0]), float(p[1]), p[2], p[3]
    start = end - rt
    reqs[key].append((start, end, status))
    off_t.append(start)
    st_t[status].append(start)
off_t.sort()
for s in st_t.values():
    s.sort()

phases = [(float(a), int(b)) for a, b in (l.split() for l in open(d + "/phases.txt"))]
offer_end = produced[-1][2] if produced else 0
last_ok = max((t for m, t in ok.items() if m not in tail_ids), default=0)
try:
    tail_start = float(open(d + "/tail.txt").read().split()[0])
except (FileNotFoundError, IndexError):
    tail_start = None
main_end = tail_start if tail_start is not None else last_ok

# ---- exactly once, payloads ------------------------------------------------
missing = [m for m in want if m not in ok]
out("produced", len(produced))
out("tail_produced", len(tail))
out("offer_s", "%.2f" % (offer_end - produced[0][2] if produced else 0))
out("offered_rate", "%.0f" % (len(produced) / max(1e-9, offer_end - produced[0][2])))
out("delivered", len(ok))
out("missing", len(missing))
if missing:
    out("missing_ids", ",".join(missing[:10]))
out("duplicates", dups)
out("bad_payload", bad)
out("unknown_ids", unknown)

# ---- attempts, due times -----------------------------------------------------
attempts = [len(reqs[m]) for m in want if m in reqs and m not in tail_ids]
hist = collections.Counter(min(a, 4) for a in attempts)
out("requests_total", sum(1 for x in off_t if x < main_end))
out("requests_429", sum(1 for x in st_t.get("429", []) if x < main_end))
out("attempts_mean", "%.3f" % (sum(attempts) / max(1, len(attempts))))
out("attempts_max", max(attempts) if attempts else 0)
out("attempts_hist", " ".join("%s:%d" % ("4+" if k == 4 else k, hist[k]) for k in sorted(hist)))
early = 0
gaps = 0
min_gap = None
before_offer = 0
tail_gaps = 0
tail_min_gap = None
for m, (sha, sent) in want.items():
    rs = sorted(reqs.get(m, []))
    if rs and rs[0][0] < sent - TOL_EARLY:
        before_offer += 1
    for a, b in zip(rs, rs[1:]):
        if a[2] != "429":
            continue
        gap = b[0] - a[1]
        gaps += 1
        min_gap = gap if min_gap is None else min(min_gap, gap)
        if m in tail_ids:
            tail_gaps += 1
            tail_min_gap = gap if tail_min_gap is None else min(tail_min_gap, gap)
        if gap < 1.0 - TOL_EARLY:
            early += 1
out("retries_after_429", gaps)
out("early", early)
out("retry_gap_min_s", "%.3f" % (min_gap if min_gap is not None else -1))
out("before_offer", before_offer)
out("tail_retries_after_429", tail_gaps)
out("tail_retry_gap_min_s", "%.3f" % (tail_min_gap if tail_min_gap is not None else -1))
out("tail_delivered", sum(1 for m in tail_ids if m in ok))

# ---- rates per phase ---------------------------------------------------------


def count(ts, a, b):
    return bisect.bisect_left(ts, b) - bisect.bisect_left(ts, a)


def max_window(ts, lo, hi):
    """Most events in [t, t+1) for t in [lo, hi]; 0 if the span is empty."""
    best = 0
    if hi < lo:
        return 0
    i = bisect.bisect_left(ts, lo)
    j = bisect.bisect_right(ts, hi)
    for t in ts[i:j]:
        best = max(best, bisect.bisect_left(ts, t + 1.0) - bisect.bisect_left(ts, t))
    # windows starting at lo itself (no event there)
    return max(best, count(ts, lo, lo + 1.0))


def limit_at(t):
    lim = phases[0][1]
    for c, l in phases:
        if t >= c:
            lim = l
    return lim


rate_samples = []
for line in open(d + "/metrics.log"):
    p = line.split()
    if len(p) == 3 and p[1] == "dqbridge_rate":
        rate_samples.append((float(p[0]), float(p[2])))
worst_acc = worst_off = 0.0
settle_max = reach_max = 0.0
for i, (c, lim) in enumerate(phases):
    # The last phase ends with the main run's last delivery: the tail
    # begins only after the script's once-a-second loop saw the backlog
    # gone (1-2 s later), and with nothing left to send those seconds
    # say nothing about the rate the bridge carries.
    end = phases[i + 1][0] if i + 1 < len(phases) else min(main_end, last_ok)
    dur = max(1e-9, end - c)
    lo, hi = c + adapt, end - 1.0
    acc_max = max_window(acc_t, lo, hi)
    off_max = max_window(off_t, lo, hi)
    bound_acc = lim * 1.05 + burst
    bound_off = lim * 1.5 + burst
    # settle: the earliest s (0.1 s steps) from which every offered
    # window up to hi is within bound_off
    settle = None
    s = c
    steps = []
    while s <= hi + 1e-9:
        steps.append(s)
        s += 0.1
    ok_from = None
    for s in reversed(steps):
        if count(off_t, s, s + 1.0) > bound_off:
            break
        ok_from = s
    settle = (ok_from - c) if ok_from is not None else float("inf")
    reach = float("inf")
    for s in steps:
        if count(acc_t, s, s + 1.0) >= 0.5 * lim:
            reach = s - c
            break
    n_acc = count(acc_t, c, end)
    n_off = count(off_t, c, end)
    n_acc_a = count(acc_t, lo, end)
    n429_a = count(st_t.get("429", []), lo, end)
    n_off_a = count(off_t, lo, end)
    out("phase%d_limit" % i, lim)
    out("phase%d_judged" % i, 1 if hi >= lo else 0)
    out("phase%d_span_s" % i, "%.1f" % dur)
    out("phase%d_accepted_rate" % i, "%.0f" % (n_acc / dur))
    out("phase%d_accepted_rate_adapted" % i, "%.0f" % (n_acc_a / max(1e-9, end - lo)) if end > lo else "-")
    out("phase%d_accepted_vs_limit_pct" % i,
        "%.1f" % (100.0 * (n_acc_a / max(1e-9, end - lo) / lim - 1)) if end > lo else "-")
    out("phase%d_offered_rate" % i, "%.0f" % (n_off / dur))
    out("phase%d_accepted_max_1s" % i, acc_max)
    out("phase%d_accepted_bound" % i, "%.0f" % bound_acc)
    out("phase%d_offered_max_1s" % i, off_max)
    out("phase%d_offered_bound" % i, "%.0f" % bound_off)
    out("phase%d_429_pct_adapted" % i, "%.1f" % (100.0 * n429_a / max(1, n_off_a)) if end > lo else "-")
    rates = sorted(r for t, r in rate_samples if lo <= t < end)
    out("phase%d_bridge_rate_median" % i, "%.0f" % rates[len(rates) // 2] if rates else "-")
    out("phase%d_settle_s" % i, "%.1f" % settle)
    out("phase%d_reach_s" % i, "%.1f" % reach)
    worst_acc = max(worst_acc, acc_max / bound_acc)
    worst_off = max(worst_off, off_max / bound_off)
    settle_max = max(settle_max, settle)
    reach_max = max(reach_max, reach)
out("phases", len(phases))
out("accepted_over_bound", "%.3f" % worst_acc)
out("offered_over_bound", "%.3f" % worst_off)
out("settle_max_s", "%.1f" % settle_max)
out("reach_max_s", "%.1f" % reach_max)

# ---- lateness against the ideal paced schedule -------------------------------
late = []
ideal = None
ideal_end = 0
for m, sha, sent in produced:
    if ideal is None:
        ideal = sent
    else:
        ideal = max(sent, ideal + 1.0 / limit_at(ideal))
    ideal_end = ideal
    if m in ok:
        late.append((ok[m] - ideal, m, sent, ideal))
late.sort()
if late:
    w = late[-1]
    out("lateness_worst", "%s offered=+%.2f ideal=+%.2f delivered=+%.2f attempts=%s" % (
        w[1], w[2] - produced[0][2], w[3] - produced[0][2], ok[w[1]] - produced[0][2],
        ",".join("%.2f:%s" % (a - produced[0][2], st) for a, _, st in sorted(reqs[w[1]]))))
late1 = [x[0] for x in late if len(reqs.get(x[1], [])) <= 1]
late2 = [x[0] for x in late if len(reqs.get(x[1], [])) > 1]
late = [x[0] for x in late]


def pct(xs, q):
    return xs[min(len(xs) - 1, int(q * len(xs)))] if xs else 0


out("lateness_p50_s", "%.2f" % pct(late, 0.5))
out("lateness_p99_s", "%.2f" % pct(late, 0.99))
out("lateness_max_s", "%.2f" % (late[-1] if late else 0))
out("lateness_min_s", "%.2f" % (late[0] if late else 0))
# A message that met a 429 is committed again due after Retry-After and
# waits behind everything due before that (dq releases in due order): it
# loses its place in the offer order, so its lateness is the backlog's.
for name, xs in (("first_try", late1), ("retried", late2)):
    out("lateness_%s_n" % name, len(xs))
    out("lateness_%s_p50_s" % name, "%.2f" % pct(xs, 0.5))
    out("lateness_%s_p99_s" % name, "%.2f" % pct(xs, 0.99))
    out("lateness_%s_max_s" % name, "%.2f" % (xs[-1] if xs else 0))
out("ideal_last_s", "%.1f" % (ideal_end - produced[0][2] if produced else 0))
out("actual_last_s", "%.1f" % (last_ok - produced[0][2] if produced else 0))

# ---- in flight ---------------------------------------------------------------
stub_writing = 0
try:
    for line in open(d + "/stub.log"):
        p = line.split()
        if len(p) == 5:
            stub_writing = max(stub_writing, int(p[3]) - 1)   # minus the probe itself
except FileNotFoundError:
    pass
mx = collections.defaultdict(float)
last = {}
for line in open(d + "/metrics.log"):
    p = line.split()
    if len(p) == 3:
        mx[p[1]] = max(mx[p[1]], float(p[2]))
        last[p[1]] = float(p[2])
# held: the gauge against the records (the scenario's held.log sampler)
herr, hat, hok, hn = 0, "-", 1, 0
try:
    for line in open(d + "/held.log"):
        p = line.split()
        if len(p) != 7 or not all(x.replace(".", "").isdigit() for x in p):
            continue
        t, xlen, pend, lag, dlv, h0, h1 = (float(p[0]), int(p[1]), int(p[2]), int(p[3]),
                                           int(p[4]), float(p[5]), float(p[6]))
        truth = xlen - lag - pend - dlv
        hn += 1
        # the records were read between the two gauge readings: the
        # truth must lie between them, give or take 1000 + 5 %
        lo, hi = min(h0, h1), max(h0, h1)
        e = max(0, lo - truth, truth - hi)
        held = h0
        if e > 1000 + 0.05 * max(truth, 0):
            hok = 0
        if e > herr:
            herr, hat = e, "+%.1fs (gauge %d..%d, records %d)" % (t - produced[0][2], lo, hi, truth)
except FileNotFoundError:
    pass
out("held_samples", hn)
out("held_err_max", "%.0f" % herr)
out("held_err_at", hat.replace(" ", "_"))
out("held_err_ok", hok if hn else 0)
out("recorder_concurrency_max", conc_max)
out("nginx_writing_max", stub_writing)
out("metrics_inflight_max", "%.0f" % mx["dqbridge_inflight"])
out("metrics_held_max", "%.0f" % mx["dqbridge_held"])
out("bridge_diverted", "%.0f" % last.get("dqbridge_diverted_total", 0))
out("bridge_direct", "%.0f" % last.get("dqbridge_direct_total", 0))
out("bridge_rate_decreases", "%.0f" % last.get("dqbridge_rate_decreases_total", 0))
out("bridge_pauses", "%.0f" % last.get("dqbridge_pauses_total", 0))
out("cpu_s", "%.2f" % cpu_s)
out("cpu_us_per_msg", "%.1f" % (1e6 * cpu_s / max(1, sum(1 for m in ok if m not in tail_ids))))
