// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit suites for dq.ko internals (dq_kunit.ko; needs CONFIG_KUNIT and a
 * loaded dq.ko, whose VISIBLE_IF_KUNIT helpers it uses).
 *
 *   dq_wheel   the release structure (dq_wheel.c, compiled in here)
 *   dq_pacing  the GCRA token bucket of paced queues
 *   dq_slack   the adaptive timer slack (dq_slack.h, shared with
 *              libdqshim): density estimate, slack rule, fixed mode
 *   dq_desc    descriptor validation, one case per reject reason
 *   dq_ring    ring index arithmetic: wrap at 2^32, broken indices
 *   dq_queue   the same through real queues: submit, release, cancel,
 *              counters, the engine's slack
 *
 * Built and run by scripts/kunit.sh against the debug kernel.
 */
#include <kunit/test.h>
#include <linux/delay.h>
#include <linux/jiffies.h>
#include <linux/ktime.h>
#include <linux/math64.h>
#include <linux/module.h>
#include <linux/prandom.h>
#include <linux/slab.h>
#include <net/net_namespace.h>

#include "dq.h"
#include "dq_compat.h"

/*
 * The wheel is tested from its source, so the exact code dq.ko runs (and
 * libdqshim embeds) is exercised without exporting it.
 */
#include "../shared/dq_wheel.c"

/* ------------------------------------------------------------------ */
/* dq_wheel                                                            */
/* ------------------------------------------------------------------ */

#define TICK		DQ_WHEEL_TICK_NS

/*
 * The records are the wheel's index i = e[i] (one directory chunk: nr <=
 * DQ_WHEEL_DIR_SIZE); seq[i] is the test's own insertion counter.
 */
struct wt {
	struct dq_wheel *w;		/* ~161 KiB: wt_wheel_alloc() */
	struct dq_wheel_node *dir[1];
	unsigned int nr;
	u64 next_seq;
	u64 *seq;
	struct dq_wheel_node e[];
};

static int wt_wheel_init(struct kunit_resource *res, void *context)
{
	struct dq_wheel *w = kvzalloc(sizeof(*w), GFP_KERNEL);

	res->data = w;
	return w ? 0 : -ENOMEM;
}

static void wt_wheel_free(struct kunit_resource *res)
{
	kvfree(res->data);
}

/* A wheel freed with the test: too big for kunit_kzalloc()'s kmalloc. */
static struct dq_wheel *wt_wheel_alloc(struct kunit *test)
{
	return kunit_alloc_resource(test, wt_wheel_init, wt_wheel_free,
				    GFP_KERNEL, NULL);
}

static struct wt *wt_new(struct kunit *test, unsigned int nr)
{
	struct wt *t = kunit_kzalloc(test, struct_size(t, e, nr), GFP_KERNEL);

	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, t);
	KUNIT_ASSERT_LE(test, nr, DQ_WHEEL_DIR_SIZE);
	t->seq = kunit_kcalloc(test, nr ? nr : 1, sizeof(*t->seq), GFP_KERNEL);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, t->seq);
	t->w = wt_wheel_alloc(test);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, t->w);
	t->nr = nr;
	t->dir[0] = t->e;
	dq_wheel_init(t->w, t->dir);
	return t;
}

static void wt_insert(struct wt *t, unsigned int i, u64 due, u64 now)
{
	t->e[i].due = due;
	t->seq[i] = t->next_seq++;
	dq_wheel_insert(t->w, i, now);
}

/* The level of the bucket that holds record @i, or -1. */
static int wt_level(struct wt *t, u32 i)
{
	unsigned int l;

	for (l = 0; l < DQ_WHEEL_LISTS; l++) {
		u32 idx;

		for (idx = t->w->list[l].head; idx < DQ_WHEEL_END;
		     idx = t->e[idx].next)
			if (idx == i)
				return dq_wheel_bucket_level(dq_wheel_list_bucket(l));
	}
	return -1;
}

/* Advance to @now; record the released entries' indexes in @out. */
static unsigned int wt_advance(struct wt *t, u64 now, u32 *out,
			       unsigned int cap)
{
	struct dq_ilist done;
	unsigned int got, k = 0;

	dq_ilist_init(&done);
	got = dq_wheel_advance(t->w, now, &done, UINT_MAX);
	while (!dq_ilist_empty(&done)) {
		u32 idx = dq_ilist_pop(t->w, &done);

		if (out && k < cap)
			out[k] = idx;
		k++;
	}
	WARN_ON(k != got);
	return got;
}

static void wheel_init_empty(struct kunit *test)
{
	struct wt *t = wt_new(test, 0);

	KUNIT_EXPECT_TRUE(test, dq_wheel_empty(t->w));
	KUNIT_EXPECT_EQ(test, dq_wheel_next(t->w), U64_MAX);
	KUNIT_EXPECT_EQ(test, wt_advance(t, U64_MAX, NULL, 0), 0U);
	KUNIT_EXPECT_EQ(test, t->w->cascaded, 0ULL);
}

static void wheel_insert_expire(struct kunit *test)
{
	struct wt *t = wt_new(test, 1);
	u64 now = 1000000, due = now + 5000;
	u32 idx = ~0U;

	wt_insert(t, 0, due, now);
	KUNIT_EXPECT_EQ(test, t->w->count, 1ULL);
	KUNIT_EXPECT_GE(test, dq_wheel_next(t->w), due);
	KUNIT_EXPECT_EQ(test, wt_advance(t, due - 1, NULL, 0), 0U);
	KUNIT_EXPECT_EQ(test, wt_advance(t, dq_wheel_next(t->w), &idx, 1), 1U);
	KUNIT_EXPECT_EQ(test, idx, 0U);
	KUNIT_EXPECT_TRUE(test, dq_wheel_empty(t->w));
	KUNIT_EXPECT_EQ(test, dq_wheel_next(t->w), U64_MAX);
}

/* The first insert into an empty wheel restarts base at now's tick. */
static void wheel_empty_restarts_base(struct kunit *test)
{
	struct wt *t = wt_new(test, 1);
	u64 now = (5ULL << 40) + 777;

	wt_insert(t, 0, now + 3 * TICK, now);
	KUNIT_EXPECT_EQ(test, t->w->base, now & ~(TICK - 1));
	/* Three ticks out: level 0, no cascade on the way. */
	KUNIT_EXPECT_EQ(test, wt_level(t, 0), 0);
	KUNIT_EXPECT_EQ(test, wt_advance(t, now + 4 * TICK, NULL, 0), 1U);
	KUNIT_EXPECT_EQ(test, t->w->cascaded, 0ULL);
}

/* Entries inserted in reverse due order come out sorted. */
static void wheel_order_reverse(struct kunit *test)
{
	struct wt *t = wt_new(test, 32);
	u32 out[32];
	unsigned int i;

	/* Same level-0 bucket: forces the bucket sort. */
	for (i = 0; i < 16; i++)
		wt_insert(t, i, 3 * TICK + 15 - i, 0);
	/* Spread over higher levels, also reversed. */
	for (i = 16; i < 32; i++)
		wt_insert(t, i, (u64)(48 - i) << 20, 0);
	KUNIT_ASSERT_EQ(test, wt_advance(t, U64_MAX, out, 32), 32U);
	for (i = 0; i < 16; i++)
		KUNIT_EXPECT_EQ(test, out[i], 15 - i);
	for (i = 16; i < 32; i++)
		KUNIT_EXPECT_EQ(test, out[i], 47 - i);
}

/* Equal due times leave in insertion order. */
static void wheel_fifo_ties(struct kunit *test)
{
	struct wt *t = wt_new(test, 40);
	u32 out[40];
	unsigned int i;

	/* An unsorted bucket: ties must keep FIFO order through the sort. */
	for (i = 0; i < 20; i++)
		wt_insert(t, i, i % 2 ? 5 * TICK + 7 : 5 * TICK + 3, 0);
	KUNIT_ASSERT_EQ(test, wt_advance(t, 6 * TICK, out, 20), 20U);
	for (i = 0; i < 10; i++) {
		KUNIT_EXPECT_EQ(test, out[i], 2 * i);
		KUNIT_EXPECT_EQ(test, out[10 + i], 2 * i + 1);
	}
	/* Far out, through cascades, inserted at different times. */
	for (i = 20; i < 40; i++)
		wt_insert(t, i, 1ULL << 40, 6 * TICK + i * 100000);
	KUNIT_ASSERT_EQ(test, wt_advance(t, (1ULL << 40) + TICK, out, 40), 20U);
	for (i = 0; i < 20; i++)
		KUNIT_EXPECT_EQ(test, out[i], 20 + i);
}

/* Past-due entries are released first, in (due, insertion) order. */
static void wheel_past_due(struct kunit *test)
{
	struct wt *t = wt_new(test, 4);
	u64 now = 1ULL << 30;
	u32 out[4];

	wt_insert(t, 0, now + 10 * TICK, now);
	wt_insert(t, 1, now - 5000, now);
	wt_insert(t, 2, 17, now);
	wt_insert(t, 3, now - 5000, now);
	/* Due already: the next work is within the current tick. */
	KUNIT_EXPECT_LE(test, dq_wheel_next(t->w), now + TICK - 1);
	KUNIT_ASSERT_EQ(test, wt_advance(t, now + TICK, out, 4), 3U);
	KUNIT_EXPECT_EQ(test, out[0], 2U);
	KUNIT_EXPECT_EQ(test, out[1], 1U);
	KUNIT_EXPECT_EQ(test, out[2], 3U);
	KUNIT_EXPECT_EQ(test, wt_advance(t, now + 11 * TICK, out, 4), 1U);
	KUNIT_EXPECT_EQ(test, out[0], 0U);
}

static void wheel_remove(struct kunit *test)
{
	struct wt *t = wt_new(test, 3);
	u32 out[3];

	wt_insert(t, 0, 2 * TICK, 0);
	wt_insert(t, 1, 2 * TICK + 1, 0);
	wt_insert(t, 2, 9 * TICK, 0);
	dq_wheel_remove(t->w, 1);
	KUNIT_EXPECT_EQ(test, t->w->count, 2ULL);
	/* Removing the last entry of a bucket frees the bucket. */
	dq_wheel_remove(t->w, 0);
	KUNIT_EXPECT_EQ(test, dq_wheel_next(t->w), 9 * TICK + TICK - 1);
	KUNIT_ASSERT_EQ(test, wt_advance(t, U64_MAX, out, 3), 1U);
	KUNIT_EXPECT_EQ(test, out[0], 2U);
	KUNIT_EXPECT_TRUE(test, dq_wheel_empty(t->w));
}

/* Remove an entry that already moved down a level; nothing else moves. */
static void wheel_remove_after_cascade(struct kunit *test)
{
	struct wt *t = wt_new(test, 2);
	u64 due = (3ULL << DQ_WHEEL_SHIFT2) + (5ULL << DQ_WHEEL_SHIFT1) + 9;

	wt_insert(t, 0, due, 0);
	wt_insert(t, 1, due + (1ULL << dq_wheel_shift(3)), 0);
	KUNIT_EXPECT_EQ(test, wt_level(t, 0), 2);
	/* The level-2 bucket starts at 3 << shift(2): cascading, not releasing. */
	KUNIT_EXPECT_EQ(test, wt_advance(t, 3ULL << DQ_WHEEL_SHIFT2, NULL, 0), 0U);
	KUNIT_EXPECT_EQ(test, t->w->cascaded, 1ULL);
	KUNIT_EXPECT_EQ(test, wt_level(t, 0), 1);
	dq_wheel_remove(t->w, 0);
	KUNIT_EXPECT_EQ(test, t->w->count, 1ULL);
	KUNIT_EXPECT_EQ(test, wt_advance(t, due + TICK, NULL, 0), 0U);
	dq_wheel_remove(t->w, 1);
	KUNIT_EXPECT_TRUE(test, dq_wheel_empty(t->w));
	KUNIT_EXPECT_EQ(test, dq_wheel_next(t->w), U64_MAX);
}

/*
 * A level-0 bucket spans one tick; the timer is armed for its last
 * nanosecond (dq_wheel_next()), but a run with the clock inside the tick
 * lets out what is due at it: never early, at most a tick late.
 */
static void wheel_tick_boundary_exact(struct kunit *test)
{
	struct wt *t = wt_new(test, 1);
	u64 due = 40 * TICK;		/* first ns of a bucket */

	wt_insert(t, 0, due, 0);
	KUNIT_EXPECT_EQ(test, dq_wheel_next(t->w), due + TICK - 1);
	KUNIT_EXPECT_EQ(test, wt_advance(t, due - 1, NULL, 0), 0U);
	/* The clock inside the tick, at the due time: it leaves. */
	KUNIT_EXPECT_EQ(test, wt_advance(t, due, NULL, 0), 1U);
	KUNIT_EXPECT_TRUE(test, dq_wheel_empty(t->w));
}

