// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * dq release structure: hierarchical timing wheel with FFS bitmaps and
 * cascading.  See dq_wheel.h for the shape and the guarantees.
 *
 * Invariants, with base the wheel's reference time:
 *  - an entry at level L > 0 has a due time that agrees with base on every
 *    bit above level L and differs at level L, so its bucket index is
 *    greater than base's index at that level;
 *  - every level-0 entry lies in base's level-1 span, or is past due and
 *    sits in base's own level-0 bucket;
 *  - base only moves forward, and only to the start of the earliest
 *    non-empty bucket, which keeps both rules above true for every entry
 *    left in the wheel.
 * Hence the earliest work is always the first occupied bucket of some
 * level, found with one find-first-set per level.
 */
#include <linux/bitops.h>
#include <linux/limits.h>
#include <linux/list_sort.h>

#include "dq_wheel.h"

static inline unsigned int dq_wheel_shift(unsigned int level)
{
	return DQ_WHEEL_TICK_SHIFT + level * DQ_WHEEL_LVL_BITS;
}

/* First nanosecond of bucket @index of @level, given the wheel's base. */
static u64 dq_wheel_bucket_start(const struct dq_wheel *w, unsigned int level,
				 unsigned int index)
{
	unsigned int upper_shift = dq_wheel_shift(level + 1);
	u64 upper = 0;

	if (upper_shift < 64)
		upper = w->base & ~((1ULL << upper_shift) - 1);
	return upper | ((u64)index << dq_wheel_shift(level));
}

static inline bool dq_wheel_before(const struct dq_wheel_entry *a,
				   const struct dq_wheel_entry *b)
{
	return a->due < b->due || (a->due == b->due && a->seq < b->seq);
}

static void dq_wheel_place(struct dq_wheel *w, struct dq_wheel_entry *e)
{
	/* Past-due entries join base's level-0 bucket: it is released first. */
	u64 key = e->due > w->base ? e->due : w->base;
	u64 diff = (key ^ w->base) >> DQ_WHEEL_TICK_SHIFT;
	unsigned int level = diff ? (fls64(diff) - 1) / DQ_WHEEL_LVL_BITS : 0;
	unsigned int index = (key >> dq_wheel_shift(level)) &
			     (DQ_WHEEL_LVL_SIZE - 1);
	struct list_head *bucket = &w->bucket[level][index];
	u64 bit = 1ULL << index;

	if (level == 0) {
		if (list_empty(bucket)) {
			w->sorted0 |= bit;
		} else if (w->sorted0 & bit) {
			struct dq_wheel_entry *tail;

			tail = list_last_entry(bucket, struct dq_wheel_entry,
					       link);
			if (dq_wheel_before(e, tail))
				w->sorted0 &= ~bit;
		}
	}
	list_add_tail(&e->link, bucket);
	w->occupied[level] |= bit;
	e->level = level;
	e->index = index;
}

void dq_wheel_init(struct dq_wheel *w)
{
	unsigned int level, index;

	w->base = 0;
	w->seq = 0;
	w->count = 0;
	w->cascaded = 0;
	w->sorted0 = 0;
	for (level = 0; level < DQ_WHEEL_LEVELS; level++) {
		w->occupied[level] = 0;
		for (index = 0; index < DQ_WHEEL_LVL_SIZE; index++)
			INIT_LIST_HEAD(&w->bucket[level][index]);
	}
}

void dq_wheel_insert(struct dq_wheel *w, struct dq_wheel_entry *e, u64 now)
{
	/* An empty wheel may restart from now: fewer cascades later. */
	if (w->count == 0 && now > w->base)
		w->base = now & ~(DQ_WHEEL_TICK_NS - 1);
	e->seq = w->seq++;
	dq_wheel_place(w, e);
	w->count++;
}

void dq_wheel_remove(struct dq_wheel *w, struct dq_wheel_entry *e)
{
	list_del(&e->link);
	if (list_empty(&w->bucket[e->level][e->index]))
		w->occupied[e->level] &= ~(1ULL << e->index);
	w->count--;
}

/*
 * The bucket to work on next: the earliest start over all levels; on a tie
 * the higher level wins, because its entries must be cascaded before a
 * lower bucket covering the same time can be released.
 */
static bool dq_wheel_earliest(const struct dq_wheel *w, unsigned int *plevel,
			      unsigned int *pindex, u64 *pstart)
{
	bool found = false;
	int level;

	for (level = DQ_WHEEL_LEVELS - 1; level >= 0; level--) {
		unsigned int index;
		u64 start;

		if (!w->occupied[level])
			continue;
		index = __ffs64(w->occupied[level]);
		start = dq_wheel_bucket_start(w, level, index);
		if (!found || start < *pstart) {
			found = true;
			*plevel = level;
			*pindex = index;
			*pstart = start;
		}
	}
	return found;
}

u64 dq_wheel_next(const struct dq_wheel *w)
{
	unsigned int level, index;
	u64 start;

	if (!dq_wheel_earliest(w, &level, &index, &start))
		return U64_MAX;
	return level ? start : start + DQ_WHEEL_TICK_NS - 1;
}

/* list_sort() order: (due, seq); never equal, so stability is moot. */
static int dq_wheel_cmp(void *priv, const struct list_head *a,
			const struct list_head *b)
{
	return dq_wheel_before(list_entry(b, struct dq_wheel_entry, link),
			       list_entry(a, struct dq_wheel_entry, link));
}

/*
 * Move every entry due at @now to @out, in (due, seq) order, doing at most
 * @budget units of work (an entry released or cascaded is one unit).
 * Returns the number of entries released.  Stopping part-way leaves the
 * wheel consistent: the next call resumes where this one stopped.
 */
unsigned int dq_wheel_advance(struct dq_wheel *w, u64 now,
			      struct list_head *out, unsigned int budget)
{
	unsigned int released = 0, work = 0;
	unsigned int level, index;
	u64 start;

	while (work < budget && dq_wheel_earliest(w, &level, &index, &start)) {
		struct list_head *bucket = &w->bucket[level][index];
		u64 bit = 1ULL << index;

		if (level == 0) {
			if (now < start + DQ_WHEEL_TICK_NS - 1)
				break;
			if (!(w->sorted0 & bit)) {
				list_sort(NULL, bucket, dq_wheel_cmp);
				w->sorted0 |= bit;
			}
		} else if (now < start) {
			break;
		}
		if (start > w->base)
			w->base = start;

		while (!list_empty(bucket) && work < budget) {
			struct dq_wheel_entry *e;

			e = list_first_entry(bucket, struct dq_wheel_entry,
					     link);
			list_del(&e->link);
			if (level == 0) {
				list_add_tail(&e->link, out);
				w->count--;
				released++;
			} else {
				/* Lands strictly below @level: base = start. */
				dq_wheel_place(w, e);
				w->cascaded++;
			}
			work++;
		}
		if (list_empty(bucket))
			w->occupied[level] &= ~bit;
	}
	return released;
}
