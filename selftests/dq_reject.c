// SPDX-License-Identifier: LGPL-2.1 OR MIT
/*
 * dq_reject: the kernel never trusts shared memory.  Bad descriptors are
 * consumed, reported and counted while good ones in the same batch go
 * through; broken ring indices are refused, counted and survivable.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>

#include "dqtest.h"
#include "tap.h"

struct bad_desc {
	const char *what;
	struct dq_desc d;
	int reason;		/* -1: accepted */
	int err;
};

TEST(reject_each_kind)
{
	struct dqt_queue q;
	struct dq_reject rej[32];
	struct dq_submit sub;
	struct dq_queue_stats st;
	const uint64_t soon = 50 * NSEC_PER_MSEC, later = 5 * NSEC_PER_SEC;
	const uint16_t R = DQ_DESC_F_RELATIVE;

	ASSERT_OK(dqt_queue_init(&q, &DQT_PARAMS(.slot_count = 16, .slot_size = 128,
						  .submit_entries = 32)));
	uint64_t now = dqt_now_ns();
	struct bad_desc b[] = {
		{ "valid, slot 0", { later, 0, 0, 16, 1, R, 0 }, -1, 0 },
		{ "slot == slot_count", { soon, 1, 16, 16, 1, R, 0 }, DQ_REJ_SLOT, -ERANGE },
		{ "slot ~0", { soon, 2, 0xffffffff, 16, 1, R, 0 }, DQ_REJ_SLOT, -ERANGE },
		{ "valid, slot 1", { soon, 3, 1, 16, 1, R, 0 }, -1, 0 },
		{ "len slot_size+1", { soon, 4, 4, 129, 1, R, 0 }, DQ_REJ_LEN, -EMSGSIZE },
		{ "len ~0", { soon, 5, 4, 0xffffffff, 1, R, 0 }, DQ_REJ_LEN, -EMSGSIZE },
		{ "flags 1<<1", { soon, 6, 4, 16, 1, 2, 0 }, DQ_REJ_FLAGS, -EOPNOTSUPP },
		{ "flags 1<<15", { soon, 7, 4, 16, 1, 0x8000 | R, 0 }, DQ_REJ_FLAGS, -EOPNOTSUPP },
		{ "resv 1", { soon, 8, 4, 16, 1, R, 1 }, DQ_REJ_RESV, -EINVAL },
		{ "absolute due now+MAX+10s", { now + DQ_MAX_DELAY_NS + 10 * NSEC_PER_SEC,
		  9, 4, 16, 1, 0, 0 }, DQ_REJ_TIME, -EOVERFLOW },
		{ "relative MAX+1s", { DQ_MAX_DELAY_NS + NSEC_PER_SEC, 10, 4, 16, 1, R, 0 },
		  DQ_REJ_TIME, -EOVERFLOW },
		{ "absolute ~0", { ~0ULL, 11, 4, 16, 1, 0, 0 }, DQ_REJ_TIME, -EOVERFLOW },
		{ "relative ~0", { ~0ULL, 12, 4, 16, 1, R, 0 }, DQ_REJ_TIME, -EOVERFLOW },
		{ "slot 0 held (busy)", { soon, 13, 0, 16, 2, R, 0 }, DQ_REJ_BUSY, -EBUSY },
		{ "valid, len == slot_size", { soon, 14, 2, 128, 1, R, 0 }, -1, 0 },
		{ "valid, relative exactly MAX", { DQ_MAX_DELAY_NS, 15, 3, 0, 1, R, 0 }, -1, 0 },
		{ "slot 1 held, same batch", { soon, 16, 1, 16, 9, R, 0 }, DQ_REJ_BUSY, -EBUSY },
	};
	const uint32_t n = sizeof(b) / sizeof(b[0]);
	uint64_t want_rej[DQ_REJ_NR] = { 0 };
	uint32_t nacc = 0, nrej = 0;

	for (uint32_t i = 0; i < n; i++) {
		ASSERT_OK(dqt_push(&q, &b[i].d));
		if (b[i].reason < 0)
			nacc++;
		else
			want_rej[b[i].reason]++, nrej++;
	}
	memset(rej, 0xa5, sizeof(rej));
	ASSERT_EQ(dqt_submit(&q, 0, rej, 32, &sub), (int)nacc);
	EXPECT_EQ(sub.accepted, nacc);
	EXPECT_EQ(sub.rejected, nrej);
	EXPECT_EQ(dqt_load_acq(q.sq.consumer), n);	/* all consumed */

	uint32_t k = 0;

	for (uint32_t i = 0; i < n && k < 32; i++) {
		if (b[i].reason < 0)
			continue;
		if (rej[k].index != i || rej[k].reason != (uint32_t)b[i].reason ||
		    rej[k].error != b[i].err || rej[k].slot != b[i].d.slot ||
		    rej[k].user_data != b[i].d.user_data)
			FAIL("%s: reject[%u] = { index %u, reason %u (%s), error %d (%s), slot %u, user_data %llu }, expected index %u reason %s error %s",
			     b[i].what, k, rej[k].index, rej[k].reason,
			     dqt_rej_name(rej[k].reason), rej[k].error,
			     strerrorname_np(-rej[k].error) ?: "?", rej[k].slot,
			     (unsigned long long)rej[k].user_data, i,
			     dqt_rej_name((uint32_t)b[i].reason),
			     strerrorname_np(-b[i].err) ?: "?");
		k++;
	}

	ASSERT_OK(dqt_queue_stats(&q, &st));
	for (int i = 0; i < DQ_REJ_NR; i++)
		if (st.rejected[i] != want_rej[i])
			FAIL("stats.rejected[%s] = %llu, expected %llu", dqt_rej_name((uint32_t)i),
			     (unsigned long long)st.rejected[i],
			     (unsigned long long)want_rej[i]);
	EXPECT_EQ(st.submitted, nacc);
	EXPECT_EQ(st.pending + st.released, nacc);
	EXPECT_EQ(st.ring_errors, 0);

	/* the accepted messages due soon arrive (slots 1 and 2), the rest wait */
	struct dq_ready r[4];
	uint32_t got;

	dqt_reap_until(&q, r, NULL, 2, dqt_now_ns() + 10 * NSEC_PER_SEC, DQT_WAIT_IOCTL, &got);
	EXPECT_EQ(got, 2);
	EXPECT_EQ(r[0].user_data, 3);
	EXPECT_EQ(r[1].user_data, 14);
	EXPECT_EQ(r[1].len, 128);
	ASSERT_OK(dqt_queue_stats(&q, &st));
	EXPECT_EQ(st.pending, 2);
	EXPECT_EQ(dqt_cancel(&q, 0, 1), 0);
	EXPECT_EQ(dqt_cancel(&q, 3, 1), 0);
	dqt_queue_fini(&q);
}