static void wheel_tick_boundary_before(struct kunit *test)
{
	struct wt *t = wt_new(test, 1);
	u64 due = 40 * TICK - 1;	/* last ns of a bucket */

	wt_insert(t, 0, due, 0);
	KUNIT_EXPECT_EQ(test, dq_wheel_next(t->w), due);
	KUNIT_EXPECT_EQ(test, wt_advance(t, due - 1, NULL, 0), 0U);
	KUNIT_EXPECT_EQ(test, wt_advance(t, due, NULL, 0), 1U);
}

static void wheel_tick_boundary_after(struct kunit *test)
{
	struct wt *t = wt_new(test, 2);
	u64 due = 40 * TICK + 1;

	wt_insert(t, 0, due, 0);
	wt_insert(t, 1, due + 3, 0);
	KUNIT_EXPECT_EQ(test, dq_wheel_next(t->w), 41 * TICK - 1);
	KUNIT_EXPECT_EQ(test, wt_advance(t, due - 1, NULL, 0), 0U);
	KUNIT_EXPECT_EQ(test, wt_advance(t, due, NULL, 0), 1U);
	KUNIT_EXPECT_EQ(test, wt_advance(t, due + 2, NULL, 0), 0U);
	KUNIT_EXPECT_EQ(test, wt_advance(t, due + 3, NULL, 0), 1U);
}

/* Exactly at a level-L boundary from base 0: one cascade, straight to 0. */
static void wheel_level_boundary(struct kunit *test)
{
	struct wt *t = wt_new(test, 8);
	unsigned int level;

	for (level = 1; level < DQ_WHEEL_LEVELS; level++) {
		u64 due = 1ULL << dq_wheel_shift(level);

		dq_wheel_init(t->w, t->dir);
		wt_insert(t, level - 1, due, 0);
		KUNIT_EXPECT_EQ(test, wt_level(t, level - 1), (int)level);
		KUNIT_EXPECT_EQ(test, dq_wheel_next(t->w), due);
		KUNIT_EXPECT_EQ(test, wt_advance(t, due - 1, NULL, 0), 0U);
		KUNIT_EXPECT_EQ(test, t->w->cascaded, 0ULL);
		/* Cascaded to level 0 and, due, released in the same run. */
		KUNIT_EXPECT_EQ(test, wt_advance(t, due, NULL, 0), 1U);
		KUNIT_EXPECT_EQ(test, t->w->cascaded, 1ULL);
		KUNIT_EXPECT_TRUE(test, dq_wheel_empty(t->w));
	}
}

/*
 * A due time with a non-zero index at every level up to L moves down one
 * level per cascade: exactly L cascades, then one release.
 */
static void wheel_cascade_counts(struct kunit *test)
{
	struct wt *t = wt_new(test, 1);
	unsigned int top, k;

	for (top = 0; top < DQ_WHEEL_LEVELS; top++) {
		u64 due = 0;

		for (k = 0; k <= top; k++)
			due |= 1ULL << dq_wheel_shift(k);
		dq_wheel_init(t->w, t->dir);
		wt_insert(t, 0, due, 0);
		KUNIT_EXPECT_EQ(test, wt_level(t, 0), (int)top);
		KUNIT_EXPECT_EQ(test, wt_advance(t, due - 1, NULL, 0), 0U);
		KUNIT_EXPECT_EQ(test, t->w->cascaded, (u64)top);
		KUNIT_EXPECT_EQ(test, wt_advance(t, due | (TICK - 1), NULL, 0), 1U);
		KUNIT_EXPECT_EQ(test, t->w->cascaded, (u64)top);
	}
}

/* Due times near U64_MAX: the top level, no overflow anywhere. */
static void wheel_far_future(struct kunit *test)
{
	struct wt *t = wt_new(test, 3);
	u32 out[3];

	wt_insert(t, 0, U64_MAX, 1000);
	wt_insert(t, 1, U64_MAX - TICK, 1000);
	wt_insert(t, 2, U64_MAX, 1000);
	KUNIT_EXPECT_EQ(test, wt_level(t, 0), DQ_WHEEL_LEVELS - 1);
	/* U64_MAX - TICK is the last ns of the second-to-last tick. */
	KUNIT_EXPECT_EQ(test, wt_advance(t, U64_MAX - TICK - 1, NULL, 0), 0U);
	KUNIT_ASSERT_EQ(test, wt_advance(t, U64_MAX - TICK, out, 3), 1U);
	KUNIT_EXPECT_EQ(test, out[0], 1U);
	KUNIT_EXPECT_EQ(test, wt_advance(t, U64_MAX - 1, NULL, 0), 0U);
	KUNIT_EXPECT_EQ(test, dq_wheel_next(t->w), U64_MAX);
	KUNIT_ASSERT_EQ(test, wt_advance(t, U64_MAX, out, 3), 2U);
	KUNIT_EXPECT_EQ(test, out[0], 0U);
	KUNIT_EXPECT_EQ(test, out[1], 2U);
}

/* Base near 2^63: due times on both sides of bit 63. */
static void wheel_base_near_2_63(struct kunit *test)
{
	struct wt *t = wt_new(test, 3);
	u64 b = 1ULL << 63;
	u32 out[3];

	wt_insert(t, 0, b + 10, b - 5000);
	wt_insert(t, 1, b - 100, b - 5000);
	wt_insert(t, 2, b + 3 * TICK, b - 5000);
	KUNIT_EXPECT_EQ(test, wt_level(t, 0), DQ_WHEEL_LEVELS - 1);
	KUNIT_EXPECT_EQ(test, wt_advance(t, b - 101, NULL, 0), 0U);
	KUNIT_ASSERT_EQ(test, wt_advance(t, b - 1, out, 3), 1U);
	KUNIT_EXPECT_EQ(test, out[0], 1U);
	KUNIT_EXPECT_EQ(test, wt_advance(t, b + 9, NULL, 0), 0U);
	KUNIT_ASSERT_EQ(test, wt_advance(t, b + TICK - 1, out, 3), 1U);
	KUNIT_EXPECT_EQ(test, out[0], 0U);
	KUNIT_ASSERT_EQ(test, wt_advance(t, b + 4 * TICK, out, 3), 1U);
	KUNIT_EXPECT_EQ(test, out[0], 2U);
}

/* The clock itself close to U64_MAX: the last bucket still releases. */
static void wheel_wrap_top(struct kunit *test)
{
	struct wt *t = wt_new(test, 2);
	u64 now = U64_MAX - 5000;
	u32 out[2];

	wt_insert(t, 0, U64_MAX - 10, now);
	wt_insert(t, 1, now - 1, now);
	KUNIT_EXPECT_GE(test, dq_wheel_next(t->w), now - 1);
	KUNIT_ASSERT_EQ(test, wt_advance(t, U64_MAX, out, 2), 2U);
	KUNIT_EXPECT_EQ(test, out[0], 1U);
	KUNIT_EXPECT_EQ(test, out[1], 0U);
	KUNIT_EXPECT_TRUE(test, dq_wheel_empty(t->w));
}

/* next() names the earliest work over all levels. */
static void wheel_next_earliest(struct kunit *test)
{
	struct wt *t = wt_new(test, 3);

	wt_insert(t, 0, 1ULL << 35, 0);
	KUNIT_EXPECT_EQ(test, dq_wheel_next(t->w), 1ULL << 35);
	/* Level 1: its bucket's start. */
	wt_insert(t, 1, 1ULL << 23, 0);
	KUNIT_EXPECT_EQ(test, dq_wheel_next(t->w), 1ULL << 23);
	wt_insert(t, 2, 5 * TICK + 3, 0);
	KUNIT_EXPECT_EQ(test, dq_wheel_next(t->w), 6 * TICK - 1);
	dq_wheel_remove(t->w, 2);
	KUNIT_EXPECT_EQ(test, dq_wheel_next(t->w), 1ULL << 23);
}

/* A run stopped by its budget resumes where it stopped, in order. */
static void wheel_budget_resume(struct kunit *test)
{
	struct wt *t = wt_new(test, 100);
	unsigned int i, got = 0, calls = 0;
	struct dq_ilist done;
	u32 next = 0;

	dq_ilist_init(&done);
	for (i = 0; i < 100; i++)
		wt_insert(t, i, (1ULL << 24) + (i % 7) * TICK + i, 0);
	/* Sort what we expect: (due, seq); seq is insertion order. */
	while (!dq_wheel_empty(t->w) && calls < 1000) {
		got += dq_wheel_advance(t->w, 1ULL << 25, &done, 7);
		calls++;
	}
	KUNIT_EXPECT_EQ(test, got, 100U);
	KUNIT_EXPECT_GT(test, calls, 14U);
	i = 0;
	while (!dq_ilist_empty(&done)) {
		u32 idx = dq_ilist_pop(t->w, &done);
		struct dq_wheel_node *e = &t->e[idx];

		if (i++) {
			struct dq_wheel_node *p = &t->e[next];

			KUNIT_EXPECT_TRUE(test, p->due < e->due ||
					  (p->due == e->due &&
					   t->seq[next] < t->seq[idx]));
		}
		next = idx;
	}
}

/*
 * dq.ko's wheel finds a record through its directory: records in two
 * chunks apart in memory, linked across them, keep (due, insertion)
 * order, and removal works from either chunk.
 */
static void wheel_dir_chunks(struct kunit *test)
{
	struct dq_wheel_node *c0, *c1;
	struct dq_wheel_node **dir;
	struct dq_wheel *w;
	struct dq_ilist done;
	u32 out[4], k = 0;

	w = wt_wheel_alloc(test);
	dir = kunit_kcalloc(test, 2, sizeof(*dir), GFP_KERNEL);
	c0 = kunit_kcalloc(test, DQ_WHEEL_DIR_SIZE, sizeof(*c0), GFP_KERNEL);
	c1 = kunit_kcalloc(test, DQ_WHEEL_DIR_SIZE, sizeof(*c1), GFP_KERNEL);
	KUNIT_ASSERT_TRUE(test, w && dir && c0 && c1);
	/* Two allocations: nothing assumes one array. */
	dir[0] = c0;
	dir[1] = c1;
	dq_wheel_init(w, dir);
	c0[5].due = 3 * TICK;
	dq_wheel_insert(w, 5, 0);
	c1[7].due = 2 * TICK;
	dq_wheel_insert(w, DQ_WHEEL_DIR_SIZE + 7, 0);
	c1[1].due = 3 * TICK;			/* a tie with 5, inserted later */
	dq_wheel_insert(w, DQ_WHEEL_DIR_SIZE + 1, 0);
	c0[9].due = 1ULL << 30;			/* far: a few cascades */
	dq_wheel_insert(w, 9, 0);
	c1[2].due = (1ULL << 30) - 1;
	dq_wheel_insert(w, DQ_WHEEL_DIR_SIZE + 2, 0);
	KUNIT_EXPECT_PTR_EQ(test, dq_wheel_node(w, DQ_WHEEL_DIR_SIZE + 7),
			    &c1[7]);
	dq_wheel_remove(w, DQ_WHEEL_DIR_SIZE + 2);
	dq_ilist_init(&done);
	KUNIT_EXPECT_EQ(test, dq_wheel_advance(w, U64_MAX, &done, UINT_MAX),
			4U);
	while (!dq_ilist_empty(&done) && k < ARRAY_SIZE(out))
		out[k++] = dq_ilist_pop(w, &done);
	KUNIT_ASSERT_EQ(test, k, 4U);
	KUNIT_EXPECT_EQ(test, out[0], DQ_WHEEL_DIR_SIZE + 7);
	KUNIT_EXPECT_EQ(test, out[1], 5U);
	KUNIT_EXPECT_EQ(test, out[2], DQ_WHEEL_DIR_SIZE + 1);
	KUNIT_EXPECT_EQ(test, out[3], 9U);
	KUNIT_EXPECT_TRUE(test, dq_wheel_empty(w));
}

/*
 * Random inserts, removes and advances against the rule: an entry (due at
 * or after its insert time) is released exactly by the first advance to
 * a time >= due, and releases come in (due, seq) order.
 */
