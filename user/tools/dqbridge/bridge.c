// SPDX-License-Identifier: LGPL-2.1 OR MIT
/*
 * dqbridge: the main loop (bridge.h).  One thread does everything but the
 * metrics endpoint, so no message state needs a lock.
 *
 * Every message in hand is a job.  A job from the source owns a copy of
 * the message and is acknowledged at the source only when it was
 * delivered (2xx), is durable in dq (dq_durable_poll() on the mark of its
 * flushed commit said 1, or dq refused the commit because it holds that
 * key already), or was dead-lettered.  A job from dq points into its
 * arena slot and is finished in dq (retired from the journal) on the same
 * three conditions, the durable case being its next copy's (flushed is
 * enough there: flush_puts()).  The loop never blocks for the group
 * commit: the journal's descriptor (dq_durable_fd()) is in its epoll set
 * beside the sockets, so answers are read and requests sent while a
 * diverted batch waits for its fdatasync.
 *
 *   source job:  HAND -> HTTP -> ACK                (delivered)
 *                HAND -> WAIT -> HTTP -> ...        (in-flight cap only)
 *                HAND -> DURABLE -> ACK             (diverted, no try)
 *                HAND -> HTTP -> DURABLE -> ACK     (failed, retry later)
 *                ... -> DEAD -> ACK                 (gave up)
 *   store job:   HTTP -> finish(delivered)
 *                HTTP -> DURABLE (copy, attempts+1) -> finish(failed)
 *                HTTP -> DEAD -> finish(failed)
 * WAIT: nothing stood in the way of a direct send but max_inflight (dq
 * empty, no throttling, a token): the job waits in hand, in read order,
 * for a request to finish rather than taking a round trip through the
 * journal.  A burst of reads past max_inflight used to be committed into
 * dq, and then every later message followed it through dq (nothing may
 * overtake what dq holds) for as long as messages kept coming: the
 * journal's cost, at every rate, for a downstream that never refused.
 * BACKLOG: a commit found no room (-ENOSPC); tried again later, the
 * source paused meanwhile.  DEAD: waiting to be dead-lettered (retried
 * while the dead-letter store is unreachable).
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>

#include "ages.h"
#include "bridge.h"
#include "ev.h"
#include "metrics.h"
#include "policy.h"
#include "sink.h"
#include "source.h"
#include "store.h"

enum jstate { J_HAND, J_HTTP, J_DURABLE, J_BACKLOG, J_DEAD, J_ACK, J_WAIT };
enum jfrom { FROM_SOURCE, FROM_STORE };

struct job {
	int from;		/* enum jfrom */
	int state;		/* enum jstate */
	struct src_msg m;	/* FROM_SOURCE: owned */
	uint32_t slot;		/* FROM_STORE: its dq slot (in flight) */
	const char *id;		/* what is sent: m's or the arena's */
	const void *body;
	size_t len;
	uint16_t attempts;	/* HTTP attempts that failed so far */
	uint64_t key;		/* this copy's dq key (store) / key to use */
	uint64_t first_rt_ms;	/* first diverted (CLOCK_REALTIME ms) */
	/* J_DURABLE: the copy committed */
	uint64_t put_delay_ns;
	uint32_t put_slot;
	int put_err;		/* from the reject hook: 0 or -errno */
	int flushed;
	uint64_t mark;		/* flushed: the journal position to wait for */
	uint64_t retry_ns;	/* J_BACKLOG / J_DEAD: next try */
	uint64_t resend_ns;	/* J_BACKLOG from dq: send again from then */
	char reason[48];	/* J_DEAD */
	struct job *prev, *next;
	struct job *id_next;	/* FROM_SOURCE: its chain in the id table */
};

struct bridge {
	struct config *c;
	const char *config_path;
	int argc;
	char **argv;
	struct log *log;
	const struct source_ops *sops;
	struct source *src;
	struct sink *sink;
	struct store *store;
	struct ages *ages;	/* first diverted, per message held */
	uint64_t next_oldest_ns;
	struct metrics *met;
	struct mvals v;
	struct rate rate;
	uint64_t rng;
	struct job head;	/* circular list of every job */
	/* The source jobs by id, chained: a message read again while in
	 * hand is found without a walk of every job (a strcmp() per job in
	 * hand for each message read was a quarter of the instructions at
	 * 3000 msg/s, Cost lever 12). */
	struct job **ids;
	uint32_t ids_mask;
	unsigned int njobs, nunacked, ndurable, nack, nwait;
	uint64_t held, dq_inflight;
	uint64_t divert_until_ns;	/* new messages go to dq until then */
	int paused, enospc, draining;
	/* Draining: the last release() had room and dq gave less than that,
	 * so nothing held is due now (what is not due stays in the journal). */
	int none_due;
	uint64_t drain_deadline_ns;
	/* Draining: no new release from dq after this, so that what is sent
	 * can still be answered before the deadline (an answer abandoned at
	 * the deadline would be delivered again after the restart). */
	uint64_t drain_release_end_ns;
	int sigfd;
	int sig_ready;		/* the signalfd fired: read it */
	struct ev *ev;		/* every descriptor the loop waits on */
	int dq_watched;		/* store_fd() is in ev with EPOLLIN */
	int unflushed;		/* a put() since the last good flush */
	int durable_moved;	/* the journal's descriptor fired */
	uint64_t now;		/* this turn's clock (CLOCK_MONOTONIC) */
	uint64_t rt_now_ms;	/* this turn's CLOCK_REALTIME ms, 0: not read */
	struct src_msg *batch;
	struct store_msg *reaped;
	uint64_t next_report_ns, next_save_ns;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static uint64_t rt_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000ULL + ts.tv_nsec / 1000000;
}

