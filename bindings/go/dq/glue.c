// SPDX-License-Identifier: LGPL-2.1 OR MIT
/*
 * glue.c - C helpers of the Go package (see glue.h).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>

#include "glue.h"

/*
 * The one place that builds a struct dq_params: when the struct grows a
 * size field (libbpf style), it is set here and nowhere else.
 */
void dqgo_fill_params(struct dq_params *p, const struct dqgo_params *gp)
{
	dq_params_init(p);
	if (gp->slot_count)
		p->slot_count = gp->slot_count;
	if (gp->slot_size)
		p->slot_size = gp->slot_size;
	p->submit_entries = gp->submit_entries;
	p->ready_entries = gp->ready_entries;
	p->numa_node = gp->numa_node;
	p->granularity_ns = gp->granularity_ns;
	p->backend = gp->backend;
	p->uring_depth = gp->uring_depth;
	p->flags = gp->flags;
	p->max_inflight = gp->max_inflight;
	/* Read by the library only with DQ_OPEN_F_VISIBILITY. */
	p->visibility_ns = gp->visibility_ns;
}

/*
 * Runs in the flushing thread under the queue's command lock: it only
 * appends, so that Go never has to be called back from C.
 */
static void dqgo_on_reject(void *arg, const struct dq_reject *rej)
{
	struct dqgo_queue *g = arg;

	pthread_mutex_lock(&g->rej_lock);
	if (g->rej_n < DQGO_REJECT_CAP)
		g->rej[g->rej_n++] = *rej;
	else
		g->rej_dropped++;
	pthread_mutex_unlock(&g->rej_lock);
}

/*
 * Params.ReapNetpoll: the fd Go's netpoller waits on for Reap, an epoll
 * fd, level-triggered on the queue's fd and the wake eventfd, non-blocking
 * so that os.NewFile registers it with the netpoller.  An epoll fd and not
 * the queue's fd itself: the library owns that one, and the netpoller
 * needs O_NONBLOCK, a flag of the open file that the library's own reads
 * would then see.  Returns the fd, which Go owns (it closes it), or -errno.
 */
int dqgo_netpoll_fd(struct dqgo_queue *g)
{
	struct epoll_event ev = { .events = EPOLLIN };
	int fd, ret;

	fd = epoll_create1(EPOLL_CLOEXEC);
	if (fd < 0)
		return -errno;
	ev.data.fd = g->qfd;
	if (epoll_ctl(fd, EPOLL_CTL_ADD, g->qfd, &ev) < 0)
		goto fail;
	ev.data.fd = g->wakefd;
	if (epoll_ctl(fd, EPOLL_CTL_ADD, g->wakefd, &ev) < 0)
		goto fail;
	if (fcntl(fd, F_SETFL, O_NONBLOCK) < 0)
		goto fail;
	return fd;
fail:
	ret = -errno;
	close(fd);
	return ret;
}

int dqgo_open(const struct dqgo_params *gp, const char *name,
	      const char *jdir, const struct dqgo_journal *gj,
	      struct dqgo_queue **out)
{
	struct dq_info info = { .sz = sizeof(info) };
	struct dq_journal_params jp;
	struct dqgo_queue *g;
	struct dq_params p;
	int ret;

	*out = NULL;
	g = calloc(1, sizeof(*g));
	if (!g)
		return -ENOMEM;
	g->rej = calloc(DQGO_REJECT_CAP, sizeof(*g->rej));
	g->wakefd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (!g->rej || g->wakefd < 0) {
		ret = g->rej ? -errno : -ENOMEM;
		goto fail;
	}
	pthread_mutex_init(&g->rej_lock, NULL);
	dqgo_fill_params(&p, gp);
	p.on_reject = dqgo_on_reject;
	p.reject_arg = g;
	if (jdir) {
		dq_journal_params_init(&jp, jdir, gj->durability);
		jp.sync_interval_us = gj->sync_interval_us;
		jp.sync_records = gj->sync_records;
		jp.retire_sync_us = gj->retire_sync_us;
		jp.max_bytes = gj->max_bytes;
		jp.segment_bytes = gj->segment_bytes;
		ret = name ? dq_queue_attach_durable(name, &p, &jp, &g->q) :
			     dq_queue_open_durable(&p, &jp, &g->q);
	} else {
		ret = name ? dq_queue_attach(name, &p, &g->q) :
			     dq_queue_open(&p, &g->q);
	}
	if (ret)
		goto fail_mutex;
	g->qfd = dq_queue_fd(g->q);
	g->fast = !jdir && dq_queue_info(g->q, &info) == 0 &&
		  info.backend == DQ_BACKEND_USER;
	*out = g;
	return 0;
fail_mutex:
	pthread_mutex_destroy(&g->rej_lock);
fail:
	if (g->wakefd >= 0)
		close(g->wakefd);
	free(g->rej);
	free(g);
	return ret;
}

