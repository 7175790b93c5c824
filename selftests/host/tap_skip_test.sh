#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1 OR MIT
#
# DQ_TAP_SKIP, the harness's (selftests/lib/tap.c) patterns of tests not
# to run, on a TAP program of the host's own (relmodel_test): a case a
# pattern names is reported "# SKIP" with the pattern and not run, the
# others run, the closing line counts them; unset, everything runs.
# The VM lane relies on it to leave the embedded engine's "*_user" cases
# to the host (selftests/run-vm-tests.sh).  < 1 s.
set -u
bin=${DQ_HOST_BIN_DIR:-$(cd "$(dirname "$0")/.." && pwd)/build/host}/relmodel_test
n=0 failed=0
check() {
	n=$((n + 1))
	if eval "$2"; then echo "ok $n - $1"; else failed=$((failed + 1)); echo "not ok $n - $1"; fi
}
[ -x "$bin" ] || { echo "# $bin missing"; echo "0 passed, 1 failed, 0 skipped"; exit 1; }

all=$("$bin" -l | wc -l)
out=$(DQ_TAP_SKIP='nope  in_order_* early_dup_unknown_lost' "$bin" 2>&1)
check "the named cases skipped, with the pattern that named them" \
	'grep -q "^ok [0-9]* - in_order_passes # SKIP DQ_TAP_SKIP=.in_order_\*.$" <<< "$out" &&
	 grep -q "^ok [0-9]* - early_dup_unknown_lost # SKIP DQ_TAP_SKIP=.early_dup_unknown_lost.$" <<< "$out"'
check "skipped cases do not run (no diagnostics of theirs)" \
	'! grep -q "^# relmodel_test: in_order_passes" <<< "$out" && grep -q "^# relmodel_test: due_order_violation" <<< "$out"'
check "closing line: $((all - 2)) passed, 0 failed, 2 skipped" \
	'[ "$(tail -n 1 <<< "$out")" = "$((all - 2)) passed, 0 failed, 2 skipped" ]'
out=$("$bin" 2>&1)
check "unset: all $all run" '[ "$(tail -n 1 <<< "$out")" = "$all passed, 0 failed, 0 skipped" ]'
echo "$((n - failed)) passed, $failed failed, 0 skipped"
[ "$failed" -eq 0 ]
