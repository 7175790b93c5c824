// SPDX-License-Identifier: LGPL-2.1 OR MIT
/*
 * dqbridge's HTTP sink (sink.h) against a downstream of the test's own:
 * a thread on loopback that records every request's bytes and answers
 * each from a script (a status with Content-Length, chunked, ended by
 * close, 429 + Retry-After split over two writes, 503, 100 Continue, a
 * 64 KiB header, garbage, a close after the request, a close of the
 * kept-alive connection while idle or under the next request, no answer
 * at all).  Every verdict is against what the script said and what the
 * server recorded: request bytes compared whole with the head the test
 * builds (so both clients send the same bytes), bodies holding NUL,
 * CR LF and a status line.  The native client (sink_client = auto) runs
 * the whole script, libcurl (sink_client = curl) the cases the two must
 * agree on, and 300 mutated answers each, whose reported statuses must
 * be the ones in the bytes.  TAP; last line "N passed,
 * N failed".  ~2 s.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "ev.h"
#include "log.h"
#include "sink.h"

static int n, failed, skipped;

static void __attribute__((format(printf, 2, 3))) ok(int cond, const char *fmt, ...)
{
	va_list ap;

	n++;
	if (!cond)
		failed++;
	printf("%sok %d - ", cond ? "" : "not ", n);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
}

/* ---- the downstream ---------------------------------------------------- */

enum act {
	A_REPLY,	/* write the answer, keep the connection */
	A_REPLY_CLOSE,	/* write the answer, close */
	A_SPLIT,	/* the answer in two writes, 30 ms apart */
	A_CLOSE,	/* close without answering */
	A_HOLD,		/* never answer (closed at the end of the case) */
};

struct step {
	enum act act;
	const char *ans;
	size_t len;	/* 0: strlen(ans) */
	size_t split;	/* A_SPLIT: bytes in the first write */
};

#define MAXSTEPS 8
#define MAXREQ 16
#define MAXCONN 16
#define RECMAX 4096

struct peer {
	pthread_mutex_t mu;
	int lfd;
	int stop;
	struct step steps[MAXSTEPS];
	int nsteps, next;
	/* recorded */
	char req[MAXREQ][RECMAX];
	size_t reqlen[MAXREQ];
	int reqconn[MAXREQ];	/* which accepted connection carried it */
	int nreq;
	int naccept;
	int closed_idle;	/* connections the peer closed after an answer */
	int fds[MAXCONN];
	int connid[MAXCONN];
	char buf[MAXCONN][RECMAX * 2];
	size_t blen[MAXCONN];
};

static struct peer P;

static void conn_drop(int i)
{
	close(P.fds[i]);
	P.fds[i] = -1;
	P.blen[i] = 0;
}

/* A whole request in connection @i's buffer: its length, or 0. */
static size_t whole(int i)
{
	char *end = memmem(P.buf[i], P.blen[i], "\r\n\r\n", 4);
	char *cl;
	size_t h, body;

	if (!end)
		return 0;
	h = (size_t)(end - P.buf[i]) + 4;
	cl = memmem(P.buf[i], h, "Content-Length: ", 16);
	body = cl ? strtoul(cl + 16, NULL, 10) : 0;
	return P.blen[i] >= h + body ? h + body : 0;
}

static void answer(int i, const struct step *st)
{
	size_t len = st->len ? st->len : st->ans ? strlen(st->ans) : 0;
	int fd = P.fds[i];

	switch (st->act) {
	case A_REPLY:
		if (write(fd, st->ans, len) != (ssize_t)len)
			conn_drop(i);
		break;
	case A_REPLY_CLOSE:
		if (write(fd, st->ans, len) < 0)
			perror("peer write");
		conn_drop(i);
		P.closed_idle++;
		break;
	case A_SPLIT:
		if (write(fd, st->ans, st->split) < 0 ||
		    (usleep(30000), write(fd, st->ans + st->split, len - st->split)) < 0)
			conn_drop(i);
		break;
	case A_CLOSE:
		conn_drop(i);
		break;
	case A_HOLD:
		break;
	}
}

