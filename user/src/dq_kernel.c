// SPDX-License-Identifier: LGPL-2.1 OR MIT
/*
 * libdqshim kernel backend: dq.ko through /dev/dq.
 *
 * DQ_IOC_SETUP creates the queue; the submit ring, the ready ring and the
 * arena are mapped from the same file.  Commands go over two private
 * io_urings as IORING_OP_URING_CMD: one for SUBMIT and CANCEL (cmd_lock),
 * one for the consumer's WAIT (cons_lock), so a parked wait never holds up
 * a producer.  Each command is submitted and waited for with a single
 * io_uring_enter(); the consumer's WAIT stays parked between calls
 * (dq_k_uwait()).  When the kernel does not take dq uring commands
 * (the probe at open answers -EOPNOTSUPP or -EINVAL), or io_uring is not
 * available, the same commands go through the DQ_IOC_* ioctls.
 *
 * A queue that tracks delivery (DQ_SETUP_F_TRACK) has 48-byte ready
 * entries (struct dq_ready_track) and a third private ring for DONE
 * (done_lock): dq_done() may run inside the reject callback, which holds
 * cmd_lock.
 *
 * Ring memory ordering, as uapi/linux/dq.h describes it:
 *   submit ring: write descriptors, store-release producer (dq_queue.c);
 *                load-acquire the kernel's consumer before reusing entries.
 *   ready ring:  load-acquire producer, read entries, store-release
 *                consumer.
 */
#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "dq_internal.h"

#define DQ_DEV_PATH	"/dev/" DQ_DEVICE_NAME

/*
 * The deadline of the consumer's parked WAIT (dq_k_uwait()): long beside
 * the turns of a loop that waits with short timeouts, short enough that
 * what waits for it is never held up long: before 6.7 (no cancel hook)
 * an execve() by the thread that parked it waits for it to end.
 */
#define DQ_K_PARK_NS	(250 * 1000 * 1000LL)

struct dq_kq {
	int fd;
	void *sq_map;
	size_t sq_size;
	void *rq_map;
	size_t rq_size;

	/* Ready ring, consumer side: cons_lock. */
	uint32_t *rq_prod;
	uint32_t *rq_cons;
	uint32_t *rq_flags;		/* DQ_RING_F_*, the kernel's */
	/*
	 * An empty ring may not be all that is due: the kernel's backlog
	 * can hold more (DQ_RING_F_BACKLOG), which only a WAIT moves on.
	 * flag: the kernel says when (DQ_FEAT_READY_BACKLOG); else always
	 * assume so when the ring is smaller than the arena (an older dq.ko).
	 */
	bool backlog_flag;
	bool backlog_maybe;
	char *rq_ring;
	uint32_t rq_esize;		/* entry size: dq_ready(_track) */
	uint32_t rq_mask;
	uint32_t rq_head;		/* own copy of the consumer index */

	bool uring;			/* commands over io_uring */
	bool cmd_ring_ok, wait_ring_ok, done_ring_ok;
	struct io_uring cmd_ring;	/* cmd_lock */
	struct io_uring wait_ring;	/* cons_lock */
	struct io_uring done_ring;	/* done_lock; tracked queues */
	uint64_t cmd_tag, wait_tag, done_tag;
	/*
	 * The consumer's WAIT stays parked between calls (dq_k_uwait()):
	 * in flight on wait_ring while wait_parked, tagged wait_parked_tag.
	 * cons_lock.
	 */
	bool wait_parked;
	uint64_t wait_parked_tag;
	pthread_mutex_t done_lock;
};

static struct dq_kq *dq_kq(struct dqshim_queue *q)
{
	return q->be;
}

/*
 * Submit what @ring holds and wait for @want completions, retrying what
 * may be retried; 0 once submitted (an interrupted wait after that is
 * fine: the caller waits for its completions), else -errno.
 */
static int dq_uring_submit_wait(struct io_uring *ring, unsigned int want)
{
	int ret;

	for (;;) {
		ret = io_uring_submit_and_wait(ring, want);
		if (ret >= 0)
			return 0;
		if (ret == -EINTR && !io_uring_sq_ready(ring))
			return 0;
		if (ret != -EINTR && ret != -EAGAIN && ret != -EBUSY)
			return ret;
	}
}

