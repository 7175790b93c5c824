// SPDX-License-Identifier: LGPL-2.1 OR MIT
/*
 * fuzz_intake: the embedded engine's intake (kmod/shared/dq_desc.h,
 * dq_msg.h, dq_keys.h, dq_wheel.c through user/src/dq_user.c) and the
 * setup normalisation (kmod/shared/dq_setup.h), driven by libFuzzer.
 *
 * Input, front to back (fuzz_common.h: reads past the end give zeros):
 *
 *   struct dq_setup (raw)  normalised with dq_setup_normalise() as is;
 *                          then, as a dq_params, opened through
 *                          dq_queue_open(DQ_BACKEND_USER) and compared
 *   6 bytes                the queue the operations run on (small)
 *   operations             one opcode byte each, then its arguments
 *
 * Operations: raw descriptors written straight into the submit ring
 * (dq_internal.h: the engine must trust nothing in them), reserve +
 * commit / commit_delay / commit_key through the public API, abort,
 * flush, cancel by handle, key lookup/cancel, reap with timeout 0,
 * done/finish of any slot with any outcome, a broken producer index,
 * and a stats check.
 *
 * The harness keeps a model of the engine (per slot: free, held, in
 * flight; gen, user_data, len, due range, key) built only from what it
 * submitted and what the library reported, and aborts (FZ_CHECK) when:
 *  - an accepted descriptor breaks a rule (flags, resv, slot, len, time,
 *    busy slot, key), or a rejected one is rejected for another reason
 *    than the first that applies (or with another errno);
 *  - a message comes out that is not held (twice, cancelled, never
 *    accepted), with another user_data/len/due, or before its due time,
 *    or one reap hands messages out of (due, acceptance) order;
 *  - a cancel, key lookup/cancel or finish answers other than the
 *    model says;
 *  - the counters disagree: accepted + rejected == submitted, cancelled,
 *    released, replaced, pending + paced == held, ring errors, in flight;
 *  - a message due (with a wheel tick of margin) before the final reap is
 *    still held after it (untracked queues and uncapped tracked ones).
 * Due times are in the past or far in the future (or exactly at the
 * DQ_MAX_DELAY_NS boundary), so runs are fast and nearly deterministic;
 * where the engine's clock reading decides (a due time within the
 * boundary's reach of now), either answer is taken.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "dq_desc.h"
#include "dq_internal.h"
#include "dq_setup.h"
#include "fuzz_common.h"

#define MAX_SLOTS	32U
#define MAX_RES		16U
#define MAX_OPS		512U
#define NS		1000000000ULL
#define TICK		1024ULL		/* DQ_WHEEL_TICK_NS */

enum { M_FREE, M_HELD, M_INFLIGHT };

struct mslot {
	uint8_t state;
	bool ever;		/* a descriptor was ever accepted (has a gen) */
	bool keyed;
	uint16_t attempts;
	uint32_t gen;
	uint32_t len;
	uint64_t user_data;
	uint64_t due_lo, due_hi;	/* the engine's due time is in here */
	uint64_t flushed_at;		/* after the flush that took it */
	uint64_t seq;			/* acceptance order */
};

struct h {
	struct dqshim_queue *q;
	bool tracked, keyed;
	uint32_t max_inflight;
	uint32_t batch_start;		/* ring index of the first unflushed */
	struct mslot m[MAX_SLOTS];
	struct dqshim_msg res[MAX_RES];
	uint32_t nres;
	/* What on_reject saw during the flush in progress. */
	struct dq_reject rej[256];
	uint32_t nrej;
	/* Counters the model expects. */
	uint64_t flushed, accepted, rejected, rej_by[DQ_REJ_MAX];
	uint64_t cancelled, released, replaced, ring_errors;
	uint64_t delivered, failed;
};

static void on_reject(void *arg, const struct dq_reject *rej)
{
	struct h *h = arg;

	FZ_CHECK(h->nrej < 256, "too many reject entries");
	h->rej[h->nrej++] = *rej;
}

static uint32_t held_count(const struct h *h, int state)
{
	uint32_t i, n = 0;

	for (i = 0; i < h->q->slot_count; i++)
		n += h->m[i].state == state;
	return n;
}

/* The slot holding @key (held or in flight), or -1. */
static int key_holder(const struct h *h, uint64_t key)
{
	uint32_t i;

	for (i = 0; i < h->q->slot_count; i++)
		if (h->m[i].state != M_FREE && h->m[i].keyed &&
		    h->m[i].user_data == key)
			return (int)i;
	return -1;
}

