// SPDX-License-Identifier: LGPL-2.1 OR MIT
/*
 * dq_stress - randomized stress and fuzzing of /dev/dq.
 *
 * Many processes, each with several threads, run random scenarios until a
 * deadline: checked queues (every message tracked: never released early,
 * never twice, never after a successful cancel, payload untouched, counters
 * exact at the end), and abuse (garbage setups, garbage descriptors,
 * scribbled ring indices, wrong mmap offsets, sizes and protections, early
 * munmap, close and exit in the middle of DQ_IOC_WAIT and of a parked
 * io_uring WAIT, forks sharing a queue, cancel storms).  Every queue that
 * is quiesced at the end must satisfy
 *   submitted = released + cancelled + pending + backlog + paced.
 *
 * The run is bounded (-t) and seeded (-s; printed first).  The choice of
 * scenarios and their parameters follows from the seed; timing does not.
 * A violation is printed as it happens.  The run is one case of the TAP
 * harness (selftests/lib/tap.h): it fails on any violation or dead
 * worker, and on a hang (its timeout is SECONDS + 240 s, scaled by
 * $DQ_TIMEOUT_SCALE); the exit status is 1 if it failed.
 *
 * usage: dq_stress [-t SECONDS] [-s SEED] [-p PROCS] [-j THREADS] [-v]
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <linux/dq.h>
#include <linux/io_uring.h>

#include "dqtest.h"
#include "tap.h"

#define DEV		DQT_DEV_PATH
#define MSEC		1000000ULL
#define SEC		1000000000ULL
#define ARENA_CAP	(16U << 20)	/* largest arena a scenario asks for */

/* ------------------------------------------------------------ shared */

enum sc {
	SC_CHECKED, SC_SETUP_GARBAGE, SC_MMAP_ABUSE, SC_GARBAGE_DESC,
	SC_SCRIBBLE, SC_WAIT_CLOSE, SC_EXIT_IN_WAIT, SC_FORK_SHARE,
	SC_URING_EXIT, SC_CANCEL_STORM, SC_NR,
};

static const char *const sc_name[SC_NR] = {
	"checked", "setup_garbage", "mmap_abuse", "garbage_desc", "scribble",
	"wait_close", "exit_in_wait", "fork_share", "uring_exit",
	"cancel_storm",
};

/* Relative weights of the scenarios. */
static const unsigned int sc_weight[SC_NR] = {
	30, 8, 8, 10, 8, 6, 5, 6, 4, 8,
};

struct shared {
	atomic_ulong runs[SC_NR];
	atomic_ulong messages;		/* checked: released and verified */
	atomic_ulong ops;		/* ioctls and mmaps issued */
	atomic_ulong violations;
	atomic_ulong skipped_uring;
};

static struct shared *sh;
static uint64_t deadline_ns;
static int verbose;
static uint64_t page_size;

static __thread uint64_t rng_state;
static __thread const char *cur_sc = "main";

static uint64_t mix64(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebULL;
	x ^= x >> 31;
	return x;
}

static void rng_seed(uint64_t seed)
{
	rng_state = mix64(seed + 0x9e3779b97f4a7c15ULL) | 1;
}

static uint64_t rnd(void)
{
	return dqt_rand(&rng_state);	/* xorshift64*, per thread */
}

static uint64_t below(uint64_t n)
{
	return n ? rnd() % n : 0;
}

static bool chance(unsigned int percent)
{
	return below(100) < percent;
}

