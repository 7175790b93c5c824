// SPDX-License-Identifier: LGPL-2.1 OR MIT
/*
 * dq_cancel: DQ_IOC_CANCEL returns 0 for a message dq still holds (pending,
 * or due but waiting for room on the ready ring or for a pacing token; it
 * then never shows up and its slot is the caller's again), -EALREADY once
 * it is on the ready ring or was cancelled, -ENOENT for a handle that
 * names no message.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "dqtest.h"
#include "tap.h"

TEST(cancel_pending)
{
	struct dqt_queue q;
	struct dq_queue_stats st;
	struct dq_ready r[4];
	uint32_t got;

	ASSERT_OK(dqt_queue_init(&q, &DQT_PARAMS(.slot_count = 8, .slot_size = 64)));
	uint64_t due = dqt_now_ns() + 200 * NSEC_PER_MSEC;

	ASSERT_OK(dqt_push_msg(&q, 3, 7, due, 0, 8, 0x37));
	ASSERT_OK(dqt_push_msg(&q, 4, 1, due + 1, 0, 8, 0x41));
	ASSERT_EQ(dqt_submit(&q, 0, NULL, 0, NULL), 2);
	EXPECT_EQ(dqt_cancel(&q, 3, 7), 0);
	ASSERT_OK(dqt_queue_stats(&q, &st));
	EXPECT_EQ(st.cancelled, 1);
	if (dqt_now_ns() < due)
		EXPECT_EQ(st.pending, 1);
	/* a second cancel of the same message */
	EXPECT_EQ(dqt_cancel(&q, 3, 7), -EALREADY);

	/* only the other message comes out */
	dqt_reap_until(&q, r, NULL, 1, due + 10 * NSEC_PER_SEC, DQT_WAIT_IOCTL, &got);
	EXPECT_EQ(got, 1);
	EXPECT_EQ(r[0].user_data, 0x41);
	dqt_sleep_ns(100 * NSEC_PER_MSEC);
	EXPECT_EQ(dqt_ready_count(&q), 0);
	ASSERT_OK(dqt_queue_stats(&q, &st));
	EXPECT_EQ(st.released, 1);
	EXPECT_EQ(st.cancelled, 1);
	EXPECT_EQ(st.pending, 0);
	dqt_queue_fini(&q);
}

TEST(cancel_after_release)
{
	struct dqt_queue q;
	struct dq_ready r[2];
	uint32_t got;

	ASSERT_OK(dqt_queue_init(&q, &DQT_PARAMS(.slot_count = 4, .slot_size = 64)));
	ASSERT_OK(dqt_push_msg(&q, 1, 5, 0, DQ_DESC_F_RELATIVE, 8, 1));
	ASSERT_EQ(dqt_submit(&q, 0, NULL, 0, NULL), 1);
	/* released, not yet reaped */
	uint64_t dl = dqt_now_ns() + 10 * NSEC_PER_SEC;

	while (!dqt_ready_count(&q) && dqt_now_ns() < dl)
		dqt_sleep_ns(NSEC_PER_MSEC);
	ASSERT_EQ(dqt_ready_count(&q), 1);
	EXPECT_EQ(dqt_cancel(&q, 1, 5), -EALREADY);
	dqt_reap_until(&q, r, NULL, 1, dl, DQT_WAIT_IOCTL, &got);
	EXPECT_EQ(got, 1);
	/* and after it was reaped */
	EXPECT_EQ(dqt_cancel(&q, 1, 5), -EALREADY);
	struct dq_queue_stats st;

	ASSERT_OK(dqt_queue_stats(&q, &st));
	EXPECT_EQ(st.cancelled, 0);
	EXPECT_EQ(st.released, 1);
	dqt_queue_fini(&q);
}

