// SPDX-License-Identifier: LGPL-2.1 OR MIT
/*
 * libdqshim: the parts both backends share.  Parameters, the free pool and
 * slot bookkeeping, the producer side of the submit ring, and the public
 * entry points, which hand the engine-specific work to q->ops.
 */
#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dq_internal.h"
#include "dq_jformat.h"
#include "dq_setup.h"

uint64_t dq_mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

DQ_API uint64_t dq_now_ns(void)
{
	return dq_mono_ns();
}

/*
 * DQ_IOC_SETUP's own checks and defaults (kmod/shared/dq_setup.h, the code
 * dq.ko runs), after the library's: 0 slots or slot size take
 * dq_params_init()'s defaults, so both backends give a queue one shape.
 */
static int dq_params_normalise(struct dqshim_queue *q, const struct dq_params *p)
{
	struct dq_setup s = {
		.slot_count = p->slot_count ? p->slot_count : DQ_DEFAULT_SLOTS,
		.slot_size = p->slot_size ? p->slot_size : DQ_MIN_SLOT_SIZE,
		.submit_entries = p->submit_entries,
		.ready_entries = p->ready_entries,
		.numa_node = p->numa_node,
		.granularity_ns = p->granularity_ns,
		.flags = (p->flags & DQ_OPEN_F_TRACK ? DQ_SETUP_F_TRACK : 0) |
			 (p->flags & DQ_OPEN_F_KEYS ? DQ_SETUP_F_KEYS : 0) |
			 (p->flags & DQ_OPEN_F_SLOT_ALIGN8 ?
			  DQ_SETUP_F_SLOT_ALIGN8 : 0),
		.max_inflight = p->max_inflight,
		.visibility_ns = p->flags & DQ_OPEN_F_VISIBILITY ?
				 p->visibility_ns : 0,
	};
	int ret;

	if ((p->flags & ~DQ_OPEN_F_ALL) || p->backend > DQ_BACKEND_USER)
		return -EINVAL;
	/* max_inflight without DQ_OPEN_F_TRACK: dq_setup_normalise() says no. */
	ret = dq_setup_normalise(&s);
	if (ret)
		return ret;

	q->slot_count = s.slot_count;
	q->slot_size = s.slot_size;
	q->sq_entries = s.submit_entries;
	q->rq_entries = s.ready_entries;
	q->rq_asked = p->ready_entries;
	q->granularity_ns = s.granularity_ns;
	q->numa_node = p->numa_node;
	q->uring_depth = p->uring_depth ? p->uring_depth :
			 DQ_DEFAULT_URING_DEPTH;
	if (q->uring_depth < 2)
		q->uring_depth = 2;
	q->flags = p->flags;
	q->max_inflight = s.max_inflight;
	q->visibility_ns = s.visibility_ns;
	/* The backend may know better (an attached queue is the kernel's). */
	q->tracked = p->flags & DQ_OPEN_F_TRACK;
	q->keyed = p->flags & DQ_OPEN_F_KEYS;
	q->sp = p->flags & DQ_OPEN_F_SINGLE_PRODUCER;
	q->consumer = true;
	q->on_reject = p->on_reject;
	q->reject_arg = p->reject_arg;
	return 0;
}

static int dq_locks_init(struct dqshim_queue *q)
{
	pthread_condattr_t ca;
	int ret;

	ret = pthread_condattr_init(&ca);
	if (ret)
		return -ret;
	ret = pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	if (!ret)
		ret = pthread_cond_init(&q->pcond, &ca);
	pthread_condattr_destroy(&ca);
	if (ret)
		return -ret;
	pthread_mutex_init(&q->plock, NULL);
	pthread_mutex_init(&q->cmd_lock, NULL);
	pthread_mutex_init(&q->cons_lock, NULL);
	return 0;
}

static void dq_locks_destroy(struct dqshim_queue *q)
{
	pthread_cond_destroy(&q->pcond);
	pthread_mutex_destroy(&q->plock);
	pthread_mutex_destroy(&q->cmd_lock);
	pthread_mutex_destroy(&q->cons_lock);
}

/*
 * The free pool's state, copied into a local by the loops that push or
 * pop many slots in one plock round (dq_pool_get(), dq_pool_put()): in
 * the queue, every store to a slot's word may alias these fields, so the
 * compiler would load and store each of them once a slot.
 */
struct dq_pool {
	struct dq_slot *slots;
	uint32_t *ptop;
	uint32_t top;		/* q->free_top */
	uint32_t nfree;
	uint32_t ptop_head;
	uint32_t ptop_n;
};

static inline struct dq_pool dq_pool_get(const struct dqshim_queue *q)
{
	return (struct dq_pool){
		.slots = q->slots,
		.ptop = q->ptop,
		.top = q->free_top,
		.nfree = q->nfree,
		.ptop_head = q->ptop_head,
		.ptop_n = q->ptop_n,
	};
}

static inline void dq_pool_put(struct dqshim_queue *q, const struct dq_pool *p)
{
	q->free_top = p->top;
	q->nfree = p->nfree;
	q->ptop_head = p->ptop_head;
	q->ptop_n = p->ptop_n;
}

/*
 * plock held (or the queue not yet shared): put @slot, not on the pool
 * (in_pool 0), on top of it, its state set to @state in the same store.
 * The bottom slot's next is never followed: nfree says where the stack
 * ends.
 */
static inline __attribute__((always_inline))
void dq_pool_push(struct dq_pool *p, uint32_t slot, unsigned int state)
{
	struct dq_slot *s = &p->slots[slot];
	uint32_t next = s->next;

	p->nfree++;
	if (p->ptop) {
		uint32_t *e = &p->ptop[p->ptop_head++ & (DQ_PTOP - 1)];

		if (p->ptop_n < DQ_PTOP) {
			p->ptop_n++;
		} else {
			/* Full: its oldest entry, under the new one, goes below. */
			p->slots[*e].next = p->top;
			p->top = *e;
		}
		*e = slot;
	} else {
		next = p->top;
		p->top = slot;
	}
	/* One store of the word the bit-fields share. */
	*s = (struct dq_slot){
		.gen = s->gen,
		.state = state,
		.in_pool = 1,
		.next = next,
	};
}

static void dq_pool_push_locked(struct dqshim_queue *q, uint32_t slot)
{
	struct dq_pool p = dq_pool_get(q);

	dq_pool_push(&p, slot, q->slots[slot].state);
	dq_pool_put(q, &p);
}

/* The library's per-slot state, after the backend fixed slot_count. */
static int dq_slots_init(struct dqshim_queue *q)
{
	uint32_t i;

	q->slots = calloc(q->slot_count, sizeof(*q->slots));
	q->rejbuf = calloc(q->sq_entries, sizeof(*q->rejbuf));
	if (!q->slots || !q->rejbuf)
		return -ENOMEM;
	if (q->sp) {
		q->pcache = malloc(DQ_PCACHE * sizeof(*q->pcache));
		q->ptop = malloc(DQ_PTOP * sizeof(*q->ptop));
		if (!q->pcache || !q->ptop)
			return -ENOMEM;
	}
	if (q->tracked) {
		q->deliveries = calloc(q->slot_count, sizeof(*q->deliveries));
		if (!q->deliveries)
			return -ENOMEM;
	}
	/* A stack: slot 0 comes out first. */
	q->nfree = 0;
	q->ptop_head = 0;
	q->ptop_n = 0;
	for (i = q->slot_count; i-- > 0;)
		dq_pool_push_locked(q, i);
	return 0;
}

