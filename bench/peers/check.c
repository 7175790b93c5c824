// SPDX-License-Identifier: LGPL-2.1 OR MIT
/*
 * check.c - peer-check, not a delay queue anyone would use: the harness's
 * own test subject (bench/test.sh).  A binary heap of due times in one
 * process, released from the harness thread's poll(), with knobs that
 * break it on purpose so that the test can see the harness catch each
 * fault:
 *
 *   early-us=U     release every message U µs before its due time
 *   lose-every=K   drop every K-th message instead of releasing it
 *   late-us=U      release every message U µs after its due time
 *   extra-bytes=B  touch B more bytes per held slot (a known memory cost,
 *                  populated on first use, as a system's lazy growth)
 *   spin-ns=N      spend N ns per submit (a system too slow for the rate)
 *   dup-every=K    every K-th release is released a second time, by
 *                  another thread (a copy of the payload handed to a
 *                  helper thread): the harness's per-thread tallies must
 *                  still see a duplicate across threads
 *
 * Released messages go to the harness in batches (everything due at one
 * look at the heap, up to BATCH), as a system that reaps many at once.
 *
 * The payloads live in an array of capacity slots allocated and written in
 * setup() (as an up-front arena: counted for the held share); with no knob
 * the system's bytes per message beyond the payload are ~0, so any harness
 * memory leaking into the window would show.
 */
#include "bench.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define BATCH 64

static uint64_t early_ns, late_ns, lose_every, extra_bytes, spin_ns, dup_every;
static uint32_t payload;
static uint64_t nslots, nfree, nsub;
static unsigned char *store, *extra;
static uint32_t *freelist;
struct ent {
	uint64_t due;
	uint32_t slot;
};
static struct ent *heap;
static uint64_t nheap;

static int ck_opt(const char *k, const char *v)
{
	uint64_t x = strtoull(v, NULL, 10);

	if (!strcmp(k, "early-us"))
		early_ns = x * 1000;
	else if (!strcmp(k, "late-us"))
		late_ns = x * 1000;
	else if (!strcmp(k, "lose-every"))
		lose_every = x;
	else if (!strcmp(k, "extra-bytes"))
		extra_bytes = x;
	else if (!strcmp(k, "spin-ns"))
		spin_ns = x;
	else if (!strcmp(k, "dup-every"))
		dup_every = x;
	else
		return -1;
	return 0;
}

