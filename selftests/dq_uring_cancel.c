// SPDX-License-Identifier: LGPL-2.1 OR MIT
/*
 * dq_uring_cancel - what becomes of a WAIT parked when its io_uring is
 * torn down, on each kernel.
 *
 * Since 6.7 a driver can mark a parked uring_cmd cancelable, and io_uring
 * calls it back with IO_URING_F_CANCEL when the ring goes away: dq ends
 * the WAIT with -ECANCELED at once.  6.1 has no such hook, so a parked
 * WAIT can only end by itself: dq bounds it by DQ_URING_MAX_PARK_NS (5 s)
 * and it ends with -ETIME then (until then the dying ring waits for it).
 * Process exit closes the queue's file too, whose ->flush ends the
 * process's parked WAITs with -ECANCELED on every kernel.
 *
 * A torn-down ring has no CQ left to read, so the completions are seen
 * through io_uring's own io_uring_complete tracepoint, in a trace instance
 * of this test's own (CLOCK_MONOTONIC timestamps), which shows each
 * command's result and when it completed.
 */
#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include "dqtest.h"
#include "tap.h"

#define TAG_BASE	0xd9ca0000ULL

static char trace_dir[256];

static int write_file(const char *dir, const char *name, const char *val)
{
	char path[512];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = write(fd, val, strlen(val));
	close(fd);
	return n == (ssize_t)strlen(val) ? 0 : -EIO;
}

/* The tracefs mount, mounting it when nothing has. */
static const char *tracefs(void)
{
	static const char *const dirs[] = {
		"/sys/kernel/tracing", "/sys/kernel/debug/tracing",
	};
	struct stat st;
	size_t i;

	for (i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		char p[128];

		snprintf(p, sizeof(p), "%s/instances", dirs[i]);
		if (!stat(p, &st))
			return dirs[i];
	}
	if (!mount("nodev", dirs[0], "tracefs", 0, NULL))
		return dirs[0];
	return NULL;
}

/*
 * A trace instance of this test's own with io_uring_complete on, mono
 * clock, emptied.  The instance is made once and kept for the next run:
 * removing one waits for an RCU Tasks Trace grace period
 * (tracepoint_synchronize_unregister()), which took 15-20 s on the lab's
 * debug kernel under TCG and at times never ended, leaving this test
 * process unkillable in rmdir().
 *
 * The event is turned on once per boot and never off, with record-cmd
 * and record-tgid off: each switch patches kernel text
 * (text_poke_bp), and record-cmd would hook sched_switch, patching
 * __schedule() under the other vCPU.  Under qemu's multi-threaded TCG
 * that CPU then trapped on the patch's int3 after it was done ("int3:
 * 0000 [#1]" at __schedule+0x53e, a panic: CI at 9cbe1a2, reproduced in
 * the lab on 2026-12-02).  io_uring_complete's own sites run only in
 * io_uring code, idle while this turns it on.
 */
static void trace_start(void)
{
	const char *t = tracefs();
	char ev[320], path[340], on[4] = "";
	int fd;

	if (!t)
		SKIP("no tracefs");
	snprintf(trace_dir, sizeof(trace_dir), "%s/instances/dq_uring_cancel", t);
	/*
	 * An instance takes record-cmd from the top level when it is made
	 * and cannot change it.  Off at the top while nothing there is on:
	 * nothing is unhooked.
	 */
	if (access(trace_dir, F_OK))
		write_file(t, "options/record-cmd", "0");
	if (mkdir(trace_dir, 0700) && errno != EEXIST)
		SKIP("cannot make a trace instance: %s", strerror(errno));
	ASSERT_EQ(write_file(trace_dir, "trace_clock", "mono"), 0);
	/* Opened with O_TRUNC: empties the buffer. */
	ASSERT_EQ(write_file(trace_dir, "trace", ""), 0);
	snprintf(ev, sizeof(ev), "%s/events/io_uring/io_uring_complete", trace_dir);
	snprintf(path, sizeof(path), "%s/enable", ev);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		SKIP("no io_uring:io_uring_complete tracepoint");
	if (read(fd, on, sizeof(on) - 1) < 0)
		on[0] = 0;
	close(fd);
	if (on[0] == '1')
		return;
	/* As record-cmd: no sched_switch hook (off unless someone set it). */
	write_file(trace_dir, "options/record-tgid", "0");
	ASSERT_EQ(write_file(ev, "enable", "1"), 0);
}

