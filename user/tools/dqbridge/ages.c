// SPDX-License-Identifier: LGPL-2.1 OR MIT
/*
 * dqbridge: first-diverted times of the messages held in dq (ages.h).
 *
 * Two arrays that point at each other: a hash table of the keys (open
 * addressing, linear probing, backward-shift deletion: no tombstones)
 * and a binary min-heap of the times.  A table slot names its message's
 * heap position, a heap entry its table slot; whoever moves an entry in
 * one array fixes the other's pointer in the same step, so both stay
 * exact.  Set and drop are O(log n), the oldest is the heap's root.
 *
 * Why a heap: the oldest used to be a scan of the whole table (2 x
 * dq_slots entries) every 100 ms, 10 % of the bridge's CPU while it
 * drained a backlog (bench/bridge_peer.sh, perf).
 */
#include <errno.h>
#include <stdlib.h>

#include "ages.h"

struct slot {
	uint64_t key;		/* parity bit cleared */
	uint32_t pos;		/* heap index + 1; 0: an empty slot */
};

struct hent {
	uint64_t rt_ms;
	uint32_t slot;		/* its key's table slot */
};

struct ages {
	struct slot *t;
	struct hent *h;
	uint32_t mask;
	unsigned int n, max;
};

static uint32_t home(const struct ages *a, uint64_t key)
{
	/* Keys are hashes already (policy_key()): the high bits do. */
	return (uint32_t)(key >> 32) & a->mask;
}

int ages_new(unsigned int max, struct ages **out)
{
	struct ages *a = calloc(1, sizeof(*a));
	uint32_t size = 16;

	if (!a)
		return -ENOMEM;
	while (size < 2ULL * max && size < (1U << 31))
		size <<= 1;
	a->t = calloc(size, sizeof(*a->t));
	a->h = calloc(max ? max : 1, sizeof(*a->h));
	if (!a->t || !a->h) {
		free(a->t);
		free(a->h);
		free(a);
		return -ENOMEM;
	}
	a->mask = size - 1;
	a->max = max;
	*out = a;
	return 0;
}

void ages_free(struct ages *a)
{
	if (!a)
		return;
	free(a->t);
	free(a->h);
	free(a);
}

/* Put @e at heap index @i and point its table slot at it. */
static void heap_put(struct ages *a, uint32_t i, struct hent e)
{
	a->h[i] = e;
	a->t[e.slot].pos = i + 1;
}

static void sift_up(struct ages *a, uint32_t i)
{
	struct hent e = a->h[i];

	while (i) {
		uint32_t p = (i - 1) / 2;

		if (a->h[p].rt_ms <= e.rt_ms)
			break;
		heap_put(a, i, a->h[p]);
		i = p;
	}
	heap_put(a, i, e);
}

static void sift_down(struct ages *a, uint32_t i)
{
	struct hent e = a->h[i];

	for (;;) {
		uint32_t c = 2 * i + 1;

		if (c >= a->n)
			break;
		if (c + 1 < a->n && a->h[c + 1].rt_ms < a->h[c].rt_ms)
			c++;
		if (e.rt_ms <= a->h[c].rt_ms)
			break;
		heap_put(a, i, a->h[c]);
		i = c;
	}
	heap_put(a, i, e);
}

/* The slot of @key, or of the empty slot ending its run: *@at. */
static int find(const struct ages *a, uint64_t key, uint32_t *at)
{
	uint32_t i = home(a, key);

	for (;; i = (i + 1) & a->mask) {
		if (!a->t[i].pos) {
			*at = i;
			return 0;
		}
		if (a->t[i].key == key) {
			*at = i;
			return 1;
		}
	}
}

int ages_set(struct ages *a, uint64_t key, uint64_t first_rt_ms)
{
	uint32_t i;

	key &= ~1ULL;
	if (!first_rt_ms)
		first_rt_ms = 1;
	if (find(a, key, &i)) {
		uint32_t p = a->t[i].pos - 1;

		if (first_rt_ms < a->h[p].rt_ms) {
			a->h[p].rt_ms = first_rt_ms;
			sift_up(a, p);
		}
		return 0;
	}
	if (a->n >= a->max)
		return -ENOSPC;
	a->t[i].key = key;
	a->h[a->n] = (struct hent){ .rt_ms = first_rt_ms, .slot = i };
	a->n++;
	sift_up(a, a->n - 1);
	return 0;
}

int ages_drop(struct ages *a, uint64_t key)
{
	uint32_t i, j, h, p;

	key &= ~1ULL;
	if (!find(a, key, &i))
		return -ENOENT;
	/* Out of the heap: the last entry takes its place. */
	p = a->t[i].pos - 1;
	a->n--;
	if (p != a->n) {
		heap_put(a, p, a->h[a->n]);
		if (p && a->h[p].rt_ms < a->h[(p - 1) / 2].rt_ms)
			sift_up(a, p);
		else
			sift_down(a, p);
	}
	/* Out of the table.  Backward shift: move up every later entry of
	 * the run that may sit in the hole (its home is not cyclically in
	 * (i, j]), its heap entry told where it went. */
	for (j = (i + 1) & a->mask; a->t[j].pos; j = (j + 1) & a->mask) {
		h = home(a, a->t[j].key);
		if (((j - h) & a->mask) >= ((j - i) & a->mask)) {
			a->t[i] = a->t[j];
			a->h[a->t[i].pos - 1].slot = i;
			i = j;
		}
	}
	a->t[i].key = 0;
	a->t[i].pos = 0;
	return 0;
}

unsigned int ages_count(const struct ages *a)
{
	return a->n;
}

uint64_t ages_oldest(const struct ages *a)
{
	return a->n ? a->h[0].rt_ms : 0;
}
