/* SPDX-License-Identifier: GPL-2.0 */
/*
 * dq.ko internals.
 *
 * Objects and locks, outermost first:
 *
 *   struct dq_file     one open /dev/dq; ->lock (mutex) serialises setup.
 *   struct dq_queue    rings, arena, one record per slot.
 *     ->submit_lock    mutex: the submit ring's consumer side and every
 *                      slot's FREE -> SUBMITTING -> PENDING step.
 *   struct dq_engine   one per NUMA node: the wheel and its hrtimer.
 *     ->lock           spinlock, taken with _bh (the timer runs in softirq):
 *                      the wheel (with its directory of queue chunks and
 *                      every PENDING record's wheel node: links, due
 *                      time), every record's PENDING state, the engine's
 *                      queue list and counters.
 *     dq_queue->ready_lock
 *                      spinlock, _bh: the ready ring's producer side, the
 *                      backlog, paced and in-flight lists (with the wheel
 *                      links of the records on them) and the release
 *                      counters.
 *     dq_queue->key_lock
 *                      spinlock, _bh: the key index (DQ_SETUP_F_KEYS).
 *
 * Lock order: dq_file->lock -> submit_lock -> engine->lock -> ready_lock
 * -> key_lock.
 * The registry's own mutex (dq_registry.c) is a leaf: nothing is taken
 * under it, and a queue reference is never put while it is held.
 * The release path takes engine->lock then ready_lock and never anything
 * above them, so a queue cannot go away while a release run holds
 * engine->lock: teardown takes engine->lock to unhook its records.
 */
#ifndef DQ_H
#define DQ_H

#include <linux/bitops.h>
#include <linux/hrtimer.h>
#include <linux/smp.h>
#include <linux/kref.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/rbtree.h>
#include <linux/spinlock.h>
#include <linux/types.h>
#include <linux/uidgid.h>
#include <linux/wait.h>
#include <linux/dq.h>

#include "dq_compat.h"
#include "dq_keys.h"
#include "dq_msg.h"
#include "dq_slack.h"
#include "dq_wheel.h"

/* Most records one release run moves before it lets softirqs breathe. */
#define DQ_RELEASE_BUDGET	1024U

/*
 * Most records a purge or a detach drops under one hold of a lock
 * (engine->lock or ready_lock, softirqs off) before it drops the lock and
 * lets the node's release runs and the scheduler in (dq_engine_purge(),
 * dq_queue_purge()).
 */
#define DQ_PURGE_CHUNK		256U

/* A page-backed region shared with user space. */
struct dq_region {
	struct page **pages;
	unsigned int nr_pages;
	void *vaddr;		/* kernel mapping; NULL for the arena */
	size_t size;		/* bytes, page aligned */
	unsigned long pgoff;	/* its mmap offset (DQ_OFF_*) in pages */
};

/* Ring header at the start of a ring region; see uapi dq_ring_offsets. */
struct dq_ring_hdr {
	u32 producer ____cacheline_aligned_in_smp;
	u32 consumer ____cacheline_aligned_in_smp;
	u32 flags ____cacheline_aligned_in_smp;
};

