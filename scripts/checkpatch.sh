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
files=(kmod/*.[ch] uapi/linux/*.h)
for f in selftests/vm/splat_test/*.c; do
	[[ $f == *.mod.c ]] || files+=("$f")
done
# LINUX_VERSION_CODE: dq_compat.h is the one place that must test it.
"$cache/scripts/checkpatch.pl" --no-tree --quiet --terse \
	--ignore LINUX_VERSION_CODE,CONSTANT_COMPARISON -f "${files[@]}"