static void wheel_random_model(struct kunit *test)
{
	const unsigned int nr = 512;
	struct wt *t = wt_new(test, nr);
	u8 *state = kunit_kzalloc(test, nr, GFP_KERNEL); /* 0 free 1 in 2 out */
	struct rnd_state rnd;
	u64 now = 123456789, last_due = 0, last_seq = 0;
	unsigned int i, round, inserted = 0, released = 0, removed = 0;

	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, state);
	prandom_seed_state(&rnd, 0xd9d9d9d9ULL);
	for (round = 0; round < 4000; round++) {
		u32 r = prandom_u32_state(&rnd);

		i = r % nr;
		if ((r >> 16) % 4 != 0) {
			if (state[i] == 0) {
				u64 span = 1ULL << (4 + (r >> 20) % 36);

				wt_insert(t, i, now + prandom_u32_state(&rnd) % span,
					  now);
				state[i] = 1;
				inserted++;
			} else if (state[i] == 1 && (r >> 24) % 3 == 0) {
				dq_wheel_remove(t->w, i);
				state[i] = 0;
				removed++;
			}
		} else {
			struct dq_ilist done;
			u64 step = prandom_u32_state(&rnd) % (1U << ((r >> 26) % 32));

			now += step;
			dq_ilist_init(&done);
			dq_wheel_advance(t->w, now, &done, UINT_MAX);
			last_due = 0;
			last_seq = 0;
			while (!dq_ilist_empty(&done)) {
				u32 idx = dq_ilist_pop(t->w, &done);
				struct dq_wheel_node *e = &t->e[idx];

				/* Never early; in order within one run. */
				KUNIT_EXPECT_LE(test, e->due, now);
				KUNIT_EXPECT_TRUE(test, e->due > last_due ||
						  (e->due == last_due &&
						   t->seq[idx] >= last_seq));
				last_due = e->due;
				last_seq = t->seq[idx];
				KUNIT_EXPECT_EQ(test, state[idx], 1);
				state[idx] = 0;
				released++;
			}
			/* Nothing that is due stayed behind. */
			for (i = 0; i < nr; i++)
				if (state[i] == 1)
					KUNIT_EXPECT_GT(test, t->e[i].due, now);
		}
	}
	KUNIT_EXPECT_EQ(test, t->w->count, (u64)(inserted - released - removed));
	kunit_info(test, "%u inserted, %u released, %u removed, %llu cascaded",
		   inserted, released, removed, t->w->cascaded);
}

static struct kunit_case dq_wheel_cases[] = {
	KUNIT_CASE(wheel_init_empty),
	KUNIT_CASE(wheel_insert_expire),
	KUNIT_CASE(wheel_empty_restarts_base),
	KUNIT_CASE(wheel_order_reverse),
	KUNIT_CASE(wheel_fifo_ties),
	KUNIT_CASE(wheel_past_due),
	KUNIT_CASE(wheel_remove),
	KUNIT_CASE(wheel_remove_after_cascade),
	KUNIT_CASE(wheel_tick_boundary_exact),
	KUNIT_CASE(wheel_tick_boundary_before),
	KUNIT_CASE(wheel_tick_boundary_after),
	KUNIT_CASE(wheel_level_boundary),
	KUNIT_CASE(wheel_cascade_counts),
	KUNIT_CASE(wheel_far_future),
	KUNIT_CASE(wheel_base_near_2_63),
	KUNIT_CASE(wheel_wrap_top),
	KUNIT_CASE(wheel_next_earliest),
	KUNIT_CASE(wheel_budget_resume),
	KUNIT_CASE(wheel_dir_chunks),
	KUNIT_CASE(wheel_random_model),
	{}
};

static struct kunit_suite dq_wheel_suite = {
	.name = "dq_wheel",
	.test_cases = dq_wheel_cases,
};

/* ------------------------------------------------------------------ */
/* Fake queues: just the fields one helper reads.                      */
/* ------------------------------------------------------------------ */

static struct dq_queue *fake_queue(struct kunit *test, u32 slots, u32 slot_size)
{
	struct dq_queue *q = kunit_kzalloc(test, sizeof(*q), GFP_KERNEL);

	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, q);
	q->slot_count = slots;
	q->slot_size = slot_size;
	q->recs = kunit_kcalloc(test, slots ? slots : 1, sizeof(*q->recs),
				GFP_KERNEL);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, q->recs);
	q->nodes = kunit_kcalloc(test, slots ? slots : 1, sizeof(*q->nodes),
				 GFP_KERNEL);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, q->nodes);
	dq_ilist_init(&q->paced);
	dq_ilist_init(&q->backlog);
	dq_ilist_init(&q->inflight);
	spin_lock_init(&q->ready_lock);
	return q;
}

static void fake_pacing(struct dq_queue *q, u64 rate, u32 burst, u64 tat)
{
	q->pace_rate = rate;
	q->pace_burst = burst;
	q->pace_cost_ns = div64_u64(NSEC_PER_SEC, rate);
	q->pace_tat = tat;
}

/* ------------------------------------------------------------------ */
/* dq_pacing                                                           */
/* ------------------------------------------------------------------ */

/* The _locked functions assert their lock: take it as dq.ko's callers do. */
static unsigned int takes_at(struct dq_queue *q, u64 now, unsigned int cap)
{
	unsigned int n = 0;

	spin_lock_bh(&q->ready_lock);
	while (n < cap && dq_pace_take_locked(q, now))
		n++;
	spin_unlock_bh(&q->ready_lock);
	return n;
}

static void pace_release(struct dq_queue *q, u64 now)
{
	spin_lock_bh(&q->ready_lock);
	dq_pace_release_locked(q, now);
	spin_unlock_bh(&q->ready_lock);
}

/* A full bucket lets burst messages through at once, then one per cost. */
static void pacing_burst_then_rate(struct kunit *test)
{
	struct dq_queue *q = fake_queue(test, 1, 64);
	u64 now = 1ULL << 40;

	fake_pacing(q, 1000000, 4, now);	/* 1 us per message */
	KUNIT_EXPECT_EQ(test, takes_at(q, now, 100), 4U);
	KUNIT_EXPECT_EQ(test, takes_at(q, now + 999, 100), 0U);
	KUNIT_EXPECT_EQ(test, takes_at(q, now + 1000, 100), 1U);
	KUNIT_EXPECT_EQ(test, takes_at(q, now + 1500, 100), 0U);
	KUNIT_EXPECT_EQ(test, takes_at(q, now + 5000, 100), 4U);
}

/* Burst 1: strictly one message per cost, never two in a row. */
static void pacing_burst_one(struct kunit *test)
{
	struct dq_queue *q = fake_queue(test, 1, 64);
	u64 now = 1ULL << 40, t;
	unsigned int total = 0;

	fake_pacing(q, 1000, 1, now);		/* 1 ms per message */
	for (t = now; t < now + 10 * NSEC_PER_MSEC; t += 100 * NSEC_PER_USEC) {
		unsigned int n = takes_at(q, t, 10);

		KUNIT_EXPECT_LE(test, n, 1U);
		total += n;
	}
	KUNIT_EXPECT_EQ(test, total, 10U);
}

/* Over a long run the rate holds: T / cost + burst messages, no more. */
static void pacing_long_run_rate(struct kunit *test)
{
	struct dq_queue *q = fake_queue(test, 1, 64);
	u64 now = 1ULL << 40, t;
	unsigned int total = 0;

	fake_pacing(q, 100000, 8, now);		/* 10 us per message */
	for (t = now; t <= now + NSEC_PER_SEC / 10; t += 3333)
		total += takes_at(q, t, 1000);
	/* 100 ms at 10 us: 10000, plus the initial burst (less one: t0). */
	KUNIT_EXPECT_GE(test, total, 10000U);
	KUNIT_EXPECT_LE(test, total, 10000U + 8);
}

/*
 * After a stall, a release catches up at most max(burst * cost, the
 * module's pace_catchup_ms): exactly that many tokens plus the burst are
 * available at once, not the whole stall's worth.
 */
static void pacing_catchup_bound(struct kunit *test)
{
	struct dq_queue *q = fake_queue(test, 1, 64);
	u64 now = 1ULL << 40, catchup;
	u32 burst;

	/* cost 100 us, burst 4: the module's bound applies. */
	fake_pacing(q, 10000, 4, now - 100 * NSEC_PER_SEC);
	pace_release(q, now);
	catchup = now - q->pace_tat;
	KUNIT_EXPECT_GE(test, catchup, 4 * 100 * NSEC_PER_USEC);
	KUNIT_EXPECT_LT(test, catchup, 100 * NSEC_PER_SEC);
	KUNIT_EXPECT_EQ(test, (u64)takes_at(q, now, 10000000),
			div64_u64(catchup, 100 * NSEC_PER_USEC) + 4);

	/* burst * cost above that bound: burst * cost is the bound. */
	burst = div64_u64(catchup, NSEC_PER_MSEC) * 2 + 10;
	fake_pacing(q, 1000, burst, now - 1000 * NSEC_PER_SEC);
	pace_release(q, now);
	KUNIT_EXPECT_EQ(test, q->pace_tat, now - (u64)burst * NSEC_PER_MSEC);
	KUNIT_EXPECT_EQ(test, takes_at(q, now, 10000000), 2 * burst);
}

/* A schedule behind by less than the bound (or ahead) is left alone. */
static void pacing_catchup_recent(struct kunit *test)
{
	struct dq_queue *q = fake_queue(test, 1, 64);
	u64 now = 1ULL << 40;

	/* Half of burst * cost behind: within any bound. */
	fake_pacing(q, 10000, 4, now - 200 * NSEC_PER_USEC);
	pace_release(q, now);
	KUNIT_EXPECT_EQ(test, q->pace_tat, now - 200 * NSEC_PER_USEC);
	fake_pacing(q, 10000, 4, now + 3 * NSEC_PER_MSEC);
	pace_release(q, now);
	KUNIT_EXPECT_EQ(test, q->pace_tat, now + 3 * NSEC_PER_MSEC);
}

static struct kunit_case dq_pacing_cases[] = {
	KUNIT_CASE(pacing_burst_then_rate),
	KUNIT_CASE(pacing_burst_one),
	KUNIT_CASE(pacing_long_run_rate),
	KUNIT_CASE(pacing_catchup_bound),
	KUNIT_CASE(pacing_catchup_recent),
	{}
};

static struct kunit_suite dq_pacing_suite = {
	.name = "dq_pacing",
	.test_cases = dq_pacing_cases,
};

/* ------------------------------------------------------------------ */
/* dq_slack                                                            */
/* ------------------------------------------------------------------ */

/*
 * The estimator of dq_slack.h, which dq.ko's engines and libdqshim's
 * embedded engine share, on deterministic sequences of release runs.
 * SL_MAX is the default queue's bound: 50 us less the wheel's tick.
 */
#define SL_MAX		(50000ULL - DQ_WHEEL_TICK_NS)
#define SL_CAP		((u64)DQ_SLACK_GAP_CAP * (SL_MAX + 1))

/* @runs release runs of @per records each, due @gap apart, in a row. */
static void sl_runs(struct dq_slack *s, unsigned int runs, unsigned int per,
		    u64 gap)
{
	while (runs--) {
		dq_slack_sample(s, s->last_due + per * gap, per);
		dq_slack_update(s);
	}
}

/* Nothing seen yet reads as sparse: precise, not SL_MAX late. */
static void slack_starts_sparse(struct kunit *test)
{
	struct dq_slack s;

	dq_slack_init(&s, SL_MAX, false);
	KUNIT_EXPECT_EQ(test, s.max, SL_MAX);
	KUNIT_EXPECT_EQ(test, s.gap_ewma, SL_CAP);
	KUNIT_EXPECT_EQ(test, s.cur, SL_MAX * SL_MAX / (2 * SL_CAP));
	KUNIT_EXPECT_LT(test, s.cur, SL_MAX / 8);
}

/* Releases due closer than half the bound apart: the whole bound. */
static void slack_dense(struct kunit *test)
{
	struct dq_slack s;

	dq_slack_init(&s, SL_MAX, false);
	/* A run of 8 or more replaces the estimate: its mean gap. */
	sl_runs(&s, 1, 8, 10000);
	KUNIT_EXPECT_EQ(test, s.gap_ewma, 10000ULL);
	KUNIT_EXPECT_EQ(test, s.cur, SL_MAX);
	/* Smaller runs move it part of the way: still dense after 16. */
	dq_slack_init(&s, SL_MAX, false);
	sl_runs(&s, 16, 4, 10000);
	KUNIT_EXPECT_LE(test, s.gap_ewma, SL_MAX / 2);
	KUNIT_EXPECT_EQ(test, s.cur, SL_MAX);
	/* The edge: a gap of exactly half the bound is still dense. */
	sl_runs(&s, 1, 8, SL_MAX / 2);
	KUNIT_EXPECT_EQ(test, s.cur, SL_MAX);
	sl_runs(&s, 1, 8, SL_MAX / 2 + 1);
	KUNIT_EXPECT_LT(test, s.cur, SL_MAX);
}

/* Sparser: proportionally less, never above the bound. */
static void slack_sparse_proportional(struct kunit *test)
{
	struct dq_slack s;
	u64 one_ms;

	dq_slack_init(&s, SL_MAX, false);
	/* One release per window: half the window. */
	sl_runs(&s, 1, 8, SL_MAX);
	KUNIT_EXPECT_EQ(test, s.cur, SL_MAX / 2);
	sl_runs(&s, 1, 8, NSEC_PER_MSEC);
	one_ms = s.cur;
	KUNIT_EXPECT_EQ(test, one_ms, SL_MAX * SL_MAX / (2 * NSEC_PER_MSEC));
	/* Twice the gap, half the slack (to the ns the division drops). */
	sl_runs(&s, 1, 8, 2 * NSEC_PER_MSEC);
	KUNIT_EXPECT_LE(test, s.cur, one_ms / 2);
	KUNIT_EXPECT_GE(test, s.cur + 1, one_ms / 2);
	/* One release per run converges to the same figure. */
	dq_slack_init(&s, SL_MAX, false);
	sl_runs(&s, 200, 1, NSEC_PER_MSEC);
	KUNIT_EXPECT_GE(test, s.cur + 2, one_ms);
	KUNIT_EXPECT_LE(test, s.cur, one_ms + 2);
	KUNIT_EXPECT_LE(test, s.cur, s.max);
}

