/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * dq release structure: a hierarchical timing wheel with FFS bitmaps.
 *
 * This file and dq_wheel.c are kernel code that builds both inside dq.ko
 * and inside libdqshim's embedded engine: they use kernel APIs only
 * (<linux/list.h>, list_sort(), bitops), which user space gets from
 * user/compat/.
 *
 * Nine levels of 64 buckets each.  A level-L bucket spans
 * 2^(DQ_WHEEL_TICK_SHIFT + 6 L) ns, so the nine levels cover the whole u64
 * nanosecond range and no far-future overflow list is needed.  An entry is
 * placed at the lowest level where its due time and the wheel's base agree
 * on every higher bit; a bucket of level L > 0 is cascaded (its entries
 * placed again, at lower levels) when the clock reaches its start, and a
 * level-0 bucket is released once the clock has passed its last
 * nanosecond.  So an entry moves down at most eight times, and is never
 * released before its due time; lateness from the structure itself is at
 * most one tick (1.024 us).
 *
 * Release order is (due, seq): seq is a per-wheel insertion counter, so
 * entries with equal due times leave in insertion order.  A level-0 bucket
 * is sorted by (due, seq) before release unless it is known to be sorted
 * already (the common case: entries mostly arrive in order).
 *
 * The wheel does no locking of its own: the caller serialises every call.
 */
#ifndef DQ_WHEEL_H
#define DQ_WHEEL_H

#include <linux/bits.h>
#include <linux/list.h>
#include <linux/types.h>

#define DQ_WHEEL_TICK_SHIFT	10
#define DQ_WHEEL_TICK_NS	BIT_ULL(DQ_WHEEL_TICK_SHIFT)
#define DQ_WHEEL_LVL_BITS	6
#define DQ_WHEEL_LVL_SIZE	BIT(DQ_WHEEL_LVL_BITS)
#define DQ_WHEEL_LEVELS		9

/* Embedded in whatever the caller releases. */
struct dq_wheel_entry {
	struct list_head link;
	u64 due;		/* ns; set by the caller before insert */
	u64 seq;		/* set by dq_wheel_insert() */
	u8 level;		/* where the entry sits, for removal */
	u8 index;
	/*
	 * Fill the padding: the embedding object's, never touched here (dq.ko
	 * and the user engine keep a slot's state and length in them, through
	 * accessors of their own).
	 */
	u16 owner16;
	u32 owner32;
};

struct dq_wheel {
	u64 base;		/* ns; no pending entry is placed before it */
	u64 seq;		/* next insertion sequence number */
	u64 count;		/* entries in the wheel */
	u64 cascaded;		/* entries moved down a level, ever */
	u64 occupied[DQ_WHEEL_LEVELS];	/* bit i: bucket i is non-empty */
	u64 sorted0;		/* bit i: level-0 bucket i is in (due, seq) order */
	struct list_head bucket[DQ_WHEEL_LEVELS][DQ_WHEEL_LVL_SIZE];
};

void dq_wheel_init(struct dq_wheel *w);
void dq_wheel_insert(struct dq_wheel *w, struct dq_wheel_entry *e, u64 now);
void dq_wheel_remove(struct dq_wheel *w, struct dq_wheel_entry *e);
u64 dq_wheel_next(const struct dq_wheel *w);
unsigned int dq_wheel_advance(struct dq_wheel *w, u64 now,
			      struct list_head *out, unsigned int budget);

static inline bool dq_wheel_empty(const struct dq_wheel *w)
{
	return w->count == 0;
}

#endif /* DQ_WHEEL_H */
