// SPDX-License-Identifier: LGPL-2.1 OR MIT
/*
 * zset_bridge: the seeds' "design 1" built as a bridge, the peer dqbridge
 * is measured against (issue 35, item 2; bench/bridge_peer.sh).
 *
 * Same source and downstream as dqbridge: a Redis stream read through a
 * consumer group (at start this consumer's own pending entries, then new
 * ones: XREADGROUP ... 0, then >), each message POSTed with its id as
 * Idempotency-Key.  The difference is where a refused message waits:
 *  - 2xx: XACK;
 *  - 429 / 503 (and any other failure): ZADD into a sorted set, scored by
 *    the due time in ms (now + Retry-After seconds, else 1 s), the member
 *    being "<id>\n<payload>"; then XACK (the message is in Redis);
 *  - every 200 ms a poller takes what is due: ZRANGEBYSCORE -inf now
 *    LIMIT 0 1000, then one ZREM of those members, into a local queue
 *    that is POSTed before any new stream entry.
 * It has no rate control of its own: what is due (and what the stream
 * holds) goes out as fast as max_inflight allows; Retry-After alone
 * paces a retry.  A kill -9 loses what the poller had ZREMed and not yet
 * delivered (queued or in flight): that message is neither in the set
 * nor pending in the stream (the design's window; bridge_peer.sh counts
 * it).
 *
 * usage: zset_bridge REDIS_PORT STREAM GROUP CONSUMER URL ZSET MAX_INFLIGHT
 * Runs until SIGTERM/SIGINT; on stderr at exit "delivered=N zadded=N".
 */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <curl/curl.h>
#include <hiredis/hiredis.h>

struct req {
	char *id;		/* stream entry id (the Idempotency-Key) */
	char *body;
	size_t len;
	int from_stream;	/* 1: XACK on success; 0: from the set */
	long retry_after;	/* seconds, -1: none */
	struct curl_slist *hdrs;
	CURL *e;
	struct req *next;	/* the local queue of due retries */
};

struct zb {
	redisContext *rc;
	CURLM *multi;
	const char *stream, *group, *consumer, *url, *zset;
	unsigned int max_inflight, inflight;
	struct req *due_head, **due_tail;	/* ZREMed, not yet sent */
	int own_done;		/* own pending entries read */
	char own_cursor[64];	/* the last own pending entry taken */
	uint64_t delivered, zadded;
};

static volatile sig_atomic_t stop;

static void on_stop(int sig)
{
	(void)sig;
	stop = 1;
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000ULL + ts.tv_nsec / 1000000;
}

static void die(const char *what, const redisContext *rc)
{
	fprintf(stderr, "zset_bridge: %s: %s\n", what, rc && rc->err ? rc->errstr : "");
	exit(2);
}

static size_t on_header(char *buf, size_t size, size_t n, void *arg)
{
	struct req *q = arg;
	size_t len = size * n;

	if (len > 12 && !strncasecmp(buf, "Retry-After:", 12))
		q->retry_after = strtol(buf + 12, NULL, 10);
	return len;
}

static size_t on_body(char *buf, size_t size, size_t n, void *arg)
{
	(void)buf;
	(void)arg;
	return size * n;
}

static void req_free(struct req *q)
{
	curl_slist_free_all(q->hdrs);
	free(q->id);
	free(q->body);
	free(q);
}

