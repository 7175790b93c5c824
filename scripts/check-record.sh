#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# check-record.sh LOG CACHE [CLONE]: the record of one `make check` (or .ci/run)
# run for docs/records/check/, from the output it printed (LOG, ending with the
# "rc=N wall=S" line its caller appends): when and where it ran, the
# commit, each suite's closing line, the per-kernel lines, the total and
# the wall time.  CACHE says what /var/cache/dq-lab held when it started
# (e.g. "warm: debug kernel and lab kernels cached", "empty"); CLONE is
# the checkout that ran (default: this one), for the commit.
#
#   s=$(date +%s); .ci/run > LOG 2>&1; echo "rc=$? wall=$(($(date +%s) - s))" >> LOG
#   scripts/check-record.sh LOG "warm" > docs/records/check/DATE-COMMIT.txt
set -euo pipefail
[ $# -ge 2 ] && [ $# -le 3 ] || { echo "usage: $0 LOG CACHE [CLONE]" >&2; exit 2; }
log=$1
cache=$2
clone=${3:-$(dirname "$0")/..}
end=$(grep -E '^rc=[0-9]+ wall=[0-9]+$' "$log" | tail -n 1) ||
	{ echo "$log: no 'rc=N wall=S' line" >&2; exit 1; }
wall=${end##*wall=}
echo "# make check record"
echo "run ended:   $(date -u -r "$log" +%FT%TZ)"
echo "commit:      $(git -C "$clone" log -1 --format='%h %s' | cut -c1-72)"
echo "machine:     $(nproc) cores, $(awk '/MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo), host $(uname -r), $(qemu-system-x86_64 --version | head -n 1)"
echo "lab cache:   $cache"
echo "exit:        ${end%% *}"
echo "wall:        $wall s ($((wall / 60)) min $((wall % 60)) s)"
echo
echo "## suites (name: closing line)"
grep -E '^=== [A-Za-z0-9._-]+: [0-9]+ passed' "$log"
grep -E '^=== [A-Za-z0-9._-]+: no result line' "$log" || true
echo
echo "## kernels"
grep -E '^=== kernel ' "$log" || true
echo
echo "## boot hangs retried"
grep -cE 'BOOT RETRY' "$log" || true
echo
echo "## total"
grep -E '^[0-9]+ passed, [0-9]+ failed, [0-9]+ skipped$' "$log" | tail -n 1