/*
 * One long idle spell counts as DQ_SLACK_GAP_CAP windows, not its length:
 * dense traffic after it gets the whole slack back within ~25 runs of one
 * release (uncapped, 10 s of idle would take ~85).
 */
static void slack_idle_gap_capped(struct kunit *test)
{
	struct dq_slack s;
	u64 dense = 10000;

	dq_slack_init(&s, SL_MAX, false);
	sl_runs(&s, 1, 8, dense);
	KUNIT_ASSERT_EQ(test, s.cur, SL_MAX);
	sl_runs(&s, 1, 1, 10 * NSEC_PER_SEC);
	KUNIT_EXPECT_EQ(test, s.gap_ewma, dense - dense / 8 + SL_CAP / 8);
	KUNIT_EXPECT_LT(test, s.cur, SL_MAX / 8);
	sl_runs(&s, 30, 1, dense);
	KUNIT_EXPECT_EQ(test, s.cur, SL_MAX);
}

/* Records due before the last release (late submits): gap 0, dense. */
static void slack_due_in_the_past(struct kunit *test)
{
	struct dq_slack s;
	u64 last;

	dq_slack_init(&s, SL_MAX, false);
	sl_runs(&s, 1, 8, NSEC_PER_MSEC);
	KUNIT_ASSERT_LT(test, s.cur, SL_MAX);
	last = s.last_due;
	dq_slack_sample(&s, last - 5, 8);
	dq_slack_update(&s);
	KUNIT_EXPECT_EQ(test, s.gap_ewma, 0ULL);
	KUNIT_EXPECT_EQ(test, s.cur, SL_MAX);
	/* The last due time never moves back. */
	KUNIT_EXPECT_EQ(test, s.last_due, last);
}

/* Fixed: the whole bound whatever the density; switchable both ways. */
static void slack_fixed(struct kunit *test)
{
	struct dq_slack s;

	dq_slack_init(&s, SL_MAX, true);
	KUNIT_EXPECT_EQ(test, s.cur, SL_MAX);
	sl_runs(&s, 1, 8, NSEC_PER_MSEC);
	KUNIT_EXPECT_EQ(test, s.cur, SL_MAX);
	/* The level-0 work of a sparse queue: the whole bound too. */
	KUNIT_EXPECT_EQ(test, dq_slack_next(&s, 10 * TICK + TICK - 1), SL_MAX);
	/* The estimate went on meanwhile: adaptive at once. */
	dq_slack_set_fixed(&s, false);
	KUNIT_EXPECT_EQ(test, s.cur, SL_MAX * SL_MAX / (2 * NSEC_PER_MSEC));
	dq_slack_set_fixed(&s, true);
	KUNIT_EXPECT_EQ(test, s.cur, SL_MAX);
}

/*
 * A cascade gets the whole bound unless releases are sparse; what counts
 * as a cascade is what dq_wheel_next() answers for a bucket above level 0.
 */
static void slack_next_cascade(struct kunit *test)
{
	struct wt *t = wt_new(test, 2);
	u64 lvl0, lvl1;
	struct dq_slack s;

	wt_insert(t, 0, 10 * TICK + 5, 0);
	lvl0 = dq_wheel_next(t->w);
	/* Past level 0's 4096 ticks: a level-1 bucket's start. */
	wt_insert(t, 1, 10000 * TICK, 0);
	dq_wheel_remove(t->w, 0);
	lvl1 = dq_wheel_next(t->w);
	KUNIT_EXPECT_FALSE(test, dq_slack_is_cascade(lvl0));
	KUNIT_EXPECT_TRUE(test, dq_slack_is_cascade(lvl1));

	dq_slack_init(&s, SL_MAX, false);
	/* Two windows apart: a quarter of the bound, not sparse. */
	sl_runs(&s, 1, 8, 2 * SL_MAX);
	KUNIT_EXPECT_EQ(test, s.cur, SL_MAX / 4);
	KUNIT_EXPECT_EQ(test, dq_slack_next(&s, lvl0), s.cur);
	KUNIT_EXPECT_EQ(test, dq_slack_next(&s, lvl1), SL_MAX);
	/* Sparse: precision, for a cascade too. */
	sl_runs(&s, 1, 8, NSEC_PER_MSEC);
	KUNIT_EXPECT_LT(test, s.cur, SL_MAX / 8);
	KUNIT_EXPECT_EQ(test, dq_slack_next(&s, lvl1), s.cur);
}

/* A new bound (a queue came or went) starts over, sparse. */
static void slack_new_bound(struct kunit *test)
{
	const u64 coarse = 20 * NSEC_PER_MSEC - TICK;
	struct dq_slack s;

	dq_slack_init(&s, SL_MAX, false);
	sl_runs(&s, 1, 8, 10000);
	dq_slack_set_max(&s, SL_MAX);
	KUNIT_EXPECT_EQ(test, s.cur, SL_MAX);
	/* 10 us apart was dense for 49 us; 20 ms must learn afresh. */
	dq_slack_set_max(&s, coarse);
	KUNIT_EXPECT_EQ(test, s.max, coarse);
	KUNIT_EXPECT_EQ(test, s.gap_ewma, (u64)DQ_SLACK_GAP_CAP * (coarse + 1));
	KUNIT_EXPECT_LT(test, s.cur, coarse / 8);
	sl_runs(&s, 1, 8, 10000);
	KUNIT_EXPECT_EQ(test, s.cur, coarse);
}

static struct kunit_case dq_slack_cases[] = {
	KUNIT_CASE(slack_starts_sparse),
	KUNIT_CASE(slack_dense),
	KUNIT_CASE(slack_sparse_proportional),
	KUNIT_CASE(slack_idle_gap_capped),
	KUNIT_CASE(slack_due_in_the_past),
	KUNIT_CASE(slack_fixed),
	KUNIT_CASE(slack_next_cascade),
	KUNIT_CASE(slack_new_bound),
	{}
};

static struct kunit_suite dq_slack_suite = {
	.name = "dq_slack",
	.test_cases = dq_slack_cases,
};

/* ------------------------------------------------------------------ */
/* dq_desc                                                             */
/* ------------------------------------------------------------------ */

#define NOW	BIT_ULL(42)

static struct dq_desc good_desc(void)
{
	struct dq_desc d = {
		.due_ns = NOW + 1000,
		.user_data = 42,
		.slot = 3,
		.len = 64,
		.gen = 7,
	};

	return d;
}

/* check(): the DQ_REJ_* reason dq_desc_check() gives, or VALID. */
#define VALID	(-1)

static int check(struct dq_queue *q, struct dq_desc d, u64 *due)
{
	u32 reason = DQ_REJ_NR;
	u64 dummy;

	if (dq_desc_check(q, &d, NOW, due ? due : &dummy, &reason))
		return VALID;
	return reason;
}

static void desc_accept(struct kunit *test)
{
	struct dq_queue *q = fake_queue(test, 8, 128);
	struct dq_desc d = good_desc();
	u64 due = 0;

	KUNIT_EXPECT_EQ(test, check(q, d, &due), VALID);
	KUNIT_EXPECT_EQ(test, due, NOW + 1000);
	/* Relative: a delay from now. */
	d.flags = DQ_DESC_F_RELATIVE;
	d.due_ns = 5000;
	KUNIT_EXPECT_EQ(test, check(q, d, &due), VALID);
	KUNIT_EXPECT_EQ(test, due, NOW + 5000);
	/* Absolute in the past: accepted, released at once. */
	d.flags = 0;
	d.due_ns = 1;
	KUNIT_EXPECT_EQ(test, check(q, d, &due), VALID);
	KUNIT_EXPECT_EQ(test, due, 1ULL);
	/* The edges: last slot, full length, zero length. */
	d = good_desc();
	d.slot = 7;
	d.len = 128;
	KUNIT_EXPECT_EQ(test, check(q, d, NULL), VALID);
	d.len = 0;
	KUNIT_EXPECT_EQ(test, check(q, d, NULL), VALID);
}

static void desc_reject_flags(struct kunit *test)
{
	struct dq_queue *q = fake_queue(test, 8, 128);
	struct dq_desc d = good_desc();
	unsigned int bit;

	for (bit = 1; bit < 16; bit++) {
		d.flags = 1U << bit;
		KUNIT_EXPECT_EQ(test, check(q, d, NULL), (int)DQ_REJ_FLAGS);
	}
	d.flags = 0xffff;
	KUNIT_EXPECT_EQ(test, check(q, d, NULL), (int)DQ_REJ_FLAGS);
}

static void desc_reject_resv(struct kunit *test)
{
	struct dq_queue *q = fake_queue(test, 8, 128);
	struct dq_desc d = good_desc();

	d.resv = 1;
	KUNIT_EXPECT_EQ(test, check(q, d, NULL), (int)DQ_REJ_RESV);
	d.resv = 0x8000;
	KUNIT_EXPECT_EQ(test, check(q, d, NULL), (int)DQ_REJ_RESV);
}

static void desc_reject_slot(struct kunit *test)
{
	struct dq_queue *q = fake_queue(test, 8, 128);
	struct dq_desc d = good_desc();

	d.slot = 8;
	KUNIT_EXPECT_EQ(test, check(q, d, NULL), (int)DQ_REJ_SLOT);
	d.slot = U32_MAX;
	KUNIT_EXPECT_EQ(test, check(q, d, NULL), (int)DQ_REJ_SLOT);
}

static void desc_reject_len(struct kunit *test)
{
	struct dq_queue *q = fake_queue(test, 8, 128);
	struct dq_desc d = good_desc();

	d.len = 129;
	KUNIT_EXPECT_EQ(test, check(q, d, NULL), (int)DQ_REJ_LEN);
	d.len = U32_MAX;
	KUNIT_EXPECT_EQ(test, check(q, d, NULL), (int)DQ_REJ_LEN);
}

static void desc_reject_time_relative(struct kunit *test)
{
	struct dq_queue *q = fake_queue(test, 8, 128);
	struct dq_desc d = good_desc();
	u64 due;

	d.flags = DQ_DESC_F_RELATIVE;
	d.due_ns = DQ_MAX_DELAY_NS;
	KUNIT_EXPECT_EQ(test, check(q, d, &due), VALID);
	KUNIT_EXPECT_EQ(test, due, NOW + DQ_MAX_DELAY_NS);
	d.due_ns = DQ_MAX_DELAY_NS + 1;
	KUNIT_EXPECT_EQ(test, check(q, d, NULL), (int)DQ_REJ_TIME);
	d.due_ns = U64_MAX;	/* would wrap around if added blindly */
	KUNIT_EXPECT_EQ(test, check(q, d, NULL), (int)DQ_REJ_TIME);
}

static void desc_reject_time_absolute(struct kunit *test)
{
	struct dq_queue *q = fake_queue(test, 8, 128);
	struct dq_desc d = good_desc();

	d.due_ns = NOW + DQ_MAX_DELAY_NS;
	KUNIT_EXPECT_EQ(test, check(q, d, NULL), VALID);
	d.due_ns = NOW + DQ_MAX_DELAY_NS + 1;
	KUNIT_EXPECT_EQ(test, check(q, d, NULL), (int)DQ_REJ_TIME);
	d.due_ns = U64_MAX;
	KUNIT_EXPECT_EQ(test, check(q, d, NULL), (int)DQ_REJ_TIME);
	d.due_ns = 1ULL << 63;
	KUNIT_EXPECT_EQ(test, check(q, d, NULL), (int)DQ_REJ_TIME);
}

/* A slot the kernel holds, in any state, is busy. */
static void desc_reject_busy(struct kunit *test)
{
	struct dq_queue *q = fake_queue(test, 8, 128);
	struct dq_desc d = good_desc();
	enum dq_msg_state s;

	for (s = DQ_MSG_SUBMITTING; s <= DQ_MSG_PACED; s++) {
		dq_rec_set_state(&q->nodes[d.slot], s);
		KUNIT_EXPECT_EQ(test, check(q, d, NULL), (int)DQ_REJ_BUSY);
	}
	dq_rec_set_state(&q->nodes[d.slot], DQ_MSG_FREE);
	KUNIT_EXPECT_EQ(test, check(q, d, NULL), VALID);
}

/*
 * With several faults the first in the order flags, resv, slot, len,
 * time, busy is reported; a bad slot is never used as an index.
 */
