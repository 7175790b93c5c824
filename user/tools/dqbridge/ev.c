// SPDX-License-Identifier: LGPL-2.1 OR MIT
/*
 * dqbridge: the epoll loop (ev.h).  Registrations live in a table indexed
 * by descriptor (descriptors are small and dense), so a fired event finds
 * its callback without a search and epoll_data carries only the fd: a
 * registration changed or removed within one ev_wait() batch is seen by
 * the events of the same batch that follow.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "ev.h"

#define EV_BATCH 64

struct reg {
	ev_cb cb;
	void *arg;
	uint32_t events;
	int on;		/* in the epoll set */
};

struct ev {
	int epfd;
	struct reg *regs;
	unsigned int nregs;
};

int ev_new(struct ev **out)
{
	struct ev *e = calloc(1, sizeof(*e));

	if (!e)
		return -ENOMEM;
	e->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (e->epfd < 0) {
		int ret = -errno;

		free(e);
		return ret;
	}
	*out = e;
	return 0;
}

void ev_free(struct ev *e)
{
	if (!e)
		return;
	close(e->epfd);
	free(e->regs);
	free(e);
}

static int grow(struct ev *e, int fd)
{
	unsigned int n = e->nregs ? e->nregs : 64;
	struct reg *r;

	while (n <= (unsigned int)fd)
		n *= 2;
	if (n == e->nregs)
		return 0;
	r = realloc(e->regs, n * sizeof(*r));
	if (!r)
		return -ENOMEM;
	memset(r + e->nregs, 0, (n - e->nregs) * sizeof(*r));
	e->regs = r;
	e->nregs = n;
	return 0;
}

int ev_watch(struct ev *e, int fd, uint32_t events, ev_cb cb, void *arg)
{
	struct epoll_event ee = { .events = events, .data.fd = fd };
	struct reg *r;
	int ret;

	if (fd < 0)
		return -EBADF;
	if ((unsigned int)fd >= e->nregs) {
		ret = grow(e, fd);
		if (ret)
			return ret;
	}
	r = &e->regs[fd];
	r->cb = cb;
	r->arg = arg;
	if (r->on && r->events == events)
		return 0;	/* nothing changes: no system call */
	if (epoll_ctl(e->epfd, r->on ? EPOLL_CTL_MOD : EPOLL_CTL_ADD, fd, &ee))
		return -errno;
	r->on = 1;
	r->events = events;
	return 0;
}

int ev_unwatch(struct ev *e, int fd)
{
	struct reg *r;

	if (fd < 0 || (unsigned int)fd >= e->nregs || !e->regs[fd].on)
		return 0;
	r = &e->regs[fd];
	memset(r, 0, sizeof(*r));
	/* The descriptor may be closed already (libcurl tells after): then
	 * the kernel dropped it from the set itself. */
	if (epoll_ctl(e->epfd, EPOLL_CTL_DEL, fd, NULL) && errno != EBADF &&
	    errno != ENOENT)
		return -errno;
	return 0;
}

int ev_wait(struct ev *e, int timeout_ms)
{
	struct epoll_event evs[EV_BATCH];
	int n, i;

	n = epoll_wait(e->epfd, evs, EV_BATCH, timeout_ms);
	if (n < 0)
		return errno == EINTR ? 0 : -errno;
	for (i = 0; i < n; i++) {
		int fd = evs[i].data.fd;
		struct reg *r;

		if ((unsigned int)fd >= e->nregs)
			continue;
		r = &e->regs[fd];
		if (r->on && r->cb)
			r->cb(r->arg, fd, evs[i].events);
	}
	return n;
}
