// SPDX-License-Identifier: LGPL-2.1 OR MIT
/*
 * dqbridge: the Redis Streams source (source.h), over hiredis.
 *
 * A consumer group on one stream.  open() creates the group with MKSTREAM
 * (BUSYGROUP, already there, is fine).  poll() reads, in this order:
 *  1. this consumer's own pending entries (XREADGROUP ... 0): what a
 *     previous run under the same consumer name read and never acked
 *     (killed, crashed); done again after every reconnect;
 *  2. every redis_claim_interval_ms, XAUTOCLAIM of entries idle longer
 *     than redis_claim_idle_ms: what a dead member of the group left;
 *  3. new entries (XREADGROUP ... >).
 * Once attached to the bridge's epoll set (attach()), step 3 runs on a
 * second connection, the reader: an XREADGROUP ... BLOCK is left
 * outstanding there and its reply read when the descriptor says so, so
 * that new entries wake the loop and a turn without them costs no round
 * trip to Redis (before, every turn asked, mostly for nothing).  Acks,
 * claims, dead letters and the own pending entries stay on the first
 * connection: a blocked read would hold them up.  pause() unblocks the
 * outstanding read (CLIENT UNBLOCK), so a paused source stops reading;
 * entries Redis had served to it just before are kept here and handed
 * out after resume() (they are pending in the group meanwhile, like any
 * read and not acked).  Attached, acks are pipelined too: an XACK is
 * written and its reply taken before the next command on that
 * connection (rc_command(), the next ack), a loop turn later, when it
 * has long arrived: no turn waits for Redis to answer an ack.  The ids
 * are kept until then and sent again after a reconnect, like any
 * failed ack.  When the reader's next read is only held back (a short
 * read came, the next waits source_read_interval_ms), an ack waits for
 * it instead and goes in the same write, ahead of the XREADGROUP on the
 * reader: one write and one wake-up a read cycle carry both, where the
 * first connection cost a write and a read more (at 300 msg/s the Redis
 * source was a quarter of the bridge's CPU).  Its reply comes first on
 * the reader; an ack so held is sent on the first connection instead
 * when the read will not be sent (pause, no room, close) or the reader
 * goes.
 * The body is the entry's redis_field; an entry without it, or deleted
 * while pending, is dead-lettered / acked here with a log line (it has
 * nothing to deliver).  Acks that fail (Redis gone) are kept and sent
 * again after the reconnect; if the bridge dies first, Redis delivers the
 * entries again and the bridge's dedup (dq keys, Idempotency-Key)
 * absorbs them.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <hiredis/hiredis.h>
#include <sys/epoll.h>

#include "config.h"
#include "ev.h"
#include "log.h"
#include "resp.h"
#include "source.h"

#define ACK_RETRY_MAX	65536	/* ids kept for a later XACK */
#define READ_BLOCK_MS	1000	/* the reader's XREADGROUP ... BLOCK */

enum phase { PH_OWN, PH_NEW };

struct source {
	const struct config *c;
	const struct log *log;
	redisContext *rc;
	enum phase phase;
	char own_cursor[64];	/* last own pending id returned */
	char claim_cursor[64];
	uint64_t next_claim_ns;
	uint64_t next_connect_ns;
	char **retry_ids;	/* acks to send again */
	unsigned int nretry;
	int paused;
	/* The reader (attached only): a second connection with at most one
	 * XREADGROUP BLOCK outstanding; its reply held until handed out. */
	struct ev *ev;
	redisContext *rd;
	long long rd_id;	/* its CLIENT ID, for CLIENT UNBLOCK */
	int rd_out;		/* a read sent, its reply not yet read */
	unsigned int rd_count;	/* its COUNT */
	int rd_unblocked;	/* CLIENT UNBLOCK sent for that read */
	redisReply *rd_reply;	/* a reply with entries not yet handed out */
	size_t rd_idx;		/* the next of them */
	uint64_t rd_next_connect_ns;
	uint64_t rd_next_read_ns;	/* no new read before (a short one came) */
	/* XACKs written and not yet answered, oldest first (attached). */
	struct ackq *aq_head, *aq_tail;
	/* Acks held for the reader's next read, and XACKs written on the
	 * reader not yet answered (their replies come before the read's). */
	struct ackq *stash;
	struct ackq *rq_head, *rq_tail;
	char *xbuf;		/* an XACK's bytes (resp.h), kept between them */
	size_t xcap;
};

