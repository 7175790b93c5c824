// SPDX-License-Identifier: LGPL-2.1 OR MIT
/*
 * dq.c - dq itself, through libdqshim, on the same harness as the peers.
 *
 * The producer reserves a slot, writes the payload in place in the arena
 * (bench_fill() straight into it), commits with the absolute due time and
 * flushes once per batch.  The consumer reads each due payload in place and
 * gives the slot back with dq_done().
 *
 * Options:
 *   backend=kernel|user   dq.ko through /dev/dq, or the in-process engine
 *   path=uring|ioctl      kernel: io_uring commands or ioctls
 *   consumer=thread|loop|wait
 *                         thread: a consumer thread blocked in dq_reap()
 *                         (DQ_URING_CMD_WAIT / DQ_IOC_WAIT / the user
 *                         engine's timerfd); loop: the harness thread
 *                         polls dq_queue_fd() with ppoll() and reaps
 *                         without blocking; wait: the harness thread
 *                         blocks in dq_reap() itself, with a timeout until
 *                         its next submission.  loop and wait are the
 *                         one-thread event loops of the timerfd and
 *                         io_uring peers; wait parks in the kernel's WAIT
 *                         command where loop sleeps in poll().  wait, in
 *                         the offered-rate workload, flushes with its
 *                         wait: dq_flush_reap(), one io_uring_enter() for
 *                         SUBMIT and WAIT; wait-unlinked: dq_flush() and
 *                         dq_reap(), two.
 *   consumer-cpu=N        consumer=thread: the consumer thread runs on CPU N
 *                         only (its own affinity; the harness thread keeps
 *                         the process's), to put the wake-up across CPUs
 *                         or on the releasing one (-1: default, unpinned)
 *   ready=N               ready ring entries (kernel; default 0: dq.ko's
 *                         own default, 4096, what an application gets;
 *                         N at or above the slots: one entry per slot up
 *                         to 2^20, dq.ko's former default)
 *   granularity-us=N      timer slack the queue allows (0: library default)
 *   track=0|1             delivery tracking (DQ_OPEN_F_TRACK): a reaped
 *                         message stays in flight until dq_done(), which
 *                         is then dq_finish(DELIVERED) and a DONE to dq.ko
 *   sp=0|1                DQ_OPEN_F_SINGLE_PRODUCER (default 1: the
 *                         harness submits from one thread, as an
 *                         application with one producer thread would say)
 *   done=batch|one        the consumer returns a reaped batch's slots with
 *                         one dq_done_n() (default), or dq_done() each
 *   keys=0|1              application keys (DQ_OPEN_F_KEYS): every message
 *                         committed with dq_commit_key(), keyed by its id
 *   slot-align=64|8       what the slot size is rounded up to (8:
 *                         DQ_OPEN_F_SLOT_ALIGN8, 500 B payloads in 504 B
 *                         slots; default 64); the description says the
 *                         slot size the queue got
 */
#include "bench.h"

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/ioctl.h>

#include "dqshim.h"

#define REAP_MAX 256
#define POISON (~0ULL)

static enum dq_backend backend = DQ_BACKEND_KERNEL;
static int use_ioctl, use_loop, use_wait, use_track, use_keys, use_align8;
/* the harness produces from one thread: DQ_OPEN_F_SINGLE_PRODUCER */
static int use_sp = 1, done_one;
/* consumer=thread: the consumer thread's CPU, -1 for the process's mask */
static int consumer_cpu = -1;
/* consumer=wait: the offered-rate workload's flush goes with the wait */
static int use_linked, flush_owed;
static uint32_t ready_entries, granularity_ns;
static struct dqshim_queue *q;
static struct dq_info info = { .sz = sizeof(info) };
static pthread_t consumer;
static int consumer_started;
static volatile int consumer_done;
static uint64_t rejects;
static char desc[128];

