/* SPDX-License-Identifier: LGPL-2.1 OR MIT */
/*
 * libdqshim internals: the queue object shared by both backends.
 *
 * Locks, outermost first (a thread never takes an earlier one while
 * holding a later one):
 *
 *   cmd_lock   serialises commands to the engine: submit (and its reject
 *              buffer), cancel; the kernel backend's command io_uring.
 *   cons_lock  the consumer side: the ready ring's consumer index, the
 *              kernel backend's wait io_uring.  Taken with trylock only.
 *   done_lock  kernel backend, tracked queue: its DONE io_uring.  Not
 *              cmd_lock: dq_done() may be called from the reject
 *              callback, which runs under cmd_lock.
 *   backend    the user engine's own lock (wheel, records, timerfd).
 *   jlock      durable queues: the journal's files (dq_journal.c).
 *   plock      the producer side and slot bookkeeping: the free pool, the
 *              state of every slot, the submit ring's producer index.
 *              Nothing but rlock is taken while it is held.
 *   rlock      durable queues: the journal's retire list and live counts.
 *              Innermost.
 *
 * Slot states, as the library sees them (the engine keeps its own):
 *
 *   FREE -> RESERVED (dq_reserve) -> QUEUED (dq_commit)
 *   QUEUED -> READY (dq_reap) -> FREE (dq_done)
 *   QUEUED -> FREE (rejected by the engine, cancelled, or replaced: a
 *   DQ_REPLACED entry among the rejects names the replaced slot)
 *   RESERVED -> FREE (dq_abort)
 * Tracked queues (delivery tracking, dq_finish):
 *   READY -> FINISHING (dq_finish, plock dropped while the engine is
 *   asked) -> FREE when it accepted the DONE, else back to READY.
 *   FREE -> READY (dq_reap) for a message another process of a named
 *   queue submitted in a slot this one thought free.
 *   READY or FINISHING, reaped again: the engine redelivered a message
 *   this process holds (visibility timeout); the state stays, the
 *   delivery remembered (dqshim_queue.deliveries) becomes the new one.
 *   READY -> FREE: such a put-back message cancelled or replaced by key
 *   before it was reaped again (dq_slot_taken_back_locked()).
 * Only the engine moves a QUEUED slot on, so no transition races another.
 *
 * The free pool is a stack of slots linked through the slots themselves
 * (dq_slot.next: the slot under this one; free_top and nfree, plock), so
 * it costs no memory of its own; a slot is on it at most once (in_pool).
 * An entry whose slot is no longer FREE (the FREE -> READY move above) is
 * stale: taking skips and drops it.
 *
 * A single-producer queue keeps the top DQ_PTOP entries of that stack in
 * an array instead (ptop[], a ring: ptop_head the next free entry,
 * ptop_n entries, the newest on top; the oldest moves to the linked part
 * when a push finds the array full), so the order is the same LIFO.  Why:
 * the producer refills its cache with up to DQ_PCACHE slots at once, the
 * ones the consumer has just freed, and taking them off a linked stack
 * is a chain of dependent loads, each a cache line the consumer's core
 * holds; off the array the loads are independent and overlap.  nfree
 * counts both parts.
 */
#ifndef DQ_INTERNAL_H
#define DQ_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "dqshim.h"

#define DQ_DEFAULT_SLOTS		1024U
#define DQ_DEFAULT_URING_DEPTH		8U
/* Single producer: free slots taken off the pool per plock round. */
#define DQ_PCACHE			64U
/* Single producer: the pool's top entries kept in an array (a power of 2). */
#define DQ_PTOP				256U

enum dq_slot_state {
	DQ_SLOT_FREE,
	DQ_SLOT_RESERVED,
	DQ_SLOT_QUEUED,
	DQ_SLOT_READY,
	DQ_SLOT_FINISHING,
};

/*
 * 8 bytes a slot, on every queue, the free pool's link included (it was a
 * separate 4-byte stack entry a slot).  state, in_pool and next share a
 * word: every write of it is under plock, except the single producer's
 * lock-free RESERVED/QUEUED/FREE moves of a slot it holds, which is off
 * the pool (in_pool 0), so nobody else writes that slot's word meanwhile.
 */
