// SPDX-License-Identifier: LGPL-2.1 OR MIT
/*
 * libdqshim's contract, one set of cases for every backend (contract.h):
 * one message end to end, batching and -EAGAIN, 10k random due times
 * exactly once in order, FIFO ties, reap timeouts, parked and woken
 * consumers, rejects, cancel answers, producer threads, zero copy, the
 * pollable fd, and a tracked message redelivered while still held (then
 * finished, or cancelled or replaced before it is reaped again).
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "contract.h"
#include "relmodel.h"
#include "tap.h"

uint64_t contract_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

struct dqshim_queue *contract_open_params(enum dq_backend backend,
					  enum dq_path path,
					  struct dq_params *p)
{
	struct dqshim_queue *q = NULL;
	struct dq_info info = { .sz = sizeof(info) };
	int ret;

	if (backend == DQ_BACKEND_KERNEL && access("/dev/dq", F_OK))
		SKIP("no /dev/dq (dq.ko not loaded)");
	p->backend = backend;
	if (backend == DQ_BACKEND_KERNEL && path == DQ_PATH_IOCTL)
		p->flags |= DQ_OPEN_F_IOCTL;
	ret = dq_queue_open(p, &q);
	if (ret) {
		FAIL("dq_queue_open(%s): %s", dq_backend_name(backend),
		     dq_strerror(ret));
		tap_abort();
	}
	dq_queue_info(q, &info);
	REQUIRE_EQ(info.backend, backend);
	if (path == DQ_PATH_URING && info.path != DQ_PATH_URING) {
		CHECK(!(info.features & DQ_FEAT_URING_CMD),
		      "kernel has DQ_FEAT_URING_CMD but the probe fell back");
		dq_queue_close(q);
		SKIP("kernel takes no dq uring commands: ioctl path only");
	}
	REQUIRE_EQ(info.path, path);
	return q;
}

struct dqshim_queue *contract_open(const struct contract_backend *b,
				   uint32_t slots, uint32_t size,
				   uint32_t submit_entries, dq_reject_fn fn,
				   void *arg)
{
	struct dq_params p;

	dq_params_init(&p);
	p.slot_count = slots;
	p.slot_size = size;
	p.submit_entries = submit_entries;
	p.on_reject = fn;
	p.reject_arg = arg;
	return contract_open_params(b->backend, b->path, &p);
}

uint64_t contract_put(struct dqshim_queue *q, uint64_t id, uint64_t delay_ns)
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

static uint64_t rng_state = 0x243F6A8885A308D3ULL;

static uint64_t rnd(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

/* Payload of message @id: the id, then bytes derived from it. */
static void fill_payload(void *data, uint32_t len, uint64_t id)
{
	unsigned char *p = data;
	uint32_t i;

	memcpy(p, &id, sizeof(id));
	for (i = sizeof(id); i < len; i++)
		p[i] = (unsigned char)(id * 31 + i);
}

static bool payload_ok(const void *data, uint32_t len, uint64_t id)
{
	const unsigned char *p = data;
	uint64_t word;
	uint32_t i;

	if (len < sizeof(id))
		return false;
	memcpy(&word, p, sizeof(word));
	if (word != id)
		return false;
	for (i = sizeof(id); i < len; i++)
		if (p[i] != (unsigned char)(id * 31 + i))
			return false;
	return true;
}

/* One message end to end: not before its due time, intact, in place. */
static void c_one_message(void *arg)
{
	struct dqshim_queue *q = contract_open(arg, 8, 256, 0, NULL, NULL);
	struct dq_reaped r[4], other;
	struct dqshim_msg m;
	uint64_t due, now;

	REQUIRE_EQ(dq_reserve(q, &m), 0);
	memset(m.data, 0xA5, 200);
	due = contract_now() + 100 * MS;
	REQUIRE_EQ(dq_commit(q, &m, 200, due, 0xfeedULL), 0);
	REQUIRE_EQ(dq_flush(q), 1);
	CHECK_EQ(dq_reap(q, r, 4, 0), 0);		/* not due yet */
	REQUIRE_EQ(dq_reap(q, r, 4, 5000 * MS), 1);
	now = contract_now();
	CHECK(now >= due, "early by %lld ns", (long long)(due - now));
	CHECK(r[0].release_ns >= due);
	CHECK_EQ(r[0].due_ns, due);
	CHECK_EQ(r[0].user_data, 0xfeed);
	CHECK_EQ(r[0].len, 200);
	CHECK_EQ(r[0].slot, m.slot);
	CHECK_EQ(r[0].handle, m.handle);
	CHECK(r[0].data == m.data);
	CHECK(((unsigned char *)r[0].data)[199] == 0xA5);
	tap_diag("late by %llu us (engine %llu us)",
		 (unsigned long long)(now - due) / 1000,
		 (unsigned long long)(r[0].release_ns - due) / 1000);
	/* dq_finish_reaped(): untracked, DELIVERED only, this message only. */
	other = r[0];
	other.handle = DQ_HANDLE(r[0].slot, DQ_HANDLE_GEN(r[0].handle) + 1);
	CHECK_EQ(dq_finish_reaped(q, &r[0], DQ_DONE_FAILED), -EOPNOTSUPP);
	CHECK_EQ(dq_finish_reaped(q, &other, DQ_DONE_DELIVERED), -ENOENT);
	CHECK_EQ(dq_finish_reaped(q, NULL, DQ_DONE_DELIVERED), -EINVAL);
	CHECK_EQ(dq_done(q, r[0].slot), 0);
	CHECK_EQ(dq_done(q, r[0].slot), -EINVAL);
	CHECK_EQ(dq_finish_reaped(q, &r[0], DQ_DONE_DELIVERED), -EINVAL);
	CHECK_EQ(dq_reap(q, r, 4, 0), 0);
	CHECK_EQ(dq_reap(q, r, 0, 0), -EINVAL);
	dq_queue_close(q);
}