/* The next completion's user_data and res; 0 or -errno. */
static int dq_uring_next_cqe(struct io_uring *ring, uint64_t *data, int *res)
{
	struct io_uring_cqe *cqe;
	int ret;

	do
		ret = io_uring_wait_cqe(ring, &cqe);
	while (ret == -EINTR);
	if (ret < 0)
		return ret;
	*data = cqe->user_data;
	*res = cqe->res;
	io_uring_cqe_seen(ring, cqe);
	return 0;
}

/*
 * Run one uring command to completion: one io_uring_enter() submits it
 * and waits.  Each SQE carries a fresh tag in user_data, so a completion
 * left over from an earlier, abandoned submission is recognised and
 * skipped.
 */
static int dq_uring_run(struct io_uring *ring, uint64_t *tag, int fd,
			uint32_t op, const void *payload, size_t len)
{
	struct io_uring_sqe *sqe;
	uint64_t t;
	int ret;

	sqe = io_uring_get_sqe(ring);
	if (!sqe) {
		/* Only after an earlier submission failed: push it out. */
		io_uring_submit(ring);
		sqe = io_uring_get_sqe(ring);
		if (!sqe)
			return -EBUSY;
	}
	dq_prep_cmd(sqe, fd, op, payload, len);
	t = ++*tag;
	io_uring_sqe_set_data64(sqe, t);

	ret = dq_uring_submit_wait(ring, 1);
	if (ret < 0)
		return ret;
	for (;;) {
		uint64_t data;
		int res;

		ret = dq_uring_next_cqe(ring, &data, &res);
		if (ret < 0)
			return ret;
		if (data == t)
			return res;
	}
}

static int dq_k_ioctl(int fd, unsigned long cmd, void *arg)
{
	int ret = ioctl(fd, cmd, arg);

	return ret < 0 ? -errno : ret;
}

static int dq_k_submit(struct dqshim_queue *q, struct dq_submit *s)
{
	struct dq_kq *k = dq_kq(q);

	if (k->uring) {
		struct dq_uring_submit u = {
			.args = (uint64_t)(uintptr_t)s,
		};

		return dq_uring_run(&k->cmd_ring, &k->cmd_tag, k->fd,
				    DQ_URING_CMD_SUBMIT, &u, sizeof(u));
	}
	return dq_k_ioctl(k->fd, DQ_IOC_SUBMIT, s);
}

static int dq_k_cancel_cmd(struct dq_kq *k, uint64_t handle)
{
	struct dq_cancel c = { .handle = handle };

	if (k->uring)
		return dq_uring_run(&k->cmd_ring, &k->cmd_tag, k->fd,
				    DQ_URING_CMD_CANCEL, &c, sizeof(c));
	return dq_k_ioctl(k->fd, DQ_IOC_CANCEL, &c);
}

static int dq_k_cancel(struct dqshim_queue *q, uint64_t handle)
{
	return dq_k_cancel_cmd(dq_kq(q), handle);
}

/*
 * What one call on the wait ring saw complete.  Every completion the
 * ring holds is taken by the call that finds it; one of an abandoned
 * call's (its tag is no one's now) is dropped.
 */
struct dq_kwait {
	uint64_t submit_tag;		/* this call's SUBMIT; 0: none */
	uint64_t once_tag;		/* this call's WAIT of timeout 0 */
	int submit_res;
	int wait_res;
	bool submit_done;
	bool wait_done;			/* the parked or the once WAIT */
};

/* Take every completion the wait ring holds; cons_lock held. */
static void dq_k_uwait_cqes(struct dq_kq *k, struct dq_kwait *w)
{
	struct io_uring_cqe *cqe;

	while (!io_uring_peek_cqe(&k->wait_ring, &cqe)) {
		uint64_t data = cqe->user_data;

		if (w->submit_tag && data == w->submit_tag) {
			w->submit_res = cqe->res;
			w->submit_done = true;
		} else if (k->wait_parked && data == k->wait_parked_tag) {
			k->wait_parked = false;
			w->wait_res = cqe->res;
			w->wait_done = true;
		} else if (w->once_tag && data == w->once_tag) {
			w->wait_res = cqe->res;
			w->wait_done = true;
		}
		io_uring_cqe_seen(&k->wait_ring, cqe);
	}
}

