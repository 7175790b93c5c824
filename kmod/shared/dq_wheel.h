/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * dq release structure: a hierarchical timing wheel over index-linked
 * records.
 *
 * This file and dq_wheel.c are kernel code that builds both inside dq.ko
 * and inside libdqshim's embedded engine: they use kernel APIs only
 * (bitops, prefetch), which user space gets from user/compat/.
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
 * Records: the wheel's owner keeps every record it may insert in struct
 * dq_wheel_node arrays of its own, and names a record by a 32-bit index;
 * the wheel links records by index (never by pointer) and finds one
 * through a directory of DQ_WHEEL_DIR_SIZE-record chunks, dir[idx >>
 * DQ_WHEEL_DIR_SHIFT].  libdqshim's engine has one array (index = slot);
 * dq.ko's per-node engine gives each queue a run of chunks.  A record is
 * 24 bytes: the due time, two links and 8 bytes the wheel never touches.
 *
 * Release order is (due, insertion order).  No sequence number is kept:
 * every bucket keeps records of equal due time in insertion order.  An
 * insert appends; a cascade moves a bucket's records, last first, to the
 * front of lower buckets.  That keeps the rule because, for one due time,
 * a record's level depends only on the base, which only grows: of two
 * records with the same due time the older one is never at a lower level,
 * so what a cascade brings is older than what it finds.  A level-0 bucket
 * is sorted by due time (stable) before release unless it is known to be
 * in order already (the common case).
 *
 * The earliest work is found in O(1): the lowest non-empty level's first
 * occupied bucket (two find-first-sets), or the bucket whose cascade a
 * budget interrupted.
 *
 * The wheel does no locking of its own: the caller serialises every call,
 * and every access to the records' links and due times (dq.ko: the node
 * engine's spinlock; libdqshim: the engine's mutex).
 */
#ifndef DQ_WHEEL_H
#define DQ_WHEEL_H

#include <linux/bits.h>
#include <linux/types.h>

#define DQ_WHEEL_TICK_SHIFT	10
#define DQ_WHEEL_TICK_NS	BIT_ULL(DQ_WHEEL_TICK_SHIFT)
#define DQ_WHEEL_LVL_BITS	6
#define DQ_WHEEL_LVL_SIZE	BIT(DQ_WHEEL_LVL_BITS)
#define DQ_WHEEL_LEVELS		9
#define DQ_WHEEL_BUCKETS	(DQ_WHEEL_LEVELS * DQ_WHEEL_LVL_SIZE)

/* Records per directory chunk. */
#define DQ_WHEEL_DIR_SHIFT	12
#define DQ_WHEEL_DIR_SIZE	BIT(DQ_WHEEL_DIR_SHIFT)

/*
 * Link values from DQ_WHEEL_END up are list ends, not records: bucket b's
 * first record has prev = DQ_WHEEL_END + b and its last next = the same;
 * other lists (dq_ilist) end in DQ_ILIST_END.  So record indices stay
 * below DQ_WHEEL_END.
 */
#define DQ_WHEEL_END		0xfffff000U
#define DQ_ILIST_END		0xffffffffU
#define DQ_WHEEL_MAX_RECORDS	DQ_WHEEL_END

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
	u64 occupied[DQ_WHEEL_LEVELS];	/* bit i: bucket i is non-empty */
	u64 sorted0;		/* bit i: level-0 bucket i is in due order */
	u32 levels;		/* bit L: occupied[L] != 0 */
	u32 busy;		/* 1 + bucket whose cascade was cut short; 0 */
	struct dq_ilist bucket[DQ_WHEEL_BUCKETS];	/* level * 64 + index */
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
 */
static inline void dq_ilist_init(struct dq_ilist *l)
{
	l->head = DQ_ILIST_END;
	l->tail = DQ_ILIST_END;
}

static inline bool dq_ilist_empty(const struct dq_ilist *l)
{
	return l->head >= DQ_WHEEL_END;
}

static inline void dq_ilist_add_tail(const struct dq_wheel *w,
				     struct dq_ilist *l, u32 idx)
{
	struct dq_wheel_node *n = dq_wheel_node(w, idx);

	n->next = DQ_ILIST_END;
	n->prev = l->tail;
	if (dq_ilist_empty(l))
		l->head = idx;
	else
		dq_wheel_node(w, l->tail)->next = idx;
	l->tail = idx;
}

static inline void dq_ilist_del(const struct dq_wheel *w, struct dq_ilist *l,
				u32 idx)
{
	struct dq_wheel_node *n = dq_wheel_node(w, idx);

	if (n->prev >= DQ_WHEEL_END)
		l->head = n->next;
	else
		dq_wheel_node(w, n->prev)->next = n->next;
	if (n->next >= DQ_WHEEL_END)
		l->tail = n->prev;
	else
		dq_wheel_node(w, n->next)->prev = n->prev;
}

/* Take the first record off @l (which must not be empty). */
static inline u32 dq_ilist_pop(const struct dq_wheel *w, struct dq_ilist *l)
{
	u32 idx = l->head;

	dq_ilist_del(w, l, idx);
	return idx;
}

#endif /* DQ_WHEEL_H */
