#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# `make kunit`: build (once, cached) the debug kernel and dq.ko +
# dq_kunit.ko against it, boot it under qemu, load both (the KUnit suites
# run as dq_kunit.ko loads), and turn the KTAP results into one closing
# line "N passed, N failed" (", N skipped" when some were).
#
# Usage: scripts/kunit.sh [--timeout SECS] [--keep DIR]
#   --keep DIR   also leave the KTAP results and the guest's dmesg in DIR
#
# Exit status: 0 when every case passed (or was skipped) and the VM run
# was clean (no splat, no kmemleak report after rmmod); 1 otherwise.
# A suite that did not report counts its missing cases as failed.

set -u -o pipefail

SELF=$(readlink -f "${BASH_SOURCE[0]}")
REPO=$(readlink -f "$(dirname "$SELF")/..")
TIMEOUT=900
KEEP=

while [ $# -gt 0 ]; do
	case "$1" in
	--timeout) TIMEOUT=$2; shift 2 ;;
	--keep) KEEP=$2; shift 2 ;;
	*) echo "usage: scripts/kunit.sh [--timeout SECS] [--keep DIR]" >&2; exit 2 ;;
	esac
done

OUT=$(mktemp -d "${TMPDIR:-/tmp}/dq-kunit.XXXXXX") || exit 1
trap 'rm -rf "$OUT"' EXIT
chmod 0777 "$OUT"

# In the guest: the results of every suite (debugfs keeps the whole KTAP
# of each) and the kernel log as a fallback.  Expanded in the guest:
# shellcheck disable=SC2016
GUEST_CMD='for f in /sys/kernel/debug/kunit/*/results; do cat "$f"; done > "$1/ktap";
dmesg > "$1/dmesg"'

DIR=$("$REPO/scripts/build-debug-kernel.sh" --modules)
if [ -z "$DIR" ]; then
	echo "kunit: cannot build the debug kernel or the modules" >&2
	echo "0 passed, 1 failed"
	exit 1
fi
# 1 GiB is plenty for the suites and halves kmemleak's scans (each one
# walks all of memory, ~20 s per GiB under TCG on an idle host, ~40 s on a
# loaded one).  selftests/vm/run prints the boot's phases and stops a boot
# that does not reach init within its bound (exit 123, the kernel's
# console shown); its stderr is kept to count boot retries.
exec 3>&1
DQ_VM_MEM=${DQ_VM_MEM:-1G} DQ_DEBUG_KERNEL=$DIR/bzImage "$REPO/selftests/vm/run" --kernel debug \
	--timeout "$TIMEOUT" --rw "$OUT" --insmod "$DIR/dq/kmod/tests/dq_kunit.ko" \
	-- /bin/sh -c "$GUEST_CMD" sh "$OUT" 2>&1 1>&3 3>&- | tee "$OUT/vm.err" >&2
VMRC=${PIPESTATUS[0]}
exec 3>&-

[ -n "$KEEP" ] && mkdir -p "$KEEP" && cp -f "$OUT"/* "$KEEP"/ 2> /dev/null

# The kernel log has the whole KTAP stream with every failure's details;
# debugfs (per-case logs of 512 bytes in 6.1) is the fallback.
KTAP=$OUT/ktap.dmesg
if [ -s "$OUT/dmesg" ]; then
	sed -n 's/^\[ *[0-9.]*\] //p' "$OUT/dmesg" |
		grep -E '^ *(ok|not ok|# |KTAP|1\.\.)' > "$KTAP"
fi
grep -qE '^[[:space:]]+(not )?ok [0-9]+ ' "$KTAP" 2> /dev/null || KTAP=$OUT/ktap

read -r PASS FAIL SKIP <<< "$("$REPO/scripts/kunit-count.sh" "$KTAP")"
RETRIES=$(grep -c 'BOOT RETRY' "$OUT/vm.err" 2> /dev/null)
if [ "${RETRIES:-0}" -gt 0 ]; then
	echo "kunit: the debug kernel's boot hung $RETRIES time(s) and was retried (see the boot-hang report above)" >&2
fi
case "$VMRC" in
0) ;;
123) echo "kunit: the debug kernel did not boot (boot hang or failure, exit 123; see the report above)" >&2 ;;
124) echo "kunit: the VM run timed out after $TIMEOUT s (exit 124; see the last phase and the kernel console above)" >&2 ;;
*) echo "kunit: the VM run failed (exit $VMRC; see the log above)" >&2 ;;
esac
if [ "$VMRC" -ne 0 ]; then
	[ "$FAIL" -eq 0 ] && FAIL=1
fi

if [ "$SKIP" -gt 0 ]; then
	echo "$PASS passed, $FAIL failed, $SKIP skipped"
else
	echo "$PASS passed, $FAIL failed"
fi
[ "$FAIL" -eq 0 ]
