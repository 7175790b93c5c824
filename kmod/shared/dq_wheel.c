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
 *  - entries with equal due times share a list, in insertion order (see
 *    dq_wheel.h).
 * Every level-L bucket other than w->busy lies inside base's level-(L+1)
 * bucket and after base's level-L bucket, and every occupied bucket of a
 * higher level starts after base's level-(L+1) bucket ends.  So the
 * earliest work is w->busy if set, else the lowest non-empty level's
 * first occupied bucket: three find-first-sets (level, summary word,
 * occupied word), whatever the load.
 */
#include <linux/bitops.h>
#include <linux/compiler.h>
#include <linux/kernel.h>
#include <linux/limits.h>
#include <linux/prefetch.h>

#include "dq_wheel.h"

/* Per level, and one past the top: log2 of a bucket's span in ns. */
static const u8 dq_wheel_shifts[] = {
	DQ_WHEEL_TICK_SHIFT, DQ_WHEEL_SHIFT1, DQ_WHEEL_SHIFT2,
	DQ_WHEEL_SHIFT2 + DQ_WHEEL_BITSN, DQ_WHEEL_SHIFT2 + 2 * DQ_WHEEL_BITSN,
	DQ_WHEEL_SHIFT2 + 3 * DQ_WHEEL_BITSN, 64,
};

/* Per level, and one past the top: the level's first bucket number. */
static const u16 dq_wheel_firsts[] = {
	0, DQ_WHEEL_FIRST1, DQ_WHEEL_FIRST2,
	DQ_WHEEL_FIRST2 + BIT(DQ_WHEEL_BITSN),
	DQ_WHEEL_FIRST2 + 2 * BIT(DQ_WHEEL_BITSN),
	DQ_WHEEL_FIRST2 + 3 * BIT(DQ_WHEEL_BITSN), DQ_WHEEL_BUCKETS,
};

static_assert(ARRAY_SIZE(dq_wheel_shifts) == DQ_WHEEL_LEVELS + 1 &&
	      ARRAY_SIZE(dq_wheel_firsts) == DQ_WHEEL_LEVELS + 1,
	      "dq_wheel_shifts and dq_wheel_firsts list every level");

static inline unsigned int dq_wheel_shift(unsigned int level)
{
	return dq_wheel_shifts[level];
}

/* The level an entry goes to when bit @h of (due ^ base) >> tick is its top. */
static inline unsigned int dq_wheel_level_of(unsigned int h)
{
	if (h < DQ_WHEEL_BITS0)
		return 0;
	if (h < DQ_WHEEL_BITS0 + DQ_WHEEL_BITS1)
		return 1;
	return 2 + (h - DQ_WHEEL_BITS0 - DQ_WHEEL_BITS1) / DQ_WHEEL_BITSN;
}

static inline unsigned int dq_wheel_bucket_level(unsigned int b)
{
	if (b < DQ_WHEEL_FIRST1)
		return 0;
	if (b < DQ_WHEEL_FIRST2)
		return 1;
	return 2 + ((b - DQ_WHEEL_FIRST2) >> DQ_WHEEL_BITSN);
}

/* List @sub of bucket @b (level 0: its only list, @sub 0). */
static inline unsigned int dq_wheel_list(unsigned int b, unsigned int sub)
{
	if (b < DQ_WHEEL_L0_SIZE)
		return b;
	return DQ_WHEEL_L0_SIZE + ((b - DQ_WHEEL_L0_SIZE) << DQ_WHEEL_SUB_SHIFT) +
	       sub;
}

static inline unsigned int dq_wheel_list_bucket(unsigned int l)
{
	if (l < DQ_WHEEL_L0_SIZE)
		return l;
	return DQ_WHEEL_L0_SIZE + ((l - DQ_WHEEL_L0_SIZE) >> DQ_WHEEL_SUB_SHIFT);
}

/*
 * Which list of a bucket above level 0 takes a record due at @key: a
 * hash of its tick, so that equal due times share a list (the order rule)
 * while a cascade's records spread over every list, whatever pattern the
 * due times have.
 */
