// SPDX-License-Identifier: GPL-2.0
/*
 * dq queues, delivery tracking (DQ_SETUP_F_TRACK): messages in flight,
 * DONE, delivery credits, the consumer file and redelivery when it goes.
 *
 * Everything here is under the queue's ready_lock, which already owns a
 * record from the moment it is due: a tracked record goes PACED (waiting
 * for a token, a credit or a consumer) -> BACKLOG -> INFLIGHT (on the
 * ready ring) -> FREE (DONE), or back to PACED when its consumer's file
 * is released.  The ready ring belongs to one consumer at a time, so
 * whoever the kernel posted a message to is who holds it: that is what
 * makes "redeliver what a dead consumer held" exact.
 */
#include <linux/ktime.h>
#include <linux/poll.h>
#include <linux/uaccess.h>

#include "dq.h"
#include "dq_trace.h"

/* DONE entries copied in at once: the stack frame stays small. */
#define DQ_DONE_CHUNK	32U

/*
 * May a due record of @q go to the ready ring now?  Untracked queues
 * always; tracked ones need a consumer and, with a cap, a credit: the
 * backlog counts because its records are on their way to that consumer.
 */
bool dq_queue_credit_locked(struct dq_queue *q)
	__must_hold(&q->ready_lock)
{
	lockdep_assert_held(&q->ready_lock);

	if (!dq_queue_tracked(q))
		return true;
	if (!q->consumer)
		return false;
	return !q->max_inflight ||
	       q->inflight_len + q->backlog_len < q->max_inflight;
}

/*
 * Arm the visibility timer for the oldest message in flight, unless it is
 * armed already (for that one or an older one that since got its DONE: it
 * then fires early, finds nothing expired and re-arms).
 */
static void dq_vis_arm_locked(struct dq_queue *q)
	__must_hold(&q->ready_lock)
{
	lockdep_assert_held(&q->ready_lock);

	if (!q->visibility_ns || dq_ilist_empty(&q->inflight) ||
	    hrtimer_is_queued(&q->vis_timer))
		return;
	hrtimer_start(&q->vis_timer,
		      ns_to_ktime(q->released_at[q->inflight.head] +
				  q->visibility_ns),
		      HRTIMER_MODE_ABS_SOFT);
}

/* @slot was just posted on the ready ring of tracked @q: it is in flight. */
void dq_queue_inflight_locked(struct dq_queue *q, u32 slot, u64 now)
	__must_hold(&q->ready_lock)
{
	lockdep_assert_held(&q->ready_lock);

	dq_rec_set_state(&q->nodes[slot], DQ_MSG_INFLIGHT);
	dq_qlist_add_tail(q, &q->inflight, slot);
	q->inflight_len++;
	q->released_at[slot] = now;
	dq_vis_arm_locked(q);
}

/*
 * Post what waits on @q's paced list and is now allowed (a credit came
 * back, a consumer arrived, the cap rose), then wake its readers.
 * Returns with ready_lock dropped.
 */
static void dq_track_repost_unlock(struct dq_queue *q)
	__releases(&q->ready_lock)
{
	u64 now = ktime_get_ns();
	u32 before = q->rq_prod;

	lockdep_assert_held(&q->ready_lock);

	dq_pace_release_locked(q, now);
	dq_queue_publish_locked(q);
	if (q->rq_prod != before) {
		trace_dq_release(q->id, q->node, q->rq_prod - before, 0, 0, now);
		dq_queue_wake_locked(q);
	}
	spin_unlock_bh(&q->ready_lock);
	if (q->rq_prod != before)
		wake_up_interruptible_poll(&q->wait, EPOLLIN | EPOLLRDNORM);
}

/* One DONE entry, a private copy; 0 or its -errno. */
static int dq_track_done_one(struct dq_queue *q, const struct dq_done *d,
			     u64 now)
	__must_hold(&q->ready_lock)
{
	u32 slot = DQ_HANDLE_SLOT(d->handle);
	int ret;

	lockdep_assert_held(&q->ready_lock);

	if (d->outcome >= DQ_DONE_NR)
		ret = -EINVAL;
	else if (slot >= q->slot_count)
		ret = -ENOENT;
	else
		ret = dq_rec_done_check(&q->nodes[slot], &q->recs[slot], d);
	trace_dq_done(q->id, slot, DQ_HANDLE_GEN(d->handle), d->outcome, ret,
		      now);
	if (ret) {
		q->done_refused++;
		return ret;
	}
	dq_qlist_del(q, &q->inflight, slot);
	q->inflight_len--;
	if (d->outcome == DQ_DONE_DELIVERED)
		q->done_delivered++;
	else
		q->done_failed++;
	atomic64_dec(&q->held);
	dq_queue_key_forget(q, slot);
	/* Last: from here the submit side may take the slot again. */
	dq_rec_set_state(&q->nodes[slot], DQ_MSG_FREE);
	return 0;
}

