// SPDX-License-Identifier: LGPL-2.1 OR MIT
/*
 * libdqshim user backend: dq's engine embedded in the process.
 *
 * The same release structure as dq.ko (kmod/shared/dq_wheel.c, compiled into the
 * library from its kmod/ path), the same submit ring protocol and the same
 * validation, reject reasons, cancel answers and ordering: (due, insertion
 * order).  What differs is the clock and who runs it:
 *
 *  - There is no release thread.  A timerfd (CLOCK_MONOTONIC, absolute)
 *    is kept armed for the wheel's next work; it is the queue's pollable
 *    fd, and the consumer sleeps on it inside dq_reap().  When it fires,
 *    dq_reap() advances the wheel to "now" and hands out what is due,
 *    with release_ns = that now.  So nothing is released before its due
 *    time, and nothing is released while no consumer looks: the same
 *    "released" the consumer of the kernel backend observes.
 *  - Producers that insert something earlier than the armed time re-arm
 *    the timerfd, which also wakes a consumer already asleep on it.
 *  - One wake-up, one re-arm: a blocking dq_reap() re-arms only when it
 *    found nothing due and is about to sleep, never per reap that
 *    returns messages, and only when the armed time is no longer good
 *    (expired, or outside [next work, its target]).  A wake-up
 *    therefore costs at most one timerfd_settime(), and a consumer that
 *    never sleeps none; counted in timer_sets (dq_queue_lib_stats()).
 *    A non-blocking dq_reap() (a poller's) re-arms when its run is over,
 *    so that the fd is readable exactly while work is due.
 *  - Slack: the timer fires at most slack_max (the queue's granularity
 *    less the wheel's tick, like dq.ko's hrtimer slack) after the next
 *    due time.  It adapts to the density of due times (dq_slack_update()
 *    in kmod/shared/dq_slack.h, the same code as dq.ko's engines):
 *    the full slack_max only when releases are due close enough together
 *    that waiting that long coalesces some (at least two expected within
 *    slack_max), proportionally less when they are sparse, where waiting
 *    would only make each message late.  DQ_OPEN_F_FIXED_SLACK keeps it
 *    at slack_max.  Never early either way: the timer is never armed
 *    before the next due time.
 *
 * One mutex (e->lock) covers the wheel, the per-slot records (both
 * parts: e->nodes, 24 bytes, what the wheel and the hot path touch, in
 * one mapping on huge pages where the system gives them; e->msgs, 12
 * bytes, the rest, after them in the same mapping, and on a tracked
 * queue e->attempts, 2), the in-flight
 * and paced lists (linked through the nodes' wheel links, which a record
 * out of the wheel does not use), the timerfd's armed time, the submit ring's consumer side and the counters.
 * A record's index in the wheel is its slot.
 * The timerfd's expiry count is never read: timerfd_settime() clears it.
 *
 * Delivery tracking (DQ_OPEN_F_TRACK), as dq.ko's dq_track.c: a message
 * handed out by dq_reap() is in flight (DQ_MSG_INFLIGHT, on e->inflight in
 * release order) until dq_finish() sends DONE, checked by the shared
 * dq_rec_done_check_gen().  With max_inflight, a due message that finds no
 * credit waits on e->paced (DQ_MSG_PACED, due order, counted in
 * credit_waits and the queue's paced), ahead of anything due later; a
 * DONE returns the credit and makes the timerfd readable at once when a
 * message waits.  The process is the only consumer and its queue dies
 * with it, so a consumer that goes away redelivers nothing; a visibility
 * timeout (dq_params.visibility_ns) does, as dq.ko's dq_vis_timer_fn():
 * a message in flight that long goes back to the front of e->paced,
 * oldest first, its redeliveries one higher (e->redeliveries), and the
 * DONE of its earlier delivery is refused with -ESTALE.  The oldest in
 * flight's expiry is part of the timer's next work, so a consumer asleep
 * in dq_reap() wakes for it; the move itself (dq_ue_expire()) is made by
 * the release run, and by dq_queue_track_stats() so that its counters say
 * what dq.ko's would.
 *
 * Application keys (DQ_SETUP_F_KEYS), as dq.ko's dq_keys.c and
 * dq_submit_key(): the shared index (kmod/shared/dq_keys.h, 8 bytes per
 * slot, allocated only for a keyed queue) maps a key to the slot whose
 * record holds it (DQ_REC_F_KEYED).  A key is held from intake until the
 * record leaves: handed out untracked, done tracked, cancelled, replaced
 * (or the queue closes, which frees the index whole).  Descriptors with
 * DQ_DESC_F_KEY are taken only when e->keys exists: dq_ue_check() asks
 * dq_desc_flags_ok() for them then and only then.  There is no ready
 * ring here: a due message stays in the wheel until dq_reap() takes it,
 * so it can still be replaced or cancelled by key until then (dq.ko:
 * until it is posted).
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "dq_desc.h"
#include "dq_msg.h"
#include "dq_keys.h"	/* after dq_msg.h: it needs <linux/limits.h> */
#include "dq_wheel.h"
#include "dq_slack.h"
#include "dq_internal.h"

/*
 * The cold part of a record, 12 bytes where dq.ko's struct dq_msg_rec
 * has 16: attempts and redeliveries matter only on a tracked queue
 * (untracked ones refuse DQ_DESC_F_ATTEMPTS and never redeliver), which
 * keeps them in e->attempts and e->redeliveries.  Packed: an
 * array of them has user_data 4-byte aligned, which x86-64 loads at no
 * cost and the compiler handles elsewhere.
 */
struct dq_ue_rec {
	uint64_t user_data;
	uint32_t gen;			/* of the last accepted descriptor */
} __attribute__((packed, aligned(4)));