void dqgo_close(struct dqgo_queue *g)
{
	if (!g)
		return;
	dq_queue_close(g->q);
	close(g->wakefd);
	pthread_mutex_destroy(&g->rej_lock);
	free(g->rej);
	free(g);
}

/*
 * Go's Msg is a struct dqshim_msg followed by Go fields: the messages are
 * @stride bytes apart.  Chunks of 64 through a stack array keep it one
 * library call (one lock round) per 64.
 */
int dqgo_reserve_n(struct dqgo_queue *g, void *msgs, size_t stride,
		   unsigned int n)
{
	struct dqshim_msg m[64];
	unsigned int done = 0, i;
	int ret;

	while (done < n) {
		unsigned int k = n - done < 64 ? n - done : 64;

		ret = dq_reserve_n(g->q, m, k);
		if (ret < 0)
			return done ? (int)done : ret;
		for (i = 0; i < (unsigned int)ret; i++)
			memcpy((char *)msgs + (size_t)(done + i) * stride,
			       &m[i], sizeof(m[i]));
		done += (unsigned int)ret;
		if ((unsigned int)ret < k)
			break;
	}
	return (int)done;
}

int dqgo_commit_n(struct dqgo_queue *g, const void *msgs, size_t stride,
		  const struct dqgo_ent *ents, unsigned int n)
{
	struct dq_commit_ent e[64];
	unsigned int done = 0, i;
	int ret;

	while (done < n) {
		unsigned int k = n - done < 64 ? n - done : 64;

		for (i = 0; i < k; i++) {
			const struct dqgo_ent *s = &ents[done + i];

			e[i].msg = (const struct dqshim_msg *)
				((const char *)msgs + (size_t)(done + i) * stride);
			e[i].due_ns = s->due_ns;
			e[i].user_data = s->user_data;
			e[i].len = s->len;
			e[i].flags = s->flags;
		}
		ret = dq_commit_n(g->q, e, k);
		if (ret < 0)
			return done ? (int)done : ret;
		done += (unsigned int)ret;
		if ((unsigned int)ret < k)
			break;
	}
	return (int)done;
}

/*
 * A producer's whole step for a batch in one call from Go (Queue.PutN):
 * reserve, copy each payload from @buf (entry i's ents[i].len bytes right
 * after entry i-1's), commit, flush.  Copying here rather than through a
 * []byte over each slot saves Go one cgo call per step and per 64 (reserve,
 * commit, flush: three).  Chunks of 64 through stack arrays, as
 * dqgo_commit_n().  A full submit batch (-EAGAIN) is flushed and the rest
 * committed; a slot reserved but not committed is aborted, so nothing stays
 * reserved.  handles (may be NULL) gets each committed message's handle.
 * Returns the number committed (the first ones), or the first failure's
 * -errno when none was; *flush_err is the final dq_flush()'s -errno (0 when
 * it succeeded or nothing was committed).
 */
