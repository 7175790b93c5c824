// SPDX-License-Identifier: GPL-2.0
/*
 * dq queues, the submit side: everything under a queue's submit_lock.
 * Each descriptor is read once from the shared submit ring into a private
 * copy, validated (kmod/shared/dq_desc.h, the same checks as libdqshim's
 * embedded engine), copied into the slot's private record and handed to
 * the node's engine in batches; cancel goes to the engine too.
 *
 * Memory ordering with user space (the submit ring): the kernel
 * load-acquires the producer index, copies the descriptors, then
 * store-releases the consumer index (the entries may be reused); it keeps
 * its own consumer index (sq_cons) and never reads it back from shared
 * memory.
 */
#include <linux/ktime.h>
#include <linux/uaccess.h>

#include "dq.h"
#include "dq_compat.h"
#include "dq_desc.h"
#include "dq_trace.h"

/* One u64 bitmap of relative descriptors per chunk. */
#define DQ_SUBMIT_CHUNK			64U

/*
 * Validate one private copy of a descriptor: true when it may be taken,
 * else false with the DQ_REJ_* reason.  VISIBLE_IF_KUNIT: tested by
 * kmod/tests/dq_kunit.c.
 */
VISIBLE_IF_KUNIT bool dq_desc_check(struct dq_queue *q, const struct dq_desc *d,
				    u64 now, u64 *due, u32 *reason)
{
	return dq_desc_valid(d, dq_desc_flags_ok(q->flags), q->slot_count,
			     q->slot_size, now, due, reason) &&
	       dq_rec_may_take(&q->nodes[d->slot], reason);
}
EXPORT_SYMBOL_IF_KUNIT(dq_desc_check);

/* Tell the events group when the queue fills up; submit_lock held. */
static void dq_queue_watermark_locked(struct dq_queue *q)
	__must_hold(&q->submit_lock)
{
	s64 held = atomic64_read(&q->held);
	u32 wm = READ_ONCE(q->high_wm);

	lockdep_assert_held(&q->submit_lock);

	if (q->rejected[DQ_REJ_FULL] != q->full_seen) {
		q->full_seen = q->rejected[DQ_REJ_FULL];
		dq_netlink_event(q, DQ_EVENT_FULL);
	}
	if (!wm || held < wm) {
		q->wm_fired = false;
	} else if (!q->wm_fired) {
		q->wm_fired = true;
		dq_netlink_event(q, DQ_EVENT_HIGH_WM);
	}
}

/* Descriptors accepted, not yet handed to the engine; submit_lock. */
struct dq_submit_batch {
	u32 slots[DQ_SUBMIT_CHUNK];
	unsigned int n;
	u64 relative;			/* bit i: slots[i] had F_RELATIVE */
	u64 now;			/* the base of their relative times */
};

static void dq_submit_batch_flush(struct dq_queue *q, struct dq_submit *args,
				  struct dq_submit_batch *b)
	__must_hold(&q->submit_lock)
{
	lockdep_assert_held(&q->submit_lock);

	if (!b->n)
		return;
	atomic64_add(b->n, &q->held);
	dq_engine_insert(q->engine, q, b->slots, b->n, b->relative, b->now);
	args->accepted += b->n;
	WRITE_ONCE(q->submitted, q->submitted + b->n);
	b->n = 0;
	b->relative = 0;
}

/* Hand one slot back through the rejects array (a reject or DQ_REPLACED). */
static int dq_submit_report(struct dq_submit *args,
			    struct dq_reject __user *rejects,
			    const struct dq_reject *rej)
{
	int ret = 0;

	if (args->rejected < args->reject_cap &&
	    copy_to_user(&rejects[args->rejected], rej, sizeof(*rej)))
		ret = -EFAULT;
	args->rejected++;
	return ret;
}

/*
 * The key step of a DQ_DESC_F_KEY descriptor @d, valid otherwise: 0 when
 * it may be accepted (a replaced message is then back in user space and
 * *@replaced describes it), else the errno of its DQ_REJ_KEY reject.
 */
static int dq_submit_key(struct dq_queue *q, struct dq_submit *args,
			 struct dq_submit_batch *b, const struct dq_desc *d,
			 u32 index, struct dq_reject *replaced)
	__must_hold(&q->submit_lock)
{
	u32 slot = dq_queue_key_find(q, d->user_data);
	u32 gen;

	if (!(d->flags & DQ_DESC_F_REPLACE))
		return slot == U32_MAX ? 0 : -EEXIST;
	if (slot == U32_MAX)
		return -ENOENT;
	gen = q->recs[slot].gen;
	/* Accepted earlier in this submit: in the engine first, then back. */
	if (dq_rec_state(&q->nodes[slot]) == DQ_MSG_SUBMITTING)
		dq_submit_batch_flush(q, args, b);
	/* Posted meanwhile, or in flight: the new one may not go in. */
	if (dq_engine_cancel(q->engine, q, slot, gen, true))
		return -EBUSY;
	trace_dq_cancel(q->id, slot, gen, 0);
	*replaced = (struct dq_reject){
		.index = index,
		.reason = DQ_REPLACED,
		.slot = slot,
		.user_data = d->user_data,
	};
	return 0;
}

