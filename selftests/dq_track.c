// SPDX-License-Identifier: LGPL-2.1 OR MIT
/*
 * dq_track: delivery tracking (DQ_SETUP_F_TRACK) on a queue of its own.  A
 * released message stays in flight, its slot held, until DQ_IOC_DONE; the
 * ready entry carries gen, attempts and redeliveries; max_inflight caps
 * what is in flight and due messages wait for a credit in due order; each
 * bad DONE entry gets its own errno and is counted.  Judged against what
 * each test submitted (due times on its own clock, order, payload), not
 * against what dq reports.  Redelivery to the next consumer of a named
 * queue is tested in selftests/ctl/run.sh (t_track_redelivery).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "dqtest.h"
#include "tap.h"

#define TRACK(...) DQT_PARAMS(.slot_size = 64, .flags = DQ_SETUP_F_TRACK, \
			      __VA_ARGS__)

/* Wait until @n entries are on the ready ring, at most @secs seconds. */
static int wait_ready(struct dqt_queue *q, uint32_t n, unsigned int secs)
{
	uint64_t dl = dqt_now_ns() + secs * NSEC_PER_SEC;

	while (dqt_ready_count(q) < n && dqt_now_ns() < dl)
		dqt_wait(q, n, 100 * NSEC_PER_MSEC);
	return dqt_ready_count(q) >= n ? 0 : -ETIME;
}

TEST(track_setup)
{
	struct dqt_queue q;
	struct dq_setup s;
	int fd;

	ASSERT_OK(dqt_queue_init(&q, &TRACK(.slot_count = 8, .max_inflight = 3)));
	EXPECT_TRUE(q.setup.features & DQ_FEAT_TRACK);
	EXPECT_EQ(q.setup.ready.entry_size, sizeof(struct dq_ready_track));
	EXPECT_EQ(sizeof(struct dq_ready_track), 48);
	EXPECT_EQ(q.setup.flags, DQ_SETUP_F_TRACK);
	EXPECT_EQ(q.setup.max_inflight, 3);
	dqt_queue_fini(&q);

	/* an untracked queue keeps the 32-byte entry */
	ASSERT_OK(dqt_queue_init(&q, &DQT_PARAMS(.slot_count = 8, .slot_size = 64)));
	EXPECT_EQ(q.setup.ready.entry_size, sizeof(struct dq_ready));
	dqt_queue_fini(&q);

	fd = dqt_open_dev();
	ASSERT_GE(fd, 0);
	memset(&s, 0, sizeof(s));
	s.slot_count = 8;
	s.slot_size = 64;
	s.numa_node = -1;
	s.max_inflight = 2;	/* without DQ_SETUP_F_TRACK */
	EXPECT_SYSERR(ioctl(fd, DQ_IOC_SETUP, &s), EINVAL);
	s.max_inflight = 0;
	s.flags = DQ_SETUP_F_ALL + 1;	/* unknown */
	EXPECT_SYSERR(ioctl(fd, DQ_IOC_SETUP, &s), EINVAL);
	s.flags = DQ_SETUP_F_TRACK;
	s.max_inflight = DQ_MAX_SLOTS + 1;
	EXPECT_SYSERR(ioctl(fd, DQ_IOC_SETUP, &s), EINVAL);
	close(fd);
}