int dqgo_put_n(struct dqgo_queue *g, const void *buf, size_t buflen,
	       const struct dqgo_ent *ents, unsigned int n, uint64_t *handles,
	       int *flush_err)
{
	const char *src = buf;
	struct dqshim_msg m[64];
	struct dq_commit_ent e[64];
	unsigned int done = 0, i;
	size_t total = 0;
	int ret, err = 0;

	*flush_err = 0;
	/* Every payload inside @buf before any slot is taken. */
	for (i = 0; i < n; i++)
		total += ents[i].len;
	if (total > buflen)
		return -EINVAL;
	while (done < n) {
		unsigned int k = n - done < 64 ? n - done : 64, r, c = 0;
		int flushed = 0;

		ret = dq_reserve_n(g->q, m, k);
		if (ret < 0) {
			err = ret;
			break;
		}
		r = (unsigned int)ret;
		for (i = 0; i < r; i++) {
			const struct dqgo_ent *s = &ents[done + i];

			/* A payload over the slot size: dq_commit_n() says
			 * -EMSGSIZE; copy no more than the slot holds. */
			memcpy(m[i].data, src, s->len < m[i].cap ? s->len : m[i].cap);
			src += s->len;
			e[i].msg = &m[i];
			e[i].due_ns = s->due_ns;
			e[i].user_data = s->user_data;
			e[i].len = s->len;
			e[i].flags = s->flags;
		}
		while (c < r) {
			ret = dq_commit_n(g->q, e + c, r - c);
			if (ret > 0) {
				c += (unsigned int)ret;
				flushed = 0;
				continue;
			}
			if (ret == -EAGAIN && !flushed) {
				flushed = 1;
				ret = dq_flush(g->q);
				if (ret >= 0)
					continue;
			}
			err = ret;
			break;
		}
		if (handles)
			for (i = 0; i < c; i++)
				handles[done + i] = m[i].handle;
		for (i = c; i < r; i++)
			dq_abort(g->q, &m[i]);
		done += c;
		if (c < k)
			break;
	}
	if (done) {
		ret = dq_flush(g->q);
		if (ret < 0)
			*flush_err = ret;
	}
	return done ? (int)done : err;
}

/* A blocking wait that a context (or Close) can end: see dqgo_wake(). */
#define DQGO_GUARD_NS	(100 * 1000000LL)

/*
 * Reap, waiting up to @timeout_ns (< 0: forever) in poll(2) on the queue's
 * fd and the wake eventfd, never in the library's own blocking dq_reap(),
 * which nothing can end early.  Every round starts with dq_reap(timeout 0),
 * which is exact (it moves dq.ko's backlog on and re-arms the user
 * engine's timerfd), so a sleep only starts when nothing is due and the fd
 * is armed for the next due time.  Each poll is bounded by DQGO_GUARD_NS:
 * a release the fd does not announce (a delivery credit returned on a
 * tracked queue with max_inflight) is then taken at most that much late
 * instead of never.  When the fd says readable twice in a row with nothing
 * to reap, the next round sleeps in dq_reap() for at most 10 ms instead of
 * spinning.  Returns what dq_reap() returns, -ETIME when the time passed,
 * -ECANCELED when dqgo_wake() was called.
 */
