// SPDX-License-Identifier: LGPL-2.1 OR MIT
/*
 * dqbridge: the native HTTP/1.1 client behind sink.h, for plain http://
 * sink URLs (sink.c picks it; libcurl, sink_curl.c, takes the rest).
 *
 * Why its own client: per delivered message libcurl 7.88 spent ~64k of
 * the bridge's ~82k instructions (its generic transfer state machine,
 * printf-built request heads, malloc) and made two poll() of its own (a
 * liveness check of the reused connection, a readability check after
 * sending) besides the exchange itself.  Here a request is one sendmsg()
 * of a head built by memcpy() plus the caller's body, and its answer one
 * recv() fed to nodejs/http-parser (Debian's libhttp-parser, the parser
 * wrk uses), keeping only the status and Retry-After.
 *
 * A pool of at most max_inflight kept-alive connections, each in the
 * loop's epoll set (ev.h) for as long as it is open: an idle connection
 * is watched for EPOLLIN, so a downstream that closes it is seen (and
 * the connection dropped) before a request is put on it, and a request
 * costs no epoll_ctl().  One request per connection at a time: no
 * pipelining, a POST is not idempotent on a pipeline the server closed.
 *
 * Outcomes (struct sink_result) are those of the libcurl path:
 * SINK_HTTP with the final status (1xx interim answers are skipped) and
 * the last Retry-After; SINK_TIMEOUT past sink_timeout_ms from
 * sink_send(), or past sink_connect_timeout_ms while connecting;
 * SINK_CONNECT when the name does not resolve, the connection is refused
 * or is lost before the response is complete; SINK_ERROR for a response
 * that does not parse, a header block over H1_HEADER_MAX, a protocol
 * switch.  A request that finds its kept-alive connection closed before
 * any byte of response (the server timed the idle connection out as the
 * request went) is sent once more on a new connection, as libcurl does;
 * the second loss is SINK_CONNECT.  The response body is read and
 * dropped (so the connection can carry the next request) up to
 * H1_BODY_MAX; past that the status, already complete, is the answer
 * and the connection is closed.
 *
 * A numeric host is parsed once at the start.  A name is looked up on
 * the resolver's thread (resolver.h: the loop never waits for a name
 * server) at the start and again when a connection is opened and the
 * last lookup is over DNS_TTL_NS old (libcurl's DNS cache keeps 60 s
 * too); meanwhile connections go to the addresses of the last lookup
 * that worked.  A connection with none yet waits in C_RESOLVING, within
 * sink_connect_timeout_ms.
 */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <curl/curl.h>
#include <http_parser.h>

#include "config.h"
#include "ev.h"
#include "log.h"
#include "resolver.h"
#include "sink.h"
#include "sink_impl.h"

#define H1_RBUF		16384		/* one recv() */
#define H1_HEADER_MAX	16384		/* status line + headers of an answer */
#define H1_BODY_MAX	(1U << 20)	/* body read to keep the connection */
#define H1_ID_MAX	494		/* sink_curl.c's "Idempotency-Key: %s" in 512 */
#define DNS_TTL_NS	(60ULL * 1000000000ULL)

enum cstate { C_CLOSED, C_RESOLVING, C_CONNECTING, C_IDLE, C_WRITING, C_READING };
enum stop { STOP_NONE, STOP_HEADER, STOP_BODY, STOP_PROTO };

struct h1req {
	struct sink_result res;
	uint64_t start_ns;
	const char *body;
	size_t len;
	int retried;		/* already sent again after a stale connection */
	struct h1req *next;	/* free list or results */
};