/*
 * The consumer's WAIT over io_uring, cons_lock held.  @s, when given,
 * is SUBMITted first in the same io_uring_enter() (dq_flush_reap()).
 *
 * A WAIT with a timeout (> 0, or < 0: none) is not given it: it is
 * parked with min_ready 1 and a deadline of its own, DQ_K_PARK_NS, and
 * the call waits for its completion with the call's timeout, which
 * io_uring_enter() keeps (IORING_ENTER_EXT_ARG, an hrtimer on the
 * waiting task).  A call that times out leaves the WAIT parked for the
 * next call, which submits nothing for it.  A thread that wakes on a schedule of its own (the
 * next message to produce, a poll loop) so pays one io_uring_enter()
 * and a timer a turn, where a WAIT with a deadline cost an SQE issue,
 * the queue's deadline timer and a completion through task work.
 *
 * The parked WAIT completes when a release makes an entry ready, the
 * queue dies (-ENODEV), a close of the queue file by this process ends
 * it (-ECANCELED), its ring or task is cancelled (6.7+), or at its
 * deadline (-ETIME); its completion runs as
 * task work of the thread that parked it, which need not be the one
 * waiting now (any thread may take cons_lock): that thread is then
 * interrupted once to post it.
 *
 * Returns the WAIT's result when it completed in this call; -ETIME when
 * it did not (the timeout passed, or something else woke the call): the
 * caller looks at the ready ring and its clock and calls again.  With
 * @s, *@submit_res is the SUBMIT's result; a failed SUBMIT ends the
 * call at once.  Timeout 0 with @s is the SUBMIT alone; without, a WAIT
 * of its own with timeout 0 (it moves the kernel's backlog onto the
 * ready ring, never sleeps).
 */
static int dq_k_uwait(struct dq_kq *k, struct dq_submit *s, int *submit_res,
		      int64_t timeout_ns)
{
	struct io_uring *ring = &k->wait_ring;
	struct dq_kwait w = { 0 };
	struct __kernel_timespec ts, *tsp = NULL;
	struct dq_wait wait = { .min_ready = 1, .timeout_ns = DQ_K_PARK_NS };
	bool new_wait = timeout_ns == 0 ? !s : !k->wait_parked;
	unsigned int need = (s ? 1 : 0) + (new_wait ? 1 : 0);
	/* The SUBMIT's completion (posted at issue) and the WAIT's. */
	unsigned int want = s && timeout_ns ? 2 : 1;
	struct io_uring_sqe *sqe;
	struct io_uring_cqe *cqe;
	int ret;

	/* Only after an earlier submission failed: push it out. */
	if (io_uring_sq_space_left(ring) < need)
		io_uring_submit(ring);
	if (io_uring_sq_space_left(ring) < need)
		return -EBUSY;
	if (s) {
		struct dq_uring_submit u = { .args = (uint64_t)(uintptr_t)s };

		sqe = io_uring_get_sqe(ring);
		dq_prep_cmd(sqe, k->fd, DQ_URING_CMD_SUBMIT, &u, sizeof(u));
		w.submit_tag = ++k->wait_tag;
		io_uring_sqe_set_data64(sqe, w.submit_tag);
	}
	/* After the SUBMIT: a message it sent already due is seen. */
	if (new_wait) {
		uint64_t tag = ++k->wait_tag;

		if (timeout_ns == 0) {
			wait.timeout_ns = 0;
			w.once_tag = tag;
		} else {
			k->wait_parked_tag = tag;
			k->wait_parked = true;
		}
		sqe = io_uring_get_sqe(ring);
		dq_prep_cmd(sqe, k->fd, DQ_URING_CMD_WAIT, &wait, sizeof(wait));
		io_uring_sqe_set_data64(sqe, tag);
	}
	if (timeout_ns > 0) {
		ts.tv_sec = timeout_ns / 1000000000;
		ts.tv_nsec = timeout_ns % 1000000000;
		tsp = &ts;
	}

	/*
	 * One io_uring_enter() submits and waits.  Its result does not say
	 * whether the wait timed out (it is the count submitted when there
	 * was one): what completed does.
	 */
	for (;;) {
		ret = io_uring_submit_and_wait_timeout(ring, &cqe, want, tsp,
						       NULL);
		if (ret >= 0 || ret == -ETIME || !io_uring_sq_ready(ring))
			break;
		if (ret != -EINTR && ret != -EAGAIN && ret != -EBUSY)
			return s ? (*submit_res = ret) : ret;
	}
	dq_k_uwait_cqes(k, &w);
	/*
	 * The SUBMIT's result is needed before the call returns; a SUBMIT
	 * that went to io-wq completes there, whatever the timeout says.
	 * So does the timeout-0 WAIT.
	 */
	while ((w.submit_tag && !w.submit_done) ||
	       (w.once_tag && !w.wait_done)) {
		ret = io_uring_submit_and_wait(ring, 1);
		if (ret < 0 && ret != -EINTR && ret != -EAGAIN &&
		    ret != -EBUSY)
			return s ? (*submit_res = ret) : ret;
		dq_k_uwait_cqes(k, &w);
	}
	if (s) {
		*submit_res = w.submit_res;
		if (w.submit_res < 0)
			return w.submit_res;
	}
	return w.wait_done ? w.wait_res : -ETIME;
}

