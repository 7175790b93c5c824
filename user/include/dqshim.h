/* SPDX-License-Identifier: LGPL-2.1 OR MIT */
/*
 * dqshim.h - libdqshim, the user-space side of dq (zero-copy delayed
 * dispatch).
 *
 * A dq queue holds messages until their due time (CLOCK_MONOTONIC) and
 * then hands them to a consumer: never early, in due order, FIFO among
 * equal due times, each exactly once.  A message is a fixed-size slot of a
 * payload arena plus a small descriptor; the producer writes the payload
 * in place and the consumer reads it in place, nothing is copied.
 *
 * Two backends implement the same API and the same guarantees:
 *
 *   DQ_BACKEND_KERNEL  dq.ko through /dev/dq: shared rings and arena
 *                      mapped from the kernel, commands over a private
 *                      io_uring (IORING_OP_URING_CMD) or, on kernels whose
 *                      dq.ko lacks it, the equivalent ioctls.
 *   DQ_BACKEND_USER    an embedded engine in this process: the same timing
 *                      wheel as dq.ko, a timerfd as the clock, the arena in
 *                      anonymous memory.  No helper thread: the consumer
 *                      releases due messages when it reaps.
 *
 * Life of a message:
 *
 *   dq_reserve()      take a free slot; write the payload at msg.data
 *   dq_commit()       queue its descriptor in the batch (the submit ring)
 *   dq_flush()        hand the whole batch to the engine in one call
 *   ...due...
 *   dq_reap()         get due messages; payloads are read in place
 *   dq_done()         give the slot back once the payload has been read
 *
 * dq_cancel() takes a committed message back before it is due.
 *
 * Delivery tracking (DQ_OPEN_F_TRACK, both backends): a reaped message
 * stays in flight, its slot held, until the consumer says how it went
 * with dq_finish() (DQ_DONE_DELIVERED or DQ_DONE_FAILED; dq_done() is
 * dq_finish(DELIVERED)).  dq_params.max_inflight caps the messages in
 * flight: a due message that finds no credit waits, in due order, until a
 * finish returns one.  A producer re-committing a failed message sets
 * dqshim_msg.attempts, which comes back in dq_reaped.attempts.
 *
 * Application keys (DQ_OPEN_F_KEYS, both backends, since 0.4): a message
 * committed with dq_commit_key() carries a 64-bit key (its user_data) that
 * is unique among the queue's held messages and, on a tracked queue, its
 * messages in flight.  DQ_COMMIT_F_REPLACE swaps the key's holder for the
 * new message in one step; dq_cancel_key() and dq_lookup_key() find a
 * message by key.
 *
 * Errors: every function returning int returns a negative errno value on
 * failure (never sets errno).  dq_strerror() describes them.
 *
 * Thread safety (both backends), call by call:
 *  - Any number of threads at once, with each other and with dq_reap():
 *    dq_reserve(), dq_reserve_n(), dq_reserve_wait(), dq_abort(),
 *    dq_commit(), dq_commit_n(), dq_commit_delay(), dq_commit_key(),
 *    dq_flush(), dq_cancel(), dq_cancel_key(), dq_lookup_key(),
 *    dq_done(), dq_done_n(), dq_finish(), dq_finish_n(),
 *    dq_queue_get_stats(), dq_queue_track_stats(), dq_queue_lib_stats(),
 *    dq_queue_info(), dq_queue_fd(),
 *    dq_queue_backend(), dq_submit_complete() and dq_cancel_complete().
 *    They are serialised by locks inside the queue; none of them waits for
 *    another one to finish anything but its own short critical section
 *    (stats in particular never holds up a flush: user/tests/thread_test
 *    runs every pair of reserve+commit, flush, cancel, stats+info+fd,
 *    reserve+abort and reserve_wait, beside dq_reap() and dq_done(), and
 *    fails on any call that takes over 5 s).
 *  - Except on a queue opened with DQ_OPEN_F_SINGLE_PRODUCER: there the
 *    producer calls (dq_reserve(), dq_reserve_n(), dq_reserve_wait(),
 *    dq_abort(), dq_commit(), dq_commit_n(), dq_commit_delay(),
 *    dq_commit_key()) are made by one thread at a time, and take no lock
 *    in the common case; the other calls above keep their rules.
 *  - dq_reap() is single-consumer: at most one call at a time per queue.  A
 *    call that overlaps another one returns -EBUSY at once.
 *  - dq_prep_cmd(), dq_prep_submit(), dq_prep_wait(), dq_prep_cancel():
 *    they only fill the caller's SQE (the ring is the caller's to lock);
 *    a dq_prep_wait() completion is followed by dq_reap(), so the
 *    single-consumer rule covers it.
 *  - dq_strerror(), dq_now_ns(), dq_backend_name(), dq_path_name(),
 *    dq_params_init(): no queue state, any thread.
 *  - dq_queue_open() and dq_queue_attach() create a queue no other
 *    thread can know yet.  dq_queue_close() must not race with any other
 *    call on the queue.
 *  - A dqshim_msg or dq_reaped belongs to the thread that obtained it until it
 *    is committed, aborted or done; the payload memory likewise.
 *  - The dq_reject_fn callback runs in the flushing thread, inside the
 *    queue's command lock (see dq_reject_fn).
 * The library keeps no global state; queues are independent.
 */
#ifndef DQSHIM_H
#define DQSHIM_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <linux/dq.h>

