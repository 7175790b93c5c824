// SPDX-License-Identifier: LGPL-2.1 OR MIT
/*
 * dqbridge: the store (store.h), a thin layer over libdqshim that knows
 * the slot layout.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <dqshim.h>

#include "config.h"
#include "log.h"
#include "store.h"

#define STORE_MAGIC	'B'
#define STORE_VERSION	1

struct store {
	const struct config *c;
	const struct log *log;
	struct dqshim_queue *q;
	store_reject_fn *on_reject;
	void *arg;
	uint32_t slot_size;
	uint32_t slot_count;
	const unsigned char *arena;
	uint64_t recovered;		/* by the open; UINT64_MAX: unknown */
	struct dq_reaped *reaped;	/* store_reap()'s buffer */
	unsigned int reaped_cap;
};

static void on_dq_reject(void *arg, const struct dq_reject *rej)
{
	struct store *s = arg;

	/* We never replace, so every entry is a refused commit. */
	if (rej->reason == DQ_REPLACED)
		return;
	s->on_reject(s->arg, rej->slot, rej->user_data, rej->error);
}

int store_open(const struct config *c, const struct log *log,
	       store_reject_fn *on_reject, void *arg, struct store **out)
{
	struct dq_journal_params jp;
	struct dq_journal_stats js = { .sz = sizeof(js) };
	struct dq_params p;
	struct dq_info info = { .sz = sizeof(info) };
	struct store *s;
	int ret;

	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->c = c;
	s->log = log;
	s->on_reject = on_reject;
	s->arg = arg;
	s->reaped_cap = c->max_inflight;
	s->reaped = calloc(s->reaped_cap, sizeof(*s->reaped));
	if (!s->reaped) {
		free(s);
		return -ENOMEM;
	}
	dq_params_init(&p);
	p.slot_count = c->dq_slots;
	p.slot_size = c->dq_slot_size;
	p.backend = !strcmp(c->dq_backend, "kernel") ? DQ_BACKEND_KERNEL :
		    !strcmp(c->dq_backend, "user") ? DQ_BACKEND_USER :
		    DQ_BACKEND_AUTO;
	/* Pages as messages use them: sized for a peak, resident for what is held. */
	p.flags = DQ_OPEN_F_TRACK | DQ_OPEN_F_KEYS | DQ_OPEN_F_LAZY_ARENA;
	/* dq's own cap on messages out: the same as the HTTP cap. */
	p.max_inflight = c->max_inflight;
	p.on_reject = on_dq_reject;
	p.reject_arg = s;
	dq_journal_params_init(&jp, c->dq_dir, !strcmp(c->dq_durability, "always") ?
			       DQ_DURABLE_ALWAYS : DQ_DURABLE_BATCH);
	/*
	 * The group commit every dq_sync_interval_ms (50 ms; the library's
	 * 2 ms synced each lone retire: at 500 deliveries a second from dq
	 * an fdatasync per message, 40 % of the bridge's CPU; 20 ms still
	 * cost a fifth of the bridge's CPU at that load), but at once
	 * when a full read's commits wait, so that a diverted flood is not
	 * held to max_unacked per interval (the source jobs in hand wait for
	 * their sync before their ack).
	 */
	jp.sync_interval_us = c->dq_sync_interval_ms * 1000;
	/*
	 * Draining a backlog, the only records are retire entries: synced
	 * once per dq_retire_sync_ms (1 s) instead of every interval, ~45 %
	 * of the bridge's CPU at 500 deliveries a second (issue 35).  They
	 * are still written each interval: a kill -9 resends none, a power
	 * cut up to dq_retire_sync_ms of deliveries (Idempotency-Key).
	 */
	jp.retire_sync_us = c->dq_retire_sync_ms * 1000;
	jp.sync_records = c->source_batch;
	jp.max_bytes = c->dq_max_bytes;
	jp.segment_bytes = c->dq_segment_bytes;
	ret = dq_queue_open_durable(&p, &jp, &s->q);
	if (ret) {
		logkv(log, LOG_ERR, "dq_open_failed", "dir=%s err=%d msg=\"%s\"",
		      c->dq_dir, ret, dq_strerror(ret));
		free(s->reaped);
		free(s);
		return ret;
	}
	dq_queue_info(s->q, &info);
	s->slot_size = info.slot_size;
	s->slot_count = info.slot_count;
	s->arena = info.arena;
	s->recovered = UINT64_MAX;
	if (!dq_journal_stats(s->q, &js)) {
		s->recovered = js.rec_recovered;
		logkv(log, LOG_INFO, "dq_open",
		      "dir=%s backend=%s slots=%u slot_size=%u recovered=%llu overdue=%llu corrupt=%llu torn_bytes=%llu key_conflicts=%llu recovery_ms=%.1f",
		      c->dq_dir, dq_backend_name(info.backend), info.slot_count,
		      info.slot_size, (unsigned long long)js.rec_recovered,
		      (unsigned long long)js.rec_overdue,
		      (unsigned long long)js.rec_corrupt,
		      (unsigned long long)js.rec_torn_bytes,
		      (unsigned long long)js.rec_key_conflicts, js.rec_ns / 1e6);
	}
	*out = s;
	return 0;
}

