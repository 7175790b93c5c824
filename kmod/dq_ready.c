// SPDX-License-Identifier: GPL-2.0
/*
 * dq queues, the ready side: everything under a queue's ready_lock.  The
 * ready ring's producer and its backlog, the pacing bucket and its timer,
 * DQ_IOC_WAIT and poll, and waking who waits.  Records arrive here from a
 * release run (dq_engine.c, engine->lock held) through
 * dq_queue_post_locked(); parked io_uring WAITs are completed through
 * dq_uring_wake_locked().
 *
 * Memory ordering with user space (the ready ring): the kernel
 * load-acquires the consumer index (user space is done reading those
 * entries), writes entries, store-releases the producer index; it keeps
 * its own producer index (rq_prod) and never reads it back from shared
 * memory; the consumer index is checked against the ring size before use.
 * It is read once per batch (a release run's records for one queue, a
 * backlog flush), and again within the batch only if what that read
 * showed free (q->rq_room) runs out.
 */
#include <linux/ktime.h>
#include <linux/math64.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/poll.h>
#include <linux/sched/signal.h>
#include <linux/wait.h>

#include "dq.h"
#include "dq_compat.h"
#include "dq_trace.h"

/*
 * Entries user space has not consumed yet, or rq_entries + 1 when its
 * consumer index is impossible (ahead of the producer or too far behind).
 */
u32 dq_queue_ready_used_locked(struct dq_queue *q)
	__must_hold(&q->ready_lock)
{
	u32 used;

	lockdep_assert_held(&q->ready_lock);

	/* Pairs with user space's store-release once it has read entries. */
	used = q->rq_prod - smp_load_acquire(&q->rq_hdr->consumer);

	if (used > q->rq_entries) {
		atomic64_inc(&q->ring_errors);
		q->rq_flags |= DQ_RING_F_BROKEN;
		WRITE_ONCE(q->rq_hdr->flags, q->rq_flags);
		return q->rq_entries + 1;
	}
	return used;
}
EXPORT_SYMBOL_IF_KUNIT(dq_queue_ready_used_locked);

/*
 * Read (and check) the consumer index once, for a batch: q->rq_room, the
 * entries known free, is what the batch posts into before it reads it
 * again.  0 when the index is broken (counted and flagged as above), so
 * nothing is written while it is: the batch goes to the backlog.
 */
u32 dq_ready_room_locked(struct dq_queue *q)
	__must_hold(&q->ready_lock)
{
	u32 used = dq_queue_ready_used_locked(q);

	q->rq_broken = used > q->rq_entries;
	q->rq_room = q->rq_broken ? 0 : q->rq_entries - used;
	return q->rq_room;
}
EXPORT_SYMBOL_IF_KUNIT(dq_ready_room_locked);

/*
 * Post @slot's record on the ready ring, into an entry q->rq_room counts as free.
 * Its slot is user space's from now on, or, on a tracked queue, in flight
 * until DONE (dq_track.c).  Per message only the ring entry and plain
 * counters under ready_lock: @held goes down once per batch (held_drop).
 */
static void dq_ready_write(struct dq_queue *q, u32 slot, u64 now)
	__must_hold(&q->ready_lock)
{
	struct dq_ready *r = dq_rq_entry(q, q->rq_prod);
	struct dq_wheel_node *n = &q->nodes[slot];
	const struct dq_msg_rec *rec = &q->recs[slot];
	u64 late = now - n->due;

	/*
	 * Every field, every time: user space may have scribbled on it.
	 * Times in the queue's clock (kmod/dq.h: this add cannot wrap).
	 */
	r->user_data = rec->user_data;
	r->due_ns = n->due + q->mono_off;
	r->release_ns = now + q->mono_off;
	r->slot = slot;
	r->len = dq_rec_len(n);
	trace_dq_ready(q->id, slot, rec->user_data, n->due, now, q->node);
	q->rq_prod++;
	q->rq_room--;
	q->released++;
	q->late_sum_ns += late;
	if (late > q->late_max_ns)
		q->late_max_ns = late;
	q->late_ewma_ns = q->late_ewma_ns - (q->late_ewma_ns >> 3) + (late >> 3);
	if (dq_queue_tracked(q)) {
		struct dq_ready_track *t = container_of(r, struct dq_ready_track, r);

		t->gen = rec->gen;
		t->attempts = rec->attempts;
		t->redeliveries = rec->redeliveries;
		t->resv = 0;
		dq_queue_inflight_locked(q, slot, now);
		return;
	}
	dq_queue_key_forget(q, slot);
	q->held_drop++;
	dq_rec_set_state(n, DQ_MSG_FREE);
}