static void dq_queue_free(struct dqshim_queue *q)
{
	free(q->slots);
	free(q->deliveries);
	free(q->pcache);
	free(q->ptop);
	free(q->rejbuf);
	free(q->cons_rejbuf);
	dq_locks_destroy(q);
	free(q);
}

/*
 * An attached queue may hold messages other processes submitted: their
 * slots are not ours until we reap them (then dq_done() frees them).
 */
int dq_slots_adopt(struct dqshim_queue *q)
{
	size_t words = ((size_t)q->slot_count + 63) / 64;
	uint64_t *bits = calloc(words, sizeof(*bits));
	uint32_t i;
	int ret;

	if (!bits)
		return -ENOMEM;
	ret = dq_kernel_slot_map(q, bits);
	if (!ret) {
		q->nfree = 0;
		q->ptop_head = 0;
		q->ptop_n = 0;
		for (i = q->slot_count; i-- > 0;) {
			q->slots[i].in_pool = 0;
			if (bits[i / 64] & (1ULL << (i % 64)))
				q->slots[i].state = DQ_SLOT_QUEUED;
			else
				dq_pool_push_locked(q, i);
		}
	}
	free(bits);
	return ret;
}

/*
 * @adopt: an attached queue takes its free slots now (dq_slots_adopt());
 * a durable one does it later, under its journal's write lock.
 */
static int dq_queue_open_common(const struct dq_params *p, const char *name,
				bool adopt, struct dqshim_queue **out)
{
	struct dq_params defaults;
	struct dqshim_queue *q;
	int ret;

	if (!out)
		return -EINVAL;
	*out = NULL;
	if (!p) {
		dq_params_init(&defaults);
		p = &defaults;
	}
	/* Another process may fill a slot this one thinks free: no cache. */
	if (name && (p->flags & DQ_OPEN_F_SINGLE_PRODUCER))
		return -EINVAL;
	q = calloc(1, sizeof(*q));
	if (!q)
		return -ENOMEM;
	q->fd = -1;
	ret = dq_params_normalise(q, p);
	if (ret) {
		free(q);
		return ret;
	}
	ret = dq_locks_init(q);
	if (ret) {
		free(q);
		return ret;
	}

	switch (name ? DQ_BACKEND_KERNEL : p->backend) {
	case DQ_BACKEND_KERNEL:
		ret = dq_kernel_open(q, p->flags, name);
		break;
	case DQ_BACKEND_USER:
		ret = dq_user_open(q);
		break;
	default:
		ret = dq_kernel_open(q, p->flags, NULL);
		if (ret) {
			/* The kernel backend cleans up after itself. */
			dq_params_normalise(q, p);
			ret = dq_user_open(q);
		}
		break;
	}
	if (ret) {
		dq_locks_destroy(q);
		free(q);
		return ret;
	}
	ret = dq_slots_init(q);
	if (!ret && name && adopt)
		ret = dq_slots_adopt(q);
	if (ret) {
		q->ops->close(q);
		dq_queue_free(q);
		return ret;
	}
	*out = q;
	return 0;
}

/*
 * The caller's dq_params (of its own sz, dq_abi.c) as this library's, in
 * @buf; NULL stays NULL.  Returns the struct to use or NULL with *@ret set.
 */
static const struct dq_params *dq_params_get(const struct dq_params *p,
					     struct dq_params *buf, int *ret)
{
	*ret = 0;
	if (!p)
		return NULL;
	*ret = dq_params_in(buf, p);
	return *ret ? NULL : buf;
}

static int dq_fail(struct dqshim_queue **out, int ret)
{
	if (out)
		*out = NULL;
	return ret;
}

DQ_API int dq_queue_open(const struct dq_params *p, struct dqshim_queue **out)
{
	struct dq_params buf;
	int ret;

	p = dq_params_get(p, &buf, &ret);
	if (ret)
		return dq_fail(out, ret);
	return dq_queue_open_common(p, NULL, false, out);
}

DQ_API int dq_queue_attach(const char *name, const struct dq_params *p,
			   struct dqshim_queue **out)
{
	struct dq_params buf;
	int ret;

	if (!name || !*name)
		return dq_fail(out, -EINVAL);
	p = dq_params_get(p, &buf, &ret);
	if (ret)
		return dq_fail(out, ret);
	return dq_queue_open_common(p, name, true, out);
}

DQ_API int dq_queue_open_durable(const struct dq_params *p,
				 const struct dq_journal_params *jp,
				 struct dqshim_queue **out)
{
	struct dq_journal_params jbuf;
	struct dq_params buf;
	struct dqshim_queue *q;
	int ret;

	p = dq_params_get(p, &buf, &ret);
	if (!ret && jp) {
		ret = dq_journal_params_in(&jbuf, jp);
		jp = &jbuf;
	}
	if (ret)
		return dq_fail(out, ret);
	if (!jp || jp->durability == DQ_DURABLE_NONE)
		return dq_queue_open_common(p, NULL, false, out);
	if (!out)
		return -EINVAL;
	/* The journal's commit step runs under plock: no lock-free path. */
	if (p && (p->flags & DQ_OPEN_F_SINGLE_PRODUCER)) {
		*out = NULL;
		return -EINVAL;
	}
	ret = dq_queue_open_common(p, NULL, false, out);
	if (ret)
		return ret;
	q = *out;
	ret = dq_journal_open(q, jp, false);
	if (ret) {
		*out = NULL;
		dq_queue_close(q);
	}
	return ret;
}

DQ_API int dq_queue_attach_durable(const char *name, const struct dq_params *p,
				   const struct dq_journal_params *jp,
				   struct dqshim_queue **out)
{
	struct dq_journal_params jbuf;
	struct dq_params buf;
	struct dqshim_queue *q;
	int ret;

	if (!jp || jp->durability == DQ_DURABLE_NONE)
		return dq_queue_attach(name, p, out);
	if (!out || !name || !*name)
		return -EINVAL;
	p = dq_params_get(p, &buf, &ret);
	if (!ret)
		ret = dq_journal_params_in(&jbuf, jp);
	if (ret)
		return dq_fail(out, ret);
	jp = &jbuf;
	/*
	 * Slots are adopted inside dq_journal_open(), under the journal's
	 * write lock: a process recovering the journal into the queue
	 * meanwhile takes slots and submit ring entries this one must see.
	 */
	ret = dq_queue_open_common(p, name, false, out);
	if (ret)
		return ret;
	q = *out;
	ret = dq_journal_open(q, jp, true);
	if (ret) {
		*out = NULL;
		dq_queue_close(q);	/* the queue and what it holds stay */
	}
	return ret;
}

DQ_API void dq_queue_close(struct dqshim_queue *q)
{
	if (!q)
		return;
	/* Durable: what the queue holds stays in the journal. */
	dq_journal_close(q);
	q->ops->close(q);
	dq_queue_free(q);
}