#ifdef __cplusplus
extern "C" {
#endif

#ifndef DQ_API
#define DQ_API __attribute__((visibility("default")))
#endif

/* dq's version (VERSION; scripts/version-check.sh keeps them equal). */
#define DQSHIM_VERSION_MAJOR	1
#define DQSHIM_VERSION_MINOR	1
#define DQSHIM_VERSION_PATCH	0

/*
 * Extensible structs (since 1.0, the libbpf way).  struct dq_params,
 * struct dq_journal_params, struct dq_info, struct dq_lib_stats and
 * struct dq_journal_stats start with `size_t sz`: the size of the struct
 * as the caller was compiled, so a library newer or older than the header
 * a program was built with knows which fields the program has.
 *  - Structs the library reads (dq_params, dq_journal_params): set sz with
 *    dq_params_init()/DQ_PARAMS_INIT or dq_journal_params_init() (inline
 *    here: they use the caller's sizeof).  A smaller sz (a program built
 *    against an older 1.x header) is accepted: the fields past it read as
 *    zero.  A larger sz (a newer header than the library) is accepted
 *    when every byte the library does not know is zero, else the call
 *    fails with -E2BIG (the program asks for something this library
 *    cannot do).  sz below the struct's DQ_*_SZ_MIN: -EINVAL.
 *  - Structs the library fills (dq_info, dq_lib_stats, dq_journal_stats):
 *    set sz = sizeof before the call (e.g. `struct dq_info i = { .sz =
 *    sizeof(i) };`); the library writes no byte past sz, fills the fields
 *    it has and sets sz to the bytes it filled, min(sz, its own size): a
 *    field that ends past the returned sz was not filled.  sz smaller
 *    than a size_t: -EINVAL.
 * Programs built against 0.9 and earlier (no sz) keep working: their
 * calls bind to the LIBDQSHIM_0.x symbol versions, which take the old
 * layouts.
 */
#define dq_offsetofend(type, field) \
	(offsetof(type, field) + sizeof(((type *)0)->field))

struct io_uring_sqe;
struct dqshim_queue;

/* Which engine a queue runs on. */
enum dq_backend {
	DQ_BACKEND_AUTO = 0,	/* kernel if /dev/dq works, else user */
	DQ_BACKEND_KERNEL = 1,	/* dq.ko through /dev/dq */
	DQ_BACKEND_USER = 2,	/* the embedded in-process engine */
};

/* How commands reach the engine (dq_info.path). */
enum dq_path {
	DQ_PATH_LOCAL = 0,	/* user backend: direct calls */
	DQ_PATH_URING = 1,	/* kernel backend: IORING_OP_URING_CMD */
	DQ_PATH_IOCTL = 2,	/* kernel backend: DQ_IOC_* ioctls */
};

/* dq_params.flags */
#define DQ_OPEN_F_IOCTL		(1U << 0) /* kernel: never use io_uring */
/*
 * Track delivery: dq_queue_open() sets the queue up with DQ_SETUP_F_TRACK
 * (max_inflight: the cap); dq_queue_attach() attaches as the named
 * queue's consumer (DQ_ATTACH_F_CONSUMER).  See dq_finish().
 */
#define DQ_OPEN_F_TRACK		(1U << 1)
/*
 * Application keys (since 0.4): dq_queue_open() sets the queue up with
 * DQ_SETUP_F_KEYS (8 bytes per slot, in the engine); dq_commit_key(),
 * dq_cancel_key() and dq_lookup_key() need it.  Combines with
 * DQ_OPEN_F_TRACK.  dq_queue_attach() ignores it: a named queue has keys
 * when `dqctl create --keys` made it so.
 */
#define DQ_OPEN_F_KEYS		(1U << 2)
/*
 * Single producer (since 0.7, both backends, dq_queue_open() and
 * dq_queue_open_durable() without a journal only: dq_queue_attach() and
 * a durable queue return -EINVAL).  The application promises that one
 * thread at a time makes the producer calls: dq_reserve(),
 * dq_reserve_n(), dq_reserve_wait(), dq_abort(), dq_commit(),
 * dq_commit_delay(), dq_commit_key(), dq_commit_n() (several threads
 * may take turns, with their own synchronisation between them, e.g. a
 * mutex the application holds across a batch).  In return those calls
 * take no lock in the common case: the producer keeps a private cache of
 * up to 64 free slots, refilled from the pool under the library's lock
 * once per 64 reservations, and commits write the submit ring without
 * a lock.  Every other call (dq_flush(), dq_cancel(), dq_reap(),
 * dq_done(), dq_finish(), the _n calls of the consumer, stats) keeps its
 * usual thread safety and may run in other threads at the same time
 * (e.g. a consumer thread, or the reject callback freeing slots).
 * Slots in the producer's cache are free but only it can reserve them:
 * they do not count as held.
 */
#define DQ_OPEN_F_SINGLE_PRODUCER	(1U << 3)
/*
 * User backend (since 0.7): keep the timer's slack at the queue's
 * granularity (the behaviour before 0.7 and dq.ko's), instead of
 * adapting it to how close together releases are due (see
 * dq_queue_lib_stats()): fewer wakeups for releases up to one granularity
 * late.  A supported choice, not a test knob (dq.ko's fixed_slack
 * parameter, which is, exists only in its test build).  The kernel
 * backend ignores it.
 */
#define DQ_OPEN_F_FIXED_SLACK		(1U << 4)
/*
 * Slots aligned to 8 bytes instead of 64 (both backends,
 * dq_queue_open() and dq_queue_open_durable()): slot_size is rounded up
 * to a multiple of 8, so a 500-byte payload takes 504 bytes of arena, not
 * 512 (DQ_SETUP_F_SLOT_ALIGN8).  The price: a slot may share a cache line
 * with its neighbours, so threads writing adjacent slots at the same
 * moment contend for that line.  A dq.ko without the feature (no
 * DQ_FEAT_SLOT_ALIGN8) still gives the queue, with 64-byte rounding:
 * dq_queue_info()'s slot_size and features say which the queue has.
 * dq_queue_attach() ignores the flag (a named queue's slots are what
 * `dqctl create` made them).  A durable queue's journal records the slot
 * size: reopening it with the other alignment changes the slot size and
 * fails with -EXDEV, as another slot_size does.
 */
#define DQ_OPEN_F_SLOT_ALIGN8		(1U << 5)
/*
 * dq_params.visibility_ns is set (since 0.9, both backends, with
 * DQ_OPEN_F_TRACK): a message in flight that long without a finish is
 * released again (dq_reaped.redeliveries one higher), see dq_finish().
 * The field is read only when this flag is given, because a program
 * built against 0.8 or earlier has a struct dq_params without it (and
 * dq_params_init() leaves it alone for the same reason).
 * dq_queue_attach() ignores the flag: a named queue has the visibility
 * timeout `dqctl create --visibility` gave it.
 */
#define DQ_OPEN_F_VISIBILITY		(1U << 6)
/*
 * User backend (since 0.9): the arena's pages are taken as messages first
 * use them, 4 KiB at a time, instead of all at open (populated, on huge
 * pages, so that the hot path takes no page fault and few TLB misses): a
 * queue sized for a rare peak then costs memory for what it held at most,
 * not for slot_count x slot_size.  The price: a page fault the first time
 * each page of the arena is written.  The kernel backend ignores it (dq.ko
 * allocates the arena when the queue is set up).
 */
#define DQ_OPEN_F_LAZY_ARENA		(1U << 7)
#define DQ_OPEN_F_ALL		(DQ_OPEN_F_IOCTL | DQ_OPEN_F_TRACK | \
				 DQ_OPEN_F_KEYS | DQ_OPEN_F_SINGLE_PRODUCER | \
				 DQ_OPEN_F_FIXED_SLACK | DQ_OPEN_F_SLOT_ALIGN8 | \
				 DQ_OPEN_F_VISIBILITY | DQ_OPEN_F_LAZY_ARENA)