/**
 * dq_queue_done() - DQ_IOC_DONE and DQ_URING_CMD_DONE
 * @q:        the queue
 * @consumer: the calling file (its struct dq_file)
 * @args:     a private copy of the batch; ->done is set
 *
 * Return: entries accepted, or -errno as uapi/linux/dq.h documents.
 */
int dq_queue_done(struct dq_queue *q, const void *consumer,
		  struct dq_done_batch *args)
{
	struct dq_done __user *udones = u64_to_user_ptr(args->dones);
	struct dq_done chunk[DQ_DONE_CHUNK];
	u32 at = 0;

	args->done = 0;
	if (args->flags || args->resv)
		return -EINVAL;
	if (!dq_queue_tracked(q))
		return -EOPNOTSUPP;
	/* Only this file's own release can change it from this file. */
	if (READ_ONCE(q->consumer) != consumer)
		return -EPERM;

	while (at < args->nr) {
		u32 i, n = min(args->nr - at, DQ_DONE_CHUNK);
		u32 accepted = 0;
		u64 now;

		if (copy_from_user(chunk, &udones[at], n * sizeof(chunk[0])))
			return -EFAULT;
		spin_lock_bh(&q->ready_lock);
		now = ktime_get_ns();
		for (i = 0; i < n; i++) {
			chunk[i].result = dq_track_done_one(q, &chunk[i], now);
			if (!chunk[i].result)
				accepted++;
		}
		args->done += accepted;
		if (accepted)
			dq_track_repost_unlock(q);
		else
			spin_unlock_bh(&q->ready_lock);
		for (i = 0; i < n; i++)
			if (put_user(chunk[i].result, &udones[at + i].result))
				return -EFAULT;
		at += n;
	}
	return args->done;
}

/*
 * The visibility timer: messages in flight for visibility_ns go back to
 * the front of the paced list, oldest first (they were released before
 * anything waiting there), with their redeliveries one higher, and are
 * posted again as credits allow.  Their earlier deliveries' DONEs are
 * refused with -ESTALE from now on.
 */
enum hrtimer_restart dq_vis_timer_fn(struct hrtimer *timer)
{
	struct dq_queue *q = container_of(timer, struct dq_queue, vis_timer);
	u64 now = ktime_get_ns(), n = 0;
	struct dq_ilist expired;

	dq_ilist_init(&expired);
	spin_lock(&q->ready_lock);
	/* Release order is age order: the expired are a prefix. */
	while (!dq_ilist_empty(&q->inflight)) {
		u32 slot = q->inflight.head;
		struct dq_msg_rec *r = &q->recs[slot];

		if (q->released_at[slot] + q->visibility_ns > now)
			break;
		dq_qlist_pop(q, &q->inflight);
		dq_rec_redeliver(r);
		dq_rec_set_state(&q->nodes[slot], DQ_MSG_PACED);
		dq_qlist_add_tail(q, &expired, slot);
		trace_dq_redeliver(q->id, slot, r->gen, r->redeliveries);
		n++;
	}
	q->inflight_len -= n;
	q->paced_len += n;
	q->expired += n;
	/* In front of what waits there: released before all of it. */
	dq_qlist_splice_tail(q, &expired, &q->paced);
	q->paced = expired;
	/* From softirq: _unlock's spin_unlock_bh would be wrong here. */
	if (n) {
		u32 before = q->rq_prod;

		dq_pace_release_locked(q, now);
		dq_queue_publish_locked(q);
		if (q->rq_prod != before) {
			trace_dq_release(q->id, q->node, q->rq_prod - before,
					 0, 0, now);
			dq_queue_wake_locked(q);
		}
	}
	dq_vis_arm_locked(q);
	spin_unlock(&q->ready_lock);
	if (n)
		wake_up_interruptible_poll(&q->wait, EPOLLIN | EPOLLRDNORM);
	return HRTIMER_NORESTART;
}