TEST(cancel_unknown)
{
	struct dqt_queue q;
	struct dq_queue_stats st;
	struct dq_ready r[2];
	uint32_t got;

	ASSERT_OK(dqt_queue_init(&q, &DQT_PARAMS(.slot_count = 8, .slot_size = 64)));
	/* nothing ever submitted */
	EXPECT_EQ(dqt_cancel(&q, 0, 0), -ENOENT);
	EXPECT_EQ(dqt_cancel(&q, 2, 1), -ENOENT);
	/* slots out of range */
	EXPECT_EQ(dqt_cancel(&q, 8, 1), -ENOENT);
	EXPECT_EQ(dqt_cancel(&q, 0xffffffff, 0xffffffff), -ENOENT);

	uint64_t due = dqt_now_ns() + 150 * NSEC_PER_MSEC;

	ASSERT_OK(dqt_push_msg(&q, 2, 10, due, 0, 8, 2));
	ASSERT_EQ(dqt_submit(&q, 0, NULL, 0, NULL), 1);
	/* right slot, wrong generation: no such message, the real one stays */
	EXPECT_EQ(dqt_cancel(&q, 2, 11), -ENOENT);
	EXPECT_EQ(dqt_cancel(&q, 2, 9), -ENOENT);
	EXPECT_EQ(dqt_cancel(&q, 3, 10), -ENOENT);
	/* resv must be 0 */
	struct dq_cancel c = { .handle = DQ_HANDLE(2, 10), .resv = 1 };

	EXPECT_SYSERR(ioctl(q.fd, DQ_IOC_CANCEL, &c), EINVAL);

	dqt_reap_until(&q, r, NULL, 1, due + 10 * NSEC_PER_SEC, DQT_WAIT_IOCTL, &got);
	EXPECT_EQ(got, 1);
	EXPECT_EQ(r[0].user_data, 2);
	EXPECT_GE(r[0].release_ns, due);
	ASSERT_OK(dqt_queue_stats(&q, &st));
	EXPECT_EQ(st.cancelled, 0);
	EXPECT_EQ(st.released, 1);
	dqt_queue_fini(&q);
}

TEST(cancel_then_resubmit)
{
	struct dqt_queue q;
	struct dq_ready r[4];
	struct dq_submit sub;
	struct dq_reject rej[2];
	uint32_t got;

	ASSERT_OK(dqt_queue_init(&q, &DQT_PARAMS(.slot_count = 4, .slot_size = 64)));
	uint64_t t = dqt_now_ns();

	/* held: resubmitting the slot is BUSY */
	ASSERT_OK(dqt_push_msg(&q, 3, 7, t + 800 * NSEC_PER_MSEC, 0, 8, 0x37));
	ASSERT_EQ(dqt_submit(&q, 0, NULL, 0, NULL), 1);
	ASSERT_OK(dqt_push_msg(&q, 3, 8, t + 100 * NSEC_PER_MSEC, 0, 8, 0x38));
	EXPECT_EQ(dqt_submit(&q, 0, rej, 2, &sub), 0);
	EXPECT_EQ(sub.rejected, 1);
	EXPECT_EQ(rej[0].reason, DQ_REJ_BUSY);
	EXPECT_EQ(rej[0].error, -EBUSY);

	/* cancelled: the slot is ours again, the same generation may come back */
	ASSERT_EQ(dqt_cancel(&q, 3, 7), 0);
	memset(dqt_slot_ptr(&q, 3), 0x77, 64);
	ASSERT_OK(dqt_push_msg(&q, 3, 8, t + 100 * NSEC_PER_MSEC, 0, 64, 0x38));
	EXPECT_EQ(dqt_submit(&q, 0, NULL, 0, &sub), 1);
	EXPECT_EQ(sub.rejected, 0);

	dqt_reap_until(&q, r, NULL, 1, t + 10 * NSEC_PER_SEC, DQT_WAIT_IOCTL, &got);
	EXPECT_EQ(got, 1);
	EXPECT_EQ(r[0].user_data, 0x38);
	EXPECT_EQ(r[0].slot, 3);
	EXPECT_EQ(r[0].len, 64);
	EXPECT_EQ(dqt_slot_ptr(&q, 3)[63], 0x77);
	/* past the cancelled one's due time nothing else arrives */
	dqt_sleep_until(t + 900 * NSEC_PER_MSEC);
	EXPECT_EQ(dqt_ready_count(&q), 0);
	EXPECT_EQ(dqt_cancel(&q, 3, 8), -EALREADY);

	struct dq_queue_stats st;

	ASSERT_OK(dqt_queue_stats(&q, &st));
	EXPECT_EQ(st.submitted, 2);
	EXPECT_EQ(st.cancelled, 1);
	EXPECT_EQ(st.released, 1);
	EXPECT_EQ(st.rejected[DQ_REJ_BUSY], 1);
	EXPECT_EQ(st.pending, 0);
	dqt_queue_fini(&q);
}