/* The wall clock, read at most once a turn (first-diverted times). */
static uint64_t turn_rt_ms(struct bridge *b)
{
	if (!b->rt_now_ms)
		b->rt_now_ms = rt_ms();
	return b->rt_now_ms;
}

/* ---- jobs ------------------------------------------------------------ */

/* FNV-1a: ids are short ("<ms>-<seq>", Kafka "<partition>:<offset>"). */
static uint32_t id_hash(const char *id)
{
	uint32_t h = 2166136261U;

	while (*id)
		h = (h ^ (unsigned char)*id++) * 16777619U;
	return h;
}

/* Buckets for the most source jobs in hand (max_unacked), at most 64k:
 * past that the chains grow, the answers stay right. */
static int ids_init(struct bridge *b)
{
	uint32_t n = 64;

	while (n < b->c->max_unacked && n < 65536)
		n <<= 1;
	b->ids = calloc(n, sizeof(*b->ids));
	if (!b->ids)
		return -ENOMEM;
	b->ids_mask = n - 1;
	return 0;
}

static void ids_add(struct bridge *b, struct job *j)
{
	struct job **h = &b->ids[id_hash(j->m.id) & b->ids_mask];

	j->id_next = *h;
	*h = j;
}

static void ids_del(struct bridge *b, struct job *j)
{
	struct job **p = &b->ids[id_hash(j->m.id) & b->ids_mask];

	while (*p && *p != j)
		p = &(*p)->id_next;
	if (*p)
		*p = j->id_next;
}

static struct job *job_new(struct bridge *b, int from)
{
	struct job *j = calloc(1, sizeof(*j));

	if (!j)
		return NULL;
	j->from = from;
	j->next = &b->head;
	j->prev = b->head.prev;
	b->head.prev->next = j;
	b->head.prev = j;
	b->njobs++;
	if (from == FROM_SOURCE)
		b->nunacked++;
	return j;
}

static void job_free(struct bridge *b, struct job *j)
{
	j->prev->next = j->next;
	j->next->prev = j->prev;
	b->njobs--;
	if (j->from == FROM_SOURCE) {
		b->nunacked--;
		ids_del(b, j);
		src_msg_free(&j->m);
	}
	free(j);
}

static void set_state(struct bridge *b, struct job *j, int st)
{
	if (j->state == J_DURABLE)
		b->ndurable--;
	if (j->state == J_ACK)
		b->nack--;
	if (j->state == J_WAIT)
		b->nwait--;
	j->state = st;
	if (st == J_DURABLE)
		b->ndurable++;
	if (st == J_ACK)
		b->nack++;
	if (st == J_WAIT)
		b->nwait++;
}

/* A source job with this id is in hand already (claimed or read twice). */
static int in_hand(struct bridge *b, const char *id)
{
	struct job *j;

	for (j = b->ids[id_hash(id) & b->ids_mask]; j; j = j->id_next)
		if (!strcmp(j->m.id, id))
			return 1;
	return 0;
}

/*
 * The job is settled: delivered, durable elsewhere, or dead-lettered.
 * Source: ack it (batched); store: finish its slot.
 */
static void settle(struct bridge *b, struct job *j, int delivered)
{
	int ret;

	if (j->from == FROM_SOURCE) {
		set_state(b, j, J_ACK);
		return;
	}
	ret = store_finish(b->store, j->slot, delivered);
	if (ret)
		logkv(b->log, LOG_ERR, "dq_finish_failed", "id=%s slot=%u err=%d",
		      j->id, j->slot, ret);
	/* dq's counts are read once a turn (store_counts()); until then
	 * they follow what this turn did. */
	if (b->dq_inflight)
		b->dq_inflight--;
	if (b->held)
		b->held--;
	set_state(b, j, J_HAND);
	job_free(b, j);
}

static void to_dead(struct bridge *b, struct job *j, const char *reason)
{
	snprintf(j->reason, sizeof(j->reason), "%s", reason);
	set_state(b, j, J_DEAD);
	j->retry_ns = 0;
}

static void try_dead(struct bridge *b, struct job *j, uint64_t now)
{
	int ret;

	if (now < j->retry_ns)
		return;
	ret = b->sops->dead_letter(b->src, j->id, j->body, j->len, j->reason,
				   j->attempts);
	if (ret) {
		j->retry_ns = now + 1000000000ULL;
		logkv(b->log, LOG_WARN, "dead_letter_failed", "id=%s err=%d", j->id, ret);
		return;
	}
	b->v.dead_lettered++;
	logkv(b->log, LOG_WARN, "dead_lettered", "id=%s reason=%s attempts=%u",
	      j->id, j->reason, j->attempts);
	if (j->from == FROM_STORE)
		ages_drop(b->ages, j->key);
	settle(b, j, 0);
}

/*
 * Commit a copy of @j into dq, due after @delay_ns, with @attempts.  The
 * job waits in J_DURABLE for the flush and the durable wait.
 */
static void put(struct bridge *b, struct job *j, uint64_t delay_ns)
{
	uint64_t key;
	int ret;

	/* Source messages always take parity 0; a retry of a dq copy the
	 * other parity (policy.h says why). */
	key = j->from == FROM_SOURCE ? policy_key(j->id) : j->key ^ 1;
	if (!j->first_rt_ms)
		j->first_rt_ms = turn_rt_ms(b);
	ret = store_put(b->store, j->id, j->body, j->len, j->attempts, delay_ns,
			key, j->first_rt_ms, &j->put_slot);
	if (ret == -EMSGSIZE) {
		to_dead(b, j, "too_large");
		return;
	}
	if (ret) {
		if (ret == -ENOSPC) {
			b->v.enospc++;
			b->enospc = 1;
		} else {
			logkv(b->log, LOG_ERR, "dq_commit_failed", "id=%s err=%d msg=\"%s\"",
			      j->id, ret, strerror(-ret));
		}
		j->put_delay_ns = delay_ns;
		if (j->state != J_BACKLOG)
			j->resend_ns = b->now + delay_ns;
		set_state(b, j, J_BACKLOG);
		j->retry_ns = b->now + 100000000ULL;
		return;
	}
	b->enospc = 0;
	b->held++;
	j->put_err = 0;
	j->flushed = 0;
	j->put_delay_ns = delay_ns;
	set_state(b, j, J_DURABLE);
	b->unflushed = 1;
	if (j->from == FROM_SOURCE)
		b->v.diverted++;
	else
		b->v.retried++;
	logkv(b->log, LOG_DEBUG, "committed", "id=%s attempts=%u delay_ms=%llu key=%016llx",
	      j->id, j->attempts, (unsigned long long)(delay_ns / 1000000),
	      (unsigned long long)key);
}