/* A due value of one of a few classes (see the top of the file). */
static uint64_t due_value(struct fz *f, uint64_t now)
{
	uint8_t cls = fz_u8(f);
	uint64_t v = fz_u64(f);

	switch (cls % 8) {
	case 0:
		return 0;
	case 1:	/* absolute, at least 1 s in the past */
		return now > NS ? v % (now - NS) : 0;
	case 2:	/* absolute, an hour or more ahead */
		return now + 3600 * NS + v % (1000000 * NS);
	case 3:	/* relative, an hour or more */
		return 3600 * NS + v % (1000000 * NS);
	case 4:	/* relative: the limit, one under, one over */
		return DQ_MAX_DELAY_NS - 1 + v % 3;
	case 5:	/* absolute: around the limit */
		return now + DQ_MAX_DELAY_NS - 1 + v % 3;
	case 6:	/* far beyond anything */
		return UINT64_MAX - v % 4096;
	default:
		return v;
	}
}

static void check_stats(struct h *h)
{
	struct dq_queue_stats st;
	uint64_t rej = 0;
	unsigned int i;

	FZ_CHECK(dq_queue_get_stats(h->q, &st) == 0, "stats");
	for (i = 0; i < DQ_REJ_MAX; i++) {
		rej += st.rejected[i];
		FZ_CHECK(st.rejected[i] == h->rej_by[i], "rejected[%u] %llu, harness saw %llu",
			 i, (unsigned long long)st.rejected[i],
			 (unsigned long long)h->rej_by[i]);
	}
	FZ_CHECK(st.submitted == h->accepted, "submitted %llu, accepted %llu",
		 (unsigned long long)st.submitted, (unsigned long long)h->accepted);
	FZ_CHECK(st.submitted + rej == h->flushed,
		 "accepted %llu + rejected %llu != submitted %llu",
		 (unsigned long long)st.submitted, (unsigned long long)rej,
		 (unsigned long long)h->flushed);
	FZ_CHECK(st.cancelled == h->cancelled, "cancelled %llu vs %llu",
		 (unsigned long long)st.cancelled, (unsigned long long)h->cancelled);
	FZ_CHECK(st.released == h->released, "released %llu vs %llu",
		 (unsigned long long)st.released, (unsigned long long)h->released);
	FZ_CHECK(st.replaced == h->replaced, "replaced");
	FZ_CHECK(st.ring_errors == h->ring_errors, "ring_errors");
	FZ_CHECK(st.pending + st.paced == held_count(h, M_HELD),
		 "pending %llu + paced %llu != held %u",
		 (unsigned long long)st.pending, (unsigned long long)st.paced,
		 held_count(h, M_HELD));
	FZ_CHECK(st.slot_count == h->q->slot_count &&
		 st.slot_size == h->q->slot_size, "stats shape");
	if (h->tracked) {
		struct dq_track_stats ts;

		FZ_CHECK(dq_queue_track_stats(h->q, &ts) == 0, "track stats");
		FZ_CHECK(ts.inflight == held_count(h, M_INFLIGHT),
			 "inflight %llu vs %u", (unsigned long long)ts.inflight,
			 held_count(h, M_INFLIGHT));
		FZ_CHECK(ts.done_delivered == h->delivered &&
			 ts.done_failed == h->failed, "done counters");
		FZ_CHECK(!h->max_inflight || ts.inflight <= h->max_inflight,
			 "inflight over the cap");
	}
}

/*
 * The reason the engine must give @d (or DQ_REJ_NR: valid so far), with
 * the engine's clock somewhere in [t0, t1].  *@maybe_time: a valid answer
 * could also be DQ_REJ_TIME (the clock reading decides).
 */
static uint32_t expect_reason(const struct h *h, const struct dq_desc *d,
			      uint64_t t0, uint64_t t1, bool *maybe_time,
			      uint64_t *lo, uint64_t *hi)
{
	uint16_t ok = DQ_DESC_F_RELATIVE;

	*maybe_time = false;
	if (h->tracked)
		ok |= DQ_DESC_F_ATTEMPTS;
	if (h->keyed)
		ok |= DQ_DESC_F_KEY | DQ_DESC_F_REPLACE;
	if ((d->flags & ~ok) ||
	    ((d->flags & DQ_DESC_F_REPLACE) && !(d->flags & DQ_DESC_F_KEY)))
		return DQ_REJ_FLAGS;
	if (d->resv && !(d->flags & DQ_DESC_F_ATTEMPTS))
		return DQ_REJ_RESV;
	if (d->slot >= h->q->slot_count)
		return DQ_REJ_SLOT;
	if (d->len > h->q->slot_size)
		return DQ_REJ_LEN;
	if (d->flags & DQ_DESC_F_RELATIVE) {
		if (d->due_ns > DQ_MAX_DELAY_NS)
			return DQ_REJ_TIME;
		*lo = t0 + d->due_ns;
		*hi = t1 + d->due_ns;
	} else {
		/* Too far for every clock reading in [t0, t1]? */
		if (d->due_ns > t1 && d->due_ns - t1 > DQ_MAX_DELAY_NS)
			return DQ_REJ_TIME;
		if (d->due_ns > t0 && d->due_ns - t0 > DQ_MAX_DELAY_NS)
			*maybe_time = true;
		*lo = *hi = d->due_ns;
	}
	if (h->m[d->slot].state != M_FREE)
		return DQ_REJ_BUSY;
	return DQ_REJ_NR;
}

