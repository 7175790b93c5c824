// SPDX-License-Identifier: LGPL-2.1 OR MIT
/*
 * dqtest.h - helpers for the dq selftests: open and set up a queue, map its
 * three regions, push descriptors, submit, reap, wait, stats.
 *
 * Helpers return 0 (or a count) on success and -errno on failure; they
 * never abort, the tests decide what a failure means.
 */
#ifndef DQ_SELFTEST_DQTEST_H
#define DQ_SELFTEST_DQTEST_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <linux/dq.h>

#define DQT_DEV_PATH	"/dev/" DQ_DEVICE_NAME
#define NSEC_PER_USEC	1000ULL
#define NSEC_PER_MSEC	1000000ULL
#define NSEC_PER_SEC	1000000000ULL

struct dqt_ring {
	void *map;
	size_t map_size;
	uint32_t *producer;
	uint32_t *consumer;
	uint32_t *flags;
	void *entries;
	uint32_t nr;		/* ring_entries */
	uint32_t mask;
};

struct dqt_params {
	uint32_t slot_count;
	uint32_t slot_size;
	uint32_t submit_entries;
	uint32_t ready_entries;
	uint32_t granularity_ns;
	int32_t numa_node;
	uint32_t flags;		/* DQ_SETUP_F_* */
	uint32_t max_inflight;
	uint64_t visibility_ns;
};

/* Parameters with numa_node = -1 and what is given set (set numa_node after). */
#define DQT_PARAMS(...) ((struct dqt_params){ .numa_node = -1, __VA_ARGS__ })

struct dqt_queue {
	int fd;
	struct dq_setup setup;	/* as returned by DQ_IOC_SETUP */
	struct dqt_ring sq;	/* submit ring, of struct dq_desc */
	struct dqt_ring rq;	/* ready ring, of struct dq_ready or, tracked,
				 * struct dq_ready_track (rq_esize bytes)
				 */
	uint32_t rq_esize;
	uint8_t *arena;
	size_t arena_size;
	uint32_t slot_count;
	uint32_t slot_size;	/* setup.slot_size: the kernel's rounded size */
	/* user-space slot ownership: the slots free to reserve */
	uint32_t *free_slots;
	uint32_t nr_free;
};

static inline uint64_t dqt_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * NSEC_PER_SEC + (uint64_t)ts.tv_nsec;
}

void dqt_sleep_ns(uint64_t ns);
void dqt_sleep_until(uint64_t abs_ns);

/* open(/dev/dq): fd or -errno. */
int dqt_open_dev(void);
/*
 * open + DQ_IOC_SETUP + dqt_queue_map(), and the free-slot list of
 * dqt_slot_reserve().  0 or -errno (the queue is then finalised).
 */
int dqt_queue_init(struct dqt_queue *q, const struct dqt_params *p);
/*
 * The ring client, for a queue set up elsewhere or shared by name:
 * open + DQ_IOC_ATTACH of @name + dqt_queue_map().  A name that does not
 * fit DQ_NAME_MAX with its NUL is -EINVAL (never truncated).  0 or -errno;
 * on failure the queue is finalised.  No free-slot list: the slots of a
 * shared queue are the caller's to divide.
 */
int dqt_queue_attach(struct dqt_queue *q, const char *name);
/* dqt_queue_attach() with DQ_ATTACH_F_* @flags. */
int dqt_queue_attach_flags(struct dqt_queue *q, const char *name,
			   uint32_t flags);
/*
 * Map the two rings and the arena of the queue on q->fd, with the sizes
 * and offsets the kernel wrote into q->setup (DQ_IOC_SETUP or _ATTACH),
 * and take slot_count and slot_size from there too.  -EPROTO when that
 * layout is unusable, -errno from mmap().  Regions already mapped stay
 * mapped on failure: dqt_queue_unmap() them.
 */
int dqt_queue_map(struct dqt_queue *q);
/* munmap of whatever is mapped; the fd stays open.  Idempotent. */
void dqt_queue_unmap(struct dqt_queue *q);
/* munmap + close (in that order); safe on a zeroed or failed queue. */
void dqt_queue_fini(struct dqt_queue *q);
/* Map one region given its offsets; NULL on failure (errno set). */
void *dqt_map(int fd, uint64_t off, size_t len, int prot);

