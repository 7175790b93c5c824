// SPDX-License-Identifier: LGPL-2.1 OR MIT
/*
 * dq_wait: DQ_IOC_WAIT (min_ready, timeout, -ETIME) and poll().
 */
#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/ioctl.h>

#include "dqtest.h"
#include "tap.h"

TEST(wait_timeout_etime)
{
	struct dqt_queue q;

	ASSERT_OK(dqt_queue_init(&q, &DQT_PARAMS(.slot_count = 4, .slot_size = 64)));
	/* an empty queue: the timeout passes */
	uint64_t t0 = dqt_now_ns();
	int r = dqt_wait(&q, 1, 50 * NSEC_PER_MSEC);
	uint64_t el = dqt_now_ns() - t0;

	EXPECT_EQ(r, -ETIME);
	EXPECT_GE(el, 50 * NSEC_PER_MSEC);
	DIAG("WAIT(1, 50 ms) on an empty queue returned after %.2f ms", el / 1e6);

	/* timeout 0: a non-blocking check */
	t0 = dqt_now_ns();
	EXPECT_EQ(dqt_wait(&q, 1, 0), -ETIME);
	DIAG("WAIT(1, 0) took %.2f ms", (dqt_now_ns() - t0) / 1e6);

	/* a message due after the timeout does not end the wait early */
	ASSERT_OK(dqt_push_msg(&q, 0, 1, 400 * NSEC_PER_MSEC, DQ_DESC_F_RELATIVE, 8, 1));
	ASSERT_EQ(dqt_submit(&q, 0, NULL, 0, NULL), 1);
	t0 = dqt_now_ns();
	r = dqt_wait(&q, 1, 30 * NSEC_PER_MSEC);
	el = dqt_now_ns() - t0;
	EXPECT_EQ(r, -ETIME);
	EXPECT_GE(el, 30 * NSEC_PER_MSEC);

	/* flags must be 0 */
	struct dq_wait w = { .min_ready = 1, .flags = 1, .timeout_ns = 0 };

	EXPECT_SYSERR(ioctl(q.fd, DQ_IOC_WAIT, &w), EINVAL);
	dqt_queue_fini(&q);
}

TEST(wait_min_ready)
{
	struct dqt_queue q;
	struct dq_ready r[16];

	ASSERT_OK(dqt_queue_init(&q, &DQT_PARAMS(.slot_count = 16, .slot_size = 64)));
	uint64_t t = dqt_now_ns() + 100 * NSEC_PER_MSEC;

	/* 5 due at t, 5 due at t + 250 ms */
	for (uint32_t i = 0; i < 10; i++)
		ASSERT_OK(dqt_push_msg(&q, i, 1, t + (i < 5 ? 0 : 250 * NSEC_PER_MSEC),
				       0, 8, i));
	ASSERT_EQ(dqt_submit(&q, 0, NULL, 0, NULL), 10);

	/* 8 ready needs the second group */
	int ret = dqt_wait(&q, 8, 20 * NSEC_PER_SEC);
	uint64_t woke = dqt_now_ns();
	uint32_t avail = dqt_ready_count(&q);

	EXPECT_GE(ret, 8);
	EXPECT_LE((uint32_t)ret, avail);
	EXPECT_GE(woke, t + 250 * NSEC_PER_MSEC);
	DIAG("WAIT(8) returned %d after the 8th was due by %.2f ms", ret,
	     ((double)woke - (double)(t + 250 * NSEC_PER_MSEC)) / 1e6);

	/* already enough on the ring: returns at once with the count */
	uint64_t t0 = dqt_now_ns();

	ret = dqt_wait(&q, 3, 10 * NSEC_PER_SEC);
	EXPECT_EQ((uint32_t)ret, dqt_ready_count(&q));
	EXPECT_GE(ret, 3);
	EXPECT_LT(dqt_now_ns() - t0, 2 * NSEC_PER_SEC);

	/* more than there will ever be: times out, reporting nothing */
	EXPECT_EQ(dqt_wait(&q, 11, 50 * NSEC_PER_MSEC), -ETIME);

	/* consumed entries no longer count */
	EXPECT_EQ(dqt_reap(&q, r, 16), 10);
	EXPECT_EQ(dqt_wait(&q, 1, 10 * NSEC_PER_MSEC), -ETIME);
	dqt_queue_fini(&q);
}