static const struct dq_reject *find_rej(const struct h *h, uint32_t index,
					bool replaced)
{
	const struct dq_reject *r = NULL;
	uint32_t i;

	for (i = 0; i < h->nrej; i++) {
		if (h->rej[i].index != index ||
		    (h->rej[i].reason == DQ_REPLACED) != replaced)
			continue;
		FZ_CHECK(!r, "two %s entries for index %u",
			 replaced ? "replaced" : "reject", index);
		r = &h->rej[i];
	}
	return r;
}

/* dq_flush() and the model's account of every descriptor in the batch. */
static void h_flush(struct h *h)
{
	struct dqshim_queue *q = h->q;
	uint32_t from = h->batch_start, to = q->sq_tail, n = to - from, i;
	uint32_t nacc = 0, nentries = 0;
	struct dq_desc descs[256];
	uint64_t t0, t1;
	int ret;

	FZ_CHECK(n <= q->sq_entries && n <= 256, "batch of %u", n);
	for (i = 0; i < n; i++)
		descs[i] = q->sq_ring[(from + i) & (q->sq_entries - 1)];
	h->nrej = 0;
	t0 = dq_now_ns();
	ret = dq_flush(q);
	t1 = dq_now_ns();
	if (!n) {
		FZ_CHECK(ret == 0 && h->nrej == 0, "empty flush: %d", ret);
		return;
	}
	FZ_CHECK(ret >= 0, "flush: %d", ret);
	h->batch_start = to;
	FZ_CHECK(*q->sq_cons == to, "engine left entries: %u of %u",
		 *q->sq_cons, to);

	for (i = 0; i < n; i++) {
		const struct dq_desc *d = &descs[i];
		uint32_t index = from + i;
		const struct dq_reject *rj = find_rej(h, index, false);
		const struct dq_reject *rp = find_rej(h, index, true);
		uint64_t lo = 0, hi = 0;
		bool maybe_time;
		uint32_t why = expect_reason(h, d, t0, t1, &maybe_time, &lo, &hi);
		int key_err = 0, holder = -1;

		h->flushed++;
		if (why == DQ_REJ_NR && (d->flags & DQ_DESC_F_KEY)) {
			holder = key_holder(h, d->user_data);
			if (!(d->flags & DQ_DESC_F_REPLACE)) {
				if (holder >= 0)
					key_err = -EEXIST;
			} else if (holder < 0) {
				key_err = -ENOENT;
			} else if (h->m[holder].state == M_INFLIGHT) {
				key_err = -EBUSY;
			}
			if (key_err)
				why = DQ_REJ_KEY;
		}
		if (rj) {
			nentries++;
			FZ_CHECK(!rp, "index %u rejected and replacing", index);
			FZ_CHECK(rj->slot == d->slot &&
				 rj->user_data == d->user_data,
				 "reject %u names slot %u, desc %u", index,
				 rj->slot, d->slot);
			if (maybe_time && rj->reason == DQ_REJ_TIME) {
				FZ_CHECK(rj->error == -EOVERFLOW, "time errno");
			} else {
				FZ_CHECK(rj->reason == why,
					 "index %u rejected for %u, expected %u "
					 "(slot %u len %u flags %#x resv %u due %llu)",
					 index, rj->reason, why, d->slot, d->len,
					 d->flags, d->resv,
					 (unsigned long long)d->due_ns);
				FZ_CHECK(rj->error == (why == DQ_REJ_KEY ? key_err :
						       dq_reject_errno(why)),
					 "index %u reason %u errno %d", index,
					 rj->reason, rj->error);
			}
			FZ_CHECK(rj->reason < DQ_REJ_MAX, "reason %u", rj->reason);
			h->rejected++;
			h->rej_by[rj->reason]++;
			continue;
		}
		/* Accepted. */
		FZ_CHECK(why == DQ_REJ_NR,
			 "index %u accepted, expected reject %u (slot %u len %u "
			 "flags %#x resv %u due %llu state %u)", index, why,
			 d->slot, d->len, d->flags, d->resv,
			 (unsigned long long)d->due_ns,
			 d->slot < MAX_SLOTS ? h->m[d->slot].state : 0);
		nacc++;
		if ((d->flags & (DQ_DESC_F_KEY | DQ_DESC_F_REPLACE)) ==
		    (DQ_DESC_F_KEY | DQ_DESC_F_REPLACE)) {
			FZ_CHECK(rp && holder >= 0, "replace without an entry");
			nentries++;
			FZ_CHECK(rp->slot == (uint32_t)holder &&
				 rp->user_data == d->user_data && rp->error == 0,
				 "replaced entry names slot %u, holder %d",
				 rp->slot, holder);
			h->m[holder].state = M_FREE;
			h->m[holder].keyed = false;
			h->replaced++;
		} else {
			FZ_CHECK(!rp, "index %u: replaced entry without replace",
				 index);
		}
		h->m[d->slot] = (struct mslot){
			.state = M_HELD, .ever = true,
			.keyed = d->flags & DQ_DESC_F_KEY,
			.attempts = d->flags & DQ_DESC_F_ATTEMPTS ? d->resv : 0,
			.gen = d->gen, .len = d->len,
			.user_data = d->user_data,
			.due_lo = lo, .due_hi = hi, .flushed_at = t1,
			.seq = h->accepted,
		};
		h->accepted++;
	}
	FZ_CHECK((uint32_t)ret == nacc, "flush said %d accepted, harness %u",
		 ret, nacc);
	FZ_CHECK(h->nrej == nentries, "%u reject entries, harness expected %u",
		 h->nrej, nentries);
}