struct conn {
	struct sink_impl *s;
	int fd;
	enum cstate state;
	int used;		/* an answer came on it: it is a kept-alive one */
	unsigned int ai;	/* the address it connects to */
	unsigned int tries;	/* addresses tried by this connect */
	uint64_t connect_by;	/* CLOCK_MONOTONIC ns */
	struct h1req *req;
	char *head;		/* request head: the constant prefix, then per request */
	size_t head_len;
	size_t sent;		/* of head + body */
	size_t got;		/* response bytes read */
	size_t hdr_bytes;
	size_t body_bytes;
	int in_value;		/* the parser's last header callback was a value */
	char field[12];		/* the current header name, first bytes */
	size_t field_len;
	int in_ra;		/* the current header is Retry-After */
	size_t ra_len;
	int done;		/* the final answer is complete */
	int interim;		/* a 1xx answer just ended: the next one follows */
	size_t magic_len;	/* bytes of the answer's "HTTP/1." seen */
	enum stop stop;
	http_parser p;
	struct conn *prev, *next;	/* idle list */
};

struct sink_impl {
	const struct config *c;
	const struct log *log;
	struct ev *ev;
	unsigned int max;
	struct conn *conns;
	struct h1req *reqs;
	struct h1req *free_reqs;
	struct h1req *done, **done_tail;
	struct conn *idle;		/* most recently used first */
	unsigned int inflight;
	uint64_t now;			/* the loop's clock, as last given */
	int err;			/* an epoll registration failed: -errno */
	char *prefix;			/* "POST ... Idempotency-Key: " */
	size_t prefix_len;
	char *mid;			/* "\r\nContent-Type: ...\r\nContent-Length: " */
	size_t mid_len;
	size_t head_cap;
	char host[256];			/* for the lookup: no brackets */
	char port[8];
	struct resolver *resolver;	/* NULL: a numeric host */
	struct resolver_addrs a;	/* the last lookup's that worked */
	unsigned int ai_good;		/* the address the last connect took */
	uint64_t resolved_ns;
	char rbuf[H1_RBUF];
};

static void on_conn_fd(void *arg, int fd, uint32_t events);

/* ---- connections ------------------------------------------------------ */

static void idle_del(struct sink_impl *s, struct conn *c)
{
	if (c->prev)
		c->prev->next = c->next;
	else
		s->idle = c->next;
	if (c->next)
		c->next->prev = c->prev;
	c->prev = c->next = NULL;
}

static void idle_push(struct sink_impl *s, struct conn *c)
{
	c->state = C_IDLE;
	c->prev = NULL;
	c->next = s->idle;
	if (s->idle)
		s->idle->prev = c;
	s->idle = c;
}

static void conn_close(struct sink_impl *s, struct conn *c)
{
	if (c->state == C_IDLE)
		idle_del(s, c);
	if (c->fd >= 0) {
		ev_unwatch(s->ev, c->fd);
		close(c->fd);
	}
	c->fd = -1;
	c->state = C_CLOSED;
	c->used = 0;
}

/* The request on @c has its answer: queue it for sink_result(). */
static void finish(struct sink_impl *s, struct conn *c, int kind, long status,
		   const char *fmt, ...)
{
	struct h1req *r = c->req;
	va_list ap;

	c->req = NULL;
	r->res.kind = kind;
	r->res.status = kind == SINK_HTTP ? status : 0;
	if (kind != SINK_HTTP)
		r->res.retry_after[0] = '\0';
	if (fmt) {
		va_start(ap, fmt);
		vsnprintf(r->res.error, sizeof(r->res.error), fmt, ap);
		va_end(ap);
	}
	r->next = NULL;
	*s->done_tail = r;
	s->done_tail = &r->next;
}

static int watch(struct sink_impl *s, struct conn *c, uint32_t events)
{
	int ret = ev_watch(s->ev, c->fd, events, on_conn_fd, c);

	if (ret)
		s->err = ret;
	return ret;
}

/* Whether the addresses in hand are due a fresh lookup. */
static int lookup_due(const struct sink_impl *s)
{
	return s->resolver && (!s->a.n || s->now - s->resolved_ns >= DNS_TTL_NS);
}

