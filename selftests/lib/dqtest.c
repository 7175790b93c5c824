// SPDX-License-Identifier: LGPL-2.1 OR MIT
/*
 * dqtest.c - queue helpers for the dq selftests.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "dqtest.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

void dqt_sleep_ns(uint64_t ns)
{
	struct timespec ts = {
		.tv_sec = (time_t)(ns / NSEC_PER_SEC),
		.tv_nsec = (long)(ns % NSEC_PER_SEC),
	};

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

void dqt_sleep_until(uint64_t abs_ns)
{
	struct timespec ts = {
		.tv_sec = (time_t)(abs_ns / NSEC_PER_SEC),
		.tv_nsec = (long)(abs_ns % NSEC_PER_SEC),
	};

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

int dqt_open_dev(void)
{
	int fd = open(DQT_DEV_PATH, O_RDWR | O_CLOEXEC);

	return fd < 0 ? -errno : fd;
}

void *dqt_map(int fd, uint64_t off, size_t len, int prot)
{
	void *p = mmap(NULL, len, prot, MAP_SHARED, fd, (off_t)off);

	return p == MAP_FAILED ? NULL : p;
}

/* Check that the kernel's ring layout is usable before touching it. */
static int dqt_ring_layout_ok(const struct dq_ring_offsets *o, size_t esz)
{
	uint64_t n = o->ring_entries;

	if (!n || (n & (n - 1)) || o->entry_size != esz || !o->map_size)
		return 0;
	if ((uint64_t)o->producer + 4 > o->map_size ||
	    (uint64_t)o->consumer + 4 > o->map_size ||
	    (uint64_t)o->flags + 4 > o->map_size ||
	    (uint64_t)o->entries + n * esz > o->map_size)
		return 0;
	if ((o->producer | o->consumer | o->flags) & 3 || o->entries & 7)
		return 0;
	return 1;
}

static int dqt_ring_map(int fd, struct dqt_ring *r,
			const struct dq_ring_offsets *o, uint64_t off,
			size_t esz)
{
	if (!dqt_ring_layout_ok(o, esz))
		return -EPROTO;
	r->map_size = (size_t)o->map_size;
	r->map = dqt_map(fd, off, r->map_size, PROT_READ | PROT_WRITE);
	if (!r->map)
		return -errno;
	r->producer = (uint32_t *)((char *)r->map + o->producer);
	r->consumer = (uint32_t *)((char *)r->map + o->consumer);
	r->flags = (uint32_t *)((char *)r->map + o->flags);
	r->entries = (char *)r->map + o->entries;
	r->nr = o->ring_entries;
	r->mask = o->ring_entries - 1;
	return 0;
}

int dqt_queue_map(struct dqt_queue *q)
{
	int ret;

	ret = dqt_ring_map(q->fd, &q->sq, &q->setup.submit, DQ_OFF_SUBMIT_RING,
			   sizeof(struct dq_desc));
	q->rq_esize = q->setup.flags & DQ_SETUP_F_TRACK ?
		      sizeof(struct dq_ready_track) : sizeof(struct dq_ready);
	if (!ret)
		ret = dqt_ring_map(q->fd, &q->rq, &q->setup.ready,
				   DQ_OFF_READY_RING, q->rq_esize);
	if (ret)
		return ret;
	/* The kernel's answer, not the request: slot_size comes rounded. */
	q->slot_count = q->setup.slot_count;
	q->slot_size = q->setup.slot_size;
	if (!q->slot_size ||
	    (uint64_t)q->slot_count * q->slot_size > q->setup.arena_size)
		return -EPROTO;
	q->arena_size = (size_t)q->setup.arena_size;
	q->arena = dqt_map(q->fd, DQ_OFF_ARENA, q->arena_size,
			   PROT_READ | PROT_WRITE);
	return q->arena ? 0 : -errno;
}

