// SPDX-License-Identifier: LGPL-2.1 OR MIT
/*
 * dqbench - producer/consumer workload over libdqshim.
 *
 * N producer threads reserve slots, write a per-message pattern in place,
 * commit with a due time of their own clock plus a delay drawn from a
 * distribution (dq_commit(), absolute) and flush in batches; one consumer
 * (the main thread) reaps, verifies each payload in place, notes when it
 * saw the message, and returns the slot.  Slots are recycled: with fewer
 * slots than messages, producers wait for free slots (backpressure).
 *
 * Every judgement is against what dqbench itself recorded, never against
 * what dq reports back: the producers record each message's due time,
 * their submission order and when its flush returned in a release model
 * (selftests/lib/relmodel.h); the consumer's CLOCK_MONOTONIC when it saw
 * a message is its release time.  Lateness is that time minus the
 * recorded due time.  Checks: early (seen before the recorded due time),
 * lost, duplicated, corrupt and out of order (due order, FIFO among equal
 * due times, as far as submission order is known) must all be 0; the exit
 * status says whether they were.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "dqshim.h"
#include "relmodel.h"

#define REAP_BATCH	256

enum delay_kind { DELAY_FIXED, DELAY_UNIFORM, DELAY_EXP };

struct delay_spec {
	enum delay_kind kind;
	uint64_t a, b;		/* fixed: a; uniform: [a, b]; exp: mean a */
	char text[64];
};

struct bench {
	struct dqshim_queue *q;
	uint64_t count;
	uint32_t payload;
	uint32_t batch;
	unsigned int producers;
	struct delay_spec delay;
	uint64_t seed;

	int stop;			/* __atomic */
	uint64_t t_start;
	uint64_t t_submit_end;		/* max over producers */
	uint64_t submitted;		/* atomically added */
	uint64_t rejected;		/* via the reject callback */
	uint64_t errors;
	unsigned int producers_done;
	pthread_mutex_t lock;
	struct rm model;		/* what was submitted, and when */
};