/*
 * Called by dq_flush() (in the flushing thread) for each descriptor the
 * engine rejected.  The message's slot is already back in the free pool;
 * @rej says why (rej->error is a negative errno, rej->reason an enum
 * dq_reject_reason) and carries the slot and user_data that were
 * committed.
 *
 * Keyed queues (DQ_OPEN_F_KEYS): it also sees each message a
 * DQ_COMMIT_F_REPLACE commit took the place of, with rej->reason
 * DQ_REPLACED and rej->error 0.  That is NOT a failure: the new message
 * was accepted, and the entry hands back the REPLACED message's slot
 * (rej->slot, already in the free pool; rej->user_data is the key;
 * rej->index the ring index of the replacing commit).  Every slot that
 * comes back from the engine at a flush comes back through this one
 * callback, so a caller that tracks its slots needs one place only.
 * DQ_REJ_KEY rejects (error -EEXIST, -ENOENT or -EBUSY, see
 * dq_commit_key()) are failures like the others: the new message's slot
 * is back in the pool.
 *
 * It runs with the queue's command lock held, so it must not
 * block: it may call dq_reserve(), dq_commit(), dq_commit_key(),
 * dq_abort(), dq_done(), dq_finish(), but not dq_reserve_wait(),
 * dq_flush(), dq_cancel(), dq_cancel_key() or dq_lookup_key().
 */
typedef void (*dq_reject_fn)(void *arg, const struct dq_reject *rej);

/*
 * Queue parameters.  Start from dq_params_init(), then change what you
 * need.  Zero means "default" for every count below.
 */
struct dq_params {
	size_t sz;		 /* sizeof(struct dq_params): set by
				  * dq_params_init() / DQ_PARAMS_INIT */
	uint32_t slot_count;	 /* slots in the arena: max messages held */
	uint32_t slot_size;	 /* bytes per slot, 64 .. 1 MiB, rounded up
				  * to a multiple of 64 (of 8 with
				  * DQ_OPEN_F_SLOT_ALIGN8); 0: 64 */
	uint32_t submit_entries; /* batch (submit ring) size, rounded up to
				  * a power of two; 0: min(1024, slot_count) */
	uint32_t ready_entries;	 /* ready ring size (kernel); 0: dq.ko's
				  * default, slot_count within 64 .. 4096
				  * (the ring holds what the consumer has
				  * not read; more wait in dq.ko's backlog).
				  * dq_queue_info() says what it is */
	int32_t numa_node;	 /* kernel: node of the release engine and the
				  * memory; -1: the caller's node */
	uint32_t granularity_ns; /* timer slack: releases may be this much
				  * late so that close ones share a wakeup;
				  * 0: DQ_DEFAULT_GRANULARITY_NS (50 us) */
	uint32_t backend;	 /* enum dq_backend */
	uint32_t uring_depth;	 /* entries of each private io_uring; 0: 8 */
	uint32_t flags;		 /* DQ_OPEN_F_* */
	uint32_t max_inflight;	 /* DQ_OPEN_F_TRACK: most messages in flight
				  * at once, 0: no cap; else must be 0.
				  * (0.2 and before: resv, must be 0) */
	dq_reject_fn on_reject;	 /* optional, see dq_reject_fn */
	void *reject_arg;	 /* passed to on_reject */
	/* Since 0.9, read only with DQ_OPEN_F_VISIBILITY: */
	uint64_t visibility_ns;	 /* DQ_OPEN_F_TRACK: redeliver a message in
				  * flight this long (DQ_MIN_VISIBILITY_NS,
				  * 1 ms .. DQ_MAX_DELAY_NS); 0: never */
};

/* The fields every dq_params has had since 0.1 (sz aside). */
#define DQ_PARAMS_SZ_MIN	dq_offsetofend(struct dq_params, reject_arg)

/* dq_params_init() as an initializer: struct dq_params p = DQ_PARAMS_INIT; */
#define DQ_PARAMS_INIT {						\
	.sz = sizeof(struct dq_params),					\
	.slot_count = 1024,						\
	.slot_size = DQ_MIN_SLOT_SIZE,					\
	.numa_node = -1,						\
	.backend = DQ_BACKEND_AUTO,					\
}

/* A reserved slot, filled by dq_reserve(). */
struct dqshim_msg {
	void *data;		/* payload: cap bytes inside the arena */
	uint32_t slot;		/* slot index */
	uint32_t gen;		/* generation of this use of the slot */
	uint32_t cap;		/* slot size: most bytes dq_commit() takes */
	uint16_t attempts;	/* 0 from dq_reserve(); a producer committing
				 * a message again after a failure raises it.
				 * Tracked queues only (else dq_commit()
				 * returns -EINVAL when it is not 0) */
	uint16_t resv;
	uint64_t handle;	/* DQ_HANDLE(slot, gen): dq_cancel() takes it
				 * once the message is committed */
};

/* A due message, filled by dq_reap().  data points into the arena. */
struct dq_reaped {
	void *data;		/* payload, len bytes, valid until dq_done() */
	uint64_t user_data;	/* as committed */
	uint64_t due_ns;	/* as committed (absolute CLOCK_MONOTONIC) */
	uint64_t release_ns;	/* when the engine released it */
	uint64_t handle;	/* DQ_HANDLE(slot, gen) it was committed as */
	uint32_t slot;		/* pass to dq_done() or dq_finish() */
	uint32_t len;
	/* Since 0.3 (the struct grew from 48 to 56 bytes): */
	uint16_t attempts;	/* tracked: as committed; else 0 */
	uint16_t redeliveries;	/* tracked: deliveries before this one
				 * (visibility timeout; dq.ko: a consumer
				 * went away holding it); else 0 */
	uint32_t resv;		/* 0 */
};

/* What a queue is, as dq_queue_info() reports it. */
struct dq_info {
	size_t sz;		/* in: sizeof(struct dq_info); out: bytes filled */
	uint32_t backend;	/* enum dq_backend, never AUTO */
	uint32_t path;		/* enum dq_path */
	int fd;			/* dq_queue_fd() */
	int32_t numa_node;	/* -1 for the user backend */
	uint32_t queue_id;	/* kernel queue id; 0 for the user backend */
	uint32_t abi_version;	/* DQ_ABI_VERSION spoken */
	uint32_t features;	/* DQ_FEAT_* of the engine */
	uint32_t slot_count;
	uint32_t slot_size;	/* after rounding */
	uint32_t submit_entries;
	uint32_t ready_entries;
	uint32_t granularity_ns;
	void *arena;		/* start of the payload arena */
	uint64_t arena_size;	/* bytes mapped at arena */
};

/*
 * Fill @p with the defaults: 1024 slots of 64 bytes, AUTO, node -1, every
 * other field 0, sz = sizeof(*p).  Inline since 1.0 so that sz is the
 * caller's sizeof (0.9 and earlier: a library call).
 */
static inline void dq_params_init(struct dq_params *p)
{
	memset(p, 0, sizeof(*p));
	p->sz = sizeof(*p);
	p->slot_count = 1024;
	p->slot_size = DQ_MIN_SLOT_SIZE;
	p->numa_node = -1;
	p->backend = DQ_BACKEND_AUTO;
}

