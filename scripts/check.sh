#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# `make check`: every test suite, host side then in the VM, each one's own
# "N passed, N failed" line kept, and one total line at the end.  Every
# suite runs even when an earlier one failed; the exit status is non-zero
# when any suite failed or did not report.
#
# Usage: scripts/check.sh [SUITE...]   (default: all, in order)
set -u -o pipefail
cd "$(dirname "$0")/.." || exit 1

VM_RUN=selftests/vm/run
LOG_DIR=${DQ_CHECK_LOG_DIR:-$(mktemp -d /tmp/dq-check.XXXXXX)}
mkdir -p "$LOG_DIR" || exit 1
total_pass=0
total_fail=0
total_skip=0
failed_suites=()

# suite [--sum] NAME CMD...: run it, fold its closing line into the total;
# with --sum the suite is several programs, each with its own line.
suite() {
	local sum=0 name log rc line p f k
	if [ "$1" = --sum ]; then
		sum=1
		shift
	fi
	name=$1
	log=$LOG_DIR/$name.log
	shift
	echo "=== $name: $*"
	"$@" 2>&1 | tee "$log"
	rc=${PIPESTATUS[0]}
	if [ "$sum" = 1 ]; then
		line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$log" | awk '
			{ p += $1; f += $3; for (i = 4; i < NF; i++)
			  if ($(i + 1) ~ /^skipped/) k += $i }
			END { if (NR) printf "%d passed, %d failed%s\n", p, f,
			      k ? ", " k " skipped" : "" }')
	else
		line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$log" | tail -1)
	fi
	if [ -z "$line" ]; then
		echo "=== $name: no result line (exit $rc)"
		total_fail=$((total_fail + 1))
		failed_suites+=("$name")
		return
	fi
	p=$(sed -E 's/^([0-9]+) passed.*/\1/' <<< "$line")
	f=$(sed -E 's/^[0-9]+ passed, ([0-9]+) failed.*/\1/' <<< "$line")
	k=$(sed -nE 's/.*, ([0-9]+) skipped.*/\1/p' <<< "$line")
	total_pass=$((total_pass + p))
	total_fail=$((total_fail + f))
	total_skip=$((total_skip + ${k:-0}))
	if [ "$rc" -ne 0 ] || [ "$f" -ne 0 ]; then
		[ "$f" -ne 0 ] || total_fail=$((total_fail + 1))
		failed_suites+=("$name")
	fi
	echo "=== $name: $line (exit $rc)"
}

# one NAME CMD...: a suite that is a single check (no result line of its
# own): passes when CMD exits 0.
one() {
	local name=$1
	shift
	suite "$name" bash -c '"$@" && echo "1 passed, 0 failed" ||
		{ echo "0 passed, 1 failed"; exit 1; }' one "$@"
}

want() {
	[ $# -eq 0 ] && return 0
	local s
	for s in "${SUITES[@]}"; do [ "$s" = "$1" ] && return 0; done
	return 1
}
SUITES=("$@")
all() { [ ${#SUITES[@]} -eq 0 ] || want "$1"; }

echo "=== build"
make module selftests user ebpf || { echo "0 passed, 1 failed"; exit 1; }
make -C selftests/ctl || { echo "0 passed, 1 failed"; exit 1; }
make -C selftests/stress || { echo "0 passed, 1 failed"; exit 1; }

all wheel && suite wheel make -s -C selftests host-check
all user && suite --sum user make -s -C user check
all ebpf-host && suite --sum ebpf-host make -s -C ebpf check
all lab && suite lab selftests/vm/lab-selftest.sh
mapfile -t abi_tests < selftests/build/TESTS
all vm && suite vm $VM_RUN -- selftests/run-vm-tests.sh \
	"${abi_tests[@]}" user/build/tests/kernel_backend_test
all ctl && suite ctl $VM_RUN --timeout 1500 -- selftests/ctl/run.sh
all dqlat && suite dqlat $VM_RUN --timeout 900 -- ebpf/tests/vm_dqlat_test.sh
all stress && suite stress scripts/stress.sh 20
# DKMS builds dq.ko for the lab's kernel, the newest linux-headers-*-amd64.
lab_kver=$(find /usr/src -maxdepth 1 -name 'linux-headers-*-amd64' -printf '%f\n' |
	sed 's/^linux-headers-//' | sort -V | tail -n 1)
all dkms && one dkms scripts/dkms.sh test "${lab_kver:-none}"
# The debug lab (KASAN, lockdep, kmemleak): its kernel is built once and
# cached (~12 min on 2 cores the first time), then the KUnit suites and the
# kernel-ABI selftests run on it.
all kunit && suite kunit scripts/kunit.sh
all vm-debug && suite vm-debug $VM_RUN --kernel debug --timeout 2400 -- \
	selftests/run-vm-tests.sh "${abi_tests[@]}" user/build/tests/kernel_backend_test

echo "=== logs: $LOG_DIR"
[ ${#failed_suites[@]} -eq 0 ] || echo "=== failed: ${failed_suites[*]}"
if [ "$total_skip" -gt 0 ]; then
	echo "$total_pass passed, $total_fail failed, $total_skip skipped"
else
	echo "$total_pass passed, $total_fail failed"
fi
[ ${#failed_suites[@]} -eq 0 ] && [ "$total_fail" -eq 0 ]