/* Wait for one ready entry (see dq_k_uwait() for io_uring). */
static int dq_k_wait(struct dq_kq *k, int64_t timeout_ns)
{
	struct dq_wait w = { .min_ready = 1, .timeout_ns = timeout_ns };

	if (k->uring)
		return dq_k_uwait(k, NULL, NULL, timeout_ns);
	return dq_k_ioctl(k->fd, DQ_IOC_WAIT, &w);
}

/* Entries on the ready ring (the consumer's view); cons_lock held. */
static bool dq_k_ready_avail(struct dq_kq *k)
{
	return dq_load_acquire_u32(k->rq_prod) != k->rq_head;
}

/* Take up to @max entries off the ready ring; cons_lock held. */
static int dq_k_consume(struct dqshim_queue *q, struct dq_reaped *out,
			unsigned int max)
{
	struct dq_kq *k = dq_kq(q);
	uint32_t prod, avail, i, n = 0;

	/* Entries before index: pairs with the kernel's store-release. */
	prod = dq_load_acquire_u32(k->rq_prod);
	avail = prod - k->rq_head;
	if (avail > q->rq_entries)
		return -EPROTO;
	if (avail > max)
		avail = max;
	for (i = 0; i < avail; i++) {
		const char *e = k->rq_ring +
				(size_t)((k->rq_head + i) & k->rq_mask) *
				k->rq_esize;
		struct dq_ready_track t;
		struct dq_ready r;

		/* One copy of the entry: shared memory is read once. */
		if (q->tracked) {
			memcpy(&t, e, sizeof(t));
			r = t.r;
		} else {
			memcpy(&r, e, sizeof(r));
		}
		if (r.slot >= q->slot_count) {
			/* Never trust shared memory; cannot happen. */
			q->anomalies++;
			continue;
		}
		out[n].data = q->arena + (size_t)r.slot * q->slot_size;
		out[n].user_data = r.user_data;
		out[n].due_ns = r.due_ns;
		out[n].release_ns = r.release_ns;
		out[n].slot = r.slot;
		out[n].len = r.len;
		out[n].handle = 0;
		out[n].attempts = 0;
		out[n].redeliveries = 0;
		out[n].resv = 0;
		if (q->tracked) {
			out[n].handle = DQ_HANDLE(r.slot, t.gen);
			out[n].attempts = t.attempts;
			out[n].redeliveries = t.redeliveries;
		}
		n++;
	}
	k->rq_head += avail;
	/* Done reading those entries: the kernel may reuse them. */
	dq_store_release_u32(k->rq_cons, k->rq_head);
	return (int)n;
}

/* May the kernel hold due messages the ring had no room for? */
static bool dq_k_backlog(struct dq_kq *k)
{
	if (k->backlog_flag)
		return __atomic_load_n(k->rq_flags, __ATOMIC_RELAXED) &
		       DQ_RING_F_BACKLOG;
	return k->backlog_maybe;
}

