#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Run the kernel's checkpatch.pl (from Debian's linux-source-6.1, extracted
# into a cache outside the repo) over the kernel-side sources.
set -euo pipefail

cache=${DQ_CACHE:-/var/cache/dq-lab}/checkpatch
src=$(ls /usr/src/linux-source-6.1.tar.xz 2>/dev/null || true)
if [ ! -x "$cache/scripts/checkpatch.pl" ]; then
	[ -n "$src" ] || { echo "checkpatch: install linux-source-6.1 (make deps)"; exit 1; }
	mkdir -p "$cache"
	tar -xJf "$src" -C "$cache" --strip-components=1 \
		linux-source-6.1/scripts/checkpatch.pl \
		linux-source-6.1/scripts/spelling.txt \
		linux-source-6.1/scripts/const_structs.checkpatch
fi

cd "$(dirname "$0")/.."
shopt -s nullglob
files=(kmod/*.[ch] kmod/shared/*.[ch] kmod/tests/*.c uapi/linux/*.h)
for f in selftests/vm/splat_test/*.c; do
	[[ $f == *.mod.c ]] || files+=("$f")
done
# --strict everywhere but in the compat header (version tests by design),
# the trace header, whose TRACE_EVENT() layout (a line ending in
# "TP_STRUCT__entry(") is every kernel trace header's and trips --strict's
# alignment checks, and the uapi header, which cannot use BIT() (user
# space has no such macro) and keeps the uapi idiom of a _MAX define right
# after its enum.
strict=() plain=()
for f in "${files[@]}"; do
	case $f in
	kmod/dq_compat.h | kmod/dq_trace.h | uapi/*) plain+=("$f") ;;
	*) strict+=("$f") ;;
	esac
done
# LINUX_VERSION_CODE: dq_compat.h is the one place that must test it.
rc=0
"$cache/scripts/checkpatch.pl" --no-tree --quiet --terse --strict \
	--ignore CONSTANT_COMPARISON -f "${strict[@]}" || rc=1
"$cache/scripts/checkpatch.pl" --no-tree --quiet --terse \
	--ignore LINUX_VERSION_CODE,CONSTANT_COMPARISON -f "${plain[@]}" || rc=1
exit $rc
