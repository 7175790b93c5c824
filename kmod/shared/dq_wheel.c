// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * dq release structure: hierarchical timing wheel over index-linked
 * records, with per-level occupancy bitmaps and cascading.  See
 * dq_wheel.h for the shape and the guarantees.
 *
 * Invariants, with base the wheel's reference time:
 *  - an entry at level L > 0 has a due time that agrees with base on every
 *    bit above level L and differs at level L, so its bucket index is
 *    greater than base's index at that level; the one exception is the
 *    bucket whose cascade a budget cut short (w->busy, whose start is
 *    base): it is worked on before anything else;
 *  - every level-0 entry lies in base's level-1 span, or is past due and
 *    sits in base's own level-0 bucket;
 *  - base only moves forward, and only to the start of the earliest
 *    non-empty bucket, which keeps both rules above true for every entry
 *    left in the wheel;
 *  - within a bucket, entries with equal due times are in insertion
 *    order (see dq_wheel.h).
 * Every level-L bucket other than w->busy lies inside base's level-(L+1)
 * bucket and after base's level-L bucket, and every occupied bucket of a
 * higher level starts after base's level-(L+1) bucket ends.  So the
 * earliest work is w->busy if set, else the lowest non-empty level's
 * first occupied bucket: two find-first-sets, whatever the load.
 */
#include <linux/bitops.h>
#include <linux/compiler.h>
#include <linux/kernel.h>
#include <linux/limits.h>
#include <linux/prefetch.h>

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

static inline void dq_wheel_mark(struct dq_wheel *w, unsigned int b)
{
	unsigned int level = b / DQ_WHEEL_LVL_SIZE;

	w->occupied[level] |= 1ULL << (b % DQ_WHEEL_LVL_SIZE);
	w->levels |= 1U << level;
}

/* Bucket @b has emptied. */
static inline void dq_wheel_unmark(struct dq_wheel *w, unsigned int b)
{
	unsigned int level = b / DQ_WHEEL_LVL_SIZE;

	w->occupied[level] &= ~(1ULL << (b % DQ_WHEEL_LVL_SIZE));
	if (!w->occupied[level])
		w->levels &= ~(1U << level);
	if (w->busy == b + 1)
		w->busy = 0;
}

/*
 * Put record @idx in the bucket its due time calls for: at the tail for
 * an insert, at the head for a cascade (@front).
 */
static __always_inline void dq_wheel_place(struct dq_wheel *w, u32 idx,
					   struct dq_wheel_node *n, bool front)
{
	/* Past-due entries join base's level-0 bucket: it is released first. */
	u64 key = n->due > w->base ? n->due : w->base;
	u64 diff = (key ^ w->base) >> DQ_WHEEL_TICK_SHIFT;
	/* diff 0 and 1 are both level 0: no branch for 0. */
	unsigned int level = (fls64(diff | 1) - 1) / DQ_WHEEL_LVL_BITS;
	unsigned int index = (key >> dq_wheel_shift(level)) &
			     (DQ_WHEEL_LVL_SIZE - 1);
	unsigned int b = level * DQ_WHEEL_LVL_SIZE + index;
	struct dq_ilist *l = &w->bucket[b];
	u32 end = DQ_WHEEL_END + b;

	if (dq_ilist_empty(l)) {
		n->next = end;
		n->prev = end;
		l->head = idx;
		l->tail = idx;
		if (level == 0)
			w->sorted0 |= 1ULL << index;
		dq_wheel_mark(w, b);
		return;
	}
	if (front) {
		struct dq_wheel_node *h = dq_wheel_node(w, l->head);

		/* Equal due: @n is the older, so first is right. */
		if (level == 0 && n->due > h->due)
			w->sorted0 &= ~(1ULL << index);
		n->prev = end;
		n->next = l->head;
		h->prev = idx;
		l->head = idx;
	} else {
		struct dq_wheel_node *t = dq_wheel_node(w, l->tail);

		if (level == 0 && n->due < t->due)
			w->sorted0 &= ~(1ULL << index);
		n->next = end;
		n->prev = l->tail;
		t->next = idx;
		l->tail = idx;
	}
}

