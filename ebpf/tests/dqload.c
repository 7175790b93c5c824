// SPDX-License-Identifier: LGPL-2.1 OR MIT
/*
 * dqload - a small dq load generator on the raw ABI (uapi/linux/dq.h),
 * through the selftests' ring client (selftests/lib/dqtest.h), for dqlat's
 * VM test and overhead benchmark.
 *
 * The main thread produces: RATE messages per second for SECONDS, each due
 * a uniformly random MIN..MAX microseconds after its submission, submitted
 * in batches with DQ_IOC_SUBMIT.  A consumer thread sleeps in DQ_IOC_WAIT
 * (or, with -u, in a DQ_URING_CMD_WAIT over io_uring), takes exactly the
 * entries the wait reported ready, checks them and hands the slots back.
 *
 * The producer records each message's due time, its submission order and
 * when the submit that carried it returned in its own table (the release
 * model, selftests/lib/relmodel.h); the consumer judges every entry
 * against that table, never against the due_ns dq reports: early (seen
 * before the recorded due time), duplicate, lost, out of order (due order,
 * FIFO among equal due times), and a reported due_ns that differs from the
 * recorded one.
 *
 * The consumer measures each message's end-to-end lateness in user space:
 * CLOCK_MONOTONIC right after the wait returned minus the recorded due
 * time.  dq:dq_reap fires before the wait returns and every entry taken
 * was posted before it, so for each message this is at least what dqlat
 * reports.
 *
 * At the end it prints one JSON line: counts (submitted, received, early,
 * duplicate, lost, out of order), the user-space lateness, throughput, CPU
 * time, and the kernel's own counters for the queue (DQ_IOC_QUEUE_STATS).
 * When nothing arrives for 10 s after the last submit it stops and says
 * "stalled".
 *
 * Usage: dqload [-r RATE] [-d SECONDS] [-m MIN_US] [-M MAX_US] [-b BATCH]
 *               [-s SLOTS] [-g GRANULARITY_NS] [-P MS] [-u] [-w]
 *   -r 0 submits as fast as slots allow (throughput mode).
 *   -w   wait for one byte on stdin after setting the queue up, so that a
 *        tracer can be pointed at the pid first.
 *   -P   start the producer MS ms after the consumer, which then waits on
 *        a queue nothing was ever submitted to.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/resource.h>

#include <liburing.h>

#include "dqtest.h"
#include "relmodel.h"

static struct {
	long rate;
	double seconds;
	long min_us, max_us;
	unsigned int batch;
	unsigned int slots;
	unsigned int granularity;
	bool uring;
	bool wait_go;
	unsigned long producer_delay_ms;
} opt = {
	.rate = 2000,
	.seconds = 3,
	.min_us = 1000,
	.max_us = 20000,
	.batch = 16,
	.slots = 8192,
};

static struct dqt_queue q;

/* Free slots, handed from the consumer back to the producer (SPSC). */
static uint32_t *free_ring;
static _Atomic uint64_t free_prod, free_cons;

static _Atomic bool producer_done;
static _Atomic uint64_t submitted;

/* What the producer submitted, and when: the consumer judges by it. */
static struct rm model;
static uint64_t max_msgs;

/* Consumer results. */
static uint64_t received, early, dups, waits, wait_timeouts, user_e2e_sum,
	user_e2e_max, first_rx_ns, last_rx_ns, due_differs;

static void die(const char *what)
{
	fprintf(stderr, "dqload: %s: %s\n", what, strerror(errno));
	exit(1);
}

/* Hand the queued descriptors to dq.ko. */
static void submit(uint32_t n)
{
	struct dq_submit args;
	int ret = dqt_submit(&q, 0, NULL, 0, &args);

	if (ret < 0) {
		errno = -ret;
		die("DQ_IOC_SUBMIT");
	}
	if (args.accepted != n || args.rejected) {
		fprintf(stderr, "dqload: submitted %u, accepted %u, rejected %u\n",
			n, args.accepted, args.rejected);
		exit(1);
	}
}

