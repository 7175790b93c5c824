/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * A message's private record, one per arena slot, shared by dq.ko's engine
 * (kmod/dq.h) and libdqshim's user engine (user/src/dq_user.c): the copy
 * of the descriptor the slot last accepted, its place in the timing wheel,
 * and the intake and cancel steps that read and change it.  Shared memory
 * is never read again once a descriptor is here.
 *
 * The record is in two parts, in two arrays indexed alike: what the wheel
 * and the hot path touch, a 24-byte struct dq_wheel_node (due time, wheel
 * links; owner16: state and flags, owner32: payload length), and what
 * only intake, hand-out and DONE read, a 16-byte struct dq_msg_rec.
 *
 * Locking: the record belongs to its engine's lock (dq.ko: the node
 * engine's spinlock, and a queue's ready_lock once it has left the wheel;
 * user engine: its mutex), except the state, which dq.ko's submit side
 * reads without it to refuse a busy slot: hence READ_ONCE/WRITE_ONCE.  A
 * slot leaves DQ_MSG_FREE only under the queue's submit lock, so that read
 * cannot race with another intake.  The functions named _locked need the
 * engine's lock; lockdep cannot be asked here (user space has none): the
 * callers take it or assert it.
 */
#ifndef DQ_MSG_H
#define DQ_MSG_H

#include <linux/compiler.h>
#include <linux/errno.h>
#include <linux/limits.h>
#include <linux/types.h>

#include "linux/dq.h"
#include "dq_desc.h"
#include "dq_wheel.h"

/*
 * Where a slot's message is, in the low byte of dq_wheel_node.owner16.
 * The user engine uses FREE, PENDING and INFLIGHT only; dq.ko's locks for
 * each change, and for the node's links in each state, are listed in
 * kmod/dq.h ("Kernel-private copy of an accepted descriptor").
 */
enum dq_msg_state {
	DQ_MSG_FREE,		/* user space owns the slot */
	DQ_MSG_SUBMITTING,	/* claimed by a submit in progress */
	DQ_MSG_PENDING,		/* in the engine's wheel, not yet due */
	DQ_MSG_BACKLOG,		/* due, waiting for room on the ready ring */
	DQ_MSG_PACED,		/* due, waiting for a pacing token, a
				 * delivery credit or a consumer
				 */
	DQ_MSG_INFLIGHT,	/* released on a tracked queue, not yet done */
};

#define DQ_REC_STATE_MASK	0xffU
#define DQ_REC_F_GEN		0x100U	/* a descriptor was ever accepted */
#define DQ_REC_F_KEYED		0x200U	/* in the queue's key index; changed
					 * only by the owner of the state
					 */

/*
 * The cold part: 16 bytes.  A tracked queue's record keeps attempts and
 * redeliveries for the ready entry and DONE; on other queues they stay 0.
 * Under the same locks as the node of the same slot.
 */
struct dq_msg_rec {
	u64 user_data;
	u32 gen;			/* of the last accepted descriptor */
	u16 attempts;			/* as submitted (DQ_DESC_F_ATTEMPTS) */
	u16 redeliveries;		/* releases after the first */
};

static inline enum dq_msg_state dq_rec_state(const struct dq_wheel_node *n)
{
	return (enum dq_msg_state)(READ_ONCE(n->owner16) & DQ_REC_STATE_MASK);
}

/* Only under the locks that own the record: the read is not racy. */
static inline void dq_rec_set_state(struct dq_wheel_node *n,
				    enum dq_msg_state s)
{
	WRITE_ONCE(n->owner16, (n->owner16 & ~DQ_REC_STATE_MASK) | s);
}

/*
 * The _gen helpers take the cold record's fields rather than the record:
 * libdqshim's engine keeps them in a smaller record of its own (it never
 * redelivers, and only its tracked queues keep attempts).
 */
static inline bool dq_rec_gen_is(const struct dq_wheel_node *n, u32 rec_gen,
				 u32 gen)
{
	return (n->owner16 & DQ_REC_F_GEN) && rec_gen == gen;
}

static inline bool dq_rec_has_gen(const struct dq_wheel_node *n,
				  const struct dq_msg_rec *r, u32 gen)
{
	return dq_rec_gen_is(n, r->gen, gen);
}

/* The accepted descriptor's payload length. */
static inline u32 dq_rec_len(const struct dq_wheel_node *n)
{
	return n->owner32;
}

/*
 * The intake's last check, after dq_desc_valid() (which proved d->slot in
 * range, so the caller could find @r): a slot holds one message at a time.
 */
static inline bool dq_rec_may_take(const struct dq_wheel_node *n,
				   u32 *reason)
{
	if (dq_rec_state(n) != DQ_MSG_FREE)
		return dq_desc_reject(reason, DQ_REJ_BUSY);
	return true;
}