static void write_req(struct sink_impl *s, struct conn *c, int first);

/*
 * Connect @c to the next address it has not tried; 0 when under way (or
 * done), else -errno once every address failed.
 */
static int connect_next(struct sink_impl *s, struct conn *c)
{
	static const int one = 1, idle = 60;
	int fd, ret = -ECONNREFUSED;

	while (c->tries < s->a.n) {
		unsigned int i = (c->ai + c->tries++) % s->a.n;
		const struct sockaddr *sa = (const struct sockaddr *)&s->a.addr[i];

		fd = socket(sa->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		if (fd < 0) {
			ret = -errno;
			continue;
		}
		/* libcurl's CURLOPT_TCP_NODELAY and CURLOPT_TCP_KEEPALIVE. */
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
		setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
		setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &idle, sizeof(idle));
		c->fd = fd;
		c->ai = i;
		if (!connect(fd, sa, s->a.len[i])) {
			if (watch(s, c, EPOLLIN))
				return s->err;
			s->ai_good = i;
			write_req(s, c, 1);
			return 0;
		}
		if (errno == EINPROGRESS) {
			c->state = C_CONNECTING;
			return watch(s, c, EPOLLOUT);
		}
		ret = -errno;
		close(fd);
		c->fd = -1;
	}
	return ret;
}

/* Put @c's request on a new connection. */
static void conn_open(struct sink_impl *s, struct conn *c)
{
	int ret;

	c->connect_by = s->now + (uint64_t)s->c->sink_connect_timeout_ms * 1000000ULL;
	c->tries = 0;
	if (lookup_due(s))
		resolver_start(s->resolver);
	if (!s->a.n) {
		c->state = C_RESOLVING;	/* connected by on_resolved() */
		return;
	}
	c->ai = s->ai_good;
	ret = connect_next(s, c);
	if (ret && c->req) {
		conn_close(s, c);
		finish(s, c, ret == -ENOMEM ? SINK_ERROR : SINK_CONNECT, 0,
		       "could not connect to %s port %s: %s", s->host, s->port,
		       strerror(-ret));
	}
}

/* Lost before any byte of the answer: once more on a new connection if
 * the one lost was a kept-alive one, else SINK_CONNECT. */
static void lost_early(struct sink_impl *s, struct conn *c, const char *why)
{
	int stale = c->used && !c->req->retried;

	conn_close(s, c);
	if (stale) {
		c->req->retried = 1;
		conn_open(s, c);
		return;
	}
	finish(s, c, SINK_CONNECT, 0, "connection lost before the response: %s", why);
}

static void fail(struct sink_impl *s, struct conn *c, int kind, const char *why)
{
	conn_close(s, c);
	finish(s, c, kind, 0, "%s", why);
}

/* ---- the exchange ----------------------------------------------------- */

static int on_message_begin(http_parser *p)
{
	struct conn *c = p->data;

	c->req->res.retry_after[0] = '\0';
	c->hdr_bytes = 0;
	c->body_bytes = 0;
	c->in_value = 1;
	c->in_ra = 0;
	return 0;
}

static int count_header(struct conn *c, size_t len)
{
	c->hdr_bytes += len + 4;	/* ": " and CR LF of its line, or so */
	if (c->hdr_bytes <= H1_HEADER_MAX)
		return 0;
	c->stop = STOP_HEADER;
	return 1;
}

static int on_status(http_parser *p, const char *at, size_t len)
{
	(void)at;
	return count_header(p->data, len);
}

static int on_header_field(http_parser *p, const char *at, size_t len)
{
	struct conn *c = p->data;
	size_t k;

	if (c->in_value) {		/* a new header starts */
		c->in_value = 0;
		c->field_len = 0;
		c->in_ra = 0;
	}
	k = sizeof(c->field) - c->field_len < len ? sizeof(c->field) - c->field_len : len;
	memcpy(c->field + c->field_len, at, k);
	c->field_len += len;	/* past sizeof(field): no name we want */
	return count_header(c, len);
}

