// SPDX-License-Identifier: LGPL-2.1 OR MIT
/*
 * libdqshim host tests on the user backend (no /dev/dq needed): the
 * library's contract (contract.c: never early, due order, FIFO ties,
 * exactly once, cancel answers, threads, zero copy, the pollable fd), the
 * same cases kernel_backend_test runs on dq.ko, then what is the user
 * engine's or the API's own: open's defaults and refusals, reservations,
 * commit validation, the single-consumer rule, error strings, the
 * io_uring prep helpers' SQE layout, counters.
 */
#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

#include "contract.h"
#include "dqshim.h"
#include "tap.h"

static const struct contract_backend user_engine = {
	.suffix = "", .backend = DQ_BACKEND_USER, .path = DQ_PATH_LOCAL,
	.per_producer = 20000,
};

static struct dqshim_queue *open_user(uint32_t slots, uint32_t size,
				      uint32_t submit_entries)
{
	return contract_open(&user_engine, slots, size, submit_entries,
			     NULL, NULL);
}

TEST(open_close, 10)
{
	struct dq_params p;
	struct dqshim_queue *q;
	struct dq_info info = { .sz = sizeof(info) };
	int ret;

	dq_params_init(&p);
	CHECK_EQ(p.numa_node, -1);
	CHECK_EQ(p.backend, DQ_BACKEND_AUTO);

	/* AUTO on a host without /dev/dq: the user engine. */
	if (access("/dev/dq", F_OK) != 0) {
		ret = dq_queue_open(&p, &q);
		REQUIRE_EQ(ret, 0);
		CHECK_EQ(dq_queue_backend(q), DQ_BACKEND_USER);
		CHECK(!strcmp(dq_backend_name(dq_queue_backend(q)), "user"));
		dq_queue_close(q);

		p.backend = DQ_BACKEND_KERNEL;
		q = (void *)1;
		CHECK_EQ(dq_queue_open(&p, &q), -ENOENT);
		CHECK(q == NULL);
	}

	p.backend = DQ_BACKEND_USER;
	p.slot_count = 100;
	p.slot_size = 100;
	p.submit_entries = 100;
	REQUIRE_EQ(dq_queue_open(&p, &q), 0);
	dq_queue_info(q, &info);
	CHECK_EQ(info.backend, DQ_BACKEND_USER);
	CHECK_EQ(info.path, DQ_PATH_LOCAL);
	CHECK_EQ(info.slot_count, 100);
	CHECK_EQ(info.slot_size, 128);		/* rounded to 64 */
	CHECK_EQ(info.submit_entries, 128);	/* power of two */
	CHECK(info.arena != NULL);
	CHECK(info.arena_size >= 100 * 128);
	CHECK(dq_queue_fd(q) >= 0);
	CHECK_EQ(info.fd, dq_queue_fd(q));
	CHECK(!strcmp(dq_path_name(info.path), "local"));
	CHECK(!strcmp(dq_backend_name(DQ_BACKEND_KERNEL), "kernel"));
	dq_queue_close(q);
	dq_queue_close(NULL);

	/* Bad parameters, as DQ_IOC_SETUP would refuse them. */
	dq_params_init(&p);
	p.backend = DQ_BACKEND_USER;
	p.slot_size = 32;
	CHECK_EQ(dq_queue_open(&p, &q), -EINVAL);
	p.slot_size = DQ_MAX_SLOT_SIZE + 1;
	CHECK_EQ(dq_queue_open(&p, &q), -EINVAL);
	p.slot_size = 64;
	p.slot_count = DQ_MAX_SLOTS + 1;
	CHECK_EQ(dq_queue_open(&p, &q), -EINVAL);
	p.slot_count = 10;
	p.granularity_ns = DQ_MAX_GRANULARITY_NS + 1;
	CHECK_EQ(dq_queue_open(&p, &q), -EINVAL);
	p.granularity_ns = 0;
	p.backend = 7;
	CHECK_EQ(dq_queue_open(&p, &q), -EINVAL);
	p.backend = DQ_BACKEND_USER;
	p.flags = 1U << 31;
	CHECK_EQ(dq_queue_open(&p, &q), -EINVAL);
	CHECK_EQ(dq_queue_open(&p, NULL), -EINVAL);

	/* NULL params: defaults. */
	REQUIRE_EQ(dq_queue_open(NULL, &q), 0);
	dq_queue_info(q, &info);
	CHECK_EQ(info.slot_count, 1024);
	dq_queue_close(q);
}

