#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1 OR MIT
"""Summarise `perf script -F comm,ip,sym` output of a whole-system
cpu-clock recording (perf record -a -g) into where the CPU went.

Usage: vm_profile.py PROCESS_COMM_PREFIX < perf-script-output

Prints, in samples (one per sampling period of CPU time):
  - busy samples: the benchmark's process, the idle task's non-idle work
    (interrupts and softirqs taken while idle, the switch in and out of
    idle), everything else;
  - the process's samples by way in: the system call it was in (the
    outermost kernel frame below do_syscall_64), user space, faults and
    interrupts;
  - the callers of the clocksource read (read_hpet, read_tsc, ...);
  - what ran in hrtimer context (the timer functions);
  - the process's leaf functions.
"""
import collections
import sys

CLOCK_READS = ('read_hpet', 'read_tsc', 'acpi_pm_read', 'kvm_clock_read',
               'kvm_clock_get_cycles')
IDLE_LEAVES = ('native_safe_halt', 'default_idle', 'mwait_idle',
               'acpi_idle_do_entry', 'poll_idle')


def samples(stream):
    comm, frames = None, []
    for line in stream:
        line = line.rstrip('\n')
        if not line.strip():
            if comm is not None:
                yield comm, frames
            comm, frames = None, []
        elif not line[0].isspace():
            comm, frames = line.split()[0], []
        else:
            parts = line.split(None, 1)
            sym = parts[1] if len(parts) > 1 else parts[0]
            frames.append(sym.split('+')[0])
    if comm is not None:
        yield comm, frames


def way_in(frames):
    for i, name in enumerate(frames):
        if name == 'do_syscall_64':
            return 'syscall ' + (frames[i - 1] if i else '?')
        if name.startswith('asm_exc_'):
            return 'fault ' + name[len('asm_exc_'):]
        if name.startswith('asm_'):
            return 'interrupt ' + name[len('asm_'):]
    return 'user space'


def show(title, counter, n=None):
    print(title)
    for key, val in counter.most_common(n):
        print('  %7d  %s' % (val, key))


def main():
    prefix = sys.argv[1]
    busy = collections.Counter()
    ways = collections.Counter()
    clock = collections.Counter()
    timers = collections.Counter()
    leaves = collections.Counter()
    for comm, frames in samples(sys.stdin):
        ours = comm.startswith(prefix)
        if not ours and frames and frames[0] in IDLE_LEAVES:
            busy['idle (halted)'] += 1
            continue
        busy['the process' if ours else
             'idle task, not halted' if comm == 'swapper' else
             'other tasks'] += 1
        if frames and frames[0] in CLOCK_READS:
            clock[' < '.join(frames[1:5])] += 1
        if '__hrtimer_run_queues' in frames:
            i = frames.index('__hrtimer_run_queues')
            timers[frames[i - 1] if i else '(self)'] += 1
        if ours:
            ways[way_in(frames)] += 1
            leaves[frames[0] if frames else '?'] += 1
    show('samples', busy)
    show('the process, by way in', ways, 12)
    show('clocksource reads, by caller', clock, 10)
    show('hrtimer context, by timer function', timers, 8)
    show('the process, leaf functions', leaves, 25)


if __name__ == '__main__':
    main()
