// SPDX-License-Identifier: LGPL-2.1 OR MIT
/*
 * dq_errno: every error a /dev/dq call documents (uapi/linux/dq.h,
 * docs/api.md), asserted as that exact errno.  Each case also checks that
 * the refused call changed nothing it should not have.
 *
 * The io_uring cases use a minimal ring built on the raw system calls (no
 * liburing), issued inline; how commands complete from io-wq, SQPOLL and
 * linked chains is dq_uring_async's subject.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <linux/io_uring.h>

#include "dqtest.h"
#include "tap.h"

/* An address no process maps: copy_{from,to}_user() fail on it. */
#define BAD_PTR ((void *)16)

/* ---- a minimal io_uring ------------------------------------------- */

struct uring {
	int fd;
	void *sq_map, *cq_map;
	size_t sq_len, cq_len, sqes_len;
	unsigned int *sq_head, *sq_tail, *sq_mask, *sq_array;
	unsigned int *cq_head, *cq_tail, *cq_mask;
	struct io_uring_cqe *cqes;
	struct io_uring_sqe *sqes;
};

static int ur_init(struct uring *r, unsigned int entries)
{
	struct io_uring_params p;

	memset(&p, 0, sizeof(p));
	memset(r, 0, sizeof(*r));
	r->fd = (int)syscall(__NR_io_uring_setup, entries, &p);
	if (r->fd < 0)
		return -errno;
	r->sq_len = p.sq_off.array + p.sq_entries * sizeof(unsigned int);
	r->cq_len = p.cq_off.cqes + p.cq_entries * sizeof(struct io_uring_cqe);
	r->sqes_len = p.sq_entries * sizeof(struct io_uring_sqe);
	r->sq_map = mmap(NULL, r->sq_len, PROT_READ | PROT_WRITE,
			 MAP_SHARED | MAP_POPULATE, r->fd, IORING_OFF_SQ_RING);
	r->cq_map = mmap(NULL, r->cq_len, PROT_READ | PROT_WRITE,
			 MAP_SHARED | MAP_POPULATE, r->fd, IORING_OFF_CQ_RING);
	r->sqes = mmap(NULL, r->sqes_len, PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_POPULATE, r->fd, IORING_OFF_SQES);
	if (r->sq_map == MAP_FAILED || r->cq_map == MAP_FAILED ||
	    r->sqes == MAP_FAILED)
		return -errno;
	r->sq_head = (unsigned int *)((char *)r->sq_map + p.sq_off.head);
	r->sq_tail = (unsigned int *)((char *)r->sq_map + p.sq_off.tail);
	r->sq_mask = (unsigned int *)((char *)r->sq_map + p.sq_off.ring_mask);
	r->sq_array = (unsigned int *)((char *)r->sq_map + p.sq_off.array);
	r->cq_head = (unsigned int *)((char *)r->cq_map + p.cq_off.head);
	r->cq_tail = (unsigned int *)((char *)r->cq_map + p.cq_off.tail);
	r->cq_mask = (unsigned int *)((char *)r->cq_map + p.cq_off.ring_mask);
	r->cqes = (struct io_uring_cqe *)((char *)r->cq_map + p.cq_off.cqes);
	return 0;
}

static void ur_exit(struct uring *r)
{
	if (r->sqes && r->sqes != MAP_FAILED)
		munmap(r->sqes, r->sqes_len);
	if (r->cq_map && r->cq_map != MAP_FAILED)
		munmap(r->cq_map, r->cq_len);
	if (r->sq_map && r->sq_map != MAP_FAILED)
		munmap(r->sq_map, r->sq_len);
	if (r->fd > 0)
		close(r->fd);
	memset(r, 0, sizeof(*r));
}

/*
 * Queue one IORING_OP_URING_CMD on @fd (a fixed-file index with
 * IOSQE_FIXED_FILE in @sqe_flags) and submit it.  0 or -errno.
 */
static int ur_cmd(struct uring *r, int fd, unsigned int sqe_flags,
		  uint32_t cmd_op, const void *payload, size_t len,
		  uint64_t user_data)
{
	unsigned int tail = *r->sq_tail, idx = tail & *r->sq_mask;
	struct io_uring_sqe *sqe = &r->sqes[idx];
	int ret;

	memset(sqe, 0, sizeof(*sqe));
	sqe->opcode = IORING_OP_URING_CMD;
	sqe->flags = (uint8_t)sqe_flags;
	sqe->fd = fd;
	sqe->cmd_op = cmd_op;
	sqe->user_data = user_data;
	memcpy((char *)sqe + 48, payload, len);	/* sqe->cmd: 16 bytes */
	r->sq_array[idx] = idx;
	__atomic_store_n(r->sq_tail, tail + 1, __ATOMIC_RELEASE);
	ret = (int)syscall(__NR_io_uring_enter, r->fd, 1, 0, 0, NULL, 0);
	if (ret < 0)
		return -errno;
	return ret == 1 ? 0 : -EIO;
}

/* The next completion within @timeout_ms: 0, or -ETIME when none came. */
static int ur_reap(struct uring *r, int timeout_ms, int *res, uint64_t *data)
{
	uint64_t deadline = dqt_now_ns() + (uint64_t)timeout_ms * NSEC_PER_MSEC;

	for (;;) {
		unsigned int head = *r->cq_head;

		if (head != __atomic_load_n(r->cq_tail, __ATOMIC_ACQUIRE)) {
			struct io_uring_cqe *cqe = &r->cqes[head & *r->cq_mask];

			*res = cqe->res;
			if (data)
				*data = cqe->user_data;
			__atomic_store_n(r->cq_head, head + 1, __ATOMIC_RELEASE);
			return 0;
		}
		uint64_t now = dqt_now_ns();

		if (now >= deadline)
			return -ETIME;
		/* Enter the kernel so that task work (completions) runs. */
		struct pollfd pfd = { .fd = r->fd, .events = POLLIN };

		poll(&pfd, 1, (int)((deadline - now) / NSEC_PER_MSEC) + 1);
		syscall(__NR_io_uring_enter, r->fd, 0, 0, IORING_ENTER_GETEVENTS,
			NULL, 0);
	}
}

