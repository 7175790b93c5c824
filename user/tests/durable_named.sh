#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1 OR MIT
#
# A named durable queue shared by processes, in the VM with dq.ko loaded
# (docs/durability-tests.md, "Named queues"; the program is
# user/tests/durable_named.c):
#   1. `dqctl create` a tracked queue; a consumer process and a series of
#      producer processes attach with one journal; producers are killed
#      with SIGKILL at random points and restarted, the consumer too;
#   2. everything is killed while messages are held, dq.ko is unloaded
#      and loaded again, the queue created again, and a consumer and a
#      producer attach AT ONCE: exactly one of them recovers the journal,
#      the other joins; the consumer drains and exits cleanly;
#   3. dq.ko reloaded once more: a fresh attach recovers nothing;
#   4. the verdict over every log (durable_named verify).
# env: DQ_KO (set by selftests/vm/run), DQ_NAMED_ROUNDS (producer runs, 10),
#      DQ_SEED, DQ_NAMED_SAVE=DIR (copy the logs there at the end),
#      DQ_NAMED_KILL_MS (longest life of a killed producer, 1500),
#      DQ_NAMED_IDLE_MS (the draining consumer's idle exit, 3000, counted
#      from the final producer's exit: however long that producer takes
#      to start and attach, its messages, due 0-400 ms after their
#      commits, are all due 2.6 s before the consumer may leave).
# Output: TAP, then one line "N passed, N failed".
set -u