TEST(track_inflight_until_done)
{
	struct dq_ready_track t[8];
	struct dq_track_stats ts;
	struct dq_queue_stats st;
	struct dq_reject rej[2];
	struct dqt_queue q;
	struct dq_desc d;
	int n;

	ASSERT_OK(dqt_queue_init(&q, &TRACK(.slot_count = 8)));
	ASSERT_OK(dqt_push_msg(&q, 0, 10, 0, DQ_DESC_F_RELATIVE, 8, 100));
	memset(&d, 0, sizeof(d));
	d.slot = 1;
	d.gen = 11;
	d.len = 16;
	d.user_data = 101;
	d.flags = DQ_DESC_F_RELATIVE | DQ_DESC_F_ATTEMPTS;
	d.resv = 3;		/* the attempt count */
	ASSERT_OK(dqt_push(&q, &d));
	ASSERT_EQ(dqt_submit(&q, 0, NULL, 0, NULL), 2);
	ASSERT_OK(wait_ready(&q, 2, 10));
	n = dqt_reap_track(&q, t, 8);
	ASSERT_EQ(n, 2);
	EXPECT_EQ(t[0].r.user_data, 100);
	EXPECT_EQ(t[0].gen, 10);
	EXPECT_EQ(t[0].attempts, 0);
	EXPECT_EQ(t[0].redeliveries, 0);
	EXPECT_EQ(t[1].r.user_data, 101);
	EXPECT_EQ(t[1].r.len, 16);
	EXPECT_EQ(t[1].gen, 11);
	EXPECT_EQ(t[1].attempts, 3);

	/* reaped is not done: the slots are still dq's */
	ASSERT_OK(dqt_track_stats(&q, &ts));
	EXPECT_EQ(ts.inflight, 2);
	EXPECT_NE(ts.oldest_ns, 0);
	EXPECT_LE(ts.oldest_ns, dqt_now_ns());
	ASSERT_OK(dqt_push_msg(&q, 0, 12, 0, DQ_DESC_F_RELATIVE, 8, 102));
	EXPECT_EQ(dqt_submit(&q, 0, rej, 2, NULL), 0);
	EXPECT_EQ(rej[0].reason, DQ_REJ_BUSY);
	/* a cancel does not take a message from its consumer */
	EXPECT_EQ(dqt_cancel(&q, 0, 10), -EALREADY);

	EXPECT_EQ(dqt_done_one(&q, &t[0], DQ_DONE_DELIVERED), 0);
	EXPECT_EQ(dqt_done_one(&q, &t[1], DQ_DONE_FAILED), 0);
	ASSERT_OK(dqt_track_stats(&q, &ts));
	EXPECT_EQ(ts.inflight, 0);
	EXPECT_EQ(ts.oldest_ns, 0);
	EXPECT_EQ(ts.done_delivered, 1);
	EXPECT_EQ(ts.done_failed, 1);
	EXPECT_EQ(ts.done_refused, 0);
	ASSERT_OK(dqt_queue_stats(&q, &st));
	EXPECT_EQ(st.released, 2);

	/* done: the slot takes a new message */
	ASSERT_OK(dqt_push_msg(&q, 0, 13, 0, DQ_DESC_F_RELATIVE, 8, 103));
	EXPECT_EQ(dqt_submit(&q, 0, NULL, 0, NULL), 1);
	ASSERT_OK(wait_ready(&q, 1, 10));
	ASSERT_EQ(dqt_reap_track(&q, t, 8), 1);
	EXPECT_EQ(t[0].r.user_data, 103);
	EXPECT_EQ(t[0].gen, 13);
	EXPECT_EQ(dqt_done_one(&q, &t[0], DQ_DONE_DELIVERED), 0);
	dqt_queue_fini(&q);
}