static void *peer_main(void *arg)
{
	(void)arg;
	for (;;) {
		struct pollfd pf[MAXCONN + 1];
		int map[MAXCONN + 1], np = 0, i, k;

		pthread_mutex_lock(&P.mu);
		if (P.stop) {
			pthread_mutex_unlock(&P.mu);
			return NULL;
		}
		pf[np].fd = P.lfd;
		pf[np].events = POLLIN;
		map[np++] = -1;
		for (i = 0; i < MAXCONN; i++) {
			if (P.fds[i] < 0)
				continue;
			pf[np].fd = P.fds[i];
			pf[np].events = POLLIN;
			map[np++] = i;
		}
		pthread_mutex_unlock(&P.mu);
		if (poll(pf, np, 20) <= 0)
			continue;
		pthread_mutex_lock(&P.mu);
		for (k = 0; k < np; k++) {
			if (!pf[k].revents)
				continue;
			if (map[k] < 0) {
				int fd = accept(P.lfd, NULL, NULL), one = 1;

				if (fd < 0)
					continue;
				setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
				for (i = 0; i < MAXCONN && P.fds[i] >= 0; i++)
					;
				if (i == MAXCONN) {
					close(fd);
					continue;
				}
				P.fds[i] = fd;
				P.connid[i] = P.naccept++;
				continue;
			}
			i = map[k];
			if (P.fds[i] < 0)
				continue;
			{
				ssize_t r = read(P.fds[i], P.buf[i] + P.blen[i],
						 sizeof(P.buf[i]) - P.blen[i]);
				size_t w;

				if (r <= 0) {
					conn_drop(i);
					continue;
				}
				P.blen[i] += (size_t)r;
				while ((w = whole(i))) {
					if (P.nreq < MAXREQ) {
						size_t c = w < RECMAX ? w : RECMAX;

						memcpy(P.req[P.nreq], P.buf[i], c);
						P.reqlen[P.nreq] = c;
						P.reqconn[P.nreq] = P.connid[i];
						P.nreq++;
					}
					memmove(P.buf[i], P.buf[i] + w, P.blen[i] - w);
					P.blen[i] -= w;
					if (P.next < P.nsteps)
						answer(i, &P.steps[P.next++]);
					else
						conn_drop(i);
					if (P.fds[i] < 0)
						break;
				}
			}
		}
		pthread_mutex_unlock(&P.mu);
	}
}

/* A new script; the recording starts over.  @drop: close every
 * connection first (a case that must start on a fresh one). */
static void script(int drop, int nsteps, const struct step *st)
{
	int i;

	pthread_mutex_lock(&P.mu);
	if (drop)
		for (i = 0; i < MAXCONN; i++)
			if (P.fds[i] >= 0)
				conn_drop(i);
	memcpy(P.steps, st, nsteps * sizeof(*st));
	P.nsteps = nsteps;
	P.next = 0;
	P.nreq = 0;
	P.closed_idle = 0;
	pthread_mutex_unlock(&P.mu);
}

/* ---- the client side --------------------------------------------------- */

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

struct client {
	const char *host;	/* as in the URL and the Host header */
	struct config c;
	struct log log;
	struct ev *ev;
	struct sink *sink;
	int port;
};

static const char *host = "127.0.0.1";

static int client_open(struct client *k, const char *client, int port, const char *path,
		       unsigned int timeout_ms)
{
	char err[128], url[128], v[32];

	memset(k, 0, sizeof(*k));
	k->host = host;
	config_defaults(&k->c);
	k->log.level = LOG_ERR;
	snprintf(url, sizeof(url), "http://%s:%d%s", host, port, path);
	snprintf(v, sizeof(v), "%u", timeout_ms);
	if (config_set(&k->c, "sink_url", url, err, sizeof(err)) ||
	    config_set(&k->c, "sink_client", client, err, sizeof(err)) ||
	    config_set(&k->c, "sink_timeout_ms", v, err, sizeof(err)) ||
	    config_set(&k->c, "sink_content_type", "application/x-dq; v=1", err, sizeof(err)) ||
	    config_set(&k->c, "max_inflight", "4", err, sizeof(err)) ||
	    config_set(&k->c, "redis_stream", "s", err, sizeof(err)) ||
	    config_finish(&k->c, err, sizeof(err))) {
		fprintf(stderr, "config: %s\n", err);
		return -1;
	}
	k->port = port;
	if (ev_new(&k->ev))
		return -1;
	return sink_open(&k->c, &k->log, k->ev, now_ns(), &k->sink);
}

