// SPDX-License-Identifier: LGPL-2.1 OR MIT
/*
 * dqbench_hot - the library's hot path at a fixed offered rate (issue 18,
 * levers 2 and 5): CPU per message, lateness, wake-ups and the engine's
 * timer re-arms, on the embedded engine.
 *
 *   dqbench_hot [--rate R] [--secs S] [--delay-max NS] [--slots N]
 *               [--sp] [--commit-n] [--fixed-slack] [--count N]
 *
 * Rate mode (default): one producer thread offers R msg/s for S seconds
 * (every millisecond, the messages that tick owes: reserve, write 64
 * bytes, commit due at now + uniform [0, delay-max], flush); the main
 * thread is the consumer: dq_reap(256, blocking), lateness = its own
 * CLOCK_MONOTONIC at reap minus the due time it committed, dq_done_n()
 * per reaped batch.  CPU is the process's rusage (both threads) over the
 * run, divided by the messages.  Nothing is checked here beyond count and
 * never-early (the tests and dqbench judge order): this measures.
 *
 * Count mode (--count N): one thread, no pacing, every message due at
 * once: reserve, commit, flush per 64, reap, done_n; the loop is the
 * function hot_loop(), for callgrind --toggle-collect=hot_loop.
 *
 * --sp: DQ_OPEN_F_SINGLE_PRODUCER (when the library has it).
 * --commit-n: dq_commit_n() per tick (when the library has it).
 * --fixed-slack: DQ_OPEN_F_FIXED_SLACK (when the library has it).
 * --single (count mode): dq_reserve() per message, not dq_reserve_n().
 * Builds against an older library too (the options are then refused), so
 * the same driver measures before and after.
 */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "dqshim.h"

#define REAP_MAX	256
#define TICK_NS		1000000ULL

