/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * dq: zero-copy delayed dispatch.
 *
 * The one ABI header shared by dq.ko and user space.
 *
 * A queue is made of three shared regions, each mapped separately with
 * mmap() on the /dev/dq file that set the queue up:
 *
 *   submit ring  user space produces struct dq_desc, the kernel consumes
 *   ready ring   the kernel produces struct dq_ready, user space consumes
 *   arena        slot_count payload slots of slot_size bytes each
 *
 * A message is a slot of the arena plus a descriptor.  User space owns every
 * slot that the kernel does not hold: it writes the payload in place, puts a
 * descriptor naming the slot on the submit ring and asks the kernel to
 * submit (DQ_IOC_SUBMIT or the io_uring command of the same name).  From then
 * on the kernel holds the slot until the message is due; it then posts a
 * struct dq_ready on the ready ring and the slot belongs to user space
 * again, which reads the payload in place.
 *
 * The kernel never reads the arena and never trusts the rings: every
 * descriptor is read once, validated and copied into kernel-private state;
 * ring indices written by user space are checked before use.
 *
 * Ring protocol (both rings): entries is a power of two; producer and
 * consumer are free-running u32 indices, the entry for index i is
 * entries[i & (entries - 1)].  A producer writes entries, then publishes
 * them with a store-release of its index; a consumer reads the producer
 * index with a load-acquire, reads the entries, then releases them with a
 * store-release of its own index.  producer - consumer never exceeds
 * entries; the kernel rejects rings where user space breaks that.
 *
 * Errors.  Each call below lists every error it returns and when, in the
 * order they are checked.  An ioctl fails with -1 and errno; an io_uring
 * command completes with cqe->res = -errno.  Common to all of them:
 *
 *   -EFAULT  an argument, or a user pointer inside one, cannot be read or
 *            written.
 *   -ENXIO   a queue call (DQ_IOC_SUBMIT, _WAIT, _CANCEL, _QUEUE_STATS,
 *            _SLOT_MAP, every DQ_URING_CMD_*, mmap()) on a file that has
 *            neither set up (DQ_IOC_SETUP) nor attached (DQ_IOC_ATTACH) a
 *            queue.  Checked before the argument is read.
 *   -ENOTTY  an ioctl number that is not one of the DQ_IOC_* below, on any
 *            file, with or without a queue.
 *
 * Only DQ_IOC_WAIT sleeps interruptibly and can fail with -EINTR; every
 * other call completes without waiting for user space.
 *
 * Clocks and time namespaces (DQ_FEAT_TIME_NS).  Every absolute time of
 * this ABI is CLOCK_MONOTONIC in ns, as clock_gettime() reads it in the
 * task concerned: a task in a time namespace (CLONE_NEWTIME) reads the
 * host's clock plus its namespace's monotonic offset.  A queue has one
 * clock, fixed when it is created: its creator's (the DQ_IOC_SETUP
 * caller's; for a named queue the QUEUE_NEW sender's).  The absolute times
 * in its shared memory, the descriptors' due_ns and the ready entries'
 * due_ns and release_ns, are in that clock.  A task whose clock is
 * another (its time namespace has another monotonic offset; namespaces
 * that differ only in their boottime offset share a clock) cannot use
 * them, whoever wrote them: DQ_IOC_ATTACH and every SUBMIT refuse it with
 * -EXDEV.  Times copied out to a caller (dq_key_op.due_ns,
 * dq_track_stats.oldest_ns, DQ_STATS_OLDEST_NS) are in the caller's own
 * clock, which is the queue's for any task that could attach.  Relative
 * times (F_RELATIVE delays, timeouts, visibility_ns, the late_* counters)
 * are the same in every clock.  A due time before the host's boot, which
 * only a namespace whose clock is ahead of the host's can name, is due
 * at once, and its ready entry reports due_ns as the namespace's time of
 * the host's boot (its offset) instead: as absolute timers do there.
 * dq's tracepoints carry the host's clock.
 */
#ifndef _UAPI_LINUX_DQ_H
#define _UAPI_LINUX_DQ_H

#include <linux/types.h>
#include <linux/ioctl.h>

#define DQ_DEVICE_NAME		"dq"
#define DQ_ABI_VERSION		1

/* Features reported in dq_setup.features. */
#define DQ_FEAT_RELATIVE_DUE	0x1U /* DQ_DESC_F_RELATIVE understood */
#define DQ_FEAT_CANCEL		0x2U /* DQ_IOC_CANCEL */
#define DQ_FEAT_WAIT		0x4U /* DQ_IOC_WAIT and poll() */
#define DQ_FEAT_NODE_ENGINES	0x8U /* one release engine per node */
#define DQ_FEAT_URING_CMD	0x10U /* DQ_URING_CMD_* through io_uring */
#define DQ_FEAT_NAMED		0x20U /* named queues, DQ_IOC_ATTACH */
#define DQ_FEAT_PACING		0x40U /* per-queue release pacing */
#define DQ_FEAT_TRACK		0x80U /* DQ_SETUP_F_TRACK: in flight, DONE,
				       * credits, redelivery, attempts
				       */
#define DQ_FEAT_KEYS		0x100U /* DQ_SETUP_F_KEYS, DQ_IOC_KEY */
#define DQ_FEAT_VISIBILITY	0x200U /* dq_setup.visibility_ns */
#define DQ_FEAT_TIME_NS		0x400U /* times in the caller's time
					* namespace's clock, -EXDEV (above)
					*/
#define DQ_FEAT_INSTANCE	0x800U /* dq_setup.instance */
#define DQ_FEAT_READY_BACKLOG	0x1000U /* DQ_RING_F_BACKLOG on the ready
					 * ring (below)
					 */
#define DQ_FEAT_SLOT_ALIGN8	0x2000U /* DQ_SETUP_F_SLOT_ALIGN8 */

/* Limits. */
#define DQ_MAX_SLOTS		0x1000000U	/* 2^24 */
#define DQ_MIN_SLOT_SIZE	64U
#define DQ_MAX_SLOT_SIZE	0x100000U	/* 1 MiB */
#define DQ_MAX_RING_ENTRIES	0x100000U	/* 2^20 */
#define DQ_MAX_GRANULARITY_NS	1000000000U	/* 1 s */
#define DQ_DEFAULT_GRANULARITY_NS 50000U	/* 50 us */
#define DQ_MIN_VISIBILITY_NS	1000000U	/* 1 ms */
/* A due time may lie at most this far in the future (about one year). */
#define DQ_MAX_DELAY_NS		0x80000000000000ULL /* 2^55 */

/* mmap() offsets of the three regions. */
#define DQ_OFF_SUBMIT_RING	0x00000000ULL
#define DQ_OFF_READY_RING	0x10000000ULL
#define DQ_OFF_ARENA		0x20000000ULL