void dqt_queue_unmap(struct dqt_queue *q)
{
	if (q->arena)
		munmap(q->arena, q->arena_size);
	if (q->rq.map)
		munmap(q->rq.map, q->rq.map_size);
	if (q->sq.map)
		munmap(q->sq.map, q->sq.map_size);
	q->arena = NULL;
	memset(&q->sq, 0, sizeof(q->sq));
	memset(&q->rq, 0, sizeof(q->rq));
}

int dqt_queue_init(struct dqt_queue *q, const struct dqt_params *p)
{
	int fd, ret;

	memset(q, 0, sizeof(*q));
	q->fd = -1;
	fd = dqt_open_dev();
	if (fd < 0)
		return fd;
	q->fd = fd;

	q->setup.slot_count = p->slot_count;
	q->setup.slot_size = p->slot_size;
	q->setup.submit_entries = p->submit_entries;
	q->setup.ready_entries = p->ready_entries;
	q->setup.granularity_ns = p->granularity_ns;
	q->setup.numa_node = p->numa_node;
	q->setup.flags = p->flags;
	q->setup.max_inflight = p->max_inflight;
	q->setup.visibility_ns = p->visibility_ns;
	if (ioctl(fd, DQ_IOC_SETUP, &q->setup) < 0) {
		ret = -errno;
		goto fail;
	}
	ret = dqt_queue_map(q);
	if (ret)
		goto fail;

	q->free_slots = malloc(sizeof(uint32_t) * (size_t)q->slot_count);
	if (!q->free_slots) {
		ret = -ENOMEM;
		goto fail;
	}
	/* a stack: the lowest slot on top */
	for (uint32_t i = 0; i < q->slot_count; i++)
		q->free_slots[i] = q->slot_count - 1 - i;
	q->nr_free = q->slot_count;
	return 0;
fail:
	dqt_queue_fini(q);
	return ret;
}

int dqt_queue_attach(struct dqt_queue *q, const char *name)
{
	return dqt_queue_attach_flags(q, name, 0);
}

int dqt_queue_attach_flags(struct dqt_queue *q, const char *name,
			   uint32_t flags)
{
	struct dq_attach at = { .flags = flags };
	size_t len = strlen(name);
	int fd, ret;

	memset(q, 0, sizeof(*q));
	q->fd = -1;
	if (len >= sizeof(at.name))
		return -EINVAL;	/* the kernel would see another name */
	memcpy(at.name, name, len);
	fd = dqt_open_dev();
	if (fd < 0)
		return fd;
	q->fd = fd;
	if (ioctl(fd, DQ_IOC_ATTACH, &at) < 0) {
		ret = -errno;
		goto fail;
	}
	q->setup = at.setup;
	ret = dqt_queue_map(q);
	if (ret)
		goto fail;
	return 0;
fail:
	dqt_queue_fini(q);
	return ret;
}

void dqt_queue_fini(struct dqt_queue *q)
{
	dqt_queue_unmap(q);
	if (q->fd >= 0)
		close(q->fd);
	free(q->free_slots);
	memset(q, 0, sizeof(*q));
	q->fd = -1;
}

uint32_t dqt_sq_space(struct dqt_queue *q)
{
	uint32_t prod = *q->sq.producer;	/* ours */
	uint32_t cons = dqt_load_acq(q->sq.consumer);
	uint32_t used = prod - cons;

	return used >= q->sq.nr ? 0 : q->sq.nr - used;
}

int dqt_push(struct dqt_queue *q, const struct dq_desc *d)
{
	if (!dqt_sq_space(q))
		return -EAGAIN;
	*dqt_sq_next(q, 0) = *d;
	dqt_sq_publish(q, 1);
	return 0;
}

int dqt_push_flush(struct dqt_queue *q, const struct dq_desc *d)
{
	int r = dqt_push(q, d);

	if (r == -EAGAIN) {
		r = dqt_submit(q, 0, NULL, 0, NULL);
		if (r < 0)
			return r;
		r = dqt_push(q, d);
	}
	return r;
}