static int on_header_value(http_parser *p, const char *at, size_t len)
{
	struct conn *c = p->data;
	struct sink_result *r = &c->req->res;
	size_t room;

	if (!c->in_value) {		/* its first bytes: which header is it */
		c->in_value = 1;
		c->in_ra = c->field_len == 11 && !strncasecmp(c->field, "Retry-After", 11);
		if (c->in_ra)
			c->ra_len = 0;	/* the last one counts, as libcurl's */
	}
	if (c->in_ra) {
		room = sizeof(r->retry_after) - 1 - c->ra_len;
		if (len < room)
			room = len;
		memcpy(r->retry_after + c->ra_len, at, room);
		c->ra_len += room;
		r->retry_after[c->ra_len] = '\0';
	}
	return count_header(c, len);
}

static int on_headers_complete(http_parser *p)
{
	struct conn *c = p->data;
	char *v = c->req->res.retry_after;
	size_t n = strlen(v);

	/* Three digits (the library takes "HTTP/1.1 20 OK" as 20). */
	if (p->status_code < 100) {
		c->stop = STOP_PROTO;
		return -1;
	}

	while (n && (v[n - 1] == ' ' || v[n - 1] == '\t'))
		v[--n] = '\0';
	return 0;
}

static int on_body(http_parser *p, const char *at, size_t len)
{
	struct conn *c = p->data;

	(void)at;
	c->body_bytes += len;
	if (c->body_bytes <= H1_BODY_MAX)
		return 0;
	c->stop = STOP_BODY;
	return 1;
}

static int on_message_complete(http_parser *p)
{
	struct conn *c = p->data;

	if (p->status_code / 100 == 1) {
		/* 100 Continue and such: the answer follows, its status
		 * line checked like the first (parse()). */
		c->interim = 1;
		http_parser_pause(p, 1);
		return 0;
	}
	c->done = 1;
	http_parser_pause(p, 1);	/* bytes after it are not ours */
	return 0;
}

static const http_parser_settings settings = {
	.on_message_begin = on_message_begin,
	.on_status = on_status,
	.on_header_field = on_header_field,
	.on_header_value = on_header_value,
	.on_headers_complete = on_headers_complete,
	.on_body = on_body,
	.on_message_complete = on_message_complete,
};

/* The answer on @c is complete: report it, keep the connection if both
 * sides may. */
static void answered(struct sink_impl *s, struct conn *c, int keep)
{
	long status = c->p.status_code;

	c->used = 1;
	finish(s, c, SINK_HTTP, status, NULL);
	if (keep && http_should_keep_alive(&c->p))
		idle_push(s, c);
	else
		conn_close(s, c);
}

/*
 * Does @c's answer start with "HTTP/1." so far (@buf, @n the bytes that
 * follow)?  Debian's libhttp-parser is built without HTTP_PARSER_STRICT:
 * it does not check the letters of "HTTP/" and took "HTTG/1.0 201" as a
 * 201 (sink_test's mutated answers); libcurl refuses such an answer.
 */
static int magic_ok(struct conn *c, const char *buf, size_t n)
{
	static const char magic[] = "HTTP/1.";
	size_t k = sizeof(magic) - 1 - c->magic_len;

	if (!k)
		return 1;
	if (n < k)
		k = n;
	if (memcmp(buf, magic + c->magic_len, k))
		return 0;
	c->magic_len += k;
	return 1;
}

