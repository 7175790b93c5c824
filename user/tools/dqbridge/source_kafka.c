// SPDX-License-Identifier: LGPL-2.1 OR MIT
/*
 * dqbridge: the Kafka source (source.h), over librdkafka's high-level
 * consumer.
 *
 * A consumer group on one topic (kafka_group, kafka_topic), automatic
 * offset commits and offset stores off: the bridge's ack is the only
 * thing that moves the committed offset.  Kafka commits a position per
 * partition, not single messages, while the bridge acks out of order (a
 * direct delivery may finish before an older diverted one is durable);
 * so each partition keeps the offsets read and not acked, and the commit
 * goes to the lowest of them (or past the last read when none is left).
 * A message id is "topic/partition/offset".
 *
 * Rebalances (a rebalance callback; eager or cooperative, whichever the
 * assignor speaks): a partition is committed only while it is assigned
 * here.  When it is revoked, what was acked is committed at once
 * (synchronously, before it moves) and its read state is dropped: acks
 * that come later for it are not committed, so a member never moves back
 * an offset its new owner committed.  The new owner starts at the last
 * commit, so what was read here and not committed is delivered again
 * there (a duplicate, with the same Idempotency-Key).  A commit the
 * broker refused (typically "group rebalance in progress") is sent again,
 * COMMIT_RETRY_MS later, from poll(): an ack is never left uncommitted
 * because its commit failed.
 *
 * What a rebalance can cost is bounded by two rules:
 *  - Read-ahead counts until the broker took the commit, not until the
 *    ack: at most max_unacked messages read on the assigned partitions
 *    are not covered by a confirmed commit (acked or not); past that the
 *    partitions are paused.  While a group rebalances the broker refuses
 *    commits (the mock cluster for the whole join; Kafka while the new
 *    assignment is being synced, and an old generation's afterwards), so
 *    a member that read on regardless would hand its partition's next
 *    owner everything it read in that window, however long it lasted.
 *  - A member remembers the offsets it settled (acked) that no confirmed
 *    commit covers yet, across a revocation.  The eager protocol revokes
 *    every partition of every member on every rebalance, and most come
 *    straight back: the fetch then restarts at the last commit, and what
 *    this member settled since is acked again at once, not sent again.
 *  So a partition that stays costs nothing, and one that moves costs at
 *  most what its old owner read and had not committed: max_unacked.
 *
 * Dead letters: a producer (acks=all, idempotent) on kafka_deadletter_topic,
 * the original payload as value, id/reason/attempts as headers; 0 only
 * once the broker acknowledged it.
 *
 * Tests: kafka_mock_brokers > 0 makes librdkafka start its mock cluster
 * (test.mock.num.brokers) inside this process, for a test that has no
 * broker; user/tests/dqbridge_kafka_test.sh instead starts a mock cluster
 * in a helper process and passes its bootstrap address.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <librdkafka/rdkafka.h>

#include "config.h"
#include "log.h"
#include "source.h"

#define COMMIT_RETRY_MS 200

/* One partition's commit state; only an assigned one commits. */
struct part {
	int32_t partition;
	int owned;		/* assigned to this member now */
	int64_t next;		/* one past the highest offset read; -1: none */
	int64_t committed;	/* last commit sent (or in flight) */
	int64_t confirmed;	/* last commit the broker took */
	uint64_t retry_ns;	/* after a refused commit: not before this */
	int64_t *open;		/* offsets read, not acked (unsorted) */
	unsigned int nopen, capopen;
	/* Offsets acked here that no confirmed commit covers (unsorted);
	 * kept across a revocation: re-read, they are acked, not handed out. */
	int64_t *done;
	unsigned int ndone, capdone;
	int64_t first;		/* first offset read since assigned; -1: none */
};