/*
 * The completion of @tag in the trace: its result and CLOCK_MONOTONIC
 * time.  Polls up to @wait_ns; 0, or -ETIME when it never showed.
 */
static int trace_find(uint64_t tag, uint64_t wait_ns, int *res, uint64_t *at_ns)
{
	uint64_t deadline = dqt_now_ns() + wait_ns;
	char path[320], want[64], line[1024];

	snprintf(path, sizeof(path), "%s/trace", trace_dir);
	snprintf(want, sizeof(want), "user_data 0x%llx,", (unsigned long long)tag);
	do {
		FILE *f = fopen(path, "re");

		if (!f)
			return -errno;
		while (fgets(line, sizeof(line), f)) {
			char *p = strstr(line, want), *ts;
			unsigned long sec, usec;

			if (!p || sscanf(p + strlen(want), " result %d", res) != 1)
				continue;
			/* "   task-pid  [cpu] flags  SEC.USEC: io_uring_complete: ..." */
			ts = strstr(line, ": io_uring_complete:");
			if (!ts)
				continue;
			while (ts > line && ts[-1] != ' ')
				ts--;
			if (sscanf(ts, "%lu.%lu", &sec, &usec) != 2)
				continue;
			*at_ns = (uint64_t)sec * NSEC_PER_SEC + usec * NSEC_PER_USEC;
			fclose(f);
			return 0;
		}
		fclose(f);
		dqt_sleep_ns(20 * NSEC_PER_MSEC);
	} while (dqt_now_ns() < deadline);
	return -ETIME;
}

/* 6.7 and later: io_uring cancels parked uring_cmds (IO_URING_F_CANCEL). */
static bool kernel_cancels_uring_cmd(void)
{
	struct utsname u;
	int maj = 0, min = 0;

	if (uname(&u) || sscanf(u.release, "%d.%d", &maj, &min) != 2)
		return true;
	return maj > 6 || (maj == 6 && min >= 7);
}

static void prep_wait(struct io_uring_sqe *sqe, int fd, uint64_t tag)
{
	struct dq_wait w = { .min_ready = 1, .timeout_ns = -1 };

	memset(sqe, 0, sizeof(*sqe));
	sqe->opcode = IORING_OP_URING_CMD;
	sqe->fd = fd;
	sqe->cmd_op = DQ_URING_CMD_WAIT;
	memcpy(sqe->cmd, &w, sizeof(w));
	sqe->user_data = tag;
}

/* Park two WAITs (no timeout) on @fd: one inline, one from io-wq. */
static void park_two(struct io_uring *ring, int fd, uint64_t tag0)
{
	struct io_uring_sqe *sqe;

	ASSERT_EQ(io_uring_queue_init(8, ring, 0), 0);
	sqe = io_uring_get_sqe(ring);
	ASSERT_TRUE(sqe != NULL);
	prep_wait(sqe, fd, tag0);
	sqe = io_uring_get_sqe(ring);
	ASSERT_TRUE(sqe != NULL);
	prep_wait(sqe, fd, tag0 + 1);
	io_uring_sqe_set_flags(sqe, IOSQE_ASYNC);
	ASSERT_EQ(io_uring_submit(ring), 2);
	dqt_sleep_ns(100 * NSEC_PER_MSEC);
	/* Both still parked: nothing completed yet. */
	ASSERT_EQ(io_uring_cq_ready(ring), 0U);
}

static void queue_init(struct dqt_queue *q)
{
	ASSERT_EQ(dqt_queue_init(q, &DQT_PARAMS(.slot_count = 16,
						 .slot_size = 64)), 0);
}