/* Feed @n bytes (0: the end of the stream) of @c's answer to its parser. */
static void parse(struct sink_impl *s, struct conn *c, const char *buf, size_t n)
{
	enum http_errno e;
	size_t used;
	char why[96];

	for (;;) {
		if (n && !magic_ok(c, buf, n)) {
			fail(s, c, SINK_ERROR, "malformed response: not an HTTP/1.x status line");
			return;
		}
		used = http_parser_execute(&c->p, &settings, buf, n);
		if (!c->interim || c->p.upgrade)
			break;
		/* A 1xx ended: the next answer starts at buf + used. */
		c->interim = 0;
		c->magic_len = 0;
		http_parser_pause(&c->p, 0);
		buf += used;
		n -= used;
		if (!n)
			return;
	}
	e = HTTP_PARSER_ERRNO(&c->p);
	if (c->p.upgrade) {
		fail(s, c, SINK_ERROR, "the downstream switched protocols");
		return;
	}
	if (c->done) {
		answered(s, c, n && used == n && e == HPE_PAUSED);
		return;
	}
	if (c->stop == STOP_BODY) {
		/* The status and headers are whole: they are the answer. */
		answered(s, c, 0);
		return;
	}
	if (c->stop == STOP_HEADER) {
		fail(s, c, SINK_ERROR, "response header over 16384 bytes");
		return;
	}
	if (c->stop == STOP_PROTO) {
		fail(s, c, SINK_ERROR, "malformed response: status not three digits");
		return;
	}
	if (!n && e == HPE_OK) {
		fail(s, c, SINK_CONNECT, "connection closed mid-response");
		return;
	}
	if (e == HPE_INVALID_EOF_STATE) {
		fail(s, c, SINK_CONNECT, "connection closed mid-response");
		return;
	}
	if (e != HPE_OK) {
		snprintf(why, sizeof(why), "malformed response: %s", http_errno_description(e));
		fail(s, c, SINK_ERROR, why);
		return;
	}
}

static void on_readable(struct sink_impl *s, struct conn *c)
{
	ssize_t n = recv(c->fd, s->rbuf, sizeof(s->rbuf), 0);

	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (!c->req) {
		/* Idle: the downstream closed it (or talks out of turn). */
		conn_close(s, c);
		return;
	}
	if (n < 0 || (n == 0 && !c->got)) {
		if (c->got)
			fail(s, c, SINK_CONNECT, "connection lost mid-response");
		else
			lost_early(s, c, n < 0 ? strerror(errno) : "closed");
		return;
	}
	c->got += (size_t)n;
	parse(s, c, s->rbuf, (size_t)n);
}

static size_t put_u64(char *p, uint64_t v)
{
	char t[24];
	size_t n = 0, i;

	do {
		t[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	for (i = 0; i < n; i++)
		p[i] = t[n - 1 - i];
	return n;
}

/* Send @c's request (@first) or its rest: one sendmsg() of head + body. */
static void write_req(struct sink_impl *s, struct conn *c, int first)
{
	struct h1req *r = c->req;
	struct iovec iov[2];
	struct msghdr m = { .msg_iov = iov };
	ssize_t n;

	if (first) {
		c->sent = 0;
		c->got = 0;
		c->done = 0;
		c->interim = 0;
		c->magic_len = 0;
		c->stop = STOP_NONE;
		http_parser_init(&c->p, HTTP_RESPONSE);
		c->p.data = c;
	}
	if (c->sent < c->head_len) {
		iov[0].iov_base = c->head + c->sent;
		iov[0].iov_len = c->head_len - c->sent;
		iov[1].iov_base = (void *)r->body;
		iov[1].iov_len = r->len;
		m.msg_iovlen = r->len ? 2 : 1;
	} else {
		iov[0].iov_base = (void *)(r->body + (c->sent - c->head_len));
		iov[0].iov_len = r->len - (c->sent - c->head_len);
		m.msg_iovlen = 1;
	}
	n = sendmsg(c->fd, &m, MSG_NOSIGNAL | MSG_DONTWAIT);
	if (n < 0 && errno != EAGAIN && errno != EINTR) {
		lost_early(s, c, strerror(errno));
		return;
	}
	if (n > 0)
		c->sent += (size_t)n;
	if (c->sent < c->head_len + r->len) {
		c->state = C_WRITING;
		watch(s, c, EPOLLOUT);
		return;
	}
	c->state = C_READING;
	watch(s, c, EPOLLIN);	/* no system call when it was already */
}

/* Build @r's head on @c (the prefix is there) and send it. */
static void start(struct sink_impl *s, struct conn *c, struct h1req *r, const char *id)
{
	size_t idl = strnlen(id, H1_ID_MAX), k = s->prefix_len;

	c->req = r;
	memcpy(c->head + k, id, idl);
	k += idl;
	memcpy(c->head + k, s->mid, s->mid_len);
	k += s->mid_len;
	k += put_u64(c->head + k, r->len);
	memcpy(c->head + k, "\r\n\r\n", 4);
	c->head_len = k + 4;
	if (c->fd < 0)
		conn_open(s, c);
	else
		write_req(s, c, 1);
}

static void on_connected(struct sink_impl *s, struct conn *c)
{
	int err = 0, ret;
	socklen_t l = sizeof(err);

	if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &l))
		err = errno;
	if (!err) {
		s->ai_good = c->ai;
		write_req(s, c, 1);
		return;
	}
	ev_unwatch(s->ev, c->fd);
	close(c->fd);
	c->fd = -1;
	ret = connect_next(s, c);
	if (ret && c->req) {
		c->state = C_CLOSED;
		finish(s, c, SINK_CONNECT, 0, "could not connect to %s port %s: %s",
		       s->host, s->port, strerror(err));
	}
}

