// SPDX-License-Identifier: LGPL-2.1 OR MIT
/*
 * libdqshim against dq.ko (the kernel backend).  Every test SKIPs when
 * /dev/dq is absent, so this runs everywhere but only means something in
 * the test VM with dq.ko loaded:
 *
 *	user/build/tests/kernel_backend_test [test-name...]
 *
 * The library's contract (contract.c, the cases lib_test runs on the user
 * engine) runs twice here: over io_uring commands (the default path;
 * skipped when the kernel lacks DQ_FEAT_URING_CMD) and over the ioctls
 * (DQ_OPEN_F_IOCTL).  Below, what only the kernel backend has.  Time
 * bounds are loose: the VM is emulated (TCG).
 */
#include <dirent.h>
#include <errno.h>
#include <liburing.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "contract.h"
#include "dqshim.h"
#include "tap.h"

static const struct contract_backend over_uring = {
	.suffix = "_uring", .backend = DQ_BACKEND_KERNEL,
	.path = DQ_PATH_URING, .per_producer = 5000,
};
static const struct contract_backend over_ioctl = {
	.suffix = "_ioctl", .backend = DQ_BACKEND_KERNEL,
	.path = DQ_PATH_IOCTL, .per_producer = 5000,
};

static void t_open_info(const struct contract_backend *b)
{
	struct dqshim_queue *q = contract_open(b, 100, 100, 100, NULL, NULL);
	struct dq_queue_stats st;
	struct dq_info info = { .sz = sizeof(info) };

	dq_queue_info(q, &info);
	tap_diag("queue %u node %d features %#x path %s", info.queue_id,
		 info.numa_node, info.features, dq_path_name(info.path));
	CHECK_EQ(info.abi_version, DQ_ABI_VERSION);
	CHECK_EQ(info.slot_count, 100);
	CHECK_EQ(info.slot_size, 128);
	CHECK_EQ(info.submit_entries, 128);
	CHECK(info.arena_size >= 100 * 128);
	CHECK(info.numa_node >= 0);
	CHECK(dq_queue_fd(q) >= 0);
	CHECK(!strcmp(dq_backend_name(dq_queue_backend(q)), "kernel"));
	REQUIRE_EQ(dq_queue_get_stats(q, &st), 0);
	CHECK_EQ(st.queue_id, info.queue_id);
	CHECK_EQ(st.slot_count, 100);
	dq_queue_close(q);
}

TEST(open_info_uring, 10) { t_open_info(&over_uring); }
TEST(open_info_ioctl, 10) { t_open_info(&over_ioctl); }

/* ---- an application's own io_uring with the prep helpers ------------ */

static int run_one(struct io_uring *ring, int *res)
{
	struct io_uring_cqe *cqe;
	int ret;

	ret = io_uring_submit_and_wait(ring, 1);
	if (ret < 0)
		return ret;
	ret = io_uring_wait_cqe(ring, &cqe);
	if (ret)
		return ret;
	*res = cqe->res;
	io_uring_cqe_seen(ring, cqe);
	return 0;
}

