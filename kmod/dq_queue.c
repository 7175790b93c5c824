// SPDX-License-Identifier: GPL-2.0
/*
 * dq queues, their lifecycle: the shared regions and their mmap, setup
 * checks, create and release, limits, forced purge and stats.  The submit
 * side (submit_lock) is in dq_submit.c, the ready side (ready_lock) in
 * dq_ready.c; each says how it orders its ring's indices with user space.
 *
 * Calls between the three go one way: lifecycle -> ready side (the pacing
 * timer, purge), submit side -> engine -> ready side; nothing calls back
 * up.
 */
#include <linux/capability.h>
#include <linux/cred.h>
#include <linux/ktime.h>
#include <linux/log2.h>
#include <linux/math64.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/overflow.h>
#include <linux/nodemask.h>
#include <linux/poll.h>
#include <linux/resource.h>
#include <linux/sched/signal.h>
#include <linux/sched/user.h>
#include <linux/slab.h>
#include <linux/topology.h>
#include <linux/uaccess.h>
#include <linux/vmalloc.h>

#include "dq.h"
#include "dq_compat.h"
#include "dq_setup.h"
#include "dq_trace.h"

/* Largest arena one queue may have; the pages are charged to its memcg. */
static unsigned long dq_max_arena_bytes = 4UL << 30;
module_param_named(max_arena_bytes, dq_max_arena_bytes, ulong, 0644);
MODULE_PARM_DESC(max_arena_bytes, "Largest payload arena of one queue");

/*
 * Charge every queue's pinned memory to its creator's RLIMIT_MEMLOCK
 * (below).  Off: memcg alone limits it, for hosts that rely on that.
 * Read at each create; a queue gives back what it was charged, so turning
 * it off or on never unbalances a user's count.
 */
static bool dq_memlock_accounting = true;
module_param_named(memlock_accounting, dq_memlock_accounting, bool, 0644);
MODULE_PARM_DESC(memlock_accounting,
		 "Charge queues' pinned pages to the creator's RLIMIT_MEMLOCK (CAP_IPC_LOCK exempt)");

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

/* A ring region's bytes before page rounding: header, then the entries. */
static size_t dq_ring_bytes(u32 entries, size_t entry_size)
{
	return dq_ring_entries_offset() + (size_t)entries * entry_size;
}

static size_t dq_ready_entry_size(u32 flags)
{
	return flags & DQ_SETUP_F_TRACK ? sizeof(struct dq_ready_track) :
					  sizeof(struct dq_ready);
}

/*
 * RLIMIT_MEMLOCK accounting.
 *
 * A queue's memory is unswappable for as long as the queue lives: the
 * arena and the two rings are pages the kernel pins and maps into user
 * space, and its per-slot records are kernel memory.  /dev/dq is open to
 * every user (mode 0666, dq_main.c), so a user could pin up to
 * max_arena_bytes per queue, in any number of queues; memcg bounds that
 * only where memory.max is set.  So, like io_uring's registered buffers,
 * every queue is charged, before anything is allocated, to the
 * user_struct of the task creating it (DQ_IOC_SETUP's, or QUEUE_NEW's
 * netlink caller), against that task's RLIMIT_MEMLOCK, unless it has
 * CAP_IPC_LOCK; over the limit the create fails with -ENOMEM, as mlock(2)
 * and io_uring do.  The queue keeps a reference on the user and gives the
 * pages back when its memory is freed (dq_queue_free()): for a named
 * queue after QUEUE_DEL and the last attached file's close.
 *
 * The charge, in pages: the arena, the submit ring and the ready ring
 * regions, each page-rounded as allocated, plus the per-slot records
 * (nodes and recs, released_at of a tracked queue, the key index of a
 * keyed one)
 * rounded up to pages as a whole.  The records are not mapped, but they
 * are unswappable kernel memory all the same: 64 bytes a slot in the
 * formula (DQ_REC_CHARGE), with small slots (64 B) as much as the arena.
 * The records themselves are 40 bytes since 2026-12 (a 24-byte node and a
 * 16-byte struct dq_msg_rec, kmod/dq.h); the formula user space was given
 * still says 64, and keeping it keeps every create's verdict (a limit
 * that took a queue takes it, one that refused it with -ENOMEM still
 * does).  Charging less is an ABI change for another day.  Left out:
 * struct dq_queue and the file (~1 KiB per queue, memcg-charged and
 * bounded by RLIMIT_NOFILE), and the PENDING bitmaps (pend_bits,
 * pend_sum: 1/8 byte a slot, memcg-charged; leaving them out keeps the
 * formula user space was given).  uapi/linux/dq.h (DQ_IOC_SETUP) gives the
 * formula to user space; keep the two in step.
 */