_Static_assert(sizeof(struct dq_ue_rec) == 12, "12-byte cold record");

/* Submit ring header: indices on separate cache lines, as dq.ko's. */
struct dq_ue_ring_hdr {
	uint32_t producer __attribute__((aligned(64)));
	uint32_t consumer __attribute__((aligned(64)));
	uint32_t flags __attribute__((aligned(64)));
};

struct dq_ue {
	pthread_mutex_t lock;
	struct dq_wheel wheel;
	struct dq_wheel_node *nodes;	/* slot_count: the wheel's records */
	size_t nodes_size;		/* bytes mapped */
	struct dq_wheel_node **dir;	/* the wheel's directory of @nodes */
	struct dq_ue_rec *msgs;		/* slot_count: the records' cold part,
				 * inside the nodes' mapping */
	uint16_t *attempts;		/* tracked: slot_count, as submitted */
	uint16_t *redeliveries;		/* tracked: slot_count, releases after
					 * the first (visibility timeouts)
					 */
	int tfd;
	uint64_t armed;			/* timerfd expiry; UINT64_MAX: off */
	/*
	 * The timer's slack and the density of due times it adapts to
	 * (kmod/shared/dq_slack.h, as dq.ko's engines): slack.max is the
	 * granularity less the wheel's tick, slack.cur what is applied now,
	 * slack.fixed DQ_OPEN_F_FIXED_SLACK.
	 */
	struct dq_slack slack;
	/* Counters for dq_queue_lib_stats() (e->lock). */
	uint64_t timer_sets;		/* timerfd_settime() calls */
	uint64_t timer_sets_submit;	/* of which by a submit (earlier) */
	uint64_t wakeups;		/* the consumer's sleeps that ended */
	uint64_t wakeups_idle;		/* of which released nothing */

	struct dq_ue_ring_hdr *hdr;	/* + the descriptor array */
	uint32_t sq_cons;		/* own copy, never read back */

	/* Delivery tracking. */
	bool tracked;
	uint32_t max_inflight;		/* 0: no cap */
	struct dq_ilist inflight;	/* released, not done: release order */
	struct dq_ilist paced;		/* due, waiting for a credit */
	uint64_t inflight_len;
	uint64_t paced_len;
	uint64_t *released_at;		/* per slot, while in flight */
	uint64_t visibility_ns;		/* 0: never redeliver */
	uint64_t expired;		/* in flight past it, put back */
	uint64_t done_delivered;
	uint64_t done_failed;
	uint64_t done_refused;
	uint64_t credit_waits;

	/* Application keys: head/next NULL on a queue without them. */
	struct dq_keys keys;
	uint64_t replaced;

	uint64_t pending;
	uint64_t submitted;
	uint64_t released;
	uint64_t cancelled;
	uint64_t rejected[DQ_REJ_NR];
	uint64_t ring_errors;
	uint64_t late_max_ns;
	uint64_t late_sum_ns;
};

static struct dq_ue *dq_ue(struct dqshim_queue *q)
{
	return q->be;
}

static bool dq_ue_keyed(const struct dq_ue *e)
{
	return e->keys.head != NULL;
}

static u64 dq_ue_key_of(const void *owner, u32 slot)
{
	const struct dq_ue *e = owner;

	return e->msgs[slot].user_data;
}

/* The slot holding @key, or U32_MAX; e->lock held. */
static uint32_t dq_ue_key_find(const struct dq_ue *e, uint64_t key)
{
	return dq_keys_find(&e->keys, key, dq_ue_key_of, e);
}

/* @slot's message leaves the engine: its key (if any) is free; e->lock held. */
static void dq_ue_key_forget(struct dq_ue *e, uint32_t slot)
{
	struct dq_wheel_node *n = &e->nodes[slot];

	if (!(n->owner16 & DQ_REC_F_KEYED))
		return;
	dq_keys_del(&e->keys, slot, e->msgs[slot].user_data);
	n->owner16 &= ~DQ_REC_F_KEYED;
}

/* @slot's message leaves the engine: FREE, key forgotten; e->lock held. */
static void dq_ue_rec_free(struct dq_ue *e, uint32_t slot)
{
	dq_ue_key_forget(e, slot);
	dq_rec_set_state(&e->nodes[slot], DQ_MSG_FREE);
}

/* May a due message be handed out now?  e->lock held. */
static bool dq_ue_credit(const struct dq_ue *e)
{
	return !e->max_inflight || e->inflight_len < e->max_inflight;
}

/* When the oldest message in flight expires; UINT64_MAX: none will. */
static uint64_t dq_ue_vis_next(const struct dq_ue *e)
{
	if (!e->visibility_ns || dq_ilist_empty(&e->inflight))
		return UINT64_MAX;
	return e->released_at[e->inflight.head] + e->visibility_ns;
}

/*
 * The wheel's next work or the next expiry, or now when a message waits
 * for a free credit.
 */
static uint64_t dq_ue_next_work(const struct dq_ue *e, uint64_t now)
{
	uint64_t next, vis;

	if (e->paced_len && dq_ue_credit(e))
		return now;
	next = dq_wheel_next(&e->wheel);
	vis = dq_ue_vis_next(e);
	return vis < next ? vis : next;
}

/*
 * Messages in flight for visibility_ns at @now go back to the front of
 * the paced list, oldest first (released before anything waiting there),
 * their redeliveries one higher; e->lock held.  Release order is age
 * order: the expired are a prefix of e->inflight.
 */