int dqt_push_msg(struct dqt_queue *q, uint32_t slot, uint32_t gen,
		 uint64_t due_ns, uint16_t flags, uint32_t len,
		 uint64_t user_data)
{
	struct dq_desc d = {
		.due_ns = due_ns,
		.user_data = user_data,
		.slot = slot,
		.len = len,
		.gen = gen,
		.flags = flags,
	};

	return dqt_push(q, &d);
}

int dqt_submit(struct dqt_queue *q, uint32_t max, struct dq_reject *rej,
	       uint32_t cap, struct dq_submit *out)
{
	struct dq_submit s = {
		.max = max,
		.rejects = (uint64_t)(uintptr_t)rej,
		.reject_cap = rej ? cap : 0,
	};
	int ret = ioctl(q->fd, DQ_IOC_SUBMIT, &s);

	if (ret < 0)
		ret = -errno;
	if (out)
		*out = s;
	return ret;
}

uint32_t dqt_ready_count(struct dqt_queue *q)
{
	return dqt_load_acq(q->rq.producer) - *q->rq.consumer;
}

int dqt_ready_peek(struct dqt_queue *q, uint32_t *head)
{
	uint32_t cons = *q->rq.consumer;	/* ours */
	uint32_t n = dqt_load_acq(q->rq.producer) - cons;

	if (head)
		*head = cons;
	return n > q->rq.nr ? -EPROTO : (int)n;
}

void dqt_ready_advance(struct dqt_queue *q, uint32_t n)
{
	dqt_store_rel(q->rq.consumer, *q->rq.consumer + n);
}

uint32_t dqt_ready_discard(struct dqt_queue *q)
{
	uint32_t prod = dqt_load_acq(q->rq.producer);
	uint32_t n = prod - *q->rq.consumer;

	dqt_store_rel(q->rq.consumer, prod);
	return n;
}

int dqt_reap_track(struct dqt_queue *q, struct dq_ready_track *out,
		   uint32_t max)
{
	uint32_t cons;
	int n = dqt_ready_peek(q, &cons);

	if (n < 0)
		return n;
	if ((uint32_t)n > max)
		n = (int)max;
	for (int i = 0; i < n; i++)
		out[i] = *dqt_rq_track(q, cons + (uint32_t)i);
	dqt_ready_advance(q, (uint32_t)n);
	return n;
}

int dqt_done(struct dqt_queue *q, struct dq_done *dones, uint32_t nr)
{
	struct dq_done_batch b = {
		.dones = (uint64_t)(uintptr_t)dones,
		.nr = nr,
	};
	int ret = ioctl(q->fd, DQ_IOC_DONE, &b);

	return ret < 0 ? -errno : ret;
}

int dqt_done_one(struct dqt_queue *q, const struct dq_ready_track *t,
		 uint16_t outcome)
{
	struct dq_done d = {
		.handle = DQ_HANDLE(t->r.slot, t->gen),
		.redeliveries = t->redeliveries,
		.outcome = outcome,
	};
	int ret = dqt_done(q, &d, 1);

	return ret < 0 ? ret : d.result;
}

int dqt_track_stats(struct dqt_queue *q, struct dq_track_stats *st)
{
	return ioctl(q->fd, DQ_IOC_TRACK_STATS, st) < 0 ? -errno : 0;
}

int dqt_reap(struct dqt_queue *q, struct dq_ready *out, uint32_t max)
{
	uint32_t cons;
	int n = dqt_ready_peek(q, &cons);

	if (n < 0)
		return n;
	if ((uint32_t)n > max)
		n = (int)max;
	for (int i = 0; i < n; i++)
		out[i] = *dqt_rq_entry(q, cons + (uint32_t)i);
	dqt_ready_advance(q, (uint32_t)n);
	return n;
}

int dqt_wait(struct dqt_queue *q, uint32_t min_ready, int64_t timeout_ns)
{
	struct dq_wait w = { .min_ready = min_ready, .timeout_ns = timeout_ns };
	int ret = ioctl(q->fd, DQ_IOC_WAIT, &w);

	return ret < 0 ? -errno : ret;
}