/*
 * Create a queue.  With DQ_BACKEND_AUTO the kernel backend is used when
 * /dev/dq can be opened and set up, else the user backend.  @p NULL: the
 * defaults of dq_params_init().
 * Returns 0 and the queue in *@out, or -EINVAL (bad parameters, p->sz
 * below DQ_PARAMS_SZ_MIN), -E2BIG (p->sz larger than this library's
 * struct dq_params and a byte past it not zero), -ENOMEM,
 * or, for DQ_BACKEND_KERNEL, the error of opening or setting up /dev/dq
 * (-ENOENT when dq.ko is not loaded).
 */
DQ_API int dq_queue_open(const struct dq_params *p, struct dqshim_queue **out);

/*
 * Attach to the named queue @name, created with `dqctl create` (the kernel
 * backend only; the queue lives in dq.ko and outlives its processes).  The
 * sizes come from the kernel; @p (may be NULL) supplies only flags,
 * uring_depth and on_reject.  On a queue that tracks delivery,
 * DQ_OPEN_F_TRACK attaches as its consumer (-EBUSY: another file is;
 * -EINVAL on a queue that does not track); without it the process is a
 * producer only and dq_reap()/dq_finish() return -EPERM.  Slots that
 * hold messages submitted before, or wait on the ready ring, become this
 * process's once it has reaped them.  Returns 0; -ENOENT: no such queue;
 * -EACCES: the queue's mode does not give this user read and write
 * access; -ENODEV/-ENOENT on /dev/dq: dq.ko is not loaded.  One producer
 * process at a time: the free slots are divided when a process attaches,
 * not while it runs (a producer-only process does not see the consumer's
 * finishes either).
 */
DQ_API int dq_queue_attach(const char *name, const struct dq_params *p,
			   struct dqshim_queue **out);

/*
 * Destroy the queue: messages still held are dropped, the arena is
 * unmapped (every data pointer into it becomes invalid).  NULL is a no-op.
 * A durable queue first writes and syncs what its journal still owes;
 * the messages it held (reaped and not done included) stay live in the
 * journal and come back at the next dq_queue_open_durable() on it.
 */
DQ_API void dq_queue_close(struct dqshim_queue *q);

/* The backend the queue runs on: DQ_BACKEND_KERNEL or DQ_BACKEND_USER. */
DQ_API enum dq_backend dq_queue_backend(const struct dqshim_queue *q);

/* "kernel", "user", "auto", or "unknown". */
DQ_API const char *dq_backend_name(enum dq_backend b);

/* "uring", "ioctl", "local", or "unknown". */
DQ_API const char *dq_path_name(enum dq_path p);

/*
 * Describe the queue: @info->sz set by the caller (see "Extensible
 * structs" above).  Returns 0, or -EINVAL when info->sz < sizeof(size_t).
 */
DQ_API int dq_queue_info(const struct dqshim_queue *q, struct dq_info *info);

/*
 * A file descriptor for poll/epoll: readable (POLLIN) when messages are
 * due, i.e. when dq_reap() would return some.  Kernel backend: the /dev/dq
 * file.  User backend: a timerfd armed for the next due time; it may be
 * readable once without anything to reap (the engine had internal work),
 * and it stays readable until dq_reap() has taken what is due.  Since
 * 0.7 the user backend re-arms it in a blocking dq_reap() (timeout_ns
 * != 0) only before sleeping, so after one that returned messages the
 * fd may stay readable until the next dq_reap(); a poller that reaps
 * with timeout_ns 0 sees it exact.  The fd belongs to the queue: do not
 * read from it or close it.
 */
DQ_API int dq_queue_fd(const struct dqshim_queue *q);

/*
 * Counters of the queue: for the kernel backend what DQ_IOC_QUEUE_STATS
 * returns, for the user backend the same fields from its own counters.
 * Returns 0 or -errno.
 */
DQ_API int dq_queue_get_stats(struct dqshim_queue *q, struct dq_queue_stats *st);

/* ---- producer ------------------------------------------------------ */

/*
 * Take a free slot: fills @m (data, slot, gen, cap, handle).  The caller
 * owns the slot until dq_commit() or dq_abort().
 * Returns 0, or -ENOSPC when every slot is held (reserved, queued, pending
 * in the engine, or reaped and not yet done).
 */
DQ_API int dq_reserve(struct dqshim_queue *q, struct dqshim_msg *m);

/*
 * dq_reserve(), waiting up to @timeout_ns (relative; < 0: forever) for a
 * slot to come back through dq_done(), dq_cancel() or a reject.  Waiting
 * does not flush: a producer holding uncommitted work should dq_flush()
 * first.  Returns 0, or -ETIME when the time passed without a free slot.
 */
DQ_API int dq_reserve_wait(struct dqshim_queue *q, struct dqshim_msg *m,
			   int64_t timeout_ns);

/* Give a reserved, uncommitted slot back.  Returns 0 or -EINVAL. */
DQ_API int dq_abort(struct dqshim_queue *q, const struct dqshim_msg *m);

/*
 * Queue the reserved message @m: @len payload bytes, due at @due_ns
 * (absolute CLOCK_MONOTONIC; a time in the past means "now"), with
 * @user_data echoed at reap.  The descriptor is visible to the engine
 * from now on, but is only guaranteed to be taken by the next dq_flush().
 * After success the message is identified by m->handle.
 * Returns 0; -EAGAIN when the batch (submit ring) is full: dq_flush() and
 * try again, the reservation is kept; -EMSGSIZE when len > m->cap;
 * -EINVAL when @m is not a live reservation of this queue.
 */
DQ_API int dq_commit(struct dqshim_queue *q, const struct dqshim_msg *m, uint32_t len,
		     uint64_t due_ns, uint64_t user_data);

/*
 * dq_commit() with a due time of @delay_ns after the engine takes the
 * message (at dq_flush(), on the engine's CLOCK_MONOTONIC): never earlier
 * than @delay_ns after this call.  Returns as dq_commit(); a delay over
 * DQ_MAX_DELAY_NS is rejected by the engine at dq_flush() (DQ_REJ_TIME).
 */
DQ_API int dq_commit_delay(struct dqshim_queue *q, const struct dqshim_msg *m,
			   uint32_t len, uint64_t delay_ns, uint64_t user_data);

/*
 * Hand every committed descriptor to the engine.  Kernel backend: one
 * io_uring_enter() carrying DQ_URING_CMD_SUBMIT (or one DQ_IOC_SUBMIT).
 * Returns the number accepted (0 when the batch was empty) or -errno.
 * Descriptors the engine rejects (e.g. due more than DQ_MAX_DELAY_NS
 * ahead: -EOVERFLOW) are not lost silently: their slots return to the free
 * pool, each is passed to dq_params.on_reject, and they are counted in
 * the queue stats.
 */
DQ_API int dq_flush(struct dqshim_queue *q);