static void client_close(struct client *k)
{
	sink_close(k->sink);
	ev_free(k->ev);
}

/* Run the loop until a result (1) or @ms pass (0). */
static int wait_result(struct client *k, struct sink_result *r, int ms)
{
	uint64_t end = now_ns() + (uint64_t)ms * 1000000ULL;

	for (;;) {
		uint64_t t = now_ns();
		int to;

		if (sink_run_timers(k->sink, t))
			return -1;
		if (sink_result(k->sink, r, t))
			return 1;
		if (t >= end)
			return 0;
		to = sink_timeout_ms(k->sink, t);
		if (to < 0 || to > 50)
			to = 50;
		if (ev_wait(k->ev, to) < 0)
			return -1;
	}
}

/* Pump the loop for @ms (results stay queued). */
static void pump(struct client *k, int ms)
{
	uint64_t end = now_ns() + (uint64_t)ms * 1000000ULL;

	while (now_ns() < end) {
		ev_wait(k->ev, 10);
		sink_run_timers(k->sink, now_ns());
	}
}

/* The bytes a POST of @body with @id must be on the wire. */
static size_t expect(char *out, size_t cap, const char *h0, int port, const char *path,
		     const char *id, const void *body, size_t len)
{
	int h = snprintf(out, cap,
			 "POST %s HTTP/1.1\r\nHost: %s:%d\r\nAccept: */*\r\n"
			 "Idempotency-Key: %s\r\nContent-Type: application/x-dq; v=1\r\n"
			 "Content-Length: %zu\r\n\r\n", path, h0, port, id, len);

	memcpy(out + h, body, len);
	return (size_t)h + len;
}

/* A hostile payload: NUL, CR LF, a status line and a whole response. */
static const char BODY[] = "a\0b\r\nHTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\nHTTP/1.1 503 x\r\n\r\n\0z";
#define BODYLEN (sizeof(BODY) - 1)
#define PATH "/in/orders?x=1&y=%20"

static int send_one(struct client *k, const char *id, struct sink_result *r, int ms)
{
	int ret = sink_send(k->sink, id, BODY, BODYLEN, (void *)id, now_ns());

	if (ret)
		return ret;
	return wait_result(k, r, ms) == 1 ? 0 : -ETIMEDOUT;
}

/* Did the peer record request @i as exactly the POST of @id? */
static int recorded(struct client *k, int i, const char *id)
{
	char want[RECMAX];
	size_t wl = expect(want, sizeof(want), k->host, k->port, PATH, id, BODY, BODYLEN);
	int same;

	pthread_mutex_lock(&P.mu);
	same = i < P.nreq && P.reqlen[i] == wl && !memcmp(P.req[i], want, wl);
	if (!same && i < P.nreq)
		fprintf(stderr, "# request %d: %zu bytes, want %zu:\n%.*s\n", i,
			P.reqlen[i], wl, (int)P.reqlen[i], P.req[i]);
	pthread_mutex_unlock(&P.mu);
	return same;
}

static int nreq(void)
{
	int v;

	pthread_mutex_lock(&P.mu);
	v = P.nreq;
	pthread_mutex_unlock(&P.mu);
	return v;
}

static int conn_of(int i)
{
	int v;

	pthread_mutex_lock(&P.mu);
	v = P.reqconn[i];
	pthread_mutex_unlock(&P.mu);
	return v;
}

#define R200 "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"