/* The reject hook: dq refused the commit on @slot. */
static void on_reject(void *arg, uint32_t slot, uint64_t key, int err)
{
	struct bridge *b = arg;
	struct job *j;

	for (j = b->head.next; j != &b->head; j = j->next) {
		/* A slot a reject freed may be committed again before the
		 * jobs are marked flushed (store_put() flushes a full batch):
		 * the one already refused is not the one meant. */
		if (j->state != J_DURABLE || j->flushed || j->put_err ||
		    j->put_slot != slot)
			continue;
		j->put_err = err ? err : -EIO;
		if (err == -EEXIST) {
			/* A copy under that key is held: this one is too. */
			b->v.already_held++;
			logkv(b->log, LOG_INFO, "already_held", "id=%s key=%016llx",
			      j->id, (unsigned long long)key);
		} else {
			logkv(b->log, LOG_ERR, "dq_rejected", "id=%s err=%d msg=\"%s\"",
			      j->id, err, strerror(-err));
		}
		return;
	}
}

/* @j's copy is durable (a dq job's: flushed, see flush_puts()): settle. */
static void copy_held(struct bridge *b, struct job *j)
{
	if (j->put_err && j->put_err != -EEXIST) {
		char why[48];

		snprintf(why, sizeof(why), "dq_reject_%d", -j->put_err);
		to_dead(b, j, why);
		return;
	}
	/* Held in dq now (or already, -EEXIST): its age counts. */
	ages_set(b->ages, policy_key(j->id), j->first_rt_ms);
	settle(b, j, 0);
}

/*
 * Flush the commits made since the last flush.  A source job then waits
 * for the group commit (make_durable()); a dq job's copy settles it at
 * once, its original finished now, for two reasons.  Safe: the
 * original's retire entry is written to the journal after the copy's
 * record (one ordered log, which recovery reads no further than its
 * first torn record), so it cannot be durable without the copy.  And
 * needed: the copy may be due at once (Retry-After: 0), and released
 * while its original still held its key (the other parity), its own
 * retry copy would be refused with -EEXIST under that key, taken for
 * held elsewhere, and the message lost: so every copy's original is
 * finished before the next reap (release() flushes first).  0, or the
 * flush's error (-ENOSPC: the batch stays in dq's ring, retried).
 */
static int flush_puts(struct bridge *b)
{
	struct job *j, *n;
	uint64_t mark;
	int ret;

	ret = store_flush(b->store);
	if (ret == -ENOSPC) {
		b->v.enospc++;
		b->enospc = 1;
		return ret;
	}
	if (ret < 0) {
		logkv(b->log, LOG_ERR, "dq_flush_failed", "err=%d msg=\"%s\"",
		      ret, strerror(-ret));
		return ret;
	}
	b->unflushed = 0;
	mark = store_mark(b->store);
	for (j = b->head.next; j != &b->head; j = n) {
		n = j->next;
		if (j->state != J_DURABLE || j->flushed)
			continue;
		j->flushed = 1;
		j->mark = mark;
		if (j->from == FROM_STORE)
			copy_held(b, j);
	}
	/* A sync of just before may have covered the source jobs. */
	b->durable_moved = 1;
	return 0;
}

/*
 * Flush what is unflushed, and settle the source jobs whose commit is
 * durable.  Never waits: a flushed job keeps the mark of its flush and
 * is settled in the turn the journal's descriptor says the group commit
 * (at most dq_sync_interval_ms away, at once when source_batch commits
 * wait) covered it.
 */
static int make_durable(struct bridge *b)
{
	struct job *j, *n;
	int ret;

	if (!b->ndurable)
		return 0;
	if (b->unflushed) {
		ret = flush_puts(b);
		if (ret && ret != -ENOSPC)
			return ret;
	}
	if (!b->durable_moved)
		return 0;
	b->durable_moved = 0;
	for (j = b->head.next; j != &b->head; j = n) {
		n = j->next;
		if (j->state != J_DURABLE || !j->flushed)
			continue;
		ret = store_durable(b->store, j->mark);
		if (ret < 0) {
			/* The journal failed: nothing more becomes durable. */
			logkv(b->log, LOG_ERR, "dq_durable_failed", "err=%d msg=\"%s\"",
			      ret, strerror(-ret));
			return ret;
		}
		if (ret)
			copy_held(b, j);
	}
	return 0;
}

static void ack_settled(struct bridge *b)
{
	char *ids[256];
	struct job *j, *n, *batch[256];
	unsigned int k = 0, i;
	int ret;

	for (j = b->head.next; j != &b->head; j = n) {
		n = j->next;
		if (j->state != J_ACK)
			continue;
		batch[k] = j;
		ids[k++] = j->m.id;
		if (k == 256 || n == &b->head) {
			ret = b->sops->ack(b->src, ids, k);
			if (ret)
				logkv(b->log, LOG_WARN, "ack_failed", "n=%u err=%d", k, ret);
			/* Failed acks are the source's to resend (source.h). */
			for (i = 0; i < k; i++) {
				logkv(b->log, LOG_DEBUG, "acked", "id=%s", batch[i]->m.id);
				set_state(b, batch[i], J_HAND);
				job_free(b, batch[i]);
			}
			b->v.acked += k;
			k = 0;
		}
	}
	if (k) {
		ret = b->sops->ack(b->src, ids, k);
		if (ret)
			logkv(b->log, LOG_WARN, "ack_failed", "n=%u err=%d", k, ret);
		for (i = 0; i < k; i++) {
			set_state(b, batch[i], J_HAND);
			job_free(b, batch[i]);
		}
		b->v.acked += k;
	}
}