here=$(cd "$(dirname "$0")" && pwd)
bin=$here/../build/tests/durable_named
dqctl=$here/../build/dqctl
work=$(mktemp -d "${TMPDIR:-/tmp}/dq-named.XXXXXX") || exit 1
jdir=$work/j
pids=()
cleanup() {
	local p
	for p in "${pids[@]}"; do kill -KILL "$p" 2> /dev/null; done
	wait 2> /dev/null
	# (The journal must be on a local file system: on the VM's 9p share
	# mmap(MAP_SHARED) of DIR/STATE fails, -EINVAL.)
	[ -n "${DQ_NAMED_SAVE:-}" ] && cp "$work"/*.log "$DQ_NAMED_SAVE"/
	rm -rf "$work"
}
trap cleanup EXIT
RANDOM=${DQ_SEED:-$$}
n=0 pass=0 fail=0
ok() {
	n=$((n + 1))
	if [ "$1" = 0 ]; then
		pass=$((pass + 1))
		echo "ok $n - $2"
	else
		fail=$((fail + 1))
		echo "not ok $n - $2"
	fi
}
bail() {
	echo "# $*"
	echo "$pass passed, $((fail + 1)) failed"
	exit 1
}

create() {
	"$dqctl" create dn --slots 16384 --slot-size 512 --track --inflight none
}

# ---------------------------------------------------------- power cut
# durable_named.sh powercut [--cuts N]  (host): the journal and the logs on
#	an ext4 image (selftests/vm/run --disk, cache=none: see
#	selftests/vm/durable-powercut.sh for why), qemu SIGKILLed while a
#	producer and a consumer run; booted again, and so on; the last boot
#	drains and gives the verdict (the logs are fdatasync()ed before the
#	calls they announce, so what they say survived the cut).
# durable_named.sh pc-guest RUN [final]  (in the VM, run by the above)
if [ "${1:-}" = pc-guest ]; then
	run=$2
	mnt=/tmp/dq-named-pc
	modprobe virtio_blk 2> /dev/null
	modprobe ext4 2> /dev/null
	for _ in $(seq 50); do [ -b /dev/vda ] && break; sleep 0.1; done
	mkdir -p "$mnt"
	mount -t ext4 /dev/vda "$mnt" || bail "cannot mount /dev/vda"
	mkdir -p "$mnt/logs"
	create || bail "dqctl create failed"
	if [ "${3:-}" = final ]; then
		# The boot-time step recovers; the consumer joins and drains.
		rec_out=$("$here/../build/dqrecover" dn "$mnt/j")
		ok $? "dqrecover after the last cut: $rec_out"
		"$bin" consume dn "$mnt/j" "$mnt/logs/c-$run.log" --idle-ms 3000 --sync-log
		ok $? "the last boot's consumer joins, drains and closes"
		grep -q '^O 0 ' "$mnt/logs/c-$run.log"
		ok $? "the consumer joined what dqrecover had recovered (recovered nothing itself)"
		cuts=$((run - 1))
		"$bin" verify --max-redelivered $((256 * cuts)) "$mnt"/logs/*.log > /tmp/verdict 2>&1
		grep '^#' /tmp/verdict
		while IFS= read -r l; do
			case "$l" in
			"ok "*) ok 0 "${l#ok * - }" ;;
			"not ok "*) ok 1 "${l#not ok * - }" ;;
			esac
		done < /tmp/verdict
		umount "$mnt" || ok 1 "umount"
		echo "$pass passed, $fail failed"
		[ "$fail" = 0 ]
		exit
	fi
	"$bin" consume dn "$mnt/j" "$mnt/logs/c-$run.log" --sync-log &
	"$bin" produce dn "$mnt/j" "$mnt/logs/p-$run.log" "$run" --sync-log &
	echo "# named powercut guest $run: running until the host cuts the power"
	wait
	exit 1
fi
if [ "${1:-}" = powercut ]; then
	cuts=${3:-4}
	[ -x "$bin" ] || bail "build first: make -C user"
	img=$work/journal.img
	truncate -s 256M "$img"
	mkfs.ext4 -q -F -E nodiscard "$img" || bail "mkfs.ext4 failed"
	vmrun=$here/../../selftests/vm/run
	for run in $(seq "$cuts"); do
		out=$work/boot-$run.out
		"$vmrun" --kernel 6.1 --timeout 120 --disk "$img" --qemu-pid "$work/qemu.pid" \
			-- "$0" pc-guest "$run" > "$out" 2>&1 &
		vm=$!
		for _ in $(seq 900); do
			grep -aq "named powercut guest $run: running" "$out" && break
			kill -0 "$vm" 2> /dev/null || break
			sleep 0.1
		done
		if ! grep -aq "named powercut guest $run: running" "$out"; then
			tail -n 20 "$out" | sed 's/^/#   /'
			kill "$vm" 2> /dev/null
			wait "$vm"
			bail "boot $run never started its processes"
		fi
		delay_ms=$((500 + RANDOM % 2500))
		sleep "$(printf '%d.%03d' $((delay_ms / 1000)) $((delay_ms % 1000)))"
		kill -KILL "$(cat "$work/qemu.pid")"
		wait "$vm"
		echo "# cut $run: qemu killed $delay_ms ms after the processes started"
	done
	run=$((cuts + 1))
	"$vmrun" --kernel 6.1 --timeout 300 --disk "$img" -- "$0" pc-guest "$run" final \
		> "$work/boot-final.out" 2>&1
	frc=$?
	grep -aE '^(ok|not ok|#)' "$work/boot-final.out" | grep -av '^# named' | while IFS= read -r l; do
		echo "$l"
	done | sed -n '/^#/p'
	while IFS= read -r l; do
		case "$l" in
		"ok "*) ok 0 "${l#ok * - }" ;;
		"not ok "*) ok 1 "${l#not ok * - }" ;;
		esac
	done < <(grep -aE '^(ok|not ok) ' "$work/boot-final.out")
	[ "$frc" = 0 ] || ok 1 "the last boot exited $frc"
	e2fsck -fn "$img" > /dev/null 2>&1
	ok $? "e2fsck -fn: the file system survived the cuts"
	echo "$pass passed, $fail failed"
	[ "$fail" = 0 ]
	exit
fi

[ -x "$bin" ] && [ -x "$dqctl" ] || bail "build first: make -C user"
[ -c /dev/dq ] || bail "/dev/dq is missing: is dq.ko loaded?"
[ -n "${DQ_KO:-}" ] || bail "DQ_KO is not set"

reload() {
	local i
	for i in $(seq 100); do
		rmmod dq 2> /dev/null && break
		sleep 0.1
	done
	grep -q '^dq ' /proc/modules && bail "rmmod dq failed for 10 s: $(rmmod dq 2>&1)"
	insmod "$DQ_KO" || bail "insmod $DQ_KO failed"
}
consumer() {	# LOG [--idle-ms N]
	"$bin" consume dn "$jdir" "$@" &
	cons=$!
	pids+=("$cons")
}

create || bail "dqctl create failed"
consumer "$work/c-01.log"
c=1
rounds=${DQ_NAMED_ROUNDS:-10}
for r in $(seq "$rounds"); do
	# A third of the producers journal `always`, the rest `batch`.
	extra=()
	[ $((RANDOM % 3)) = 0 ] && extra=(--always)
	"$bin" produce dn "$jdir" "$work/p-$(printf %02d "$r").log" "$r" "${extra[@]}" &
	p=$!
	pids+=("$p")
	kill_ms=$((300 + RANDOM % (${DQ_NAMED_KILL_MS:-1500} - 300)))
	sleep "$(printf '%d.%03d' $((kill_ms / 1000)) $((kill_ms % 1000)))"
	kill -KILL "$p" 2> /dev/null
	wait "$p" 2> /dev/null
	if [ $((r % 3)) = 0 ]; then
		kill -KILL "$cons" 2> /dev/null
		wait "$cons" 2> /dev/null
		c=$((c + 1))
		consumer "$work/c-$(printf %02d "$c").log"
	fi
done
# Held messages in the queue and the journal: one more producer, then
# both killed together, and dq.ko goes away with the queue.
"$bin" produce dn "$jdir" "$work/p-$((rounds + 1)).log" $((rounds + 1)) &
p=$!
pids+=("$p")
sleep 0.5
kill -KILL "$p" "$cons" 2> /dev/null
wait 2> /dev/null
held=$(grep -c '^C ' "$work"/p-*.log | awk -F: '{ s += $2 } END { print s + 0 }')
echo "# $((rounds + 1)) producer runs (killed), $c consumer runs (killed); $held commits logged"
reload
create || bail "dqctl create after the reload failed"

# After the reload: consumer and producer attach at once; one recovers.
c=$((c + 1))
consumer "$work/c-$(printf %02d "$c").log" --idle-ms "${DQ_NAMED_IDLE_MS:-3000}" \
	--idle-after "$work/final-produced"
final_c=$work/c-$(printf %02d "$c").log
final_p=$work/p-$((rounds + 2)).log
timeout 120 "$bin" produce dn "$jdir" "$final_p" $((rounds + 2)) --count 300
ok $? "a producer attached beside the recovering consumer commits 300 and closes"
: > "$work/final-produced"
timeout 180 tail --pid="$cons" -f /dev/null
wait "$cons"
ok $? "the consumer drains everything and closes cleanly"
echo "# final consumer: $(grep -c '^D ' "$final_c") delivered; $(grep -v '^D ' "$final_c" | tr '\n' ' ')"
rec_c=$(awk '/^O /{ print $2; exit }' "$final_c")
rec_p=$(awk '/^O /{ print $2; exit }' "$final_p")
echo "# after the reload: the consumer's attach recovered ${rec_c:-?}, the producer's ${rec_p:-?}"
one_recovered=1
if [ -n "$rec_c" ] && [ -n "$rec_p" ]; then
	if { [ "$rec_c" -gt 0 ] && [ "$rec_p" = 0 ]; } ||
	   { [ "$rec_p" -gt 0 ] && [ "$rec_c" = 0 ]; }; then
		one_recovered=0
	fi
fi
ok $one_recovered "exactly one of two processes attaching at once recovered the journal"

# dqctl reads the shared state: the producer's 300 and the recovered ones
# committed or replayed, all retired by the drain.
js=$("$dqctl" journal stats "$jdir")
echo "$js" | sed 's/^/# /'
echo "$js" | grep -q ' live messages 0 ' &&
	echo "$js" | grep -q ' durable lag 0 records' &&
	! echo "$js" | grep -q 'queue instance 0000000000000000'
ok $? "dqctl journal stats: stamped, 0 live messages, 0 durable lag after the drain"

# Drained: nothing live is left in the journal.
reload
create || bail "dqctl create after the second reload failed"
# dqrecover (the boot-time step) recovers: nothing live is left.
rec_out=$("$here/../build/dqrecover" dn "$jdir" --json)
echo "# dqrecover: $rec_out"
rec_v=$(sed -n 's/.*"recovered":\([0-9]*\).*/\1/p' <<< "$rec_out")
"$bin" consume dn "$jdir" "$work/v.log" --idle-ms 1000
ok $([ "$rec_v" = 0 ] && grep -q '^O 0 ' "$work/v.log" &&
	! grep -q '^D ' "$work/v.log"; echo $?) \
	"after the drain dqrecover recovers nothing into a fresh queue (${rec_v:-?}), a consumer then joins"
"$dqctl" delete dn --force > /dev/null

# A redelivery across runs: a consumer killed between its log line and
# its done, or with retire entries not yet durable (one group commit,
# 2 ms, plus the next flush) when it was killed or dq.ko went away.  Each
# killed consumer run may leave at most a reap batch (64) in flight and a
# few batches' retires unsynced: 256 per killed run bounds it.
killed_c=$((c - 1))
"$bin" verify --max-redelivered $((256 * killed_c)) \
	"$work"/p-*.log "$work"/c-*.log > "$work/verdict" 2>&1
vrc=$?
sed -n 's/^\(ok\|not ok\) [0-9]* - /&/p; /^#/p' "$work/verdict" | while IFS= read -r l; do
	case "$l" in
	ok*|not\ ok*) ;;
	*) echo "$l" ;;
	esac
done
while IFS= read -r l; do
	case "$l" in
	"ok "*) ok 0 "${l#ok * - }" ;;
	"not ok "*) ok 1 "${l#not ok * - }" ;;
	esac
done < "$work/verdict"
[ "$vrc" -le 1 ] || ok 1 "the verdict ran (exit $vrc)"
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