static inline unsigned int dq_wheel_sub(u64 key)
{
	return ((key >> DQ_WHEEL_TICK_SHIFT) * 0x9e3779b97f4a7c15ULL) >>
	       (64 - DQ_WHEEL_SUB_SHIFT);
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

static inline void dq_wheel_mark(struct dq_wheel *w, unsigned int level,
				 unsigned int b)
{
	unsigned int word = b / 64;

	if (!w->occupied[word]) {
		w->summary[level] |= 1ULL << (word - dq_wheel_firsts[level] / 64);
		w->levels |= 1U << level;
	}
	w->occupied[word] |= 1ULL << (b % 64);
}

/* Bucket @b (every list of it) has emptied. */
static inline void dq_wheel_unmark(struct dq_wheel *w, unsigned int b)
{
	unsigned int level = dq_wheel_bucket_level(b), word = b / 64;

	w->occupied[word] &= ~(1ULL << (b % 64));
	if (!w->occupied[word]) {
		w->summary[level] &= ~(1ULL << (word - dq_wheel_firsts[level] / 64));
		if (!w->summary[level])
			w->levels &= ~(1U << level);
	}
	if (w->busy == b + 1)
		w->busy = 0;
}

static inline bool dq_wheel_sorted0(const struct dq_wheel *w, unsigned int b)
{
	return w->sorted0[b / 64] & (1ULL << (b % 64));
}

static inline void dq_wheel_set_sorted0(struct dq_wheel *w, unsigned int b,
					bool sorted)
{
	if (sorted)
		w->sorted0[b / 64] |= 1ULL << (b % 64);
	else
		w->sorted0[b / 64] &= ~(1ULL << (b % 64));
}

/*
 * Put record @idx in the list its due time calls for: at the tail for
 * an insert, at the head for a cascade (@front).
 */
static __always_inline void dq_wheel_place(struct dq_wheel *w, u32 idx,
					   struct dq_wheel_node *n, bool front)
{
	/* Past-due entries join base's level-0 bucket: it is released first. */
	u64 key = n->due > w->base ? n->due : w->base;
	u64 diff = (key ^ w->base) >> DQ_WHEEL_TICK_SHIFT;
	/* diff 0 and 1 are both level 0: no branch for 0. */
	unsigned int level = dq_wheel_level_of(fls64(diff | 1) - 1);
	unsigned int index = (key >> dq_wheel_shift(level)) &
			     (dq_wheel_firsts[level + 1] - dq_wheel_firsts[level] - 1);
	unsigned int b = dq_wheel_firsts[level] + index;
	unsigned int li = level ? dq_wheel_list(b, dq_wheel_sub(key)) : b;
	struct dq_ilist *l = &w->list[li];
	u32 end = DQ_WHEEL_END + li;

	if (dq_ilist_empty(l)) {
		n->next = end;
		n->prev = end;
		l->head = idx;
		l->tail = idx;
		if (level == 0)
			dq_wheel_set_sorted0(w, b, true);
		dq_wheel_mark(w, level, b);
		return;
	}
	if (front) {
		struct dq_wheel_node *h = dq_wheel_node(w, l->head);

		/* Equal due: @n is the older, so first is right. */
		if (level == 0 && n->due > h->due)
			dq_wheel_set_sorted0(w, b, false);
		n->prev = end;
		n->next = l->head;
		h->prev = idx;
		l->head = idx;
	} else {
		struct dq_wheel_node *t = dq_wheel_node(w, l->tail);

		if (level == 0 && n->due < t->due)
			dq_wheel_set_sorted0(w, b, false);
		n->next = end;
		n->prev = l->tail;
		t->next = idx;
		l->tail = idx;
	}
}

void dq_wheel_init(struct dq_wheel *w, struct dq_wheel_node **dir)
{
	unsigned int i;

	w->dir = dir;
	w->nodes = dir ? dir[0] : NULL;
	w->base = 0;
	w->count = 0;
	w->cascaded = 0;
	w->heads_warmed = 0;
	w->levels = 0;
	w->busy = 0;
	w->warm_end = 0;
	w->heads_end = 0;
	w->side = NULL;
	w->side_size = 0;
	for (i = 0; i < ARRAY_SIZE(w->occupied); i++)
		w->occupied[i] = 0;
	for (i = 0; i < ARRAY_SIZE(w->summary); i++)
		w->summary[i] = 0;
	for (i = 0; i < ARRAY_SIZE(w->sorted0); i++)
		w->sorted0[i] = 0;
	for (i = 0; i < DQ_WHEEL_LISTS; i++) {
		w->list[i].head = DQ_WHEEL_END + i;
		w->list[i].tail = DQ_WHEEL_END + i;
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

/* Are all lists of bucket @b (above level 0) empty? */
static bool dq_wheel_sub_empty(const struct dq_wheel *w, unsigned int b)
{
	const struct dq_ilist *l = &w->list[dq_wheel_list(b, 0)];
	unsigned int s;

	for (s = 0; s < DQ_WHEEL_SUB; s++)
		if (!dq_ilist_empty(&l[s]))
			return false;
	return true;
}

void dq_wheel_remove(struct dq_wheel *w, u32 idx)
{
	struct dq_wheel_node *n = dq_wheel_node(w, idx);
	u32 end = n->prev >= DQ_WHEEL_END ? n->prev : n->next;
	struct dq_ilist *l = NULL;

	/* Only a list's first or last record names the list. */
	if (end >= DQ_WHEEL_END)
		l = &w->list[end - DQ_WHEEL_END];
	dq_ilist_del(w, l, idx);
	if (l && dq_ilist_empty(l)) {
		unsigned int b = dq_wheel_list_bucket(end - DQ_WHEEL_END);

		if (b < DQ_WHEEL_L0_SIZE || dq_wheel_sub_empty(w, b))
			dq_wheel_unmark(w, b);
	}
	w->count--;
}

/* The bucket to work on next (see the top of this file). */
static bool dq_wheel_earliest(const struct dq_wheel *w, unsigned int *pb,
			      u64 *pstart)
{
	unsigned int level, word;

	if (w->busy) {
		*pb = w->busy - 1;
		level = dq_wheel_bucket_level(*pb);
	} else {
		if (!w->levels)
			return false;
		level = __ffs64(w->levels);
		word = dq_wheel_firsts[level] / 64 + __ffs64(w->summary[level]);
		*pb = word * 64 + __ffs64(w->occupied[word]);
	}
	*pstart = dq_wheel_bucket_start(w, level, *pb - dq_wheel_firsts[level]);
	return true;
}

u64 dq_wheel_next(const struct dq_wheel *w)
{
	unsigned int b;
	u64 start;

	if (!dq_wheel_earliest(w, &b, &start))
		return U64_MAX;
	return b >= DQ_WHEEL_L0_SIZE ? start : start + DQ_WHEEL_TICK_NS - 1;
}

/* The owner's side record of @idx (w->side), which it reads at release. */
static inline void dq_wheel_prefetch_side(const struct dq_wheel *w, u32 idx)
{
	if (w->side)
		prefetch((const char *)w->side + (size_t)idx * w->side_size);
}

/*
 * Level-0 buckets whose records dq_wheel_warm() loads together, and the
 * most records it loads in one call (its work stays small whatever the
 * buckets hold: a hint needs no more).
 */
#define DQ_WHEEL_WARM		8
#define DQ_WHEEL_WARM_MAX	256

/*
 * Load the records of level-0 bucket @b (first ns @start) and of the
 * occupied ones among the DQ_WHEEL_WARM - 1 after it, their lists walked
 * together.  Why: a level-0 bucket's records were last touched when a
 * cascade put them there, up to a level-1 span (4.19 ms) earlier; with
 * millions in flight they have left the cache by then, and the sort and
 * the release walk follow the list, one miss after the other (~100 ns
 * each).  Walked together, up to DQ_WHEEL_WARM lists have their misses in
 * flight at once, as a cascade's lists do (dq_wheel_cascade()); each
 * bucket then finds its records in cache, and (w->side) what the owner
 * reads of them at release, last touched at their insert.  Only reads:
 * the wheel is unchanged but for warm_end, which keeps the next buckets'
 * turns from loading them again.
 */
static void dq_wheel_warm(struct dq_wheel *w, unsigned int b, u64 start)
{
	unsigned int live = 0, k, steps = 0;
	u32 cur[DQ_WHEEL_WARM];
	u64 bits;

	if (start < w->warm_end)
		return;
	w->warm_end = start + DQ_WHEEL_WARM * DQ_WHEEL_TICK_NS;
	/* @b and those after it in its occupancy word: enough for a hint. */
	bits = (w->occupied[b / 64] >> (b % 64)) &
	       (BIT_ULL(DQ_WHEEL_WARM) - 1);
	while (bits) {
		cur[live++] = w->list[b + __ffs64(bits)].head;
		bits &= bits - 1;
	}
	/* cur[0 .. live - 1]: a record of each list not walked to its end */
	while (live && steps < DQ_WHEEL_WARM_MAX) {
		for (k = 0; k < live; steps++) {
			/*
			 * READ_ONCE: nothing else uses what the loop reads,
			 * and a compiler may drop a loop of plain loads.
			 */
			u32 next = READ_ONCE(dq_wheel_node(w, cur[k])->next);

			/* Read at release too, and as cold. */
			dq_wheel_prefetch_side(w, cur[k]);

			if (next < DQ_WHEEL_END)
				cur[k++] = next;
			else
				cur[k] = cur[--live];
		}
	}
}

/*
 * dq_wheel_warm_heads() keeps up to DQ_WHEEL_HEADS first records in
 * flight, and looks at most DQ_WHEEL_HEADS_SPAN buckets ahead for them,
 * on a wheel of DQ_WHEEL_HEADS_MIN records or more (dq_wheel.h).
 */
#define DQ_WHEEL_HEADS		16
#define DQ_WHEEL_HEADS_SPAN	512

/*
 * Prefetch the first record of each occupied level-0 bucket from @b
 * (first ns @start) on that is due at @now, up to DQ_WHEEL_HEADS of them
 * ahead of the release.  Why: on a sparse wheel (fewer records than
 * ticks, e.g. 100k msg/s over 1.024 us ticks) no bucket needs a sort, so
 * dq_wheel_warm() never runs, and a wake-up that finds a slack's worth of
 * buckets due releases them one bucket at a time, each record's first
 * load a miss the next bucket's waits behind (the release loop's branches
 * depend on it).  Issued ahead, those misses overlap.
 *
 * The next call is from the bucket after the half-way one on
 * (heads_end), so the release never catches up with the prefetches; the
 * half issued again by then are refreshed, which measured better than
 * issuing each record once (the owner's hand-out, after the whole
 * advance, found more of them gone: docs/records/bench/heads.txt).  Only reads,
 * but for heads_end.
 */
static void dq_wheel_warm_heads(struct dq_wheel *w, unsigned int b, u64 start,
				u64 now)
{
	unsigned int last, mid = 0, found = 0, word;
	u64 span, words;

	if (start < w->heads_end)
		return;
	/* The buckets due at @now: level 0 is in time order (aligned). */
	span = (now - start) >> DQ_WHEEL_TICK_SHIFT;
	if (span > DQ_WHEEL_HEADS_SPAN)
		span = DQ_WHEEL_HEADS_SPAN;
	last = b + (unsigned int)span;
	if (last >= DQ_WHEEL_L0_SIZE)
		last = DQ_WHEEL_L0_SIZE - 1;
	/* The non-empty occupancy words from @b's to @last's. */
	words = w->summary[0] & (~0ULL << (b / 64));
	if (last / 64 < 63)
		words &= BIT_ULL(last / 64 + 1) - 1;
	while (words) {
		u64 bits;

		word = __ffs64(words);
		words &= words - 1;
		bits = w->occupied[word];
		if (word == b / 64)
			bits &= ~0ULL << (b % 64);
		if (word == last / 64 && last % 64 != 63)
			bits &= BIT_ULL(last % 64 + 1) - 1;
		while (bits) {
			unsigned int i = word * 64 + __ffs64(bits);
			u32 head = w->list[i].head;

			bits &= bits - 1;
			/* Occupied means a record; a hint stays safe anyway. */
			if (head >= DQ_WHEEL_END)
				continue;
			prefetch(dq_wheel_node(w, head));
			dq_wheel_prefetch_side(w, head);
			if (++found == DQ_WHEEL_HEADS / 2)
				mid = i;
			if (found == DQ_WHEEL_HEADS) {
				last = mid;
				goto out;
			}
		}
	}
out:
	w->heads_end = start + ((u64)(last + 1 - b) << DQ_WHEEL_TICK_SHIFT);
	if (found)
		w->heads_warmed++;
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
 * those of run[k - 1]).  Only run[0 .. top - 1] are in use: a bucket of
 * m records needs log2(m) + 1 of them (at most 32: indices are u32), and
 * a bucket is typically a few records, so the sort does not pay for
 * clearing and scanning all of them.
 */
static void dq_wheel_sort(struct dq_wheel *w, unsigned int b)
{
	struct dq_ilist *l = &w->list[b];
	u32 run[32], idx = l->head, prev = DQ_WHEEL_END + b, head;
	unsigned int k, top = 0;

	while (idx < DQ_WHEEL_END) {
		struct dq_wheel_node *n = dq_wheel_node(w, idx);
		u32 next = n->next, carry = idx;

		n->next = DQ_ILIST_END;
		for (k = 0; k < top && run[k] != DQ_ILIST_END; k++) {
			carry = dq_wheel_merge(w, run[k], carry);
			run[k] = DQ_ILIST_END;
		}
		if (k == top)
			top++;
		run[k] = carry;
		idx = next;
	}
	head = DQ_ILIST_END;
	for (k = 0; k < top; k++)
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
 * Cascade bucket @b (above level 0, start <= base): every list of it,
 * each from its tail, each record to the front of the list it belongs to
 * now (strictly below this level: base = start), so that equal due times
 * keep their order; a cut-short cascade goes on from the same ends, which
 * keeps it too.  The lists are worked on in turn, one record each, and a
 * list's next record is prefetched as soon as its index is known: the
 * loads of different lists do not wait for each other.  The lists' own
 * links are mended once, where their walks stop.  Returns the records
 * moved, at most @budget.
 */
static unsigned int dq_wheel_cascade(struct dq_wheel *w, unsigned int b,
				     unsigned int budget)
{
	unsigned int first = dq_wheel_list(b, 0), s, k, live = 0, moved = 0;
	struct dq_ilist *l = &w->list[first];
	u32 cur[DQ_WHEEL_SUB];
	u8 walk[DQ_WHEEL_SUB];

	for (s = 0; s < DQ_WHEEL_SUB; s++) {
		cur[s] = l[s].tail;
		if (cur[s] < DQ_WHEEL_END) {
			prefetchw(dq_wheel_node(w, cur[s]));
			walk[live++] = s;
		}
	}
	/* walk[0 .. live - 1]: the lists not yet walked to their heads. */
	while (live && moved < budget) {
		for (k = 0; k < live && moved < budget; ) {
			u32 idx = cur[walk[k]];
			struct dq_wheel_node *n = dq_wheel_node(w, idx);
			u32 prev = n->prev;

			if (prev < DQ_WHEEL_END)
				prefetchw(dq_wheel_node(w, prev));
			dq_wheel_place(w, idx, n, true);
			moved++;
			cur[walk[k]] = prev;
			if (prev < DQ_WHEEL_END)
				k++;
			else
				walk[k] = walk[--live];
		}
	}
	for (s = 0; s < DQ_WHEEL_SUB; s++) {
		u32 end = DQ_WHEEL_END + first + s;

		if (cur[s] < DQ_WHEEL_END) {
			l[s].tail = cur[s];
			dq_wheel_node(w, cur[s])->next = end;
		} else {
			l[s].head = end;
			l[s].tail = end;
		}
	}
	if (!live)
		dq_wheel_unmark(w, b);
	return moved;
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
		struct dq_ilist *l = &w->list[b];

		if (b < DQ_WHEEL_L0_SIZE) {
			/*
			 * The tick the clock is in: only its records due at
			 * @now leave (the sorted bucket's head run), so that
			 * one submitted already due is not held to the tick's
			 * end and the timer (plus its slack) after it.
			 */
			bool in_tick = now < start + DQ_WHEEL_TICK_NS - 1;

			if (in_tick && now < start)
				break;
			if (!dq_wheel_sorted0(w, b)) {
				/*
				 * Two records at least: a dense wheel, whose
				 * next buckets are loaded ahead here too.
				 */
				dq_wheel_warm(w, b, start);
				dq_wheel_sort(w, b);
				dq_wheel_set_sorted0(w, b, true);
			} else if (!in_tick && w->count >= DQ_WHEEL_HEADS_MIN) {
				/* Maybe a sparse one: the next due heads. */
				dq_wheel_warm_heads(w, b, start, now);
			}
			if (in_tick && dq_wheel_node(w, l->head)->due > now)
				break;
			if (start > w->base)
				w->base = start;
			/* Release from the head: one run, spliced onto @out. */
			first = l->head;
			idx = first;
			moved = 0;
			while (idx < DQ_WHEEL_END && work + moved < budget) {
				struct dq_wheel_node *n = dq_wheel_node(w, idx);

				if (in_tick && n->due > now)
					break;
				last = idx;
				idx = n->next;
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
				/* The rest of the tick is not due yet. */
				if (in_tick)
					break;
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
		w->busy = b + 1;
		moved = dq_wheel_cascade(w, b, budget - work);
		w->cascaded += moved;
		work += moved;
	}
	return released;
}
