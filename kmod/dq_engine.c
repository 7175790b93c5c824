// SPDX-License-Identifier: GPL-2.0
/*
 * dq release engines: one per NUMA node, each a timing wheel plus exactly
 * one hrtimer armed for the wheel's earliest work.  With nothing due the
 * timer stays idle, so a million messages pending an hour out cost no
 * wakeups beyond the few cascades of the wheel.
 *
 * The timer is a soft hrtimer: releases run in softirq context, never in
 * hard interrupt context, and a run moves at most DQ_RELEASE_BUDGET
 * records before re-arming itself for "now".
 *
 * Its slack (how long after the next due time it may fire, so that
 * releases due close together share one wake-up) adapts to the density
 * of due times, with the code libdqshim's embedded engine uses
 * (dq_slack.h): the whole granularity less the wheel's tick when two or
 * more releases are expected within it, proportionally less when they
 * are sparser, where waiting would only make each message late.  Never
 * early: the slack only moves the latest expiry after the due time.
 */
#include <linux/cpumask.h>
#include <linux/hrtimer.h>
#include <linux/smp.h>
#include <linux/ktime.h>
#include <linux/moduleparam.h>
#include <linux/nodemask.h>
#include <linux/rcupdate.h>
#include <linux/poll.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/topology.h>
#include <linux/wait.h>

#include "dq.h"
#include "dq_compat.h"
#include "dq_trace.h"

static struct dq_engine **dq_engines;

#ifdef DQ_TESTING
/*
 * The test build's knobs (make module DQ_TESTING=1, the lab's dq.ko):
 * never in the shipped module, where both are the constants below.
 *
 * test_arm_delay_ns: arm every engine timer this much later than the
 * wheel asks for.  The lab's self-test sets it to prove that the timing
 * selftest fails when releases are late (selftests/vm/timing-selftest.sh),
 * and dq_order to hold the timer back while it checks that the submit
 * itself releases what is already due.
 *
 * fixed_slack=1: arm every engine's timer with the whole slack (the
 * smallest granularity of its queues less the wheel's tick), as dq.ko
 * did before the slack adapted to the density of due times.  Read at
 * every arming, so both can be measured in one boot (docs/records/
 * bench/kslack.txt, selftests/vm/kslack-bench.sh); the density is
 * sampled either way.
 */
static unsigned long dq_test_arm_delay_ns;
module_param_named(test_arm_delay_ns, dq_test_arm_delay_ns, ulong, 0644);
MODULE_PARM_DESC(test_arm_delay_ns,
		 "TEST ONLY: delay every release by this many ns (default 0)");

static bool dq_fixed_slack;
module_param_named(fixed_slack, dq_fixed_slack, bool, 0644);
MODULE_PARM_DESC(fixed_slack,
		 "TEST ONLY: release timers take the whole granularity as slack instead of adapting it to the density of due times (default N)");
MODULE_INFO(dq_testing, "1");
#else
static const unsigned long dq_test_arm_delay_ns;
static const bool dq_fixed_slack;
#endif

struct dq_engine *dq_engine_get(int node)
{
	if (node < 0 || node >= nr_node_ids || !dq_engines[node])
		return NULL;
	return dq_engines[node];
}

/*
 * Arm the timer for the wheel's next work if that is earlier.
 *
 * The timer is pinned to a CPU of the engine's node, so releases run where
 * the records live.  A CPU elsewhere cannot arm it there directly; it
 * kicks a CPU of the node (an async IPI), which fires the timer at once,
 * and the callback, now on the node, re-arms it for the real expiry.
 *
 * The expiry is a range: from the wheel's next work (never earlier) to
 * that plus the slack.  Work already due at @now gets no slack (a run
 * that stopped at its budget) unless the slack is fixed, which keeps the
 * engine exactly as it was before the slack adapted.
 */