/*
 * The /dev/dq file.
 *
 * open(2): any access mode.  -ENOMEM.  (-ENOENT from the path lookup when
 *   dq.ko is not loaded.)  A file opened O_RDONLY can set up a queue but
 *   maps it read-only.
 * read(2), write(2): -EINVAL, always (the file has neither).
 * lseek(2): -ESPIPE.
 * close(2): 0.  Closing any descriptor of the file ends the closing
 *   process's parked DQ_URING_CMD_WAITs with -ECANCELED.  The queue lives
 *   as long as a descriptor, a mapping or an io_uring request holds the
 *   file (a named queue: as long as the registry holds it, too).
 * poll(2), epoll: before SETUP or ATTACH only EPOLLERR, at once, and
 *   nothing to wait on: an epoll registration made then is never woken.
 *   After: EPOLLOUT | EPOLLWRNORM always; EPOLLIN | EPOLLRDNORM while the
 *   ready ring holds entries user space has not consumed; EPOLLERR (with
 *   EPOLLIN) while the ready ring's consumer index is broken; EPOLLHUP
 *   once the queue was deleted (QUEUE_DEL), waking every poller.
 *
 * mmap(2) of a region: MAP_SHARED, from the region's offset, up to its
 * length (dq_ring_offsets.map_size, dq_setup.arena_size); a shorter
 * length maps a prefix.  The pages are mapped at once and stay the
 * queue's; the mapping is never executable and never in a core dump.
 *   Errors:
 *   -ENXIO   the file has no queue.
 *   -EINVAL  the offset is not exactly one of DQ_OFF_* (a region maps
 *            from its start only); the length is larger than the region;
 *            MAP_PRIVATE (a copy the kernel would never see).  The mm's
 *            own checks come first: a length of 0 or an offset that is
 *            not page aligned is -EINVAL too.
 *   -EPERM   PROT_EXEC (also when READ_IMPLIES_EXEC adds it).
 *   -EACCES  PROT_WRITE on a file opened O_RDONLY (the mm's check).
 *   -ENOMEM  no room for the mapping (the mm's).
 * mprotect(2): -EACCES when adding PROT_EXEC, or PROT_WRITE to a mapping
 *   of a file opened O_RDONLY.  Everything else as for any shared
 *   mapping.
 * mremap(2): growing a mapping is -EFAULT (regions have a fixed size);
 *   shrinking and moving work.  MREMAP_DONTUNMAP is -EINVAL.
 * madvise(2): MADV_DONTNEED drops only the process's page-table entries:
 *   the next access maps the same page back, contents unchanged (no
 *   SIGBUS).  MADV_FREE, MADV_WIPEONFORK and MADV_DODUMP are -EINVAL,
 *   MADV_REMOVE is -ENODEV; none of them changes the contents.  NORMAL,
 *   RANDOM, SEQUENTIAL, WILLNEED, DONTFORK, DOFORK, (UN)MERGEABLE,
 *   (NO)HUGEPAGE, DONTDUMP, KEEPONFORK, COLD, PAGEOUT and POPULATE_READ/
 *   _WRITE succeed and change nothing the queue sees.  mlock(2) succeeds
 *   and locks nothing: the pages are never reclaimed anyway.
 */

/*
 * Where the parts of a ring live, as byte offsets from the start of its
 * mapping.  producer and consumer sit on separate cache lines.
 */
struct dq_ring_offsets {
	__u32 producer;
	__u32 consumer;
	__u32 flags;		/* DQ_RING_F_*, written by the kernel */
	__u32 entries;		/* offset of the entry array */
	__u32 ring_entries;	/* number of entries, a power of two */
	__u32 entry_size;	/* sizeof(struct dq_desc) or dq_ready */
	__u64 map_size;		/* length to pass to mmap() */
};

/* Ring flags (dq_ring_offsets.flags points at them). */
#define DQ_RING_F_BROKEN	0x1U /* user space broke the protocol once */
/*
 * Ready ring (DQ_FEAT_READY_BACKLOG): due messages wait in the kernel's
 * backlog because the ring was full when they came due.  They move onto
 * the ring only when the consumer asks: a DQ_IOC_WAIT or
 * DQ_URING_CMD_WAIT (timeout 0 too) or a poll() of the file fills the
 * room it made.  A consumer that never blocks (it reaps until the ring
 * is empty, edge-triggered epoll included) checks this flag once the ring
 * is empty and, when it is set, issues a WAIT with timeout 0, as liburing
 * does for IORING_SQ_CQ_OVERFLOW.  Set before the producer index that
 * filled the ring is published (read it after the load-acquire of the
 * producer), cleared when the backlog is empty again; only a hint, never
 * trusted by the kernel.
 */
#define DQ_RING_F_BACKLOG	0x2U

/**
 * DQ_IOC_SETUP - create a queue owned by this open file.
 *
 * On success the out fields describe the queue (sizes after rounding).
 *
 * Errors:
 *   -EFAULT  the struct cannot be read, or written back (then no queue
 *            was set up).
 *   -EBUSY   the file already has a queue (set up or attached); checked
 *            before the other fields.
 *   -EINVAL  an unknown flag; max_inflight non-zero without
 *            DQ_SETUP_F_TRACK, or above DQ_MAX_SLOTS; visibility_ns
 *            non-zero without DQ_SETUP_F_TRACK, or outside
 *            DQ_MIN_VISIBILITY_NS .. DQ_MAX_DELAY_NS; resv2[] non-zero;
 *            slot_count 0 or above
 *            DQ_MAX_SLOTS; slot_size outside DQ_MIN_SLOT_SIZE ..
 *            DQ_MAX_SLOT_SIZE; submit_entries or ready_entries above
 *            DQ_MAX_RING_ENTRIES; granularity_ns above
 *            DQ_MAX_GRANULARITY_NS; numa_node below -1, or a node that is
 *            not online.
 *   -E2BIG   the arena (slot_count x slot_size after rounding) is larger
 *            than the module parameter max_arena_bytes (default 4 GiB).
 *   -ENOMEM  the queue's charge (below) would take the caller's user over
 *            the caller's RLIMIT_MEMLOCK, checked before anything is
 *            allocated (as mlock(2) and io_uring's registered buffers
 *            fail); or the memory for the arena, the rings or the records
 *            could not be had (memcg-charged; never the OOM killer).
 *
 * Memory accounting.  A queue's memory is pinned (never swapped) for as
 * long as the queue lives, and is charged twice:
 *  - to the memory cgroup of the task that sets it up (every page);
 *  - to the RLIMIT_MEMLOCK of that task's user, in user_struct->locked_vm,
 *    the per-user count of pinned pages that io_uring's registered buffers
 *    also use, unless the task has CAP_IPC_LOCK or the module parameter
 *    memlock_accounting is 0 (default 1).  The charge, in pages of
 *    PAGE_SIZE bytes, is
 *      pages(arena_size)
 *      + pages(submit.entries + submit_entries x 32)     (submit.map_size)
 *      + pages(ready.entries + ready_entries x 32, or 48 with
 *              DQ_SETUP_F_TRACK)                         (ready.map_size)
 *      + pages(slot_count x 64
 *              + slot_count x 8 with DQ_SETUP_F_TRACK
 *              + (slot_count + buckets) x 4 with DQ_SETUP_F_KEYS)
 *    where pages(x) rounds x bytes up to whole pages, sizes are after the
 *    rounding DQ_IOC_SETUP does, submit.entries and ready.entries are the
 *    ring offsets it returns (the ring header, a few cache lines),
 *    buckets is slot_count rounded up to a power of two, at least 2, and
 *    the last term is the kernel's own per-slot records (not mapped, but
 *    just as unswappable: with 64-byte slots as large as the arena).
 *    The charge is returned when the queue's memory is freed: when the
 *    last file (and mapping) of a private queue goes; for a named queue
 *    (QUEUE_NEW, charged to the netlink caller the same way) after
 *    QUEUE_DEL and the last attached file's close.  A create refused for
 *    the limit is counted in the node's STATS MEMLOCK_REFUSED;
 *    MEMLOCK_PAGES is what the node's queues have charged now.
 */