static void desc_reject_precedence(struct kunit *test)
{
	struct dq_queue *q = fake_queue(test, 8, 128);
	struct dq_desc d = good_desc();

	dq_rec_set_state(&q->nodes[d.slot], DQ_MSG_PENDING);
	d.flags = 0x10;
	d.resv = 1;
	d.slot = 1000000;
	d.len = 1000;
	d.due_ns = U64_MAX;
	KUNIT_EXPECT_EQ(test, check(q, d, NULL), (int)DQ_REJ_FLAGS);
	d.flags = 0;
	KUNIT_EXPECT_EQ(test, check(q, d, NULL), (int)DQ_REJ_RESV);
	d.resv = 0;
	KUNIT_EXPECT_EQ(test, check(q, d, NULL), (int)DQ_REJ_SLOT);
	d.slot = 3;
	KUNIT_EXPECT_EQ(test, check(q, d, NULL), (int)DQ_REJ_LEN);
	d.len = 1;
	KUNIT_EXPECT_EQ(test, check(q, d, NULL), (int)DQ_REJ_TIME);
	d.due_ns = NOW;
	KUNIT_EXPECT_EQ(test, check(q, d, NULL), (int)DQ_REJ_BUSY);
}

/* dq_time_shift() saturates instead of wrapping, either way. */
static void desc_time_shift_saturates(struct kunit *test)
{
	KUNIT_EXPECT_EQ(test, dq_time_shift(5, 10), 15ULL);
	KUNIT_EXPECT_EQ(test, dq_time_shift(15, -10), 5ULL);
	KUNIT_EXPECT_EQ(test, dq_time_shift(5, -10), 0ULL);
	KUNIT_EXPECT_EQ(test, dq_time_shift(10, -10), 0ULL);
	KUNIT_EXPECT_EQ(test, dq_time_shift(U64_MAX - 5, 10), U64_MAX);
	KUNIT_EXPECT_EQ(test, dq_time_shift(U64_MAX, S64_MAX), U64_MAX);
	KUNIT_EXPECT_EQ(test, dq_time_shift(0, S64_MIN), 0ULL);
	KUNIT_EXPECT_EQ(test, dq_time_shift(BIT_ULL(63), S64_MIN), 0ULL);
	KUNIT_EXPECT_EQ(test, dq_time_shift(U64_MAX, S64_MIN),
			(u64)S64_MAX);
}

/*
 * Time namespaces: an absolute due in a clock @off from the host's, made
 * the host's as dq_queue_submit() does, gets the verdict it gets in its
 * own clock (whose now is NOW + off), saturation included, and keeps its
 * value unless it lies before the host's 0 (then it is 0: due at once).
 */
static void desc_time_shift_same_verdict(struct kunit *test)
{
	static const s64 offs[] = {
		0, 1, -1, 1000LL * 86400 * NSEC_PER_SEC,
		-(s64)NOW,			/* the namespace's clock at 0 */
		4611686018LL * NSEC_PER_SEC,	/* KTIME_SEC_MAX / 2 s */
	};
	struct dq_queue *q = fake_queue(test, 8, 128);
	unsigned int i, j;

	for (i = 0; i < ARRAY_SIZE(offs); i++) {
		u64 own_now = NOW + offs[i];
		const u64 dues[] = {
			0, 1, own_now - 1, own_now, own_now + 1,
			own_now + DQ_MAX_DELAY_NS, own_now + DQ_MAX_DELAY_NS + 1,
			U64_MAX - 1, U64_MAX, offs[i] > 0 ? offs[i] - 1 : 2,
			offs[i] > 0 ? offs[i] : 3,
		};

		for (j = 0; j < ARRAY_SIZE(dues); j++) {
			struct dq_desc d = good_desc(), h = good_desc();
			u32 r_own = DQ_REJ_NR, r_host = DQ_REJ_NR;
			u64 due_own = 0, due_host = 0;
			bool ok_own, ok_host;

			d.due_ns = dues[j];
			h.due_ns = dq_time_shift(dues[j], -offs[i]);
			ok_own = dq_desc_check(q, &d, own_now, &due_own, &r_own);
			ok_host = dq_desc_check(q, &h, NOW, &due_host, &r_host);
			KUNIT_EXPECT_EQ_MSG(test, ok_own, ok_host,
					    "off %lld due %llu", offs[i], dues[j]);
			KUNIT_EXPECT_EQ_MSG(test, r_own, r_host,
					    "off %lld due %llu", offs[i], dues[j]);
			if (!ok_host)
				continue;
			if (offs[i] > 0 && dues[j] < (u64)offs[i])
				KUNIT_EXPECT_EQ(test, due_host, 0ULL);
			else
				KUNIT_EXPECT_EQ(test, due_host + offs[i], due_own);
		}
	}
}

static struct kunit_case dq_desc_cases[] = {
	KUNIT_CASE(desc_accept),
	KUNIT_CASE(desc_reject_flags),
	KUNIT_CASE(desc_reject_resv),
	KUNIT_CASE(desc_reject_slot),
	KUNIT_CASE(desc_reject_len),
	KUNIT_CASE(desc_reject_time_relative),
	KUNIT_CASE(desc_reject_time_absolute),
	KUNIT_CASE(desc_reject_busy),
	KUNIT_CASE(desc_reject_precedence),
	KUNIT_CASE(desc_time_shift_saturates),
	KUNIT_CASE(desc_time_shift_same_verdict),
	{}
};

static struct kunit_suite dq_desc_suite = {
	.name = "dq_desc",
	.test_cases = dq_desc_cases,
};

/* ------------------------------------------------------------------ */
/* dq_ring: the ready ring's used count (fake queue)                   */
/* ------------------------------------------------------------------ */

static u32 ready_used(struct dq_queue *q)
{
	u32 used;

	spin_lock_bh(&q->ready_lock);
	used = dq_queue_ready_used_locked(q);
	spin_unlock_bh(&q->ready_lock);
	return used;
}

static struct dq_queue *ring_queue(struct kunit *test, u32 entries)
{
	struct dq_queue *q = fake_queue(test, 1, 64);

	q->rq_hdr = kunit_kzalloc(test, sizeof(*q->rq_hdr), GFP_KERNEL);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, q->rq_hdr);
	q->rq_entries = entries;
	return q;
}

static void ring_used_plain(struct kunit *test)
{
	struct dq_queue *q = ring_queue(test, 16);

	q->rq_prod = 10;
	q->rq_hdr->consumer = 4;
	KUNIT_EXPECT_EQ(test, ready_used(q), 6U);
	q->rq_hdr->consumer = 10;
	KUNIT_EXPECT_EQ(test, ready_used(q), 0U);
	KUNIT_EXPECT_EQ(test, atomic64_read(&q->ring_errors), 0LL);
	KUNIT_EXPECT_EQ(test, q->rq_hdr->flags, 0U);
}

/* Free-running u32 indices: the difference is right across 2^32. */
static void ring_used_wrap(struct kunit *test)
{
	struct dq_queue *q = ring_queue(test, 16);

	q->rq_prod = 2;
	q->rq_hdr->consumer = 0xfffffffeU;
	KUNIT_EXPECT_EQ(test, ready_used(q), 4U);
	q->rq_prod = 0;
	q->rq_hdr->consumer = 0xfffffff0U;
	KUNIT_EXPECT_EQ(test, ready_used(q), 16U);
	KUNIT_EXPECT_EQ(test, atomic64_read(&q->ring_errors), 0LL);
}

/* Exactly full is fine; one more than full is a broken consumer. */
static void ring_used_full_edge(struct kunit *test)
{
	struct dq_queue *q = ring_queue(test, 16);

	q->rq_prod = 100;
	q->rq_hdr->consumer = 84;
	KUNIT_EXPECT_EQ(test, ready_used(q), 16U);
	q->rq_hdr->consumer = 83;
	KUNIT_EXPECT_EQ(test, ready_used(q), 17U);
	KUNIT_EXPECT_EQ(test, atomic64_read(&q->ring_errors), 1LL);
	KUNIT_EXPECT_EQ(test, q->rq_hdr->flags, (u32)DQ_RING_F_BROKEN);
}

/* A consumer ahead of the producer (a scribble) is detected. */
static void ring_used_consumer_ahead(struct kunit *test)
{
	struct dq_queue *q = ring_queue(test, 1024);

	q->rq_prod = 0xfffffffeU;
	q->rq_hdr->consumer = 0xffffffffU;
	KUNIT_EXPECT_EQ(test, ready_used(q), 1025U);
	q->rq_hdr->consumer = 3;	/* "ahead" across the wrap */
	KUNIT_EXPECT_EQ(test, ready_used(q), 1025U);
	KUNIT_EXPECT_EQ(test, atomic64_read(&q->ring_errors), 2LL);
	/* Repaired by user space: usable again. */
	q->rq_hdr->consumer = 0xfffffffaU;
	KUNIT_EXPECT_EQ(test, ready_used(q), 4U);
}

static struct kunit_case dq_ring_cases[] = {
	KUNIT_CASE(ring_used_plain),
	KUNIT_CASE(ring_used_wrap),
	KUNIT_CASE(ring_used_full_edge),
	KUNIT_CASE(ring_used_consumer_ahead),
	{}
};

static struct kunit_suite dq_ring_suite = {
	.name = "dq_ring",
	.test_cases = dq_ring_cases,
};

/* ------------------------------------------------------------------ */
/* dq_queue: real queues of the loaded dq.ko                           */
/* ------------------------------------------------------------------ */

#define QSLOTS	16U

static int queue_init(struct kunit *test)
{
	struct dq_setup s = {
		.slot_count = QSLOTS,
		.slot_size = 64,
		.submit_entries = 16,
		.ready_entries = 16,
		.numa_node = -1,
	};
	struct dq_queue *q = dq_queue_create(&s, &init_net, NULL);

	if (IS_ERR(q))
		return PTR_ERR(q);
	test->priv = q;
	return 0;
}

static void queue_exit(struct kunit *test)
{
	if (test->priv)
		dq_queue_put(test->priv);
}

/* Put @n descriptors on the submit ring at the producer, publish them. */
static void sq_push(struct dq_queue *q, const struct dq_desc *d,
		    unsigned int n)
{
	u32 prod = READ_ONCE(q->sq_hdr->producer);
	unsigned int i;

	for (i = 0; i < n; i++, prod++)
		q->sq_ring[prod & (q->sq_entries - 1)] = d[i];
	/* Entries before index, as user space does: the submit's acquire. */
	smp_store_release(&q->sq_hdr->producer, prod);
}

static int submit(struct dq_queue *q, struct dq_submit *args)
{
	memset(args, 0, sizeof(*args));
	return dq_queue_submit(q, args, NULL, false);
}

/* Wait (sleeping) until the ready producer reaches @want; true if so. */
static bool ready_reaches(struct dq_queue *q, u32 want)
{
	unsigned long end = jiffies + 10 * HZ;

	while (time_before(jiffies, end)) {
		/* Pairs with the release that publishes the entries. */
		if (smp_load_acquire(&q->rq_hdr->producer) == want)
			return true;
		msleep(20);
	}
	return false;
}

static void expect_counters_add_up(struct kunit *test, struct dq_queue *q)
{
	struct dq_queue_stats st;

	dq_queue_stats(q, &st);
	KUNIT_EXPECT_EQ(test, st.submitted, st.released + st.cancelled +
			st.pending + st.ready_backlog + st.paced);
}

/* A producer more than a ring ahead: -EPROTO, nothing consumed. */
static void queue_submit_broken_producer(struct kunit *test)
{
	struct dq_queue *q = test->priv;
	struct dq_submit args;

	KUNIT_ASSERT_NOT_NULL(test, q);
	WRITE_ONCE(q->sq_hdr->producer, q->sq_entries + 1);
	KUNIT_EXPECT_EQ(test, submit(q, &args), -EPROTO);
	KUNIT_EXPECT_EQ(test, q->sq_cons, 0U);
	KUNIT_EXPECT_EQ(test, READ_ONCE(q->sq_hdr->consumer), 0U);
	KUNIT_EXPECT_EQ(test, atomic64_read(&q->ring_errors), 1LL);
	KUNIT_EXPECT_EQ(test, READ_ONCE(q->sq_hdr->flags), (u32)DQ_RING_F_BROKEN);
	/* Behind the consumer (across the wrap) is just as broken. */
	WRITE_ONCE(q->sq_hdr->producer, 0xffffffffU);
	KUNIT_EXPECT_EQ(test, submit(q, &args), -EPROTO);
	/*
	 * Exactly a ring ahead is legal: all consumed.  The zeroed entries
	 * are valid descriptors for slot 0, due at 0: one is accepted, the
	 * rest find the slot busy.
	 */
	WRITE_ONCE(q->sq_hdr->producer, q->sq_entries);
	KUNIT_EXPECT_EQ(test, submit(q, &args), 1);
	KUNIT_EXPECT_EQ(test, args.rejected, q->sq_entries - 1);
	KUNIT_EXPECT_EQ(test, READ_ONCE(q->sq_hdr->consumer), q->sq_entries);
}