static int dq_opt(const char *k, const char *v)
{
	if (!strcmp(k, "backend")) {
		if (!strcmp(v, "kernel"))
			backend = DQ_BACKEND_KERNEL;
		else if (!strcmp(v, "user"))
			backend = DQ_BACKEND_USER;
		else
			return -1;
	} else if (!strcmp(k, "path")) {
		if (!strcmp(v, "uring") || !strcmp(v, "ioctl"))
			use_ioctl = !strcmp(v, "ioctl");
		else
			return -1;
	} else if (!strcmp(k, "consumer")) {
		if (!strcmp(v, "thread")) {
			use_loop = use_wait = use_linked = 0;
		} else if (!strcmp(v, "loop") || !strcmp(v, "wait") ||
			   !strcmp(v, "wait-unlinked")) {
			use_loop = 1;
			use_wait = strcmp(v, "loop") != 0;
			use_linked = !strcmp(v, "wait");
		} else {
			return -1;
		}
	} else if (!strcmp(k, "consumer-cpu")) {
		consumer_cpu = (int)strtol(v, NULL, 10);
		if (consumer_cpu < -1 || consumer_cpu >= CPU_SETSIZE)
			return -1;
	} else if (!strcmp(k, "ready")) {
		ready_entries = (uint32_t)strtoul(v, NULL, 10);
	} else if (!strcmp(k, "track")) {
		/* delivery tracking: dq_done() is then dq_finish(DELIVERED) */
		use_track = !strcmp(v, "1");
	} else if (!strcmp(k, "keys")) {
		/* every commit keyed by its id (unique: never rejected) */
		use_keys = !strcmp(v, "1");
	} else if (!strcmp(k, "slot-align")) {
		if (strcmp(v, "64") && strcmp(v, "8"))
			return -1;
		use_align8 = !strcmp(v, "8");
	} else if (!strcmp(k, "sp")) {
		use_sp = !strcmp(v, "1");
	} else if (!strcmp(k, "done")) {
		/* one: dq_done() per message; batch: dq_done_n() per reap */
		if (strcmp(v, "one") && strcmp(v, "batch"))
			return -1;
		done_one = !strcmp(v, "one");
	} else if (!strcmp(k, "granularity-us")) {
		granularity_ns = (uint32_t)strtoul(v, NULL, 10) * 1000;
	} else {
		return -1;
	}
	return 0;
}

static void on_reject(void *arg, const struct dq_reject *rej)
{
	(void)arg;
	__atomic_fetch_add(&rejects, 1, __ATOMIC_RELAXED);
	bench_error_count();
	bench_err("descriptor for slot %u rejected: %s", rej->slot,
		  dq_strerror(rej->error));
}

static int dq_setup_peer(const struct bench_opts *o, uint64_t capacity)
{
	struct dq_params p;
	int rc;

	dq_params_init(&p);
	/* one spare slot for the stop message, a batch of headroom */
	if (capacity + o->batch + 1 > DQ_MAX_SLOTS)
		return -E2BIG;
	p.slot_count = (uint32_t)capacity + o->batch + 1;
	p.slot_size = o->payload;
	p.submit_entries = o->batch * 2;
	/*
	 * At or above the slots: one per slot up to the ring's limit, as
	 * dq.ko's default formerly was.
	 */
	p.ready_entries = ready_entries < p.slot_count ? ready_entries :
			  p.slot_count < DQ_MAX_RING_ENTRIES ? p.slot_count :
			  DQ_MAX_RING_ENTRIES;
	p.granularity_ns = granularity_ns;
	p.backend = backend;
	p.flags = (use_ioctl ? DQ_OPEN_F_IOCTL : 0) |
		  (use_track ? DQ_OPEN_F_TRACK : 0) |
		  (use_keys ? DQ_OPEN_F_KEYS : 0) |
		  (use_align8 ? DQ_OPEN_F_SLOT_ALIGN8 : 0) |
		  (use_sp ? DQ_OPEN_F_SINGLE_PRODUCER : 0);
	p.on_reject = on_reject;
	rc = dq_queue_open(&p, &q);
	if (rc) {
		bench_err("dq_queue_open: %s", dq_strerror(rc));
		return rc;
	}
	dq_queue_info(q, &info);
	/* dq.ko: the arena's pages and the records are kernel allocations */
	if (info.backend == DQ_BACKEND_KERNEL)
		bench_state_in_kernel();
	snprintf(desc, sizeof(desc), "%s/%s %s%s%s%s slots=%u ready=%u slot=%uB gran=%uus",
		 dq_backend_name(info.backend), dq_path_name(info.path),
		 use_linked ? "flush-reap-loop" : use_wait ? "reap-loop" :
		 use_loop ? "poll-loop" : "reap-thread",
		 use_track ? (use_keys ? " tracked keyed" : " tracked") :
		 use_keys ? " keyed" : "", use_sp ? " sp" : "",
		 done_one ? " done-each" : "", info.slot_count,
		 info.ready_entries, info.slot_size, info.granularity_ns / 1000);
	if (use_ioctl && info.path != DQ_PATH_IOCTL && info.backend == DQ_BACKEND_KERNEL)
		bench_note("asked for the ioctl path, got %s", dq_path_name(info.path));
	return 0;
}

