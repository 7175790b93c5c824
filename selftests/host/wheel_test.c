// SPDX-License-Identifier: LGPL-2.1 OR MIT
/*
 * Host-side model test of the release structure (kmod/shared/dq_wheel.c compiled
 * for user space): random inserts, removals and clock steps, checked
 * against a model the test keeps itself, never against what the wheel
 * says about its entries:
 *
 *  - the test records each entry's due time and its insertion index in
 *    its own table (struct item), and keeps every pending entry in its own
 *    min-heap ordered by (recorded due, insertion index);
 *  - never early: released at a clock >= the recorded due time;
 *  - order and FIFO ties: each entry released is the least pending one of
 *    the heap (an entry still pending with a smaller due time, or the same
 *    due time and an earlier insertion, should have left first);
 *  - exactly once: an entry leaves once, and a removed one never;
 *  - nothing lost: when the wheel says it is empty (or stops making
 *    progress) while the model still has pending entries, the case fails
 *    at once, and the loop is bounded in iterations; the harness's timeout
 *    backs that up;
 *  - at most one tick late when the clock is advanced exactly to
 *    dq_wheel_next().
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <linux/limits.h>

#include "dq_wheel.h"
#include "tap.h"

struct item {
	u64 due;		/* the test's own record of the due time */
	u64 idx;		/* the test's own insertion index */
	int state;		/* 0 free, 1 pending, 2 released, 3 removed */
	int past_due;		/* due before the clock when inserted */
	u64 released_at;
};

/* Report the first few failures of a case in full, then only count. */
static unsigned int nfail;

#define MCHECK(cond, ...) do {						\
	if (!(cond)) {							\
		FAIL(__VA_ARGS__);					\
		if (++nfail >= 20) {					\
			FAIL("20 failures: the rest of this case is not run"); \
			tap_abort();					\
		}							\
	}								\
} while (0)

static u64 rng_state;