struct dq_setup {
	/* in */
	__u32 flags;		/* DQ_SETUP_F_* */
	__u32 slot_count;	/* 1 .. DQ_MAX_SLOTS */
	__u32 slot_size;	/* bytes, DQ_MIN_SLOT_SIZE .. DQ_MAX_SLOT_SIZE,
				 * rounded up to a multiple of 64 (of 8
				 * with DQ_SETUP_F_SLOT_ALIGN8)
				 */
	__u32 submit_entries;	/* rounded up to a power of two; 0: default,
				 * slot_count within 64 .. 1024
				 */
	__u32 ready_entries;	/* rounded up to a power of two; 0: default,
				 * slot_count within 64 .. 4096 (the ring
				 * holds what the consumer has not read;
				 * more due messages wait in the kernel's
				 * backlog, see DQ_RING_F_BACKLOG).  Use
				 * ready.ring_entries, never slot_count.
				 */
	__s32 numa_node;	/* -1: the caller's node */
	__u32 granularity_ns;	/* 0: DQ_DEFAULT_GRANULARITY_NS */
	__u32 max_inflight;	/* DQ_SETUP_F_TRACK: most messages in flight
				 * at once; 0: no cap.  Else must be 0.
				 */
	/* out */
	__u32 abi_version;
	__u32 features;
	__u32 queue_id;
	__u32 resv1;
	__u64 arena_size;	/* slot_count * slot_size, page aligned */
	struct dq_ring_offsets submit;
	struct dq_ring_offsets ready;
	/* in, and out as the queue's (DQ_IOC_ATTACH too) */
	__u64 visibility_ns;	/* DQ_SETUP_F_TRACK: redeliver a message in
				 * flight this long; 0: never.  Else 0.
				 */
	/*
	 * in: must be 0.  out (DQ_FEAT_INSTANCE): a random number drawn when
	 * the queue was created, never 0.  A queue deleted and created again
	 * under the same name and id (after rmmod, a reboot) has another, so
	 * user space that keeps state next to a named queue (a durable
	 * queue's journal) can tell "the queue I knew" from "a new, empty
	 * queue with that name".
	 */
	__u64 instance;
	__u64 resv2[2];		/* must be 0 */
};

/*
 * DQ_SETUP_F_TRACK: the queue tracks delivery.  A released message is in
 * flight, still held by dq (its slot is not user space's to reuse), until
 * its consumer calls DQ_IOC_DONE (or DQ_URING_CMD_DONE) for it:
 *
 *  - the ready ring carries struct dq_ready_track (ready.entry_size says
 *    so): the entry's gen, attempts and redeliveries, which DONE names;
 *  - max_inflight caps the messages in flight: a due message that finds
 *    no credit waits, in due order, with those waiting for a pacing token
 *    (counted in paced); each DONE returns one credit;
 *  - the consumer is one file: for a queue set up with DQ_IOC_SETUP the
 *    file that set it up, for a named queue the file that attached with
 *    DQ_ATTACH_F_CONSUMER.  Only it reads the ready ring and sends DONE.
 *    While a named queue has no consumer nothing is released (due
 *    messages wait, as for a credit).  When the consumer's file is
 *    released (close of its last descriptor and mapping, exit, kill -9),
 *    every message in flight on it, read from the ring or not, is
 *    released again to the next consumer, before anything released after
 *    it and in the order it was first released, its redeliveries one
 *    higher; the ready ring restarts empty (the kernel sets its consumer
 *    index to the producer's).  No message is lost; none is in flight on
 *    two consumers at once.
 *  - visibility_ns (optional): a message in flight that long without a
 *    DONE is released again, like a dead consumer's (redeliveries one
 *    higher, ahead of everything waiting), to the same or the next
 *    consumer: at-least-once for a consumer that hangs.  The earlier
 *    delivery's DONE is then refused with -ESTALE.  Counted in
 *    dq_track_stats.expired.
 *  - DQ_DESC_F_ATTEMPTS: the descriptor's resv carries an attempt count
 *    (a consumer re-committing a failed message raises it), echoed in
 *    the ready entry.  Untracked queues reject the flag (DQ_REJ_FLAGS).
 */
#define DQ_SETUP_F_TRACK	0x1U

/*
 * DQ_SETUP_F_KEYS: messages may carry a 64-bit application key.  A
 * descriptor with DQ_DESC_F_KEY uses its user_data as the key, which is
 * unique among the queue's held messages (pending, or due and not yet
 * posted) and, on a DQ_SETUP_F_TRACK queue, its messages in flight.  The
 * key is free again once its message leaves dq: posted on the ready ring
 * (untracked), done (tracked), cancelled or replaced.
 *
 *  - a keyed descriptor whose key is taken is rejected, DQ_REJ_KEY with
 *    -EEXIST, unless it has DQ_DESC_F_REPLACE: then the message holding
 *    the key is taken back and the new one accepted in one step of the
 *    submit, so the key is never free in between and exactly one of the
 *    two is ever released.  The replaced message's slot is the
 *    submitter's again: the submit describes it in its rejects array,
 *    reason DQ_REPLACED (see struct dq_reject).  A replace whose key is
 *    not taken is rejected, DQ_REJ_KEY with -ENOENT; one whose key is
 *    held by a message already posted (tracked: in flight) is rejected,
 *    DQ_REJ_KEY with -EBUSY.
 *  - DQ_IOC_KEY looks a key up or cancels its message, O(1).
 *
 * Costs 8 bytes per slot, allocated at setup; queues without the flag
 * pay nothing.  Untracked queues without it reject DQ_DESC_F_KEY and
 * _REPLACE (DQ_REJ_FLAGS).
 */
#define DQ_SETUP_F_KEYS		0x2U

/*
 * DQ_SETUP_F_SLOT_ALIGN8 (DQ_FEAT_SLOT_ALIGN8): slot_size is rounded up
 * to a multiple of 8 bytes instead of 64, so a 500-byte payload takes a
 * 504-byte slot, not 512.  Slot i still starts at i x slot_size in the
 * arena, but no longer on a cache line of its own: a slot may share its
 * first and last cache line with its neighbours (two threads writing
 * adjacent slots at once pay for that line bouncing) and may straddle a
 * page.  Payloads stay 8-byte aligned.  The kernel never reads the
 * arena, so nothing else changes; every out field, arena_size included,
 * follows from the smaller slot_size.  Without the flag the 64-byte
 * rounding is kept; a dq.ko older than the feature refuses the flag
 * with -EINVAL, like any unknown one.
 */
