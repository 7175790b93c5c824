// SPDX-License-Identifier: LGPL-2.1 OR MIT
/*
 * beanstalkd.c - beanstalkd's delayed jobs: "put <pri> <delay> <ttr>" with
 * a delay, workers "reserve" and "delete".  A real beanstalkd on 127.0.0.1
 * (the driver starts it, without a binlog, on a private port), spoken to
 * over its text protocol by the small client below.
 *
 * The protocol's delay is a whole number of seconds: a message due in 0.3 s
 * must be put with delay 1 (rounding down would release it early), so the
 * lateness is up to a second by design.  The producer pipelines one put per
 * message per batch; each consumer connection pipelines the delete of a job
 * with the next reserve.
 *
 * Options: port=N (11300), consumers=N (2).
 */
#include "bench.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define MAX_CONSUMERS 64
#define RBUF 65536

struct conn {
	int fd;
	size_t pos, len;
	char buf[RBUF];
};

static int port = 11300;
static unsigned int n_consumers = 2;
static struct conn *prod;
static char *obuf;
static size_t olen, ocap;
static unsigned int pipelined;
static struct conn *cons[MAX_CONSUMERS];
static pthread_t threads[MAX_CONSUMERS];
static unsigned int started;
static volatile int stop_flag;
static char desc[64];

static int bs_opt(const char *k, const char *v)
{
	unsigned long x = strtoul(v, NULL, 10);

	if (!strcmp(k, "port"))
		port = (int)x;
	else if (!strcmp(k, "consumers"))
		n_consumers = (unsigned int)x;
	else
		return -1;
	return n_consumers && n_consumers <= MAX_CONSUMERS ? 0 : -1;
}

static struct conn *bs_connect(int rcv_timeout_s)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	struct timeval tv = { .tv_sec = rcv_timeout_s };
	struct conn *c = calloc(1, sizeof(*c));
	int one = 1;

	if (!c)
		return NULL;
	sa.sin_port = htons((uint16_t)port);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	c->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (c->fd < 0 || connect(c->fd, (struct sockaddr *)&sa, sizeof(sa))) {
		bench_err("connect 127.0.0.1:%d: %s", port, strerror(errno));
		if (c->fd >= 0)
			close(c->fd);
		free(c);
		return NULL;
	}
	setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (rcv_timeout_s)
		setsockopt(c->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	return c;
}

static int write_all(int fd, const char *p, size_t n)
{
	int guard;

	for (guard = 0; n && guard < 1000000; guard++) {
		ssize_t w = send(fd, p, n, MSG_NOSIGNAL);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -EIO;
		p += w;
		n -= (size_t)w;
	}
	return n ? -EIO : 0;
}

/* make at least @need bytes available in c->buf; 0 or -EIO */
static int fill(struct conn *c, size_t need)
{
	int guard;

	if (c->pos && c->len - c->pos < need) {
		memmove(c->buf, c->buf + c->pos, c->len - c->pos);
		c->len -= c->pos;
		c->pos = 0;
	}
	for (guard = 0; c->len - c->pos < need && guard < 1000000; guard++) {
		ssize_t r = read(c->fd, c->buf + c->len, sizeof(c->buf) - c->len);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -EIO;
		c->len += (size_t)r;
	}
	return c->len - c->pos >= need ? 0 : -EIO;
}

/* read one "\r\n"-terminated line into @line (NUL-terminated) */
static int read_line(struct conn *c, char *line, size_t cap)
{
	int guard;

	for (guard = 0; guard < 1000; guard++) {
		char *s = c->buf + c->pos;
		char *e = memmem(s, c->len - c->pos, "\r\n", 2);

		if (e) {
			size_t l = (size_t)(e - s);

			if (l >= cap)
				return -EPROTO;
			memcpy(line, s, l);
			line[l] = 0;
			c->pos += l + 2;
			return 0;
		}
		if (c->len - c->pos >= sizeof(c->buf) / 2)
			return -EPROTO;
		if (fill(c, c->len - c->pos + 1))
			return -EIO;
	}
	return -EPROTO;
}

static int bs_setup(const struct bench_opts *o, uint64_t capacity)
{
	(void)capacity;
	prod = bs_connect(60);
	if (!prod)
		return -ECONNREFUSED;
	ocap = (size_t)o->batch * (o->payload + 64) + 4096;
	obuf = malloc(ocap);
	if (!obuf)
		return -ENOMEM;
	snprintf(desc, sizeof(desc), "consumers=%u", n_consumers);
	return 0;
}