TEST(cancel_half_of_many)
{
	const uint32_t n = 2000;
	struct dqt_queue q;
	struct dq_queue_stats st;
	struct dq_ready *r = calloc(n, sizeof(*r));
	uint32_t got;

	ASSERT_TRUE(r);
	ASSERT_OK(dqt_queue_init(&q, &DQT_PARAMS(.slot_count = n, .slot_size = 64,
						  .submit_entries = 512,
						  .ready_entries = 2048)));
	uint64_t t = dqt_now_ns() + 400 * NSEC_PER_MSEC;

	/* spread over 0..1.6 s so that records sit on several wheel levels */
	for (uint32_t i = 0; i < n; i += 500) {
		for (uint32_t j = i; j < i + 500; j++)
			ASSERT_OK(dqt_push_msg(&q, j, 1, t + (j % 400) * 4 * NSEC_PER_MSEC +
					       j * NSEC_PER_USEC, 0, 8, j));
		ASSERT_EQ(dqt_submit(&q, 0, NULL, 0, NULL), 500);
	}
	uint32_t cancelled = 0;

	for (uint32_t j = 1; j < n; j += 2) {
		int ret = dqt_cancel(&q, j, 1);

		if (ret == 0)
			cancelled++;
		else if (dqt_now_ns() < t)
			FAIL("cancel of pending %u: %d", j, ret);
	}
	DIAG("cancelled %u of %u", cancelled, n / 2);
	ASSERT_OK(dqt_queue_stats(&q, &st));
	EXPECT_EQ(st.cancelled, cancelled);
	uint32_t want = n - cancelled;

	dqt_reap_until(&q, r, NULL, want, t + 2 * NSEC_PER_SEC + 30 * NSEC_PER_SEC,
		       DQT_WAIT_MIXED, &got);
	EXPECT_EQ(got, want);
	uint32_t odd = 0, bad = 0;
	uint64_t last_due = 0;

	for (uint32_t i = 0; i < got; i++) {
		if (r[i].user_data & 1)
			odd++;
		if (r[i].due_ns < last_due || r[i].release_ns < r[i].due_ns)
			bad++;
		last_due = r[i].due_ns;
	}
	EXPECT_EQ(odd, n / 2 - cancelled);
	EXPECT_EQ(bad, 0);
	dqt_sleep_ns(50 * NSEC_PER_MSEC);
	EXPECT_EQ(dqt_ready_count(&q), 0);
	ASSERT_OK(dqt_queue_stats(&q, &st));
	EXPECT_EQ(st.pending, 0);
	EXPECT_EQ(st.released, want);
	free(r);
	dqt_queue_fini(&q);
}

/*
 * Due but held on the backlog (the ready ring is full): still dq's, so
 * cancel takes it back (0); one already on the ring is -EALREADY.  The
 * rest come out in order, without the cancelled one.
 */