/* Per slot for the records, as uapi/linux/dq.h documents (DQ_IOC_SETUP). */
#define DQ_REC_CHARGE	64

static unsigned long dq_queue_charge_pages(const struct dq_setup *s)
{
	size_t n = s->slot_count;
	size_t meta = n * DQ_REC_CHARGE;
	unsigned long pages;

	/* The charge covers the records, whatever they cost now. */
	BUILD_BUG_ON(sizeof_field(struct dq_queue, recs[0]) +
		     sizeof_field(struct dq_queue, nodes[0]) > DQ_REC_CHARGE);
	if (s->flags & DQ_SETUP_F_TRACK)
		meta += n * sizeof_field(struct dq_queue, released_at[0]);
	if (s->flags & DQ_SETUP_F_KEYS)
		meta += (1UL << dq_keys_bits(s->slot_count)) *
			sizeof_field(struct dq_keys, head[0]) +
			n * sizeof_field(struct dq_keys, next[0]);

	pages = PAGE_ALIGN(n * s->slot_size) >> PAGE_SHIFT;
	pages += PAGE_ALIGN(dq_ring_bytes(s->submit_entries,
					  sizeof(struct dq_desc))) >> PAGE_SHIFT;
	pages += PAGE_ALIGN(dq_ring_bytes(s->ready_entries,
					  dq_ready_entry_size(s->flags))) >>
		 PAGE_SHIFT;
	return pages + (PAGE_ALIGN(meta) >> PAGE_SHIFT);
}

/*
 * Charge @pages to the current task's user: its user_struct with a
 * reference, NULL when nothing was charged, or an ERR_PTR(-ENOMEM) over
 * the limit.  The counters are the node's (@e) because a queue's memory
 * is its node's: dqctl stats --node N shows what dq pins on node N for
 * users and how many creates the limit refused there; the module's totals
 * are the sums over the nodes.
 */
static struct user_struct *dq_memlock_charge(struct dq_engine *e,
					     unsigned long pages)
{
	unsigned long limit, cur, new;
	struct user_struct *user;
	atomic_long_t *locked;

	if (!READ_ONCE(dq_memlock_accounting) || capable(CAP_IPC_LOCK))
		return NULL;
	user = current_user();
	locked = dq_user_locked_vm(user);
	limit = rlimit(RLIMIT_MEMLOCK) >> PAGE_SHIFT;
	cur = atomic_long_read(locked);
	do {
		if (check_add_overflow(cur, pages, &new) || new > limit) {
			atomic64_inc(&e->memlock_refused);
			return ERR_PTR(-ENOMEM);
		}
	} while (!atomic_long_try_cmpxchg(locked, &cur, new));
	atomic_long_add(pages, &e->memlock_pages);
	return get_uid(user);
}

static void dq_memlock_uncharge(struct dq_engine *e, struct user_struct *user,
				unsigned long pages)
{
	if (!user)
		return;
	atomic_long_sub(pages, dq_user_locked_vm(user));
	atomic_long_sub(pages, &e->memlock_pages);
	free_uid(user);
}

/* The shared checks and defaults, then what only dq.ko knows. */
static int dq_setup_check(struct dq_setup *s, int *node)
{
	int ret = dq_setup_normalise(s);

	if (ret)
		return ret;
	if ((u64)s->slot_count * s->slot_size > dq_max_arena_bytes)
		return -E2BIG;
	*node = s->numa_node < 0 ? numa_node_id() : s->numa_node;
	if (*node >= nr_node_ids || !node_online(*node) ||
	    !dq_engine_get(*node))
		return -EINVAL;
	return 0;
}

static void dq_queue_free(struct dq_queue *q)
{
	dq_region_free(&q->submit_region);
	dq_region_free(&q->ready_region);
	dq_region_free(&q->arena);
	kvfree(q->released_at);
	dq_queue_keys_free(q);
	kvfree(q->recs);
	kvfree(q->nodes);
	kvfree(q->pend_bits);
	kvfree(q->pend_sum);
	/* The memory the charge stood for is gone: give it back. */
	dq_memlock_uncharge(q->engine, q->memlock_user, q->memlock_pages);
	kfree(q);
}

