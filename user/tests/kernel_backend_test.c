// SPDX-License-Identifier: LGPL-2.1 OR MIT
/*
 * libdqshim against dq.ko (the kernel backend).  Every test SKIPs when
 * /dev/dq is absent, so this runs everywhere but only means something in
 * the test VM with dq.ko loaded:
 *
 *	user/build/tests/kernel_backend_test [test-name...]
 *
 * Most tests run twice: over io_uring commands (the default path; skipped
 * when the kernel lacks DQ_FEAT_URING_CMD) and over the ioctls
 * (DQ_OPEN_F_IOCTL).  Time bounds are loose: the VM is emulated (TCG).
 */
#include <errno.h>
#include <liburing.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "dqshim.h"
#include "relmodel.h"
#include "tap.h"

#define MS	1000000ULL

static uint64_t rng_state = 0x243F6A8885A308D3ULL;

static uint64_t rnd(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

/* Open a kernel-backend queue on @path (DQ_PATH_URING or _IOCTL). */
static struct dqshim_queue *kopen(enum dq_path path, uint32_t slots,
			      uint32_t size, uint32_t submit_entries,
			      dq_reject_fn fn, void *arg)
{
	struct dq_params p;
	struct dqshim_queue *q = NULL;
	struct dq_info info;
	int ret;

	if (access("/dev/dq", F_OK))
		SKIP("no /dev/dq (dq.ko not loaded)");
	dq_params_init(&p);
	p.backend = DQ_BACKEND_KERNEL;
	p.slot_count = slots;
	p.slot_size = size;
	p.submit_entries = submit_entries;
	p.on_reject = fn;
	p.reject_arg = arg;
	if (path == DQ_PATH_IOCTL)
		p.flags |= DQ_OPEN_F_IOCTL;
	ret = dq_queue_open(&p, &q);
	if (ret) {
		FAIL("dq_queue_open(kernel): %s", dq_strerror(ret));
		tap_abort();
	}
	dq_queue_info(q, &info);
	REQUIRE_EQ(info.backend, DQ_BACKEND_KERNEL);
	if (path == DQ_PATH_URING && info.path != DQ_PATH_URING) {
		CHECK(!(info.features & DQ_FEAT_URING_CMD),
		      "kernel has DQ_FEAT_URING_CMD but the probe fell back");
		dq_queue_close(q);
		SKIP("kernel takes no dq uring commands: ioctl path only");
	}
	REQUIRE_EQ(info.path, path);
	return q;
}

static uint64_t put(struct dqshim_queue *q, uint64_t id, uint64_t delay_ns)
{
	struct dqshim_msg m;
	int ret;

	ret = dq_reserve(q, &m);
	REQUIRE_EQ(ret, 0);
	memcpy(m.data, &id, sizeof(id));
	ret = dq_commit_delay(q, &m, sizeof(id), delay_ns, id);
	if (ret == -EAGAIN) {
		REQUIRE(dq_flush(q) >= 0);
		ret = dq_commit_delay(q, &m, sizeof(id), delay_ns, id);
	}
	REQUIRE_EQ(ret, 0);
	return m.handle;
}

/* ---- the contract, on either path ---------------------------------- */

static void t_open_info(enum dq_path path)
{
	struct dqshim_queue *q = kopen(path, 100, 100, 100, NULL, NULL);
	struct dq_queue_stats st;
	struct dq_info info;

	dq_queue_info(q, &info);
	tap_diag("queue %u node %d features %#x path %s", info.queue_id,
		 info.numa_node, info.features, dq_path_name(info.path));
	CHECK_EQ(info.abi_version, DQ_ABI_VERSION);
	CHECK_EQ(info.slot_count, 100);
	CHECK_EQ(info.slot_size, 128);
	CHECK_EQ(info.submit_entries, 128);
	CHECK(info.arena_size >= 100 * 128);
	CHECK(info.numa_node >= 0);
	CHECK(dq_queue_fd(q) >= 0);
	CHECK(!strcmp(dq_backend_name(dq_queue_backend(q)), "kernel"));
	REQUIRE_EQ(dq_queue_get_stats(q, &st), 0);
	CHECK_EQ(st.queue_id, info.queue_id);
	CHECK_EQ(st.slot_count, 100);
	dq_queue_close(q);
}

static void t_one_message(enum dq_path path)
{
	struct dqshim_queue *q = kopen(path, 8, 256, 0, NULL, NULL);
	struct dq_reaped r[4];
	struct dqshim_msg m;
	uint64_t due, now;

	REQUIRE_EQ(dq_reserve(q, &m), 0);
	memset(m.data, 0x5A, 256);
	due = dq_now_ns() + 500 * MS;
	REQUIRE_EQ(dq_commit(q, &m, 256, due, 77), 0);
	REQUIRE_EQ(dq_flush(q), 1);
	CHECK_EQ(dq_reap(q, r, 4, 0), 0);
	REQUIRE_EQ(dq_reap(q, r, 4, 5000 * MS), 1);
	now = dq_now_ns();
	CHECK(now >= due);
	CHECK(r[0].release_ns >= due);
	CHECK_EQ(r[0].due_ns, due);
	CHECK_EQ(r[0].user_data, 77);
	CHECK_EQ(r[0].len, 256);
	CHECK_EQ(r[0].handle, m.handle);
	CHECK(r[0].data == m.data);
	CHECK(((unsigned char *)r[0].data)[255] == 0x5A);
	tap_diag("late by %llu us (engine %llu us)",
		 (unsigned long long)(now - due) / 1000,
		 (unsigned long long)(r[0].release_ns - due) / 1000);
	CHECK_EQ(dq_done(q, r[0].slot), 0);
	CHECK_EQ(dq_done(q, r[0].slot), -EINVAL);
	dq_queue_close(q);
}

/* Batching: one flush carries a full ring; a full ring says -EAGAIN. */
static void t_batching(enum dq_path path)
{
	struct dqshim_queue *q = kopen(path, 4096, 64, 1024, NULL, NULL);
	struct dq_queue_stats st;
	struct dq_reaped r[256];
	struct dqshim_msg m;
	unsigned int got = 0;
	uint64_t i;

	for (i = 0; i < 1024; i++)
		put(q, i, 50 * MS + (i % 7) * MS);
	REQUIRE_EQ(dq_reserve(q, &m), 0);
	CHECK_EQ(dq_commit_delay(q, &m, 8, 0, 9999), -EAGAIN);
	CHECK_EQ(dq_flush(q), 1024);
	REQUIRE_EQ(dq_queue_get_stats(q, &st), 0);
	CHECK_EQ(st.submitted, 1024);
	CHECK_EQ(dq_commit_delay(q, &m, 8, 0, 1024), 0);
	CHECK_EQ(dq_flush(q), 1);
	CHECK_EQ(dq_flush(q), 0);
	while (got < 1025) {
		int n = dq_reap(q, r, 256, 10000 * MS), k;

		REQUIRE(n > 0, "reap: %d (%s)", n, dq_strerror(n));
		for (k = 0; k < n; k++)
			REQUIRE_EQ(dq_done(q, r[k].slot), 0);
		got += (unsigned int)n;
	}
	CHECK_EQ(got, 1025);
	dq_queue_close(q);
}

#define N_ORDER 10000

/* The test's own clock, to choose due times and judge releases by. */
static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/*
 * Random due times (500 us steps from one base, so with many equal ones)
 * in one batch, judged against the test's own table (relmodel): exactly
 * once, never before the due time on the test's clock, due order, FIFO
 * among equal due times; the payload carries the id.
 */
static void t_random_in_order(enum dq_path path)
{
	struct dqshim_queue *q = kopen(path, N_ORDER, 64, 16384, NULL, NULL);
	static struct dq_reaped r[512];
	uint64_t deadline, base, flushed, i;
	unsigned int got = 0, corrupt = 0, due_differs = 0;
	struct rm m;

	REQUIRE_EQ(rm_init(&m, N_ORDER), 0);
	base = mono_ns();
	for (i = 0; i < N_ORDER; i++) {
		uint64_t due = base + (rnd() % 1000) * (500 * 1000);
		struct dqshim_msg msg;
		int ret;

		rm_submit(&m, i, 0, i, due, mono_ns());
		REQUIRE_EQ(dq_reserve(q, &msg), 0);
		memcpy(msg.data, &i, sizeof(i));
		ret = dq_commit(q, &msg, sizeof(i), due, i);
		REQUIRE_EQ(ret, 0);
	}
	REQUIRE_EQ(dq_flush(q), N_ORDER);
	flushed = mono_ns();
	for (i = 0; i < N_ORDER; i++)
		rm_in_engine(&m, i, flushed);
	deadline = mono_ns() + 25000 * MS;
	while (got < N_ORDER && mono_ns() < deadline) {
		int n = dq_reap(q, r, 512, 1000 * MS), k;
		uint64_t now = mono_ns();

		if (n == -ETIME)
			continue;
		REQUIRE(n > 0, "reap: %d", n);
		for (k = 0; k < n; k++) {
			uint64_t id = r[k].user_data, word;

			memcpy(&word, r[k].data, sizeof(word));
			corrupt += r[k].len != sizeof(word) || word != id;
			due_differs += rm_known(&m, id) &&
				       r[k].due_ns != rm_due(&m, id);
			rm_seen(&m, id, now);
			got++;
			REQUIRE_EQ(dq_done(q, r[k].slot), 0);
		}
	}
	rm_finish(&m);
	CHECK_EQ(got, N_ORDER);
	CHECK_EQ(m.early, 0);
	CHECK_EQ(m.dup + m.unknown, 0);
	CHECK_EQ(m.lost, 0);
	CHECK_EQ(m.order, 0);
	CHECK_EQ(corrupt, 0);
	CHECK_EQ(due_differs, 0);
	if (m.first[0])
		tap_diag("first violation: %s", m.first);
	tap_diag("%u msgs, max lateness %llu us", got,
		 (unsigned long long)m.max_late / 1000);
	rm_free(&m);
	dq_queue_close(q);
}

static void t_fifo_ties(enum dq_path path)
{
	struct dqshim_queue *q = kopen(path, 2000, 64, 256, NULL, NULL);
	struct dq_reaped r[256];
	uint64_t due = dq_now_ns() + 200 * MS, i;
	unsigned int got = 0, bad = 0;

	for (i = 0; i < 2000; i++) {
		struct dqshim_msg m;
		int ret;

		REQUIRE_EQ(dq_reserve(q, &m), 0);
		while ((ret = dq_commit(q, &m, 0, due, i)) == -EAGAIN)
			REQUIRE(dq_flush(q) >= 0);
		REQUIRE_EQ(ret, 0);
	}
	REQUIRE(dq_flush(q) >= 0);
	while (got < 2000) {
		int n = dq_reap(q, r, 256, 10000 * MS), k;

		REQUIRE(n > 0, "reap: %d", n);
		for (k = 0; k < n; k++) {
			bad += r[k].user_data != got;
			got++;
			dq_done(q, r[k].slot);
		}
	}
	CHECK_EQ(bad, 0);
	dq_queue_close(q);
}

struct wake_ctx {
	struct dqshim_queue *q;
	int64_t timeout;
	int n;
	uint64_t returned_at;
	struct dq_reaped r[4];
};

static void *reaper(void *arg)
{
	struct wake_ctx *c = arg;

	c->n = dq_reap(c->q, c->r, 4, c->timeout);
	c->returned_at = dq_now_ns();
	return NULL;
}

/* A parked wait completes when the engine releases the message. */
static void t_parked_wait(enum dq_path path)
{
	struct dqshim_queue *q = kopen(path, 8, 64, 0, NULL, NULL);
	struct wake_ctx c = { .q = q, .timeout = -1 };
	pthread_t th;
	uint64_t due;

	REQUIRE_EQ(pthread_create(&th, NULL, reaper, &c), 0);
	usleep(200000);			/* let it park */
	due = dq_now_ns() + 300 * MS;
	put(q, 5, 300 * MS);
	REQUIRE_EQ(dq_flush(q), 1);
	pthread_join(th, NULL);
	REQUIRE_EQ(c.n, 1);
	CHECK_EQ(c.r[0].user_data, 5);
	CHECK(c.returned_at >= c.r[0].due_ns);
	CHECK(c.returned_at + 1 * MS >= due);
	CHECK(c.returned_at - due < 3000 * MS, "woke %llu ms late",
	      (unsigned long long)(c.returned_at - due) / MS);
	dq_queue_close(q);
}

static void t_timeouts(enum dq_path path)
{
	struct dqshim_queue *q = kopen(path, 8, 64, 0, NULL, NULL);
	struct dq_reaped r[4];
	uint64_t t0 = dq_now_ns();

	CHECK_EQ(dq_reap(q, r, 4, 0), 0);
	CHECK_EQ(dq_reap(q, r, 4, 100 * MS), -ETIME);
	CHECK(dq_now_ns() - t0 >= 100 * MS);
	/* Due after the caller's timeout: still -ETIME, not early. */
	put(q, 1, 2000 * MS);
	REQUIRE_EQ(dq_flush(q), 1);
	t0 = dq_now_ns();
	CHECK_EQ(dq_reap(q, r, 4, 200 * MS), -ETIME);
	CHECK(dq_now_ns() - t0 >= 200 * MS);
	CHECK_EQ(dq_reap(q, r, 4, 5000 * MS), 1);
	dq_queue_close(q);
}

/* A wait longer than the kernel's park bound is re-issued, not failed. */
static void t_wait_beyond_park_bound(enum dq_path path)
{
	struct dqshim_queue *q = kopen(path, 8, 64, 0, NULL, NULL);
	struct dq_reaped r[4];
	uint64_t due = dq_now_ns() + DQ_URING_MAX_PARK_NS + 700 * MS;

	put(q, 1, DQ_URING_MAX_PARK_NS + 700 * MS);
	REQUIRE_EQ(dq_flush(q), 1);
	REQUIRE_EQ(dq_reap(q, r, 4, (int64_t)(DQ_URING_MAX_PARK_NS + 8000 * MS)), 1);
	CHECK(dq_now_ns() >= due);
	dq_queue_close(q);
}

static int rejects;
static struct dq_reject last_rej;

static void on_reject(void *arg, const struct dq_reject *rej)
{
	(void)arg;
	rejects++;
	last_rej = *rej;
}

static void t_cancel_and_reject(enum dq_path path)
{
	struct dqshim_queue *q = kopen(path, 4, 64, 0, on_reject, NULL);
	struct dq_queue_stats st;
	struct dq_reaped r[4];
	struct dqshim_msg m, all[4];
	uint64_t h;
	int i;

	h = put(q, 1, 1000 * MS);
	REQUIRE_EQ(dq_flush(q), 1);
	CHECK_EQ(dq_cancel(q, h), 0);
	CHECK_EQ(dq_cancel(q, h), -EALREADY);
	CHECK_EQ(dq_reap(q, r, 4, 1500 * MS), -ETIME);	/* never released */

	h = put(q, 2, 5000 * MS);			/* not flushed */
	CHECK_EQ(dq_cancel(q, h), 0);

	h = put(q, 3, 20 * MS);
	REQUIRE_EQ(dq_flush(q), 1);
	REQUIRE_EQ(dq_reap(q, r, 4, 5000 * MS), 1);
	CHECK_EQ(dq_cancel(q, h), -EALREADY);
	CHECK_EQ(dq_done(q, r[0].slot), 0);
	CHECK_EQ(dq_cancel(q, DQ_HANDLE(0, 0xdeadbeef)), -ENOENT);
	CHECK_EQ(dq_cancel(q, DQ_HANDLE(99, 1)), -ENOENT);

	/* Rejected by the kernel: reported, slot back in the pool. */
	rejects = 0;
	REQUIRE_EQ(dq_reserve(q, &m), 0);
	REQUIRE_EQ(dq_commit_delay(q, &m, 8, DQ_MAX_DELAY_NS + 1000 * MS, 42), 0);
	CHECK_EQ(dq_flush(q), 0);
	CHECK_EQ(rejects, 1);
	CHECK_EQ(last_rej.error, -EOVERFLOW);
	CHECK_EQ(last_rej.reason, DQ_REJ_TIME);
	CHECK_EQ(last_rej.user_data, 42);
	for (i = 0; i < 4; i++)
		CHECK_EQ(dq_reserve(q, &all[i]), 0);
	REQUIRE_EQ(dq_queue_get_stats(q, &st), 0);
	CHECK_EQ(st.rejected[DQ_REJ_TIME], 1);
	CHECK_EQ(st.cancelled, 2);
	dq_queue_close(q);
}

#define NPROD		4
#define PER_PROD	5000

struct prod_ctx {
	struct dqshim_queue *q;
	unsigned int id;
	int errors;
};

static void *producer(void *arg)
{
	struct prod_ctx *c = arg;
	uint64_t s = 0x9E3779B97F4A7C15ULL * (c->id + 1);
	unsigned int i;

	for (i = 0; i < PER_PROD; i++) {
		uint64_t id = (uint64_t)c->id * PER_PROD + i;
		struct dqshim_msg m;
		int ret = dq_reserve(c->q, &m);

		if (ret == -ENOSPC) {
			dq_flush(c->q);
			ret = dq_reserve_wait(c->q, &m, 20000 * MS);
		}
		if (ret) {
			c->errors++;
			break;
		}
		memcpy(m.data, &id, sizeof(id));
		memset((char *)m.data + 8, (int)(id & 0xff), 56);
		s ^= s << 13;
		s ^= s >> 7;
		s ^= s << 17;
		while ((ret = dq_commit_delay(c->q, &m, 64, s % (200 * MS), id)) ==
		       -EAGAIN)
			dq_flush(c->q);
		c->errors += ret != 0;
		if (i % 16 == 15 && dq_flush(c->q) < 0)
			c->errors++;
	}
	if (dq_flush(c->q) < 0)
		c->errors++;
	return NULL;
}

static void t_threads(enum dq_path path)
{
	struct dqshim_queue *q = kopen(path, 2048, 64, 256, NULL, NULL);
	static unsigned char seen[NPROD * PER_PROD];
	struct prod_ctx ctx[NPROD];
	pthread_t th[NPROD];
	struct dq_reaped r[256];
	unsigned int got = 0, early = 0, dup = 0, corrupt = 0;
	uint64_t deadline = dq_now_ns() + 25000 * MS;
	int i;

	memset(seen, 0, sizeof(seen));
	for (i = 0; i < NPROD; i++) {
		ctx[i] = (struct prod_ctx){ .q = q, .id = (unsigned int)i };
		REQUIRE_EQ(pthread_create(&th[i], NULL, producer, &ctx[i]), 0);
	}
	while (got < NPROD * PER_PROD && dq_now_ns() < deadline) {
		int n = dq_reap(q, r, 256, 500 * MS), k;
		uint64_t now = dq_now_ns();

		if (n == -ETIME)
			continue;
		REQUIRE(n > 0, "reap: %d", n);
		for (k = 0; k < n; k++) {
			unsigned char *p = r[k].data;
			uint64_t id;

			memcpy(&id, p, sizeof(id));
			corrupt += id != r[k].user_data || p[63] != (id & 0xff);
			early += now < r[k].due_ns;
			if (id >= NPROD * PER_PROD || seen[id]++)
				dup++;
			got++;
			dq_done(q, r[k].slot);
		}
	}
	for (i = 0; i < NPROD; i++) {
		pthread_join(th[i], NULL);
		CHECK_EQ(ctx[i].errors, 0);
	}
	CHECK_EQ(got, NPROD * PER_PROD);
	CHECK_EQ(early, 0);
	CHECK_EQ(dup, 0);
	CHECK_EQ(corrupt, 0);
	dq_queue_close(q);
}

/* The payload the consumer reads is the producer's, in the shared arena. */
static void t_zero_copy(enum dq_path path)
{
	struct dqshim_queue *q = kopen(path, 16, 4096, 0, NULL, NULL);
	struct dq_reaped r[16];
	struct dq_info info;
	struct dqshim_msg m[16];
	int i, got = 0;

	dq_queue_info(q, &info);
	for (i = 0; i < 16; i++) {
		unsigned char *p;
		int j;

		REQUIRE_EQ(dq_reserve(q, &m[i]), 0);
		p = m[i].data;
		CHECK(p == (unsigned char *)info.arena +
		      (size_t)m[i].slot * info.slot_size);
		for (j = 0; j < 4096; j++)
			p[j] = (unsigned char)(i * 13 + j);
		REQUIRE_EQ(dq_commit_delay(q, &m[i], 4096, 10 * MS, (uint64_t)i), 0);
	}
	REQUIRE_EQ(dq_flush(q), 16);
	while (got < 16) {
		int n = dq_reap(q, r, 16, 5000 * MS);

		REQUIRE(n > 0);
		for (i = 0; i < n; i++) {
			unsigned char *p = r[i].data;
			unsigned int k = (unsigned int)r[i].user_data, j, bad = 0;

			CHECK(p == m[k].data);
			CHECK(p >= (unsigned char *)info.arena &&
			      p + r[i].len <= (unsigned char *)info.arena +
			      info.arena_size);
			for (j = 0; j < 4096; j++)
				bad += p[j] != (unsigned char)(k * 13 + j);
			CHECK_EQ(bad, 0);
			dq_done(q, r[i].slot);
		}
		got += n;
	}
	dq_queue_close(q);
}

static void t_epoll(enum dq_path path)
{
	struct dqshim_queue *q = kopen(path, 8, 64, 0, NULL, NULL);
	struct epoll_event ev = { .events = EPOLLIN }, out;
	struct dq_reaped r[4];
	uint64_t due;
	int ep;

	ep = epoll_create1(EPOLL_CLOEXEC);
	REQUIRE(ep >= 0);
	REQUIRE_EQ(epoll_ctl(ep, EPOLL_CTL_ADD, dq_queue_fd(q), &ev), 0);
	CHECK_EQ(epoll_wait(ep, &out, 1, 0), 0);
	due = dq_now_ns() + 500 * MS;
	put(q, 1, 500 * MS);
	REQUIRE_EQ(dq_flush(q), 1);
	CHECK_EQ(epoll_wait(ep, &out, 1, 0), 0);
	REQUIRE_EQ(epoll_wait(ep, &out, 1, 5000), 1);
	CHECK(dq_now_ns() >= due);
	CHECK_EQ(dq_reap(q, r, 4, 0), 1);
	dq_done(q, r[0].slot);
	CHECK_EQ(epoll_wait(ep, &out, 1, 0), 0);
	close(ep);
	dq_queue_close(q);
}

#define BOTH(name, secs)						\
	TEST(name##_uring, secs) { t_##name(DQ_PATH_URING); }		\
	TEST(name##_ioctl, secs) { t_##name(DQ_PATH_IOCTL); }

BOTH(open_info, 10)
BOTH(one_message, 20)
BOTH(batching, 30)
BOTH(random_in_order, 30)
BOTH(fifo_ties, 20)
BOTH(parked_wait, 20)
BOTH(timeouts, 20)
BOTH(wait_beyond_park_bound, 30)
BOTH(cancel_and_reject, 20)
BOTH(threads, 30)
BOTH(zero_copy, 20)
BOTH(epoll, 20)

/* ---- an application's own io_uring with the prep helpers ------------ */

static int run_one(struct io_uring *ring, int *res)
{
	struct io_uring_cqe *cqe;
	int ret;

	ret = io_uring_submit_and_wait(ring, 1);
	if (ret < 0)
		return ret;
	ret = io_uring_wait_cqe(ring, &cqe);
	if (ret)
		return ret;
	*res = cqe->res;
	io_uring_cqe_seen(ring, cqe);
	return 0;
}

TEST(prep_helpers_own_ring, 30)
{
	struct dqshim_queue *q = kopen(DQ_PATH_URING, 16, 64, 0, NULL, NULL);
	struct dq_reject rej[16];
	struct dq_reaped r[16];
	struct dq_submit s;
	struct io_uring ring;
	struct io_uring_sqe *sqe;
	struct dqshim_msg m;
	uint64_t h, t0;
	int res, i;

	REQUIRE_EQ(io_uring_queue_init(8, &ring, 0), 0);

	/* SUBMIT: two messages, one of them rejected. */
	h = put(q, 1, 5000 * MS);
	REQUIRE_EQ(dq_reserve(q, &m), 0);
	REQUIRE_EQ(dq_commit_delay(q, &m, 8, DQ_MAX_DELAY_NS + 1000 * MS, 2), 0);
	memset(&s, 0, sizeof(s));
	s.rejects = (uint64_t)(uintptr_t)rej;
	s.reject_cap = 16;
	sqe = io_uring_get_sqe(&ring);
	REQUIRE_EQ(dq_prep_submit(sqe, q, &s), 0);
	CHECK_EQ(sqe->opcode, IORING_OP_URING_CMD);
	CHECK_EQ(sqe->fd, dq_queue_fd(q));
	CHECK_EQ(sqe->cmd_op, DQ_URING_CMD_SUBMIT);
	io_uring_sqe_set_data64(sqe, 1);
	REQUIRE_EQ(run_one(&ring, &res), 0);
	CHECK_EQ(res, 1);
	CHECK_EQ(s.accepted, 1);
	CHECK_EQ(s.rejected, 1);
	CHECK_EQ(rej[0].error, -EOVERFLOW);
	CHECK_EQ(dq_submit_complete(q, &s, res), 1);

	/* WAIT with a timeout: -ETIME. */
	sqe = io_uring_get_sqe(&ring);
	REQUIRE_EQ(dq_prep_wait(sqe, q, 1, 50 * MS), 0);
	t0 = dq_now_ns();
	REQUIRE_EQ(run_one(&ring, &res), 0);
	CHECK_EQ(res, -ETIME);
	CHECK(dq_now_ns() - t0 >= 50 * MS);

	/* CANCEL the accepted one; the slot returns. */
	sqe = io_uring_get_sqe(&ring);
	REQUIRE_EQ(dq_prep_cancel(sqe, q, h), 0);
	REQUIRE_EQ(run_one(&ring, &res), 0);
	CHECK_EQ(res, 0);
	CHECK_EQ(dq_cancel_complete(q, h, res), 0);
	{
		struct dqshim_msg x[16];

		for (i = 0; i < 16; i++)
			CHECK_EQ(dq_reserve(q, &x[i]), 0);
		for (i = 0; i < 16; i++)
			CHECK_EQ(dq_abort(q, &x[i]), 0);
	}

	/* WAIT parked, completed by a release; then reap takes it. */
	put(q, 3, 100 * MS);
	REQUIRE_EQ(dq_flush(q), 1);
	sqe = io_uring_get_sqe(&ring);
	REQUIRE_EQ(dq_prep_wait(sqe, q, 1, -1), 0);
	REQUIRE_EQ(run_one(&ring, &res), 0);
	CHECK_EQ(res, 1);
	CHECK_EQ(dq_reap(q, r, 16, 0), 1);
	CHECK_EQ(r[0].user_data, 3);

	io_uring_queue_exit(&ring);
	dq_queue_close(q);
}

/* The documented errors of open and attach on the kernel backend. */
TEST(open_attach_errors, 20)
{
	struct dq_params p;
	struct dqshim_queue *q = (struct dqshim_queue *)&p;

	if (access("/dev/dq", F_OK))
		SKIP("no /dev/dq (dq.ko not loaded)");
	CHECK_EQ(dq_queue_attach("dq-kbt-no-such-queue", NULL, &q), -ENOENT);
	CHECK(q == NULL);
	CHECK_EQ(dq_queue_attach("a23456789012345678901234567890123", NULL, &q),
		 -ENAMETOOLONG);
	CHECK_EQ(dq_queue_attach("", NULL, &q), -EINVAL);
	CHECK_EQ(dq_queue_attach(NULL, NULL, &q), -EINVAL);
	dq_params_init(&p);
	p.backend = DQ_BACKEND_KERNEL;
	p.slot_count = DQ_MAX_SLOTS;		/* 16 TiB: over max_arena_bytes */
	p.slot_size = DQ_MAX_SLOT_SIZE;
	CHECK_EQ(dq_queue_open(&p, &q), -E2BIG);
	CHECK(q == NULL);
	dq_params_init(&p);
	p.backend = DQ_BACKEND_KERNEL;
	p.numa_node = 99;			/* no such node */
	CHECK_EQ(dq_queue_open(&p, &q), -EINVAL);
	CHECK(q == NULL);
}

TEST(auto_picks_kernel, 10)
{
	struct dq_params p;
	struct dqshim_queue *q;

	if (access("/dev/dq", F_OK))
		SKIP("no /dev/dq (dq.ko not loaded)");
	dq_params_init(&p);
	REQUIRE_EQ(dq_queue_open(&p, &q), 0);
	CHECK_EQ(dq_queue_backend(q), DQ_BACKEND_KERNEL);
	dq_queue_close(q);
}

TAP_MAIN()