TEST(reject_cap_and_counts)
{
	struct dqt_queue q;
	struct dq_reject rej[4];
	struct dq_submit sub;
	struct dq_queue_stats st;

	ASSERT_OK(dqt_queue_init(&q, &DQT_PARAMS(.slot_count = 8, .slot_size = 64)));
	/* 5 bad (slot out of range), 2 good, interleaved */
	for (uint32_t i = 0; i < 7; i++) {
		uint32_t slot = (i == 2 || i == 5) ? i : 100 + i;

		ASSERT_OK(dqt_push_msg(&q, slot, 1, 0, DQ_DESC_F_RELATIVE, 8, i));
	}
	memset(rej, 0xa5, sizeof(rej));
	ASSERT_EQ(dqt_submit(&q, 0, rej, 2, &sub), 2);
	EXPECT_EQ(sub.accepted, 2);
	EXPECT_EQ(sub.rejected, 5);
	EXPECT_EQ(rej[0].index, 0);
	EXPECT_EQ(rej[0].slot, 100);
	EXPECT_EQ(rej[0].reason, DQ_REJ_SLOT);
	EXPECT_EQ(rej[0].error, -ERANGE);
	EXPECT_EQ(rej[1].index, 1);
	EXPECT_EQ(rej[1].slot, 101);
	/* entries past reject_cap untouched */
	uint8_t pat[sizeof(rej[0])];

	memset(pat, 0xa5, sizeof(pat));
	EXPECT_EQ(memcmp(&rej[2], pat, sizeof(pat)), 0);
	EXPECT_EQ(memcmp(&rej[3], pat, sizeof(pat)), 0);

	/* reject_cap 0 with a NULL array: counted only */
	ASSERT_OK(dqt_push_msg(&q, 200, 1, 0, DQ_DESC_F_RELATIVE, 8, 7));
	ASSERT_EQ(dqt_submit(&q, 0, NULL, 0, &sub), 0);
	EXPECT_EQ(sub.rejected, 1);
	ASSERT_OK(dqt_queue_stats(&q, &st));
	EXPECT_EQ(st.rejected[DQ_REJ_SLOT], 6);
	EXPECT_EQ(st.submitted, 2);
	EXPECT_EQ(dqt_load_acq(q.sq.consumer), 8);
	dqt_queue_fini(&q);
}