#define DQ_SETUP_F_SLOT_ALIGN8	0x4U
#define DQ_SETUP_F_ALL		(DQ_SETUP_F_TRACK | DQ_SETUP_F_KEYS | \
				 DQ_SETUP_F_SLOT_ALIGN8)

/*
 * Submit ring entry.  Every field is validated; a descriptor that fails is
 * consumed, counted and reported through dq_submit.rejects.
 */
struct dq_desc {
	__u64 due_ns;		/* CLOCK_MONOTONIC ns (the queue's clock), or
				 * a delay with F_RELATIVE; one already due
				 * is released by the submit itself
				 */
	__u64 user_data;	/* opaque, echoed in dq_ready */
	__u32 slot;		/* < slot_count */
	__u32 len;		/* <= slot_size */
	__u32 gen;		/* user-chosen generation, forms the handle */
	__u16 flags;		/* DQ_DESC_F_* */
	__u16 resv;		/* DQ_DESC_F_ATTEMPTS: the attempt count;
				 * else must be 0
				 */
};

#define DQ_DESC_F_RELATIVE	0x1U /* due_ns is a delay from submit */
#define DQ_DESC_F_ATTEMPTS	0x2U /* resv is an attempt count (tracked) */
#define DQ_DESC_F_KEY		0x4U /* user_data is a key (DQ_SETUP_F_KEYS) */
#define DQ_DESC_F_REPLACE	0x8U /* with F_KEY: replace the key's holder */
#define DQ_DESC_F_ALL		(DQ_DESC_F_RELATIVE | DQ_DESC_F_ATTEMPTS | \
				 DQ_DESC_F_KEY | DQ_DESC_F_REPLACE)

/* A message handle, as DQ_IOC_CANCEL takes it. */
#define DQ_HANDLE(slot, gen)	(((__u64)(gen) << 32) | (__u32)(slot))
#define DQ_HANDLE_SLOT(h)	((__u32)(h))
#define DQ_HANDLE_GEN(h)	((__u32)((h) >> 32))

/* Ready ring entry: a message that came due. */
struct dq_ready {
	__u64 user_data;
	__u64 due_ns;		/* as submitted, made absolute; the
				 * queue's clock, as release_ns
				 */
	__u64 release_ns;	/* when the engine released it */
	__u32 slot;
	__u32 len;
};

/* Ready ring entry of a DQ_SETUP_F_TRACK queue: 48 bytes. */
struct dq_ready_track {
	struct dq_ready r;
	__u32 gen;		/* the descriptor's: DQ_HANDLE(r.slot, gen) */
	__u16 attempts;		/* as submitted (DQ_DESC_F_ATTEMPTS), else 0 */
	__u16 redeliveries;	/* 0 on the first delivery, saturating */
	__u64 resv;		/* 0 */
};

/* Why a descriptor was rejected (dq_reject.reason, stats index). */
enum dq_reject_reason {
	DQ_REJ_SLOT,		/* slot >= slot_count: -ERANGE */
	DQ_REJ_LEN,		/* len > slot_size: -EMSGSIZE */
	DQ_REJ_FLAGS,		/* unknown flag: -EOPNOTSUPP */
	DQ_REJ_RESV,		/* non-zero reserved field: -EINVAL */
	DQ_REJ_TIME,		/* due beyond DQ_MAX_DELAY_NS: -EOVERFLOW */
	DQ_REJ_BUSY,		/* slot held by the kernel: -EBUSY */
	DQ_REJ_FULL,		/* the queue's max_pending reached: -ENOSPC */
	DQ_REJ_KEY,		/* DQ_DESC_F_KEY: the key is taken (-EEXIST);
				 * with F_REPLACE: not taken (-ENOENT), or its
				 * message already posted (-EBUSY)
				 */
	DQ_REJ_NR,
};

/* Room in struct dq_queue_stats for reasons added later. */
#define DQ_REJ_MAX		8

/*
 * Not a reject: dq_reject.reason of an entry describing a message that a
 * DQ_DESC_F_REPLACE descriptor (the one at index) took the place of.  Its
 * slot and user_data are the replaced message's, error is 0, and the slot
 * is the submitter's again.  Counted in dq_queue_stats.replaced.
 */
#define DQ_REPLACED		0x100U

/*
 * One rejected descriptor, as reported back by DQ_IOC_SUBMIT, or one
 * replaced message (reason DQ_REPLACED): each entry hands a slot back.
 */
struct dq_reject {
	__u32 index;		/* ring index of the descriptor */
	__u32 reason;		/* enum dq_reject_reason */
	__s32 error;		/* negative errno */
	__u32 slot;		/* as given, unvalidated */
	__u64 user_data;	/* as given */
};

/**
 * DQ_IOC_SUBMIT - consume up to max descriptors (0: all available).
 *
 * Returns the number accepted.  Rejected descriptors are consumed too; the
 * first reject_cap of them are described in the user array rejects (a bad
 * descriptor is never an error of the call: see enum dq_reject_reason).
 * The ioctl waits for a concurrent submit on the same queue to finish.
 *
 * Errors:
 *   -ENXIO   the file has no queue.
 *   -EFAULT  the struct cannot be read: nothing consumed.  Or the rejects
 *            array, or the struct on the way back, cannot be written: the
 *            descriptors were consumed all the same and the accepted ones
 *            are pending (see DQ_IOC_QUEUE_STATS).
 *   -EINVAL  flags or resv non-zero: nothing consumed.
 *   -EXDEV   the calling task's CLOCK_MONOTONIC is not the queue's (its
 *            time namespace has another monotonic offset; see the top of
 *            this file): nothing consumed.
 *   -ENODEV  the queue was deleted (QUEUE_DEL): nothing consumed.
 *   -EPROTO  the submit ring's producer index is more than ring_entries
 *            ahead of the kernel's consumer: nothing consumed; counted in
 *            ring_errors, DQ_RING_F_BROKEN set.
 */
struct dq_submit {
	__u32 max;
	__u32 flags;		/* must be 0 */
	__u64 rejects;		/* user pointer to struct dq_reject[reject_cap] */
	__u32 reject_cap;
	__u32 accepted;		/* out */
	__u32 rejected;		/* out: refused descriptors and replaced
				 * messages (DQ_REPLACED), each an entry
				 */
	__u32 resv;		/* must be 0 */
};

/**
 * DQ_IOC_WAIT - block until at least min_ready entries sit on the ready
 * ring, or timeout_ns (relative; 0: do not block; < 0: forever) passes.
 *
 * Returns the number ready (min_ready 0: at once).  Closing the file in
 * another thread does not end it.
 *
 * Errors:
 *   -ENXIO   the file has no queue.
 *   -EFAULT  the struct cannot be read.
 *   -EINVAL  flags non-zero, or min_ready above the ready ring's
 *            ring_entries (it could never be met).
 *   -ETIME   the timeout passed first (at once with timeout_ns 0).
 *   -EINTR   a signal arrived whose handler is not SA_RESTART (with
 *            SA_RESTART the call restarts with its whole timeout_ns).
 *   -EPROTO  the ready ring's consumer index is broken (ahead of the
 *            producer or more than ring_entries behind): returned at once.
 *   -ENODEV  the queue was deleted (QUEUE_DEL) and fewer than min_ready
 *            entries are ready: at once, or when the delete happens
 *            while it waits.
 */