static void on_conn_fd(void *arg, int fd, uint32_t events)
{
	struct conn *c = arg;
	struct sink_impl *s = c->s;

	(void)fd;
	switch (c->state) {
	case C_CONNECTING:
		/* Only what a connect ends with: an event left in the same
		 * epoll batch for a closed descriptor whose number this new
		 * socket took must not read as "connected". */
		if (events & (EPOLLOUT | EPOLLERR | EPOLLHUP))
			on_connected(s, c);
		break;
	case C_WRITING:
		write_req(s, c, 0);
		break;
	case C_IDLE:
	case C_READING:
		if (events & (EPOLLIN | EPOLLHUP | EPOLLERR))
			on_readable(s, c);
		break;
	case C_RESOLVING:
	case C_CLOSED:
		break;
	}
}

/*
 * A lookup ended (resolver.h, on the loop's thread): keep its addresses
 * if it found any, and connect the connections that waited for them, or
 * fail them when no lookup has worked yet.
 */
static void on_resolved(void *arg)
{
	struct sink_impl *s = arg;
	struct resolver_addrs a;
	unsigned int i;
	int ret;

	if (!resolver_take(s->resolver, &a)) {
		s->a = a;
		s->ai_good = 0;
		s->resolved_ns = s->now;
	}
	for (i = 0; i < s->max; i++) {
		struct conn *c = &s->conns[i];

		if (c->state != C_RESOLVING)
			continue;
		c->state = C_CLOSED;
		if (!s->a.n) {
			finish(s, c, SINK_CONNECT, 0, "could not resolve host %s", s->host);
			continue;
		}
		c->ai = s->ai_good;
		ret = connect_next(s, c);
		if (ret && c->req) {
			conn_close(s, c);
			finish(s, c, ret == -ENOMEM ? SINK_ERROR : SINK_CONNECT, 0,
			       "could not connect to %s port %s: %s", s->host, s->port,
			       strerror(-ret));
		}
	}
}

/* ---- sink.h ----------------------------------------------------------- */

/*
 * The constant parts of the request head, as libcurl 7.88 writes them for
 * sink_curl.c's options: request line, Host, Accept, then the custom
 * headers in their order, then Content-Length.
 */
