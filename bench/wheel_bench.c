// SPDX-License-Identifier: LGPL-2.1 OR MIT
/*
 * The release structure alone (kmod/shared/dq_wheel.c, built for user
 * space as libdqshim builds it), under a steady load: N messages in
 * flight, delays uniform in [0, 1 s), a simulated clock that moves
 * 0.5 s / N per message (so arrivals and releases balance at N), one
 * advance every 16 messages.  Per message: one insert (the record's due
 * time and user_data written) and one release (its user_data read, the
 * slot back on a free stack), as the embedded engine does them.
 *
 * It builds against either wheel API, so bench/wheel.sh can compare a
 * commit's wheel with an older one in the same run:
 *   - index-linked (DQ_WHEEL_DIR_SHIFT defined): 24-byte nodes and the
 *     12-byte cold records after them in one mapping, on huge pages as
 *     libdqshim maps them (unless --no-huge);
 *   - list-linked (older): the 56-byte struct with an embedded
 *     dq_wheel_entry, calloc'ed, as the engine had it.
 *
 * The measured phase is bench_run() (callgrind: --toggle-collect=bench_run);
 * a warm-up of 2 N messages comes first, so the wheel is in its steady
 * state.  Prints one line: variant, N, messages, ns/msg, cascades/msg,
 * the bytes of a record and of the wheel's own struct.
 *
 * --floor (index variant): the same record touches with no wheel, as a
 * floor for its figures.  Each message's record is written at insert as
 * above (due, user_data, the two links the wheel writes) and, once N are
 * in flight, one pending record is released per message: picked at
 * random (release order is due order, which has nothing to do with where
 * a record lies), 32 releases ahead, its lines prefetched then (as well
 * as any wheel could know its release order), and at its release its
 * links written (the hand-out list), its user_data read, its slot freed.
 * The pending set is an array of slots: one random 4-byte access a
 * message that the engine does not make, so the floor is, if anything,
 * high.  What the wheel costs is its figure minus this one.
 *
 * Usage: wheel_bench N [MESSAGES] [--no-huge] [--floor]
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include <linux/limits.h>

#include "dq_wheel.h"

#define BATCH	16

static u64 rng = 0x9e3779b97f4a7c15ULL;

static inline u64 rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static u32 *free_stack;
static u32 free_top;
static u64 now, dt, sink;
static struct dq_wheel *w;

#ifdef DQ_WHEEL_DIR_SHIFT
#define VARIANT "index"
/* The embedded engine's cold record (struct dq_ue_rec in dq_user.c). */
struct cold {
	u64 user_data;
	u32 gen;
} __attribute__((packed, aligned(4)));
static struct dq_wheel_node *nodes;
static struct cold *cold;
static struct dq_wheel_node **dir;

#define HUGE_2M	(2UL << 20)

/*
 * The records as dq_ue_alloc_nodes() lays them out: one zeroed mapping,
 * the nodes, then from the next cache line the cold records; explicit
 * 2 MiB pages if reserved, else a 2 MiB-aligned mapping advised
 * MADV_HUGEPAGE (dq_ue_map_thp()).  --no-huge: 4 KiB pages for both.
 */