/*
 * Kernel-private copy of an accepted descriptor, one per slot, allocated
 * with the queue: 40 bytes, no allocation on the submit path.  The record
 * and its states (kmod/shared/dq_msg.h) are the user engine's too.  It is
 * in two arrays indexed by slot: the 24-byte wheel node (q->nodes: due
 * time, links, state, length), what the engine's wheel touches, and the
 * 16-byte struct dq_msg_rec (q->recs: user_data, generation, attempts,
 * redeliveries), read at intake, hand-out and DONE.  Nothing per record
 * names its queue: a record is always reached from its queue (slot s of
 * q), or, in a release run, by wheel index, whose directory chunk's owner
 * is the queue (engine->owner[idx >> DQ_WHEEL_DIR_SHIFT], engine->lock).
 *
 * In dq.ko a state changes under:
 *   FREE -> SUBMITTING  submit_lock (dq_submit.c)
 *   -> PENDING -> FREE  engine->lock (dq_engine.c: insert, cancel, purge)
 *   -> BACKLOG, PACED   ready_lock, nested in engine->lock (dq_ready.c)
 *   -> FREE             ready_lock (posted to the ready ring, unposted)
 * The node's due time is set by the submit side while SUBMITTING, belongs
 * to engine->lock while PENDING and is not changed again until the slot
 * is FREE.
 *
 * The node's next/prev links serve one list at a time, and whoever owns
 * the state owns them:
 *   PENDING             engine->lock: a wheel list, by wheel index
 *                       (wheel_base + slot); also the run's list of due
 *                       records (dq_wheel_advance()) until each is posted,
 *                       with both locks held
 *   BACKLOG, PACED, INFLIGHT
 *                       ready_lock: q->backlog, q->paced or q->inflight,
 *                       by slot (dq_qlist_*(), which assert it)
 *   FREE, SUBMITTING    nobody's: the links are stale and never read
 * A record joins a queue list only after it has left the wheel (its
 * state is not PENDING), and goes back into the wheel only through FREE,
 * so the two lock domains never hold one record's links at once.  The
 * queue lists go through q->nodes, never through the engine's directory,
 * which an attach may replace under engine->lock alone.
 */
struct dq_engine;
struct net;
struct user_struct;

/* A task sleeping in DQ_IOC_WAIT, listed for tracing only. */
struct dq_waiter {
	struct list_head link;
	pid_t tid;
	u32 min_ready;
};

struct dq_queue {
	u32 id;
	int node;
	struct dq_engine *engine;
	struct list_head engine_link;	/* engine->queues, engine->lock */
	struct list_head wake_link;	/* a release run's list, engine->lock */
	struct kref ref;

	u32 flags;			/* DQ_SETUP_F_*, fixed at create */
	u32 slot_count;
	u32 slot_size;
	u64 granularity_ns;
	/*
	 * The records' wheel nodes (see "Kernel-private copy" above), and
	 * the wheel index of slot 0 in the engine's wheel: slot s is wheel_base + s.  Set by
	 * dq_engine_attach() under engine->lock, fixed until detach.
	 */
	struct dq_wheel_node *nodes;
	u32 wheel_base;
	/*
	 * The queue's clock, fixed at create: its creator's CLOCK_MONOTONIC,
	 * which reads the host's + mono_off (the creator's time namespace's
	 * offset; 0 in the initial one).  See dq_time_shift().
	 */
	s64 mono_off;
	u64 instance;			/* dq_setup.instance, fixed at create */

	/* Registry (dq_registry.c), under its lock. */
	struct net *net;		/* creator's; NULL: its ns is gone */
	struct rb_node name_node;	/* named queues; empty: private */
	char name[DQ_NAME_MAX];		/* "": a file's private queue */
	kuid_t uid;
	kgid_t gid;
	umode_t mode;
	bool dead;			/* deleted: submits fail, READ_ONCE */
	atomic_t users;			/* files attached */

	/* Limits; QUEUE_SET changes them at any time (READ_ONCE). */
	u32 max_pending;		/* on held; slot_count when unset */
	u32 high_wm;			/* 0: no watermark event */
	bool wm_fired;			/* submit_lock */
	u64 full_seen;			/* FULL rejects already told, submit_lock */
	atomic64_t held;		/* accepted, not yet posted or cancelled */

	struct dq_region submit_region;
	struct dq_region ready_region;
	struct dq_region arena;

	/* Submit ring: user space produces, the kernel consumes. */
	struct mutex submit_lock;
	struct dq_ring_hdr *sq_hdr;
	struct dq_desc *sq_ring;
	u32 sq_entries;
	u32 sq_cons;			/* private consumer, never read back */
	/* Written under submit_lock (WRITE_ONCE), read locklessly by stats. */
	u64 submitted;
	u64 rejected[DQ_REJ_NR];
	atomic64_t ring_errors;		/* both rings, any context */

