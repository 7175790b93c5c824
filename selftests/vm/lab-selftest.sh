#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Commands in single quotes run in the guest and are expanded there:
# shellcheck disable=SC2016
#
# Tests of the VM lab itself (selftests/vm/run).  Prints TAP and a final
# "N passed, N failed" line; exits 0 only if everything passed.  Each
# case proves its point once, in as few boots as that takes: 127 s on
# 2026-12-06 (a loaded 2-core host, the VM lock held), was 226 s there.
#
# Usage: selftests/vm/lab-selftest.sh   (as root, from any directory)
#   DQ_VM_LOCK=FILE  take flock FILE around each boot (one boot per hold),
#                    on a machine whose VM runs are serialized that way

set -u -o pipefail

VMDIR=$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")
REPO=$(readlink -f "$VMDIR/../..")
RUN=$VMDIR/run
SPLAT_DIR=$VMDIR/splat_test
KO=$SPLAT_DIR/splat_test.ko

WORK=$(mktemp -d "${TMPDIR:-/tmp}/dq-lab-selftest.XXXXXX")
export DQ_VM_LOG_DIR=$WORK/logs

LOCK=()
[ -n "${DQ_VM_LOCK:-}" ] && LOCK=(flock "$DQ_VM_LOCK")

N=0
PASS=0
FAIL=0
OUT=

ok() {
	N=$((N + 1))
	PASS=$((PASS + 1))
	echo "ok $N - $1"
}

not_ok() {
	N=$((N + 1))
	FAIL=$((FAIL + 1))
	echo "not ok $N - $1"
	if [ -n "$OUT" ] && [ -f "$OUT" ]; then
		echo "# last lines of $OUT:"
		tail -n 25 "$OUT" | sed 's/^/#   /'
	fi
}

# vm NAME ARGS... : run the lab, output to $WORK/NAME.out, status in $RC
vm() {
	local name=$1
	shift
	OUT=$WORK/$name.out
	# stdout apart: the runner's phase lines (stderr) are written while
	# qemu streams CMD's output (stdout) in pieces, so in one file a
	# phase line can land inside one of CMD's lines (seen:
	# "ddq-vm: ... CMD started" + "q-lab-hello").
	"${LOCK[@]}" "$RUN" "$@" < /dev/null > "$OUT.stdout" 2> "$OUT.stderr"
	RC=$?
	cat "$OUT.stderr" "$OUT.stdout" > "$OUT"
}

# expect_rc DESC WANT : check $RC
expect_rc() {
	if [ "$RC" -eq "$2" ]; then
		ok "$1"
	else
		echo "# got exit $RC, want $2"
		not_ok "$1"
	fi
}

# The default guest kernel's headers (the lab's 6.1, fetched once).
kdir() {
	"$REPO/scripts/lab-kernel.sh" kdir 6.1
}

# 1: the test module builds against the guest kernel's headers.
OUT=$WORK/build.out
if make -C "$(kdir)" M="$SPLAT_DIR" modules > "$OUT" 2>&1 && [ -f "$KO" ]; then
	ok "splat_test.ko builds against $(kdir)"
else
	not_ok "splat_test.ko builds against $(kdir)"
fi

# Everything below runs from an unrelated directory.
cd / || exit 1

# One boot for everything a run whose CMD exits 0 shows (until
# 2026-12-06 eight boots of ~7 s): the phases, the kernel console, CMD's
# output, --insmod, and what the guest sees (NUMA, cwd, file systems,
# --rw, DQ_* variables).  The guest's probes (probes.sh, written below)
# each print "probe NAME ok|fail"; the host judges each on a line of its
# own.  CMD's exit status 1 and 7 are the lock and /tmp cases' below.
mkdir -p "$WORK/rw"
cat > "$WORK/rw/probes.sh" <<'PROBES'
#!/bin/sh
# In the guest: $1 the repo, $2 the --rw directory.
repo=$1 rw=$2
probe() {
	name=$1; shift
	if "$@"; then echo "probe $name ok"; else echo "probe $name fail"; fi
}
echo dq-lab-hello
probe insmod grep -qw splat_test /proc/modules
probe numa sh -c 'test -d /sys/devices/system/node/node1 &&
	test "$(ls -d /sys/devices/system/node/node[0-9]* | wc -l)" -eq 2'
probe cwd test "$(pwd)" = "$repo"
probe fs sh -c '! touch /dq-lab-probe 2>/dev/null &&
	! touch "$1/dq-lab-probe" 2>/dev/null &&
	touch /tmp/probe /var/tmp/probe /run/probe &&
	test -r "$1/selftests/vm/run"' sh "$repo"