DQ_API enum dq_backend dq_queue_backend(const struct dqshim_queue *q)
{
	return q->backend;
}

DQ_API const char *dq_backend_name(enum dq_backend b)
{
	switch (b) {
	case DQ_BACKEND_AUTO:
		return "auto";
	case DQ_BACKEND_KERNEL:
		return "kernel";
	case DQ_BACKEND_USER:
		return "user";
	}
	return "unknown";
}

DQ_API const char *dq_path_name(enum dq_path p)
{
	switch (p) {
	case DQ_PATH_LOCAL:
		return "local";
	case DQ_PATH_URING:
		return "uring";
	case DQ_PATH_IOCTL:
		return "ioctl";
	}
	return "unknown";
}

DQ_API int dq_queue_info(const struct dqshim_queue *q, struct dq_info *out)
{
	struct dq_info i = { .sz = sizeof(i) }, *info = &i;

	if (dq_struct_out_check(out))
		return -EINVAL;
	info->backend = q->backend;
	info->path = q->path;
	info->fd = q->fd;
	info->numa_node = q->numa_node;
	info->queue_id = q->queue_id;
	info->abi_version = q->abi_version;
	info->features = q->features;
	info->slot_count = q->slot_count;
	info->slot_size = q->slot_size;
	info->submit_entries = q->sq_entries;
	info->ready_entries = q->rq_entries;
	info->granularity_ns = q->granularity_ns;
	info->arena = q->arena;
	info->arena_size = q->arena_size;
	dq_struct_out(out, info, sizeof(*info));
	return 0;
}

DQ_API int dq_queue_fd(const struct dqshim_queue *q)
{
	return q->fd;
}

DQ_API int dq_queue_get_stats(struct dqshim_queue *q, struct dq_queue_stats *st)
{
	memset(st, 0, sizeof(*st));
	return q->ops->stats(q, st);
}

/* ---- free pool ----------------------------------------------------- */

/*
 * plock held.  Wakes nobody: the caller calls dq_pool_wake_locked() once
 * for the slots it freed in this lock round.
 */
static inline __attribute__((always_inline))
void dq_pool_free(struct dq_pool *p, uint32_t slot)
{
	struct dq_slot *s = &p->slots[slot];

	if (s->in_pool)
		s->state = DQ_SLOT_FREE;
	else
		dq_pool_push(p, slot, DQ_SLOT_FREE);
}

static void dq_slot_free_locked(struct dqshim_queue *q, uint32_t slot)
{
	struct dq_pool p = dq_pool_get(q);

	dq_pool_free(&p, slot);
	dq_pool_put(q, &p);
}

/*
 * plock held, @freed slots just went back to the pool: wake producers
 * in dq_reserve_wait() only if there are some, once per lock round, not
 * once per slot (a wake-up a producer does not need is a futex call on
 * the freeing thread's path, and a woken producer then contends for
 * plock).  One slot: one waiter; more: all of them (each takes one;
 * those that find none wait again).
 */
static void dq_pool_wake_locked(struct dqshim_queue *q, unsigned int freed)
{
	if (!q->waiters || !freed)
		return;
	q->producer_wakes++;
	if (freed > 1 && q->waiters > 1)
		pthread_cond_broadcast(&q->pcond);
	else
		pthread_cond_signal(&q->pcond);
}

/* plock held: a free slot off the pool, dropping stale entries. */
static inline __attribute__((always_inline))
bool dq_pool_pop(struct dq_pool *p, uint32_t *slot)
{
	while (p->nfree) {
		uint32_t i;

		if (p->ptop_n) {
			p->ptop_n--;
			i = p->ptop[--p->ptop_head & (DQ_PTOP - 1)];
		} else {
			i = p->top;
			p->top = p->slots[i].next;
		}
		p->nfree--;
		p->slots[i].in_pool = 0;
		if (p->slots[i].state == DQ_SLOT_FREE) {
			*slot = i;
			return true;
		}
	}
	return false;
}

static bool dq_slot_pop_locked(struct dqshim_queue *q, uint32_t *slot)
{
	struct dq_pool p = dq_pool_get(q);
	bool ret = dq_pool_pop(&p, slot);

	dq_pool_put(q, &p);
	return ret;
}

/* plock held, @slot just taken off the pool. */
static void dq_slot_take_locked(struct dqshim_queue *q, struct dqshim_msg *m,
				uint32_t slot)
{
	struct dq_slot *s = &q->slots[slot];

	s->gen++;
	s->state = DQ_SLOT_RESERVED;
	m->slot = slot;
	m->gen = s->gen;
	m->cap = q->slot_size;
	m->attempts = 0;
	m->resv = 0;
	m->data = q->arena + (size_t)slot * q->slot_size;
	m->handle = DQ_HANDLE(slot, s->gen);
}

/*
 * Single producer: fill the producer's cache from the pool, one plock
 * round for up to DQ_PCACHE slots.  Called with the cache empty.
 */
static __attribute__((noinline)) void dq_pcache_refill(struct dqshim_queue *q)
{
	uint32_t slot, n = q->pcache_n;
	struct dq_pool p;

	pthread_mutex_lock(&q->plock);
	p = dq_pool_get(q);
	while (n < DQ_PCACHE && dq_pool_pop(&p, &slot))
		q->pcache[n++] = slot;
	dq_pool_put(q, &p);
	q->pcache_n = n;
	q->pool_refills++;
	pthread_mutex_unlock(&q->plock);
}

/* Single producer: a slot off the cache (refilled when empty), no lock. */
static inline bool dq_pcache_take(struct dqshim_queue *q,
				  struct dqshim_msg *m)
{
	if (!q->pcache_n) {
		dq_pcache_refill(q);
		if (!q->pcache_n)
			return false;
	}
	/* plock_take's work, on a slot only this thread can see. */
	dq_slot_take_locked(q, m, q->pcache[--q->pcache_n]);
	return true;
}

/* dq_reserve() when it needs a lock: a refill, or several producers. */
static __attribute__((noinline)) int dq_reserve_slow(struct dqshim_queue *q,
						      struct dqshim_msg *m)
{
	uint32_t slot;
	int ret = 0;

	if (q->sp)
		return dq_pcache_take(q, m) ? 0 : -ENOSPC;
	pthread_mutex_lock(&q->plock);
	if (dq_slot_pop_locked(q, &slot))
		dq_slot_take_locked(q, m, slot);
	else
		ret = -ENOSPC;
	pthread_mutex_unlock(&q->plock);
	return ret;
}

/*
 * The single producer's common case, a slot in its cache, calls nothing,
 * so it is a leaf that saves no registers; the rest is out of line.
 */
DQ_API int dq_reserve(struct dqshim_queue *q, struct dqshim_msg *m)
{
	if (q->sp && q->pcache_n) {
		uint32_t n = --q->pcache_n;

		dq_slot_take_locked(q, m, q->pcache[n]);
		/*
		 * The next reserve's slot, for writing: the producer fills
		 * a payload right after each reserve, and the slot it gets
		 * next was last read by the consumer (or not at all for a
		 * long time), so its lines are elsewhere.  Two lines, as
		 * dq_reaped_prefetch(); the hardware follows the writer.
		 */
		if (n) {
			const char *next = (const char *)q->arena +
					   (size_t)q->pcache[n - 1] * q->slot_size;

			__builtin_prefetch(next, 1, 3);
			__builtin_prefetch(next + 64, 1, 3);
		}
		return 0;
	}
	return dq_reserve_slow(q, m);
}

