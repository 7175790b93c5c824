// SPDX-License-Identifier: LGPL-2.1 OR MIT
/*
 * dqbridge: host-name lookups on a thread of their own (resolver.h).
 *
 * What the loop and the lookup thread share is struct resolver_shared,
 * under its mutex, with two references: the loop's (dropped by
 * resolver_close()) and the thread's (dropped when it leaves).  The
 * thread writes the eventfd only under the mutex and only while the loop
 * still holds its reference, so the loop may close the eventfd as soon
 * as it has dropped it, without waiting for a lookup in progress.
 */
#include <errno.h>
#include <netdb.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "ev.h"
#include "resolver.h"

struct resolver_shared {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int refs;		/* the loop's and the thread's */
	int want;		/* a lookup is asked for */
	int quit;		/* the loop is gone */
	int efd;		/* written once a lookup ends, while !quit */
	int rc;			/* of the last lookup: 0 or -EHOSTUNREACH */
	struct resolver_addrs res;
	char host[256];
	char port[16];
};

struct resolver {
	struct resolver_shared *sh;
	struct ev *ev;
	int efd;
	int busy;		/* started, result not yet taken */
	void (*done)(void *arg);
	void *arg;
};

static int fill(const struct addrinfo *ai, struct resolver_addrs *out)
{
	unsigned int n = 0;

	for (; ai && n < RESOLVER_MAX_ADDRS; ai = ai->ai_next) {
		if (ai->ai_addrlen > sizeof(out->addr[0]))
			continue;
		memcpy(&out->addr[n], ai->ai_addr, ai->ai_addrlen);
		out->len[n++] = ai->ai_addrlen;
	}
	out->n = n;
	return n ? 0 : -EHOSTUNREACH;
}

static int lookup(const char *host, const char *port, int flags, struct resolver_addrs *out)
{
	struct addrinfo hints = {
		.ai_family = AF_UNSPEC,
		.ai_socktype = SOCK_STREAM,
		.ai_flags = flags,
	}, *res;
	int ret;

	if (getaddrinfo(host, port, &hints, &res))
		return -EHOSTUNREACH;
	ret = fill(res, out);
	freeaddrinfo(res);
	return ret;
}

int resolver_numeric(const char *host, const char *port, struct resolver_addrs *out)
{
	struct resolver_addrs a;

	if (lookup(host, port, AI_NUMERICHOST | AI_NUMERICSERV, &a))
		return -EINVAL;
	*out = a;
	return 0;
}

static void shared_put(struct resolver_shared *sh)
{
	int last;

	pthread_mutex_lock(&sh->mu);
	last = !--sh->refs;
	pthread_mutex_unlock(&sh->mu);
	if (!last)
		return;
	pthread_cond_destroy(&sh->cv);
	pthread_mutex_destroy(&sh->mu);
	free(sh);
}

static void *lookup_main(void *arg)
{
	struct resolver_shared *sh = arg;
	struct resolver_addrs a;
	uint64_t one = 1;
	int rc;

	pthread_mutex_lock(&sh->mu);
	for (;;) {
		while (!sh->want && !sh->quit)
			pthread_cond_wait(&sh->cv, &sh->mu);
		if (sh->quit)
			break;
		sh->want = 0;
		pthread_mutex_unlock(&sh->mu);
		rc = lookup(sh->host, sh->port, AI_NUMERICSERV, &a);
		pthread_mutex_lock(&sh->mu);
		if (sh->quit)
			break;
		sh->rc = rc;
		if (!rc)
			sh->res = a;
		/* An eventfd's counter only fails to grow at 2^64 - 2. */
		if (write(sh->efd, &one, sizeof(one)) < 0)
			sh->rc = -EHOSTUNREACH;
	}
	pthread_mutex_unlock(&sh->mu);
	shared_put(sh);
	return NULL;
}

static void on_efd(void *arg, int fd, uint32_t events)
{
	struct resolver *r = arg;
	uint64_t v;

	(void)events;
	if (read(fd, &v, sizeof(v)) != sizeof(v))
		return;
	r->done(r->arg);
}

int resolver_open(const char *host, const char *port, struct ev *ev,
		  void (*done)(void *arg), void *arg, struct resolver **out)
{
	struct resolver *r = calloc(1, sizeof(*r));
	struct resolver_shared *sh = calloc(1, sizeof(*sh));
	pthread_attr_t at;
	pthread_t th;
	int ret;

	if (r)
		r->efd = -1;
	if (!r || !sh || strlen(host) >= sizeof(sh->host) || strlen(port) >= sizeof(sh->port)) {
		ret = r && sh ? -EINVAL : -ENOMEM;
		goto fail;
	}
	strcpy(sh->host, host);
	strcpy(sh->port, port);
	r->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (r->efd < 0) {
		ret = -errno;
		goto fail;
	}
	sh->efd = r->efd;
	sh->refs = 2;
	pthread_mutex_init(&sh->mu, NULL);
	pthread_cond_init(&sh->cv, NULL);
	r->sh = sh;
	r->ev = ev;
	r->done = done;
	r->arg = arg;
	ret = ev_watch(ev, r->efd, EPOLLIN, on_efd, r);
	if (ret)
		goto fail_sync;
	pthread_attr_init(&at);
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	ret = -pthread_create(&th, &at, lookup_main, sh);
	pthread_attr_destroy(&at);
	if (ret) {
		ev_unwatch(ev, r->efd);
		goto fail_sync;
	}
	*out = r;
	return 0;
fail_sync:
	pthread_cond_destroy(&sh->cv);
	pthread_mutex_destroy(&sh->mu);
fail:
	if (r && r->efd >= 0)
		close(r->efd);
	free(sh);
	free(r);
	return ret;
}

void resolver_close(struct resolver *r)
{
	struct resolver_shared *sh;

	if (!r)
		return;
	sh = r->sh;
	pthread_mutex_lock(&sh->mu);
	sh->quit = 1;
	pthread_cond_signal(&sh->cv);
	pthread_mutex_unlock(&sh->mu);
	/* The thread writes efd only while !quit: it is ours to close. */
	ev_unwatch(r->ev, r->efd);
	close(r->efd);
	shared_put(sh);
	free(r);
}

void resolver_start(struct resolver *r)
{
	if (r->busy)
		return;
	r->busy = 1;
	pthread_mutex_lock(&r->sh->mu);
	r->sh->want = 1;
	pthread_cond_signal(&r->sh->cv);
	pthread_mutex_unlock(&r->sh->mu);
}

int resolver_busy(const struct resolver *r)
{
	return r->busy;
}

int resolver_take(struct resolver *r, struct resolver_addrs *out)
{
	int rc;

	r->busy = 0;
	pthread_mutex_lock(&r->sh->mu);
	rc = r->sh->rc;
	if (!rc)
		*out = r->sh->res;
	pthread_mutex_unlock(&r->sh->mu);
	return rc;
}