	/* Ready ring: the kernel produces, user space consumes. */
	spinlock_t ready_lock;
	struct dq_ring_hdr *rq_hdr;
	struct dq_ready *rq_ring;
	u32 rq_entries;
	u32 rq_prod;			/* private producer, never read back */
	/*
	 * Entries known free on the ready ring: entries - used from the last
	 * validated read of the consumer index (dq_ready_room_locked()), one
	 * less per entry written since.  User space only moves the consumer
	 * on, so it is a lower bound and may be used without reading shared
	 * memory again; it is read once per release batch, and again only
	 * when this runs out.  0 while the index is broken (@rq_broken:
	 * what the last read found).
	 */
	u32 rq_room;
	bool rq_broken;
	/*
	 * The ready ring's DQ_RING_F_* as the kernel last wrote them to
	 * rq_hdr->flags: that word is user space's to scribble on, so it is
	 * written from here and never read back.
	 */
	u32 rq_flags;
	/*
	 * Records posted and freed (untracked queues) this batch whose
	 * @held decrement is still due: one atomic64_sub() per batch, in
	 * dq_queue_publish_locked(), before the entries are published (so
	 * before user space can see the slots free and submit into them).
	 */
	u32 held_drop;
	struct dq_ilist backlog;	/* due records, release order */
	u64 backlog_len;
	u64 released;
	u64 late_max_ns;
	u64 late_sum_ns;
	u64 late_ewma_ns;		/* weight 1/8 per message */

	/*
	 * Pacing, ready_lock: a token bucket kept as a theoretical release
	 * time (GCRA).  A due message may be posted when
	 * pace_tat <= now + (burst - 1) * pace_cost_ns; posting moves
	 * pace_tat on by pace_cost_ns.  Messages that must wait sit on
	 * @paced in release order and pace_timer posts them.
	 */
	u64 pace_rate;			/* messages per second; 0: unpaced */
	u32 pace_burst;
	u64 pace_cost_ns;
	u64 pace_tat;
	struct dq_ilist paced;
	u64 paced_len;
	u64 throttled;
	struct hrtimer pace_timer;	/* soft */

	/* engine->lock */
	u64 pending;
	/*
	 * Which slots are PENDING (in the wheel), engine->lock: bit s of
	 * pend_bits is slot s, bit w of pend_sum says word w of pend_bits is
	 * non-zero.  A purge or detach walks these, so it costs O(pending +
	 * slot_count / 4096), not O(slot_count): 1/8 byte a slot (not in the
	 * RLIMIT_MEMLOCK charge, see dq_queue_charge_pages(); memcg-charged).
	 */
	unsigned long *pend_bits;
	unsigned long *pend_sum;
	u64 cancelled;
	u64 replaced;			/* taken back by DQ_DESC_F_REPLACE */

	/*
	 * Keys (DQ_SETUP_F_KEYS).  Only the submit side adds a key, under
	 * submit_lock, which DQ_IOC_KEY takes too: a key lookup or replace
	 * sees every descriptor an earlier submit accepted.  A record leaves
	 * the index where it leaves dq, under the lock that owns its state
	 * then (engine->lock, ready_lock), before its state becomes FREE: a
	 * new submit cannot take the slot while it is still indexed.  The
	 * index itself is under key_lock.
	 */
	spinlock_t key_lock;
	struct dq_keys keys;

