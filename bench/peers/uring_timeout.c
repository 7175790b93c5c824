// SPDX-License-Identifier: LGPL-2.1 OR MIT
/*
 * uring_timeout.c - one io_uring IORING_OP_TIMEOUT per message, with an
 * absolute CLOCK_MONOTONIC time (IORING_TIMEOUT_ABS) and no completion
 * count: each is a pure timer that completes with -ETIME when due.  A
 * single-threaded event loop submits and reaps (liburing).
 *
 * Each held message is an io_kiocb plus its hrtimer in the kernel and the
 * payload in the process's heap.
 *
 * Options: sq=N (4096 SQ entries), cq=N (65536 CQ entries),
 * defer=0|1 (IORING_SETUP_SINGLE_ISSUER|DEFER_TASKRUN where the kernel has
 * it; default 1).
 */
#include "bench.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <liburing.h>

#ifndef IORING_SETUP_SINGLE_ISSUER
#define IORING_SETUP_SINGLE_ISSUER (1U << 12)
#endif
#ifndef IORING_SETUP_DEFER_TASKRUN
#define IORING_SETUP_DEFER_TASKRUN (1U << 13)
#endif

struct msg {
	struct __kernel_timespec ts;
	unsigned char payload[];
};

static struct io_uring ring;
static int ring_ok;
static unsigned int sq_entries = 4096, cq_entries = 65536;
static int use_defer = 1, deferred;
static char desc[64];
static unsigned int unflushed;

static int ut_opt(const char *k, const char *v)
{
	unsigned long x = strtoul(v, NULL, 10);

	if (!strcmp(k, "sq"))
		sq_entries = (unsigned int)x;
	else if (!strcmp(k, "cq"))
		cq_entries = (unsigned int)x;
	else if (!strcmp(k, "defer"))
		use_defer = x != 0;
	else
		return -1;
	return sq_entries && cq_entries >= sq_entries ? 0 : -1;
}

static int ut_setup(const struct bench_opts *o, uint64_t capacity)
{
	struct io_uring_params p;
	int rc = -EINVAL;

	(void)o;
	(void)capacity;
	/* an io_kiocb and an hrtimer per message */
	bench_state_in_kernel();
	if (use_defer) {
		memset(&p, 0, sizeof(p));
		p.flags = IORING_SETUP_CQSIZE | IORING_SETUP_SINGLE_ISSUER |
			  IORING_SETUP_DEFER_TASKRUN;
		p.cq_entries = cq_entries;
		rc = io_uring_queue_init_params(sq_entries, &ring, &p);
		deferred = rc == 0;
	}
	if (rc) {
		memset(&p, 0, sizeof(p));
		p.flags = IORING_SETUP_CQSIZE;
		p.cq_entries = cq_entries;
		rc = io_uring_queue_init_params(sq_entries, &ring, &p);
	}
	if (rc)
		return rc;
	ring_ok = 1;
	snprintf(desc, sizeof(desc), "sq=%u cq=%u%s", sq_entries, cq_entries,
		 deferred ? " defer_taskrun" : "");
	return 0;
}

static int ut_submit(uint64_t id, uint64_t due_ns)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);
	struct msg *m;

	if (!sqe) {
		int rc = io_uring_submit(&ring);

		if (rc < 0)
			return rc;
		unflushed = 0;
		sqe = io_uring_get_sqe(&ring);
		if (!sqe)
			return -EAGAIN;
	}
	m = malloc(sizeof(*m) + bench_o->payload);
	if (!m)
		return -ENOMEM;
	m->ts.tv_sec = (long long)(due_ns / 1000000000ULL);
	m->ts.tv_nsec = (long long)(due_ns % 1000000000ULL);
	bench_fill(m->payload, id, due_ns, bench_o->payload);
	io_uring_prep_timeout(sqe, &m->ts, 0, IORING_TIMEOUT_ABS);
	io_uring_sqe_set_data(sqe, m);
	unflushed++;
	return 0;
}

static int ut_flush(void)
{
	int rc;

	if (!unflushed)
		return 0;
	rc = io_uring_submit(&ring);
	if (rc < 0)
		return rc;
	unflushed = 0;
	return 0;
}

#define REAP_MAX 256

static int reap(void)
{
	struct io_uring_cqe *cqe;
	struct bench_msg bm[REAP_MAX];
	struct msg *got[REAP_MAX];
	unsigned int head, n = 0, k = 0, i;

	io_uring_for_each_cqe(&ring, head, cqe) {
		struct msg *m = io_uring_cqe_get_data(cqe);

		if (k == REAP_MAX)
			break;	/* the rest in the next round */
		n++;
		if (cqe->res != -ETIME || !m) {
			bench_error_count();
			continue;
		}
		got[k] = m;
		bm[k++] = (struct bench_msg){ m->payload, bench_o->payload };
	}
	io_uring_cq_advance(&ring, n);
	/* the batch is reaped: one release time for all of it */
	bench_deliver_batch(bm, k);
	for (i = 0; i < k; i++)
		free(got[i]);
	return (int)n;
}

static int ut_poll(uint64_t until_ns)
{
	struct io_uring_cqe *cqe;
	uint64_t now = bench_now();
	int rc, rounds;

	if (until_ns > now) {
		struct __kernel_timespec ts = {
			.tv_sec = (long long)((until_ns - now) / 1000000000ULL),
			.tv_nsec = (long long)((until_ns - now) % 1000000000ULL),
		};

		rc = io_uring_wait_cqe_timeout(&ring, &cqe, &ts);
		if (rc && rc != -ETIME && rc != -EINTR)
			return rc;
	}
	/*
	 * With DEFER_TASKRUN completions are posted only when we enter the
	 * kernel, and the kernel runs a bounded amount of that work per
	 * entry: enter again until nothing more comes.
	 */
	for (rounds = 0; rounds < 100000; rounds++) {
		if (deferred)
			io_uring_get_events(&ring);
		if (reap() == 0)
			break;
	}
	return 0;
}

static void ut_teardown(void)
{
	/* pending timeouts are cancelled when the ring goes */
	if (ring_ok)
		io_uring_queue_exit(&ring);
}

static const char *ut_describe(void)
{
	return desc;
}

const struct peer_ops peer = {
	.name = "uring-timeout",
	.opt = ut_opt,
	.setup = ut_setup,
	.submit = ut_submit,
	.flush = ut_flush,
	.poll = ut_poll,
	.teardown = ut_teardown,
	.describe = ut_describe,
};