TEST(track_done_refused)
{
	struct dq_ready_track t[2];
	struct dq_track_stats ts;
	struct dq_done bad[6];
	struct dqt_queue q;

	ASSERT_OK(dqt_queue_init(&q, &TRACK(.slot_count = 4)));
	ASSERT_OK(dqt_push_msg(&q, 2, 7, 0, DQ_DESC_F_RELATIVE, 8, 1));
	ASSERT_OK(dqt_push_msg(&q, 3, 8, 60 * NSEC_PER_SEC, DQ_DESC_F_RELATIVE,
			       8, 2));
	ASSERT_EQ(dqt_submit(&q, 0, NULL, 0, NULL), 2);
	ASSERT_OK(wait_ready(&q, 1, 10));
	ASSERT_EQ(dqt_reap_track(&q, t, 2), 1);

	memset(bad, 0, sizeof(bad));
	bad[0].handle = DQ_HANDLE(2, 7);
	bad[0].outcome = DQ_DONE_NR;		/* unknown outcome */
	bad[1].handle = DQ_HANDLE(2, 6);	/* stale gen */
	bad[2].handle = DQ_HANDLE(4, 7);	/* slot out of range */
	bad[3].handle = DQ_HANDLE(2, 7);
	bad[3].redeliveries = 1;		/* not this delivery */
	bad[4].handle = DQ_HANDLE(3, 8);	/* pending, not in flight */
	bad[5].handle = DQ_HANDLE(1, 0);	/* never held anything */
	EXPECT_EQ(dqt_done(&q, bad, 6), 0);
	EXPECT_EQ(bad[0].result, -EINVAL);
	EXPECT_EQ(bad[1].result, -ENOENT);
	EXPECT_EQ(bad[2].result, -ENOENT);
	EXPECT_EQ(bad[3].result, -ESTALE);
	EXPECT_EQ(bad[4].result, -EALREADY);
	EXPECT_EQ(bad[5].result, -ENOENT);
	ASSERT_OK(dqt_track_stats(&q, &ts));
	EXPECT_EQ(ts.done_refused, 6);
	EXPECT_EQ(ts.inflight, 1);	/* nothing was lost */

	/* one good entry among bad ones: only it counts */
	bad[1].handle = DQ_HANDLE(2, 7);
	bad[1].redeliveries = 0;
	EXPECT_EQ(dqt_done(&q, bad, 3), 1);
	EXPECT_EQ(bad[1].result, 0);
	/* done twice */
	EXPECT_EQ(dqt_done_one(&q, &t[0], DQ_DONE_DELIVERED), -EALREADY);
	ASSERT_OK(dqt_track_stats(&q, &ts));
	EXPECT_EQ(ts.done_refused, 9);
	EXPECT_EQ(ts.done_delivered, 1);
	EXPECT_EQ(ts.inflight, 0);
	dqt_queue_fini(&q);
}

TEST(track_done_call_errors)
{
	struct dq_done_batch b;
	struct dq_done d = { .handle = DQ_HANDLE(0, 0) };
	struct dqt_queue q;

	ASSERT_OK(dqt_queue_init(&q, &TRACK(.slot_count = 4)));
	memset(&b, 0, sizeof(b));
	b.dones = (uint64_t)(uintptr_t)&d;
	b.nr = 1;
	b.flags = 1;
	EXPECT_SYSERR(ioctl(q.fd, DQ_IOC_DONE, &b), EINVAL);
	b.flags = 0;
	b.resv = 1;
	EXPECT_SYSERR(ioctl(q.fd, DQ_IOC_DONE, &b), EINVAL);
	b.resv = 0;
	b.dones = 8;		/* unmapped */
	EXPECT_SYSERR(ioctl(q.fd, DQ_IOC_DONE, &b), EFAULT);
	EXPECT_SYSERR(ioctl(q.fd, DQ_IOC_DONE, (void *)8), EFAULT);
	b.nr = 0;
	EXPECT_EQ(ioctl(q.fd, DQ_IOC_DONE, &b), 0);
	dqt_queue_fini(&q);

	/* an untracked queue has no DONE; its track stats are all 0 */
	ASSERT_OK(dqt_queue_init(&q, &DQT_PARAMS(.slot_count = 4, .slot_size = 64)));
	memset(&b, 0, sizeof(b));
	b.dones = (uint64_t)(uintptr_t)&d;
	b.nr = 1;
	EXPECT_SYSERR(ioctl(q.fd, DQ_IOC_DONE, &b), EOPNOTSUPP);
	{
		struct dq_track_stats ts;

		memset(&ts, 0xff, sizeof(ts));
		ASSERT_OK(dqt_track_stats(&q, &ts));
		EXPECT_EQ(ts.inflight, 0);
		EXPECT_EQ(ts.consumer, 0);
	}
	dqt_queue_fini(&q);

	/* before setup */
	{
		int fd = dqt_open_dev();

		ASSERT_GE(fd, 0);
		EXPECT_SYSERR(ioctl(fd, DQ_IOC_DONE, &b), ENXIO);
		close(fd);
	}
}