/*
 * Both rings' indices wrap at 2^32 in the middle of a batch: every
 * descriptor is taken from the right entry, every release lands in the
 * right ready entry, in due order.
 */
static void queue_wrap_2_32(struct kunit *test)
{
	struct dq_queue *q = test->priv;
	struct dq_desc d[QSLOTS];
	struct dq_submit args;
	u64 now = ktime_get_ns();
	u32 start = 0xfffffff8U, i;

	KUNIT_ASSERT_NOT_NULL(test, q);
	q->sq_cons = start;
	q->sq_hdr->producer = start;
	q->sq_hdr->consumer = start;
	spin_lock_bh(&q->ready_lock);
	q->rq_prod = start + 3;
	q->rq_hdr->producer = start + 3;
	q->rq_hdr->consumer = start + 3;
	spin_unlock_bh(&q->ready_lock);

	for (i = 0; i < QSLOTS; i++) {
		d[i] = (struct dq_desc){
			/* Already due, in reverse slot order. */
			.due_ns = now - 1000000 - i * 1000,
			.user_data = 1000 + i,
			.slot = i,
			.len = i,
			.gen = 1,
		};
	}
	sq_push(q, d, QSLOTS);
	KUNIT_EXPECT_EQ(test, submit(q, &args), (int)QSLOTS);
	KUNIT_EXPECT_EQ(test, args.rejected, 0U);
	KUNIT_EXPECT_EQ(test, READ_ONCE(q->sq_hdr->consumer), start + QSLOTS);
	KUNIT_ASSERT_TRUE(test, ready_reaches(q, start + 3 + QSLOTS));
	for (i = 0; i < QSLOTS; i++) {
		u32 idx = start + 3 + i;
		struct dq_ready *r = &q->rq_ring[idx & (q->rq_entries - 1)];

		KUNIT_EXPECT_EQ(test, r->slot, QSLOTS - 1 - i);
		KUNIT_EXPECT_EQ(test, r->user_data, 1000ULL + QSLOTS - 1 - i);
		KUNIT_EXPECT_EQ(test, r->len, QSLOTS - 1 - i);
		KUNIT_EXPECT_GE(test, r->release_ns, r->due_ns);
	}
	expect_counters_add_up(test, q);
}

/* The ready ring full: the rest waits on the backlog, then moves on. */
static void queue_backlog(struct kunit *test)
{
	struct dq_queue *q = test->priv;
	struct dq_desc d[QSLOTS];
	struct dq_submit args;
	struct dq_queue_stats st;
	u64 now = ktime_get_ns();
	u32 i, used;

	KUNIT_ASSERT_NOT_NULL(test, q);
	/* Pretend the consumer is 12 entries behind: room for 4. */
	spin_lock_bh(&q->ready_lock);
	q->rq_prod = 12;
	q->rq_hdr->producer = 12;
	spin_unlock_bh(&q->ready_lock);
	for (i = 0; i < 10; i++)
		d[i] = (struct dq_desc){ .due_ns = now - 1, .slot = i, .gen = 2 };
	sq_push(q, d, 10);
	KUNIT_EXPECT_EQ(test, submit(q, &args), 10);
	KUNIT_ASSERT_TRUE(test, ready_reaches(q, 16));
	dq_queue_stats(q, &st);
	KUNIT_EXPECT_EQ(test, st.released, 4ULL);
	KUNIT_EXPECT_EQ(test, st.ready_backlog, 6ULL);
	expect_counters_add_up(test, q);
	/* The consumer catches up: the backlog drains into the ring. */
	smp_store_release(&q->rq_hdr->consumer, 16);
	spin_lock_bh(&q->ready_lock);
	used = dq_queue_ready_refill_locked(q);
	spin_unlock_bh(&q->ready_lock);
	KUNIT_EXPECT_EQ(test, used, 6U);
	dq_queue_stats(q, &st);
	KUNIT_EXPECT_EQ(test, st.released, 10ULL);
	KUNIT_EXPECT_EQ(test, st.ready_backlog, 0ULL);
	expect_counters_add_up(test, q);
}

/*
 * The backlog is linked by slot through the records' own wheel nodes
 * (no list_head of its own): records posted to a full ring in an order
 * unlike their slots' come out in that order, after a cancel took its
 * head, one in the middle and its tail (the list mended each time: a
 * record posted after the tail's cancel still goes last).
 */
static void queue_backlog_index_order(struct kunit *test)
{
	static const u32 order[] = { 9, 3, 14, 0, 7, 12, 5, 1 };
	static const u32 gone[] = { 9, 0, 1 };	/* head, middle, tail */
	static const u32 want[] = { 3, 14, 7, 12, 5, 2 };
	struct dq_queue *q = test->priv;
	u32 slots[ARRAY_SIZE(order) + 1], out[ARRAY_SIZE(want)];
	struct dq_queue_stats st;
	u32 i, used, flags;
	u64 now;

	KUNIT_ASSERT_NOT_NULL(test, q);
	memcpy(slots, order, sizeof(order));
	slots[ARRAY_SIZE(order)] = 2;
	/* The consumer is a whole ring behind: everything waits. */
	spin_lock_bh(&q->ready_lock);
	q->rq_prod = q->rq_entries;
	q->rq_hdr->producer = q->rq_entries;
	spin_unlock_bh(&q->ready_lock);
	for (i = 0; i < ARRAY_SIZE(slots); i++) {
		struct dq_desc d = { .slot = slots[i], .gen = 1,
				     .user_data = 100 + slots[i] };

		/* Slot 2 only once the tail has been cancelled. */
		for (u32 k = 0; i == ARRAY_SIZE(order) && k < ARRAY_SIZE(gone);
		     k++) {
			struct dq_cancel c = { .handle = DQ_HANDLE(gone[k], 1) };

			KUNIT_EXPECT_EQ(test, dq_queue_cancel(q, &c), 0);
		}
		now = ktime_get_ns();
		dq_rec_accept(&q->nodes[slots[i]], &q->recs[slots[i]], &d, now,
			      DQ_MSG_SUBMITTING);
		atomic64_inc(&q->held);
		mutex_lock(&q->submit_lock);
		WRITE_ONCE(q->submitted, q->submitted + 1);
		mutex_unlock(&q->submit_lock);
		spin_lock_bh(&q->ready_lock);
		dq_queue_post_locked(q, slots[i], now);
		spin_unlock_bh(&q->ready_lock);
	}
	dq_queue_stats(q, &st);
	KUNIT_EXPECT_EQ(test, st.ready_backlog, (u64)ARRAY_SIZE(want));
	KUNIT_EXPECT_EQ(test, st.cancelled, (u64)ARRAY_SIZE(gone));
	KUNIT_EXPECT_EQ(test, READ_ONCE(q->rq_hdr->flags),
			(u32)DQ_RING_F_BACKLOG);
	for (i = 0; i < ARRAY_SIZE(gone); i++)
		KUNIT_EXPECT_EQ(test, dq_rec_state(&q->nodes[gone[i]]),
				DQ_MSG_FREE);
	expect_counters_add_up(test, q);

	/* The consumer catches up: the backlog moves, in its order. */
	smp_store_release(&q->rq_hdr->consumer, q->rq_entries);
	spin_lock_bh(&q->ready_lock);
	used = dq_queue_ready_refill_locked(q);
	flags = q->rq_flags;
	for (i = 0; i < ARRAY_SIZE(want); i++)
		out[i] = dq_rq_entry(q, q->rq_entries + i)->slot;
	spin_unlock_bh(&q->ready_lock);
	KUNIT_EXPECT_EQ(test, used, (u32)ARRAY_SIZE(want));
	KUNIT_EXPECT_EQ(test, flags, 0U);
	for (i = 0; i < ARRAY_SIZE(want); i++) {
		KUNIT_EXPECT_EQ_MSG(test, out[i], want[i], "entry %u", i);
		KUNIT_EXPECT_EQ(test, dq_rq_entry(q, q->rq_entries + i)->user_data,
				100ULL + want[i]);
		KUNIT_EXPECT_EQ(test, dq_rec_state(&q->nodes[want[i]]),
				DQ_MSG_FREE);
	}
	KUNIT_EXPECT_EQ(test, atomic64_read(&q->held), 0LL);
	expect_counters_add_up(test, q);
}

/* max_pending reached: DQ_REJ_FULL, counted, nothing else disturbed. */
static void queue_reject_full(struct kunit *test)
{
	struct dq_queue *q = test->priv;
	struct dq_desc d[3];
	struct dq_submit args;
	struct dq_queue_stats st;
	u64 far = ktime_get_ns() + 3600 * NSEC_PER_SEC;
	u32 i;

	KUNIT_ASSERT_NOT_NULL(test, q);
	WRITE_ONCE(q->max_pending, 2);
	for (i = 0; i < 3; i++)
		d[i] = (struct dq_desc){ .due_ns = far, .slot = i, .gen = 3 };
	sq_push(q, d, 3);
	KUNIT_EXPECT_EQ(test, submit(q, &args), 2);
	KUNIT_EXPECT_EQ(test, args.rejected, 1U);
	dq_queue_stats(q, &st);
	KUNIT_EXPECT_EQ(test, st.rejected[DQ_REJ_FULL], 1ULL);
	KUNIT_EXPECT_EQ(test, st.pending, 2ULL);
	KUNIT_EXPECT_EQ(test, dq_rec_state(&q->nodes[2]), DQ_MSG_FREE);
	expect_counters_add_up(test, q);
}

/* Every reject reason reaches its counter through the submit path. */
static void queue_reject_counters(struct kunit *test)
{
	struct dq_queue *q = test->priv;
	u64 far = ktime_get_ns() + 3600 * NSEC_PER_SEC;
	struct dq_desc d[] = {
		{ .due_ns = far, .slot = QSLOTS },		/* SLOT */
		{ .due_ns = far, .slot = 1, .len = 65 },	/* LEN */
		{ .due_ns = far, .slot = 1, .flags = 2 },	/* FLAGS */
		{ .due_ns = far, .slot = 1, .resv = 1 },	/* RESV */
		{ .due_ns = U64_MAX, .slot = 1 },		/* TIME */
		{ .due_ns = far, .slot = 1, .gen = 4 },		/* ok */
		{ .due_ns = far, .slot = 1, .gen = 5 },		/* BUSY */
	};
	struct dq_submit args;
	struct dq_queue_stats st;
	int r;

	KUNIT_ASSERT_NOT_NULL(test, q);
	sq_push(q, d, ARRAY_SIZE(d));
	KUNIT_EXPECT_EQ(test, submit(q, &args), 1);
	KUNIT_EXPECT_EQ(test, args.rejected, 6U);
	dq_queue_stats(q, &st);
	for (r = 0; r < DQ_REJ_NR; r++)
		KUNIT_EXPECT_EQ_MSG(test, st.rejected[r],
				    r == DQ_REJ_FULL || r == DQ_REJ_KEY ?
				    0ULL : 1ULL,
				    "reason %d", r);
	/* The accepted one kept gen 4, not the busy one's 5. */
	KUNIT_EXPECT_EQ(test, q->recs[1].gen, 4U);
}

/* Cancel: wrong generation, success, twice, out of range. */
static void queue_cancel(struct kunit *test)
{
	struct dq_queue *q = test->priv;
	struct dq_desc d = {
		.due_ns = ktime_get_ns() + 3600 * NSEC_PER_SEC,
		.slot = 5,
		.gen = 77,
	};
	struct dq_cancel c = { .handle = DQ_HANDLE(5, 77) };
	struct dq_submit args;
	struct dq_queue_stats st;

	KUNIT_ASSERT_NOT_NULL(test, q);
	c.handle = DQ_HANDLE(5, 77);
	KUNIT_EXPECT_EQ(test, dq_queue_cancel(q, &c), -ENOENT); /* never used */
	sq_push(q, &d, 1);
	KUNIT_ASSERT_EQ(test, submit(q, &args), 1);
	c.handle = DQ_HANDLE(5, 78);
	KUNIT_EXPECT_EQ(test, dq_queue_cancel(q, &c), -ENOENT);
	c.handle = DQ_HANDLE(QSLOTS, 77);
	KUNIT_EXPECT_EQ(test, dq_queue_cancel(q, &c), -ENOENT);
	c.handle = DQ_HANDLE(5, 77);
	c.resv = 1;
	KUNIT_EXPECT_EQ(test, dq_queue_cancel(q, &c), -EINVAL);
	c.resv = 0;
	KUNIT_EXPECT_EQ(test, dq_queue_cancel(q, &c), 0);
	KUNIT_EXPECT_EQ(test, dq_rec_state(&q->nodes[5]), DQ_MSG_FREE);
	KUNIT_EXPECT_EQ(test, dq_queue_cancel(q, &c), -EALREADY);
	dq_queue_stats(q, &st);
	KUNIT_EXPECT_EQ(test, st.cancelled, 1ULL);
	KUNIT_EXPECT_EQ(test, st.pending, 0ULL);
	KUNIT_EXPECT_EQ(test, atomic64_read(&q->held), 0LL);
	expect_counters_add_up(test, q);
	/* The slot is free again: the same handle can be reused. */
	sq_push(q, &d, 1);
	KUNIT_EXPECT_EQ(test, submit(q, &args), 1);
	KUNIT_EXPECT_EQ(test, dq_queue_cancel(q, &c), 0);
}