struct dq_slot {
	uint32_t gen;		/* of the current or last use */
	uint32_t state : 4;	/* enum dq_slot_state */
	uint32_t in_pool : 1;	/* on the free pool (maybe stale) */
	uint32_t next : 27;	/* in_pool: the slot under it on the pool */
};

_Static_assert(sizeof(struct dq_slot) == 8, "struct dq_slot is 8 bytes");
_Static_assert(DQ_MAX_SLOTS <= (1U << 27), "dq_slot.next holds a slot");

/*
 * Tracked queues only (dqshim_queue.deliveries, slot_count of them): the
 * delivery a READY slot was reaped as, which DONE names.  Apart from
 * struct dq_slot so that an untracked queue pays nothing for it.
 */
struct dq_slot_delivery {
	uint32_t gen;		/* the engine's gen of the delivery */
	uint16_t redeliveries;
	uint16_t resv;
};

struct dq_backend_ops {
	/* Consume the submit ring like DQ_IOC_SUBMIT; cmd_lock held. */
	int (*submit)(struct dqshim_queue *q, struct dq_submit *s);
	/* Like DQ_IOC_CANCEL; cmd_lock held. */
	int (*cancel)(struct dqshim_queue *q, uint64_t handle);
	/* Fill data/len/slot/user_data/due/release of up to max; cons_lock. */
	int (*reap)(struct dqshim_queue *q, struct dq_reaped *out,
		    unsigned int max, int64_t timeout_ns);
	int (*stats)(struct dqshim_queue *q, struct dq_queue_stats *st);
	/* Tracked queues: one DONE entry; 0 or its -errno.  Any thread. */
	int (*done)(struct dqshim_queue *q, struct dq_done *d);
	/*
	 * Optional: @n DONE entries in one call, each's result in
	 * d[i].result; the number accepted, or the call's -errno (then no
	 * entry was looked at).  NULL: done() per entry.
	 */
	int (*done_n)(struct dqshim_queue *q, struct dq_done *d, unsigned int n);
	int (*track_stats)(struct dqshim_queue *q, struct dq_track_stats *st);
	/* Optional: the engine's fields of struct dq_lib_stats. */
	int (*lib_stats)(struct dqshim_queue *q, struct dq_lib_stats *st);
	/* Keyed queues: DQ_IOC_KEY (lookup or cancel); cmd_lock held. */
	int (*key)(struct dqshim_queue *q, struct dq_key_op *op);
	/*
	 * Optional: dq_flush_reap() in one system call, cons_lock held (not
	 * cmd_lock: the call may sleep).  The SUBMIT's result goes to
	 * *submit_res (its count, or -errno: then nothing was reaped and
	 * that is returned too), its rejects to @s; else returns what reap
	 * returns.  -EOPNOTSUPP, with nothing done: not on this path, the
	 * caller flushes and reaps in two calls.
	 */
	int (*flush_reap)(struct dqshim_queue *q, struct dq_submit *s,
			  int *submit_res, struct dq_reaped *out,
			  unsigned int max, int64_t timeout_ns);
	void (*close)(struct dqshim_queue *q);
};

struct dqshim_queue {
	enum dq_backend backend;
	enum dq_path path;
	const struct dq_backend_ops *ops;
	void *be;			/* backend private */
	int fd;				/* dq_queue_fd() */

	/* Normalised parameters and what the engine reported. */
	uint32_t slot_count;
	uint32_t slot_size;
	uint32_t sq_entries;
	uint32_t rq_entries;
	uint32_t rq_asked;		/* dq_params.ready_entries as given:
					 * 0 lets dq.ko pick its default
					 */
	uint32_t granularity_ns;
	int32_t numa_node;
	uint32_t queue_id;
	uint64_t instance;		/* kernel: dq_setup.instance; else 0 */
	uint32_t abi_version;
	uint32_t features;
	uint32_t uring_depth;
	uint32_t flags;
	uint32_t max_inflight;		/* as asked (open); the kernel's */
	uint64_t visibility_ns;		/* as asked (open); 0: none */
	bool tracked;			/* the queue tracks delivery */
	bool consumer;			/* may reap and finish (tracked) */
	bool keyed;			/* DQ_SETUP_F_KEYS: the engine's */
	dq_reject_fn on_reject;
	void *reject_arg;

	uint8_t *arena;
	uint64_t arena_size;