/* The cases both clients must answer alike. */
static void common_cases(struct client *k, const char *who)
{
	struct sink_result r;
	int ret;

	{
		struct step st[] = { { A_REPLY, R200, 0, 0 }, { A_REPLY, R200, 0, 0 } };

		static const char id0[] = "1700000000000-0";

		script(1, 2, st);
		ret = send_one(k, id0, &r, 2000);
		ok(!ret && r.kind == SINK_HTTP && r.status == 200 && !r.retry_after[0] &&
		   r.ctx == (void *)id0,
		   "%s: 200 with Content-Length, ctx back (kind %d status %ld)", who, r.kind, r.status);
		ok(recorded(k, 0, "1700000000000-0"),
		   "%s: the request's bytes are the head the test built + the body, NUL and CR LF included", who);
		ret = send_one(k, "1700000000000-1", &r, 2000);
		ok(!ret && r.kind == SINK_HTTP && r.status == 200, "%s: a second 200", who);
		ok(recorded(k, 1, "1700000000000-1") && conn_of(0) == conn_of(1),
		   "%s: on the same kept-alive connection", who);
	}
	{
		struct step st[] = { { A_SPLIT,
			"HTTP/1.1 429 Too Many Requests\r\nContent-Length: 0\r\nRetry-Af"
			"ter:   120  \r\nRetry-After: 7\r\n\r\n", 0, 70 } };

		script(0, 1, st);
		ret = send_one(k, "2-0", &r, 2000);
		ok(!ret && r.kind == SINK_HTTP && r.status == 429 && !strcmp(r.retry_after, "7"),
		   "%s: 429, the last Retry-After \"7\" (got \"%s\")", who, r.retry_after);
	}
	{
		struct step st[] = { { A_SPLIT,
			"HTTP/1.1 429 Too Many Requests\r\nContent-Length: 0\r\nRetry-Af"
			"ter:   120  \r\n\r\n", 0, 60 } };

		script(0, 1, st);
		ret = send_one(k, "2-1", &r, 2000);
		ok(!ret && r.kind == SINK_HTTP && r.status == 429 && !strcmp(r.retry_after, "120"),
		   "%s: a Retry-After split over two reads, trimmed: \"%s\"", who, r.retry_after);
	}
	{
		struct step st[] = { { A_REPLY, "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 5\r\n\r\nbusy!", 0, 0 } };

		script(0, 1, st);
		ret = send_one(k, "3-0", &r, 2000);
		ok(!ret && r.kind == SINK_HTTP && r.status == 503 && !r.retry_after[0],
		   "%s: 503 without Retry-After", who);
	}
	{
		struct step st[] = { { A_REPLY,
			"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
			"5\r\nHTTP/\r\n10\r\n1.1 500 Oops\r\n\r\n\r\n0\r\nX-T: 1\r\n\r\n", 0, 0 },
			{ A_REPLY, "HTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n", 0, 0 } };

		script(0, 2, st);
		ret = send_one(k, "4-0", &r, 2000);
		ok(!ret && r.kind == SINK_HTTP && r.status == 200,
		   "%s: chunked 200 whose chunks hold a status line", who);
		ret = send_one(k, "4-1", &r, 2000);
		ok(!ret && r.kind == SINK_HTTP && r.status == 201,
		   "%s: the connection carries the next answer after it (%ld)", who, r.status);
	}
	{
		struct step st[] = { { A_REPLY_CLOSE, "HTTP/1.1 202 Accepted\r\n\r\nuntil close\r\n", 0, 0 } };

		script(0, 1, st);
		ret = send_one(k, "5-0", &r, 2000);
		ok(!ret && r.kind == SINK_HTTP && r.status == 202, "%s: a body ended by close", who);
	}
	{
		struct step st[] = { { A_REPLY,
			"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n", 0, 0 } };

		script(1, 1, st);
		ret = send_one(k, "6-0", &r, 2000);
		ok(!ret && r.kind == SINK_HTTP && r.status == 204,
		   "%s: 100 Continue skipped, 204 is the answer (%ld)", who, r.status);
	}
	{
		struct step st[] = { { A_CLOSE, NULL, 0, 0 } };

		script(1, 1, st);
		ret = send_one(k, "7-0", &r, 2000);
		ok(!ret && r.kind == SINK_CONNECT && nreq() == 1 && recorded(k, 0, "7-0"),
		   "%s: a new connection closed after the request: SINK_CONNECT, sent once (kind %d, %d sent)",
		   who, r.kind, nreq());
	}
	{
		struct step st[] = { { A_HOLD, NULL, 0, 0 } };
		uint64_t t0 = now_ns();

		script(1, 1, st);
		ret = send_one(k, "8-0", &r, 3000);
		ok(!ret && r.kind == SINK_TIMEOUT && now_ns() - t0 >= 300000000ULL,
		   "%s: no answer: SINK_TIMEOUT after sink_timeout_ms (kind %d, %.0f ms)",
		   who, r.kind, (now_ns() - t0) / 1e6);
	}
}