/*
 * Take back a committed message the engine still holds.  Flushes the
 * batch first, so a committed but unflushed message can be cancelled too.
 * Held: not yet due, or due but not yet handed to the consumer (kernel
 * backend: waiting for a pacing token or for room on the ready ring; user
 * backend: until dq_reap() takes it).
 * Returns 0: cancelled, its slot is back in the free pool and it will
 * never be reaped; -EALREADY: already handed to the consumer (it is or
 * will be reaped) or already cancelled; -ENOENT: the handle names no
 * message (never committed, or its slot has been reused since).
 */
DQ_API int dq_cancel(struct dqshim_queue *q, uint64_t handle);

/* ---- consumer ------------------------------------------------------ */

/*
 * Take up to @max due messages, in release order, into @out.  The payload
 * is not copied: out[i].data points into the arena and stays valid (and
 * the slot stays held) until dq_done(q, out[i].slot) or dq_finish().
 * Tracked queues: every reaped message is in flight until then, and
 * with max_inflight set at most that many are reaped and not finished.
 * @timeout_ns: 0 never blocks; > 0 blocks at most that long (relative);
 * < 0 blocks until something is due.  Kernel backend: blocks with
 * DQ_URING_CMD_WAIT or DQ_IOC_WAIT.  Over io_uring the WAIT stays
 * parked between calls (up to 250 ms): a call that times out leaves it
 * for the next one, and the timeout is io_uring_enter()'s own; the
 * thread that parked it posts its completion (as task work) even while
 * another thread waits for it.  Interrupted system calls are restarted internally.  Due
 * messages the ready ring had no room for wait in dq.ko's backlog: a
 * call that finds the ring empty moves them on (with @timeout_ns 0 too,
 * one WAIT that does not sleep, made only when dq.ko says its backlog
 * holds some), so a consumer that never blocks gets every message.
 * Returns the number of messages (>= 1), 0 when @timeout_ns is 0 and
 * nothing is due, -ETIME when a positive timeout passed with nothing due,
 * -EBUSY when another dq_reap() on this queue is in progress, -EPERM on a
 * tracked named queue attached without DQ_OPEN_F_TRACK, or -errno.
 */
DQ_API int dq_reap(struct dqshim_queue *q, struct dq_reaped *out, unsigned int max,
		   int64_t timeout_ns);

/*
 * dq_flush() then dq_reap(): for a thread that both produces and consumes
 * (commit what came in, then sleep until something is due or the next
 * input), with the same results as the two calls in turn.  On dq.ko over
 * io_uring both go in one io_uring_enter(): DQ_URING_CMD_SUBMIT, then the
 * wait for the consumer's parked DQ_URING_CMD_WAIT (see dq_reap()), one
 * system call per turn instead of two.  Elsewhere (ioctl path, user backend, durable queues,
 * nothing committed) it is the two calls.  Rejects of the flush go to
 * dq_params.on_reject from this call, as with dq_flush().  Returns what
 * dq_reap() returns, or the flush's -errno (then nothing was reaped).
 */
DQ_API int dq_flush_reap(struct dqshim_queue *q, struct dq_reaped *out,
			 unsigned int max, int64_t timeout_ns);

/*
 * Return a reaped message's slot to the free pool once its payload has
 * been read.  Returns 0, or -EINVAL when @slot is not a reaped slot.  On a
 * tracked queue (DQ_OPEN_F_TRACK) it is dq_finish(q, slot,
 * DQ_DONE_DELIVERED) and returns what that returns.
 */
DQ_API int dq_done(struct dqshim_queue *q, uint32_t slot);

/*
 * Tracked queue: the consumer is finished with the message reaped on
 * @slot, with @outcome DQ_DONE_DELIVERED or DQ_DONE_FAILED (counted
 * apart).  Sends DONE for the delivery of @slot that dq_reap() handed out
 * last (kernel backend: one DQ_URING_CMD_DONE or DQ_IOC_DONE): a message
 * released again while this process still held it (its visibility
 * timeout passed) is reaped again on the same slot, redeliveries one
 * higher, and from then on this call names that newest delivery.  The
 * slot returns to the free pool and a credit to max_inflight only when
 * the engine accepted the DONE.
 * Returns 0; -EINVAL: @slot out of range or not reaped (never, or already
 * finished), or @outcome unknown; the engine's refusal of the entry
 * (-ESTALE: the engine released the message again after the delivery
 * this call named, and dq_reap() has not handed that one out yet: finish
 * it once reaped; -EALREADY, -ENOENT: the engine does not hold it in
 * flight), the slot then stays reaped; kernel backend: the call's own
 * errors (-EPERM: this process is not the queue's consumer, an io_uring
 * error).  Untracked queue: DQ_DONE_DELIVERED is dq_done(); DQ_DONE_FAILED
 * returns -EOPNOTSUPP.
 */
DQ_API int dq_finish(struct dqshim_queue *q, uint32_t slot, uint32_t outcome);

/*
 * dq_finish() of exactly the delivery @r names (since 0.9; @r is an entry
 * dq_reap() filled: its slot, handle and redeliveries), for a consumer
 * that may still hold an older delivery of a slot when dq_reap() hands
 * out a newer one (e.g. a worker thread slower than the visibility
 * timeout).  Returns what dq_finish() returns, and, without asking the
 * engine: -ESTALE when the slot was reaped again since @r (the newer
 * delivery stays reaped, for its holder to finish), -ENOENT when the
 * slot was reaped since for another message (@r's is finished).
 * Untracked queue: dq_done() of @r's slot if it still holds @r's message
 * (else -ENOENT); DQ_DONE_FAILED returns -EOPNOTSUPP.
 */
DQ_API int dq_finish_reaped(struct dqshim_queue *q, const struct dq_reaped *r,
			    uint32_t outcome);

/*
 * Batch calls (since 0.6): the same as calling the single call for each
 * entry, in order, with one lock round per batch instead of one per
 * message, and on a tracked queue of the kernel backend one DONE call to
 * dq.ko per 64 messages instead of one per message.
 *
 * dq_reserve_n(): up to @n free slots into m[0..]; returns how many
 * (>= 1), or -ENOSPC when none is free (never waits), -EINVAL.
 *
 * dq_finish_n(): dq_finish() of each of slots[0..@n) with @outcome;
 * @results (may be NULL) gets each one's 0 or -errno as dq_finish() would
 * return it (a slot named twice: the second -EINVAL).  Returns the number
 * finished; -EINVAL (@outcome unknown, @slots NULL), -EOPNOTSUPP
 * (DQ_DONE_FAILED on an untracked queue), -EPERM (not the consumer), or
 * the engine call's -errno when it failed before finishing any (its
 * slots stay reaped; @results say so for every slot not finished).
 * dq_done_n(): dq_finish_n() with DQ_DONE_DELIVERED (untracked queues
 * too, as dq_done()).
 */
DQ_API int dq_reserve_n(struct dqshim_queue *q, struct dqshim_msg *m,
			unsigned int n);