struct dq_wait {
	__u32 min_ready;
	__u32 flags;		/* must be 0 */
	__s64 timeout_ns;
};

/**
 * DQ_IOC_CANCEL - take back a message dq still holds.
 *
 * Returns 0 when the message was still held and is now cancelled (its
 * slot is the caller's again; it will never be on the ready ring): held
 * means pending (not yet due) or due but not yet posted, i.e. waiting for
 * a pacing token or for room on the ready ring (the backlog).
 *
 * Errors:
 *   -ENXIO     the file has no queue.
 *   -EFAULT    the struct cannot be read.
 *   -EINVAL    resv non-zero.
 *   -ENOENT    the handle names no message: its slot is out of range, or
 *              the slot's last accepted descriptor had another gen (or
 *              there was none).
 *   -EALREADY  the message was already posted to the ready ring (reaped
 *              or not), or cancelled.
 */
struct dq_cancel {
	__u64 handle;		/* DQ_HANDLE(slot, gen) */
	__u64 resv;		/* must be 0 */
};

/**
 * DQ_IOC_QUEUE_STATS - the queue's counters.  Each counter is exact; the
 * set is not one snapshot.
 *
 * Errors:
 *   -ENXIO   the file has no queue.
 *   -EFAULT  the struct cannot be written.
 */
struct dq_queue_stats {
	__u32 queue_id;
	__s32 numa_node;	/* node whose engine serves the queue */
	__u32 slot_count;
	__u32 slot_size;
	__u64 pending;		/* held by the engine */
	__u64 ready_backlog;	/* due, waiting for room on the ready ring */
	__u64 submitted;	/* accepted descriptors */
	__u64 released;		/* posted on the ready ring */
	__u64 cancelled;
	__u64 rejected[DQ_REJ_MAX];
	__u64 ring_errors;	/* broken ring indices seen */
	__u64 late_max_ns;	/* worst release_ns - due_ns (pacing included) */
	__u64 late_sum_ns;	/* sum of release_ns - due_ns */
	__u64 paced;		/* due, waiting for pacing tokens */
	__u64 throttled;	/* releases that had to wait for a token */
	__u64 replaced;		/* messages DQ_DESC_F_REPLACE took back */
	__u64 resv[1];
};

/**
 * DQ_IOC_NODE_STATS - counters of one node's release engine.  Works on
 * any /dev/dq file, with or without a queue.
 *
 * Errors:
 *   -EFAULT  the struct cannot be read or written.
 *   -EINVAL  resv0 or resv[] non-zero; node negative (-1 too), or not a
 *            possible node of this machine (no engine).
 */
struct dq_node_stats {
	__s32 node;		/* in */
	__u32 resv0;
	__u64 pending;
	__u64 released;
	__u64 timer_fires;
	__u64 cascaded;		/* records moved down a wheel level */
	__u64 fires_on_node;	/* timer callbacks that ran on the node */
	__u64 resv[4];
};

/*
 * io_uring: IORING_OP_URING_CMD on a /dev/dq file that set up a queue.
 * sqe->cmd_op is one of DQ_URING_CMD_*; the 16-byte payload in sqe->cmd
 * (a plain 64-byte SQE is enough) is the struct named below.
 *
 *   SUBMIT  struct dq_uring_submit   res: accepted, or -errno
 *   WAIT    struct dq_wait           res: entries ready, or -errno
 *   CANCEL  struct dq_cancel         res: 0, or -errno
 *   DONE    struct dq_uring_submit   args -> struct dq_done_batch;
 *                                    res: entries done, or -errno
 *
 * Every command completes exactly once with the result documented here,
 * whether io_uring issues it inline, from io-wq (IOSQE_ASYNC, or a retry
 * after an internal -EAGAIN, e.g. when another submit holds the queue's
 * submit lock), from an SQPOLL thread, or inside an IOSQE_IO_LINK chain.
 * A result >= 0 counts as success for a link: the next request runs; an
 * error cuts the chain (the rest completes -ECANCELED).  -EAGAIN is never
 * a result.
 *
 * WAIT parks until min_ready entries are ready or timeout_ns passes.
 * Kernels before 6.7 cannot cancel a parked command when its ring exits,
 * so there a parked WAIT never outlives DQ_URING_MAX_PARK_NS: a longer or
 * infinite timeout completes with -ETIME at that bound and is simply
 * issued again.
 *
 * Errors of every command:
 *   -ENXIO       the file has no queue (for any cmd_op).
 *   -EOPNOTSUPP  cmd_op is none of DQ_URING_CMD_*; the DQ_IOC_* numbers
 *                are not uring commands.  (io_uring itself: also on an
 *                IORING_SETUP_IOPOLL ring, and -EINVAL for non-zero
 *                sqe->__pad1 or unknown sqe->uring_cmd_flags.)
 * DQ_URING_CMD_SUBMIT (payload struct dq_uring_submit, args -> dq_submit):
 *   -EINVAL  the payload's resv non-zero, or dq_submit's flags or resv:
 *            nothing consumed.
 *   -EFAULT  args cannot be read (nothing consumed), or the rejects
 *            array or args cannot be written (consumed, as DQ_IOC_SUBMIT).
 *   -EXDEV, -ENODEV, -EPROTO  as DQ_IOC_SUBMIT.  -EXDEV is about the task
 *            that issues the command: the submitter, an io-wq worker of
 *            its process, or the SQPOLL thread of the ring's creator.
 * DQ_URING_CMD_WAIT (payload struct dq_wait):
 *   -EINVAL     flags non-zero, or min_ready above the ready ring's size.
 *   -ENOMEM     no memory to park the command.
 *   -ETIME      timeout_ns passed (at once with 0), or, before 6.7, the
 *               DQ_URING_MAX_PARK_NS bound.
 *   -ECANCELED  while parked: the process that issued it closed a file
 *               descriptor of this /dev/dq file (close(2), or its exit),
 *               even when the command used a fixed (registered) file; or,
 *               6.7 and later, its ring is being torn down.
 *   -ENODEV     the queue was deleted (QUEUE_DEL) while it was parked,
 *               or before it was issued, with fewer than min_ready ready.
 *   -EPROTO     the ready ring's consumer index is broken.
 * DQ_URING_CMD_CANCEL (payload struct dq_cancel):
 *   -EINVAL, -ENOENT, -EALREADY  as DQ_IOC_CANCEL.
 * DQ_URING_CMD_DONE (payload struct dq_uring_submit, args -> dq_done_batch):
 *   -EINVAL (the payload's resv too), -EFAULT, -EOPNOTSUPP, -EPERM  as
 *   DQ_IOC_DONE.
 */
struct dq_uring_submit {
	__u64 args;		/* user pointer to struct dq_submit, in/out */
	__u64 resv;		/* must be 0 */
};

#define DQ_URING_MAX_PARK_NS	(5ULL * 1000 * 1000 * 1000)