	/*
	 * Delivery tracking (DQ_SETUP_F_TRACK), ready_lock.  A record posted
	 * to the ready ring stays held, INFLIGHT, on @inflight in release
	 * order until DONE; released_at[slot] is when (for the oldest's
	 * age).  A due record goes out only with a credit: while
	 * inflight_len + backlog_len < max_inflight (0: no cap) and a
	 * consumer file is set; else it waits on @paced.
	 */
	struct dq_ilist inflight;
	u64 inflight_len;
	u64 *released_at;		/* slot_count; tracked queues only */
	u32 max_inflight;		/* QUEUE_SET changes it under ready_lock */
	u32 rq_esize;			/* ready entry: dq_ready or dq_ready_track */
	const void *consumer;		/* the consumer's dq_file; NULL: none */
	u64 done_delivered;
	u64 done_failed;
	u64 done_refused;
	u64 redelivered;
	u64 credit_waits;
	/*
	 * Visibility timeout: vis_timer is armed, while something is in
	 * flight, for the oldest's released_at + visibility_ns (the head of
	 * @inflight: release order is age order) and puts back what expired.
	 */
	u64 visibility_ns;		/* 0: none; fixed at create */
	u64 expired;
	struct hrtimer vis_timer;	/* soft */

	/*
	 * RLIMIT_MEMLOCK (dq_queue.c, dq_memlock_charge()): @memlock_pages
	 * charged to @memlock_user's locked_vm at create, with a reference
	 * on the user, given back in dq_queue_free().  NULL: not charged
	 * (CAP_IPC_LOCK, or memlock_accounting off at create).  Fixed.
	 */
	struct user_struct *memlock_user;
	unsigned long memlock_pages;

	struct list_head uwaits;	/* parked io_uring WAITs: ready_lock */
	/*
	 * The parked WAITs' deadlines, ready_lock: one soft timer armed for
	 * the earliest (uwait_armed; U64_MAX: not armed), so a WAIT parks
	 * without allocating (dq_uring.c).
	 */
	struct hrtimer uwait_timer;
	u64 uwait_armed;
	struct list_head waiters;	/* DQ_IOC_WAIT callers: ready_lock */
	wait_queue_head_t wait;		/* DQ_IOC_WAIT and poll() */
	struct dq_msg_rec *recs;	/* slot_count cold records */
};

struct dq_engine {
	spinlock_t lock;		/* see the top of this file */
	int node;
	struct dq_wheel wheel;
	/*
	 * The wheel's directory (wheel.dir, dir_len chunks of
	 * DQ_WHEEL_DIR_SIZE records) and, per chunk, the queue whose nodes
	 * it points into (NULL: free).  An attached queue has a run of
	 * chunks, from q->wheel_base.  All under @lock: attach grows the
	 * arrays (allocated outside it) and fills a run, detach empties it.
	 */
	struct dq_queue **owner;
	u32 dir_len;
	struct hrtimer timer;		/* pinned to a CPU of @node */
	call_single_data_t kick;	/* arms @timer from another node */
	atomic_t kick_pending;		/* @kick sent, its function not done */
	u64 armed_ns;		/* expiry the timer is set for; U64_MAX: idle */
	/*
	 * The timer's slack (dq_slack.h), under @lock: max is the smallest
	 * granularity of the attached queues less the wheel's tick (set on
	 * attach and detach); the density of due times is sampled once per
	 * release run; the slack is applied at the next arming (whole max
	 * when dq_fixed_slack is set, see dq_engine.c).
	 */
	struct dq_slack slack;
	struct list_head queues;
	u64 released;
	u64 timer_fires;
	u64 fires_on_node;
	/*
	 * RLIMIT_MEMLOCK, no lock: pages of this node's queues charged to
	 * their creators now, and creates refused for the limit (counted on
	 * the node the queue would have lived on).  dq_queue.c changes them.
	 */
	atomic_long_t memlock_pages;
	atomic64_t memlock_refused;
};

/*
 * The lists of @q's due records (backlog, paced, in flight), linked by
 * slot through the nodes' next/prev, which ready_lock owns once a record
 * has left the wheel (see "Kernel-private copy" above).  With lockdep on,
 * a record found still PENDING (its links the wheel's) is a bug caught
 * here rather than a corrupted wheel later.
 */