/* deliver what dq_reap() returned; 1 when the stop message came */
static int handle(struct dq_reaped *r, int n)
{
	struct bench_msg bm[REAP_MAX];
	int i, k = 0, stop = 0;

	for (i = 0; i < n; i++) {
		if (r[i].user_data == POISON)
			stop = 1;
		else
			bm[k++] = (struct bench_msg){ r[i].data, r[i].len };
	}
	/* the payloads are read in place: before their slots go back */
	if (k)
		bench_deliver_batch(bm, (unsigned int)k);
	/* the slots back in one call: one lock round (and DONE) a batch */
	if (!done_one) {
		uint32_t slots[REAP_MAX];

		for (i = 0; i < n; i++)
			slots[i] = r[i].slot;
		if (n && dq_done_n(q, slots, (unsigned int)n, NULL) != n)
			bench_error_count();
		return stop;
	}
	for (i = 0; i < n; i++)
		if (dq_done(q, r[i].slot))
			bench_error_count();
	return stop;
}

static void *consumer_fn(void *arg)
{
	struct dq_reaped r[REAP_MAX];
	int errors = 0;

	(void)arg;
	while (errors < 1000) {
		int n = dq_reap(q, r, REAP_MAX, -1);

		if (n < 0) {
			if (n == -EINTR || n == -ETIME)
				continue;
			bench_err("dq_reap: %s", dq_strerror(n));
			bench_error_count();
			errors++;
			continue;
		}
		if (handle(r, n))
			break;
	}
	consumer_done = 1;
	return NULL;
}

static int dq_start(void)
{
	if (use_loop)
		return 0;
	if (pthread_create(&consumer, NULL, consumer_fn, NULL))
		return -EAGAIN;
	consumer_started = 1;
	if (consumer_cpu >= 0) {
		cpu_set_t set;

		CPU_ZERO(&set);
		CPU_SET(consumer_cpu, &set);
		if (pthread_setaffinity_np(consumer, sizeof(set), &set))
			bench_note("consumer-cpu=%d: not set", consumer_cpu);
	}
	return 0;
}

static int peer_commit(const struct dqshim_msg *m, uint64_t id,
		       uint64_t due_ns)
{
	if (use_keys)
		return dq_commit_key(q, m, bench_o->payload, due_ns, id, 0);
	return dq_commit(q, m, bench_o->payload, due_ns, id);
}

static int dq_submit_peer(uint64_t id, uint64_t due_ns)
{
	struct dqshim_msg m;
	int rc = dq_reserve(q, &m);

	if (rc == -ENOSPC)
		return -EAGAIN;
	if (rc)
		return rc;
	bench_fill(m.data, id, due_ns, bench_o->payload);
	rc = peer_commit(&m, id, due_ns);
	if (rc == -EAGAIN) {
		rc = dq_flush(q);
		if (rc >= 0)
			rc = peer_commit(&m, id, due_ns);
	}
	if (rc) {
		dq_abort(q, &m);
		return rc == -EAGAIN ? -EAGAIN : rc;
	}
	return 0;
}

static int dq_flush_peer(void)
{
	int rc;

	/*
	 * consumer=wait, offered rate: what was committed goes to dq.ko with
	 * the harness's next wait, SUBMIT and WAIT in one system call
	 * (dq_flush_reap()).  Elsewhere at once: the fills of the other
	 * workloads are timed, and measured for memory, up to their flush.
	 */
	if (use_linked && bench_o->workload == WL_LATENESS) {
		flush_owed = 1;
		return 0;
	}
	rc = dq_flush(q);
	return rc < 0 ? rc : 0;
}