TEST(submit_max_flags_resv)
{
	struct dqt_queue q;
	struct dq_submit s;
	struct dq_queue_stats st;

	ASSERT_OK(dqt_queue_init(&q, &DQT_PARAMS(.slot_count = 16, .slot_size = 64)));
	/* nothing to submit */
	EXPECT_EQ(dqt_submit(&q, 0, NULL, 0, NULL), 0);
	for (uint32_t i = 0; i < 10; i++)
		ASSERT_OK(dqt_push_msg(&q, i, 1, NSEC_PER_SEC, DQ_DESC_F_RELATIVE, 8, i));
	EXPECT_EQ(dqt_submit(&q, 3, NULL, 0, NULL), 3);
	EXPECT_EQ(dqt_load_acq(q.sq.consumer), 3);

	memset(&s, 0, sizeof(s));
	s.flags = 1;
	EXPECT_SYSERR(ioctl(q.fd, DQ_IOC_SUBMIT, &s), EINVAL);
	memset(&s, 0, sizeof(s));
	s.resv = 1;
	EXPECT_SYSERR(ioctl(q.fd, DQ_IOC_SUBMIT, &s), EINVAL);
	EXPECT_EQ(dqt_load_acq(q.sq.consumer), 3);

	EXPECT_EQ(dqt_submit(&q, 0, NULL, 0, NULL), 7);
	EXPECT_EQ(dqt_load_acq(q.sq.consumer), 10);
	ASSERT_OK(dqt_queue_stats(&q, &st));
	EXPECT_EQ(st.submitted, 10);
	EXPECT_EQ(st.pending + st.released, 10);
	dqt_queue_fini(&q);
}

TEST(submit_bad_rejects_pointer)
{
	struct dqt_queue q;
	struct dq_submit s = { 0 };
	struct dq_queue_stats st;

	ASSERT_OK(dqt_queue_init(&q, &DQT_PARAMS(.slot_count = 4, .slot_size = 64)));
	ASSERT_OK(dqt_push_msg(&q, 99, 1, 0, DQ_DESC_F_RELATIVE, 8, 1));	/* bad slot */
	s.rejects = 16;		/* not a user address */
	s.reject_cap = 4;
	/* the reject cannot be written: -EFAULT, the descriptor consumed anyway */
	EXPECT_SYSERR(ioctl(q.fd, DQ_IOC_SUBMIT, &s), EFAULT);
	EXPECT_EQ(dqt_load_acq(q.sq.consumer), 1);
	s.rejects = ~0ULL - 64;	/* kernel half */
	ASSERT_OK(dqt_push_msg(&q, 98, 1, 0, DQ_DESC_F_RELATIVE, 8, 2));
	EXPECT_SYSERR(ioctl(q.fd, DQ_IOC_SUBMIT, &s), EFAULT);
	EXPECT_EQ(dqt_load_acq(q.sq.consumer), 2);

	/* the queue still works and ends with the ring fully consumed */
	ASSERT_OK(dqt_push_msg(&q, 0, 1, 0, DQ_DESC_F_RELATIVE, 8, 3));
	EXPECT_EQ(dqt_submit(&q, 0, NULL, 0, NULL), 1);
	EXPECT_EQ(dqt_load_acq(q.sq.consumer), dqt_load_acq(q.sq.producer));
	ASSERT_OK(dqt_queue_stats(&q, &st));
	EXPECT_EQ(st.rejected[DQ_REJ_SLOT], 2);
	EXPECT_EQ(st.submitted, 1);
	dqt_queue_fini(&q);
}

