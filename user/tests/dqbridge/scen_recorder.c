// SPDX-License-Identifier: LGPL-2.1 OR MIT
/*
 * The downstream app of dqbridge_scenario.sh, behind nginx (the rate
 * limiter): a recorder that holds 3000 requests/s on a loaded host, where
 * recorder.py (one Python thread per connection) does not.
 *
 * usage: scen_recorder PORT LOG LATENCY_US
 *
 * Answers every POST 200 after LATENCY_US (a service time, so that
 * requests overlap and the concurrency below means something), and
 * appends one line per request to LOG, flushed at once:
 *     <arrival, unix s> <Idempotency-Key> <sha256 of body, hex> <status> <concurrency>
 * where arrival is when its headers were read and concurrency the number
 * of requests this recorder was serving at that moment, itself included.
 * Runs until SIGTERM/SIGINT.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <microhttpd.h>
#include <openssl/sha.h>

#define BODY_MAX 65536

struct rec {
	FILE *log;
	pthread_mutex_t lock;
	long latency_us;
	int busy;		/* requests being served (under lock) */
	struct MHD_Response *ok;
};

struct req {
	double arrival;
	int conc;
	int counted;		/* still in rec->busy */
	size_t len;
	unsigned char body[BODY_MAX];
};

static double wall(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn,
				  const char *url, const char *method,
				  const char *version, const char *data,
				  size_t *data_size, void **ctx)
{
	struct rec *rec = cls;
	struct req *q = *ctx;
	unsigned char sha[SHA256_DIGEST_LENGTH];
	char hex[2 * SHA256_DIGEST_LENGTH + 1];
	const char *key;
	struct timespec ts;
	enum MHD_Result ret;
	int i;

	(void)url;
	(void)method;
	(void)version;
	if (!q) {
		q = malloc(sizeof(*q));
		if (!q)
			return MHD_NO;
		q->arrival = wall();
		q->len = 0;
		q->counted = 1;
		pthread_mutex_lock(&rec->lock);
		q->conc = ++rec->busy;
		pthread_mutex_unlock(&rec->lock);
		*ctx = q;
		return MHD_YES;
	}
	if (*data_size) {
		size_t n = *data_size;

		if (n > BODY_MAX - q->len)
			n = BODY_MAX - q->len;
		memcpy(q->body + q->len, data, n);
		q->len += n;
		*data_size = 0;
		return MHD_YES;
	}
	SHA256(q->body, q->len, sha);
	for (i = 0; i < SHA256_DIGEST_LENGTH; i++)
		snprintf(hex + 2 * i, 3, "%02x", sha[i]);
	key = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Idempotency-Key");
	if (rec->latency_us > 0) {
		ts.tv_sec = rec->latency_us / 1000000;
		ts.tv_nsec = rec->latency_us % 1000000 * 1000;
		while (nanosleep(&ts, &ts) && errno == EINTR)
			;
	}
	pthread_mutex_lock(&rec->lock);
	fprintf(rec->log, "%.6f %s %s 200 %d\n", q->arrival, key ? key : "-", hex,
		q->conc);
	fflush(rec->log);
	rec->busy--;
	q->counted = 0;
	pthread_mutex_unlock(&rec->lock);
	ret = MHD_queue_response(conn, MHD_HTTP_OK, rec->ok);
	return ret;
}

static void on_done(void *cls, struct MHD_Connection *conn, void **ctx,
		    enum MHD_RequestTerminationCode why)
{
	struct rec *rec = cls;
	struct req *q = *ctx;

	(void)conn;
	if (!q)
		return;
	(void)why;
	/* A request cut off before its answer was not counted down. */
	if (q->counted) {
		pthread_mutex_lock(&rec->lock);
		rec->busy--;
		pthread_mutex_unlock(&rec->lock);
	}
	free(q);
	*ctx = NULL;
}

int main(int argc, char **argv)
{
	struct rec rec = { .lock = PTHREAD_MUTEX_INITIALIZER };
	struct MHD_Daemon *d;
	sigset_t set;
	int sig;

	if (argc < 4) {
		fprintf(stderr, "usage: scen_recorder PORT LOG LATENCY_US\n");
		return 1;
	}
	rec.latency_us = atol(argv[3]);
	rec.log = fopen(argv[2], "a");
	if (!rec.log) {
		fprintf(stderr, "scen_recorder: %s: %s\n", argv[2], strerror(errno));
		return 1;
	}
	rec.ok = MHD_create_response_from_buffer(0, "", MHD_RESPMEM_PERSISTENT);
	if (!rec.ok)
		return 1;
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	d = MHD_start_daemon(MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD |
			     MHD_USE_ERROR_LOG,
			     (uint16_t)atoi(argv[1]), NULL, NULL, on_request, &rec,
			     MHD_OPTION_NOTIFY_COMPLETED, on_done, &rec,
			     MHD_OPTION_CONNECTION_LIMIT, 1000U,
			     MHD_OPTION_CONNECTION_TIMEOUT, 60U,
			     MHD_OPTION_END);
	if (!d) {
		fprintf(stderr, "scen_recorder: cannot listen on port %s\n", argv[1]);
		return 1;
	}
	sigwait(&set, &sig);
	MHD_stop_daemon(d);
	MHD_destroy_response(rec.ok);
	fclose(rec.log);
	return 0;
}