static u64 rnd(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

static u64 delay_for(int mode)
{
	switch (mode) {
	case 0: return rnd() % 5000;			/* within a few ticks */
	case 1: return rnd() % 500000000ULL;		/* up to 0.5 s */
	case 2: return rnd() % (1ULL << 40);		/* up to ~18 min */
	case 3: return (rnd() % 4) * 1000000ULL;	/* many ties */
	case 5: return rnd() % 4000000000ULL;		/* sparse: ~0.01/tick */
	default: return (rnd() % 2) ? 0 : (1ULL << 54) + rnd() % 1000;
	}
}

/* ---- the model: pending entries by (recorded due, insertion index) --- */

struct heap {
	struct item **v;
	unsigned int n;
};

static int before(const struct item *a, const struct item *b)
{
	return a->due < b->due || (a->due == b->due && a->idx < b->idx);
}

static void heap_push(struct heap *h, struct item *it)
{
	unsigned int i = h->n++;

	while (i && before(it, h->v[(i - 1) / 2])) {
		h->v[i] = h->v[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	h->v[i] = it;
}

static void heap_pop(struct heap *h)
{
	struct item *last = h->v[--h->n];
	unsigned int i = 0;

	for (;;) {
		unsigned int c = 2 * i + 1;

		if (c >= h->n)
			break;
		if (c + 1 < h->n && before(h->v[c + 1], h->v[c]))
			c++;
		if (!before(h->v[c], last))
			break;
		h->v[i] = h->v[c];
		i = c;
	}
	if (h->n)
		h->v[i] = last;
}

/* The least entry still pending in the model (removed/released: lazily). */
static struct item *heap_min(struct heap *h)
{
	while (h->n && h->v[0]->state != 1)
		heap_pop(h);
	return h->n ? h->v[0] : NULL;
}

struct run_state {
	struct dq_wheel *w;
	/* The wheel's records: item i is i (DQ_WHEEL_DIR_LOOKUP: in chunks). */
	struct dq_wheel_node *nodes;
	struct dq_wheel_node **dir;
	struct item *items;
	struct heap heap;
	unsigned int nitems, pending;
};

/* Drain everything due at @now, each checked against the model. */
static unsigned int drain(struct run_state *rs, u64 now, unsigned int budget)
{
	struct dq_ilist out;
	unsigned int n, seen = 0;

	dq_ilist_init(&out);
	n = dq_wheel_advance(rs->w, now, &out, budget);
	while (!dq_ilist_empty(&out)) {
		u32 idx = dq_ilist_pop(rs->w, &out);
		struct item *it;
		struct item *least;

		seen++;
		if (idx >= rs->nitems) {
			MCHECK(0, "released an entry the test never inserted");
			continue;
		}
		it = &rs->items[idx];
		MCHECK(it->state == 1, "item %llu released in state %d (%s)",
		       (unsigned long long)it->idx, it->state,
		       it->state == 2 ? "twice" : it->state == 3 ?
		       "after its removal" : "never inserted");
		if (it->state != 1)
			continue;
		MCHECK(it->due <= now, "early: item %llu due %llu released at %llu",
		       (unsigned long long)it->idx, (unsigned long long)it->due,
		       (unsigned long long)now);
		least = heap_min(&rs->heap);
		MCHECK(least == it,
		       "order: item %llu (due %llu) released while item %llu "
		       "(due %llu) is still pending",
		       (unsigned long long)it->idx, (unsigned long long)it->due,
		       (unsigned long long)(least ? least->idx : 0),
		       (unsigned long long)(least ? least->due : 0));
		it->state = 2;
		it->released_at = now;
		rs->pending--;
	}
	MCHECK(seen == n, "advance said %u, listed %u", n, seen);
	return seen;
}

/* An empty wheel for @rs->nitems records, and the model's tables. */
static void rs_init(struct run_state *rs)
{
	unsigned int i;

	rs->w = malloc(sizeof(*rs->w));
	rs->items = calloc(rs->nitems, sizeof(*rs->items));
	rs->heap.v = calloc(rs->nitems, sizeof(*rs->heap.v));
	rs->nodes = calloc(rs->nitems, sizeof(*rs->nodes));
	rs->dir = calloc(rs->nitems / DQ_WHEEL_DIR_SIZE + 1, sizeof(*rs->dir));
	ASSERT_TRUE(rs->w && rs->items && rs->heap.v && rs->nodes && rs->dir);
	for (i = 0; i <= rs->nitems / DQ_WHEEL_DIR_SIZE; i++) {
#ifdef DQ_WHEEL_DIR_LOOKUP
		/* dq.ko's way: every chunk an allocation of its own. */
		rs->dir[i] = calloc(DQ_WHEEL_DIR_SIZE, sizeof(*rs->nodes));
		ASSERT_TRUE(rs->dir[i]);
#else
		rs->dir[i] = rs->nodes + (size_t)i * DQ_WHEEL_DIR_SIZE;
#endif
	}
	dq_wheel_init(rs->w, rs->dir);
}

static void rs_free(struct run_state *rs)
{
#ifdef DQ_WHEEL_DIR_LOOKUP
	unsigned int i;

	for (i = 0; i <= rs->nitems / DQ_WHEEL_DIR_SIZE; i++)
		free(rs->dir[i]);
#endif
	free(rs->dir);
	free(rs->nodes);
	free(rs->heap.v);
	free(rs->items);
	free(rs->w);
}

/* Insert record @idx, due at @due, at clock @now: the wheel and the model. */
static void rs_insert(struct run_state *rs, u32 idx, u64 due, u64 now,
		      u64 seq)
{
	struct item *it = &rs->items[idx];

	it->due = due;
	it->idx = seq;
	it->state = 1;
	it->past_due = due <= now;
	dq_wheel_node(rs->w, idx)->due = due;
	dq_wheel_insert(rs->w, idx, now);
	heap_push(&rs->heap, it);
	rs->pending++;
}

static void rs_remove(struct run_state *rs, u32 idx)
{
	dq_wheel_remove(rs->w, idx);
	rs->items[idx].state = 3;
	rs->pending--;
}

/*
 * Step the clock to each dq_wheel_next() and drain, @budget at a time,
 * until the wheel is empty; then nothing may be left in the model.
 */
static void rs_drain_all(struct run_state *rs, u64 now, unsigned int budget)
{
	unsigned int steps;

	for (steps = 0; steps < 100000 && !dq_wheel_empty(rs->w); steps++) {
		u64 next = dq_wheel_next(rs->w);

		if (next > now)
			now = next;
		drain(rs, now, budget);
	}
	MCHECK(dq_wheel_empty(rs->w), "not empty after %u steps", steps);
	MCHECK(rs->pending == 0, "%u pending in the model, the wheel is empty",
	       rs->pending);
}

struct wheel_case {
	int mode;
	unsigned int start_i;
	u64 start;
	unsigned int budget;
	unsigned int nitems;
	/*
	 * ns; 0: the clock steps to dq_wheel_next().  Else it jumps by up to
	 * this much, a consumer's slack, so that one advance finds many
	 * level-0 buckets due: with more records than DQ_WHEEL_HEADS_MIN
	 * that runs dq_wheel_warm_heads(), which must then have run.
	 */
	u64 jump;
};

static void run(void *arg)
{
	const struct wheel_case *wc = arg;
	struct run_state rs = { .nitems = wc->nitems };
	unsigned int i, inserted = 0, released = 0, removed = 0;
	/* Every step inserts, removes, cascades or releases; bound them. */
	unsigned long iter, max_iter = 64UL * wc->nitems + 10000;
	unsigned long stuck = 0;
	u64 now = wc->start, max_late = 0, cascaded = 0;

	rng_state = 88172645463325252ULL ^ ((u64)wc->mode << 32) ^
		    ((u64)wc->start_i << 16) ^ wc->budget;
	rs_init(&rs);
	for (iter = 0; released + removed < wc->nitems; iter++) {
		unsigned int progress = 0;

		if (iter >= max_iter) {
			FAIL("no end after %lu steps: %u inserted, %u released, "
			     "%u removed, %u pending in the model, wheel count %llu",
			     iter, inserted, released, removed, rs.pending,
			     (unsigned long long)rs.w->count);
			break;
		}
		/* Insert a few, sometimes remove one, then step the clock. */
		for (i = 0; i < 8 && inserted < wc->nitems; i++, inserted++) {
			struct item *it = &rs.items[inserted];
			u64 d = delay_for(wc->mode);

			it->due = (rnd() % 16 == 0 && now > 1000) ?
				  now - rnd() % 1000 : now + d;
			it->idx = inserted;
			dq_wheel_node(rs.w, inserted)->due = it->due;
			it->state = 1;
			it->past_due = it->due <= now;
			dq_wheel_insert(rs.w, inserted, now);
			heap_push(&rs.heap, it);
			rs.pending++;
			progress++;
		}
		if (rnd() % 8 == 0 && inserted) {
			u32 idx = (u32)(rnd() % inserted);
			struct item *it = &rs.items[idx];

			if (it->state == 1) {
				dq_wheel_remove(rs.w, idx);
				it->state = 3;
				removed++;
				rs.pending--;
				progress++;
			}
		}
		if (inserted == wc->nitems || rnd() % 2) {
			u64 next = dq_wheel_next(rs.w);
			unsigned int got;

			if (next == U64_MAX) {
				MCHECK(rs.w->count == 0, "next empty but count %llu",
				       (unsigned long long)rs.w->count);
				if (inserted == wc->nitems && rs.pending) {
					struct item *least = heap_min(&rs.heap);

					FAIL("lost: the wheel is empty, %u entries "
					     "pending in the model (e.g. item %llu "
					     "due %llu)", rs.pending,
					     (unsigned long long)least->idx,
					     (unsigned long long)least->due);
					break;
				}
				continue;
			}
			/* Now and then inside the tick, short of its end. */
			if (rnd() % 4 == 0 && next > DQ_WHEEL_TICK_NS)
				next -= rnd() % DQ_WHEEL_TICK_NS;
			if (wc->jump)
				next = now + 1 + rnd() % wc->jump;
			if (next > now) {
				now = next;
				progress++;
			}
			got = drain(&rs, now, wc->budget);
			released += got;
			progress += got;
			/*
			 * With a budget that cannot run out, nothing due at
			 * now stays behind (one inserted already due, in the
			 * tick the clock is in, included).
			 */
			if (wc->budget >= 1000000) {
				struct item *least = heap_min(&rs.heap);

				MCHECK(!least || least->due > now,
				       "item %llu due %llu still held at %llu",
				       (unsigned long long)(least ? least->idx : 0),
				       (unsigned long long)(least ? least->due : 0),
				       (unsigned long long)now);
			}
			if (rs.w->cascaded != cascaded) {
				cascaded = rs.w->cascaded;
				progress++;
			}
		}
		/* A clock that stays put and releases nothing, over and over. */
		stuck = progress ? 0 : stuck + 1;
		if (stuck > 1000) {
			FAIL("stuck: %lu steps without progress at %llu, %u pending "
			     "in the model, wheel count %llu, next %llu", stuck,
			     (unsigned long long)now, rs.pending,
			     (unsigned long long)rs.w->count,
			     (unsigned long long)dq_wheel_next(rs.w));
			break;
		}
	}
	for (i = 0; i < wc->nitems; i++) {
		struct item *it = &rs.items[i];

		MCHECK(it->state == 2 || it->state == 3,
		       "item %u left in state %d", i, it->state);
		if (it->state == 2 && !it->past_due &&
		    it->released_at - it->due > max_late)
			max_late = it->released_at - it->due;
	}
	MCHECK(rs.w->count == 0, "count %llu at end",
	       (unsigned long long)rs.w->count);
	MCHECK(rs.pending == 0, "%u pending in the model at end", rs.pending);
	/* Clock stepped to dq_wheel_next(): late by at most one tick. */
	MCHECK(max_late < DQ_WHEEL_TICK_NS || wc->budget < 1000000 || wc->jump,
	       "max lateness %llu ns", (unsigned long long)max_late);
	MCHECK(max_late <= wc->jump || !wc->jump || wc->budget < 1000000,
	       "max lateness %llu ns, clock jumps up to %llu",
	       (unsigned long long)max_late, (unsigned long long)wc->jump);
	MCHECK(!wc->jump || wc->nitems < 2 * DQ_WHEEL_HEADS_MIN ||
	       rs.w->heads_warmed > 0,
	       "%u records, clock jumps: the due heads never prefetched",
	       wc->nitems);
	DIAG("%lu steps, cascaded %llu, heads warmed %llu, max late %llu ns",
	     iter, (unsigned long long)rs.w->cascaded,
	     (unsigned long long)rs.w->heads_warmed,
	     (unsigned long long)max_late);
	rs_free(&rs);
}

/*
 * A cascade cut short by its budget leaves each list of the bucket
 * mended at the record where its walk stopped (that record's next names
 * the list's end again).  Remove exactly those records, add younger
 * records with the same due times, and finish: the model must see
 * (due, insertion) order, and every record once.  For every cut of a
 * 64-record level-1 bucket spread over all its lists.
 */
TEST(cut_short_cascade_then_remove, 60)
{
	const u64 start = 5ULL << DQ_WHEEL_SHIFT1;
	unsigned int cut, i, s, removed;

	for (cut = 1; cut < 64; cut++) {
		struct run_state rs = { .nitems = 96 };
		unsigned int b, first;
		u64 seq = 0;

		rs_init(&rs);
		/* 16 due ticks, 4 records each, all in level-1 bucket 5. */
		for (i = 0; i < 64; i++)
			rs_insert(&rs, i, start + (i % 16) * 3 * DQ_WHEEL_TICK_NS,
				  0, seq++);
		MCHECK(drain(&rs, start, cut) == 0, "released at the bucket's start");
		MCHECK(rs.w->cascaded == cut, "cut %u: cascaded %llu", cut,
		       (unsigned long long)rs.w->cascaded);
		MCHECK(rs.w->busy == DQ_WHEEL_FIRST1 + 5 + 1,
		       "cut %u: busy %u", cut, rs.w->busy);
		/* The bucket's lists (dq_wheel.c, dq_wheel_list()). */
		b = rs.w->busy - 1;
		first = DQ_WHEEL_L0_SIZE +
			((b - DQ_WHEEL_L0_SIZE) << DQ_WHEEL_SUB_SHIFT);
		removed = 0;
		for (s = 0; s < DQ_WHEEL_SUB; s++) {
			u32 tail = rs.w->list[first + s].tail;

			if (tail < DQ_WHEEL_END) {
				rs_remove(&rs, tail);
				removed++;
			}
		}
		MCHECK(removed > 0 || cut == 64, "cut %u: no list left", cut);
		for (i = 64; i < 80; i++)
			rs_insert(&rs, i, start + (i % 16) * 3 * DQ_WHEEL_TICK_NS,
				  start, seq++);
		rs_drain_all(&rs, start, 5);
		for (i = 0; i < 80; i++)
			MCHECK(rs.items[i].state == 2 || rs.items[i].state == 3,
			       "cut %u: item %u left in state %d", cut, i,
			       rs.items[i].state);
		rs_free(&rs);
	}
}

/*
 * Records with one due time inserted while the clock runs towards it sit
 * at every level on the way (level 2 first, then 1, then 0), on the same
 * list of each bucket, among records of neighbouring due times on the
 * other lists; small budgets cut the cascades short between inserts.
 * The model checks that the ties leave in insertion order.
 */
TEST(ties_across_levels, 60)
{
	const u64 due = (3ULL << DQ_WHEEL_SHIFT2) + 12345;
	struct run_state rs = { .nitems = 6000 };
	u64 now = 0, seq = 0;
	unsigned int i = 0, step;

	rng_state = 0x5eed5eedULL;
	rs_init(&rs);
	for (step = 0; step < 2000 && now < due; step++) {
		rs_insert(&rs, i++, due, now, seq++);
		rs_insert(&rs, i++, due + (rnd() % 8) * DQ_WHEEL_TICK_NS +
			  rnd() % 3, now, seq++);
		rs_insert(&rs, i++, now + rnd() % (due - now + 1), now, seq++);
		/* Bigger steps far from the due time, ever smaller near it. */
		now += (due - now) / 64 + 1 + rnd() % 2048;
		if (now > due)
			now = due;
		drain(&rs, now, 1 + rnd() % 7);
	}
	MCHECK(now == due, "the clock stopped %llu ns short",
	       (unsigned long long)(due - now));
	rs_drain_all(&rs, now, 3);
	DIAG("%u records, cascaded %llu", i, (unsigned long long)rs.w->cascaded);
	rs_free(&rs);
}

/*
 * The clock inside a tick: what is due at it leaves at once (submitted
 * already due, or due earlier in the tick), in order, and what the same
 * tick holds for later stays until its time; then the tick's end.
 */
TEST(due_inside_the_current_tick, 10)
{
	const u64 tick0 = 777ULL * DQ_WHEEL_TICK_NS;
	const u64 now = tick0 + DQ_WHEEL_TICK_NS / 2;
	struct run_state rs = { .nitems = 16 };
	u64 seq = 0;

	rs_init(&rs);
	/* Out of order within the tick, so the bucket must be sorted. */
	rs_insert(&rs, 0, now + 100, tick0, seq++);
	rs_insert(&rs, 1, now - 100, tick0, seq++);
	rs_insert(&rs, 2, now, tick0, seq++);
	MCHECK(drain(&rs, now, 1000) == 2, "at %llu: not the two due",
	       (unsigned long long)now);
	MCHECK(rs.items[1].state == 2 && rs.items[2].state == 2,
	       "the due ones are held: %d %d", rs.items[1].state,
	       rs.items[2].state);
	MCHECK(rs.items[0].state == 1, "released 100 ns early");
	/* Submitted already due, now that part of the tick has gone. */
	rs_insert(&rs, 3, 5, now, seq++);
	rs_insert(&rs, 4, now + 50, now, seq++);
	MCHECK(drain(&rs, now, 1000) == 1 && rs.items[3].state == 2,
	       "a record submitted already due waits");
	MCHECK(drain(&rs, now + 50, 1000) == 1 && rs.items[4].state == 2,
	       "due at now + 50: not released at now + 50");
	rs_drain_all(&rs, now + 50, 1000);
	MCHECK(rs.items[0].state == 2, "item 0 never released");
	rs_free(&rs);
}

int main(int argc, char **argv)
{
	static const u64 starts[] = { 0, 123456789ULL, (1ULL << 40) - 5000,
				      (1ULL << 62) + 77 };
	static struct wheel_case cases[5 * 4 * 2 + 2 * 2];
	unsigned int mode, s, n = 0;

	for (mode = 0; mode < 5; mode++) {
		for (s = 0; s < 4; s++) {
			unsigned int b;

			for (b = 0; b < 2; b++) {
				struct wheel_case *wc = &cases[n++];
				char name[64];

				wc->mode = (int)mode;
				wc->start_i = s;
				wc->start = starts[s];
				wc->budget = b ? 7 : 1000000;
				wc->nitems = 20000;
				snprintf(name, sizeof(name), "mode%u_start%u_%s",
					 mode, s, b ? "budget7" : "unbounded");
				tap_add(name, run, wc, 60);
			}
		}
	}
	/*
	 * A sparse wheel with more records than DQ_WHEEL_HEADS_MIN, read by
	 * a consumer that wakes every few hundred us (the embedded engine at
	 * 100k msg/s): its release prefetches the due buckets' heads.
	 */
	for (s = 0; s < 2; s++) {
		unsigned int b;

		for (b = 0; b < 2; b++) {
			struct wheel_case *wc = &cases[n++];
			char name[64];

			wc->mode = 5;
			wc->start_i = s;
			wc->start = starts[s * 3];
			wc->budget = b ? 7 : 1000000;
			wc->nitems = 2 * DQ_WHEEL_HEADS_MIN;
			wc->jump = b ? 20000 : 600000;
			snprintf(name, sizeof(name), "sparse_jumps_start%u_%s",
				 s * 3, b ? "budget7" : "unbounded");
			tap_add(name, run, wc, 60);
		}
	}
	return tap_main(argc, argv);
}
