// SPDX-License-Identifier: GPL-2.0
/*
 * dq queues: the shared regions, the submit path (validate once, copy into
 * a private record, hand to the node's engine), the ready ring and its
 * backlog, cancel and stats.
 *
 * Memory ordering with user space, per ring:
 *   submit ring  user: write descriptors, store-release producer.
 *                kernel: load-acquire producer, copy descriptors,
 *                store-release consumer (the entries may be reused).
 *   ready ring   kernel: load-acquire consumer (user is done reading those
 *                entries), write entries, store-release producer.
 *                user: load-acquire producer, read, store-release consumer.
 * The kernel keeps its own copy of the index it owns (sq_cons, rq_prod) and
 * never reads it back from shared memory, so a scribble there is harmless;
 * the index user space owns is checked against the ring size before use.
 */
#include <linux/cred.h>
#include <linux/idr.h>
#include <linux/ktime.h>
#include <linux/log2.h>
#include <linux/math64.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/overflow.h>
#include <linux/nodemask.h>
#include <linux/poll.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/topology.h>
#include <linux/uaccess.h>
#include <linux/vmalloc.h>

#include "dq.h"
#include "dq_compat.h"
#include "dq_desc.h"
#include "dq_trace.h"

/* Largest arena one queue may have; the pages are charged to its memcg. */
static unsigned long dq_max_arena_bytes = 4UL << 30;
module_param_named(max_arena_bytes, dq_max_arena_bytes, ulong, 0644);
MODULE_PARM_DESC(max_arena_bytes, "Largest payload arena of one queue");

static DEFINE_IDA(dq_queue_ida);

static enum hrtimer_restart dq_pace_timer_fn(struct hrtimer *timer);

#define DQ_DEFAULT_SUBMIT_ENTRIES	1024U
#define DQ_MIN_DEFAULT_ENTRIES		64U
/* One u64 bitmap of relative descriptors per chunk. */
#define DQ_SUBMIT_CHUNK			64U

static void dq_region_free(struct dq_region *r)
{
	unsigned int i;

	if (r->vaddr)
		vunmap(r->vaddr);
	for (i = 0; i < r->nr_pages && r->pages; i++)
		if (r->pages[i])
			__free_page(r->pages[i]);
	kvfree(r->pages);
	memset(r, 0, sizeof(*r));
}

/*
 * Zeroed, memcg-charged pages on @node; mapped into the kernel only when
 * @kmap (the rings, which the kernel reads and writes; never the arena).
 */
static int dq_region_alloc(struct dq_region *r, size_t size, int node,
			   bool kmap)
{
	/* A large arena must fail with -ENOMEM, never call the OOM killer. */
	gfp_t gfp = GFP_KERNEL_ACCOUNT | __GFP_ZERO | __GFP_NOWARN |
		    __GFP_RETRY_MAYFAIL;
	unsigned int i;

	r->size = PAGE_ALIGN(size);
	r->nr_pages = r->size >> PAGE_SHIFT;
	r->pages = kvcalloc(r->nr_pages, sizeof(*r->pages), GFP_KERNEL_ACCOUNT);
	if (!r->pages)
		return -ENOMEM;
	for (i = 0; i < r->nr_pages; i++) {
		r->pages[i] = alloc_pages_node(node, gfp, 0);
		if (!r->pages[i])
			goto fail;
		cond_resched();
	}
	if (kmap) {
		r->vaddr = vmap(r->pages, r->nr_pages, VM_MAP, PAGE_KERNEL);
		if (!r->vaddr)
			goto fail;
	}
	return 0;
fail:
	dq_region_free(r);
	return -ENOMEM;
}

static size_t dq_ring_entries_offset(void)
{
	return ALIGN(sizeof(struct dq_ring_hdr), SMP_CACHE_BYTES);
}

