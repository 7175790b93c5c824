#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1 OR MIT
"""Judge a downstream's record against what the test produced.

usage: judge.py PRODUCED LOG [--any-status] [--some] [--probe] [--requests]

PRODUCED: the test's own record, "<id> <sha256 of the payload>" a line.
LOG: the downstream's, "<time> <Idempotency-Key> <sha256 of the body>
<status>" a line (recorder.py, fault_sink.py).

Prints how many ids are bad: produced and not delivered exactly once
(--some: at least once) with the same bytes, or delivered and never
produced.  Delivered means answered 200 (--any-status: any request
counts).  --probe: lines without a key ("-", the test's readiness probe
through the same downstream) are not requests of the bridge's.
--requests adds " (requests N for M messages)".
"""
import collections
import sys


def main(argv):
    opts = {a for a in argv[1:] if a.startswith("--")}
    produced, log = [a for a in argv[1:] if not a.startswith("--")]
    want = dict(line.split() for line in open(produced))
    got = collections.Counter()
    sha = {}
    for line in open(log):
        _, key, h, status = line.split()[:4]
        if key == "-" and "--probe" in opts:
            continue
        if status != "200" and "--any-status" not in opts:
            continue
        got[key] += 1
        sha[key] = h
    once = "--some" not in opts
    bad = [k for k in want if sha.get(k) != want[k] or (once and got[k] != 1)]
    bad += [k for k in got if k not in want]
    out = "%d" % len(bad)
    if "--requests" in opts:
        out += " (requests %d for %d messages)" % (sum(got.values()), len(want))
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
