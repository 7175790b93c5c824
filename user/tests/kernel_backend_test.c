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
#include <errno.h>
#include <liburing.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
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
	struct dq_info info;

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

int main(int argc, char **argv)
{
	contract_register(&over_uring);
	contract_register(&over_ioctl);
	return tap_main(argc, argv);
}