static void ring_room(struct h *h)
{
	struct dqshim_queue *q = h->q;

	if (q->sq_tail - *q->sq_cons >= q->sq_entries)
		h_flush(h);
}

/* A raw descriptor into the submit ring, as a hostile producer would. */
static void op_raw(struct h *h, struct fz *f)
{
	struct dqshim_queue *q = h->q;
	uint8_t shape = fz_u8(f);
	struct dq_desc d;

	ring_room(h);
	memset(&d, 0, sizeof(d));
	d.due_ns = due_value(f, dq_now_ns());
	d.user_data = shape & 1 ? fz_u64(f) : fz_u8(f) % 8;
	d.slot = shape & 2 ? fz_u32(f) : fz_u8(f) % (q->slot_count + 2);
	d.len = shape & 4 ? fz_u32(f) : fz_u16(f) % (q->slot_size + 65);
	d.gen = shape & 8 ? fz_u32(f) : fz_u8(f) % 4;
	d.flags = shape & 16 ? fz_u16(f) : fz_u8(f) & 0xf;
	d.resv = shape & 32 ? fz_u16(f) : (shape & 64 ? fz_u8(f) % 4 : 0);
	q->sq_ring[q->sq_tail & (q->sq_entries - 1)] = d;
	dq_store_release_u32(q->sq_prod, ++q->sq_tail);
}

/* Reserve, then commit through the public API (or abort). */
static void op_reserve(struct h *h)
{
	struct dqshim_msg m;
	int ret = dq_reserve(h->q, &m);

	FZ_CHECK(ret == 0 || ret == -ENOSPC, "reserve: %d", ret);
	if (ret)
		return;
	FZ_CHECK(m.slot < h->q->slot_count && m.cap == h->q->slot_size &&
		 m.data == h->q->arena + (size_t)m.slot * h->q->slot_size,
		 "reserved slot %u", m.slot);
	if (h->nres == MAX_RES) {
		FZ_CHECK(dq_abort(h->q, &m) == 0, "abort");
		return;
	}
	h->res[h->nres++] = m;
}

static void op_commit(struct h *h, struct fz *f)
{
	struct dqshim_queue *q = h->q;
	uint8_t how = fz_u8(f), pick = fz_u8(f);
	struct dqshim_msg m;
	uint32_t len, before;
	uint64_t due, ud;
	bool have = h->nres && !(how & 0x80);
	int ret;

	if (have) {
		m = h->res[pick % h->nres];
	} else {
		/* A forged or stale message: must be refused. */
		memset(&m, 0, sizeof(m));
		m.slot = pick % (q->slot_count + 1);
		m.gen = fz_u8(f);
	}
	m.attempts = how & 0x40 ? fz_u16(f) : 0;
	len = fz_u16(f) % (q->slot_size + 65);
	due = due_value(f, dq_now_ns());
	ud = how & 0x20 ? fz_u64(f) : fz_u8(f) % 8;
	ring_room(h);
	before = q->sq_tail;
	switch (how % 4) {
	case 0:
		ret = dq_commit(q, &m, len, due, ud);
		break;
	case 1:
		ret = dq_commit_delay(q, &m, len, due, ud);
		break;
	default:
		ret = dq_commit_key(q, &m, len, due, ud, (how >> 2) & 7);
		break;
	}
	if (ret == 0) {
		uint32_t i;

		FZ_CHECK(q->sq_tail == before + 1, "commit wrote no entry");
		/* A forged one may happen to name a reserved slot and gen. */
		for (i = 0; i < h->nres; i++)
			if (h->res[i].slot == m.slot && h->res[i].gen == m.gen)
				break;
		FZ_CHECK(i < h->nres, "a message not reserved was committed "
			 "(slot %u gen %u)", m.slot, m.gen);
		h->res[i] = h->res[--h->nres];
	} else {
		FZ_CHECK(q->sq_tail == before, "failed commit wrote an entry");
		FZ_CHECK(ret == -EINVAL || ret == -EMSGSIZE, "commit: %d", ret);
	}
}