TEST(track_attempts_need_tracking)
{
	struct dq_reject rej[2];
	struct dqt_queue q;
	struct dq_desc d;

	ASSERT_OK(dqt_queue_init(&q, &DQT_PARAMS(.slot_count = 4, .slot_size = 64)));
	memset(&d, 0, sizeof(d));
	d.flags = DQ_DESC_F_RELATIVE | DQ_DESC_F_ATTEMPTS;
	d.resv = 1;
	ASSERT_OK(dqt_push(&q, &d));
	d.flags = DQ_DESC_F_RELATIVE;	/* resv without the flag */
	d.slot = 1;
	ASSERT_OK(dqt_push(&q, &d));
	EXPECT_EQ(dqt_submit(&q, 0, rej, 2, NULL), 0);
	EXPECT_EQ(rej[0].reason, DQ_REJ_FLAGS);
	EXPECT_EQ(rej[1].reason, DQ_REJ_RESV);
	dqt_queue_fini(&q);

	ASSERT_OK(dqt_queue_init(&q, &TRACK(.slot_count = 4)));
	d.slot = 1;
	ASSERT_OK(dqt_push(&q, &d));	/* resv without the flag, tracked */
	EXPECT_EQ(dqt_submit(&q, 0, rej, 2, NULL), 0);
	EXPECT_EQ(rej[0].reason, DQ_REJ_RESV);
	dqt_queue_fini(&q);
}

/*
 * max_inflight = CAP and a consumer that finishes one message at a time,
 * slowly: never more than CAP reaped-and-not-done plus on the ring (the
 * test's own count), every message once, in the order of the due times
 * the test chose (FIFO among equal ones), never before them, and each
 * within a bound of the done that made room for it.
 */
#define CAP	3U
#define NMSG	24U

TEST_TIMEOUT(track_cap_follows_dones, 120)
{
	uint64_t due[NMSG], done_at = 0, worst = 0;
	struct dq_ready_track t[NMSG];
	uint32_t held = 0, got = 0, next = 0;
	struct dq_track_stats ts;
	struct dqt_queue q;
	uint64_t start, dl;

	ASSERT_OK(dqt_queue_init(&q, &TRACK(.slot_count = NMSG,
					    .max_inflight = CAP)));
	start = dqt_now_ns() + 20 * NSEC_PER_MSEC;
	for (uint32_t i = 0; i < NMSG; i++) {
		/* pairs of equal due times: FIFO among ties */
		due[i] = start + (i / 2) * NSEC_PER_MSEC;
		ASSERT_OK(dqt_push_msg(&q, i, i + 1, due[i], 0, 8, i));
	}
	ASSERT_EQ(dqt_submit(&q, 0, NULL, 0, NULL), NMSG);

	dl = dqt_now_ns() + 60 * NSEC_PER_SEC;
	while (got < NMSG && dqt_now_ns() < dl) {
		uint32_t ready = dqt_ready_count(&q);
		int n;

		/* what the kernel let out: on the ring plus not yet done */
		EXPECT_LE(ready + held, CAP);
		if (!ready) {
			dqt_wait(&q, 1, 50 * NSEC_PER_MSEC);
			continue;
		}
		n = dqt_reap_track(&q, &t[got], NMSG - got);
		ASSERT_GT(n, 0);
		for (int i = 0; i < n; i++) {
			uint64_t now = dqt_now_ns();
			uint32_t id = (uint32_t)t[got + i].r.user_data;

			EXPECT_EQ(id, next);	/* due order, FIFO among ties */
			next++;
			if (id < NMSG)
				EXPECT_GE(now, due[id]);	/* never early */
			/* after a done made room: released at once */
			if (done_at && now - done_at > worst)
				worst = now - done_at;
		}
		got += (uint32_t)n;
		held += (uint32_t)n;
		/* the slow consumer: one done every 20 ms, oldest first */
		dqt_sleep_ns(20 * NSEC_PER_MSEC);
		EXPECT_EQ(dqt_done_one(&q, &t[got - held], DQ_DONE_DELIVERED), 0);
		held--;
		done_at = dqt_now_ns();
	}
	EXPECT_EQ(got, NMSG);
	/* a held-back message follows its credit within a wait's bound */
	EXPECT_LT(worst, 2 * NSEC_PER_SEC);
	while (held) {
		EXPECT_EQ(dqt_done_one(&q, &t[got - held], DQ_DONE_DELIVERED), 0);
		held--;
	}
	ASSERT_OK(dqt_track_stats(&q, &ts));
	EXPECT_EQ(ts.inflight, 0);
	EXPECT_EQ(ts.done_delivered, NMSG);
	EXPECT_GT(ts.credit_waits, 0);
	EXPECT_EQ(ts.max_inflight, CAP);
	/* nothing more comes */
	dqt_sleep_ns(50 * NSEC_PER_MSEC);
	EXPECT_EQ(dqt_ready_count(&q), 0);
	dqt_queue_fini(&q);
}