struct hot {
	struct dqshim_queue *q;
	uint64_t rate, secs, delay_max, count;
	uint32_t slots;
	bool sp, commit_n, fixed_slack, single;
	uint64_t total;			/* messages to send */
	uint64_t errors;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static uint64_t rng_next(uint64_t *s)
{
	uint64_t x = *s;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return *s = x;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* One message: a slot (waiting for one), 64 bytes, committed. */
static int produce_one(struct hot *h, uint64_t due, uint64_t id)
{
	struct dqshim_msg m;
	int ret;

	ret = dq_reserve_wait(h->q, &m, -1);
	if (ret)
		return ret;
	memset(m.data, (int)(id & 0xff), 64);
	ret = dq_commit(h->q, &m, 64, due, id);
	if (ret == -EAGAIN) {
		dq_flush(h->q);
		ret = dq_commit(h->q, &m, 64, due, id);
	}
	return ret;
}

#ifdef DQ_OPEN_F_SINGLE_PRODUCER
/* A tick's messages: reserve_n, one dq_commit_n() per chunk. */
static int produce_n(struct hot *h, uint64_t n, uint64_t now, uint64_t *rng,
		     uint64_t id)
{
	struct dq_commit_ent ent[64];
	struct dqshim_msg m[64];

	while (n) {
		unsigned int k = n < 64 ? (unsigned int)n : 64, got, i;
		int ret = dq_reserve_n(h->q, m, k);

		if (ret == -ENOSPC) {
			ret = dq_reserve_wait(h->q, &m[0], -1);
			if (!ret)
				ret = 1;
		}
		if (ret < 0)
			return ret;
		got = (unsigned int)ret;
		for (i = 0; i < got; i++) {
			memset(m[i].data, (int)((id + i) & 0xff), 64);
			ent[i] = (struct dq_commit_ent){
				.msg = &m[i], .len = 64,
				.due_ns = now + (h->delay_max ?
					  rng_next(rng) % h->delay_max : 0),
				.user_data = id + i,
			};
		}
		ret = dq_commit_n(h->q, ent, got);
		if (ret != (int)got)
			return ret < 0 ? ret : -EIO;
		id += got;
		n -= got;
	}
	return 0;
}
#endif

static void *producer(void *arg)
{
	struct hot *h = arg;
	uint64_t rng = 0x9e3779b97f4a7c15ULL, sent = 0, t0 = now_ns(), tick;

	for (tick = 1; sent < h->total; tick++) {
		struct timespec ts;
		uint64_t at = t0 + tick * TICK_NS;
		uint64_t owe = h->rate * tick / 1000 - sent, now;
		int ret = 0;

		if (owe > h->total - sent)
			owe = h->total - sent;
		now = now_ns();
#ifdef DQ_OPEN_F_SINGLE_PRODUCER
		if (h->commit_n) {
			ret = produce_n(h, owe, now, &rng, sent);
			sent += owe;
		} else
#endif
		for (; owe; owe--, sent++) {
			uint64_t due = now + (h->delay_max ?
					      rng_next(&rng) % h->delay_max : 0);

			ret = produce_one(h, due, sent);
			if (ret)
				break;
		}
		if (ret) {
			fprintf(stderr, "produce: %s\n", dq_strerror(ret));
			__atomic_add_fetch(&h->errors, 1, __ATOMIC_RELAXED);
			exit(2);
		}
		if (dq_flush(h->q) < 0)
			h->errors++;
		ts.tv_sec = (time_t)(at / 1000000000ULL);
		ts.tv_nsec = (long)(at % 1000000000ULL);
		clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
	}
	return NULL;
}

/*
 * The calling thread's voluntary context switches: for the consumer, its
 * sleeps (in dq_reap(), or on a contended lock), a wake-up count that
 * needs nothing from the library (so it compares versions).
 */
static uint64_t thread_sleeps(void)
{
	struct rusage ru;

	getrusage(RUSAGE_THREAD, &ru);
	return (uint64_t)ru.ru_nvcsw;
}

static double rusage_ns(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e9 +
	       (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e3;
}

static int run_rate(struct hot *h)
{
	struct dq_reaped out[REAP_MAX];
	uint32_t slots[REAP_MAX];
	uint64_t got = 0, early = 0, reaps = 0, *late, t0, t1, s0, s1;
	double c0, c1;
	pthread_t th;
	int i, n;

	h->total = h->rate * h->secs;
	late = malloc(h->total * sizeof(*late));
	if (!late)
		return 1;
	memset(late, 0, h->total * sizeof(*late));	/* touched before */
	c0 = rusage_ns();
	s0 = thread_sleeps();
	t0 = now_ns();
	pthread_create(&th, NULL, producer, h);
	while (got < h->total) {
		uint64_t now;

		n = dq_reap(h->q, out, REAP_MAX, 2000000000LL);
		if (n < 0) {
			fprintf(stderr, "reap: %s\n", dq_strerror(n));
			return 1;
		}
		now = now_ns();
		reaps++;
		for (i = 0; i < n; i++) {
			if (now < out[i].due_ns)
				early++;
			late[got++] = now - out[i].due_ns;
			slots[i] = out[i].slot;
		}
		dq_done_n(h->q, slots, (unsigned int)n, NULL);
	}
	t1 = now_ns();
	c1 = rusage_ns();
	s1 = thread_sleeps();
	pthread_join(th, NULL);
	qsort(late, got, sizeof(*late), cmp_u64);
	printf("{\"rate\":%llu,\"secs\":%llu,\"delay_max_ns\":%llu,\"sp\":%d,"
	       "\"commit_n\":%d,\"fixed_slack\":%d,\"msgs\":%llu,"
	       "\"cpu_ns_per_msg\":%.0f,\"late_p50_ns\":%llu,"
	       "\"late_p99_ns\":%llu,\"late_max_ns\":%llu,\"early\":%llu,"
	       "\"reaps\":%llu,\"reaps_per_s\":%.0f,\"msgs_per_reap\":%.2f,"
	       "\"consumer_sleeps_per_s\":%.0f",
	       (unsigned long long)h->rate, (unsigned long long)h->secs,
	       (unsigned long long)h->delay_max, h->sp, h->commit_n,
	       h->fixed_slack, (unsigned long long)got, (c1 - c0) / got,
	       (unsigned long long)late[got / 2],
	       (unsigned long long)late[got * 99 / 100],
	       (unsigned long long)late[got - 1], (unsigned long long)early,
	       (unsigned long long)reaps, reaps * 1e9 / (t1 - t0),
	       (double)got / reaps, (s1 - s0) * 1e9 / (t1 - t0));
#ifdef DQ_OPEN_F_SINGLE_PRODUCER
	{
		struct dq_lib_stats es = { .sz = sizeof(es) };

		if (!dq_queue_lib_stats(h->q, &es))
			printf(",\"wakeups\":%llu,\"wakeups_per_s\":%.0f,"
			       "\"timer_sets\":%llu,\"timer_sets_per_wakeup\":%.3f,"
			       "\"timer_sets_per_msg\":%.4f,\"slack_ns\":%llu,"
			       "\"pwakes\":%llu,\"refills\":%llu,"
			       "\"wakeups_idle\":%llu,\"timer_sets_submit\":%llu",
			       (unsigned long long)es.wakeups,
			       es.wakeups * 1e9 / (t1 - t0),
			       (unsigned long long)es.timer_sets,
			       es.wakeups ? (double)es.timer_sets / es.wakeups : 0,
			       (double)es.timer_sets / got,
			       (unsigned long long)es.slack_ns,
			       (unsigned long long)es.producer_wakes,
			       (unsigned long long)es.pool_refills,
			       (unsigned long long)es.wakeups_idle,
			       (unsigned long long)es.timer_sets_submit);
	}
#endif
	printf("}\n");
	free(late);
	return early || h->errors ? 1 : 0;
}

/* Count mode: the measured loop, one thread. */
__attribute__((noinline)) uint64_t hot_loop(struct hot *h)
{
	struct dq_reaped out[64];
	struct dqshim_msg m[64];
	uint32_t slots[64];
	uint64_t done = 0, id = 0;

	while (done < h->count) {
		uint64_t now = dq_now_ns();
		int k, i, n;

		if (h->single) {
			/* dq_reserve() per message, as most callers do. */
			for (k = 0; k < 64 && !dq_reserve(h->q, &m[k]); k++)
				;
			if (!k)
				return done;
		} else {
			k = dq_reserve_n(h->q, m, 64);
			if (k < 0)
				return done;
		}
#ifdef DQ_OPEN_F_SINGLE_PRODUCER
		if (h->commit_n) {
			struct dq_commit_ent ent[64];

			for (i = 0; i < k; i++)
				ent[i] = (struct dq_commit_ent){
					.msg = &m[i], .len = 64,
					.due_ns = now, .user_data = id++,
				};
			if (dq_commit_n(h->q, ent, (unsigned int)k) != k)
				return done;
		} else
#endif
		for (i = 0; i < k; i++)
			if (dq_commit(h->q, &m[i], 64, now, id++))
				return done;
		dq_flush(h->q);
		while ((n = dq_reap(h->q, out, 64, 0)) > 0) {
			for (i = 0; i < n; i++)
				slots[i] = out[i].slot;
			dq_done_n(h->q, slots, (unsigned int)n, NULL);
			done += (uint64_t)n;
		}
	}
	return done;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "rate", required_argument, NULL, 'r' },
		{ "secs", required_argument, NULL, 's' },
		{ "delay-max", required_argument, NULL, 'd' },
		{ "slots", required_argument, NULL, 'S' },
		{ "count", required_argument, NULL, 'n' },
		{ "sp", no_argument, NULL, 'p' },
		{ "commit-n", no_argument, NULL, 'c' },
		{ "fixed-slack", no_argument, NULL, 'f' },
		{ "single", no_argument, NULL, '1' },
		{ 0 }
	};
	struct hot h = { .rate = 10000, .secs = 3, .delay_max = 100000000,
			 .slots = 65536 };
	struct dq_params p;
	int c, ret;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'r': h.rate = strtoull(optarg, NULL, 0); break;
		case 's': h.secs = strtoull(optarg, NULL, 0); break;
		case 'd': h.delay_max = strtoull(optarg, NULL, 0); break;
		case 'S': h.slots = (uint32_t)strtoul(optarg, NULL, 0); break;
		case 'n': h.count = strtoull(optarg, NULL, 0); break;
		case 'p': h.sp = true; break;
		case 'c': h.commit_n = true; break;
		case 'f': h.fixed_slack = true; break;
		case '1': h.single = true; break;
		default:
			fprintf(stderr, "usage: see the comment at the top\n");
			return 2;
		}
	}
	dq_params_init(&p);
	p.backend = DQ_BACKEND_USER;
	p.slot_count = h.slots;
	p.slot_size = 64;