/* ---- HTTP ------------------------------------------------------------ */

static int send_job(struct bridge *b, struct job *j)
{
	int ret = sink_send(b->sink, j->id, j->body, j->len, j, b->now);

	if (ret)
		return ret;
	set_state(b, j, J_HTTP);
	rate_take(&b->rate, 1);
	return 0;
}

static void on_result(struct bridge *b, const struct sink_result *r, uint64_t now)
{
	struct job *j = r->ctx;
	char reason[48];
	enum verdict v;
	int throttled, bad;
	uint64_t delay, waited_ms;
	const char *give_up;

	v = policy_judge(b->c, r, reason, sizeof(reason), &throttled);
	if (v == V_DELIVERED) {
		b->v.delivered++;
		if (!rate_slow(&b->rate, r->elapsed_ns)) {
			rate_success(&b->rate);
		} else if (rate_throttled(&b->rate, now)) {
			b->v.rate_decreases++;
			logkv(b->log, LOG_INFO, "rate_decreased", "rate=%.1f cause=latency ms=%.1f",
			      b->rate.rate, r->elapsed_ns / 1e6);
		}
		logkv(b->log, LOG_DEBUG, "delivered", "id=%s attempts=%u ms=%.1f",
		      j->id, j->attempts + 1, r->elapsed_ns / 1e6);
		if (j->from == FROM_STORE)
			ages_drop(b->ages, j->key);
		settle(b, j, 1);
		return;
	}
	if (r->kind == SINK_HTTP && r->status == 429)
		b->v.http_429++;
	else if (r->kind == SINK_HTTP && r->status == 503)
		b->v.http_503++;
	else if (r->kind == SINK_HTTP)
		b->v.http_other++;
	else if (r->kind == SINK_TIMEOUT)
		b->v.timeouts++;
	else if (r->kind == SINK_CONNECT)
		b->v.connect_errors++;
	if (throttled) {
		b->divert_until_ns = now + (uint64_t)b->c->direct_cooldown_ms * 1000000ULL;
		if (rate_throttled(&b->rate, now)) {
			b->v.rate_decreases++;
			logkv(b->log, LOG_INFO, "rate_decreased", "rate=%.1f cause=http_%ld",
			      b->rate.rate, r->status);
		}
	} else if (v == V_RETRY) {
		/* The downstream is down or failing: stop going direct too. */
		b->divert_until_ns = now + (uint64_t)b->c->direct_cooldown_ms * 1000000ULL;
	}
	waited_ms = j->first_rt_ms && turn_rt_ms(b) > j->first_rt_ms ?
		    turn_rt_ms(b) - j->first_rt_ms : 0;
	give_up = policy_give_up(b->c, v, throttled, &j->attempts, waited_ms);
	logkv(b->log, LOG_DEBUG, "failed", "id=%s attempts=%u reason=%s err=\"%s\"",
	      j->id, j->attempts, reason, r->error);
	if (give_up) {
		snprintf(reason + strlen(reason), sizeof(reason) - strlen(reason),
			 "%s", give_up);
		to_dead(b, j, reason);
		try_dead(b, j, now);
		return;
	}
	/*
	 * A rate signal without Retry-After comes back after the first
	 * backoff step, not a growing one: it did not count as a failure,
	 * and the token bucket, lowered by the signal, is what keeps the
	 * downstream from being hammered.  Growing the delay would only
	 * push the messages that met a 429 further behind the backlog.
	 */
	delay = policy_delay_ns(b->c, r, throttled ? 1 : j->attempts, &b->rng, &bad);
	if (bad) {
		b->v.bad_retry_after++;
		logkv(b->log, LOG_WARN, "bad_retry_after", "id=%s value=\"%s\"",
		      j->id, r->retry_after);
	}
	put(b, j, delay);
}

/* ---- source and dq --------------------------------------------------- */

static int can_go_direct(struct bridge *b, uint64_t now)
{
	return !b->held && now >= b->divert_until_ns &&
	       rate_available(&b->rate, now) &&
	       sink_inflight(b->sink) < b->c->max_inflight;
}

/*
 * Where a source job goes: direct when nothing stands in the way, to
 * J_WAIT when only max_inflight does (and not draining: a member that
 * leaves commits what it holds), into dq otherwise.
 */
static void route(struct bridge *b, struct job *j, uint64_t now)
{
	if (can_go_direct(b, now) && !send_job(b, j)) {
		b->v.direct++;
		return;
	}
	if (!b->draining && !b->held && now >= b->divert_until_ns &&
	    rate_available(&b->rate, now) &&
	    sink_inflight(b->sink) >= b->c->max_inflight) {
		if (j->state != J_WAIT)
			set_state(b, j, J_WAIT);
		return;
	}
	if (j->state == J_WAIT)
		set_state(b, j, J_HAND);
	put(b, j, 0);
}

/* The waiting jobs, oldest first, before anything newer is read. */
static void route_waiting(struct bridge *b, uint64_t now)
{
	struct job *j, *n;

	for (j = b->head.next; j != &b->head && b->nwait; j = n) {
		n = j->next;
		if (j->state != J_WAIT)
			continue;
		route(b, j, now);
		if (j->state == J_WAIT)
			break;	/* no room: the younger ones wait too */
	}
}