void store_close(struct store *s)
{
	if (!s)
		return;
	dq_queue_close(s->q);
	free(s->reaped);
	free(s);
}

size_t store_room(const struct store *s, const char *id)
{
	size_t over = STORE_HDR + strlen(id) + 1;

	return s->slot_size > over ? s->slot_size - over : 0;
}

static void put_u16(unsigned char *p, uint16_t v) { memcpy(p, &v, 2); }
static void put_u32(unsigned char *p, uint32_t v) { memcpy(p, &v, 4); }
static void put_u64(unsigned char *p, uint64_t v) { memcpy(p, &v, 8); }

int store_put(struct store *s, const char *id, const void *body, size_t len,
	      uint16_t attempts, uint64_t delay_ns, uint64_t key,
	      uint64_t first_rt_ms, uint32_t *slot)
{
	size_t idlen = strlen(id) + 1, total = STORE_HDR + idlen + len;
	struct dqshim_msg m;
	unsigned char *p;
	int ret, tries;

	if (total > s->slot_size || idlen > UINT16_MAX)
		return -EMSGSIZE;
	ret = dq_reserve(s->q, &m);
	if (ret)
		return ret;
	p = m.data;
	p[0] = STORE_MAGIC;
	p[1] = STORE_VERSION;
	put_u16(p + 2, (uint16_t)idlen);
	put_u32(p + 4, (uint32_t)len);
	put_u64(p + 8, first_rt_ms);
	memcpy(p + STORE_HDR, id, idlen);
	if (len)
		memcpy(p + STORE_HDR + idlen, body, len);
	m.attempts = attempts;
	for (tries = 0; tries < 2; tries++) {
		ret = dq_commit_key(s->q, &m, (uint32_t)total, delay_ns, key,
				    DQ_COMMIT_F_RELATIVE);
		if (ret != -EAGAIN)
			break;
		/* The batch is full: hand it over and commit again. */
		ret = dq_flush(s->q);
		if (ret < 0)
			break;
		ret = -EAGAIN;
	}
	if (ret) {
		dq_abort(s->q, &m);
		return ret;
	}
	*slot = m.slot;
	return 0;
}

static uint16_t get_u16(const unsigned char *p) { uint16_t v; memcpy(&v, p, 2); return v; }
static uint32_t get_u32(const unsigned char *p) { uint32_t v; memcpy(&v, p, 4); return v; }
static uint64_t get_u64(const unsigned char *p) { uint64_t v; memcpy(&v, p, 8); return v; }

/*
 * A fresh queue's arena is zeroed, and recovery put each live message
 * into a slot: a slot whose header is ours and whose key dq holds at that
 * very slot is a recovered message.  The walk ends with the last of the
 * ones the recovery counted: reading all of a lazily mapped arena
 * (64 MiB by default) faulted in a page of zeros for each 4 KiB of it at
 * every start, most of a start's CPU with nothing recovered.
 */