static uint64_t dq_ue_expire(struct dq_ue *e, uint64_t now)
{
	struct dq_ilist expired;
	uint64_t n = 0;

	if (dq_ue_vis_next(e) > now)
		return 0;
	dq_ilist_init(&expired);
	while (!dq_ilist_empty(&e->inflight)) {
		uint32_t slot = e->inflight.head;

		if (e->released_at[slot] + e->visibility_ns > now)
			break;
		dq_ilist_pop(&e->wheel, &e->inflight);
		/* Wraps after 65535 like dq.ko's u16: DONE compares equal. */
		e->redeliveries[slot]++;
		dq_rec_set_state(&e->nodes[slot], DQ_MSG_PACED);
		dq_ilist_add_tail(&e->wheel, &expired, slot);
		n++;
	}
	e->inflight_len -= n;
	e->paced_len += n;
	e->expired += n;
	__dq_ilist_splice_tail(dq_wheel_node_fn, &e->wheel, &expired,
			       &e->paced);
	e->paced = expired;
	return n;
}

/* Set the timerfd to @at (absolute ns; UINT64_MAX: disarm); e->lock held. */
static void dq_ue_set_timer(struct dq_ue *e, uint64_t at)
{
	struct itimerspec its;

	memset(&its, 0, sizeof(its));
	if (at != UINT64_MAX) {
		/* An all-zero it_value would disarm: 1 ns is long past. */
		uint64_t t = at ? at : 1;

		its.it_value.tv_sec = (time_t)(t / 1000000000ULL);
		its.it_value.tv_nsec = (long)(t % 1000000000ULL);
	}
	/* Cannot fail with a valid fd and a normalised time. */
	timerfd_settime(e->tfd, at == UINT64_MAX ? 0 : TFD_TIMER_ABSTIME,
			&its, NULL);
	e->armed = at;
	e->timer_sets++;
}

/*
 * When to fire for work due at @next: @next plus @slack, so that
 * releases due close together share one wakeup.  Work already due is
 * released at once, as dq.ko does on insert.
 */
static uint64_t dq_ue_target(uint64_t next, uint64_t slack, uint64_t now)
{
	if (next == UINT64_MAX || next <= now)
		return next;
	return next > UINT64_MAX - slack ? UINT64_MAX - 1 : next + slack;
}

/*
 * The same for the wheel's next work: the adaptive slack, or the whole
 * slack_max for a cascade unless releases are sparse (dq_slack_next()).
 */
static uint64_t dq_ue_target_next(const struct dq_ue *e, uint64_t next,
				  uint64_t now)
{
	return dq_ue_target(next, dq_slack_next(&e->slack, next), now);
}

/*
 * After inserts, the earliest of them due at @first: fire no later than
 * it needs, i.e. at once when it is already due (as dq.ko releases such
 * a message on insert), else within the slack after it.  Not from the
 * wheel's next work: that may be already due (a message the consumer is
 * about to take, a timer armed within its slack), and re-arming for it
 * on every flush would defeat the slack; the release run at the wake-up
 * advances the wheel to its now, whatever cascades lie before @first.
 */
static void dq_ue_arm_earlier(struct dq_ue *e, uint64_t first, uint64_t now)
{
	uint64_t at;

	if (first == UINT64_MAX)
		return;
	at = dq_ue_target(first, e->slack.cur, now);
	if (at < e->armed) {
		dq_ue_set_timer(e, at);
		e->timer_sets_submit++;
	}
}

/*
 * At the end of a release run at @now (once per wake-up): the fd must
 * be readable while work is due and not long before, so
 *  - nothing held: disarm (once);
 *  - work due now: leave an expired timer alone, else make it expired;
 *  - work due later: keep an armed time that still fires within
 *    [next, target] (no early wake, no later than the slack allows),
 *    else arm for the target (which also clears an expiry already
 *    counted).
 * So a timer already right costs nothing, and a changing slack does not
 * re-arm by itself.
 */
static void dq_ue_rearm(struct dq_ue *e, uint64_t now)
{
	uint64_t next = dq_ue_next_work(e, now);
	uint64_t at;

	if (next == UINT64_MAX) {
		if (e->armed != UINT64_MAX)
			dq_ue_set_timer(e, UINT64_MAX);
		return;
	}
	if (next <= now) {
		if (e->armed > now)
			dq_ue_set_timer(e, next);
		return;
	}
	at = dq_ue_target_next(e, next, now);
	if (e->armed <= now || e->armed < next || e->armed > at)
		dq_ue_set_timer(e, at);
}

/*
 * Validate one private copy of a descriptor: true when it may be taken,
 * else false with the DQ_REJ_* reason (as dq.ko's dq_desc_check()).
 * @flags_ok: dq_ue_flags_ok(), once per batch.
 */
static inline bool dq_ue_check(struct dqshim_queue *q, struct dq_ue *e,
			       const struct dq_desc *d, u16 flags_ok, u64 now,
			       u64 *due, u32 *reason)
{
	return dq_desc_valid(d, flags_ok, q->slot_count, q->slot_size, now,
			     due, reason) &&
	       dq_rec_may_take(&e->nodes[d->slot], reason);
}

/* The descriptor flags this engine takes (dq_desc_flags_ok()). */
static u16 dq_ue_flags_ok(const struct dq_ue *e)
{
	return dq_desc_flags_ok((e->tracked ? DQ_SETUP_F_TRACK : 0) |
				(dq_ue_keyed(e) ? DQ_SETUP_F_KEYS : 0));
}

/*
 * Take a held message out of the engine (cancel, replace): in the wheel,
 * or due and waiting for a credit.  0, or -EALREADY when it was handed
 * out (in flight).  Its key is forgotten; e->lock held.
 */