/*
 * A paced queue posts burst messages at once and holds the rest, in
 * order, as PACED; rate 0 lets them all go.  All under ready_lock, so the
 * pacing timer cannot interfere; the checks run after unlocking.
 */
static void queue_pacing_post(struct kunit *test)
{
	struct dq_queue *q = test->priv;
	u32 prod_burst, prod_all;
	u64 paced, throttled, paced_after;
	enum dq_msg_state s4;
	bool order = true;
	u64 now;
	u32 i;

	KUNIT_ASSERT_NOT_NULL(test, q);
	spin_lock_bh(&q->ready_lock);
	now = ktime_get_ns();
	q->pace_rate = 1;		/* one a second: the timer stays away */
	q->pace_burst = 3;
	q->pace_cost_ns = NSEC_PER_SEC;
	q->pace_tat = now;
	for (i = 0; i < 8; i++) {
		q->nodes[i].due = now;
		q->recs[i].user_data = i;
		atomic64_inc(&q->held);
		q->submitted++;		/* keeps the stats consistent */
		dq_queue_post_locked(q, i, now);
	}
	prod_burst = q->rq_prod;
	paced = q->paced_len;
	throttled = q->throttled;
	s4 = dq_rec_state(&q->nodes[4]);
	/* Unpaced: everything held goes out, in order. */
	q->pace_rate = 0;
	dq_pace_release_locked(q, now);
	prod_all = q->rq_prod;
	paced_after = q->paced_len;
	for (i = 0; i < 8; i++)
		if (q->rq_ring[i].user_data != i)
			order = false;
	spin_unlock_bh(&q->ready_lock);
	hrtimer_cancel(&q->pace_timer);

	KUNIT_EXPECT_EQ(test, prod_burst, 3U);
	KUNIT_EXPECT_EQ(test, paced, 5ULL);
	KUNIT_EXPECT_EQ(test, throttled, 5ULL);
	KUNIT_EXPECT_EQ(test, s4, DQ_MSG_PACED);
	KUNIT_EXPECT_EQ(test, prod_all, 8U);
	KUNIT_EXPECT_EQ(test, paced_after, 0ULL);
	KUNIT_EXPECT_TRUE(test, order);
	expect_counters_add_up(test, q);
}

/*
 * Hold @n slots of @q as a submit would (accepted, counted in held) and
 * hand them to the engine in batches of 64, due at @due (host clock).
 */
static void hold_slots(struct dq_queue *q, const u32 *slots, u32 n, u64 due)
{
	u32 batch[64];
	u32 i = 0;

	while (i < n) {
		u32 k;

		for (k = 0; k < 64 && i < n; k++, i++) {
			struct dq_desc d = {
				.due_ns = due, .slot = slots[i],
				.user_data = slots[i], .gen = 1,
			};

			dq_rec_accept(&q->nodes[slots[i]], &q->recs[slots[i]],
				      &d, due, DQ_MSG_SUBMITTING);
			atomic64_inc(&q->held);
			batch[k] = slots[i];
		}
		mutex_lock(&q->submit_lock);
		WRITE_ONCE(q->submitted, q->submitted + k);
		mutex_unlock(&q->submit_lock);
		dq_engine_insert(q->engine, q, batch, k, 0, ktime_get_ns());
	}
}

/*
 * Records due now may leave the wheel at the insert or, when their tick
 * has not ended yet, at the engine's timer a microsecond later: wait
 * (sleeping, bounded) until @q has @pending left in the wheel.
 */
static bool pending_reaches(struct dq_queue *q, u64 pending)
{
	unsigned long end = jiffies + 10 * HZ;
	struct dq_queue_stats st;

	while (time_before(jiffies, end)) {
		dq_queue_stats(q, &st);
		if (st.pending == pending)
			return true;
		msleep(20);
	}
	return false;
}

static u64 engine_count(struct dq_engine *e)
{
	u64 n;

	spin_lock_bh(&e->lock);
	n = e->wheel.count;
	spin_unlock_bh(&e->lock);
	return n;
}

static struct dq_queue *big_queue(struct kunit *test, u32 slots)
{
	struct dq_setup s = {
		.slot_count = slots,
		.slot_size = 64,
		.submit_entries = 16,
		.ready_entries = 16,
		.numa_node = -1,
	};
	struct dq_queue *q = dq_queue_create(&s, &init_net, NULL);

	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, q);
	return q;
}

/*
 * Take back, by cancel, whatever a purge left in the wheel: a broken
 * purge fails its test without leaving records behind for the detach
 * (which would find them gone with the queue's memory).
 */
static void cancel_left(struct dq_queue *q)
{
	u32 i;

	for (i = 0; i < q->slot_count; i++)
		if (dq_rec_state(&q->nodes[i]) == DQ_MSG_PENDING) {
			struct dq_cancel c = { .handle = DQ_HANDLE(i, 1) };

			dq_queue_cancel(q, &c);
		}
}

/* After a purge: nothing held, no slot busy, no PENDING bit left. */
static void expect_purged(struct kunit *test, struct dq_queue *q)
{
	struct dq_queue_stats st;
	u32 i, bad = 0, bits = 0;

	dq_queue_stats(q, &st);
	KUNIT_EXPECT_EQ(test, atomic64_read(&q->held), 0LL);
	KUNIT_EXPECT_EQ(test, st.pending, 0ULL);
	KUNIT_EXPECT_EQ(test, st.ready_backlog, 0ULL);
	KUNIT_EXPECT_EQ(test, st.paced, 0ULL);
	for (i = 0; i < q->slot_count; i++)
		if (dq_rec_state(&q->nodes[i]) != DQ_MSG_FREE)
			bad++;
	for (i = 0; i < BITS_TO_LONGS(q->slot_count); i++)
		bits += hweight_long(q->pend_bits[i]);
	for (i = 0; i < BITS_TO_LONGS(BITS_TO_LONGS(q->slot_count)); i++)
		bits += hweight_long(q->pend_sum[i]);
	KUNIT_EXPECT_EQ(test, bad, 0U);
	KUNIT_EXPECT_EQ(test, bits, 0U);
}

#define PSLOTS	10000U	/* three directory chunks, 157 bitmap words */

/*
 * A sparse queue: a few records far apart in the wheel (across bitmap
 * words, summary words and directory chunks) and three due ones on the
 * backlog (the ring full).  The purge drops each exactly once: held ends
 * at 0, not below, and the node's wheel loses exactly what it had.
 */
static void purge_sparse(struct kunit *test)
{
	static const u32 far[] = { 0, 63, 64, 4095, 4096, 4097, 8191, 9999 };
	static const u32 due[] = { 1, 2, 3 };
	struct dq_queue *q = big_queue(test, PSLOTS);
	struct dq_engine *e = q->engine;
	u64 before = engine_count(e);

	spin_lock_bh(&q->ready_lock);
	q->rq_prod = q->rq_entries;	/* the consumer is a ring behind */
	spin_unlock_bh(&q->ready_lock);
	hold_slots(q, far, ARRAY_SIZE(far), ktime_get_ns() + 3600 * NSEC_PER_SEC);
	hold_slots(q, due, ARRAY_SIZE(due), ktime_get_ns() - 1000);
	KUNIT_ASSERT_TRUE(test, pending_reaches(q, ARRAY_SIZE(far)));
	KUNIT_EXPECT_EQ(test, engine_count(e), before + ARRAY_SIZE(far));
	KUNIT_EXPECT_EQ(test, q->backlog_len, (u64)ARRAY_SIZE(due));
	KUNIT_EXPECT_EQ(test, atomic64_read(&q->held),
			(s64)(ARRAY_SIZE(far) + ARRAY_SIZE(due)));
	KUNIT_EXPECT_EQ(test, READ_ONCE(q->rq_hdr->flags), (u32)DQ_RING_F_BACKLOG);

	dq_queue_purge(q);
	expect_purged(test, q);
	/* A purged backlog is no backlog: the consumer must not look for it. */
	KUNIT_EXPECT_EQ(test, READ_ONCE(q->rq_hdr->flags), 0U);
	KUNIT_EXPECT_EQ(test, engine_count(e), before);
	cancel_left(q);
	dq_queue_put(q);
	KUNIT_EXPECT_EQ(test, engine_count(e), before);
}

/*
 * A dense queue: every slot held (39 purge chunks), purged; then held
 * again and dropped by the detach of the queue's last put.
 */
static void purge_dense(struct kunit *test)
{
	struct dq_queue *q = big_queue(test, PSLOTS);
	struct dq_engine *e = q->engine;
	u64 before = engine_count(e), far;
	u32 *slots, i;

	slots = kunit_kcalloc(test, PSLOTS, sizeof(*slots), GFP_KERNEL);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, slots);
	for (i = 0; i < PSLOTS; i++)
		slots[i] = PSLOTS - 1 - i;
	far = ktime_get_ns() + 3600 * NSEC_PER_SEC;
	hold_slots(q, slots, PSLOTS, far);
	KUNIT_EXPECT_EQ(test, engine_count(e), before + PSLOTS);
	dq_queue_purge(q);
	expect_purged(test, q);
	KUNIT_EXPECT_EQ(test, engine_count(e), before);
	cancel_left(q);

	hold_slots(q, slots, PSLOTS, far);
	KUNIT_EXPECT_EQ(test, engine_count(e), before + PSLOTS);
	dq_queue_put(q);
	KUNIT_EXPECT_EQ(test, engine_count(e), before);
}

/*
 * A release run finds each record's queue from its wheel index alone
 * (records do not name their queue): through the owner of the directory
 * chunk the index falls in.  Two queues on one node, of two and three
 * chunks, hold records at their chunks' edges, all due at one instant and
 * inserted alternately, so a run goes from queue to queue: each ring gets
 * its own slots, in order.
 */
static struct dq_queue *chunky_queue(struct kunit *test, u32 slots, int node)
{
	struct dq_setup s = {
		.slot_count = slots,
		.slot_size = 64,
		.submit_entries = 16,
		.ready_entries = 64,
		.numa_node = node,
	};
	struct dq_queue *q = dq_queue_create(&s, &init_net, NULL);

	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, q);
	return q;
}

static void engine_owner_chunks(struct kunit *test)
{
	static const u32 sa[] = { 0, 4095, 4096, 4999 };
	static const u32 sb[] = { 1, 4095, 4096, 8191, 8192, 8999 };
	struct dq_queue *qa = chunky_queue(test, 5000, -1);
	struct dq_queue *qb;
	struct dq_engine *e = qa->engine;
	u32 i, ca, cb, bad = 0;
	u64 due;

	qb = chunky_queue(test, 9000, qa->node);
	KUNIT_ASSERT_PTR_EQ(test, qb->engine, e);
	spin_lock_bh(&e->lock);
	ca = qa->wheel_base >> DQ_WHEEL_DIR_SHIFT;
	cb = qb->wheel_base >> DQ_WHEEL_DIR_SHIFT;
	for (i = 0; i < 2; i++)
		bad += e->owner[ca + i] != qa;
	for (i = 0; i < 3; i++)
		bad += e->owner[cb + i] != qb;
	spin_unlock_bh(&e->lock);
	KUNIT_EXPECT_EQ(test, bad, 0U);

	due = ktime_get_ns() + 20 * NSEC_PER_MSEC;
	for (i = 0; i < ARRAY_SIZE(sb); i++) {
		if (i < ARRAY_SIZE(sa))
			hold_slots(qa, &sa[i], 1, due);
		hold_slots(qb, &sb[i], 1, due);
	}
	KUNIT_ASSERT_TRUE(test, ready_reaches(qa, ARRAY_SIZE(sa)));
	KUNIT_ASSERT_TRUE(test, ready_reaches(qb, ARRAY_SIZE(sb)));
	for (i = 0; i < ARRAY_SIZE(sa); i++) {
		KUNIT_EXPECT_EQ_MSG(test, dq_rq_entry(qa, i)->slot, sa[i],
				    "qa entry %u", i);
		KUNIT_EXPECT_EQ(test, dq_rq_entry(qa, i)->user_data, (u64)sa[i]);
	}
	for (i = 0; i < ARRAY_SIZE(sb); i++) {
		KUNIT_EXPECT_EQ_MSG(test, dq_rq_entry(qb, i)->slot, sb[i],
				    "qb entry %u", i);
		KUNIT_EXPECT_EQ(test, dq_rq_entry(qb, i)->user_data, (u64)sb[i]);
	}
	KUNIT_EXPECT_EQ(test, atomic64_read(&qa->held), 0LL);
	KUNIT_EXPECT_EQ(test, atomic64_read(&qb->held), 0LL);
	cancel_left(qa);
	cancel_left(qb);
	dq_queue_put(qa);
	dq_queue_put(qb);
}