/*
 * Ring exit, the process and its queue file alive: 6.7+ -ECANCELED at
 * once; 6.1 -ETIME at the 5 s park bound.
 */
TEST_TIMEOUT(ring_exit_ends_parked_wait, 60)
{
	bool cancels = kernel_cancels_uring_cmd();
	uint64_t tag = TAG_BASE + 0x10, parked, t0, at = 0;
	struct io_uring ring;
	struct dqt_queue q;
	int i, res = 0;

	trace_start();
	queue_init(&q);
	parked = dqt_now_ns();
	park_two(&ring, q.fd, tag);
	t0 = dqt_now_ns();
	io_uring_queue_exit(&ring);
	EXPECT_LT(dqt_now_ns() - t0, NSEC_PER_SEC);
	for (i = 0; i < 2; i++) {
		const char *how = i ? "io-wq" : "inline";

		if (trace_find(tag + i, 8 * NSEC_PER_SEC, &res, &at)) {
			FAIL("%s WAIT: no completion within 8 s of the ring's exit", how);
			continue;
		}
		if (cancels) {
			tap_diag("%s WAIT: %d, %.1f ms after io_uring_queue_exit()",
				 how, res, (double)(int64_t)(at - t0) / NSEC_PER_MSEC);
			EXPECT_EQ(res, -ECANCELED);
			EXPECT_LT((int64_t)(at - t0), (int64_t)(500 * NSEC_PER_MSEC));
		} else {
			tap_diag("%s WAIT: %d, %.2f s after it parked (kernel < 6.7: the park bound)",
				 how, res, (double)(at - parked) / NSEC_PER_SEC);
			EXPECT_EQ(res, -ETIME);
			EXPECT_GE(at - parked, DQ_URING_MAX_PARK_NS - 100 * NSEC_PER_MSEC);
			EXPECT_LT(at - parked, DQ_URING_MAX_PARK_NS + 2 * NSEC_PER_SEC);
		}
	}
	/* The queue still works. */
	ASSERT_EQ(dqt_push_msg(&q, 0, 0, dqt_now_ns(), 0, 8, 1), 0);
	EXPECT_EQ(dqt_submit(&q, 0, NULL, 0, NULL), 1);
	EXPECT_EQ(dqt_wait(&q, 1, 5 * (int64_t)NSEC_PER_SEC), 1);
	dqt_queue_fini(&q);
}

/*
 * Process exit with WAITs parked: -ECANCELED at once on every kernel (the
 * ring's cancel on 6.7+, the queue file's ->flush before that).
 */
TEST_TIMEOUT(process_exit_ends_parked_wait, 60)
{
	uint64_t tag = TAG_BASE + 0x20, t0, at = 0;
	int pipefd[2], status, i, res = 0;
	char c;
	pid_t pid;

	trace_start();
	ASSERT_SYSOK(pipe(pipefd));
	pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		struct io_uring ring;
		struct dqt_queue q;

		close(pipefd[0]);
		queue_init(&q);
		park_two(&ring, q.fd, tag);
		if (write(pipefd[1], "p", 1) != 1)
			_exit(2);
		_exit(0);
	}
	close(pipefd[1]);
	ASSERT_EQ(read(pipefd[0], &c, 1), 1);
	t0 = dqt_now_ns();
	ASSERT_EQ(waitpid(pid, &status, 0), pid);
	EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	EXPECT_LT(dqt_now_ns() - t0, NSEC_PER_SEC);
	for (i = 0; i < 2; i++) {
		const char *how = i ? "io-wq" : "inline";

		if (trace_find(tag + i, 8 * NSEC_PER_SEC, &res, &at)) {
			FAIL("%s WAIT: no completion within 8 s of the exit", how);
			continue;
		}
		tap_diag("%s WAIT: %d, %.1f ms after the process exited", how, res,
			 (double)(int64_t)(at - t0) / NSEC_PER_MSEC);
		EXPECT_EQ(res, -ECANCELED);
		EXPECT_LT((int64_t)(at - t0), (int64_t)(500 * NSEC_PER_MSEC));
	}
	close(pipefd[0]);
}

TAP_MAIN()