/* Answers with one byte changed, inserted or deleted, or cut short. */
static void mutated_cases(struct client *k, const char *who)
{
	struct sink_result r;

	{
		/*
		 * Mutated answers (a byte changed, inserted, deleted, or the
		 * answer cut), each followed by a close: whatever the parser
		 * makes of them, a status reported is the one in the bytes
		 * the peer sent, never one it did not.
		 */
		static const char *const base[] = {
			"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
			"HTTP/1.1 429 Too Many\r\nRetry-After: 3\r\nContent-Length: 0\r\n\r\n",
			"HTTP/1.1 503 X\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nab\r\n0\r\n\r\n",
			"HTTP/1.0 201 Created\r\n\r\nbody",
		};
		static char mut[256];
		unsigned int seed = 35, bad = 0, http = 0, iter;

		for (iter = 0; iter < 300; iter++) {
			const char *b = base[iter % 4];
			size_t len = strlen(b), pos;
			struct step st[] = { { A_REPLY_CLOSE, mut, 0, 0 } };
			long want;

			memcpy(mut, b, len);
			pos = (size_t)rand_r(&seed) % len;
			switch (rand_r(&seed) % 4) {
			case 0:
				mut[pos] = (char)rand_r(&seed);
				break;
			case 1:
				memmove(mut + pos + 1, mut + pos, len - pos);
				mut[pos] = (char)rand_r(&seed);
				len++;
				break;
			case 2:
				memmove(mut + pos, mut + pos + 1, len - pos - 1);
				len--;
				break;
			default:
				len = pos ? pos : 1;
				break;
			}
			st[0].len = len;
			script(1, 1, st);
			if (send_one(k, "18-0", &r, 2000)) {
				bad++;
				continue;
			}
			if (r.kind != SINK_HTTP)
				continue;
			http++;
			/* "HTTP/1.x NNN" then a space or the line's end */
			want = len >= 13 && !memcmp(mut, "HTTP/1.", 7) && mut[8] == ' ' &&
			       isdigit((unsigned char)mut[9]) && isdigit((unsigned char)mut[10]) &&
			       isdigit((unsigned char)mut[11]) && (mut[12] == ' ' || mut[12] == '\r') ?
			       strtol((char[]){ mut[9], mut[10], mut[11], 0 }, NULL, 10) : -1;
			if (r.status != want) {
				bad++;
				fprintf(stderr, "# mutated answer reported %ld: %.*s\n",
					r.status, (int)len, mut);
			}
		}
		ok(!bad, "%s: 300 mutated answers: every status reported is the one sent (%u reported, %u bad)",
		   who, http, bad);
	}
}

