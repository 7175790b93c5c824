// SPDX-License-Identifier: LGPL-2.1 OR MIT
/*
 * dqbridge's table of first-diverted times (tools/dqbridge/ages.c) on its
 * own, against a plain array as the model: random sets and drops with
 * keys crowded onto few home buckets (long probe runs, so the
 * backward-shift deletion is exercised), parity ignored, the older time
 * kept, the cap, the oldest.  TAP; last line "N passed, N failed".
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "ages.h"

#define MAX 512

static int n, failed;

static void ok(int cond, const char *what)
{
	n++;
	if (!cond)
		failed++;
	printf("%sok %d - %s\n", cond ? "" : "not ", n, what);
}

static uint64_t rng(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

struct model { uint64_t key, rt; int used; };

int main(void)
{
	static struct model m[MAX * 2];
	unsigned int nm = 0, i, step, bad = 0, badold = 0;
	uint64_t s = 0x9e3779b97f4a7c15ULL;
	struct ages *a;

	ok(!ages_new(MAX, &a), "ages_new");
	ok(ages_count(a) == 0 && ages_oldest(a) == 0, "empty: count 0, oldest 0");
	ok(!ages_set(a, 0x1234567800000002ULL, 500), "set");
	ok(!ages_set(a, 0x1234567800000003ULL, 900), "set the other parity");
	ok(ages_count(a) == 1 && ages_oldest(a) == 500, "parity ignored, the older time kept");
	ok(!ages_set(a, 0x1234567800000002ULL, 100), "set older");
	ok(ages_oldest(a) == 100, "an older time replaces");
	ok(!ages_drop(a, 0x1234567800000003ULL) && ages_count(a) == 0, "drop by the other parity");
	ok(ages_drop(a, 0x1234567800000002ULL) == -ENOENT, "drop again: -ENOENT");

	for (step = 0; step < 200000; step++) {
		uint64_t r = rng(&s);
		/* 1024 keys on 8 home buckets: runs of hundreds, and most
		 * sets and drops meet a key that is there. */
		uint64_t key = ((r >> 61) << 32 | (r & 0x7f)) << 1;
		uint64_t rt = 1 + rng(&s) % 1000000;
		int found = -1;

		for (i = 0; i < nm; i++)
			if (m[i].key == key)
				found = (int)i;
		if (rng(&s) % 3) {
			int ret = ages_set(a, key | (r >> 20 & 1), rt);

			if (found >= 0) {
				if (ret)
					bad++;
				if (rt < m[found].rt)
					m[found].rt = rt;
			} else if (nm < MAX) {
				if (ret)
					bad++;
				m[nm].key = key;
				m[nm++].rt = rt;
			} else if (ret != -ENOSPC) {
				bad++;
			}
		} else {
			int ret = ages_drop(a, key);

			if (found >= 0) {
				if (ret)
					bad++;
				m[found] = m[--nm];
			} else if (ret != -ENOENT) {
				bad++;
			}
		}
		if (ages_count(a) != nm)
			bad++;
		{
			uint64_t o = 0;

			for (i = 0; i < nm; i++)
				if (!o || m[i].rt < o)
					o = m[i].rt;
			if (ages_oldest(a) != o)
				badold++;
		}
	}
	ok(!bad, "200000 random sets/drops on crowded buckets agree with the model");
	ok(!badold, "the oldest agrees with the model after every step");
	for (i = 0; i < nm; i++)
		ages_drop(a, m[i].key);
	ok(ages_count(a) == 0 && ages_oldest(a) == 0, "everything dropped: empty");
	ages_free(a);
	printf("1..%d\n%d passed, %d failed\n", n, n - failed, failed);
	return failed ? 1 : 0;
}