static int dq_k_reap(struct dqshim_queue *q, struct dq_reaped *out,
		     unsigned int max, int64_t timeout_ns)
{
	struct dq_kq *k = dq_kq(q);
	uint64_t deadline = 0;	/* 0: not read yet */
	int n, ret;

	/*
	 * The clock is read only once a wait is needed: most calls find
	 * entries first, and a clock read is a system call where the
	 * clocksource has no vDSO read (HPET, acpi_pm: many VMs).
	 */
	for (;;) {
		int64_t wait_ns = -1;

		n = dq_k_consume(q, out, max);
		if (n)
			return n;
		if (timeout_ns == 0) {
			/*
			 * Not blocking must not mean stalling: due messages
			 * in the kernel's backlog reach the ring only through
			 * a WAIT, which refills it (timeout 0: never sleeps).
			 */
			if (!dq_k_backlog(k))
				return 0;
			ret = dq_k_wait(k, 0);
			if (ret < 0 && ret != -ETIME && ret != -EINTR &&
			    ret != -ECANCELED)
				return ret;
			return ret > 0 ? dq_k_consume(q, out, max) : 0;
		}
		if (timeout_ns > 0) {
			uint64_t now = dq_mono_ns();

			if (!deadline)
				deadline = now + (uint64_t)timeout_ns;
			else if (now >= deadline)
				return -ETIME;
			wait_ns = (int64_t)(deadline - now);
		}
		ret = dq_k_wait(k, wait_ns);
		/*
		 * -ETIME: the park bound or our deadline (checked above);
		 * -ECANCELED: the wait was ended under us (another thread of
		 * this process closed a dup of the fd): just look again.
		 */
		if (ret >= 0 || ret == -ETIME || ret == -EINTR ||
		    ret == -ECANCELED)
			continue;
		return ret;
	}
}

/*
 * dq_flush_reap() over io_uring: the SUBMIT and the consumer's wait in
 * one io_uring_enter() (dq_k_uwait()).  A thread that produces and
 * consumes (commit, then sleep until something is due) pays one system
 * call where it paid two.  Then what the WAIT announced is taken without
 * reading the clock; when there is nothing (the wait timed out, or
 * another reader came first), dq_k_reap() with what is left of the
 * timeout.  cons_lock held.
 */
static int dq_k_flush_reap(struct dqshim_queue *q, struct dq_submit *s,
			   int *submit_res, struct dq_reaped *out,
			   unsigned int max, int64_t timeout_ns)
{
	struct dq_kq *k = dq_kq(q);
	uint64_t deadline = 0, now;
	int ret;

	if (!k->uring)
		return -EOPNOTSUPP;
	/* Only after an earlier submission failed: push it out. */
	if (io_uring_sq_space_left(&k->wait_ring) < 2)
		io_uring_submit(&k->wait_ring);
	if (io_uring_sq_space_left(&k->wait_ring) < 2)
		return -EOPNOTSUPP;
	if (timeout_ns > 0)
		deadline = dq_mono_ns() + (uint64_t)timeout_ns;
	/* Entries already there: the SUBMIT alone, nothing to wait for. */
	ret = dq_k_uwait(k, s, submit_res,
			 dq_k_ready_avail(k) ? 0 : timeout_ns);
	if (*submit_res < 0)
		return *submit_res;
	if (ret < 0 && ret != -ETIME && ret != -EINTR && ret != -ECANCELED)
		return ret;
	/* What the WAIT announced, without a clock read (dq_k_reap()). */
	ret = dq_k_consume(q, out, max);
	if (ret)
		return ret;
	if (timeout_ns > 0) {
		now = dq_mono_ns();
		/* Spent: what is there now, else -ETIME as dq_reap() says. */
		if (now >= deadline) {
			ret = dq_k_reap(q, out, max, 0);
			return ret ? ret : -ETIME;
		}
		timeout_ns = (int64_t)(deadline - now);
	}
	return dq_k_reap(q, out, max, timeout_ns);
}

static int dq_k_stats(struct dqshim_queue *q, struct dq_queue_stats *st)
{
	return dq_k_ioctl(dq_kq(q)->fd, DQ_IOC_QUEUE_STATS, st);
}

/*
 * @n DONE entries in one DQ_URING_CMD_DONE or DQ_IOC_DONE: the number
 * accepted (each entry's result in d[i].result), or the call's -errno.
 */