static int dq_ue_take_back(struct dq_ue *e, uint32_t slot)
{
	switch (dq_rec_state(&e->nodes[slot])) {
	case DQ_MSG_PENDING:
		dq_wheel_remove(&e->wheel, slot);
		e->pending--;
		break;
	case DQ_MSG_PACED:
		/* Due, waiting for a credit: it reached no consumer. */
		dq_ilist_del(&e->wheel, &e->paced, slot);
		e->paced_len--;
		break;
	default:
		return -EALREADY;
	}
	dq_ue_rec_free(e, slot);
	return 0;
}

/*
 * The key step of a valid keyed descriptor (dq.ko's dq_submit_key()): 0
 * when it may be accepted (a replaced holder is out of the engine and
 * described in *@replaced), else the DQ_REJ_KEY error.  Earlier entries
 * of the same batch are in the wheel already, so a replace of one takes
 * it back like any other.  e->lock held.
 */
static int dq_ue_submit_key(struct dq_ue *e, const struct dq_desc *d,
			    uint32_t index, struct dq_reject *replaced)
{
	uint32_t slot = dq_ue_key_find(e, d->user_data);

	if (!(d->flags & DQ_DESC_F_REPLACE))
		return slot == U32_MAX ? 0 : -EEXIST;
	if (slot == U32_MAX)
		return -ENOENT;
	/* In flight (tracked): the new one may not go in. */
	if (dq_ue_take_back(e, slot))
		return -EBUSY;
	e->replaced++;
	*replaced = (struct dq_reject){
		.index = index,
		.reason = DQ_REPLACED,
		.slot = slot,
		.user_data = d->user_data,
	};
	return 0;
}

/*
 * A rejected descriptor at ring @index: counted, and described in
 * rejects[*nrej] while there is room.  Out of line: the accept path of
 * dq_ue_submit() is the hot one.  e->lock held.
 */
static __attribute__((noinline))
void dq_ue_reject(struct dq_ue *e, const struct dq_submit *s,
		  struct dq_reject *rejects, uint32_t *nrej, uint32_t index,
		  u32 reason, int key_err, const struct dq_desc *d)
{
	e->rejected[reason]++;
	if (*nrej < s->reject_cap && rejects) {
		rejects[*nrej] = dq_reject_of(index, reason, d);
		if (key_err)
			rejects[*nrej].error = key_err;
	}
	(*nrej)++;
}

/*
 * DQ_IOC_SUBMIT, in process.  The loop keeps the ring index and the
 * counts in locals and writes them back once: through the pointers,
 * which may alias anything, each would be a load and a store a message.
 */
static int dq_ue_submit(struct dqshim_queue *q, struct dq_submit *s)
{
	struct dq_reject *rejects = (struct dq_reject *)(uintptr_t)s->rejects;
	struct dq_ue *e = dq_ue(q);
	uint64_t now, first = UINT64_MAX;
	uint32_t prod, avail, cons, end, accepted = 0, nrej = 0;
	const uint32_t mask = q->sq_entries - 1;
	u16 flags_ok;
	int ret;

	if (s->flags || s->resv)
		return -EINVAL;
	s->accepted = 0;
	s->rejected = 0;

	pthread_mutex_lock(&e->lock);
	/* Pairs with the producer's store-release in dq_commit(). */
	prod = dq_load_acquire_u32(&e->hdr->producer);
	avail = prod - e->sq_cons;
	if (avail > q->sq_entries) {
		e->ring_errors++;
		e->hdr->flags = DQ_RING_F_BROKEN;
		ret = -EPROTO;
		goto out;
	}
	if (s->max && avail > s->max)
		avail = s->max;

	flags_ok = dq_ue_flags_ok(e);
	now = dq_mono_ns();
	for (cons = e->sq_cons, end = cons + avail; cons != end; cons++) {
		struct dq_wheel_node *n;
		struct dq_desc d;
		int key_err = 0;
		u64 due = 0;
		u32 reason;

		memcpy(&d, &q->sq_ring[cons & mask], sizeof(d));
		if (!dq_ue_check(q, e, &d, flags_ok, now, &due, &reason)) {
			dq_ue_reject(e, s, rejects, &nrej, cons, reason, 0, &d);
			continue;
		}
		/* dq_ue_check() let F_KEY through: the index exists. */
		if (d.flags & DQ_DESC_F_KEY) {
			struct dq_reject replaced = { .reason = 0 };

			key_err = dq_ue_submit_key(e, &d, cons, &replaced);
			if (key_err) {
				dq_ue_reject(e, s, rejects, &nrej, cons,
					     DQ_REJ_KEY, key_err, &d);
				continue;
			}
			if (replaced.reason == DQ_REPLACED) {
				if (nrej < s->reject_cap && rejects)
					rejects[nrej] = replaced;
				nrej++;
			}
		}
		n = &e->nodes[d.slot];
		dq_rec_accept_node(n, &d, due, DQ_MSG_PENDING);
		e->msgs[d.slot].user_data = d.user_data;
		e->msgs[d.slot].gen = d.gen;
		if (e->attempts) {
			e->attempts[d.slot] = dq_desc_attempts(&d);
			e->redeliveries[d.slot] = 0;
		}
		if (d.flags & DQ_DESC_F_KEY) {
			dq_keys_add(&e->keys, d.slot, d.user_data);
			n->owner16 |= DQ_REC_F_KEYED;
		}
		dq_wheel_insert(&e->wheel, d.slot, now);
		if (due < first)
			first = due;
		accepted++;
	}
	e->sq_cons = cons;
	s->accepted = accepted;
	s->rejected = nrej;
	e->submitted += accepted;
	e->pending += accepted;
	/* Copied: the producer may reuse the entries. */
	dq_store_release_u32(&e->hdr->consumer, cons);
	dq_ue_arm_earlier(e, first, now);
	ret = (int)accepted;
out:
	pthread_mutex_unlock(&e->lock);
	return ret;
}