TEST(cancel_in_backlog)
{
	const uint32_t n = 100;
	struct dqt_queue q;
	struct dq_queue_stats st;
	struct dq_ready r[100];
	uint32_t got, i;

	ASSERT_OK(dqt_queue_init(&q, &DQT_PARAMS(.slot_count = 128, .slot_size = 64,
						 .ready_entries = 64)));
	ASSERT_EQ(q.rq.nr, 64);
	uint64_t due = dqt_now_ns();

	for (i = 0; i < n; i++)
		ASSERT_OK(dqt_push_msg(&q, i, 1, due + i, 0, 8, 1000 + i));
	ASSERT_EQ(dqt_submit(&q, 0, NULL, 0, NULL), n);
	uint64_t dl = dqt_now_ns() + 10 * NSEC_PER_SEC;

	do {
		dqt_sleep_ns(NSEC_PER_MSEC);
		ASSERT_OK(dqt_queue_stats(&q, &st));
	} while (st.ready_backlog < n - 64 && dqt_now_ns() < dl);
	ASSERT_EQ(st.ready_backlog, n - 64);
	/* slot 90 is in the backlog, slot 10 on the ring */
	EXPECT_EQ(dqt_cancel(&q, 90, 1), 0);
	EXPECT_EQ(dqt_cancel(&q, 10, 1), -EALREADY);
	EXPECT_EQ(dqt_cancel(&q, 90, 1), -EALREADY);
	ASSERT_OK(dqt_queue_stats(&q, &st));
	EXPECT_EQ(st.cancelled, 1);
	EXPECT_EQ(st.ready_backlog, n - 64 - 1);

	dqt_reap_until(&q, r, NULL, n - 1, dl, DQT_WAIT_IOCTL, &got);
	EXPECT_EQ(got, n - 1);
	for (i = 0; i < got; i++)
		EXPECT_EQ(r[i].user_data, 1000 + i + (i >= 90));
	dqt_sleep_ns(50 * NSEC_PER_MSEC);
	EXPECT_EQ(dqt_ready_count(&q), 0);
	ASSERT_OK(dqt_queue_stats(&q, &st));
	EXPECT_EQ(st.released, n - 1);
	EXPECT_EQ(st.ready_backlog, 0);
	dqt_queue_fini(&q);
}

/* dqctl set --id ID --rate R: pacing is set over generic netlink. */
static int set_rate(uint32_t id, unsigned int rate)
{
	static const char *const dqctl[] = { "user/build/dqctl",
					     "../user/build/dqctl" };
	char cmd[256];

	for (unsigned int i = 0; i < 2; i++) {
		if (access(dqctl[i], X_OK))
			continue;
		snprintf(cmd, sizeof(cmd), "%s set --id %u --rate %u > /dev/null",
			 dqctl[i], id, rate);
		return system(cmd) == 0 ? 0 : -EIO;
	}
	return -ENOENT;
}

/*
 * Due but waiting for a pacing token: still dq's, so cancel takes it
 * back (0) and it never comes out; the others keep their order.
 */
TEST(cancel_while_paced)
{
	const uint32_t n = 8;
	struct dqt_queue q;
	struct dq_queue_stats st;
	struct dq_ready r[8];
	uint32_t got, i;
	int ret;

	ASSERT_OK(dqt_queue_init(&q, &DQT_PARAMS(.slot_count = 16, .slot_size = 64)));
	ret = set_rate(q.setup.queue_id, 20);
	if (ret == -ENOENT)
		SKIP("no user/build/dqctl to set the rate with");
	ASSERT_EQ(ret, 0);
	uint64_t due = dqt_now_ns();

	for (i = 0; i < n; i++)
		ASSERT_OK(dqt_push_msg(&q, i, 3, due + i, 0, 8, 2000 + i));
	ASSERT_EQ(dqt_submit(&q, 0, NULL, 0, NULL), n);
	/* 20/s: the last ones wait for tokens for ~0.3 s */
	uint64_t dl = dqt_now_ns() + 10 * NSEC_PER_SEC;

	do {
		dqt_sleep_ns(NSEC_PER_MSEC);
		ASSERT_OK(dqt_queue_stats(&q, &st));
	} while (st.pending && dqt_now_ns() < dl);
	ASSERT_GE(st.paced, 3);
	EXPECT_EQ(dqt_cancel(&q, n - 1, 3), 0);
	EXPECT_EQ(dqt_cancel(&q, n - 1, 3), -EALREADY);
	ASSERT_OK(dqt_queue_stats(&q, &st));
	EXPECT_EQ(st.cancelled, 1);

	dqt_reap_until(&q, r, NULL, n - 1, dl, DQT_WAIT_IOCTL, &got);
	EXPECT_EQ(got, n - 1);
	for (i = 0; i < got; i++)
		EXPECT_EQ(r[i].user_data, 2000 + i);
	dqt_sleep_ns(200 * NSEC_PER_MSEC);
	EXPECT_EQ(dqt_ready_count(&q), 0);
	ASSERT_OK(dqt_queue_stats(&q, &st));
	EXPECT_EQ(st.paced, 0);
	EXPECT_EQ(st.released, n - 1);
	dqt_queue_fini(&q);
}

