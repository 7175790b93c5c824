// SPDX-License-Identifier: LGPL-2.1 OR MIT
/*
 * dqbridge's epoll loop (tools/dqbridge/ev.c) on its own: a parked
 * descriptor (an idle keep-alive connection libcurl stopped watching)
 * calls nobody back, leaves the set at its first event rather than
 * firing every turn, comes back with ev_watch(), and a descriptor
 * unwatched, closed and its number reused by a new socket is watched
 * afresh.  Socket pairs, no timing.  TAP; last line "N passed, N failed".
 */
#include <stdint.h>
#include <stdio.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ev.h"

static int n, failed, calls;

static void ok(int cond, const char *what)
{
	n++;
	if (!cond)
		failed++;
	printf("%sok %d - %s\n", cond ? "" : "not ", n, what);
}

static void on_ev(void *arg, int fd, uint32_t events)
{
	char buf[64];

	(void)arg;
	(void)events;
	calls++;
	while (read(fd, buf, sizeof(buf)) == (ssize_t)sizeof(buf))
		;
}

static void nothing(void *arg, int fd, uint32_t events)
{
	(void)arg;
	(void)fd;
	(void)events;
	calls++;	/* does not read: level-triggered, fires again */
}

int main(void)
{
	struct ev *e;
	int sp[2], sq[2], ret;

	if (ev_new(&e) || socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sp)) {
		printf("Bail out! setup\n");
		return 1;
	}
	ok(!ev_watch(e, sp[0], EPOLLIN, on_ev, NULL), "watch");
	ok(write(sp[1], "x", 1) == 1 && ev_wait(e, 1000) == 1 && calls == 1,
	   "a watched descriptor calls back");

	calls = 0;
	ev_park(e, sp[0]);
	ok(write(sp[1], "y", 1) == 1 && ev_wait(e, 0) == 1 && calls == 0,
	   "parked: its event calls nobody back");
	ret = ev_wait(e, 0);
	ok(ret == 0, "parked: out of the set after that event, not firing every turn");
	if (ret)
		printf("# ev_wait returned %d\n", ret);

	ok(!ev_watch(e, sp[0], EPOLLIN, on_ev, NULL) && ev_wait(e, 1000) == 1 && calls == 1,
	   "watched again: its pending data calls back");

	calls = 0;
	ev_park(e, sp[0]);
	ok(!ev_watch(e, sp[0], EPOLLIN, nothing, NULL), "parked, then watched again before any event");
	ok(write(sp[1], "z", 1) == 1 && ev_wait(e, 1000) == 1 && calls == 1,
	   "... calls the new callback back");

	/* A parked descriptor closed (unwatched first, as the contract
	 * says) and its number reused by a new socket. */
	ev_park(e, sp[0]);
	ok(!ev_unwatch(e, sp[0]), "a parked descriptor unwatched");
	close(sp[0]);
	close(sp[1]);
	calls = 0;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sq)) {
		printf("Bail out! socketpair\n");
		return 1;
	}
	ok(sq[0] == sp[0], "the new socket took the closed one's number");
	ok(!ev_watch(e, sq[0], EPOLLIN, on_ev, NULL) && write(sq[1], "w", 1) == 1 &&
	   ev_wait(e, 1000) == 1 && calls == 1,
	   "the reused number is watched afresh");

	ev_free(e);
	printf("1..%d\n%d passed, %d failed\n", n, n - failed, failed);
	return failed ? 1 : 0;
}