static int dq_ue_cancel(struct dqshim_queue *q, uint64_t handle)
{
	uint32_t slot = DQ_HANDLE_SLOT(handle), gen = DQ_HANDLE_GEN(handle);
	struct dq_ue *e = dq_ue(q);
	int ret;

	if (slot >= q->slot_count)
		return -ENOENT;
	pthread_mutex_lock(&e->lock);
	/* The timer may now fire for nothing: reap copes. */
	if (!dq_rec_gen_is(&e->nodes[slot], e->msgs[slot].gen, gen))
		ret = -ENOENT;
	else
		ret = dq_ue_take_back(e, slot);
	if (!ret)
		e->cancelled++;
	pthread_mutex_unlock(&e->lock);
	return ret;
}

/* DQ_IOC_KEY, in process (dq.ko's dq_queue_key_op()). */
static int dq_ue_key(struct dqshim_queue *q, struct dq_key_op *op)
{
	struct dq_ue *e = dq_ue(q);
	struct dq_wheel_node *n;
	uint32_t slot;
	int ret = 0;

	if (op->op > DQ_KEY_CANCEL || op->flags || op->resv)
		return -EINVAL;
	if (!dq_ue_keyed(e))
		return -EOPNOTSUPP;
	pthread_mutex_lock(&e->lock);
	slot = dq_ue_key_find(e, op->key);
	if (slot == U32_MAX) {
		ret = -ENOENT;
		goto out;
	}
	n = &e->nodes[slot];
	op->handle = DQ_HANDLE(slot, e->msgs[slot].gen);
	op->due_ns = n->due;
	switch (dq_rec_state(n)) {
	case DQ_MSG_PENDING:
		/* Due and not yet reaped: still in the wheel here. */
		op->state = n->due <= dq_mono_ns() ? DQ_KEY_DUE :
			    DQ_KEY_PENDING;
		break;
	case DQ_MSG_INFLIGHT:
		op->state = DQ_KEY_INFLIGHT;
		break;
	default:
		op->state = DQ_KEY_DUE;
		break;
	}
	if (op->op == DQ_KEY_CANCEL) {
		ret = dq_ue_take_back(e, slot);
		if (!ret)
			e->cancelled++;
	}
out:
	pthread_mutex_unlock(&e->lock);
	return ret;
}

/* Hand @slot's message out as out[0], at @now; e->lock held. */
static void dq_ue_hand_out(struct dqshim_queue *q, struct dq_ue *e,
			   uint32_t slot, uint64_t now, struct dq_reaped *out)
{
	struct dq_wheel_node *n = &e->nodes[slot];
	struct dq_ue_rec *m = &e->msgs[slot];
	uint64_t late = now - n->due;

	out->data = q->arena + (size_t)slot * q->slot_size;
	out->user_data = m->user_data;
	out->due_ns = n->due;
	out->release_ns = now;
	out->handle = 0;
	out->slot = slot;
	out->len = dq_rec_len(n);
	out->attempts = 0;
	out->redeliveries = 0;
	out->resv = 0;
	e->released++;
	e->late_sum_ns += late;
	if (late > e->late_max_ns)
		e->late_max_ns = late;
	if (e->tracked) {
		out->handle = DQ_HANDLE(slot, m->gen);
		out->attempts = e->attempts[slot];
		out->redeliveries = e->redeliveries[slot];
		dq_rec_set_state(n, DQ_MSG_INFLIGHT);
		dq_ilist_add_tail(&e->wheel, &e->inflight, slot);
		e->inflight_len++;
		e->released_at[slot] = now;
	} else {
		dq_ue_rec_free(e, slot);
	}
}

/*
 * Release what is due at now into @out; e->lock held.  On a tracked
 * queue what waited for a credit goes first, and a due message that finds
 * none (or finds others waiting) waits behind them.
 */
static unsigned int dq_ue_release(struct dqshim_queue *q, struct dq_ue *e,
				  uint64_t now, struct dq_reaped *out,
				  unsigned int max)
{
	unsigned int n = 0;

	if (e->visibility_ns)
		(void)dq_ue_expire(e, now);
	while (n < max && e->paced_len && dq_ue_credit(e)) {
		uint32_t slot = dq_ilist_pop(&e->wheel, &e->paced);

		e->paced_len--;
		dq_ue_hand_out(q, e, slot, now, &out[n++]);
	}
	while (n < max) {
		struct dq_ilist due;
		unsigned int got;

		dq_ilist_init(&due);
		got = dq_wheel_advance(&e->wheel, now, &due, max - n);
		while (!dq_ilist_empty(&due)) {
			uint32_t slot = dq_ilist_pop(&e->wheel, &due);

			if (e->tracked && (e->paced_len || !dq_ue_credit(e))) {
				dq_rec_set_state(&e->nodes[slot], DQ_MSG_PACED);
				dq_ilist_add_tail(&e->wheel, &e->paced, slot);
				e->paced_len++;
				e->credit_waits++;
				continue;
			}
			dq_ue_hand_out(q, e, slot, now, &out[n++]);
		}
		e->pending -= got;
		/* Nothing out and nothing due: done; else cascades used it. */
		if (!got && dq_wheel_next(&e->wheel) > now)
			break;
	}
	return n;
}