static void expect_eproto(struct dqt_queue *q, uint32_t bad_prod, const char *what)
{
	struct dq_queue_stats before, after;
	uint32_t cons = dqt_load_acq(q->sq.consumer);

	ASSERT_OK(dqt_queue_stats(q, &before));
	dqt_store_rel(q->sq.producer, bad_prod);
	errno = 0;
	int r = ioctl(q->fd, DQ_IOC_SUBMIT, &(struct dq_submit){ 0 });

	if (r != -1 || errno != EPROTO)
		FAIL("%s (producer %u, consumer %u): ret %d errno %s, expected EPROTO",
		     what, bad_prod, cons, r, strerrorname_np(errno) ?: "0");
	EXPECT_EQ(dqt_load_acq(q->sq.consumer), cons);	/* nothing consumed */
	ASSERT_OK(dqt_queue_stats(q, &after));
	EXPECT_GT(after.ring_errors, before.ring_errors);
	EXPECT_EQ(after.submitted, before.submitted);
	EXPECT_EQ(after.pending, before.pending);
	for (int i = 0; i < DQ_REJ_NR; i++)
		EXPECT_EQ(after.rejected[i], before.rejected[i]);
	EXPECT_TRUE(*q->sq.flags & DQ_RING_F_BROKEN);
}

TEST(garbage_submit_producer)
{
	struct dqt_queue q;
	struct dq_queue_stats st;

	ASSERT_OK(dqt_queue_init(&q, &DQT_PARAMS(.slot_count = 64, .slot_size = 64,
						  .submit_entries = 16)));
	uint32_t nr = q.sq.nr;

	/* a normal start: 3 pending far in the future */
	for (uint32_t i = 0; i < 3; i++)
		ASSERT_OK(dqt_push_msg(&q, i, 1, 10 * NSEC_PER_SEC, DQ_DESC_F_RELATIVE, 8, i));
	ASSERT_EQ(dqt_submit(&q, 0, NULL, 0, NULL), 3);
	EXPECT_EQ(*q.sq.flags & DQ_RING_F_BROKEN, 0);
	uint32_t cons = dqt_load_acq(q.sq.consumer);

	ASSERT_EQ(cons, 3);
	expect_eproto(&q, cons + nr + 1, "producer ring_entries+1 ahead");
	expect_eproto(&q, cons - 1, "producer behind the consumer");
	expect_eproto(&q, cons + 0x80000000U, "producer 2^31 ahead");
	expect_eproto(&q, 0xdeadbeef, "producer 0xdeadbeef");

	/* fixing the index makes it work again */
	dqt_store_rel(q.sq.producer, cons);
	for (uint32_t i = 3; i < 6; i++)
		ASSERT_OK(dqt_push_msg(&q, i, 1, 0, DQ_DESC_F_RELATIVE, 8, i));
	EXPECT_EQ(dqt_submit(&q, 0, NULL, 0, NULL), 3);
	EXPECT_EQ(dqt_load_acq(q.sq.consumer), cons + 3);

	/* exactly ring_entries ahead is a full ring, not an error */
	cons += 3;
	for (uint32_t i = 0; i < nr; i++)
		ASSERT_OK(dqt_push_msg(&q, 6 + i, 1, 10 * NSEC_PER_SEC,
				       DQ_DESC_F_RELATIVE, 8, 6 + i));
	EXPECT_EQ(dqt_load_acq(q.sq.producer) - cons, nr);
	EXPECT_EQ(dqt_submit(&q, 0, NULL, 0, NULL), (int)nr);

	struct dq_ready r[3];
	uint32_t got;

	dqt_reap_until(&q, r, NULL, 3, dqt_now_ns() + 10 * NSEC_PER_SEC, DQT_WAIT_IOCTL, &got);
	EXPECT_EQ(got, 3);
	ASSERT_OK(dqt_queue_stats(&q, &st));
	EXPECT_EQ(st.submitted, 6 + nr);
	EXPECT_GE(st.ring_errors, 4);
	DIAG("ring_errors %llu after 4 refused submits", (unsigned long long)st.ring_errors);
	dqt_queue_fini(&q);
}