static void dq_engine_arm_locked(struct dq_engine *e, u64 now)
	__must_hold(&e->lock)
{
	u64 next = dq_wheel_next(&e->wheel);
	u64 slack;
	int cpu;

	lockdep_assert_held(&e->lock);

	if (next == U64_MAX || next >= e->armed_ns)
		return;
	e->armed_ns = next;
	if (numa_node_id() != e->node) {
		cpu = cpumask_first_and(cpumask_of_node(e->node),
					cpu_online_mask);
		/*
		 * One kick at a time.  If the IPI cannot be sent, arm the
		 * timer here: off the node, but on time.
		 */
		if (cpu < nr_cpu_ids) {
			if (atomic_read(&e->kick_pending))
				return;
			atomic_set(&e->kick_pending, 1);
			if (!smp_call_function_single_async(cpu, &e->kick))
				return;
			atomic_set(&e->kick_pending, 0);
		}
	}
	dq_slack_set_fixed(&e->slack, READ_ONCE(dq_fixed_slack));
	if (next <= now && !e->slack.fixed)
		slack = 0;
	else
		slack = dq_slack_next(&e->slack, next);
	hrtimer_start_range_ns(&e->timer,
			       ns_to_ktime(next + READ_ONCE(dq_test_arm_delay_ns)),
			       slack, HRTIMER_MODE_ABS_PINNED_SOFT);
}

/* Hard irq on a CPU of the node: fire now, the callback re-arms. */
static void dq_engine_kick_fn(void *info)
{
	struct dq_engine *e = info;

	hrtimer_start(&e->timer, 0, HRTIMER_MODE_ABS_PINNED_SOFT);
	/* After the timer start: dq_engines_exit() waits for this. */
	atomic_set_release(&e->kick_pending, 0);
}

/*
 * Release everything due at @now, up to the budget.  Records leave the
 * wheel in (due, insertion) order and are posted to their queues in that order;
 * each queue touched is woken once, still under engine->lock, which keeps
 * it alive (see dq.h).
 */
/* End of one queue's run of records: publish, trace, wake parked cmds. */
static void dq_engine_flush_queue_locked(struct dq_engine *e,
					 struct dq_queue *q, u32 count,
					 u64 first_due, u64 last_due, u64 now)
	__must_hold(&e->lock) __releases(&q->ready_lock)
{
	lockdep_assert_held(&e->lock);
	lockdep_assert_held(&q->ready_lock);

	/* The run's records left the wheel: counted once per queue's run. */
	q->pending -= count;
	dq_queue_publish_locked(q);
	trace_dq_release(q->id, e->node, count, first_due, last_due, now);
	dq_queue_wake_locked(q);
	spin_unlock(&q->ready_lock);
}

static void dq_engine_run_locked(struct dq_engine *e, u64 now)
	__must_hold(&e->lock)
{
	struct dq_queue *q = NULL, *qn;
	u64 first_due = 0, last_due = 0;
	struct dq_ilist due;
	LIST_HEAD(touched);
	unsigned int n;
	u32 count = 0;

	lockdep_assert_held(&e->lock);

	dq_ilist_init(&due);
	n = dq_wheel_advance(&e->wheel, now, &due, DQ_RELEASE_BUDGET);
	if (!n)
		return;
	e->released += n;

	while (!dq_ilist_empty(&due)) {
		u32 idx = dq_ilist_pop(&e->wheel, &due);
		/* The chunk's owner: records do not name their queue. */
		struct dq_queue *mq = e->owner[idx >> DQ_WHEEL_DIR_SHIFT];
		u64 mdue = dq_wheel_node(&e->wheel, idx)->due;

		if (mq != q) {
			if (q)
				dq_engine_flush_queue_locked(e, q, count,
							     first_due,
							     last_due, now);
			q = mq;
			count = 0;
			first_due = mdue;
			spin_lock(&q->ready_lock);
			/*
			 * One read of the consumer index for the run; the
			 * backlog goes into the room first.
			 */
			dq_ready_run_begin_locked(q, now);
			if (list_empty(&q->wake_link))
				list_add_tail(&q->wake_link, &touched);
		}
		last_due = mdue;
		count++;
		dq_queue_pend_clear(q, idx - q->wheel_base);
		dq_queue_post_locked(q, idx - q->wheel_base, now);
	}
	dq_engine_flush_queue_locked(e, q, count, first_due, last_due, now);
	/*
	 * One density sample per run, not per record: last_due is the run's
	 * latest due time (release order is due order).  The slack it gives
	 * is used from the next arming on.
	 */
	dq_slack_sample(&e->slack, last_due, n);
	dq_slack_update(&e->slack);

	list_for_each_entry_safe(q, qn, &touched, wake_link) {
		list_del_init(&q->wake_link);
		wake_up_interruptible_poll(&q->wait, EPOLLIN | EPOLLRDNORM);
	}
}