static void native_cases(struct client *k)
{
	struct sink_result r;
	char big[70000];
	int ret, i;

	{
		/* A header of 64 KiB: an error, not a status; the next
		 * request goes on a new connection and is answered. */
		struct step st[] = { { A_REPLY, big, 0, 0 }, { A_REPLY, R200, 0, 0 } };
		size_t h = (size_t)sprintf(big, "HTTP/1.1 200 OK\r\nX-Big: ");

		memset(big + h, 'a', 65536);
		strcpy(big + h + 65536, "\r\nContent-Length: 0\r\n\r\n");
		script(1, 2, st);
		ret = send_one(k, "9-0", &r, 2000);
		ok(!ret && r.kind == SINK_ERROR && r.status == 0,
		   "a 64 KiB header: SINK_ERROR, no status (kind %d status %ld: %s)",
		   r.kind, r.status, r.error);
		ret = send_one(k, "9-1", &r, 2000);
		ok(!ret && r.kind == SINK_HTTP && r.status == 200 && conn_of(0) != conn_of(1),
		   "then a 200 on a new connection");
	}
	{
		static const char *const junk[] = {
			"HELLO\r\n\r\n",
			"HTTP/1.1 2000 OK\r\nContent-Length: 0\r\n\r\n",
			"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello!",
			"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n",
			"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
			"HTTP/1.1 101 Switching Protocols\r\nConnection: upgrade\r\nUpgrade: h2c\r\n\r\n",
		};

		for (i = 0; i < (int)(sizeof(junk) / sizeof(junk[0])); i++) {
			struct step st[] = { { A_REPLY, junk[i], 0, 0 } };

			script(1, 1, st);
			ret = send_one(k, "10-0", &r, 2000);
			ok(!ret && r.kind == SINK_ERROR && r.status == 0,
			   "garbage %d: SINK_ERROR, no status (kind %d status %ld: %s)",
			   i, r.kind, r.status, r.error);
		}
	}
	{
		/* The kept-alive connection closed under the next request:
		 * sent once more on a new connection. */
		struct step st[] = { { A_REPLY, R200, 0, 0 }, { A_CLOSE, NULL, 0, 0 }, { A_REPLY, R200, 0, 0 } };

		script(1, 3, st);
		ret = send_one(k, "11-0", &r, 2000);
		ret |= send_one(k, "11-1", &r, 2000);
		ok(!ret && r.kind == SINK_HTTP && r.status == 200 && nreq() == 3 &&
		   recorded(k, 1, "11-1") && recorded(k, 2, "11-1") &&
		   conn_of(0) == conn_of(1) && conn_of(2) != conn_of(1),
		   "kept-alive connection closed under the request: resent on a new one, 200 (%d sent)",
		   nreq());
	}
	{
		struct step st[] = { { A_REPLY, R200, 0, 0 }, { A_CLOSE, NULL, 0, 0 }, { A_CLOSE, NULL, 0, 0 } };

		script(1, 3, st);
		ret = send_one(k, "12-0", &r, 2000);
		ret |= send_one(k, "12-1", &r, 2000);
		ok(!ret && r.kind == SINK_CONNECT && nreq() == 3,
		   "... and closed again on the new one: SINK_CONNECT after 2 sends (kind %d, %d sent)",
		   r.kind, nreq());
	}
	{
		/* Closed while idle: seen before the next request, which
		 * goes once, on a new connection. */
		struct step st[] = { { A_REPLY_CLOSE, R200, 0, 0 }, { A_REPLY, R200, 0, 0 } };

		script(1, 2, st);
		ret = send_one(k, "13-0", &r, 2000);
		pump(k, 100);
		ret |= send_one(k, "13-1", &r, 2000);
		ok(!ret && r.kind == SINK_HTTP && r.status == 200 && nreq() == 2 &&
		   recorded(k, 1, "13-1") && conn_of(0) != conn_of(1),
		   "an idle connection the server closed: next request once, on a new one (%d sent)",
		   nreq());
	}
	{
		/* Bytes after the answer: not ours, the connection goes. */
		struct step st[] = { { A_REPLY, R200 "HTTP/1.1 500 X\r\n\r\n", 0, 0 }, { A_REPLY, R200, 0, 0 } };

		script(1, 2, st);
		ret = send_one(k, "14-0", &r, 2000);
		ret |= send_one(k, "14-1", &r, 2000);
		ok(!ret && r.kind == SINK_HTTP && r.status == 200 && conn_of(0) != conn_of(1),
		   "an answer followed by stray bytes: 200, the connection not reused");
	}
	{
		/* A body over 1 MiB: its complete status line is the answer. */
		static char huge[(2 << 20) + 64];
		struct step st[] = { { A_REPLY, huge, 0, 0 } };
		size_t h = (size_t)sprintf(huge, "HTTP/1.1 200 OK\r\nContent-Length: %u\r\n\r\n", 2U << 20);

		memset(huge + h, 'b', 2U << 20);
		st[0].len = h + (2U << 20);
		script(1, 1, st);
		ret = send_one(k, "15-0", &r, 3000);
		ok(!ret && r.kind == SINK_HTTP && r.status == 200,
		   "a 2 MiB body: 200 (kind %d status %ld)", r.kind, r.status);
	}
	{
		/* max_inflight (4) connections at once, no more. */
		struct step st[] = { { A_HOLD, NULL, 0, 0 }, { A_HOLD, NULL, 0, 0 }, { A_HOLD, NULL, 0, 0 }, { A_HOLD, NULL, 0, 0 } };
		int e = 0, got = 0;

		script(1, 4, st);
		for (i = 0; i < 4; i++)
			e |= sink_send(k->sink, "16", BODY, BODYLEN, NULL, now_ns());
		ret = sink_send(k->sink, "16", BODY, BODYLEN, NULL, now_ns());
		ok(!e && ret == -EBUSY && sink_inflight(k->sink) == 4,
		   "max_inflight requests at once, the next -EBUSY (%d)", ret);
		while (got < 4 && wait_result(k, &r, 2000) == 1)
			got += r.kind == SINK_TIMEOUT;
		ok(got == 4 && nreq() == 4 && sink_inflight(k->sink) == 0,
		   "each on its own connection, each timed out (%d, %d sent)", got, nreq());
	}
}