static int build_head(struct sink_impl *s, const char *url)
{
	CURLU *u = curl_url();
	char *host = NULL, *path = NULL, *query = NULL, *port = NULL;
	const char *ct = s->c->sink_content_type;
	long pn;
	int ret = -ENOMEM, n;
	size_t hl;

	if (!u)
		return -ENOMEM;
	if (curl_url_set(u, CURLUPART_URL, url,
			 CURLU_GUESS_SCHEME | CURLU_NON_SUPPORT_SCHEME) ||
	    curl_url_get(u, CURLUPART_HOST, &host, 0) ||
	    curl_url_get(u, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT) ||
	    curl_url_get(u, CURLUPART_PATH, &path, 0)) {
		ret = -EINVAL;
		goto out;
	}
	if (curl_url_get(u, CURLUPART_QUERY, &query, 0))
		query = NULL;
	hl = strlen(host);
	if (hl >= sizeof(s->host) || strlen(port) >= sizeof(s->port)) {
		ret = -EINVAL;
		goto out;
	}
	if (host[0] == '[' && hl >= 2)		/* an IPv6 address */
		snprintf(s->host, sizeof(s->host), "%.*s", (int)hl - 2, host + 1);
	else
		snprintf(s->host, sizeof(s->host), "%s", host);
	snprintf(s->port, sizeof(s->port), "%s", port);
	pn = strtol(port, NULL, 10);
	n = asprintf(&s->prefix, "POST %s%s%s HTTP/1.1\r\nHost: %s%s%s\r\nAccept: */*\r\nIdempotency-Key: ",
		     path, query ? "?" : "", query ? query : "", host,
		     pn == 80 ? "" : ":", pn == 80 ? "" : port);
	if (n < 0) {
		s->prefix = NULL;
		goto out;
	}
	s->prefix_len = (size_t)n;
	n = asprintf(&s->mid, "\r\nContent-Type: %s\r\nContent-Length: ", ct);
	if (n < 0) {
		s->mid = NULL;
		goto out;
	}
	s->mid_len = (size_t)n;
	s->head_cap = s->prefix_len + H1_ID_MAX + s->mid_len + 24 + 4;
	ret = 0;
out:
	curl_free(host);
	curl_free(port);
	curl_free(path);
	curl_free(query);
	curl_url_cleanup(u);
	return ret;
}

static void h1_close(struct sink_impl *s)
{
	unsigned int i;

	if (!s)
		return;
	for (i = 0; s->conns && i < s->max; i++) {
		if (s->conns[i].fd >= 0) {
			ev_unwatch(s->ev, s->conns[i].fd);
			close(s->conns[i].fd);
		}
		free(s->conns[i].head);
	}
	resolver_close(s->resolver);
	free(s->conns);
	free(s->reqs);
	free(s->prefix);
	free(s->mid);
	free(s);
}

static int h1_open(const struct config *c, const struct log *log, struct ev *ev,
		   uint64_t now, struct sink_impl **out)
{
	struct sink_impl *s = calloc(1, sizeof(*s));
	unsigned int i;
	int ret;

	if (!s)
		return -ENOMEM;
	s->c = c;
	s->log = log;
	s->ev = ev;
	s->now = now;
	s->max = c->max_inflight;
	s->done_tail = &s->done;
	ret = build_head(s, c->sink_url);
	if (ret) {
		if (ret == -EINVAL)
			logkv(log, LOG_ERR, "sink_url_invalid", "url=\"%s\" err=\"no host or path\"",
			      c->sink_url);
		goto fail;
	}
	ret = -ENOMEM;
	s->conns = calloc(s->max, sizeof(*s->conns));
	s->reqs = calloc(s->max, sizeof(*s->reqs));
	if (!s->conns || !s->reqs)
		goto fail;
	for (i = 0; i < s->max; i++) {
		struct conn *cn = &s->conns[i];

		cn->s = s;
		cn->fd = -1;
		cn->head = malloc(s->head_cap);
		if (!cn->head)
			goto fail;
		memcpy(cn->head, s->prefix, s->prefix_len);
		s->reqs[i].next = s->free_reqs;
		s->free_reqs = &s->reqs[i];
	}
	/* A name is looked up from now on; one that does not resolve
	 * now may later: not fatal here. */
	if (resolver_numeric(s->host, s->port, &s->a)) {
		ret = resolver_open(s->host, s->port, ev, on_resolved, s, &s->resolver);
		if (ret)
			goto fail;
		resolver_start(s->resolver);
	}
	*out = s;
	return 0;
fail:
	h1_close(s);
	return ret;
}