struct ackq {
	char **ids;
	unsigned int n;
	struct ackq *next;
};

static void keep_for_retry(struct source *s, char *const *ids, unsigned int n);
static void retry_acks(struct source *s);

static void aq_free(struct ackq *q)
{
	unsigned int i;

	for (i = 0; i < q->n; i++)
		free(q->ids[i]);
	free(q->ids);
	free(q);
}

/* The connection went: what was not answered is sent again later. */
static void aq_fail_all(struct source *s)
{
	struct ackq *q;

	while ((q = s->aq_head)) {
		s->aq_head = q->next;
		keep_for_retry(s, q->ids, q->n);
		aq_free(q);
	}
	s->aq_tail = NULL;
}

/* One XACK reply: the oldest outstanding batch is answered. */
static void aq_answered(struct source *s, redisReply *r)
{
	struct ackq *q = s->aq_head;

	if (!q) {
		freeReplyObject(r);
		return;
	}
	s->aq_head = q->next;
	if (!s->aq_head)
		s->aq_tail = NULL;
	if (r->type == REDIS_REPLY_ERROR) {
		logkv(s->log, LOG_ERR, "redis_xack_failed", "err=\"%s\"", r->str);
		keep_for_retry(s, q->ids, q->n);
	}
	freeReplyObject(r);
	aq_free(q);
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static void drop_conn(struct source *s, const char *why)
{
	if (s->rc) {
		logkv(s->log, LOG_WARN, "redis_disconnected", "err=\"%s\"",
		      s->rc->err ? s->rc->errstr : why);
		redisFree(s->rc);
		s->rc = NULL;
	}
	aq_fail_all(s);
	s->next_connect_ns = mono_ns() + 1000000000ULL;
}

/* Take the replies of pipelined XACKs still due (blocking). 0 or -ENOTCONN. */
static int aq_drain(struct source *s)
{
	void *r;

	while (s->aq_head) {
		if (redisGetReply(s->rc, &r) != REDIS_OK || !r) {
			drop_conn(s, "xack reply");
			return -ENOTCONN;
		}
		aq_answered(s, r);
	}
	return 0;
}

/* redisCommand() on the first connection, after the replies due. */
static redisReply *rc_command(struct source *s, const char *fmt, ...)
{
	va_list ap;
	void *r;

	if (aq_drain(s))
		return NULL;
	va_start(ap, fmt);
	r = redisvCommand(s->rc, fmt, ap);
	va_end(ap);
	return r;
}

static redisReply *rc_command_argv(struct source *s, int argc, const char **argv)
{
	if (aq_drain(s))
		return NULL;
	return redisCommandArgv(s->rc, argc, argv, NULL);
}

static int create_group(struct source *s)
{
	redisReply *r;
	int ret = 0;

	r = rc_command(s, "XGROUP CREATE %s %s %s MKSTREAM",
			 s->c->redis_stream, s->c->redis_group,
			 s->c->redis_start_id);
	if (!r)
		return -ENOTCONN;
	if (r->type == REDIS_REPLY_ERROR && strncmp(r->str, "BUSYGROUP", 9)) {
		logkv(s->log, LOG_ERR, "redis_group_failed", "err=\"%s\"", r->str);
		ret = -EINVAL;
	}
	freeReplyObject(r);
	return ret;
}

/* Connected, or -ENOTCONN (and a log line, once a second at most). */
static int ensure_conn(struct source *s)
{
	struct timeval tv = { 2, 0 };
	int ret;

	if (s->rc)
		return 0;
	if (mono_ns() < s->next_connect_ns)
		return -ENOTCONN;
	s->rc = redisConnectWithTimeout(s->c->redis_host, (int)s->c->redis_port, tv);
	if (!s->rc || s->rc->err) {
		logkv(s->log, LOG_WARN, "redis_connect_failed",
		      "host=%s port=%u err=\"%s\"", s->c->redis_host,
		      s->c->redis_port, s->rc ? s->rc->errstr : "out of memory");
		if (s->rc)
			redisFree(s->rc);
		s->rc = NULL;
		s->next_connect_ns = mono_ns() + 1000000000ULL;
		return -ENOTCONN;
	}
	redisSetTimeout(s->rc, tv);
	ret = create_group(s);
	if (ret) {
		drop_conn(s, "group");
		return ret;
	}
	/* Everything read and not acked before comes back first: that
	 * includes what a reader's reply still holds, so drop that. */
	if (s->rd_reply) {
		freeReplyObject(s->rd_reply);
		s->rd_reply = NULL;
	}
	s->phase = PH_OWN;
	strcpy(s->own_cursor, "0");
	logkv(s->log, LOG_INFO, "redis_connected", "host=%s port=%u stream=%s group=%s consumer=%s",
	      s->c->redis_host, s->c->redis_port, s->c->redis_stream,
	      s->c->redis_group, s->c->redis_consumer);
	return 0;
}

static int srcr_open(const struct config *c, const struct log *log,
		     struct source **out)
{
	struct source *s = calloc(1, sizeof(*s));
	int ret;

	if (!s)
		return -ENOMEM;
	s->c = c;
	s->log = log;
	strcpy(s->claim_cursor, "0-0");
	s->next_claim_ns = mono_ns();
	ret = ensure_conn(s);
	/* A group that cannot be made is a configuration error: fail now.
	 * Redis merely down is not: the source reconnects on its own. */
	if (ret == -EINVAL) {
		free(s);
		return ret;
	}
	*out = s;
	return 0;
}

static int send_acks(struct source *s, char *const *ids, unsigned int n)
{
	const char **argv;
	redisReply *r;
	unsigned int i;
	int ret = 0;

	if (!n)
		return 0;
	argv = malloc((n + 3) * sizeof(*argv));
	if (!argv)
		return -ENOMEM;
	argv[0] = "XACK";
	argv[1] = s->c->redis_stream;
	argv[2] = s->c->redis_group;
	for (i = 0; i < n; i++)
		argv[3 + i] = ids[i];
	r = rc_command_argv(s, (int)n + 3, argv);
	free(argv);
	if (!r) {
		drop_conn(s, "xack");
		return -ENOTCONN;
	}
	if (r->type == REDIS_REPLY_ERROR) {
		logkv(s->log, LOG_ERR, "redis_xack_failed", "err=\"%s\"", r->str);
		ret = -EIO;
	}
	freeReplyObject(r);
	return ret;
}

static void keep_for_retry(struct source *s, char *const *ids, unsigned int n)
{
	unsigned int i;
	char **v;

	if (s->nretry + n > ACK_RETRY_MAX) {
		/* Redis will deliver them again; the dedup absorbs that. */
		logkv(s->log, LOG_WARN, "redis_ack_dropped", "n=%u", n);
		return;
	}
	v = realloc(s->retry_ids, (s->nretry + n) * sizeof(*v));
	if (!v)
		return;
	s->retry_ids = v;
	for (i = 0; i < n; i++) {
		v[s->nretry] = strdup(ids[i]);
		if (v[s->nretry])
			s->nretry++;
	}
}

static void retry_acks(struct source *s)
{
	unsigned int i;

	if (!s->nretry || !s->rc)
		return;
	if (send_acks(s, s->retry_ids, s->nretry))
		return;
	logkv(s->log, LOG_INFO, "redis_acks_resent", "n=%u", s->nretry);
	for (i = 0; i < s->nretry; i++)
		free(s->retry_ids[i]);
	s->nretry = 0;
}

/* XACK @ids in RESP into s->xbuf: its length, or -ENOMEM. */
static ssize_t xack_bytes(struct source *s, char *const *ids, unsigned int n)
{
	const char *head[3] = { "XACK", s->c->redis_stream, s->c->redis_group };

	return resp_command(&s->xbuf, &s->xcap, head, 3, ids, n);
}

/*
 * XACK @ids without waiting for the answer (attached sources): written,
 * the ids kept in the queue of unanswered ones.  Whatever fails, the ids
 * are kept for a later XACK.
 */
static int send_acks_async(struct source *s, char *const *ids, unsigned int n)
{
	struct ackq *q = calloc(1, sizeof(*q));
	unsigned int i;
	int done = 0;
	ssize_t len;

	if (q)
		q->ids = calloc(n, sizeof(*q->ids));
	if (!q || !q->ids)
		goto nomem;
	for (i = 0; i < n; i++) {
		q->ids[i] = strdup(ids[i]);
		if (!q->ids[i])
			goto nomem;
		q->n++;
	}
	len = xack_bytes(s, ids, n);
	if (len < 0 ||
	    redisAppendFormattedCommand(s->rc, s->xbuf, (size_t)len) != REDIS_OK)
		goto nomem;
	/* Queued first: a failed write hands it to the retry list. */
	if (s->aq_tail)
		s->aq_tail->next = q;
	else
		s->aq_head = q;
	s->aq_tail = q;
	while (!done) {
		if (redisBufferWrite(s->rc, &done) != REDIS_OK) {
			drop_conn(s, "xack");
			return -ENOTCONN;
		}
	}
	return 0;
nomem:
	if (q)
		aq_free(q);
	keep_for_retry(s, ids, n);
	return -ENOMEM;
}

/*
 * Hold @ids for the reader's next read when that read is only waiting out
 * source_read_interval_ms (no read outstanding, a short one came): 1, or
 * 0 when they go the usual way.
 */
static int stash_acks(struct source *s, char *const *ids, unsigned int n)
{
	struct ackq *q = s->stash;
	char **v;
	unsigned int i;

	if (!s->ev || !s->rd || s->rd_out || s->paused || !s->rd_next_read_ns ||
	    (q && q->n + n > 4096))
		return 0;
	if (!q) {
		q = calloc(1, sizeof(*q));
		if (!q)
			return 0;
		s->stash = q;
	}
	v = realloc(q->ids, (q->n + n) * sizeof(*v));
	if (!v)
		return 0;
	q->ids = v;
	for (i = 0; i < n; i++) {
		v[q->n] = strdup(ids[i]);
		if (!v[q->n]) {
			/* The rest the usual way: no id is acked twice
			 * nor lost (the held ones go with the read). */
			return i ? (int)i : 0;
		}
		q->n++;
	}
	return (int)n;
}

static int srcr_ack(struct source *s, char *const *ids, unsigned int n)
{
	int ret, held;

	held = stash_acks(s, ids, n);
	if ((unsigned int)held == n)
		return 0;
	ids += held;
	n -= held;
	ret = ensure_conn(s);
	/* The last ack's answer: here by now (a turn ago). */
	if (!ret)
		ret = aq_drain(s);
	if (!ret) {
		retry_acks(s);
		if (s->ev && s->rc)
			return send_acks_async(s, ids, n);
		ret = s->rc ? send_acks(s, ids, n) : -ENOTCONN;
	}
	if (ret)
		keep_for_retry(s, ids, n);
	return ret;
}

static int srcr_dead_letter(struct source *s, const char *id, const void *body,
			    size_t len, const char *reason, unsigned int attempts)
{
	redisReply *r;
	int ret;

	ret = ensure_conn(s);
	if (ret)
		return ret;
	r = rc_command(s, "XADD %s * id %s reason %s attempts %u %s %b",
			 s->c->deadletter_stream, id, reason, attempts,
			 s->c->redis_field, body ? body : "", len);
	if (!r) {
		drop_conn(s, "xadd");
		return -ENOTCONN;
	}
	ret = r->type == REDIS_REPLY_ERROR ? -EIO : 0;
	if (ret)
		logkv(s->log, LOG_ERR, "redis_xadd_failed", "err=\"%s\"", r->str);
	freeReplyObject(r);
	return ret;
}

/*
 * One entry [id, [field, value, ...]] into @m.  Returns 1 (taken), 0
 * (nothing to deliver: deleted, or without the field; handled here) or
 * -ENOMEM.
 */
static int take_entry(struct source *s, const redisReply *e, struct src_msg *m)
{
	const redisReply *id, *f;
	size_t i;

	if (e->type != REDIS_REPLY_ARRAY || e->elements < 2 ||
	    e->element[0]->type != REDIS_REPLY_STRING)
		return 0;
	id = e->element[0];
	f = e->element[1];
	if (f->type != REDIS_REPLY_ARRAY) {
		/* Deleted from the stream while pending: nothing to send. */
		char *ids[1] = { id->str };

		logkv(s->log, LOG_WARN, "redis_entry_deleted", "id=%s", id->str);
		send_acks(s, ids, 1);
		return 0;
	}
	for (i = 0; i + 1 < f->elements; i += 2)
		if (f->element[i]->type == REDIS_REPLY_STRING &&
		    !strcmp(f->element[i]->str, s->c->redis_field))
			break;
	if (i + 1 >= f->elements || id->len > SRC_ID_MAX) {
		char *ids[1] = { id->str };
		const char *why = id->len > SRC_ID_MAX ? "id_too_long" : "no_field";

		logkv(s->log, LOG_WARN, "redis_entry_skipped", "id=%s reason=%s", id->str, why);
		if (!srcr_dead_letter(s, id->str, NULL, 0, why, 0))
			send_acks(s, ids, 1);
		return 0;
	}
	m->id = strdup(id->str);
	m->len = f->element[i + 1]->len;
	m->body = malloc(m->len ? m->len : 1);
	if (!m->id || !m->body) {
		src_msg_free(m);
		return -ENOMEM;
	}
	memcpy(m->body, f->element[i + 1]->str, m->len);
	return 1;
}

/* Entries of an XREADGROUP/XAUTOCLAIM entry array into @out. */
static int take_entries(struct source *s, const redisReply *arr,
			struct src_msg *out, unsigned int max, char *last, size_t lastlen)
{
	unsigned int n = 0;
	size_t i;
	int ret;

	for (i = 0; i < arr->elements && n < max; i++) {
		const redisReply *e = arr->element[i];

		if (e->type == REDIS_REPLY_ARRAY && e->elements >= 1 &&
		    e->element[0]->type == REDIS_REPLY_STRING && last)
			snprintf(last, lastlen, "%s", e->element[0]->str);
		ret = take_entry(s, e, &out[n]);
		if (ret < 0)
			return n ? (int)n : ret;
		n += ret;
	}
	return (int)n;
}

/* XREADGROUP reply: [[stream, [entries]]] or nil. */
static int read_group(struct source *s, const char *from, struct src_msg *out,
		      unsigned int max, int timeout_ms, int *raw)
{
	redisReply *r;
	int ret = 0;

	if (timeout_ms > 0)
		r = rc_command(s, "XREADGROUP GROUP %s %s COUNT %u BLOCK %d STREAMS %s %s",
				 s->c->redis_group, s->c->redis_consumer, max,
				 timeout_ms, s->c->redis_stream, from);
	else
		r = rc_command(s, "XREADGROUP GROUP %s %s COUNT %u STREAMS %s %s",
				 s->c->redis_group, s->c->redis_consumer, max,
				 s->c->redis_stream, from);
	*raw = 0;
	if (!r) {
		drop_conn(s, "xreadgroup");
		return -ENOTCONN;
	}
	if (r->type == REDIS_REPLY_ERROR) {
		logkv(s->log, LOG_ERR, "redis_xreadgroup_failed", "err=\"%s\"", r->str);
		/* NOGROUP: the stream or group was deleted; make it again. */
		if (!strncmp(r->str, "NOGROUP", 7))
			create_group(s);
		ret = -EIO;
	} else if (r->type == REDIS_REPLY_ARRAY && r->elements == 1 &&
		   r->element[0]->type == REDIS_REPLY_ARRAY &&
		   r->element[0]->elements == 2) {
		const redisReply *arr = r->element[0]->element[1];

		*raw = (int)arr->elements;
		ret = take_entries(s, arr, out, max,
				   s->phase == PH_OWN ? s->own_cursor : NULL,
				   sizeof(s->own_cursor));
	}
	freeReplyObject(r);
	return ret;
}

static int autoclaim(struct source *s, struct src_msg *out, unsigned int max)
{
	redisReply *r;
	int ret = 0;

	r = rc_command(s, "XAUTOCLAIM %s %s %s %u %s COUNT %u",
			 s->c->redis_stream, s->c->redis_group,
			 s->c->redis_consumer, s->c->redis_claim_idle_ms,
			 s->claim_cursor, max);
	if (!r) {
		drop_conn(s, "xautoclaim");
		return -ENOTCONN;
	}
	if (r->type == REDIS_REPLY_ARRAY && r->elements >= 2 &&
	    r->element[0]->type == REDIS_REPLY_STRING) {
		snprintf(s->claim_cursor, sizeof(s->claim_cursor), "%s",
			 r->element[0]->str);
		if (r->element[1]->type == REDIS_REPLY_ARRAY)
			ret = take_entries(s, r->element[1], out, max, NULL, 0);
		if (ret > 0)
			logkv(s->log, LOG_INFO, "redis_claimed", "n=%d idle_ms=%u",
			      ret, s->c->redis_claim_idle_ms);
	} else if (r->type == REDIS_REPLY_ERROR) {
		logkv(s->log, LOG_ERR, "redis_xautoclaim_failed", "err=\"%s\"", r->str);
		ret = -EIO;
	}
	/* A full sweep done: the next one starts over after the interval. */
	if (!strcmp(s->claim_cursor, "0-0") || ret < (int)max)
		s->next_claim_ns = mono_ns() +
			(uint64_t)s->c->redis_claim_interval_ms * 1000000ULL;
	freeReplyObject(r);
	return ret;
}


/* ---- the reader (attached sources) ------------------------------------ */

/* The held acks go to the first connection's retry list (sent now). */
static void stash_flush(struct source *s)
{
	struct ackq *q = s->stash;

	if (!q)
		return;
	s->stash = NULL;
	keep_for_retry(s, q->ids, q->n);
	aq_free(q);
	retry_acks(s);
}

static void rd_drop(struct source *s, const char *why)
{
	struct ackq *q;

	if (s->rd) {
		logkv(s->log, LOG_WARN, "redis_reader_disconnected", "err=\"%s\"",
		      s->rd->err ? s->rd->errstr : why);
		ev_unwatch(s->ev, s->rd->fd);
		redisFree(s->rd);
		s->rd = NULL;
	}
	/* Entries of a reply not handed out stay pending in the group:
	 * this consumer reads them again (its own pending) on reconnect. */
	if (s->rd_reply) {
		freeReplyObject(s->rd_reply);
		s->rd_reply = NULL;
		if (s->rc)
			s->phase = PH_OWN, strcpy(s->own_cursor, "0");
	}
	s->rd_out = 0;
	s->rd_unblocked = 0;
	s->rd_next_connect_ns = mono_ns() + 1000000000ULL;
	/* XACKs it carried and not answered, and those held for it: sent
	 * again on the first connection (an XACK twice is harmless). */
	while ((q = s->rq_head)) {
		s->rq_head = q->next;
		keep_for_retry(s, q->ids, q->n);
		aq_free(q);
	}
	s->rq_tail = NULL;
	stash_flush(s);
}

/* The reader's descriptor is readable: take what came (never blocks). */
static void rd_event(void *arg, int fd, uint32_t events)
{
	struct source *s = arg;
	void *reply = NULL;

	(void)fd;
	(void)events;
	if (!s->rd)
		return;
	if (redisBufferRead(s->rd) != REDIS_OK) {
		rd_drop(s, "read");
		return;
	}
	for (;;) {
		if (redisGetReplyFromReader(s->rd, &reply) != REDIS_OK) {
			rd_drop(s, "protocol");
			return;
		}
		if (!reply)
			return;		/* more to come */
		if (!s->rq_head)
			break;
		/* An XACK the read carried: its reply comes first. */
		{
			struct ackq *q = s->rq_head;

			s->rq_head = q->next;
			if (!s->rq_head)
				s->rq_tail = NULL;
			if (((redisReply *)reply)->type == REDIS_REPLY_ERROR) {
				logkv(s->log, LOG_ERR, "redis_xack_failed", "err=\"%s\"",
				      ((redisReply *)reply)->str);
				keep_for_retry(s, q->ids, q->n);
			}
			freeReplyObject(reply);
			reply = NULL;
			aq_free(q);
		}
	}
	s->rd_out = 0;
	s->rd_unblocked = 0;
	if (((redisReply *)reply)->type == REDIS_REPLY_ERROR) {
		logkv(s->log, LOG_ERR, "redis_xreadgroup_failed", "err=\"%s\"",
		      ((redisReply *)reply)->str);
		freeReplyObject(reply);
		/* NOGROUP (stream or group deleted): made again on the
		 * next connect; a second before the next read either way. */
		rd_drop(s, "error reply");
		return;
	}
	s->rd_reply = reply;
	s->rd_idx = 0;
	/* A read that came back with entries but not full: the next one
	 * waits source_read_interval_ms, so that at a low rate one read,
	 * one turn and one XACK carry several messages rather than one
	 * each (a wake-up per message is most of the cost then).  A full
	 * one, or a timeout (nil), is followed at once. */
	{
		const redisReply *r = reply;
		size_t got = 0;

		if (r->type == REDIS_REPLY_ARRAY && r->elements == 1 &&
		    r->element[0]->type == REDIS_REPLY_ARRAY &&
		    r->element[0]->elements == 2)
			got = r->element[0]->element[1]->elements;
		s->rd_next_read_ns = got && got < s->rd_count ?
			mono_ns() + (uint64_t)s->c->source_read_interval_ms * 1000000ULL : 0;
	}
}

static int rd_connect(struct source *s)
{
	struct timeval tv = { 2, 0 };
	redisReply *r;
	int fl;

	if (s->rd)
		return 0;
	if (mono_ns() < s->rd_next_connect_ns)
		return -ENOTCONN;
	s->rd = redisConnectWithTimeout(s->c->redis_host, (int)s->c->redis_port, tv);
	if (!s->rd || s->rd->err) {
		if (s->rd)
			redisFree(s->rd);
		s->rd = NULL;
		s->rd_next_connect_ns = mono_ns() + 1000000000ULL;
		return -ENOTCONN;
	}
	redisSetTimeout(s->rd, tv);
	r = redisCommand(s->rd, "CLIENT ID");
	if (!r || r->type != REDIS_REPLY_INTEGER) {
		if (r)
			freeReplyObject(r);
		rd_drop(s, "client id");
		return -ENOTCONN;
	}
	s->rd_id = r->integer;
	freeReplyObject(r);
	/* From here on the reader never blocks: hiredis treats EAGAIN as
	 * "later" on a context without REDIS_BLOCK (what its non-blocking
	 * connect sets up), and the loop reads only when epoll says so. */
	fl = fcntl(s->rd->fd, F_GETFL);
	if (fl < 0 || fcntl(s->rd->fd, F_SETFL, fl | O_NONBLOCK) < 0) {
		rd_drop(s, "fcntl");
		return -ENOTCONN;
	}
	s->rd->flags &= ~REDIS_BLOCK;
	if (ev_watch(s->ev, s->rd->fd, EPOLLIN, rd_event, s)) {
		rd_drop(s, "epoll");
		return -ENOTCONN;
	}
	return 0;
}

/* Leave an XREADGROUP ... > BLOCK for up to @max entries outstanding. */
static int rd_send(struct source *s, unsigned int max)
{
	char count[16], block[16];
	const char *argv[11];
	int done = 0;

	snprintf(count, sizeof(count), "%u", max);
	snprintf(block, sizeof(block), "%d", READ_BLOCK_MS);
	argv[0] = "XREADGROUP";
	argv[1] = "GROUP";
	argv[2] = s->c->redis_group;
	argv[3] = s->c->redis_consumer;
	argv[4] = "COUNT";
	argv[5] = count;
	argv[6] = "BLOCK";
	argv[7] = block;
	argv[8] = "STREAMS";
	argv[9] = s->c->redis_stream;
	argv[10] = ">";
	if (s->stash && !s->stash->n) {
		aq_free(s->stash);
		s->stash = NULL;
	}
	if (s->stash) {
		struct ackq *q = s->stash;
		ssize_t len = xack_bytes(s, q->ids, q->n);
		int i;

		if (len < 0) {
			stash_flush(s);
		} else {
			i = redisAppendFormattedCommand(s->rd, s->xbuf, (size_t)len) == REDIS_OK;
			if (!i) {
				rd_drop(s, "append");
				return -ENOTCONN;
			}
			/* Written with the read below, or handed back by
			 * rd_drop() if that fails. */
			s->stash = NULL;
			if (s->rq_tail)
				s->rq_tail->next = q;
			else
				s->rq_head = q;
			s->rq_tail = q;
		}
	}
	if (redisAppendCommandArgv(s->rd, 11, argv, NULL) != REDIS_OK) {
		rd_drop(s, "append");
		return -ENOTCONN;
	}
	/* A command of a hundred bytes on an idle connection (and an XACK
	 * of a read cycle's ids): the socket takes it at once (EAGAIN here
	 * would mean a wedged connection). */
	if (redisBufferWrite(s->rd, &done) != REDIS_OK || !done) {
		rd_drop(s, "write");
		return -ENOTCONN;
	}
	s->rd_out = 1;
	s->rd_count = max;
	return 0;
}

/* New entries through the reader: what a reply holds, else a new read. */
static int rd_poll(struct source *s, struct src_msg *out, unsigned int max)
{
	const redisReply *r = s->rd_reply, *arr;
	unsigned int n = 0;
	int ret;

	if (r) {
		if (r->type == REDIS_REPLY_ARRAY && r->elements == 1 &&
		    r->element[0]->type == REDIS_REPLY_ARRAY &&
		    r->element[0]->elements == 2 &&
		    r->element[0]->element[1]->type == REDIS_REPLY_ARRAY) {
			arr = r->element[0]->element[1];
			while (s->rd_idx < arr->elements && n < max) {
				ret = take_entry(s, arr->element[s->rd_idx], &out[n]);
				if (ret < 0)
					return n ? (int)n : ret;
				s->rd_idx++;
				n += ret;
			}
			if (s->rd_idx < arr->elements)
				return (int)n;
		}
		/* All handed out (or nil: the block timed out, unblocked). */
		freeReplyObject(s->rd_reply);
		s->rd_reply = NULL;
	}
	if (!s->rd_out && !s->paused && n < max &&
	    (!s->rd_next_read_ns || mono_ns() >= s->rd_next_read_ns)) {
		ret = rd_connect(s);
		if (!ret)
			ret = rd_send(s, max - n);
		if (ret && !n)
			return ret;
	}
	return (int)n;
}

static int srcr_poll(struct source *s, struct src_msg *out, unsigned int max,
		     int timeout_ms)
{
	int ret, raw;

	if (!max || s->paused) {
		/* The next read waits: the held acks do not. */
		stash_flush(s);
		return 0;
	}
	ret = ensure_conn(s);
	if (ret)
		return ret;
	retry_acks(s);
	if (s->phase == PH_OWN) {
		ret = read_group(s, s->own_cursor, out, max, 0, &raw);
		if (ret < 0)
			return ret;
		if (raw == 0) {
			s->phase = PH_NEW;
		} else {
			if (ret)
				logkv(s->log, LOG_INFO, "redis_own_pending", "n=%d", ret);
			return ret;
		}
	}
	if (mono_ns() >= s->next_claim_ns) {
		ret = autoclaim(s, out, max);
		if (ret)
			return ret;
	}
	if (s->ev)
		return rd_poll(s, out, max);
	return read_group(s, ">", out, max, timeout_ms, &raw);
}

static void srcr_pause(struct source *s)
{
	redisReply *r;

	s->paused = 1;
	stash_flush(s);
	/* The outstanding read would take entries while paused: unblock it
	 * (it answers nil, or what it was served just before). */
	if (s->rd_out && !s->rd_unblocked && s->rc) {
		r = rc_command(s, "CLIENT UNBLOCK %lld", s->rd_id);
		if (!r)
			drop_conn(s, "client unblock");
		else
			freeReplyObject(r);
		s->rd_unblocked = 1;
	}
}

static void srcr_resume(struct source *s)
{
	s->paused = 0;
}

static void srcr_close(struct source *s)
{
	struct ackq *q;
	unsigned int i;

	if (!s)
		return;
	/* Acks held or carried by the reader: on the first connection. */
	while ((q = s->rq_head)) {
		s->rq_head = q->next;
		keep_for_retry(s, q->ids, q->n);
		aq_free(q);
	}
	if (s->stash) {
		keep_for_retry(s, s->stash->ids, s->stash->n);
		aq_free(s->stash);
		s->stash = NULL;
	}
	if (s->rc && !aq_drain(s))
		retry_acks(s);
	if (s->rc)
		redisFree(s->rc);
	aq_fail_all(s);
	if (s->rd)
		ev_unwatch(s->ev, s->rd->fd), redisFree(s->rd);
	if (s->rd_reply)
		freeReplyObject(s->rd_reply);
	for (i = 0; i < s->nretry; i++)
		free(s->retry_ids[i]);
	free(s->retry_ids);
	free(s->xbuf);
	free(s);
}

static int srcr_attach(struct source *s, struct ev *ev)
{
	s->ev = ev;
	return 0;
}

/*
 * An outstanding XREADGROUP ... BLOCK wakes the loop through the reader's
 * descriptor (its entries or its nil after READ_BLOCK_MS): no timer.  A
 * read held back after a short one is due at rd_next_read_ns, a reader
 * to connect again at rd_next_connect_ns; anything else (a reply not all
 * handed out) is polled again after source_read_interval_ms, as before
 * this op existed (0: no timer of the source's, the loop's 50 ms).
 */
static uint64_t srcr_next_poll_ns(const struct source *s, uint64_t now)
{
	if (s->rd && s->rd_out && !s->rd_reply)
		return 0;
	if (s->rd && !s->rd_reply && s->rd_next_read_ns > now)
		return s->rd_next_read_ns;
	if (!s->rd && s->rd_next_connect_ns > now)
		return s->rd_next_connect_ns;
	if (!s->c->source_read_interval_ms)
		return 0;
	return now + (uint64_t)s->c->source_read_interval_ms * 1000000ULL;
}

const struct source_ops redis_source_ops = {
	.name = "redis",
	.open = srcr_open,
	.poll = srcr_poll,
	.ack = srcr_ack,
	.dead_letter = srcr_dead_letter,
	.pause = srcr_pause,
	.resume = srcr_resume,
	.close = srcr_close,
	.attach = srcr_attach,
	.next_poll_ns = srcr_next_poll_ns,
};