/* The 0.3 layout (docs/api.md): what changed, and what did not move. */
TEST(abi_0_3_layout, 5)
{
	struct dqshim_queue *q;
	struct dq_params p;
	struct dq_info info = { .sz = sizeof(info) };
	struct dqshim_msg m;

	EXPECT_GE(DQSHIM_VERSION_MAJOR * 100 + DQSHIM_VERSION_MINOR, 3);	/* 0.4: keys, no layout change */
	CHECK_EQ(sizeof(struct dq_reaped), 56);
	CHECK_EQ(offsetof(struct dq_reaped, len), 44);
	CHECK_EQ(offsetof(struct dq_reaped, attempts), 48);
	CHECK_EQ(offsetof(struct dq_reaped, redeliveries), 50);
	CHECK_EQ(offsetof(struct dq_reaped, resv), 52);
	CHECK_EQ(sizeof(struct dqshim_msg), 32);
	CHECK_EQ(offsetof(struct dqshim_msg, attempts), 20);
	CHECK_EQ(offsetof(struct dqshim_msg, handle), 24);
	/* 1.0: the same fields behind size_t sz (abi_test checks 0.x callers). */
	CHECK_EQ(offsetof(struct dq_params, max_inflight), 8 + 36);
	CHECK_EQ(offsetof(struct dq_params, on_reject), 8 + 40);

	/* The user engine tracks delivery too; reserve zeroes attempts. */
	dq_params_init(&p);
	CHECK_EQ(p.max_inflight, 0);
	p.backend = DQ_BACKEND_USER;
	p.flags = DQ_OPEN_F_TRACK;
	p.max_inflight = DQ_MAX_SLOTS;
	REQUIRE_EQ(dq_queue_open(&p, &q), 0);
	dq_queue_info(q, &info);
	CHECK(info.features & DQ_FEAT_TRACK);
	memset(&m, 0xff, sizeof(m));
	REQUIRE_EQ(dq_reserve(q, &m), 0);
	CHECK_EQ(m.attempts, 0);
	CHECK_EQ(m.resv, 0);
	dq_queue_close(q);
}

TEST(reserve_until_enospc, 10)
{
	struct dqshim_queue *q = open_user(16, 64, 0);
	struct dqshim_msg m[17], extra;
	uint64_t t0;
	int i;

	for (i = 0; i < 16; i++) {
		REQUIRE_EQ(dq_reserve(q, &m[i]), 0);
		CHECK_EQ(m[i].cap, 64);
		CHECK_EQ(m[i].handle, DQ_HANDLE(m[i].slot, m[i].gen));
	}
	CHECK_EQ(dq_reserve(q, &m[16]), -ENOSPC);
	t0 = contract_now();
	CHECK_EQ(dq_reserve_wait(q, &m[16], 20 * MS), -ETIME);
	CHECK(contract_now() - t0 >= 20 * MS);
	CHECK_EQ(dq_reserve_wait(q, &m[16], 0), -ETIME);
	/* Every slot distinct. */
	for (i = 0; i < 16; i++) {
		int j;

		for (j = i + 1; j < 16; j++)
			CHECK(m[i].slot != m[j].slot);
	}
	/* Abort gives the slot back; a stale abort is refused. */
	CHECK_EQ(dq_abort(q, &m[3]), 0);
	CHECK_EQ(dq_abort(q, &m[3]), -EINVAL);
	REQUIRE_EQ(dq_reserve(q, &extra), 0);
	CHECK_EQ(extra.slot, m[3].slot);
	CHECK(extra.gen != m[3].gen);
	CHECK_EQ(dq_reserve(q, &m[16]), -ENOSPC);
	dq_queue_close(q);
}

TEST(commit_validation, 10)
{
	struct dqshim_queue *q = open_user(4, 64, 0);
	struct dqshim_msg m, fake;

	REQUIRE_EQ(dq_reserve(q, &m), 0);
	CHECK_EQ(dq_commit(q, &m, 65, 0, 0), -EMSGSIZE);
	fake = m;
	fake.gen++;
	CHECK_EQ(dq_commit(q, &fake, 8, 0, 0), -EINVAL);
	fake = m;
	fake.slot = 99;
	CHECK_EQ(dq_commit(q, &fake, 8, 0, 0), -EINVAL);
	CHECK_EQ(dq_commit(q, &m, 64, contract_now() + 10 * MS, 1), 0);
	/* Committed: neither a second commit nor an abort. */
	CHECK_EQ(dq_commit(q, &m, 8, 0, 0), -EINVAL);
	CHECK_EQ(dq_abort(q, &m), -EINVAL);
	/* Not reaped: done refuses it. */
	CHECK_EQ(dq_done(q, m.slot), -EINVAL);
	CHECK_EQ(dq_done(q, 12345), -EINVAL);
	CHECK_EQ(dq_flush(q), 1);
	CHECK_EQ(dq_flush(q), 0);
	dq_queue_close(q);
}

