// SPDX-License-Identifier: LGPL-2.1 OR MIT
/*
 * dq_timing - releases are on time, not only "not early".
 *
 * The bound is relative to what this boot's timer can do: a
 * cyclictest-style sleeper measures the timer floor (lateness of
 * clock_nanosleep(TIMER_ABSTIME) at the same spacing and in the same
 * shape as the consumer's waits), and a consumer blocked in DQ_IOC_WAIT
 * reaps messages due at spread times; each message's lateness is (the
 * consumer's clock when it read the entry) - (the due time the test
 * itself chose).  Nothing dq reports back is used.  The two run at the
 * same time: a sleeper pinned to each CPU wakes FLOOR_OFFSET after each
 * of the first queue's due times, so that both see the same load on the
 * host, and the floor's sample is the latest of them (a release needs
 * two CPUs, the timer's and the consumer's).  Under TCG a busy host
 * stalls a vCPU for tens of ms; a floor measured in blocks between dq's
 * (as before 2026-12-07) missed the stalls that fell in dq's blocks and
 * failed dq for them (a cold make check beside benchmarks: floor p99
 * 4.7 ms, fine queue p99 53 ms against a bound of 33.6), and one
 * unpinned sleeper missed those of the other vCPU (measure_floor()).
 *
 * Asserted, with F = the floor's percentiles and G = the queue's
 * granularity:
 *   early            0
 *   p50 lateness  <= 3 * F.p50 + G + 500 us
 *   p99 lateness  <= 5 * F.p99 + G + 10 ms
 *   max lateness  <= 4 * F.max + G + 20 ms
 * The tails are loose on purpose: under TCG a loaded host stalls the
 * vCPUs for tens of ms, and a release needs two of them (the timer's
 * softirq and the consumer) where the floor's sleeper needs one (load
 * average 8 on the lab's 2 cores: floor p99 22.6 ms, dq p99 103 ms).
 * The p50 bound is the tight one: an extra delay d on every release moves
 * the median by d, so any d above (p50 bound - measured p50) fails, and a
 * d equal to the p50 bound fails always.  The lab self-test plants such a
 * delay through the test-only module parameter test_arm_delay_ns and
 * checks that this program then fails.
 *
 * A coarse queue (granularity 20 ms) on the same engine must not delay a
 * fine one: the fine queue keeps the same bound while the coarse one has
 * messages pending all around it, and the coarse one is itself on time
 * within its own granularity.
 *
 * DQ_TIMING_N (default 1000) messages per queue, spaced 1-3 ms apart.
 * DQ_TIMING_TAIL_SCALE (default 1, at most 10) multiplies the fixed
 * slack of the p99 and max bounds (the 10 ms and 20 ms): the debug
 * kernel's suite sets it, because there KASAN, lockdep and kmemleak make
 * every softirq, wake-up and allocation several times slower under TCG
 * and the fine queue's p99 has gone past 5 * F.p99 + 10 ms by a few
 * tens of microseconds with nothing wrong (2026-12-04: 25.40 against
 * 25.38 ms; 6.0-6.6 ms in a fresh boot right after).  The p50 bound,
 * the one that catches a delay on every release, is never scaled.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dqtest.h"
#include "tap.h"

#define FINE_G_NS	50000ULL		/* 50 us: the default */
#define COARSE_G_NS	(20 * NSEC_PER_MSEC)
#define ROUNDS		10
/* The floor's sleeper wakes this long after each due time: apart from
 * the release it measures beside, within the same host stall. */
#define FLOOR_OFFSET_NS	(500 * NSEC_PER_USEC)
/* The lab's VM has 2 vCPUs; a larger machine measures its first 8. */
#define MAX_SLEEPERS	8

struct pcts {
	uint64_t p50, p99, max;
	uint64_t n;
};

static unsigned int nr_msgs(void)
{
	const char *s = getenv("DQ_TIMING_N");
	unsigned long n = s ? strtoul(s, NULL, 10) : 1000;

	return n < 50 ? 50 : n > 20000 ? 20000 : (unsigned int)n;
}