/* One message of dq_commit_n(). */
struct dq_commit_ent {
	const struct dqshim_msg *msg;	/* a live reservation */
	uint64_t due_ns;	/* absolute, or a delay (DQ_COMMIT_F_RELATIVE) */
	uint64_t user_data;
	uint32_t len;		/* payload bytes, <= msg->cap */
	uint32_t flags;		/* 0 or DQ_COMMIT_F_RELATIVE */
};

/*
 * dq_commit_n() (since 0.7): dq_commit() (or dq_commit_delay() for an
 * entry with DQ_COMMIT_F_RELATIVE) of ent[0..@n) in order, with one lock
 * round and one publication of the submit ring index for the batch.
 * Stops at the first entry that fails; that entry and the ones after it
 * are not committed (their reservations are kept).  Returns the number
 * committed (the first ones), or the first entry's -errno as dq_commit()
 * would return it when none was (-EAGAIN: the batch is full, flush),
 * -EINVAL for bad arguments (an unknown flag: keys go through
 * dq_commit_key()).
 */
DQ_API int dq_commit_n(struct dqshim_queue *q, const struct dq_commit_ent *ent,
		       unsigned int n);
DQ_API int dq_finish_n(struct dqshim_queue *q, const uint32_t *slots,
		       unsigned int n, uint32_t outcome, int *results);
DQ_API int dq_done_n(struct dqshim_queue *q, const uint32_t *slots,
		     unsigned int n, int *results);

/*
 * Delivery counters (struct dq_track_stats from linux/dq.h): kernel
 * backend DQ_IOC_TRACK_STATS, user backend its own.  All zero for an
 * untracked queue.  Returns 0 or -errno.
 */
DQ_API int dq_queue_track_stats(struct dqshim_queue *q,
				struct dq_track_stats *st);

/*
 * The library's own counters (since 0.7), for measuring its hot path.
 * Fields a backend does not have are 0 (the timer fields are the user
 * backend's: dq.ko's timer is counted by dq.ko).
 */
struct dq_lib_stats {
	size_t sz;		/* in: sizeof(struct dq_lib_stats); out: filled */
	/* User backend: its timerfd. */
	uint64_t timer_sets;	/* timerfd_settime() calls, all causes */
	uint64_t timer_sets_submit;	/* of which by a flush bringing
					 * something earlier than armed */
	uint64_t wakeups;	/* dq_reap() sleeps that ended */
	uint64_t slack_ns;	/* the slack applied now (adaptive) */
	uint64_t slack_max_ns;	/* its bound: granularity less the wheel's
				 * tick (1024 ns) */
	/* Both backends: the producer side. */
	uint64_t producer_wakes;	/* wake-ups sent to threads waiting
					 * in dq_reserve_wait(): at most one
					 * per call freeing slots, none when
					 * no thread waits */
	uint64_t pool_refills;	/* DQ_OPEN_F_SINGLE_PRODUCER: lock rounds
				 * that refilled the producer's cache */
	uint64_t wakeups_idle;	/* user backend: of wakeups, those that
				 * released nothing (the wheel's cascades,
				 * a cancelled message, a timeout) */
	uint64_t resv[8];
};

/*
 * Fill @st (st->sz set by the caller; zeroed first, up to sz).  Returns 0,
 * -EINVAL when st->sz < sizeof(size_t), or -errno.
 */
DQ_API int dq_queue_lib_stats(struct dqshim_queue *q, struct dq_lib_stats *st);

/* ---- io_uring helpers for applications that own a ring ------------- */

/*
 * Fill @sqe as IORING_OP_URING_CMD on @fd with command @cmd_op and
 * @len (<= 16) bytes of @payload copied into sqe->cmd; every other field
 * is zeroed except sqe->user_data, which is left to the caller.
 * Returns 0 or -EINVAL (payload too long).
 */
DQ_API int dq_prep_cmd(struct io_uring_sqe *sqe, int fd, uint32_t cmd_op,
		       const void *payload, size_t len);

/*
 * Prepare DQ_URING_CMD_SUBMIT for the queue's committed descriptors.  The
 * caller fills @s (max, rejects, reject_cap; flags and resv are zeroed
 * here) and keeps @s and its rejects array alive until the completion;
 * then it must call dq_submit_complete() so rejected slots return to the
 * pool.  Size the rejects array to dq_info.submit_entries to learn of
 * every reject.  Returns 0, or -EOPNOTSUPP on the user backend (the SQE
 * is left untouched).
 */
DQ_API int dq_prep_submit(struct io_uring_sqe *sqe, struct dqshim_queue *q,
			  struct dq_submit *s);

/*
 * After the completion of a dq_prep_submit() SQE with result @res:
 * returns the rejected slots described in @s to the free pool and passes
 * them to dq_params.on_reject.  Returns @res.
 */
DQ_API int dq_submit_complete(struct dqshim_queue *q, const struct dq_submit *s,
			      int res);

/*
 * Prepare DQ_URING_CMD_WAIT: completes when @min_ready messages are ready
 * (res: the number ready; then dq_reap() with timeout 0 takes them) or
 * after @timeout_ns (< 0: forever; res -ETIME; kernels before 6.7 end a
 * wait after DQ_URING_MAX_PARK_NS).  Returns 0 or -EOPNOTSUPP.
 */
DQ_API int dq_prep_wait(struct io_uring_sqe *sqe, struct dqshim_queue *q,
			uint32_t min_ready, int64_t timeout_ns);

/*
 * Prepare DQ_URING_CMD_CANCEL for @handle (res as dq_cancel(); the batch
 * is NOT flushed).  After a completion with res 0 call
 * dq_cancel_complete() to return the slot.  Returns 0 or -EOPNOTSUPP.
 */
DQ_API int dq_prep_cancel(struct io_uring_sqe *sqe, struct dqshim_queue *q,
			  uint64_t handle);

/* After a dq_prep_cancel() completion with result @res; returns @res. */
DQ_API int dq_cancel_complete(struct dqshim_queue *q, uint64_t handle, int res);

/* ---- application keys (DQ_OPEN_F_KEYS) ----------------------------- */

/* dq_commit_key() flags */
#define DQ_COMMIT_F_RELATIVE	(1U << 0) /* due_ns is a delay, as
					   * dq_commit_delay() */
#define DQ_COMMIT_F_REPLACE	(1U << 1) /* take the key's holder back */
#define DQ_COMMIT_F_ALL		(DQ_COMMIT_F_RELATIVE | DQ_COMMIT_F_REPLACE)

/* Where a key's message is, as dq_lookup_key() and dq_cancel_key() say. */
struct dq_key_info {
	uint64_t handle;	/* DQ_HANDLE(slot, gen): dq_cancel() takes it */
	uint64_t due_ns;	/* absolute CLOCK_MONOTONIC */
	uint32_t state;		/* enum dq_key_state: DQ_KEY_PENDING (not
				 * yet due), DQ_KEY_DUE (due, not yet handed
				 * to the consumer), DQ_KEY_INFLIGHT
				 * (tracked: reaped, not yet finished) */
	uint32_t resv;		/* 0 */
};