/* Backlog records onto the ring, into the room q->rq_room counts. */
static void dq_ready_move_backlog_locked(struct dq_queue *q, u64 now)
	__must_hold(&q->ready_lock)
{
	lockdep_assert_held(&q->ready_lock);

	while (q->rq_room && !dq_ilist_empty(&q->backlog)) {
		u32 slot = dq_qlist_pop(q, &q->backlog);

		q->backlog_len--;
		/* release_ns: when it reaches the consumer, not when it was due. */
		dq_ready_write(q, slot, now);
	}
}

/* Move backlog records onto the ring while there is room; ready_lock held. */
static void dq_ready_flush_locked(struct dq_queue *q)
	__must_hold(&q->ready_lock)
{
	lockdep_assert_held(&q->ready_lock);

	if (dq_ilist_empty(&q->backlog))
		return;
	dq_ready_room_locked(q);
	dq_ready_move_backlog_locked(q, ktime_get_ns());
}

/*
 * A release run reaches @q: one read of the consumer index for the run,
 * and what waits in the backlog goes first into the room the consumer
 * made since (ahead of the run's records: release order).  Without this
 * the backlog moved only inside the consumer's WAIT or poll, one
 * ring-full per system call, while the engine kept adding behind it: a
 * 500k burst through a 4096-entry ring came out last 1.8x later than
 * through a ring as large as the burst (docs/records/bench/ready-ring.txt).
 */
void dq_ready_run_begin_locked(struct dq_queue *q, u64 now)
	__must_hold(&q->ready_lock)
{
	lockdep_assert_held(&q->ready_lock);

	dq_ready_room_locked(q);
	dq_ready_move_backlog_locked(q, now);
}
EXPORT_SYMBOL_IF_KUNIT(dq_ready_run_begin_locked);

/* Onto the ring when it has room and nothing waits before it. */
static void dq_ready_post_locked(struct dq_queue *q, u32 slot, u64 now)
	__must_hold(&q->ready_lock)
{
	lockdep_assert_held(&q->ready_lock);

	/*
	 * What the batch knows is free, else one more read of the index
	 * (not while the last read found it broken: the next batch's read
	 * or a refill checks it again, so a broken index is counted once
	 * per batch, not once per message).
	 */
	if (dq_ilist_empty(&q->backlog) &&
	    (q->rq_room || (!q->rq_broken && dq_ready_room_locked(q)))) {
		dq_ready_write(q, slot, now);
		return;
	}
	dq_rec_set_state(&q->nodes[slot], DQ_MSG_BACKLOG);
	dq_qlist_add_tail(q, &q->backlog, slot);
	q->backlog_len++;
}

/* Pacing: may one more message go out at @now?  Takes the token if so. */
/* VISIBLE_IF_KUNIT: tested by kmod/tests/dq_kunit.c */
VISIBLE_IF_KUNIT bool dq_pace_take_locked(struct dq_queue *q, u64 now)
	__must_hold(&q->ready_lock)
{
	u64 allowance = (u64)(q->pace_burst - 1) * q->pace_cost_ns;

	lockdep_assert_held(&q->ready_lock);

	if (q->pace_tat > now + allowance)
		return false;
	q->pace_tat += q->pace_cost_ns;
	return true;
}
EXPORT_SYMBOL_IF_KUNIT(dq_pace_take_locked);

static void dq_pace_arm_locked(struct dq_queue *q)
	__must_hold(&q->ready_lock)
{
	u64 allowance = (u64)(q->pace_burst - 1) * q->pace_cost_ns;
	u64 at = q->pace_tat > allowance ? q->pace_tat - allowance : 0;

	lockdep_assert_held(&q->ready_lock);

	hrtimer_start(&q->pace_timer, ns_to_ktime(at), HRTIMER_MODE_ABS_SOFT);
}