/*
 * User space scribbles its ready ring consumer index.  The kernel must not
 * post past the last sane consumer, must count the error, and once the index
 * is fixed every message must still arrive, once, in order.
 */
static void garbage_ready_round(uint32_t bad_delta, int ahead)
{
	struct dqt_queue q;
	struct dq_queue_stats st;
	const uint32_t n = 40;
	struct dq_ready r[64];
	uint32_t got;

	ASSERT_OK(dqt_queue_init(&q, &DQT_PARAMS(.slot_count = 64, .slot_size = 64,
						  .ready_entries = 16)));
	uint32_t nr = q.rq.nr;

	ASSERT_LT(nr, n);
	/* three go through normally */
	for (uint32_t i = 0; i < 3; i++)
		ASSERT_OK(dqt_push_msg(&q, i, 1, 0, DQ_DESC_F_RELATIVE, 8, 1000 + i));
	ASSERT_EQ(dqt_submit(&q, 0, NULL, 0, NULL), 3);
	dqt_reap_until(&q, r, NULL, 3, dqt_now_ns() + 10 * NSEC_PER_SEC, DQT_WAIT_IOCTL, &got);
	ASSERT_EQ(got, 3);
	uint32_t good_cons = *q.rq.consumer;
	uint32_t prod0 = dqt_load_acq(q.rq.producer);

	ASSERT_EQ(prod0, good_cons);

	/* scribble the consumer: ahead of the producer, or far behind it */
	uint32_t bad = ahead ? good_cons + bad_delta : good_cons - nr - bad_delta;

	dqt_store_rel(q.rq.consumer, bad);
	uint64_t t0 = dqt_now_ns();
	uint64_t base = t0 + 20 * NSEC_PER_MSEC;

	for (uint32_t i = 0; i < n; i++)
		ASSERT_OK(dqt_push_msg(&q, 3 + i, 1, base + i * 100 * NSEC_PER_USEC,
				       0, 8, i));
	ASSERT_EQ(dqt_submit(&q, 0, NULL, 0, NULL), (int)n);

	/* wait until the engine has let everything go (to the ring or backlog) */
	uint64_t deadline = base + 20 * NSEC_PER_SEC;

	do {
		dqt_sleep_ns(5 * NSEC_PER_MSEC);
		ASSERT_OK(dqt_queue_stats(&q, &st));
	} while (st.pending && dqt_now_ns() < deadline);
	EXPECT_EQ(st.pending, 0);
	dqt_sleep_ns(20 * NSEC_PER_MSEC);
	ASSERT_OK(dqt_queue_stats(&q, &st));

	uint32_t prod = dqt_load_acq(q.rq.producer);

	DIAG("consumer scribbled to %u (sane %u): producer %u, released %llu, backlog %llu, ring_errors %llu, flags 0x%x",
	     bad, good_cons, prod, (unsigned long long)st.released,
	     (unsigned long long)st.ready_backlog, (unsigned long long)st.ring_errors,
	     *q.rq.flags);
	/* never more than ring_entries past the last sane consumer */
	EXPECT_LE(prod - good_cons, nr);
	EXPECT_GE(st.ring_errors, 1);
	EXPECT_TRUE(*q.rq.flags & DQ_RING_F_BROKEN);
	EXPECT_EQ(st.released + st.ready_backlog, 3 + n);

	/* fix it and drain: all n arrive, once, in due order */
	dqt_store_rel(q.rq.consumer, good_cons);
	dqt_reap_until(&q, r, NULL, n, dqt_now_ns() + 20 * NSEC_PER_SEC, DQT_WAIT_MIXED, &got);
	EXPECT_EQ(got, n);
	for (uint32_t i = 0; i < got; i++) {
		if (r[i].user_data != i) {
			FAIL("after recovery ready[%u] = %llu, expected %u", i,
			     (unsigned long long)r[i].user_data, i);
			break;
		}
		EXPECT_GE(r[i].release_ns, r[i].due_ns);
	}
	dqt_sleep_ns(20 * NSEC_PER_MSEC);
	EXPECT_EQ(dqt_ready_count(&q), 0);
	ASSERT_OK(dqt_queue_stats(&q, &st));
	EXPECT_EQ(st.released, 3 + n);
	EXPECT_EQ(st.ready_backlog, 0);
	EXPECT_EQ(st.pending, 0);

	/* and it keeps working */
	ASSERT_OK(dqt_push_msg(&q, 0, 2, 0, DQ_DESC_F_RELATIVE, 8, 77));
	EXPECT_EQ(dqt_submit(&q, 0, NULL, 0, NULL), 1);
	dqt_reap_until(&q, r, NULL, 1, dqt_now_ns() + 10 * NSEC_PER_SEC, DQT_WAIT_IOCTL, &got);
	EXPECT_EQ(got, 1);
	EXPECT_EQ(r[0].user_data, 77);
	dqt_queue_fini(&q);
}