static inline struct dq_desc *dqt_sq_entry(struct dqt_queue *q, uint32_t idx)
{
	return (struct dq_desc *)q->sq.entries + (idx & q->sq.mask);
}

static inline struct dq_ready *dqt_rq_entry(struct dqt_queue *q, uint32_t idx)
{
	return (struct dq_ready *)((char *)q->rq.entries +
				   (size_t)(idx & q->rq.mask) * q->rq_esize);
}

/* A tracked queue's entry (the caller knows the queue is tracked). */
static inline struct dq_ready_track *dqt_rq_track(struct dqt_queue *q,
						  uint32_t idx)
{
	return (struct dq_ready_track *)dqt_rq_entry(q, idx);
}

static inline uint32_t dqt_load_acq(const uint32_t *p)
{
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

static inline void dqt_store_rel(uint32_t *p, uint32_t v)
{
	__atomic_store_n(p, v, __ATOMIC_RELEASE);
}

static inline uint8_t *dqt_slot_ptr(struct dqt_queue *q, uint32_t slot)
{
	return q->arena + (size_t)slot * q->slot_size;
}

/*
 * Producing, in two steps: write descriptors at dqt_sq_next(q, 0),
 * dqt_sq_next(q, 1), ... (after the producer index, not yet visible to the
 * kernel), then dqt_sq_publish(q, n) makes the first n of them visible
 * with one store-release of the producer index.  Neither checks for room
 * (dqt_sq_space()): an abuse test may overrun the ring on purpose.
 */
static inline struct dq_desc *dqt_sq_next(struct dqt_queue *q, uint32_t i)
{
	return dqt_sq_entry(q, *q->sq.producer + i);	/* the index is ours */
}

static inline void dqt_sq_publish(struct dqt_queue *q, uint32_t n)
{
	dqt_store_rel(q->sq.producer, *q->sq.producer + n);
}

/*
 * Put one descriptor on the submit ring and publish it.  -EAGAIN when the
 * ring is full (the kernel has not consumed enough yet).
 */
int dqt_push(struct dqt_queue *q, const struct dq_desc *d);
int dqt_push_msg(struct dqt_queue *q, uint32_t slot, uint32_t gen,
		 uint64_t due_ns, uint16_t flags, uint32_t len,
		 uint64_t user_data);
/* dqt_push(), but when the ring is full DQ_IOC_SUBMIT first (-errno if that fails). */
int dqt_push_flush(struct dqt_queue *q, const struct dq_desc *d);
/* Free entries on the submit ring as user space sees it. */
uint32_t dqt_sq_space(struct dqt_queue *q);

/*
 * DQ_IOC_SUBMIT.  Returns the ioctl's return value (accepted) or -errno;
 * *out (if given) receives the struct as the kernel left it.
 */
int dqt_submit(struct dqt_queue *q, uint32_t max, struct dq_reject *rej,
	       uint32_t cap, struct dq_submit *out);

/* Entries on the ready ring now (producer - consumer). */
uint32_t dqt_ready_count(struct dqt_queue *q);
/*
 * Consuming in place: the number of entries the kernel has posted and user
 * space not yet released, read with a load-acquire of the producer index
 * (so the entries it covers are visible), or -EPROTO when the producer is
 * more than ring_entries ahead.  *head (optional) gets the consumer index:
 * the entries are dqt_rq_entry(q, *head + i) for i below the count.
 */
int dqt_ready_peek(struct dqt_queue *q, uint32_t *head);
/*
 * Hand n entries back to the kernel (a store-release of the consumer
 * index, after every read of them), n at most what dqt_ready_peek() said.
 */
void dqt_ready_advance(struct dqt_queue *q, uint32_t n);
/*
 * Release every entry posted so far, unread and unchecked: the consumer
 * index jumps to the producer's.  Returns how many that was.
 */
uint32_t dqt_ready_discard(struct dqt_queue *q);
/*
 * Copy up to max ready entries out, then release them.  Returns the count,
 * or -EPROTO when the kernel's producer is more than ring_entries ahead.
 */
int dqt_reap(struct dqt_queue *q, struct dq_ready *out, uint32_t max);

/* DQ_IOC_WAIT: number ready or -errno (-ETIME on timeout). */
int dqt_wait(struct dqt_queue *q, uint32_t min_ready, int64_t timeout_ns);

enum dqt_wait_mode {
	DQT_WAIT_IOCTL,		/* DQ_IOC_WAIT */
	DQT_WAIT_POLL,		/* poll(POLLIN) */
	DQT_WAIT_SLEEP,		/* just sleep 1 ms and look again */
	DQT_WAIT_MIXED,		/* alternate ioctl and poll */
	DQT_WAIT_NEVER,		/* never block: an empty ring with
				 * DQ_RING_F_BACKLOG set gets a DQ_IOC_WAIT
				 * with timeout 0 (which refills it), else
				 * sleep 1 ms and look again
				 */
};

/*
 * Reap until want entries were collected or deadline_ns (absolute) passed,
 * waiting in the given mode while the ring is empty.  reap_ns[i] (optional)
 * gets the consumer's clock right after entry i was read.  Returns the count
 * collected, or -errno on an unexpected wait/reap error (entries reaped
 * before the error stay in out; *got says how many).
 */
int dqt_reap_until(struct dqt_queue *q, struct dq_ready *out,
		   uint64_t *reap_ns, uint32_t want, uint64_t deadline_ns,
		   enum dqt_wait_mode mode, uint32_t *got);

int dqt_cancel(struct dqt_queue *q, uint32_t slot, uint32_t gen);
/* Tracked queues: copy up to max entries out whole, then release them. */
int dqt_reap_track(struct dqt_queue *q, struct dq_ready_track *out,
		   uint32_t max);
/*
 * DQ_IOC_DONE of @nr entries (results written into them): the ioctl's
 * return value (entries done) or -errno.
 */
int dqt_done(struct dqt_queue *q, struct dq_done *dones, uint32_t nr);
/* DQ_IOC_DONE of one delivery, named by its ready entry: its result. */
int dqt_done_one(struct dqt_queue *q, const struct dq_ready_track *t,
		 uint16_t outcome);
int dqt_track_stats(struct dqt_queue *q, struct dq_track_stats *st);
int dqt_queue_stats(struct dqt_queue *q, struct dq_queue_stats *st);
int dqt_node_stats(int fd, int node, struct dq_node_stats *st);

/*
 * A file descriptor that DQ_IOC_NODE_STATS works on: /dev/dq, set up with a
 * tiny queue if the module wants a queue for it.  Cached; -errno on failure.
 */
int dqt_stats_fd(void);

/* User-space slot ownership ("reserve"): lowest free slot, or -ENOSPC. */
int dqt_slot_reserve(struct dqt_queue *q);
void dqt_slot_put(struct dqt_queue *q, uint32_t slot);

/* Payload pattern derived from a seed; check returns 0 or 1 + first bad offset. */
void dqt_fill_payload(void *buf, uint32_t len, uint64_t seed);
uint32_t dqt_check_payload(const void *buf, uint32_t len, uint64_t seed);

/* A small reproducible PRNG (xorshift64*). */
uint64_t dqt_rand(uint64_t *state);
uint64_t dqt_seed(void);

/* NUMA helpers: number of online nodes by /sys, first CPU of a node. */
int dqt_node_online(int node);
int dqt_node_first_cpu(int node);
/* Run the calling thread on @cpu only: 0 or -errno. */
int dqt_pin_to_cpu(int cpu);
/* MemAvailable from /proc/meminfo in kB, -1 on error. */
long dqt_mem_available_kb(void);
/*
 * Free memory in kB counted exactly: the buddy allocator's free pages plus
 * the pages parked on per-CPU lists (/proc/zoneinfo).  MemFree and
 * MemAvailable leave the latter out, which can hide tens of MB.  -1 on error.
 */
long dqt_free_kb(void);

/* Percentile of a sorted array, p in [0, 100]. */
uint64_t dqt_percentile(const uint64_t *sorted, size_t n, double p);
void dqt_sort_u64(uint64_t *v, size_t n);

const char *dqt_rej_name(uint32_t reason);

#endif /* DQ_SELFTEST_DQTEST_H */