static void dq_ring_offsets_fill(struct dq_ring_offsets *off, u32 entries,
				 u32 entry_size, size_t map_size)
{
	off->producer = offsetof(struct dq_ring_hdr, producer);
	off->consumer = offsetof(struct dq_ring_hdr, consumer);
	off->flags = offsetof(struct dq_ring_hdr, flags);
	off->entries = dq_ring_entries_offset();
	off->ring_entries = entries;
	off->entry_size = entry_size;
	off->map_size = map_size;
}

static int dq_setup_check(struct dq_setup *s, int *node)
{
	u64 arena;

	if (s->flags || s->resv0 || memchr_inv(s->resv2, 0, sizeof(s->resv2)))
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

	s->slot_size = ALIGN(s->slot_size, 64);
	arena = (u64)s->slot_count * s->slot_size;
	if (arena > dq_max_arena_bytes)
		return -E2BIG;

	*node = s->numa_node < 0 ? numa_node_id() : s->numa_node;
	if (*node >= nr_node_ids || !node_online(*node) ||
	    !dq_engine_get(*node))
		return -EINVAL;

	/* Defaults: a ready ring for every slot, within sane bounds. */
	if (!s->submit_entries)
		s->submit_entries = clamp(s->slot_count, DQ_MIN_DEFAULT_ENTRIES,
					  DQ_DEFAULT_SUBMIT_ENTRIES);
	if (!s->ready_entries)
		s->ready_entries = clamp(s->slot_count, DQ_MIN_DEFAULT_ENTRIES,
					 DQ_MAX_RING_ENTRIES);
	s->submit_entries = roundup_pow_of_two(s->submit_entries);
	s->ready_entries = roundup_pow_of_two(s->ready_entries);
	if (!s->granularity_ns)
		s->granularity_ns = DQ_DEFAULT_GRANULARITY_NS;
	return 0;
}

static void dq_queue_free(struct dq_queue *q)
{
	dq_region_free(&q->submit_region);
	dq_region_free(&q->ready_region);
	dq_region_free(&q->arena);
	kvfree(q->msgs);
	if (q->id)
		ida_free(&dq_queue_ida, q->id);
	kfree(q);
}

struct dq_queue *dq_queue_create(struct dq_setup *s)
{
	struct dq_queue *q;
	size_t sq_size, rq_size;
	int node, ret, id;
	u32 i;

	ret = dq_setup_check(s, &node);
	if (ret)
		return ERR_PTR(ret);

	q = kzalloc_node(sizeof(*q), GFP_KERNEL_ACCOUNT, node);
	if (!q)
		return ERR_PTR(-ENOMEM);
	q->node = node;
	q->engine = dq_engine_get(node);
	q->slot_count = s->slot_count;
	q->slot_size = s->slot_size;
	q->granularity_ns = s->granularity_ns;
	q->sq_entries = s->submit_entries;
	q->rq_entries = s->ready_entries;
	kref_init(&q->ref);
	mutex_init(&q->submit_lock);
	spin_lock_init(&q->ready_lock);
	INIT_LIST_HEAD(&q->backlog);
	INIT_LIST_HEAD(&q->engine_link);
	INIT_LIST_HEAD(&q->wake_link);
	INIT_LIST_HEAD(&q->uwaits);
	INIT_LIST_HEAD(&q->waiters);
	INIT_LIST_HEAD(&q->paced);
	INIT_LIST_HEAD(&q->reg_link);
	hrtimer_init(&q->pace_timer, CLOCK_MONOTONIC, HRTIMER_MODE_ABS_SOFT);
	q->pace_timer.function = dq_pace_timer_fn;
	q->max_pending = s->slot_count;
	q->uid = current_fsuid();
	q->gid = current_fsgid();
	q->mode = 0600;
	init_waitqueue_head(&q->wait);

	ret = -ENOMEM;
	q->msgs = kvzalloc_node(array_size(q->slot_count, sizeof(*q->msgs)),
				GFP_KERNEL_ACCOUNT, node);
	if (!q->msgs)
		goto fail;
	for (i = 0; i < q->slot_count; i++)
		q->msgs[i].q = q;