/* The node's part of dq_rec_accept(); the caller fills the cold part. */
static inline void dq_rec_accept_node(struct dq_wheel_node *n,
				      const struct dq_desc *d, u64 due,
				      enum dq_msg_state s)
{
	WRITE_ONCE(n->owner16, DQ_REC_F_GEN | s);
	n->due = due;
	n->owner32 = d->len;
}

/* The attempt count an accepted descriptor carries (0 without the flag). */
static inline u16 dq_desc_attempts(const struct dq_desc *d)
{
	return d->flags & DQ_DESC_F_ATTEMPTS ? d->resv : 0;
}

/* Copy an accepted descriptor into its slot's record, in state @s. */
static inline void dq_rec_accept(struct dq_wheel_node *n, struct dq_msg_rec *r,
				 const struct dq_desc *d, u64 due,
				 enum dq_msg_state s)
{
	dq_rec_accept_node(n, d, due, s);
	r->user_data = d->user_data;
	r->gen = d->gen;
	r->attempts = dq_desc_attempts(d);
	r->redeliveries = 0;
}

/* What a refused descriptor reports to its submitter. */
static inline struct dq_reject dq_reject_of(u32 index, u32 reason,
					    const struct dq_desc *d)
{
	struct dq_reject rej = {
		.index = index,
		.reason = reason,
		.error = dq_reject_errno(reason),
		.slot = d->slot,
		.user_data = d->user_data,
	};

	return rej;
}

/*
 * Take record @idx's message out of the wheel if it is there; true when it
 * was (the slot is free again).  The caller holds the engine's lock.
 */
static inline bool dq_rec_unwheel_locked(struct dq_wheel *w, u32 idx)
{
	struct dq_wheel_node *n = dq_wheel_node(w, idx);

	if (dq_rec_state(n) != DQ_MSG_PENDING)
		return false;
	dq_wheel_remove(w, idx);
	dq_rec_set_state(n, DQ_MSG_FREE);
	return true;
}

/**
 * dq_rec_cancel_locked() - take a pending message out of the wheel
 * @w:   the engine's wheel
 * @idx: the slot's record in the wheel
 * @r:   the slot's cold record
 * @gen: the generation the canceller holds
 *
 * The caller holds the engine's lock and counts what it took.
 *
 * Return: 0 when the message was pending and its slot is free again;
 * -ENOENT when the slot never held a message of this generation (or has
 * taken a newer one); -EALREADY when it is no longer in the wheel (due:
 * dq.ko may still hold it in a backlog or for pacing, see its
 * dq_engine_cancel()).
 */
static inline int dq_rec_cancel_locked(struct dq_wheel *w, u32 idx,
				       const struct dq_msg_rec *r, u32 gen)
{
	if (!dq_rec_has_gen(dq_wheel_node(w, idx), r, gen))
		return -ENOENT;
	return dq_rec_unwheel_locked(w, idx) ? 0 : -EALREADY;
}

/**
 * dq_rec_done_check() - may this DONE entry finish the record's delivery?
 * @n: the node of the entry's slot (the caller checked the range)
 * @r: its cold record
 * @d: a private copy of the entry
 *
 * The caller holds the lock that owns in-flight records (dq.ko: the
 * queue's ready_lock; user engine: its mutex).
 *
 * Return: 0 when it may; -EINVAL for an unknown outcome; -ENOENT when the
 * slot never held a message of this generation; -EALREADY when the
 * message is not in flight; -ESTALE when it is, but was released again
 * since the delivery @d names.
 */
static inline int dq_rec_done_check_gen(const struct dq_wheel_node *n,
					u32 rec_gen, u16 rec_redeliveries,
					const struct dq_done *d)
{
	if (d->outcome >= DQ_DONE_NR)
		return -EINVAL;
	if (!dq_rec_gen_is(n, rec_gen, DQ_HANDLE_GEN(d->handle)))
		return -ENOENT;
	if (dq_rec_state(n) != DQ_MSG_INFLIGHT)
		return -EALREADY;
	if (rec_redeliveries != d->redeliveries)
		return -ESTALE;
	return 0;
}

static inline int dq_rec_done_check(const struct dq_wheel_node *n,
				    const struct dq_msg_rec *r,
				    const struct dq_done *d)
{
	return dq_rec_done_check_gen(n, r->gen, r->redeliveries, d);
}

/* Released once more (a tracked queue's consumer went away). */
static inline void dq_rec_redeliver(struct dq_msg_rec *r)
{
	if (r->redeliveries < U16_MAX)
		r->redeliveries++;
}

#endif /* DQ_MSG_H */
