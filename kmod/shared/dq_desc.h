/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * Submission descriptor validation, shared by dq.ko (kmod/dq_queue.c) and
 * libdqshim's user engine (user/src/dq_user.c) so that both backends
 * refuse the same descriptors with the same reason and errno.
 *
 * The caller copies the descriptor out of the shared submission ring once
 * and checks that private copy: user space may rewrite the ring at any
 * moment, so nothing here reads shared memory.  Whether the slot is free
 * (DQ_REJ_BUSY) and whether the queue is full (DQ_REJ_FULL) depend on each
 * backend's own state and stay with the caller.
 */
#ifndef DQ_DESC_H
#define DQ_DESC_H

#include <linux/errno.h>
#include <linux/types.h>

#include "linux/dq.h"

/* The first reason that applies, in the order the ABI documents. */
static inline bool dq_desc_reject(u32 *reason, u32 why)
{
	*reason = why;
	return false;
}

/**
 * dq_desc_valid() - check a private copy of a descriptor
 * @d:          the copy
 * @flags_ok:   the DQ_DESC_F_* this queue takes (DQ_DESC_F_ATTEMPTS only
 *              when it tracks delivery)
 * @slot_count: slots in the queue's arena
 * @slot_size:  bytes per slot
 * @now:        CLOCK_MONOTONIC now, ns; the base of relative due times
 * @due:        out: the absolute due time, when valid
 * @reason:     out: the first DQ_REJ_* reason that applies, when not, in
 *              the order the ABI documents (flags, reserved bits, slot,
 *              length, time)
 *
 * Return: true when the descriptor is valid.
 */
static inline bool dq_desc_valid(const struct dq_desc *d, u16 flags_ok,
				 u32 slot_count, u32 slot_size, u64 now,
				 u64 *due, u32 *reason)
{
	if ((d->flags & ~flags_ok) ||
	    ((d->flags & DQ_DESC_F_REPLACE) && !(d->flags & DQ_DESC_F_KEY)))
		return dq_desc_reject(reason, DQ_REJ_FLAGS);
	/* With DQ_DESC_F_ATTEMPTS resv is the attempt count. */
	if (d->resv && !(d->flags & DQ_DESC_F_ATTEMPTS))
		return dq_desc_reject(reason, DQ_REJ_RESV);
	if (d->slot >= slot_count)
		return dq_desc_reject(reason, DQ_REJ_SLOT);
	if (d->len > slot_size)
		return dq_desc_reject(reason, DQ_REJ_LEN);
	if (d->flags & DQ_DESC_F_RELATIVE) {
		if (d->due_ns > DQ_MAX_DELAY_NS)
			return dq_desc_reject(reason, DQ_REJ_TIME);
		*due = now + d->due_ns;
	} else {
		/* A due time in the past is valid: it is due now. */
		if (d->due_ns > now && d->due_ns - now > DQ_MAX_DELAY_NS)
			return dq_desc_reject(reason, DQ_REJ_TIME);
		*due = d->due_ns;
	}
	return true;
}

/* The descriptor flags a queue created with @setup_flags takes. */
static inline u16 dq_desc_flags_ok(u32 setup_flags)
{
	u16 ok = DQ_DESC_F_RELATIVE;

	if (setup_flags & DQ_SETUP_F_TRACK)
		ok |= DQ_DESC_F_ATTEMPTS;
	if (setup_flags & DQ_SETUP_F_KEYS)
		ok |= DQ_DESC_F_KEY | DQ_DESC_F_REPLACE;
	return ok;
}

/* The errno a dq_reject carries for each reason (negative, as returned). */
static inline int dq_reject_errno(u32 reason)
{
	switch (reason) {
	case DQ_REJ_SLOT:
		return -ERANGE;
	case DQ_REJ_LEN:
		return -EMSGSIZE;
	case DQ_REJ_FLAGS:
		return -EOPNOTSUPP;
	case DQ_REJ_RESV:
		return -EINVAL;
	case DQ_REJ_TIME:
		return -EOVERFLOW;
	case DQ_REJ_BUSY:
		return -EBUSY;
	case DQ_REJ_FULL:
		return -ENOSPC;
	case DQ_REJ_KEY:
		return -EEXIST;	/* the submit side says -ENOENT or -EBUSY */
	default:
		return -EINVAL;
	}
}

#endif /* DQ_DESC_H */