static void violation(int line, const char *fmt, ...)
{
	char buf[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	fprintf(stderr, "dq_stress: VIOLATION [pid %d tid %ld %s line %d]: %s\n",
		getpid(), (long)syscall(SYS_gettid), cur_sc, line, buf);
	atomic_fetch_add(&sh->violations, 1);
}

#define VIOL(...) violation(__LINE__, __VA_ARGS__)

static void vlog(const char *fmt, ...)
{
	va_list ap;

	if (!verbose)
		return;
	va_start(ap, fmt);
	fprintf(stderr, "dq_stress[%d]: ", getpid());
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

static bool time_left(uint64_t margin)
{
	return dqt_now_ns() + margin < deadline_ns;
}

static int xioctl(int fd, unsigned long req, void *arg)
{
	atomic_fetch_add(&sh->ops, 1);
	return ioctl(fd, req, arg) < 0 ? -errno : 0;
}

/* A dqtest call, counted as one of the ops. */
#define COUNTED(call) (atomic_fetch_add(&sh->ops, 1), (call))

static long xioctl_ret(int fd, unsigned long req, void *arg)
{
	long r;

	atomic_fetch_add(&sh->ops, 1);
	r = ioctl(fd, req, arg);
	return r < 0 ? -errno : r;
}

/* ------------------------------------------------------------ queues */

/*
 * Queues are the selftests' ring client (selftests/lib/dqtest.h), set up
 * here with the stress's own checks; the abuse scenarios still write raw
 * values into the rings where that is the point.
 */

static bool is_pow2(uint32_t x)
{
	return x && !(x & (x - 1));
}

/* A random valid setup with odd sizes; the arena stays under @cap. */
static void random_setup(struct dq_setup *s, uint32_t max_slots, size_t cap)
{
	memset(s, 0, sizeof(*s));
	switch (below(4)) {
	case 0: s->slot_count = 1 + below(3); break;
	case 1: s->slot_count = 1 + below(64); break;
	default: s->slot_count = 1 + below(max_slots); break;
	}
	s->slot_size = DQ_MIN_SLOT_SIZE + below(chance(20) ? 8192 : 256);
	while ((uint64_t)s->slot_count * ((s->slot_size + 63) & ~63U) > cap)
		s->slot_count = s->slot_count / 2 + 1;
	s->submit_entries = chance(30) ? 0 : 1 + below(2 * s->slot_count + 8);
	/* A ready ring smaller than the queue now and then: the backlog. */
	s->ready_entries = chance(30) ? 0 : 1 + below(2 * s->slot_count + 8);
	static const uint32_t gran[] = { 0, 1, 1000, 50000, 1000000 };
	s->granularity_ns = gran[below(5)];
	s->numa_node = chance(60) ? -1 : (int32_t)below(2);
}

/* The kernel's answer must be the request, rounded as documented. */
static void check_setup_out(const struct dq_setup *in, const struct dq_setup *out)
{
	if (out->abi_version != DQ_ABI_VERSION)
		VIOL("abi_version %u", out->abi_version);
	if (out->slot_count != in->slot_count)
		VIOL("slot_count %u -> %u", in->slot_count, out->slot_count);
	if (out->slot_size < in->slot_size || out->slot_size % 64 ||
	    out->slot_size - in->slot_size >= 64)
		VIOL("slot_size %u -> %u", in->slot_size, out->slot_size);
	if (!is_pow2(out->submit.ring_entries) ||
	    out->submit.ring_entries < in->submit_entries ||
	    (in->submit_entries && out->submit.ring_entries >= 2 * in->submit_entries &&
	     out->submit.ring_entries > 1))
		VIOL("submit_entries %u -> %u", in->submit_entries,
		     out->submit.ring_entries);
	if (!is_pow2(out->ready.ring_entries) ||
	    out->ready.ring_entries < in->ready_entries ||
	    (in->ready_entries && out->ready.ring_entries >= 2 * in->ready_entries &&
	     out->ready.ring_entries > 1))
		VIOL("ready_entries %u -> %u", in->ready_entries,
		     out->ready.ring_entries);
	if (out->arena_size < (uint64_t)out->slot_count * out->slot_size ||
	    out->arena_size % page_size)
		VIOL("arena_size %llu", (unsigned long long)out->arena_size);
	if (out->submit.entry_size != sizeof(struct dq_desc) ||
	    out->ready.entry_size != sizeof(struct dq_ready))
		VIOL("entry sizes %u %u", out->submit.entry_size,
		     out->ready.entry_size);
}

/* Open and set up; falls back to numa_node -1 when the node is missing. */
static int q_setup(struct dqt_queue *q, const struct dq_setup *req)
{
	int ret;

	memset(q, 0, sizeof(*q));
	q->fd = open(DEV, O_RDWR | O_CLOEXEC);
	if (q->fd < 0) {
		VIOL("open %s: %s", DEV, strerror(errno));
		return -errno;
	}
	q->setup = *req;
	ret = xioctl(q->fd, DQ_IOC_SETUP, &q->setup);
	if (ret == -EINVAL && req->numa_node >= 0) {
		q->setup = *req;
		q->setup.numa_node = -1;
		ret = xioctl(q->fd, DQ_IOC_SETUP, &q->setup);
	}
	if (ret) {
		if (ret != -ENOMEM)
			VIOL("valid setup failed: %s (slots %u size %u)",
			     strerror(-ret), req->slot_count, req->slot_size);
		close(q->fd);
		q->fd = -1;
		return ret;
	}
	{
		struct dq_setup in = *req;

		in.numa_node = q->setup.numa_node;
		check_setup_out(&in, &q->setup);
	}
	return 0;
}

static int q_map(struct dqt_queue *q)
{
	int ret = COUNTED(dqt_queue_map(q));

	atomic_fetch_add(&sh->ops, 2);	/* three mmaps */
	if (ret)
		VIOL("mmap of the queue failed: %s", strerror(-ret));
	return ret;
}

static long q_submit(struct dqt_queue *q, struct dq_reject *rej, uint32_t cap,
		     struct dq_submit *out)
{
	return COUNTED(dqt_submit(q, 0, rej, cap, out));
}

static int q_stats(struct dqt_queue *q, struct dq_queue_stats *st)
{
	return COUNTED(dqt_queue_stats(q, st));
}

/* The counter identity; only exact when the queue is quiet. */
static bool stats_add_up(const struct dq_queue_stats *st)
{
	return st->submitted == st->released + st->cancelled + st->pending +
				st->ready_backlog + st->paced;
}

static void print_stats(const char *why, const struct dq_queue_stats *st)
{
	VIOL("%s: submitted %llu released %llu cancelled %llu pending %llu "
	     "backlog %llu paced %llu ring_errors %llu", why,
	     (unsigned long long)st->submitted, (unsigned long long)st->released,
	     (unsigned long long)st->cancelled, (unsigned long long)st->pending,
	     (unsigned long long)st->ready_backlog,
	     (unsigned long long)st->paced,
	     (unsigned long long)st->ring_errors);
}

/*
 * Wait until nothing is pending, then consume whatever is ready (moving
 * the backlog with DQ_IOC_WAIT), and check the identity.  For queues
 * whose individual messages nobody tracks.  Only far-future messages may
 * stay pending; they are left for close() to drop.
 */
static void quiesce_and_check(struct dqt_queue *q, bool expect_empty)
{
	struct dq_queue_stats st, st2;
	uint64_t end = dqt_now_ns() + 20 * SEC;
	int same = 0;

	if (q_stats(q, &st))
		return;
	while (dqt_now_ns() < end) {
		COUNTED(dqt_wait(q, 1, 2 * MSEC));
		if (q->rq.map)
			dqt_ready_discard(q);
		if (q_stats(q, &st2))
			return;
		if (st2.ready_backlog == 0 && st2.paced == 0 &&
		    (!expect_empty || st2.pending == 0) &&
		    st2.pending == st.pending && st2.released == st.released &&
		    ++same >= 3)
			break;
		if (st2.pending != st.pending || st2.released != st.released)
			same = 0;
		st = st2;
		dqt_sleep_ns(2 * MSEC);
	}
	if (!stats_add_up(&st2))
		print_stats("counters do not add up", &st2);
	if (expect_empty && st2.pending)
		print_stats("messages stuck pending", &st2);
}

/* ------------------------------------------------ scenario: checked */

enum { S_FREE, S_HELD };

struct slot_track {
	uint8_t state;
	bool far;
	uint32_t gen;
	uint32_t len;
	uint64_t token;
	uint64_t due;		/* absolute due; 0 for a relative one */
	uint64_t due_min;	/* no release before this */
};

struct checked {
	struct dqt_queue q;
	struct slot_track *t;
	uint32_t *free_list;
	uint32_t nr_free;
	uint64_t seq;
	uint64_t submitted, released, cancelled;
	uint64_t max_due;
	atomic_bool stop;
};

static uint32_t take_free(struct checked *c)
{
	uint32_t k = below(c->nr_free);
	uint32_t slot = c->free_list[k];

	c->free_list[k] = c->free_list[--c->nr_free];
	return slot;
}

static void put_free(struct checked *c, uint32_t slot)
{
	c->free_list[c->nr_free++] = slot;
}

static void checked_submit(struct checked *c)
{
	struct dqt_queue *q = &c->q;
	uint32_t n = 1 + below(16), i;
	struct dq_reject rej[4];
	struct dq_submit out;
	uint64_t now = dqt_now_ns();
	long r;

	if (n > c->nr_free)
		n = c->nr_free;
	if (n > dqt_sq_space(q))
		n = dqt_sq_space(q);
	if (!n)
		return;
	for (i = 0; i < n; i++) {
		uint32_t slot = take_free(c);
		struct slot_track *t = &c->t[slot];
		struct dq_desc *d = dqt_sq_next(q, i);
		uint64_t delay;

		switch (below(10)) {
		case 0: delay = 0; break;		/* due now or past */
		case 1: delay = 3600 * SEC + below(SEC); break;
		default: delay = below(20 * MSEC); break;
		}
		t->far = delay >= 3600 * SEC;
		t->due_min = now + delay;
		t->gen++;
		t->token = ((uint64_t)getpid() << 40) ^ (++c->seq << 8) ^ slot;
		t->len = below(q->setup.slot_size + 1);
		/* The payload, in place: the kernel must never touch it. */
		memcpy(q->arena + (size_t)slot * q->setup.slot_size, &t->token, 8);
		memset(d, 0, sizeof(*d));
		d->slot = slot;
		d->gen = t->gen;
		d->len = t->len;
		d->user_data = t->token;
		if (chance(50)) {
			d->flags = DQ_DESC_F_RELATIVE;
			d->due_ns = delay;
			t->due = 0;	/* known once released: now + delay */
		} else {
			d->due_ns = chance(20) && delay == 0 ? now - below(SEC) : now + delay;
			t->due = d->due_ns;
		}
		t->state = S_HELD;
		if (now + delay > c->max_due && !t->far)
			c->max_due = now + delay;
	}
	dqt_sq_publish(q, n);
	r = q_submit(q, rej, 4, &out);
	if (r < 0) {
		VIOL("submit of %u valid descriptors: %s", n, strerror(-r));
		return;
	}
	if (out.accepted != n || out.rejected) {
		VIOL("submit: %u accepted, %u rejected of %u (first reason %u)",
		     out.accepted, out.rejected, n,
		     out.rejected ? rej[0].reason : 0);
	}
	c->submitted += out.accepted;
}

static void checked_consume(struct checked *c)
{
	struct dqt_queue *q = &c->q;
	uint32_t head;
	int i, n = dqt_ready_peek(q, &head);
	uint64_t seen_at = dqt_now_ns();

	if (n < 0) {
		VIOL("ready producer %u is more than %u ahead of consumer %u",
		     *q->rq.producer, q->rq.nr, head);
		return;
	}
	for (i = 0; i < n; i++) {
		struct dq_ready r = *dqt_rq_entry(q, head + (uint32_t)i);
		struct slot_track *t;
		uint64_t tok = 0;

		if (r.slot >= q->setup.slot_count) {
			VIOL("ready entry with slot %u of %u", r.slot,
			     q->setup.slot_count);
			continue;
		}
		t = &c->t[r.slot];
		if (t->state != S_HELD || r.user_data != t->token) {
			VIOL("ready entry for slot %u not held (state %u, "
			     "user_data %#llx, expected %#llx): duplicate or "
			     "after cancel", r.slot, t->state,
			     (unsigned long long)r.user_data,
			     (unsigned long long)t->token);
			continue;
		}
		/* Never before the due time this process recorded. */
		if (seen_at < (t->due ? t->due : t->due_min))
			VIOL("slot %u seen %llu ns before the due time it was "
			     "submitted with", r.slot,
			     (unsigned long long)((t->due ? t->due : t->due_min) -
						  seen_at));
		if (t->due && r.due_ns != t->due)
			VIOL("slot %u due %llu, submitted %llu", r.slot,
			     (unsigned long long)r.due_ns,
			     (unsigned long long)t->due);
		if (!t->due && r.due_ns < t->due_min)
			VIOL("slot %u relative due %llu, before submit + delay %llu",
			     r.slot, (unsigned long long)r.due_ns,
			     (unsigned long long)t->due_min);
		if (r.release_ns < r.due_ns)
			VIOL("slot %u released %llu ns early", r.slot,
			     (unsigned long long)(r.due_ns - r.release_ns));
		if (seen_at < r.due_ns)
			VIOL("slot %u seen %llu ns before its due time", r.slot,
			     (unsigned long long)(r.due_ns - seen_at));
		if (r.len != t->len)
			VIOL("slot %u len %u, submitted %u", r.slot, r.len,
			     t->len);
		memcpy(&tok, q->arena + (size_t)r.slot * q->setup.slot_size, 8);
		if (tok != t->token)
			VIOL("slot %u payload changed", r.slot);
		t->state = S_FREE;
		t->far = false;
		put_free(c, r.slot);
		c->released++;
		atomic_fetch_add(&sh->messages, 1);
	}
	dqt_ready_advance(q, (uint32_t)n);
}

static void checked_cancel(struct checked *c, bool far_only)
{
	struct dqt_queue *q = &c->q;
	uint32_t slot, tries;
	int r;

	for (tries = 0; tries < 8; tries++) {
		slot = below(q->setup.slot_count);
		if (c->t[slot].state == S_HELD && (!far_only || c->t[slot].far))
			break;
	}
	if (tries == 8)
		return;
	r = COUNTED(dqt_cancel(q, slot, c->t[slot].gen));
	if (r == 0) {
		c->t[slot].state = S_FREE;
		c->t[slot].far = false;
		put_free(c, slot);
		c->cancelled++;
	} else if (r != -EALREADY) {
		VIOL("cancel of held slot %u gen %u: %s", slot, c->t[slot].gen,
		     strerror(-r));
	}
}

/* A second thread only waits and polls: it must never disturb anything. */
static void *checked_waiter(void *arg)
{
	struct checked *c = arg;

	cur_sc = "checked-waiter";
	while (!atomic_load(&c->stop)) {
		struct pollfd p = { .fd = c->q.fd, .events = POLLIN };
		struct dq_queue_stats st;
		long r;

		r = COUNTED(dqt_wait(&c->q, 1, 3 * MSEC));
		if (r < 0 && r != -ETIME && r != -EINTR)
			VIOL("wait: %s", strerror(-r));
		if (poll(&p, 1, 1) < 0 && errno != EINTR)
			VIOL("poll: %s", strerror(errno));
		if (p.revents & POLLERR)
			VIOL("POLLERR on a healthy queue");
		if (q_stats(&c->q, &st) == 0 && st.ring_errors)
			VIOL("ring_errors %llu on a healthy queue",
			     (unsigned long long)st.ring_errors);
	}
	return NULL;
}

static void sc_checked(void)
{
	struct checked c;
	struct dq_setup req;
	struct dq_queue_stats st;
	pthread_t waiter;
	bool have_waiter = false, drain = chance(85);
	uint64_t until = dqt_now_ns() + 200 * MSEC + below(1200 * MSEC);
	uint32_t i;

	memset(&c, 0, sizeof(c));
	random_setup(&req, 512, 1U << 20);
	if (q_setup(&c.q, &req))
		return;
	if (q_map(&c.q))
		goto out;
	c.t = calloc(c.q.setup.slot_count, sizeof(*c.t));
	c.free_list = calloc(c.q.setup.slot_count, sizeof(*c.free_list));
	if (!c.t || !c.free_list)
		goto out;
	for (i = 0; i < c.q.setup.slot_count; i++)
		put_free(&c, i);
	if (chance(50) && !pthread_create(&waiter, NULL, checked_waiter, &c))
		have_waiter = true;

	while (dqt_now_ns() < until && time_left(2 * SEC)) {
		switch (below(10)) {
		case 0: case 1: case 2: case 3:
			checked_submit(&c);
			break;
		case 4: case 5: case 6:
			checked_consume(&c);
			break;
		case 7:
			checked_cancel(&c, false);
			break;
		case 8: {
			struct dq_wait w = {
				.min_ready = 1 + below(2),
				.timeout_ns = (int64_t)below(3 * MSEC),
			};
			long r;

			if (w.min_ready > c.q.rq.nr)
				w.min_ready = c.q.rq.nr;
			r = xioctl_ret(c.q.fd, DQ_IOC_WAIT, &w);
			if (r < 0 && r != -ETIME && r != -EINTR)
				VIOL("wait: %s", strerror(-r));
			break;
		}
		default:
			if (q_stats(&c.q, &st) == 0 &&
			    (st.submitted != c.submitted ||
			     st.cancelled != c.cancelled))
				VIOL("stats: submitted %llu (ours %llu), "
				     "cancelled %llu (ours %llu)",
				     (unsigned long long)st.submitted,
				     (unsigned long long)c.submitted,
				     (unsigned long long)st.cancelled,
				     (unsigned long long)c.cancelled);
			break;
		}
	}
	if (!drain)
		goto out;	/* close with messages pending */

	/* Drain: cancel the far ones, see every other one released. */
	for (i = 0; i < c.q.setup.slot_count; i++) {
		if (c.t[i].state == S_HELD && c.t[i].far) {
			int r = COUNTED(dqt_cancel(&c.q, i, c.t[i].gen));

			if (r == 0) {
				c.t[i].state = S_FREE;
				c.t[i].far = false;
				put_free(&c, i);
				c.cancelled++;
			} else {
				VIOL("cancel of far slot %u: %s", i, strerror(-r));
			}
		}
	}
	{
		uint64_t end = (c.max_due > dqt_now_ns() ? c.max_due : dqt_now_ns()) + 10 * SEC;

		while (c.nr_free < c.q.setup.slot_count && dqt_now_ns() < end) {
			COUNTED(dqt_wait(&c.q, 1, 5 * MSEC));
			checked_consume(&c);
		}
		if (c.nr_free < c.q.setup.slot_count)
			VIOL("%u messages never released (10 s past the last due time)",
			     c.q.setup.slot_count - c.nr_free);
	}
	atomic_store(&c.stop, true);
	if (have_waiter) {
		pthread_join(waiter, NULL);
		have_waiter = false;
	}
	if (q_stats(&c.q, &st) == 0) {
		if (!stats_add_up(&st) || st.pending || st.ready_backlog ||
		    st.paced || st.submitted != c.submitted ||
		    st.released != c.released || st.cancelled != c.cancelled ||
		    st.ring_errors)
			print_stats("checked queue, drained", &st);
		for (i = 0; i < DQ_REJ_MAX; i++)
			if (st.rejected[i])
				VIOL("rejected[%u] = %llu on valid input", i,
				     (unsigned long long)st.rejected[i]);
	}
out:
	atomic_store(&c.stop, true);
	if (have_waiter)
		pthread_join(waiter, NULL);
	dqt_queue_fini(&c.q);
	free(c.t);
	free(c.free_list);
}

/* ------------------------------------------------- scenario: setups */

static void sc_setup_garbage(void)
{
	struct dq_setup s;
	struct dq_submit sub = { 0 };
	struct dq_wait w = { .min_ready = 1 };
	struct dq_cancel cn = { 0 };
	struct dq_queue_stats st;
	void *m;
	int fd, r, i;

	fd = open(DEV, O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		VIOL("open: %s", strerror(errno));
		return;
	}
	/* Nothing works before setup. */
	if (xioctl(fd, DQ_IOC_SUBMIT, &sub) != -ENXIO ||
	    xioctl(fd, DQ_IOC_WAIT, &w) != -ENXIO ||
	    xioctl(fd, DQ_IOC_CANCEL, &cn) != -ENXIO ||
	    xioctl(fd, DQ_IOC_QUEUE_STATS, &st) != -ENXIO)
		VIOL("an ioctl before setup did not fail with ENXIO");
	m = mmap(NULL, page_size, PROT_READ, MAP_SHARED, fd, 0);
	if (m != MAP_FAILED) {
		VIOL("mmap before setup succeeded");
		munmap(m, page_size);
	}
	for (i = 0; i < 8; i++) {
		uint64_t arena;
		bool valid;

		memset(&s, 0, sizeof(s));
		if (chance(40)) {
			/* Pure garbage. */
			for (size_t k = 0; k < sizeof(s); k += 8) {
				uint64_t v = rnd();

				memcpy((char *)&s + k, &v, sizeof(s) - k < 8 ? sizeof(s) - k : 8);
			}
		} else {
			static const uint32_t edge[] = {
				0, 1, 63, 64, 65, 4095, 4096, 1U << 20,
				(1U << 20) + 1, 1U << 24, (1U << 24) + 1,
				0x80000000U, 0xffffffffU,
			};

			s.slot_count = edge[below(13)];
			s.slot_size = edge[below(13)];
			s.submit_entries = chance(50) ? edge[below(13)] : below(100);
			s.ready_entries = chance(50) ? edge[below(13)] : below(100);
			s.granularity_ns = chance(80) ? below(2000) :
					   (uint32_t)rnd();
			s.numa_node = chance(80) ? -1 : (int32_t)(below(8) - 3);
			if (chance(10))
				s.flags = 1U << below(32);
			if (chance(10))
				s.max_inflight = chance(50) ? 1 : DQ_MAX_SLOTS + 1;
			if (chance(10))
				s.visibility_ns = chance(50) ?
					DQ_MIN_VISIBILITY_NS - 1 : 1000000000ULL;
			if (chance(10)) {
				if (chance(33))
					s.instance = 1;
				else
					s.resv2[below(2)] = 1;
			}
		}
		/* Keep memory sane: big valid setups are shrunk. */
		arena = (uint64_t)s.slot_count * (((uint64_t)s.slot_size + 63) & ~63ULL);
		valid = !(s.flags & ~DQ_SETUP_F_ALL) &&
			(!s.max_inflight || ((s.flags & DQ_SETUP_F_TRACK) &&
					     s.max_inflight <= DQ_MAX_SLOTS)) &&
			(!s.visibility_ns ||
			 ((s.flags & DQ_SETUP_F_TRACK) &&
			  s.visibility_ns >= DQ_MIN_VISIBILITY_NS &&
			  s.visibility_ns <= DQ_MAX_DELAY_NS)) &&
			!s.instance && !s.resv2[0] && !s.resv2[1] &&
			s.slot_count &&
			s.slot_count <= DQ_MAX_SLOTS &&
			s.slot_size >= DQ_MIN_SLOT_SIZE &&
			s.slot_size <= DQ_MAX_SLOT_SIZE &&
			s.submit_entries <= DQ_MAX_RING_ENTRIES &&
			s.ready_entries <= DQ_MAX_RING_ENTRIES &&
			s.granularity_ns <= DQ_MAX_GRANULARITY_NS &&
			s.numa_node >= -1;
		if (valid && (arena > ARENA_CAP || s.slot_count > 65536 ||
			      s.submit_entries > 65536 || s.ready_entries > 65536))
			continue;
		r = xioctl(fd, DQ_IOC_SETUP, &s);
		if (r == 0) {
			if (!valid)
				VIOL("invalid setup accepted (flags %#x slots %u "
				     "size %u sq %u rq %u gran %u node %d)",
				     s.flags, s.slot_count, s.slot_size,
				     s.submit_entries, s.ready_entries,
				     s.granularity_ns, s.numa_node);
			/* A second setup on the same file is refused. */
			r = xioctl(fd, DQ_IOC_SETUP, &s);
			if (r != -EBUSY)
				VIOL("second setup: %d, expected EBUSY", r);
			break;
		}
		if (valid && s.numa_node <= 0 && r != -ENOMEM)
			VIOL("valid setup refused: %s (slots %u size %u sq %u "
			     "rq %u gran %u)", strerror(-r), s.slot_count,
			     s.slot_size, s.submit_entries, s.ready_entries,
			     s.granularity_ns);
		if (r != -EINVAL && r != -E2BIG && r != -ENOMEM && r != -EFAULT)
			VIOL("setup failed with unexpected %s", strerror(-r));
	}
	close(fd);
}

/* --------------------------------------------- scenario: mmap abuse */

static void expect_map_fails(struct dqt_queue *q, size_t len, int prot, int flags,
			     uint64_t off, const char *what)
{
	void *m;

	atomic_fetch_add(&sh->ops, 1);
	m = mmap(NULL, len, prot, flags, q->fd, off);
	if (m != MAP_FAILED) {
		VIOL("mmap %s succeeded (len %zu prot %#x off %#llx)", what,
		     len, prot, (unsigned long long)off);
		munmap(m, len);
	}
}

static void sc_mmap_abuse(void)
{
	struct dq_setup req;
	struct dqt_queue q;
	void *m, *m2;
	uint64_t off;
	size_t len;
	int k;

	random_setup(&req, 256, 1U << 20);
	if (q_setup(&q, &req))
		return;
	for (k = 0; k < 12; k++) {
		static const uint64_t offs[] = {
			DQ_OFF_SUBMIT_RING, DQ_OFF_READY_RING, DQ_OFF_ARENA,
		};
		uint64_t sizes[] = {
			q.setup.submit.map_size, q.setup.ready.map_size, q.setup.arena_size,
		};
		unsigned int which = below(3);

		switch (below(7)) {
		case 0:	/* an offset that names no region */
			do {
				off = below(0x40000) * page_size;
			} while (off == DQ_OFF_SUBMIT_RING ||
				 off == DQ_OFF_READY_RING || off == DQ_OFF_ARENA);
			expect_map_fails(&q, page_size, PROT_READ, MAP_SHARED,
					 off, "at a wrong offset");
			break;
		case 1:	/* inside a region, not at its start */
			expect_map_fails(&q, page_size, PROT_READ, MAP_SHARED,
					 offs[which] + page_size * (1 + below(4)),
					 "inside a region");
			break;
		case 2:	/* larger than the region */
			expect_map_fails(&q, sizes[which] + page_size * (1 + below(3)),
					 PROT_READ | PROT_WRITE, MAP_SHARED,
					 offs[which], "larger than its region");
			break;
		case 3:	/* executable */
			expect_map_fails(&q, sizes[which], PROT_READ | PROT_EXEC,
					 MAP_SHARED, offs[which], "with PROT_EXEC");
			break;
		case 4:	/* valid, maybe partial; then mprotect/mremap */
			len = page_size * (1 + below(sizes[which] / page_size));
			/* MAP_PRIVATE is refused (docs/api.md: EINVAL). */
			if (chance(30)) {
				expect_map_fails(&q, len, PROT_READ, MAP_PRIVATE,
						 offs[which], "MAP_PRIVATE");
				break;
			}
			atomic_fetch_add(&sh->ops, 1);
			m = mmap(NULL, len, chance(50) ? PROT_READ : PROT_READ | PROT_WRITE,
				 MAP_SHARED, q.fd, offs[which]);
			if (m == MAP_FAILED) {
				VIOL("valid mmap of %zu bytes at %#llx: %s", len,
				     (unsigned long long)offs[which], strerror(errno));
				break;
			}
			if (mprotect(m, len, PROT_READ | PROT_EXEC) == 0)
				VIOL("mprotect(PROT_EXEC) of a dq mapping succeeded");
			m2 = mremap(m, len, len + page_size, MREMAP_MAYMOVE);
			if (m2 != MAP_FAILED) {
				VIOL("mremap grew a dq mapping");
				m = m2;
				len += page_size;
			}
			/* Touch it all. */
			for (size_t i = 0; i < len; i += page_size)
				(void)*(volatile char *)((char *)m + i);
			munmap(m, len);
			break;
		case 5:	/* two mappings of one ring see the same memory */
			atomic_fetch_add(&sh->ops, 2);
			m = mmap(NULL, q.setup.ready.map_size, PROT_READ | PROT_WRITE,
				 MAP_SHARED, q.fd, DQ_OFF_READY_RING);
			m2 = mmap(NULL, q.setup.ready.map_size, PROT_READ | PROT_WRITE,
				  MAP_SHARED, q.fd, DQ_OFF_READY_RING);
			if (m == MAP_FAILED || m2 == MAP_FAILED) {
				VIOL("double mmap failed");
			} else {
				uint32_t *a = (uint32_t *)((char *)m + q.setup.ready.consumer);
				uint32_t *b = (uint32_t *)((char *)m2 + q.setup.ready.consumer);
				uint32_t v = *a;

				*a = v + 1;
				if (*b != v + 1)
					VIOL("two mappings of the ready ring differ");
				*a = v;
			}
			if (m != MAP_FAILED)
				munmap(m, q.setup.ready.map_size);
			if (m2 != MAP_FAILED)
				munmap(m2, q.setup.ready.map_size);
			break;
		default: /* map everything, unmap early, keep using the fd */
			if (q_map(&q))
				break;
			{
				struct dq_desc d = {
					.due_ns = 1 + below(5 * MSEC),
					.flags = DQ_DESC_F_RELATIVE,
					.slot = below(q.setup.slot_count),
					.gen = 1,
				};
				/* at the kernel's consumer, whatever ours says */
				uint32_t cons = dqt_load_acq(q.sq.consumer);

				*dqt_sq_entry(&q, cons) = d;
				dqt_store_rel(q.sq.producer, cons + 1);
				q_submit(&q, NULL, 0, NULL);
			}
			dqt_queue_unmap(&q);
			{
				struct dq_submit sub = { 0 };
				struct dq_wait w = { .min_ready = 1, .timeout_ns = MSEC };

				xioctl_ret(q.fd, DQ_IOC_SUBMIT, &sub);
				xioctl_ret(q.fd, DQ_IOC_WAIT, &w);
			}
			break;
		}
	}
	if (chance(50)) {
		/* The mapping outlives the file: the queue must too. */
		if (!q_map(&q)) {
			close(q.fd);
			q.fd = -1;
			for (size_t i = 0; i < q.arena_size; i += page_size)
				q.arena[i] = 0x5a;
			*q.rq.consumer = *q.rq.producer;
		}
	}
	dqt_queue_fini(&q);
}

/* ----------------------------------------- scenario: garbage descriptors */

static const int reject_errno[DQ_REJ_NR] = {
	[DQ_REJ_SLOT] = -ERANGE,
	[DQ_REJ_LEN] = -EMSGSIZE,
	[DQ_REJ_FLAGS] = -EOPNOTSUPP,
	[DQ_REJ_RESV] = -EINVAL,
	[DQ_REJ_TIME] = -EOVERFLOW,
	[DQ_REJ_BUSY] = -EBUSY,
	[DQ_REJ_FULL] = -ENOSPC,
};

static void random_desc(struct dqt_queue *q, struct dq_desc *d)
{
	uint64_t now = dqt_now_ns();

	if (chance(30)) {
		uint64_t raw[4] = { rnd(), rnd(), rnd(), rnd() };

		memcpy(d, raw, sizeof(*d));
		return;
	}
	memset(d, 0, sizeof(*d));
	d->slot = chance(85) ? below(q->setup.slot_count) :
		  q->setup.slot_count + (uint32_t)below(3);
	d->len = chance(90) ? below(q->setup.slot_size + 1) : q->setup.slot_size + 1 + below(100);
	d->gen = rnd();
	d->user_data = rnd();
	if (chance(5))
		d->flags = 1U << below(16);
	if (chance(5))
		d->resv = 1 + below(0xffff);
	switch (below(6)) {
	case 0: d->due_ns = rnd(); break;
	case 1: d->due_ns = now + DQ_MAX_DELAY_NS + below(3); break;
	case 2: d->flags |= DQ_DESC_F_RELATIVE; d->due_ns = DQ_MAX_DELAY_NS - 1 + below(3); break;
	case 3: d->due_ns = now - below(SEC); break;
	default: d->due_ns = now + below(10 * MSEC); break;
	}
}

static void sc_garbage_desc(void)
{
	struct dq_setup req;
	struct dq_reject rej[64];
	struct dq_submit out;
	struct dq_queue_stats st0, st;
	struct dqt_queue q;
	int round;

	random_setup(&req, 256, 1U << 20);
	if (q_setup(&q, &req) || q_map(&q))
		goto out;
	for (round = 0; round < 6; round++) {
		uint32_t n = below(dqt_sq_space(&q) + 1), i;
		uint64_t rejsum = 0;
		long r;

		for (i = 0; i < n; i++)
			random_desc(&q, dqt_sq_next(&q, i));
		dqt_sq_publish(&q, n);
		if (q_stats(&q, &st0))
			break;
		r = q_submit(&q, rej, 64, &out);
		if (r < 0) {
			VIOL("submit of garbage: %s", strerror(-r));
			break;
		}
		if (out.accepted + out.rejected != n)
			VIOL("%u accepted + %u rejected != %u consumed",
			     out.accepted, out.rejected, n);
		if (dqt_load_acq(q.sq.consumer) != *q.sq.producer)
			VIOL("submit consumer %u, producer %u",
			     *q.sq.consumer, *q.sq.producer);
		for (i = 0; i < out.rejected && i < 64; i++) {
			if (rej[i].reason >= DQ_REJ_NR ||
			    rej[i].error != reject_errno[rej[i].reason])
				VIOL("reject %u: reason %u error %d", i,
				     rej[i].reason, rej[i].error);
		}
		if (q_stats(&q, &st))
			break;
		for (i = 0; i < DQ_REJ_MAX; i++)
			rejsum += st.rejected[i] - st0.rejected[i];
		if (rejsum != out.rejected ||
		    st.submitted - st0.submitted != out.accepted)
			VIOL("stats: %llu rejected, %llu submitted; ioctl said "
			     "%u, %u", (unsigned long long)rejsum,
			     (unsigned long long)(st.submitted - st0.submitted),
			     out.rejected, out.accepted);
		/* Random cancels of random handles. */
		for (i = 0; i < 4; i++) {
			struct dq_cancel cn = {
				.handle = chance(50) ? rnd() :
					  DQ_HANDLE(below(q.setup.slot_count), rnd()),
				.resv = chance(10),
			};
			int cr = xioctl(q.fd, DQ_IOC_CANCEL, &cn);

			if (cr && cr != -ENOENT && cr != -EALREADY && cr != -EINVAL)
				VIOL("cancel of garbage: %s", strerror(-cr));
		}
		/* Consume what is ready, without looking. */
		dqt_ready_discard(&q);
	}
	/* Garbage due times may be hours out: only check the identity. */
	if (chance(60))
		quiesce_and_check(&q, false);
out:
	dqt_queue_fini(&q);
}

/* ------------------------------------------- scenario: scribbled indices */

static void sc_scribble(void)
{
	struct dq_setup req;
	struct dq_queue_stats st;
	struct dqt_queue q;
	uint32_t i;
	int round;

	random_setup(&req, 128, 1U << 20);
	if (q_setup(&q, &req) || q_map(&q))
		goto out;
	for (round = 0; round < 8; round++) {
		uint32_t *targets[] = {
			q.sq.producer, q.sq.consumer, q.sq.flags,
			q.rq.producer, q.rq.consumer, q.rq.flags,
		};
		uint32_t *t = targets[below(6)];
		struct pollfd p = { .fd = q.fd, .events = POLLIN };
		struct dq_wait w = { .min_ready = 1 + below(q.rq.nr), .timeout_ns = MSEC };
		long r;

		switch (below(4)) {
		case 0: *t = (uint32_t)rnd(); break;
		case 1: *t += q.sq.nr + 1 + below(5); break;
		case 2: *t -= 1 + below(3); break;
		default: *t = 0xffffffffU - below(3); break;
		}
		r = q_submit(&q, NULL, 0, NULL);
		if (r < 0 && r != -EPROTO)
			VIOL("submit with scribbled indices: %s", strerror(-r));
		r = xioctl_ret(q.fd, DQ_IOC_WAIT, &w);
		if (r < 0 && r != -EPROTO && r != -ETIME && r != -EINVAL)
			VIOL("wait with scribbled indices: %s", strerror(-r));
		poll(&p, 1, 0);
	}
	/* Whatever state that left: teardown copes.  A fresh queue works. */
	dqt_queue_fini(&q);
	random_setup(&req, 16, 1U << 16);
	if (q_setup(&q, &req) || q_map(&q))
		goto out;
	for (i = 0; i < q.setup.slot_count && i < q.sq.nr; i++) {
		struct dq_desc d = {
			.due_ns = below(MSEC), .flags = DQ_DESC_F_RELATIVE,
			.slot = i, .gen = 1,
		};

		*dqt_sq_next(&q, i) = d;
	}
	dqt_sq_publish(&q, i);
	if (q_submit(&q, NULL, 0, NULL) != (long)i)
		VIOL("fresh queue after scribbling: submit failed");
	quiesce_and_check(&q, true);
	if (q_stats(&q, &st) == 0 && st.released != i)
		VIOL("fresh queue: %llu released of %u",
		     (unsigned long long)st.released, i);
out:
	dqt_queue_fini(&q);
}

/* ------------------------------------------ scenario: close during WAIT */

struct waitarg {
	int fd;
	int64_t timeout;
	uint32_t min_ready;
	long ret;
};

static void *wait_thread(void *arg)
{
	struct waitarg *a = arg;
	struct dq_wait w = { .min_ready = a->min_ready, .timeout_ns = a->timeout };

	cur_sc = "waiter";
	a->ret = xioctl_ret(a->fd, DQ_IOC_WAIT, &w);
	return NULL;
}

/* Submit @n messages relative @delay..+spread to slots 0..n-1. */
static void submit_some(struct dqt_queue *q, uint32_t n, uint64_t delay, uint64_t spread)
{
	uint32_t i;

	if (n > q->setup.slot_count)
		n = q->setup.slot_count;
	if (n > dqt_sq_space(q))
		n = dqt_sq_space(q);
	for (i = 0; i < n; i++) {
		struct dq_desc d = {
			.due_ns = delay + below(spread + 1),
			.flags = DQ_DESC_F_RELATIVE,
			.slot = i, .gen = 1, .user_data = i,
		};

		*dqt_sq_next(q, i) = d;
	}
	dqt_sq_publish(q, n);
	q_submit(q, NULL, 0, NULL);
}

static void sc_wait_close(void)
{
	struct dq_setup req;
	struct waitarg a[3];
	pthread_t th[3];
	bool started[3] = { false };
	struct dqt_queue q;
	int i, nth = 1 + below(3);

	random_setup(&req, 64, 1U << 18);
	if (q_setup(&q, &req))
		return;
	if (chance(70) && !q_map(&q))
		submit_some(&q, 1 + below(8), below(5 * MSEC), 20 * MSEC);
	for (i = 0; i < nth; i++) {
		a[i].fd = q.fd;
		a[i].timeout = chance(20) ? 0 : (int64_t)(50 * MSEC + below(200 * MSEC));
		a[i].min_ready = q.setup.ready.ring_entries;
		a[i].ret = 0;
		started[i] = !pthread_create(&th[i], NULL, wait_thread, &a[i]);
	}
	dqt_sleep_ns(below(40 * MSEC));
	/* close() under a sleeping ioctl: the ioctl keeps the file alive. */
	if (chance(50))
		dqt_queue_unmap(&q);
	close(q.fd);
	q.fd = -1;
	for (i = 0; i < nth; i++) {
		if (!started[i])
			continue;
		/*
		 * Any result is fine (the fd number may even have been
		 * reused by another thread by the time the ioctl ran); the
		 * point is that the waiter comes back and nothing splats.
		 */
		pthread_join(th[i], NULL);
	}
	dqt_queue_fini(&q);
}

/* ---------------------------------------- scenario: exit inside WAIT */

static bool reap_child(pid_t pid, uint64_t limit_ns, int *status)
{
	uint64_t end = dqt_now_ns() + limit_ns;

	while (dqt_now_ns() < end) {
		pid_t r = waitpid(pid, status, WNOHANG);

		if (r == pid)
			return true;
		if (r < 0 && errno != EINTR)
			return true;
		dqt_sleep_ns(5 * MSEC);
	}
	return false;
}

static void child_exit_in_wait(void)
{
	struct dq_setup req;
	struct waitarg a = { .timeout = -1 };
	pthread_t th;
	struct dqt_queue q;

	random_setup(&req, 64, 1U << 18);
	if (q_setup(&q, &req) || q_map(&q))
		_exit(1);
	submit_some(&q, 1 + below(16), below(2 * MSEC), chance(50) ? 3600 * SEC : 10 * MSEC);
	a.fd = q.fd;
	a.min_ready = q.setup.ready.ring_entries;
	pthread_create(&th, NULL, wait_thread, &a);
	dqt_sleep_ns(below(30 * MSEC));
	/* exit_group() with a thread asleep in DQ_IOC_WAIT. */
	_exit(0);
}

static void sc_exit_in_wait(void)
{
	int status;
	pid_t pid = fork();

	if (pid < 0)
		return;
	if (pid == 0) {
		cur_sc = "exit_in_wait-child";
		rng_seed(rnd() ^ (uint64_t)getpid());
		if (chance(50)) {
			child_exit_in_wait();
		} else {
			/* Killed by the parent at a random moment instead. */
			struct dq_setup req;
			struct dq_wait w = { .min_ready = 1, .timeout_ns = -1 };
			struct dqt_queue q;

			random_setup(&req, 32, 1U << 16);
			req.ready_entries = 0;
			if (q_setup(&q, &req) || q_map(&q))
				_exit(1);
			submit_some(&q, 4, 3600 * SEC, SEC);
			w.min_ready = q.setup.ready.ring_entries;
			xioctl_ret(q.fd, DQ_IOC_WAIT, &w);
			_exit(0);
		}
	}
	dqt_sleep_ns(below(60 * MSEC));
	kill(pid, SIGKILL);
	if (!reap_child(pid, 20 * SEC, &status)) {
		VIOL("child %d did not die within 20 s of SIGKILL (stuck in DQ_IOC_WAIT?)",
		     pid);
		waitpid(pid, &status, 0);
	}
}

/* ------------------------------------- scenario: fork sharing a queue */

static void sc_fork_share(void)
{
	struct dq_setup req;
	struct dqt_queue q;
	pid_t pid;
	int status;

	random_setup(&req, 128, 1U << 19);
	if (q_setup(&q, &req) || q_map(&q))
		goto out;
	pid = fork();
	if (pid < 0)
		goto out;
	if (pid == 0) {
		/* The child uses the parent's queue through the inherited fd. */
		cur_sc = "fork_share-child";
		rng_seed(rnd() ^ (uint64_t)getpid());
		submit_some(&q, 1 + below(q.setup.slot_count), 0, 10 * MSEC);
		if (chance(50)) {
			struct dq_wait w = {
				.min_ready = q.setup.ready.ring_entries,
				.timeout_ns = (int64_t)below(20 * MSEC),
			};

			xioctl_ret(q.fd, DQ_IOC_WAIT, &w);
		}
		_exit(0);
	}
	if (chance(30)) {
		dqt_sleep_ns(below(10 * MSEC));
		kill(pid, SIGKILL);
	}
	if (!reap_child(pid, 20 * SEC, &status)) {
		VIOL("fork_share child %d stuck", pid);
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
	}
	/*
	 * A child killed between writing descriptors and submitting leaves
	 * them on the ring: submit them now, the identity must hold after.
	 */
	q_submit(&q, NULL, 0, NULL);
	quiesce_and_check(&q, true);
out:
	dqt_queue_fini(&q);
}

/* --------------------------- scenario: exit with a parked io_uring WAIT */

struct uring {
	int fd;
	void *sq_ring, *cq_ring;
	struct io_uring_sqe *sqes;
	size_t sq_len, cq_len, sqes_len;
	uint32_t *sq_tail, *sq_mask, *sq_array, *cq_head, *cq_tail, *cq_mask;
	struct io_uring_cqe *cqes;
};

static int uring_init(struct uring *u, unsigned int entries)
{
	struct io_uring_params p;

	memset(&p, 0, sizeof(p));
	memset(u, 0, sizeof(*u));
	u->fd = syscall(__NR_io_uring_setup, entries, &p);
	if (u->fd < 0)
		return -errno;
	u->sq_len = p.sq_off.array + p.sq_entries * sizeof(uint32_t);
	u->cq_len = p.cq_off.cqes + p.cq_entries * sizeof(struct io_uring_cqe);
	u->sqes_len = p.sq_entries * sizeof(struct io_uring_sqe);
	u->sq_ring = mmap(NULL, u->sq_len, PROT_READ | PROT_WRITE, MAP_SHARED,
			  u->fd, IORING_OFF_SQ_RING);
	u->cq_ring = mmap(NULL, u->cq_len, PROT_READ | PROT_WRITE, MAP_SHARED,
			  u->fd, IORING_OFF_CQ_RING);
	u->sqes = mmap(NULL, u->sqes_len, PROT_READ | PROT_WRITE, MAP_SHARED,
		       u->fd, IORING_OFF_SQES);
	if (u->sq_ring == MAP_FAILED || u->cq_ring == MAP_FAILED ||
	    u->sqes == MAP_FAILED) {
		close(u->fd);
		return -ENOMEM;
	}
	u->sq_tail = (uint32_t *)((char *)u->sq_ring + p.sq_off.tail);
	u->sq_mask = (uint32_t *)((char *)u->sq_ring + p.sq_off.ring_mask);
	u->sq_array = (uint32_t *)((char *)u->sq_ring + p.sq_off.array);
	u->cq_head = (uint32_t *)((char *)u->cq_ring + p.cq_off.head);
	u->cq_tail = (uint32_t *)((char *)u->cq_ring + p.cq_off.tail);
	u->cq_mask = (uint32_t *)((char *)u->cq_ring + p.cq_off.ring_mask);
	u->cqes = (struct io_uring_cqe *)((char *)u->cq_ring + p.cq_off.cqes);
	return 0;
}

static void uring_push_cmd(struct uring *u, int fd, uint32_t op,
			   const void *payload, size_t len, uint64_t data)
{
	uint32_t tail = *u->sq_tail, idx = tail & *u->sq_mask;
	struct io_uring_sqe *sqe = &u->sqes[idx];

	memset(sqe, 0, sizeof(*sqe));
	sqe->opcode = IORING_OP_URING_CMD;
	sqe->fd = fd;
	sqe->cmd_op = op;
	sqe->user_data = data;
	memcpy(sqe->cmd, payload, len);
	u->sq_array[idx] = idx;
	__atomic_store_n(u->sq_tail, tail + 1, __ATOMIC_RELEASE);
}

static void child_uring(void)
{
	struct dq_setup req;
	struct uring u;
	struct dqt_queue q;
	struct dq_wait w = { .timeout_ns = 10 * SEC };
	struct dq_cancel cn = { .handle = DQ_HANDLE(0, 1) };
	int r, n = 1 + below(3), i;

	random_setup(&req, 32, 1U << 16);
	if (q_setup(&q, &req) || q_map(&q))
		_exit(1);
	r = uring_init(&u, 8);
	if (r)
		_exit(r == -ENOSYS || r == -EPERM ? 3 : 1);
	submit_some(&q, 1 + below(4), chance(50) ? 3600 * SEC : MSEC, MSEC);
	w.min_ready = q.setup.ready.ring_entries;
	for (i = 0; i < n; i++)
		uring_push_cmd(&u, q.fd, DQ_URING_CMD_WAIT, &w, sizeof(w), i);
	if (chance(50))
		uring_push_cmd(&u, q.fd, DQ_URING_CMD_CANCEL, &cn, sizeof(cn), 99);
	atomic_fetch_add(&sh->ops, 1);
	r = syscall(__NR_io_uring_enter, u.fd, n + 1, 0, 0, NULL, 0);
	if (r < 0 && errno != EBUSY)
		_exit(1);
	dqt_sleep_ns(below(20 * MSEC));
	switch (below(3)) {
	case 0: /* the ring goes first, the queue after */
		close(u.fd);
		close(q.fd);
		break;
	case 1: /* the queue's file goes first: parked WAITs hold it */
		dqt_queue_unmap(&q);
		close(q.fd);
		break;
	default: /* just exit with everything open */
		break;
	}
	_exit(0);
}

static void sc_uring_exit(void)
{
	int status;
	pid_t pid = fork();

	if (pid < 0)
		return;
	if (pid == 0) {
		cur_sc = "uring_exit-child";
		rng_seed(rnd() ^ (uint64_t)getpid());
		child_uring();
	}
	if (chance(30)) {
		dqt_sleep_ns(below(30 * MSEC));
		kill(pid, SIGKILL);
	}
	/*
	 * Before 6.7 a parked WAIT ends by itself within
	 * DQ_URING_MAX_PARK_NS; exit waits for it.  Allow that and more.
	 */
	if (!reap_child(pid, 20 * SEC + DQ_URING_MAX_PARK_NS, &status)) {
		VIOL("io_uring child %d did not exit in %llu s", pid,
		     (unsigned long long)(20 + DQ_URING_MAX_PARK_NS / SEC));
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
	} else if (WIFEXITED(status) && WEXITSTATUS(status) == 3) {
		atomic_fetch_add(&sh->skipped_uring, 1);
	} else if (WIFEXITED(status) && WEXITSTATUS(status) != 0) {
		VIOL("io_uring child failed (exit %d)", WEXITSTATUS(status));
	}
}

/* --------------------------------------- scenario: cancel storm */

struct storm {
	struct dqt_queue q;
	atomic_bool stop;
	atomic_ulong cancelled_ok;
	uint32_t gens[4096];
};

static void *storm_canceller(void *arg)
{
	struct storm *s = arg;

	cur_sc = "cancel_storm-canceller";
	while (!atomic_load(&s->stop)) {
		uint32_t slot = below(s->q.setup.slot_count + 2);
		struct dq_cancel cn = {
			.handle = DQ_HANDLE(slot, slot < 4096 ? s->gens[slot % 4096] : 0),
		};
		int r = xioctl(s->q.fd, DQ_IOC_CANCEL, &cn);

		if (r == 0)
			atomic_fetch_add(&s->cancelled_ok, 1);
		else if (r != -ENOENT && r != -EALREADY)
			VIOL("cancel: %s", strerror(-r));
	}
	return NULL;
}

static void sc_cancel_storm(void)
{
	struct dq_setup req;
	struct dq_queue_stats st;
	struct storm *s = calloc(1, sizeof(*s));
	pthread_t th[2];
	int nth = 1 + below(2), i, started = 0;
	uint64_t until = dqt_now_ns() + 100 * MSEC + below(400 * MSEC);

	if (!s)
		return;
	random_setup(&req, 1024, 1U << 20);
	if (req.slot_count > 4096)
		req.slot_count = 4096;
	if (q_setup(&s->q, &req) || q_map(&s->q))
		goto out;
	for (i = 0; i < nth; i++)
		if (!pthread_create(&th[i], NULL, storm_canceller, s))
			started++;
	while (dqt_now_ns() < until && time_left(SEC)) {
		/*
		 * Resubmit every slot: busy ones are rejected (EBUSY), free
		 * ones come back with a new generation.
		 */
		uint32_t n = dqt_sq_space(&s->q), k;

		for (k = 0; k < n; k++) {
			uint32_t slot = below(s->q.setup.slot_count);
			struct dq_desc d = {
				.due_ns = chance(70) ? 3600 * SEC : below(5 * MSEC),
				.flags = DQ_DESC_F_RELATIVE,
				.slot = slot,
				.gen = __atomic_add_fetch(&s->gens[slot % 4096], 0, __ATOMIC_RELAXED),
			};

			if (chance(20))
				__atomic_store_n(&s->gens[slot % 4096], d.gen + 1,
						 __ATOMIC_RELAXED);
			*dqt_sq_next(&s->q, k) = d;
		}
		dqt_sq_publish(&s->q, n);
		q_submit(&s->q, NULL, 0, NULL);
		dqt_ready_discard(&s->q);
	}
	atomic_store(&s->stop, true);
	for (i = 0; i < started; i++)
		pthread_join(th[i], NULL);
	if (q_stats(&s->q, &st) == 0 && st.cancelled != atomic_load(&s->cancelled_ok))
		VIOL("cancelled %llu, successful cancels %lu",
		     (unsigned long long)st.cancelled,
		     atomic_load(&s->cancelled_ok));
	quiesce_and_check(&s->q, false);
out:
	dqt_queue_fini(&s->q);
	free(s);
}

/* ------------------------------------------------------------ driver */

static void run_scenario(enum sc sc)
{
	cur_sc = sc_name[sc];
	atomic_fetch_add(&sh->runs[sc], 1);
	vlog("%s", sc_name[sc]);
	switch (sc) {
	case SC_CHECKED: sc_checked(); break;
	case SC_SETUP_GARBAGE: sc_setup_garbage(); break;
	case SC_MMAP_ABUSE: sc_mmap_abuse(); break;
	case SC_GARBAGE_DESC: sc_garbage_desc(); break;
	case SC_SCRIBBLE: sc_scribble(); break;
	case SC_WAIT_CLOSE: sc_wait_close(); break;
	case SC_EXIT_IN_WAIT: sc_exit_in_wait(); break;
	case SC_FORK_SHARE: sc_fork_share(); break;
	case SC_URING_EXIT: sc_uring_exit(); break;
	case SC_CANCEL_STORM: sc_cancel_storm(); break;
	default: break;
	}
}

static enum sc pick_scenario(void)
{
	unsigned int total = 0, i, x;

	for (i = 0; i < SC_NR; i++)
		total += sc_weight[i];
	x = below(total);
	for (i = 0; i < SC_NR; i++) {
		if (x < sc_weight[i])
			return i;
		x -= sc_weight[i];
	}
	return SC_CHECKED;
}

struct worker {
	uint64_t seed;
	pthread_t th;
};

static void *worker_thread(void *arg)
{
	struct worker *w = arg;

	rng_seed(w->seed);
	while (time_left(500 * MSEC))
		run_scenario(pick_scenario());
	return NULL;
}

static void worker_process(uint64_t seed, int nthreads)
{
	struct worker *w = calloc(nthreads, sizeof(*w));
	int i;

	if (!w)
		_exit(1);
	for (i = 0; i < nthreads; i++) {
		w[i].seed = mix64(seed + i);
		if (pthread_create(&w[i].th, NULL, worker_thread, &w[i]))
			_exit(1);
	}
	for (i = 0; i < nthreads; i++)
		pthread_join(w[i].th, NULL);
	_exit(0);
}

static uint64_t seed, secs = 20;
static int procs = 4, threads = 3;

static void stress_run(void *arg)
{
	int i, bad_exit = 0;
	pid_t *pids;
	unsigned long total_runs = 0;

	(void)arg;
	DIAG("dq_stress: seed=%llu time=%llus procs=%d threads=%d",
	       (unsigned long long)seed, (unsigned long long)secs, procs, threads);
	DIAG("dq_stress: reproduce with: dq_stress -s %llu -t %llu -p %d -j %d",
	       (unsigned long long)seed, (unsigned long long)secs, procs, threads);

	page_size = sysconf(_SC_PAGESIZE);
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED) {
		FAIL("mmap: %s", strerror(errno));
		return;
	}
	memset(sh, 0, sizeof(*sh));
	if (access(DEV, R_OK | W_OK)) {
		FAIL("%s: %s (is dq.ko loaded?)", DEV, strerror(errno));
		return;
	}
	signal(SIGPIPE, SIG_IGN);
	deadline_ns = dqt_now_ns() + secs * SEC;

	pids = calloc(procs, sizeof(*pids));
	for (i = 0; i < procs; i++) {
		pids[i] = fork();
		if (pids[i] == 0)
			worker_process(mix64(seed ^ (0x1000ULL * (i + 1))), threads);
		if (pids[i] < 0) {
			perror("fork");
			pids[i] = 0;
		}
	}
	for (i = 0; i < procs; i++) {
		int status;
		uint64_t grace = deadline_ns > dqt_now_ns() ? deadline_ns - dqt_now_ns() : 0;

		if (!pids[i])
			continue;
		/* Every scenario is bounded; a worker still alive long
		 * after the deadline is stuck in the kernel. */
		if (!reap_child(pids[i], grace + 90 * SEC, &status)) {
			fprintf(stderr, "dq_stress: VIOLATION: worker %d stuck 90 s "
				"past the deadline\n", pids[i]);
			atomic_fetch_add(&sh->violations, 1);
			kill(pids[i], SIGKILL);
			waitpid(pids[i], &status, 0);
		} else if (!WIFEXITED(status) || WEXITSTATUS(status)) {
			fprintf(stderr, "dq_stress: worker %d died (status %#x)\n",
				pids[i], status);
			bad_exit++;
		}
	}

	for (i = 0; i < SC_NR; i++) {
		unsigned long n = atomic_load(&sh->runs[i]);

		total_runs += n;
		DIAG("dq_stress: %-14s %lu runs", sc_name[i], n);
	}
	if (atomic_load(&sh->skipped_uring))
		DIAG("dq_stress: io_uring unavailable in %lu runs (skipped)",
		       atomic_load(&sh->skipped_uring));
	DIAG("dq_stress: %lu scenarios, %lu ioctls/mmaps, %lu messages verified, "
	       "%lu violations, %d workers died", total_runs,
	       atomic_load(&sh->ops), atomic_load(&sh->messages),
	       atomic_load(&sh->violations), bad_exit);
	if (atomic_load(&sh->violations) || bad_exit) {
		DIAG("dq_stress: FAIL seed=%llu", (unsigned long long)seed);
		FAIL("%lu violations, %d workers died (seed %llu)",
		     atomic_load(&sh->violations), bad_exit,
		     (unsigned long long)seed);
		return;
	}
	DIAG("dq_stress: PASS seed=%llu", (unsigned long long)seed);
}

int main(int argc, char **argv)
{
	bool have_seed = false;
	int opt;

	while ((opt = getopt(argc, argv, "t:s:p:j:vh")) != -1) {
		switch (opt) {
		case 't': secs = strtoull(optarg, NULL, 0); break;
		case 's': seed = strtoull(optarg, NULL, 0); have_seed = true; break;
		case 'p': procs = atoi(optarg); break;
		case 'j': threads = atoi(optarg); break;
		case 'v': verbose = 1; break;
		default:
			fprintf(stderr, "usage: %s [-t SECONDS] [-s SEED] [-p PROCS] "
				"[-j THREADS] [-v]\n", argv[0]);
			return 2;
		}
	}
	if (procs < 1 || threads < 1 || secs < 1) {
		fprintf(stderr, "dq_stress: -t, -p and -j must be positive\n");
		return 2;
	}
	if (!have_seed)
		seed = mix64(dqt_now_ns() ^ ((uint64_t)getpid() << 32));
	/* Scenarios are bounded; 90 s for a stuck worker, then some. */
	tap_add("stress", stress_run, NULL, (unsigned int)secs + 240);
	return tap_main(1, argv);
}