/*
 * A release batch reads the consumer index once and checks it: with the
 * index scribbled (ahead of the producer) nothing is written to the ring,
 * the batch waits on the backlog, the error is counted once for the
 * batch and the ring flagged; repaired, a refill posts the batch, and
 * held drops by the batch once it is published.
 */
static void ready_batch_broken_index(struct kunit *test)
{
	static const u32 slots[] = { 0, 1, 2, 3, 4, 5, 6, 7, 8, 9 };
	struct dq_queue *q = test->priv;
	struct dq_queue_stats st;
	u32 used;

	KUNIT_ASSERT_NOT_NULL(test, q);
	WRITE_ONCE(q->rq_hdr->consumer, 5);	/* ahead of producer 0 */
	hold_slots(q, slots, ARRAY_SIZE(slots), ktime_get_ns() - 1000);
	KUNIT_ASSERT_TRUE(test, pending_reaches(q, 0));
	dq_queue_stats(q, &st);
	KUNIT_EXPECT_EQ(test, q->rq_prod, 0U);
	KUNIT_EXPECT_EQ(test, st.released, 0ULL);
	KUNIT_EXPECT_EQ(test, st.ready_backlog, 10ULL);
	KUNIT_EXPECT_EQ(test, st.ring_errors, 1ULL);
	/* Broken, and the batch on the backlog says so too. */
	KUNIT_EXPECT_EQ(test, READ_ONCE(q->rq_hdr->flags),
			(u32)(DQ_RING_F_BROKEN | DQ_RING_F_BACKLOG));
	KUNIT_EXPECT_EQ(test, atomic64_read(&q->held), 10LL);

	/* Another batch while it is still broken: one more count. */
	hold_slots(q, (const u32[]){ 10 }, 1, ktime_get_ns() - 1000);
	KUNIT_ASSERT_TRUE(test, pending_reaches(q, 0));
	dq_queue_stats(q, &st);
	KUNIT_EXPECT_EQ(test, st.ring_errors, 2ULL);
	KUNIT_EXPECT_EQ(test, q->rq_prod, 0U);

	WRITE_ONCE(q->rq_hdr->consumer, 0);
	spin_lock_bh(&q->ready_lock);
	used = dq_queue_ready_refill_locked(q);
	spin_unlock_bh(&q->ready_lock);
	KUNIT_EXPECT_EQ(test, used, 11U);
	dq_queue_stats(q, &st);
	KUNIT_EXPECT_EQ(test, st.released, 11ULL);
	KUNIT_EXPECT_EQ(test, st.ready_backlog, 0ULL);
	KUNIT_EXPECT_EQ(test, st.ring_errors, 2ULL);
	/* The backlog is empty again; broken stays (it happened once). */
	KUNIT_EXPECT_EQ(test, READ_ONCE(q->rq_hdr->flags), (u32)DQ_RING_F_BROKEN);
	KUNIT_EXPECT_EQ(test, atomic64_read(&q->held), 0LL);
	expect_counters_add_up(test, q);
}

/*
 * A healthy batch: due records go straight to the ring, and held is down
 * by the whole batch by the time the entries are published (the submit
 * side may reuse the slots at once).  A batch larger than the room the
 * batch's read saw reads once more, then backlogs the rest.
 */
static void ready_batch_held(struct kunit *test)
{
	u32 slots[QSLOTS], i;
	struct dq_queue *q = test->priv;
	struct dq_queue_stats st;

	KUNIT_ASSERT_NOT_NULL(test, q);
	for (i = 0; i < QSLOTS; i++)
		slots[i] = i;
	hold_slots(q, slots, 12, ktime_get_ns() - 1000);
	KUNIT_ASSERT_TRUE(test, pending_reaches(q, 0));
	/* Pairs with the release that publishes the entries. */
	KUNIT_EXPECT_EQ(test, smp_load_acquire(&q->rq_hdr->producer), 12U);
	KUNIT_EXPECT_EQ(test, atomic64_read(&q->held), 0LL);
	KUNIT_EXPECT_EQ(test, q->rq_room, QSLOTS - 12);
	/*
	 * The consumer read all 12 meanwhile: the batch's read sees room
	 * for 16; then the 8 records fit, none on the backlog.
	 */
	smp_store_release(&q->rq_hdr->consumer, 12);
	hold_slots(q, slots + 4, 8, ktime_get_ns() - 1000);
	KUNIT_ASSERT_TRUE(test, pending_reaches(q, 0));
	dq_queue_stats(q, &st);
	KUNIT_EXPECT_EQ(test, st.released, 20ULL);
	KUNIT_EXPECT_EQ(test, st.ready_backlog, 0ULL);
	KUNIT_EXPECT_EQ(test, st.ring_errors, 0ULL);
	KUNIT_EXPECT_EQ(test, q->rq_room, QSLOTS - 8);
	KUNIT_EXPECT_EQ(test, atomic64_read(&q->held), 0LL);
	/*
	 * Outside a release run (a pacing or credit post): the room known
	 * (8) first, then one more read when it runs out: 4 more read, so
	 * 12 go out, and the ring is then full.
	 */
	smp_store_release(&q->rq_hdr->consumer, 16);
	spin_lock_bh(&q->ready_lock);
	for (i = 0; i < 13; i++) {
		q->nodes[i].due = ktime_get_ns();
		dq_rec_set_state(&q->nodes[i], DQ_MSG_SUBMITTING);
		atomic64_inc(&q->held);
		q->submitted++;
		dq_queue_post_locked(q, i, ktime_get_ns());
	}
	dq_queue_publish_locked(q);
	spin_unlock_bh(&q->ready_lock);
	dq_queue_stats(q, &st);
	KUNIT_EXPECT_EQ(test, q->rq_prod, 32U);
	KUNIT_EXPECT_EQ(test, st.ready_backlog, 1ULL);
	KUNIT_EXPECT_EQ(test, atomic64_read(&q->held), 1LL);
	expect_counters_add_up(test, q);
}

/*
 * The engine's slack through real submits: one density sample per
 * release run, the slack applied at the next arming, which is never
 * before the wheel's next work.  A batch already due goes into the
 * current tick's bucket, released by one run of the timer when the tick
 * ends.  The queue is alone on its engine (the wheel is empty).
 */
static bool engine_timer_settled(struct dq_engine *e, u64 *soft, u64 *hard)
{
	bool ok;

	spin_lock_bh(&e->lock);
	*soft = ktime_to_ns(hrtimer_get_softexpires(&e->timer));
	*hard = ktime_to_ns(hrtimer_get_expires(&e->timer));
	/* A kick (armed from the other node) re-arms from the callback. */
	ok = !atomic_read(&e->kick_pending) && hrtimer_is_queued(&e->timer) &&
	     *soft == e->armed_ns;
	spin_unlock_bh(&e->lock);
	return ok;
}

static void engine_wait_armed(struct kunit *test, struct dq_engine *e,
			      u64 *soft, u64 *hard)
{
	unsigned long end = jiffies + 5 * HZ;

	while (!engine_timer_settled(e, soft, hard) &&
	       time_before(jiffies, end))
		usleep_range(1000, 2000);
	KUNIT_ASSERT_TRUE(test, engine_timer_settled(e, soft, hard));
}

static void queue_slack_engine(struct kunit *test)
{
	struct dq_queue *q = test->priv;
	u64 now = ktime_get_ns(), t0 = now - 50 * NSEC_PER_MSEC;
	u64 far = now + 3600 * NSEC_PER_SEC;
	struct dq_cancel c = { .handle = DQ_HANDLE(QSLOTS - 1, 1) };
	struct dq_slack ref, got;
	struct dq_submit args;
	struct dq_desc d[8];
	struct dq_engine *e;
	u64 soft, hard;
	bool empty;
	u32 i;

	KUNIT_ASSERT_NOT_NULL(test, q);
	e = q->engine;
	spin_lock_bh(&e->lock);
	empty = dq_wheel_empty(&e->wheel);
	/* Test only: forget earlier releases, as an engine's first queue. */
	dq_slack_init(&e->slack, e->slack.max, false);
	e->slack.last_due = t0;
	ref = e->slack;
	spin_unlock_bh(&e->lock);
	KUNIT_ASSERT_TRUE(test, empty);
	KUNIT_ASSERT_EQ(test, ref.max, 50000ULL - DQ_WHEEL_TICK_NS);

	/* Sparse: 7 already due, 1 ms apart, released in one run. */
	for (i = 0; i < 7; i++)
		d[i] = (struct dq_desc){
			.due_ns = t0 + (i + 1) * NSEC_PER_MSEC,
			.slot = i,
			.gen = 1,
		};
	sq_push(q, d, 7);
	KUNIT_ASSERT_EQ(test, submit(q, &args), 7);
	KUNIT_ASSERT_TRUE(test, ready_reaches(q, 7));
	spin_lock_bh(&e->lock);
	got = e->slack;
	spin_unlock_bh(&e->lock);
	dq_slack_sample(&ref, t0 + 7 * NSEC_PER_MSEC, 7);
	dq_slack_update(&ref);
	KUNIT_EXPECT_EQ(test, got.last_due, t0 + 7 * NSEC_PER_MSEC);
	KUNIT_EXPECT_EQ(test, got.gap_ewma, ref.gap_ewma);
	KUNIT_EXPECT_EQ(test, got.cur, ref.cur);
	KUNIT_EXPECT_LT(test, got.cur, got.max / 8);
	/* The next arming (a far cascade) takes that slack, not the bound. */
	d[0] = (struct dq_desc){ .due_ns = far, .slot = QSLOTS - 1, .gen = 1 };
	sq_push(q, d, 1);
	KUNIT_ASSERT_EQ(test, submit(q, &args), 1);
	engine_wait_armed(test, e, &soft, &hard);
	KUNIT_EXPECT_LE(test, soft, far);
	KUNIT_EXPECT_EQ(test, hard - soft, got.cur);
	KUNIT_ASSERT_EQ(test, dq_queue_cancel(q, &c), 0);

	/* Dense: 8 more, 1 us apart, right after: the whole bound. */
	for (i = 0; i < 8; i++)
		d[i] = (struct dq_desc){
			.due_ns = t0 + 7 * NSEC_PER_MSEC + (i + 1) * 1000,
			.slot = 7 + i,
			.gen = 1,
		};
	sq_push(q, d, 8);
	KUNIT_ASSERT_EQ(test, submit(q, &args), 8);
	KUNIT_ASSERT_TRUE(test, ready_reaches(q, 15));
	spin_lock_bh(&e->lock);
	got = e->slack;
	spin_unlock_bh(&e->lock);
	KUNIT_EXPECT_EQ(test, got.gap_ewma, 1000ULL);
	KUNIT_EXPECT_EQ(test, got.cur, got.max);
	c.handle = DQ_HANDLE(QSLOTS - 1, 2);
	d[0] = (struct dq_desc){ .due_ns = far, .slot = QSLOTS - 1, .gen = 2 };
	sq_push(q, d, 1);
	KUNIT_ASSERT_EQ(test, submit(q, &args), 1);
	engine_wait_armed(test, e, &soft, &hard);
	KUNIT_EXPECT_LE(test, soft, far);
	KUNIT_EXPECT_EQ(test, hard - soft, got.max);
	KUNIT_EXPECT_EQ(test, dq_queue_cancel(q, &c), 0);
}

static struct kunit_case dq_queue_cases[] = {
	KUNIT_CASE(queue_submit_broken_producer),
	KUNIT_CASE(queue_wrap_2_32),
	KUNIT_CASE(queue_backlog),
	KUNIT_CASE(queue_backlog_index_order),
	KUNIT_CASE(queue_reject_full),
	KUNIT_CASE(queue_reject_counters),
	KUNIT_CASE(queue_cancel),
	KUNIT_CASE(queue_pacing_post),
	KUNIT_CASE(purge_sparse),
	KUNIT_CASE(purge_dense),
	KUNIT_CASE(engine_owner_chunks),
	KUNIT_CASE(ready_batch_broken_index),
	KUNIT_CASE(ready_batch_held),
	KUNIT_CASE(queue_slack_engine),
	{}
};

static struct kunit_suite dq_queue_suite = {
	.name = "dq_queue",
	.init = queue_init,
	.exit = queue_exit,
	.test_cases = dq_queue_cases,
};

kunit_test_suites(&dq_wheel_suite, &dq_pacing_suite, &dq_slack_suite,
		  &dq_desc_suite, &dq_ring_suite, &dq_queue_suite);

MODULE_DESCRIPTION("KUnit tests of dq.ko internals");
MODULE_LICENSE("GPL");
DQ_IMPORT_KUNIT_NS();