/*
 * How far behind a late pacing timer may catch up: without it a timer
 * that fires late (or a stalled CPU) would lose rate for good, with an
 * unbounded one a long stall would turn into one big burst.
 */
static unsigned int dq_pace_catchup_ms = 250;
module_param_named(pace_catchup_ms, dq_pace_catchup_ms, uint, 0644);
MODULE_PARM_DESC(pace_catchup_ms,
		 "How much pacing delay a paced queue may make up at once (ms)");

/*
 * Post what the bucket and the delivery credits allow off the paced list;
 * ready_lock held.  Also called by dq_track.c when a credit returns.
 */
void dq_pace_release_locked(struct dq_queue *q, u64 now)
	__must_hold(&q->ready_lock)
{
	u64 catchup = max_t(u64, (u64)q->pace_burst * q->pace_cost_ns,
			    (u64)READ_ONCE(dq_pace_catchup_ms) * NSEC_PER_MSEC);
	bool credit = true;

	lockdep_assert_held(&q->ready_lock);

	if (q->pace_tat + catchup < now)
		q->pace_tat = now - catchup;
	/* A credit first: a message that cannot go must not eat a token. */
	while (!dq_ilist_empty(&q->paced) &&
	       (credit = dq_queue_credit_locked(q)) &&
	       (!q->pace_rate || dq_pace_take_locked(q, now))) {
		u32 slot = dq_qlist_pop(q, &q->paced);

		q->paced_len--;
		dq_ready_post_locked(q, slot, now);
	}
	/* Waiting for a credit needs no timer: DONE or a consumer ends it. */
	if (!dq_ilist_empty(&q->paced) && credit && q->pace_rate)
		dq_pace_arm_locked(q);
}
EXPORT_SYMBOL_IF_KUNIT(dq_pace_release_locked);

/*
 * After entries were posted, ready_lock held: name the DQ_IOC_WAIT callers
 * about to wake (dq:dq_wake), then complete parked io_uring waits.
 */
void dq_queue_wake_locked(struct dq_queue *q)
	__must_hold(&q->ready_lock)
{
	lockdep_assert_held(&q->ready_lock);

	if (trace_dq_wake_enabled()) {
		struct dq_waiter *w;
		u32 used = dq_queue_ready_used_locked(q);

		list_for_each_entry(w, &q->waiters, link)
			if (used >= w->min_ready)
				trace_dq_wake(q->id, w->tid, used);
	}
	dq_uring_wake_locked(q);
}

/* The pacing timer: the bucket has a token again. */
enum hrtimer_restart dq_pace_timer_fn(struct hrtimer *timer)
{
	struct dq_queue *q = container_of(timer, struct dq_queue, pace_timer);
	u32 before;

	spin_lock(&q->ready_lock);
	before = q->rq_prod;
	dq_pace_release_locked(q, ktime_get_ns());
	dq_queue_publish_locked(q);
	if (q->rq_prod != before) {
		dq_trace_now(dq_release, q->id, q->node,
			     q->rq_prod - before, 0, 0);
		dq_queue_wake_locked(q);
	}
	spin_unlock(&q->ready_lock);
	if (q->rq_prod != before)
		wake_up_interruptible_poll(&q->wait, EPOLLIN | EPOLLRDNORM);
	return HRTIMER_NORESTART;
}

/*
 * Post one due record, from a release run: through the pacing bucket when
 * the queue is paced, then onto the ring or, when it is full, the backlog.
 */
void dq_queue_post_locked(struct dq_queue *q, u32 slot, u64 now)
	__must_hold(&q->ready_lock)
{
	lockdep_assert_held(&q->ready_lock);

	if (q->pace_rate || dq_queue_tracked(q)) {
		/* Behind whatever waits already: release order is kept. */
		if (dq_ilist_empty(&q->paced)) {
			if (!dq_queue_credit_locked(q)) {
				q->credit_waits++;
				goto wait;
			}
			if (!q->pace_rate) {
				dq_ready_post_locked(q, slot, now);
				return;
			}
			if (q->pace_tat < now)
				q->pace_tat = now;
			if (dq_pace_take_locked(q, now)) {
				dq_ready_post_locked(q, slot, now);
				return;
			}
			dq_pace_arm_locked(q);
		}
		if (q->pace_rate)
			q->throttled++;
		else
			q->credit_waits++;
wait:
		dq_rec_set_state(&q->nodes[slot], DQ_MSG_PACED);
		dq_qlist_add_tail(q, &q->paced, slot);
		q->paced_len++;
		return;
	}
	dq_ready_post_locked(q, slot, now);
}
EXPORT_SYMBOL_IF_KUNIT(dq_queue_post_locked);