/* No completion at all: a value no command returns. */
#define UR_NONE 0x7fffffff

/* Issue one command inline and return its result (UR_NONE: none in 10 s). */
static int ur_run(struct uring *r, int fd, uint32_t cmd_op, const void *payload,
		  size_t len)
{
	int res = UR_NONE, ret;

	ret = ur_cmd(r, fd, 0, cmd_op, payload, len, 0x1234);
	if (ret)
		return ret;
	if (ur_reap(r, (int)(10000 * tap_timeout_scale()), &res, NULL))
		return UR_NONE;
	return res;
}

static void ring_or_skip(struct uring *r)
{
	int ret = ur_init(r, 8);

	if (ret == -ENOSYS || ret == -EPERM)
		SKIP("io_uring unavailable: %s", strerror(-ret));
	ASSERT_EQ(ret, 0);
}

/* ---- DQ_IOC_SETUP -------------------------------------------------- */

static long sysfs_ulong(const char *path)
{
	char buf[64];
	long v = -1;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -1;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);

	if (n > 0) {
		buf[n] = '\0';
		v = strtol(buf, NULL, 0);
	}
	close(fd);
	return v;
}

TEST(setup_efault)
{
	int fd = dqt_open_dev();

	ASSERT_GE(fd, 0);
	EXPECT_SYSERR(ioctl(fd, DQ_IOC_SETUP, BAD_PTR), EFAULT);
	EXPECT_SYSERR(ioctl(fd, DQ_IOC_SETUP, NULL), EFAULT);
	/* nothing was set up: the file still has no queue */
	EXPECT_SYSERR(ioctl(fd, DQ_IOC_QUEUE_STATS, &(struct dq_queue_stats){ 0 }),
		      ENXIO);
	struct dq_setup s = { .slot_count = 4, .slot_size = 64, .numa_node = -1 };

	EXPECT_SYSOK(ioctl(fd, DQ_IOC_SETUP, &s));
	close(fd);
}

TEST(setup_arena_over_max_e2big)
{
	long max = sysfs_ulong("/sys/module/dq/parameters/max_arena_bytes");

	if (max <= 0)
		SKIP("cannot read max_arena_bytes");
	uint64_t slots = (uint64_t)max / DQ_MAX_SLOT_SIZE + 1;

	if (slots > DQ_MAX_SLOTS)
		SKIP("max_arena_bytes %ld is above the largest possible arena", max);
	DIAG("max_arena_bytes %ld: %llu slots of %u bytes", max,
	     (unsigned long long)slots, DQ_MAX_SLOT_SIZE);
	int fd = dqt_open_dev();

	ASSERT_GE(fd, 0);
	struct dq_setup s = { .slot_count = (uint32_t)slots,
			      .slot_size = DQ_MAX_SLOT_SIZE, .numa_node = -1 };

	EXPECT_SYSERR(ioctl(fd, DQ_IOC_SETUP, &s), E2BIG);
	/*
	 * The slot size counts after rounding up to 64: find a size whose
	 * unrounded product fits max_arena_bytes and whose rounded one does not.
	 */
	for (uint64_t sr = DQ_MAX_SLOT_SIZE; sr >= 64 * 1024; sr -= 64) {
		uint64_t n = (uint64_t)max / sr + 1;

		if (n > DQ_MAX_SLOTS || n * (sr - 63) > (uint64_t)max)
			continue;
		DIAG("%llu slots of %llu bytes (%llu rounded): E2BIG",
		     (unsigned long long)n, (unsigned long long)(sr - 63),
		     (unsigned long long)sr);
		s = (struct dq_setup){ .slot_count = (uint32_t)n,
				       .slot_size = (uint32_t)(sr - 63),
				       .numa_node = -1 };
		EXPECT_SYSERR(ioctl(fd, DQ_IOC_SETUP, &s), E2BIG);
		break;
	}
	s = (struct dq_setup){ .slot_count = 4, .slot_size = 64, .numa_node = -1 };
	EXPECT_SYSOK(ioctl(fd, DQ_IOC_SETUP, &s));
	close(fd);
}

/*
 * SETUP on a file that has a queue is -EBUSY before its arguments are
 * looked at (ATTACH checks its arguments first: see attach_errors).
 */
TEST(setup_ebusy_before_args)
{
	struct dqt_queue q;
	struct dq_setup s = { .flags = 1, .slot_count = 0, .slot_size = 1,
			      .numa_node = -1 };

	ASSERT_OK(dqt_queue_init(&q, &DQT_PARAMS(.slot_count = 4, .slot_size = 64)));
	EXPECT_SYSERR(ioctl(q.fd, DQ_IOC_SETUP, &s), EBUSY);
	s = (struct dq_setup){ .slot_count = 4, .slot_size = 64, .numa_node = -1 };
	EXPECT_SYSERR(ioctl(q.fd, DQ_IOC_SETUP, &s), EBUSY);
	/* the argument is read first, though: a bad pointer is -EFAULT */
	EXPECT_SYSERR(ioctl(q.fd, DQ_IOC_SETUP, BAD_PTR), EFAULT);
	dqt_queue_fini(&q);
}

/* ---- DQ_IOC_ATTACH (no named queue needed) -------------------------- */