struct source {
	const struct config *c;
	const struct log *log;
	rd_kafka_t *rk;		/* consumer */
	rd_kafka_t *dlq;	/* producer for dead letters */
	rd_kafka_topic_t *dlq_topic;
	struct part *parts;
	unsigned int nparts;
	int paused;		/* the bridge's back-pressure */
	int full;		/* max_unacked read and not committed */
	int holding;		/* the assigned partitions are paused */
	/* Messages a poll with max 0 (paused) returned anyway: handed out
	 * first by the next poll that may take them. */
	rd_kafka_message_t **stash;
	unsigned int nstash, capstash;
	int dlq_done, dlq_err;	/* the last dead letter's delivery report */
};

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static struct part *part_find(struct source *s, int32_t partition)
{
	unsigned int i;

	for (i = 0; i < s->nparts; i++)
		if (s->parts[i].partition == partition)
			return &s->parts[i];
	return NULL;
}

/* A partition's read state, fresh (nothing read, nothing committed);
 * the offsets settled here (done) stay. */
static void part_reset(struct part *p)
{
	p->next = -1;
	p->committed = -1;
	p->confirmed = -1;
	p->retry_ns = 0;
	p->nopen = 0;
	p->first = -1;
}

static int off_add(int64_t **v, unsigned int *n, unsigned int *cap, int64_t off)
{
	unsigned int k;

	for (k = 0; k < *n; k++)
		if ((*v)[k] == off)
			return 0;
	if (*n == *cap) {
		unsigned int c = *cap ? 2 * *cap : 64;
		int64_t *nv = realloc(*v, c * sizeof(*nv));

		if (!nv)
			return -ENOMEM;
		*v = nv;
		*cap = c;
	}
	(*v)[(*n)++] = off;
	return 0;
}

static int off_has(const int64_t *v, unsigned int n, int64_t off)
{
	unsigned int k;

	for (k = 0; k < n; k++)
		if (v[k] == off)
			return 1;
	return 0;
}

/* Forget the settled offsets below @off (committed, or never read again). */
static void done_prune(struct part *p, int64_t off)
{
	unsigned int k = 0, i;

	for (i = 0; i < p->ndone; i++)
		if (p->done[i] >= off)
			p->done[k++] = p->done[i];
	p->ndone = k;
}

/*
 * Messages read on the assigned partitions that no confirmed commit
 * covers: the unacked ones and the acked ones read since the assignment.
 * Settled offsets not read again yet (at or past next) do not count: they
 * are skipped when read, and counting them could stop the very reads
 * that let their commit advance.
 */
static unsigned int uncommitted(const struct source *s)
{
	unsigned int i, k, n = 0;

	for (i = 0; i < s->nparts; i++) {
		const struct part *p = &s->parts[i];

		if (!p->owned)
			continue;
		n += p->nopen;
		if (p->first < 0)
			continue;
		for (k = 0; k < p->ndone; k++)
			if (p->done[k] >= p->first && p->done[k] < p->next)
				n++;
	}
	return n;
}

static struct part *part_get(struct source *s, int32_t partition)
{
	struct part *p = part_find(s, partition);

	if (p)
		return p;
	p = realloc(s->parts, (s->nparts + 1) * sizeof(*p));
	if (!p)
		return NULL;
	s->parts = p;
	p = &s->parts[s->nparts++];
	memset(p, 0, sizeof(*p));
	p->partition = partition;
	part_reset(p);
	return p;
}

/* Everything below the returned offset is acked; -1: nothing read. */
static int64_t part_low(const struct part *p)
{
	int64_t low = p->next;
	unsigned int k;

	for (k = 0; k < p->nopen; k++)
		if (p->open[k] < low)
			low = p->open[k];
	return low;
}

/*
 * Commit every assigned partition whose acked prefix grew (or whose last
 * commit was refused and is due again).  @sync: wait for the broker (a
 * revocation: the partition is about to move).  @only: just these
 * partitions (NULL: all).
 */