/*
 * Batching: one flush carries a full submit ring; a full ring says
 * -EAGAIN and the reservation survives it.
 */
static void c_batching(void *arg)
{
	struct dqshim_queue *q = contract_open(arg, 4096, 64, 1024, NULL, NULL);
	struct dq_queue_stats st;
	struct dq_reaped r[256];
	struct dqshim_msg m;
	unsigned int got = 0;
	uint64_t i;

	for (i = 0; i < 1024; i++)
		contract_put(q, i, 50 * MS + (i % 7) * MS);
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

#define N_RANDOM 10000

/*
 * 10k random due times (500 us steps from one base, so many equal ones)
 * in one batch, judged against the test's own table (relmodel): every
 * message exactly once, never before its due time on the test's clock,
 * in due order, FIFO among equal due times, payload intact.
 */
static void c_random_10k_in_order(void *arg)
{
	struct dqshim_queue *q = contract_open(arg, N_RANDOM, 64, 16384,
					       NULL, NULL);
	static struct dq_reaped r[512];
	unsigned int got = 0, corrupt = 0, due_differs = 0;
	uint64_t deadline, base, flushed, i;
	struct rm m;

	REQUIRE_EQ(rm_init(&m, N_RANDOM), 0);
	base = contract_now();
	for (i = 0; i < N_RANDOM; i++) {
		uint64_t due = base + (rnd() % 1000) * (500 * 1000);
		struct dqshim_msg msg;
		int ret;

		rm_submit(&m, i, 0, i, due, contract_now());
		REQUIRE_EQ(dq_reserve(q, &msg), 0);
		fill_payload(msg.data, 64, i);
		while ((ret = dq_commit(q, &msg, 64, due, i)) == -EAGAIN)
			REQUIRE(dq_flush(q) >= 0);
		REQUIRE_EQ(ret, 0);
	}
	REQUIRE_EQ(dq_flush(q), N_RANDOM);
	flushed = contract_now();
	for (i = 0; i < N_RANDOM; i++)
		rm_in_engine(&m, i, flushed);
	deadline = contract_now() + 25000 * MS;
	while (got < N_RANDOM && contract_now() < deadline) {
		int n = dq_reap(q, r, 512, 1000 * MS), k;
		uint64_t now = contract_now();

		if (n == -ETIME)
			continue;
		REQUIRE(n > 0, "reap: %d", n);
		for (k = 0; k < n; k++) {
			uint64_t id = r[k].user_data;

			corrupt += !payload_ok(r[k].data, r[k].len, id);
			due_differs += rm_known(&m, id) &&
				       r[k].due_ns != rm_due(&m, id);
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
		tap_diag("first violation: %s", m.first);
	tap_diag("%u msgs, max lateness %llu us", got,
		 (unsigned long long)m.max_late / 1000);
	CHECK_EQ(dq_reap(q, r, 1, 0), 0);
	rm_free(&m);
	dq_queue_close(q);
}

/*
 * Three due times (two of them 1 ns apart, in the same wheel tick),
 * interleaved over several flushes: due order and FIFO ties judged
 * against the test's own table of due times and submission order.
 */
static void c_fifo_ties(void *arg)
{
	struct dqshim_queue *q = contract_open(arg, 3000, 64, 256, NULL, NULL);
	struct dq_reaped r[256];
	uint64_t due[3], i, stamped = 0, t;
	unsigned int got = 0;
	struct rm m;

	REQUIRE_EQ(rm_init(&m, 3000), 0);
	due[0] = contract_now() + 200 * MS;
	due[1] = due[0] + 5 * MS;
	due[2] = due[0] + 1;
	for (i = 0; i < 3000; i++) {
		unsigned int g = (unsigned int)(rnd() % 3);
		struct dqshim_msg msg;
		int ret;

		REQUIRE_EQ(dq_reserve(q, &msg), 0);
		rm_submit(&m, i, 0, i, due[g], contract_now());
		while ((ret = dq_commit(q, &msg, 0, due[g], i)) == -EAGAIN) {
			REQUIRE(dq_flush(q) >= 0);
			for (t = contract_now(); stamped < i; stamped++)
				rm_in_engine(&m, stamped, t);
		}
		REQUIRE_EQ(ret, 0);
	}
	REQUIRE(dq_flush(q) >= 0);
	for (t = contract_now(); stamped < 3000; stamped++)
		rm_in_engine(&m, stamped, t);
	while (got < 3000) {
		int n = dq_reap(q, r, 256, 10000 * MS), k;
		uint64_t now = contract_now();

		REQUIRE(n > 0, "reap: %d", n);
		for (k = 0; k < n; k++) {
			rm_seen(&m, r[k].user_data, now);
			got++;
			dq_done(q, r[k].slot);
		}
	}
	CHECK(rm_finish(&m) == 0, "%s", m.first);
	CHECK_EQ(m.order, 0);
	CHECK_EQ(m.early, 0);
	rm_free(&m);
	dq_queue_close(q);
}

/* Reap timeouts: -ETIME after the timeout, never ended early by a
 * message due later than it. */
static void c_timeouts(void *arg)
{
	struct dqshim_queue *q = contract_open(arg, 8, 64, 0, NULL, NULL);
	struct dq_reaped r[4];
	uint64_t t0 = contract_now();

	CHECK_EQ(dq_reap(q, r, 4, 0), 0);
	CHECK_EQ(dq_reap(q, r, 4, 100 * MS), -ETIME);
	CHECK(contract_now() - t0 >= 100 * MS);
	contract_put(q, 1, 2000 * MS);
	REQUIRE_EQ(dq_flush(q), 1);
	t0 = contract_now();
	CHECK_EQ(dq_reap(q, r, 4, 200 * MS), -ETIME);
	CHECK(contract_now() - t0 >= 200 * MS);
	CHECK_EQ(dq_reap(q, r, 4, 5000 * MS), 1);
	CHECK_EQ(r[0].user_data, 1);
	dq_queue_close(q);
}

/*
 * Whether a parked WAIT of @b ends at DQ_URING_MAX_PARK_NS: only over
 * io_uring on a kernel before 6.7, which has no cancel hook for a parked
 * command (uapi dq.h; dq.ko's DQ_HAVE_URING_CANCEL follows the same
 * version).  An unreadable version counts as bounded.
 */
static bool park_bounded(const struct tb *b)
{
	struct utsname u;
	int maj = 0, min = 0;

	if (b->backend != DQ_BACKEND_KERNEL || b->path != DQ_PATH_URING)
		return false;
	if (uname(&u) || sscanf(u.release, "%d.%d", &maj, &min) != 2)
		return true;
	return maj < 6 || (maj == 6 && min < 7);
}

/*
 * A wait longer than the kernel's park bound is re-issued, not failed.
 * Where there is no bound a wait is one call however long it is (the
 * timeouts case covers that): the 5.7 s would prove nothing more there.
 */
static void c_wait_beyond_park_bound(void *arg)
{
	struct dqshim_queue *q;
	uint64_t delay = DQ_URING_MAX_PARK_NS + 700 * MS;
	struct dq_reaped r[4];
	uint64_t due;

	if (!park_bounded(arg))
		SKIP("no park bound on this path and kernel (io_uring before 6.7 only)");
	q = contract_open(arg, 8, 64, 0, NULL, NULL);
	due = contract_now() + delay;
	contract_put(q, 1, delay);
	REQUIRE_EQ(dq_flush(q), 1);
	REQUIRE_EQ(dq_reap(q, r, 4, (int64_t)(delay + 8000 * MS)), 1);
	CHECK(contract_now() >= due);
	dq_queue_close(q);
}

struct wake_ctx {
	struct dqshim_queue *q;
	int n;
	uint64_t returned_at;
	struct dq_reaped r[4];
};

static void *waiting_reaper(void *arg)
{
	struct wake_ctx *c = arg;

	c->n = dq_reap(c->q, c->r, 4, -1);
	c->returned_at = contract_now();
	return NULL;
}

/* A consumer parked on an empty queue is woken by the release. */
static void c_parked_wait(void *arg)
{
	struct dqshim_queue *q = contract_open(arg, 8, 64, 0, NULL, NULL);
	struct wake_ctx c = { .q = q };
	pthread_t th;
	uint64_t due;

	REQUIRE_EQ(pthread_create(&th, NULL, waiting_reaper, &c), 0);
	usleep(200000);			/* let it park */
	due = contract_now() + 300 * MS;
	contract_put(q, 5, 300 * MS);
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

/*
 * A consumer asleep until a message due in 10 s is woken in time by a
 * message due in 100 ms that arrives while it sleeps.
 */
static void c_woken_by_earlier_message(void *arg)
{
	struct dqshim_queue *q = contract_open(arg, 8, 64, 0, NULL, NULL);
	struct wake_ctx c = { .q = q };
	pthread_t th;
	uint64_t t0;

	contract_put(q, 1, 10000 * MS);
	REQUIRE_EQ(dq_flush(q), 1);
	REQUIRE_EQ(pthread_create(&th, NULL, waiting_reaper, &c), 0);
	usleep(100000);
	t0 = contract_now();
	contract_put(q, 2, 100 * MS);
	REQUIRE_EQ(dq_flush(q), 1);
	pthread_join(th, NULL);
	REQUIRE_EQ(c.n, 1);
	CHECK_EQ(c.r[0].user_data, 2);
	CHECK(c.returned_at - t0 >= 100 * MS);
	CHECK(c.returned_at - t0 < 5000 * MS, "took %llu ms",
	      (unsigned long long)(c.returned_at - t0) / MS);
	dq_queue_close(q);
}

struct reject_seen {
	int count;
	struct dq_reject last;
};

static void on_reject(void *arg, const struct dq_reject *rej)
{
	struct reject_seen *s = arg;

	s->count++;
	s->last = *rej;
}

/*
 * dq_flush_reap(), one thread producing and consuming: what it commits is
 * submitted by the call itself (one already due comes back from the same
 * call), the rest comes in order and not early from later calls with
 * nothing to flush; a reject of its flush is reported; the timeout holds.
 *
 * The schedule's gaps are margins for a loaded host (an emulated VM's
 * wake-ups are tens of ms late at load 8, dq_timing.c): the first call,
 * no sleep in it, must return before message 1 is due (600 ms), and
 * after message 1 the two timed-out calls (20 + 100 ms) must end before
 * message 2 is due (600 ms later: 480 ms to spare).  The old 150/300 ms
 * left 30 ms for the latter: a wake-up 40 ms late for message 1 made the
 * 100 ms call return message 2 instead of -ETIME.
 */
static void c_flush_reap(void *arg)
{
	struct reject_seen seen = { 0 };
	struct dqshim_queue *q = contract_open(arg, 8, 64, 0, on_reject, &seen);
	struct dq_queue_stats st;
	struct dq_reaped r[8];
	struct dqshim_msg m;
	uint64_t t0, due1, due2;
	int n;

	t0 = contract_now();
	due1 = t0 + 600 * MS;
	due2 = t0 + 1200 * MS;
	contract_put(q, 2, 1200 * MS);
	contract_put(q, 1, 600 * MS);
	contract_put(q, 0, 0);
	REQUIRE_EQ(dq_reserve(q, &m), 0);
	/* Beyond DQ_MAX_DELAY_NS: the engine refuses it at submit. */
	REQUIRE_EQ(dq_commit_delay(q, &m, 8, DQ_MAX_DELAY_NS + 1000 * MS, 42), 0);
	/* Nothing flushed before: this call submits all four. */
	n = dq_flush_reap(q, r, 8, 5000 * MS);
	REQUIRE_EQ(n, 1);
	CHECK_EQ(r[0].user_data, 0);
	CHECK(contract_now() - t0 < 600 * MS, "the due one took %llu ms",
	      (unsigned long long)(contract_now() - t0) / MS);
	CHECK_EQ(seen.count, 1);
	CHECK_EQ(seen.last.user_data, 42);
	CHECK_EQ(seen.last.reason, DQ_REJ_TIME);
	REQUIRE_EQ(dq_queue_get_stats(q, &st), 0);
	CHECK_EQ(st.submitted, 3);
	CHECK_EQ(dq_done(q, r[0].slot), 0);
	REQUIRE_EQ(dq_flush_reap(q, r, 8, 5000 * MS), 1);
	CHECK_EQ(r[0].user_data, 1);
	CHECK(contract_now() >= due1, "early");
	CHECK_EQ(dq_done(q, r[0].slot), 0);
	/* A timeout shorter than the wait: -ETIME, not early. */
	t0 = contract_now();
	CHECK_EQ(dq_flush_reap(q, r, 8, 20 * MS), -ETIME);
	CHECK(contract_now() - t0 >= 20 * MS, "-ETIME after %llu us",
	      (unsigned long long)(contract_now() - t0) / 1000);
	/*
	 * The same with something to flush (the kernel backend's linked
	 * SUBMIT and WAIT): the message is submitted, -ETIME not early.
	 */
	contract_put(q, 3, 5000 * MS);
	t0 = contract_now();
	CHECK_EQ(dq_flush_reap(q, r, 8, 100 * MS), -ETIME);
	CHECK(contract_now() - t0 >= 100 * MS, "-ETIME after %llu us",
	      (unsigned long long)(contract_now() - t0) / 1000);
	REQUIRE_EQ(dq_queue_get_stats(q, &st), 0);
	CHECK_EQ(st.submitted, 4);
	REQUIRE_EQ(dq_flush_reap(q, r, 8, 5000 * MS), 1);
	CHECK_EQ(r[0].user_data, 2);
	CHECK(contract_now() >= due2, "early");
	CHECK_EQ(dq_done(q, r[0].slot), 0);
	CHECK_EQ(dq_flush_reap(q, r, 8, 0), 0);
	CHECK_EQ(dq_flush_reap(q, r, 0, 0), -EINVAL);
	/* Every slot back: the reject's and the three delivered. */
	REQUIRE_EQ(dq_queue_get_stats(q, &st), 0);
	CHECK_EQ(st.released, 3);
	dq_queue_close(q);
}

/* A message the engine refuses is reported and its slot comes back. */
static void c_reject_reported(void *arg)
{
	struct reject_seen seen = { 0 };
	struct dqshim_queue *q = contract_open(arg, 4, 64, 0, on_reject, &seen);
	struct dq_queue_stats st;
	struct dqshim_msg m, all[4];
	int i;

	REQUIRE_EQ(dq_reserve(q, &m), 0);
	/* Beyond DQ_MAX_DELAY_NS: refused at submit. */
	REQUIRE_EQ(dq_commit_delay(q, &m, 8, DQ_MAX_DELAY_NS + 1000 * MS, 42), 0);
	CHECK_EQ(dq_flush(q), 0);
	CHECK_EQ(seen.count, 1);
	CHECK_EQ(seen.last.error, -EOVERFLOW);
	CHECK_EQ(seen.last.reason, DQ_REJ_TIME);
	CHECK_EQ(seen.last.user_data, 42);
	CHECK_EQ(seen.last.slot, m.slot);
	for (i = 0; i < 4; i++)
		CHECK_EQ(dq_reserve(q, &all[i]), 0);
	REQUIRE_EQ(dq_queue_get_stats(q, &st), 0);
	CHECK_EQ(st.rejected[DQ_REJ_TIME], 1);
	CHECK_EQ(st.submitted, 0);
	dq_queue_close(q);
}

/* Every answer of dq_cancel(): pending, unflushed, released, unknown. */
static void c_cancel_answers(void *arg)
{
	struct dqshim_queue *q = contract_open(arg, 4, 64, 0, NULL, NULL);
	struct dq_queue_stats st;
	struct dq_reaped r[4];
	struct dqshim_msg m, all[4];
	uint64_t h, h2 = 0;
	int i;

	/* Pending: cancelled, slot free again, never released. */
	h = contract_put(q, 1, 1000 * MS);
	REQUIRE_EQ(dq_flush(q), 1);
	CHECK_EQ(dq_cancel(q, h), 0);
	CHECK_EQ(dq_cancel(q, h), -EALREADY);
	for (i = 0; i < 4; i++)
		CHECK_EQ(dq_reserve(q, &all[i]), 0);
	for (i = 0; i < 4; i++)
		CHECK_EQ(dq_abort(q, &all[i]), 0);
	CHECK_EQ(dq_reap(q, r, 4, 1500 * MS), -ETIME);

	/* Committed but not flushed: cancel flushes first. */
	h = contract_put(q, 2, 5000 * MS);
	CHECK_EQ(dq_cancel(q, h), 0);

	/* Released: -EALREADY, before and after the done. */
	h = contract_put(q, 3, 20 * MS);
	REQUIRE_EQ(dq_flush(q), 1);
	REQUIRE_EQ(dq_reap(q, r, 4, 5000 * MS), 1);
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
		h2 = contract_put(q, 10 + (uint64_t)i, 5000 * MS);
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

#define NPROD	4

struct prod_ctx {
	struct dqshim_queue *q;
	unsigned int id, count;
	int errors;
};

static void *producer(void *arg)
{
	struct prod_ctx *c = arg;
	uint64_t s = 0x9E3779B97F4A7C15ULL * (c->id + 1);
	unsigned int i;

	for (i = 0; i < c->count; i++) {
		uint64_t id = (uint64_t)c->id * c->count + i;
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
		fill_payload(m.data, 64, id);
		s ^= s << 13;
		s ^= s >> 7;
		s ^= s << 17;
		while ((ret = dq_commit_delay(c->q, &m, 64, s % (200 * MS), id)) ==
		       -EAGAIN)
			dq_flush(c->q);
		c->errors += ret != 0;
		if (i % 32 == 31 && dq_flush(c->q) < 0)
			c->errors++;
	}
	if (dq_flush(c->q) < 0)
		c->errors++;
	return NULL;
}

/* Four producer threads, one consumer: exactly once, never early. */
static void c_threads(void *arg)
{
	const struct contract_backend *b = arg;
	struct dqshim_queue *q = contract_open(b, 2048, 64, 256, NULL, NULL);
	unsigned int total = NPROD * b->per_producer;
	unsigned int got = 0, early = 0, dup = 0, corrupt = 0;
	uint64_t deadline = contract_now() + 25000 * MS;
	unsigned char *seen = calloc(total, 1);
	struct prod_ctx ctx[NPROD];
	pthread_t th[NPROD];
	struct dq_reaped r[256];
	int i;

	REQUIRE(seen != NULL);
	for (i = 0; i < NPROD; i++) {
		ctx[i] = (struct prod_ctx){ .q = q, .id = (unsigned int)i,
					    .count = b->per_producer };
		REQUIRE_EQ(pthread_create(&th[i], NULL, producer, &ctx[i]), 0);
	}
	while (got < total && contract_now() < deadline) {
		int n = dq_reap(q, r, 256, 500 * MS), k;
		uint64_t now = contract_now();

		if (n == -ETIME)
			continue;
		REQUIRE(n > 0, "reap: %d", n);
		for (k = 0; k < n; k++) {
			uint64_t id = r[k].user_data;

			corrupt += !payload_ok(r[k].data, r[k].len, id) ||
				   r[k].len != 64;
			early += now < r[k].due_ns;
			if (id >= total || seen[id]++)
				dup++;
			got++;
			dq_done(q, r[k].slot);
		}
	}
	for (i = 0; i < NPROD; i++) {
		pthread_join(th[i], NULL);
		CHECK_EQ(ctx[i].errors, 0);
	}
	CHECK_EQ(got, total);
	CHECK_EQ(early, 0);
	CHECK_EQ(dup, 0);
	CHECK_EQ(corrupt, 0);
	CHECK_EQ(dq_reap(q, r, 1, 0), 0);
	free(seen);
	dq_queue_close(q);
}

/* The payload the consumer reads is the producer's, in the shared arena. */
static void c_zero_copy(void *arg)
{
	struct dqshim_queue *q = contract_open(arg, 16, 4096, 0, NULL, NULL);
	struct dq_reaped r[16];
	struct dqshim_msg m[16];
	struct dq_info info = { .sz = sizeof(info) };
	unsigned char *arena;
	int i, got = 0;

	dq_queue_info(q, &info);
	arena = info.arena;
	for (i = 0; i < 16; i++) {
		unsigned char *p;
		int j;

		REQUIRE_EQ(dq_reserve(q, &m[i]), 0);
		p = m[i].data;
		CHECK(p >= arena && p + m[i].cap <= arena + info.arena_size);
		CHECK(p == arena + (size_t)m[i].slot * info.slot_size);
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

			REQUIRE(k < 16);
			CHECK(p == m[k].data);
			CHECK(p >= arena && p + r[i].len <= arena + info.arena_size);
			for (j = 0; j < 4096; j++)
				bad += p[j] != (unsigned char)(k * 13 + j);
			CHECK_EQ(bad, 0);
			dq_done(q, r[i].slot);
		}
		got += n;
	}
	dq_queue_close(q);
}

/*
 * DQ_OPEN_F_SLOT_ALIGN8: slots of 8-byte multiples, back to back.  Every
 * slot is filled to its last byte, so a slot that overlapped its
 * neighbour, or an offset still computed with the 64-byte rounding,
 * corrupts a payload; 500-byte slots of 504 bytes straddle pages.
 */
static void c_slot_align8(void *arg)
{
	const struct contract_backend *b = arg;
	enum { N = 64, SIZE = 500, ALIGNED = 504 };
	long page = sysconf(_SC_PAGESIZE);
	struct dqshim_msg m[N];
	struct dq_reaped r[N];
	struct dqshim_queue *q;
	struct dq_params p;
	struct dq_info info = { .sz = sizeof(info) };
	int i, got = 0, straddle = 0;
	bool seen[N] = { false };

	/* Without the flag: the 64-byte rounding, unchanged. */
	q = contract_open(b, N, SIZE, 0, NULL, NULL);
	dq_queue_info(q, &info);
	CHECK_EQ(info.slot_size, 512);
	dq_queue_close(q);

	dq_params_init(&p);
	p.slot_count = N;
	p.slot_size = SIZE;
	p.flags = DQ_OPEN_F_SLOT_ALIGN8;
	q = contract_open_params(b->backend, b->path, &p);
	dq_queue_info(q, &info);
	REQUIRE(info.features & DQ_FEAT_SLOT_ALIGN8);
	CHECK_EQ(info.slot_size, ALIGNED);
	CHECK_EQ(info.arena_size,
		 ((uint64_t)N * ALIGNED + page - 1) / page * page);
	for (i = 0; i < N; i++) {
		unsigned char *d;

		REQUIRE_EQ(dq_reserve(q, &m[i]), 0);
		d = m[i].data;
		CHECK_EQ(m[i].cap, ALIGNED);
		CHECK(d == (unsigned char *)info.arena +
			   (size_t)m[i].slot * ALIGNED);
		CHECK_EQ((uintptr_t)d % 8, 0);
		straddle += ((uintptr_t)d / page) !=
			    ((uintptr_t)(d + ALIGNED - 1) / page);
		fill_payload(d, ALIGNED, (uint64_t)i);
	}
	CHECK(straddle > 0, "no slot straddles a page");
	/* Committed last first: released in the other order. */
	for (i = N - 1; i >= 0; i--) {
		int ret = dq_commit_delay(q, &m[i], ALIGNED,
					  (uint64_t)(N - i) * MS, (uint64_t)i);

		if (ret == -EAGAIN) {
			REQUIRE(dq_flush(q) >= 0);
			ret = dq_commit_delay(q, &m[i], ALIGNED,
					      (uint64_t)(N - i) * MS,
					      (uint64_t)i);
		}
		REQUIRE_EQ(ret, 0);
	}
	REQUIRE(dq_flush(q) >= 0);
	while (got < N) {
		int n = dq_reap(q, r, N, 5000 * MS);

		REQUIRE(n > 0);
		for (i = 0; i < n; i++) {
			uint64_t id = r[i].user_data;

			REQUIRE(id < N && !seen[id]);
			seen[id] = true;
			CHECK_EQ(r[i].len, ALIGNED);
			CHECK(r[i].data == m[id].data);
			CHECK(payload_ok(r[i].data, r[i].len, id),
			      "payload %llu damaged", (unsigned long long)id);
		}
		/* Freed only after every payload of the batch was checked. */
		for (i = 0; i < n; i++)
			dq_done(q, r[i].slot);
		got += n;
	}
	dq_queue_close(q);

	/* Sizes that are already multiples of 8 stay; 65 takes 72. */
	dq_params_init(&p);
	p.slot_count = 4;
	p.slot_size = 65;
	p.flags = DQ_OPEN_F_SLOT_ALIGN8;
	q = contract_open_params(b->backend, b->path, &p);
	dq_queue_info(q, &info);
	CHECK_EQ(info.slot_size, 72);
	dq_queue_close(q);
	p.slot_size = 64;
	p.flags = DQ_OPEN_F_SLOT_ALIGN8;
	q = contract_open_params(b->backend, b->path, &p);
	dq_queue_info(q, &info);
	CHECK_EQ(info.slot_size, 64);
	dq_queue_close(q);
}

/* The queue's fd is readable when a message is due, level-triggered. */
static void c_epoll(void *arg)
{
	struct dqshim_queue *q = contract_open(arg, 8, 64, 0, NULL, NULL);
	struct epoll_event ev = { .events = EPOLLIN }, out;
	struct dq_reaped r[4];
	int ep, n, spurious;
	uint64_t due, now;

	ep = epoll_create1(EPOLL_CLOEXEC);
	REQUIRE(ep >= 0);
	REQUIRE_EQ(epoll_ctl(ep, EPOLL_CTL_ADD, dq_queue_fd(q), &ev), 0);
	CHECK_EQ(epoll_wait(ep, &out, 1, 0), 0);

	due = contract_now() + 300 * MS;
	contract_put(q, 1, 300 * MS);
	REQUIRE_EQ(dq_flush(q), 1);
	CHECK_EQ(epoll_wait(ep, &out, 1, 0), 0);	/* not due yet */
	/*
	 * Readable from the due time on.  The user engine may turn readable
	 * earlier, a few times at most, when its wheel has internal work (a
	 * cascade); a reap then returns nothing and re-arms.
	 */
	for (spurious = 0;; spurious++) {
		n = epoll_wait(ep, &out, 1, 5000);
		REQUIRE_EQ(n, 1);
		CHECK(out.events & EPOLLIN);
		n = dq_reap(q, r, 4, 0);
		if (n)
			break;
		REQUIRE(spurious < 16);
	}
	now = contract_now();
	CHECK_EQ(n, 1);
	CHECK(now >= due);
	CHECK(spurious <= 8, "%d early wakeups", spurious);
	tap_diag("epoll: %d wakeup(s) before due, late by %llu us", spurious,
		 (unsigned long long)(now - due) / 1000);
	dq_done(q, r[0].slot);
	CHECK_EQ(epoll_wait(ep, &out, 1, 0), 0);

	/* Readable once due even if nobody looked in between. */
	contract_put(q, 3, 20 * MS);
	REQUIRE_EQ(dq_flush(q), 1);
	usleep(500000);
	CHECK_EQ(epoll_wait(ep, &out, 1, 0), 1);
	CHECK_EQ(dq_reap(q, r, 4, 0), 1);
	dq_done(q, r[0].slot);
	CHECK_EQ(epoll_wait(ep, &out, 1, 0), 0);	/* nothing left */
	/* Level-triggered while due and unreaped. */
	contract_put(q, 2, 0);
	REQUIRE_EQ(dq_flush(q), 1);
	CHECK_EQ(epoll_wait(ep, &out, 1, 5000), 1);
	CHECK_EQ(epoll_wait(ep, &out, 1, 0), 1);
	CHECK_EQ(dq_reap(q, r, 4, 0), 1);
	CHECK_EQ(epoll_wait(ep, &out, 1, 0), 0);
	close(ep);
	dq_queue_close(q);
}

/*
 * A visibility timeout redelivers a message the consumer still holds
 * (reaped, not finished).  The library must name the newest delivery:
 * dq_done()/dq_finish() by slot finish it, and the message never comes
 * back; a finish naming the older delivery (dq_finish_reaped()) is
 * refused with -ESTALE and finishes nothing.  Deterministic: the case
 * waits for the redelivery itself, in a blocking dq_reap().
 *
 * Margins, VIS = 500 ms: a second redelivery would need a stall of VIS
 * between reaping the first and finishing it; the message that proves
 * "never comes back" is due 3 VIS after the finish, 2 VIS after the
 * latest a third delivery of an unfinished message could be due.
 */
#define VIS	(500 * MS)

/* Reap until every one of @n ids came with @redeliveries; into @r[id]. */
static void reap_redelivered(struct dqshim_queue *q, struct dq_reaped *r,
			     int n, uint16_t redeliveries)
{
	uint64_t deadline = contract_now() + 10000 * MS;
	bool seen[2] = { false, false };
	int got = 0;

	while (got < n) {
		struct dq_reaped t[4];
		int k, m;

		REQUIRE(contract_now() < deadline, "%d of %d redelivered",
			got, n);
		m = dq_reap(q, t, 4, 1000 * MS);
		if (m == -ETIME)
			continue;
		REQUIRE(m > 0, "dq_reap: %s", dq_strerror(m));
		for (k = 0; k < m; k++) {
			uint64_t id;

			memcpy(&id, t[k].data, sizeof(id));
			REQUIRE(id < (uint64_t)n && !seen[id],
				"id %llu reaped again", (unsigned long long)id);
			CHECK(payload_ok(t[k].data, t[k].len, id));
			CHECK_EQ(t[k].redeliveries, redeliveries);
			seen[id] = true;
			r[id] = t[k];
			got++;
		}
	}
}

static void c_redelivery_held(void *arg)
{
	const struct contract_backend *b = arg;
	struct dq_reaped first[2], again[2], r[4], other;
	struct dqshim_queue *q, *x = NULL;
	struct dqshim_msg m;
	struct dq_params p, p2;
	uint64_t t_commit, t_fin, id;
	int i, n;

	dq_params_init(&p);
	p.slot_count = 4;
	p.slot_size = 64;
	p.flags = DQ_OPEN_F_TRACK | DQ_OPEN_F_VISIBILITY;
	p.visibility_ns = VIS;
	q = contract_open_params(b->backend, b->path, &p);
	/* p has the backend now.  Refused: untracked, below 1 ms. */
	p2 = p;
	p2.flags &= ~DQ_OPEN_F_TRACK;
	CHECK_EQ(dq_queue_open(&p2, &x), -EINVAL);
	p2 = p;
	p2.visibility_ns = DQ_MIN_VISIBILITY_NS - 1;
	CHECK_EQ(dq_queue_open(&p2, &x), -EINVAL);
	/* Without the flag the field is not read (a 0.8 caller's garbage). */
	p2 = p;
	p2.flags &= ~DQ_OPEN_F_VISIBILITY;
	p2.visibility_ns = 1;
	REQUIRE_EQ(dq_queue_open(&p2, &x), 0);
	dq_queue_close(x);

	t_commit = contract_now();
	for (id = 0; id < 2; id++) {
		REQUIRE_EQ(dq_reserve(q, &m), 0);
		fill_payload(m.data, 48, id);
		REQUIRE_EQ(dq_commit_delay(q, &m, 48, 0, id), 0);
	}
	REQUIRE_EQ(dq_flush(q), 2);
	reap_redelivered(q, first, 2, 0);
	/* Held, not finished: both come again, redeliveries 1. */
	reap_redelivered(q, again, 2, 1);
	CHECK(contract_now() >= t_commit + VIS, "redelivered before VIS");
	for (i = 0; i < 2; i++) {
		CHECK_EQ(again[i].slot, first[i].slot);
		CHECK_EQ(again[i].handle, first[i].handle);
	}
	/* Another message's handle on the slot: not this one's. */
	other = again[0];
	other.handle = DQ_HANDLE(again[0].slot,
				 DQ_HANDLE_GEN(again[0].handle) + 1);
	CHECK_EQ(dq_finish_reaped(q, &other, DQ_DONE_DELIVERED), -ENOENT);
	/* By slot: the newest delivery, accepted. */
	CHECK_EQ(dq_done(q, again[0].slot), 0);
	/* The older delivery: refused, and it finished nothing ... */
	CHECK_EQ(dq_finish_reaped(q, &first[1], DQ_DONE_DELIVERED), -ESTALE);
	CHECK_EQ(dq_finish_reaped(q, &first[0], DQ_DONE_DELIVERED), -EINVAL);
	/* ... so the newest one still can be. */
	CHECK_EQ(dq_finish_reaped(q, &again[1], DQ_DONE_FAILED), 0);
	CHECK_EQ(dq_finish_reaped(q, &again[1], DQ_DONE_FAILED), -EINVAL);
	t_fin = contract_now();

	/* Never again: the next thing reaped is the later message. */
	REQUIRE_EQ(dq_reserve(q, &m), 0);
	fill_payload(m.data, 48, 2);
	REQUIRE_EQ(dq_commit(q, &m, 48, t_fin + 3 * VIS, 2), 0);
	REQUIRE_EQ(dq_flush(q), 1);
	n = dq_reap(q, r, 4, 10000 * MS);
	REQUIRE_EQ(n, 1);
	memcpy(&id, r[0].data, sizeof(id));
	CHECK_EQ(id, 2);
	CHECK(payload_ok(r[0].data, r[0].len, 2));
	CHECK_EQ(dq_done(q, r[0].slot), 0);
	/* Every slot free: the library let go of both finished messages. */
	for (i = 0; i < 4; i++)
		CHECK_EQ(dq_reserve(q, &m), 0);
	dq_queue_close(q);
}

/* on_reject of c_redelivery_taken_back(): the slots handed back. */
struct handed_back {
	uint32_t slot[4];
	unsigned int n;
};

static void note_handed_back(void *arg, const struct dq_reject *rej)
{
	struct handed_back *h = arg;

	if (h->n < 4)
		h->slot[h->n] = rej->slot;
	h->n++;
}

/*
 * A message the consumer holds, put back by the visibility timeout and
 * not yet handed out again (waiting for room on the 1-entry ready ring;
 * the user engine's next reap of one message leaves the others waiting),
 * may be cancelled or replaced by key: the engine takes it back, and the
 * library must let go of the slot, since the delivery the consumer holds
 * is void.  Deterministic: the case waits for the engine to say all
 * three expired (dq_queue_track_stats() as a condition, not a verdict),
 * and what is reaped after is judged by payload and order.
 */
static void c_redelivery_taken_back(void *arg)
{
	const struct contract_backend *b = arg;
	struct handed_back back = { .n = 0 };
	struct dq_reaped first[3], r[4];
	struct dq_track_stats ts;
	struct dqshim_queue *q;
	struct dqshim_msg m;
	struct dq_params p;
	uint64_t id, deadline;
	int got = 0, i, n;

	dq_params_init(&p);
	p.slot_count = 8;
	p.slot_size = 64;
	p.ready_entries = 1;
	p.flags = DQ_OPEN_F_TRACK | DQ_OPEN_F_KEYS | DQ_OPEN_F_VISIBILITY;
	p.visibility_ns = VIS;
	p.on_reject = note_handed_back;
	p.reject_arg = &back;
	q = contract_open_params(b->backend, b->path, &p);
	for (id = 0; id < 3; id++) {
		REQUIRE_EQ(dq_reserve(q, &m), 0);
		fill_payload(m.data, 48, id);
		REQUIRE_EQ(dq_commit_key(q, &m, 48, 0, 100 + id,
					 DQ_COMMIT_F_RELATIVE), 0);
	}
	REQUIRE_EQ(dq_flush(q), 3);
	deadline = contract_now() + 10000 * MS;
	while (got < 3) {
		REQUIRE(contract_now() < deadline, "reaped %d of 3", got);
		n = dq_reap(q, first + got, (unsigned int)(3 - got), 1000 * MS);
		if (n == -ETIME)
			continue;
		REQUIRE(n > 0, "dq_reap: %s", dq_strerror(n));
		got += n;
	}
	/* Release order is submission order (due at once, FIFO ties). */
	for (i = 0; i < 3; i++)
		CHECK(payload_ok(first[i].data, first[i].len, (uint64_t)i));
	/* Held past VIS: all three put back. */
	do {
		REQUIRE(contract_now() < deadline, "never expired");
		REQUIRE_EQ(dq_queue_track_stats(q, &ts), 0);
		if (ts.expired < 3)
			usleep(1000);
	} while (ts.expired < 3);
	/* The first comes again; the other two wait behind it. */
	REQUIRE_EQ(dq_reap(q, r, 1, 5000 * MS), 1);
	CHECK(payload_ok(r[0].data, r[0].len, 0));
	CHECK_EQ(r[0].redeliveries, 1);
	/* Cancelled while waiting: the slot is free, nothing to finish. */
	CHECK_EQ(dq_cancel(q, first[1].handle), 0);
	CHECK_EQ(dq_finish(q, first[1].slot, DQ_DONE_DELIVERED), -EINVAL);
	/* Replaced while waiting: its slot is handed back and free. */
	REQUIRE_EQ(dq_reserve(q, &m), 0);
	fill_payload(m.data, 48, 3);
	REQUIRE_EQ(dq_commit_key(q, &m, 48, 10 * MS, 102,
				 DQ_COMMIT_F_RELATIVE | DQ_COMMIT_F_REPLACE), 0);
	REQUIRE(dq_flush(q) >= 0);
	CHECK_EQ(back.n, 1);
	CHECK_EQ(back.slot[0], first[2].slot);
	CHECK_EQ(dq_finish(q, first[2].slot, DQ_DONE_DELIVERED), -EINVAL);
	CHECK_EQ(dq_done(q, r[0].slot), 0);
	/* Neither comes back: the replacement is the next thing reaped. */
	REQUIRE_EQ(dq_reap(q, r, 4, 5000 * MS), 1);
	memcpy(&id, r[0].data, sizeof(id));
	CHECK_EQ(id, 3);
	CHECK(payload_ok(r[0].data, r[0].len, 3));
	CHECK_EQ(dq_done(q, r[0].slot), 0);
	/* And the library holds none of the slots. */
	for (i = 0; i < 8; i++)
		CHECK_EQ(dq_reserve(q, &m), 0);
	dq_queue_close(q);
}

static const struct {
	const char *name;
	void (*fn)(void *arg);
	unsigned int timeout_s;
} contract_cases[] = {
	{ "one_message", c_one_message, 20 },
	{ "batching", c_batching, 30 },
	{ "random_10k_in_order", c_random_10k_in_order, 40 },
	{ "fifo_ties", c_fifo_ties, 30 },
	{ "timeouts", c_timeouts, 20 },
	{ "wait_beyond_park_bound", c_wait_beyond_park_bound, 30 },
	{ "parked_wait", c_parked_wait, 20 },
	{ "woken_by_earlier_message", c_woken_by_earlier_message, 20 },
	{ "reject_reported", c_reject_reported, 20 },
	{ "flush_reap", c_flush_reap, 30 },
	{ "cancel_answers", c_cancel_answers, 30 },
	{ "threads", c_threads, 40 },
	{ "zero_copy", c_zero_copy, 20 },
	{ "epoll", c_epoll, 30 },
	{ "slot_align8", c_slot_align8, 20 },
	{ "redelivery_held", c_redelivery_held, 40 },
	{ "redelivery_taken_back", c_redelivery_taken_back, 40 },
};

void contract_register(const struct contract_backend *b)
{
	char name[96];
	size_t i;

	for (i = 0; i < sizeof(contract_cases) / sizeof(contract_cases[0]); i++) {
		snprintf(name, sizeof(name), "%s%s", contract_cases[i].name,
			 b->suffix);
		tap_add_at(1000000 + (int)i, name, contract_cases[i].fn,
			   (void *)b, contract_cases[i].timeout_s);
	}
}

static const struct tb matrix_targets[] = {
	{ "_user", DQ_BACKEND_USER, DQ_PATH_LOCAL },
	{ "_uring", DQ_BACKEND_KERNEL, DQ_PATH_URING },
	{ "_ioctl", DQ_BACKEND_KERNEL, DQ_PATH_IOCTL },
};

void contract_add_matrix(const struct tcase *cases, size_t n)
{
	size_t i, j;

	for (i = 0; i < n; i++)
		for (j = 0; j < sizeof(matrix_targets) /
			    sizeof(matrix_targets[0]); j++) {
			const struct tb *t = &matrix_targets[j];
			char name[64];

			if (cases[i].kernel_only &&
			    t->backend != DQ_BACKEND_KERNEL)
				continue;
			snprintf(name, sizeof(name), "%s%s", cases[i].name,
				 t->suffix);
			tap_add_at((int)i, name, cases[i].fn, (void *)t,
				   cases[i].timeout_s);
		}
}