TEST(prep_helpers_own_ring, 30)
{
	struct dqshim_queue *q = contract_open(&over_uring, 16, 64, 0, NULL, NULL);
	struct dq_reject rej[16];
	struct dq_reaped r[16];
	struct dq_submit s;
	struct io_uring ring;
	struct io_uring_sqe *sqe;
	struct dqshim_msg m;
	uint64_t h, t0;
	int res, i;

	REQUIRE_EQ(io_uring_queue_init(8, &ring, 0), 0);

	/* SUBMIT: two messages, one of them rejected. */
	h = contract_put(q, 1, 5000 * MS);
	REQUIRE_EQ(dq_reserve(q, &m), 0);
	REQUIRE_EQ(dq_commit_delay(q, &m, 8, DQ_MAX_DELAY_NS + 1000 * MS, 2), 0);
	memset(&s, 0, sizeof(s));
	s.rejects = (uint64_t)(uintptr_t)rej;
	s.reject_cap = 16;
	sqe = io_uring_get_sqe(&ring);
	REQUIRE_EQ(dq_prep_submit(sqe, q, &s), 0);
	CHECK_EQ(sqe->opcode, IORING_OP_URING_CMD);
	CHECK_EQ(sqe->fd, dq_queue_fd(q));
	CHECK_EQ(sqe->cmd_op, DQ_URING_CMD_SUBMIT);
	io_uring_sqe_set_data64(sqe, 1);
	REQUIRE_EQ(run_one(&ring, &res), 0);
	CHECK_EQ(res, 1);
	CHECK_EQ(s.accepted, 1);
	CHECK_EQ(s.rejected, 1);
	CHECK_EQ(rej[0].error, -EOVERFLOW);
	CHECK_EQ(dq_submit_complete(q, &s, res), 1);

	/* WAIT with a timeout: -ETIME. */
	sqe = io_uring_get_sqe(&ring);
	REQUIRE_EQ(dq_prep_wait(sqe, q, 1, 50 * MS), 0);
	t0 = contract_now();
	REQUIRE_EQ(run_one(&ring, &res), 0);
	CHECK_EQ(res, -ETIME);
	CHECK(contract_now() - t0 >= 50 * MS);

	/* CANCEL the accepted one; the slot returns. */
	sqe = io_uring_get_sqe(&ring);
	REQUIRE_EQ(dq_prep_cancel(sqe, q, h), 0);
	REQUIRE_EQ(run_one(&ring, &res), 0);
	CHECK_EQ(res, 0);
	CHECK_EQ(dq_cancel_complete(q, h, res), 0);
	{
		struct dqshim_msg x[16];

		for (i = 0; i < 16; i++)
			CHECK_EQ(dq_reserve(q, &x[i]), 0);
		for (i = 0; i < 16; i++)
			CHECK_EQ(dq_abort(q, &x[i]), 0);
	}

	/* WAIT parked, completed by a release; then reap takes it. */
	contract_put(q, 3, 100 * MS);
	REQUIRE_EQ(dq_flush(q), 1);
	sqe = io_uring_get_sqe(&ring);
	REQUIRE_EQ(dq_prep_wait(sqe, q, 1, -1), 0);
	REQUIRE_EQ(run_one(&ring, &res), 0);
	CHECK_EQ(res, 1);
	CHECK_EQ(dq_reap(q, r, 16, 0), 1);
	CHECK_EQ(r[0].user_data, 3);

	io_uring_queue_exit(&ring);
	dq_queue_close(q);
}

/* The documented errors of open and attach on the kernel backend. */
TEST(open_attach_errors, 20)
{
	struct dq_params p;
	struct dqshim_queue *q = (struct dqshim_queue *)&p;

	if (access("/dev/dq", F_OK))
		SKIP("no /dev/dq (dq.ko not loaded)");
	CHECK_EQ(dq_queue_attach("dq-kbt-no-such-queue", NULL, &q), -ENOENT);
	CHECK(q == NULL);
	CHECK_EQ(dq_queue_attach("a23456789012345678901234567890123", NULL, &q),
		 -ENAMETOOLONG);
	CHECK_EQ(dq_queue_attach("", NULL, &q), -EINVAL);
	CHECK_EQ(dq_queue_attach(NULL, NULL, &q), -EINVAL);
	dq_params_init(&p);
	p.backend = DQ_BACKEND_KERNEL;
	p.slot_count = DQ_MAX_SLOTS;		/* 16 TiB: over max_arena_bytes */
	p.slot_size = DQ_MAX_SLOT_SIZE;
	CHECK_EQ(dq_queue_open(&p, &q), -E2BIG);
	CHECK(q == NULL);
	dq_params_init(&p);
	p.backend = DQ_BACKEND_KERNEL;
	p.numa_node = 99;			/* no such node */
	CHECK_EQ(dq_queue_open(&p, &q), -EINVAL);
	CHECK(q == NULL);
}

TEST(auto_picks_kernel, 10)
{
	struct dq_params p;
	struct dqshim_queue *q;

	if (access("/dev/dq", F_OK))
		SKIP("no /dev/dq (dq.ko not loaded)");
	dq_params_init(&p);
	REQUIRE_EQ(dq_queue_open(&p, &q), 0);
	CHECK_EQ(dq_queue_backend(q), DQ_BACKEND_KERNEL);
	dq_queue_close(q);
}