	sq_size = dq_ring_entries_offset() +
		  (size_t)q->sq_entries * sizeof(struct dq_desc);
	rq_size = dq_ring_entries_offset() +
		  (size_t)q->rq_entries * sizeof(struct dq_ready);
	ret = dq_region_alloc(&q->submit_region, sq_size, node, true);
	if (ret)
		goto fail;
	ret = dq_region_alloc(&q->ready_region, rq_size, node, true);
	if (ret)
		goto fail;
	ret = dq_region_alloc(&q->arena, (size_t)q->slot_count * q->slot_size,
			      node, false);
	if (ret)
		goto fail;
	q->sq_hdr = q->submit_region.vaddr;
	q->sq_ring = q->submit_region.vaddr + dq_ring_entries_offset();
	q->rq_hdr = q->ready_region.vaddr;
	q->rq_ring = q->ready_region.vaddr + dq_ring_entries_offset();

	id = ida_alloc_min(&dq_queue_ida, 1, GFP_KERNEL);
	if (id < 0) {
		ret = id;
		goto fail;
	}
	q->id = id;

	dq_queue_describe(q, s);
	dq_engine_attach(q->engine, q);
	dq_registry_add_anon(q);
	return q;
fail:
	dq_queue_free(q);
	return ERR_PTR(ret);
}
EXPORT_SYMBOL_IF_KUNIT(dq_queue_create);

/*
 * Fill the output half of struct dq_setup from @q: what DQ_IOC_SETUP and
 * DQ_IOC_ATTACH return.
 */
void dq_queue_describe(struct dq_queue *q, struct dq_setup *s)
{
	s->slot_count = q->slot_count;
	s->slot_size = q->slot_size;
	s->submit_entries = q->sq_entries;
	s->ready_entries = q->rq_entries;
	s->granularity_ns = q->granularity_ns;
	s->abi_version = DQ_ABI_VERSION;
	s->features = DQ_FEAT_RELATIVE_DUE | DQ_FEAT_CANCEL | DQ_FEAT_WAIT |
		      DQ_FEAT_NODE_ENGINES | DQ_FEAT_URING_CMD |
		      DQ_FEAT_NAMED | DQ_FEAT_PACING;
	s->queue_id = q->id;
	s->numa_node = q->node;
	s->arena_size = q->arena.size;
	dq_ring_offsets_fill(&s->submit, q->sq_entries, sizeof(struct dq_desc),
			     q->submit_region.size);
	dq_ring_offsets_fill(&s->ready, q->rq_entries, sizeof(struct dq_ready),
			     q->ready_region.size);
}

static void dq_queue_release(struct kref *ref)
{
	struct dq_queue *q = container_of(ref, struct dq_queue, ref);

	trace_dq_queue_free(q->id);
	dq_registry_del(q);
	/* No release run can post to @q after this ... */
	dq_engine_detach(q->engine, q);
	/* ... so the pacing timer cannot be armed again. */
	hrtimer_cancel(&q->pace_timer);
	dq_queue_free(q);
}

void dq_queue_put(struct dq_queue *q)
{
	kref_put(&q->ref, dq_queue_release);
}
EXPORT_SYMBOL_IF_KUNIT(dq_queue_put);

/* ---- ready ring ---------------------------------------------------- */

/*
 * Entries user space has not consumed yet, or rq_entries + 1 when its
 * consumer index is impossible (ahead of the producer or too far behind).
 */
u32 dq_queue_ready_used_locked(struct dq_queue *q)
{
	u32 used;

	/* Pairs with user space's store-release once it has read entries. */
	used = q->rq_prod - smp_load_acquire(&q->rq_hdr->consumer);

	if (used > q->rq_entries) {
		atomic64_inc(&q->ring_errors);
		WRITE_ONCE(q->rq_hdr->flags, DQ_RING_F_BROKEN);
		return q->rq_entries + 1;
	}
	return used;
}
EXPORT_SYMBOL_IF_KUNIT(dq_queue_ready_used_locked);