TEST(attach_errors)
{
	struct dq_attach at;
	int fd = dqt_open_dev();

	ASSERT_GE(fd, 0);
	EXPECT_SYSERR(ioctl(fd, DQ_IOC_ATTACH, BAD_PTR), EFAULT);

	memset(&at, 0, sizeof(at));
	strcpy(at.name, "dq-errno-no-such-queue");
	EXPECT_SYSERR(ioctl(fd, DQ_IOC_ATTACH, &at), ENOENT);
	at.flags = DQ_ATTACH_F_ALL + 1;		/* an unknown flag */
	EXPECT_SYSERR(ioctl(fd, DQ_IOC_ATTACH, &at), EINVAL);
	at.flags = 0;
	at.resv = 1;
	EXPECT_SYSERR(ioctl(fd, DQ_IOC_ATTACH, &at), EINVAL);
	at.resv = 0;
	memset(at.name, 0, sizeof(at.name));
	EXPECT_SYSERR(ioctl(fd, DQ_IOC_ATTACH, &at), EINVAL);	/* empty */
	memset(at.name, 'a', sizeof(at.name));			/* no NUL */
	EXPECT_SYSERR(ioctl(fd, DQ_IOC_ATTACH, &at), EINVAL);
	/* a name no queue could have: just not found */
	memset(&at, 0, sizeof(at));
	strcpy(at.name, "bad name!");
	EXPECT_SYSERR(ioctl(fd, DQ_IOC_ATTACH, &at), ENOENT);
	/* none of that gave the file a queue */
	EXPECT_SYSERR(ioctl(fd, DQ_IOC_QUEUE_STATS, &(struct dq_queue_stats){ 0 }),
		      ENXIO);

	/* a file that has a queue: -EBUSY, checked before the name */
	struct dq_setup s = { .slot_count = 4, .slot_size = 64, .numa_node = -1 };

	ASSERT_SYSOK(ioctl(fd, DQ_IOC_SETUP, &s));
	memset(&at, 0, sizeof(at));
	strcpy(at.name, "dq-errno-no-such-queue");
	EXPECT_SYSERR(ioctl(fd, DQ_IOC_ATTACH, &at), EBUSY);
	at.flags = DQ_ATTACH_F_ALL + 1;
	EXPECT_SYSERR(ioctl(fd, DQ_IOC_ATTACH, &at), EINVAL);	/* args first */
	struct dq_queue_stats st;

	EXPECT_SYSOK(ioctl(fd, DQ_IOC_QUEUE_STATS, &st));
	EXPECT_EQ(st.queue_id, s.queue_id);
	close(fd);
}

/* ---- queue ioctls: bad pointers ------------------------------------ */

TEST(queue_ioctls_efault)
{
	struct dqt_queue q;
	struct dq_queue_stats st;

	ASSERT_OK(dqt_queue_init(&q, &DQT_PARAMS(.slot_count = 8, .slot_size = 64)));
	ASSERT_OK(dqt_push_msg(&q, 0, 1, 10 * NSEC_PER_SEC, DQ_DESC_F_RELATIVE, 8, 1));
	/* SUBMIT with an unreadable argument consumes nothing */
	EXPECT_SYSERR(ioctl(q.fd, DQ_IOC_SUBMIT, BAD_PTR), EFAULT);
	EXPECT_EQ(dqt_load_acq(q.sq.consumer), 0);
	EXPECT_SYSERR(ioctl(q.fd, DQ_IOC_WAIT, BAD_PTR), EFAULT);
	EXPECT_SYSERR(ioctl(q.fd, DQ_IOC_CANCEL, BAD_PTR), EFAULT);
	EXPECT_SYSERR(ioctl(q.fd, DQ_IOC_QUEUE_STATS, BAD_PTR), EFAULT);
	EXPECT_SYSERR(ioctl(q.fd, DQ_IOC_NODE_STATS, BAD_PTR), EFAULT);
	EXPECT_SYSERR(ioctl(q.fd, DQ_IOC_SLOT_MAP, BAD_PTR), EFAULT);
	ASSERT_OK(dqt_queue_stats(&q, &st));
	EXPECT_EQ(st.submitted, 0);
	EXPECT_EQ(dqt_submit(&q, 0, NULL, 0, NULL), 1);
	dqt_queue_fini(&q);
}

/*
 * A rejects array the kernel cannot write: -EFAULT, yet every descriptor
 * was consumed and the valid ones are pending (as documented).
 */
TEST(submit_rejects_efault_consumes)
{
	struct dqt_queue q;
	struct dq_queue_stats st;
	struct dq_submit s;

	ASSERT_OK(dqt_queue_init(&q, &DQT_PARAMS(.slot_count = 8, .slot_size = 64)));
	ASSERT_OK(dqt_push_msg(&q, 99, 1, 0, DQ_DESC_F_RELATIVE, 8, 1));	/* bad slot */
	ASSERT_OK(dqt_push_msg(&q, 1, 1, 10 * NSEC_PER_SEC, DQ_DESC_F_RELATIVE, 8, 2));
	memset(&s, 0, sizeof(s));
	s.rejects = (uint64_t)(uintptr_t)BAD_PTR;
	s.reject_cap = 4;
	EXPECT_SYSERR(ioctl(q.fd, DQ_IOC_SUBMIT, &s), EFAULT);
	EXPECT_EQ(dqt_load_acq(q.sq.consumer), 2);
	ASSERT_OK(dqt_queue_stats(&q, &st));
	EXPECT_EQ(st.submitted, 1);
	EXPECT_EQ(st.pending, 1);
	EXPECT_EQ(st.rejected[DQ_REJ_SLOT], 1);
	/* reject_cap 0: the array is never written, so no -EFAULT */
	ASSERT_OK(dqt_push_msg(&q, 98, 1, 0, DQ_DESC_F_RELATIVE, 8, 3));
	s.reject_cap = 0;
	EXPECT_EQ(ioctl(q.fd, DQ_IOC_SUBMIT, &s), 0);
	EXPECT_EQ(dqt_cancel(&q, 1, 1), 0);
	dqt_queue_fini(&q);
}

/* ---- DQ_IOC_WAIT ------------------------------------------------------ */

TEST(wait_min_ready_over_ring_einval)
{
	struct dqt_queue q;
	struct dq_wait w = { .timeout_ns = 0 };

	ASSERT_OK(dqt_queue_init(&q, &DQT_PARAMS(.slot_count = 64, .slot_size = 64,
						  .ready_entries = 16)));
	uint32_t nr = q.rq.nr;

	w.min_ready = nr + 1;
	EXPECT_SYSERR(ioctl(q.fd, DQ_IOC_WAIT, &w), EINVAL);
	w.min_ready = 0xffffffff;
	EXPECT_SYSERR(ioctl(q.fd, DQ_IOC_WAIT, &w), EINVAL);
	w.min_ready = nr;	/* the whole ring: allowed, times out */
	EXPECT_SYSERR(ioctl(q.fd, DQ_IOC_WAIT, &w), ETIME);
	w.min_ready = 0;	/* always satisfied: the count, 0 */
	EXPECT_EQ(ioctl(q.fd, DQ_IOC_WAIT, &w), 0);
	dqt_queue_fini(&q);
}