static void produce(void)
{
	uint64_t t0 = dqt_now_ns(), end = t0 + (uint64_t)(opt.seconds * 1e9);
	uint64_t seq = 0, rnd = 0x9e3779b97f4a7c15ULL ^ t0;

	for (;;) {
		uint64_t now = dqt_now_ns(), want;
		uint32_t n = 0;

		if (now >= end)
			break;
		if (opt.rate) {
			want = (now - t0) * (uint64_t)opt.rate / 1000000000ULL + 1;
			if (want <= seq) {
				dqt_sleep_until(t0 + seq * 1000000000ULL / opt.rate);
				continue;
			}
		} else {
			want = seq + opt.batch;
		}
		while (seq < want && n < opt.batch) {
			uint64_t fc = atomic_load_explicit(&free_cons, memory_order_relaxed);
			uint64_t delay;
			struct dq_desc *d;

			if (fc == atomic_load_explicit(&free_prod, memory_order_acquire))
				break;	/* every slot in use */
			if (seq >= max_msgs)
				break;
			delay = opt.min_us * 1000ULL;
			if (opt.max_us > opt.min_us)
				delay += dqt_rand(&rnd) %
					 ((opt.max_us - opt.min_us) * 1000ULL);
			/* Room: batch <= submit_entries, each batch submitted. */
			d = dqt_sq_next(&q, n);
			memset(d, 0, sizeof(*d));
			d->slot = free_ring[fc % opt.slots];
			d->len = 8;
			d->gen = (uint32_t)seq;
			d->user_data = seq;
			now = dqt_now_ns();
			d->due_ns = now + delay;
			rm_submit(&model, seq, 0, seq, d->due_ns, now);
			atomic_store_explicit(&free_cons, fc + 1, memory_order_release);
			seq++;
			n++;
		}
		if (!n) {
			/* Out of slots: let the consumer catch up. */
			struct timespec ts = { .tv_nsec = 50000 };

			nanosleep(&ts, NULL);
			continue;
		}
		dqt_sq_publish(&q, n);
		submit(n);
		for (now = dqt_now_ns(), want = seq - n; want < seq; want++)
			rm_in_engine(&model, want, now);
		atomic_store_explicit(&submitted, seq, memory_order_release);
	}
	atomic_store_explicit(&producer_done, true, memory_order_release);
}

/* Take the @n entries the wait reported, at @t (after it returned). */
static void take(uint32_t n, uint64_t t)
{
	uint32_t cons, i;
	int have = dqt_ready_peek(&q, &cons);

	if (have < 0 || (uint32_t)have < n) {
		fprintf(stderr, "dqload: wait said %u ready, ring has %d\n",
			n, have);
		exit(1);
	}
	for (i = 0; i < n; i++) {
		struct dq_ready *r = dqt_rq_entry(&q, cons + i);
		uint64_t fp = atomic_load_explicit(&free_prod, memory_order_relaxed);
		uint64_t due = rm_due(&model, r->user_data);
		int verdict = rm_seen(&model, r->user_data, t);

		if (verdict & (RM_DUP | RM_BAD_ID))
			dups++;
		else if (r->due_ns != due)
			due_differs++;
		/* Lateness against the recorded due time (early: 0). */
		if (!verdict) {
			user_e2e_sum += t - due;
			if (t - due > user_e2e_max)
				user_e2e_max = t - due;
		}
		free_ring[fp % opt.slots] = r->slot;
		atomic_store_explicit(&free_prod, fp + 1, memory_order_release);
	}
	dqt_ready_advance(&q, n);
	if (!received)
		first_rx_ns = t;
	last_rx_ns = t;
	received += n;
}

static bool stalled;

/*
 * Done when every submitted message came back, or when nothing came for
 * 10 s after the producer finished (a lost message: reported, exit 1).
 */
static bool all_received(void)
{
	static uint64_t last_count, last_change;
	uint64_t now;

	if (!atomic_load_explicit(&producer_done, memory_order_acquire))
		return false;
	if (received >= atomic_load_explicit(&submitted, memory_order_acquire))
		return true;
	now = dqt_now_ns();
	if (received != last_count || !last_change) {
		last_count = received;
		last_change = now;
	} else if (now - last_change > 10000000000ULL) {
		stalled = true;
		return true;
	}
	return false;
}