DQ_API int dq_reserve_wait(struct dqshim_queue *q, struct dqshim_msg *m,
			   int64_t timeout_ns)
{
	struct timespec deadline;
	uint32_t slot = 0;
	int ret = 0;

	if (timeout_ns > 0) {
		uint64_t at = dq_mono_ns() + (uint64_t)timeout_ns;

		deadline.tv_sec = (time_t)(at / 1000000000ULL);
		deadline.tv_nsec = (long)(at % 1000000000ULL);
	}
	/* Single producer: the cache first; waiting is on the pool. */
	if (q->sp && dq_pcache_take(q, m))
		return 0;
	pthread_mutex_lock(&q->plock);
	while (!dq_slot_pop_locked(q, &slot)) {
		if (timeout_ns == 0) {
			ret = -ETIME;
			break;
		}
		q->waiters++;
		if (timeout_ns < 0)
			ret = pthread_cond_wait(&q->pcond, &q->plock);
		else
			ret = pthread_cond_timedwait(&q->pcond, &q->plock,
						     &deadline);
		q->waiters--;
		if (ret == ETIMEDOUT && !q->nfree) {
			ret = -ETIME;
			break;
		}
		ret = 0;
	}
	if (!ret)
		dq_slot_take_locked(q, m, slot);
	pthread_mutex_unlock(&q->plock);
	return ret;
}

DQ_API int dq_abort(struct dqshim_queue *q, const struct dqshim_msg *m)
{
	int ret = -EINVAL;

	if (m->slot >= q->slot_count)
		return -EINVAL;
	/* Single producer: a RESERVED slot is this thread's alone. */
	if (q->sp && q->pcache_n < DQ_PCACHE) {
		if (q->slots[m->slot].state != DQ_SLOT_RESERVED ||
		    q->slots[m->slot].gen != m->gen)
			return -EINVAL;
		q->slots[m->slot].state = DQ_SLOT_FREE;
		q->pcache[q->pcache_n++] = m->slot;
		return 0;
	}
	pthread_mutex_lock(&q->plock);
	if (q->slots[m->slot].state == DQ_SLOT_RESERVED &&
	    q->slots[m->slot].gen == m->gen) {
		dq_slot_free_locked(q, m->slot);
		dq_pool_wake_locked(q, 1);
		ret = 0;
	}
	pthread_mutex_unlock(&q->plock);
	return ret;
}

/*
 * An untracked queue's reaped slot back to the pool; with @r, only while
 * it holds @r's message.
 */
static int dq_slot_done(struct dqshim_queue *q, uint32_t slot,
			const struct dq_reaped *r)
{
	int ret = -EINVAL;

	pthread_mutex_lock(&q->plock);
	if (q->slots[slot].state == DQ_SLOT_READY && r &&
	    q->slots[slot].gen != DQ_HANDLE_GEN(r->handle)) {
		ret = -ENOENT;
	} else if (q->slots[slot].state == DQ_SLOT_READY) {
		if (q->journal)
			dq_journal_retire_locked(q, slot, DQJ_RETIRE_DONE);
		dq_slot_free_locked(q, slot);
		dq_pool_wake_locked(q, 1);
		ret = 0;
	}
	pthread_mutex_unlock(&q->plock);
	return ret;
}

/*
 * The slot is FINISHING while the engine is asked, so a second finish of
 * it fails at once and nothing reserves it; it goes back to the pool only
 * when the engine accepted the DONE, and back to READY when not.
 */
static int dq_finish_delivery(struct dqshim_queue *q, uint32_t slot,
			      uint32_t outcome, const struct dq_reaped *r)
{
	struct dq_slot *s;
	struct dq_done d;
	int ret;

	if (slot >= q->slot_count || outcome >= DQ_DONE_NR)
		return -EINVAL;
	if (!q->tracked)
		return outcome == DQ_DONE_DELIVERED ?
		       dq_slot_done(q, slot, r) : -EOPNOTSUPP;
	if (!q->consumer)
		return -EPERM;
	s = &q->slots[slot];
	memset(&d, 0, sizeof(d));
	pthread_mutex_lock(&q->plock);
	if (s->state != DQ_SLOT_READY) {
		pthread_mutex_unlock(&q->plock);
		return -EINVAL;
	}
	/* Reaped since @r: another message, or the same one again. */
	if (r && (q->deliveries[slot].gen != DQ_HANDLE_GEN(r->handle) ||
		  q->deliveries[slot].redeliveries != r->redeliveries)) {
		ret = q->deliveries[slot].gen != DQ_HANDLE_GEN(r->handle) ?
		      -ENOENT : -ESTALE;
		pthread_mutex_unlock(&q->plock);
		return ret;
	}
	s->state = DQ_SLOT_FINISHING;
	d.handle = DQ_HANDLE(slot, q->deliveries[slot].gen);
	d.redeliveries = q->deliveries[slot].redeliveries;
	d.outcome = (uint16_t)outcome;
	pthread_mutex_unlock(&q->plock);

	ret = q->ops->done(q, &d);

	pthread_mutex_lock(&q->plock);
	if (!ret) {
		if (q->journal)
			dq_journal_retire_locked(q, slot,
				outcome == DQ_DONE_DELIVERED ?
				DQJ_RETIRE_DONE : DQJ_RETIRE_FAILED);
		dq_slot_free_locked(q, slot);
		dq_pool_wake_locked(q, 1);
	} else {
		s->state = DQ_SLOT_READY;
	}
	pthread_mutex_unlock(&q->plock);
	return ret;
}

DQ_API int dq_finish(struct dqshim_queue *q, uint32_t slot, uint32_t outcome)
{
	return dq_finish_delivery(q, slot, outcome, NULL);
}

DQ_API int dq_finish_reaped(struct dqshim_queue *q, const struct dq_reaped *r,
			    uint32_t outcome)
{
	if (!r)
		return -EINVAL;
	return dq_finish_delivery(q, r->slot, outcome, r);
}

/* Entries of one engine call of dq_finish_n(): the stack holds them. */
#define DQ_FINISH_CHUNK	64U

/*
 * One chunk of dq_finish_n() on a tracked queue: the slots that are
 * reaped become FINISHING (so a slot named twice, or finished meanwhile
 * by another thread, fails at once), one engine call, then each goes to
 * the pool or back to READY.  Returns the number finished or the call's
 * -errno (every slot back to READY).
 */