void dq_wheel_init(struct dq_wheel *w, struct dq_wheel_node **dir)
{
	unsigned int b;

	w->dir = dir;
	w->nodes = dir ? dir[0] : NULL;
	w->base = 0;
	w->count = 0;
	w->cascaded = 0;
	w->sorted0 = 0;
	w->levels = 0;
	w->busy = 0;
	for (b = 0; b < DQ_WHEEL_LEVELS; b++)
		w->occupied[b] = 0;
	for (b = 0; b < DQ_WHEEL_BUCKETS; b++) {
		w->bucket[b].head = DQ_WHEEL_END + b;
		w->bucket[b].tail = DQ_WHEEL_END + b;
	}
}

void dq_wheel_insert(struct dq_wheel *w, u32 idx, u64 now)
{
	/* An empty wheel may restart from now: fewer cascades later. */
	if (w->count == 0 && now > w->base)
		w->base = now & ~(DQ_WHEEL_TICK_NS - 1);
	dq_wheel_place(w, idx, dq_wheel_node(w, idx), false);
	w->count++;
}

void dq_wheel_remove(struct dq_wheel *w, u32 idx)
{
	struct dq_wheel_node *n = dq_wheel_node(w, idx);
	u32 end = n->prev >= DQ_WHEEL_END ? n->prev : n->next;
	struct dq_ilist *l = NULL;

	/* Only a bucket's first or last record names the bucket. */
	if (end >= DQ_WHEEL_END)
		l = &w->bucket[end - DQ_WHEEL_END];
	dq_ilist_del(w, l, idx);
	if (l && dq_ilist_empty(l))
		dq_wheel_unmark(w, end - DQ_WHEEL_END);
	w->count--;
}

/* The bucket to work on next (see the top of this file). */
static bool dq_wheel_earliest(const struct dq_wheel *w, unsigned int *pb,
			      u64 *pstart)
{
	unsigned int level, index;

	if (w->busy) {
		*pb = w->busy - 1;
		level = *pb / DQ_WHEEL_LVL_SIZE;
		index = *pb % DQ_WHEEL_LVL_SIZE;
	} else {
		if (!w->levels)
			return false;
		level = __ffs64(w->levels);
		index = __ffs64(w->occupied[level]);
		*pb = level * DQ_WHEEL_LVL_SIZE + index;
	}
	*pstart = dq_wheel_bucket_start(w, level, index);
	return true;
}

u64 dq_wheel_next(const struct dq_wheel *w)
{
	unsigned int b;
	u64 start;

	if (!dq_wheel_earliest(w, &b, &start))
		return U64_MAX;
	return b >= DQ_WHEEL_LVL_SIZE ? start : start + DQ_WHEEL_TICK_NS - 1;
}

/* Stable merge of two due-ordered runs ending in DQ_ILIST_END. */
static u32 dq_wheel_merge(const struct dq_wheel *w, u32 a, u32 b)
{
	u32 head = DQ_ILIST_END, *tail = &head;

	while (a != DQ_ILIST_END && b != DQ_ILIST_END) {
		struct dq_wheel_node *na = dq_wheel_node(w, a);
		struct dq_wheel_node *nb = dq_wheel_node(w, b);

		/* Ties take @a: it holds the earlier part of the bucket. */
		if (nb->due < na->due) {
			*tail = b;
			tail = &nb->next;
			b = nb->next;
		} else {
			*tail = a;
			tail = &na->next;
			a = na->next;
		}
	}
	*tail = a != DQ_ILIST_END ? a : b;
	return head;
}

/*
 * Sort level-0 bucket @b by due time, keeping the order of equal ones
 * (bottom-up merge sort: run[k] holds 2^k records, earlier ones than
 * those of run[k - 1]).
 */
