#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1 OR MIT
#
# dqctl's output formats against dqctl_format.golden (see
# dqctl_format_test.c): byte for byte, text and JSON.  After a deliberate
# format change, write the golden file again from the new binary and say
# why in the commit.
# Usage: dqctl_format_test.sh path/to/dqctl_format_test
BIN=${1:-$(dirname "$0")/../build/tests/dqctl_format_test}
GOLDEN=$(dirname "$0")/dqctl_format.golden
out=$(mktemp /tmp/dqctl-format.XXXXXX)
trap 'rm -f "$out"' EXIT
echo "TAP version 13"
echo "1..2"
if "$BIN" > "$out" 2>&1; then
	echo "ok 1 - the printers ran"
	p=1
	f=0
else
	echo "not ok 1 - the printers ran"
	p=0
	f=1
fi
if diff -u "$GOLDEN" "$out" | sed 's/^/#   /' | head -n 60 && cmp -s "$GOLDEN" "$out"; then
	echo "ok 2 - show, stats, list and stats tables, stats --node, monitor, text and JSON, netlink errors, as golden"
	p=$((p + 1))
else
	echo "not ok 2 - show, stats, list and stats tables, stats --node, monitor, text and JSON, netlink errors, as golden"
	f=$((f + 1))
fi
echo "$p passed, $f failed, 0 skipped"
[ "$f" = 0 ]