static enum hrtimer_restart dq_engine_timer_fn(struct hrtimer *timer)
{
	struct dq_engine *e = container_of(timer, struct dq_engine, timer);
	u64 now;

	spin_lock(&e->lock);
	e->timer_fires++;
	if (numa_node_id() == e->node)
		e->fires_on_node++;
	/*
	 * A submitter may have re-armed the timer between its expiry and
	 * this point; then armed_ns is theirs and still true.
	 */
	if (!hrtimer_is_queued(timer))
		e->armed_ns = U64_MAX;
	now = ktime_get_ns();
	dq_engine_run_locked(e, now);
	dq_engine_arm_locked(e, now);
	spin_unlock(&e->lock);
	return HRTIMER_NORESTART;
}

static void dq_engine_update_slack_locked(struct dq_engine *e)
	__must_hold(&e->lock)
{
	struct dq_queue *q;
	u64 slack = DQ_MAX_GRANULARITY_NS;

	lockdep_assert_held(&e->lock);

	list_for_each_entry(q, &e->queues, engine_link)
		slack = min(slack, q->granularity_ns);
	/* The wheel's tick is part of the granularity the queue asked for. */
	dq_slack_set_max(&e->slack, slack > DQ_WHEEL_TICK_NS ?
				    slack - DQ_WHEEL_TICK_NS : 0);
}

/* First of @need free chunks in a row in the directory, or U32_MAX. */
static u32 dq_engine_dir_find_locked(struct dq_engine *e, u32 need)
	__must_hold(&e->lock)
{
	u32 c, run = 0;

	lockdep_assert_held(&e->lock);

	for (c = 0; c < e->dir_len; c++) {
		run = e->owner[c] ? 0 : run + 1;
		if (run == need)
			return c + 1 - need;
	}
	return U32_MAX;
}

/*
 * Give @q a run of the wheel's index space (its nodes become records
 * wheel_base .. wheel_base + slot_count - 1) and hook it to the engine.
 * The directory grows when no run is free: new arrays are allocated with
 * the lock dropped, and the first attach to find them big enough under
 * the lock swaps them in.  -ENOMEM, or -ENOSPC when the engine's index
 * space (DQ_WHEEL_MAX_RECORDS) is full.
 */
int dq_engine_attach(struct dq_engine *e, struct dq_queue *q)
{
	const u32 max_len = DQ_WHEEL_MAX_RECORDS >> DQ_WHEEL_DIR_SHIFT;
	u32 need = DIV_ROUND_UP(q->slot_count, DQ_WHEEL_DIR_SIZE);
	struct dq_wheel_node **dir = NULL;
	struct dq_queue **owner = NULL;
	u32 first, len = 0, k;

	for (;;) {
		spin_lock_bh(&e->lock);
		first = dq_engine_dir_find_locked(e, need);
		if (first != U32_MAX)
			break;
		if (dir && len >= e->dir_len + need) {
			swap(dir, e->wheel.dir);
			swap(owner, e->owner);
			if (e->dir_len) {
				memcpy(e->wheel.dir, dir,
				       e->dir_len * sizeof(*dir));
				memcpy(e->owner, owner,
				       e->dir_len * sizeof(*owner));
			}
			first = e->dir_len;
			e->dir_len = len;
			break;
		}
		len = e->dir_len;
		spin_unlock_bh(&e->lock);
		kvfree(dir);
		kvfree(owner);
		if (len + need > max_len)
			return -ENOSPC;
		len = min(max_len, max3(2 * len, len + need, 64U));
		dir = kvzalloc_node(array_size(len, sizeof(*dir)), GFP_KERNEL,
				    e->node);
		owner = kvzalloc_node(array_size(len, sizeof(*owner)),
				      GFP_KERNEL, e->node);
		if (!dir || !owner) {
			kvfree(dir);
			kvfree(owner);
			return -ENOMEM;
		}
	}
	for (k = 0; k < need; k++) {
		e->wheel.dir[first + k] = q->nodes + k * DQ_WHEEL_DIR_SIZE;
		e->owner[first + k] = q;
	}
	q->wheel_base = first << DQ_WHEEL_DIR_SHIFT;
	list_add_tail(&q->engine_link, &e->queues);
	dq_engine_update_slack_locked(e);
	spin_unlock_bh(&e->lock);
	/* The old arrays, or new ones another attach's growth made moot. */
	kvfree(dir);
	kvfree(owner);
	return 0;
}