static void op_abort(struct h *h, struct fz *f)
{
	uint8_t pick = fz_u8(f);
	int ret;

	if (!h->nres)
		return;
	pick %= h->nres;
	ret = dq_abort(h->q, &h->res[pick]);
	FZ_CHECK(ret == 0, "abort of a reserved message: %d", ret);
	h->res[pick] = h->res[--h->nres];
}

static void op_cancel(struct h *h, struct fz *f)
{
	struct dqshim_queue *q = h->q;
	uint8_t how = fz_u8(f);
	uint64_t handle;
	uint32_t slot;
	int ret, want;

	if (how & 1) {
		handle = fz_u64(f);
	} else {
		slot = fz_u8(f) % (q->slot_count + 1);
		handle = DQ_HANDLE(slot, slot < q->slot_count ?
				   h->m[slot].gen + (how & 2 ? 1 : 0) : 0);
	}
	h_flush(h);
	slot = DQ_HANDLE_SLOT(handle);
	if (slot >= q->slot_count || !h->m[slot].ever ||
	    h->m[slot].gen != DQ_HANDLE_GEN(handle))
		want = -ENOENT;
	else if (h->m[slot].state == M_HELD)
		want = 0;
	else
		want = -EALREADY;
	ret = dq_cancel(q, handle);
	FZ_CHECK(ret == want, "cancel(slot %u gen %u): %d, model says %d",
		 slot, DQ_HANDLE_GEN(handle), ret, want);
	if (!ret) {
		h->m[slot].state = M_FREE;
		h->m[slot].keyed = false;
		h->cancelled++;
	}
}

static void op_key(struct h *h, struct fz *f)
{
	uint8_t how = fz_u8(f);
	uint64_t key = how & 1 ? fz_u64(f) : fz_u8(f) % 8;
	struct dq_key_info ki;
	uint64_t t0, t1;
	int ret, holder;

	h_flush(h);
	holder = key_holder(h, key);
	memset(&ki, 0xa5, sizeof(ki));
	t0 = dq_now_ns();
	ret = how & 2 ? dq_cancel_key(h->q, key, how & 4 ? NULL : &ki) :
			dq_lookup_key(h->q, key, &ki);
	t1 = dq_now_ns();
	if (!h->keyed) {
		FZ_CHECK(ret == -EOPNOTSUPP, "key op on a keyless queue: %d", ret);
		return;
	}
	if (holder < 0) {
		FZ_CHECK(ret == -ENOENT, "key %llu held by nothing: %d",
			 (unsigned long long)key, ret);
		return;
	}
	if ((how & 2) && h->m[holder].state == M_INFLIGHT) {
		FZ_CHECK(ret == -EALREADY, "cancel_key in flight: %d", ret);
		return;
	}
	FZ_CHECK(ret == 0, "key op: %d (holder %d state %u)", ret, holder,
		 h->m[holder].state);
	if ((how & 6) != 6) {
		struct mslot *m = &h->m[holder];

		FZ_CHECK(ki.handle == DQ_HANDLE(holder, m->gen),
			 "key handle %#llx", (unsigned long long)ki.handle);
		FZ_CHECK(ki.due_ns >= m->due_lo && ki.due_ns <= m->due_hi,
			 "key due %llu not in [%llu, %llu]",
			 (unsigned long long)ki.due_ns,
			 (unsigned long long)m->due_lo,
			 (unsigned long long)m->due_hi);
		FZ_CHECK(ki.resv == 0, "key info resv");
		if (m->state == M_INFLIGHT)
			FZ_CHECK(ki.state == DQ_KEY_INFLIGHT, "state %u", ki.state);
		else if (ki.due_ns <= t0)
			FZ_CHECK(ki.state == DQ_KEY_DUE, "due, state %u", ki.state);
		else if (ki.due_ns > t1)
			FZ_CHECK(ki.state == DQ_KEY_PENDING, "pending, state %u",
				 ki.state);
	}
	if (how & 2) {
		h->m[holder].state = M_FREE;
		h->m[holder].keyed = false;
		h->cancelled++;
	}
}