/* Returns the number of messages read (or -errno). */
static int read_source(struct bridge *b, uint64_t now)
{
	unsigned int room, i;
	struct job *j;
	int n;

	if (b->paused || b->draining || b->nunacked >= b->c->max_unacked) {
		/* Read nothing, but let the source talk to its broker
		 * (Kafka's group membership needs polls). */
		b->sops->poll(b->src, b->batch, 0, 0);
		return 0;
	}
	room = b->c->max_unacked - b->nunacked;
	if (room > b->c->source_batch)
		room = b->c->source_batch;
	n = b->sops->poll(b->src, b->batch, room, 0);
	if (n <= 0)
		return n;
	for (i = 0; i < (unsigned int)n; i++) {
		b->v.read++;
		if (in_hand(b, b->batch[i].id)) {
			b->v.duplicates++;
			src_msg_free(&b->batch[i]);
			continue;
		}
		j = job_new(b, FROM_SOURCE);
		if (!j) {
			/* Not acked: the source delivers it again. */
			src_msg_free(&b->batch[i]);
			continue;
		}
		j->m = b->batch[i];
		ids_add(b, j);
		j->id = j->m.id;
		j->body = j->m.body;
		j->len = j->m.len;
		/* Behind older waiting ones: in read order. */
		if (b->nwait) {
			set_state(b, j, J_WAIT);
			continue;
		}
		route(b, j, now);
	}
	return n;
}

/*
 * Room for releases: max_inflight less the requests out, and less dq's
 * tracked in-flight count only while that is below max_inflight.  On
 * dq.ko a tracked queue counts a message as in flight from its release
 * into the ready ring, before the bridge has reaped it: max_inflight or
 * more there are due messages waiting for the reap that only this room
 * allows, so they must not close it (when they did, the bridge never
 * released again: dqbridge_vm_test.sh, 277 of 300 held for ever).
 */
static unsigned int release_room(struct bridge *b)
{
	uint64_t cap = b->c->max_inflight, out = sink_inflight(b->sink), room;

	room = out < cap ? cap - out : 0;
	if (b->dq_inflight < cap && room > cap - b->dq_inflight)
		room = cap - b->dq_inflight;
	return (unsigned int)room;
}

/*
 * How many tokens a release from dq waits for: the bucket's depth
 * (burst_ms at the current rate), no more than the room and than what dq
 * holds and has not released.  A held backlog then leaves in bursts of
 * up to burst_ms of tokens, one loop turn (and one wake-up) each, its
 * answers bunched too, rather than a turn per token (at 500 r/s, a
 * wake-up every 2 ms and a message each: the bridge's cost per message
 * while it holds, bench/bridge_peer.sh).  The rate is the same: tokens
 * accumulate up to the depth, so none is lost by waiting for it.
 */
static unsigned int release_want(struct bridge *b, unsigned int room)
{
	double depth = b->rate.rate * b->rate.burst_ms / 1000.0;
	uint64_t waiting = b->held > b->dq_inflight ? b->held - b->dq_inflight : 0;
	unsigned int want = depth < 1 ? 1 : (unsigned int)depth;

	if (want > room)
		want = room;
	if (want > waiting)
		want = (unsigned int)waiting;
	return want ? want : 1;
}

/* Nanoseconds until @n whole tokens (rate_available() refilled them). */
static uint64_t tokens_wait_ns(const struct rate *r, unsigned int n)
{
	if (r->tokens >= n)
		return 0;
	return (uint64_t)((n - r->tokens) * 1e9 / r->rate) + 1;
}

static void release(struct bridge *b, uint64_t now)
{
	unsigned int tokens, room, i;
	struct job *j;
	int n;

	/* Every retry copy's original finished before a copy is reaped. */
	if (b->unflushed && b->ndurable)
		flush_puts(b);
	/* Draining too: what is due leaves at the paced rate before exit. */
	b->none_due = !b->held;
	if (b->draining && now >= b->drain_release_end_ns) {
		b->none_due = 1;	/* the rest waits in the journal */
		return;
	}
	tokens = rate_available(&b->rate, now);
	room = release_room(b);
	if (!room)
		return;
	/* Not draining: wait for a burst's worth (release_want()); a turn
	 * woken by something else does not send the tokens one by one. */
	if (!b->draining && tokens < release_want(b, room))
		return;
	if (tokens < room)
		room = tokens;
	if (!room)
		return;
	n = store_reap(b->store, b->reaped, room);
	if (n < 0) {
		logkv(b->log, LOG_ERR, "dq_reap_failed", "err=%d", n);
		return;
	}
	if ((unsigned int)n < room)
		b->none_due = 1;
	for (i = 0; i < (unsigned int)n; i++) {
		struct store_msg *m = &b->reaped[i];

		b->dq_inflight++;
		if (!m->id) {
			logkv(b->log, LOG_ERR, "bad_record", "slot=%u key=%016llx",
			      m->slot, (unsigned long long)m->key);
			store_finish(b->store, m->slot, 0);
			continue;
		}
		j = job_new(b, FROM_STORE);
		if (!j) {
			/* Back in dq at the next start; nothing lost. */
			logkv(b->log, LOG_ERR, "out_of_memory", "id=%s", m->id);
			continue;
		}
		j->slot = m->slot;
		j->id = m->id;
		j->body = m->body;
		j->len = m->len;
		j->attempts = m->attempts;
		j->key = m->key;
		j->first_rt_ms = m->first_rt_ms;
		b->v.released++;
		mvals_late(&b->v, now > m->due_ns ? now - m->due_ns : 0);
		if (send_job(b, j)) {
			/* Cannot happen (room was counted); retry via dq. */
			j->attempts++;
			put(b, j, 0);
		}
	}
}