/* A message waiting for a credit is still held: cancel takes it back. */
TEST(track_cancel_waiting_for_credit)
{
	struct dq_ready_track t[4];
	struct dq_track_stats ts;
	struct dqt_queue q;

	ASSERT_OK(dqt_queue_init(&q, &TRACK(.slot_count = 4, .max_inflight = 1)));
	ASSERT_OK(dqt_push_msg(&q, 0, 1, 0, DQ_DESC_F_RELATIVE, 8, 10));
	ASSERT_OK(dqt_push_msg(&q, 1, 2, 0, DQ_DESC_F_RELATIVE, 8, 11));
	ASSERT_OK(dqt_push_msg(&q, 2, 3, 0, DQ_DESC_F_RELATIVE, 8, 12));
	ASSERT_EQ(dqt_submit(&q, 0, NULL, 0, NULL), 3);
	ASSERT_OK(wait_ready(&q, 1, 10));
	dqt_sleep_ns(20 * NSEC_PER_MSEC);
	EXPECT_EQ(dqt_ready_count(&q), 1);	/* the cap holds the others */
	EXPECT_EQ(dqt_cancel(&q, 1, 2), 0);
	ASSERT_EQ(dqt_reap_track(&q, t, 4), 1);
	EXPECT_EQ(t[0].r.user_data, 10);
	EXPECT_EQ(dqt_done_one(&q, &t[0], DQ_DONE_DELIVERED), 0);
	ASSERT_OK(wait_ready(&q, 1, 10));
	ASSERT_EQ(dqt_reap_track(&q, t, 4), 1);
	EXPECT_EQ(t[0].r.user_data, 12);	/* 11 was cancelled */
	EXPECT_EQ(dqt_done_one(&q, &t[0], DQ_DONE_DELIVERED), 0);
	ASSERT_OK(dqt_track_stats(&q, &ts));
	EXPECT_EQ(ts.inflight, 0);
	dqt_queue_fini(&q);
}

/* Closing a queue with messages in flight frees them (kmemleak: debug). */
TEST(track_close_with_inflight)
{
	struct dqt_queue q;

	ASSERT_OK(dqt_queue_init(&q, &TRACK(.slot_count = 64, .max_inflight = 8)));
	for (uint32_t i = 0; i < 64; i++)
		ASSERT_OK(dqt_push_msg(&q, i, 1, 0, DQ_DESC_F_RELATIVE, 8, i));
	ASSERT_EQ(dqt_submit(&q, 0, NULL, 0, NULL), 64);
	ASSERT_OK(wait_ready(&q, 8, 10));
	dqt_queue_fini(&q);
}

/* visibility_ns: tracked queues only, within its range, echoed back. */
TEST(track_visibility_setup)
{
	struct dq_track_stats ts;
	struct dqt_queue q;

	EXPECT_EQ(dqt_queue_init(&q, &TRACK(.slot_count = 8,
					    .visibility_ns = DQ_MIN_VISIBILITY_NS - 1)),
		  -EINVAL);
	EXPECT_EQ(dqt_queue_init(&q, &TRACK(.slot_count = 8,
					    .visibility_ns = DQ_MAX_DELAY_NS + 1)),
		  -EINVAL);
	EXPECT_EQ(dqt_queue_init(&q, &DQT_PARAMS(.slot_count = 8, .slot_size = 64,
						 .visibility_ns = NSEC_PER_SEC)),
		  -EINVAL);
	ASSERT_OK(dqt_queue_init(&q, &TRACK(.slot_count = 8,
					    .visibility_ns = NSEC_PER_SEC)));
	EXPECT_TRUE(q.setup.features & DQ_FEAT_VISIBILITY);
	EXPECT_EQ(q.setup.visibility_ns, NSEC_PER_SEC);
	ASSERT_OK(dqt_track_stats(&q, &ts));
	EXPECT_EQ(ts.visibility_ns, NSEC_PER_SEC);
	EXPECT_EQ(ts.expired, 0);
	dqt_queue_fini(&q);
}