#ifdef DQ_OPEN_F_SINGLE_PRODUCER
	if (h.sp)
		p.flags |= DQ_OPEN_F_SINGLE_PRODUCER;
#else
	if (h.sp)
		return fprintf(stderr, "--sp: not in this library\n"), 2;
#endif
#ifdef DQ_OPEN_F_FIXED_SLACK
	if (h.fixed_slack)
		p.flags |= DQ_OPEN_F_FIXED_SLACK;
#else
	if (h.fixed_slack)
		return fprintf(stderr, "--fixed-slack: not in this library\n"), 2;
#endif
#ifndef DQ_OPEN_F_SINGLE_PRODUCER
	if (h.commit_n)
		return fprintf(stderr, "--commit-n: not in this library\n"), 2;
#endif
	ret = dq_queue_open(&p, &h.q);
	if (ret) {
		fprintf(stderr, "open: %s\n", dq_strerror(ret));
		return 1;
	}
	if (h.count) {
		uint64_t done = hot_loop(&h);

		printf("{\"count\":%llu,\"done\":%llu}\n",
		       (unsigned long long)h.count, (unsigned long long)done);
		ret = done >= h.count ? 0 : 1;
	} else {
		ret = run_rate(&h);
	}
	dq_queue_close(h.q);
	return ret;
}