static void *consume_ioctl(void *arg)
{
	(void)arg;
	while (!all_received()) {
		int r = dqt_wait(&q, 1, 100000000);
		uint64_t t = dqt_now_ns();

		waits++;
		if (r < 0) {
			if (r == -ETIME || r == -EINTR) {
				wait_timeouts++;
				continue;
			}
			errno = -r;
			die("DQ_IOC_WAIT");
		}
		take(r, t);
	}
	return NULL;
}

static void *consume_uring(void *arg)
{
	struct dq_wait w = { .min_ready = 1, .timeout_ns = 100000000 };
	struct io_uring ring;
	int ret;

	(void)arg;
	ret = io_uring_queue_init(8, &ring, 0);
	if (ret) {
		errno = -ret;
		die("io_uring_queue_init");
	}
	while (!all_received()) {
		struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);
		struct io_uring_cqe *cqe;
		uint64_t t;
		int res;

		io_uring_prep_rw(IORING_OP_URING_CMD, sqe, q.fd, NULL, 0, 0);
		sqe->cmd_op = DQ_URING_CMD_WAIT;
		memcpy(sqe->cmd, &w, sizeof(w));
		ret = io_uring_submit_and_wait(&ring, 1);
		if (ret < 0 && ret != -EINTR) {
			errno = -ret;
			die("io_uring_submit_and_wait");
		}
		ret = io_uring_wait_cqe(&ring, &cqe);
		if (ret) {
			errno = -ret;
			die("io_uring_wait_cqe");
		}
		t = dqt_now_ns();
		res = cqe->res;
		io_uring_cqe_seen(&ring, cqe);
		waits++;
		if (res == -ETIME || res == -EINTR) {
			wait_timeouts++;
			continue;
		}
		if (res < 0) {
			errno = -res;
			die("DQ_URING_CMD_WAIT");
		}
		take(res, t);
	}
	io_uring_queue_exit(&ring);
	return NULL;
}

static long arg_long(const char *s)
{
	char *end;
	long v = strtol(s, &end, 0);

	if (*s == 0 || *end || v < 0) {
		fprintf(stderr, "dqload: bad number '%s'\n", s);
		exit(2);
	}
	return v;
}

