#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Power cuts under a durable queue (docs/durability-tests.md): the VM is
# killed from the host (SIGKILL to qemu) while the guest commits, acks,
# delivers and journals, with the journal on an ext4 image of its own;
# then booted again with the same image, the journal recovered, and so on;
# a last boot drains everything.  The verdict is durable_torture's over
# what the host captured from the guest's terminal.
#
# usage: selftests/vm/durable-powercut.sh [--cuts N] [--seconds S]
#                                         [--kernel NAME] [--keep]
#        (host, as root; default 6 cuts, bounded by 150 s of cuts)
#        selftests/vm/durable-powercut.sh guest RUN [final]
#        (in the VM, run by the above)
#
# The disk: a 256 MiB raw image, mkfs.ext4 here, attached with
# selftests/vm/run --disk, cache=none.  Why cache=none: qemu then writes
# the image with O_DIRECT (no host page cache between the guest and the
# file), and shows the guest a volatile write cache whose flushes
# (ext4's journal commits, the library's fdatasync) become fdatasync of
# the image.  Killing qemu loses exactly what the guest had not yet
# written out (its page cache, and requests in flight in qemu), and keeps
# every write the guest saw complete: a power cut of a disk with a write
# cache that honours flushes.  (cache=directsync, a write-through disk,
# would make every completed write stable at once and not show a missing
# flush; cache=writeback would survive the kill just as well, since the
# host's page cache outlives qemu, but hides nothing more.)  What a real
# disk does that this does not: lose completed but unflushed writes from
# its own cache; the image lives in a file the host does not lose.
#
# The test's own record leaves the guest through its terminal (ttyS0, a
# file on the host): "about to commit" lines before dq_commit(),
# "acked" lines after dq_durable_wait() returned, "delivered" lines
# before dq_done(), each batch drained through the UART (tcdrain) before
# the next library call; a line torn by the cut fails its checksum and is
# dropped (an ack lost this way only weakens the test).
set -u -o pipefail

SELF=$(readlink -f "${BASH_SOURCE[0]}")
REPO=$(readlink -f "$(dirname "$SELF")/../..")
BIN=${DQ_DURABLE_BIN:-$REPO/user/build/tests/durable_torture}
# A program built elsewhere (DQ_DURABLE_BIN, e.g. under /tmp, which the
# guest covers with tmpfs): the guest is given its build directory.
run_args=()
[ -n "${DQ_DURABLE_BIN:-}" ] && run_args=(--cwd "$(dirname "$(dirname "$BIN")")")

# ------------------------------------------------------------- guest side
if [ "${1:-}" = guest ]; then
	run=$2
	mnt=/tmp/dq-powercut
	modprobe virtio_blk 2> /dev/null
	modprobe ext4 2> /dev/null
	for _ in $(seq 50); do
		[ -b /dev/vda ] && break
		sleep 0.1
	done
	mkdir -p "$mnt"
	mount -t ext4 /dev/vda "$mnt" || { echo "# cannot mount /dev/vda"; exit 1; }
	common=(--dir "$mnt/j" --backend kernel --log - --sync-log --batch-max 4
		--hold-max 400 --late-ms 3000 --final-timeout 60)
	if [ "${3:-}" = final ]; then
		"$BIN" child "${common[@]}" --run "$run" --final
		rc=$?
		"$BIN" child "${common[@]}" --run "$((run + 1))" --verify
		rc=$((rc | $?))
		umount "$mnt" || rc=1
		exit "$rc"
	fi
	echo "# powercut guest: producing until the host cuts the power"
	exec "$BIN" child "${common[@]}" --run "$run"
fi

# -------------------------------------------------------------- host side
cuts=6
seconds=150
kernel=6.1
keep=0
while [ $# -gt 0 ]; do
	case "$1" in
	--cuts) cuts=$2; shift 2 ;;
	--seconds) seconds=$2; shift 2 ;;
	--kernel) kernel=$2; shift 2 ;;
	--keep) keep=1; shift ;;
	*) echo "usage: $0 [--cuts N] [--seconds S] [--kernel NAME] [--keep]" >&2; exit 2 ;;
	esac
done
[ -x "$BIN" ] || { echo "# $BIN missing (make -C user)"; echo "0 passed, 1 failed"; exit 1; }
work=$(mktemp -d /tmp/dq-powercut.XXXXXX) || exit 1
[ "$keep" = 1 ] || trap 'rm -rf "$work"' EXIT
img=$work/journal.img
truncate -s 256M "$img"
mkfs.ext4 -q -F -E nodiscard "$img" || { echo "0 passed, 1 failed"; exit 1; }
seed=${DQ_SEED:-$(date +%s%N)}
echo "# powercut: $cuts cuts (at most $seconds s of them), kernel $kernel, image $img, seed $seed"
RANDOM=$((seed % 32768))