static int dq_finish_chunk(struct dqshim_queue *q, const uint32_t *slots,
			   unsigned int n, uint32_t outcome, int *results)
{
	struct dq_done d[DQ_FINISH_CHUNK];
	unsigned int idx[DQ_FINISH_CHUNK];
	unsigned int i, k = 0;
	int ret = 0, done = 0;

	pthread_mutex_lock(&q->plock);
	for (i = 0; i < n; i++) {
		uint32_t slot = slots[i];

		if (slot >= q->slot_count ||
		    q->slots[slot].state != DQ_SLOT_READY) {
			results[i] = -EINVAL;
			continue;
		}
		q->slots[slot].state = DQ_SLOT_FINISHING;
		memset(&d[k], 0, sizeof(d[k]));
		d[k].handle = DQ_HANDLE(slot, q->deliveries[slot].gen);
		d[k].redeliveries = q->deliveries[slot].redeliveries;
		d[k].outcome = (uint16_t)outcome;
		idx[k++] = i;
	}
	pthread_mutex_unlock(&q->plock);
	if (!k)
		return 0;

	if (q->ops->done_n) {
		ret = q->ops->done_n(q, d, k);
	} else {
		for (i = 0; i < k; i++)
			d[i].result = q->ops->done(q, &d[i]);
	}

	pthread_mutex_lock(&q->plock);
	for (i = 0; i < k; i++) {
		uint32_t slot = slots[idx[i]];

		if (ret >= 0 && !d[i].result) {
			if (q->journal)
				dq_journal_retire_locked(q, slot,
					outcome == DQ_DONE_DELIVERED ?
					DQJ_RETIRE_DONE : DQJ_RETIRE_FAILED);
			dq_slot_free_locked(q, slot);
			results[idx[i]] = 0;
			done++;
		} else {
			q->slots[slot].state = DQ_SLOT_READY;
			results[idx[i]] = ret < 0 ? ret : d[i].result;
		}
	}
	dq_pool_wake_locked(q, (unsigned int)done);
	pthread_mutex_unlock(&q->plock);
	return ret < 0 ? ret : done;
}

DQ_API int dq_finish_n(struct dqshim_queue *q, const uint32_t *slots,
		       unsigned int n, uint32_t outcome, int *results)
{
	int own[DQ_FINISH_CHUNK], *res;
	unsigned int at, i;
	int done = 0, ret;

	if ((!slots && n) || outcome >= DQ_DONE_NR || n > INT_MAX)
		return -EINVAL;
	if (!q->tracked) {
		if (outcome != DQ_DONE_DELIVERED)
			return -EOPNOTSUPP;
		pthread_mutex_lock(&q->plock);
		/*
		 * The common case, no journal and no results wanted, tests
		 * nothing but the slot's state per slot (the compiler does
		 * not hoist the other tests: the stores may alias them).
		 */
		if (!q->journal && !results) {
			struct dq_pool p = dq_pool_get(q);
			const uint32_t count = q->slot_count;

			for (i = 0; i < n; i++) {
				uint32_t slot = slots[i];

				if (slot < count &&
				    p.slots[slot].state == DQ_SLOT_READY) {
					dq_pool_free(&p, slot);
					done++;
				}
			}
			dq_pool_put(q, &p);
		} else {
			for (i = 0; i < n; i++) {
				uint32_t slot = slots[i];
				int r = -EINVAL;

				if (slot < q->slot_count &&
				    q->slots[slot].state == DQ_SLOT_READY) {
					if (q->journal)
						dq_journal_retire_locked(q, slot,
							DQJ_RETIRE_DONE);
					dq_slot_free_locked(q, slot);
					r = 0;
					done++;
				}
				if (results)
					results[i] = r;
			}
		}
		dq_pool_wake_locked(q, (unsigned int)done);
		pthread_mutex_unlock(&q->plock);
		return done;
	}
	if (!q->consumer)
		return -EPERM;
	for (at = 0; at < n; at += DQ_FINISH_CHUNK) {
		unsigned int c = n - at < DQ_FINISH_CHUNK ? n - at :
				 DQ_FINISH_CHUNK;

		res = results ? results + at : own;
		ret = dq_finish_chunk(q, slots + at, c, outcome, res);
		if (ret < 0) {
			/* The rest is not looked at: say so per slot. */
			if (results)
				for (i = at + c; i < n; i++)
					results[i] = ret;
			return done ? done : ret;
		}
		done += ret;
	}
	return done;
}

DQ_API int dq_done_n(struct dqshim_queue *q, const uint32_t *slots,
		     unsigned int n, int *results)
{
	return dq_finish_n(q, slots, n, DQ_DONE_DELIVERED, results);
}

DQ_API int dq_reserve_n(struct dqshim_queue *q, struct dqshim_msg *m,
			unsigned int n)
{
	unsigned int got = 0;
	uint32_t slot;

	if (!m || !n || n > INT_MAX)
		return -EINVAL;
	/*
	 * Single producer: what the cache holds first, then straight from
	 * the pool like any producer: the batch already pays one lock round
	 * for up to @n, and going through the cache would copy each slot
	 * number twice.
	 */
	if (q->sp) {
		while (got < n && q->pcache_n)
			dq_slot_take_locked(q, &m[got++],
					    q->pcache[--q->pcache_n]);
		if (got == n)
			return (int)got;
	}
	pthread_mutex_lock(&q->plock);
	while (got < n && dq_slot_pop_locked(q, &slot))
		dq_slot_take_locked(q, &m[got++], slot);
	pthread_mutex_unlock(&q->plock);
	return got ? (int)got : -ENOSPC;
}

DQ_API int dq_done(struct dqshim_queue *q, uint32_t slot)
{
	if (slot >= q->slot_count)
		return -EINVAL;
	if (q->tracked)
		return dq_finish(q, slot, DQ_DONE_DELIVERED);
	return dq_slot_done(q, slot, NULL);
}

DQ_API int dq_queue_lib_stats(struct dqshim_queue *q, struct dq_lib_stats *out)
{
	struct dq_lib_stats s = { .sz = sizeof(s) }, *st = &s;
	int ret = 0;

	if (dq_struct_out_check(out))
		return -EINVAL;
	if (q->ops->lib_stats)
		ret = q->ops->lib_stats(q, st);
	pthread_mutex_lock(&q->plock);
	st->producer_wakes = q->producer_wakes;
	st->pool_refills = q->pool_refills;
	pthread_mutex_unlock(&q->plock);
	dq_struct_out(out, st, sizeof(*st));
	return ret;
}

DQ_API int dq_queue_track_stats(struct dqshim_queue *q,
				struct dq_track_stats *st)
{
	memset(st, 0, sizeof(*st));
	return q->ops->track_stats(q, st);
}

/* ---- submit ring producer ------------------------------------------ */

/*
 * Put one descriptor in the batch at *@tail (the ring index not yet
 * published); @flags: DQ_DESC_F_RELATIVE, and DQ_DESC_F_KEY (+ _REPLACE)
 * from dq_commit_key() only.  A tracked queue's attempt count rides in
 * resv (DQ_DESC_F_ATTEMPTS).  plock held, or the single producer.
 * @may_journal false: the caller knows the queue has no journal (a
 * constant, so that the call below is not compiled in at all).
 */