int dqgo_reap_wait(struct dqgo_queue *g, struct dq_reaped *out,
		   unsigned int max, int64_t timeout_ns)
{
	uint64_t end = timeout_ns < 0 ? UINT64_MAX : dq_now_ns() + (uint64_t)timeout_ns;
	int idle_readable = 0;

	for (;;) {
		struct pollfd pfd[2] = {
			{ .fd = g->qfd, .events = POLLIN },
			{ .fd = g->wakefd, .events = POLLIN },
		};
		uint64_t now, left;
		struct timespec ts;
		int n;

		n = dq_reap(g->q, out, max,
			    idle_readable >= 2 ? 10 * 1000000LL : 0);
		if (n != 0 && n != -ETIME)
			return n;
		now = dq_now_ns();
		if (now >= end)
			return -ETIME;
		left = end - now;
		if (left > (uint64_t)DQGO_GUARD_NS)
			left = DQGO_GUARD_NS;
		ts.tv_sec = (time_t)(left / 1000000000ULL);
		ts.tv_nsec = (long)(left % 1000000000ULL);
		if (ppoll(pfd, 2, &ts, NULL) < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (pfd[1].revents & POLLIN)
			return -ECANCELED;
		idle_readable = (pfd[0].revents & POLLIN) ? idle_readable + 1 : 0;
	}
}

/*
 * One round of a Reap with Params.ReapNetpoll: dq_reap() without waiting, which is exact (it moves
 * dq.ko's backlog on and re-arms the user engine's timerfd, so the queue's
 * fd announces the next due time); if nothing is due, -ECANCELED when
 * dqgo_wake() was called, else 0: Go then waits for dqgo_netpoll_fd() in
 * its netpoller, whose wait holds no P (no OS thread blocked in a cgo call
 * that the runtime's sysmon would watch every 20 us) and calls this again.
 */
int dqgo_reap_poll(struct dqgo_queue *g, struct dq_reaped *out,
		   unsigned int max)
{
	int n = dq_reap(g->q, out, max, 0);

	if (n != 0 && n != -ETIME)
		return n;
	if (__atomic_load_n(&g->woken, __ATOMIC_SEQ_CST))
		return -ECANCELED;
	return 0;
}

/*
 * End the Reap in progress, or the next one (until unwake): the flag is
 * set before the eventfd is written, so the round the eventfd wakes sees it.
 */
void dqgo_wake(struct dqgo_queue *g)
{
	uint64_t one = 1;

	__atomic_store_n(&g->woken, 1, __ATOMIC_SEQ_CST);
	/* Fails only when the counter is full: it is set anyway. */
	(void)!write(g->wakefd, &one, sizeof(one));
}

void dqgo_unwake(struct dqgo_queue *g)
{
	uint64_t v;

	__atomic_store_n(&g->woken, 0, __ATOMIC_SEQ_CST);
	(void)!read(g->wakefd, &v, sizeof(v));
}

/*
 * The Go package's calls that cannot block, entered from Go through the
 * runtime's asmcgocall() (fastcall.go) instead of cgo's cgocall(): no
 * entersyscall(), so a call made while the runtime's sysmon thread sleeps
 * deeply (every P was idle) does not wake it, which in a goroutine woken
 * by the netpoller or a timer cost more than the whole wake-up (see
 * fastcall.go).  The price is that the caller's P stays held for the
 * call, so only calls of an embedded, non-durable queue (g->fast) come
 * here: they take the library's mutexes for their short sections (a
 * producer's batch at most) and make at most a timerfd_settime(), never a
 * wait, a journal write or an fsync.  Must not call Go.
 */
void dqgo_fastcall(void *arg)
{
	struct dqgo_fc *c = arg;

	switch (c->op) {
	case DQGO_FC_NOW:
		c->now = dq_now_ns();
		break;
	case DQGO_FC_REAP_POLL:
		c->ret = dqgo_reap_poll(c->g, c->buf, c->n);
		break;
	case DQGO_FC_TRY_REAP:
		c->ret = dq_reap(c->g->q, c->buf, c->n, 0);
		break;
	case DQGO_FC_DONE:
		c->ret = dq_done(c->g->q, c->arg);
		break;
	case DQGO_FC_FINISH:
		c->ret = dq_finish(c->g->q, c->arg, c->outcome);
		break;
	case DQGO_FC_DONE_N:
		c->ret = dq_done_n(c->g->q, c->buf, c->n, c->res);
		break;
	case DQGO_FC_FINISH_N:
		c->ret = dq_finish_n(c->g->q, c->buf, c->n, c->outcome, c->res);
		break;
	case DQGO_FC_PUT_N:
		c->ret = dqgo_put_n(c->g, c->buf, c->len, c->ents, c->n,
				    c->handles, &c->flush_err);
		break;
	default:
		c->ret = -EINVAL;
	}
}

unsigned int dqgo_take_rejects(struct dqgo_queue *g, struct dq_reject *out,
			       unsigned int max, uint64_t *dropped)
{
	unsigned int n;

	pthread_mutex_lock(&g->rej_lock);
	n = g->rej_n < max ? g->rej_n : max;
	memcpy(out, g->rej, n * sizeof(*out));
	memmove(g->rej, g->rej + n, (g->rej_n - n) * sizeof(*out));
	g->rej_n -= n;
	*dropped = g->rej_dropped;
	g->rej_dropped = 0;
	pthread_mutex_unlock(&g->rej_lock);
	return n;
}