struct producer {
	struct bench *b;
	pthread_t th;
	unsigned int index;
	uint64_t lo, hi;		/* message ids [lo, hi) */
	uint64_t rng;
	uint64_t in_engine;		/* ids [lo, in_engine) are flushed */
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static uint64_t xorshift(uint64_t *s)
{
	uint64_t x = *s;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	*s = x;
	return x;
}

/* ---- options ------------------------------------------------------- */

/* "500ms", "2s", "100us", "1.5s", "250ns"; a bare number takes @unit. */
static int parse_duration(const char *s, uint64_t unit, uint64_t *out,
			  uint64_t *unit_seen)
{
	char *end;
	double v = strtod(s, &end);
	uint64_t mult = unit;

	if (end == s || v < 0)
		return -1;
	if (!strcmp(end, "ns"))
		mult = 1;
	else if (!strcmp(end, "us"))
		mult = 1000;
	else if (!strcmp(end, "ms"))
		mult = 1000000;
	else if (!strcmp(end, "s"))
		mult = 1000000000;
	else if (*end)
		return -1;
	if (unit_seen)
		*unit_seen = *end ? mult : 0;
	*out = (uint64_t)(v * (double)mult + 0.5);
	return 0;
}

static int parse_delay(const char *s, struct delay_spec *d)
{
	uint64_t unit = 0;

	snprintf(d->text, sizeof(d->text), "%s", s);
	if (!strncmp(s, "fixed:", 6)) {
		d->kind = DELAY_FIXED;
		return parse_duration(s + 6, 1, &d->a, NULL);
	}
	if (!strncmp(s, "exp:", 4)) {
		d->kind = DELAY_EXP;
		return parse_duration(s + 4, 1, &d->a, NULL);
	}
	if (!strncmp(s, "uniform:", 8)) {
		char lo[32];
		const char *dash = strchr(s + 8, '-');
		size_t n;

		d->kind = DELAY_UNIFORM;
		if (!dash)
			return -1;
		n = (size_t)(dash - (s + 8));
		if (n == 0 || n >= sizeof(lo))
			return -1;
		memcpy(lo, s + 8, n);
		lo[n] = 0;
		/* "0-500ms": a bare lower bound takes the upper one's unit. */
		if (parse_duration(dash + 1, 1, &d->b, &unit))
			return -1;
		if (parse_duration(lo, unit ? unit : 1, &d->a, NULL))
			return -1;
		return d->a <= d->b ? 0 : -1;
	}
	return -1;
}

static uint64_t draw_delay(const struct delay_spec *d, uint64_t *rng)
{
	switch (d->kind) {
	case DELAY_FIXED:
		return d->a;
	case DELAY_UNIFORM:
		return d->a + xorshift(rng) % (d->b - d->a + 1);
	case DELAY_EXP: {
		/* u in (0, 1]: -ln(u) * mean. */
		double u = ((double)(xorshift(rng) >> 11) + 1.0) / 9007199254740992.0;

		return (uint64_t)(-log(u) * (double)d->a);
	}
	}
	return 0;
}

/* The longest delay worth waiting for before calling messages lost. */
static uint64_t delay_bound(const struct delay_spec *d)
{
	switch (d->kind) {
	case DELAY_FIXED:
		return d->a;
	case DELAY_UNIFORM:
		return d->b;
	case DELAY_EXP:
		return d->a * 40;	/* e^-40: never drawn in practice */
	}
	return 0;
}

/* ---- payload pattern ----------------------------------------------- */

static uint64_t pattern_word(uint64_t id, uint64_t i)
{
	uint64_t x = (id + 1) * 0x9E3779B97F4A7C15ULL + i * 0xBF58476D1CE4E5B9ULL;

	return x ^ (x >> 31);
}

static void pattern_fill(void *p, uint32_t len, uint64_t id)
{
	uint64_t i, w;

	for (i = 0; (i + 1) * 8 <= len; i++) {
		w = pattern_word(id, i);
		memcpy((char *)p + i * 8, &w, 8);
	}
	if (len % 8) {
		w = pattern_word(id, i);
		memcpy((char *)p + i * 8, &w, len % 8);
	}
}

static bool pattern_ok(const void *p, uint32_t len, uint64_t id)
{
	uint64_t i, w, v;

	for (i = 0; (i + 1) * 8 <= len; i++) {
		w = pattern_word(id, i);
		memcpy(&v, (const char *)p + i * 8, 8);
		if (v != w)
			return false;
	}
	if (len % 8) {
		w = pattern_word(id, i);
		v = 0;
		memcpy(&v, (const char *)p + i * 8, len % 8);
		if (memcmp(&v, &w, len % 8))
			return false;
	}
	return true;
}

/* ---- producers ----------------------------------------------------- */

static bool stopped(struct bench *b)
{
	return __atomic_load_n(&b->stop, __ATOMIC_ACQUIRE);
}

static void on_reject(void *arg, const struct dq_reject *rej)
{
	struct bench *b = arg;

	__atomic_add_fetch(&b->rejected, 1, __ATOMIC_RELAXED);
	rm_withdraw(&b->model, rej->user_data);
	fprintf(stderr, "dqbench: message %llu rejected: %s\n",
		(unsigned long long)rej->user_data, dq_strerror(rej->error));
}

static int flush_counted(struct bench *b)
{
	int ret = dq_flush(b->q);

	if (ret > 0)
		__atomic_add_fetch(&b->submitted, (uint64_t)ret, __ATOMIC_RELAXED);
	else if (ret < 0) {
		fprintf(stderr, "dqbench: flush: %s\n", dq_strerror(ret));
		__atomic_add_fetch(&b->errors, 1, __ATOMIC_RELAXED);
	}
	return ret;
}

/*
 * Flush, then record that this producer's messages committed so far (ids
 * [in_engine, @end)) are in the engine: the flush returned, so they are,
 * whichever thread's flush took them.
 */
static void producer_flush(struct producer *p, uint64_t end)
{
	uint64_t t;

	flush_counted(p->b);
	t = now_ns();
	for (; p->in_engine < end; p->in_engine++)
		rm_in_engine(&p->b->model, p->in_engine, t);
}

static void *producer_main(void *arg)
{
	struct producer *p = arg;
	struct bench *b = p->b;
	uint32_t pending = 0;
	uint64_t id, t, due;

	p->in_engine = p->lo;

	for (id = p->lo; id < p->hi && !stopped(b); id++) {
		struct dqshim_msg m;
		int ret = dq_reserve(b->q, &m);

		if (ret == -ENOSPC) {
			/* Backpressure: what we hold must reach the engine. */
			if (pending) {
				producer_flush(p, id);
				pending = 0;
			}
			do {
				ret = dq_reserve_wait(b->q, &m, 100000000LL);
			} while (ret == -ETIME && !stopped(b));
		}
		if (ret) {
			if (!stopped(b))
				fprintf(stderr, "dqbench: reserve: %s\n",
					dq_strerror(ret));
			break;
		}
		pattern_fill(m.data, b->payload, id);
		t = now_ns();
		due = t + draw_delay(&b->delay, &p->rng);
		rm_submit(&b->model, id, (uint16_t)p->index, id - p->lo, due, t);
		for (;;) {
			ret = dq_commit(b->q, &m, b->payload, due, id);
			if (ret != -EAGAIN)
				break;
			producer_flush(p, id);
			pending = 0;
		}
		if (ret) {
			fprintf(stderr, "dqbench: commit: %s\n", dq_strerror(ret));
			__atomic_add_fetch(&b->errors, 1, __ATOMIC_RELAXED);
			rm_withdraw(&b->model, id);
			break;
		}
		if (++pending >= b->batch) {
			producer_flush(p, id + 1);
			pending = 0;
		}
	}
	producer_flush(p, id < p->hi ? id : p->hi);
	t = now_ns();
	pthread_mutex_lock(&b->lock);
	if (t > b->t_submit_end)
		b->t_submit_end = t;
	pthread_mutex_unlock(&b->lock);
	__atomic_add_fetch(&b->producers_done, 1, __ATOMIC_RELEASE);
	return NULL;
}

/* ---- consumer and report ------------------------------------------- */

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static double pct_us(const uint64_t *v, uint64_t n, double pct)
{
	uint64_t i;

	if (!n)
		return 0;
	i = (uint64_t)ceil(pct / 100.0 * (double)n);
	if (i)
		i--;
	if (i >= n)
		i = n - 1;
	return (double)v[i] / 1000.0;
}

static double tv_ns(struct timeval tv)
{
	return (double)tv.tv_sec * 1e9 + (double)tv.tv_usec * 1e3;
}

static void usage(FILE *f)
{
	fprintf(f,
"usage: dqbench [options]\n"
"  --count N          messages (default 100000)\n"
"  --delay SPEC       uniform:MIN-MAX | fixed:D | exp:MEAN, units ns us ms s\n"
"                     (default uniform:0-500ms)\n"
"  --payload BYTES    payload per message (default 64)\n"
"  --batch N          commits per flush (default 64)\n"
"  --producers N      producer threads (default 1)\n"
"  --backend B        auto | kernel | user (default auto)\n"
"  --slots N          arena slots (default min(count, 262144)); recycled\n"
"  --granularity D    timer slack the queue allows (kernel; default 50us)\n"
"  --ioctl            kernel backend: ioctls instead of io_uring commands\n"
"  --track            delivery tracking (DQ_OPEN_F_TRACK): each message\n"
"                     in flight until done\n"
"  --done-batch       the dones of a reaped batch in one dq_done_n() call\n"
"  --seed N           delay RNG seed\n"
"  --json             one JSON object instead of the table\n");
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "count", required_argument, NULL, 'n' },
		{ "delay", required_argument, NULL, 'd' },
		{ "payload", required_argument, NULL, 'p' },
		{ "batch", required_argument, NULL, 'b' },
		{ "producers", required_argument, NULL, 'P' },
		{ "backend", required_argument, NULL, 'B' },
		{ "slots", required_argument, NULL, 's' },
		{ "granularity", required_argument, NULL, 'g' },
		{ "ioctl", no_argument, NULL, 'I' },
		{ "track", no_argument, NULL, 'T' },
		{ "done-batch", no_argument, NULL, 'D' },
		{ "seed", required_argument, NULL, 'S' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct bench b;
	struct dq_params params;
	struct dq_info info = { .sz = sizeof(info) };
	struct dq_queue_stats st;
	struct producer *prod;
	struct dq_reaped *r;
	struct rusage ru0, ru1;
	uint64_t *lat, nlat = 0, unique = 0, early = 0, dup = 0, corrupt = 0;
	uint64_t order = 0;
	uint64_t t_first = 0, t_last = 0, last_progress, bound, slots = 0;
	uint64_t granularity = 0;
	bool json = false, done_batch = false;
	uint32_t done_slots[REAP_BATCH];
	unsigned int i;
	int c, ret;

	memset(&b, 0, sizeof(b));
	b.count = 100000;
	b.payload = 64;
	b.batch = 64;
	b.producers = 1;
	b.seed = 0x2545F4914F6CDD1DULL;
	parse_delay("uniform:0-500ms", &b.delay);
	dq_params_init(&params);

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'n':
			b.count = strtoull(optarg, NULL, 0);
			break;
		case 'd':
			if (parse_delay(optarg, &b.delay)) {
				fprintf(stderr, "dqbench: bad --delay '%s'\n", optarg);
				return 2;
			}
			break;
		case 'p':
			b.payload = (uint32_t)strtoul(optarg, NULL, 0);
			break;
		case 'b':
			b.batch = (uint32_t)strtoul(optarg, NULL, 0);
			break;
		case 'P':
			b.producers = (unsigned int)strtoul(optarg, NULL, 0);
			break;
		case 'B':
			if (!strcmp(optarg, "auto"))
				params.backend = DQ_BACKEND_AUTO;
			else if (!strcmp(optarg, "kernel"))
				params.backend = DQ_BACKEND_KERNEL;
			else if (!strcmp(optarg, "user"))
				params.backend = DQ_BACKEND_USER;
			else {
				fprintf(stderr, "dqbench: bad --backend '%s'\n", optarg);
				return 2;
			}
			break;
		case 's':
			slots = strtoull(optarg, NULL, 0);
			break;
		case 'g':
			if (parse_duration(optarg, 1, &granularity, NULL)) {
				fprintf(stderr, "dqbench: bad --granularity\n");
				return 2;
			}
			break;
		case 'I':
			params.flags |= DQ_OPEN_F_IOCTL;
			break;
		case 'T':
			params.flags |= DQ_OPEN_F_TRACK;
			break;
		case 'D':
			done_batch = true;
			break;
		case 'S':
			b.seed = strtoull(optarg, NULL, 0) | 1;
			break;
		case 'j':
			json = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (!b.count || !b.batch || !b.producers || b.producers > 1024 ||
	    b.payload > DQ_MAX_SLOT_SIZE) {
		fprintf(stderr, "dqbench: bad arguments\n");
		return 2;
	}
	if (!slots)
		slots = b.count < 262144 ? b.count : 262144;
	if (slots > DQ_MAX_SLOTS)
		slots = DQ_MAX_SLOTS;

	params.slot_count = (uint32_t)slots;
	params.slot_size = b.payload < DQ_MIN_SLOT_SIZE ? DQ_MIN_SLOT_SIZE : b.payload;
	{
		/* Every producer can hold a full batch in the ring. */
		uint64_t want = (uint64_t)b.batch * b.producers;

		if (want < 1024)
			want = 1024;
		if (want > DQ_MAX_RING_ENTRIES)
			want = DQ_MAX_RING_ENTRIES;
		params.submit_entries = (uint32_t)want;
	}
	params.granularity_ns = (uint32_t)granularity;
	params.on_reject = on_reject;
	params.reject_arg = &b;
	ret = dq_queue_open(&params, &b.q);
	if (ret) {
		fprintf(stderr, "dqbench: dq_queue_open: %s\n", dq_strerror(ret));
		return 1;
	}
	dq_queue_info(b.q, &info);
	pthread_mutex_init(&b.lock, NULL);

	lat = malloc(b.count * sizeof(*lat));
	r = calloc(REAP_BATCH, sizeof(*r));
	prod = calloc(b.producers, sizeof(*prod));
	if (!lat || !r || !prod || rm_init(&b.model, b.count)) {
		fprintf(stderr, "dqbench: out of memory\n");
		return 1;
	}

	getrusage(RUSAGE_SELF, &ru0);
	b.t_start = now_ns();
	for (i = 0; i < b.producers; i++) {
		prod[i].b = &b;
		prod[i].index = i;
		prod[i].lo = b.count * i / b.producers;
		prod[i].hi = b.count * (i + 1) / b.producers;
		prod[i].rng = b.seed + 0x9E3779B97F4A7C15ULL * (i + 1);
		if (pthread_create(&prod[i].th, NULL, producer_main, &prod[i])) {
			fprintf(stderr, "dqbench: pthread_create failed\n");
			return 1;
		}
	}

	/* Consumer: until everything came back, or nothing did for too long. */
	bound = delay_bound(&b.delay);
	last_progress = now_ns();
	while (unique < b.count) {
		int n = dq_reap(b.q, r, REAP_BATCH, 100000000LL), k;
		uint64_t now = now_ns();

		if (n < 0 && n != -ETIME) {
			fprintf(stderr, "dqbench: reap: %s\n", dq_strerror(n));
			__atomic_add_fetch(&b.errors, 1, __ATOMIC_RELAXED);
			break;
		}
		if (n <= 0) {
			uint64_t quiet = now - last_progress;
			bool done = __atomic_load_n(&b.producers_done,
						    __ATOMIC_ACQUIRE) == b.producers;

			/*
			 * Quiet for longer than any delay once everything is
			 * submitted (or for much longer while producers still
			 * wait for slots): the rest is lost.
			 */
			if (quiet > bound + (done ? 5 : 15) * 1000000000ULL)
				break;
			continue;
		}
		last_progress = now;
		if (!t_first)
			t_first = now;
		t_last = now;
		for (k = 0; k < n; k++) {
			uint64_t id = r[k].user_data;
			int verdict = rm_seen(&b.model, id, now);

			/* Judged by the recorded due time, not r[k].due_ns. */
			if (!verdict && nlat < b.count)
				lat[nlat++] = now - rm_due(&b.model, id);
			if (!(verdict & (RM_DUP | RM_BAD_ID)))
				unique++;
			if (id >= b.count || r[k].len != b.payload ||
			    !pattern_ok(r[k].data, r[k].len, id))
				corrupt++;
			if (done_batch) {
				done_slots[k] = r[k].slot;
				continue;
			}
			ret = dq_done(b.q, r[k].slot);
			if (ret) {
				fprintf(stderr, "dqbench: done: %s\n", dq_strerror(ret));
				__atomic_add_fetch(&b.errors, 1, __ATOMIC_RELAXED);
			}
		}
		/* --done-batch: the reaped batch's dones in one call. */
		if (done_batch && dq_done_n(b.q, done_slots, (unsigned int)n,
					    NULL) != n) {
			fprintf(stderr, "dqbench: dq_done_n: not all done\n");
			__atomic_add_fetch(&b.errors, 1, __ATOMIC_RELAXED);
		}
	}
	__atomic_store_n(&b.stop, 1, __ATOMIC_RELEASE);
	for (i = 0; i < b.producers; i++)
		pthread_join(prod[i].th, NULL);
	getrusage(RUSAGE_SELF, &ru1);
	dq_queue_get_stats(b.q, &st);
	rm_finish(&b.model);
	early = b.model.early;
	dup = b.model.dup + b.model.unknown;
	order = b.model.order;
	if (b.model.first[0])
		fprintf(stderr, "dqbench: first violation: %s\n", b.model.first);

	qsort(lat, nlat, sizeof(*lat), cmp_u64);
	{
		uint64_t lost = b.count - unique - b.rejected;
		double submit_s = (double)(b.t_submit_end - b.t_start) / 1e9;
		double release_s = (double)(t_last - t_first) / 1e9;
		double submit_rate = submit_s > 0 ? (double)b.submitted / submit_s : 0;
		double release_rate = release_s > 0 ? (double)unique / release_s : 0;
		double cpu_user = tv_ns(ru1.ru_utime) - tv_ns(ru0.ru_utime);
		double cpu_sys = tv_ns(ru1.ru_stime) - tv_ns(ru0.ru_stime);
		double per_msg = (cpu_user + cpu_sys) / (double)b.count;
		bool ok = !early && !lost && !dup && !corrupt && !order &&
			  !b.errors && !b.rejected;

		if (json) {
			printf("{\"backend\":\"%s\",\"path\":\"%s\",\"count\":%llu,"
			       "\"payload\":%u,\"delay\":\"%s\",\"batch\":%u,"
			       "\"producers\":%u,\"slots\":%u,"
			       "\"submitted\":%llu,\"released\":%llu,"
			       "\"submit_rate\":%.0f,\"release_rate\":%.0f,"
			       "\"late_us\":{\"p50\":%.1f,\"p99\":%.1f,"
			       "\"p999\":%.1f,\"max\":%.1f},"
			       "\"engine_late_max_us\":%.1f,"
			       "\"early\":%llu,\"lost\":%llu,\"duplicated\":%llu,"
			       "\"corrupt\":%llu,\"out_of_order\":%llu,"
			       "\"rejected\":%llu,\"errors\":%llu,"
			       "\"cpu_ns_per_msg\":%.0f,\"cpu_user_ns_per_msg\":%.0f,"
			       "\"cpu_sys_ns_per_msg\":%.0f,\"ok\":%s}\n",
			       dq_backend_name(info.backend), dq_path_name(info.path),
			       (unsigned long long)b.count, b.payload, b.delay.text,
			       b.batch, b.producers, info.slot_count,
			       (unsigned long long)b.submitted,
			       (unsigned long long)unique, submit_rate, release_rate,
			       pct_us(lat, nlat, 50), pct_us(lat, nlat, 99),
			       pct_us(lat, nlat, 99.9),
			       nlat ? (double)lat[nlat - 1] / 1000.0 : 0,
			       (double)st.late_max_ns / 1000.0,
			       (unsigned long long)early, (unsigned long long)lost,
			       (unsigned long long)dup, (unsigned long long)corrupt,
			       (unsigned long long)order,
			       (unsigned long long)b.rejected,
			       (unsigned long long)b.errors, per_msg,
			       cpu_user / (double)b.count, cpu_sys / (double)b.count,
			       ok ? "true" : "false");
		} else {
			printf("dqbench: backend %s (%s), %llu msgs, payload %u B, "
			       "delay %s, batch %u, producers %u, slots %u\n",
			       dq_backend_name(info.backend), dq_path_name(info.path),
			       (unsigned long long)b.count, b.payload, b.delay.text,
			       b.batch, b.producers, info.slot_count);
			printf("  submitted   %10llu  %12.0f msg/s\n",
			       (unsigned long long)b.submitted, submit_rate);
			printf("  released    %10llu  %12.0f msg/s (over %.3f s)\n",
			       (unsigned long long)unique, release_rate, release_s);
			printf("  lateness us p50 %.1f  p99 %.1f  p999 %.1f  max %.1f"
			       "  (engine max %.1f)\n",
			       pct_us(lat, nlat, 50), pct_us(lat, nlat, 99),
			       pct_us(lat, nlat, 99.9),
			       nlat ? (double)lat[nlat - 1] / 1000.0 : 0,
			       (double)st.late_max_ns / 1000.0);
			printf("  early %llu  lost %llu  duplicated %llu  corrupt %llu"
			       "  out of order %llu  rejected %llu  errors %llu\n",
			       (unsigned long long)early, (unsigned long long)lost,
			       (unsigned long long)dup, (unsigned long long)corrupt,
			       (unsigned long long)order,
			       (unsigned long long)b.rejected,
			       (unsigned long long)b.errors);
			printf("  cpu         %.0f ns/msg (user %.0f + sys %.0f)\n",
			       per_msg, cpu_user / (double)b.count,
			       cpu_sys / (double)b.count);
			printf("  %s\n", ok ? "PASS" : "FAIL");
		}
		dq_queue_close(b.q);
		rm_free(&b.model);
		free(lat);
		free(r);
		free(prod);
		return ok ? 0 : 1;
	}
}