static int dq_k_done_n(struct dqshim_queue *q, struct dq_done *d,
		       unsigned int n)
{
	struct dq_kq *k = dq_kq(q);
	struct dq_done_batch b = {
		.dones = (uint64_t)(uintptr_t)d,
		.nr = n,
	};
	unsigned int i;
	int ret;

	for (i = 0; i < n; i++)
		d[i].result = 0;
	if (k->uring) {
		struct dq_uring_submit u = {
			.args = (uint64_t)(uintptr_t)&b,
		};

		pthread_mutex_lock(&k->done_lock);
		ret = dq_uring_run(&k->done_ring, &k->done_tag, k->fd,
				   DQ_URING_CMD_DONE, &u, sizeof(u));
		pthread_mutex_unlock(&k->done_lock);
	} else {
		ret = dq_k_ioctl(k->fd, DQ_IOC_DONE, &b);
	}
	return ret < 0 ? ret : (int)b.done;
}

/* One DONE entry: the call's -errno, else the entry's result. */
static int dq_k_done(struct dqshim_queue *q, struct dq_done *d)
{
	struct dq_kq *k = dq_kq(q);
	struct dq_done_batch b = {
		.dones = (uint64_t)(uintptr_t)d,
		.nr = 1,
	};
	int ret;

	d->result = 0;
	if (k->uring) {
		struct dq_uring_submit u = {
			.args = (uint64_t)(uintptr_t)&b,
		};

		pthread_mutex_lock(&k->done_lock);
		ret = dq_uring_run(&k->done_ring, &k->done_tag, k->fd,
				   DQ_URING_CMD_DONE, &u, sizeof(u));
		pthread_mutex_unlock(&k->done_lock);
	} else {
		ret = dq_k_ioctl(k->fd, DQ_IOC_DONE, &b);
	}
	if (ret < 0)
		return ret;
	return b.done == 1 ? 0 : (d->result < 0 ? d->result : -EPROTO);
}

static int dq_k_track_stats(struct dqshim_queue *q, struct dq_track_stats *st)
{
	return dq_k_ioctl(dq_kq(q)->fd, DQ_IOC_TRACK_STATS, st);
}

static void dq_k_free(struct dq_kq *k)
{
	/*
	 * The file first: its ->flush ends the WAIT this process left
	 * parked (-ECANCELED), so the ring's teardown has nothing to wait
	 * for, on kernels without a cancel hook too.
	 */
	if (k->fd >= 0)
		close(k->fd);
	if (k->cmd_ring_ok)
		io_uring_queue_exit(&k->cmd_ring);
	if (k->wait_ring_ok)
		io_uring_queue_exit(&k->wait_ring);
	if (k->done_ring_ok)
		io_uring_queue_exit(&k->done_ring);
	pthread_mutex_destroy(&k->done_lock);
	if (k->sq_map)
		munmap(k->sq_map, k->sq_size);
	if (k->rq_map)
		munmap(k->rq_map, k->rq_size);
	free(k);
}

static void dq_k_close(struct dqshim_queue *q)
{
	if (q->arena)
		munmap(q->arena, q->arena_size);
	dq_k_free(dq_kq(q));
	q->be = NULL;
}

/* DQ_IOC_KEY: the ioctl on both paths (a look-up is no hot path). */
static int dq_k_key(struct dqshim_queue *q, struct dq_key_op *op)
{
	return dq_k_ioctl(dq_kq(q)->fd, DQ_IOC_KEY, op);
}

static const struct dq_backend_ops dq_kernel_ops = {
	.submit = dq_k_submit,
	.cancel = dq_k_cancel,
	.reap = dq_k_reap,
	.stats = dq_k_stats,
	.done = dq_k_done,
	.done_n = dq_k_done_n,
	.track_stats = dq_k_track_stats,
	.key = dq_k_key,
	.flush_reap = dq_k_flush_reap,
	.close = dq_k_close,
};

static void *dq_k_map(int fd, uint64_t off, size_t size)
{
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_POPULATE, fd, (off_t)off);

	return p == MAP_FAILED ? NULL : p;
}

static bool dq_k_ring_ok(const struct dq_ring_offsets *o, size_t entry_size)
{
	uint64_t end = (uint64_t)o->entries +
		       (uint64_t)o->ring_entries * entry_size;

	return o->entry_size == entry_size && o->ring_entries &&
	       !(o->ring_entries & (o->ring_entries - 1)) &&
	       end <= o->map_size && o->producer + 4 <= o->map_size &&
	       o->consumer + 4 <= o->map_size && o->flags + 4 <= o->map_size;
}