static inline __attribute__((always_inline))
int dq_commit_put(struct dqshim_queue *q, uint32_t *tail,
			 const struct dqshim_msg *m, uint32_t len,
			 uint64_t due_ns, uint16_t flags, uint64_t user_data,
			 const bool may_journal)
{
	struct dq_slot *s;
	struct dq_desc *d;
	int ret;

	if (m->slot >= q->slot_count)
		return -EINVAL;
	if (len > q->slot_size)
		return -EMSGSIZE;
	if (m->attempts && !q->tracked)
		return -EINVAL;
	if (m->attempts)
		flags |= DQ_DESC_F_ATTEMPTS;
	s = &q->slots[m->slot];
	if (s->state != DQ_SLOT_RESERVED || s->gen != m->gen)
		return -EINVAL;
	/* Entries the engine has copied may be reused: its store-release. */
	if (*tail - dq_load_acquire_u32(q->sq_cons) >= q->sq_entries)
		return -EAGAIN;
	/* Durable: the message's journal id and its bytes (the last check). */
	if (may_journal && q->journal && !q->jreplay) {
		ret = dq_journal_commit_locked(q, m->slot, len);
		if (ret)
			return ret;
	}
	d = &q->sq_ring[*tail & (q->sq_entries - 1)];
	d->due_ns = due_ns;
	d->user_data = user_data;
	d->slot = m->slot;
	d->len = len;
	d->gen = m->gen;
	d->flags = flags;
	d->resv = m->attempts;
	s->state = DQ_SLOT_QUEUED;
	(*tail)++;
	return 0;
}

/* After dq_commit_put()s: @tail is the new end of the batch. */
static void dq_commit_publish(struct dqshim_queue *q, uint32_t tail)
{
	if (q->journal) {
		/* dq_flush() publishes it, after its journal record. */
		__atomic_store_n(&q->sq_tail, tail, __ATOMIC_RELAXED);
		return;
	}
	q->sq_tail = tail;
	/* Descriptors before index: pairs with the engine's load-acquire. */
	dq_store_release_u32(q->sq_prod, tail);
}

/* dq_commit_desc() of several producers, or of a durable queue. */
static __attribute__((noinline))
int dq_commit_locked(struct dqshim_queue *q, const struct dqshim_msg *m,
		     uint32_t len, uint64_t due_ns, uint16_t flags,
		     uint64_t user_data)
{
	uint32_t tail;
	int ret;

	if (!q->sp)
		pthread_mutex_lock(&q->plock);
	tail = q->sq_tail;
	ret = dq_commit_put(q, &tail, m, len, due_ns, flags, user_data, true);
	if (!ret)
		dq_commit_publish(q, tail);
	if (!q->sp)
		pthread_mutex_unlock(&q->plock);
	return ret;
}

/*
 * Single producer: the slot and the tail are this thread's, and there is
 * no journal (durable queues refuse the flag), so nothing to lock and no
 * call to make: inlined into each dq_commit*(), which is then a leaf that
 * saves no registers.  Else out of line.
 */
static inline __attribute__((always_inline))
int dq_commit_desc(struct dqshim_queue *q, const struct dqshim_msg *m,
		   uint32_t len, uint64_t due_ns, uint16_t flags,
		   uint64_t user_data)
{
	uint32_t tail;
	int ret;

	if (!q->sp || q->journal)
		return dq_commit_locked(q, m, len, due_ns, flags, user_data);
	tail = q->sq_tail;
	ret = dq_commit_put(q, &tail, m, len, due_ns, flags, user_data, false);
	if (!ret) {
		q->sq_tail = tail;
		/* Descriptor before index: the engine's load-acquire. */
		dq_store_release_u32(q->sq_prod, tail);
	}
	return ret;
}

DQ_API int dq_commit_n(struct dqshim_queue *q, const struct dq_commit_ent *ent,
		       unsigned int n)
{
	unsigned int i;
	uint32_t tail;
	int ret = 0;

	if ((!ent && n) || n > INT_MAX)
		return -EINVAL;
	for (i = 0; i < n; i++)
		if (!ent[i].msg || (ent[i].flags & ~DQ_COMMIT_F_RELATIVE))
			return -EINVAL;
	if (!n)
		return 0;
	if (!q->sp)
		pthread_mutex_lock(&q->plock);
	tail = q->sq_tail;
	for (i = 0; i < n; i++) {
		ret = dq_commit_put(q, &tail, ent[i].msg, ent[i].len,
				    ent[i].due_ns,
				    ent[i].flags & DQ_COMMIT_F_RELATIVE ?
				    DQ_DESC_F_RELATIVE : 0, ent[i].user_data,
				    true);
		if (ret)
			break;
	}
	if (i)
		dq_commit_publish(q, tail);
	if (!q->sp)
		pthread_mutex_unlock(&q->plock);
	return i ? (int)i : ret;
}

DQ_API int dq_commit(struct dqshim_queue *q, const struct dqshim_msg *m, uint32_t len,
		     uint64_t due_ns, uint64_t user_data)
{
	return dq_commit_desc(q, m, len, due_ns, 0, user_data);
}

DQ_API int dq_commit_key(struct dqshim_queue *q, const struct dqshim_msg *m,
			 uint32_t len, uint64_t due_ns, uint64_t key,
			 unsigned int flags)
{
	uint16_t dflags = DQ_DESC_F_KEY;

	if (!q->keyed || (flags & ~DQ_COMMIT_F_ALL))
		return -EINVAL;
	if (flags & DQ_COMMIT_F_RELATIVE)
		dflags |= DQ_DESC_F_RELATIVE;
	if (flags & DQ_COMMIT_F_REPLACE)
		dflags |= DQ_DESC_F_REPLACE;
	return dq_commit_desc(q, m, len, due_ns, dflags, key);
}

/*
 * The engine adds the delay to its own clock when it takes the message
 * (DQ_DESC_F_RELATIVE): a delayed message can then never sort before one
 * the engine has already released.
 */
DQ_API int dq_commit_delay(struct dqshim_queue *q, const struct dqshim_msg *m,
			   uint32_t len, uint64_t delay_ns, uint64_t user_data)
{
	/* Too long a delay is the engine's to reject and report. */
	return dq_commit_desc(q, m, len, delay_ns, DQ_DESC_F_RELATIVE,
			      user_data);
}

/*
 * The engine took back the message in @slot (cancelled, or replaced by
 * key); plock held.  A QUEUED slot is the usual case.  On a tracked queue
 * a READY one is a message this process holds whose redelivery had not
 * reached it yet (the engine had it back waiting for a credit or for room
 * on the ready ring, where it can be cancelled or replaced): its delivery
 * is void, so the slot is free, and a finish of it says -EINVAL.  A
 * FINISHING one is left to its finish (the engine refuses that DONE: the
 * slot stays held, see docs/api.md).  @gen: the message's, or UINT32_MAX
 * when the engine did not say (a replace names only the slot).  True when
 * the slot was freed.
 */
static bool dq_slot_taken_back_locked(struct dqshim_queue *q, uint32_t slot,
				      uint32_t gen, unsigned int why)
{
	struct dq_slot *s = &q->slots[slot];

	if (s->state == DQ_SLOT_QUEUED) {
		if (gen != UINT32_MAX && s->gen != gen)
			return false;
	} else if (s->state != DQ_SLOT_READY || !q->tracked ||
		   (gen != UINT32_MAX && q->deliveries[slot].gen != gen)) {
		return false;
	}
	if (q->journal)
		dq_journal_retire_locked(q, slot, why);
	dq_slot_free_locked(q, slot);
	return true;
}

/*
 * The engine rejected these descriptors: their slots are the library's
 * again.  Called with cmd_lock held (the reject buffer is under it).
 */