/*
 * A name server that never answers must not hold the loop.  In a child
 * with a mount namespace of its own (root only, else skipped),
 * /etc/resolv.conf names a UDP socket of the child's that reads nothing,
 * so glibc's lookup of a name waits its whole timeout (2 s).  The sink
 * must open and take a request at once (< 1 s: a lookup in the loop's
 * thread took >= 2 s at the open and again at the send), the loop keep
 * turning while the lookup waits, and the request end without a status
 * (no address: SINK_CONNECT, or SINK_TIMEOUT at sink_connect_timeout_ms).
 * Then a sink is closed while its lookup is still running.  The child
 * numbers its three lines on from the parent's; its exit code is how many
 * failed, or 77: skipped.
 */
static int blackhole_child(int port)
{
	static const char conf[] = "nameserver 127.0.53.1\noptions timeout:2 attempts:1\n";
	struct sockaddr_in ns = { .sin_family = AF_INET, .sin_port = htons(53) };
	char path[] = "/tmp/dqbridge-sink-test-resolv.XXXXXX";
	struct sink_result r;
	struct client k;
	uint64_t t0, t1;
	int fd, turns = 0, got, failed0 = failed;

	if (unshare(CLONE_NEWNS) || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL))
		return 77;
	inet_pton(AF_INET, "127.0.53.1", &ns.sin_addr);
	fd = socket(AF_INET, SOCK_DGRAM, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&ns, sizeof(ns)))
		return 77;
	fd = mkstemp(path);
	if (fd < 0 || write(fd, conf, sizeof(conf) - 1) != sizeof(conf) - 1 ||
	    mount(path, "/etc/resolv.conf", NULL, MS_BIND, NULL))
		return 77;
	unlink(path);

	host = "dq-blackhole.invalid";
	t0 = now_ns();
	if (client_open(&k, "auto", port, PATH, 5000)) {
		printf("not ok %d - native, a name server that never answers: the sink opens\n", ++n);
		return 3;
	}
	got = sink_send(k.sink, "23-0", BODY, sizeof(BODY) - 1, NULL, now_ns());
	t1 = now_ns();
	ok(!got && t1 - t0 < 1000000000ULL,
	   "native, a name server that never answers: open + send return at once (%d, %llu ms)",
	   got, (unsigned long long)((t1 - t0) / 1000000));
	for (got = 0; !got && now_ns() - t1 < 8000000000ULL; turns++) {
		sink_run_timers(k.sink, now_ns());
		got = sink_result(k.sink, &r, now_ns());
		if (!got)
			ev_wait(k.ev, 10);
	}
	ok(got && (r.kind == SINK_CONNECT || r.kind == SINK_TIMEOUT) && r.status == 0 && turns >= 20,
	   "native, a name server that never answers: no status, the loop turning meanwhile (kind %d: %s; %d turns)",
	   got ? r.kind : -1, got ? r.error : "no result", turns);
	client_close(&k);
	/* Closed while its lookup runs: the lookup thread outlives it. */
	if (!client_open(&k, "auto", port, PATH, 5000)) {
		sink_send(k.sink, "23-1", BODY, sizeof(BODY) - 1, NULL, now_ns());
		client_close(&k);
	}
	ok(1, "native, a sink closed while its lookup runs");
	return failed - failed0;
}