TEST(wait_broken_consumer_eproto)
{
	struct dqt_queue q;

	ASSERT_OK(dqt_queue_init(&q, &DQT_PARAMS(.slot_count = 8, .slot_size = 64)));
	uint32_t cons = *q.rq.consumer;

	dqt_store_rel(q.rq.consumer, cons + 1);	/* ahead of the producer */
	EXPECT_EQ(dqt_wait(&q, 1, 1 * NSEC_PER_SEC), -EPROTO);
	EXPECT_EQ(dqt_wait(&q, 1, -1), -EPROTO);
	struct pollfd pfd = { .fd = q.fd, .events = POLLIN };

	EXPECT_EQ(poll(&pfd, 1, 0), 1);
	EXPECT_TRUE(pfd.revents & POLLERR);
	dqt_store_rel(q.rq.consumer, cons);
	EXPECT_EQ(dqt_wait(&q, 1, 0), -ETIME);
	pfd.revents = 0;
	EXPECT_EQ(poll(&pfd, 1, 0), 0);
	dqt_queue_fini(&q);
}

static void on_usr1(int sig)
{
	(void)sig;
}

struct kick {
	pthread_t target;
	volatile int stop;
};

/* Signal the target every 100 ms until told to stop (a WAIT may start late). */
static void *kicker(void *p)
{
	struct kick *k = p;

	while (!k->stop) {
		dqt_sleep_ns(100 * NSEC_PER_MSEC);
		if (!k->stop)
			pthread_kill(k->target, SIGUSR1);
	}
	return NULL;
}

static int wait_kicked(struct dqt_queue *q, int64_t timeout_ns)
{
	struct kick k = { .target = pthread_self() };
	pthread_t th;
	int ret;

	if (pthread_create(&th, NULL, kicker, &k))
		return -EAGAIN;
	ret = dqt_wait(q, 1, timeout_ns);
	k.stop = 1;
	pthread_join(th, NULL);
	return ret;
}

/* A signal whose handler has no SA_RESTART ends a WAIT with -EINTR. */
TEST(wait_signal_eintr)
{
	struct sigaction sa = { .sa_handler = on_usr1 };	/* no SA_RESTART */
	struct dqt_queue q;

	ASSERT_SYSOK(sigaction(SIGUSR1, &sa, NULL));
	ASSERT_OK(dqt_queue_init(&q, &DQT_PARAMS(.slot_count = 4, .slot_size = 64)));
	EXPECT_EQ(wait_kicked(&q, -1), -EINTR);
	EXPECT_EQ(wait_kicked(&q, 20 * NSEC_PER_SEC), -EINTR);
	dqt_queue_fini(&q);
}

/* ---- DQ_IOC_NODE_STATS ---------------------------------------------- */

TEST(node_stats_errors)
{
	struct dq_node_stats ns;
	int fd = dqt_open_dev();

	ASSERT_GE(fd, 0);
	/* a file without a queue answers too */
	memset(&ns, 0, sizeof(ns));
	EXPECT_SYSOK(ioctl(fd, DQ_IOC_NODE_STATS, &ns));
	static const int bad[] = { -1, -2, 1 << 20, 0x7fffffff, (int)0x80000000 };

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		memset(&ns, 0, sizeof(ns));
		ns.node = bad[i];
		errno = 0;
		if (ioctl(fd, DQ_IOC_NODE_STATS, &ns) != -1 || errno != EINVAL)
			FAIL("NODE_STATS node %d: errno %s, expected EINVAL", bad[i],
			     strerrorname_np(errno) ?: "0");
	}
	/* the first node number past every possible node */
	long possible = -1;
	char buf[128];
	FILE *f = fopen("/sys/devices/system/node/possible", "r");

	if (f && fgets(buf, sizeof(buf), f)) {
		char *dash = strrchr(buf, '-'), *comma = strrchr(buf, ',');
		char *last = dash && dash > (comma ? comma : buf) ? dash + 1 :
			     comma ? comma + 1 : buf;

		possible = strtol(last, NULL, 10) + 1;
	}
	if (f)
		fclose(f);
	if (possible > 0) {
		memset(&ns, 0, sizeof(ns));
		ns.node = (int32_t)possible;
		EXPECT_SYSERR(ioctl(fd, DQ_IOC_NODE_STATS, &ns), EINVAL);
	}
	/* reserved fields */
	memset(&ns, 0, sizeof(ns));
	ns.resv0 = 1;
	EXPECT_SYSERR(ioctl(fd, DQ_IOC_NODE_STATS, &ns), EINVAL);
	for (int i = 0; i < 4; i++) {
		memset(&ns, 0, sizeof(ns));
		ns.resv[i] = 1;
		EXPECT_SYSERR(ioctl(fd, DQ_IOC_NODE_STATS, &ns), EINVAL);
	}
	close(fd);
}

/* ---- DQ_IOC_SLOT_MAP ----------------------------------------------- */