static void dq_ready_write(struct dq_queue *q, struct dq_msg *m, u64 now)
{
	struct dq_ready *r = &q->rq_ring[q->rq_prod & (q->rq_entries - 1)];
	u64 late = now - m->we.due;

	r->user_data = m->user_data;
	r->due_ns = m->we.due;
	r->release_ns = now;
	r->slot = m - q->msgs;
	r->len = m->we.owner32;
	trace_dq_ready(q->id, r->slot, m->user_data, m->we.due, now, q->node);
	q->rq_prod++;
	q->released++;
	q->late_sum_ns += late;
	if (late > q->late_max_ns)
		q->late_max_ns = late;
	q->late_ewma_ns = q->late_ewma_ns - (q->late_ewma_ns >> 3) + (late >> 3);
	atomic64_dec(&q->held);
	dq_msg_set_state(m, DQ_MSG_FREE);
}

/* Move backlog records onto the ring while there is room; ready_lock held. */
static void dq_ready_flush_locked(struct dq_queue *q)
{
	u32 room;

	if (list_empty(&q->backlog))
		return;
	room = q->rq_entries - min(dq_queue_ready_used_locked(q), q->rq_entries);
	while (room-- && !list_empty(&q->backlog)) {
		struct dq_msg *m = list_first_entry(&q->backlog, struct dq_msg,
						    we.link);

		list_del(&m->we.link);
		q->backlog_len--;
		/* release_ns: when it reaches the consumer, not when it was due. */
		dq_ready_write(q, m, ktime_get_ns());
	}
}

/* Onto the ring when it has room and nothing waits before it. */
static void dq_ready_post_locked(struct dq_queue *q, struct dq_msg *m, u64 now)
{
	if (list_empty(&q->backlog) &&
	    dq_queue_ready_used_locked(q) < q->rq_entries) {
		dq_ready_write(q, m, now);
		return;
	}
	dq_msg_set_state(m, DQ_MSG_BACKLOG);
	list_add_tail(&m->we.link, &q->backlog);
	q->backlog_len++;
}

/* Pacing: may one more message go out at @now?  Takes the token if so. */
/* VISIBLE_IF_KUNIT: tested by kmod/tests/dq_kunit.c */
VISIBLE_IF_KUNIT bool dq_pace_take_locked(struct dq_queue *q, u64 now)
{
	u64 allowance = (u64)(q->pace_burst - 1) * q->pace_cost_ns;

	if (q->pace_tat > now + allowance)
		return false;
	q->pace_tat += q->pace_cost_ns;
	return true;
}
EXPORT_SYMBOL_IF_KUNIT(dq_pace_take_locked);