static void dq_wheel_sort(struct dq_wheel *w, unsigned int b)
{
	struct dq_ilist *l = &w->bucket[b];
	u32 run[33], idx = l->head, prev = DQ_WHEEL_END + b, head;
	unsigned int k;

	for (k = 0; k < ARRAY_SIZE(run); k++)
		run[k] = DQ_ILIST_END;
	while (idx < DQ_WHEEL_END) {
		struct dq_wheel_node *n = dq_wheel_node(w, idx);
		u32 next = n->next, carry = idx;

		n->next = DQ_ILIST_END;
		for (k = 0; run[k] != DQ_ILIST_END; k++) {
			carry = dq_wheel_merge(w, run[k], carry);
			run[k] = DQ_ILIST_END;
		}
		run[k] = carry;
		idx = next;
	}
	head = DQ_ILIST_END;
	for (k = 0; k < ARRAY_SIZE(run); k++)
		if (run[k] != DQ_ILIST_END)
			head = dq_wheel_merge(w, run[k], head);
	/* Back links and the bucket's ends. */
	l->head = head;
	for (idx = head; idx != DQ_ILIST_END; ) {
		struct dq_wheel_node *n = dq_wheel_node(w, idx);

		n->prev = prev;
		prev = idx;
		idx = n->next;
	}
	dq_wheel_node(w, prev)->next = DQ_WHEEL_END + b;
	l->tail = prev;
}

/*
 * Move every entry due at @now to the tail of @out, in (due, insertion)
 * order, doing at most @budget units of work (an entry released or
 * cascaded is one unit).  Returns the number of entries released.
 * Stopping part-way leaves the wheel consistent: the next call resumes
 * where this one stopped.
 */
unsigned int dq_wheel_advance(struct dq_wheel *w, u64 now,
			      struct dq_ilist *out, unsigned int budget)
{
	unsigned int released = 0, work = 0, moved, b;
	u32 idx, first, last = 0;
	u64 start;

	while (work < budget && dq_wheel_earliest(w, &b, &start)) {
		struct dq_ilist *l = &w->bucket[b];

		if (b < DQ_WHEEL_LVL_SIZE) {
			u64 bit = 1ULL << b;

			if (now < start + DQ_WHEEL_TICK_NS - 1)
				break;
			if (!(w->sorted0 & bit)) {
				dq_wheel_sort(w, b);
				w->sorted0 |= bit;
			}
			if (start > w->base)
				w->base = start;
			/* Release from the head: one run, spliced onto @out. */
			first = l->head;
			idx = first;
			moved = 0;
			while (idx < DQ_WHEEL_END && work + moved < budget) {
				last = idx;
				idx = dq_wheel_node(w, idx)->next;
				moved++;
			}
			dq_wheel_node(w, first)->prev = out->tail;
			if (dq_ilist_empty(out))
				out->head = first;
			else
				dq_wheel_node(w, out->tail)->next = first;
			dq_wheel_node(w, last)->next = DQ_ILIST_END;
			out->tail = last;
			w->count -= moved;
			released += moved;
			work += moved;
			if (idx < DQ_WHEEL_END) {
				l->head = idx;
				dq_wheel_node(w, idx)->prev = DQ_WHEEL_END + b;
			} else {
				l->head = idx;
				l->tail = idx;
				dq_wheel_unmark(w, b);
			}
			continue;
		}
		if (now < start)
			break;
		if (start > w->base)
			w->base = start;
		/*
		 * Cascade from the tail, each entry to the front of its new
		 * bucket (strictly below this level: base = start), so that
		 * equal due times keep their order; a cut-short cascade goes
		 * on from the same end, which keeps it too.  The bucket's own
		 * links are mended once, where the walk stops.
		 */
		w->busy = b + 1;
		idx = l->tail;
		moved = 0;
		while (idx < DQ_WHEEL_END && work + moved < budget) {
			struct dq_wheel_node *n = dq_wheel_node(w, idx);
			u32 prev = n->prev;

			if (prev < DQ_WHEEL_END)
				prefetchw(dq_wheel_node(w, prev));
			dq_wheel_place(w, idx, n, true);
			moved++;
			idx = prev;
		}
		w->cascaded += moved;
		work += moved;
		if (idx < DQ_WHEEL_END) {
			l->tail = idx;
			dq_wheel_node(w, idx)->next = DQ_WHEEL_END + b;
		} else {
			l->head = idx;
			l->tail = idx;
			dq_wheel_unmark(w, b);
		}
	}
	return released;
}
