#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1 OR MIT
"""Judge a dqbridge_test.sh run on what the test itself recorded.

usage: analyze.py PRODUCED RECORDER_LOG NGINX_LOG LIMIT BURST FAIL_ID
Prints key=value lines (one per figure) for the shell test to assert on:
  produced, delivered_ok (distinct ids with a 200), missing, bad_payload,
  duplicates (200s beyond the first per id), accepted_max_1s (most 200s
  nginx let through in any 1 s window once the bridge adapted: from 3 s
  after the first 429), offered_max_1s (requests reaching nginx in any
  such window),
  nginx_429, nginx_total, late_429_pct (429 share of requests in the
  second half of the run), fail_delivered (200s for FAIL_ID: must be 0).
"""
import bisect
import sys

produced_f, rec_f, ngx_f, limit, burst, fail_id = sys.argv[1:7]
want = {}
for line in open(produced_f):
    mid, sha = line.split()
    want[mid] = sha

ok = {}
bad = 0
dups = 0
fail_delivered = 0
for line in open(rec_f):
    t, key, sha, status = line.split()
    if status != "200":
        continue
    if key == fail_id:
        fail_delivered += 1
    if key in ok:
        dups += 1
        continue
    ok[key] = sha
    if key in want and want[key] != sha:
        bad += 1

# Both windows are on nginx's arrival time ($msec, when it logged the
# request, less $request_time), the clock limit_req enforces its rate on:
# at most rate x T + burst in any T.  The recorder's own time stamps come
# after the proxying, and a recorder stalled by load for s seconds logs
# s x limit admitted requests at once; with only 5 % of the limit as
# slack, a 50 ms stall failed the check with nothing wrong.
offered = []
accepted_ngx = []
first429 = None
n429 = 0
for line in open(ngx_f):
    parts = line.split()
    if len(parts) < 4:
        continue
    t, status = float(parts[0]) - float(parts[3]), parts[1]
    offered.append((t, status))
    if status == "200":
        accepted_ngx.append(t)
    if status == "429":
        n429 += 1
        if first429 is None:
            first429 = t


def max_window(times, start):
    times = sorted(x for x in times if x >= start)
    best = 0
    for i, t in enumerate(times):
        j = bisect.bisect_left(times, t + 1.0)
        best = max(best, j - i)
    return best


adapted = (first429 or 0) + 3.0
missing = [m for m in want if m != fail_id and m not in ok]
print("produced=%d" % len(want))
print("delivered_ok=%d" % len([m for m in want if m in ok]))
print("missing=%d" % len(missing))
if missing:
    print("missing_ids=%s" % ",".join(missing[:10]))
print("bad_payload=%d" % bad)
print("duplicates=%d" % dups)
print("accepted_max_1s=%d" % max_window(accepted_ngx, adapted))
print("offered_max_1s=%d" % max_window([t for t, _ in offered], adapted))
print("nginx_total=%d" % len(offered))
print("nginx_429=%d" % n429)
if offered:
    t0, t1 = min(t for t, _ in offered), max(t for t, _ in offered)
    half = [s for t, s in offered if t >= (t0 + t1) / 2]
    print("late_429_pct=%.1f" % (100.0 * sum(1 for s in half if s == "429") / max(1, len(half))))
    print("span_s=%.1f" % (t1 - t0))
print("fail_delivered=%d" % fail_delivered)