static void dq_pace_arm_locked(struct dq_queue *q)
{
	u64 allowance = (u64)(q->pace_burst - 1) * q->pace_cost_ns;
	u64 at = q->pace_tat > allowance ? q->pace_tat - allowance : 0;

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
 * Post what the bucket allows off the paced list; ready_lock held.
 * VISIBLE_IF_KUNIT: tested by kmod/tests/dq_kunit.c.
 */
VISIBLE_IF_KUNIT void dq_pace_release_locked(struct dq_queue *q, u64 now)
{
	u64 catchup = max_t(u64, (u64)q->pace_burst * q->pace_cost_ns,
			    (u64)READ_ONCE(dq_pace_catchup_ms) * NSEC_PER_MSEC);

	if (q->pace_tat + catchup < now)
		q->pace_tat = now - catchup;
	while (!list_empty(&q->paced) &&
	       (!q->pace_rate || dq_pace_take_locked(q, now))) {
		struct dq_msg *m = list_first_entry(&q->paced, struct dq_msg,
						    we.link);

		list_del(&m->we.link);
		q->paced_len--;
		dq_ready_post_locked(q, m, now);
	}
	if (!list_empty(&q->paced))
		dq_pace_arm_locked(q);
}
EXPORT_SYMBOL_IF_KUNIT(dq_pace_release_locked);

/*
 * After entries were posted, ready_lock held: name the DQ_IOC_WAIT callers
 * about to wake (dq:dq_wake), then complete parked io_uring waits.
 */
void dq_queue_wake_locked(struct dq_queue *q)
{
	if (trace_dq_wake_enabled()) {
		struct dq_waiter *w;
		u32 used = dq_queue_ready_used_locked(q);

		list_for_each_entry(w, &q->waiters, link)
			if (used >= w->min_ready)
				trace_dq_wake(q->id, w->tid, used);
	}
	dq_uring_wake_locked(q);
}

static enum hrtimer_restart dq_pace_timer_fn(struct hrtimer *timer)
{
	struct dq_queue *q = container_of(timer, struct dq_queue, pace_timer);
	u32 before;

	spin_lock(&q->ready_lock);
	before = q->rq_prod;
	dq_pace_release_locked(q, ktime_get_ns());
	dq_queue_publish_locked(q);
	if (q->rq_prod != before) {
		trace_dq_release(q->id, q->node, q->rq_prod - before, 0, 0,
				 ktime_get_ns());
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
void dq_queue_post_locked(struct dq_queue *q, struct dq_msg *m, u64 now)
{
	if (q->pace_rate) {
		if (list_empty(&q->paced)) {
			if (q->pace_tat < now)
				q->pace_tat = now;
			if (dq_pace_take_locked(q, now)) {
				dq_ready_post_locked(q, m, now);
				return;
			}
			dq_pace_arm_locked(q);
		}
		dq_msg_set_state(m, DQ_MSG_PACED);
		list_add_tail(&m->we.link, &q->paced);
		q->paced_len++;
		q->throttled++;
		return;
	}
	dq_ready_post_locked(q, m, now);
}
EXPORT_SYMBOL_IF_KUNIT(dq_queue_post_locked);

void dq_queue_publish_locked(struct dq_queue *q)
{
	/* Entries before index: pairs with user space's load-acquire. */
	smp_store_release(&q->rq_hdr->producer, q->rq_prod);
}

/*
 * Entries ready for user space, after moving what fits off the backlog;
 * rq_entries + 1 when user space broke the consumer index.
 */
u32 dq_queue_ready_refill_locked(struct dq_queue *q)
{
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
					       dq_ready_count(q) >= min_ready);
	else
		ret = wait_event_interruptible_hrtimeout(q->wait,
							 dq_ready_count(q) >= min_ready,
							 ns_to_ktime(args->timeout_ns));

	spin_lock_bh(&q->ready_lock);
	list_del(&waiter.link);
	spin_unlock_bh(&q->ready_lock);

	if (!ret) {
		used = dq_ready_count(q);
		/* A consumer index user space broke: say so, don't spin. */
		ret = used > q->rq_entries ? -EPROTO : used;
	}
	trace_dq_reap(q->id, ret, ktime_get_ns());
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

void dq_queue_set_limits(struct dq_queue *q, u32 max_pending, u32 high_wm)
{
	WRITE_ONCE(q->max_pending, max_pending ? max_pending : q->slot_count);
	WRITE_ONCE(q->high_wm, high_wm);
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

/* Forced delete: drop every message the kernel holds for @q. */
void dq_queue_purge(struct dq_queue *q)
{
	struct dq_msg *m, *tmp;
	LIST_HEAD(dropped);

	dq_engine_purge(q->engine, q);

	spin_lock_bh(&q->ready_lock);
	list_splice_init(&q->paced, &dropped);
	list_splice_tail_init(&q->backlog, &dropped);
	q->paced_len = 0;
	q->backlog_len = 0;
	list_for_each_entry_safe(m, tmp, &dropped, we.link) {
		list_del(&m->we.link);
		atomic64_dec(&q->held);
		dq_msg_set_state(m, DQ_MSG_FREE);
	}
	spin_unlock_bh(&q->ready_lock);
}

/* ---- submit -------------------------------------------------------- */

/*
 * Validate one private copy of a descriptor; returns a reason or -1.
 * VISIBLE_IF_KUNIT: tested by kmod/tests/dq_kunit.c.
 */
VISIBLE_IF_KUNIT int dq_desc_check(struct dq_queue *q, const struct dq_desc *d,
				   u64 now, u64 *due)
{
	int reason = dq_desc_verdict(d, q->slot_count, q->slot_size, now, due);

	if (reason < 0 && dq_msg_state(&q->msgs[d->slot]) != DQ_MSG_FREE)
		reason = DQ_REJ_BUSY;
	return reason;
}
EXPORT_SYMBOL_IF_KUNIT(dq_desc_check);

/* Tell the events group when the queue fills up; submit_lock held. */
static void dq_queue_watermark_locked(struct dq_queue *q)
{
	s64 held = atomic64_read(&q->held);
	u32 wm = READ_ONCE(q->high_wm);

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

int dq_queue_submit(struct dq_queue *q, struct dq_submit *args,
		    struct dq_reject __user *rejects, bool nowait)
{
	struct dq_msg *batch[DQ_SUBMIT_CHUNK];
	u32 prod, avail, done = 0;
	int ret = 0;

	if (args->flags || args->resv)
		return -EINVAL;
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
		unsigned int i, n = 0, todo = min(avail - done, DQ_SUBMIT_CHUNK);
		u64 now = ktime_get_ns(), relative = 0;

		for (; todo; todo--, done++, q->sq_cons++) {
			u32 index = q->sq_cons;
			struct dq_desc d;
			struct dq_msg *m;
			u64 due = 0;
			int reason;

			/* The only read of this descriptor. */
			memcpy(&d, &q->sq_ring[index & (q->sq_entries - 1)],
			       sizeof(d));
			reason = dq_desc_check(q, &d, now, &due);
			if (reason < 0 && atomic64_read(&q->held) + n >=
					  READ_ONCE(q->max_pending))
				reason = DQ_REJ_FULL;
			if (reason >= 0) {
				struct dq_reject rej = {
					.index = index,
					.reason = reason,
					.error = dq_reject_errno(reason),
					.slot = d.slot,
					.user_data = d.user_data,
				};

				q->rejected[reason]++;
				trace_dq_reject(q->id, index, reason,
						dq_reject_errno(reason), d.slot,
						d.user_data);
				if (args->rejected < args->reject_cap &&
				    copy_to_user(&rejects[args->rejected], &rej,
						 sizeof(rej)))
					ret = -EFAULT;
				args->rejected++;
				continue;
			}
			m = &q->msgs[d.slot];
			dq_msg_set_state(m, DQ_MSG_SUBMITTING);
			m->we.due = due;
			m->we.owner32 = d.len;
			m->user_data = d.user_data;
			m->gen = d.gen;
			m->has_gen = 1;
			if (d.flags & DQ_DESC_F_RELATIVE)
				relative |= BIT_ULL(n);
			batch[n++] = m;
		}
		if (n) {
			atomic64_add(n, &q->held);
			dq_engine_insert(q->engine, batch, n, relative, now);
		}
		/* The records stay put: only a submit (this one) reuses them. */
		for (i = 0; i < n; i++)
			trace_dq_submit(q->id, q->node, batch[i] - q->msgs,
					batch[i]->gen, batch[i]->user_data,
					batch[i]->we.due, now);
		args->accepted += n;
		q->submitted += n;
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
	ret = dq_engine_cancel(q->engine, q, slot, gen);
	trace_dq_cancel(q->id, slot, gen, ret);
	return ret;
}
EXPORT_SYMBOL_IF_KUNIT(dq_queue_cancel);

void dq_queue_stats(struct dq_queue *q, struct dq_queue_stats *st)
{
	memset(st, 0, sizeof(*st));
	st->queue_id = q->id;
	st->numa_node = q->node;
	st->slot_count = q->slot_count;
	st->slot_size = q->slot_size;

	mutex_lock(&q->submit_lock);
	st->submitted = q->submitted;
	memcpy(st->rejected, q->rejected, sizeof(q->rejected));
	mutex_unlock(&q->submit_lock);

	spin_lock_bh(&q->engine->lock);
	st->pending = q->pending;
	st->cancelled = q->cancelled;
	spin_unlock_bh(&q->engine->lock);

	spin_lock_bh(&q->ready_lock);
	st->ready_backlog = q->backlog_len;
	st->released = q->released;
	st->late_max_ns = q->late_max_ns;
	st->late_sum_ns = q->late_sum_ns;
	st->paced = q->paced_len;
	st->throttled = q->throttled;
	spin_unlock_bh(&q->ready_lock);
	st->ring_errors = atomic64_read(&q->ring_errors);
}
EXPORT_SYMBOL_IF_KUNIT(dq_queue_stats);

int dq_queue_slot_map(struct dq_queue *q, const struct dq_slot_map *args)
{
	u64 __user *ubits = u64_to_user_ptr(args->bitmap);
	size_t words = DIV_ROUND_UP(q->slot_count, 64);
	u32 slot, idx, cons;
	u64 *bits;
	int ret = 0;

	if (args->resv || args->slot_count != q->slot_count)
		return -EINVAL;
	bits = kvcalloc(words, sizeof(*bits), GFP_KERNEL);
	if (!bits)
		return -ENOMEM;

	for (slot = 0; slot < q->slot_count; slot++)
		if (dq_msg_state(&q->msgs[slot]) != DQ_MSG_FREE)
			bits[slot / 64] |= BIT_ULL(slot % 64);

	spin_lock_bh(&q->ready_lock);
	cons = READ_ONCE(q->rq_hdr->consumer);
	if (q->rq_prod - cons <= q->rq_entries) {
		for (idx = cons; idx != q->rq_prod; idx++) {
			/* Our own entry, but in shared memory: check it. */
			slot = READ_ONCE(q->rq_ring[idx & (q->rq_entries - 1)].slot);
			if (slot < q->slot_count)
				bits[slot / 64] |= BIT_ULL(slot % 64);
		}
	} else {
		ret = -EPROTO;
	}
	spin_unlock_bh(&q->ready_lock);

	if (!ret && copy_to_user(ubits, bits, words * sizeof(*bits)))
		ret = -EFAULT;
	kvfree(bits);
	return ret;
}

/* ---- mmap ---------------------------------------------------------- */

int dq_queue_mmap(struct dq_queue *q, struct vm_area_struct *vma)
{
	unsigned long size = vma->vm_end - vma->vm_start;
	u64 offset = (u64)vma->vm_pgoff << PAGE_SHIFT;
	struct dq_region *r;

	switch (offset) {
	case DQ_OFF_SUBMIT_RING:
		r = &q->submit_region;
		break;
	case DQ_OFF_READY_RING:
		r = &q->ready_region;
		break;
	case DQ_OFF_ARENA:
		r = &q->arena;
		break;
	default:
		return -EINVAL;
	}
	if (size > r->size)
		return -EINVAL;
	if (vma->vm_flags & VM_EXEC)
		return -EPERM;
	/* Fixed size, never executable, never in a core dump. */
	dq_vma_flags_set(vma, VM_DONTEXPAND | VM_DONTDUMP, VM_MAYEXEC);
	return vm_map_pages_zero(vma, r->pages, r->nr_pages);
}