/*
 * A consumer that never says done: after visibility_ns each message comes
 * back on the ring, in the order of its first release, redeliveries 1,
 * not before visibility_ns after the test submitted it and not much
 * later; the first delivery's DONE is then stale.  One done in time never
 * comes back.
 */
#define VIS_NS		(300 * NSEC_PER_MSEC)
#define VIS_LATE_NS	(2 * NSEC_PER_SEC)

TEST_TIMEOUT(track_visibility_redelivers, 60)
{
	struct dq_ready_track t[8], again[8];
	struct dq_track_stats ts;
	struct dqt_queue q;
	uint64_t t0, t_reaped, seen = 0;
	uint32_t got = 0;

	ASSERT_OK(dqt_queue_init(&q, &TRACK(.slot_count = 8,
					    .visibility_ns = VIS_NS)));
	t0 = dqt_now_ns();
	for (uint32_t i = 0; i < 4; i++)
		ASSERT_OK(dqt_push_msg(&q, i, 20 + i, t0 + i * NSEC_PER_MSEC, 0,
				       8, 500 + i));
	ASSERT_EQ(dqt_submit(&q, 0, NULL, 0, NULL), 4);
	for (uint64_t dl = t0 + 10 * NSEC_PER_SEC; got < 4 && dqt_now_ns() < dl;) {
		int n;

		dqt_wait(&q, 1, 50 * NSEC_PER_MSEC);
		n = dqt_reap_track(&q, t + got, 4 - got);
		ASSERT_GE(n, 0);
		got += (uint32_t)n;
	}
	ASSERT_EQ(got, 4);
	t_reaped = dqt_now_ns();
	/* the last one is done in time: it must never come back */
	EXPECT_EQ(dqt_done_one(&q, &t[3], DQ_DONE_DELIVERED), 0);

	got = 0;
	for (uint64_t dl = t_reaped + VIS_NS + 10 * NSEC_PER_SEC;
	     got < 3 && dqt_now_ns() < dl;) {
		int n;

		dqt_wait(&q, 1, 20 * NSEC_PER_MSEC);
		n = dqt_reap_track(&q, again + got, 8 - got);
		ASSERT_GE(n, 0);
		if (n && !seen)
			seen = dqt_now_ns();
		got += (uint32_t)n;
	}
	ASSERT_EQ(got, 3);
	/* never early: the first release was after t0 */
	EXPECT_GE(seen, t0 + VIS_NS);
	/* and on time: the first releases were done by t_reaped */
	EXPECT_LE(seen, t_reaped + VIS_NS + VIS_LATE_NS);
	for (uint32_t i = 0; i < 3; i++) {
		EXPECT_EQ(again[i].r.user_data, 500 + i);
		EXPECT_EQ(again[i].r.slot, i);
		EXPECT_EQ(again[i].gen, 20 + i);
		EXPECT_EQ(again[i].redeliveries, 1);
		/* the first delivery's DONE is stale now */
		EXPECT_EQ(dqt_done_one(&q, &t[i], DQ_DONE_DELIVERED), -ESTALE);
		EXPECT_EQ(dqt_done_one(&q, &again[i], DQ_DONE_DELIVERED), 0);
	}
	ASSERT_OK(dqt_track_stats(&q, &ts));
	EXPECT_EQ(ts.expired, 3);
	EXPECT_EQ(ts.inflight, 0);
	EXPECT_EQ(ts.done_delivered, 4);
	EXPECT_EQ(ts.done_refused, 3);
	/* nothing else comes back */
	dqt_sleep_ns(VIS_NS + 200 * NSEC_PER_MSEC);
	EXPECT_EQ(dqt_ready_count(&q), 0);
	dqt_queue_fini(&q);
}

TAP_MAIN()
