/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * DQ_IOC_SETUP's argument checks and defaults, shared by dq.ko
 * (kmod/dq_queue.c) and libdqshim's embedded engine (user/src/dq_queue.c),
 * so that a queue has the same shape on both backends.  What depends on
 * the backend stays with it: which NUMA nodes exist, and dq.ko's
 * max_arena_bytes limit.
 */
#ifndef DQ_SETUP_H
#define DQ_SETUP_H

#include <linux/align.h>
#include <linux/errno.h>
#include <linux/kernel.h>
#include <linux/log2.h>
#include <linux/minmax.h>
#include <linux/types.h>

#include "linux/dq.h"

/*
 * Ring sizes when the caller leaves them 0: one entry per slot, bounded.
 *
 * The ready ring only holds what the consumer has not read yet; due
 * messages that find it full wait in the kernel's backlog (no memory of
 * their own: the records are linked through their wheel nodes) and move
 * onto it when the consumer makes room (WAIT, poll).  A bigger ring saves one such refill, one
 * system call, per ring-full of messages: at 4096 that is under 1 ns per
 * message against a syscall of a few us, while one entry per slot would
 * cost 32 B (48 B tracked) per slot, up to 32 MiB a queue, for nothing
 * the consumer could not have from the backlog.  4096 entries also bound
 * the records a refill moves with softirqs off (4 release budgets) and
 * keep the ring (128 KiB, 192 KiB tracked) in the consumer's cache.
 */
#define DQ_DEFAULT_SUBMIT_ENTRIES	1024U
#define DQ_DEFAULT_READY_ENTRIES	4096U
#define DQ_MIN_DEFAULT_ENTRIES		64U

/* What slot_size is rounded up to, for the setup flags @flags. */
static inline u32 dq_setup_slot_align(u32 flags)
{
	return flags & DQ_SETUP_F_SLOT_ALIGN8 ? 8 : 64;
}

/**
 * dq_setup_normalise() - check a private copy of struct dq_setup's input
 * @s: the copy; on success its sizes are the queue's (slot_size rounded up
 *     to 64, or to 8 with DQ_SETUP_F_SLOT_ALIGN8, rings to powers of two,
 *     0s replaced by the defaults)
 *
 * Return: 0, or -EINVAL for an unknown flag, a non-zero reserved field,
 * max_inflight or visibility_ns without DQ_SETUP_F_TRACK, or a value
 * outside the range
 * uapi/linux/dq.h gives.
 */
static inline int dq_setup_normalise(struct dq_setup *s)
{
	unsigned int i;

	if (s->flags & ~DQ_SETUP_F_ALL)
		return -EINVAL;
	if (s->max_inflight && (!(s->flags & DQ_SETUP_F_TRACK) ||
				s->max_inflight > DQ_MAX_SLOTS))
		return -EINVAL;
	if (s->visibility_ns && (!(s->flags & DQ_SETUP_F_TRACK) ||
				 s->visibility_ns < DQ_MIN_VISIBILITY_NS ||
				 s->visibility_ns > DQ_MAX_DELAY_NS))
		return -EINVAL;
	if (s->instance)
		return -EINVAL;
	for (i = 0; i < ARRAY_SIZE(s->resv2); i++)
		if (s->resv2[i])
			return -EINVAL;
	if (!s->slot_count || s->slot_count > DQ_MAX_SLOTS)
		return -EINVAL;
	if (s->slot_size < DQ_MIN_SLOT_SIZE || s->slot_size > DQ_MAX_SLOT_SIZE)
		return -EINVAL;
	if (s->submit_entries > DQ_MAX_RING_ENTRIES ||
	    s->ready_entries > DQ_MAX_RING_ENTRIES)
		return -EINVAL;
	if (s->granularity_ns > DQ_MAX_GRANULARITY_NS || s->numa_node < -1)
		return -EINVAL;

	/*
	 * 64 keeps every slot on cache lines of its own; 8 (opt-in) saves
	 * up to 56 bytes a slot and still keeps payloads 8-byte aligned,
	 * which is all the library and the journal need of them.
	 */
	s->slot_size = ALIGN(s->slot_size, dq_setup_slot_align(s->flags));
	if (!s->submit_entries)
		s->submit_entries = clamp(s->slot_count, DQ_MIN_DEFAULT_ENTRIES,
					  DQ_DEFAULT_SUBMIT_ENTRIES);
	if (!s->ready_entries)
		s->ready_entries = clamp(s->slot_count, DQ_MIN_DEFAULT_ENTRIES,
					 DQ_DEFAULT_READY_ENTRIES);
	s->submit_entries = roundup_pow_of_two(s->submit_entries);
	s->ready_entries = roundup_pow_of_two(s->ready_entries);
	if (!s->granularity_ns)
		s->granularity_ns = DQ_DEFAULT_GRANULARITY_NS;
	return 0;
}

#endif /* DQ_SETUP_H */