static int dq_ue_reap(struct dqshim_queue *q, struct dq_reaped *out,
		      unsigned int max, int64_t timeout_ns)
{
	struct dq_ue *e = dq_ue(q);
	uint64_t deadline = 0;
	bool woke = false;

	if (timeout_ns > 0)
		deadline = dq_mono_ns() + (uint64_t)timeout_ns;
	for (;;) {
		struct pollfd pfd = { .fd = e->tfd, .events = POLLIN };
		struct timespec ts, *tsp = NULL;
		unsigned int n;
		uint64_t now;

		pthread_mutex_lock(&e->lock);
		now = dq_mono_ns();
		n = dq_ue_release(q, e, now, out, max);
		if (woke && !n)
			__atomic_store_n(&e->wakeups_idle, e->wakeups_idle + 1,
					 __ATOMIC_RELAXED);
		woke = false;
		if (n) {
			dq_slack_sample(&e->slack, out[n - 1].due_ns, n);
			if (n < max)
				dq_slack_update(&e->slack);
		}
		/*
		 * The timer is re-armed when the consumer is about to sleep
		 * (nothing due, blocking), once per wake-up; a blocking
		 * consumer that gets messages comes back, and re-arming after
		 * each of its reaps would cost a timerfd_settime() per reap
		 * when it never sleeps.  A poller (timeout 0) sleeps in its
		 * own poll on the fd, which must then be readable exactly
		 * while work is due: re-armed when the run is over, or made
		 * readable when a full batch may leave more due.
		 */
		if (n == 0 || timeout_ns == 0) {
			if (n < max)
				dq_ue_rearm(e, now);
			else if (e->armed > now &&
				 dq_ue_next_work(e, now) <= now)
				dq_ue_set_timer(e, now);
		}
		pthread_mutex_unlock(&e->lock);
		if (n)
			return (int)n;
		if (timeout_ns == 0)
			return 0;
		if (timeout_ns > 0) {
			uint64_t left;

			now = dq_mono_ns();
			if (now >= deadline)
				return -ETIME;
			left = deadline - now;
			ts.tv_sec = (time_t)(left / 1000000000ULL);
			ts.tv_nsec = (long)(left % 1000000000ULL);
			tsp = &ts;
		}
		/* Woken by the timerfd (due, or re-armed earlier) or time. */
		if (ppoll(&pfd, 1, tsp, NULL) < 0 && errno != EINTR)
			return -errno;
		/* Only this thread writes them (cons_lock); stats read. */
		__atomic_store_n(&e->wakeups, e->wakeups + 1, __ATOMIC_RELAXED);
		woke = true;
	}
}

static int dq_ue_stats(struct dqshim_queue *q, struct dq_queue_stats *st)
{
	struct dq_ue *e = dq_ue(q);

	st->queue_id = 0;
	st->numa_node = -1;
	st->slot_count = q->slot_count;
	st->slot_size = q->slot_size;
	pthread_mutex_lock(&e->lock);
	st->pending = e->pending;
	st->ready_backlog = 0;
	st->submitted = e->submitted;
	st->released = e->released;
	st->cancelled = e->cancelled;
	memcpy(st->rejected, e->rejected, sizeof(st->rejected));
	st->ring_errors = e->ring_errors;
	st->late_max_ns = e->late_max_ns;
	st->late_sum_ns = e->late_sum_ns;
	st->paced = e->paced_len;
	st->replaced = e->replaced;
	pthread_mutex_unlock(&e->lock);
	return 0;
}

/* DQ_IOC_DONE for one entry, in process (dq.ko's dq_track_done_one()). */
static int dq_ue_done(struct dqshim_queue *q, struct dq_done *d)
{
	uint32_t slot = DQ_HANDLE_SLOT(d->handle);
	struct dq_ue *e = dq_ue(q);
	int ret;

	if (!e->tracked)
		return -EOPNOTSUPP;
	pthread_mutex_lock(&e->lock);
	if (d->outcome >= DQ_DONE_NR)
		ret = -EINVAL;
	else if (slot >= q->slot_count)
		ret = -ENOENT;
	else
		ret = dq_rec_done_check_gen(&e->nodes[slot],
					    e->msgs[slot].gen,
					    e->redeliveries[slot], d);
	if (ret) {
		e->done_refused++;
		goto out;
	}
	dq_ilist_del(&e->wheel, &e->inflight, slot);
	e->inflight_len--;
	if (d->outcome == DQ_DONE_DELIVERED)
		e->done_delivered++;
	else
		e->done_failed++;
	dq_ue_rec_free(e, slot);
	/* A credit came back: wake a consumer for what waits for it. */
	if (e->paced_len && dq_ue_credit(e)) {
		uint64_t now = dq_mono_ns();

		if (e->armed > now)
			dq_ue_set_timer(e, now);
	}
out:
	d->result = ret;
	pthread_mutex_unlock(&e->lock);
	return ret;
}

static int dq_ue_lib_stats(struct dqshim_queue *q, struct dq_lib_stats *st)
{
	struct dq_ue *e = dq_ue(q);

	pthread_mutex_lock(&e->lock);
	st->timer_sets = e->timer_sets;
	st->timer_sets_submit = e->timer_sets_submit;
	st->wakeups = __atomic_load_n(&e->wakeups, __ATOMIC_RELAXED);
	st->wakeups_idle = __atomic_load_n(&e->wakeups_idle, __ATOMIC_RELAXED);
	st->slack_ns = e->slack.cur;
	st->slack_max_ns = e->slack.max;
	pthread_mutex_unlock(&e->lock);
	return 0;
}