int dq_queue_set_inflight(struct dq_queue *q, u32 max_inflight)
{
	if (!dq_queue_tracked(q))
		return -EINVAL;
	spin_lock_bh(&q->ready_lock);
	WRITE_ONCE(q->max_inflight, max_inflight);
	dq_track_repost_unlock(q);
	return 0;
}

/*
 * Make @consumer the queue's consumer: what waited for one goes out.
 * -EINVAL for an untracked queue, -EBUSY when another file is it.
 */
int dq_queue_claim_consumer(struct dq_queue *q, const void *consumer)
{
	if (!dq_queue_tracked(q))
		return -EINVAL;
	spin_lock_bh(&q->ready_lock);
	if (q->consumer) {
		spin_unlock_bh(&q->ready_lock);
		return -EBUSY;
	}
	WRITE_ONCE(q->consumer, consumer);
	dq_track_repost_unlock(q);
	return 0;
}

/*
 * @consumer's file is being released.  If it was the queue's consumer,
 * everything it held is redelivered: the records in flight (read from
 * the ring or not) in release order, then the backlog, then what already
 * waited, all on the paced list in that order, where the next consumer's
 * credits take them from.  Nobody reads the ring now: it restarts empty.
 */
void dq_queue_consumer_gone(struct dq_queue *q, const void *consumer)
{
	struct dq_ilist again;
	u32 slot;

	if (!dq_queue_tracked(q))
		return;
	spin_lock_bh(&q->ready_lock);
	if (q->consumer != consumer) {
		spin_unlock_bh(&q->ready_lock);
		return;
	}
	WRITE_ONCE(q->consumer, NULL);

	/* Walked in place, ready_lock held: each a slot, linked by slot. */
	for (slot = q->inflight.head; slot < DQ_WHEEL_END;
	     slot = q->nodes[slot].next) {
		struct dq_msg_rec *r = &q->recs[slot];

		dq_rec_redeliver(r);
		dq_rec_set_state(&q->nodes[slot], DQ_MSG_PACED);
		trace_dq_redeliver(q->id, slot, r->gen, r->redeliveries);
	}
	for (slot = q->backlog.head; slot < DQ_WHEEL_END;
	     slot = q->nodes[slot].next)
		dq_rec_set_state(&q->nodes[slot], DQ_MSG_PACED);
	q->redelivered += q->inflight_len;
	dq_ilist_init(&again);
	dq_qlist_splice_tail(q, &again, &q->inflight);
	dq_qlist_splice_tail(q, &again, &q->backlog);
	dq_qlist_splice_tail(q, &again, &q->paced);
	q->paced = again;
	q->paced_len += q->inflight_len + q->backlog_len;
	q->inflight_len = 0;
	q->backlog_len = 0;
	dq_ready_flags_sync_locked(q);
	WRITE_ONCE(q->rq_hdr->consumer, q->rq_prod);
	spin_unlock_bh(&q->ready_lock);
}

/*
 * The delivery counters; oldest_ns in the clock @clock_off from the
 * host's (the caller's: dq_timens_mono_offset()), at least 1 (0 is
 * "none") if that clock began after the release.
 */
void dq_queue_track_stats(struct dq_queue *q, struct dq_track_stats *st,
			  s64 clock_off)
{
	memset(st, 0, sizeof(*st));
	if (!dq_queue_tracked(q))
		return;
	spin_lock_bh(&q->ready_lock);
	st->inflight = q->inflight_len;
	if (!dq_ilist_empty(&q->inflight)) {
		u32 oldest = q->inflight.head;

		st->oldest_ns = max_t(u64, 1,
				      dq_time_shift(q->released_at[oldest],
						    clock_off));
	}
	st->done_delivered = q->done_delivered;
	st->done_failed = q->done_failed;
	st->done_refused = q->done_refused;
	st->redelivered = q->redelivered;
	st->credit_waits = q->credit_waits;
	st->max_inflight = q->max_inflight;
	st->consumer = !!q->consumer;
	st->expired = q->expired;
	st->visibility_ns = q->visibility_ns;
	spin_unlock_bh(&q->ready_lock);
}
