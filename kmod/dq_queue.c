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
#include <linux/sched/signal.h>
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
	kvfree(q->msgs);
	kfree(q);
}

struct dq_queue *dq_queue_create(struct dq_setup *s)
{
	struct dq_queue *q;
	size_t sq_size, rq_size;
	int node, ret;
	u32 i;

	ret = dq_setup_check(s, &node);
	if (ret)
		return ERR_PTR(ret);

	q = kzalloc_node(sizeof(*q), GFP_KERNEL_ACCOUNT, node);
	if (!q)
		return ERR_PTR(-ENOMEM);
	q->node = node;
	q->engine = dq_engine_get(node);
	q->flags = s->flags;
	q->max_inflight = s->max_inflight;
	q->rq_esize = dq_queue_tracked(q) ? sizeof(struct dq_ready_track) :
					     sizeof(struct dq_ready);
	q->slot_count = s->slot_count;
	q->slot_size = s->slot_size;
	q->granularity_ns = s->granularity_ns;
	/*
	 * The queue's clock is its creator's, for good: DQ_IOC_SETUP's
	 * caller, or QUEUE_NEW's (genl runs doit in the sender's task).
	 */
	q->mono_off = dq_timens_mono_offset();
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
	INIT_LIST_HEAD(&q->inflight);
	RB_CLEAR_NODE(&q->name_node);
	dq_hrtimer_setup(&q->pace_timer, dq_pace_timer_fn, CLOCK_MONOTONIC,
			 HRTIMER_MODE_ABS_SOFT);
	dq_hrtimer_setup(&q->vis_timer, dq_vis_timer_fn, CLOCK_MONOTONIC,
			 HRTIMER_MODE_ABS_SOFT);
	q->visibility_ns = s->visibility_ns;
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

	sq_size = dq_ring_entries_offset() +
		  (size_t)q->sq_entries * sizeof(struct dq_desc);
	rq_size = dq_ring_entries_offset() +
		  (size_t)q->rq_entries * q->rq_esize;
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

	dq_queue_describe(q, s);
	dq_engine_attach(q->engine, q);
	dq_registry_publish(q);
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
		      DQ_FEAT_KEYS | DQ_FEAT_VISIBILITY | DQ_FEAT_TIME_NS;
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

/* Forced delete: drop every message the kernel holds for @q. */
void dq_queue_purge(struct dq_queue *q)
{
	struct dq_msg *m, *tmp;
	LIST_HEAD(dropped);

	dq_engine_purge(q->engine, q);

	spin_lock_bh(&q->ready_lock);
	list_splice_init(&q->paced, &dropped);
	list_splice_tail_init(&q->backlog, &dropped);
	list_splice_tail_init(&q->inflight, &dropped);
	q->paced_len = 0;
	q->backlog_len = 0;
	q->inflight_len = 0;
	list_for_each_entry_safe(m, tmp, &dropped, rec.we.link) {
		list_del(&m->rec.we.link);
		atomic64_dec(&q->held);
		dq_queue_key_forget(q, m);
		dq_rec_set_state(&m->rec, DQ_MSG_FREE);
	}
	spin_unlock_bh(&q->ready_lock);
}

/*
 * Module exit: no file is open and netlink is gone, so only the registry
 * still holds the named queues.  Drop them, messages and all.
 */
void dq_queues_exit(void)
{
	struct dq_queue *q;

	while ((q = dq_registry_take_named())) {
		WRITE_ONCE(q->dead, true);
		dq_queue_purge(q);
		dq_queue_put(q);	/* the registry's reference */
	}
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
		if (dq_rec_state(&q->msgs[slot].rec) != DQ_MSG_FREE)
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
