// SPDX-License-Identifier: LGPL-2.1 OR MIT
/*
 * dqbridge: the HTTP sink (sink.h) on libcurl's multi interface.
 *
 * Easy handles are pooled and reused: libcurl keeps a reused handle's
 * connection alive, so a steady stream of requests costs no new TCP
 * handshakes.  CURLMOPT_MAX_HOST_CONNECTIONS caps the connections at
 * max_inflight, and sink_send() refuses a request past it, so the
 * downstream never sees more than max_inflight requests at once.
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <curl/curl.h>

#include "config.h"
#include "log.h"
#include "sink.h"

struct req {
	CURL *easy;
	struct curl_slist *hdrs;
	struct sink_result res;
	uint64_t start_ns;
	struct req *next;	/* free list */
};

struct sink {
	const struct config *c;
	const struct log *log;
	CURLM *multi;
	struct req *free_reqs;
	unsigned int inflight;
};

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

/* Response headers: only Retry-After is kept. */
static size_t on_header(char *buf, size_t size, size_t n, void *arg)
{
	struct req *r = arg;
	size_t len = size * n, k = strlen("Retry-After:");

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

int sink_open(const struct config *c, const struct log *log, struct sink **out)
{
	struct sink *s;

	if (curl_global_init(CURL_GLOBAL_DEFAULT))
		return -EIO;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->c = c;
	s->log = log;
	s->multi = curl_multi_init();
	if (!s->multi) {
		free(s);
		return -ENOMEM;
	}
	curl_multi_setopt(s->multi, CURLMOPT_MAX_HOST_CONNECTIONS, (long)c->max_inflight);
	curl_multi_setopt(s->multi, CURLMOPT_MAX_TOTAL_CONNECTIONS, (long)c->max_inflight);
	curl_multi_setopt(s->multi, CURLMOPT_MAXCONNECTS, (long)c->max_inflight);
	*out = s;
	return 0;
}

static void req_free(struct req *r)
{
	curl_slist_free_all(r->hdrs);
	curl_easy_cleanup(r->easy);
	free(r);
}

void sink_close(struct sink *s)
{
	struct req *r;

	if (!s)
		return;
	while ((r = s->free_reqs)) {
		s->free_reqs = r->next;
		req_free(r);
	}
	curl_multi_cleanup(s->multi);
	free(s);
	curl_global_cleanup();
}

int sink_send(struct sink *s, const char *id, const void *body, size_t len,
	      void *ctx)
{
	char hdr[512];
	struct req *r;

	if (s->inflight >= s->c->max_inflight)
		return -EBUSY;
	r = s->free_reqs;
	if (r) {
		s->free_reqs = r->next;
		curl_slist_free_all(r->hdrs);
		r->hdrs = NULL;
	} else {
		r = calloc(1, sizeof(*r));
		if (!r)
			return -ENOMEM;
		r->easy = curl_easy_init();
		if (!r->easy) {
			free(r);
			return -ENOMEM;
		}
	}
	memset(&r->res, 0, sizeof(r->res));
	r->res.ctx = ctx;
	snprintf(hdr, sizeof(hdr), "Idempotency-Key: %s", id);
	r->hdrs = curl_slist_append(r->hdrs, hdr);
	snprintf(hdr, sizeof(hdr), "Content-Type: %s", s->c->sink_content_type);
	r->hdrs = curl_slist_append(r->hdrs, hdr);
	/* No "Expect: 100-continue" round trip for larger bodies. */
	r->hdrs = curl_slist_append(r->hdrs, "Expect:");
	if (!r->hdrs) {
		req_free(r);
		return -ENOMEM;
	}
	curl_easy_setopt(r->easy, CURLOPT_URL, s->c->sink_url);
	curl_easy_setopt(r->easy, CURLOPT_POST, 1L);
	curl_easy_setopt(r->easy, CURLOPT_POSTFIELDS, body ? body : "");
	curl_easy_setopt(r->easy, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
	curl_easy_setopt(r->easy, CURLOPT_HTTPHEADER, r->hdrs);
	curl_easy_setopt(r->easy, CURLOPT_TIMEOUT_MS, (long)s->c->sink_timeout_ms);
	curl_easy_setopt(r->easy, CURLOPT_CONNECTTIMEOUT_MS,
			 (long)s->c->sink_connect_timeout_ms);
	curl_easy_setopt(r->easy, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(r->easy, CURLOPT_TCP_KEEPALIVE, 1L);
	curl_easy_setopt(r->easy, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(r->easy, CURLOPT_HEADERDATA, r);
	curl_easy_setopt(r->easy, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(r->easy, CURLOPT_PRIVATE, r);
	r->start_ns = mono_ns();
	if (curl_multi_add_handle(s->multi, r->easy) != CURLM_OK) {
		r->next = s->free_reqs;
		s->free_reqs = r;
		return -EIO;
	}
	s->inflight++;
	return 0;
}

unsigned int sink_inflight(const struct sink *s)
{
	return s->inflight;
}

int sink_wait(struct sink *s, const int *fds, short *revents, unsigned int nfds,
	      int timeout_ms)
{
	struct curl_waitfd w[4];
	unsigned int i;
	int running, numfds;

	if (nfds > 4)
		return -EINVAL;
	for (i = 0; i < nfds; i++) {
		w[i].fd = fds[i];
		w[i].events = CURL_WAIT_POLLIN;
		w[i].revents = 0;
	}
	if (curl_multi_poll(s->multi, w, nfds, timeout_ms, &numfds) != CURLM_OK)
		return -EIO;
	for (i = 0; i < nfds; i++)
		revents[i] = (w[i].revents & CURL_WAIT_POLLIN) ? POLLIN : 0;
	if (curl_multi_perform(s->multi, &running) != CURLM_OK)
		return -EIO;
	return 0;
}

int sink_result(struct sink *s, struct sink_result *out)
{
	struct req *r;
	CURLMsg *m;
	int left;

	while ((m = curl_multi_info_read(s->multi, &left))) {
		if (m->msg != CURLMSG_DONE)
			continue;
		curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&r);
		r->res.elapsed_ns = mono_ns() - r->start_ns;
		switch (m->data.result) {
		case CURLE_OK:
			r->res.kind = SINK_HTTP;
			curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &r->res.status);
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