/* POST @q (taking it); on a failure to start, it is freed and -EIO. */
static int send_req(struct zb *z, struct req *q)
{
	char hdr[300];

	q->retry_after = -1;
	q->e = curl_easy_init();
	if (!q->e) {
		req_free(q);
		return -EIO;
	}
	snprintf(hdr, sizeof(hdr), "Idempotency-Key: %s", q->id);
	q->hdrs = curl_slist_append(NULL, hdr);
	q->hdrs = curl_slist_append(q->hdrs, "Content-Type: application/octet-stream");
	q->hdrs = curl_slist_append(q->hdrs, "Expect:");
	curl_easy_setopt(q->e, CURLOPT_URL, z->url);
	curl_easy_setopt(q->e, CURLOPT_HTTPHEADER, q->hdrs);
	curl_easy_setopt(q->e, CURLOPT_POSTFIELDS, q->body);
	curl_easy_setopt(q->e, CURLOPT_POSTFIELDSIZE, (long)q->len);
	curl_easy_setopt(q->e, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(q->e, CURLOPT_HEADERDATA, q);
	curl_easy_setopt(q->e, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(q->e, CURLOPT_PRIVATE, q);
	curl_easy_setopt(q->e, CURLOPT_TIMEOUT_MS, 10000L);
	curl_easy_setopt(q->e, CURLOPT_NOSIGNAL, 1L);
	curl_multi_add_handle(z->multi, q->e);
	z->inflight++;
	return 0;
}

static void xack(struct zb *z, const char *id)
{
	redisReply *r = redisCommand(z->rc, "XACK %s %s %s", z->stream, z->group, id);

	if (!r)
		die("XACK", z->rc);
	freeReplyObject(r);
}

/* A finished request: delivered, or into the set due after Retry-After. */
static void on_done(struct zb *z, CURL *e, CURLcode res)
{
	struct req *q;
	long status = 0;
	redisReply *r;
	char *member;
	uint64_t due;

	curl_easy_getinfo(e, CURLINFO_PRIVATE, (char **)&q);
	if (res == CURLE_OK)
		curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &status);
	curl_multi_remove_handle(z->multi, e);
	curl_easy_cleanup(e);
	z->inflight--;
	if (status >= 200 && status < 300) {
		z->delivered++;
		if (q->from_stream)
			xack(z, q->id);
		req_free(q);
		return;
	}
	due = now_ms() + (uint64_t)(q->retry_after >= 0 ? q->retry_after : 1) * 1000ULL;
	member = malloc(strlen(q->id) + 1 + q->len);
	if (!member)
		die("out of memory", NULL);
	memcpy(member, q->id, strlen(q->id));
	member[strlen(q->id)] = '\n';
	memcpy(member + strlen(q->id) + 1, q->body, q->len);
	r = redisCommand(z->rc, "ZADD %s %llu %b", z->zset, (unsigned long long)due,
			 member, strlen(q->id) + 1 + q->len);
	free(member);
	if (!r || r->type == REDIS_REPLY_ERROR)
		die("ZADD", z->rc);
	freeReplyObject(r);
	z->zadded++;
	if (q->from_stream)
		xack(z, q->id);
	req_free(q);
}

/* Entries [[stream, [[id, [field, value, ...]], ...]]] sent; the count. */
static unsigned int send_entries(struct zb *z, const redisReply *r)
{
	const redisReply *arr;
	unsigned int n = 0;
	size_t i, k;

	if (!r || r->type != REDIS_REPLY_ARRAY || r->elements < 1 ||
	    r->element[0]->elements < 2)
		return 0;
	arr = r->element[0]->element[1];
	for (i = 0; i < arr->elements; i++) {
		const redisReply *e = arr->element[i], *f;
		struct req *q;

		n++;
		if (e->elements >= 1 && e->element[0]->type == REDIS_REPLY_STRING)
			snprintf(z->own_cursor, sizeof(z->own_cursor), "%s", e->element[0]->str);
		if (e->elements < 2 || e->element[1]->type != REDIS_REPLY_ARRAY)
			continue;	/* deleted while pending */
		f = e->element[1];
		for (k = 0; k + 1 < f->elements; k += 2)
			if (!strcmp(f->element[k]->str, "payload"))
				break;
		if (k + 1 >= f->elements)
			continue;
		q = calloc(1, sizeof(*q));
		if (!q)
			die("out of memory", NULL);
		q->id = strdup(e->element[0]->str);
		q->len = f->element[k + 1]->len;
		q->body = malloc(q->len + 1);
		if (!q->id || !q->body)
			die("out of memory", NULL);
		memcpy(q->body, f->element[k + 1]->str, q->len);
		q->from_stream = 1;
		send_req(z, q);
	}
	return n;
}

static void read_stream(struct zb *z)
{
	unsigned int room;
	redisReply *r;

	/* Due retries first, then new entries. */
	while (z->due_head && z->inflight < z->max_inflight) {
		struct req *q = z->due_head;

		z->due_head = q->next;
		if (!z->due_head)
			z->due_tail = &z->due_head;
		q->next = NULL;
		send_req(z, q);
	}
	room = z->due_head ? 0 : z->max_inflight - z->inflight;
	if (!room)
		return;
	r = redisCommand(z->rc, "XREADGROUP GROUP %s %s COUNT %u STREAMS %s %s",
			 z->group, z->consumer, room, z->stream,
			 z->own_done ? ">" : z->own_cursor);
	if (!r)
		die("XREADGROUP", z->rc);
	if (r->type == REDIS_REPLY_ERROR) {
		fprintf(stderr, "zset_bridge: XREADGROUP: %s\n", r->str);
		exit(2);
	}
	if (!send_entries(z, r) && !z->own_done)
		z->own_done = 1;	/* no own pending entry left */
	freeReplyObject(r);
}

/* The poller: what is due, out of the set into the local queue. */
static void poll_set(struct zb *z)
{
	redisReply *r, *d;
	const char **argv;
	size_t *lens, i;

	r = redisCommand(z->rc, "ZRANGEBYSCORE %s -inf %llu LIMIT 0 1000", z->zset,
			 (unsigned long long)now_ms());
	if (!r || r->type != REDIS_REPLY_ARRAY)
		die("ZRANGEBYSCORE", z->rc);
	if (!r->elements) {
		freeReplyObject(r);
		return;
	}
	argv = calloc(r->elements + 2, sizeof(*argv));
	lens = calloc(r->elements + 2, sizeof(*lens));
	if (!argv || !lens)
		die("out of memory", NULL);
	argv[0] = "ZREM";
	lens[0] = 4;
	argv[1] = z->zset;
	lens[1] = strlen(z->zset);
	for (i = 0; i < r->elements; i++) {
		argv[i + 2] = r->element[i]->str;
		lens[i + 2] = r->element[i]->len;
	}
	d = redisCommandArgv(z->rc, (int)r->elements + 2, argv, lens);
	if (!d)
		die("ZREM", z->rc);
	freeReplyObject(d);
	for (i = 0; i < r->elements; i++) {
		const char *m = r->element[i]->str, *nl;
		struct req *q;

		nl = memchr(m, '\n', r->element[i]->len);
		if (!nl)
			continue;
		q = calloc(1, sizeof(*q));
		if (!q)
			die("out of memory", NULL);
		q->id = strndup(m, (size_t)(nl - m));
		q->len = r->element[i]->len - (size_t)(nl - m) - 1;
		q->body = malloc(q->len + 1);
		if (!q->id || !q->body)
			die("out of memory", NULL);
		memcpy(q->body, nl + 1, q->len);
		*z->due_tail = q;
		z->due_tail = &q->next;
	}
	free(argv);
	free(lens);
	freeReplyObject(r);
}

int main(int argc, char **argv)
{
	struct zb z = { 0 };
	uint64_t next_poll = 0;
	CURLMsg *m;
	int left;

	if (argc != 8) {
		fprintf(stderr, "usage: zset_bridge REDIS_PORT STREAM GROUP CONSUMER URL ZSET MAX_INFLIGHT\n");
		return 1;
	}
	z.stream = argv[2];
	z.group = argv[3];
	z.consumer = argv[4];
	z.url = argv[5];
	z.zset = argv[6];
	z.max_inflight = (unsigned int)strtoul(argv[7], NULL, 10);
	strcpy(z.own_cursor, "0");
	z.due_tail = &z.due_head;
	if (!z.max_inflight)
		z.max_inflight = 1;
	signal(SIGTERM, on_stop);
	signal(SIGINT, on_stop);
	z.rc = redisConnect("127.0.0.1", atoi(argv[1]));
	if (!z.rc || z.rc->err)
		die("connect", z.rc);
	freeReplyObject(redisCommand(z.rc, "XGROUP CREATE %s %s 0 MKSTREAM", z.stream, z.group));
	curl_global_init(CURL_GLOBAL_DEFAULT);
	z.multi = curl_multi_init();
	curl_multi_setopt(z.multi, CURLMOPT_MAX_HOST_CONNECTIONS, (long)z.max_inflight);
	while (!stop) {
		uint64_t t = now_ms();

		if (t >= next_poll) {
			next_poll = t + 200;
			poll_set(&z);
		}
		read_stream(&z);
		curl_multi_perform(z.multi, &left);
		while ((m = curl_multi_info_read(z.multi, &left)))
			if (m->msg == CURLMSG_DONE)
				on_done(&z, m->easy_handle, m->data.result);
		/* Sleep on the transfers; 10 ms bounds the stream's polling. */
		curl_multi_poll(z.multi, NULL, 0, 10, NULL);
		curl_multi_perform(z.multi, &left);
		while ((m = curl_multi_info_read(z.multi, &left)))
			if (m->msg == CURLMSG_DONE)
				on_done(&z, m->easy_handle, m->data.result);
	}
	fprintf(stderr, "delivered=%llu zadded=%llu\n", (unsigned long long)z.delivered,
		(unsigned long long)z.zadded);
	curl_multi_cleanup(z.multi);
	redisFree(z.rc);
	curl_global_cleanup();
	return 0;
}
