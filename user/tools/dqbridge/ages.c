// SPDX-License-Identifier: LGPL-2.1 OR MIT
/*
 * dqbridge: first-diverted times of the messages held in dq (ages.h).
 */
#include <errno.h>
#include <stdlib.h>

#include "ages.h"

struct age {
	uint64_t key;		/* parity bit cleared; 0 with rt 0: empty */
	uint64_t rt_ms;		/* 0: empty slot */
};

struct ages {
	struct age *t;
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
	if (!a->t) {
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
	free(a);
}

static struct age *find(const struct ages *a, uint64_t key, uint32_t *at)
{
	uint32_t i = home(a, key);

	for (;; i = (i + 1) & a->mask) {
		if (!a->t[i].rt_ms) {
			*at = i;
			return NULL;
		}
		if (a->t[i].key == key) {
			*at = i;
			return &a->t[i];
		}
	}
}

int ages_set(struct ages *a, uint64_t key, uint64_t first_rt_ms)
{
	struct age *e;
	uint32_t i;

	key &= ~1ULL;
	if (!first_rt_ms)
		first_rt_ms = 1;
	e = find(a, key, &i);
	if (e) {
		if (first_rt_ms < e->rt_ms)
			e->rt_ms = first_rt_ms;
		return 0;
	}
	if (a->n >= a->max)
		return -ENOSPC;
	a->t[i].key = key;
	a->t[i].rt_ms = first_rt_ms;
	a->n++;
	return 0;
}

int ages_drop(struct ages *a, uint64_t key)
{
	uint32_t i, j, h;

	key &= ~1ULL;
	if (!find(a, key, &i))
		return -ENOENT;
	/* Backward shift: move up every later entry of the run that may sit
	 * in the hole (its home is not cyclically in (i, j]). */
	for (j = (i + 1) & a->mask; a->t[j].rt_ms; j = (j + 1) & a->mask) {
		h = home(a, a->t[j].key);
		if (((j - h) & a->mask) >= ((j - i) & a->mask)) {
			a->t[i] = a->t[j];
			i = j;
		}
	}
	a->t[i].key = 0;
	a->t[i].rt_ms = 0;
	a->n--;
	return 0;
}

unsigned int ages_count(const struct ages *a)
{
	return a->n;
}

uint64_t ages_oldest(const struct ages *a)
{
	uint64_t best = 0;
	uint32_t i;

	if (!a->n)
		return 0;
	for (i = 0; i <= a->mask; i++)
		if (a->t[i].rt_ms && (!best || a->t[i].rt_ms < best))
			best = a->t[i].rt_ms;
	return best;
}