static void dq_rejects_handle(struct dqshim_queue *q, const struct dq_reject *rej,
			      uint32_t n)
{
	unsigned int freed = 0;
	uint32_t i;

	pthread_mutex_lock(&q->plock);
	for (i = 0; i < n; i++) {
		uint32_t slot = rej[i].slot;
		bool freed_one = false;

		/* Only a replaced message can be one this process holds. */
		if (slot < q->slot_count && rej[i].reason == DQ_REPLACED)
			freed_one = dq_slot_taken_back_locked(q, slot,
					UINT32_MAX, DQJ_RETIRE_REPLACED);
		else if (slot < q->slot_count &&
			 q->slots[slot].state == DQ_SLOT_QUEUED)
			freed_one = dq_slot_taken_back_locked(q, slot,
					UINT32_MAX, DQJ_RETIRE_REJECTED);
		if (freed_one)
			freed++;
		else
			q->anomalies++;
	}
	dq_pool_wake_locked(q, freed);
	pthread_mutex_unlock(&q->plock);
	if (q->on_reject)
		for (i = 0; i < n; i++)
			q->on_reject(q->reject_arg, &rej[i]);
}

static bool dq_batch_empty(struct dqshim_queue *q)
{
	/*
	 * Durable: committed entries are unpublished until the flush.  On a
	 * named queue another process (the producer) may have published
	 * past this one's own tail: empty is "nothing of ours unconsumed".
	 */
	if (q->journal)
		return (int32_t)(__atomic_load_n(&q->sq_tail, __ATOMIC_RELAXED) -
				 dq_load_acquire_u32(q->sq_cons)) <= 0;
	return dq_load_acquire_u32(q->sq_prod) ==
	       dq_load_acquire_u32(q->sq_cons);
}

/*
 * Durable queue: write the records of what was committed since the last
 * flush, then publish it to the engine.  cmd_lock held, so records are
 * written in ring order and no entry is published twice.
 */
static int dq_flush_journal(struct dqshim_queue *q)
{
	uint32_t from = *q->sq_prod, to;
	int ret = 0;

	pthread_mutex_lock(&q->plock);
	to = q->sq_tail;
	pthread_mutex_unlock(&q->plock);
	/*
	 * Nothing of ours: on a named queue the index may be past our own
	 * tail (another process published), and must never go back.
	 */
	if ((int32_t)(to - from) <= 0)
		return 0;
	if (!q->jreplay)
		ret = dq_journal_write_batch(q, from, to);
	if (!ret)
		dq_store_release_u32(q->sq_prod, to);
	return ret;
}

/* dq_prep_submit() of a durable queue: records written, batch published. */
int dq_publish_durable(struct dqshim_queue *q)
{
	int ret;

	pthread_mutex_lock(&q->cmd_lock);
	ret = dq_flush_journal(q);
	pthread_mutex_unlock(&q->cmd_lock);
	return ret;
}

DQ_API int dq_flush(struct dqshim_queue *q)
{
	struct dq_submit s;
	int ret;

	/* A commit racing with this check is flushed by its own producer. */
	if (dq_batch_empty(q))
		return 0;
	pthread_mutex_lock(&q->cmd_lock);
	if (q->journal) {
		ret = dq_flush_journal(q);
		if (ret) {
			pthread_mutex_unlock(&q->cmd_lock);
			return ret;
		}
	}
	memset(&s, 0, sizeof(s));
	s.rejects = (uint64_t)(uintptr_t)q->rejbuf;
	s.reject_cap = q->sq_entries;
	ret = q->ops->submit(q, &s);
	if (ret >= 0 && s.rejected)
		dq_rejects_handle(q, q->rejbuf, s.rejected < s.reject_cap ?
				  s.rejected : s.reject_cap);
	pthread_mutex_unlock(&q->cmd_lock);
	return ret;
}

/* The engine says @handle was cancelled: its slot is free again. */
static void dq_cancelled(struct dqshim_queue *q, uint64_t handle)
{
	uint32_t slot = DQ_HANDLE_SLOT(handle);

	pthread_mutex_lock(&q->plock);
	if (slot < q->slot_count &&
	    dq_slot_taken_back_locked(q, slot, DQ_HANDLE_GEN(handle),
				      DQJ_RETIRE_CANCELLED))
		dq_pool_wake_locked(q, 1);
	else
		q->anomalies++;
	pthread_mutex_unlock(&q->plock);
}

DQ_API int dq_cancel(struct dqshim_queue *q, uint64_t handle)
{
	int ret;

	if (DQ_HANDLE_SLOT(handle) >= q->slot_count)
		return -ENOENT;
	if (!dq_batch_empty(q)) {
		ret = dq_flush(q);
		if (ret < 0)
			return ret;
	}
	pthread_mutex_lock(&q->cmd_lock);
	ret = q->ops->cancel(q, handle);
	pthread_mutex_unlock(&q->cmd_lock);
	if (ret == 0)
		dq_cancelled(q, handle);
	return ret;
}

/* DQ_IOC_KEY after a flush (a committed message is the engine's then). */
static int dq_key_op(struct dqshim_queue *q, uint64_t key, uint32_t op,
		     struct dq_key_info *out)
{
	struct dq_key_op k;
	int ret;

	if (!q->keyed)
		return -EOPNOTSUPP;
	if (!dq_batch_empty(q)) {
		ret = dq_flush(q);
		if (ret < 0)
			return ret;
	}
	memset(&k, 0, sizeof(k));
	k.key = key;
	k.op = op;
	pthread_mutex_lock(&q->cmd_lock);
	ret = q->ops->key(q, &k);
	pthread_mutex_unlock(&q->cmd_lock);
	if (ret)
		return ret;
	if (op == DQ_KEY_CANCEL)
		dq_cancelled(q, k.handle);
	if (out) {
		memset(out, 0, sizeof(*out));
		out->handle = k.handle;
		out->due_ns = k.due_ns;
		out->state = k.state;
	}
	return 0;
}

DQ_API int dq_cancel_key(struct dqshim_queue *q, uint64_t key,
			 struct dq_key_info *out)
{
	return dq_key_op(q, key, DQ_KEY_CANCEL, out);
}

DQ_API int dq_lookup_key(struct dqshim_queue *q, uint64_t key,
			 struct dq_key_info *out)
{
	if (!out)
		return -EINVAL;
	return dq_key_op(q, key, DQ_KEY_LOOKUP, out);
}

/* ---- consumer ------------------------------------------------------ */

/*
 * Start loading the head of a reaped payload.  The caller reads it next,
 * in place, and a payload written up to the longest delay ago is out of
 * every cache: left to the reader, each message of a batch costs a
 * memory round trip after the one before; started here, the batch's
 * misses overlap.  Two cache lines: from there the hardware prefetcher
 * follows the reader.  A hint, never a fault (len 0: nothing to read).
 */
static inline void dq_reaped_prefetch(const struct dq_reaped *r)
{
	const char *p = r->data;

	if (!r->len)
		return;
	__builtin_prefetch(p, 0, 3);
	if (r->len > 64)
		__builtin_prefetch(p + 64, 0, 3);
}