fails=0
start=$SECONDS
cut=0
run=1
# boot RUN OUT [final]: one VM, CMD the guest side; its terminal in OUT.
while [ "$cut" -lt "$cuts" ] && [ $((SECONDS - start)) -lt "$seconds" ]; do
	out=$work/boot-$(printf %03d "$run").out
	pidf=$work/qemu.pid
	rm -f "$pidf"
	"$REPO/selftests/vm/run" "${run_args[@]}" --kernel "$kernel" --timeout 120 \
		--disk "$img" --qemu-pid "$pidf" -- "$SELF" guest "$run" \
		> "$out" 2> "$out.err" &
	vm=$!
	# The cut: a fifth of them right after the open started (in the
	# recovery), the rest 0.3-3 s after the open returned.
	if [ $((RANDOM % 5)) = 0 ]; then
		want="DQT $run S "
		delay_ms=$((RANDOM % 300))
	else
		want="DQT $run O "
		delay_ms=$((300 + RANDOM % 2700))
	fi
	waited=0
	while ! grep -aq "$want" "$out" 2> /dev/null; do
		if ! kill -0 "$vm" 2> /dev/null || [ "$waited" -ge 900 ]; then
			break
		fi
		sleep 0.1
		waited=$((waited + 1))
	done
	if ! grep -aq "$want" "$out" || ! [ -s "$pidf" ]; then
		echo "# FAIL: boot $run: the guest never got to '$want' (see $out, $out.err)"
		tail -n 20 "$out" "$out.err" | sed 's/^/#   /'
		kill "$vm" 2> /dev/null
		wait "$vm"
		fails=$((fails + 1))
		break
	fi
	sleep "$(printf '%d.%03d' $((delay_ms / 1000)) $((delay_ms % 1000)))"
	qpid=$(cat "$pidf")
	kill -KILL "$qpid"
	wait "$vm"
	vrc=$?
	cut=$((cut + 1))
	lines=$(grep -ac 'DQT ' "$out")
	echo "# cut $cut: boot $run killed $delay_ms ms after '$want' (run exit $vrc), $lines lines captured; $(grep -a "DQT $run O " "$out" | head -n 1 |
		awk '{ printf "recovery %.1f ms, %d recovered, %d overdue, %d torn bytes", $4 / 1e6, $5, $6, $9 }')"
	run=$((run + 1))
done

# The last boot: drain, close, reopen (nothing left), unmount.
out=$work/boot-$(printf %03d "$run").out
"$REPO/selftests/vm/run" "${run_args[@]}" --kernel "$kernel" --timeout 300 --disk "$img" -- \
	"$SELF" guest "$run" final > "$out" 2> "$out.err"
frc=$?
echo "# final boot $run: run exit $frc; $(grep -a "DQT $run O " "$out" | head -n 1 |
	awk '{ printf "recovery %.1f ms, %d recovered, %d overdue, %d torn bytes", $4 / 1e6, $5, $6, $9 }')"
if [ "$frc" != 0 ]; then
	echo "# FAIL: the final boot failed (exit $frc):"
	tail -n 30 "$out.err" | sed 's/^/#   /'
	fails=$((fails + 1))
fi
# The file system itself survived the cuts.
if ! fsck_out=$(e2fsck -fn "$img" 2>&1); then
	echo "# FAIL: e2fsck -fn after the cuts:"
	tail -n 20 <<< "$fsck_out" | sed 's/^/#   /'
	fails=$((fails + 1))
fi

echo "# $cut power cuts in $((SECONDS - start)) s"
"$BIN" verify --late-ms 3000 --order-tol-us 1000 final "$work"/boot-*.out > "$work/verdict" 2>&1
cat "$work/verdict"
line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$work/verdict" | tail -n 1)
p=${line%% passed*}
f=${line#*passed, }
f=${f%% failed*}
[ -n "$line" ] || { p=0 f=1; }
[ "$cut" -gt 0 ] || { echo "# FAIL: no power cut happened"; fails=$((fails + 1)); }
[ "$keep" = 1 ] && echo "# kept: $work"
echo "$((p)) passed, $((f + fails)) failed"
[ $((f + fails)) -eq 0 ]
