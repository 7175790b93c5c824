// SPDX-License-Identifier: LGPL-2.1 OR MIT
/*
 * fifo_sleep.c - the design brief's design 2: an in-process bounded FIFO
 * channel and a pool of worker threads; each worker pops the next message
 * and sleeps until it is due, then releases it.
 *
 * Head-of-line blocking is the point: a message with a short delay queued
 * behind longer ones waits until a worker is free, so it is released late
 * (and, with every worker asleep on far-future messages, not at all within
 * the run).  Such a message is not lost: held() shows the harness every
 * message still in the FIFO or in a worker's hands when the run stops, and
 * the harness counts it as overdue (a missed deadline).  Everything held is
 * in the process's memory: it is lost when the process dies.
 *
 * Options: workers=N (32), capacity=N (0: what the workload can hold).
 */
#include "bench.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_WORKERS 4096

struct msg {
	uint64_t due_ns;
	unsigned char payload[];
};

static unsigned int n_workers = 32;
static uint64_t cap_opt;

static struct msg **ring;
static uint64_t cap, head, tail;	/* pop at head, push at tail */
static pthread_mutex_t mx = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t not_empty, stop_cv;
static pthread_mutex_t stop_mx = PTHREAD_MUTEX_INITIALIZER;
static pthread_t workers[MAX_WORKERS];
static struct msg *in_hand[MAX_WORKERS];	/* popped, not yet released */
static unsigned int started;
static volatile int stop_flag;
static char desc[64];

static int fifo_opt(const char *k, const char *v)
{
	if (!strcmp(k, "workers")) {
		n_workers = (unsigned int)strtoul(v, NULL, 10);
		return n_workers && n_workers <= MAX_WORKERS ? 0 : -1;
	}
	if (!strcmp(k, "capacity")) {
		cap_opt = strtoull(v, NULL, 10);
		return 0;
	}
	return -1;
}

static int fifo_setup(const struct bench_opts *o, uint64_t capacity)
{
	pthread_condattr_t ca;

	(void)o;
	cap = cap_opt ? cap_opt : capacity;
	if (cap < 1024)
		cap = 1024;
	ring = calloc(cap, sizeof(*ring));
	if (!ring)
		return -ENOMEM;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&not_empty, &ca);
	pthread_cond_init(&stop_cv, &ca);
	snprintf(desc, sizeof(desc), "workers=%u cap=%llu", n_workers,
		 (unsigned long long)cap);
	return 0;
}

static void *worker(void *arg)
{
	unsigned int me = (unsigned int)(uintptr_t)arg;

	for (;;) {
		struct msg *m;
		struct timespec ts;

		pthread_mutex_lock(&mx);
		while (head == tail && !stop_flag)
			pthread_cond_wait(&not_empty, &mx);
		if (stop_flag) {
			pthread_mutex_unlock(&mx);
			return NULL;
		}
		m = ring[head % cap];
		head++;
		in_hand[me] = m;
		pthread_mutex_unlock(&mx);

		/* sleep until due; only a stop wakes it earlier */
		ts.tv_sec = (time_t)(m->due_ns / 1000000000ULL);
		ts.tv_nsec = (long)(m->due_ns % 1000000000ULL);
		pthread_mutex_lock(&stop_mx);
		while (!stop_flag && bench_now() < m->due_ns)
			if (pthread_cond_timedwait(&stop_cv, &stop_mx, &ts) == ETIMEDOUT)
				break;
		pthread_mutex_unlock(&stop_mx);
		if (stop_flag)
			return NULL;	/* still held: in_hand[me] */
		bench_deliver(m->payload, bench_o->payload);
		pthread_mutex_lock(&mx);
		in_hand[me] = NULL;
		pthread_mutex_unlock(&mx);
		free(m);
	}
}

static int fifo_start(void)
{
	for (started = 0; started < n_workers; started++)
		if (pthread_create(&workers[started], NULL, worker,
				   (void *)(uintptr_t)started))
			return -EAGAIN;
	return 0;
}

static int fifo_submit(uint64_t id, uint64_t due_ns)
{
	struct msg *m;

	pthread_mutex_lock(&mx);
	if (tail - head >= cap) {
		/* the channel is full: the producer blocks (backpressure) */
		pthread_mutex_unlock(&mx);
		return -EAGAIN;
	}
	pthread_mutex_unlock(&mx);
	m = malloc(sizeof(*m) + bench_o->payload);
	if (!m)
		return -ENOMEM;
	m->due_ns = due_ns;
	bench_fill(m->payload, id, due_ns, bench_o->payload);
	pthread_mutex_lock(&mx);
	ring[tail % cap] = m;
	tail++;
	pthread_cond_signal(&not_empty);
	pthread_mutex_unlock(&mx);
	return 0;
}

static void fifo_stop(void)
{
	unsigned int i;

	pthread_mutex_lock(&mx);
	pthread_mutex_lock(&stop_mx);
	stop_flag = 1;
	pthread_cond_broadcast(&stop_cv);
	pthread_mutex_unlock(&stop_mx);
	pthread_cond_broadcast(&not_empty);
	pthread_mutex_unlock(&mx);
	for (i = 0; i < started; i++)
		pthread_join(workers[i], NULL);
	started = 0;
}

/* after stop: every message still in the FIFO or in a worker's hands */
static void fifo_held(void)
{
	uint64_t i;
	unsigned int w;

	pthread_mutex_lock(&mx);
	for (i = head; i < tail; i++)
		bench_held(ring[i % cap]->payload, bench_o->payload);
	for (w = 0; w < MAX_WORKERS; w++)
		if (in_hand[w])
			bench_held(in_hand[w]->payload, bench_o->payload);
	pthread_mutex_unlock(&mx);
}

static void fifo_teardown(void)
{
	uint64_t i;
	unsigned int w;

	for (i = head; i < tail; i++)
		free(ring[i % cap]);
	for (w = 0; w < MAX_WORKERS; w++) {
		free(in_hand[w]);
		in_hand[w] = NULL;
	}
	head = tail = 0;
	free(ring);
}

static const char *fifo_describe(void)
{
	return desc;
}

const struct peer_ops peer = {
	.name = "fifo-sleep",
	.opt = fifo_opt,
	.setup = fifo_setup,
	.start = fifo_start,
	.submit = fifo_submit,
	.stop = fifo_stop,
	.held = fifo_held,
	.teardown = fifo_teardown,
	.describe = fifo_describe,
};