TEST(wait_forever)
{
	struct dqt_queue q;

	ASSERT_OK(dqt_queue_init(&q, &DQT_PARAMS(.slot_count = 4, .slot_size = 64)));
	uint64_t due = dqt_now_ns() + 100 * NSEC_PER_MSEC;

	ASSERT_OK(dqt_push_msg(&q, 0, 1, due, 0, 8, 1));
	ASSERT_EQ(dqt_submit(&q, 0, NULL, 0, NULL), 1);
	int ret = dqt_wait(&q, 1, -1);	/* the test's alarm bounds it */

	EXPECT_EQ(ret, 1);
	EXPECT_GE(dqt_now_ns(), due);
	EXPECT_EQ(dqt_ready_count(&q), 1);
	EXPECT_EQ(dqt_rq_entry(&q, 0)->user_data, 1);
	dqt_queue_fini(&q);
}

TEST(poll_pollin)
{
	struct dqt_queue q;
	struct dq_ready r[4];
	struct pollfd pfd;

	ASSERT_OK(dqt_queue_init(&q, &DQT_PARAMS(.slot_count = 4, .slot_size = 64)));
	pfd = (struct pollfd){ .fd = q.fd, .events = POLLIN };
	/* empty: not readable */
	EXPECT_EQ(poll(&pfd, 1, 0), 0);
	EXPECT_EQ(poll(&pfd, 1, 30), 0);

	uint64_t due = dqt_now_ns() + 80 * NSEC_PER_MSEC;

	ASSERT_OK(dqt_push_msg(&q, 1, 1, due, 0, 8, 11));
	ASSERT_EQ(dqt_submit(&q, 0, NULL, 0, NULL), 1);
	/* before due: still not readable */
	if (dqt_now_ns() + 10 * NSEC_PER_MSEC < due) {
		pfd.revents = 0;
		int pr = poll(&pfd, 1, 0);

		if (dqt_now_ns() < due)
			EXPECT_EQ(pr, 0);
	}
	/* blocks until due, then POLLIN */
	pfd.revents = 0;
	int ret = poll(&pfd, 1, 20000);
	uint64_t woke = dqt_now_ns();

	EXPECT_EQ(ret, 1);
	EXPECT_TRUE(pfd.revents & POLLIN);
	EXPECT_FALSE(pfd.revents & (POLLERR | POLLNVAL));
	EXPECT_GE(woke, due);
	EXPECT_EQ(dqt_ready_count(&q), 1);
	/* level-triggered: still readable until consumed */
	pfd.revents = 0;
	EXPECT_EQ(poll(&pfd, 1, 0), 1);
	EXPECT_TRUE(pfd.revents & POLLIN);
	EXPECT_EQ(dqt_reap(&q, r, 4), 1);
	EXPECT_EQ(r[0].user_data, 11);
	/* consumed: not readable again */
	pfd.revents = 0;
	EXPECT_EQ(poll(&pfd, 1, 0), 0);
	dqt_queue_fini(&q);
}

TEST(poll_many_wakeups)
{
	/* one poll() per message due 10 ms apart: each wakes, none early */
	struct dqt_queue q;
	struct dq_ready r[2];
	const uint32_t n = 20;

	ASSERT_OK(dqt_queue_init(&q, &DQT_PARAMS(.slot_count = n, .slot_size = 64)));
	uint64_t t = dqt_now_ns() + 50 * NSEC_PER_MSEC;

	for (uint32_t i = 0; i < n; i++)
		ASSERT_OK(dqt_push_msg(&q, i, 1, t + i * 10 * NSEC_PER_MSEC, 0, 8, i));
	ASSERT_EQ(dqt_submit(&q, 0, NULL, 0, NULL), (int)n);
	for (uint32_t i = 0; i < n; i++) {
		struct pollfd pfd = { .fd = q.fd, .events = POLLIN };
		int ret = poll(&pfd, 1, 20000);
		uint64_t woke = dqt_now_ns();

		ASSERT_EQ(ret, 1);
		int k = dqt_reap(&q, r, 1);

		ASSERT_EQ(k, 1);
		EXPECT_EQ(r[0].user_data, i);
		EXPECT_GE(woke, t + i * 10 * NSEC_PER_MSEC);
	}
	dqt_queue_fini(&q);
}

TAP_MAIN()