static void *consumer(void *arg)
{
	struct conn *c = arg;
	char line[128], cmd[64];
	size_t plen = bench_o->payload;
	int guard;

	if (write_all(c->fd, "reserve\r\n", 9))
		goto err;
	for (guard = 0; guard < 2000000000 && !stop_flag; guard++) {
		unsigned long long id;
		size_t bytes;
		int l;

		if (read_line(c, line, sizeof(line)))
			goto err;
		if (!strncmp(line, "DEADLINE_SOON", 13)) {
			if (write_all(c->fd, "reserve\r\n", 9))
				goto err;
			continue;
		}
		if (sscanf(line, "RESERVED %llu %zu", &id, &bytes) != 2 ||
		    bytes > sizeof(c->buf) / 2 || fill(c, bytes + 2))
			goto err;
		/*
		 * The delete goes out before the release is reported: a stop
		 * in between leaves the job in beanstalkd (held() shows it,
		 * overdue) instead of released and still there (a dup).
		 */
		l = snprintf(cmd, sizeof(cmd), "delete %llu\r\nreserve\r\n", id);
		if (write_all(c->fd, cmd, (size_t)l))
			goto err;
		bench_deliver(c->buf + c->pos, bytes == plen ? plen : bytes);
		c->pos += bytes + 2;
		if (read_line(c, line, sizeof(line)))
			goto err;
		if (strcmp(line, "DELETED"))
			bench_error_count();
	}
	return NULL;
err:
	if (!stop_flag) {
		bench_error_count();
		bench_err("consumer connection failed");
	}
	return NULL;
}

static int bs_start(void)
{
	for (started = 0; started < n_consumers; started++) {
		cons[started] = bs_connect(0);
		if (!cons[started] ||
		    pthread_create(&threads[started], NULL, consumer, cons[started]))
			return -EAGAIN;
	}
	return 0;
}

static int bs_submit(uint64_t id, uint64_t due_ns)
{
	uint64_t now = bench_now();
	/* whole seconds, rounded up: never early */
	uint64_t delay = due_ns > now ? (due_ns - now + 999999999ULL) / 1000000000ULL : 0;
	int l;

	if (olen + bench_o->payload + 64 > ocap)
		return -EAGAIN;
	l = snprintf(obuf + olen, ocap - olen, "put 0 %llu 120 %u\r\n",
		     (unsigned long long)delay, bench_o->payload);
	olen += (size_t)l;
	bench_fill(obuf + olen, id, due_ns, bench_o->payload);
	olen += bench_o->payload;
	memcpy(obuf + olen, "\r\n", 2);
	olen += 2;
	pipelined++;
	return 0;
}

static int bs_flush(void)
{
	char line[128];
	int rc = 0;

	if (!olen)
		return 0;
	if (write_all(prod->fd, obuf, olen))
		return -EIO;
	olen = 0;
	for (; pipelined; pipelined--) {
		if (read_line(prod, line, sizeof(line)))
			return -EIO;
		if (strncmp(line, "INSERTED ", 9)) {
			bench_err("put: %s", line);
			rc = -EIO;
		}
	}
	return rc;
}

static void bs_stop(void)
{
	unsigned int i;

	stop_flag = 1;
	for (i = 0; i < started; i++)
		shutdown(cons[i]->fd, SHUT_RDWR);
	for (i = 0; i < started; i++) {
		pthread_join(threads[i], NULL);
		close(cons[i]->fd);
		free(cons[i]);
	}
	started = 0;
}

static void bs_teardown(void)
{
	if (prod) {
		close(prod->fd);
		free(prod);
	}
	free(obuf);
}

static const char *bs_describe(void)
{
	return desc;
}

/*
 * After stop(): every job beanstalkd still holds (ready or delayed) is
 * shown to the harness and deleted, so that a job not released by the
 * deadline counts as overdue, not lost.  Jobs the stopped consumers had
 * reserved go back to ready when their connections close.
 */
static void bs_held(void)
{
	struct conn *c;
	char line[128], cmd[64];
	uint64_t guard;
	int delayed = 0;

	bench_sleep_until(bench_now() + 200000000ULL);
	c = bs_connect(10);
	if (!c) {
		bench_error_count();
		return;
	}
	for (guard = 0; guard < 100000000; guard++) {
		unsigned long long id;
		size_t bytes;
		int l;

		if (write_all(c->fd, delayed ? "peek-delayed\r\n" : "peek-ready\r\n",
			      delayed ? 14 : 12) || read_line(c, line, sizeof(line)))
			break;
		if (!strcmp(line, "NOT_FOUND")) {
			if (delayed)
				break;
			delayed = 1;
			continue;
		}
		if (sscanf(line, "FOUND %llu %zu", &id, &bytes) != 2 ||
		    bytes > sizeof(c->buf) / 2 || fill(c, bytes + 2))
			break;
		bench_held(c->buf + c->pos, bytes);
		c->pos += bytes + 2;
		l = snprintf(cmd, sizeof(cmd), "delete %llu\r\n", id);
		if (write_all(c->fd, cmd, (size_t)l) || read_line(c, line, sizeof(line)) ||
		    strcmp(line, "DELETED"))
			break;
		delayed = 0;
	}
	close(c->fd);
	free(c);
}

const struct peer_ops peer = {
	.name = "beanstalkd",
	.opt = bs_opt,
	.setup = bs_setup,
	.start = bs_start,
	.submit = bs_submit,
	.flush = bs_flush,
	.stop = bs_stop,
	.held = bs_held,
	.teardown = bs_teardown,
	.describe = bs_describe,
};