TEST(slot_map_errors)
{
	struct dqt_queue q;
	uint64_t bits[2] = { ~0ULL, ~0ULL };
	struct dq_slot_map m;

	ASSERT_OK(dqt_queue_init(&q, &DQT_PARAMS(.slot_count = 70, .slot_size = 64)));
	/* one held, one released and not consumed */
	ASSERT_OK(dqt_push_msg(&q, 3, 1, 10 * NSEC_PER_SEC, DQ_DESC_F_RELATIVE, 8, 3));
	ASSERT_OK(dqt_push_msg(&q, 65, 1, 0, DQ_DESC_F_RELATIVE, 8, 65));
	ASSERT_EQ(dqt_submit(&q, 0, NULL, 0, NULL), 2);
	uint64_t dl = dqt_now_ns() + 10 * NSEC_PER_SEC;

	while (!dqt_ready_count(&q) && dqt_now_ns() < dl)
		dqt_sleep_ns(NSEC_PER_MSEC);
	ASSERT_EQ(dqt_ready_count(&q), 1);

	m = (struct dq_slot_map){ .bitmap = (uintptr_t)bits, .slot_count = 70 };
	ASSERT_SYSOK(ioctl(q.fd, DQ_IOC_SLOT_MAP, &m));
	EXPECT_EQ(bits[0], 1ULL << 3);
	EXPECT_EQ(bits[1], 1ULL << 1);

	static const uint32_t wrong[] = { 0, 69, 71, 64, 128, 0xffffffff };

	for (size_t i = 0; i < sizeof(wrong) / sizeof(wrong[0]); i++) {
		bits[0] = bits[1] = 0x5a5a;
		m = (struct dq_slot_map){ .bitmap = (uintptr_t)bits,
					  .slot_count = wrong[i] };
		errno = 0;
		if (ioctl(q.fd, DQ_IOC_SLOT_MAP, &m) != -1 || errno != EINVAL)
			FAIL("SLOT_MAP slot_count %u (queue 70): errno %s, expected EINVAL",
			     wrong[i], strerrorname_np(errno) ?: "0");
		EXPECT_EQ(bits[0], 0x5a5a);	/* not written */
	}
	m = (struct dq_slot_map){ .bitmap = (uintptr_t)bits, .slot_count = 70,
				  .resv = 1 };
	EXPECT_SYSERR(ioctl(q.fd, DQ_IOC_SLOT_MAP, &m), EINVAL);
	m = (struct dq_slot_map){ .bitmap = (uintptr_t)BAD_PTR, .slot_count = 70 };
	EXPECT_SYSERR(ioctl(q.fd, DQ_IOC_SLOT_MAP, &m), EFAULT);

	/* a broken ready consumer index: -EPROTO */
	uint32_t cons = *q.rq.consumer;

	dqt_store_rel(q.rq.consumer, cons + 5);
	m = (struct dq_slot_map){ .bitmap = (uintptr_t)bits, .slot_count = 70 };
	EXPECT_SYSERR(ioctl(q.fd, DQ_IOC_SLOT_MAP, &m), EPROTO);
	dqt_store_rel(q.rq.consumer, cons);
	EXPECT_SYSOK(ioctl(q.fd, DQ_IOC_SLOT_MAP, &m));
	EXPECT_EQ(dqt_cancel(&q, 3, 1), 0);
	dqt_queue_fini(&q);
}

/* ---- the file: read, write, lseek, mmap, mprotect, mremap, madvise -- */

TEST(read_write_lseek)
{
	char buf[16];
	int fd = dqt_open_dev();

	ASSERT_GE(fd, 0);
	EXPECT_SYSERR(read(fd, buf, sizeof(buf)), EINVAL);
	EXPECT_SYSERR(write(fd, buf, sizeof(buf)), EINVAL);
	EXPECT_SYSERR(lseek(fd, 0, SEEK_SET), ESPIPE);
	close(fd);
}

TEST(mmap_file_errors)
{
	struct dqt_queue q;
	const int rw = PROT_READ | PROT_WRITE;

	ASSERT_OK(dqt_queue_init(&q, &DQT_PARAMS(.slot_count = 256, .slot_size = 64)));
	long pg = sysconf(_SC_PAGESIZE);

	ASSERT_GE((long)q.arena_size, 2 * pg);
	/* a region is mapped from its start only */
	EXPECT_TRUE(mmap(NULL, (size_t)pg, rw, MAP_SHARED, q.fd,
			 (off_t)(DQ_OFF_ARENA + (uint64_t)pg)) == MAP_FAILED);
	EXPECT_EQ(errno, EINVAL);
	EXPECT_TRUE(mmap(NULL, (size_t)pg, rw, MAP_SHARED, q.fd,
			 (off_t)(DQ_OFF_READY_RING - (uint64_t)pg)) == MAP_FAILED);
	EXPECT_EQ(errno, EINVAL);
	/* length 0 and an offset that is not page aligned (the mm's checks) */
	EXPECT_TRUE(mmap(NULL, 0, rw, MAP_SHARED, q.fd, (off_t)DQ_OFF_ARENA) == MAP_FAILED);
	EXPECT_EQ(errno, EINVAL);
	EXPECT_TRUE(mmap(NULL, (size_t)pg, rw, MAP_SHARED, q.fd,
			 (off_t)(DQ_OFF_ARENA + 64)) == MAP_FAILED);
	EXPECT_EQ(errno, EINVAL);
	/* a prefix of a region maps fine */
	void *p = mmap(NULL, (size_t)pg, rw, MAP_SHARED, q.fd, (off_t)DQ_OFF_ARENA);

	EXPECT_TRUE(p != MAP_FAILED);
	if (p != MAP_FAILED) {
		*(volatile uint8_t *)p = 1;
		EXPECT_EQ(q.arena[0], 1);
		/* shrinking with mremap is fine; growing is -EFAULT */
		EXPECT_TRUE(mremap(p, (size_t)pg, (size_t)pg * 2, 0) == MAP_FAILED);
		EXPECT_EQ(errno, EFAULT);
		munmap(p, (size_t)pg);
	}
	void *a2 = mmap(NULL, q.arena_size, rw, MAP_SHARED, q.fd, (off_t)DQ_OFF_ARENA);

	ASSERT_TRUE(a2 != MAP_FAILED);
	void *shrunk = mremap(a2, q.arena_size, (size_t)pg, 0);

	EXPECT_TRUE(shrunk == a2);
	EXPECT_TRUE(mremap(a2, (size_t)pg, (size_t)pg * 2, MREMAP_MAYMOVE) == MAP_FAILED);
	EXPECT_EQ(errno, EFAULT);
	munmap(a2, (size_t)pg);

	/* mprotect to PROT_EXEC: -EACCES on every region */
	void *maps[3] = { q.sq.map, q.rq.map, q.arena };
	size_t lens[3] = { q.sq.map_size, q.rq.map_size, q.arena_size };

	for (int i = 0; i < 3; i++) {
		EXPECT_SYSERR(mprotect(maps[i], lens[i], PROT_READ | PROT_EXEC), EACCES);
		EXPECT_SYSERR(mprotect(maps[i], lens[i], rw | PROT_EXEC), EACCES);
		EXPECT_SYSOK(mprotect(maps[i], lens[i], PROT_READ));
		EXPECT_SYSOK(mprotect(maps[i], lens[i], rw));
	}
	/* MADV_FREE is for anonymous memory only */
	EXPECT_SYSERR(madvise(q.arena, q.arena_size, MADV_FREE), EINVAL);
	dqt_queue_fini(&q);
}