static int ck_setup(const struct bench_opts *o, uint64_t capacity)
{
	uint64_t i;

	payload = o->payload;
	nslots = capacity + o->batch + 1;
	store = malloc(nslots * payload);
	freelist = malloc(nslots * sizeof(*freelist));
	heap = malloc(nslots * sizeof(*heap));
	if (!store || !freelist || !heap)
		return -ENOMEM;
	/* the arena, written up front */
	memset(store, 0, nslots * payload);
	for (i = 0; i < nslots; i++) {
		freelist[i] = (uint32_t)(nslots - 1 - i);
		heap[i].due = 0;
	}
	nfree = nslots;
	if (extra_bytes) {
		extra = mmap(NULL, nslots * extra_bytes, PROT_READ | PROT_WRITE,
			     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (extra == MAP_FAILED)
			return -ENOMEM;
	}
	return 0;
}

static void sift_up(uint64_t i)
{
	struct ent e = heap[i];

	while (i && heap[(i - 1) / 2].due > e.due) {
		heap[i] = heap[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	heap[i] = e;
}

static void sift_down(uint64_t i)
{
	struct ent e = heap[i];

	for (;;) {
		uint64_t c = 2 * i + 1;

		if (c >= nheap)
			break;
		if (c + 1 < nheap && heap[c + 1].due < heap[c].due)
			c++;
		if (heap[c].due >= e.due)
			break;
		heap[i] = heap[c];
		i = c;
	}
	heap[i] = e;
}

static int ck_submit(uint64_t id, uint64_t due_ns)
{
	uint32_t slot;

	if (spin_ns) {
		uint64_t t = bench_now() + spin_ns;

		while (bench_now() < t)
			;
	}
	if (!nfree)
		return -EAGAIN;
	slot = freelist[--nfree];
	bench_fill(store + (uint64_t)slot * payload, id, due_ns, payload);
	if (extra)
		memset(extra + (uint64_t)slot * extra_bytes, 1, extra_bytes);
	heap[nheap].due = due_ns + late_ns - (due_ns > early_ns ? early_ns : due_ns);
	heap[nheap].slot = slot;
	sift_up(nheap++);
	return 0;
}

/*
 * dup-every: copies of released payloads, delivered again by dup_thread.
 * A list under a mutex: the test subject need not be fast.
 */
struct dcopy {
	struct dcopy *next;
	unsigned char payload[];
};
static struct dcopy *dq_head, **dq_tail = &dq_head;
static pthread_mutex_t dmx = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t dcv = PTHREAD_COND_INITIALIZER;
static pthread_t dthread;
static int dthread_on, dstop;
static uint64_t nrel;

static void *dup_thread(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&dmx);
	for (;;) {
		struct dcopy *c = dq_head;

		if (!c) {
			if (dstop)
				break;
			pthread_cond_wait(&dcv, &dmx);
			continue;
		}
		dq_head = c->next;
		if (!dq_head)
			dq_tail = &dq_head;
		pthread_mutex_unlock(&dmx);
		bench_deliver(c->payload, payload);
		free(c);
		pthread_mutex_lock(&dmx);
	}
	pthread_mutex_unlock(&dmx);
	return NULL;
}

static int ck_start(void)
{
	if (!dup_every)
		return 0;
	if (pthread_create(&dthread, NULL, dup_thread, NULL))
		return -EAGAIN;
	dthread_on = 1;
	return 0;
}

static void dup_later(const unsigned char *p)
{
	struct dcopy *c = malloc(sizeof(*c) + payload);

	if (!c)
		return;
	memcpy(c->payload, p, payload);
	c->next = NULL;
	pthread_mutex_lock(&dmx);
	*dq_tail = c;
	dq_tail = &c->next;
	pthread_cond_signal(&dcv);
	pthread_mutex_unlock(&dmx);
}

/* the copies are all delivered before the run is judged again */
static void ck_stop(void)
{
	if (!dthread_on)
		return;
	pthread_mutex_lock(&dmx);
	dstop = 1;
	pthread_cond_signal(&dcv);
	pthread_mutex_unlock(&dmx);
	pthread_join(dthread, NULL);
	dthread_on = 0;
}

static int ck_poll(uint64_t until_ns)
{
	struct bench_msg bm[BATCH];
	uint32_t slots[BATCH];
	int guard;

	for (guard = 0; guard < 100000000; guard++) {
		uint64_t now = bench_now();
		unsigned int k = 0, i;

		while (k < BATCH && nheap && heap[0].due <= now) {
			uint32_t slot = heap[0].slot;

			heap[0] = heap[--nheap];
			if (nheap)
				sift_down(0);
			slots[k] = slot;
			if (!lose_every || ++nsub % lose_every)
				bm[k++] = (struct bench_msg){
					store + (uint64_t)slot * payload, payload };
			else
				freelist[nfree++] = slot;
		}
		if (k) {
			bench_deliver_batch(bm, k);
			for (i = 0; i < k; i++) {
				if (dup_every && ++nrel % dup_every == 0)
					dup_later(bm[i].p);
				freelist[nfree++] = slots[i];
			}
			continue;
		}
		if (now >= until_ns)
			break;
		bench_sleep_until(nheap && heap[0].due < until_ns ? heap[0].due : until_ns);
	}
	return 0;
}

static void ck_held(void)
{
	uint64_t i;

	for (i = 0; i < nheap; i++)
		bench_held(store + (uint64_t)heap[i].slot * payload, payload);
}

static void ck_teardown(void)
{
	free(store);
	free(freelist);
	free(heap);
	if (extra)
		munmap(extra, nslots * extra_bytes);
}

const struct peer_ops peer = {
	.name = "check",
	.opt = ck_opt,
	.setup = ck_setup,
	.start = ck_start,
	.submit = ck_submit,
	.poll = ck_poll,
	.stop = ck_stop,
	.held = ck_held,
	.teardown = ck_teardown,
};
