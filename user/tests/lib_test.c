// SPDX-License-Identifier: LGPL-2.1 OR MIT
/*
 * libdqshim host tests on the user backend (no /dev/dq needed): the
 * public API's contract, the engine's guarantees (never early, due order,
 * FIFO ties, exactly once, cancel answers), threads, zero copy, the
 * pollable fd and the io_uring prep helpers.
 */
#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

#include "dqshim.h"
#include "relmodel.h"
#include "tap.h"

#define MS	1000000ULL

/*
 * The test's own clock: due times are chosen and releases judged on it,
 * never on mono_ns() (checked against it once, in clock_is_monotonic).
 */
static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static struct dqshim_queue *open_user(uint32_t slots, uint32_t size,
				  uint32_t submit_entries)
{
	struct dq_params p;
	struct dqshim_queue *q = NULL;
	int ret;

	dq_params_init(&p);
	p.backend = DQ_BACKEND_USER;
	p.slot_count = slots;
	p.slot_size = size;
	p.submit_entries = submit_entries;
	ret = dq_queue_open(&p, &q);
	if (ret) {
		FAIL("dq_queue_open: %s", dq_strerror(ret));
		tap_abort();
	}
	return q;
}

static uint64_t rng_state = 0x9E3779B97F4A7C15ULL;