/*
 * A released message whose retry copy found no room (journal full) is
 * still held by dq (in flight, durable): once its delay is over it is
 * sent again from that copy.  Waiting for room instead would deadlock
 * when every credit is such a message: nothing would be finished, so
 * nothing retired and no room made, even after the downstream is back.
 */
static int resend_stuck(struct bridge *b, struct job *j, uint64_t now)
{
	if (j->from != FROM_STORE || b->draining || now < j->resend_ns ||
	    !rate_available(&b->rate, now) ||
	    sink_inflight(b->sink) >= b->c->max_inflight)
		return 0;
	return !send_job(b, j);
}

static void retry_stuck(struct bridge *b, uint64_t now)
{
	unsigned int waiting = 0;
	struct job *j, *n;

	for (j = b->head.next; j != &b->head; j = n) {
		n = j->next;
		if (j->state == J_DEAD) {
			try_dead(b, j, now);	/* may free j */
			continue;
		}
		if (j->state == J_BACKLOG && !resend_stuck(b, j, now) &&
		    now >= j->retry_ns)
			put(b, j, j->put_delay_ns);
		if (j->state == J_BACKLOG)
			waiting++;
	}
	/* Nothing waits for room any more (the last one refused may have
	 * been sent again from its held copy and delivered, and no commit
	 * succeeded since): the source must not stay paused for it. */
	if (!waiting && !b->ndurable)
		b->enospc = 0;
}

static void backpressure(struct bridge *b)
{
	if (!b->paused && (b->held >= b->c->high_watermark || b->enospc)) {
		b->paused = 1;
		b->v.pauses++;
		b->sops->pause(b->src);
		logkv(b->log, LOG_WARN, "source_paused", "held=%llu enospc=%d high=%u",
		      (unsigned long long)b->held, b->enospc, b->c->high_watermark);
	} else if (b->paused && !b->enospc && b->held <= b->c->low_watermark) {
		b->paused = 0;
		b->sops->resume(b->src);
		logkv(b->log, LOG_INFO, "source_resumed", "held=%llu low=%u",
		      (unsigned long long)b->held, b->c->low_watermark);
	}
}

/* ---- signals, reports ------------------------------------------------ */

static void reload(struct bridge *b)
{
	struct config nc;
	char err[512];
	int ret;

	config_defaults(&nc);
	ret = b->config_path ? config_load(&nc, b->config_path, err, sizeof(err)) : 0;
	if (!ret)
		ret = apply_flags(&nc, b->argc, b->argv, err, sizeof(err));
	if (!ret)
		ret = config_finish(&nc, err, sizeof(err));
	if (ret) {
		logkv(b->log, LOG_ERR, "reload_failed", "err=\"%s\"", err);
		return;
	}
	config_copy_rates(b->c, &nc);
	rate_reconfig(&b->rate, b->c);
	logkv(b->log, LOG_INFO, "reloaded", "rate_floor=%g rate_ceiling=%g rate_increase=%g rate_decrease=%g rate=%.1f",
	      b->c->rate_floor, b->c->rate_ceiling, b->c->rate_increase,
	      b->c->rate_decrease, b->rate.rate);
}

static void on_signals(struct bridge *b, uint64_t now)
{
	struct signalfd_siginfo si;

	if (!b->sig_ready)
		return;
	b->sig_ready = 0;
	while (read(b->sigfd, &si, sizeof(si)) == sizeof(si)) {
		if (si.ssi_signo == SIGHUP) {
			reload(b);
		} else if (!b->draining) {
			b->draining = 1;
			uint64_t answer_ms = b->c->sink_timeout_ms;

			if (answer_ms > b->c->drain_timeout_ms / 2)
				answer_ms = b->c->drain_timeout_ms / 2;
			b->drain_deadline_ns = now +
				(uint64_t)b->c->drain_timeout_ms * 1000000ULL;
			b->drain_release_end_ns = b->drain_deadline_ns -
				answer_ms * 1000000ULL;
			b->sops->pause(b->src);
			logkv(b->log, LOG_INFO, "draining", "signal=%u inflight=%u held=%llu",
			      si.ssi_signo, sink_inflight(b->sink),
			      (unsigned long long)b->held);
		}
	}
}

static void rate_save(struct bridge *b);

static void report(struct bridge *b, uint64_t now)
{
	if (now >= b->next_save_ns) {
		b->next_save_ns = now + 1000000000ULL;
		rate_save(b);
	}
	if (now < b->next_report_ns)
		return;
	b->next_report_ns = now + 10000000000ULL;
	logkv(b->log, LOG_INFO, "stats",
	      "read=%llu direct=%llu diverted=%llu retried=%llu released=%llu delivered=%llu dead=%llu acked=%llu http_429=%llu held=%llu inflight=%u rate=%.1f paused=%d",
	      (unsigned long long)b->v.read, (unsigned long long)b->v.direct,
	      (unsigned long long)b->v.diverted, (unsigned long long)b->v.retried,
	      (unsigned long long)b->v.released, (unsigned long long)b->v.delivered,
	      (unsigned long long)b->v.dead_lettered, (unsigned long long)b->v.acked,
	      (unsigned long long)b->v.http_429, (unsigned long long)b->held,
	      sink_inflight(b->sink), b->rate.rate, b->paused);
}

static void publish(struct bridge *b, uint64_t now)
{
	b->v.held = b->held;
	/* The oldest held message's age (ages.h: the heap's root), with a
	 * clock read of its own (wall time: first-diverted times survive a
	 * restart), so at most every 100 ms (and at once when dq went
	 * empty). */
	if (!b->held || !ages_count(b->ages)) {
		b->v.oldest_age_s = 0;
	} else if (now >= b->next_oldest_ns) {
		uint64_t t = rt_ms(), o = ages_oldest(b->ages);

		b->next_oldest_ns = now + 100000000ULL;
		b->v.oldest_age_s = o && t > o ? (t - o) / 1000.0 : 0;
	}
	b->v.rate = b->rate.rate;
	b->v.inflight = sink_inflight(b->sink);
	b->v.unacked = b->nunacked;
	b->v.paused = b->paused;
	b->v.draining = b->draining;
	metrics_publish(b->met, &b->v);
}