static struct pcts pcts_of(uint64_t *v, size_t n)
{
	struct pcts p = { .n = n };

	dqt_sort_u64(v, n);
	p.p50 = dqt_percentile(v, n, 50);
	p.p99 = dqt_percentile(v, n, 99);
	p.max = n ? v[n - 1] : 0;
	return p;
}

/* Due times: start + cumulative gaps of 1-3 ms. */
static void make_schedule(uint64_t *due, unsigned int n, uint64_t start,
			  uint64_t *seed)
{
	uint64_t t = start;
	unsigned int i;

	for (i = 0; i < n; i++) {
		t += NSEC_PER_MSEC + dqt_rand(seed) % (2 * NSEC_PER_MSEC);
		due[i] = t;
	}
}

/* One floor sleeper, pinned to one CPU. */
struct sleeper {
	pthread_t th;
	int cpu;
	const uint64_t *due;
	unsigned int n;
	uint64_t *late;		/* out: n entries */
	int error;
};

static void *sleeper_fn(void *arg)
{
	struct sleeper *s = arg;
	cpu_set_t set;
	unsigned int i;

	CPU_ZERO(&set);
	CPU_SET(s->cpu, &set);
	s->error = pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
	if (s->error)
		return NULL;
	/* Like the consumer's reap: each wake-up takes every time now past,
	 * so a slow wake-up is counted once, never as a backlog. */
	for (i = 0; i < s->n;) {
		uint64_t now;

		dqt_sleep_until(s->due[i] + FLOOR_OFFSET_NS);
		now = dqt_now_ns();
		for (; i < s->n && s->due[i] + FLOOR_OFFSET_NS <= now; i++)
			s->late[i] = now - (s->due[i] + FLOOR_OFFSET_NS);
	}
	return NULL;
}

/*
 * The timer floor: FLOOR_OFFSET_NS after each of @due's times, while dq
 * releases them, one absolute sleep on every CPU this test may run on;
 * late[i] is the latest of them.  A release needs the CPU its engine's
 * timer is pinned to and the consumer's, either of which may stall
 * while the other runs on (under TCG a vCPU is a host thread a loaded
 * host deschedules; in the debug kernel one vCPU stalls 100-200 ms even
 * on a quiet host): one sleeper beside dq saw only the stalls of the
 * vCPU it ran on (a CI run of the debug kernel, 2026-12-07: floor p99
 * 3.5 ms, max 11.3, dq p99 95.8 ms;
 * docs/records/check/2026-12-07-timing-floor.txt).
 */
static void measure_floor(uint64_t *late, const uint64_t *due, unsigned int n)
{
	struct sleeper s[MAX_SLEEPERS];
	unsigned int ns = 0, i, j;
	cpu_set_t set;
	int cpu;

	ASSERT_EQ(sched_getaffinity(0, sizeof(set), &set), 0);
	for (cpu = 0; cpu < CPU_SETSIZE && ns < MAX_SLEEPERS; cpu++) {
		if (!CPU_ISSET(cpu, &set))
			continue;
		s[ns] = (struct sleeper){ .cpu = cpu, .due = due, .n = n,
					  .late = calloc(n, sizeof(uint64_t)) };
		ASSERT_TRUE(s[ns].late != NULL);
		ASSERT_EQ(pthread_create(&s[ns].th, NULL, sleeper_fn, &s[ns]), 0);
		ns++;
	}
	ASSERT_GT(ns, 0U);
	for (j = 0; j < ns; j++)
		pthread_join(s[j].th, NULL);
	memset(late, 0, n * sizeof(*late));
	for (j = 0; j < ns; j++) {
		if (s[j].error)
			tap_diag("floor on cpu %d: %s", s[j].cpu, strerror(s[j].error));
		EXPECT_EQ(s[j].error, 0);
		for (i = 0; i < n; i++)
			if (s[j].late[i] > late[i])
				late[i] = s[j].late[i];
		free(s[j].late);
	}
}