static uint64_t rnd(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

/* Commit one message of @len bytes (first 8: @id) due after @delay. */
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

TEST(open_close, 10)
{
	struct dq_params p;
	struct dqshim_queue *q;
	struct dq_info info;
	int ret;

	dq_params_init(&p);
	CHECK_EQ(p.numa_node, -1);
	CHECK_EQ(p.backend, DQ_BACKEND_AUTO);

	/* AUTO on a host without /dev/dq: the user engine. */
	if (access("/dev/dq", F_OK) != 0) {
		ret = dq_queue_open(&p, &q);
		REQUIRE_EQ(ret, 0);
		CHECK_EQ(dq_queue_backend(q), DQ_BACKEND_USER);
		CHECK(!strcmp(dq_backend_name(dq_queue_backend(q)), "user"));
		dq_queue_close(q);

		p.backend = DQ_BACKEND_KERNEL;
		q = (void *)1;
		CHECK_EQ(dq_queue_open(&p, &q), -ENOENT);
		CHECK(q == NULL);
	}

	p.backend = DQ_BACKEND_USER;
	p.slot_count = 100;
	p.slot_size = 100;
	p.submit_entries = 100;
	REQUIRE_EQ(dq_queue_open(&p, &q), 0);
	dq_queue_info(q, &info);
	CHECK_EQ(info.backend, DQ_BACKEND_USER);
	CHECK_EQ(info.path, DQ_PATH_LOCAL);
	CHECK_EQ(info.slot_count, 100);
	CHECK_EQ(info.slot_size, 128);		/* rounded to 64 */
	CHECK_EQ(info.submit_entries, 128);	/* power of two */
	CHECK(info.arena != NULL);
	CHECK(info.arena_size >= 100 * 128);
	CHECK(dq_queue_fd(q) >= 0);
	CHECK_EQ(info.fd, dq_queue_fd(q));
	CHECK(!strcmp(dq_path_name(info.path), "local"));
	CHECK(!strcmp(dq_backend_name(DQ_BACKEND_KERNEL), "kernel"));
	dq_queue_close(q);
	dq_queue_close(NULL);

	/* Bad parameters, as DQ_IOC_SETUP would refuse them. */
	dq_params_init(&p);
	p.backend = DQ_BACKEND_USER;
	p.slot_size = 32;
	CHECK_EQ(dq_queue_open(&p, &q), -EINVAL);
	p.slot_size = DQ_MAX_SLOT_SIZE + 1;
	CHECK_EQ(dq_queue_open(&p, &q), -EINVAL);
	p.slot_size = 64;
	p.slot_count = DQ_MAX_SLOTS + 1;
	CHECK_EQ(dq_queue_open(&p, &q), -EINVAL);
	p.slot_count = 10;
	p.granularity_ns = DQ_MAX_GRANULARITY_NS + 1;
	CHECK_EQ(dq_queue_open(&p, &q), -EINVAL);
	p.granularity_ns = 0;
	p.backend = 7;
	CHECK_EQ(dq_queue_open(&p, &q), -EINVAL);
	p.backend = DQ_BACKEND_USER;
	p.flags = 1U << 31;
	CHECK_EQ(dq_queue_open(&p, &q), -EINVAL);
	CHECK_EQ(dq_queue_open(&p, NULL), -EINVAL);

	/* NULL params: defaults. */
	REQUIRE_EQ(dq_queue_open(NULL, &q), 0);
	dq_queue_info(q, &info);
	CHECK_EQ(info.slot_count, 1024);
	dq_queue_close(q);
}

TEST(reserve_until_enospc, 10)
{
	struct dqshim_queue *q = open_user(16, 64, 0);
	struct dqshim_msg m[17], extra;
	uint64_t t0;
	int i;

	for (i = 0; i < 16; i++) {
		REQUIRE_EQ(dq_reserve(q, &m[i]), 0);
		CHECK_EQ(m[i].cap, 64);
		CHECK_EQ(m[i].handle, DQ_HANDLE(m[i].slot, m[i].gen));
	}
	CHECK_EQ(dq_reserve(q, &m[16]), -ENOSPC);
	t0 = mono_ns();
	CHECK_EQ(dq_reserve_wait(q, &m[16], 20 * MS), -ETIME);
	CHECK(mono_ns() - t0 >= 20 * MS);
	CHECK_EQ(dq_reserve_wait(q, &m[16], 0), -ETIME);
	/* Every slot distinct. */
	for (i = 0; i < 16; i++) {
		int j;

		for (j = i + 1; j < 16; j++)
			CHECK(m[i].slot != m[j].slot);
	}
	/* Abort gives the slot back; a stale abort is refused. */
	CHECK_EQ(dq_abort(q, &m[3]), 0);
	CHECK_EQ(dq_abort(q, &m[3]), -EINVAL);
	REQUIRE_EQ(dq_reserve(q, &extra), 0);
	CHECK_EQ(extra.slot, m[3].slot);
	CHECK(extra.gen != m[3].gen);
	CHECK_EQ(dq_reserve(q, &m[16]), -ENOSPC);
	dq_queue_close(q);
}

TEST(commit_validation, 10)
{
	struct dqshim_queue *q = open_user(4, 64, 0);
	struct dqshim_msg m, fake;

	REQUIRE_EQ(dq_reserve(q, &m), 0);
	CHECK_EQ(dq_commit(q, &m, 65, 0, 0), -EMSGSIZE);
	fake = m;
	fake.gen++;
	CHECK_EQ(dq_commit(q, &fake, 8, 0, 0), -EINVAL);
	fake = m;
	fake.slot = 99;
	CHECK_EQ(dq_commit(q, &fake, 8, 0, 0), -EINVAL);
	CHECK_EQ(dq_commit(q, &m, 64, mono_ns() + 10 * MS, 1), 0);
	/* Committed: neither a second commit nor an abort. */
	CHECK_EQ(dq_commit(q, &m, 8, 0, 0), -EINVAL);
	CHECK_EQ(dq_abort(q, &m), -EINVAL);
	/* Not reaped: done refuses it. */
	CHECK_EQ(dq_done(q, m.slot), -EINVAL);
	CHECK_EQ(dq_done(q, 12345), -EINVAL);
	CHECK_EQ(dq_flush(q), 1);
	CHECK_EQ(dq_flush(q), 0);
	dq_queue_close(q);
}

TEST(commit_flush_reap_one, 10)
{
	struct dqshim_queue *q = open_user(8, 256, 0);
	struct dq_reaped r[4];
	struct dqshim_msg m;
	uint64_t due, now;
	int n;

	REQUIRE_EQ(dq_reserve(q, &m), 0);
	memset(m.data, 0xA5, 200);
	due = mono_ns() + 30 * MS;
	REQUIRE_EQ(dq_commit(q, &m, 200, due, 0xfeedULL), 0);
	REQUIRE_EQ(dq_flush(q), 1);
	/* Not due yet. */
	CHECK_EQ(dq_reap(q, r, 4, 0), 0);
	n = dq_reap(q, r, 4, 2000 * MS);
	now = mono_ns();
	REQUIRE_EQ(n, 1);
	CHECK(now >= due, "early by %lld ns", (long long)(due - now));
	CHECK(r[0].release_ns >= due);
	CHECK_EQ(r[0].due_ns, due);
	CHECK_EQ(r[0].user_data, 0xfeed);
	CHECK_EQ(r[0].len, 200);
	CHECK_EQ(r[0].slot, m.slot);
	CHECK_EQ(r[0].handle, m.handle);
	CHECK(r[0].data == m.data);
	CHECK(((unsigned char *)r[0].data)[199] == 0xA5);
	tap_diag("late by %llu us", (unsigned long long)(now - due) / 1000);
	CHECK_EQ(dq_done(q, r[0].slot), 0);
	CHECK_EQ(dq_done(q, r[0].slot), -EINVAL);
	CHECK_EQ(dq_reap(q, r, 4, 0), 0);
	CHECK_EQ(dq_reap(q, r, 0, 0), -EINVAL);
	dq_queue_close(q);
}

TEST(past_due_released_at_once, 10)
{
	struct dqshim_queue *q = open_user(8, 64, 0);
	struct dq_reaped r[8];
	struct dqshim_msg m;
	uint64_t t0;

	REQUIRE_EQ(dq_reserve(q, &m), 0);
	REQUIRE_EQ(dq_commit(q, &m, 0, 0, 7), 0);	/* due at boot */
	REQUIRE_EQ(dq_flush(q), 1);
	t0 = mono_ns();
	REQUIRE_EQ(dq_reap(q, r, 8, 5000 * MS), 1);
	CHECK(mono_ns() - t0 < 2000 * MS);
	CHECK_EQ(r[0].user_data, 7);
	CHECK_EQ(r[0].len, 0);
	dq_queue_close(q);
}

TEST(reap_timeout, 10)
{
	struct dqshim_queue *q = open_user(8, 64, 0);
	struct dq_reaped r[1];
	uint64_t t0 = mono_ns();

	CHECK_EQ(dq_reap(q, r, 1, 0), 0);
	CHECK_EQ(dq_reap(q, r, 1, 50 * MS), -ETIME);
	CHECK(mono_ns() - t0 >= 50 * MS);
	/* A message due after the timeout does not end the wait early. */
	put(q, 1, 5000 * MS);
	REQUIRE_EQ(dq_flush(q), 1);
	t0 = mono_ns();
	CHECK_EQ(dq_reap(q, r, 1, 30 * MS), -ETIME);
	CHECK(mono_ns() - t0 >= 30 * MS);
	dq_queue_close(q);
}

#define N_RANDOM 10000

/* Payload of message @id: the id, then bytes derived from it. */
static void fill_payload(void *data, uint32_t len, uint64_t id)
{
	unsigned char *b = data;
	uint32_t i;

	memcpy(b, &id, sizeof(id));
	for (i = sizeof(id); i < len; i++)
		b[i] = (unsigned char)(id * 31 + i);
}

static bool payload_ok(const void *data, uint32_t len, uint64_t id)
{
	const unsigned char *b = data;
	uint64_t word;
	uint32_t i;

	if (len < sizeof(id))
		return false;
	memcpy(&word, b, sizeof(word));
	if (word != id)
		return false;
	for (i = sizeof(id); i < len; i++)
		if (b[i] != (unsigned char)(id * 31 + i))
			return false;
	return true;
}

/* Commit message @id due at @due (absolute, the test's clock). */
static void put_at(struct dqshim_queue *q, uint64_t id, uint64_t due,
		   uint32_t len)
{
	struct dqshim_msg m;
	int ret;

	REQUIRE_EQ(dq_reserve(q, &m), 0);
	fill_payload(m.data, len, id);
	while ((ret = dq_commit(q, &m, len, due, id)) == -EAGAIN)
		REQUIRE(dq_flush(q) >= 0);
	REQUIRE_EQ(ret, 0);
}

/*
 * 10k random due times in one batch, judged against the test's own table
 * (relmodel: due times it chose, its submission order): every message
 * exactly once, never before its due time on the test's clock, in due
 * order, FIFO among equal due times, payload intact.
 */
TEST(random_10k_exactly_once_in_order, 30)
{
	struct dqshim_queue *q = open_user(N_RANDOM, 64, 16384);
	static struct dq_reaped r[512];
	unsigned int got = 0, corrupt = 0, due_differs = 0;
	uint64_t i, deadline, flushed, base;
	struct rm m;

	REQUIRE_EQ(rm_init(&m, N_RANDOM), 0);
	base = mono_ns();
	for (i = 0; i < N_RANDOM; i++) {
		/* 100 us steps from one base: plenty of equal due times. */
		uint64_t due = base + (rnd() % 3000) * (100 * 1000);

		rm_submit(&m, i, 0, i, due, mono_ns());
		put_at(q, i, due, 64);
	}
	REQUIRE_EQ(dq_flush(q), N_RANDOM);
	flushed = mono_ns();
	for (i = 0; i < N_RANDOM; i++)
		rm_in_engine(&m, i, flushed);

	deadline = mono_ns() + 10000 * MS;
	while (got < N_RANDOM && mono_ns() < deadline) {
		int n = dq_reap(q, r, 512, 1000 * MS), k;
		uint64_t now = mono_ns();

		if (n == -ETIME)
			continue;
		REQUIRE(n > 0, "reap: %d", n);
		for (k = 0; k < n; k++) {
			uint64_t id = r[k].user_data;

			if (!payload_ok(r[k].data, r[k].len, id))
				corrupt++;
			if (rm_known(&m, id) && r[k].due_ns != rm_due(&m, id))
				due_differs++;
			rm_seen(&m, id, now);
			got++;
			REQUIRE_EQ(dq_done(q, r[k].slot), 0);
		}
	}
	rm_finish(&m);
	CHECK_EQ(got, N_RANDOM);
	CHECK_EQ(m.early, 0);
	CHECK_EQ(m.dup + m.unknown, 0);
	CHECK_EQ(m.lost, 0);
	CHECK_EQ(m.order, 0);
	CHECK_EQ(corrupt, 0);
	CHECK_EQ(due_differs, 0);
	if (m.first[0])
		DIAG("first violation: %s", m.first);
	DIAG("10k: max lateness %llu us", (unsigned long long)m.max_late / 1000);
	CHECK_EQ(dq_reap(q, r, 1, 0), 0);
	rm_free(&m);
	dq_queue_close(q);
}

/* dq_now_ns() is CLOCK_MONOTONIC, the clock the tests judge by. */
TEST(clock_is_monotonic, 10)
{
	uint64_t a = mono_ns(), b = dq_now_ns(), c = mono_ns();

	CHECK(a <= b && b <= c, "dq_now_ns %llu not within [%llu, %llu]",
	      (unsigned long long)b, (unsigned long long)a,
	      (unsigned long long)c);
}

/*
 * Three due times (two of them in the same wheel tick), interleaved over
 * several flushes: due order and FIFO ties judged against the test's own
 * table of due times and submission order.
 */
TEST(fifo_ties, 10)
{
	struct dqshim_queue *q = open_user(3000, 64, 256);
	struct dq_reaped r[256];
	uint64_t due[3], i, stamped = 0, t;
	unsigned int got = 0;
	struct rm m;

	REQUIRE_EQ(rm_init(&m, 3000), 0);
	due[0] = mono_ns() + 40 * MS;
	due[1] = due[0];
	due[1] += 5 * MS;
	due[2] = due[0] + 1;		/* 1 ns later: same wheel tick */
	for (i = 0; i < 3000; i++) {
		struct dqshim_msg m1;
		unsigned int g = (unsigned int)(rnd() % 3);
		int ret;

		REQUIRE_EQ(dq_reserve(q, &m1), 0);
		rm_submit(&m, i, 0, i, due[g], mono_ns());
		while ((ret = dq_commit(q, &m1, 0, due[g], i)) == -EAGAIN) {
			REQUIRE(dq_flush(q) >= 0);
			for (t = mono_ns(); stamped < i; stamped++)
				rm_in_engine(&m, stamped, t);
		}
		REQUIRE_EQ(ret, 0);
	}
	REQUIRE(dq_flush(q) >= 0);
	for (t = mono_ns(); stamped < 3000; stamped++)
		rm_in_engine(&m, stamped, t);
	while (got < 3000) {
		int n = dq_reap(q, r, 256, 2000 * MS), k;
		uint64_t now = mono_ns();

		REQUIRE(n > 0, "reap: %d", n);
		for (k = 0; k < n; k++) {
			rm_seen(&m, r[k].user_data, now);
			got++;
			dq_done(q, r[k].slot);
		}
	}
	CHECK(rm_finish(&m) == 0, "%s", m.first);
	CHECK_EQ(m.order, 0);
	rm_free(&m);
	dq_queue_close(q);
}

static int rejects_seen;
static struct dq_reject last_reject;

static void on_reject(void *arg, const struct dq_reject *rej)
{
	(*(int *)arg)++;
	last_reject = *rej;
}

TEST(reject_reported_slot_returned, 10)
{
	struct dq_params p;
	struct dqshim_queue *q;
	struct dq_queue_stats st;
	struct dqshim_msg m, all[4];
	int i;

	dq_params_init(&p);
	p.backend = DQ_BACKEND_USER;
	p.slot_count = 4;
	p.on_reject = on_reject;
	p.reject_arg = &rejects_seen;
	REQUIRE_EQ(dq_queue_open(&p, &q), 0);

	REQUIRE_EQ(dq_reserve(q, &m), 0);
	/* Beyond DQ_MAX_DELAY_NS: the engine refuses it at submit. */
	REQUIRE_EQ(dq_commit_delay(q, &m, 8, DQ_MAX_DELAY_NS + 1000 * MS, 42), 0);
	CHECK_EQ(dq_flush(q), 0);
	CHECK_EQ(rejects_seen, 1);
	CHECK_EQ(last_reject.error, -EOVERFLOW);
	CHECK_EQ(last_reject.reason, DQ_REJ_TIME);
	CHECK_EQ(last_reject.user_data, 42);
	CHECK_EQ(last_reject.slot, m.slot);
	/* The slot is back: all four can be reserved. */
	for (i = 0; i < 4; i++)
		CHECK_EQ(dq_reserve(q, &all[i]), 0);
	REQUIRE_EQ(dq_queue_get_stats(q, &st), 0);
	CHECK_EQ(st.rejected[DQ_REJ_TIME], 1);
	CHECK_EQ(st.submitted, 0);
	dq_queue_close(q);
}

TEST(cancel_answers, 10)
{
	struct dqshim_queue *q = open_user(4, 64, 0);
	struct dq_queue_stats st;
	struct dq_reaped r[4];
	struct dqshim_msg m, all[4];
	uint64_t h, h2;
	int i;

	/* Pending: cancelled, slot free again, never reaped. */
	h = put(q, 1, 50 * MS);
	REQUIRE_EQ(dq_flush(q), 1);
	CHECK_EQ(dq_cancel(q, h), 0);
	CHECK_EQ(dq_cancel(q, h), -EALREADY);
	for (i = 0; i < 4; i++)
		CHECK_EQ(dq_reserve(q, &all[i]), 0);
	for (i = 0; i < 4; i++)
		CHECK_EQ(dq_abort(q, &all[i]), 0);
	CHECK_EQ(dq_reap(q, r, 4, 120 * MS), -ETIME);

	/* Committed but not flushed: cancel flushes first. */
	h = put(q, 2, 1000 * MS);
	CHECK_EQ(dq_cancel(q, h), 0);

	/* Released: -EALREADY, before and after the reap. */
	h = put(q, 3, 10 * MS);
	REQUIRE_EQ(dq_flush(q), 1);
	usleep(30000);
	REQUIRE_EQ(dq_reap(q, r, 4, 1000 * MS), 1);
	CHECK_EQ(r[0].handle, h);
	CHECK_EQ(dq_cancel(q, h), -EALREADY);
	REQUIRE_EQ(dq_done(q, r[0].slot), 0);
	CHECK_EQ(dq_cancel(q, h), -EALREADY);

	/* Unknown handles. */
	CHECK_EQ(dq_cancel(q, DQ_HANDLE(99, 1)), -ENOENT);
	CHECK_EQ(dq_cancel(q, DQ_HANDLE(0, 0xdead)), -ENOENT);
	REQUIRE_EQ(dq_reserve(q, &m), 0);
	CHECK_EQ(dq_cancel(q, m.handle), -ENOENT);	/* never committed */
	CHECK_EQ(dq_abort(q, &m), 0);

	/* Slot reused by a newer message: the old handle is unknown. */
	for (i = 0; i < 4; i++) {
		h2 = put(q, 10 + (uint64_t)i, 1000 * MS);
		REQUIRE_EQ(dq_flush(q), 1);
		if (DQ_HANDLE_SLOT(h2) == DQ_HANDLE_SLOT(h))
			break;
	}
	REQUIRE_EQ(DQ_HANDLE_SLOT(h2), DQ_HANDLE_SLOT(h));
	CHECK_EQ(dq_cancel(q, h), -ENOENT);
	CHECK_EQ(dq_cancel(q, h2), 0);

	REQUIRE_EQ(dq_queue_get_stats(q, &st), 0);
	CHECK_EQ(st.cancelled, 3);
	CHECK_EQ(st.released, 1);
	dq_queue_close(q);
}

TEST(eagain_on_full_batch, 10)
{
	struct dqshim_queue *q = open_user(64, 64, 8);
	struct dqshim_msg m;
	int i;

	for (i = 0; i < 8; i++)
		put(q, (uint64_t)i, 1000 * MS);
	REQUIRE_EQ(dq_reserve(q, &m), 0);
	CHECK_EQ(dq_commit_delay(q, &m, 8, 1000 * MS, 8), -EAGAIN);
	/* The reservation survives -EAGAIN. */
	CHECK_EQ(dq_flush(q), 8);
	CHECK_EQ(dq_commit_delay(q, &m, 8, 1000 * MS, 8), 0);
	CHECK_EQ(dq_flush(q), 1);
	dq_queue_close(q);
}

/* ---- threads ------------------------------------------------------- */

#define NPROD		4
#define PER_PROD	20000
#define THR_SLOTS	4096

struct thr_ctx {
	struct dqshim_queue *q;
	unsigned int id;
	int errors;
};

static void *producer(void *arg)
{
	struct thr_ctx *c = arg;
	uint64_t s = 0x1234567ULL * (c->id + 1);
	unsigned int i, batch = 0;

	for (i = 0; i < PER_PROD; i++) {
		uint64_t id = (uint64_t)c->id * PER_PROD + i;
		struct dqshim_msg m;
		int ret;

		ret = dq_reserve(c->q, &m);
		if (ret == -ENOSPC) {
			dq_flush(c->q);
			ret = dq_reserve_wait(c->q, &m, 5000 * MS);
		}
		if (ret) {
			c->errors++;
			return NULL;
		}
		memcpy(m.data, &id, sizeof(id));
		memset((char *)m.data + 8, (int)(id & 0xff), 56);
		s ^= s << 13;
		s ^= s >> 7;
		s ^= s << 17;
		while ((ret = dq_commit_delay(c->q, &m, 64, s % (100 * MS), id)) ==
		       -EAGAIN)
			dq_flush(c->q);
		if (ret)
			c->errors++;
		if (++batch == 32) {
			if (dq_flush(c->q) < 0)
				c->errors++;
			batch = 0;
		}
	}
	if (dq_flush(c->q) < 0)
		c->errors++;
	return NULL;
}

TEST(threads_producers_one_consumer, 30)
{
	struct dqshim_queue *q = open_user(THR_SLOTS, 64, 1024);
	static unsigned char seen[NPROD * PER_PROD];
	struct thr_ctx ctx[NPROD];
	pthread_t th[NPROD];
	struct dq_reaped r[256];
	unsigned int got = 0, early = 0, dup = 0, corrupt = 0;
	uint64_t deadline = mono_ns() + 25000 * MS;
	int i;

	for (i = 0; i < NPROD; i++) {
		ctx[i].q = q;
		ctx[i].id = (unsigned int)i;
		ctx[i].errors = 0;
		REQUIRE_EQ(pthread_create(&th[i], NULL, producer, &ctx[i]), 0);
	}
	while (got < NPROD * PER_PROD && mono_ns() < deadline) {
		int n = dq_reap(q, r, 256, 200 * MS), k;
		uint64_t now = mono_ns();

		if (n == -ETIME)
			continue;
		REQUIRE(n > 0, "reap: %d", n);
		for (k = 0; k < n; k++) {
			uint64_t id;
			unsigned char *p = r[k].data;

			memcpy(&id, p, sizeof(id));
			if (id != r[k].user_data || p[63] != (id & 0xff) ||
			    r[k].len != 64)
				corrupt++;
			if (now < r[k].due_ns)
				early++;
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
	CHECK_EQ(dq_reap(q, r, 1, 0), 0);
	dq_queue_close(q);
}

struct busy_ctx {
	struct dqshim_queue *q;
	int stop;
};

static void *busy_reaper(void *arg)
{
	struct busy_ctx *c = arg;
	struct dq_reaped r[4];

	while (!__atomic_load_n(&c->stop, __ATOMIC_ACQUIRE))
		dq_reap(c->q, r, 4, 200 * MS);
	return NULL;
}

TEST(reap_single_consumer_ebusy, 10)
{
	struct dqshim_queue *q = open_user(8, 64, 0);
	struct busy_ctx c = { .q = q };
	struct dq_reaped r[4];
	uint64_t deadline;
	pthread_t th;
	int ret = 0;

	/* Another thread sits in dq_reap(): an overlapping call is refused. */
	REQUIRE_EQ(pthread_create(&th, NULL, busy_reaper, &c), 0);
	deadline = mono_ns() + 5000 * MS;
	while (mono_ns() < deadline) {
		ret = dq_reap(q, r, 4, 0);
		if (ret == -EBUSY)
			break;
		CHECK_EQ(ret, 0);
		usleep(5000);
	}
	CHECK_EQ(ret, -EBUSY);
	__atomic_store_n(&c.stop, 1, __ATOMIC_RELEASE);
	pthread_join(th, NULL);
	CHECK_EQ(dq_reap(q, r, 4, 0), 0);
	dq_queue_close(q);
}

struct wake_ctx {
	struct dqshim_queue *q;
	uint64_t returned_at;
	int n;
	uint64_t user_data;
};

static void *waiting_reaper(void *arg)
{
	struct wake_ctx *c = arg;
	struct dq_reaped r[4];

	c->n = dq_reap(c->q, r, 4, -1);
	c->returned_at = mono_ns();
	if (c->n > 0)
		c->user_data = r[0].user_data;
	return NULL;
}

TEST(sleeping_consumer_woken_by_earlier_message, 10)
{
	struct dqshim_queue *q = open_user(8, 64, 0);
	struct wake_ctx c = { .q = q };
	pthread_t th;
	uint64_t t0;

	/* Consumer asleep with a message due in 10 s... */
	put(q, 1, 10000 * MS);
	REQUIRE_EQ(dq_flush(q), 1);
	REQUIRE_EQ(pthread_create(&th, NULL, waiting_reaper, &c), 0);
	usleep(50000);
	/* ...a message due in 30 ms must wake it in time. */
	t0 = mono_ns();
	put(q, 2, 30 * MS);
	REQUIRE_EQ(dq_flush(q), 1);
	pthread_join(th, NULL);
	REQUIRE_EQ(c.n, 1);
	CHECK_EQ(c.user_data, 2);
	CHECK(c.returned_at - t0 >= 30 * MS);
	CHECK(c.returned_at - t0 < 5000 * MS, "took %llu ms",
	      (unsigned long long)(c.returned_at - t0) / MS);

	/* And an empty queue's sleeping consumer too. */
	{
		struct dqshim_queue *q2 = open_user(8, 64, 0);
		struct wake_ctx c2 = { .q = q2 };

		REQUIRE_EQ(pthread_create(&th, NULL, waiting_reaper, &c2), 0);
		usleep(50000);
		t0 = mono_ns();
		put(q2, 5, 20 * MS);
		REQUIRE_EQ(dq_flush(q2), 1);
		pthread_join(th, NULL);
		CHECK_EQ(c2.n, 1);
		CHECK(c2.returned_at - t0 >= 20 * MS);
		dq_queue_close(q2);
	}
	dq_queue_close(q);
}

TEST(zero_copy, 10)
{
	struct dqshim_queue *q = open_user(32, 4096, 0);
	struct dq_reaped r[32];
	struct dq_info info;
	struct dqshim_msg m[32];
	int i, n, got = 0;

	dq_queue_info(q, &info);
	for (i = 0; i < 32; i++) {
		unsigned char *p;
		int j;

		REQUIRE_EQ(dq_reserve(q, &m[i]), 0);
		p = m[i].data;
		CHECK(p >= (unsigned char *)info.arena &&
		      p + m[i].cap <= (unsigned char *)info.arena + info.arena_size);
		CHECK(p == (unsigned char *)info.arena +
		      (size_t)m[i].slot * info.slot_size);
		for (j = 0; j < 4096; j++)
			p[j] = (unsigned char)(i * 7 + j);
		REQUIRE_EQ(dq_commit_delay(q, &m[i], 4096, 5 * MS, (uint64_t)i), 0);
	}
	REQUIRE_EQ(dq_flush(q), 32);
	while (got < 32) {
		n = dq_reap(q, r, 32, 1000 * MS);
		REQUIRE(n > 0);
		for (i = 0; i < n; i++) {
			unsigned char *p = r[i].data;
			unsigned int k = (unsigned int)r[i].user_data, j, bad = 0;

			/* In place: the very bytes the producer wrote. */
			CHECK(p == m[k].data);
			CHECK(p >= (unsigned char *)info.arena &&
			      p + r[i].len <= (unsigned char *)info.arena +
			      info.arena_size);
			for (j = 0; j < 4096; j++)
				bad += p[j] != (unsigned char)(k * 7 + j);
			CHECK_EQ(bad, 0);
			dq_done(q, r[i].slot);
		}
		got += n;
	}
	dq_queue_close(q);
}

TEST(strerror, 5)
{
	CHECK(strstr(dq_strerror(-ENOSPC), "slot") != NULL);
	CHECK(!strcmp(dq_strerror(-ENOSPC), dq_strerror(ENOSPC)));
	CHECK(strstr(dq_strerror(-EAGAIN), "flush") != NULL);
	CHECK(strstr(dq_strerror(-EALREADY), "already") != NULL);
	CHECK(strstr(dq_strerror(-EOVERFLOW), "far") != NULL);
	CHECK(dq_strerror(-ENOMEM) != NULL && *dq_strerror(-ENOMEM));
	CHECK(dq_strerror(0) != NULL);
	CHECK(dq_strerror(-987654) != NULL);
	CHECK(dq_strerror(-987654)[0] != 0);
}

TEST(epoll_fd_readable_when_due, 10)
{
	struct dqshim_queue *q = open_user(8, 64, 0);
	struct epoll_event ev = { .events = EPOLLIN }, out;
	struct dq_reaped r[4];
	uint64_t due, now;
	int ep, n, spurious;

	ep = epoll_create1(EPOLL_CLOEXEC);
	REQUIRE(ep >= 0);
	REQUIRE_EQ(epoll_ctl(ep, EPOLL_CTL_ADD, dq_queue_fd(q), &ev), 0);
	CHECK_EQ(epoll_wait(ep, &out, 1, 0), 0);

	due = mono_ns() + 300 * MS;
	put(q, 1, 300 * MS);
	REQUIRE_EQ(dq_flush(q), 1);
	CHECK_EQ(epoll_wait(ep, &out, 1, 0), 0);	/* not due yet */
	/*
	 * Readable from the due time on.  It may also turn readable earlier,
	 * a few times at most, when the wheel has internal work (a cascade);
	 * a reap then returns nothing and re-arms.
	 */
	for (spurious = 0;; spurious++) {
		n = epoll_wait(ep, &out, 1, 2000);
		REQUIRE_EQ(n, 1);
		CHECK(out.events & EPOLLIN);
		n = dq_reap(q, r, 4, 0);
		if (n)
			break;
		REQUIRE(spurious < 16);
	}
	now = mono_ns();
	CHECK_EQ(n, 1);
	CHECK(now >= due);
	CHECK(now >= r[0].due_ns);
	CHECK(spurious <= 8, "%d early wakeups", spurious);
	tap_diag("epoll: %d wakeup(s) before due, late by %llu us", spurious,
		 (unsigned long long)(now - r[0].due_ns) / 1000);
	dq_done(q, r[0].slot);
	CHECK_EQ(epoll_wait(ep, &out, 1, 0), 0);

	/* Readable once due even if nobody looked in between. */
	put(q, 3, 20 * MS);
	REQUIRE_EQ(dq_flush(q), 1);
	usleep(40000);
	CHECK_EQ(epoll_wait(ep, &out, 1, 0), 1);
	CHECK_EQ(dq_reap(q, r, 4, 0), 1);
	dq_done(q, r[0].slot);
	/* Nothing left: not readable any more. */
	CHECK_EQ(epoll_wait(ep, &out, 1, 0), 0);
	/* Level-triggered while due and unreaped. */
	put(q, 2, 0);
	REQUIRE_EQ(dq_flush(q), 1);
	CHECK_EQ(epoll_wait(ep, &out, 1, 1000), 1);
	CHECK_EQ(epoll_wait(ep, &out, 1, 0), 1);
	CHECK_EQ(dq_reap(q, r, 4, 0), 1);
	CHECK_EQ(epoll_wait(ep, &out, 1, 0), 0);
	close(ep);
	dq_queue_close(q);
}

TEST(prep_helpers_sqe_fields, 5)
{
	struct dqshim_queue *q = open_user(8, 64, 0);
	struct io_uring_sqe sqe, before;
	struct dq_submit s;
	struct dq_wait w = { .min_ready = 3, .timeout_ns = -1 };
	struct dq_cancel c = { .handle = DQ_HANDLE(5, 9) };
	unsigned char *raw = (unsigned char *)&sqe;
	unsigned int i, nonzero = 0;

	/* The generic helper: documented layout, user_data kept. */
	memset(&sqe, 0xff, sizeof(sqe));
	sqe.user_data = 0x1122334455667788ULL;
	REQUIRE_EQ(dq_prep_cmd(&sqe, 42, DQ_URING_CMD_WAIT, &w, sizeof(w)), 0);
	CHECK_EQ(sqe.opcode, IORING_OP_URING_CMD);
	CHECK_EQ(sqe.fd, 42);
	CHECK_EQ(sqe.cmd_op, DQ_URING_CMD_WAIT);
	CHECK_EQ(sqe.__pad1, 0);
	CHECK_EQ(sqe.flags, 0);
	CHECK_EQ(sqe.addr, 0);
	CHECK_EQ(sqe.len, 0);
	CHECK_EQ(sqe.uring_cmd_flags, 0);
	CHECK_EQ(sqe.buf_index, 0);
	CHECK_EQ(sqe.personality, 0);
	CHECK_EQ(sqe.file_index, 0);
	CHECK_EQ(sqe.user_data, 0x1122334455667788ULL);
	CHECK(!memcmp(raw + 48, &w, sizeof(w)));
	/* Nothing else set: bytes outside opcode/fd/cmd_op/user_data/cmd. */
	for (i = 0; i < 64; i++) {
		if (i == 0 || (i >= 4 && i < 12) || (i >= 32 && i < 40) || i >= 48)
			continue;
		nonzero += raw[i] != 0;
	}
	CHECK_EQ(nonzero, 0);

	REQUIRE_EQ(dq_prep_cmd(&sqe, 7, DQ_URING_CMD_CANCEL, &c, sizeof(c)), 0);
	CHECK_EQ(sqe.cmd_op, DQ_URING_CMD_CANCEL);
	CHECK(!memcmp(raw + 48, &c, sizeof(c)));
	CHECK_EQ(dq_prep_cmd(&sqe, 7, DQ_URING_CMD_CANCEL, &c, 17), -EINVAL);
	REQUIRE_EQ(dq_prep_cmd(&sqe, 7, 0x1234, NULL, 0), 0);
	for (i = 48, nonzero = 0; i < 64; i++)
		nonzero += raw[i] != 0;
	CHECK_EQ(nonzero, 0);

	/* Opcodes as the uapi header defines them. */
	CHECK_EQ(DQ_URING_CMD_SUBMIT, _IOWR(DQ_IOC_MAGIC, 0x20, struct dq_uring_submit));
	CHECK_EQ(sizeof(struct dq_uring_submit), 16);
	CHECK_EQ(sizeof(struct dq_wait), 16);
	CHECK_EQ(sizeof(struct dq_cancel), 16);

	/*
	 * The kernel's io_uring takes the SQE as a valid URING_CMD: /dev/null
	 * completes it with 0 (mem.c has a no-op ->uring_cmd) or, on kernels
	 * without that, -EOPNOTSUPP; a malformed SQE (reserved fields set)
	 * would get -EINVAL.
	 */
	{
		struct io_uring ring;
		struct io_uring_cqe *cqe;
		struct io_uring_sqe *rsqe;
		int fd = open("/dev/null", O_RDWR | O_CLOEXEC);

		REQUIRE(fd >= 0);
		if (io_uring_queue_init(4, &ring, 0) == 0) {
			rsqe = io_uring_get_sqe(&ring);
			REQUIRE_EQ(dq_prep_cmd(rsqe, fd, DQ_URING_CMD_WAIT, &w,
					       sizeof(w)), 0);
			io_uring_sqe_set_data64(rsqe, 99);
			REQUIRE_EQ(io_uring_submit_and_wait(&ring, 1), 1);
			REQUIRE_EQ(io_uring_wait_cqe(&ring, &cqe), 0);
			CHECK_EQ(cqe->user_data, 99);
			CHECK(cqe->res == 0 || cqe->res == -EOPNOTSUPP,
			      "res %d", cqe->res);
			io_uring_cqe_seen(&ring, cqe);
			io_uring_queue_exit(&ring);
		} else {
			tap_diag("no io_uring here: SQE not run through the kernel");
		}
		close(fd);
	}

	/* The user backend has no kernel file: refused, SQE untouched. */
	memset(&sqe, 0x5a, sizeof(sqe));
	before = sqe;
	memset(&s, 0, sizeof(s));
	CHECK_EQ(dq_prep_submit(&sqe, q, &s), -EOPNOTSUPP);
	CHECK_EQ(dq_prep_wait(&sqe, q, 1, -1), -EOPNOTSUPP);
	CHECK_EQ(dq_prep_cancel(&sqe, q, 1), -EOPNOTSUPP);
	CHECK(!memcmp(&sqe, &before, sizeof(sqe)));
	dq_queue_close(q);
}

TEST(stats_counters, 10)
{
	struct dqshim_queue *q = open_user(64, 128, 0);
	struct dq_queue_stats st;
	struct dq_reaped r[64];
	int i, got = 0;

	for (i = 0; i < 10; i++)
		put(q, (uint64_t)i, 5 * MS);
	put(q, 99, 10000 * MS);
	REQUIRE_EQ(dq_flush(q), 11);
	REQUIRE_EQ(dq_queue_get_stats(q, &st), 0);
	CHECK_EQ(st.submitted, 11);
	CHECK_EQ(st.pending, 11);
	CHECK_EQ(st.slot_count, 64);
	CHECK_EQ(st.slot_size, 128);
	while (got < 10) {
		int n = dq_reap(q, r, 64, 1000 * MS);

		REQUIRE(n > 0);
		got += n;
	}
	REQUIRE_EQ(dq_queue_get_stats(q, &st), 0);
	CHECK_EQ(st.released, 10);
	CHECK_EQ(st.pending, 1);
	CHECK(st.late_max_ns > 0);
	CHECK(st.late_sum_ns >= st.late_max_ns);
	dq_queue_close(q);	/* with a message still pending */
}

TAP_MAIN()