static void h_reap(struct h *h, unsigned int max)
{
	struct dqshim_queue *q = h->q;
	struct dq_reaped out[64];
	uint64_t t0, t1;
	int n, i;

	t0 = dq_now_ns();
	n = dq_reap(q, out, max, 0);
	t1 = dq_now_ns();
	FZ_CHECK(n >= 0 && (unsigned int)n <= max, "reap: %d", n);
	/*
	 * Release order within one reap: due order, FIFO among equal due
	 * times (dqshim.h).  Not on a capped tracked queue, where what
	 * waited for a credit goes first.
	 */
	for (i = 1; i < n && !(h->tracked && h->max_inflight); i++) {
		const struct mslot *a = &h->m[out[i - 1].slot % MAX_SLOTS];
		const struct mslot *b = &h->m[out[i].slot % MAX_SLOTS];

		FZ_CHECK(out[i - 1].due_ns < out[i].due_ns ||
			 (out[i - 1].due_ns == out[i].due_ns && a->seq < b->seq),
			 "reap order: slot %u (due %llu) before slot %u (due %llu)",
			 out[i - 1].slot, (unsigned long long)out[i - 1].due_ns,
			 out[i].slot, (unsigned long long)out[i].due_ns);
	}
	for (i = 0; i < n; i++) {
		const struct dq_reaped *r = &out[i];
		struct mslot *m;

		FZ_CHECK(r->slot < q->slot_count, "reaped slot %u", r->slot);
		m = &h->m[r->slot];
		FZ_CHECK(m->state == M_HELD,
			 "slot %u came out but is not held (state %u): twice, "
			 "cancelled or never accepted", r->slot, m->state);
		FZ_CHECK(r->user_data == m->user_data && r->len == m->len,
			 "slot %u: user_data/len differ", r->slot);
		FZ_CHECK(r->due_ns >= m->due_lo && r->due_ns <= m->due_hi,
			 "slot %u: due %llu not in [%llu, %llu]", r->slot,
			 (unsigned long long)r->due_ns,
			 (unsigned long long)m->due_lo,
			 (unsigned long long)m->due_hi);
		FZ_CHECK(r->release_ns >= r->due_ns,
			 "slot %u released early: due %llu release %llu",
			 r->slot, (unsigned long long)r->due_ns,
			 (unsigned long long)r->release_ns);
		FZ_CHECK(r->release_ns >= t0 && r->release_ns <= t1,
			 "release time outside the call");
		FZ_CHECK(r->data == q->arena + (size_t)r->slot * q->slot_size,
			 "payload pointer");
		FZ_CHECK(r->resv == 0 && r->redeliveries == 0, "reaped resv");
		if (h->tracked) {
			FZ_CHECK(DQ_HANDLE_SLOT(r->handle) == r->slot &&
				 DQ_HANDLE_GEN(r->handle) == m->gen,
				 "tracked handle");
			FZ_CHECK(r->attempts == m->attempts, "attempts %u vs %u",
				 r->attempts, m->attempts);
			m->state = M_INFLIGHT;
		} else {
			FZ_CHECK(r->attempts == 0, "untracked attempts");
			m->state = M_FREE;
			m->keyed = false;
		}
		h->released++;
	}
	if (h->tracked && h->max_inflight)
		FZ_CHECK(held_count(h, M_INFLIGHT) <= h->max_inflight,
			 "%u in flight, cap %u", held_count(h, M_INFLIGHT),
			 h->max_inflight);
}

static void op_done(struct h *h, struct fz *f)
{
	struct dqshim_queue *q = h->q;
	uint8_t how = fz_u8(f);
	uint32_t slot = how & 1 ? fz_u32(f) : fz_u8(f) % (q->slot_count + 1);
	uint32_t outcome = how & 2 ? fz_u32(f) : (how >> 2) % 3;
	bool finish = how & 0x80;
	bool lib_ready = slot < q->slot_count &&
			 q->slots[slot].state == DQ_SLOT_READY;
	int ret;

	if (!finish)
		outcome = DQ_DONE_DELIVERED;
	ret = finish ? dq_finish(q, slot, outcome) : dq_done(q, slot);
	if (slot >= q->slot_count || outcome >= DQ_DONE_NR) {
		FZ_CHECK(ret == -EINVAL, "done of slot %u outcome %u: %d", slot,
			 outcome, ret);
		return;
	}
	if (!h->tracked) {
		if (outcome != DQ_DONE_DELIVERED)
			FZ_CHECK(ret == -EOPNOTSUPP, "untracked FAILED: %d", ret);
		else
			FZ_CHECK(ret == (lib_ready ? 0 : -EINVAL),
				 "untracked done of slot %u: %d", slot, ret);
		return;
	}
	if (lib_ready)
		FZ_CHECK(ret == 0, "finish of reaped slot %u: %d", slot, ret);
	if (ret)
		return;
	FZ_CHECK(h->m[slot].state == M_INFLIGHT,
		 "finish of slot %u accepted, not in flight", slot);
	h->m[slot].state = M_FREE;
	h->m[slot].keyed = false;
	if (outcome == DQ_DONE_DELIVERED)
		h->delivered++;
	else
		h->failed++;
}