static int dq_ue_track_stats(struct dqshim_queue *q, struct dq_track_stats *st)
{
	struct dq_ue *e = dq_ue(q);

	if (!e->tracked)
		return 0;
	pthread_mutex_lock(&e->lock);
	/*
	 * What dq.ko's timer would have done by now, so the counters say
	 * what is in flight (the fd made readable for what was put back).
	 */
	if (e->visibility_ns) {
		uint64_t now = dq_mono_ns();

		if (dq_ue_expire(e, now) && e->armed > now)
			dq_ue_set_timer(e, now);
	}
	st->inflight = e->inflight_len;
	if (!dq_ilist_empty(&e->inflight))
		st->oldest_ns = e->released_at[e->inflight.head];
	st->done_delivered = e->done_delivered;
	st->done_failed = e->done_failed;
	st->done_refused = e->done_refused;
	st->redelivered = 0;
	st->credit_waits = e->credit_waits;
	st->max_inflight = e->max_inflight;
	st->consumer = 1;
	st->expired = e->expired;
	st->visibility_ns = e->visibility_ns;
	pthread_mutex_unlock(&e->lock);
	return 0;
}

#define DQ_UE_HUGE	(2UL << 20)

/*
 * Anonymous zeroed memory for an array touched at random, @size bytes (a
 * whole number of pages), not populated.  From 2 MiB up on transparent
 * huge pages: the mapping starts on a 2 MiB boundary (the kernel backs
 * only aligned 2 MiB ranges with a huge page) and is advised
 * MADV_HUGEPAGE (THP set to "madvise" would otherwise fault 4 KiB pages).
 * The advice is a hint: where the kernel ignores it, 4 KiB pages as
 * before.  Exactly @size long, so munmap(p, size) undoes it.  The memory
 * or MAP_FAILED.
 */