/*
 * Set up the private rings and find out whether the kernel takes dq
 * uring commands: a CANCEL of a handle that cannot exist answers -ENOENT
 * when it does, -EOPNOTSUPP (no ->uring_cmd) or -EINVAL when it does not.
 */
static void dq_k_uring_init(struct dq_kq *k, uint32_t depth, bool tracked)
{
	int ret;

	ret = io_uring_queue_init(depth, &k->cmd_ring, 0);
	if (ret)
		return;
	k->cmd_ring_ok = true;
	ret = io_uring_queue_init(depth, &k->wait_ring, 0);
	if (ret)
		goto fallback;
	k->wait_ring_ok = true;
	if (tracked) {
		ret = io_uring_queue_init(depth, &k->done_ring, 0);
		if (ret)
			goto fallback;
		k->done_ring_ok = true;
	}

	k->uring = true;
	/*
	 * Probe with a slot no queue has (the kernel answers -ENOENT): on an
	 * attached queue slot 0 may hold someone's message.
	 */
	ret = dq_k_cancel_cmd(k, DQ_HANDLE(UINT32_MAX, 0));
	if (ret == -ENOENT)
		return;
fallback:
	k->uring = false;
	if (k->cmd_ring_ok)
		io_uring_queue_exit(&k->cmd_ring);
	if (k->wait_ring_ok)
		io_uring_queue_exit(&k->wait_ring);
	if (k->done_ring_ok)
		io_uring_queue_exit(&k->done_ring);
	k->cmd_ring_ok = k->wait_ring_ok = k->done_ring_ok = false;
}

/* Slots this process may not use yet (see DQ_IOC_SLOT_MAP). */
int dq_kernel_slot_map(struct dqshim_queue *q, uint64_t *bits)
{
	struct dq_slot_map map = {
		.bitmap = (uintptr_t)bits,
		.slot_count = q->slot_count,
	};

	return dq_k_ioctl(dq_kq(q)->fd, DQ_IOC_SLOT_MAP, &map);
}

/*
 * Set up a new queue, or attach to the named queue @name: the kernel then
 * decides every size, and the queue outlives this process.
 */