	/*
	 * Submit ring.  Kernel: inside the shared mapping.  User backend:
	 * private memory, same protocol.  sq_tail is the producer's own
	 * copy of the index (plock).
	 */
	uint32_t *sq_prod;
	uint32_t *sq_cons;
	struct dq_desc *sq_ring;
	uint32_t sq_tail;

	/* Producer side: plock (see the top of this file). */
	pthread_mutex_t plock;
	pthread_cond_t pcond;		/* slots came back, waiters > 0 */
	uint32_t waiters;		/* threads in dq_reserve_wait() */
	uint64_t producer_wakes;	/* pcond signals/broadcasts */
	struct dq_slot *slots;
	struct dq_slot_delivery *deliveries;	/* tracked queues only */
	uint32_t free_top;		/* the pool's top slot, if nfree */
	uint32_t nfree;			/* slots on the pool (stale too) */

	/*
	 * Single producer (DQ_OPEN_F_SINGLE_PRODUCER): the one producer
	 * thread's own cache of FREE slots, taken off the pool DQ_PCACHE
	 * at a time under plock; pcache[] and pcache_n are that thread's
	 * alone, no lock.  A cached slot is FREE with in_pool 0: no other
	 * path frees or takes a FREE slot (attached and durable queues, where
	 * one could, refuse the flag).  Its RESERVED -> QUEUED moves and
	 * sq_tail are the producer's alone too; the store-release of the
	 * ring index orders them before the engine and the consumer see
	 * the slot.
	 */
	bool sp;
	uint32_t pcache_n;
	uint32_t *pcache;		/* DQ_PCACHE entries */
	uint32_t *ptop;			/* DQ_PTOP entries (plock), or NULL */
	uint32_t ptop_head;		/* free-running: next entry, & mask */
	uint32_t ptop_n;		/* entries in ptop[] */
	uint64_t pool_refills;		/* plock rounds that filled pcache */

	pthread_mutex_t cmd_lock;
	struct dq_reject *rejbuf;	/* sq_entries: every reject fits */

	pthread_mutex_t cons_lock;
	uint64_t anomalies;		/* engine returned a slot not queued */
	/*
	 * dq_flush_reap()'s SUBMIT arguments and rejects (cons_lock): not on
	 * the stack, because an SQE that io_uring_enter() failed to submit
	 * stays in the ring and may reach the kernel with a later call.
	 */
	struct dq_submit cons_sub;
	struct dq_reject *cons_rejbuf;

	/*
	 * Durable queues (dq_queue_open_durable): the journal.  Their
	 * commits do not publish the submit ring index; dq_flush() does,
	 * after writing the batch's records.  jreplay: recovery is putting
	 * journaled messages back (no new records for them).
	 */
	struct dq_journal *journal;
	bool jreplay;
};

static inline uint32_t dq_load_acquire_u32(const uint32_t *p)
{
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

static inline void dq_store_release_u32(uint32_t *p, uint32_t v)
{
	__atomic_store_n(p, v, __ATOMIC_RELEASE);
}

/* dq_queue.c */
uint64_t dq_mono_ns(void);
int dq_publish_durable(struct dqshim_queue *q);
int dq_slots_adopt(struct dqshim_queue *q);

/* dq_kernel.c */
int dq_kernel_open(struct dqshim_queue *q, uint32_t flags, const char *name);
int dq_kernel_slot_map(struct dqshim_queue *q, uint64_t *bits);

/* dq_user.c */
int dq_user_open(struct dqshim_queue *q);

/* dq_journal.c */
int dq_journal_open(struct dqshim_queue *q, const struct dq_journal_params *jp,
		    bool named);
void dq_journal_close(struct dqshim_queue *q);
int dq_journal_commit_locked(struct dqshim_queue *q, uint32_t slot,
			     uint32_t len);
int dq_journal_write_batch(struct dqshim_queue *q, uint32_t from, uint32_t to);
void dq_journal_retire_locked(struct dqshim_queue *q, uint32_t slot,
			      unsigned int reason);

/* dq_abi.c: the extensible structs' sz rules (dqshim.h). */
int dq_params_in(struct dq_params *dst, const struct dq_params *p);
int dq_journal_params_in(struct dq_journal_params *dst,
			 const struct dq_journal_params *jp);
int dq_struct_out_check(const void *dst);
void dq_struct_out(void *dst, const void *src, size_t src_size);

#endif /* DQ_INTERNAL_H */