/*
 * The wheel emptied (a purge or a cancel): stop the timer rather than let
 * it fire for records that are gone.  If its callback is already running,
 * it waits for our lock, finds nothing due and does not re-arm.
 */
static void dq_engine_disarm_if_empty_locked(struct dq_engine *e)
	__must_hold(&e->lock)
{
	lockdep_assert_held(&e->lock);

	if (!dq_wheel_empty(&e->wheel) || e->armed_ns == U64_MAX)
		return;
	if (hrtimer_try_to_cancel(&e->timer) >= 0)
		e->armed_ns = U64_MAX;
}

/*
 * The first PENDING slot of @q at or after @from, or slot_count: a look at
 * pend_sum per 64 words of pend_bits, so a sparse queue is crossed in
 * slot_count / 4096 steps.
 */
static u32 dq_engine_pend_next_locked(struct dq_engine *e, struct dq_queue *q,
				      u32 from)
	__must_hold(&e->lock)
{
	u32 words = BITS_TO_LONGS(q->slot_count);
	u32 w = from / BITS_PER_LONG;
	unsigned long bits;

	lockdep_assert_held(&e->lock);

	if (from >= q->slot_count)
		return q->slot_count;
	bits = q->pend_bits[w] & (~0UL << (from % BITS_PER_LONG));
	if (!bits) {
		w = find_next_bit(q->pend_sum, words, w + 1);
		if (w >= words)
			return q->slot_count;
		bits = q->pend_bits[w];
	}
	return w * BITS_PER_LONG + __ffs(bits);
}

/*
 * Drop up to DQ_PURGE_CHUNK of @q's records from the wheel, from slot
 * *@cursor on; *@cursor moves past them.  True when none is left there.
 */
static bool dq_engine_purge_chunk_locked(struct dq_engine *e,
					 struct dq_queue *q, u32 *cursor)
	__must_hold(&e->lock)
{
	u32 slot = *cursor, n = 0;

	lockdep_assert_held(&e->lock);

	while (n < DQ_PURGE_CHUNK && q->pending) {
		slot = dq_engine_pend_next_locked(e, q, slot);
		if (slot >= q->slot_count)
			break;
		dq_queue_key_forget(q, slot);
		dq_queue_pend_clear(q, slot);
		WARN_ON_ONCE(!dq_rec_unwheel_locked(&e->wheel,
						    q->wheel_base + slot));
		slot++;
		n++;
	}
	*cursor = slot;
	atomic64_sub(n, &q->held);
	q->pending -= n;
	if (!q->pending || slot >= q->slot_count) {
		dq_engine_disarm_if_empty_locked(e);
		return true;
	}
	return false;
}

/*
 * Drop every record @q has in the wheel (a forced delete, or a detach),
 * DQ_PURGE_CHUNK at a time: O(pending) records and slot_count / 4096
 * bitmap words in all, and between chunks the lock is dropped, softirqs
 * are on again and the task may be rescheduled, so the node's release
 * runs for its other queues wait for one chunk at most.  Process context.
 * A record released meanwhile leaves the bitmap by itself; nothing is
 * inserted meanwhile (the queue is dead, or has no file).
 */