/* A producer index the engine must refuse (-EPROTO), then put right. */
static void op_broken_ring(struct h *h, struct fz *f)
{
	struct dqshim_queue *q = h->q;
	uint32_t bad = *q->sq_cons + q->sq_entries + 1 + fz_u32(f) % 0x7fffffffU;
	int ret;

	dq_store_release_u32(q->sq_prod, bad);
	ret = dq_flush(q);
	FZ_CHECK(ret == -EPROTO, "broken producer index: %d", ret);
	h->ring_errors++;
	dq_store_release_u32(q->sq_prod, q->sq_tail);
}

/* dq_setup_normalise() alone, and against dq_queue_open(). */
static void check_setup(const struct dq_setup *raw)
{
	struct dq_setup s = *raw, s2;
	struct dq_params p;
	struct dqshim_queue *q;
	int r, r2;

	r = dq_setup_normalise(&s);
	FZ_CHECK(r == 0 || r == -EINVAL, "normalise: %d", r);
	if (!r) {
		FZ_CHECK(s.slot_count >= 1 && s.slot_count <= DQ_MAX_SLOTS,
			 "slot_count %u", s.slot_count);
		FZ_CHECK(s.slot_size >= DQ_MIN_SLOT_SIZE &&
			 s.slot_size <= DQ_MAX_SLOT_SIZE &&
			 !(s.slot_size % dq_setup_slot_align(s.flags)),
			 "slot_size %u", s.slot_size);
		FZ_CHECK(s.submit_entries && s.submit_entries <= DQ_MAX_RING_ENTRIES &&
			 !(s.submit_entries & (s.submit_entries - 1)),
			 "submit_entries %u", s.submit_entries);
		FZ_CHECK(s.ready_entries && s.ready_entries <= DQ_MAX_RING_ENTRIES &&
			 !(s.ready_entries & (s.ready_entries - 1)),
			 "ready_entries %u", s.ready_entries);
		FZ_CHECK(s.granularity_ns && s.granularity_ns <= DQ_MAX_GRANULARITY_NS,
			 "granularity %u", s.granularity_ns);
		FZ_CHECK(!(s.flags & ~DQ_SETUP_F_ALL), "flags");
		/* Idempotent: the queue's own shape is a valid setup. */
		s2 = s;
		FZ_CHECK(dq_setup_normalise(&s2) == 0 && !memcmp(&s, &s2, sizeof(s)),
			 "normalise is not idempotent");
	}

	/*
	 * The same request as dq_params: what dq_queue_open() can express
	 * (no visibility_ns, instance, resv2, unknown flags; 0 count/size: defaults).
	 */
	s2 = *raw;
	s2.flags &= DQ_SETUP_F_ALL;
	s2.visibility_ns = 0;
	s2.instance = 0;
	memset(s2.resv2, 0, sizeof(s2.resv2));
	if (!s2.slot_count)
		s2.slot_count = DQ_DEFAULT_SLOTS;
	if (!s2.slot_size)
		s2.slot_size = DQ_MIN_SLOT_SIZE;
	r = dq_setup_normalise(&s2);
	/* Only queues that are cheap to make (libFuzzer needs speed). */
	if (!r && ((uint64_t)s2.slot_count * s2.slot_size > (256U << 10) ||
		   s2.submit_entries > 4096))
		return;
	dq_params_init(&p);
	p.slot_count = raw->slot_count;
	p.slot_size = raw->slot_size;
	p.submit_entries = raw->submit_entries;
	p.ready_entries = raw->ready_entries;
	p.numa_node = raw->numa_node;
	p.granularity_ns = raw->granularity_ns;
	p.max_inflight = raw->max_inflight;
	p.flags = (raw->flags & DQ_SETUP_F_TRACK ? DQ_OPEN_F_TRACK : 0) |
		  (raw->flags & DQ_SETUP_F_KEYS ? DQ_OPEN_F_KEYS : 0) |
		  (raw->flags & DQ_SETUP_F_SLOT_ALIGN8 ?
		   DQ_OPEN_F_SLOT_ALIGN8 : 0);
	p.backend = DQ_BACKEND_USER;
	r2 = dq_queue_open(&p, &q);
	FZ_CHECK((r == 0) == (r2 == 0), "normalise %d, open %d", r, r2);
	if (r2) {
		FZ_CHECK(r2 == -EINVAL && !q, "open: %d", r2);
		return;
	}
	{
		struct dq_info info = { .sz = sizeof(info) };

		dq_queue_info(q, &info);
		FZ_CHECK(info.backend == DQ_BACKEND_USER &&
			 info.slot_count == s2.slot_count &&
			 info.slot_size == s2.slot_size &&
			 info.submit_entries == s2.submit_entries &&
			 info.ready_entries == s2.ready_entries &&
			 info.granularity_ns == s2.granularity_ns &&
			 info.arena_size >= (uint64_t)s2.slot_count * s2.slot_size,
			 "info differs from the normalised setup");
	}
	dq_queue_close(q);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz f = { .p = data, .n = size };
	struct dq_setup raw;
	struct dq_params p;
	struct h *h;
	uint8_t cfg;
	unsigned int ops;
	uint32_t i;
	int ret;

	fz_bytes(&f, &raw, sizeof(raw));
	check_setup(&raw);

	h = calloc(1, sizeof(*h));
	if (!h)
		return 0;
	cfg = fz_u8(&f);
	dq_params_init(&p);
	p.backend = DQ_BACKEND_USER;
	p.slot_count = 1 + fz_u8(&f) % MAX_SLOTS;
	p.slot_size = 64 + fz_u8(&f);		/* rounds to 64 .. 320 */
	p.submit_entries = fz_u8(&f) % 65;	/* 0: 64 */
	p.granularity_ns = fz_u8(&f) * 1000U;
	h->tracked = cfg & 1;
	h->keyed = cfg & 2;
	p.flags = (h->tracked ? DQ_OPEN_F_TRACK : 0) |
		  (h->keyed ? DQ_OPEN_F_KEYS : 0);
	i = fz_u8(&f);
	if (h->tracked && (cfg & 4))
		p.max_inflight = 1 + i % p.slot_count;
	h->max_inflight = p.max_inflight;
	p.on_reject = on_reject;
	p.reject_arg = h;
	ret = dq_queue_open(&p, &h->q);
	FZ_CHECK(ret == 0, "open of a small valid queue: %d", ret);
	FZ_CHECK(h->q->slot_count <= MAX_SLOTS && h->q->sq_entries <= 64 &&
		 h->q->slot_size <= 320,
		 "queue shape");

	for (ops = 0; ops < MAX_OPS && fz_left(&f); ops++) {
		switch (fz_u8(&f) % 13) {
		case 0:
		case 1:
			op_raw(h, &f);
			break;
		case 2:
			op_reserve(h);
			break;
		case 3:
			op_commit(h, &f);
			break;
		case 4:
			op_abort(h, &f);
			break;
		case 5:
			h_flush(h);
			break;
		case 6:
			op_cancel(h, &f);
			break;
		case 7:
			op_key(h, &f);
			break;
		case 8:
			h_flush(h);
			h_reap(h, 1 + fz_u8(&f) % 64);
			break;
		case 9:
			op_done(h, &f);
			break;
		case 10:
			h_flush(h);
			check_stats(h);
			break;
		case 11:
			if (fz_u8(&f) < 16)
				op_broken_ring(h, &f);
			break;
		default:
			h_reap(h, 1 + fz_u8(&f) % 64);
			break;
		}
	}

	/*
	 * The end: everything flushed, what is due released (with a wheel
	 * tick of margin for what was taken just now), counters agree.
	 */
	h_flush(h);
	{
		uint64_t t = dq_now_ns();
		bool live = !h->tracked || !h->max_inflight;

		for (i = 0; i < 64; i++) {
			uint32_t before = held_count(h, M_HELD);

			h_reap(h, 64);
			if (held_count(h, M_HELD) == before)
				break;
		}
		for (i = 0; live && i < h->q->slot_count; i++) {
			const struct mslot *m = &h->m[i];

			FZ_CHECK(!(m->state == M_HELD && m->due_hi + TICK < t &&
				   m->flushed_at + TICK < t),
				 "slot %u due %llu still held at %llu", i,
				 (unsigned long long)m->due_hi,
				 (unsigned long long)t);
		}
	}
	check_stats(h);
	dq_queue_close(h->q);
	free(h);
	return 0;
}