static int h1_send(struct sink_impl *s, const char *id, const void *body, size_t len,
		   void *ctx, uint64_t now)
{
	struct h1req *r = s->free_reqs;
	struct conn *c = s->idle;
	unsigned int i;

	if (s->inflight >= s->max || !r)
		return -EBUSY;
	if (c) {
		idle_del(s, c);
	} else {
		/* Every connection busy carries a request in flight, and
		 * there are fewer of those than max: one is closed. */
		for (i = 0; i < s->max && s->conns[i].state != C_CLOSED; i++)
			;
		if (i == s->max)
			return -EBUSY;
		c = &s->conns[i];
	}
	s->free_reqs = r->next;
	memset(&r->res, 0, sizeof(r->res));
	r->res.ctx = ctx;
	r->start_ns = now;
	r->body = body ? body : "";
	r->len = len;
	r->retried = 0;
	s->now = now;
	s->inflight++;
	start(s, c, r, id);
	return 0;
}

static unsigned int h1_inflight(const struct sink_impl *s)
{
	return s->inflight;
}

static uint64_t deadline(const struct sink_impl *s, const struct conn *c)
{
	uint64_t t = c->req->start_ns + (uint64_t)s->c->sink_timeout_ms * 1000000ULL;

	if ((c->state == C_CONNECTING || c->state == C_RESOLVING) && c->connect_by < t)
		t = c->connect_by;
	return t;
}

static int h1_timeout_ms(const struct sink_impl *s, uint64_t now)
{
	uint64_t t = UINT64_MAX;
	unsigned int i;

	if (s->done || s->err)
		return 0;
	for (i = 0; i < s->max; i++) {
		const struct conn *c = &s->conns[i];

		if (c->req && deadline(s, c) < t)
			t = deadline(s, c);
	}
	if (t == UINT64_MAX)
		return -1;
	if (t <= now)
		return 0;
	return (int)((t - now + 999999) / 1000000);
}

static int h1_run_timers(struct sink_impl *s, uint64_t now)
{
	unsigned int i;
	int ret;

	s->now = now;
	for (i = 0; i < s->max; i++) {
		struct conn *c = &s->conns[i];

		if (!c->req || deadline(s, c) > now)
			continue;
		if (c->state == C_RESOLVING)
			fail(s, c, SINK_TIMEOUT, "host name lookup timed out");
		else if (c->state == C_CONNECTING)
			fail(s, c, SINK_TIMEOUT, "connection timed out");
		else
			fail(s, c, SINK_TIMEOUT, "no answer within sink_timeout_ms");
	}
	ret = s->err;
	s->err = 0;
	return ret;
}

static int h1_result(struct sink_impl *s, struct sink_result *out, uint64_t now)
{
	struct h1req *r = s->done;

	if (!r)
		return 0;
	s->done = r->next;
	if (!s->done)
		s->done_tail = &s->done;
	r->res.elapsed_ns = now > r->start_ns ? now - r->start_ns : 0;
	*out = r->res;
	r->next = s->free_reqs;
	s->free_reqs = r;
	s->inflight--;
	return 1;
}

const struct sink_ops sink_http1_ops = {
	.name = "native",
	.open = h1_open,
	.close = h1_close,
	.send = h1_send,
	.inflight = h1_inflight,
	.timeout_ms = h1_timeout_ms,
	.run_timers = h1_run_timers,
	.result = h1_result,
};