void dq_engine_purge(struct dq_engine *e, struct dq_queue *q)
{
	u32 cursor = 0;
	bool done;

	might_sleep();
	do {
		spin_lock_bh(&e->lock);
		done = dq_engine_purge_chunk_locked(e, q, &cursor);
		spin_unlock_bh(&e->lock);
		if (!done)
			cond_resched();
	} while (!done);
}

/*
 * Unhook @q and every record it still has in the wheel.  After this no
 * release run can reach @q: runs hold engine->lock from wheel to wakeup.
 */
void dq_engine_detach(struct dq_engine *e, struct dq_queue *q)
{
	u32 c = q->wheel_base >> DQ_WHEEL_DIR_SHIFT;
	u32 k, need = DIV_ROUND_UP(q->slot_count, DQ_WHEEL_DIR_SIZE);

	dq_engine_purge(e, q);
	spin_lock_bh(&e->lock);
	/* No file, so no submit: nothing came back since the purge. */
	WARN_ON_ONCE(q->pending);
	for (k = 0; k < need; k++) {
		e->wheel.dir[c + k] = NULL;
		e->owner[c + k] = NULL;
	}
	list_del(&q->engine_link);
	dq_engine_update_slack_locked(e);
	spin_unlock_bh(&e->lock);
}

/*
 * Hand @nr validated records of @q (@slots, state SUBMITTING, due set) to
 * the wheel.  Bit i of @relative marks slots[i] as due @now + delay: its due time is
 * moved to the clock read here, under the lock, so that it can never sort
 * before a record this engine has already released.  Records already due
 * are released here and now, in order with whatever else is due, instead
 * of waiting for the timer.
 */
void dq_engine_insert(struct dq_engine *e, struct dq_queue *q,
		      const u32 *slots, unsigned int nr, u64 relative, u64 now)
{
	bool due_now = false;
	unsigned int i;
	u64 locked_now;

	spin_lock_bh(&e->lock);
	locked_now = ktime_get_ns();
	for (i = 0; i < nr; i++) {
		u32 slot = slots[i];
		struct dq_wheel_node *n = &q->nodes[slot];

		if (relative & BIT_ULL(i))
			n->due += locked_now - now;
		/*
		 * Here, before the message can be released (below, or by the
		 * engine's timer once the lock is dropped): a tool sees a
		 * message's dq_submit before its dq_ready, always.
		 */
		trace_dq_submit(q->id, q->node, slot, q->recs[slot].gen,
				q->recs[slot].user_data, n->due, now);
		dq_rec_set_state(n, DQ_MSG_PENDING);
		dq_queue_pend_set(q, slot);
		q->pending++;
		dq_wheel_insert(&e->wheel, q->wheel_base + slot, locked_now);
		if (n->due <= locked_now)
			due_now = true;
	}
	/*
	 * dq_wheel_next() is a tick's end: a record due inside the tick the
	 * clock is in would wait for it and for the timer's slack.  The run
	 * lets out exactly what is due (dq_wheel_advance()).
	 */
	if (due_now || dq_wheel_next(&e->wheel) <= locked_now)
		dq_engine_run_locked(e, locked_now);
	dq_engine_arm_locked(e, locked_now);
	spin_unlock_bh(&e->lock);
}
EXPORT_SYMBOL_IF_KUNIT(dq_engine_insert);

/*
 * Take back @slot's message of generation @gen while dq holds it; a
 * replace (@replace) counts it in q->replaced instead of q->cancelled.
 */