/*
 * Create a queue in network namespace @net (see dq_registry.c) from @s
 * (checked and normalised here; the output half filled on success).  On
 * failure an ERR_PTR; *@memlock (when given) says whether it was
 * RLIMIT_MEMLOCK's -ENOMEM rather than the allocator's.
 */
struct dq_queue *dq_queue_create(struct dq_setup *s, struct net *net,
				 bool *memlock)
{
	struct user_struct *user;
	struct dq_queue *q;
	unsigned long pages;
	size_t sq_size, rq_size;
	int node, ret;

	if (memlock)
		*memlock = false;
	ret = dq_setup_check(s, &node);
	if (ret)
		return ERR_PTR(ret);

	/* Before any allocation: an over-limit create costs nothing. */
	pages = dq_queue_charge_pages(s);
	user = dq_memlock_charge(dq_engine_get(node), pages);
	if (IS_ERR(user)) {
		if (memlock)
			*memlock = true;
		return ERR_CAST(user);
	}

	q = kzalloc_node(sizeof(*q), GFP_KERNEL_ACCOUNT, node);
	if (!q) {
		dq_memlock_uncharge(dq_engine_get(node), user, pages);
		return ERR_PTR(-ENOMEM);
	}
	q->node = node;
	q->engine = dq_engine_get(node);
	q->memlock_user = user;
	q->memlock_pages = pages;
	q->flags = s->flags;
	q->max_inflight = s->max_inflight;
	q->rq_esize = dq_ready_entry_size(q->flags);
	q->slot_count = s->slot_count;
	q->slot_size = s->slot_size;
	q->granularity_ns = s->granularity_ns;
	/*
	 * The queue's clock is its creator's, for good: DQ_IOC_SETUP's
	 * caller, or QUEUE_NEW's (genl runs doit in the sender's task).
	 */
	q->mono_off = dq_timens_mono_offset();
	/* Never 0, so 0 can mean "no queue" to user space. */
	do {
		q->instance = get_random_u64();
	} while (!q->instance);
	q->sq_entries = s->submit_entries;
	q->rq_entries = s->ready_entries;
	kref_init(&q->ref);
	mutex_init(&q->submit_lock);
	spin_lock_init(&q->ready_lock);
	dq_ilist_init(&q->backlog);
	INIT_LIST_HEAD(&q->engine_link);
	INIT_LIST_HEAD(&q->wake_link);
	INIT_LIST_HEAD(&q->uwaits);
	INIT_LIST_HEAD(&q->waiters);
	dq_ilist_init(&q->paced);
	dq_ilist_init(&q->inflight);
	RB_CLEAR_NODE(&q->name_node);
	dq_hrtimer_setup(&q->pace_timer, dq_pace_timer_fn, CLOCK_MONOTONIC,
			 HRTIMER_MODE_ABS_SOFT);
	dq_hrtimer_setup(&q->vis_timer, dq_vis_timer_fn, CLOCK_MONOTONIC,
			 HRTIMER_MODE_ABS_SOFT);
	dq_hrtimer_setup(&q->uwait_timer, dq_uwait_timer_fn, CLOCK_MONOTONIC,
			 HRTIMER_MODE_ABS_SOFT);
	q->uwait_armed = U64_MAX;
	q->visibility_ns = s->visibility_ns;
	q->max_pending = s->slot_count;
	q->uid = current_fsuid();
	q->gid = current_fsgid();
	q->mode = 0600;
	init_waitqueue_head(&q->wait);

	ret = -ENOMEM;
	q->recs = kvzalloc_node(array_size(q->slot_count, sizeof(*q->recs)),
				GFP_KERNEL_ACCOUNT, node);
	if (!q->recs)
		goto fail;
	q->nodes = kvzalloc_node(array_size(q->slot_count, sizeof(*q->nodes)),
				 GFP_KERNEL_ACCOUNT, node);
	if (!q->nodes)
		goto fail;
	q->pend_bits = kvzalloc_node(BITS_TO_LONGS(q->slot_count) *
				     sizeof(unsigned long), GFP_KERNEL_ACCOUNT,
				     node);
	q->pend_sum = kvzalloc_node(BITS_TO_LONGS(BITS_TO_LONGS(q->slot_count)) *
				    sizeof(unsigned long), GFP_KERNEL_ACCOUNT,
				    node);
	if (!q->pend_bits || !q->pend_sum)
		goto fail;
	if (dq_queue_tracked(q)) {
		q->released_at = kvzalloc_node(array_size(q->slot_count,
							  sizeof(*q->released_at)),
					       GFP_KERNEL_ACCOUNT, node);
		if (!q->released_at)
			goto fail;
	}
	ret = dq_queue_keys_alloc(q, node);
	if (ret)
		goto fail;

	/* The sizes dq_queue_charge_pages() charged for. */
	sq_size = dq_ring_bytes(q->sq_entries, sizeof(struct dq_desc));
	rq_size = dq_ring_bytes(q->rq_entries, q->rq_esize);
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
	q->submit_region.pgoff = DQ_OFF_SUBMIT_RING >> PAGE_SHIFT;
	q->ready_region.pgoff = DQ_OFF_READY_RING >> PAGE_SHIFT;
	q->arena.pgoff = DQ_OFF_ARENA >> PAGE_SHIFT;
	q->sq_hdr = q->submit_region.vaddr;
	q->sq_ring = q->submit_region.vaddr + dq_ring_entries_offset();
	q->rq_hdr = q->ready_region.vaddr;
	q->rq_ring = q->ready_region.vaddr + dq_ring_entries_offset();

	ret = dq_registry_reserve(q);
	if (ret)
		goto fail;

	ret = dq_engine_attach(q->engine, q);
	if (ret)
		goto fail;
	dq_queue_describe(q, s);
	dq_registry_publish(q, net);
	return q;
fail:
	dq_registry_del(q);
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
		      DQ_FEAT_NAMED | DQ_FEAT_PACING | DQ_FEAT_TRACK |
		      DQ_FEAT_KEYS | DQ_FEAT_VISIBILITY | DQ_FEAT_TIME_NS |
		      DQ_FEAT_INSTANCE | DQ_FEAT_READY_BACKLOG |
		      DQ_FEAT_SLOT_ALIGN8;
	s->instance = q->instance;
	s->flags = q->flags;
	s->max_inflight = READ_ONCE(q->max_inflight);
	s->visibility_ns = q->visibility_ns;
	s->queue_id = q->id;
	s->numa_node = q->node;
	s->arena_size = q->arena.size;
	dq_ring_offsets_fill(&s->submit, q->sq_entries, sizeof(struct dq_desc),
			     q->submit_region.size);
	dq_ring_offsets_fill(&s->ready, q->rq_entries, q->rq_esize,
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
	hrtimer_cancel(&q->vis_timer);
	/* No WAIT is parked (each holds a reference): nothing re-arms it. */
	hrtimer_cancel(&q->uwait_timer);
	dq_queue_free(q);
}

void dq_queue_put(struct dq_queue *q)
{
	kref_put(&q->ref, dq_queue_release);
}
EXPORT_SYMBOL_IF_KUNIT(dq_queue_put);

void dq_queue_set_limits(struct dq_queue *q, u32 max_pending, u32 high_wm)
{
	WRITE_ONCE(q->max_pending, max_pending ? max_pending : q->slot_count);
	WRITE_ONCE(q->high_wm, high_wm);
}

/*
 * Take up to DQ_PURGE_CHUNK due records off @q's lists (paced, backlog,
 * in flight); true when the lists are empty.
 */
static bool dq_queue_purge_chunk_locked(struct dq_queue *q)
	__must_hold(&q->ready_lock)
{
	u32 n = 0;

	lockdep_assert_held(&q->ready_lock);

	while (n < DQ_PURGE_CHUNK) {
		struct dq_ilist *l;
		u64 *len;
		u32 slot;

		if (!dq_ilist_empty(&q->paced)) {
			l = &q->paced;
			len = &q->paced_len;
		} else if (!dq_ilist_empty(&q->backlog)) {
			l = &q->backlog;
			len = &q->backlog_len;
		} else if (!dq_ilist_empty(&q->inflight)) {
			l = &q->inflight;
			len = &q->inflight_len;
		} else {
			break;
		}
		slot = dq_qlist_pop(q, l);
		(*len)--;
		dq_queue_key_forget(q, slot);
		dq_rec_set_state(&q->nodes[slot], DQ_MSG_FREE);
		n++;
	}
	atomic64_sub(n, &q->held);
	dq_ready_flags_sync_locked(q);
	return n < DQ_PURGE_CHUNK;
}

/*
 * Forced delete: drop every message the kernel holds for @q, the wheel's
 * first (after which nothing more becomes due), then the due ones, each
 * DQ_PURGE_CHUNK records at a time with the lock dropped between chunks:
 * O(held), and the node's release runs (which take ready_lock inside
 * engine->lock) never wait for more than a chunk.  Process context.  A
 * record may move between the lists meanwhile (a consumer gone, a
 * visibility timeout), never onto them: every chunk shrinks what is left.
 */
void dq_queue_purge(struct dq_queue *q)
{
	bool done;

	dq_engine_purge(q->engine, q);

	do {
		spin_lock_bh(&q->ready_lock);
		done = dq_queue_purge_chunk_locked(q);
		spin_unlock_bh(&q->ready_lock);
		if (!done)
			cond_resched();
	} while (!done);
}
EXPORT_SYMBOL_IF_KUNIT(dq_queue_purge);

/*
 * A named queue taken from the registry by module or namespace exit:
 * dead for every file still attached, its messages dropped, and the
 * registry's reference put.
 */
void dq_queue_drop_named(struct dq_queue *q)
{
	/* As QUEUE_DEL: under submit_lock, so no submit slips in after. */
	mutex_lock(&q->submit_lock);
	WRITE_ONCE(q->dead, true);
	mutex_unlock(&q->submit_lock);
	dq_queue_purge(q);
	dq_queue_kill_waits(q);
	dq_queue_put(q);
}

/*
 * Module exit: no file is open and netlink is gone (its namespaces' exits
 * dropped their named queues), so nothing should be left; drop whatever
 * is, messages and all.
 */
void dq_queues_exit(void)
{
	struct dq_queue *q;

	while ((q = dq_registry_take_named(NULL)))
		dq_queue_drop_named(q);
}

void dq_queue_stats(struct dq_queue *q, struct dq_queue_stats *st)
{
	unsigned int i;

	memset(st, 0, sizeof(*st));
	st->queue_id = q->id;
	st->numa_node = q->node;
	st->slot_count = q->slot_count;
	st->slot_size = q->slot_size;

	/*
	 * Written under submit_lock, read without it: each counter is exact
	 * (64-bit loads do not tear on the 64-bit kernels dq builds for), the
	 * set is not one snapshot.  Taking submit_lock here made every
	 * concurrent io_uring SUBMIT fail its non-blocking attempt and go
	 * through io-wq.
	 */
	st->submitted = READ_ONCE(q->submitted);
	for (i = 0; i < ARRAY_SIZE(q->rejected); i++)
		st->rejected[i] = READ_ONCE(q->rejected[i]);

	spin_lock_bh(&q->engine->lock);
	st->pending = q->pending;
	st->cancelled = q->cancelled;
	st->replaced = q->replaced;
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
		if (dq_rec_state(&q->nodes[slot]) != DQ_MSG_FREE)
			bits[slot / 64] |= BIT_ULL(slot % 64);

	spin_lock_bh(&q->ready_lock);
	cons = READ_ONCE(q->rq_hdr->consumer);
	if (q->rq_prod - cons <= q->rq_entries) {
		for (idx = cons; idx != q->rq_prod; idx++) {
			/* Our own entry, but in shared memory: check it. */
			slot = READ_ONCE(dq_rq_entry(q, idx)->slot);
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

/*
 * A fault on a mapped region: the mapping was populated at mmap time, so
 * this runs only after the process dropped its page-table entries
 * (madvise(MADV_DONTNEED), or a split that zapped them).  The pages still
 * belong to the queue: map the same page back, contents unchanged.  The
 * region outlives the VMA: the VMA holds the file, the file holds the
 * queue.
 */
static vm_fault_t dq_region_fault(struct vm_fault *vmf)
{
	struct dq_region *r = vmf->vma->vm_private_data;
	unsigned long index = vmf->pgoff - r->pgoff;

	if (vmf->pgoff < r->pgoff || index >= r->nr_pages)
		return VM_FAULT_SIGBUS;
	vmf->page = r->pages[index];
	get_page(vmf->page);
	return 0;
}

static const struct vm_operations_struct dq_region_vm_ops = {
	.fault = dq_region_fault,
};

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
	/*
	 * A private mapping would give the process a copy-on-write copy that
	 * the kernel never sees (and it would never see the kernel's).
	 */
	if (!(vma->vm_flags & VM_MAYSHARE))
		return -EINVAL;
	if (vma->vm_flags & VM_EXEC)
		return -EPERM;
	/* Fixed size, never executable, never in a core dump. */
	dq_vma_flags_set(vma, VM_DONTEXPAND | VM_DONTDUMP, VM_MAYEXEC);
	vma->vm_ops = &dq_region_vm_ops;
	vma->vm_private_data = r;
	return vm_map_pages_zero(vma, r->pages, r->nr_pages);
}
