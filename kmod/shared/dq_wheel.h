/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * dq release structure: a hierarchical timing wheel over index-linked
 * records.
 *
 * This file and dq_wheel.c are kernel code that builds both inside dq.ko
 * and inside libdqshim's embedded engine: they use kernel APIs only
 * (bitops, prefetch), which user space gets from user/compat/.
 *
 * Six levels, wide at the bottom: 2^12 buckets of one tick (1.024 us) at
 * level 0, 2^10 buckets of 2^12 ticks (4.19 ms) at level 1, and 2^8 at
 * each of levels 2-5 (4.3 s, 18.3 min, 3.3 days, 2.3 years).  A level-L
 * bucket spans 2^dq_wheel_shift(L) ns and the levels' bits add up to 64,
 * so the whole u64 nanosecond range is covered and no far-future
 * overflow list is needed.  An entry is placed at the lowest level where
 * its due time and the wheel's base agree on every higher bit; a bucket
 * of level L > 0 is cascaded (its entries placed again, at lower levels)
 * when the clock reaches its start, and a level-0 bucket is released once
 * the clock has passed its last nanosecond; while the clock is inside a
 * level-0 bucket's tick, the records of it already due leave too (the
 * bucket is sorted first), so dq_wheel_advance(now) leaves nothing due at
 * @now behind unless its budget ran out.  So an entry moves down at
 * most five times, and is never released before its due time; lateness
 * from the structure itself is at most one tick (the timer is armed for
 * a tick's end: dq_wheel_next()).
 *
 * Why wide low levels: an entry's cascades are what it costs beyond its
 * insert and release, and each touches a record last seen long ago (a
 * cache miss).  With 64 buckets per level, delays of 0-1 s cascaded 2.8
 * times per message; with levels 0 and 1 spanning 4.19 ms and 4.3 s,
 * such a delay is placed at level 1 and cascades once (1.1 on average:
 * those that cross a 4.3 s boundary twice).
 *
 * Why sub-lists: a cascade walks its bucket's records through their
 * links, and with one list each step's record is known only once the
 * previous one has been loaded: one memory latency per record, in
 * series.  So each bucket of level 1 and up is DQ_WHEEL_SUB lists, a
 * record's list picked by a hash of its due tick, and a cascade walks
 * them all in turn, prefetching each list's next record while it works
 * on the others: up to DQ_WHEEL_SUB misses in flight instead of one.
 * Equal due times always share a list, which is all the order rule below
 * needs; records of different lists never compete for order except by
 * due time, which the level-0 sort settles.  Level-0 buckets are lists
 * too, walked (sorted, released) up to a level-1 span after the cascade
 * that filled them: when a bucket needs sorting, it and the next few are
 * walked together first (dq_wheel_warm()), for the same reason.
 *
 * Finding the earliest work stays O(1): a bit per bucket (occupied[]),
 * a summary word per level with a bit per non-zero occupied[] word of
 * that level, and a bit per non-empty level: three find-first-sets.
 *
 * Memory: the list heads are DQ_WHEEL_LISTS (20480) x 8 bytes, so a
 * struct dq_wheel is ~161 KiB; dq.ko allocates its per-node engines with
 * kvzalloc_node().
 *
 * Records: the wheel's owner keeps every record it may insert in struct
 * dq_wheel_node arrays of its own, and names a record by a 32-bit index;
 * the wheel links records by index (never by pointer) and finds one
 * through a directory of DQ_WHEEL_DIR_SIZE-record chunks, dir[idx >>
 * DQ_WHEEL_DIR_SHIFT].  libdqshim's engine has one array (index = slot);
 * dq.ko's per-node engine gives each queue a run of chunks.  A record is
 * 24 bytes: the due time, two links and 8 bytes the wheel never touches.
 *
 * Release order is (due, insertion order).  No sequence number is kept:
 * every list keeps records of equal due time in insertion order.  An
 * insert appends; a cascade moves each of a bucket's lists, last first,
 * to the front of lower buckets' lists.  That keeps the rule because, for
 * one due time, a record's level depends only on the base, which only
 * grows: of two records with the same due time the older one is never at
 * a lower level, so what a cascade brings is older than what it finds;
 * and records of one due time are always on the same list of a bucket.
 * A level-0 bucket is sorted by due time (stable) before release unless
 * it is known to be in order already.
 *
 * The wheel does no locking of its own: the caller serialises every call,
 * and every access to the records' links and due times (dq.ko: the node
 * engine's spinlock; libdqshim: the engine's mutex).
 */