int dq_queue_submit(struct dq_queue *q, struct dq_submit *args,
		    struct dq_reject __user *rejects, bool nowait)
{
	struct dq_submit_batch b = { .n = 0 };
	u32 prod, avail, done = 0;
	int ret = 0;

	if (args->flags || args->resv)
		return -EINVAL;
	/*
	 * The ring's due times are in the queue's clock, and anyone with
	 * the mapping may have written them: a submitter whose clock is
	 * another cannot vouch for them (kmod/dq.h, "Time namespaces").
	 */
	if (unlikely(!dq_queue_same_clock(q)))
		return -EXDEV;
	args->accepted = 0;
	args->rejected = 0;

	if (!nowait)
		mutex_lock(&q->submit_lock);
	else if (!mutex_trylock(&q->submit_lock))
		return -EAGAIN;
	if (READ_ONCE(q->dead)) {
		ret = -ENODEV;
		goto out;
	}
	/* Pairs with user space's store-release after writing descriptors. */
	prod = smp_load_acquire(&q->sq_hdr->producer);
	avail = prod - q->sq_cons;
	if (avail > q->sq_entries) {
		atomic64_inc(&q->ring_errors);
		WRITE_ONCE(q->sq_hdr->flags, DQ_RING_F_BROKEN);
		ret = -EPROTO;
		goto out;
	}
	if (args->max && avail > args->max)
		avail = args->max;

	while (done < avail) {
		unsigned int todo = min(avail - done, DQ_SUBMIT_CHUNK);

		b.now = ktime_get_ns();
		for (; todo; todo--, done++, q->sq_cons++) {
			struct dq_reject replaced = { .reason = 0 };
			u32 index = q->sq_cons;
			struct dq_desc d;
			int key_err = 0;
			u64 due = 0;
			u32 reason;
			bool ok;

			/* The only read of this descriptor. */
			memcpy(&d, &q->sq_ring[index & (q->sq_entries - 1)],
			       sizeof(d));
			/* The queue's clock -> the host's, before any check. */
			if (!(d.flags & DQ_DESC_F_RELATIVE))
				d.due_ns = dq_time_shift(d.due_ns, -q->mono_off);
			ok = dq_desc_check(q, &d, b.now, &due, &reason);
			/* A replace takes a slot and gives one back. */
			if (ok && !(d.flags & DQ_DESC_F_REPLACE) &&
			    atomic64_read(&q->held) + b.n >=
			    READ_ONCE(q->max_pending))
				ok = dq_desc_reject(&reason, DQ_REJ_FULL);
			if (ok && (d.flags & DQ_DESC_F_KEY)) {
				key_err = dq_submit_key(q, args, &b, &d, index,
							&replaced);
				if (key_err)
					ok = dq_desc_reject(&reason, DQ_REJ_KEY);
			}
			if (!ok) {
				struct dq_reject rej = dq_reject_of(index, reason,
								    &d);

				if (key_err)
					rej.error = key_err;
				/* Lockless readers: dq_queue_stats(). */
				WRITE_ONCE(q->rejected[reason],
					   q->rejected[reason] + 1);
				trace_dq_reject(q->id, index, reason, rej.error,
						d.slot, d.user_data);
				if (dq_submit_report(args, rejects, &rej))
					ret = -EFAULT;
				continue;
			}
			if (replaced.reason == DQ_REPLACED &&
			    dq_submit_report(args, rejects, &replaced))
				ret = -EFAULT;
			dq_rec_accept(&q->nodes[d.slot], &q->recs[d.slot], &d, due,
				      DQ_MSG_SUBMITTING);
			if (d.flags & DQ_DESC_F_KEY)
				dq_queue_key_add(q, d.slot);
			if (d.flags & DQ_DESC_F_RELATIVE)
				b.relative |= BIT_ULL(b.n);
			b.slots[b.n++] = d.slot;
		}
		dq_submit_batch_flush(q, args, &b);
	}
	/* Copied: user space may reuse the entries (its load-acquire). */
	smp_store_release(&q->sq_hdr->consumer, q->sq_cons);
	dq_queue_watermark_locked(q);
out:
	mutex_unlock(&q->submit_lock);
	if (ret)
		return ret;
	return args->accepted;
}
EXPORT_SYMBOL_IF_KUNIT(dq_queue_submit);

int dq_queue_cancel(struct dq_queue *q, const struct dq_cancel *args)
{
	u32 slot = DQ_HANDLE_SLOT(args->handle);
	u32 gen = DQ_HANDLE_GEN(args->handle);
	int ret;

	if (args->resv)
		return -EINVAL;
	ret = dq_engine_cancel(q->engine, q, slot, gen, false);
	trace_dq_cancel(q->id, slot, gen, ret);
	return ret;
}
EXPORT_SYMBOL_IF_KUNIT(dq_queue_cancel);