struct consumer {
	struct dqt_queue *q;
	const uint64_t *due;	/* the test's own record, by user_data */
	unsigned int n;
	uint64_t *late;		/* out, by user_data */
	unsigned int got, early, dup, bad;
	uint64_t deadline;
	int error;
};

static void *consume_fn(void *arg)
{
	struct consumer *c = arg;
	uint8_t *seen = calloc(c->n, 1);
	struct dq_ready r[32];

	while (c->got + c->bad < c->n && dqt_now_ns() < c->deadline) {
		int ret = dqt_wait(c->q, 1, (int64_t)(500 * NSEC_PER_MSEC));
		uint64_t now;
		int k, i;

		if (ret == -ETIME || ret == -EINTR)
			continue;
		if (ret < 0) {
			c->error = ret;
			break;
		}
		k = dqt_reap(c->q, r, 32);
		now = dqt_now_ns();
		for (i = 0; i < k; i++) {
			uint64_t id = r[i].user_data;

			if (id >= c->n) {
				c->bad++;
				continue;
			}
			if (seen[id]++) {
				c->dup++;
				continue;
			}
			if (now < c->due[id])
				c->early++;
			else
				c->late[id] = now - c->due[id];
			/* Slots are never reused here: no slot_put race. */
			__atomic_store_n(&c->got, c->got + 1, __ATOMIC_RELEASE);
		}
	}
	free(seen);
	return NULL;
}

static void check_consumer(const struct consumer *c, const char *what)
{
	if (c->error)
		tap_diag("%s: wait failed: %s", what, strerror(-c->error));
	EXPECT_EQ(c->error, 0);
	EXPECT_EQ(c->early, 0U);
	EXPECT_EQ(c->dup, 0U);
	EXPECT_EQ(c->bad, 0U);
	EXPECT_EQ(c->got + c->early, c->n);
}

static void print_pcts(const char *what, const struct pcts *p)
{
	tap_diag("%-22s n=%llu p50 %8.3f ms  p99 %8.3f ms  max %8.3f ms", what,
		 (unsigned long long)p->n, p->p50 / 1e6, p->p99 / 1e6,
		 p->max / 1e6);
}

static unsigned int tail_scale(void)
{
	const char *s = getenv("DQ_TIMING_TAIL_SCALE");
	unsigned long v = s ? strtoul(s, NULL, 10) : 1;

	return v < 1 ? 1 : v > 10 ? 10 : (unsigned int)v;
}

/* The bounds above, for a queue of granularity @g against floor @f. */
static void check_bounds(const char *what, const struct pcts *d,
			 const struct pcts *f, uint64_t g)
{
	unsigned int ts = tail_scale();
	uint64_t b50 = 3 * f->p50 + g + 500 * NSEC_PER_USEC;
	uint64_t b99 = 5 * f->p99 + g + ts * 10 * NSEC_PER_MSEC;
	uint64_t bmax = 4 * f->max + g + ts * 20 * NSEC_PER_MSEC;

	tap_diag("%-22s bounds: p50 %.3f ms  p99 %.3f ms  max %.3f ms (tail scale %u)",
		 what, b50 / 1e6, b99 / 1e6, bmax / 1e6, ts);
	EXPECT_LE(d->p50, b50);
	EXPECT_LE(d->p99, b99);
	EXPECT_LE(d->max, bmax);
}

static int queue_on_node0(struct dqt_queue *q, unsigned int n, uint64_t g)
{
	struct dqt_params p = DQT_PARAMS(.slot_count = n, .slot_size = 64,
					 .granularity_ns = (uint32_t)g);

	p.numa_node = 0;
	return dqt_queue_init(q, &p);
}

/*
 * ROUNDS rounds of: a block of n / ROUNDS messages on each queue,
 * submitted when the block starts, the floor's sleeps meanwhile, and
 * every message reaped before the next round.  Fills floor[] (n entries)
 * and, per queue, late[] by user_data through the consumers.
 */
