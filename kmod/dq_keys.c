// SPDX-License-Identifier: GPL-2.0
/*
 * dq queues, application keys (DQ_SETUP_F_KEYS): the index from a key to
 * the slot holding its message (kmod/shared/dq_keys.h), and DQ_IOC_KEY.
 * The submit side's use of it (uniqueness, replace) is in dq_submit.c;
 * who may change what, and under which lock, is at struct dq_queue's key
 * fields (kmod/dq.h).
 */
#include <linux/mm.h>
#include <linux/overflow.h>
#include <linux/slab.h>

#include "dq.h"
#include "dq_trace.h"

static u64 dq_key_of(const void *owner, u32 slot)
{
	const struct dq_queue *q = owner;

	return q->recs[slot].user_data;
}

int dq_queue_keys_alloc(struct dq_queue *q, int node)
{
	struct dq_keys *k = &q->keys;

	spin_lock_init(&q->key_lock);
	if (!dq_queue_keyed(q))
		return 0;
	k->bits = dq_keys_bits(q->slot_count);
	k->head = kvzalloc_node(array_size(1UL << k->bits, sizeof(*k->head)),
				GFP_KERNEL_ACCOUNT, node);
	k->next = kvzalloc_node(array_size(q->slot_count, sizeof(*k->next)),
				GFP_KERNEL_ACCOUNT, node);
	if (!k->head || !k->next)
		return -ENOMEM;
	return 0;
}

void dq_queue_keys_free(struct dq_queue *q)
{
	kvfree(q->keys.head);
	kvfree(q->keys.next);
}

/* The slot holding @key, or U32_MAX.  submit_lock held. */
u32 dq_queue_key_find(struct dq_queue *q, u64 key)
	__must_hold(&q->submit_lock)
{
	u32 slot;

	lockdep_assert_held(&q->submit_lock);

	spin_lock_bh(&q->key_lock);
	slot = dq_keys_find(&q->keys, key, dq_key_of, q);
	spin_unlock_bh(&q->key_lock);
	return slot;
}

/*
 * Index @slot, just accepted (SUBMITTING: the submit side owns its state),
 * under its user_data; the caller found the key free.  submit_lock held.
 */
void dq_queue_key_add(struct dq_queue *q, u32 slot)
	__must_hold(&q->submit_lock)
{
	struct dq_wheel_node *n = &q->nodes[slot];

	lockdep_assert_held(&q->submit_lock);

	spin_lock_bh(&q->key_lock);
	dq_keys_add(&q->keys, slot, q->recs[slot].user_data);
	spin_unlock_bh(&q->key_lock);
	WRITE_ONCE(n->owner16, n->owner16 | DQ_REC_F_KEYED);
}

/*
 * @slot's message leaves dq (posted untracked, done, cancelled, replaced): its key is
 * free.  The caller owns the record's state (engine->lock or ready_lock,
 * so softirqs are off) and sets it FREE after this.
 */
void dq_queue_key_forget(struct dq_queue *q, u32 slot)
{
	struct dq_wheel_node *n = &q->nodes[slot];

	if (!(n->owner16 & DQ_REC_F_KEYED))
		return;
	spin_lock(&q->key_lock);
	WARN_ON_ONCE(!dq_keys_del(&q->keys, slot, q->recs[slot].user_data));
	spin_unlock(&q->key_lock);
	WRITE_ONCE(n->owner16, n->owner16 & ~DQ_REC_F_KEYED);
}

static u32 dq_key_state(const struct dq_wheel_node *n)
{
	switch (dq_rec_state(n)) {
	case DQ_MSG_PENDING:
	case DQ_MSG_SUBMITTING:
		return DQ_KEY_PENDING;
	case DQ_MSG_INFLIGHT:
		return DQ_KEY_INFLIGHT;
	default:
		return DQ_KEY_DUE;
	}
}

/**
 * dq_queue_key_op() - DQ_IOC_KEY
 * @q:  the queue
 * @op: a private copy of the argument; the out fields are filled
 *
 * Return: 0 or -errno as uapi/linux/dq.h documents.
 */
int dq_queue_key_op(struct dq_queue *q, struct dq_key_op *op)
{
	struct dq_msg_rec *r;
	u32 slot;
	int ret = 0;

	if (op->op > DQ_KEY_CANCEL || op->flags || op->resv)
		return -EINVAL;
	if (!dq_queue_keyed(q))
		return -EOPNOTSUPP;

	/* No submit between the look-up and the cancel: the key stays put. */
	mutex_lock(&q->submit_lock);
	slot = dq_queue_key_find(q, op->key);
	if (slot == U32_MAX) {
		ret = -ENOENT;
		goto out;
	}
	r = &q->recs[slot];
	op->handle = DQ_HANDLE(slot, r->gen);
	/* In the caller's clock (kmod/dq.h, "Time namespaces"). */
	op->due_ns = dq_time_shift(q->nodes[slot].due, dq_timens_mono_offset());
	op->state = dq_key_state(&q->nodes[slot]);
	if (op->op == DQ_KEY_CANCEL) {
		ret = dq_engine_cancel(q->engine, q, slot, r->gen, false);
		trace_dq_cancel(q->id, slot, r->gen, ret);
	}
out:
	mutex_unlock(&q->submit_lock);
	return ret;
}