static int commit_acked(struct source *s, int sync,
			const rd_kafka_topic_partition_list_t *only)
{
	rd_kafka_topic_partition_list_t *list;
	rd_kafka_resp_err_t err;
	uint64_t now = mono_ns();
	unsigned int i;
	int ret = 0;

	list = rd_kafka_topic_partition_list_new((int)s->nparts);
	for (i = 0; i < s->nparts; i++) {
		struct part *p = &s->parts[i];
		int64_t low = part_low(p);

		if (!p->owned || low < 0 || low <= p->committed ||
		    (!sync && now < p->retry_ns))
			continue;
		if (only && !rd_kafka_topic_partition_list_find(only, s->c->kafka_topic,
								p->partition))
			continue;
		rd_kafka_topic_partition_list_add(list, s->c->kafka_topic,
						  p->partition)->offset = low;
		p->committed = low;
	}
	if (list->cnt) {
		/* Async: the outcome comes to on_commit(); sync: it is
		 * also in @list (on_commit() runs too). */
		err = rd_kafka_commit(s->rk, list, !sync);
		if (err) {
			logkv(s->log, LOG_WARN, "kafka_commit_failed", "err=\"%s\"",
			      rd_kafka_err2str(err));
			for (i = 0; i < (unsigned int)list->cnt; i++) {
				struct part *p = part_find(s, list->elems[i].partition);

				if (p && p->committed == list->elems[i].offset) {
					p->committed = p->confirmed;
					p->retry_ns = now + COMMIT_RETRY_MS * 1000000ULL;
				}
			}
			ret = -EIO;
		}
	}
	rd_kafka_topic_partition_list_destroy(list);
	return ret;
}

/* A commit's outcome, per partition (served by rd_kafka_consumer_poll). */
static void on_commit(rd_kafka_t *rk, rd_kafka_resp_err_t err,
		      rd_kafka_topic_partition_list_t *offsets, void *opaque)
{
	struct source *s = opaque;
	uint64_t now = mono_ns();
	int i;

	(void)rk;
	if (!offsets)
		return;
	for (i = 0; i < offsets->cnt; i++) {
		rd_kafka_topic_partition_t *e = &offsets->elems[i];
		struct part *p = part_find(s, e->partition);

		if (!p || e->offset < 0)
			continue;
		if (!err && !e->err) {
			if (e->offset > p->confirmed)
				p->confirmed = e->offset;
			done_prune(p, e->offset);
			continue;
		}
		/* Refused: send it again later, unless a newer one went. */
		if (p->committed == e->offset) {
			p->committed = p->confirmed;
			p->retry_ns = now + COMMIT_RETRY_MS * 1000000ULL;
		}
		logkv(s->log, LOG_INFO, "kafka_commit_refused",
		      "partition=%d offset=%lld err=\"%s\" note=\"sent again\"",
		      (int)e->partition, (long long)e->offset,
		      rd_kafka_err2str(e->err ? e->err : err));
	}
}

static void stash_drop(struct source *s, const rd_kafka_topic_partition_list_t *parts)
{
	unsigned int i, k = 0;

	for (i = 0; i < s->nstash; i++) {
		rd_kafka_message_t *m = s->stash[i];

		if (!parts || rd_kafka_topic_partition_list_find(parts,
				rd_kafka_topic_name(m->rkt), m->partition))
			rd_kafka_message_destroy(m);
		else
			s->stash[k++] = m;
	}
	s->nstash = k;
}