/* How long the loop may sleep: until a token, the source, or a bound. */
static int wait_ms(struct bridge *b, int busy, int *watch_dq)
{
	uint64_t ns = 50000000ULL;	/* housekeeping: reports, retries */
	int curl_ms;

	*watch_dq = 0;
	if (busy || b->nack)
		return 0;
	/* Poll the source every 10 ms when idle; one that wakes the loop
	 * itself (attach()) when it says (next_poll_ns(): not at all while
	 * its read is outstanding, which is most of an idle bridge's time;
	 * 100 wake-ups a second before), else every
	 * source_read_interval_ms, when it may hold its next read back
	 * that long. */
	if (!b->paused && !b->draining && b->nunacked < b->c->max_unacked) {
		if (!b->sops->attach) {
			ns = 10000000ULL;
		} else if (b->sops->next_poll_ns) {
			uint64_t at = b->sops->next_poll_ns(b->src, b->now);

			if (at)
				ns = at > b->now ? at - b->now : 0;
		} else if (b->c->source_read_interval_ms) {
			ns = (uint64_t)b->c->source_read_interval_ms * 1000000ULL;
		}
	}
	if (b->held && release_room(b)) {
		uint64_t t = b->draining ? rate_wait_ns(&b->rate) :
			     tokens_wait_ns(&b->rate,
					    release_want(b, release_room(b)));

		/* With the tokens, wait on dq's fd; without, until then. */
		if (!t)
			*watch_dq = 1;
		else if (t < ns)
			ns = t;
	}
	curl_ms = sink_timeout_ms(b->sink, b->now);
	if (curl_ms >= 0 && (uint64_t)curl_ms * 1000000ULL < ns)
		return curl_ms;
	return (int)((ns + 999999) / 1000000);
}

/*
 * The learnt rate survives a restart (a small file beside the journal),
 * so that a bridge restarted over a recovered backlog sends at what the
 * downstream took last time, not at rate_initial: after a crash the
 * backlog drains at the paced rate, not as a herd.
 */
static int rate_state_off(const struct config *c)
{
	return !strcmp(c->rate_state_file, "none");
}

static void rate_load(struct bridge *b)
{
	double r = 0;
	FILE *f;

	if (rate_state_off(b->c))
		return;
	f = fopen(b->c->rate_state_file, "re");
	if (!f)
		return;
	if (fscanf(f, "%lf", &r) == 1 && r > 0) {
		b->rate.rate = r;
		rate_reconfig(&b->rate, b->c);
		logkv(b->log, LOG_INFO, "rate_restored", "rate=%.1f file=%s",
		      b->rate.rate, b->c->rate_state_file);
	}
	fclose(f);
}

static void rate_save(struct bridge *b)
{
	char tmp[CFG_STR + 8];
	FILE *f;

	if (rate_state_off(b->c))
		return;
	snprintf(tmp, sizeof(tmp), "%s.tmp", b->c->rate_state_file);
	f = fopen(tmp, "we");
	if (!f)
		return;
	fprintf(f, "%.3f\n", b->rate.rate);
	if (fclose(f) || rename(tmp, b->c->rate_state_file))
		unlink(tmp);
}

/* ---- the loop -------------------------------------------------------- */

/* The signalfd fired (read in on_signals(), in turn order). */
static void on_sigfd(void *arg, int fd, uint32_t events)
{
	struct bridge *b = arg;

	(void)fd;
	(void)events;
	b->sig_ready = 1;
}

/* The journal's descriptor: the durable position moved (or it failed). */
static void on_durable_fd(void *arg, int fd, uint32_t events)
{
	struct bridge *b = arg;

	(void)fd;
	(void)events;
	store_durable_ack(b->store);
	b->durable_moved = 1;
}

/* dq's descriptor: a message is due; the turn reaps it. */
static void on_dqfd(void *arg, int fd, uint32_t events)
{
	(void)arg;
	(void)fd;
	(void)events;
}

/*
 * One turn: wait in epoll_wait() (libcurl's sockets move on from their
 * callbacks in there), read the clock once, then settle answers, release
 * from dq, read the source, make commits durable, ack, and start the
 * requests this turn queued before waiting again.
 */
static int loop(struct bridge *b)
{
	struct sink_result r;
	int busy = 0, watch_dq, ret, timeout;
	uint64_t now;

	for (;;) {
		timeout = wait_ms(b, busy, &watch_dq);
		/* dq's fd only while a due message could be sent: level-
		 * triggered, it would wake every turn otherwise.  Changed
		 * only when that changes (ev_watch() skips the same). */
		if (watch_dq != b->dq_watched) {
			ret = ev_watch(b->ev, store_fd(b->store),
				       watch_dq ? EPOLLIN : 0, on_dqfd, b);
			if (ret)
				return ret;
			b->dq_watched = watch_dq;
		}
		ret = ev_wait(b->ev, timeout);
		if (ret < 0)
			return ret;
		now = now_ns();
		b->now = now;
		b->rt_now_ms = 0;
		ret = sink_run_timers(b->sink, now);
		if (ret)
			return ret;
		on_signals(b, now);
		while (sink_result(b->sink, &r, now))
			on_result(b, &r, now);
		if (b->nwait)
			route_waiting(b, now);
		release(b, now);
		/* What the answers settled, acked before the read: a source
		 * may carry the acks in the read's write (source_redis.c). */
		if (b->nack)
			ack_settled(b);
		ret = read_source(b, now);
		busy = ret >= (int)b->c->source_batch;
		if (ret < 0 && ret != -ENOTCONN)
			logkv(b->log, LOG_WARN, "source_failed", "err=%d", ret);
		retry_stuck(b, now);
		ret = make_durable(b);
		if (ret)
			return ret;
		ack_settled(b);
		ret = store_counts(b->store, &b->held, &b->dq_inflight);
		if (ret)
			return ret;
		backpressure(b);
		publish(b, now);
		report(b, now);
		/* Start what this turn queued now, not a turn later. */
		ret = sink_run_timers(b->sink, now);
		if (ret)
			return ret;
		if (b->draining) {
			if (!sink_inflight(b->sink) && !b->ndurable && !b->nack &&
			    !b->nwait && b->none_due)
				break;
			if (now >= b->drain_deadline_ns) {
				logkv(b->log, LOG_WARN, "drain_timeout",
				      "inflight=%u note=\"requests abandoned: dq copies come back at restart, source messages are redelivered\"",
				      sink_inflight(b->sink));
				break;
			}
		}
	}
	return 0;
}