#define DQ_IOC_MAGIC		0xDA
#define DQ_IOC_SETUP		_IOWR(DQ_IOC_MAGIC, 0x00, struct dq_setup)
#define DQ_IOC_SUBMIT		_IOWR(DQ_IOC_MAGIC, 0x01, struct dq_submit)
#define DQ_IOC_WAIT		_IOW(DQ_IOC_MAGIC, 0x02, struct dq_wait)
#define DQ_IOC_CANCEL		_IOW(DQ_IOC_MAGIC, 0x03, struct dq_cancel)
#define DQ_IOC_QUEUE_STATS	_IOR(DQ_IOC_MAGIC, 0x04, struct dq_queue_stats)
#define DQ_IOC_NODE_STATS	_IOWR(DQ_IOC_MAGIC, 0x05, struct dq_node_stats)

/**
 * DQ_IOC_ATTACH - bind this file to a named queue (see the netlink family
 * below), which outlives the processes using it.
 *
 * The name is looked up in the caller's network namespace (named queues
 * are per network namespace, see the netlink family).  Needs read and
 * write permission in the queue's mode for the caller's fsuid/fsgid, as
 * for a file: CAP_DAC_OVERRIDE in the caller's user namespace overrides,
 * when the queue's uid and gid are mapped in it.  On success
 * setup holds the same sizes and offsets DQ_IOC_SETUP returns; the file
 * then maps and uses the queue exactly as its own.
 *
 * Errors:
 *   -EFAULT  the struct cannot be read, or written back (then the file
 *            is not attached).
 *   -EINVAL  an unknown flag or resv non-zero; name empty or without a
 *            NUL in its DQ_NAME_MAX bytes.  Checked before -EBUSY.
 *            DQ_ATTACH_F_CONSUMER on a queue that does not track
 *            delivery.
 *   -EBUSY   the file already has a queue (set up or attached); with
 *            DQ_ATTACH_F_CONSUMER, another file is the queue's consumer.
 *   -ENOENT  no named queue has this name (any name no queue could
 *            have, too; a deleted queue's, from the moment QUEUE_DEL
 *            marks it deleted, before the QUEUE_DEL returns).
 *   -EACCES  the queue's mode does not give the caller read and write.
 *   -EXDEV   the caller's CLOCK_MONOTONIC is not the queue's: its time
 *            namespace has another monotonic offset than the namespace
 *            of the queue's creator (see the top of this file).  Create
 *            the queue from inside the namespace (nsenter --time).
 * A queue deleted after the attach answers DQ_IOC_SUBMIT with -ENODEV.
 */
#define DQ_NAME_MAX		32	/* including the terminating NUL */

struct dq_attach {
	char name[DQ_NAME_MAX];
	__u32 flags;		/* DQ_ATTACH_F_* */
	__u32 resv;		/* must be 0 */
	struct dq_setup setup;	/* out */
};

/* Become the consumer of a DQ_SETUP_F_TRACK queue (see there). */
#define DQ_ATTACH_F_CONSUMER	0x1U
#define DQ_ATTACH_F_ALL		DQ_ATTACH_F_CONSUMER

#define DQ_IOC_ATTACH		_IOWR(DQ_IOC_MAGIC, 0x06, struct dq_attach)

/**
 * DQ_IOC_SLOT_MAP - which slots are not free to reuse right now, for a
 * process that attached to a queue others used before: bit i of the
 * bitmap (slot_count bits, rounded up to u64 words) is set when the
 * kernel holds slot i or posted it on the ready ring and user space has
 * not consumed that entry yet.
 *
 * Errors:
 *   -ENXIO   the file has no queue.
 *   -EFAULT  the struct cannot be read, or the bitmap cannot be written.
 *   -EINVAL  resv non-zero, or slot_count is not the queue's.
 *   -ENOMEM  no memory for the kernel's copy of the bitmap.
 *   -EPROTO  the ready ring's consumer index is broken (the bitmap is not
 *            written).
 */
struct dq_slot_map {
	__u64 bitmap;		/* user pointer to __u64[(slot_count + 63) / 64] */
	__u32 slot_count;	/* must equal the queue's */
	__u32 resv;		/* must be 0 */
};

#define DQ_IOC_SLOT_MAP		_IOW(DQ_IOC_MAGIC, 0x07, struct dq_slot_map)

/**
 * DQ_IOC_DONE - the consumer of a DQ_SETUP_F_TRACK queue is finished with
 * messages in flight: each one's slot is user space's again and its
 * credit returns.
 *
 * dones points at nr entries, each naming one delivery (the handle and
 * redeliveries of its struct dq_ready_track) and its outcome.  Every entry
 * is checked on its own and gets its result; a refused one changes
 * nothing and is counted (dq_track_stats.done_refused).  Returns the number
 * accepted.
 *
 * Errors of an entry (dq_done.result):
 *   -EINVAL    outcome unknown.
 *   -ENOENT    the handle names no message: slot out of range, or the
 *              slot's last accepted descriptor had another gen.
 *   -EALREADY  the message is not in flight: still held (pending, paced,
 *              in the backlog), already done, or cancelled.
 *   -ESTALE    in flight, but not this delivery: it was released again
 *              since (its consumer's file was released).
 * Errors of the call (nothing done, unless said):
 *   -ENXIO       the file has no queue.
 *   -EFAULT      the struct cannot be read or written back; or an entry
 *                cannot be read or its result written: the entries before
 *                it were done, and the call returns -EFAULT.
 *   -EINVAL      flags or resv non-zero.
 *   -EOPNOTSUPP  the queue does not track delivery.
 *   -EPERM       the file is not the queue's consumer.
 */
enum dq_done_outcome {
	DQ_DONE_DELIVERED,	/* the consumer handled it */
	DQ_DONE_FAILED,		/* it could not; counted apart */
	DQ_DONE_NR,
};

struct dq_done {
	__u64 handle;		/* DQ_HANDLE(slot, gen) */
	__u16 redeliveries;	/* the ready entry's */
	__u16 outcome;		/* enum dq_done_outcome */
	__s32 result;		/* out: 0 or -errno */
};

struct dq_done_batch {
	__u64 dones;		/* user pointer to struct dq_done[nr] */
	__u32 nr;
	__u32 flags;		/* must be 0 */
	__u32 done;		/* out: entries accepted */
	__u32 resv;		/* must be 0 */
};

#define DQ_IOC_DONE		_IOWR(DQ_IOC_MAGIC, 0x08, struct dq_done_batch)

/**
 * DQ_IOC_TRACK_STATS - delivery counters of a DQ_SETUP_F_TRACK queue
 * (all zero for another queue).  Each counter is exact; the set is not
 * one snapshot.
 *
 * Errors:
 *   -ENXIO   the file has no queue.
 *   -EFAULT  the struct cannot be written.
 */