int dq_engine_cancel(struct dq_engine *e, struct dq_queue *q, u32 slot,
		     u32 gen, bool replace)
{
	struct dq_wheel_node *n;
	struct dq_msg_rec *r;
	int ret;

	if (slot >= q->slot_count)
		return -ENOENT;
	r = &q->recs[slot];
	n = &q->nodes[slot];

	spin_lock_bh(&e->lock);
	/* Its key goes first: a FREE slot is never indexed. */
	if (dq_rec_has_gen(n, r, gen) && dq_rec_state(n) == DQ_MSG_PENDING)
		dq_queue_key_forget(q, slot);
	ret = dq_rec_cancel_locked(&e->wheel, q->wheel_base + slot, r, gen);
	if (!ret) {
		dq_queue_pend_clear(q, slot);
		atomic64_dec(&q->held);
		q->pending--;
		if (replace)
			q->replaced++;
		else
			q->cancelled++;
		dq_engine_disarm_if_empty_locked(e);
	} else if (ret == -EALREADY) {
		/*
		 * Due but still held (paced, or the ready ring full): those
		 * states change under ready_lock, which nests inside ours.
		 */
		spin_lock(&q->ready_lock);
		if (dq_queue_unpost_locked(q, slot)) {
			if (replace)
				q->replaced++;
			else
				q->cancelled++;
			ret = 0;
		} else {
			ret = -EALREADY;
		}
		spin_unlock(&q->ready_lock);
	}
	spin_unlock_bh(&e->lock);
	return ret;
}

int dq_engine_stats(int node, struct dq_node_stats *st)
{
	struct dq_engine *e = dq_engine_get(node);

	if (!e)
		return -EINVAL;
	spin_lock_bh(&e->lock);
	st->pending = e->wheel.count;
	st->released = e->released;
	st->timer_fires = e->timer_fires;
	st->cascaded = e->wheel.cascaded;
	st->fires_on_node = e->fires_on_node;
	spin_unlock_bh(&e->lock);
	return 0;
}

int dq_engines_init(void)
{
	int node;

	dq_engines = kcalloc(nr_node_ids, sizeof(*dq_engines), GFP_KERNEL);
	if (!dq_engines)
		return -ENOMEM;

	for_each_node_state(node, N_POSSIBLE) {
		struct dq_engine *e;

		/* ~161 KiB, mostly the wheel's list heads (dq_wheel.h). */
		e = kvzalloc_node(sizeof(*e), GFP_KERNEL, node);
		if (!e)
			goto fail;
		spin_lock_init(&e->lock);
		e->node = node;
		dq_wheel_init(&e->wheel, NULL);
		dq_hrtimer_setup(&e->timer, dq_engine_timer_fn, CLOCK_MONOTONIC,
				 HRTIMER_MODE_ABS_PINNED_SOFT);
		INIT_CSD(&e->kick, dq_engine_kick_fn, e);
		e->armed_ns = U64_MAX;
		/* No queue yet: the first attach sets the real bound. */
		dq_slack_init(&e->slack, DQ_DEFAULT_GRANULARITY_NS -
					 DQ_WHEEL_TICK_NS, false);
		INIT_LIST_HEAD(&e->queues);
		dq_engines[node] = e;
	}
	return 0;
fail:
	dq_engines_exit();
	return -ENOMEM;
}

/* Only called once every file is closed: the wheels are empty. */
void dq_engines_exit(void)
{
	int node;

	for (node = 0; node < nr_node_ids; node++) {
		struct dq_engine *e = dq_engines[node];

		if (!e)
			continue;
		/* A kick in flight may still start the timer. */
		while (atomic_read_acquire(&e->kick_pending))
			cpu_relax();
		hrtimer_cancel(&e->timer);
		if (e->wheel.count)
			pr_err("dq: node %d engine freed with %llu records\n",
			       node, e->wheel.count);
	}
	/*
	 * The IPI code still unlocks a kick after its function returned; it
	 * runs with interrupts off, so a grace period covers it.
	 */
	synchronize_rcu();
	for (node = 0; node < nr_node_ids; node++) {
		if (!dq_engines[node])
			continue;
		kvfree(dq_engines[node]->wheel.dir);
		kvfree(dq_engines[node]->owner);
		kvfree(dq_engines[node]);
	}
	kfree(dq_engines);
	dq_engines = NULL;
}