static int dq_poll_peer(uint64_t until_ns)
{
	struct dq_reaped r[REAP_MAX];
	struct pollfd pfd = { .fd = dq_queue_fd(q), .events = POLLIN };
	uint64_t now = bench_now();
	struct timespec ts = { 0, 0 };
	int n, rounds;

	if (flush_owed && until_ns) {
		/*
		 * The owed flush with this wait (or, the time already past,
		 * with a look that does not sleep); a poll(0) right after the
		 * harness's flush leaves it to the wait that follows.
		 */
		flush_owed = 0;
		n = dq_flush_reap(q, r, REAP_MAX,
				  until_ns > now ? (int64_t)(until_ns - now) : 0);
		if (n == -ETIME || n == -EINTR)
			return 0;
		if (n < 0) {
			bench_err("dq_flush_reap: %s", dq_strerror(n));
			bench_error_count();
			return n;
		}
		handle(r, n);
	} else if (until_ns > now && use_wait) {
		n = dq_reap(q, r, REAP_MAX, (int64_t)(until_ns - now));
		if (n == -ETIME || n == -EINTR)
			return 0;
		if (n < 0) {
			bench_error_count();
			return n;
		}
		handle(r, n);
	} else if (until_ns > now) {
		ts.tv_sec = (time_t)((until_ns - now) / 1000000000ULL);
		ts.tv_nsec = (long)((until_ns - now) % 1000000000ULL);
		if (ppoll(&pfd, 1, &ts, NULL) <= 0)
			return 0;
	}
	for (rounds = 0; rounds < 100000; rounds++) {
		n = dq_reap(q, r, REAP_MAX, 0);
		if (n <= 0) {
			if (n < 0 && n != -EINTR) {
				bench_error_count();
				return n;
			}
			break;
		}
		handle(r, n);
	}
	return 0;
}

/*
 * The user engine's wake-ups and timer re-arms over the run, in the run's
 * notes (stop comes before the results are written, teardown after).
 */
static void dq_note_engine(void)
{
	struct dq_lib_stats ls = { .sz = sizeof(ls) };

	if (info.backend != DQ_BACKEND_USER || dq_queue_lib_stats(q, &ls))
		return;
	bench_note("engine wakeups %" PRIu64 " (idle %" PRIu64 ") timer_sets %" PRIu64 " (by submit %" PRIu64 ") pool_refills %" PRIu64,
		   ls.wakeups, ls.wakeups_idle, ls.timer_sets,
		   ls.timer_sets_submit, ls.pool_refills);
}

static void dq_stop_peer(void)
{
	struct dqshim_msg m;
	struct timespec ts;
	int rc;

	if (q)
		dq_note_engine();
	if (!consumer_started)
		return;
	/* a message due now tells the consumer to stop */
	rc = dq_reserve_wait(q, &m, 2000000000LL);
	if (!rc)
		rc = dq_commit(q, &m, 0, 0, POISON);
	if (!rc)
		rc = dq_flush(q) < 0;
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += 10;
	if (rc || pthread_timedjoin_np(consumer, NULL, &ts)) {
		bench_err("consumer did not stop; leaving it");
		bench_note("consumer did not stop cleanly");
		return;
	}
	consumer_started = 0;
}

static void dq_teardown_peer(void)
{
	struct dq_queue_stats st;

	if (!q)
		return;
	if (!dq_queue_get_stats(q, &st) && st.late_max_ns)
		bench_note("engine late_max %.0f us", (double)st.late_max_ns / 1e3);
	if (!consumer_started)
		dq_queue_close(q);
	q = NULL;
}

/* kernel backend: hrtimer expiries of the node engines (they wake no task) */
static int dq_extra_wakeups(uint64_t *count)
{
	struct dq_node_stats ns;
	uint64_t sum = 0;
	int node, ok = 0;

	if (info.backend != DQ_BACKEND_KERNEL)
		return -1;
	for (node = 0; node < 64; node++) {
		memset(&ns, 0, sizeof(ns));
		ns.node = node;
		if (ioctl(dq_queue_fd(q), DQ_IOC_NODE_STATS, &ns))
			continue;
		sum += ns.timer_fires;
		ok = 1;
	}
	*count = sum;
	return ok ? 0 : -1;
}

static const char *dq_describe(void)
{
	return desc;
}

static int dq_threaded(void)
{
	return !use_loop;
}

const struct peer_ops peer = {
	.name = "dq",
	.opt = dq_opt,
	.setup = dq_setup_peer,
	.start = dq_start,
	.submit = dq_submit_peer,
	.flush = dq_flush_peer,
	.poll = dq_poll_peer,
	.threaded = dq_threaded,
	.stop = dq_stop_peer,
	.teardown = dq_teardown_peer,
	.extra_wakeups = dq_extra_wakeups,
	.describe = dq_describe,
};