struct dq_track_stats {
	__u64 inflight;		/* released, not yet done */
	__u64 oldest_ns;	/* release_ns of the oldest in flight, in
				 * the caller's clock (>= 1); 0: none
				 */
	__u64 done_delivered;
	__u64 done_failed;
	__u64 done_refused;	/* DONE entries refused (any errno) */
	__u64 redelivered;	/* in flight, put back when the consumer went */
	__u64 credit_waits;	/* releases that had to wait for a credit or
				 * for a consumer
				 */
	__u32 max_inflight;	/* 0: no cap */
	__u32 consumer;		/* 1: a consumer file holds the queue */
	__u64 expired;		/* in flight past visibility_ns, put back */
	__u64 visibility_ns;	/* the queue's; 0: none */
	__u64 resv[2];
};

#define DQ_IOC_TRACK_STATS	_IOR(DQ_IOC_MAGIC, 0x09, struct dq_track_stats)

/**
 * DQ_IOC_KEY - look up or cancel the message holding a key, on a
 * DQ_SETUP_F_KEYS queue.  O(1); waits for a concurrent submit on the
 * queue, so it sees every descriptor a finished submit accepted.
 *
 * DQ_KEY_LOOKUP: fills handle, state and due_ns of the key's message.
 * DQ_KEY_CANCEL: as DQ_IOC_CANCEL of that message; on success handle,
 * state and due_ns say what was cancelled and its slot is the caller's.
 *
 * Errors:
 *   -ENXIO       the file has no queue.
 *   -EFAULT      the struct cannot be read or written back.
 *   -EINVAL      an unknown op, flags or resv non-zero.
 *   -EOPNOTSUPP  the queue was set up without DQ_SETUP_F_KEYS.
 *   -ENOENT      no held or in-flight message has the key.
 *   -EALREADY    DQ_KEY_CANCEL: the key's message was already posted on
 *                the ready ring (tracked: it is in flight; DONE frees the
 *                key).  Nothing changed.
 */
enum dq_key_op_code {
	DQ_KEY_LOOKUP,
	DQ_KEY_CANCEL,
};

/* Where a key's message is (dq_key_op.state). */
enum dq_key_state {
	DQ_KEY_PENDING = 1,	/* not yet due */
	DQ_KEY_DUE,		/* due, waiting for a token, a credit, a
				 * consumer or room on the ready ring
				 */
	DQ_KEY_INFLIGHT,	/* tracked: posted, not yet done */
};

struct dq_key_op {
	__u64 key;		/* in */
	__u32 op;		/* in: enum dq_key_op_code */
	__u32 flags;		/* in: must be 0 */
	__u64 handle;		/* out: DQ_HANDLE(slot, gen) */
	__u64 due_ns;		/* out: absolute CLOCK_MONOTONIC, the
				 * caller's clock
				 */
	__u32 state;		/* out: enum dq_key_state */
	__u32 resv;		/* in: must be 0 */
};

#define DQ_IOC_KEY		_IOWR(DQ_IOC_MAGIC, 0x0a, struct dq_key_op)

/*
 * Generic netlink family DQ_GENL_NAME: the queue registry.
 *
 * Per network namespace: the family answers in every network namespace,
 * and a request sees only the queues created in its namespace (QUEUE_NEW
 * there, or DQ_IOC_SETUP by a task in it): names are unique per
 * namespace, an id of another namespace's queue is -ENOENT, dumps list
 * the namespace's queues, events go to its listeners.  When a network
 * namespace goes away, its named queues are deleted with their messages,
 * as by QUEUE_DEL with FORCE (files still attached see -ENODEV).  Node
 * stats (STATS with NODE) are the host's engines.
 *
 * QUEUE_NEW, QUEUE_DEL and QUEUE_SET need CAP_NET_ADMIN in the user
 * namespace that owns the request's network namespace; QUEUE_GET and
 * STATS need nothing.  Attributes are validated strictly; errors carry an
 * extack message naming the attribute.
 *
 *   QUEUE_NEW  NAME (1..31 of A-Z a-z 0-9 . _ : -), SLOTS, SLOT_SIZE required; SUBMIT_ENTRIES,
 *              READY_ENTRIES, NODE, GRANULARITY_NS, MAX_PENDING, RATE,
 *              BURST, HIGH_WM, UID, GID, MODE, FLAGS (DQ_SETUP_F_*),
 *              MAX_INFLIGHT and VISIBILITY_NS (with DQ_SETUP_F_TRACK)
 *              optional.  Replies
 *              with the queue as QUEUE_GET does.
 *   QUEUE_DEL  NAME or ID; refused with -EBUSY while the queue holds
 *              messages or has released some nobody consumed yet, unless
 *              FORCE, which drops them.
 *   QUEUE_GET  NAME or ID (doit), or every named queue (dump).
 *   QUEUE_SET  NAME or ID; RATE, BURST, MAX_PENDING, HIGH_WM, MAX_INFLIGHT
 *              (DQ_MAX_SLOTS: no cap).  Takes effect at once; no message
 *              is lost or reordered.
 *   STATS      NAME or ID (doit) or every queue (dump): the STATS_* and
 *              REJECTED nest; with NODE instead, that node's engine
 *              (PENDING, RELEASED, TIMER_FIRES) and its RLIMIT_MEMLOCK
 *              counters (MEMLOCK_PAGES, MEMLOCK_REFUSED; see
 *              DQ_IOC_SETUP).
 * Multicast group DQ_GENL_MCGRP_EVENTS carries EVENT messages: a queue
 * crossed its HIGH_WM or hit MAX_PENDING (EVENT_KIND_*), or was deleted.
 *
 * Errors (the netlink error of the request, negative):
 *   Every command:
 *   -EPERM       QUEUE_NEW, QUEUE_DEL, QUEUE_SET without CAP_NET_ADMIN
 *                over the network namespace; checked before the
 *                attributes.
 *   -EOPNOTSUPP  an unknown command, DQ_CMD_UNSPEC or DQ_CMD_EVENT; a dump
 *                (NLM_F_DUMP) of QUEUE_NEW, QUEUE_DEL or QUEUE_SET.
 *   -EINVAL      strict validation: an unknown attribute type, an
 *                attribute the command does not take (each command has
 *                its own policy: docs/netlink/dq.yaml), an attribute of
 *                the wrong length, NAME without a NUL or
 *                longer than DQ_NAME_MAX - 1, bytes left over after the
 *                attributes, a non-zero genlmsghdr.reserved, nlmsg_flags
 *                other than REQUEST, ACK, ECHO and DUMP.
 *   -ERANGE      an integer outside its range (SLOTS 1..DQ_MAX_SLOTS,
 *                SLOT_SIZE, *_ENTRIES, GRANULARITY_NS, RATE
 *                0..1000000000, BURST 1..DQ_MAX_SLOTS, NODE
 *                -1..MAX_NUMNODES-1, MODE 0..0777, ID >= 1,
 *                MAX_INFLIGHT 1..DQ_MAX_SLOTS: a cap of 0 would stop every
 *                release); FORCE with a payload.
 *   QUEUE_NEW:
 *   -EINVAL      NAME, SLOTS or SLOT_SIZE missing; a NAME that is not
 *                1..31 of A-Z a-z 0-9 . _ : -; UID or GID not mapped in
 *                the caller's user namespace; NODE not online; any other
 *                DQ_IOC_SETUP -EINVAL.
 *   -ERANGE      MAX_PENDING above SLOTS.
 *   -EINVAL      FLAGS with an unknown bit; MAX_INFLIGHT or VISIBILITY_NS
 *                without DQ_SETUP_F_TRACK in FLAGS.
 *   -ERANGE      VISIBILITY_NS outside DQ_MIN_VISIBILITY_NS ..
 *                DQ_MAX_DELAY_NS.
 *   -E2BIG       the arena is over max_arena_bytes (as DQ_IOC_SETUP).
 *   -ENOMEM      the queue's charge would take the caller's user over
 *                the caller's RLIMIT_MEMLOCK (as DQ_IOC_SETUP; extack
 *                "... RLIMIT_MEMLOCK"); no memory for the queue (or for
 *                the reply: the queue was created all the same).
 *   -EEXIST      a queue with this NAME exists.
 *   QUEUE_DEL:
 *   -EINVAL      neither NAME nor ID; ID names a file's private queue
 *                (it goes away with its file).
 *   -ENOENT      no such queue.
 *   -EBUSY       without FORCE: the queue holds messages (pending, paced,
 *                in the ready backlog) or has released some that nobody
 *                consumed from the ready ring yet.
 *   QUEUE_GET:
 *   -EINVAL      neither NAME nor ID (doit).  NAME finds named queues
 *                only; ID finds private queues too.  The dump lists the
 *                named queues and fails with nothing.
 *   -ENOENT      no such queue.
 *   QUEUE_SET:
 *   -EINVAL      neither NAME nor ID.
 *   -ENOENT      no such queue.  (ID may name a private queue: it is
 *                changed like a named one.)
 *   -ERANGE      MAX_PENDING above the queue's slot count: nothing
 *                changed.
 *   -EINVAL      MAX_INFLIGHT on a queue that does not track delivery:
 *                nothing changed.
 *   STATS:
 *   -EINVAL      none of NAME, ID and NODE (doit).
 *   -ENOENT      no such queue; with NODE alone, no engine on that node
 *                (-1 included).  The dump lists every queue, private ones
 *                too, and fails with nothing.
 */