probe pseudofs sh -c 'test -d /sys/kernel/debug/tracing -o -d /sys/kernel/tracing/events &&
	grep -q " /sys/fs/bpf bpf " /proc/mounts &&
	grep -q " /sys/kernel/debug debugfs " /proc/mounts'
probe rw sh -c 'echo "$DQ_LAB_PROBE" > "$1/out" &&
	test "$DQ_LAB_PROBE" = "a b'"'"'c"' sh "$rw"
PROBES
DQ_LAB_PROBE="a b'c" vm probes --no-module --insmod "$KO" --rw "$WORK/rw" -- \
	sh "$WORK/rw/probes.sh" "$REPO" "$WORK/rw"
expect_rc "run -- CMD exits 0 when CMD does (the guest's probes)" 0
PROBES=$OUT.stdout
# probe NAME DESC: the guest's verdict on NAME.
probe() {
	if grep -qx "probe $1 ok" "$PROBES"; then
		ok "$2"
	else
		grep -E "^probe $1 " "$PROBES" | sed 's/^/# guest: /'
		not_ok "$2"
	fi
}

# The phases of a boot are printed, and the kernel console is captured
# from its first line (earlyprintk), apart from CMD's output.
KCON=$(sed -n 's/.*kernel console: \([^,]*\).*/\1/p' "$OUT" | tail -n 1)
if grep -q '\] qemu started' "$OUT" && grep -q '\] kernel reached init' "$OUT" &&
	grep -q '\] CMD started' "$OUT"; then
	ok "the phases (qemu started, kernel reached init, CMD started) are printed"
else
	grep -E '^dq-vm: ' "$OUT" | head -n 12 | sed 's/^/# /'
	not_ok "the phases (qemu started, kernel reached init, CMD started) are printed"
fi
if [ -f "$KCON" ] && head -n 1 "$KCON" | grep -q '^\[    0\.000000\] Linux version' &&
	grep -q 'bootconsole \[earlyser0\] enabled' "$KCON" &&
	! grep -q 'Linux version' "$PROBES"; then
	ok "the kernel console is captured from its first line, not on CMD's terminal"
else
	echo "# kernel console file: ${KCON:-none}"
	not_ok "the kernel console is captured from its first line, not on CMD's terminal"
fi

if grep -qx 'dq-lab-hello' "$PROBES"; then
	ok "CMD's output reaches the host's stdout"
else
	not_ok "CMD's output reaches the host's stdout"
fi

KLOG=$(sed -n 's/.*kernel log: //p' "$OUT" | tail -n 1)
if grep -qx 'probe insmod ok' "$PROBES" && [ -f "$KLOG" ] &&
	grep -q 'splat_test: unloaded' "$KLOG"; then
	ok "--insmod loads a module before CMD and unloads it after"
else
	not_ok "--insmod loads a module before CMD and unloads it after"
fi

probe numa "the guest has 2 NUMA nodes"
probe cwd "cwd in the guest is the repo dir ($REPO)"
probe fs "host / and the repo are read-only, /tmp /var/tmp /run writable"
probe pseudofs "debugfs, tracefs and bpffs are mounted"
if grep -qx 'probe rw ok' "$PROBES" && [ "$(cat "$WORK/rw/out" 2> /dev/null)" = "a b'c" ]; then
	ok "--rw DIR is writable from the guest; DQ_* variables reach CMD"
else
	not_ok "--rw DIR is writable from the guest; DQ_* variables reach CMD"
fi

vm warn --no-module -- insmod "$KO" plant_warn=1
if [ "$RC" -eq 3 ] && grep -q 'kernel splat detected' "$OUT" &&
	grep -q 'WARNING:.*splat_test' "$OUT"; then
	ok "a planted WARN fails the run with status 3 although CMD exits 0"
else
	echo "# got exit $RC, want 3 and a splat report"
	not_ok "a planted WARN fails the run with status 3 although CMD exits 0"
fi

# A CPU stuck in the kernel (a planted 120 s spin with preemption off):
# its first stall report (soft lockup or RCU) stops the VM the grace
# later (DQ_VM_STALL_GRACE, 30 s by default, 5 s here: ~25 s of make
# check), not at --timeout.  watchdog_thresh=1: the soft lockup is
# reported after ~2 s of spinning instead of ~20 s (the default 10 s
# threshold, doubled).
s=$(date +%s)
DQ_VM_STALL_GRACE=5 DQ_VM_APPEND=watchdog_thresh=1 vm stall --no-module --timeout 400 -- \
	insmod "$KO" plant_stall_s=120
