// SPDX-License-Identifier: LGPL-2.1 OR MIT
/*
 * timerfd.c - one timerfd per message (absolute CLOCK_MONOTONIC), all in
 * one epoll set; a single-threaded event loop submits and releases.
 *
 * Each held message costs a file descriptor (RLIMIT_NOFILE is raised to the
 * workload's capacity; fs.nr_open caps it at about a million), a struct
 * file, a timerfd context, an epoll item and an hrtimer, plus the payload in
 * the process's heap.
 */
#include "bench.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/timerfd.h>

#define MAX_EVENTS 256

struct msg {
	int fd;
	unsigned char payload[];
};

static int ep = -1;

static int tfd_setup(const struct bench_opts *o, uint64_t capacity)
{
	int rc;

	(void)o;
	/* a file, a timerfd context, an epoll item per message */
	bench_state_in_kernel();
	rc = bench_raise_nofile(capacity + 256);
	if (rc) {
		struct rlimit rl;

		getrlimit(RLIMIT_NOFILE, &rl);
		bench_note("RLIMIT_NOFILE %llu caps the messages held (wanted %llu)",
			   (unsigned long long)rl.rlim_cur,
			   (unsigned long long)capacity + 256);
	}
	ep = epoll_create1(EPOLL_CLOEXEC);
	return ep < 0 ? -errno : 0;
}

static int tfd_submit(uint64_t id, uint64_t due_ns)
{
	struct itimerspec its = {
		.it_value.tv_sec = (time_t)(due_ns / 1000000000ULL),
		.it_value.tv_nsec = (long)(due_ns % 1000000000ULL),
	};
	struct epoll_event ev = { .events = EPOLLIN };
	struct msg *m = malloc(sizeof(*m) + bench_o->payload);
	int err;

	if (!m)
		return -ENOMEM;
	bench_fill(m->payload, id, due_ns, bench_o->payload);
	m->fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (m->fd < 0) {
		err = -errno;
		free(m);
		/* out of descriptors: full until some are released */
		return err == -EMFILE || err == -ENFILE ? -EAGAIN : err;
	}
	ev.data.ptr = m;
	if (timerfd_settime(m->fd, TFD_TIMER_ABSTIME, &its, NULL) ||
	    epoll_ctl(ep, EPOLL_CTL_ADD, m->fd, &ev)) {
		err = -errno;
		close(m->fd);
		free(m);
		return err;
	}
	return 0;
}

static int tfd_poll(uint64_t until_ns)
{
	struct epoll_event evs[MAX_EVENTS];
	uint64_t now = bench_now();
	struct timespec ts = { 0, 0 };
	int n, i, rounds;

	if (until_ns > now) {
		ts.tv_sec = (time_t)((until_ns - now) / 1000000000ULL);
		ts.tv_nsec = (long)((until_ns - now) % 1000000000ULL);
	}
	for (rounds = 0; rounds < 1000; rounds++) {
		struct bench_msg bm[MAX_EVENTS];
		struct msg *got[MAX_EVENTS];
		int k = 0;

		n = epoll_pwait2(ep, evs, MAX_EVENTS, &ts, NULL);
		if (n < 0)
			return errno == EINTR ? 0 : -errno;
		for (i = 0; i < n; i++) {
			struct msg *m = evs[i].data.ptr;
			uint64_t exp;

			if (read(m->fd, &exp, sizeof(exp)) != sizeof(exp)) {
				/* spurious: not expired yet */
				bench_error_count();
				continue;
			}
			got[k] = m;
			bm[k++] = (struct bench_msg){ m->payload, bench_o->payload };
		}
		/* every expiry of the batch read: one release time for all */
		bench_deliver_batch(bm, (unsigned int)k);
		for (i = 0; i < k; i++) {
			close(got[i]->fd);
			free(got[i]);
		}
		if (n < MAX_EVENTS)
			break;
		ts.tv_sec = 0;
		ts.tv_nsec = 0;
	}
	return 0;
}

static void tfd_teardown(void)
{
	/* timers still armed go away with the process */
	if (ep >= 0)
		close(ep);
}

const struct peer_ops peer = {
	.name = "timerfd",
	.setup = tfd_setup,
	.submit = tfd_submit,
	.poll = tfd_poll,
	.teardown = tfd_teardown,
};