/*
 * Cancel: take back a due record that is still in dq, waiting for a
 * pacing token or for room on the ready ring.  It has reached no
 * consumer, so it is cancelled like a pending one.  False when it has
 * left both lists (posted meanwhile).  ready_lock held.
 */
bool dq_queue_unpost_locked(struct dq_queue *q, u32 slot)
	__must_hold(&q->ready_lock)
{
	struct dq_wheel_node *n = &q->nodes[slot];

	lockdep_assert_held(&q->ready_lock);

	switch (dq_rec_state(n)) {
	case DQ_MSG_PACED:
		q->paced_len--;
		dq_qlist_del(q, &q->paced, slot);
		break;
	case DQ_MSG_BACKLOG:
		q->backlog_len--;
		dq_qlist_del(q, &q->backlog, slot);
		break;
	default:
		return false;
	}
	dq_ready_flags_sync_locked(q);
	dq_queue_key_forget(q, slot);
	dq_rec_set_state(n, DQ_MSG_FREE);
	atomic64_dec(&q->held);
	return true;
}

/*
 * DQ_RING_F_BACKLOG says whether the backlog holds records, so that a
 * consumer that never blocks knows an empty ring is not all there is
 * (uapi/linux/dq.h).  Written only when it changes: the consumer reads
 * the word only once it emptied the ring, and it is on a line of its own.
 */
void dq_ready_flags_sync_locked(struct dq_queue *q)
	__must_hold(&q->ready_lock)
{
	u32 flags = q->rq_flags & ~DQ_RING_F_BACKLOG;

	lockdep_assert_held(&q->ready_lock);

	if (!dq_ilist_empty(&q->backlog))
		flags |= DQ_RING_F_BACKLOG;
	if (flags != q->rq_flags) {
		q->rq_flags = flags;
		WRITE_ONCE(q->rq_hdr->flags, flags);
	}
}

void dq_queue_publish_locked(struct dq_queue *q)
	__must_hold(&q->ready_lock)
{
	lockdep_assert_held(&q->ready_lock);

	/* Before the slots can be seen free: the batch's held decrement. */
	if (q->held_drop) {
		atomic64_sub(q->held_drop, &q->held);
		q->held_drop = 0;
	}
	/* Ordered before the index by its store-release, like the entries. */
	dq_ready_flags_sync_locked(q);
	/* Entries before index: pairs with user space's load-acquire. */
	smp_store_release(&q->rq_hdr->producer, q->rq_prod);
}
EXPORT_SYMBOL_IF_KUNIT(dq_queue_publish_locked);

/*
 * Entries ready for user space, after moving what fits off the backlog;
 * rq_entries + 1 when user space broke the consumer index.
 */
u32 dq_queue_ready_refill_locked(struct dq_queue *q)
	__must_hold(&q->ready_lock)
{
	lockdep_assert_held(&q->ready_lock);

	dq_ready_flush_locked(q);
	dq_queue_publish_locked(q);
	return dq_queue_ready_used_locked(q);
}
EXPORT_SYMBOL_IF_KUNIT(dq_queue_ready_refill_locked);

static u32 dq_ready_count(struct dq_queue *q)
{
	u32 used;

	spin_lock_bh(&q->ready_lock);
	used = dq_queue_ready_refill_locked(q);
	spin_unlock_bh(&q->ready_lock);
	return used;
}

/* A DQ_IOC_WAIT may return: enough ready, or the queue was deleted. */
static bool dq_wait_done(struct dq_queue *q, u32 min_ready)
{
	return dq_ready_count(q) >= min_ready || READ_ONCE(q->dead);
}