#define DQ_GENL_NAME		"dq"
#define DQ_GENL_VERSION		1
#define DQ_GENL_MCGRP_EVENTS	"events"

enum dq_genl_cmd {
	DQ_CMD_UNSPEC,
	DQ_CMD_QUEUE_NEW,
	DQ_CMD_QUEUE_DEL,
	DQ_CMD_QUEUE_GET,
	DQ_CMD_QUEUE_SET,
	DQ_CMD_STATS,
	DQ_CMD_EVENT,		/* multicast only */
	__DQ_CMD_MAX,
};

#define DQ_CMD_MAX (__DQ_CMD_MAX - 1)

enum dq_genl_attr {
	DQ_A_UNSPEC,
	DQ_A_ID,		/* u32 */
	DQ_A_NAME,		/* string, < DQ_NAME_MAX */
	DQ_A_SLOTS,		/* u32 */
	DQ_A_SLOT_SIZE,		/* u32 */
	DQ_A_SUBMIT_ENTRIES,	/* u32 */
	DQ_A_READY_ENTRIES,	/* u32 */
	DQ_A_NODE,		/* s32 */
	DQ_A_GRANULARITY_NS,	/* u32 */
	DQ_A_MAX_PENDING,	/* u32, 0: slot count */
	DQ_A_RATE,		/* u64 messages per second, 0: unpaced */
	DQ_A_BURST,		/* u32 messages */
	DQ_A_HIGH_WM,		/* u32 pending; 0: none */
	DQ_A_UID,		/* u32 */
	DQ_A_GID,		/* u32 */
	DQ_A_MODE,		/* u32, permission bits 0..0777 */
	DQ_A_FORCE,		/* flag */
	DQ_A_PAD,
	DQ_A_STATS,		/* nest of DQ_STATS_* */
	DQ_A_EVENT_KIND,	/* u32 enum dq_event_kind */
	DQ_A_USERS,		/* u32 files attached */
	DQ_A_FLAGS,		/* u32 DQ_SETUP_F_* (QUEUE_NEW, replies) */
	DQ_A_MAX_INFLIGHT,	/* u32 1..DQ_MAX_SLOTS; replies: 0 no cap */
	DQ_A_VISIBILITY_NS,	/* u64, QUEUE_NEW with TRACK; replies: 0 none */
	__DQ_A_MAX,
};

#define DQ_A_MAX (__DQ_A_MAX - 1)

/* Inside DQ_A_STATS; u64 unless noted. */
enum dq_stats_attr {
	DQ_STATS_UNSPEC,
	DQ_STATS_PENDING,
	DQ_STATS_PACED,
	DQ_STATS_READY_BACKLOG,
	DQ_STATS_SUBMITTED,
	DQ_STATS_RELEASED,
	DQ_STATS_CANCELLED,
	DQ_STATS_REJECTED,	/* nest: attribute type = reason + 1, u64 */
	DQ_STATS_RING_ERRORS,
	DQ_STATS_LATE_EWMA_NS,
	DQ_STATS_LATE_MAX_NS,
	DQ_STATS_TIMER_FIRES,	/* the serving node engine's */
	DQ_STATS_THROTTLED,
	DQ_STATS_PAD,
	/* DQ_SETUP_F_TRACK queues only, as struct dq_track_stats */
	DQ_STATS_INFLIGHT,
	DQ_STATS_OLDEST_NS,	/* the requesting task's clock, >= 1 */
	DQ_STATS_DONE_DELIVERED,
	DQ_STATS_DONE_FAILED,
	DQ_STATS_DONE_REFUSED,
	DQ_STATS_REDELIVERED,
	DQ_STATS_CREDIT_WAITS,
	DQ_STATS_CONSUMER,	/* u32 */
	DQ_STATS_REPLACED,	/* every queue, as dq_queue_stats.replaced */
	DQ_STATS_EXPIRED,	/* tracked queues, as dq_track_stats.expired */
	/* STATS with NODE only; see DQ_IOC_SETUP, "Memory accounting". */
	DQ_STATS_MEMLOCK_PAGES,	/* pages charged to RLIMIT_MEMLOCK now */
	DQ_STATS_MEMLOCK_REFUSED, /* creates refused for RLIMIT_MEMLOCK */
	__DQ_STATS_MAX,
};

#define DQ_STATS_MAX (__DQ_STATS_MAX - 1)

enum dq_event_kind {
	DQ_EVENT_HIGH_WM = 1,	/* pending rose to HIGH_WM */
	DQ_EVENT_FULL,		/* a submit hit MAX_PENDING */
	DQ_EVENT_DELETED,
};

#define DQ_URING_CMD_SUBMIT	_IOWR(DQ_IOC_MAGIC, 0x20, struct dq_uring_submit)
#define DQ_URING_CMD_WAIT	_IOW(DQ_IOC_MAGIC, 0x21, struct dq_wait)
#define DQ_URING_CMD_CANCEL	_IOW(DQ_IOC_MAGIC, 0x22, struct dq_cancel)
#define DQ_URING_CMD_DONE	_IOWR(DQ_IOC_MAGIC, 0x23, struct dq_uring_submit)

#endif /* _UAPI_LINUX_DQ_H */
