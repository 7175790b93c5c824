#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Run the randomized stress/fuzz program (selftests/stress/dq_stress) in the
# test VM for SECONDS seconds.
#
# Usage: scripts/stress.sh SECONDS [--kernel stock|debug] [--seed N]
#                          [--procs N] [--threads N]
#   --kernel debug  boot the debug kernel (KASAN, lockdep, kmemleak; built
#                   and cached by scripts/build-debug-kernel.sh) with the
#                   debug-built dq.ko; kmemleak is checked after rmmod
#   --seed N        reproduce a run (the seed is printed first; DQ_SEED too)
#
# `make check` runs it for ~20 s, `make stress` for 5 minutes on the debug
# kernel.  Closes with "1 passed, 0 failed" or "0 passed, 1 failed"; exits
# non-zero on any invariant violation, kernel splat, kmemleak report or VM
# failure.

set -u -o pipefail

SELF=$(readlink -f "${BASH_SOURCE[0]}")
REPO=$(readlink -f "$(dirname "$SELF")/..")

usage() {
	# shellcheck disable=SC2016 # a literal backquote
	sed -n '/^# Usage:/,/^# `make check`/p' "$SELF" | sed '$d;s/^# \{0,1\}//' >&2
	exit 2
}

[ $# -ge 1 ] || usage
SECS=$1
shift
[[ "$SECS" =~ ^[1-9][0-9]*$ ]] || usage
KERNEL=stock
SEED=${DQ_SEED:-}
PROCS=4
THREADS=3
while [ $# -gt 0 ]; do
	case "$1" in
	--kernel) KERNEL=$2; shift 2 ;;
	--kernel=*) KERNEL=${1#*=}; shift ;;
	--seed) SEED=$2; shift 2 ;;
	--procs) PROCS=$2; shift 2 ;;
	--threads) THREADS=$2; shift 2 ;;
	*) usage ;;
	esac
done

make -s -C "$REPO/selftests/stress" || exit 1
ARGS=(-t "$SECS" -p "$PROCS" -j "$THREADS")
[ -n "$SEED" ] && ARGS+=(-s "$SEED")
# Boot, teardown and a worst-case scenario tail on top of SECONDS.
TIMEOUT=$((SECS * 2 + 400))

case "$KERNEL" in
stock)
	[ -f "$REPO/dq.ko" ] || make -s -C "$REPO" module > /dev/null || exit 1
	"$REPO/selftests/vm/run" --timeout "$TIMEOUT" -- \
		"$REPO/selftests/stress/build/dq_stress" "${ARGS[@]}"
	;;
debug)
	"$REPO/selftests/vm/run" --kernel debug --timeout "$TIMEOUT" -- \
		"$REPO/selftests/stress/build/dq_stress" "${ARGS[@]}"
	;;
*) usage ;;
esac
RC=$?
if [ "$RC" -eq 0 ]; then
	echo "1 passed, 0 failed"
else
	echo "stress: exit $RC" >&2
	echo "0 passed, 1 failed"
fi
exit "$RC"