static void on_rebalance(rd_kafka_t *rk, rd_kafka_resp_err_t err,
			 rd_kafka_topic_partition_list_t *parts, void *opaque)
{
	struct source *s = opaque;
	int coop = !strcmp(rd_kafka_rebalance_protocol(rk), "COOPERATIVE");
	rd_kafka_resp_err_t eager_err = RD_KAFKA_RESP_ERR_NO_ERROR;
	rd_kafka_error_t *e = NULL;
	int i;

	if (err == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS) {
		for (i = 0; i < parts->cnt; i++) {
			struct part *p = part_get(s, parts->elems[i].partition);

			if (p) {
				part_reset(p);
				p->owned = 1;
			}
		}
		if (coop)
			e = rd_kafka_incremental_assign(rk, parts);
		else
			eager_err = rd_kafka_assign(rk, parts);
		/* Back-pressure holds for partitions that arrive too
		 * (poll() resumes them when it no longer applies).  Either
		 * way explicitly: a partition's pause outlives its
		 * revocation in librdkafka, and a resume while nothing was
		 * assigned reached no partition. */
		if (s->holding)
			rd_kafka_pause_partitions(rk, parts);
		else
			rd_kafka_resume_partitions(rk, parts);
	} else {
		/* Commit what was acked before the partitions move, then
		 * forget what was read: later acks for them are not this
		 * member's to commit (they are remembered in done). */
		commit_acked(s, 1, parts);
		for (i = 0; i < parts->cnt; i++) {
			struct part *p = part_find(s, parts->elems[i].partition);

			if (p) {
				part_reset(p);
				p->owned = 0;
			}
		}
		stash_drop(s, parts);
		if (coop)
			e = rd_kafka_incremental_unassign(rk, parts);
		else
			eager_err = rd_kafka_assign(rk, NULL);
	}
	logkv(s->log, LOG_INFO, err == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS ?
	      "kafka_assigned" : "kafka_revoked", "partitions=%d protocol=%s",
	      parts->cnt, coop ? "cooperative" : "eager");
	if (e) {
		logkv(s->log, LOG_WARN, "kafka_rebalance_failed", "err=\"%s\"",
		      rd_kafka_error_string(e));
		rd_kafka_error_destroy(e);
	}
	if (eager_err)
		logkv(s->log, LOG_WARN, "kafka_rebalance_failed", "err=\"%s\"",
		      rd_kafka_err2str(eager_err));
}

static void on_dlq_report(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque)
{
	struct source *s = opaque;

	(void)rk;
	s->dlq_done = 1;
	s->dlq_err = m->err;
}

static int set(rd_kafka_conf_t *conf, const char *k, const char *v,
	       const struct log *log)
{
	char err[256];

	if (rd_kafka_conf_set(conf, k, v, err, sizeof(err)) == RD_KAFKA_CONF_OK)
		return 0;
	logkv(log, LOG_ERR, "kafka_config", "key=%s err=\"%s\"", k, err);
	return -EINVAL;
}

static int common_conf(const struct config *c, const struct log *log,
		       rd_kafka_conf_t *conf)
{
	char n[16];

	if (c->kafka_mock_brokers) {
		snprintf(n, sizeof(n), "%u", c->kafka_mock_brokers);
		return set(conf, "test.mock.num.brokers", n, log);
	}
	if (!c->kafka_brokers[0]) {
		logkv(log, LOG_ERR, "kafka_config", "err=\"kafka_brokers is required\"");
		return -EINVAL;
	}
	return set(conf, "bootstrap.servers", c->kafka_brokers, log);
}

static int srck_open(const struct config *c, const struct log *log,
		     struct source **out)
{
	rd_kafka_topic_partition_list_t *topics;
	rd_kafka_conf_t *conf, *pconf;
	struct source *s;
	char err[256], sto[16], hb[16];
	int ret = -EINVAL;

