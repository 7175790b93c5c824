// SPDX-License-Identifier: LGPL-2.1 OR MIT
/*
 * slot_share.c - what 8-byte slots (DQ_SETUP_F_SLOT_ALIGN8) cost in false
 * sharing, without dq: two threads memset() 500 B payloads into an arena
 * of 4096 slots of STRIDE bytes (512: 64-byte rounding, 504: 8-byte).
 *   slot_share STRIDE 2 hot  both threads rewrite slot 0 / slot 1 nonstop
 *                            (with 504 they share one cache line)
 *   slot_share STRIDE 2      thread 0 sweeps the even slots, 1 the odd
 *   slot_share STRIDE 1      one thread does both sweeps
 * Prints ns per payload written.  Build: cc -O2 -pthread -o slot_share
 * bench/slot_share.c (docs/records/bench/slot-mem.txt has the figures).
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NSLOTS	4096U
#define ROUNDS	400U
#define PAYLOAD	500U

static size_t stride;
static unsigned char *arena;
static int hot;

static double now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e9 + t.tv_nsec;
}

/* Thread @arg (0 or 1) writes its half: NSLOTS / 2 x ROUNDS payloads. */
static void *writer(void *arg)
{
	unsigned int par = (unsigned int)(uintptr_t)arg, r, s;

	for (r = 0; r < ROUNDS; r++)
		for (s = par; s < NSLOTS; s += 2) {
			/* hot: always slot 0 or 1, the pair sharing a line */
			memset(arena + (hot ? par : s) * stride, (int)(r + s),
			       PAYLOAD);
			__asm__ volatile("" ::: "memory");
		}
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t t[2];
	int threads;
	double t0;

	if (argc < 3)
		return 2;
	stride = strtoul(argv[1], NULL, 10);
	threads = atoi(argv[2]);
	hot = argc > 3;
	if (stride < PAYLOAD || stride > 512)
		return 2;
	arena = aligned_alloc(4096, (size_t)NSLOTS * 512);
	if (!arena)
		return 1;
	memset(arena, 0, (size_t)NSLOTS * 512);
	t0 = now_ns();
	if (threads == 2) {
		pthread_create(&t[0], NULL, writer, (void *)0);
		pthread_create(&t[1], NULL, writer, (void *)1);
		pthread_join(t[0], NULL);
		pthread_join(t[1], NULL);
	} else {
		writer((void *)0);
		writer((void *)1);
	}
	printf("stride %zu threads %d%s: %.1f ns per payload\n", stride,
	       threads, hot ? " hot" : "",
	       (now_ns() - t0) / ((double)NSLOTS * ROUNDS));
	free(arena);
	return 0;
}