took=$(($(date +%s) - s))
if [ "$RC" -eq 124 ] && grep -q 'guest stalled: .*VM stopped 5 s after the first report' "$OUT" &&
	[ "$took" -lt 120 ]; then
	ok "a stalled guest is stopped 5 s (the grace) after its first stall report (${took} s, --timeout 400)"
else
	echo "# got exit $RC after ${took} s, want 124 and 'guest stalled ... VM stopped 5 s after' before the spin ends"
	not_ok "a stalled guest is stopped the grace after its first stall report"
fi

vm rmmodfail --no-module --insmod "$KO" -- rmmod splat_test
expect_rc "a failing rmmod after CMD fails the run with status 4" 4

printf 'not a module\n' > "$WORK/bogus.ko"
vm insmodfail --no-module --insmod "$WORK/bogus.ko" -- true
expect_rc "a failing insmod fails the run with status 5" 5

vm nomod --module "$WORK/missing.ko" -- true
expect_rc "a missing module fails fast with status 5" 5

# The repo at another path, below a tmpfs mount point of the guest (like a
# CI checkout in /tmp): a copy of the lab (selftests/vm, the kernel
# script) is enough.
ALT=$WORK/xyz/main
mkdir -p "$ALT/selftests" "$ALT/scripts"
cp -a "$VMDIR" "$ALT/selftests/vm"
cp -a "$REPO/scripts/lab-kernel.sh" "$ALT/scripts/"
OUT=$WORK/alt.out
"${LOCK[@]}" "$ALT/selftests/vm/run" --no-module -- sh -c \
	'test "$(pwd)" = "$1" && test -x selftests/vm/run && touch /tmp/x && exit 7' sh "$ALT" \
	< /dev/null > "$OUT" 2>&1
RC=$?
expect_rc "works with the repo below /tmp ($ALT); CMD's exit 7 is the run's" 7

# One VM at a time: a run waits for the machine's VM lock, gives up after
# DQ_VM_LOCK_WAIT with status 125, and does not wait for a lock its
# caller took for it (flock FILE run ...).
VMLOCK=$WORK/vm.lock
# The holder is the sleep itself (flock(1) would leave its sleep holding
# the lock after a kill, and the next case waited ~17 s for it).
(
	exec 9> "$VMLOCK"
	flock 9
	exec sleep 20
) &
HOLDER=$!
sleep 1
T0=$(date +%s)
DQ_VM_LOCK=$VMLOCK DQ_VM_LOCK_WAIT=2 vm lockbusy --no-module -- true
T1=$(date +%s)
kill "$HOLDER" 2> /dev/null
wait "$HOLDER" 2> /dev/null
if [ "$RC" -eq 125 ] && grep -q "still held after 2 s" "$OUT" &&
	[ $((T1 - T0)) -lt 15 ]; then
	ok "a run waits for the VM lock another run holds, then gives up (status 125)"
else
	echo "# got exit $RC after $((T1 - T0)) s, want 125 and 'still held after 2 s'"
	not_ok "a run waits for the VM lock another run holds, then gives up (status 125)"
fi
OUT=$WORK/lockheld.out
DQ_VM_LOCK=$VMLOCK DQ_VM_LOCK_WAIT=2 timeout 300 flock "$VMLOCK" "$RUN" --no-module \
	-- false < /dev/null > "$OUT" 2>&1
RC=$?
expect_rc "a run under its caller's flock of the VM lock does not wait for it; false exits 1" 1

vm panic --no-module -- sh -c 'echo c > /proc/sysrq-trigger; sleep 30'
if [ "$RC" -eq 3 ] && grep -q 'Kernel panic' "$OUT"; then
	ok "a kernel crash is reported as a splat (status 3)"
else
	echo "# got exit $RC, want 3 and 'Kernel panic'"
	not_ok "a kernel crash is reported as a splat (status 3)"
fi

vm timeout --timeout 12 --no-module -- sleep 100
if [ "$RC" -eq 124 ] && grep -q 'timeout: CMD did not finish within 12 s' "$OUT"; then
	ok "a hanging CMD is stopped by --timeout with status 124 and says so"
else
	echo "# got exit $RC, want 124 and 'timeout: CMD did not finish within 12 s'"
	not_ok "a hanging CMD is stopped by --timeout with status 124 and says so"
fi

