#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# hang-study.sh [BOOTS] [EXTRA_APPEND]: boot the debug kernel BOOTS times
# (default 10) with nothing to run, no retry, and on a boot hang an NMI
# that makes the hung kernel panic and print every task's stack and its
# trace buffer (irq_work and scheduler events since boot).  Prints one
# line per boot and a summary; the hung boots' kernel consoles are kept.
# Not part of make check: the debug kernel's boot hang is studied with it
# (selftests/vm/run's header says what is known).  EXTRA_APPEND is added
# to the kernel command line, to try a remedy against the same count.
set -u
cd "$(dirname "$0")/../.." || exit 1
boots=${1:-10}
extra=${2:-}
out=${DQ_HANG_STUDY_DIR:-/tmp/dq-hang-study.$$}
mkdir -p "$out" || exit 1
events=irq_vectors:irq_work_entry,irq_vectors:irq_work_exit,sched:sched_wakeup,sched:sched_switch,sched:sched_waking
append="unknown_nmi_panic panic_print=0x11 trace_event=$events trace_buf_size=512K $extra"
hangs=0
for i in $(seq 1 "$boots"); do
	log=$out/boot-$i.log
	s=$(date +%s)
	DQ_VM_BOOT_RETRIES=0 DQ_VM_HANG_NMI=1 DQ_VM_APPEND="$append" DQ_VM_LOG_DIR="$out" \
		selftests/vm/run --kernel debug --no-kmemleak --timeout 300 -- true > "$log" 2>&1
	rc=$?
	if grep -q 'boot hang' "$log"; then
		hangs=$((hangs + 1))
		klog=$(sed -n 's/.*kernel console: \([^ ,]*\.klog\).*/\1/p' "$log" | tail -n 1)
		echo "boot $i: HANG (rc $rc, $(( $(date +%s) - s )) s); console $klog"
	else
		echo "boot $i: ok (rc $rc, $(( $(date +%s) - s )) s)"
	fi
done
echo "append: $append"
echo "$hangs hangs in $boots boots; logs in $out"
