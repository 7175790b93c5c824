// SPDX-License-Identifier: LGPL-2.1 OR MIT
/*
 * Host-side model test of the release structure (kmod/dq_wheel.c compiled
 * for user space): random inserts, removals and clock steps, checked
 * against the obvious rules: never early, never lost or duplicated,
 * (due, seq) order, and at most one tick late when the clock is advanced
 * exactly to dq_wheel_next().
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../kmod/dq_wheel.h"

struct item {
	struct dq_wheel_entry we;
	int state;		/* 0 free, 1 pending, 2 released, 3 removed */
	int past_due;		/* due before the clock when inserted */
	u64 released_at;
};

static int failures, checks;

#define CHECK(cond, ...) do {						\
	checks++;							\
	if (!(cond)) {							\
		failures++;						\
		if (failures < 20) {					\
			printf("# %s:%d: ", __FILE__, __LINE__);	\
			printf(__VA_ARGS__);				\
			printf("\n");					\
		}							\
	}								\
} while (0)

static u64 rng_state = 88172645463325252ULL;

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
	default: return (rnd() % 2) ? 0 : (1ULL << 54) + rnd() % 1000;
	}
}

/* Drain everything due at @now, checking order against the last one. */
static unsigned int drain(struct dq_wheel *w, u64 now, struct dq_wheel_entry **last,
			  unsigned int budget)
{
	LIST_HEAD(out);
	unsigned int n = dq_wheel_advance(w, now, &out, budget), seen = 0;

	while (!list_empty(&out)) {
		struct dq_wheel_entry *e = list_first_entry(&out, struct dq_wheel_entry, link);
		struct item *it = container_of(e, struct item, we);

		list_del(&e->link);
		seen++;
		CHECK(it->state == 1, "released item in state %d", it->state);
		CHECK(e->due <= now, "early: due %llu now %llu",
		      (unsigned long long)e->due, (unsigned long long)now);
		if (*last)
			CHECK((*last)->due < e->due ||
			      ((*last)->due == e->due && (*last)->seq < e->seq),
			      "order: %llu/%llu then %llu/%llu",
			      (unsigned long long)(*last)->due, (unsigned long long)(*last)->seq,
			      (unsigned long long)e->due, (unsigned long long)e->seq);
		*last = e;
		it->state = 2;
		it->released_at = now;
	}
	CHECK(seen == n, "advance said %u, listed %u", n, seen);
	return n;
}

static int run(int mode, unsigned int nitems, u64 start, unsigned int budget)
{
	struct dq_wheel *w = malloc(sizeof(*w));
	struct item *items = calloc(nitems, sizeof(*items));
	struct dq_wheel_entry *last = NULL;
	unsigned int i, inserted = 0, released = 0, removed = 0;
	u64 now = start, max_late = 0;
	int before = failures;

	dq_wheel_init(w);
	while (released + removed < nitems) {
		/* Insert a few, sometimes remove one, then step the clock. */
		for (i = 0; i < 8 && inserted < nitems; i++, inserted++) {
			struct item *it = &items[inserted];
			u64 d = delay_for(mode);

			it->we.due = (rnd() % 16 == 0 && now > 1000) ? now - rnd() % 1000 : now + d;
			it->state = 1;
			it->past_due = it->we.due <= now;
			dq_wheel_insert(w, &it->we, now);
			/* A past-due insert may precede what was released: reset order. */
			if (it->we.due <= now)
				last = NULL;
		}
		if (rnd() % 8 == 0 && inserted) {
			struct item *it = &items[rnd() % inserted];

			if (it->state == 1) {
				dq_wheel_remove(w, &it->we);
				it->state = 3;
				removed++;
			}
		}
		if (inserted == nitems || rnd() % 2) {
			u64 next = dq_wheel_next(w);

			if (next == U64_MAX) {
				CHECK(w->count == 0, "next empty but count %llu",
				      (unsigned long long)w->count);
				continue;
			}
			if (next > now)
				now = next;
			released += drain(w, now, &last, budget);
			/* Everything strictly due by now - tick must be out unless budget-bound. */
		}
	}
	for (i = 0; i < nitems; i++) {
		struct item *it = &items[i];

		CHECK(it->state == 2 || it->state == 3, "item %u left in state %d", i, it->state);
		if (it->state == 2 && !it->past_due &&
		    it->released_at - it->we.due > max_late)
			max_late = it->released_at - it->we.due;
	}
	CHECK(w->count == 0, "count %llu at end", (unsigned long long)w->count);
	/* Clock stepped to dq_wheel_next(): late by at most one tick. */
	CHECK(max_late < DQ_WHEEL_TICK_NS || budget < 1000000,
	      "max lateness %llu ns", (unsigned long long)max_late);
	printf("# mode %d n %u start %llu budget %u: cascaded %llu, max late %llu ns\n",
	       mode, nitems, (unsigned long long)start, budget,
	       (unsigned long long)w->cascaded, (unsigned long long)max_late);
	free(items);
	free(w);
	return failures == before;
}

int main(void)
{
	static const u64 starts[] = { 0, 123456789ULL, (1ULL << 40) - 5000, (1ULL << 62) + 77 };
	unsigned int mode, s, n = 0, pass = 0;

	printf("TAP version 13\n1..%u\n", 5 * 4 * 2);
	for (mode = 0; mode < 5; mode++) {
		for (s = 0; s < 4; s++) {
			int ok = run(mode, 20000, starts[s], 1000000);

			printf("%s %u - wheel mode %u start %u unbounded budget\n",
			       ok ? "ok" : "not ok", ++n, mode, s);
			pass += ok;
			ok = run(mode, 20000, starts[s], 7);
			printf("%s %u - wheel mode %u start %u budget 7\n",
			       ok ? "ok" : "not ok", ++n, mode, s);
			pass += ok;
		}
	}
	printf("# %d checks\n%u passed, %u failed\n", checks, pass, n - pass);
	return pass == n ? 0 : 1;
}