int main(int argc, char **argv)
{
	struct dq_queue_stats st = {};
	struct rusage ru;
	pthread_t cons;
	uint64_t t0, t1, missing = 0, order = 0, i;
	double cpu_s, span;
	int c, ret;

	while ((c = getopt(argc, argv, "r:d:m:M:b:s:g:P:uw")) != -1) {
		switch (c) {
		case 'r': opt.rate = arg_long(optarg); break;
		case 'd': opt.seconds = atof(optarg); break;
		case 'm': opt.min_us = arg_long(optarg); break;
		case 'M': opt.max_us = arg_long(optarg); break;
		case 'b': opt.batch = arg_long(optarg); break;
		case 's': opt.slots = arg_long(optarg); break;
		case 'g': opt.granularity = arg_long(optarg); break;
		case 'P': opt.producer_delay_ms = arg_long(optarg); break;
		case 'u': opt.uring = true; break;
		case 'w': opt.wait_go = true; break;
		default:
			fprintf(stderr, "usage: dqload [-r RATE] [-d SECONDS] "
				"[-m MIN_US] [-M MAX_US] [-b BATCH] [-s SLOTS] "
				"[-g GRANULARITY_NS] [-P MS] [-u] [-w]\n");
			return 2;
		}
	}
	if (opt.max_us < opt.min_us)
		opt.max_us = opt.min_us;
	if (!opt.batch || opt.batch > 1024 || opt.slots < opt.batch ||
	    opt.seconds <= 0)
		return 2;

	ret = dqt_queue_init(&q, &DQT_PARAMS(.slot_count = opt.slots,
					     .slot_size = 64,
					     .submit_entries = 1024,
					     .ready_entries = opt.slots,
					     .granularity_ns = opt.granularity));
	if (ret) {
		errno = -ret;
		die("setting up and mapping a queue on /dev/dq");
	}

	/* Enough user_data bits for the whole run, at most 64 M messages. */
	max_msgs = opt.rate ? (uint64_t)(opt.rate * opt.seconds) + 1024 : 64ULL << 20;
	if (rm_init(&model, max_msgs))
		die("the release model's table");
	free_ring = calloc(opt.slots, sizeof(*free_ring));
	if (!free_ring)
		die("calloc");
	for (i = 0; i < opt.slots; i++)
		free_ring[i] = i;
	atomic_store(&free_prod, opt.slots);

	if (opt.wait_go) {
		char go;

		if (read(0, &go, 1) != 1)
			die("waiting for the go byte on stdin");
	}
	t0 = dqt_now_ns();
	if (pthread_create(&cons, NULL, opt.uring ? consume_uring : consume_ioctl,
			   NULL))
		die("pthread_create");
	if (opt.producer_delay_ms)
		usleep(opt.producer_delay_ms * 1000);
	produce();
	pthread_join(cons, NULL);
	t1 = dqt_now_ns();

	ret = dqt_queue_stats(&q, &st);
	if (ret) {
		errno = -ret;
		die("DQ_IOC_QUEUE_STATS");
	}
	rm_finish(&model);
	early = model.early;
	missing = model.lost;
	order = model.order;
	if (model.first[0])
		fprintf(stderr, "dqload: first violation: %s\n", model.first);
	getrusage(RUSAGE_SELF, &ru);
	cpu_s = ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
		ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
	span = (t1 - t0) / 1e9;

	printf("{\"consumer\":\"%s\",\"queue_id\":%u,\"node\":%d,\"rate\":%ld,"
	       "\"seconds\":%.3f,\"delay_us\":[%ld,%ld],\"submitted\":%llu,"
	       "\"received\":%llu,\"early\":%llu,\"dups\":%llu,\"missing\":%llu,"
	       "\"out_of_order\":%llu,\"due_differs\":%llu,"
	       "\"waits\":%llu,\"wait_timeouts\":%llu,"
	       "\"user_e2e\":{\"sum_ns\":%llu,\"mean_us\":%.3f,\"max_us\":%.3f},"
	       "\"msgs_per_s\":%.1f,\"cpu_s\":%.3f,\"cpu_ns_per_msg\":%.1f,"
	       "\"kernel\":{\"submitted\":%llu,\"released\":%llu,"
	       "\"late_sum_ns\":%llu,\"late_max_ns\":%llu,\"pending\":%llu,"
	       "\"ready_backlog\":%llu,\"ring_errors\":%llu},"
	       "\"ready_ring\":{\"producer\":%u,\"consumer\":%u},"
	       "\"stalled\":%s}\n",
	       opt.uring ? "uring" : "ioctl", q.setup.queue_id, q.setup.numa_node,
	       opt.rate, span, opt.min_us, opt.max_us,
	       (unsigned long long)submitted, (unsigned long long)received,
	       (unsigned long long)early, (unsigned long long)dups,
	       (unsigned long long)missing, (unsigned long long)order,
	       (unsigned long long)due_differs, (unsigned long long)waits,
	       (unsigned long long)wait_timeouts,
	       (unsigned long long)user_e2e_sum,
	       received ? user_e2e_sum / 1e3 / received : 0.0,
	       user_e2e_max / 1e3,
	       last_rx_ns > t0 ? received / ((last_rx_ns - t0) / 1e9) : 0.0,
	       cpu_s, received ? cpu_s * 1e9 / received : 0.0,
	       (unsigned long long)st.submitted, (unsigned long long)st.released,
	       (unsigned long long)st.late_sum_ns,
	       (unsigned long long)st.late_max_ns,
	       (unsigned long long)st.pending,
	       (unsigned long long)st.ready_backlog,
	       (unsigned long long)st.ring_errors,
	       dqt_load_acq(q.rq.producer), dqt_load_acq(q.rq.consumer),
	       stalled ? "true" : "false");
	(void)first_rx_ns;
	return (early || dups || missing || order || due_differs || stalled ||
		received != submitted) ? 1 : 0;
}