	if (!c->kafka_topic[0]) {
		logkv(log, LOG_ERR, "kafka_config", "err=\"kafka_topic is required\"");
		return -EINVAL;
	}
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->c = c;
	s->log = log;
	snprintf(sto, sizeof(sto), "%u", c->kafka_session_timeout_ms);
	snprintf(hb, sizeof(hb), "%u", c->kafka_session_timeout_ms / 3 ? c->kafka_session_timeout_ms / 3 : 1);
	conf = rd_kafka_conf_new();
	if (common_conf(c, log, conf) ||
	    set(conf, "group.id", c->kafka_group, log) ||
	    set(conf, "client.id", c->redis_consumer, log) ||
	    set(conf, "enable.auto.commit", "false", log) ||
	    set(conf, "enable.auto.offset.store", "false", log) ||
	    set(conf, "auto.offset.reset", "earliest", log) ||
	    set(conf, "session.timeout.ms", sto, log) ||
	    set(conf, "heartbeat.interval.ms", hb, log) ||
	    (c->kafka_instance_id[0] &&
	     set(conf, "group.instance.id", c->kafka_instance_id, log))) {
		rd_kafka_conf_destroy(conf);
		goto fail;
	}
	rd_kafka_conf_set_rebalance_cb(conf, on_rebalance);
	rd_kafka_conf_set_offset_commit_cb(conf, on_commit);
	rd_kafka_conf_set_opaque(conf, s);
	s->rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof(err));
	if (!s->rk) {
		logkv(log, LOG_ERR, "kafka_open_failed", "err=\"%s\"", err);
		goto fail;
	}
	rd_kafka_poll_set_consumer(s->rk);
	topics = rd_kafka_topic_partition_list_new(1);
	rd_kafka_topic_partition_list_add(topics, c->kafka_topic, RD_KAFKA_PARTITION_UA);
	if (rd_kafka_subscribe(s->rk, topics)) {
		logkv(log, LOG_ERR, "kafka_subscribe_failed", "topic=%s", c->kafka_topic);
		rd_kafka_topic_partition_list_destroy(topics);
		goto fail;
	}
	rd_kafka_topic_partition_list_destroy(topics);

	pconf = rd_kafka_conf_new();
	if (common_conf(c, log, pconf) ||
	    set(pconf, "acks", "all", log) ||
	    set(pconf, "enable.idempotence", "true", log)) {
		rd_kafka_conf_destroy(pconf);
		goto fail;
	}
	rd_kafka_conf_set_dr_msg_cb(pconf, on_dlq_report);
	rd_kafka_conf_set_opaque(pconf, s);
	s->dlq = rd_kafka_new(RD_KAFKA_PRODUCER, pconf, err, sizeof(err));
	if (!s->dlq) {
		logkv(log, LOG_ERR, "kafka_open_failed", "err=\"%s\"", err);
		goto fail;
	}
	s->dlq_topic = rd_kafka_topic_new(s->dlq, c->kafka_deadletter_topic, NULL);
	logkv(log, LOG_INFO, "kafka_subscribed", "topic=%s group=%s brokers=%s",
	      c->kafka_topic, c->kafka_group,
	      c->kafka_mock_brokers ? "mock" : c->kafka_brokers);
	*out = s;
	return 0;
fail:
	if (s->dlq)
		rd_kafka_destroy(s->dlq);
	if (s->rk)
		rd_kafka_destroy(s->rk);
	free(s);
	return ret;
}

static int open_add(struct part *p, int64_t off)
{
	/* Read again while in hand (a rebalance gave the partition back and
	 * the fetch restarted at the last commit): the bridge drops the copy
	 * as a duplicate and acks the offset once, so it is open once. */
	return off_add(&p->open, &p->nopen, &p->capopen, off);
}

/* Keep @m for a poll that may hand it out (a poll with max 0 cannot). */
static void stash_add(struct source *s, rd_kafka_message_t *m)
{
	if (s->nstash == s->capstash) {
		unsigned int cap = s->capstash ? 2 * s->capstash : 16;
		rd_kafka_message_t **n = realloc(s->stash, cap * sizeof(*n));

		if (!n) {
			/* Not handed out, not acked: read again after a
			 * restart or by the partition's next owner. */
			rd_kafka_message_destroy(m);
			return;
		}
		s->stash = n;
		s->capstash = cap;
	}
	s->stash[s->nstash++] = m;
}