int dq_kernel_open(struct dqshim_queue *q, uint32_t flags, const char *name)
{
	struct dq_attach at;
	struct dq_setup s;
	struct dq_kq *k;
	bool tracked;
	void *arena;
	int ret;

	k = calloc(1, sizeof(*k));
	if (!k)
		return -ENOMEM;
	pthread_mutex_init(&k->done_lock, NULL);
	k->fd = open(DQ_DEV_PATH, O_RDWR | O_CLOEXEC);
	if (k->fd < 0) {
		ret = -errno;
		pthread_mutex_destroy(&k->done_lock);
		free(k);
		return ret;
	}

	memset(&s, 0, sizeof(s));
	if (name) {
		memset(&at, 0, sizeof(at));
		if (strlen(name) >= sizeof(at.name)) {
			ret = -ENAMETOOLONG;
			goto fail;
		}
		strcpy(at.name, name);
		/* A tracked queue's consumer; producers attach without. */
		if (flags & DQ_OPEN_F_TRACK)
			at.flags = DQ_ATTACH_F_CONSUMER;
		ret = dq_k_ioctl(k->fd, DQ_IOC_ATTACH, &at);
		s = at.setup;
	} else {
		s.slot_count = q->slot_count;
		s.slot_size = q->slot_size;
		s.submit_entries = q->sq_entries;
		/* 0: dq.ko's default, whatever this library's is. */
		s.ready_entries = q->rq_asked;
		s.numa_node = q->numa_node;
		s.granularity_ns = q->granularity_ns;
		if (flags & DQ_OPEN_F_TRACK) {
			s.flags = DQ_SETUP_F_TRACK;
			s.max_inflight = q->max_inflight;
			s.visibility_ns = q->visibility_ns;
		}
		if (flags & DQ_OPEN_F_KEYS)
			s.flags |= DQ_SETUP_F_KEYS;
		if (flags & DQ_OPEN_F_SLOT_ALIGN8)
			s.flags |= DQ_SETUP_F_SLOT_ALIGN8;
		ret = dq_k_ioctl(k->fd, DQ_IOC_SETUP, &s);
		/*
		 * A dq.ko older than DQ_FEAT_SLOT_ALIGN8 refuses the flag as
		 * unknown: the alignment only saves memory, so the queue is
		 * set up with the 64-byte rounding instead (dq.ko rounds the
		 * slot size up again) and its features say so.  Any other
		 * -EINVAL comes back from the second try too.
		 */
		if (ret == -EINVAL && (s.flags & DQ_SETUP_F_SLOT_ALIGN8)) {
			s.flags &= ~DQ_SETUP_F_SLOT_ALIGN8;
			ret = dq_k_ioctl(k->fd, DQ_IOC_SETUP, &s);
		}
	}
	if (ret)
		goto fail;
	if (s.abi_version != DQ_ABI_VERSION) {
		ret = -EPROTONOSUPPORT;
		goto fail;
	}
	tracked = s.flags & DQ_SETUP_F_TRACK;
	if (!dq_k_ring_ok(&s.submit, sizeof(struct dq_desc)) ||
	    !dq_k_ring_ok(&s.ready, tracked ? sizeof(struct dq_ready_track) :
			  sizeof(struct dq_ready)) ||
	    s.arena_size < (uint64_t)s.slot_count * s.slot_size) {
		ret = -EPROTO;
		goto fail;
	}

	ret = -ENOMEM;
	k->sq_size = s.submit.map_size;
	k->sq_map = dq_k_map(k->fd, DQ_OFF_SUBMIT_RING, k->sq_size);
	if (!k->sq_map)
		goto fail_errno;
	k->rq_size = s.ready.map_size;
	k->rq_map = dq_k_map(k->fd, DQ_OFF_READY_RING, k->rq_size);
	if (!k->rq_map)
		goto fail_errno;
	arena = dq_k_map(k->fd, DQ_OFF_ARENA, s.arena_size);
	if (!arena)
		goto fail_errno;

	k->rq_prod = (uint32_t *)((char *)k->rq_map + s.ready.producer);
	k->rq_cons = (uint32_t *)((char *)k->rq_map + s.ready.consumer);
	k->rq_flags = (uint32_t *)((char *)k->rq_map + s.ready.flags);
	k->backlog_flag = s.features & DQ_FEAT_READY_BACKLOG;
	k->backlog_maybe = s.ready.ring_entries < s.slot_count;
	k->rq_ring = (char *)k->rq_map + s.ready.entries;
	k->rq_esize = s.ready.entry_size;
	k->rq_mask = s.ready.ring_entries - 1;
	k->rq_head = dq_load_acquire_u32(k->rq_cons);

	if (!(flags & DQ_OPEN_F_IOCTL))
		dq_k_uring_init(k, q->uring_depth, tracked);

	/* Success: only now touch the queue. */
	q->backend = DQ_BACKEND_KERNEL;
	q->path = k->uring ? DQ_PATH_URING : DQ_PATH_IOCTL;
	q->ops = &dq_kernel_ops;
	q->be = k;
	q->fd = k->fd;
	q->slot_count = s.slot_count;
	q->slot_size = s.slot_size;
	q->sq_entries = s.submit.ring_entries;
	q->rq_entries = s.ready.ring_entries;
	q->granularity_ns = s.granularity_ns;
	q->numa_node = s.numa_node;
	q->queue_id = s.queue_id;
	q->instance = s.features & DQ_FEAT_INSTANCE ? s.instance : 0;
	q->abi_version = s.abi_version;
	q->features = s.features;
	q->tracked = tracked;
	/* An attached queue has keys when it was created with them. */
	q->keyed = s.flags & DQ_SETUP_F_KEYS;
	q->max_inflight = s.max_inflight;
	/* A producer-only attach to a tracked queue may not read its ring. */
	q->consumer = !tracked || !name || (flags & DQ_OPEN_F_TRACK);
	q->arena = arena;
	q->arena_size = s.arena_size;
	q->sq_prod = (uint32_t *)((char *)k->sq_map + s.submit.producer);
	q->sq_cons = (uint32_t *)((char *)k->sq_map + s.submit.consumer);
	q->sq_ring = (struct dq_desc *)((char *)k->sq_map + s.submit.entries);
	q->sq_tail = dq_load_acquire_u32(q->sq_prod);
	return 0;

fail_errno:
	ret = -errno;
fail:
	dq_k_free(k);
	return ret;
}