/*
 * What the library keeps of @n reaped slots' state, and their payloads'
 * prefetch; cons_lock held.
 */
static void dq_reaped_mark(struct dqshim_queue *q, struct dq_reaped *out, int n)
{
	int i;

	if (n > 0 && q->tracked) {
		/*
		 * The engine's handle (its gen) and redeliveries are what
		 * DONE names: always the newest delivery.  A FREE slot:
		 * another process of a named queue submitted it.  A READY
		 * or FINISHING one: the engine released a message this
		 * process still holds again (visibility timeout), so the
		 * delivery reaped before is stale and its DONE refused
		 * (-ESTALE); a finish in progress for it comes back READY.
		 */
		pthread_mutex_lock(&q->plock);
		for (i = 0; i < n; i++) {
			uint32_t slot = out[i].slot;
			struct dq_slot *s = &q->slots[slot];

			dq_reaped_prefetch(&out[i]);
			switch (s->state) {
			case DQ_SLOT_QUEUED:
			case DQ_SLOT_FREE:
				s->state = DQ_SLOT_READY;
				break;
			case DQ_SLOT_READY:
			case DQ_SLOT_FINISHING:
				/* The same message, or the engine is odd. */
				if (q->deliveries[slot].gen !=
				    DQ_HANDLE_GEN(out[i].handle))
					q->anomalies++;
				break;
			default:
				q->anomalies++;
				continue;
			}
			q->deliveries[slot].gen = DQ_HANDLE_GEN(out[i].handle);
			q->deliveries[slot].redeliveries = out[i].redeliveries;
		}
		pthread_mutex_unlock(&q->plock);
	} else if (n > 0) {
		pthread_mutex_lock(&q->plock);
		for (i = 0; i < n; i++) {
			struct dq_slot *s = &q->slots[out[i].slot];

			dq_reaped_prefetch(&out[i]);
			if (s->state == DQ_SLOT_QUEUED)
				s->state = DQ_SLOT_READY;
			else
				q->anomalies++;
			out[i].handle = DQ_HANDLE(out[i].slot, s->gen);
		}
		pthread_mutex_unlock(&q->plock);
	}
}

/* A reap's arguments: 0, or the -errno dq_reap() answers. */
static int dq_reap_check(const struct dqshim_queue *q, unsigned int max)
{
	if (!max)
		return -EINVAL;
	return q->consumer ? 0 : -EPERM;
}

DQ_API int dq_reap(struct dqshim_queue *q, struct dq_reaped *out, unsigned int max,
		   int64_t timeout_ns)
{
	int n = dq_reap_check(q, max);

	if (n)
		return n;
	if (max > INT_MAX)
		max = INT_MAX;
	if (pthread_mutex_trylock(&q->cons_lock))
		return -EBUSY;
	n = q->ops->reap(q, out, max, timeout_ns);
	dq_reaped_mark(q, out, n);
	pthread_mutex_unlock(&q->cons_lock);
	return n;
}

/*
 * dq_flush() and dq_reap() in one system call where the path has one
 * (dq.ko over io_uring: SUBMIT, then the wait for the parked WAIT);
 * else the two calls.
 */
DQ_API int dq_flush_reap(struct dqshim_queue *q, struct dq_reaped *out,
			 unsigned int max, int64_t timeout_ns)
{
	struct dq_submit *s = &q->cons_sub;
	int n = dq_reap_check(q, max), submit_res = 0;

	if (n)
		return n;
	if (max > INT_MAX)
		max = INT_MAX;
	/* Durable: the journal's records go first, under cmd_lock. */
	if (q->journal || !q->ops->flush_reap || dq_batch_empty(q))
		goto two_calls;
	if (pthread_mutex_trylock(&q->cons_lock))
		return -EBUSY;
	/*
	 * Rejects of its own: cmd_lock, which guards rejbuf, is not held
	 * across a call that may sleep (a producer would wait for it).
	 */
	if (!q->cons_rejbuf)
		q->cons_rejbuf = calloc(q->sq_entries, sizeof(*q->cons_rejbuf));
	if (!q->cons_rejbuf) {
		pthread_mutex_unlock(&q->cons_lock);
		goto two_calls;
	}
	memset(s, 0, sizeof(*s));
	s->rejects = (uint64_t)(uintptr_t)q->cons_rejbuf;
	s->reject_cap = q->sq_entries;
	n = q->ops->flush_reap(q, s, &submit_res, out, max, timeout_ns);
	if (n == -EOPNOTSUPP) {
		pthread_mutex_unlock(&q->cons_lock);
		goto two_calls;
	}
	if (submit_res >= 0 && s->rejected)
		dq_rejects_handle(q, q->cons_rejbuf,
				  s->rejected < s->reject_cap ? s->rejected :
				  s->reject_cap);
	dq_reaped_mark(q, out, n);
	pthread_mutex_unlock(&q->cons_lock);
	return n;

two_calls:
	n = dq_flush(q);
	if (n < 0)
		return n;
	return dq_reap(q, out, max, timeout_ns);
}


/* ---- io_uring completions of app-owned rings ----------------------- */

DQ_API int dq_submit_complete(struct dqshim_queue *q, const struct dq_submit *s,
			      int res)
{
	const struct dq_reject *rej = (const void *)(uintptr_t)s->rejects;
	uint32_t n;

	if (res < 0 || !s->rejected || !rej)
		return res;
	n = s->rejected < s->reject_cap ? s->rejected : s->reject_cap;
	pthread_mutex_lock(&q->cmd_lock);
	dq_rejects_handle(q, rej, n);
	pthread_mutex_unlock(&q->cmd_lock);
	return res;
}

DQ_API int dq_cancel_complete(struct dqshim_queue *q, uint64_t handle, int res)
{
	if (res == 0)
		dq_cancelled(q, handle);
	return res;
}

/* ---- errors -------------------------------------------------------- */

DQ_API const char *dq_strerror(int err)
{
	const char *s;

	if (err < 0)
		err = -err;
	switch (err) {
	case 0:
		return "success";
	case ENOSPC:
		return "no free slot in the arena (every slot is held)";
	case EAGAIN:
		return "submit batch full: flush and retry";
	case EALREADY:
		return "message already released or cancelled";
	case ENOENT:
		return "no such message, or /dev/dq missing (dq.ko not loaded)";
	case ETIME:
		return "timed out";
	case EMSGSIZE:
		return "payload larger than the slot";
	case EOVERFLOW:
		return "due time too far in the future (beyond DQ_MAX_DELAY_NS)";
	case ERANGE:
		return "slot index out of range";
	case EBUSY:
		return "slot already held by the engine, or another reap in progress";
	case EPROTO:
		return "ring protocol broken (bad shared ring index)";
	case EOPNOTSUPP:
		return "operation not supported by this backend or kernel";
	case ECANCELED:
		return "wait cancelled (queue or ring going away)";
	case ENXIO:
		return "queue not set up";
	case ESTALE:
		return "message delivered again since (visibility timeout, or its consumer went away)";
	case EEXIST:
		return "key held by another message (application keys)";
	case EXDEV:
		return "the queue's clock is another time namespace's, or a journal file is foreign or damaged";
	}
	s = strerrordesc_np(err);
	return s ? s : "unknown error";
}