/* A file opened read-only sets up a queue but maps it read-only. */
TEST(mmap_readonly_file_eacces)
{
	struct dq_setup s = { .slot_count = 16, .slot_size = 64, .numa_node = -1 };
	int fd = open(DQT_DEV_PATH, O_RDONLY | O_CLOEXEC);

	ASSERT_GE(fd, 0);
	ASSERT_SYSOK(ioctl(fd, DQ_IOC_SETUP, &s));
	EXPECT_TRUE(mmap(NULL, s.arena_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
			 (off_t)DQ_OFF_ARENA) == MAP_FAILED);
	EXPECT_EQ(errno, EACCES);
	void *p = mmap(NULL, s.arena_size, PROT_READ, MAP_SHARED, fd, (off_t)DQ_OFF_ARENA);

	EXPECT_TRUE(p != MAP_FAILED);
	if (p != MAP_FAILED) {
		EXPECT_SYSERR(mprotect(p, s.arena_size, PROT_READ | PROT_WRITE), EACCES);
		munmap(p, s.arena_size);
	}
	close(fd);
}

/* ---- io_uring commands --------------------------------------------- */

TEST(uring_unknown_command_eopnotsupp)
{
	struct dqt_queue q;
	struct uring r;
	uint8_t zero[16] = { 0 };

	ring_or_skip(&r);
	ASSERT_OK(dqt_queue_init(&q, &DQT_PARAMS(.slot_count = 8, .slot_size = 64)));
	ASSERT_OK(dqt_push_msg(&q, 0, 1, 10 * NSEC_PER_SEC, DQ_DESC_F_RELATIVE, 8, 0));
	static const uint32_t ops[] = {
		/* DQ_URING_CMD_DONE is DQ_URING_CMD_SUBMIT + 3 */
		0, 1, 0x1234, DQ_URING_CMD_SUBMIT + 4,
		/* ioctl numbers are not uring commands */
		DQ_IOC_SETUP, DQ_IOC_SUBMIT, DQ_IOC_WAIT, DQ_IOC_CANCEL,
		DQ_IOC_QUEUE_STATS, DQ_IOC_NODE_STATS, DQ_IOC_ATTACH, DQ_IOC_SLOT_MAP,
		DQ_IOC_DONE, DQ_IOC_TRACK_STATS,
	};

	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
		int res = ur_run(&r, q.fd, ops[i], zero, sizeof(zero));

		if (res != -EOPNOTSUPP)
			FAIL("cmd_op 0x%x: res %d, expected -EOPNOTSUPP", ops[i], res);
	}
	/* none of them submitted anything */
	EXPECT_EQ(dqt_load_acq(q.sq.consumer), 0);
	ur_exit(&r);
	dqt_queue_fini(&q);
}

TEST(uring_before_setup_enxio)
{
	struct dq_submit s = { 0 };
	struct dq_uring_submit us = { .args = (uintptr_t)&s };
	struct dq_wait w = { .min_ready = 1, .timeout_ns = 0 };
	struct dq_cancel c = { .handle = DQ_HANDLE(0, 0) };
	struct uring r;
	int fd = dqt_open_dev();

	ASSERT_GE(fd, 0);
	ring_or_skip(&r);
	EXPECT_EQ(ur_run(&r, fd, DQ_URING_CMD_SUBMIT, &us, sizeof(us)), -ENXIO);
	EXPECT_EQ(ur_run(&r, fd, DQ_URING_CMD_WAIT, &w, sizeof(w)), -ENXIO);
	EXPECT_EQ(ur_run(&r, fd, DQ_URING_CMD_CANCEL, &c, sizeof(c)), -ENXIO);
	ur_exit(&r);
	close(fd);
}