# A qemu that cannot start is reported at once (here: an unknown option).
DQ_VM_QEMU_ARGS=-dq-no-such-option vm qemufail --no-module -- true
if [ "$RC" -eq 125 ] && grep -q 'qemu did not start' "$OUT" &&
	grep -q 'dq-no-such-option' "$OUT"; then
	ok "a qemu that does not start is reported as such (status 125)"
else
	echo "# got exit $RC, want 125 and 'qemu did not start'"
	not_ok "a qemu that does not start is reported as such (status 125)"
fi

# A boot that never reaches the init: the kernel cannot find its init (nor
# a root to mount) and panics; panic=0 keeps it there, as a hung boot
# would stay.  It must be reported as a boot hang at the bound (10 s
# here, 2-3x a normal stock boot's ~3-5 s), with the kernel's output and
# where the vCPUs are; with one retry (the default), the retry printed
# and counted.  One run for both (until 2026-12-06 a run with no retry
# and a 20 s bound, then this one).
HANG_APPEND='rdinit=/dq-no-such-init init=/dq-no-such-init panic=0'
T0=$(date +%s)
DQ_VM_BOOT_RETRIES=1 DQ_VM_BOOT_TIMEOUT=10 DQ_VM_APPEND=$HANG_APPEND vm boothang --no-module -- true
T1=$(date +%s)
if [ "$RC" -eq 123 ] && grep -q 'boot hang: the kernel did not reach init within 10 s' "$OUT" &&
	grep -q 'Kernel panic - not syncing' "$OUT" &&
	grep -q 'CPU#0 RIP=' "$OUT" && [ $((T1 - T0)) -le 60 ]; then
	ok "a boot that never reaches init is a boot hang (status 123) at the bound, twice in $((T1 - T0)) s, kernel output shown"
else
	echo "# got exit $RC after $((T1 - T0)) s, want 123, the panic message and the vCPUs, two 10 s bounds within 60 s"
	not_ok "a boot that never reaches init is a boot hang (status 123) at the bound"
fi
if [ "$RC" -eq 123 ] && grep -q 'BOOT RETRY 1 of 1' "$OUT" &&
	grep -q 'boot hangs: 2,' "$OUT"; then
	ok "DQ_VM_BOOT_RETRIES=1: the retry is printed and counted (boot hangs: 2)"
else
	echo "# got exit $RC, want 123, 'BOOT RETRY 1 of 1' and 'boot hangs: 2'"
	not_ok "DQ_VM_BOOT_RETRIES=1: the retry is printed and counted"
fi

# A kernel that dies before init (the same panic, rebooting at once) is a
# boot failure, reported as soon as qemu exits, with the kernel's output;
# retried like a hang (no dq code runs before init), and counted.
T0=$(date +%s)
DQ_VM_BOOT_RETRIES=1 DQ_VM_APPEND='rdinit=/dq-no-such-init init=/dq-no-such-init' \
	vm bootdied --no-module -- true
T1=$(date +%s)
if [ "$RC" -eq 123 ] && grep -q 'boot failure: the VM stopped' "$OUT" &&
	grep -q 'Kernel panic - not syncing' "$OUT" && grep -q 'BOOT RETRY 1 of 1' "$OUT" &&
	grep -q 'boot hangs: 0, boot failures: 2 ' "$OUT" && [ $((T1 - T0)) -le 45 ]; then
	ok "a kernel that dies before init is a boot failure (status 123), retried and counted, $((T1 - T0)) s, kernel output shown"
else
	echo "# got exit $RC after $((T1 - T0)) s, want 123, the panic message, one retry and 'boot failures: 2' within 45 s"
	not_ok "a kernel that dies before init is a boot failure (status 123), retried and counted"
fi

# --kernel debug builds (once, ~12 min) and boots the debug kernel; make
# kunit exercises that.  Here: a missing kernel is a clear error, not a hang.
DQ_DEBUG_KERNEL=/nonexistent/bzImage vm debug --kernel debug --no-module -- true
if [ "$RC" -eq 2 ] && grep -q 'DQ_DEBUG_KERNEL=/nonexistent/bzImage does not exist' "$OUT"; then
	ok "--kernel debug with a missing kernel fails clearly (status 2)"
else
	echo "# got exit $RC"
	not_ok "--kernel debug with a missing kernel fails clearly (status 2)"
fi

echo "1..$N"
echo "$PASS passed, $FAIL failed"
if [ "$FAIL" -eq 0 ]; then
	rm -rf "$WORK"
	exit 0
fi
echo "# logs kept in $WORK"
exit 1
