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
	struct dq_msg *m;

	lockdep_assert_held(&q->ready_lock);

	if (!q->visibility_ns || list_empty(&q->inflight) ||
	    hrtimer_is_queued(&q->vis_timer))
		return;
	m = list_first_entry(&q->inflight, struct dq_msg, link);
	hrtimer_start(&q->vis_timer,
		      ns_to_ktime(q->released_at[m - q->msgs] + q->visibility_ns),
		      HRTIMER_MODE_ABS_SOFT);
}

/* @m was just posted on the ready ring of tracked @q: it is in flight. */
void dq_queue_inflight_locked(struct dq_queue *q, struct dq_msg *m, u64 now)
	__must_hold(&q->ready_lock)
{
	lockdep_assert_held(&q->ready_lock);

	dq_rec_set_state(dq_msg_node(m), DQ_MSG_INFLIGHT);
	list_add_tail(&m->link, &q->inflight);
	q->inflight_len++;
	q->released_at[m - q->msgs] = now;
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
	struct dq_msg *m;
	int ret;

	lockdep_assert_held(&q->ready_lock);

	if (d->outcome >= DQ_DONE_NR)
		ret = -EINVAL;
	else if (slot >= q->slot_count)
		ret = -ENOENT;
	else
		ret = dq_rec_done_check(&q->nodes[slot], &q->msgs[slot].rec, d);
	trace_dq_done(q->id, slot, DQ_HANDLE_GEN(d->handle), d->outcome, ret,
		      now);
	if (ret) {
		q->done_refused++;
		return ret;
	}
	m = &q->msgs[slot];
	list_del(&m->link);
	q->inflight_len--;
	if (d->outcome == DQ_DONE_DELIVERED)
		q->done_delivered++;
	else
		q->done_failed++;
	atomic64_dec(&q->held);
	dq_queue_key_forget(q, m);
	/* Last: from here the submit side may take the slot again. */
	dq_rec_set_state(dq_msg_node(m), DQ_MSG_FREE);
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
	struct dq_msg *m, *tmp;
	LIST_HEAD(expired);

	spin_lock(&q->ready_lock);
	list_for_each_entry_safe(m, tmp, &q->inflight, link) {
		if (q->released_at[m - q->msgs] + q->visibility_ns > now)
			break;
		list_move_tail(&m->link, &expired);
		dq_rec_redeliver(&m->rec);
		dq_rec_set_state(dq_msg_node(m), DQ_MSG_PACED);
		trace_dq_redeliver(q->id, m - q->msgs, m->rec.gen,
				   m->rec.redeliveries);
		n++;
	}
	q->inflight_len -= n;
	q->paced_len += n;
	q->expired += n;
	list_splice(&expired, &q->paced);
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
	struct dq_msg *m;
	LIST_HEAD(again);

	if (!dq_queue_tracked(q))
		return;
	spin_lock_bh(&q->ready_lock);
	if (q->consumer != consumer) {
		spin_unlock_bh(&q->ready_lock);
		return;
	}
	WRITE_ONCE(q->consumer, NULL);

	list_for_each_entry(m, &q->inflight, link) {
		dq_rec_redeliver(&m->rec);
		dq_rec_set_state(dq_msg_node(m), DQ_MSG_PACED);
		trace_dq_redeliver(q->id, m - q->msgs, m->rec.gen,
				   m->rec.redeliveries);
	}
	list_for_each_entry(m, &q->backlog, link)
		dq_rec_set_state(dq_msg_node(m), DQ_MSG_PACED);
	q->redelivered += q->inflight_len;
	list_splice_tail_init(&q->inflight, &again);
	list_splice_tail_init(&q->backlog, &again);
	list_splice_tail_init(&q->paced, &again);
	list_splice(&again, &q->paced);
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
	if (!list_empty(&q->inflight)) {
		struct dq_msg *m = list_first_entry(&q->inflight, struct dq_msg,
						    link);

		st->oldest_ns = max_t(u64, 1,
				      dq_time_shift(q->released_at[m - q->msgs],
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