/*
 * dq_commit() of a keyed message: @key is its user_data (dq_reap() gives
 * it back as dq_reaped.user_data).  @flags: DQ_COMMIT_F_RELATIVE (@due_ns
 * is a delay, see dq_commit_delay()), DQ_COMMIT_F_REPLACE.  A key is taken
 * from the flush that accepts its message until the message leaves the
 * engine: handed to the consumer (tracked queue: finished with
 * dq_finish()), cancelled, or replaced.
 *
 * What the key does is decided at dq_flush(), in commit order, and
 * reported through dq_params.on_reject (see dq_reject_fn):
 *  - without DQ_COMMIT_F_REPLACE, a key already taken: reject DQ_REJ_KEY,
 *    error -EEXIST.
 *  - with DQ_COMMIT_F_REPLACE: the key's holder, when it is still held
 *    (not yet handed to the consumer; waiting for a delivery credit
 *    counts as held), is taken back and the new message accepted in the
 *    same step, so exactly one of the two is ever released: an entry with
 *    reason DQ_REPLACED hands the old slot back (counted in
 *    dq_queue_stats.replaced).  Key not taken: DQ_REJ_KEY -ENOENT (no
 *    message is accepted).  Holder already handed to the consumer (kernel
 *    backend: posted on the ready ring; tracked: in flight): DQ_REJ_KEY
 *    -EBUSY.  Within one batch a later commit sees the earlier ones: a
 *    replace of a key committed earlier in the same flush replaces it.
 * Returns as dq_commit(), and -EINVAL when the queue was opened without
 * DQ_OPEN_F_KEYS or @flags has an unknown bit.
 */
DQ_API int dq_commit_key(struct dqshim_queue *q, const struct dqshim_msg *m,
			 uint32_t len, uint64_t due_ns, uint64_t key,
			 unsigned int flags);

/*
 * dq_cancel() of the message holding @key.  Flushes the batch first.
 * Returns 0: cancelled, its slot is back in the free pool, and when @out
 * is not NULL it says which message it was (its handle, due time and the
 * state it was cancelled in); -ENOENT: no message holds the key;
 * -EALREADY: the key's message was already handed to the consumer (it is
 * in flight on a tracked queue; dq_finish() frees the key), nothing
 * changed; -EOPNOTSUPP: the queue has no keys; or the error of the flush.
 */
DQ_API int dq_cancel_key(struct dqshim_queue *q, uint64_t key,
			 struct dq_key_info *out);

/*
 * Where the message holding @key is: fills @out.  Flushes the batch first,
 * so a committed message is found.  The answer may be stale at once (the
 * message may come due or be reaped).  Returns 0; -ENOENT: no message
 * holds the key; -EINVAL: @out is NULL; -EOPNOTSUPP: the queue has no
 * keys; or the error of the flush.
 */
DQ_API int dq_lookup_key(struct dqshim_queue *q, uint64_t key,
			 struct dq_key_info *out);

/* ---- durable queues (since 0.5; docs/journal.md) ------------------- */

/* dq_journal_params.durability */
enum dq_durability {
	DQ_DURABLE_NONE = 0,	/* no journal */
	DQ_DURABLE_BATCH = 1,	/* group commit: at most one fdatasync
				 * per sync_interval_us; a flush after a
				 * quiet spell is synced at once */
	DQ_DURABLE_ALWAYS = 2,	/* dq_flush() returns once its commits are
				 * on stable storage */
};

/* Journal of a durable queue.  Start from dq_journal_params_init(). */
struct dq_journal_params {
	size_t sz;		   /* sizeof(struct dq_journal_params): set by
				    * dq_journal_params_init() */
	const char *dir;	   /* journal directory (made if missing); one
				    * queue at a time may use it */
	uint32_t durability;	   /* enum dq_durability */
	uint32_t sync_interval_us; /* BATCH: at most one fdatasync per
				    * this long, so a flush is durable at
				    * most this plus one fdatasync later;
				    * 0: 2000 */
	uint32_t sync_records;	   /* BATCH: sync at once when this many
				    * records wait; 0: 4096 */
	uint32_t flags;		   /* 0 */
	uint64_t max_bytes;	   /* journal size limit: a commit that would
				    * pass it gets -ENOSPC; 0: 1 GiB */
	uint64_t segment_bytes;	   /* segment file size, 1 MiB .. 1 GiB;
				    * 0: 64 MiB */
	/*
	 * Since 1.1 (was resv[0]'s low half): BATCH only, ignored by ALWAYS.
	 * While the only records not yet synced are retire entries (no
	 * COMMIT a producer may wait on, no dq_durable_wait() waiting), sync
	 * at most once per this long; the retire entries are still written
	 * every sync_interval_us, so a kill -9 loses none of them, but a
	 * power cut (or a kernel crash) may bring back up to this long of
	 * retired messages once more.  A commit is synced on the
	 * sync_interval_us schedule as before, taking the retires with it.
	 * 0, or not above sync_interval_us: as sync_interval_us.
	 */
	uint32_t retire_sync_us;
	uint32_t resv32;	   /* 0 */
	uint64_t resv[3];	   /* 0 */
};

/*
 * The fields every dq_journal_params has had since 0.5 (sz aside): the
 * struct has kept its size, new fields took resv space.
 */
#define DQ_JOURNAL_PARAMS_SZ_MIN \
	dq_offsetofend(struct dq_journal_params, resv)

/*
 * Fill @jp: @dir, @durability, every other field its default (0), sz =
 * sizeof(*jp).  Inline since 1.0, as dq_params_init().
 */
static inline void dq_journal_params_init(struct dq_journal_params *jp,
					  const char *dir,
					  enum dq_durability durability)
{
	memset(jp, 0, sizeof(*jp));
	jp->sz = sizeof(*jp);
	jp->dir = dir;
	jp->durability = durability;
}

/*
 * dq_queue_open() of a durable queue: every message it accepts is written
 * to the journal in @jp->dir, every message that leaves it (done,
 * finished, cancelled, replaced, rejected) retired there.  When the
 * directory holds a journal (a previous run crashed, was killed, or closed
 * with messages held), its live messages are put back into the new queue
 * (payload, user_data/key, attempts, due time kept across reboots through
 * CLOCK_REALTIME; those due while nothing ran come out at once, in due
 * order) before this returns; dq_journal_stats() tells what recovery
 * found.  @jp NULL or durability NONE: dq_queue_open().
 * Returns 0, an error of dq_queue_open(), or: -EBUSY: another queue uses
 * the directory; -EXDEV: a segment is foreign or its header damaged, or
 * the journal was made by a queue of another slot size or flags;
 * -ENODATA: a segment is missing; -ENOBUFS: the journal holds more live
 * messages than the queue has slots; -EINVAL: bad @jp (jp->sz below
 * DQ_JOURNAL_PARAMS_SZ_MIN too); -E2BIG: @p or @jp has a larger sz than
 * this library's struct with a non-zero byte past it; the errno of a
 * file operation.  On any error the directory is left as it was.
 */
