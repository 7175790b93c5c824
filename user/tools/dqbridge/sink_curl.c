// SPDX-License-Identifier: LGPL-2.1 OR MIT
/*
 * dqbridge: the HTTP sink (sink.h) on libcurl's multi interface, for what
 * the native HTTP/1.1 client (sink_http1.c) does not take: https://, a
 * proxy, credentials in the URL, or `sink_client = curl` (sink.c picks).
 *
 * Easy handles are pooled and reused: libcurl keeps a reused handle's
 * connection alive, so a steady stream of requests costs no new TCP
 * handshakes.  They share one parsed sink_url (CURLOPT_CURLU): with
 * CURLOPT_URL libcurl parsed the string again at every transfer, ~11k
 * instructions of the ~76k it spent per message.
 * CURLMOPT_MAX_HOST_CONNECTIONS caps the connections at max_inflight, and
 * sink_send() refuses a request past it, so the downstream never sees
 * more than max_inflight requests at once.
 *
 * Driven by curl_multi_socket_action(): libcurl tells which sockets it
 * waits on (CURLMOPT_SOCKETFUNCTION: registered in the bridge's epoll
 * set, ev.h) and when it next needs the time (CURLMOPT_TIMERFUNCTION), and
 * is called only for the socket that is ready or the timer that is due.
 * curl_multi_poll() + curl_multi_perform(), before, polled and visited
 * every connection on every loop turn.
 */
#include <errno.h>
#include <sys/epoll.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <curl/curl.h>

#include "config.h"
#include "ev.h"
#include "log.h"
#include "sink.h"
#include "sink_impl.h"

/*
 * The request headers are a curl_slist whose nodes and strings the
 * request owns (libcurl only reads the list during the transfer): the
 * constant ones are written once when the handle is made, the
 * Idempotency-Key in place per request, so a request allocates nothing
 * of ours (curl_slist_append() cost six malloc()/free() pairs a
 * request).
 */
enum { H_KEY, H_TYPE, H_EXPECT, H_N };

struct req {
	CURL *easy;
	struct curl_slist hdr[H_N];
	char key[512];		/* "Idempotency-Key: " + an id (SRC_ID_MAX) */
	char *type;		/* "Content-Type: ..." (malloc'd) */
	struct sink_result res;
	long line_status;	/* of the last status line, as on_header() read it */
	uint64_t start_ns;
	struct req *next;	/* free list */
};

struct sink_impl {
	const struct config *c;
	const struct log *log;
	CURLM *multi;
	struct ev *ev;
	struct req *free_reqs;
	unsigned int inflight;
	uint64_t now;		/* the loop's clock, as last given */
	int timer_on;		/* libcurl wants sink_run_timers() at timer_ns */
	uint64_t timer_ns;
	int err;		/* a registration failed: -errno */
	CURLU *url;		/* sink_url, parsed once (CURLOPT_CURLU) */
};

/* A socket libcurl waits on is ready. */
static void on_fd(void *arg, int fd, uint32_t events)
{
	struct sink_impl *s = arg;
	int mask = 0, running;

	if (events & (EPOLLIN | EPOLLHUP))
		mask |= CURL_CSELECT_IN;
	if (events & EPOLLOUT)
		mask |= CURL_CSELECT_OUT;
	if (events & EPOLLERR)
		mask |= CURL_CSELECT_ERR;
	if (curl_multi_socket_action(s->multi, fd, mask, &running) != CURLM_OK)
		s->err = -EIO;
}

/* CURLMOPT_SOCKETFUNCTION: what libcurl waits for on @fd. */
static int on_socket(CURL *easy, curl_socket_t fd, int what, void *userp,
		     void *socketp)
{
	struct sink_impl *s = userp;
	uint32_t events = 0;
	int ret;

	(void)easy;
	(void)socketp;
	if (what == CURL_POLL_REMOVE) {
		ret = ev_unwatch(s->ev, fd);
	} else {
		if (what & CURL_POLL_IN)
			events |= EPOLLIN;
		if (what & CURL_POLL_OUT)
			events |= EPOLLOUT;
		ret = ev_watch(s->ev, fd, events, on_fd, s);
	}
	if (ret) {
		s->err = ret;
		return -1;
	}
	return 0;
}

/* CURLMOPT_TIMERFUNCTION: call back in @ms (-1: no timer). */
static int on_timer(CURLM *multi, long ms, void *userp)
{
	struct sink_impl *s = userp;

	(void)multi;
	s->timer_on = ms >= 0;
	s->timer_ns = s->now + (ms > 0 ? (uint64_t)ms * 1000000ULL : 0);
	return 0;
}

/*
 * The status of a status line "HTTP/1.x NNN" (then a space or the line's
 * end), or -1.  libcurl 7.88 answers CURLE_OK to some it cannot parse
 * ("HTTP/Z.0 201 Created", "HTTP/.1 200 OK") and CURLINFO_RESPONSE_CODE
 * then still holds the previous transfer's status on the reused handle:
 * a 200 the downstream never sent (dqbridge_sink_test's mutated answers).
 */
