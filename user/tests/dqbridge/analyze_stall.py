#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1 OR MIT
"""Write the logs of a downstream whose recorder stalled, for analyze.py.

usage: analyze_stall.py DIR
nginx (limit 100 r/s, burst 10) admits exactly 100 requests a second for
6 s after a first 429; the recorder is stalled 200 ms at 5.0 s, so it
logs the 20 requests admitted meanwhile at 5.2 s at once.  nginx never
let more than 101 through in any 1 s; analyze.py's accepted_max_1s must
say so (the recorder's clock sees 120 in [5.2, 6.2): above the check's
limit + 5 % + burst = 115).
"""
import sys

d = sys.argv[1]
with open(d + "/produced.txt", "w") as prod, \
        open(d + "/recorder.log", "w") as rec, \
        open(d + "/nginx-access.log", "w") as ngx:
    ngx.write("0.000 429 first 0.001\n")
    for i in range(600):
        arrive = 0.5 + i * 0.01
        key = "id-%d" % i
        done = 5.2 if 5.0 <= arrive < 5.2 else arrive + 0.002
        prod.write("%s sha\n" % key)
        rec.write("%.6f %s sha 200\n" % (done, key))
        ngx.write("%.3f 200 %s %.3f\n" % (done + 0.001, key,
                                         done + 0.001 - arrive))
