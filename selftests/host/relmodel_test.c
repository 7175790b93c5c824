// SPDX-License-Identifier: LGPL-2.1 OR MIT
/*
 * The release model (selftests/lib/relmodel.c) the tests judge dq with:
 * it must accept every sequence dq may produce, and catch each kind of
 * violation, with hand-made sequences whose verdict is known.
 */
#include <stdint.h>

#include "relmodel.h"
#include "tap.h"

/* Submit ids [0, n) from @src in id order, due[i], queued at t, in the engine at t + 1. */
static void submit_all(struct rm *m, const uint64_t *due, unsigned int n,
		       uint16_t src, uint64_t t)
{
	unsigned int i;

	for (i = 0; i < n; i++) {
		rm_submit(m, i, src, i, due[i], t);
		rm_in_engine(m, i, t + 1);
	}
}

static uint64_t see_all(struct rm *m, const uint32_t *seq, unsigned int n,
			uint64_t t)
{
	unsigned int i;

	for (i = 0; i < n; i++)
		rm_seen(m, seq[i], t);
	return rm_finish(m);
}

TEST(in_order_passes, 10)
{
	static const uint64_t due[] = { 10, 20, 20, 30, 40 };
	static const uint32_t seq[] = { 0, 1, 2, 3, 4 };
	struct rm m;

	ASSERT_OK(rm_init(&m, 5));
	submit_all(&m, due, 5, 0, 0);
	CHECK_EQ(see_all(&m, seq, 5, 100), 0);
	CHECK_EQ(m.max_late, 90);
	rm_free(&m);
}

TEST(random_dues_in_due_order_pass, 10)
{
	static const uint64_t due[] = { 40, 10, 30, 10, 20 };
	static const uint32_t seq[] = { 1, 3, 4, 2, 0 };
	struct rm m;

	ASSERT_OK(rm_init(&m, 5));
	submit_all(&m, due, 5, 0, 0);
	CHECK(see_all(&m, seq, 5, 100) == 0, "%s", m.first);
	rm_free(&m);
}

TEST(due_order_violation, 10)
{
	static const uint64_t due[] = { 40, 10, 30, 10, 20 };
	static const uint32_t seq[] = { 1, 3, 2, 4, 0 };	/* 30 before 20 */
	struct rm m;

	ASSERT_OK(rm_init(&m, 5));
	submit_all(&m, due, 5, 0, 0);
	CHECK_EQ(see_all(&m, seq, 5, 100), 1);
	CHECK_EQ(m.order, 1);
	DIAG("%s", m.first);
	rm_free(&m);
}

TEST(fifo_tie_violation_same_submitter, 10)
{
	static const uint64_t due[] = { 10, 10, 10 };
	static const uint32_t seq[] = { 0, 2, 1 };
	struct rm m;

	ASSERT_OK(rm_init(&m, 3));
	submit_all(&m, due, 3, 0, 0);
	CHECK_EQ(see_all(&m, seq, 3, 100), 1);
	CHECK_EQ(m.order, 1);
	DIAG("%s", m.first);
	rm_free(&m);
}

TEST(fifo_tie_across_submitters, 10)
{
	struct rm m;

	/* id 0 (src 0) in the engine at 2, id 1 (src 1) queued at 5. */
	ASSERT_OK(rm_init(&m, 2));
	rm_submit(&m, 0, 0, 0, 50, 1);
	rm_in_engine(&m, 0, 2);
	rm_submit(&m, 1, 1, 0, 50, 5);
	rm_in_engine(&m, 1, 6);
	rm_seen(&m, 1, 60);
	rm_seen(&m, 0, 60);
	CHECK_EQ(rm_finish(&m), 1);
	CHECK_EQ(m.order, 1);
	DIAG("%s", m.first);
	rm_free(&m);

	/* Submitted concurrently (overlapping): either order is fine. */
	ASSERT_OK(rm_init(&m, 2));
	rm_submit(&m, 0, 0, 0, 50, 1);
	rm_in_engine(&m, 0, 6);
	rm_submit(&m, 1, 1, 0, 50, 5);
	rm_in_engine(&m, 1, 6);
	rm_seen(&m, 1, 60);
	rm_seen(&m, 0, 60);
	CHECK(rm_finish(&m) == 0, "%s", m.first);
	rm_free(&m);
}

TEST(late_submission_may_pass_earlier_due, 10)
{
	struct rm m;

	/*
	 * id 1 (due 100) is out and seen at 120; id 0, due 50 but queued at
	 * 110 by another submitter, comes after it: legitimate.  The
	 * same with id 0 in the engine by 90 is a violation.
	 */
	ASSERT_OK(rm_init(&m, 2));
	rm_submit(&m, 1, 1, 0, 100, 0);
	rm_in_engine(&m, 1, 1);
	rm_submit(&m, 0, 0, 0, 50, 110);
	rm_in_engine(&m, 0, 111);
	rm_seen(&m, 1, 120);
	rm_seen(&m, 0, 130);
	CHECK(rm_finish(&m) == 0, "%s", m.first);
	rm_free(&m);

	ASSERT_OK(rm_init(&m, 2));
	rm_submit(&m, 1, 1, 0, 100, 0);
	rm_in_engine(&m, 1, 1);
	rm_submit(&m, 0, 0, 0, 50, 80);
	rm_in_engine(&m, 0, 90);
	rm_seen(&m, 1, 120);
	rm_seen(&m, 0, 130);
	CHECK_EQ(rm_finish(&m), 1);
	CHECK_EQ(m.order, 1);
	DIAG("%s", m.first);
	rm_free(&m);
}

TEST(same_submitter_later_due_first, 10)
{
	struct rm m;

	/* One submitter: id 0 due 50 queued before id 1 due 60: 0 first,
	 * even though it was only in the engine after 60. */
	ASSERT_OK(rm_init(&m, 2));
	rm_submit(&m, 0, 0, 0, 50, 0);
	rm_submit(&m, 1, 0, 1, 60, 0);
	rm_in_engine(&m, 0, 70);
	rm_in_engine(&m, 1, 70);
	rm_seen(&m, 1, 80);
	rm_seen(&m, 0, 80);
	CHECK_EQ(rm_finish(&m), 1);
	CHECK_EQ(m.order, 1);
	rm_free(&m);
}

TEST(early_dup_unknown_lost, 10)
{
	static const uint64_t due[] = { 10, 20, 30, 40 };
	struct rm m;

	ASSERT_OK(rm_init(&m, 4));
	submit_all(&m, due, 3, 0, 0);	/* id 3 never submitted */
	CHECK_EQ(rm_seen(&m, 0, 5), RM_EARLY);
	CHECK_EQ(rm_seen(&m, 0, 50), RM_DUP);
	CHECK_EQ(rm_seen(&m, 3, 50), RM_BAD_ID);
	CHECK_EQ(rm_seen(&m, 9, 50), RM_BAD_ID);
	CHECK_EQ(rm_seen(&m, 1, 50), 0);
	CHECK_EQ(rm_finish(&m), 5);	/* early, dup, 2 unknown, 1 lost */
	CHECK_EQ(m.early, 1);
	CHECK_EQ(m.dup, 1);
	CHECK_EQ(m.unknown, 2);
	CHECK_EQ(m.lost, 1);
	CHECK_EQ(m.order, 0);
	CHECK_EQ(rm_due(&m, 2), 30);
	CHECK(!rm_known(&m, 3));
	DIAG("%s", m.first);
	rm_free(&m);
}

TAP_MAIN()