DQ_API int dq_queue_open_durable(const struct dq_params *p,
				 const struct dq_journal_params *jp,
				 struct dqshim_queue **out);

/*
 * dq_queue_attach() of a named durable queue (since 0.6): every process
 * attached with the same @jp->dir (its producer, its consumer, one after
 * another or at once) writes what it does to that one journal, taking
 * turns (flock of DIR/STATE) and sharing where each held message's record
 * is, so a consumer retires what a producer committed.  The first process
 * to attach after the queue was made (`dqctl create`, again after rmmod
 * or a reboot: dq.ko's dq_setup.instance tells) recovers the journal into
 * it, as dq_queue_open_durable() does; one attaching meanwhile waits for
 * that, then joins.  Every process using the queue must attach this way:
 * a plain dq_queue_attach() process's commits and dones are not
 * journaled.  The journal's segment_bytes and max_bytes are the
 * recovering process's; durability and sync interval are each process's
 * own.  Errors: those of dq_queue_attach() and dq_queue_open_durable(),
 * and -EBUSY: a private queue uses the directory; -EXDEV: it holds a
 * private queue's journal; -EOPNOTSUPP: dq.ko has no DQ_FEAT_INSTANCE.
 * Closing keeps the journal and the queue's messages (they are the
 * queue's, not the process's).
 */
DQ_API int dq_queue_attach_durable(const char *name, const struct dq_params *p,
				   const struct dq_journal_params *jp,
				   struct dqshim_queue **out);

/*
 * The journal position of everything committed on @q so far, by any
 * thread of this process, increasing in commit order: on a private
 * queue, a message id.  0 on a queue without a journal.
 */
DQ_API uint64_t dq_journal_mark(struct dqshim_queue *q);

/* Every message committed at or before this position is durable. */
DQ_API uint64_t dq_durable_pos(struct dqshim_queue *q);

/*
 * Wait until dq_durable_pos(q) >= @mark and every message retired before
 * this call (done, finished, cancelled, replaced, rejected) is retired on
 * stable storage too: flushes the batch first (a commit becomes durable
 * only once flushed), then waits for the group commit.  @timeout_ns < 0: forever.  Returns 0; -ETIME; the error of
 * that flush (e.g. -ENOSPC: the disk is full) when @mark is beyond what
 * earlier flushes wrote; -EIO (or the errno of the write or fdatasync)
 * once the journal failed: nothing after the failure is durable;
 * -EOPNOTSUPP: no journal.
 */
DQ_API int dq_durable_wait(struct dqshim_queue *q, uint64_t mark,
			   int64_t timeout_ns);

/*
 * Since 1.1: without waiting, is @mark durable?  1: dq_durable_pos(q) >=
 * @mark; 0: not yet; the journal's error (-EIO, or the errno of its write
 * or fdatasync) once it failed and @mark is not durable: it never will
 * be; -EOPNOTSUPP: no journal.  Flushes nothing: a commit becomes durable
 * once a dq_flush() (or dq_durable_wait()) wrote it, then at the group
 * commit's pace (sync_interval_us, or at once after a quiet spell).
 * Unlike dq_durable_wait() it asks nothing of the retire entries, which
 * keep retire_sync_us's schedule.
 */
DQ_API int dq_durable_poll(struct dqshim_queue *q, uint64_t mark);

/*
 * Since 1.1: a descriptor for poll()/epoll that is readable once
 * dq_durable_pos(q) moved or the journal failed, so that a loop waits
 * for the group commit alongside its sockets instead of in
 * dq_durable_wait().  An eventfd (non-blocking, close-on-exec) made at
 * the first call and readable at once; later calls return the same one;
 * dq_queue_close() closes it.  The caller read()s its 8 bytes to rearm it,
 * then asks dq_durable_poll() or dq_durable_pos() what moved.  Returns
 * the descriptor, -EOPNOTSUPP (no journal), or the errno of eventfd().
 */
DQ_API int dq_durable_fd(struct dqshim_queue *q);

/* Journal counters (dq_journal_stats()). */
struct dq_journal_stats {
	size_t sz;		/* in: sizeof(struct dq_journal_stats); out: filled */
	uint32_t durability;	/* enum dq_durability */
	uint32_t segments;	/* segment files now */
	uint64_t bytes;		/* bytes of segment files (preallocated) */
	uint64_t used_bytes;	/* bytes of records in them */
	uint64_t commit_pos;	/* dq_journal_mark() */
	uint64_t durable_pos;	/* dq_durable_pos(): lag = commit - durable */
	uint64_t commits;	/* COMMIT records written since open */
	uint64_t retires;	/* messages retired since open */
	uint64_t fsyncs;	/* fdatasync calls since open */
	uint64_t synced_records; /* records made durable by them */
	uint64_t sync_ns_total;	/* time in fdatasync */
	uint64_t sync_ns_max;
	uint64_t enospc;	/* commits/flushes refused: size limit or
				 * disk full */
	uint64_t relocated;	/* live messages copied out of old segments */
	uint64_t reclaimed;	/* segments deleted */
	uint64_t io_errors;
	/* The recovery at open: */
	uint64_t rec_segments;
	uint64_t rec_records;	/* good records scanned */
	uint64_t rec_recovered;	/* live messages put back */
	uint64_t rec_overdue;	/* ... of them due before the open */
	uint64_t rec_corrupt;	/* bad records skipped (docs/journal.md) */
	uint64_t rec_torn_bytes; /* the torn tail (cut in the last segment) */
	uint64_t rec_key_conflicts; /* duplicate live keys resolved */
	uint64_t rec_ns;	/* time the recovery took */
	uint64_t rec_lost_bytes; /* durable records missing: a segment cut
				  * short or zeroed before its sync mark */
	uint64_t rec_bad_marks;	/* damaged sync marks */
	uint64_t rec_stale_segments; /* left by a cut-short reclamation,
				      * deleted */
	uint64_t resv[5];
};

/*
 * Fill @st (st->sz set by the caller).  Returns 0, -EINVAL when st->sz <
 * sizeof(size_t), or -EOPNOTSUPP on a queue without a journal.
 */
DQ_API int dq_journal_stats(struct dqshim_queue *q,
			    struct dq_journal_stats *st);

/* ---- misc ---------------------------------------------------------- */

/*
 * A static description of error @err (negative or positive errno), in
 * dq's terms where it has one (e.g. -ENOSPC: "no free slot in the
 * arena").  Never NULL; thread-safe.
 */
DQ_API const char *dq_strerror(int err);

/* CLOCK_MONOTONIC now, in nanoseconds: the clock of every due time. */
DQ_API uint64_t dq_now_ns(void);

#ifdef __cplusplus
}
#endif

#endif /* DQSHIM_H */