int dqt_reap_until(struct dqt_queue *q, struct dq_ready *out,
		   uint64_t *reap_ns, uint32_t want, uint64_t deadline_ns,
		   enum dqt_wait_mode mode, uint32_t *got)
{
	uint32_t have = 0;
	unsigned int round = 0;
	int ret = 0;

	while (have < want) {
		int n = dqt_reap(q, out + have, want - have);

		if (n < 0) {
			ret = n;
			break;
		}
		if (n > 0) {
			uint64_t now = dqt_now_ns();

			if (reap_ns)
				for (int i = 0; i < n; i++)
					reap_ns[have + (uint32_t)i] = now;
			have += (uint32_t)n;
			continue;
		}
		uint64_t now = dqt_now_ns();

		if (now >= deadline_ns)
			break;
		uint64_t left = deadline_ns - now;
		uint64_t slice = left < 200 * NSEC_PER_MSEC ? left : 200 * NSEC_PER_MSEC;
		enum dqt_wait_mode m = mode;

		if (m == DQT_WAIT_MIXED)
			m = (round++ & 1) ? DQT_WAIT_POLL : DQT_WAIT_IOCTL;
		if (m == DQT_WAIT_NEVER &&
		    (__atomic_load_n(q->rq.flags, __ATOMIC_RELAXED) & DQ_RING_F_BACKLOG)) {
			int r = dqt_wait(q, 1, 0);

			if (r < 0 && r != -ETIME && r != -EINTR) {
				ret = r;
				break;
			}
		} else if (m == DQT_WAIT_IOCTL) {
			int r = dqt_wait(q, 1, (int64_t)slice);

			if (r < 0 && r != -ETIME && r != -EINTR) {
				ret = r;
				break;
			}
		} else if (m == DQT_WAIT_POLL) {
			struct pollfd pfd = { .fd = q->fd, .events = POLLIN };
			int r = poll(&pfd, 1, (int)(slice / NSEC_PER_MSEC) + 1);

			if (r < 0 && errno != EINTR) {
				ret = -errno;
				break;
			}
			if (r > 0 && (pfd.revents & (POLLERR | POLLNVAL))) {
				ret = -EIO;
				break;
			}
		} else {
			dqt_sleep_ns(NSEC_PER_MSEC);
		}
	}
	if (got)
		*got = have;
	return ret < 0 ? ret : (int)have;
}

int dqt_cancel(struct dqt_queue *q, uint32_t slot, uint32_t gen)
{
	struct dq_cancel c = { .handle = DQ_HANDLE(slot, gen) };

	return ioctl(q->fd, DQ_IOC_CANCEL, &c) < 0 ? -errno : 0;
}

int dqt_queue_stats(struct dqt_queue *q, struct dq_queue_stats *st)
{
	memset(st, 0, sizeof(*st));
	return ioctl(q->fd, DQ_IOC_QUEUE_STATS, st) < 0 ? -errno : 0;
}

int dqt_node_stats(int fd, int node, struct dq_node_stats *st)
{
	memset(st, 0, sizeof(*st));
	st->node = node;
	return ioctl(fd, DQ_IOC_NODE_STATS, st) < 0 ? -errno : 0;
}

int dqt_stats_fd(void)
{
	static int cached = -1;
	struct dq_node_stats ns;
	struct dq_setup s = { .slot_count = 1, .slot_size = DQ_MIN_SLOT_SIZE,
			      .numa_node = -1 };
	int fd;

	if (cached >= 0)
		return cached;
	fd = dqt_open_dev();
	if (fd < 0)
		return fd;
	if (dqt_node_stats(fd, 0, &ns)) {
		/* perhaps only a set-up queue answers */
		if (ioctl(fd, DQ_IOC_SETUP, &s) < 0 || dqt_node_stats(fd, 0, &ns)) {
			int e = -errno;

			close(fd);
			return e ? e : -EIO;
		}
	}
	cached = fd;
	return fd;
}