int dq_queue_wait(struct dq_queue *q, const struct dq_wait *args)
{
	struct dq_waiter waiter = {
		.tid = current->pid,
		.min_ready = args->min_ready,
	};
	u32 min_ready = args->min_ready;
	u32 used;
	long ret;

	if (args->flags || min_ready > q->rq_entries)
		return -EINVAL;

	/* Known to the release path only so dq:dq_wake can name the tid. */
	spin_lock_bh(&q->ready_lock);
	list_add_tail(&waiter.link, &q->waiters);
	spin_unlock_bh(&q->ready_lock);
	trace_dq_wait_park(q->id, waiter.tid, min_ready);

	if (args->timeout_ns < 0)
		ret = wait_event_interruptible(q->wait,
					       dq_wait_done(q, min_ready));
	else
		ret = wait_event_interruptible_hrtimeout(q->wait,
							 dq_wait_done(q, min_ready),
							 ns_to_ktime(args->timeout_ns));

	spin_lock_bh(&q->ready_lock);
	list_del(&waiter.link);
	spin_unlock_bh(&q->ready_lock);

	if (!ret) {
		used = dq_ready_count(q);
		/* A consumer index user space broke: say so, don't spin. */
		if (used > q->rq_entries)
			ret = -EPROTO;
		else if (used < min_ready && READ_ONCE(q->dead))
			ret = -ENODEV;	/* woken by the queue's deletion */
		else
			ret = used;	/* may be < min_ready: another reader */
	}
	dq_trace_now(dq_reap, q->id, ret);
	return ret;
}

__poll_t dq_queue_poll_mask(struct dq_queue *q)
{
	__poll_t mask = EPOLLOUT | EPOLLWRNORM;
	u32 used = dq_ready_count(q);

	if (used)
		mask |= EPOLLIN | EPOLLRDNORM;
	if (used > q->rq_entries)
		mask |= EPOLLERR;
	if (READ_ONCE(q->dead))
		mask |= EPOLLHUP;
	return mask;
}

/* Messages the kernel holds or has posted that nobody consumed yet. */
u64 dq_queue_unreaped(struct dq_queue *q)
{
	u32 used;

	spin_lock_bh(&q->ready_lock);
	used = min(dq_queue_ready_used_locked(q), q->rq_entries);
	spin_unlock_bh(&q->ready_lock);
	return max_t(s64, atomic64_read(&q->held), 0) + used;
}

/*
 * The queue was deleted (q->dead set): waits that are not satisfied by
 * what is already on the ready ring end with -ENODEV, parked io_uring
 * WAITs included, and poll reports EPOLLHUP.  Whoever sees dead under
 * ready_lock (a WAIT about to park) or after prepare_to_wait (an ioctl
 * WAIT) fails at once; whoever parked before is ended here.
 */
void dq_queue_kill_waits(struct dq_queue *q)
{
	spin_lock_bh(&q->ready_lock);
	dq_uring_end_all_locked(q, -ENODEV);
	spin_unlock_bh(&q->ready_lock);
	wake_up_interruptible_poll(&q->wait, EPOLLHUP | EPOLLIN | EPOLLRDNORM);
}

/*
 * Change the pacing rate (messages per second, 0: unpaced) and burst at
 * once.  Paced messages keep their order; with rate 0 they go out now.
 */
void dq_queue_set_pacing(struct dq_queue *q, u64 rate, u32 burst)
{
	u64 now = ktime_get_ns();
	u32 before;

	spin_lock_bh(&q->ready_lock);
	before = q->rq_prod;
	q->pace_rate = rate;
	q->pace_burst = max_t(u32, burst, 1);
	q->pace_cost_ns = rate ? max_t(u64, div64_u64(NSEC_PER_SEC, rate), 1) : 0;
	/* The new rate starts from now, not from the old schedule. */
	q->pace_tat = now;
	dq_pace_release_locked(q, now);
	dq_queue_publish_locked(q);
	if (q->rq_prod != before) {
		trace_dq_release(q->id, q->node, q->rq_prod - before, 0, 0,
				 now);
		dq_queue_wake_locked(q);
	}
	spin_unlock_bh(&q->ready_lock);
	wake_up_interruptible_poll(&q->wait, EPOLLIN | EPOLLRDNORM);
}