TEST(uring_submit_errors)
{
	struct dqt_queue q;
	struct dq_queue_stats st;
	struct dq_submit s;
	struct dq_uring_submit us;
	struct uring r;

	ring_or_skip(&r);
	ASSERT_OK(dqt_queue_init(&q, &DQT_PARAMS(.slot_count = 8, .slot_size = 64,
						  .submit_entries = 8)));
	ASSERT_OK(dqt_push_msg(&q, 0, 1, 10 * NSEC_PER_SEC, DQ_DESC_F_RELATIVE, 8, 0));

	memset(&s, 0, sizeof(s));
	us = (struct dq_uring_submit){ .args = (uintptr_t)&s, .resv = 1 };
	EXPECT_EQ(ur_run(&r, q.fd, DQ_URING_CMD_SUBMIT, &us, sizeof(us)), -EINVAL);
	us.resv = 0;
	s.flags = 1;
	EXPECT_EQ(ur_run(&r, q.fd, DQ_URING_CMD_SUBMIT, &us, sizeof(us)), -EINVAL);
	s.flags = 0;
	s.resv = 1;
	EXPECT_EQ(ur_run(&r, q.fd, DQ_URING_CMD_SUBMIT, &us, sizeof(us)), -EINVAL);
	s.resv = 0;
	us.args = (uintptr_t)BAD_PTR;
	EXPECT_EQ(ur_run(&r, q.fd, DQ_URING_CMD_SUBMIT, &us, sizeof(us)), -EFAULT);
	EXPECT_EQ(dqt_load_acq(q.sq.consumer), 0);	/* nothing consumed */

	/* the rejects array cannot be written: -EFAULT, consumed all the same */
	ASSERT_OK(dqt_push_msg(&q, 77, 1, 0, DQ_DESC_F_RELATIVE, 8, 77));
	memset(&s, 0, sizeof(s));
	s.rejects = (uintptr_t)BAD_PTR;
	s.reject_cap = 2;
	us.args = (uintptr_t)&s;
	EXPECT_EQ(ur_run(&r, q.fd, DQ_URING_CMD_SUBMIT, &us, sizeof(us)), -EFAULT);
	EXPECT_EQ(dqt_load_acq(q.sq.consumer), 2);
	ASSERT_OK(dqt_queue_stats(&q, &st));
	EXPECT_EQ(st.submitted, 1);
	EXPECT_EQ(st.rejected[DQ_REJ_SLOT], 1);

	/* a producer index more than a ring ahead: -EPROTO, nothing consumed */
	uint32_t cons = dqt_load_acq(q.sq.consumer);

	dqt_store_rel(q.sq.producer, cons + q.sq.nr + 1);
	memset(&s, 0, sizeof(s));
	EXPECT_EQ(ur_run(&r, q.fd, DQ_URING_CMD_SUBMIT, &us, sizeof(us)), -EPROTO);
	EXPECT_EQ(dqt_load_acq(q.sq.consumer), cons);
	dqt_store_rel(q.sq.producer, cons);
	EXPECT_EQ(ur_run(&r, q.fd, DQ_URING_CMD_SUBMIT, &us, sizeof(us)), 0);
	EXPECT_EQ(dqt_cancel(&q, 0, 1), 0);
	ur_exit(&r);
	dqt_queue_fini(&q);
}

TEST(uring_wait_errors)
{
	struct dqt_queue q;
	struct dq_wait w;
	struct uring r;

	ring_or_skip(&r);
	ASSERT_OK(dqt_queue_init(&q, &DQT_PARAMS(.slot_count = 64, .slot_size = 64,
						  .ready_entries = 16)));
	uint32_t nr = q.rq.nr;

	w = (struct dq_wait){ .min_ready = 1, .flags = 1, .timeout_ns = 0 };
	EXPECT_EQ(ur_run(&r, q.fd, DQ_URING_CMD_WAIT, &w, sizeof(w)), -EINVAL);
	w = (struct dq_wait){ .min_ready = nr + 1, .timeout_ns = 0 };
	EXPECT_EQ(ur_run(&r, q.fd, DQ_URING_CMD_WAIT, &w, sizeof(w)), -EINVAL);
	w = (struct dq_wait){ .min_ready = 0xffffffff, .timeout_ns = -1 };
	EXPECT_EQ(ur_run(&r, q.fd, DQ_URING_CMD_WAIT, &w, sizeof(w)), -EINVAL);
	/* the whole ring is allowed; timeout 0 answers at once */
	w = (struct dq_wait){ .min_ready = nr, .timeout_ns = 0 };
	EXPECT_EQ(ur_run(&r, q.fd, DQ_URING_CMD_WAIT, &w, sizeof(w)), -ETIME);
	w = (struct dq_wait){ .min_ready = 1, .timeout_ns = 20 * NSEC_PER_MSEC };
	EXPECT_EQ(ur_run(&r, q.fd, DQ_URING_CMD_WAIT, &w, sizeof(w)), -ETIME);
	/* a broken consumer index: -EPROTO */
	uint32_t cons = *q.rq.consumer;

	dqt_store_rel(q.rq.consumer, cons + 1);
	w = (struct dq_wait){ .min_ready = 1, .timeout_ns = -1 };
	EXPECT_EQ(ur_run(&r, q.fd, DQ_URING_CMD_WAIT, &w, sizeof(w)), -EPROTO);
	dqt_store_rel(q.rq.consumer, cons);
	ur_exit(&r);
	dqt_queue_fini(&q);
}

TEST(uring_cancel_errors)
{
	struct dqt_queue q;
	struct dq_cancel c;
	struct uring r;

	ring_or_skip(&r);
	ASSERT_OK(dqt_queue_init(&q, &DQT_PARAMS(.slot_count = 8, .slot_size = 64)));
	ASSERT_OK(dqt_push_msg(&q, 2, 5, 10 * NSEC_PER_SEC, DQ_DESC_F_RELATIVE, 8, 2));
	ASSERT_EQ(dqt_submit(&q, 0, NULL, 0, NULL), 1);

	c = (struct dq_cancel){ .handle = DQ_HANDLE(2, 5), .resv = 1 };
	EXPECT_EQ(ur_run(&r, q.fd, DQ_URING_CMD_CANCEL, &c, sizeof(c)), -EINVAL);
	c = (struct dq_cancel){ .handle = DQ_HANDLE(2, 6) };
	EXPECT_EQ(ur_run(&r, q.fd, DQ_URING_CMD_CANCEL, &c, sizeof(c)), -ENOENT);
	c = (struct dq_cancel){ .handle = DQ_HANDLE(8, 5) };
	EXPECT_EQ(ur_run(&r, q.fd, DQ_URING_CMD_CANCEL, &c, sizeof(c)), -ENOENT);
	c = (struct dq_cancel){ .handle = DQ_HANDLE(2, 5) };
	EXPECT_EQ(ur_run(&r, q.fd, DQ_URING_CMD_CANCEL, &c, sizeof(c)), 0);
	EXPECT_EQ(ur_run(&r, q.fd, DQ_URING_CMD_CANCEL, &c, sizeof(c)), -EALREADY);
	ur_exit(&r);
	dqt_queue_fini(&q);
}

/*
 * A parked WAIT ends with -ECANCELED when the process that parked it
 * closes its descriptor of the queue file, whether the command named the
 * file by descriptor or as a fixed (registered) file, which keeps the
 * file open: it does not wait for the park bound (-ETIME) or forever.
 */