#ifndef DQ_WHEEL_H
#define DQ_WHEEL_H

#include <linux/bits.h>
#include <linux/build_bug.h>
#include <linux/compiler.h>
#include <linux/types.h>

#define DQ_WHEEL_TICK_SHIFT	10
#define DQ_WHEEL_TICK_NS	BIT_ULL(DQ_WHEEL_TICK_SHIFT)
/*
 * Bits of bucket index per level: level 0, level 1, each level above.
 * DQ_WHEEL_SHIFTn: log2 of a level-n bucket's span in ns; FIRSTn: the
 * number of level n's first bucket (buckets are numbered across levels).
 */
#define DQ_WHEEL_BITS0		12
#define DQ_WHEEL_BITS1		10
#define DQ_WHEEL_BITSN		8
#define DQ_WHEEL_LEVELS		6
#define DQ_WHEEL_SHIFT1		(DQ_WHEEL_TICK_SHIFT + DQ_WHEEL_BITS0)
#define DQ_WHEEL_SHIFT2		(DQ_WHEEL_SHIFT1 + DQ_WHEEL_BITS1)
#define DQ_WHEEL_FIRST1		BIT(DQ_WHEEL_BITS0)
#define DQ_WHEEL_FIRST2		(DQ_WHEEL_FIRST1 + BIT(DQ_WHEEL_BITS1))
#define DQ_WHEEL_BUCKETS	(DQ_WHEEL_FIRST2 + \
				 (DQ_WHEEL_LEVELS - 2) * BIT(DQ_WHEEL_BITSN))
#define DQ_WHEEL_L0_SIZE	BIT(DQ_WHEEL_BITS0)

/* Lists per bucket above level 0 (level 0 has one: it is not cascaded). */
#define DQ_WHEEL_SUB_SHIFT	3
#define DQ_WHEEL_SUB		BIT(DQ_WHEEL_SUB_SHIFT)
#define DQ_WHEEL_LISTS		(DQ_WHEEL_L0_SIZE + \
				 ((DQ_WHEEL_BUCKETS - DQ_WHEEL_L0_SIZE) << DQ_WHEEL_SUB_SHIFT))

static_assert(DQ_WHEEL_SHIFT2 + (DQ_WHEEL_LEVELS - 2) * DQ_WHEEL_BITSN == 64,
	      "the levels cover the u64 ns range exactly");
static_assert(DQ_WHEEL_BITSN >= 6 && DQ_WHEEL_BITS1 >= 6,
	      "every level fills whole occupancy words");

/* struct dq_wheel has side (bench/wheel_bench.c builds older ones too). */
#define DQ_WHEEL_HAS_SIDE	1

/*
 * dq_wheel_advance() prefetches the first records of the level-0 buckets
 * it is about to release (dq_wheel_warm_heads()) when the wheel holds at
 * least this many records.  Below it they (and the owner's side records)
 * stay in a core's L2 cache between their cascade and their release, 36
 * bytes each in user space: 1.1 MiB, half of this lab's L2.  Prefetching
 * them there only costs its instructions, ~45 a message
 * (bench/wheel_bench.c, 10k in flight: 35.4 -> 42.3 ns a message;
 * docs/records/bench/heads.txt).
 */
#define DQ_WHEEL_HEADS_MIN	32768

/* Records per directory chunk. */
#define DQ_WHEEL_DIR_SHIFT	12
#define DQ_WHEEL_DIR_SIZE	BIT(DQ_WHEEL_DIR_SHIFT)

/*
 * Link values from DQ_WHEEL_END up are list ends, not records: list l's
 * first record has prev = DQ_WHEEL_END + l and its last next = the same;
 * other lists (dq_ilist) end in DQ_ILIST_END.  So record indices stay
 * below DQ_WHEEL_END.
 */