static void setup(u32 cap, int huge)
{
	size_t cold_off = ((size_t)cap * sizeof(*nodes) + 63) & ~(size_t)63;
	size_t size = cold_off + (size_t)cap * sizeof(*cold), i;
	size_t chunks = (cap + DQ_WHEEL_DIR_SIZE - 1) / DQ_WHEEL_DIR_SIZE;
	uint8_t *p = MAP_FAILED, *a;

	size = (size + HUGE_2M - 1) & ~(HUGE_2M - 1);
	if (huge)
		p = mmap(NULL, size, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB |
			 (21 << MAP_HUGE_SHIFT), -1, 0);
	if (p == MAP_FAILED) {
		p = mmap(NULL, size + HUGE_2M, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED) {
			perror("mmap");
			exit(1);
		}
		a = (uint8_t *)(((uintptr_t)p + HUGE_2M - 1) & ~(HUGE_2M - 1));
		madvise(a, size, huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
		p = a;	/* the slack around it stays mapped: a benchmark */
	}
	nodes = (struct dq_wheel_node *)p;
	cold = (struct cold *)(p + cold_off);
	dir = calloc(chunks, sizeof(*dir));
	for (i = 0; i < chunks; i++)
		dir[i] = nodes + i * DQ_WHEEL_DIR_SIZE;
	w = calloc(1, sizeof(*w));
	dq_wheel_init(w, dir);
#ifdef DQ_WHEEL_HAS_SIDE
	/* As the engine does (user/src/dq_user.c): its cold records. */
	w->side = cold;
	w->side_size = sizeof(*cold);
#endif
}

static inline void insert_one(u32 slot, u64 due)
{
	nodes[slot].due = due;
	cold[slot].user_data = due ^ slot;
	dq_wheel_insert(w, slot, now);
}

/* --floor: the pending slots, released from pend_head on (mask: 2^k - 1). */
#define FLOOR_AHEAD	32
static u32 *pend;
static u64 pend_head, pend_tail, pend_mask, floor_n;
static u64 floor_rng = 0x2545f4914f6cdd1dULL;

static inline u64 floor_rnd(void)
{
	floor_rng ^= floor_rng << 13;
	floor_rng ^= floor_rng >> 7;
	floor_rng ^= floor_rng << 17;
	return floor_rng;
}

static inline void floor_insert(u32 slot, u64 due)
{
	nodes[slot].due = due;
	cold[slot].user_data = due ^ slot;
	/* What dq_wheel_insert() writes of it. */
	nodes[slot].next = DQ_ILIST_END;
	nodes[slot].prev = DQ_ILIST_END;
	pend[pend_tail++ & pend_mask] = slot;
}

static inline unsigned int floor_release(void)
{
	unsigned int n = 0;
	u32 prev = DQ_ILIST_END;

	while (pend_tail - pend_head > floor_n) {
		u64 j = pend_head + FLOOR_AHEAD;
		u32 slot;

		if (j < pend_tail) {
			u64 k = j + floor_rnd() % (pend_tail - j);
			u32 x = pend[k & pend_mask];

			pend[k & pend_mask] = pend[j & pend_mask];
			pend[j & pend_mask] = x;
			__builtin_prefetch(&nodes[x], 1);
			__builtin_prefetch(&cold[x]);
		}
		slot = pend[pend_head++ & pend_mask];
		/* The hand-out list's links, then the owner's reads. */
		nodes[slot].prev = prev;
		nodes[slot].next = DQ_ILIST_END;
		prev = slot;
		sink += cold[slot].user_data;
		free_stack[free_top++] = slot;
		n++;
	}
	return n;
}

static inline unsigned int release(void)
{
	struct dq_ilist out;
	unsigned int n;

	dq_ilist_init(&out);
	n = dq_wheel_advance(w, now, &out, UINT32_MAX);
	while (!dq_ilist_empty(&out)) {
		u32 slot = dq_ilist_pop(w, &out);

		sink += cold[slot].user_data;
		free_stack[free_top++] = slot;
	}
	return n;
}
#else
#define VARIANT "list"
struct rec {
	struct dq_wheel_entry we;
	u64 user_data;
	u32 gen;
	u16 attempts;
	u16 redeliveries;
};
static struct rec *recs;

static void setup(u32 cap, int huge)
{
	(void)huge;
	recs = calloc(cap, sizeof(*recs));
	w = calloc(1, sizeof(*w));
	dq_wheel_init(w);
}

static inline void insert_one(u32 slot, u64 due)
{
	recs[slot].we.due = due;
	recs[slot].user_data = due ^ slot;
	dq_wheel_insert(w, &recs[slot].we, now);
}

static inline unsigned int release(void)
{
	LIST_HEAD(out);
	unsigned int n = dq_wheel_advance(w, now, &out, UINT32_MAX);

	while (!list_empty(&out)) {
		struct rec *r = list_first_entry(&out, struct rec, we.link);

		list_del(&r->we.link);
		sink += r->user_data;
		free_stack[free_top++] = (u32)(r - recs);
	}
	return n;
}
#endif

/*
 * @msgs messages in, and whatever comes due out (@floor: no wheel, the
 * record touches alone; a constant where inlined).
 */
static inline __attribute__((always_inline)) u64 run(u64 msgs, int floor)
{
	u64 i, released = 0;

	for (i = 0; i < msgs; i++) {
		u64 due;

		now += dt;
		due = now + rnd() % 1000000000ULL;
		if (!free_top) {
			fprintf(stderr, "out of slots\n");
			exit(1);
		}
#ifdef DQ_WHEEL_DIR_SHIFT
		if (floor) {
			floor_insert(free_stack[--free_top], due);
			if (i % BATCH == BATCH - 1)
				released += floor_release();
			continue;
		}
#endif
		insert_one(free_stack[--free_top], due);
		if (i % BATCH == BATCH - 1)
			released += release();
	}
	return released;
}

/* The warm-up and the measured phase: callgrind counts only the latter. */
static __attribute__((noinline)) u64 bench_warm(u64 msgs)
{
	u64 r = run(msgs, 0);

	sink ^= r;	/* not foldable into bench_run (-fipa-icf) */
	return r;
}

static __attribute__((noinline)) u64 bench_run(u64 msgs)
{
	return run(msgs, 0);
}

/* --floor's warm-up and measured phase, apart: bench_run stays as it was. */
static __attribute__((noinline)) u64 floor_run(u64 msgs)
{
	return run(msgs, 1);
}

static double mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

int main(int argc, char **argv)
{
	u64 n = 0, msgs = 0, cap, released, casc0;
	int huge = 1, floor = 0, i, pos = 0;
	double t0, t1;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--no-huge"))
			huge = 0;
		else if (!strcmp(argv[i], "--floor"))
			floor = 1;
		else if (pos++ == 0)
			n = strtoull(argv[i], NULL, 0);
		else
			msgs = strtoull(argv[i], NULL, 0);
	}
	if (pos < 1) {
		fprintf(stderr, "usage: wheel_bench N [MESSAGES] [--no-huge] [--floor]\n");
		return 2;
	}
	if (pos < 2)
		msgs = n < 1000000 ? 1000000 : n;
	/* In flight hovers around N; the batch and the tick add a little. */
	cap = n + n / 4 + 4096;
	setup((u32)cap, huge);
	free_stack = malloc(cap * sizeof(*free_stack));
	for (free_top = 0; free_top < cap; free_top++)
		free_stack[free_top] = (u32)(cap - 1 - free_top);
	dt = 500000000ULL / n;
	now = 1ULL << 40;
#ifdef DQ_WHEEL_DIR_SHIFT
	if (floor) {
		for (pend_mask = 1; pend_mask < cap; pend_mask <<= 1)
			;
		pend = malloc(pend_mask * sizeof(*pend));
		pend_mask--;
		floor_n = n;
		floor_run(2 * n);
		t0 = mono();
		released = floor_run(msgs);
		t1 = mono();
		printf("floor n=%llu msgs=%llu released=%llu in_flight=%llu ns_per_msg=%.1f\n",
		       (unsigned long long)n, (unsigned long long)msgs,
		       (unsigned long long)released,
		       (unsigned long long)(pend_tail - pend_head),
		       (t1 - t0) / msgs);
		return sink == 42;
	}
#endif
	if (floor) {
		fprintf(stderr, "wheel_bench: --floor needs the index wheel\n");
		return 2;
	}
	bench_warm(2 * n);
	casc0 = w->cascaded;
	t0 = mono();
	released = bench_run(msgs);
	t1 = mono();
	printf("%s n=%llu msgs=%llu released=%llu in_flight=%llu ns_per_msg=%.1f cascades_per_msg=%.3f node_bytes=%zu wheel_bytes=%zu\n",
	       VARIANT, (unsigned long long)n, (unsigned long long)msgs,
	       (unsigned long long)released, (unsigned long long)w->count,
	       (t1 - t0) / msgs, (double)(w->cascaded - casc0) / msgs,
#ifdef DQ_WHEEL_DIR_SHIFT
	       sizeof(struct dq_wheel_node) + sizeof(struct cold),
#else
	       sizeof(struct rec),
#endif
	       sizeof(struct dq_wheel));
	return sink == 42;
}