int store_scan(struct store *s, uint64_t (*key_of)(const char *id),
	       void (*fn)(void *arg, const char *id, uint64_t key,
			  uint64_t first_rt_ms),
	       void *arg)
{
	struct dq_key_info ki;
	uint32_t slot, par;
	int n = 0;

	for (slot = 0; slot < s->slot_count && (uint64_t)n < s->recovered;
	     slot++) {
		const unsigned char *p = s->arena + (size_t)slot * s->slot_size;
		uint16_t idlen = get_u16(p + 2);
		uint32_t blen = get_u32(p + 4);
		uint64_t key;

		if (p[0] != STORE_MAGIC || p[1] != STORE_VERSION || !idlen ||
		    (uint64_t)STORE_HDR + idlen + blen > s->slot_size ||
		    p[STORE_HDR + idlen - 1] != '\0')
			continue;
		key = key_of((const char *)p + STORE_HDR);
		for (par = 0; par < 2; par++) {
			if (dq_lookup_key(s->q, key | par, &ki) ||
			    DQ_HANDLE_SLOT(ki.handle) != slot)
				continue;
			fn(arg, (const char *)p + STORE_HDR, key | par,
			   get_u64(p + 8));
			n++;
			break;
		}
	}
	return n;
}

int store_flush(struct store *s)
{
	return dq_flush(s->q);
}

uint64_t store_mark(struct store *s)
{
	return dq_journal_mark(s->q);
}

int store_durable(struct store *s, uint64_t mark)
{
	return dq_durable_poll(s->q, mark);
}

int store_durable_fd(struct store *s)
{
	return dq_durable_fd(s->q);
}

void store_durable_ack(struct store *s)
{
	uint64_t v;
	int fd = dq_durable_fd(s->q);

	/* An eventfd: one read takes the whole count (EAGAIN: none). */
	if (fd >= 0)
		(void)!read(fd, &v, sizeof(v));
}

int store_reap(struct store *s, struct store_msg *out, unsigned int max)
{
	int n, i;

	if (max > s->reaped_cap)
		max = s->reaped_cap;
	if (!max)
		return 0;
	n = dq_reap(s->q, s->reaped, max, 0);
	if (n <= 0)
		return n == -ETIME ? 0 : n;
	for (i = 0; i < n; i++) {
		const struct dq_reaped *r = &s->reaped[i];
		const unsigned char *p = r->data;
		struct store_msg *o = &out[i];
		uint16_t idlen;
		uint32_t blen;

		memset(o, 0, sizeof(*o));
		o->slot = r->slot;
		o->key = r->user_data;
		o->attempts = r->attempts;
		o->due_ns = r->due_ns;
		o->release_ns = r->release_ns;
		if (r->len < STORE_HDR || p[0] != STORE_MAGIC || p[1] != STORE_VERSION)
			continue;
		idlen = get_u16(p + 2);
		blen = get_u32(p + 4);
		if (!idlen || (uint64_t)STORE_HDR + idlen + blen != r->len ||
		    p[STORE_HDR + idlen - 1] != '\0')
			continue;
		o->first_rt_ms = get_u64(p + 8);
		o->id = (const char *)p + STORE_HDR;
		o->body = p + STORE_HDR + idlen;
		o->len = blen;
	}
	return n;
}

int store_finish(struct store *s, uint32_t slot, int delivered)
{
	return dq_finish(s->q, slot, delivered ? DQ_DONE_DELIVERED : DQ_DONE_FAILED);
}

int store_fd(const struct store *s)
{
	return dq_queue_fd(s->q);
}

int store_counts(struct store *s, uint64_t *held, uint64_t *inflight)
{
	struct dq_queue_stats st;
	struct dq_track_stats ts;
	int ret;

	ret = dq_queue_get_stats(s->q, &st);
	if (!ret)
		ret = dq_queue_track_stats(s->q, &ts);
	if (ret)
		return ret;
	*inflight = ts.inflight;
	/* Held: in the wheel, due and waiting for a credit or a pacing
	 * token (paced), due and waiting for room on the ready ring
	 * (kernel), and released (in flight). */
	*held = st.pending + st.paced + st.ready_backlog + ts.inflight;
	return 0;
}

const char *store_backend(const struct store *s)
{
	return dq_backend_name(dq_queue_backend(s->q));
}