static rd_kafka_message_t *next_message(struct source *s, int timeout_ms)
{
	rd_kafka_message_t *m;

	if (!s->nstash)
		return rd_kafka_consumer_poll(s->rk, timeout_ms);
	m = s->stash[0];
	memmove(s->stash, s->stash + 1, --s->nstash * sizeof(*s->stash));
	return m;
}

static void pause_all(struct source *s, int pause)
{
	rd_kafka_topic_partition_list_t *a = NULL;

	if (rd_kafka_assignment(s->rk, &a) || !a)
		return;
	if (pause)
		rd_kafka_pause_partitions(s->rk, a);
	else
		rd_kafka_resume_partitions(s->rk, a);
	rd_kafka_topic_partition_list_destroy(a);
}

/* Fetch while neither back-pressure nor the read-ahead bound holds. */
static void hold_update(struct source *s)
{
	int want = s->paused || s->full;

	if (want == s->holding)
		return;
	s->holding = want;
	pause_all(s, want);
}

static int srck_poll(struct source *s, struct src_msg *out, unsigned int max,
		     int timeout_ms)
{
	rd_kafka_message_t *m;
	unsigned int n = 0, took = 0, unc, room;
	char id[SRC_ID_MAX + 1];

	rd_kafka_poll(s->dlq, 0);
	/* Commits the broker refused, due again. */
	commit_acked(s, 0, NULL);
	unc = uncommitted(s);
	room = unc < s->c->max_unacked ? s->c->max_unacked - unc : 0;
	s->full = !room;
	hold_update(s);
	if (max > room)
		max = room;
	if (!max || s->paused) {
		/* Serve the group protocol: rebalances, commit results and
		 * max.poll.interval.ms.  The assigned partitions are paused;
		 * a message fetched before the pause may still come. */
		m = rd_kafka_consumer_poll(s->rk, 0);
		if (m && !m->err)
			stash_add(s, m);
		else if (m)
			rd_kafka_message_destroy(m);
		return 0;
	}
	/* A settled offset read again takes room too (see uncommitted()). */
	while (n < max && took < room) {
		struct part *p;

		m = next_message(s, took ? 0 : timeout_ms);
		if (!m)
			break;
		if (m->err) {
			if (m->err != RD_KAFKA_RESP_ERR__PARTITION_EOF)
				logkv(s->log, LOG_WARN, "kafka_error", "err=\"%s\"",
				      rd_kafka_message_errstr(m));
			rd_kafka_message_destroy(m);
			continue;
		}
		p = part_find(s, m->partition);
		if (!p || !p->owned) {
			/* Revoked since it was fetched: its new owner reads it. */
			rd_kafka_message_destroy(m);
			continue;
		}
		took++;
		if (p->first < 0) {
			/* The fetch goes forward from here: settled offsets
			 * below it are not read again. */
			p->first = m->offset;
			done_prune(p, m->offset);
		}
		snprintf(id, sizeof(id), "%s/%" PRId32 "/%" PRId64,
			 rd_kafka_topic_name(m->rkt), m->partition, m->offset);
		if (off_has(p->done, p->ndone, m->offset)) {
			/* Settled here before a revocation whose commit the
			 * broker refused (the eager protocol gave the
			 * partition back): acked again, not sent again. */
			logkv(s->log, LOG_DEBUG, "kafka_settled_reread", "id=%s", id);
			if (m->offset + 1 > p->next)
				p->next = m->offset + 1;
			rd_kafka_message_destroy(m);
			continue;
		}
		out[n].id = strdup(id);
		out[n].len = m->len;
		out[n].body = malloc(m->len ? m->len : 1);
		if (!out[n].id || !out[n].body || open_add(p, m->offset)) {
			src_msg_free(&out[n]);
			rd_kafka_message_destroy(m);
			return n ? (int)n : -ENOMEM;
		}
		if (m->len)
			memcpy(out[n].body, m->payload, m->len);
		if (m->offset + 1 > p->next)
			p->next = m->offset + 1;
		rd_kafka_message_destroy(m);
		n++;
	}
	return (int)n;
}