TEST(past_due_released_at_once, 10)
{
	struct dqshim_queue *q = open_user(8, 64, 0);
	struct dq_reaped r[8];
	struct dqshim_msg m;
	uint64_t t0;

	REQUIRE_EQ(dq_reserve(q, &m), 0);
	REQUIRE_EQ(dq_commit(q, &m, 0, 0, 7), 0);	/* due at boot */
	REQUIRE_EQ(dq_flush(q), 1);
	t0 = contract_now();
	REQUIRE_EQ(dq_reap(q, r, 8, 5000 * MS), 1);
	CHECK(contract_now() - t0 < 2000 * MS);
	CHECK_EQ(r[0].user_data, 7);
	CHECK_EQ(r[0].len, 0);
	dq_queue_close(q);
}

/* This process's resident set, KiB (VmRSS), or -1. */
static long rss_kib(void)
{
	char line[128];
	long v = -1;
	FILE *f = fopen("/proc/self/status", "re");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmRSS: %ld kB", &v) == 1)
			break;
	fclose(f);
	return v;
}

/*
 * DQ_OPEN_F_LAZY_ARENA: a 64 MiB arena (16384 slots of 4 KiB) costs no
 * resident memory at open, and 256 messages written into it take about
 * their pages, not the arena; their bytes come back as written.  Without
 * the flag the open populates the arena (the baseline the bound is
 * judged against: at least 60 MiB resident).  Bounds: 8 MiB of slack for
 * what else the open maps (wheel nodes, rings, key index), and after the
 * messages 256 pages plus that slack.
 */
TEST(lazy_arena_resident, 10)
{
	struct dq_params p;
	struct dqshim_queue *q;
	struct dqshim_msg m;
	struct dq_reaped r[64];
	long before, opened, used;
	unsigned int i, got = 0, bad = 0;

	dq_params_init(&p);
	p.backend = DQ_BACKEND_USER;
	p.slot_count = 16384;
	p.slot_size = 4096;
	before = rss_kib();
	REQUIRE_EQ(dq_queue_open(&p, &q), 0);
	opened = rss_kib();
	dq_queue_close(q);
	CHECK(opened - before >= 60 * 1024, "populated arena: +%ld KiB",
	      opened - before);

	p.flags = DQ_OPEN_F_LAZY_ARENA;
	before = rss_kib();
	REQUIRE_EQ(dq_queue_open(&p, &q), 0);
	opened = rss_kib();
	CHECK(opened - before < 8 * 1024, "lazy arena at open: +%ld KiB",
	      opened - before);
	for (i = 0; i < 256; i++) {
		REQUIRE_EQ(dq_reserve(q, &m), 0);
		memset(m.data, (int)(i & 0xff), 1000);
		REQUIRE_EQ(dq_commit(q, &m, 1000, 0, i), 0);
	}
	REQUIRE_EQ(dq_flush(q), 256);
	used = rss_kib();
	CHECK(used - before < 256 * 4 + 8 * 1024, "256 messages: +%ld KiB",
	      used - before);
	while (got < 256) {
		int n = dq_reap(q, r, 64, 2000 * MS), k;

		REQUIRE(n > 0, "reap: %d after %u", n, got);
		for (k = 0; k < n; k++) {
			const unsigned char *d = r[k].data;
			unsigned int j;

			for (j = 0; j < r[k].len; j++)
				bad += d[j] != (unsigned char)(r[k].user_data & 0xff);
			bad += r[k].len != 1000;
			dq_done(q, r[k].slot);
		}
		got += (unsigned int)n;
	}
	CHECK_EQ(bad, 0);
	dq_queue_close(q);
}

/* dq_now_ns() is CLOCK_MONOTONIC, the clock the tests judge by. */
TEST(clock_is_monotonic, 10)
{
	uint64_t a = contract_now(), b = dq_now_ns(), c = contract_now();

	CHECK(a <= b && b <= c, "dq_now_ns %llu not within [%llu, %llu]",
	      (unsigned long long)b, (unsigned long long)a,
	      (unsigned long long)c);
}

