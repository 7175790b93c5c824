#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The on-time assertion bites: boot the lab VM with dq.ko's test-only
# parameter test_arm_delay_ns set (every engine timer armed that much
# late) and check that selftests/dq_timing then FAILS its p50 bound.  The
# bound (3 x floor p50 + granularity + 0.5 ms) is 1.3-1.5 ms in the stock
# VM, and dq's own p50 ~0.3 ms, so it catches a delay d > ~1.2 ms: on
# 2026-12-02 1.5 ms was measured to fail it and 1 ms to pass
# (docs/records/check/2026-12-02-timing-bites.txt).  The check plants 2 ms, with
# room for a slower machine's larger floor.
#
# Usage: selftests/vm/timing-selftest.sh [DELAY_NS]
# Prints TAP and "N passed, N failed, 0 skipped"; exit 0 when the planted
# delay made dq_timing fail on its bound (and only on it).
set -u -o pipefail
cd "$(dirname "$0")/../.." || exit 1

DELAY=${1:-2000000}
LOG=$(mktemp /tmp/dq-timing-selftest.XXXXXX)
trap 'rm -f "$LOG"' EXIT

echo "TAP version 13"
echo "1..1"
selftests/vm/run --params "test_arm_delay_ns=$DELAY" --timeout 600 -- \
	selftests/build/dq_timing -t release_on_time_vs_floor > "$LOG" 2>&1
rc=$?
grep -E '^# (timer floor|dq release)|FAIL' "$LOG" | sed 's/^#* */# /'
name="a planted $((DELAY / 1000)) us release delay fails dq_timing's p50 bound"
if [ "$rc" -eq 1 ] && grep -q 'FAIL: expected d->p50 <= b50' "$LOG"; then
	echo "ok 1 - $name"
	echo "1 passed, 0 failed, 0 skipped"
	exit 0
fi
echo "# VM exit $rc; last lines:"
tail -n 20 "$LOG" | sed 's/^/# /'
echo "not ok 1 - $name"
echo "0 passed, 1 failed, 0 skipped"
exit 1