static void parked_wait_closed(int fixed)
{
	struct dqt_queue q;
	struct uring r;
	struct dq_wait w = { .min_ready = 1, .timeout_ns = -1 };
	int res = UR_NONE;

	ring_or_skip(&r);
	ASSERT_OK(dqt_queue_init(&q, &DQT_PARAMS(.slot_count = 8, .slot_size = 64)));
	if (fixed) {
		int fds[1] = { q.fd };

		ASSERT_EQ(syscall(__NR_io_uring_register, r.fd, IORING_REGISTER_FILES,
				  fds, 1), 0);
	}
	ASSERT_OK(ur_cmd(&r, fixed ? 0 : q.fd, fixed ? IOSQE_FIXED_FILE : 0,
			 DQ_URING_CMD_WAIT, &w, sizeof(w), 7));
	/* parked: nothing completes while nothing is ready */
	EXPECT_EQ(ur_reap(&r, 300, &res, NULL), -ETIME);
	uint64_t t0 = dqt_now_ns();

	ASSERT_SYSOK(close(q.fd));
	q.fd = -1;
	uint64_t data = 0;

	ASSERT_EQ(ur_reap(&r, (int)(10000 * tap_timeout_scale()), &res, &data), 0);
	uint64_t el = dqt_now_ns() - t0;

	DIAG("%s file: completed %.1f ms after close with %d", fixed ? "fixed" : "plain",
	     el / 1e6, res);
	EXPECT_EQ(data, 7);
	EXPECT_EQ(res, -ECANCELED);
	EXPECT_LT(el, DQ_URING_MAX_PARK_NS);
	ur_exit(&r);
	dqt_queue_fini(&q);
}

TEST(uring_wait_parked_fixed_file_closed_ecanceled)
{
	parked_wait_closed(1);
}

TEST(uring_wait_parked_fd_closed_ecanceled)
{
	parked_wait_closed(0);
}

static int sysfs_write(const char *path, const char *v)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = write(fd, v, strlen(v));
	close(fd);
	return n == (ssize_t)strlen(v) ? 0 : -EIO;
}

/*
 * max_arena_bytes set at run time to a non-default value (1 MiB): an
 * arena of exactly that size is set up, one slot more is -E2BIG; a queue
 * set up before the change keeps working.  The old value is restored.
 */
TEST(max_arena_bytes_non_default)
{
	static const char *const param = "/sys/module/dq/parameters/max_arena_bytes";
	long old = sysfs_ulong(param);
	struct dqt_queue big;
	char buf[32];

	if (old <= 0 || geteuid())
		SKIP("cannot change max_arena_bytes here");
	/* 4 MiB, set up under the default limit. */
	ASSERT_OK(dqt_queue_init(&big, &DQT_PARAMS(.slot_count = 8192,
						   .slot_size = 512)));
	ASSERT_EQ(sysfs_write(param, "1048576"), 0);
	EXPECT_EQ(sysfs_ulong(param), 1048576);

	int fd = dqt_open_dev();

	ASSERT_GE(fd, 0);
	struct dq_setup s = { .slot_count = 2049, .slot_size = 512,
			      .numa_node = -1 };

	EXPECT_SYSERR(ioctl(fd, DQ_IOC_SETUP, &s), E2BIG);
	s = (struct dq_setup){ .slot_count = 2048, .slot_size = 512,
			       .numa_node = -1 };
	EXPECT_SYSOK(ioctl(fd, DQ_IOC_SETUP, &s));
	EXPECT_EQ(s.arena_size, 1048576ULL);
	close(fd);
	/* The queue set up before still takes messages. */
	ASSERT_OK(dqt_push_msg(&big, 8000, 1, 0, DQ_DESC_F_RELATIVE, 8, 5));
	EXPECT_EQ(dqt_submit(&big, 0, NULL, 0, NULL), 1);
	EXPECT_EQ(dqt_wait(&big, 1, 10 * (int64_t)NSEC_PER_SEC), 1);
	snprintf(buf, sizeof(buf), "%ld", old);
	EXPECT_EQ(sysfs_write(param, buf), 0);
	EXPECT_EQ(sysfs_ulong(param), old);
	dqt_queue_fini(&big);
}

/*
 * Handle generations are the producer's 32-bit counter and wrap: a
 * message submitted with gen 0xffffffff is cancelled by that handle, the
 * next use of the slot with gen 0 (wrapped) by its own, and the old
 * handle then names nothing (-ENOENT), the new one is -EALREADY.
 */
TEST(handle_generation_wraps)
{
	struct dqt_queue q;
	uint64_t later = 60 * NSEC_PER_SEC;

	ASSERT_OK(dqt_queue_init(&q, &DQT_PARAMS(.slot_count = 4, .slot_size = 64)));
	ASSERT_OK(dqt_push_msg(&q, 2, UINT32_MAX, later, DQ_DESC_F_RELATIVE, 8, 1));
	ASSERT_EQ(dqt_submit(&q, 0, NULL, 0, NULL), 1);
	EXPECT_EQ(dqt_cancel(&q, 2, 0), -ENOENT);
	EXPECT_EQ(dqt_cancel(&q, 2, UINT32_MAX), 0);
	ASSERT_OK(dqt_push_msg(&q, 2, 0, later, DQ_DESC_F_RELATIVE, 8, 2));
	ASSERT_EQ(dqt_submit(&q, 0, NULL, 0, NULL), 1);
	EXPECT_EQ(dqt_cancel(&q, 2, UINT32_MAX), -ENOENT);
	EXPECT_EQ(dqt_cancel(&q, 2, 0), 0);
	EXPECT_EQ(dqt_cancel(&q, 2, 0), -EALREADY);
	/* The handle the uapi macro builds is the one the kernel reads. */
	struct dq_cancel c = { .handle = DQ_HANDLE(2, UINT32_MAX) };

	EXPECT_EQ(DQ_HANDLE_GEN(c.handle), UINT32_MAX);
	EXPECT_EQ(DQ_HANDLE_SLOT(c.handle), 2U);
	EXPECT_SYSERR(ioctl(q.fd, DQ_IOC_CANCEL, &c), ENOENT);
	dqt_queue_fini(&q);
}

TAP_MAIN()
