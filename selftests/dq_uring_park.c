// SPDX-License-Identifier: LGPL-2.1 OR MIT
/*
 * dq_uring_park - parked io_uring WAITs cost no allocation, and their
 * deadlines (one timer per queue, armed for the earliest) end each at its
 * own time, whatever the order they were parked in.
 *
 * The allocation check reads /proc/slabinfo: dq.ko allocated a parked
 * WAIT's state with GFP_KERNEL_ACCOUNT, so it landed in the kmalloc-cg-*
 * caches, which io_uring's own per-request memory (its io_kiocb cache,
 * and the unaccounted command cache of 6.11+) does not touch.  Parking
 * PARK_N WAITs used to add PARK_N objects there; now it may add only
 * what the rest of the system does meanwhile.
 */
#include <errno.h>
#include <liburing.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dqtest.h"
#include "tap.h"

#define PARK_N		1024U
#define TAG_WAIT	0x9a4c0000ULL

static void prep_wait(struct io_uring *ring, int fd, uint32_t min_ready,
		      int64_t timeout_ns, uint64_t tag)
{
	struct dq_wait w = { .min_ready = min_ready, .timeout_ns = timeout_ns };
	struct io_uring_sqe *sqe = io_uring_get_sqe(ring);

	if (!sqe) {
		FAIL("no SQE left");
		tap_abort();
	}
	memset(sqe, 0, sizeof(*sqe));
	sqe->opcode = IORING_OP_URING_CMD;
	sqe->fd = fd;
	sqe->cmd_op = DQ_URING_CMD_WAIT;
	memcpy(sqe->cmd, &w, sizeof(w));
	sqe->user_data = tag;
}

/* Active objects in every kmalloc-cg-* cache, or -1 without slabinfo. */
static long kmalloc_cg_objects(void)
{
	char line[512], name[128];
	long total = 0, active;
	FILE *f = fopen("/proc/slabinfo", "re");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%127s %ld", name, &active) == 2 &&
		    !strncmp(name, "kmalloc-cg-", 11))
			total += active;
	fclose(f);
	return total;
}

/* Reap @n completions (bounded); each must have a result >= @min_res. */
static unsigned int reap(struct io_uring *ring, unsigned int n, int min_res,
			 uint64_t timeout_ns)
{
	uint64_t deadline = dqt_now_ns() + timeout_ns;
	unsigned int got = 0, bad = 0;

	while (got < n && dqt_now_ns() < deadline) {
		struct __kernel_timespec ts = { .tv_nsec = 50 * 1000 * 1000 };
		struct io_uring_cqe *cqe;

		if (io_uring_wait_cqe_timeout(ring, &cqe, &ts))
			continue;
		if (cqe->res < min_res && bad++ < 3)
			DIAG("completion 0x%llx: res %d",
			     (unsigned long long)cqe->user_data, cqe->res);
		got++;
		io_uring_cqe_seen(ring, cqe);
	}
	EXPECT_EQ(bad, 0);
	return got;
}

TEST(park_many_no_alloc, 120)
{
	struct dqt_queue q;
	struct io_uring ring;
	struct io_uring_params p = { .flags = IORING_SETUP_CQSIZE,
				     .cq_entries = 2 * PARK_N };
	long before, after;
	unsigned int i;

	if (kmalloc_cg_objects() <= 0)
		SKIP("no kmalloc-cg-* caches in /proc/slabinfo");
	ASSERT_OK(dqt_queue_init(&q, &DQT_PARAMS(.slot_count = 4, .slot_size = 64)));
	ASSERT_EQ(io_uring_queue_init_params(PARK_N, &ring, &p), 0);

	before = kmalloc_cg_objects();
	for (i = 0; i < PARK_N; i++)
		prep_wait(&ring, q.fd, 1, 60 * NSEC_PER_SEC,
			  TAG_WAIT + i);
	ASSERT_EQ(io_uring_submit(&ring), (int)PARK_N);
	after = kmalloc_cg_objects();
	DIAG("%u WAITs parked: kmalloc-cg-* objects %ld -> %ld (%+ld)", PARK_N,
	     before, after, after - before);
	/* The old kzalloc per WAIT added PARK_N; leave room for the rest. */
	EXPECT_LT(after - before, (long)PARK_N / 4);

	/* One message due now wakes them all, each with the ready count. */
	ASSERT_OK(dqt_push_msg(&q, 0, 1, 0, DQ_DESC_F_RELATIVE, 8, 1));
	ASSERT_EQ(dqt_submit(&q, 0, NULL, 0, NULL), 1);
	EXPECT_EQ(reap(&ring, PARK_N, 1, 60 * NSEC_PER_SEC), PARK_N);
	io_uring_queue_exit(&ring);
	dqt_queue_fini(&q);
}

/*
 * Deadlines share one timer: WAITs parked latest-deadline first, then
 * earliest first, each end with -ETIME no sooner than their own timeout
 * and in deadline order.
 */
TEST(park_deadlines_each_own, 120)
{
	enum { N = 16 };
	static const uint64_t step = 40 * NSEC_PER_MSEC;
	struct dqt_queue q;
	struct io_uring ring;
	uint64_t t0, done_at[2 * N] = { 0 };
	unsigned int i, got = 0, order_bad = 0;
	uint64_t last_tag_deadline = 0;

	ASSERT_OK(dqt_queue_init(&q, &DQT_PARAMS(.slot_count = 4, .slot_size = 64)));
	ASSERT_EQ(io_uring_queue_init(4 * N, &ring, 0), 0);
	t0 = dqt_now_ns();
	/* Tag k has deadline (k % N + 1) * step: descending, then ascending. */
	for (i = 0; i < N; i++)
		prep_wait(&ring, q.fd, 1,
			  (N - i) * step, TAG_WAIT + (N - 1 - i));
	for (i = 0; i < N; i++)
		prep_wait(&ring, q.fd, 1, (i + 1) * step,
			  TAG_WAIT + N + i);
	ASSERT_EQ(io_uring_submit(&ring), 2 * N);

	while (got < 2 * N && dqt_now_ns() < t0 + 30 * NSEC_PER_SEC) {
		struct __kernel_timespec ts = { .tv_nsec = 50 * 1000 * 1000 };
		struct io_uring_cqe *cqe;
		uint64_t k, due;

		if (io_uring_wait_cqe_timeout(&ring, &cqe, &ts))
			continue;
		k = cqe->user_data - TAG_WAIT;
		due = (k % N + 1) * step;
		EXPECT_EQ(cqe->res, -ETIME);
		if (k < 2 * N) {
			done_at[k] = dqt_now_ns() - t0;
			EXPECT_GE(done_at[k], due);
			if (due + step < last_tag_deadline)
				order_bad++;
			if (due > last_tag_deadline)
				last_tag_deadline = due;
		}
		got++;
		io_uring_cqe_seen(&ring, cqe);
	}
	EXPECT_EQ(got, 2 * N);
	/* Completions may be reaped a little out of order, not a step. */
	EXPECT_EQ(order_bad, 0);
	DIAG("first deadline (%.0f ms) ended at %.1f ms, last (%.0f ms) at %.1f ms",
	     step / 1e6, done_at[0] / 1e6, N * step / 1e6,
	     done_at[N - 1] / 1e6);
	io_uring_queue_exit(&ring);
	dqt_queue_fini(&q);
}

TAP_MAIN()