TEST(garbage_ready_consumer_ahead)
{
	garbage_ready_round(1000, 1);
}

TEST(garbage_ready_consumer_behind)
{
	garbage_ready_round(5, 0);
}

TEST(kernel_owned_indices_scribbled)
{
	/*
	 * The submit ring's consumer and the ready ring's producer are the
	 * kernel's; user space writing them must not make the kernel re-read
	 * old descriptors or post at the wrong place.
	 */
	struct dqt_queue q;
	struct dq_submit sub;
	struct dq_ready r[4];
	uint32_t got;

	ASSERT_OK(dqt_queue_init(&q, &DQT_PARAMS(.slot_count = 16, .slot_size = 64,
						  .submit_entries = 16, .ready_entries = 16)));
	for (uint32_t i = 0; i < 6; i++)
		ASSERT_OK(dqt_push_msg(&q, i, 1, 20 * NSEC_PER_SEC, DQ_DESC_F_RELATIVE, 8, i));
	ASSERT_EQ(dqt_submit(&q, 0, NULL, 0, NULL), 6);
	ASSERT_EQ(dqt_load_acq(q.sq.consumer), 6);

	/* consumer pulled back: a trusting kernel would re-submit 3..5 (BUSY) */
	dqt_store_rel(q.sq.consumer, 3);
	struct dq_desc d = { .due_ns = 0, .user_data = 6, .slot = 6, .len = 8,
			     .gen = 1, .flags = DQ_DESC_F_RELATIVE };

	*dqt_sq_entry(&q, 6) = d;
	dqt_store_rel(q.sq.producer, 7);
	errno = 0;
	int ret = dqt_submit(&q, 0, NULL, 0, &sub);

	EXPECT_EQ(ret, 1);
	EXPECT_EQ(sub.rejected, 0);
	EXPECT_EQ(dqt_load_acq(q.sq.consumer), 7);

	dqt_reap_until(&q, r, NULL, 1, dqt_now_ns() + 10 * NSEC_PER_SEC, DQT_WAIT_IOCTL, &got);
	ASSERT_EQ(got, 1);
	EXPECT_EQ(r[0].user_data, 6);
	uint32_t prod = dqt_load_acq(q.rq.producer);

	/* ready producer pushed forward: the next entry still lands at prod */
	dqt_store_rel(q.rq.producer, prod + 5);
	d.slot = 7;
	d.user_data = 7;
	ASSERT_OK(dqt_push(&q, &d));
	EXPECT_EQ(dqt_submit(&q, 0, NULL, 0, NULL), 1);
	uint64_t dl = dqt_now_ns() + 10 * NSEC_PER_SEC;

	while (dqt_load_acq(q.rq.producer) == prod + 5 && dqt_now_ns() < dl)
		dqt_sleep_ns(NSEC_PER_MSEC);
	EXPECT_EQ(dqt_load_acq(q.rq.producer), prod + 1);
	EXPECT_EQ(dqt_rq_entry(&q, prod)->user_data, 7);

	struct dq_queue_stats st;

	ASSERT_OK(dqt_queue_stats(&q, &st));
	EXPECT_EQ(st.submitted, 8);
	EXPECT_EQ(st.released, 2);
	EXPECT_EQ(st.pending, 6);
	for (int i = 0; i < DQ_REJ_NR; i++)
		EXPECT_EQ(st.rejected[i], 0);
	dqt_queue_fini(&q);
}

TAP_MAIN()