static void *dq_ue_map_thp(size_t size)
{
	uint8_t *p, *a;
	size_t head;

	if (size < DQ_UE_HUGE || size > SIZE_MAX - DQ_UE_HUGE)
		return mmap(NULL, size, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	/* Room to align: the slack before and after is unmapped again. */
	p = mmap(NULL, size + DQ_UE_HUGE, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return MAP_FAILED;
	a = (uint8_t *)(((uintptr_t)p + DQ_UE_HUGE - 1) & ~(DQ_UE_HUGE - 1));
	head = (size_t)(a - p);
	if (head)
		munmap(p, head);
	munmap(a + size, DQ_UE_HUGE - head);
#ifdef MADV_HUGEPAGE
	madvise(a, size, MADV_HUGEPAGE);
#endif
	return a;
}

/*
 * The records, one zeroed mapping: the wheel's nodes (24 bytes a slot),
 * then, from the next cache line, the cold parts (e->msgs, 12 bytes), on
 * huge pages where the two fill at least one.  Intake writes and release
 * reads both parts of a record in a slot picked by the free pool, i.e.
 * all over the arrays (36 MB at a million in flight), and with 4 KiB
 * pages each would cost a TLB miss on top of most cache misses; rounding
 * the nodes up to huge pages used to leave the room the cold parts need
 * unused anyway.  Explicit huge pages when the system has them reserved,
 * else transparent ones.  Then the directory the shared wheel finds the
 * nodes by.  0 or -1 (e->nodes unset).
 */
static int dq_ue_alloc_nodes(struct dq_ue *e, uint32_t slots)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t msgs_off = ((size_t)slots * sizeof(*e->nodes) + 63) & ~(size_t)63;
	size_t size = msgs_off + (size_t)slots * sizeof(*e->msgs);
	size_t i, chunks = ((size_t)slots + DQ_WHEEL_DIR_SIZE - 1) /
			   DQ_WHEEL_DIR_SIZE;
	void *p = MAP_FAILED;

	if (size >= DQ_UE_HUGE) {
		size = (size + DQ_UE_HUGE - 1) & ~(DQ_UE_HUGE - 1);
#if defined(MAP_HUGETLB) && defined(MAP_HUGE_SHIFT)
		/* 2 MiB pages by name: the default size may be 1 GiB. */
		p = mmap(NULL, size, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB |
			 (21 << MAP_HUGE_SHIFT), -1, 0);
#endif
	} else {
		size = (size + page - 1) & ~(page - 1);
	}
	if (p == MAP_FAILED)
		p = dq_ue_map_thp(size);
	if (p == MAP_FAILED)
		return -1;
	e->nodes = p;
	e->nodes_size = size;
	e->msgs = (struct dq_ue_rec *)((uint8_t *)p + msgs_off);
	e->dir = calloc(chunks, sizeof(*e->dir));
	if (!e->dir)
		return -1;
	for (i = 0; i < chunks; i++)
		e->dir[i] = e->nodes + i * DQ_WHEEL_DIR_SIZE;
	return 0;
}

/*
 * The message arena, @size bytes (a whole number of pages), populated up
 * front as dq.ko allocates its arena at setup, on transparent huge pages
 * from 2 MiB up (dq_ue_map_thp()): the producer writes and the consumer
 * reads each message in whatever slot the free pool hands out, i.e. all
 * over the arena (51 MB at 100k slots of 512 B), and with 4 KiB pages
 * that is a TLB miss on each side of nearly every message.  Advised
 * before anything touches it, then populated.  The arena or MAP_FAILED.
 */
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE	23	/* Linux 5.14 */
#endif

static void *dq_ue_map_arena(size_t size, bool lazy)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	uint8_t *a;
	size_t i;

	if (lazy) {
		/*
		 * DQ_OPEN_F_LAZY_ARENA: pages as first written, and small
		 * ones even where THP is "always" (a huge page would take
		 * 2 MiB for the first message written into it).
		 */
		a = mmap(NULL, size, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
#ifdef MADV_NOHUGEPAGE
		if (a != MAP_FAILED)
			madvise(a, size, MADV_NOHUGEPAGE);
#endif
		return a;
	}
	a = dq_ue_map_thp(size);
	if (a == MAP_FAILED)
		return MAP_FAILED;
	/*
	 * Kernels before 5.14 refuse MADV_POPULATE_WRITE: touch each page.
	 * Not on other errors (no memory): MAP_POPULATE ignored those too.
	 */
	if (madvise(a, size, MADV_POPULATE_WRITE) && errno == EINVAL) {
		for (i = 0; i < size; i += page)
			((volatile uint8_t *)a)[i] = 0;
	}
	return a;
}

static void dq_ue_free(struct dq_ue *e)
{
	if (e->tfd >= 0)
		close(e->tfd);
	if (e->nodes)
		munmap(e->nodes, e->nodes_size);
	free(e->dir);
	free(e->attempts);
	free(e->redeliveries);
	free(e->released_at);
	free(e->keys.head);
	free(e->keys.next);
	free(e->hdr);
	pthread_mutex_destroy(&e->lock);
	free(e);
}

static void dq_ue_close(struct dqshim_queue *q)
{
	if (q->arena)
		munmap(q->arena, q->arena_size);
	dq_ue_free(dq_ue(q));
	q->be = NULL;
}

static const struct dq_backend_ops dq_user_ops = {
	.submit = dq_ue_submit,
	.cancel = dq_ue_cancel,
	.reap = dq_ue_reap,
	.stats = dq_ue_stats,
	.done = dq_ue_done,
	.track_stats = dq_ue_track_stats,
	.lib_stats = dq_ue_lib_stats,
	.key = dq_ue_key,
	.close = dq_ue_close,
};

int dq_user_open(struct dqshim_queue *q)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t ring_off = sizeof(struct dq_ue_ring_hdr);
	uint64_t arena_size;
	struct dq_ue *e;
	void *arena;
	int ret;

	arena_size = (uint64_t)q->slot_count * q->slot_size;
	arena_size = (arena_size + page - 1) & ~(uint64_t)(page - 1);
	if (arena_size > SIZE_MAX)
		return -ENOMEM;

	e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	e->tfd = -1;
	pthread_mutex_init(&e->lock, NULL);
	e->armed = UINT64_MAX;
	/* Nothing seen yet: sparse, i.e. precise, until releases say not. */
	dq_slack_init(&e->slack, q->granularity_ns > DQ_WHEEL_TICK_NS ?
		      q->granularity_ns - DQ_WHEEL_TICK_NS : 0,
		      q->flags & DQ_OPEN_F_FIXED_SLACK);
	e->tracked = q->tracked;
	e->max_inflight = q->max_inflight;
	e->visibility_ns = q->visibility_ns;
	dq_ilist_init(&e->inflight);
	dq_ilist_init(&e->paced);

	ret = -ENOMEM;
	if (dq_ue_alloc_nodes(e, q->slot_count))
		goto fail;
	dq_wheel_init(&e->wheel, e->dir);
	/*
	 * What a release reads: loaded with the record (dq_wheel_warm()).
	 * e->msgs was set up with the nodes (dq_ue_alloc_nodes()).
	 */
	e->wheel.side = e->msgs;
	e->wheel.side_size = sizeof(*e->msgs);
	if (e->tracked) {
		e->released_at = calloc(q->slot_count,
					sizeof(*e->released_at));
		e->attempts = calloc(q->slot_count, sizeof(*e->attempts));
		e->redeliveries = calloc(q->slot_count,
					 sizeof(*e->redeliveries));
		if (!e->released_at || !e->attempts || !e->redeliveries)
			goto fail;
	}
	/* Keys: the index or nothing; without it F_KEY is refused. */
	if (q->keyed) {
		e->keys.bits = dq_keys_bits(q->slot_count);
		e->keys.head = calloc((size_t)1 << e->keys.bits,
				      sizeof(*e->keys.head));
		e->keys.next = calloc(q->slot_count, sizeof(*e->keys.next));
		if (!e->keys.head || !e->keys.next)
			goto fail;
	}
	if (posix_memalign((void **)&e->hdr, 64, ring_off +
			   (size_t)q->sq_entries * sizeof(struct dq_desc)))
		goto fail;
	memset(e->hdr, 0, ring_off);

	e->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	if (e->tfd < 0) {
		ret = -errno;
		goto fail;
	}
	arena = dq_ue_map_arena((size_t)arena_size,
				q->flags & DQ_OPEN_F_LAZY_ARENA);
	if (arena == MAP_FAILED) {
		ret = -errno;
		goto fail;
	}

	q->backend = DQ_BACKEND_USER;
	q->path = DQ_PATH_LOCAL;
	q->ops = &dq_user_ops;
	q->be = e;
	q->fd = e->tfd;
	q->numa_node = -1;
	q->queue_id = 0;
	q->abi_version = DQ_ABI_VERSION;
	/* Every time is the process's own clock_gettime(): DQ_FEAT_TIME_NS. */
	q->features = DQ_FEAT_RELATIVE_DUE | DQ_FEAT_CANCEL | DQ_FEAT_WAIT |
		      DQ_FEAT_TRACK | DQ_FEAT_KEYS | DQ_FEAT_TIME_NS |
		      DQ_FEAT_SLOT_ALIGN8 | DQ_FEAT_VISIBILITY;
	q->arena = arena;
	q->arena_size = arena_size;
	q->sq_prod = &e->hdr->producer;
	q->sq_cons = &e->hdr->consumer;
	q->sq_ring = (struct dq_desc *)((char *)e->hdr + ring_off);
	q->sq_tail = 0;
	return 0;
fail:
	dq_ue_free(e);
	return ret;
}