/*
 * DQ_OPEN_F_SINGLE_PRODUCER on dq.ko (0.7): the library's producer path
 * without its lock, against the kernel's ring; a consumer thread checks
 * every message once, in order, payload intact (hotpath_test does the
 * same on the user engine, with more).
 */
#define SPK_N		20000U
#define SPK_SLOTS	128U

struct spk {
	struct dqshim_queue *q;
	uint32_t got, bad;
};

static void *spk_consume(void *arg)
{
	struct spk *c = arg;
	struct dq_reaped out[64];
	uint32_t slots[64];

	while (c->got < SPK_N) {
		int k = dq_reap(c->q, out, 64, 10000000000LL), i;

		if (k <= 0) {
			tap_diag("reap: %d", k);
			c->bad++;
			break;
		}
		for (i = 0; i < k; i++) {
			uint32_t v;

			memcpy(&v, out[i].data, sizeof(v));
			if (out[i].user_data != c->got || v != c->got)
				c->bad++;
			c->got++;
			slots[i] = out[i].slot;
		}
		if (dq_done_n(c->q, slots, (unsigned int)k, NULL) != k)
			c->bad++;
	}
	return NULL;
}

static void t_single_producer(uint32_t flags)
{
	uint64_t base = dq_now_ns() - 1000000000ULL;
	struct spk c = { 0 };
	struct dq_params p;
	struct dqshim_msg m;
	pthread_t th;
	uint32_t id;
	int ret;

	if (access("/dev/dq", F_OK) != 0)
		SKIP("no /dev/dq (dq.ko not loaded)");
	dq_params_init(&p);
	p.backend = DQ_BACKEND_KERNEL;
	p.slot_count = SPK_SLOTS;
	p.flags = DQ_OPEN_F_SINGLE_PRODUCER | flags;
	REQUIRE_EQ(dq_queue_open(&p, &c.q), 0);
	REQUIRE_EQ(pthread_create(&th, NULL, spk_consume, &c), 0);
	for (id = 0; id < SPK_N; id++) {
		ret = dq_reserve(c.q, &m);
		if (ret == -ENOSPC) {
			dq_flush(c.q);
			ret = dq_reserve_wait(c.q, &m, 10000000000LL);
		}
		REQUIRE_EQ(ret, 0);
		memcpy(m.data, &id, sizeof(id));
		/* Past due times rising with the id: released in id order. */
		if (id % 2) {
			struct dq_commit_ent e = { .msg = &m, .len = 4,
				.due_ns = base + id, .user_data = id };

			ret = dq_commit_n(c.q, &e, 1);
			ret = ret == 1 ? 0 : ret;
		} else {
			ret = dq_commit(c.q, &m, 4, base + id, id);
		}
		if (ret == -EAGAIN) {
			dq_flush(c.q);
			ret = dq_commit(c.q, &m, 4, base + id, id);
		}
		REQUIRE_EQ(ret, 0);
		if (id % 16 == 15)
			REQUIRE(dq_flush(c.q) >= 0);
	}
	REQUIRE(dq_flush(c.q) >= 0);
	pthread_join(th, NULL);
	CHECK_EQ(c.got, SPK_N);
	CHECK_EQ(c.bad, 0);
	dq_queue_close(c.q);
}

TEST(single_producer_uring, 120) { t_single_producer(0); }
TEST(single_producer_ioctl, 120) { t_single_producer(DQ_OPEN_F_IOCTL); }

/*
 * Far more due at once than the ready ring holds, through the library
 * (dq.ko's default ring is sized apart from the slot count, 4096):
 * n messages due at random within one second.  A fifth of the second in,
 * before anything is reaped, the ring is full and the rest waits in the
 * kernel (its backlog; a capped tracked queue: for credits).  Then the
 * consumer reaps with dq_reap(), blocking or never blocking (timeout 0
 * and a 1 ms sleep, no poll(): only the library's refill can move the
 * backlog on), and finishes each batch with dq_done_n().  Every message
 * once, payload intact, never before its due time on this test's clock,
 * in (due, commit) order across every refill; a stall fails at the
 * deadline instead of hanging.
 */
#define BURST_WINDOW	(1000 * MS)
#define BURST_BATCH	256U

static const uint64_t *burst_due;