/* store_scan(): a message recovery put back, with its first-diverted time. */
static void on_recovered(void *arg, const char *id, uint64_t key,
			 uint64_t first_rt_ms)
{
	struct bridge *b = arg;

	(void)id;
	ages_set(b->ages, key, first_rt_ms ? first_rt_ms : rt_ms());
}

int bridge_run(struct config *c, const char *config_path, int argc,
	       char **argv, struct log *log)
{
	struct bridge *b;
	sigset_t set;
	int ret;

	b = calloc(1, sizeof(*b));
	if (!b)
		return -ENOMEM;
	b->c = c;
	b->config_path = config_path;
	b->argc = argc;
	b->argv = argv;
	b->log = log;
	b->head.next = b->head.prev = &b->head;
	b->rng = now_ns() ^ ((uint64_t)getpid() << 32);
	b->sigfd = -1;
	b->batch = calloc(c->source_batch, sizeof(*b->batch));
	b->reaped = calloc(c->max_inflight, sizeof(*b->reaped));
	ret = (b->batch && b->reaped) ? 0 : -ENOMEM;
	if (!ret)
		ret = ids_init(b);
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	if (!ret) {
		b->sigfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
		if (b->sigfd < 0)
			ret = -errno;
	}
	if (!ret)
		ret = ev_new(&b->ev);
	if (!ret)
		ret = ev_watch(b->ev, b->sigfd, EPOLLIN, on_sigfd, b);
	b->sops = source_find(c->source);
	if (!ret && !b->sops) {
		logkv(log, LOG_ERR, "unknown_source", "source=%s", c->source);
		ret = -EINVAL;
	}
	b->now = now_ns();
	rate_init(&b->rate, c, b->now);
	rate_load(b);
	if (!ret)
		ret = metrics_open(c->metrics_listen, log, &b->met);
	if (!ret)
		ret = store_open(c, log, on_reject, b, &b->store);
	if (!ret) {
		ret = store_durable_fd(b->store);
		if (ret >= 0)
			ret = ev_watch(b->ev, ret, EPOLLIN, on_durable_fd, b);
	}
	if (!ret)
		ret = ages_new(c->dq_slots, &b->ages);
	if (!ret) {
		int n = store_scan(b->store, policy_key, on_recovered, b);
		uint64_t t = rt_ms(), o = ages_oldest(b->ages);

		logkv(log, LOG_INFO, "ages_recovered", "n=%d oldest_age_s=%.3f", n,
		      o && t > o ? (t - o) / 1000.0 : 0);
	}
	if (!ret)
		ret = sink_open(c, log, b->ev, now_ns(), &b->sink);
	if (!ret) {
		ret = b->sops->open(c, log, &b->src);
		if (!ret && b->sops->attach)
			ret = b->sops->attach(b->src, b->ev);
		if (ret)
			logkv(log, LOG_ERR, "source_open_failed", "source=%s err=%d",
			      c->source, ret);
	}
	if (!ret) {
		/* The metrics say what was recovered from the first scrape
		 * after "started" on (not only after the first loop turn):
		 * held first, or publish() takes dq for empty (age 0). */
		ret = store_counts(b->store, &b->held, &b->dq_inflight);
	}
	if (!ret) {
		publish(b, now_ns());
		logkv(log, LOG_INFO, "started",
		      "source=%s sink=%s backend=%s max_inflight=%u rate=%.1f floor=%g ceiling=%g",
		      c->source, c->sink_url, store_backend(b->store), c->max_inflight,
		      b->rate.rate, c->rate_floor, c->rate_ceiling);
		ret = loop(b);
	}
	if (b->met && b->sink)
		publish(b, now_ns());
	if (b->sink)
		rate_save(b);
	logkv(log, ret ? LOG_ERR : LOG_INFO, "stopped",
	      "err=%d delivered=%llu diverted=%llu released=%llu dead=%llu acked=%llu held=%llu",
	      ret, (unsigned long long)b->v.delivered,
	      (unsigned long long)b->v.diverted, (unsigned long long)b->v.released,
	      (unsigned long long)b->v.dead_lettered, (unsigned long long)b->v.acked,
	      (unsigned long long)b->held);
	/* Jobs still in hand: source ones are not acked (redelivered),
	 * store ones stay in the journal (back at the next open). */
	while (b->head.next != &b->head)
		job_free(b, b->head.next);
	if (b->src)
		b->sops->close(b->src);
	sink_close(b->sink);
	store_close(b->store);
	ages_free(b->ages);
	metrics_close(b->met);
	if (b->sigfd >= 0)
		close(b->sigfd);
	ev_free(b->ev);
	free(b->batch);
	free(b->reaped);
	free(b->ids);
	free(b);
	return ret;
}