#define DQ_WHEEL_END		0xffff0000U
#define DQ_ILIST_END		0xffffffffU
#define DQ_WHEEL_MAX_RECORDS	DQ_WHEEL_END

/* Every wheel list has an end value of its own, below DQ_ILIST_END. */
static_assert(DQ_ILIST_END - DQ_WHEEL_END > DQ_WHEEL_LISTS,
	      "too many wheel lists for the link values above DQ_WHEEL_END");

/* One record: 24 bytes.  due is set by the caller before an insert. */
struct dq_wheel_node {
	u64 due;		/* ns */
	u32 next;		/* index, or a list end */
	u32 prev;
	/*
	 * The owner's, never touched here (dq.ko and the user engine keep a
	 * slot's payload length and state in them, through accessors of
	 * their own).
	 */
	u32 owner32;
	u16 owner16;
	u16 owner16b;
};

/* A list of records linked by index; empty when head >= DQ_WHEEL_END. */
struct dq_ilist {
	u32 head;
	u32 tail;
};

struct dq_wheel {
	/* Chunks of records: set by the owner, under its lock. */
	struct dq_wheel_node **dir;
	struct dq_wheel_node *nodes;	/* user space: dir[0], see below */
	u64 base;		/* ns; no pending entry is placed before it */
	u64 count;		/* entries in the wheel */
	u64 cascaded;		/* entries moved down a level, ever */
	u64 heads_warmed;	/* dq_wheel_warm_heads() runs that prefetched */
	/* bit b % 64 of word b / 64: bucket b is non-empty */
	u64 occupied[DQ_WHEEL_BUCKETS / 64];
	/* bit i: occupied[(level L's first bucket) / 64 + i] != 0 */
	u64 summary[DQ_WHEEL_LEVELS];
	/* bit b % 64 of word b / 64: level-0 bucket b is in due order */
	u64 sorted0[DQ_WHEEL_L0_SIZE / 64];
	u32 levels;		/* bit L: summary[L] != 0 */
	u32 busy;		/* 1 + bucket whose cascade was cut short; 0 */
	/*
	 * ns: the level-0 buckets starting before it have had their records
	 * loaded ahead (dq_wheel_warm()).  A hint, never a correctness rule.
	 */
	u64 warm_end;
	/*
	 * ns: the release of a level-0 bucket starting before it needs no
	 * prefetch of the next buckets' first records (dq_wheel_warm_heads()).
	 * A hint too.
	 */
	u64 heads_end;
	/*
	 * Optional, NULL: none.  The owner's array of what it reads of a
	 * record at its release (user_data...), side_size bytes per wheel
	 * index; dq_wheel_warm() prefetches a record's entry with it.  Set
	 * by the owner after dq_wheel_init(), under its lock.  libdqshim's
	 * engine (one array) sets it; dq.ko's queues keep theirs apart.
	 */
	const void *side;
	u32 side_size;
	/*
	 * Level-0 bucket b is list b; bucket b of a higher level is lists
	 * dq_wheel_list(b, 0) .. + DQ_WHEEL_SUB - 1.
	 */
	struct dq_ilist list[DQ_WHEEL_LISTS];
};

/*
 * Record @idx.  dq.ko's engine goes through the directory (its queues'
 * arrays are apart); in user space the owner's chunks are one array
 * (dir[k] = dir[0] + k * DQ_WHEEL_DIR_SIZE), indexed directly: the
 * directory's extra load and arithmetic are ~15% of the wheel's
 * instructions.  DQ_WHEEL_DIR_LOOKUP gives a user-space build dq.ko's
 * way (the host model test and bench/wheel_bench.c use it).
 */
static inline struct dq_wheel_node *dq_wheel_node(const struct dq_wheel *w,
						  u32 idx)
{
#if defined(__KERNEL__) || defined(DQ_WHEEL_DIR_LOOKUP)
	return w->dir[idx >> DQ_WHEEL_DIR_SHIFT] +
	       (idx & (DQ_WHEEL_DIR_SIZE - 1));
#else
	return w->nodes + idx;
#endif
}