static long status_line(const char *b, size_t len)
{
	if (len < 12 || memcmp(b, "HTTP/1.", 7) || (b[7] != '0' && b[7] != '1') ||
	    b[8] != ' ' || b[9] < '1' || b[9] > '9' || b[10] < '0' || b[10] > '9' ||
	    b[11] < '0' || b[11] > '9' ||
	    (len > 12 && b[12] != ' ' && b[12] != '\r' && b[12] != '\n'))
		return -1;
	return (b[9] - '0') * 100 + (b[10] - '0') * 10 + (b[11] - '0');
}

/* Response headers: the status line checked, Retry-After kept. */
static size_t on_header(char *buf, size_t size, size_t n, void *arg)
{
	struct req *r = arg;
	size_t len = size * n, k = strlen("Retry-After:");

	if (len >= 5 && !memcmp(buf, "HTTP/", 5))
		r->line_status = status_line(buf, len);
	if (len > k && !strncasecmp(buf, "Retry-After:", k)) {
		const char *v = buf + k;
		size_t vl = len - k;

		while (vl && (*v == ' ' || *v == '\t'))
			v++, vl--;
		while (vl && (v[vl - 1] == '\r' || v[vl - 1] == '\n' || v[vl - 1] == ' '))
			vl--;
		if (vl >= sizeof(r->res.retry_after))
			vl = sizeof(r->res.retry_after) - 1;
		memcpy(r->res.retry_after, v, vl);
		r->res.retry_after[vl] = '\0';
	}
	return len;
}

/* The response body is not used: discarded. */
static size_t on_body(char *buf, size_t size, size_t n, void *arg)
{
	(void)buf;
	(void)arg;
	return size * n;
}

static int curl_open(const struct config *c, const struct log *log, struct ev *ev,
	      uint64_t now, struct sink_impl **out)
{
	struct sink_impl *s;
	CURLUcode uc;
	int ret = -ENOMEM;

	if (curl_global_init(CURL_GLOBAL_DEFAULT))
		return -EIO;
	s = calloc(1, sizeof(*s));
	if (!s)
		goto fail;
	s->c = c;
	s->log = log;
	s->ev = ev;
	s->now = now;
	s->url = curl_url();
	if (!s->url)
		goto fail;
	/* The flags libcurl itself parses CURLOPT_URL with: the same URLs
	 * are taken, and one it cannot take stops the start, not every
	 * request. */
	uc = curl_url_set(s->url, CURLUPART_URL, c->sink_url,
			  CURLU_GUESS_SCHEME | CURLU_NON_SUPPORT_SCHEME);
	if (uc != CURLUE_OK) {
		logkv(log, LOG_ERR, "sink_url_invalid", "url=\"%s\" err=\"%s\"",
		      c->sink_url, curl_url_strerror(uc));
		ret = -EINVAL;
		goto fail;
	}
	s->multi = curl_multi_init();
	if (!s->multi)
		goto fail;
	curl_multi_setopt(s->multi, CURLMOPT_MAX_HOST_CONNECTIONS, (long)c->max_inflight);
	curl_multi_setopt(s->multi, CURLMOPT_MAX_TOTAL_CONNECTIONS, (long)c->max_inflight);
	curl_multi_setopt(s->multi, CURLMOPT_MAXCONNECTS, (long)c->max_inflight);
	curl_multi_setopt(s->multi, CURLMOPT_SOCKETFUNCTION, on_socket);
	curl_multi_setopt(s->multi, CURLMOPT_SOCKETDATA, s);
	curl_multi_setopt(s->multi, CURLMOPT_TIMERFUNCTION, on_timer);
	curl_multi_setopt(s->multi, CURLMOPT_TIMERDATA, s);
	*out = s;
	return 0;
fail:
	if (s)
		curl_url_cleanup(s->url);
	free(s);
	curl_global_cleanup();
	return ret;
}

static void req_free(struct req *r)
{
	curl_easy_cleanup(r->easy);
	free(r->type);
	free(r);
}

/*
 * A new pooled request: its easy handle with every option that does not
 * change between requests set once (libcurl keeps them across
 * transfers: a reused handle costs only the per-message ones).
 */
static struct req *req_new(struct sink_impl *s)
{
	const struct config *c = s->c;
	size_t tl = strlen("Content-Type: ") + strlen(c->sink_content_type) + 1;
	struct req *r = calloc(1, sizeof(*r));

