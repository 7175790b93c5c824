#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# kunit-count.sh KTAP: the KUnit cases of a KTAP stream (the kernel log's
# lines with their timestamps taken off, or debugfs's results), for
# scripts/kunit.sh and selftests/vm/debug-suites.sh.  Prints "PASS FAIL
# SKIP" on stdout, failed cases and their failed expectations on stderr.
# Every KUNIT_CASE() of kmod/tests/dq_kunit.c must have reported: a case
# that did not counts as failed.
#
# Case lines are the indented ones ("    ok 3 name", "    not ok 4 name");
# suite lines are not indented.
set -u -o pipefail

KTAP=$1
SRC=$(dirname "$0")/../kmod/tests/dq_kunit.c
pass=0 fail=0 skip=0
if [ -s "$KTAP" ]; then
	pass=$(grep -cE '^[[:space:]]+ok [0-9]+ ' "$KTAP")
	skip=$(grep -cE '^[[:space:]]+ok [0-9]+ .*# SKIP' "$KTAP")
	fail=$(grep -cE '^[[:space:]]+not ok [0-9]+ ' "$KTAP")
	pass=$((pass - skip))
	grep -E '^[[:space:]]+not ok |# (EXPECTATION|ASSERTION) FAILED|Expected ' "$KTAP" |
		head -n 60 | sed 's/^/kunit: /' >&2
fi
expected=$(grep -cE '^[[:space:]]*KUNIT_CASE\(' "$SRC")
missing=$((expected - pass - fail - skip))
if [ "$missing" -gt 0 ]; then
	echo "kunit: $missing of $expected cases did not report" >&2
	fail=$((fail + missing))
fi
echo "$pass $fail $skip"