int dqt_slot_reserve(struct dqt_queue *q)
{
	if (!q->nr_free)
		return -ENOSPC;
	return (int)q->free_slots[--q->nr_free];
}

void dqt_slot_put(struct dqt_queue *q, uint32_t slot)
{
	if (q->nr_free < q->slot_count)
		q->free_slots[q->nr_free++] = slot;
}

static uint8_t dqt_pattern_byte(uint64_t seed, uint32_t i)
{
	uint64_t x = seed * 0x9E3779B97F4A7C15ULL + i * 0xBF58476D1CE4E5B9ULL;

	x ^= x >> 29;
	return (uint8_t)(x ^ (x >> 17));
}

void dqt_fill_payload(void *buf, uint32_t len, uint64_t seed)
{
	uint8_t *b = buf;

	for (uint32_t i = 0; i < len; i++)
		b[i] = dqt_pattern_byte(seed, i);
}

uint32_t dqt_check_payload(const void *buf, uint32_t len, uint64_t seed)
{
	const uint8_t *b = buf;

	for (uint32_t i = 0; i < len; i++)
		if (b[i] != dqt_pattern_byte(seed, i))
			return i + 1;
	return 0;
}

uint64_t dqt_rand(uint64_t *state)
{
	uint64_t x = *state;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*state = x;
	return x * 0x2545F4914F6CDD1DULL;
}

uint64_t dqt_seed(void)
{
	const char *s = getenv("DQ_SEED");
	uint64_t v = s ? strtoull(s, NULL, 0) : dqt_now_ns() ^ ((uint64_t)getpid() << 32);

	return v ? v : 1;
}

int dqt_node_online(int node)
{
	char path[96];

	snprintf(path, sizeof(path), "/sys/devices/system/node/node%d", node);
	return access(path, F_OK) == 0;
}

int dqt_node_first_cpu(int node)
{
	char path[96], buf[256];
	FILE *f;
	int cpu = -1;

	snprintf(path, sizeof(path), "/sys/devices/system/node/node%d/cpulist", node);
	f = fopen(path, "r");
	if (!f)
		return -1;
	if (fgets(buf, sizeof(buf), f) && buf[0] >= '0' && buf[0] <= '9')
		cpu = atoi(buf);
	fclose(f);
	return cpu;
}

int dqt_pin_to_cpu(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(0, sizeof(set), &set) ? -errno : 0;
}

long dqt_mem_available_kb(void)
{
	char line[256];
	long kb = -1;
	FILE *f = fopen("/proc/meminfo", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "MemAvailable: %ld kB", &kb) == 1)
			break;
	fclose(f);
	return kb;
}

long dqt_free_kb(void)
{
	char line[256];
	long v, pages = 0;
	int seen = 0;
	FILE *f = fopen("/proc/zoneinfo", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, " pages free %ld", &v) == 1)
			pages += v, seen = 1;
		else if (sscanf(line, " count: %ld", &v) == 1)
			pages += v;	/* a per-CPU page list */
	}
	fclose(f);
	return seen ? pages * (sysconf(_SC_PAGESIZE) / 1024) : -1;
}

static int dqt_cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

void dqt_sort_u64(uint64_t *v, size_t n)
{
	qsort(v, n, sizeof(*v), dqt_cmp_u64);
}

uint64_t dqt_percentile(const uint64_t *sorted, size_t n, double p)
{
	size_t i;

	if (!n)
		return 0;
	i = (size_t)(p / 100.0 * (double)(n - 1) + 0.5);
	return sorted[i < n ? i : n - 1];
}

const char *dqt_rej_name(uint32_t reason)
{
	static const char *const names[DQ_REJ_NR] = {
		[DQ_REJ_SLOT] = "SLOT", [DQ_REJ_LEN] = "LEN",
		[DQ_REJ_FLAGS] = "FLAGS", [DQ_REJ_RESV] = "RESV",
		[DQ_REJ_TIME] = "TIME", [DQ_REJ_BUSY] = "BUSY",
	};

	return reason < DQ_REJ_NR && names[reason] ? names[reason] : "?";
}