	if (!r)
		return NULL;
	r->easy = curl_easy_init();
	r->type = malloc(tl);
	if (!r->easy || !r->type) {
		req_free(r);
		return NULL;
	}
	snprintf(r->type, tl, "Content-Type: %s", c->sink_content_type);
	r->hdr[H_KEY].data = r->key;
	r->hdr[H_KEY].next = &r->hdr[H_TYPE];
	r->hdr[H_TYPE].data = r->type;
	r->hdr[H_TYPE].next = &r->hdr[H_EXPECT];
	/* No "Expect: 100-continue" round trip for larger bodies. */
	r->hdr[H_EXPECT].data = (char *)"Expect:";
	r->hdr[H_EXPECT].next = NULL;
	curl_easy_setopt(r->easy, CURLOPT_CURLU, s->url);
	curl_easy_setopt(r->easy, CURLOPT_POST, 1L);
	curl_easy_setopt(r->easy, CURLOPT_HTTPHEADER, r->hdr);
	curl_easy_setopt(r->easy, CURLOPT_TIMEOUT_MS, (long)c->sink_timeout_ms);
	curl_easy_setopt(r->easy, CURLOPT_CONNECTTIMEOUT_MS,
			 (long)c->sink_connect_timeout_ms);
	curl_easy_setopt(r->easy, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(r->easy, CURLOPT_TCP_KEEPALIVE, 1L);
	curl_easy_setopt(r->easy, CURLOPT_TCP_NODELAY, 1L);
	curl_easy_setopt(r->easy, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(r->easy, CURLOPT_HEADERDATA, r);
	curl_easy_setopt(r->easy, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(r->easy, CURLOPT_PRIVATE, r);
	return r;
}

static void curl_close(struct sink_impl *s)
{
	struct req *r;

	if (!s)
		return;
	while ((r = s->free_reqs)) {
		s->free_reqs = r->next;
		req_free(r);
	}
	curl_multi_cleanup(s->multi);
	curl_url_cleanup(s->url);
	free(s);
	curl_global_cleanup();
}

static int curl_send(struct sink_impl *s, const char *id, const void *body, size_t len,
	      void *ctx, uint64_t now)
{
	struct req *r;

	if (s->inflight >= s->c->max_inflight)
		return -EBUSY;
	r = s->free_reqs;
	if (r) {
		s->free_reqs = r->next;
	} else {
		r = req_new(s);
		if (!r)
			return -ENOMEM;
	}
	memset(&r->res, 0, sizeof(r->res));
	r->line_status = 0;
	r->res.ctx = ctx;
	snprintf(r->key, sizeof(r->key), "Idempotency-Key: %s", id);
	curl_easy_setopt(r->easy, CURLOPT_POSTFIELDS, body ? body : "");
	curl_easy_setopt(r->easy, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
	s->now = now;
	r->start_ns = now;
	if (curl_multi_add_handle(s->multi, r->easy) != CURLM_OK) {
		r->next = s->free_reqs;
		s->free_reqs = r;
		return -EIO;
	}
	s->inflight++;
	return 0;
}

static unsigned int curl_inflight(const struct sink_impl *s)
{
	return s->inflight;
}

static int curl_timeout_ms(const struct sink_impl *s, uint64_t now)
{
	if (!s->timer_on)
		return -1;
	if (s->timer_ns <= now)
		return 0;
	return (int)((s->timer_ns - now + 999999) / 1000000);
}

static int curl_run_timers(struct sink_impl *s, uint64_t now)
{
	int running, ret;

	s->now = now;
	if (s->timer_on && s->timer_ns <= now) {
		s->timer_on = 0;	/* on_timer() sets the next one */
		if (curl_multi_socket_action(s->multi, CURL_SOCKET_TIMEOUT, 0,
					     &running) != CURLM_OK)
			return -EIO;
	}
	ret = s->err;
	s->err = 0;
	return ret;
}

static int curl_result(struct sink_impl *s, struct sink_result *out, uint64_t now)
{
	struct req *r;
	CURLMsg *m;
	int left;

	while ((m = curl_multi_info_read(s->multi, &left))) {
		if (m->msg != CURLMSG_DONE)
			continue;
		curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&r);
		r->res.elapsed_ns = now > r->start_ns ? now - r->start_ns : 0;
		switch (m->data.result) {
		case CURLE_OK:
			r->res.kind = SINK_HTTP;
			curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &r->res.status);
			if (r->line_status > 0 && r->res.status == r->line_status)
				break;
			/* Not the status line's (above): no status at all. */
			r->res.kind = SINK_ERROR;
			r->res.status = 0;
			r->res.retry_after[0] = '\0';
			snprintf(r->res.error, sizeof(r->res.error),
				 "malformed response: not an HTTP/1.x status line");
			break;
		case CURLE_OPERATION_TIMEDOUT:
			r->res.kind = SINK_TIMEOUT;
			break;
		case CURLE_COULDNT_CONNECT:
		case CURLE_COULDNT_RESOLVE_HOST:
		case CURLE_GOT_NOTHING:
		case CURLE_SEND_ERROR:
		case CURLE_RECV_ERROR:
			r->res.kind = SINK_CONNECT;
			break;
		default:
			r->res.kind = SINK_ERROR;
			break;
		}
		if (m->data.result != CURLE_OK)
			snprintf(r->res.error, sizeof(r->res.error), "%s",
				 curl_easy_strerror(m->data.result));
		curl_multi_remove_handle(s->multi, r->easy);
		*out = r->res;
		s->inflight--;
		r->next = s->free_reqs;
		s->free_reqs = r;
		return 1;
	}
	return 0;
}

const struct sink_ops sink_curl_ops = {
	.name = "curl",
	.open = curl_open,
	.close = curl_close,
	.send = curl_send,
	.inflight = curl_inflight,
	.timeout_ms = curl_timeout_ms,
	.run_timers = curl_run_timers,
	.result = curl_result,
};