static inline struct dq_wheel_node *dq_qnode_fn(const void *q, u32 slot)
{
	return &((const struct dq_queue *)q)->nodes[slot];
}

static inline void dq_qlist_check(struct dq_queue *q, u32 slot)
	__must_hold(&q->ready_lock)
{
	lockdep_assert_held(&q->ready_lock);
	if (IS_ENABLED(CONFIG_PROVE_LOCKING))
		WARN_ON_ONCE(slot >= q->slot_count ||
			     dq_rec_state(&q->nodes[slot]) == DQ_MSG_PENDING);
}

static inline void dq_qlist_add_tail(struct dq_queue *q, struct dq_ilist *l,
				     u32 slot)
	__must_hold(&q->ready_lock)
{
	dq_qlist_check(q, slot);
	__dq_ilist_add_tail(dq_qnode_fn, q, l, slot);
}

static inline void dq_qlist_del(struct dq_queue *q, struct dq_ilist *l,
				u32 slot)
	__must_hold(&q->ready_lock)
{
	dq_qlist_check(q, slot);
	__dq_ilist_del(dq_qnode_fn, q, l, slot);
}

/* The first record off @l, which must not be empty. */
static inline u32 dq_qlist_pop(struct dq_queue *q, struct dq_ilist *l)
	__must_hold(&q->ready_lock)
{
	dq_qlist_check(q, l->head);
	return __dq_ilist_pop(dq_qnode_fn, q, l);
}

static inline void dq_qlist_splice_tail(struct dq_queue *q,
					struct dq_ilist *dst,
					struct dq_ilist *src)
	__must_hold(&q->ready_lock)
{
	lockdep_assert_held(&q->ready_lock);
	__dq_ilist_splice_tail(dq_qnode_fn, q, dst, src);
}

static inline void dq_queue_pend_set(struct dq_queue *q, u32 slot)
{
	__set_bit(slot, q->pend_bits);
	__set_bit(slot / BITS_PER_LONG, q->pend_sum);
}

static inline void dq_queue_pend_clear(struct dq_queue *q, u32 slot)
{
	unsigned long *w = &q->pend_bits[slot / BITS_PER_LONG];

	__clear_bit(slot % BITS_PER_LONG, w);
	if (!*w)
		__clear_bit(slot / BITS_PER_LONG, q->pend_sum);
}

/* dq_engine.c */
int dq_engines_init(void);
void dq_engines_exit(void);
struct dq_engine *dq_engine_get(int node);
int dq_engine_attach(struct dq_engine *e, struct dq_queue *q);
void dq_engine_detach(struct dq_engine *e, struct dq_queue *q);
void dq_engine_purge(struct dq_engine *e, struct dq_queue *q);
void dq_engine_insert(struct dq_engine *e, struct dq_queue *q,
		      const u32 *slots, unsigned int nr, u64 relative, u64 now);
int dq_engine_cancel(struct dq_engine *e, struct dq_queue *q, u32 slot,
		     u32 gen, bool replace);
int dq_engine_stats(int node, struct dq_node_stats *st);

/* dq_queue.c: lifecycle (regions, mmap, create, release, limits, stats) */
struct dq_queue *dq_queue_create(struct dq_setup *setup, struct net *net,
				 bool *memlock);
void dq_queue_drop_named(struct dq_queue *q);
void dq_queue_describe(struct dq_queue *q, struct dq_setup *setup);
void dq_queue_set_limits(struct dq_queue *q, u32 max_pending, u32 high_wm);
void dq_queue_purge(struct dq_queue *q);
void dq_queues_exit(void);
int dq_queue_slot_map(struct dq_queue *q, const struct dq_slot_map *args);
void dq_queue_put(struct dq_queue *q);
void dq_queue_stats(struct dq_queue *q, struct dq_queue_stats *st);
int dq_queue_mmap(struct dq_queue *q, struct vm_area_struct *vma);

