// SPDX-License-Identifier: LGPL-2.1 OR MIT
/*
 * dqbridge: the Prometheus endpoint (metrics.h).  Why libmicrohttpd and
 * not a hand-made listener: the endpoint must answer whatever a scraper
 * or a curl sends (keep-alive, HEAD, slow clients) without ever stalling
 * the bridge, and MHD does that in a thread of its own for a few lines.
 */
#include <errno.h>
#include <netdb.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <microhttpd.h>

#include "log.h"
#include "metrics.h"

const double metrics_late_bounds[LATE_BUCKETS] = {
	0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300,
};

struct metrics {
	const struct log *log;
	struct MHD_Daemon *d;
	pthread_mutex_t lock;
	struct mvals v;
};

void mvals_late(struct mvals *v, uint64_t late_ns)
{
	double s = late_ns / 1e9;
	int i;

	for (i = 0; i < LATE_BUCKETS; i++)
		if (s <= metrics_late_bounds[i])
			break;
	v->late_bucket[i]++;
	v->late_sum_s += s;
	v->late_count++;
}

struct buf {
	char *p;
	size_t len, cap;
};

static void bprintf(struct buf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void bprintf(struct buf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	for (;;) {
		if (!b->p)
			return;
		va_start(ap, fmt);
		n = vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
		va_end(ap);
		if (n >= 0 && (size_t)n < b->cap - b->len) {
			b->len += n;
			return;
		}
		b->cap *= 2;
		b->p = realloc(b->p, b->cap);
	}
}

static void metric(struct buf *b, const char *name, const char *type,
		   const char *help, double val)
{
	bprintf(b, "# HELP dqbridge_%s %s\n# TYPE dqbridge_%s %s\ndqbridge_%s %.17g\n",
		name, help, name, type, name, val);
}

static char *render(const struct mvals *v, size_t *len)
{
	struct buf b = { malloc(8192), 0, 8192 };
	uint64_t cum = 0;
	int i;

	metric(&b, "held", "gauge", "Messages in dq (waiting and in flight).", v->held);
	metric(&b, "oldest_age_seconds", "gauge", "Age of the oldest message held in dq, since it was first diverted.", v->oldest_age_s);
	metric(&b, "rate", "gauge", "Send rate the token bucket allows now (msgs/s).", v->rate);
	metric(&b, "inflight", "gauge", "HTTP requests running.", v->inflight);
	metric(&b, "unacked", "gauge", "Source messages read and not yet acknowledged.", v->unacked);
	metric(&b, "source_paused", "gauge", "1 while the source is not read (back-pressure).", v->paused);
	metric(&b, "draining", "gauge", "1 after SIGTERM.", v->draining);
	metric(&b, "read_total", "counter", "Messages read from the source.", v->read);
	metric(&b, "duplicates_total", "counter", "Messages read again while still in hand (dropped).", v->duplicates);
	metric(&b, "direct_total", "counter", "Messages sent without going through dq.", v->direct);
	metric(&b, "diverted_total", "counter", "Source messages committed into dq.", v->diverted);
	metric(&b, "retried_total", "counter", "Released messages committed into dq again after a failure.", v->retried);
	metric(&b, "already_held_total", "counter", "Commits refused because dq holds that key already.", v->already_held);
	metric(&b, "released_total", "counter", "Messages taken out of dq and sent.", v->released);
	metric(&b, "delivered_total", "counter", "2xx answers.", v->delivered);
	metric(&b, "dead_lettered_total", "counter", "Messages sent to the dead-letter stream.", v->dead_lettered);
	metric(&b, "acked_total", "counter", "Source messages acknowledged.", v->acked);
	metric(&b, "http_429_total", "counter", "429 answers seen.", v->http_429);
	metric(&b, "http_503_total", "counter", "503 answers seen.", v->http_503);
	metric(&b, "http_other_errors_total", "counter", "Other non-2xx answers.", v->http_other);
	metric(&b, "timeouts_total", "counter", "Requests that timed out.", v->timeouts);
	metric(&b, "connect_errors_total", "counter", "Requests that could not connect.", v->connect_errors);
	metric(&b, "bad_retry_after_total", "counter", "Retry-After headers that could not be read (backoff used).", v->bad_retry_after);
	metric(&b, "rate_decreases_total", "counter", "Decreases of the rate (each by the share of answers refused).", v->rate_decreases);
	metric(&b, "enospc_total", "counter", "Commits or flushes dq refused for room.", v->enospc);
	metric(&b, "pauses_total", "counter", "Times the source was paused.", v->pauses);
	bprintf(&b, "# HELP dqbridge_release_lateness_seconds Send time of a released message minus its due time.\n"
		"# TYPE dqbridge_release_lateness_seconds histogram\n");
	for (i = 0; i < LATE_BUCKETS; i++) {
		cum += v->late_bucket[i];
		bprintf(&b, "dqbridge_release_lateness_seconds_bucket{le=\"%g\"} %llu\n",
			metrics_late_bounds[i], (unsigned long long)cum);
	}
	cum += v->late_bucket[LATE_BUCKETS];
	bprintf(&b, "dqbridge_release_lateness_seconds_bucket{le=\"+Inf\"} %llu\n",
		(unsigned long long)cum);
	bprintf(&b, "dqbridge_release_lateness_seconds_sum %.9g\n", v->late_sum_s);
	bprintf(&b, "dqbridge_release_lateness_seconds_count %llu\n",
		(unsigned long long)v->late_count);
	*len = b.len;
	return b.p;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn,
				  const char *url, const char *method,
				  const char *version, const char *upload,
				  size_t *upload_size, void **con_cls)
{
	struct metrics *m = cls;
	struct MHD_Response *resp;
	struct mvals v;
	enum MHD_Result ret;
	size_t len;
	char *text;

	(void)version;
	(void)upload;
	(void)upload_size;
	(void)con_cls;
	if (strcmp(method, "GET") && strcmp(method, "HEAD"))
		return MHD_NO;
	if (strcmp(url, "/metrics") && strcmp(url, "/")) {
		static const char nf[] = "not found: try /metrics\n";

		resp = MHD_create_response_from_buffer(sizeof(nf) - 1, (void *)nf,
						       MHD_RESPMEM_PERSISTENT);
		ret = MHD_queue_response(conn, MHD_HTTP_NOT_FOUND, resp);
		MHD_destroy_response(resp);
		return ret;
	}
	pthread_mutex_lock(&m->lock);
	v = m->v;
	pthread_mutex_unlock(&m->lock);
	text = render(&v, &len);
	if (!text)
		return MHD_NO;
	resp = MHD_create_response_from_buffer(len, text, MHD_RESPMEM_MUST_FREE);
	MHD_add_response_header(resp, "Content-Type", "text/plain; version=0.0.4");
	ret = MHD_queue_response(conn, MHD_HTTP_OK, resp);
	MHD_destroy_response(resp);
	return ret;
}

int metrics_open(const char *listen, const struct log *log, struct metrics **out)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM };
	struct addrinfo *ai = NULL;
	char host[256], *colon;
	struct metrics *m;
	int ret;

	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	m->log = log;
	pthread_mutex_init(&m->lock, NULL);
	*out = m;
	if (!listen || !*listen)
		return 0;
	snprintf(host, sizeof(host), "%s", listen);
	colon = strrchr(host, ':');
	if (!colon) {
		logkv(log, LOG_ERR, "metrics_bad_listen", "listen=%s", listen);
		return -EINVAL;
	}
	*colon = '\0';
	ret = getaddrinfo(host[0] ? host : NULL, colon + 1, &hints, &ai);
	if (ret) {
		logkv(log, LOG_ERR, "metrics_bad_listen", "listen=%s err=\"%s\"",
		      listen, gai_strerror(ret));
		return -EINVAL;
	}
	m->d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD |
				(ai->ai_family == AF_INET6 ? MHD_USE_IPv6 : 0),
				0, NULL, NULL, on_request, m,
				MHD_OPTION_SOCK_ADDR, ai->ai_addr,
				MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)10,
				MHD_OPTION_END);
	freeaddrinfo(ai);
	if (!m->d) {
		logkv(log, LOG_ERR, "metrics_listen_failed", "listen=%s", listen);
		return -EADDRINUSE;
	}
	logkv(log, LOG_INFO, "metrics_listening", "listen=%s", listen);
	return 0;
}

void metrics_close(struct metrics *m)
{
	if (!m)
		return;
	if (m->d)
		MHD_stop_daemon(m->d);
	pthread_mutex_destroy(&m->lock);
	free(m);
}

void metrics_publish(struct metrics *m, const struct mvals *v)
{
	pthread_mutex_lock(&m->lock);
	m->v = *v;
	pthread_mutex_unlock(&m->lock);
}