static int burst_cmp(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	if (burst_due[x] != burst_due[y])
		return burst_due[x] < burst_due[y] ? -1 : 1;
	return x < y ? -1 : x > y;
}

static uint64_t burst_rand(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static void burst_sleep(uint64_t ns)
{
	struct timespec ts = { (time_t)(ns / 1000000000ULL),
			       (long)(ns % 1000000000ULL) };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* Commit @n messages (payload and user_data: the index) due at @due. */
static void burst_commit(struct dqshim_queue *q, const uint64_t *due, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		struct dqshim_msg m;
		uint64_t id = i;
		int ret;

		REQUIRE_EQ(dq_reserve(q, &m), 0);
		memcpy(m.data, &id, sizeof(id));
		ret = dq_commit(q, &m, sizeof(id), due[i], id);
		if (ret == -EAGAIN) {
			REQUIRE(dq_flush(q) >= 0);
			ret = dq_commit(q, &m, sizeof(id), due[i], id);
		}
		REQUIRE_EQ(ret, 0);
		if (i % 1024 == 1023)
			REQUIRE(dq_flush(q) >= 0);
	}
	REQUIRE(dq_flush(q) >= 0);
}

#define BURST_PROBE	8192U

/*
 * The lead before the burst's first due time: committing all @n must end
 * before it.  Measured on this boot, not assumed: BURST_PROBE messages
 * due an hour out, committed the same way into a scratch queue of the
 * same kind; the lead is 4 x that pace for @n plus 300 ms.  The 4 x is
 * for a burst committed at a busier moment than the probe and into a
 * fuller queue (8192 stand for 40000-50000); 300 ms for the guest
 * stalling meanwhile (TCG on a loaded host: up to ~100 ms seen).  A
 * burst that still comes in late fails as "cannot judge".
 */
static uint64_t burst_lead_ns(enum dq_path path, uint32_t open_flags, uint32_t n)
{
	uint64_t *due = calloc(BURST_PROBE, sizeof(*due));
	uint64_t far = contract_now() + 3600000 * MS, t0, took, lead;
	struct dqshim_queue *q;
	struct dq_params p;

	REQUIRE(due);
	for (uint32_t i = 0; i < BURST_PROBE; i++)
		due[i] = far + i;
	dq_params_init(&p);
	p.slot_count = BURST_PROBE;
	p.slot_size = 64;
	p.submit_entries = 4096;
	p.flags = open_flags;
	q = contract_open_params(DQ_BACKEND_KERNEL, path, &p);
	t0 = contract_now();
	burst_commit(q, due, BURST_PROBE);
	took = contract_now() - t0;
	dq_queue_close(q);
	free(due);
	lead = 4 * took * ((n + BURST_PROBE - 1) / BURST_PROBE) + 300 * MS;
	tap_diag("probe: %u committed in %.1f ms; lead for %u: %.1f ms",
		 BURST_PROBE, took / 1e6, n, lead / 1e6);
	return lead;
}

static void t_burst(enum dq_path path, uint32_t n, uint32_t open_flags,
		    uint32_t max_inflight, bool never_block)
{
	uint64_t *due = calloc(n, sizeof(*due));
	uint32_t *want = calloc(n, sizeof(*want));
	uint8_t *seen = calloc(n, 1);
	uint64_t seed = contract_now() | 1, t, t0, lead, max_due = 0, deadline;
	uint32_t got = 0, dup = 0, early = 0, order = 0, bad = 0, i;
	struct dq_reaped out[BURST_BATCH];
	uint32_t slots[BURST_BATCH];
	struct dq_queue_stats st;
	struct dq_info info = { .sz = sizeof(info) };
	struct dqshim_queue *q;
	struct dq_params p;

	REQUIRE(due && want && seen);
	tap_diag("n %u, seed %#llx", n, (unsigned long long)seed);
	dq_params_init(&p);
	p.slot_count = n;
	p.slot_size = 64;
	p.submit_entries = 4096;
	p.flags = open_flags;
	p.max_inflight = max_inflight;
	q = contract_open_params(DQ_BACKEND_KERNEL, path, &p);
	dq_queue_info(q, &info);
	tap_diag("ready ring %u entries for %u slots", info.ready_entries,
		 info.slot_count);
	/* The default ring, and far smaller than the burst. */
	REQUIRE(info.ready_entries * 8 <= n);
	CHECK(info.features & DQ_FEAT_READY_BACKLOG);

	lead = burst_lead_ns(path, open_flags, n);
	t0 = contract_now();
	t = t0 + lead;
	for (i = 0; i < n; i++) {
		due[i] = t + burst_rand(&seed) % BURST_WINDOW;
		if (due[i] > max_due)
			max_due = due[i];
	}
	burst_commit(q, due, n);
	tap_diag("committed in %.1f ms, %.1f ms before the first due time",
		 (contract_now() - t0) / 1e6, ((double)t - (double)contract_now()) / 1e6);
	/* Not a verdict on dq: the schedule needs every message in first. */
	if (contract_now() >= t)
		FAIL("cannot judge: committing took %.1f ms, until %.1f ms past the first due time",
		     (contract_now() - t0) / 1e6, (contract_now() - t) / 1e6);
	for (i = 0; i < n; i++)
		want[i] = i;
	burst_due = due;
	qsort(want, n, sizeof(*want), burst_cmp);

	/* A fifth of the second in, nothing reaped: the kernel holds the rest. */
	if (contract_now() < t + BURST_WINDOW / 5)
		burst_sleep(t + BURST_WINDOW / 5 - contract_now());
	REQUIRE_EQ(dq_queue_get_stats(q, &st), 0);
	tap_diag("a fifth in: released %llu, backlog %llu, paced %llu, pending %llu",
		 (unsigned long long)st.released,
		 (unsigned long long)st.ready_backlog,
		 (unsigned long long)st.paced, (unsigned long long)st.pending);
	if (max_inflight && max_inflight <= info.ready_entries)
		CHECK(st.paced > 0);	/* waiting for credits */
	else
		CHECK(st.ready_backlog > 0);

	deadline = max_due + 60000 * MS;
	while (got < n && contract_now() < deadline) {
		int k = dq_reap(q, out, BURST_BATCH,
				never_block ? 0 : (int64_t)(2000 * MS));
		uint64_t now = contract_now();

		if (k == 0 || k == -ETIME) {
			if (never_block)
				burst_sleep(MS);
			continue;
		}
		if (k < 0) {
			FAIL("dq_reap: %s", dq_strerror(k));
			break;
		}
		for (int j = 0; j < k; j++) {
			uint64_t id = out[j].user_data, v;

			slots[j] = out[j].slot;
			if (id >= n) {
				bad++;
				continue;
			}
			memcpy(&v, out[j].data, sizeof(v));
			if (v != id || out[j].due_ns != due[id])
				bad++;
			if (seen[id]++)
				dup++;
			if (now < due[id] || out[j].release_ns < due[id])
				early++;
			if (got < n && want[got] != id && order++ < 3)
				tap_diag("reaped #%u: id %llu (due %llu), expected %u (due %llu)",
					 got, (unsigned long long)id,
					 (unsigned long long)due[id], want[got],
					 (unsigned long long)due[want[got]]);
			got++;
		}
		REQUIRE_EQ(dq_done_n(q, slots, (unsigned int)k, NULL), k);
	}
	CHECK_EQ(got, n);
	CHECK_EQ(dup, 0);
	CHECK_EQ(early, 0);
	CHECK_EQ(order, 0);
	CHECK_EQ(bad, 0);
	REQUIRE_EQ(dq_queue_get_stats(q, &st), 0);
	CHECK_EQ(st.released, n);
	CHECK_EQ(st.ready_backlog, 0);
	CHECK_EQ(st.paced, 0);
	CHECK_EQ(st.pending, 0);
	CHECK_EQ(st.ring_errors, 0);
	/* Nothing more comes. */
	CHECK_EQ(dq_reap(q, out, 1, 50 * MS), -ETIME);
	dq_queue_close(q);
	free(due);
	free(want);
	free(seen);
}

TEST(burst_50k_uring, 300)
{
	t_burst(DQ_PATH_URING, 50000, 0, 0, false);
}

TEST(burst_50k_ioctl_never_block, 300)
{
	t_burst(DQ_PATH_IOCTL, 50000, 0, 0, true);
}

TEST(burst_uring_never_block, 300)
{
	t_burst(DQ_PATH_URING, 40000, 0, 0, true);
}

TEST(burst_tracked_ioctl, 300)
{
	t_burst(DQ_PATH_IOCTL, 40000, DQ_OPEN_F_TRACK, 0, false);
}

/* A cap above the ring: the backlog and the credits both in play. */
TEST(burst_tracked_cap_uring_never_block, 300)
{
	t_burst(DQ_PATH_URING, 40000, DQ_OPEN_F_TRACK, 3 * 4096, true);
}

/* A cap below the ring: every message waits for a credit, none backlogged. */
TEST(burst_tracked_cap_small_uring, 300)
{
	t_burst(DQ_PATH_URING, 40000, DQ_OPEN_F_TRACK, 1000, false);
}

/*
 * The consumer's WAIT stays parked between calls over io_uring: a reap
 * that times out leaves it for the next one, which submits nothing for
 * it.  Counted from outside the library: the SQ tails of every io_uring
 * of this process (/proc/self/fdinfo), none but the queue's.
 */
static long uring_sqes_submitted(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	long sum = 0;
	int rings = 0;

	if (!d)
		return -1;
	while ((e = readdir(d))) {
		char path[300], link[64], line[128];
		ssize_t n;
		FILE *f;

		snprintf(path, sizeof(path), "/proc/self/fd/%s", e->d_name);
		n = readlink(path, link, sizeof(link) - 1);
		if (n < 0)
			continue;
		link[n] = 0;
		if (strcmp(link, "anon_inode:[io_uring]"))
			continue;
		snprintf(path, sizeof(path), "/proc/self/fdinfo/%s", e->d_name);
		f = fopen(path, "re");
		if (!f)
			continue;
		while (fgets(line, sizeof(line), f)) {
			unsigned int tail;

			if (sscanf(line, "SqTail: %u", &tail) == 1) {
				sum += tail;
				rings++;
				break;
			}
		}
		fclose(f);
	}
	closedir(d);
	return rings ? sum : -1;
}

/* Commit message @id due @delay_ns from now and flush it. */
static void put_flush(struct dqshim_queue *q, uint64_t id, uint64_t delay_ns)
{
	contract_put(q, id, delay_ns);
	REQUIRE(dq_flush(q) >= 0);
}

/* Reap message @id within @within_ns of the test's clock, payload intact. */
static void reap_id(struct dqshim_queue *q, uint64_t id, uint64_t within_ns)
{
	uint64_t t0 = contract_now(), v = ~id;
	struct dq_reaped r[4];

	REQUIRE_EQ(dq_reap(q, r, 4, (int64_t)within_ns), 1);
	CHECK(contract_now() - t0 < within_ns);
	CHECK_EQ(r[0].user_data, id);
	memcpy(&v, r[0].data, sizeof(v));
	CHECK_EQ(v, id);
	dq_done(q, r[0].slot);
}

TEST(reap_timeouts_keep_one_wait_uring, 60)
{
	struct dqshim_queue *q = contract_open(&over_uring, 16, 64, 16,
					       NULL, NULL);
	struct dq_reaped r[4];
	long before, after, parks;
	uint64_t t0;
	int i;

	before = uring_sqes_submitted();
	if (before < 0)
		SKIP("no SqTail in io_uring's fdinfo");
	t0 = contract_now();
	for (i = 0; i < 20; i++)
		REQUIRE_EQ(dq_reap(q, r, 4, 2 * MS), -ETIME);
	after = uring_sqes_submitted();
	/* One WAIT, and one more each time its 250 ms deadline ended one. */
	parks = 1 + (long)((contract_now() - t0) / (250 * MS));
	tap_diag("SQEs for 20 timed-out reaps: %ld (at most %ld)",
		 after - before, parks);
	CHECK(after - before >= 1 && after - before <= parks);

	/* dq_flush_reap(): its SUBMITs, the WAIT still parked. */
	before = uring_sqes_submitted();
	t0 = contract_now();
	for (i = 0; i < 10; i++) {
		contract_put(q, 100 + i, 3600000 * MS);
		REQUIRE_EQ(dq_flush_reap(q, r, 4, 2 * MS), -ETIME);
	}
	after = uring_sqes_submitted();
	parks = 1 + (long)((contract_now() - t0) / (250 * MS));
	tap_diag("SQEs for 10 timed-out flush_reaps: %ld (at most 10 + %ld)",
		 after - before, parks);
	CHECK(after - before >= 10 && after - before <= 10 + parks);

	/* The parked WAIT still brings what comes due. */
	put_flush(q, 7, 100 * MS);
	reap_id(q, 7, 5000 * MS);
	dq_queue_close(q);
}

struct parker {
	struct dqshim_queue *q;
	int pipe_rd;		/* -1: exit after the reap */
	int reap_res;
	ssize_t read_res;
	char byte;
};

static void *park_then_block(void *arg)
{
	struct parker *p = arg;
	struct dq_reaped r[4];

	__atomic_store_n(&p->reap_res, dq_reap(p->q, r, 4, 20 * MS),
			 __ATOMIC_RELEASE);
	if (p->pipe_rd >= 0)
		p->read_res = read(p->pipe_rd, &p->byte, 1);
	return NULL;
}

/*
 * The WAIT parked by one thread completes as that thread's task work:
 * another thread waiting on it must not depend on the parker coming
 * back to the kernel (it may be blocked elsewhere, or gone), and the
 * parker's own blocking call must not see it (no EINTR, no early end).
 */
TEST(parked_wait_other_thread_uring, 60)
{
	struct dqshim_queue *q = contract_open(&over_uring, 16, 64, 16,
					       NULL, NULL);
	struct parker p = { .q = q };
	pthread_t th;
	int fds[2];

	REQUIRE_EQ(pipe(fds), 0);
	p.pipe_rd = fds[0];
	REQUIRE_EQ(pthread_create(&th, NULL, park_then_block, &p), 0);
	/* Let it time out and block in read(). */
	while (__atomic_load_n(&p.reap_res, __ATOMIC_ACQUIRE) == 0)
		usleep(1000);
	usleep(50000);
	CHECK_EQ(p.reap_res, -ETIME);
	put_flush(q, 1, 100 * MS);
	reap_id(q, 1, 5000 * MS);
	put_flush(q, 2, 100 * MS);
	reap_id(q, 2, 5000 * MS);
	REQUIRE_EQ(write(fds[1], "x", 1), 1);
	pthread_join(th, NULL);
	CHECK_EQ(p.read_res, 1);
	CHECK_EQ(p.byte, 'x');
	close(fds[0]);
	close(fds[1]);

	/* A parker that is gone. */
	p.pipe_rd = -1;
	p.reap_res = 0;
	REQUIRE_EQ(pthread_create(&th, NULL, park_then_block, &p), 0);
	pthread_join(th, NULL);
	CHECK_EQ(p.reap_res, -ETIME);
	put_flush(q, 3, 100 * MS);
	reap_id(q, 3, 5000 * MS);
	dq_queue_close(q);
}

/*
 * A process that parked a WAIT and then calls execve(): before 6.7 the
 * exec waits for the parked WAIT to end (no cancel hook), which its own
 * deadline bounds (250 ms, documented); the old park bound was 5 s.
 */
TEST(exec_after_parked_wait_uring, 60)
{
	struct dqshim_queue *q;
	uint64_t t0, took;
	int status;
	pid_t pid;

	q = contract_open(&over_uring, 16, 64, 16, NULL, NULL);
	dq_queue_close(q);
	t0 = contract_now();
	pid = fork();
	REQUIRE(pid >= 0);
	if (!pid) {
		struct dq_reaped r[4];

		q = contract_open(&over_uring, 16, 64, 16, NULL, NULL);
		if (dq_reap(q, r, 4, 2 * MS) != -ETIME)
			_exit(2);
		execl("/bin/true", "true", (char *)NULL);
		_exit(3);
	}
	REQUIRE_EQ(waitpid(pid, &status, 0), pid);
	took = contract_now() - t0;
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	tap_diag("fork, park, exec, exit: %.3f s",
		 (double)took / 1e9);
	/* 250 ms, and the rest of fork and exec under TCG: well below 5 s. */
	CHECK(took < 3000 * MS);
}

int main(int argc, char **argv)
{
	contract_register(&over_uring);
	contract_register(&over_ioctl);
	return tap_main(argc, argv);
}