/*
 * Time namespaces.  Everything inside dq.ko (the wheel, the timers,
 * released_at, pacing, the tracepoints) runs on the host's
 * CLOCK_MONOTONIC; a queue's own clock (->mono_off) appears only at the
 * ABI boundary:
 *
 *  - in: an absolute due time on the submit ring is the queue's clock,
 *    made the host's before it is checked (dq_queue_submit()).  The shift
 *    keeps differences, so the DQ_MAX_DELAY_NS check gives the same
 *    verdict in either clock; where the host's clock cannot hold the
 *    value it saturates, and the saturated value gets the same verdict
 *    too: a due before the host's boot (only in a namespace whose clock
 *    is ahead) becomes 0, already due, as the kernel's own
 *    do_timens_ktime_to_host() does for absolute timers; one past
 *    U64_MAX is more than DQ_MAX_DELAY_NS away and rejected.  Relative
 *    due times have no clock.
 *  - out to shared memory: the ready ring's due_ns and release_ns get
 *    + mono_off, one add (dq_ready_write()).  It cannot wrap: the sum is
 *    an absolute due as submitted (or mono_off itself, for one clamped
 *    to 0 above), or the namespace's time of an instant after the
 *    queue's creation at most DQ_MAX_DELAY_NS after a submit; and the
 *    kernel has the namespace's clock within 0 .. KTIME_SEC_MAX / 2 s
 *    when its offset is written.
 *  - out to one caller (DQ_IOC_KEY, DQ_IOC_TRACK_STATS, netlink STATS):
 *    the caller's own clock, dq_timens_mono_offset().  A caller that may
 *    submit or attach has the queue's; any other gets times it can
 *    compare with its own clock_gettime().
 *
 * Who may use a queue: a task whose clock is not the queue's could only
 * misread the rings (their times are in one clock, and the submit ring
 * may have been filled by anyone), so DQ_IOC_ATTACH and every SUBMIT
 * refuse it with -EXDEV.
 */
/* @t + @delta, saturated to 0 .. U64_MAX. */
static inline u64 dq_time_shift(u64 t, s64 delta)
{
	u64 r = t + (u64)delta;

	if (delta >= 0)
		return r < t ? U64_MAX : r;
	return r > t ? 0 : r;
}

/* May the calling task use @q's rings: is its clock the queue's? */
static inline bool dq_queue_same_clock(const struct dq_queue *q)
{
	return dq_timens_mono_offset() == q->mono_off;
}

static inline bool dq_queue_tracked(const struct dq_queue *q)
{
	return q->flags & DQ_SETUP_F_TRACK;
}

static inline bool dq_queue_keyed(const struct dq_queue *q)
{
	return q->flags & DQ_SETUP_F_KEYS;
}

/* dq_keys.c: the key index (key_lock) */
int dq_queue_keys_alloc(struct dq_queue *q, int node);
void dq_queue_keys_free(struct dq_queue *q);
u32 dq_queue_key_find(struct dq_queue *q, u64 key);
void dq_queue_key_add(struct dq_queue *q, u32 slot);
void dq_queue_key_forget(struct dq_queue *q, u32 slot);
int dq_queue_key_op(struct dq_queue *q, struct dq_key_op *op);

/* Ready ring entry @idx: entries are rq_esize bytes (dq_ready or _track). */
static inline struct dq_ready *dq_rq_entry(struct dq_queue *q, u32 idx)
{
	return (void *)q->rq_ring +
	       (size_t)(idx & (q->rq_entries - 1)) * q->rq_esize;
}

/* dq_track.c: delivery tracking (ready_lock) */
int dq_queue_done(struct dq_queue *q, const void *consumer,
		  struct dq_done_batch *args);
int dq_queue_set_inflight(struct dq_queue *q, u32 max_inflight);
void dq_queue_track_stats(struct dq_queue *q, struct dq_track_stats *st,
			  s64 clock_off);