/* ---- threads ------------------------------------------------------- */

struct busy_ctx {
	struct dqshim_queue *q;
	int stop;
};

static void *busy_reaper(void *arg)
{
	struct busy_ctx *c = arg;
	struct dq_reaped r[4];

	while (!__atomic_load_n(&c->stop, __ATOMIC_ACQUIRE))
		dq_reap(c->q, r, 4, 200 * MS);
	return NULL;
}

TEST(reap_single_consumer_ebusy, 10)
{
	struct dqshim_queue *q = open_user(8, 64, 0);
	struct busy_ctx c = { .q = q };
	struct dq_reaped r[4];
	uint64_t deadline;
	pthread_t th;
	int ret = 0;

	/* Another thread sits in dq_reap(): an overlapping call is refused. */
	REQUIRE_EQ(pthread_create(&th, NULL, busy_reaper, &c), 0);
	deadline = contract_now() + 5000 * MS;
	while (contract_now() < deadline) {
		ret = dq_reap(q, r, 4, 0);
		if (ret == -EBUSY)
			break;
		CHECK_EQ(ret, 0);
		usleep(5000);
	}
	CHECK_EQ(ret, -EBUSY);
	__atomic_store_n(&c.stop, 1, __ATOMIC_RELEASE);
	pthread_join(th, NULL);
	CHECK_EQ(dq_reap(q, r, 4, 0), 0);
	dq_queue_close(q);
}

TEST(strerror, 5)
{
	CHECK(strstr(dq_strerror(-ENOSPC), "slot") != NULL);
	CHECK(!strcmp(dq_strerror(-ENOSPC), dq_strerror(ENOSPC)));
	CHECK(strstr(dq_strerror(-EAGAIN), "flush") != NULL);
	CHECK(strstr(dq_strerror(-EALREADY), "already") != NULL);
	CHECK(strstr(dq_strerror(-EOVERFLOW), "far") != NULL);
	CHECK(dq_strerror(-ENOMEM) != NULL && *dq_strerror(-ENOMEM));
	CHECK(dq_strerror(0) != NULL);
	CHECK(dq_strerror(-987654) != NULL);
	CHECK(dq_strerror(-987654)[0] != 0);
}