static void blackhole_case(int port)
{
	int st = 0;
	pid_t pid;

	fflush(stdout);
	pid = fork();
	if (pid == 0)
		_exit(blackhole_child(port));
	if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st)) {
		ok(0, "native, a name server that never answers: the child ran");
		return;
	}
	if (WEXITSTATUS(st) == 77) {
		printf("# SKIP a name server that never answers: needs a mount namespace (root)\n");
		skipped++;
		return;
	}
	n += 3;
	failed += WEXITSTATUS(st);
}

int main(void)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t sl = sizeof(sa);
	struct sink_result r;
	struct client k;
	pthread_t th;
	int i, one = 1, port, dead;

	pthread_mutex_init(&P.mu, NULL);
	for (i = 0; i < MAXCONN; i++)
		P.fds[i] = -1;
	P.lfd = socket(AF_INET, SOCK_STREAM, 0);
	setsockopt(P.lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(P.lfd, (struct sockaddr *)&sa, sizeof(sa)) || listen(P.lfd, 16) ||
	    getsockname(P.lfd, (struct sockaddr *)&sa, &sl)) {
		perror("peer");
		return 1;
	}
	port = ntohs(sa.sin_port);
	pthread_create(&th, NULL, peer_main, NULL);

	if (client_open(&k, "auto", port, PATH, 300)) {
		ok(0, "native sink opens");
	} else {
		common_cases(&k, "native");
		native_cases(&k);
		mutated_cases(&k, "native");
		client_close(&k);
	}
	if (client_open(&k, "curl", port, PATH, 300)) {
		ok(0, "curl sink opens");
	} else {
		common_cases(&k, "curl");
		mutated_cases(&k, "curl");
		client_close(&k);
	}

	/*
	 * By name: "localhost" may resolve to ::1 first, where nobody
	 * listens (refused), then 127.0.0.1; the Host header is the name.
	 */
	host = "localhost";
	if (!client_open(&k, "auto", port, PATH, 300)) {
		struct step st[] = { { A_REPLY, R200, 0, 0 }, { A_REPLY, R200, 0, 0 } };

		script(1, 2, st);
		i = send_one(&k, "19-0", &r, 2000);
		i |= send_one(&k, "19-1", &r, 2000);
		ok(!i && r.kind == SINK_HTTP && r.status == 200 && recorded(&k, 0, "19-0") &&
		   recorded(&k, 1, "19-1") && conn_of(0) == conn_of(1),
		   "native, http://localhost: 200 twice on one connection, Host: localhost:PORT");
		client_close(&k);
	}
	host = "127.0.0.1";

	blackhole_case(port);

	/* Nobody listening: refused. */
	{
		int fd = socket(AF_INET, SOCK_STREAM, 0);
		struct sockaddr_in d = sa;

		d.sin_port = 0;
		bind(fd, (struct sockaddr *)&d, sizeof(d));
		sl = sizeof(d);
		getsockname(fd, (struct sockaddr *)&d, &sl);
		dead = ntohs(d.sin_port);
		close(fd);	/* bound, never listened: the port refuses */
		if (!client_open(&k, "auto", dead, PATH, 300)) {
			i = send_one(&k, "17-0", &r, 2000);
			ok(!i && r.kind == SINK_CONNECT, "native: refused: SINK_CONNECT (kind %d: %s)",
			   r.kind, r.error);
			client_close(&k);
		}
	}

	pthread_mutex_lock(&P.mu);
	P.stop = 1;
	pthread_mutex_unlock(&P.mu);
	pthread_join(th, NULL);
	if (skipped)
		printf("%d passed, %d failed, %d skipped\n", n - failed, failed, skipped);
	else
		printf("%d passed, %d failed\n", n - failed, failed);
	return failed ? 1 : 0;
}