/*
 * dq's wheel (kmod/shared/dq_wheel.h) moves a record down a level at the
 * start of the bucket it sits in, a timer fire of its own.  A record due
 * within the same 2^32 ns span as now sits at level 0 or 1, whose bucket
 * starts at most 4.19 ms before its due time; one due past the span's end
 * waits at level 2 for that end, which can be any time before its due.
 * Wait until a record due at now + @ahead_ns stays inside the span.
 */
static uint64_t now_within_wheel_span(uint64_t ahead_ns)
{
	const unsigned int span_shift = 32;
	uint64_t now = dqt_now_ns();

	if ((now >> span_shift) != ((now + ahead_ns) >> span_shift)) {
		dqt_sleep_until(((now >> span_shift) + 1) << span_shift);
		now = dqt_now_ns();
	}
	return now;
}

/*
 * When a cancel or a close takes the last record out of the node's wheel,
 * the engine's timer stops: it does not fire for records that are gone.
 * Pinned to a CPU of the queue's node, so arming needs no cross-node kick
 * (which fires the timer once by design).  The record's due time lies in
 * the span the wheel starts from (now_within_wheel_span()): a close can
 * take tens of ms to reach the wheel on a slow kernel, and a level-2
 * record's cascade could fire the timer in that time, by design too.
 */
TEST(emptied_wheel_stops_timer)
{
	struct dq_node_stats a, b;
	struct dq_queue_stats st;
	struct dqt_queue q;
	int sfd = dqt_stats_fd();

	ASSERT_GE(sfd, 0);
	for (int how = 0; how < 2; how++) {
		ASSERT_OK(dqt_queue_init(&q, &DQT_PARAMS(.slot_count = 8,
							  .slot_size = 64)));
		ASSERT_OK(dqt_queue_stats(&q, &st));
		int cpu = dqt_node_first_cpu(st.numa_node);

		if (cpu >= 0)
			ASSERT_OK(dqt_pin_to_cpu(cpu));
		ASSERT_OK(dqt_node_stats(sfd, st.numa_node, &a));
		if (a.pending) {
			dqt_queue_fini(&q);
			SKIP("node %d holds %llu records of others", st.numa_node,
			     (unsigned long long)a.pending);
		}
		uint64_t due = now_within_wheel_span(NSEC_PER_SEC) +
			       NSEC_PER_SEC;

		ASSERT_OK(dqt_push_msg(&q, 1, 1, due, 0, 8, 1));
		ASSERT_EQ(dqt_submit(&q, 0, NULL, 0, NULL), 1);
		if (how == 0) {
			EXPECT_EQ(dqt_cancel(&q, 1, 1), 0);
			dqt_sleep_until(due + 300 * NSEC_PER_MSEC);
			ASSERT_OK(dqt_node_stats(sfd, st.numa_node, &b));
			dqt_queue_fini(&q);
		} else {
			dqt_queue_fini(&q);
			dqt_sleep_until(due + 300 * NSEC_PER_MSEC);
			ASSERT_OK(dqt_node_stats(sfd, st.numa_node, &b));
		}
		DIAG("%s: node %d timer fires +%llu", how ? "close" : "cancel",
		     st.numa_node, (unsigned long long)(b.timer_fires - a.timer_fires));
		EXPECT_EQ(b.pending, 0);
		EXPECT_EQ(b.released, a.released);
		EXPECT_EQ(b.timer_fires, a.timer_fires);
	}
	close(sfd);
}

TAP_MAIN()