int dq_queue_claim_consumer(struct dq_queue *q, const void *consumer);
void dq_queue_consumer_gone(struct dq_queue *q, const void *consumer);
bool dq_queue_credit_locked(struct dq_queue *q);
void dq_queue_inflight_locked(struct dq_queue *q, u32 slot, u64 now);
enum hrtimer_restart dq_vis_timer_fn(struct hrtimer *timer);

/* dq_submit.c: the submit side (submit_lock) */
int dq_queue_submit(struct dq_queue *q, struct dq_submit *args,
		    struct dq_reject __user *rejects, bool nowait);
int dq_queue_cancel(struct dq_queue *q, const struct dq_cancel *args);

/* dq_ready.c: the ready side (ready_lock) */
void dq_queue_set_pacing(struct dq_queue *q, u64 rate, u32 burst);
enum hrtimer_restart dq_pace_timer_fn(struct hrtimer *timer);
u64 dq_queue_unreaped(struct dq_queue *q);
void dq_queue_kill_waits(struct dq_queue *q);
int dq_queue_wait(struct dq_queue *q, const struct dq_wait *args);
__poll_t dq_queue_poll_mask(struct dq_queue *q);
void dq_queue_post_locked(struct dq_queue *q, u32 slot, u64 now);
bool dq_queue_unpost_locked(struct dq_queue *q, u32 slot);
void dq_queue_publish_locked(struct dq_queue *q);
u32 dq_queue_ready_used_locked(struct dq_queue *q);
u32 dq_ready_room_locked(struct dq_queue *q);
void dq_ready_run_begin_locked(struct dq_queue *q, u64 now);
void dq_ready_flags_sync_locked(struct dq_queue *q);
u32 dq_queue_ready_refill_locked(struct dq_queue *q);
void dq_queue_wake_locked(struct dq_queue *q);
void dq_pace_release_locked(struct dq_queue *q, u64 now);
#if IS_ENABLED(CONFIG_KUNIT)
/* Static unless KUnit is on (VISIBLE_IF_KUNIT), for kmod/tests/dq_kunit.c. */
bool dq_desc_check(struct dq_queue *q, const struct dq_desc *d, u64 now,
		   u64 *due, u32 *reason);
bool dq_pace_take_locked(struct dq_queue *q, u64 now);
#endif

/* dq_registry.c */
int dq_registry_reserve(struct dq_queue *q);
void dq_registry_publish(struct dq_queue *q, struct net *net);
void dq_registry_del(struct dq_queue *q);
struct dq_queue *dq_registry_get(const struct net *net, u32 id);
struct dq_queue *dq_registry_get_name(const struct net *net,
				      const char *name);
struct dq_queue *dq_registry_attach(const struct net *net, const char *name);
struct dq_queue *dq_registry_next(const struct net *net, u32 last,
				  bool named_only);
int dq_registry_name(struct dq_queue *q, const char *name, kuid_t uid,
		     kgid_t gid, umode_t mode);
bool dq_registry_unname(struct dq_queue *q);
struct dq_queue *dq_registry_take_named(const struct net *net);
void dq_registry_net_exit(const struct net *net);
struct net *dq_registry_get_net(struct dq_queue *q);

/* dq_netlink.c */
int dq_netlink_init(void);
void dq_netlink_exit(void);
void dq_netlink_event(struct dq_queue *q, u32 kind);

/* dq_uring.c */
struct io_uring_cmd;
int dq_uring_cmd(struct dq_queue *q, struct io_uring_cmd *cmd,
		 unsigned int issue_flags);
void dq_uring_wake_locked(struct dq_queue *q);
void dq_uring_flush(struct dq_queue *q);
void dq_uring_end_all_locked(struct dq_queue *q, int result);
enum hrtimer_restart dq_uwait_timer_fn(struct hrtimer *timer);

/* dq_main.c */
struct file;
struct dq_queue *dq_file_queue(struct file *file);

#endif /* DQ_H */