TEST(prep_helpers_sqe_fields, 5)
{
	struct dqshim_queue *q = open_user(8, 64, 0);
	struct io_uring_sqe sqe, before;
	struct dq_submit s;
	struct dq_wait w = { .min_ready = 3, .timeout_ns = -1 };
	struct dq_cancel c = { .handle = DQ_HANDLE(5, 9) };
	unsigned char *raw = (unsigned char *)&sqe;
	unsigned int i, nonzero = 0;

	/* The generic helper: documented layout, user_data kept. */
	memset(&sqe, 0xff, sizeof(sqe));
	sqe.user_data = 0x1122334455667788ULL;
	REQUIRE_EQ(dq_prep_cmd(&sqe, 42, DQ_URING_CMD_WAIT, &w, sizeof(w)), 0);
	CHECK_EQ(sqe.opcode, IORING_OP_URING_CMD);
	CHECK_EQ(sqe.fd, 42);
	CHECK_EQ(sqe.cmd_op, DQ_URING_CMD_WAIT);
	CHECK_EQ(sqe.__pad1, 0);
	CHECK_EQ(sqe.flags, 0);
	CHECK_EQ(sqe.addr, 0);
	CHECK_EQ(sqe.len, 0);
	CHECK_EQ(sqe.uring_cmd_flags, 0);
	CHECK_EQ(sqe.buf_index, 0);
	CHECK_EQ(sqe.personality, 0);
	CHECK_EQ(sqe.file_index, 0);
	CHECK_EQ(sqe.user_data, 0x1122334455667788ULL);
	CHECK(!memcmp(raw + 48, &w, sizeof(w)));
	/* Nothing else set: bytes outside opcode/fd/cmd_op/user_data/cmd. */
	for (i = 0; i < 64; i++) {
		if (i == 0 || (i >= 4 && i < 12) || (i >= 32 && i < 40) || i >= 48)
			continue;
		nonzero += raw[i] != 0;
	}
	CHECK_EQ(nonzero, 0);

	REQUIRE_EQ(dq_prep_cmd(&sqe, 7, DQ_URING_CMD_CANCEL, &c, sizeof(c)), 0);
	CHECK_EQ(sqe.cmd_op, DQ_URING_CMD_CANCEL);
	CHECK(!memcmp(raw + 48, &c, sizeof(c)));
	CHECK_EQ(dq_prep_cmd(&sqe, 7, DQ_URING_CMD_CANCEL, &c, 17), -EINVAL);
	REQUIRE_EQ(dq_prep_cmd(&sqe, 7, 0x1234, NULL, 0), 0);
	for (i = 48, nonzero = 0; i < 64; i++)
		nonzero += raw[i] != 0;
	CHECK_EQ(nonzero, 0);

	/* Opcodes as the uapi header defines them. */
	CHECK_EQ(DQ_URING_CMD_SUBMIT, _IOWR(DQ_IOC_MAGIC, 0x20, struct dq_uring_submit));
	CHECK_EQ(sizeof(struct dq_uring_submit), 16);
	CHECK_EQ(sizeof(struct dq_wait), 16);
	CHECK_EQ(sizeof(struct dq_cancel), 16);

	/*
	 * The kernel's io_uring takes the SQE as a valid URING_CMD: /dev/null
	 * completes it with 0 (mem.c has a no-op ->uring_cmd) or, on kernels
	 * without that, -EOPNOTSUPP; a malformed SQE (reserved fields set)
	 * would get -EINVAL.
	 */
	{
		struct io_uring ring;
		struct io_uring_cqe *cqe;
		struct io_uring_sqe *rsqe;
		int fd = open("/dev/null", O_RDWR | O_CLOEXEC);

		REQUIRE(fd >= 0);
		if (io_uring_queue_init(4, &ring, 0) == 0) {
			rsqe = io_uring_get_sqe(&ring);
			REQUIRE_EQ(dq_prep_cmd(rsqe, fd, DQ_URING_CMD_WAIT, &w,
					       sizeof(w)), 0);
			io_uring_sqe_set_data64(rsqe, 99);
			REQUIRE_EQ(io_uring_submit_and_wait(&ring, 1), 1);
			REQUIRE_EQ(io_uring_wait_cqe(&ring, &cqe), 0);
			CHECK_EQ(cqe->user_data, 99);
			CHECK(cqe->res == 0 || cqe->res == -EOPNOTSUPP,
			      "res %d", cqe->res);
			io_uring_cqe_seen(&ring, cqe);
			io_uring_queue_exit(&ring);
		} else {
			tap_diag("no io_uring here: SQE not run through the kernel");
		}
		close(fd);
	}

	/* The user backend has no kernel file: refused, SQE untouched. */
	memset(&sqe, 0x5a, sizeof(sqe));
	before = sqe;
	memset(&s, 0, sizeof(s));
	CHECK_EQ(dq_prep_submit(&sqe, q, &s), -EOPNOTSUPP);
	CHECK_EQ(dq_prep_wait(&sqe, q, 1, -1), -EOPNOTSUPP);
	CHECK_EQ(dq_prep_cancel(&sqe, q, 1), -EOPNOTSUPP);
	CHECK(!memcmp(&sqe, &before, sizeof(sqe)));
	dq_queue_close(q);
}

TEST(stats_counters, 10)
{
	struct dqshim_queue *q = open_user(64, 128, 0);
	struct dq_queue_stats st;
	struct dq_reaped r[64];
	int i, got = 0;

	for (i = 0; i < 10; i++)
		contract_put(q, (uint64_t)i, 5 * MS);
	contract_put(q, 99, 10000 * MS);
	REQUIRE_EQ(dq_flush(q), 11);
	REQUIRE_EQ(dq_queue_get_stats(q, &st), 0);
	CHECK_EQ(st.submitted, 11);
	CHECK_EQ(st.pending, 11);
	CHECK_EQ(st.slot_count, 64);
	CHECK_EQ(st.slot_size, 128);
	while (got < 10) {
		int n = dq_reap(q, r, 64, 1000 * MS);

		REQUIRE(n > 0);
		got += n;
	}
	REQUIRE_EQ(dq_queue_get_stats(q, &st), 0);
	CHECK_EQ(st.released, 10);
	CHECK_EQ(st.pending, 1);
	CHECK(st.late_max_ns > 0);
	CHECK(st.late_sum_ns >= st.late_max_ns);
	dq_queue_close(q);	/* with a message still pending */
}

int main(int argc, char **argv)
{
	contract_register(&user_engine);
	return tap_main(argc, argv);
}