static int parse_id(const char *id, int32_t *partition, int64_t *offset)
{
	const char *slash2 = strrchr(id, '/'), *slash1;

	if (!slash2 || slash2 == id)
		return -EINVAL;
	for (slash1 = slash2 - 1; slash1 > id && *slash1 != '/'; slash1--)
		;
	if (*slash1 != '/')
		return -EINVAL;
	*partition = (int32_t)strtol(slash1 + 1, NULL, 10);
	*offset = strtoll(slash2 + 1, NULL, 10);
	return 0;
}

static int srck_ack(struct source *s, char *const *ids, unsigned int n)
{
	unsigned int i, k;

	for (i = 0; i < n; i++) {
		int32_t partition;
		int64_t off;
		struct part *p;

		if (parse_id(ids[i], &partition, &off))
			continue;
		p = part_find(s, partition);
		if (!p)
			continue;
		/* Settled: not handed out again if read again (a failed
		 * allocation only costs that duplicate). */
		if (off >= p->confirmed)
			off_add(&p->done, &p->ndone, &p->capdone, off);
		/* Not assigned here any more: not this member's to commit. */
		if (!p->owned)
			continue;
		for (k = 0; k < p->nopen; k++)
			if (p->open[k] == off) {
				p->open[k] = p->open[--p->nopen];
				break;
			}
	}
	return commit_acked(s, 0, NULL);
}

static int srck_dead_letter(struct source *s, const char *id, const void *body,
			    size_t len, const char *reason, unsigned int attempts)
{
	char att[16];
	rd_kafka_resp_err_t err;
	int i;

	snprintf(att, sizeof(att), "%u", attempts);
	s->dlq_done = 0;
	err = rd_kafka_producev(s->dlq,
				RD_KAFKA_V_RKT(s->dlq_topic),
				RD_KAFKA_V_KEY(id, strlen(id)),
				RD_KAFKA_V_VALUE((void *)body, len),
				RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
				RD_KAFKA_V_HEADER("id", id, -1),
				RD_KAFKA_V_HEADER("reason", reason, -1),
				RD_KAFKA_V_HEADER("attempts", att, -1),
				RD_KAFKA_V_END);
	if (err) {
		logkv(s->log, LOG_ERR, "kafka_dlq_failed", "err=\"%s\"", rd_kafka_err2str(err));
		return -EIO;
	}
	/* Wait for the broker's answer: a dead letter counts once stored. */
	for (i = 0; i < 50 && !s->dlq_done; i++)
		rd_kafka_poll(s->dlq, 100);
	if (!s->dlq_done)
		return -ETIME;
	if (s->dlq_err) {
		logkv(s->log, LOG_ERR, "kafka_dlq_failed", "err=\"%s\"",
		      rd_kafka_err2str(s->dlq_err));
		return -EIO;
	}
	return 0;
}

static void srck_pause(struct source *s)
{
	s->paused = 1;
	hold_update(s);
}

static void srck_resume(struct source *s)
{
	s->paused = 0;
	hold_update(s);
}

static void srck_close(struct source *s)
{
	unsigned int i;

	if (!s)
		return;
	/* The revocation in here commits what was acked. */
	rd_kafka_consumer_close(s->rk);
	stash_drop(s, NULL);
	free(s->stash);
	rd_kafka_destroy(s->rk);
	rd_kafka_flush(s->dlq, 5000);
	rd_kafka_topic_destroy(s->dlq_topic);
	rd_kafka_destroy(s->dlq);
	for (i = 0; i < s->nparts; i++) {
		free(s->parts[i].open);
		free(s->parts[i].done);
	}
	free(s->parts);
	free(s);
}

const struct source_ops kafka_source_ops = {
	.name = "kafka",
	.open = srck_open,
	.poll = srck_poll,
	.ack = srck_ack,
	.dead_letter = srck_dead_letter,
	.pause = srck_pause,
	.resume = srck_resume,
	.close = srck_close,
};
