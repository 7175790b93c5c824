/* SPDX-License-Identifier: LGPL-2.1 OR MIT */
/*
 * dqbridge's host-name lookups, off the loop's thread.
 *
 * getaddrinfo() of a DNS name waits for the resolver: seconds, times its
 * attempts, when a name server is slow or gone.  Called from the loop it
 * would stop everything for that long (the source, the metrics endpoint,
 * the timers of every request in flight).  So a lookup runs on a thread
 * of its own and its end is an eventfd in the loop's epoll set; the
 * caller keeps using the addresses it has meanwhile.
 *
 * One lookup at a time per resolver: a resolver_start() while one is
 * under way joins it.  resolver_close() never waits: a lookup still
 * running finishes on its thread, which then frees what it shares.
 */
#ifndef DQB_RESOLVER_H
#define DQB_RESOLVER_H

#include <sys/socket.h>

struct ev;
struct resolver;

#define RESOLVER_MAX_ADDRS	16

struct resolver_addrs {
	unsigned int n;
	socklen_t len[RESOLVER_MAX_ADDRS];
	struct sockaddr_storage addr[RESOLVER_MAX_ADDRS];
};

/*
 * A name given as a numeric address (IPv4, IPv6 without brackets) and
 * @port, resolved at once, never waiting: 0 with @out filled, or -EINVAL
 * when @host is not numeric (a name: use a resolver).
 */
int resolver_numeric(const char *host, const char *port, struct resolver_addrs *out);

/*
 * A resolver for @host and @port whose lookups end in @done(@arg), run
 * from ev_wait() on the loop's thread.  0, -ENOMEM or -errno.
 */
int resolver_open(const char *host, const char *port, struct ev *ev,
		  void (*done)(void *arg), void *arg, struct resolver **out);
void resolver_close(struct resolver *r);

/* Start a lookup unless one is under way. */
void resolver_start(struct resolver *r);

/* Whether a lookup is under way (started and not yet taken). */
int resolver_busy(const struct resolver *r);

/*
 * The last lookup's result, from @done: 0 with @out filled, or
 * -EHOSTUNREACH (the name did not resolve; @out untouched).
 */
int resolver_take(struct resolver *r, struct resolver_addrs *out);

#endif /* DQB_RESOLVER_H */