static void run_rounds(struct dqt_queue **qs, uint64_t **due,
		       struct consumer *cs, unsigned int nq, unsigned int n,
		       uint64_t *floor, uint64_t *seed)
{
	unsigned int per = n / ROUNDS, r, k;

	for (r = 0; r < ROUNDS; r++) {
		uint64_t start, dl;

		start = dqt_now_ns() + 20 * NSEC_PER_MSEC;
		for (k = 0; k < nq; k++) {
			make_schedule(due[k] + r * per, per, start, seed);
			for (unsigned int i = r * per; i < (r + 1) * per; i++) {
				int slot = dqt_slot_reserve(qs[k]);

				ASSERT_GE(slot, 0);
				ASSERT_EQ(dqt_push_flush(qs[k], &(struct dq_desc){
					.due_ns = due[k][i], .user_data = i,
					.slot = (uint32_t)slot, .len = 8 }), 0);
			}
			ASSERT_GE(dqt_submit(qs[k], 0, NULL, 0, NULL), 0);
		}
		measure_floor(floor + r * per, due[0] + r * per, per);
		dl = dqt_now_ns() + 30 * NSEC_PER_SEC;
		for (k = 0; k < nq; k++)
			while (__atomic_load_n(&cs[k].got, __ATOMIC_ACQUIRE) +
			       cs[k].early < (r + 1) * per &&
			       dqt_now_ns() < dl && !cs[k].error)
				dqt_sleep_ns(NSEC_PER_MSEC);
	}
}

static void timing_case(const uint64_t *gran, const char *const *name,
			unsigned int nq)
{
	unsigned int n = nr_msgs() / ROUNDS * ROUNDS, k;
	uint64_t seed = dqt_seed() ^ nq;
	uint64_t *floor = calloc(n, sizeof(*floor));
	uint64_t *due[2], *late[2];
	struct dqt_queue q[2], *qs[2];
	struct consumer cs[2];
	pthread_t th[2];
	struct pcts f, d;

	ASSERT_TRUE(floor != NULL);
	for (k = 0; k < nq; k++) {
		due[k] = calloc(n, sizeof(*due[k]));
		late[k] = calloc(n, sizeof(*late[k]));
		ASSERT_TRUE(due[k] && late[k]);
		/* Every queue on node 0: one engine, one timer. */
		ASSERT_EQ(queue_on_node0(&q[k], n, gran[k]), 0);
		qs[k] = &q[k];
		memset(&cs[k], 0, sizeof(cs[k]));
		cs[k].q = &q[k];
		cs[k].due = due[k];
		cs[k].n = n;
		cs[k].late = late[k];
		cs[k].deadline = dqt_now_ns() + 200 * NSEC_PER_SEC;
		ASSERT_EQ(pthread_create(&th[k], NULL, consume_fn, &cs[k]), 0);
	}
	run_rounds(qs, due, cs, nq, n, floor, &seed);
	for (k = 0; k < nq; k++)
		pthread_join(th[k], NULL);
	f = pcts_of(floor, n);
	print_pcts("timer floor", &f);
	for (k = 0; k < nq; k++) {
		check_consumer(&cs[k], name[k]);
		d = pcts_of(late[k], cs[k].got);
		print_pcts(name[k], &d);
		check_bounds(name[k], &d, &f, gran[k]);
		dqt_queue_fini(&q[k]);
		free(due[k]);
		free(late[k]);
	}
	free(floor);
}

TEST_TIMEOUT(release_on_time_vs_floor, 240)
{
	static const uint64_t g[] = { FINE_G_NS };
	static const char *const name[] = { "dq release (50 us)" };

	timing_case(g, name, 1);
}

/*
 * A 20 ms-granularity queue on the same engine, its messages due all
 * around the fine queue's, does not make the fine one late.
 */
TEST_TIMEOUT(coarse_queue_does_not_delay_fine, 240)
{
	static const uint64_t g[] = { FINE_G_NS, COARSE_G_NS };
	static const char *const name[] = { "fine beside coarse", "coarse (20 ms)" };

	timing_case(g, name, 2);
}

TAP_MAIN()
