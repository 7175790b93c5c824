// SPDX-License-Identifier: LGPL-2.1 OR MIT
/*
 * dqbridge: which HTTP client carries sink.h.  `sink_client = auto` (the
 * default) takes the native HTTP/1.1 client (sink_http1.c) for a plain
 * http:// sink_url reached without a proxy: libcurl's general transfer
 * machinery was ~64k of the ~82k instructions a delivered message cost,
 * and made two poll() a request of its own.  Anything the native client
 * does not speak (https://, credentials in the URL, a proxy from the
 * environment) and `sink_client = curl` keep libcurl (sink_curl.c).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <curl/curl.h>

#include "config.h"
#include "log.h"
#include "sink.h"
#include "sink_impl.h"

struct sink {
	const struct sink_ops *ops;
	struct sink_impl *impl;
};

/* libcurl would send through a proxy named by one of these. */
static int proxy_env(void)
{
	static const char *const vars[] = { "http_proxy", "all_proxy", "ALL_PROXY" };
	unsigned int i;

	for (i = 0; i < sizeof(vars) / sizeof(vars[0]); i++) {
		const char *v = getenv(vars[i]);

		if (v && v[0])
			return 1;
	}
	return 0;
}

/* Can the native client take @url, as libcurl would send it?  1, 0, or
 * -EINVAL when libcurl cannot parse it (the caller's curl path logs). */
static int native_fits(const char *url)
{
	/* Credentials, and an IPv6 zone (fe80::1%eth0), are libcurl's. */
	static const CURLUPart creds[] = { CURLUPART_USER, CURLUPART_PASSWORD,
					   CURLUPART_OPTIONS, CURLUPART_ZONEID };
	CURLU *u = curl_url();
	char *scheme = NULL, *part;
	unsigned int i;
	int ret = 0;

	if (!u)
		return -ENOMEM;
	if (curl_url_set(u, CURLUPART_URL, url,
			 CURLU_GUESS_SCHEME | CURLU_NON_SUPPORT_SCHEME) != CURLUE_OK) {
		ret = -EINVAL;
		goto out;
	}
	if (curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK ||
	    strcasecmp(scheme, "http"))
		goto out;
	for (i = 0; i < sizeof(creds) / sizeof(creds[0]); i++) {
		if (curl_url_get(u, creds[i], &part, 0) == CURLUE_OK) {
			curl_free(part);
			goto out;
		}
	}
	ret = !proxy_env();
out:
	curl_free(scheme);
	curl_url_cleanup(u);
	return ret;
}

int sink_open(const struct config *c, const struct log *log, struct ev *ev,
	      uint64_t now, struct sink **out)
{
	struct sink *s = calloc(1, sizeof(*s));
	int ret;

	if (!s)
		return -ENOMEM;
	s->ops = &sink_curl_ops;
	if (strcmp(c->sink_client, "curl")) {
		ret = native_fits(c->sink_url);
		if (ret == -ENOMEM) {
			free(s);
			return ret;
		}
		if (ret > 0)
			s->ops = &sink_http1_ops;
	}
	ret = s->ops->open(c, log, ev, now, &s->impl);
	if (ret) {
		free(s);
		return ret;
	}
	logkv(log, LOG_INFO, "sink_client", "client=%s url=\"%s\"", s->ops->name,
	      c->sink_url);
	*out = s;
	return 0;
}

void sink_close(struct sink *s)
{
	if (!s)
		return;
	s->ops->close(s->impl);
	free(s);
}

int sink_send(struct sink *s, const char *id, const void *body, size_t len,
	      void *ctx, uint64_t now)
{
	return s->ops->send(s->impl, id, body, len, ctx, now);
}

unsigned int sink_inflight(const struct sink *s)
{
	return s->ops->inflight(s->impl);
}

int sink_timeout_ms(const struct sink *s, uint64_t now)
{
	return s->ops->timeout_ms(s->impl, now);
}

int sink_run_timers(struct sink *s, uint64_t now)
{
	return s->ops->run_timers(s->impl, now);
}

int sink_result(struct sink *s, struct sink_result *r, uint64_t now)
{
	return s->ops->result(s->impl, r, now);
}