void dq_wheel_init(struct dq_wheel *w, struct dq_wheel_node **dir);
void dq_wheel_insert(struct dq_wheel *w, u32 idx, u64 now);
void dq_wheel_remove(struct dq_wheel *w, u32 idx);
u64 dq_wheel_next(const struct dq_wheel *w);
unsigned int dq_wheel_advance(struct dq_wheel *w, u64 now,
			      struct dq_ilist *out, unsigned int budget);

static inline bool dq_wheel_empty(const struct dq_wheel *w)
{
	return w->count == 0;
}

/*
 * Index lists outside the wheel (what dq_wheel_advance() hands out, the
 * owner's own lists of records that have left the wheel), through the
 * same links.  A record is on at most one list or in the wheel.
 *
 * The steps are written once, over a lookup from index to record and its
 * context: the wheel's (dq_wheel_node(), for the lists named by wheel
 * index) and, in dq.ko, a queue's own array (its lists of due records are
 * named by slot, kmod/dq.h).  Always inlined with a constant lookup, so
 * the call through @node becomes a plain access.
 */
typedef struct dq_wheel_node *(*dq_node_fn)(const void *ctx, u32 idx);

static inline void dq_ilist_init(struct dq_ilist *l)
{
	l->head = DQ_ILIST_END;
	l->tail = DQ_ILIST_END;
}

static inline bool dq_ilist_empty(const struct dq_ilist *l)
{
	return l->head >= DQ_WHEEL_END;
}

static __always_inline void __dq_ilist_add_tail(dq_node_fn node,
						const void *ctx,
						struct dq_ilist *l, u32 idx)
{
	struct dq_wheel_node *n = node(ctx, idx);

	n->next = DQ_ILIST_END;
	n->prev = l->tail;
	if (dq_ilist_empty(l))
		l->head = idx;
	else
		node(ctx, l->tail)->next = idx;
	l->tail = idx;
}

static __always_inline void __dq_ilist_del(dq_node_fn node, const void *ctx,
					   struct dq_ilist *l, u32 idx)
{
	struct dq_wheel_node *n = node(ctx, idx);

	if (n->prev >= DQ_WHEEL_END)
		l->head = n->next;
	else
		node(ctx, n->prev)->next = n->next;
	if (n->next >= DQ_WHEEL_END)
		l->tail = n->prev;
	else
		node(ctx, n->next)->prev = n->prev;
}

/* Take the first record off @l (which must not be empty). */
static __always_inline u32 __dq_ilist_pop(dq_node_fn node, const void *ctx,
					  struct dq_ilist *l)
{
	u32 idx = l->head;

	__dq_ilist_del(node, ctx, l, idx);
	return idx;
}

/* Move all of @src, in order, to the end of @dst; @src is left empty. */
static __always_inline void __dq_ilist_splice_tail(dq_node_fn node,
						   const void *ctx,
						   struct dq_ilist *dst,
						   struct dq_ilist *src)
{
	if (dq_ilist_empty(src))
		return;
	if (dq_ilist_empty(dst)) {
		dst->head = src->head;
	} else {
		node(ctx, dst->tail)->next = src->head;
		node(ctx, src->head)->prev = dst->tail;
	}
	dst->tail = src->tail;
	dq_ilist_init(src);
}

static inline struct dq_wheel_node *dq_wheel_node_fn(const void *w, u32 idx)
{
	return dq_wheel_node(w, idx);
}

/* The lists of records named by wheel index. */
static inline void dq_ilist_add_tail(const struct dq_wheel *w,
				     struct dq_ilist *l, u32 idx)
{
	__dq_ilist_add_tail(dq_wheel_node_fn, w, l, idx);
}

static inline void dq_ilist_del(const struct dq_wheel *w, struct dq_ilist *l,
				u32 idx)
{
	__dq_ilist_del(dq_wheel_node_fn, w, l, idx);
}

static inline u32 dq_ilist_pop(const struct dq_wheel *w, struct dq_ilist *l)
{
	return __dq_ilist_pop(dq_wheel_node_fn, w, l);
}

#endif /* DQ_WHEEL_H */
