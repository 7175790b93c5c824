// SPDX-License-Identifier: LGPL-2.1 OR MIT
/*
 * libdqshim's delivery tracking (DQ_OPEN_F_TRACK, dq_finish()) on every
 * backend: the user engine always, dq.ko over io_uring commands and over
 * the ioctls when /dev/dq exists (skipped otherwise, like
 * kernel_backend_test):
 *
 *	user/build/tests/track_test [test-name...]
 *
 * A reaped message stays in flight (its slot held) until dq_finish();
 * max_inflight caps what is reaped and not finished, each finish lets
 * exactly one more out, in due order and never early; attempts come back
 * as committed; the errors of dq_finish() and of attempts on an untracked
 * queue; the delivery counters against the test's own counts; a message
 * reaped on time; on a named queue (dq.ko, created with dqctl next to
 * this program): a producer-only attach, the one consumer, and what the
 * consumer held going to the next one when it closes, and a message its
 * visibility timeout redelivers while the consumer holds it.  Judged
 * against what each case recorded (due times on its own clock, order,
 * payload bytes), never against values dq reports back; the time bound
 * is contract.c's (3 s: an emulated VM).
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <libgen.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "contract.h"
#include "dqshim.h"
#include "tap.h"

/* How late a release may be: contract.c's bound for a woken consumer. */
#define LATE_BOUND	(3000 * MS)
#define PAYLOAD		48U

/* A queue on @b (SKIP when the backend is not there). */
static struct dqshim_queue *topen(const struct tb *b, uint32_t slots,
				  uint32_t flags, uint32_t max_inflight)
{
	struct dqshim_queue *q;
	struct dq_params p;
	struct dq_info info = { .sz = sizeof(info) };

	dq_params_init(&p);
	p.slot_count = slots;
	p.slot_size = 64;
	p.flags = flags;
	p.max_inflight = max_inflight;
	q = contract_open_params(b->backend, b->path, &p);
	dq_queue_info(q, &info);
	if (flags & DQ_OPEN_F_TRACK)
		REQUIRE(info.features & DQ_FEAT_TRACK);
	return q;
}

static void fill(void *data, uint64_t id)
{
	unsigned char *p = data;
	uint32_t i;

	memcpy(p, &id, sizeof(id));
	for (i = sizeof(id); i < PAYLOAD; i++)
		p[i] = (unsigned char)(id * 31 + i);
}

/* The payload the case wrote for @id, and its id. */
static bool payload_is(const struct dq_reaped *r, uint64_t id)
{
	unsigned char want[PAYLOAD];

	fill(want, id);
	return r->len == PAYLOAD && !memcmp(r->data, want, PAYLOAD);
}

static uint64_t payload_id(const struct dq_reaped *r)
{
	uint64_t id;

	memcpy(&id, r->data, sizeof(id));
	return id;
}

static uint64_t put_handle;	/* of the last put() */

/* Commit message @id due at @due (absolute) with @attempts; its slot. */
static uint32_t put(struct dqshim_queue *q, uint64_t id, uint64_t due,
		    uint16_t attempts)
{
	struct dqshim_msg m;

	REQUIRE_EQ(dq_reserve(q, &m), 0);
	CHECK_EQ(m.attempts, 0);
	fill(m.data, id);
	m.attempts = attempts;
	REQUIRE_EQ(dq_commit(q, &m, PAYLOAD, due, id), 0);
	put_handle = m.handle;
	return m.slot;
}

/* Reap exactly @want messages (within 10 s), into @r; each is judged
 * against @due[id] on the test's clock. */
static void reap_n(struct dqshim_queue *q, struct dq_reaped *r, int want,
		   const uint64_t *due)
{
	uint64_t deadline = contract_now() + 10000 * MS;
	int got = 0;

	while (got < want) {
		int n, k;

		REQUIRE(contract_now() < deadline, "reaped %d of %d", got, want);
		n = dq_reap(q, r + got, (unsigned int)(want - got), 1000 * MS);
		if (n == -ETIME)
			continue;
		REQUIRE(n > 0, "dq_reap: %s", dq_strerror(n));
		for (k = got; k < got + n; k++) {
			uint64_t now = contract_now(), id = payload_id(&r[k]);

			if (due)
				CHECK(now >= due[id], "id %llu early by %llu ns",
				      (unsigned long long)id,
				      (unsigned long long)(due[id] - now));
		}
		got += n;
	}
}

/* ---- (a) a reaped message is in flight: its slot stays held --------- */

static void t_held_until_finish(void *arg)
{
	struct dqshim_queue *q = topen(arg, 4, DQ_OPEN_F_TRACK, 0);
	uint64_t due[4], t0 = contract_now();
	struct dq_reaped r[4];
	struct dqshim_msg m;
	int i;

	for (i = 0; i < 4; i++) {
		due[i] = t0 + 20 * MS;
		put(q, (uint64_t)i, due[i], 0);
	}
	REQUIRE_EQ(dq_flush(q), 4);
	reap_n(q, r, 4, due);
	for (i = 0; i < 4; i++) {
		CHECK_EQ(payload_id(&r[i]), (uint64_t)i);
		CHECK(payload_is(&r[i], (uint64_t)i));
	}
	/* Reaped, not finished: every slot is still dq's. */
	CHECK_EQ(dq_reserve(q, &m), -ENOSPC);
	CHECK_EQ(dq_reserve_wait(q, &m, 50 * MS), -ETIME);
	/* Nothing else to reap, and the payloads are still in place. */
	CHECK_EQ(dq_reap(q, r, 4, 0), 0);
	for (i = 0; i < 4; i++)
		CHECK(payload_is(&r[i], (uint64_t)i));

	REQUIRE_EQ(dq_finish(q, r[2].slot, DQ_DONE_DELIVERED), 0);
	REQUIRE_EQ(dq_reserve(q, &m), 0);
	CHECK_EQ(m.slot, r[2].slot);
	CHECK_EQ(dq_reserve(q, &m), -ENOSPC);
	/* The slot takes a new message, which is reaped as usual. */
	REQUIRE_EQ(dq_abort(q, &m), 0);
	due[2] = contract_now();
	put(q, 2, due[2], 0);
	REQUIRE_EQ(dq_flush(q), 1);
	reap_n(q, &r[2], 1, due);
	CHECK(payload_is(&r[2], 2));
	for (i = 0; i < 4; i++)
		CHECK_EQ(dq_finish(q, r[i].slot, DQ_DONE_DELIVERED), 0);
	for (i = 0; i < 4; i++)
		CHECK_EQ(dq_reserve(q, &m), 0);
	dq_queue_close(q);
}

/* ---- (b) max_inflight: at most that many out, one per finish -------- */

#define CAP	3
#define NCAP	20

static void t_cap(void *arg)
{
	struct dqshim_queue *q = topen(arg, 32, DQ_OPEN_F_TRACK, CAP);
	uint64_t due[NCAP], t0, last_due = 0;
	struct dq_reaped out[CAP], r[NCAP];
	uint64_t seen_at[NCAP];
	unsigned int order[NCAP];
	struct dq_track_stats ts;
	int i, held = 0, seen = 0;

	/* Due times a shuffled 10 us apart, all within 200 us: "at once". */
	for (i = 0; i < NCAP; i++)
		order[i] = (unsigned int)((i * 7) % NCAP);
	t0 = contract_now() + 100 * MS;
	for (i = 0; i < NCAP; i++) {
		due[i] = t0 + order[i] * 10000ULL;
		if (due[i] > last_due)
			last_due = due[i];
		put(q, (uint64_t)i, due[i], 0);
	}
	REQUIRE_EQ(dq_flush(q), NCAP);

	/* The first CAP come out; then nothing, however long we wait. */
	while (held < CAP) {
		int n = dq_reap(q, out + held, CAP, 5000 * MS);

		REQUIRE(n > 0, "dq_reap: %s", dq_strerror(n));
		REQUIRE(held + n <= CAP, "%d out with a cap of %d", held + n, CAP);
		for (i = held; i < held + n; i++) {
			seen_at[seen] = contract_now();
			r[seen++] = out[i];
		}
		held += n;
	}
	while (contract_now() < last_due + 20 * MS)
		usleep(5000);
	CHECK_EQ(dq_reap(q, out, CAP, 100 * MS), -ETIME);

	/* Each finish lets exactly one more out. */
	while (seen < NCAP) {
		struct dq_reaped one[4];
		int n;

		REQUIRE_EQ(dq_finish(q, out[0].slot, DQ_DONE_DELIVERED), 0);
		memmove(out, out + 1, (CAP - 1) * sizeof(out[0]));
		n = dq_reap(q, one, 4, 5000 * MS);
		REQUIRE_EQ(n, 1);
		out[CAP - 1] = one[0];
		seen_at[seen] = contract_now();
		r[seen++] = one[0];
		CHECK_EQ(dq_reap(q, one, 4, 0), 0);
	}
	for (i = 0; i < CAP; i++)
		CHECK_EQ(dq_finish(q, out[i].slot, DQ_DONE_DELIVERED), 0);
	CHECK_EQ(dq_reap(q, out, CAP, 0), 0);

	/* Release order = due order; every one intact, none early. */
	for (i = 0; i < NCAP; i++) {
		uint64_t id = payload_id(&r[i]);

		REQUIRE(id < NCAP);
		CHECK(payload_is(&r[i], id));
		CHECK(order[id] == (unsigned int)i, "message %llu came %d-th",
		      (unsigned long long)id, i);
		CHECK(seen_at[i] >= due[id], "message %llu early",
		      (unsigned long long)id);
	}
	REQUIRE_EQ(dq_queue_track_stats(q, &ts), 0);
	CHECK_EQ(ts.inflight, 0);
	CHECK_EQ(ts.done_delivered, NCAP);
	CHECK_EQ(ts.max_inflight, CAP);
	/* Every message past the first CAP waited for a credit. */
	CHECK_EQ(ts.credit_waits, NCAP - CAP);
	dq_queue_close(q);
}

/* The payload ids reaped must arrive no earlier than their due times. */
static void t_cap_never_early(void *arg)
{
	struct dqshim_queue *q = topen(arg, 16, DQ_OPEN_F_TRACK, 2);
	uint64_t due[8], t0 = contract_now();
	struct dq_reaped r[8];
	int i;

	/* With credits to spare, a later message still waits for its time. */
	for (i = 0; i < 8; i++) {
		due[i] = t0 + (uint64_t)(i + 1) * 40 * MS;
		put(q, (uint64_t)i, due[i], 0);
	}
	REQUIRE_EQ(dq_flush(q), 8);
	for (i = 0; i < 8; i++) {
		reap_n(q, &r[i], 1, due);
		CHECK_EQ(payload_id(&r[i]), (uint64_t)i);
		CHECK_EQ(dq_finish(q, r[i].slot, DQ_DONE_DELIVERED), 0);
	}
	dq_queue_close(q);
}

struct parked {
	struct dqshim_queue *q;
	struct dq_reaped r[4];
	int n;
	uint64_t at;
};

static void *parked_reaper(void *arg)
{
	struct parked *p = arg;

	p->n = dq_reap(p->q, p->r, 4, 10000 * MS);
	p->at = contract_now();
	return NULL;
}

/* A consumer parked on a capped queue is woken by a finish elsewhere. */
static void t_finish_wakes_reaper(void *arg)
{
	struct dqshim_queue *q = topen(arg, 8, DQ_OPEN_F_TRACK, 1);
	uint64_t due[2], t0 = contract_now(), fin;
	struct parked p = { .q = q };
	struct dq_reaped r[4];
	pthread_t th;

	due[0] = due[1] = t0;
	put(q, 0, due[0], 0);
	put(q, 1, due[1], 0);
	REQUIRE_EQ(dq_flush(q), 2);
	reap_n(q, r, 1, due);
	CHECK_EQ(payload_id(&r[0]), 0);
	REQUIRE_EQ(pthread_create(&th, NULL, parked_reaper, &p), 0);
	usleep(200000);			/* let it park */
	fin = contract_now();
	REQUIRE_EQ(dq_finish(q, r[0].slot, DQ_DONE_FAILED), 0);
	pthread_join(th, NULL);
	REQUIRE_EQ(p.n, 1);
	CHECK_EQ(payload_id(&p.r[0]), 1);
	CHECK(p.at >= fin);
	CHECK(p.at - fin < LATE_BOUND, "woke %llu ms after the finish",
	      (unsigned long long)(p.at - fin) / MS);
	CHECK_EQ(dq_finish(q, p.r[0].slot, DQ_DONE_DELIVERED), 0);
	dq_queue_close(q);
}

/* ---- (c) attempts ride along ---------------------------------------- */

static void t_attempts(void *arg)
{
	struct dqshim_queue *q = topen(arg, 8, DQ_OPEN_F_TRACK, 0);
	uint64_t due[4], t0 = contract_now();
	struct dq_reaped r[4];
	uint16_t want[4] = { 0, 5, UINT16_MAX, 0 };
	int i;

	for (i = 0; i < 3; i++) {
		due[i] = t0 + (uint64_t)i * MS;
		put(q, (uint64_t)i, due[i], want[i]);
	}
	REQUIRE_EQ(dq_flush(q), 3);
	reap_n(q, r, 3, due);
	for (i = 0; i < 3; i++) {
		uint64_t id = payload_id(&r[i]);

		REQUIRE(id < 3);
		CHECK_EQ(r[i].attempts, want[id]);
		CHECK_EQ(r[i].redeliveries, 0);
		CHECK_EQ(r[i].resv, 0);
	}
	/* The consumer failed message 1: the producer commits it again. */
	for (i = 0; i < 3; i++) {
		uint64_t id = payload_id(&r[i]);

		if (id != 1) {
			CHECK_EQ(dq_finish(q, r[i].slot, DQ_DONE_DELIVERED), 0);
			continue;
		}
		REQUIRE_EQ(dq_finish(q, r[i].slot, DQ_DONE_FAILED), 0);
		want[3] = (uint16_t)(want[1] + 1);
		due[3] = contract_now() + 10 * MS;
		put(q, 3, due[3], want[3]);
	}
	REQUIRE_EQ(dq_flush(q), 1);
	reap_n(q, r, 1, due);
	CHECK_EQ(payload_id(&r[0]), 3);
	CHECK_EQ(r[0].attempts, 6);
	CHECK_EQ(dq_finish(q, r[0].slot, DQ_DONE_DELIVERED), 0);
	dq_queue_close(q);
}

/* ---- (d) errors ----------------------------------------------------- */

static void t_errors(void *arg)
{
	const struct tb *b = arg;
	struct dqshim_queue *q = topen(b, 8, DQ_OPEN_F_TRACK, 0), *u;
	uint64_t due[3], t0 = contract_now();
	struct dq_params p;
	struct dq_reaped r[2];
	struct dqshim_msg m;
	uint64_t pending_handle;
	uint32_t pending_slot;

	due[0] = t0;
	put(q, 0, due[0], 0);
	due[1] = t0 + 60000 * MS;		/* stays pending */
	pending_slot = put(q, 1, due[1], 0);
	pending_handle = put_handle;
	REQUIRE_EQ(dq_flush(q), 2);
	reap_n(q, r, 1, due);
	CHECK_EQ(payload_id(&r[0]), 0);

	/* Slot out of range, unknown outcome: nothing changes. */
	CHECK_EQ(dq_finish(q, 8, DQ_DONE_DELIVERED), -EINVAL);
	CHECK_EQ(dq_finish(q, UINT32_MAX, DQ_DONE_DELIVERED), -EINVAL);
	CHECK_EQ(dq_finish(q, r[0].slot, DQ_DONE_NR), -EINVAL);
	CHECK_EQ(dq_finish(q, r[0].slot, 0x10000 | DQ_DONE_FAILED), -EINVAL);
	/* Not reaped: pending, reserved, never used. */
	CHECK_EQ(dq_finish(q, pending_slot, DQ_DONE_DELIVERED), -EINVAL);
	CHECK_EQ(dq_done(q, pending_slot), -EINVAL);
	REQUIRE_EQ(dq_reserve(q, &m), 0);
	CHECK_EQ(dq_finish(q, m.slot, DQ_DONE_DELIVERED), -EINVAL);
	CHECK_EQ(dq_abort(q, &m), 0);
	CHECK_EQ(dq_finish(q, 7, DQ_DONE_FAILED), -EINVAL);
	/* The refusals left the reaped message reaped: it finishes once. */
	CHECK_EQ(dq_finish(q, r[0].slot, DQ_DONE_FAILED), 0);
	CHECK_EQ(dq_finish(q, r[0].slot, DQ_DONE_FAILED), -EINVAL);
	CHECK_EQ(dq_finish(q, r[0].slot, DQ_DONE_DELIVERED), -EINVAL);
	CHECK_EQ(dq_done(q, r[0].slot), -EINVAL);
	/* The pending one is still held and cancellable. */
	CHECK_EQ(dq_cancel(q, pending_handle), 0);
	dq_queue_close(q);

	/* Untracked queue: attempts refused, FAILED not supported. */
	u = topen(b, 4, 0, 0);
	REQUIRE_EQ(dq_reserve(u, &m), 0);
	m.attempts = 1;
	CHECK_EQ(dq_commit(u, &m, 8, 0, 1), -EINVAL);
	CHECK_EQ(dq_commit_delay(u, &m, 8, 0, 1), -EINVAL);
	m.attempts = 0;				/* the reservation was kept */
	fill(m.data, 9);
	due[2] = contract_now();
	REQUIRE_EQ(dq_commit(u, &m, PAYLOAD, due[2], 9), 0);
	REQUIRE_EQ(dq_flush(u), 1);
	{
		uint64_t d9[10] = { [9] = due[2] };

		reap_n(u, r, 1, d9);
	}
	CHECK(payload_is(&r[0], 9));
	CHECK_EQ(r[0].attempts, 0);
	CHECK_EQ(r[0].redeliveries, 0);
	CHECK_EQ(dq_finish(u, r[0].slot, DQ_DONE_FAILED), -EOPNOTSUPP);
	CHECK_EQ(dq_finish(u, r[0].slot, DQ_DONE_NR), -EINVAL);
	CHECK_EQ(dq_finish(u, r[0].slot, DQ_DONE_DELIVERED), 0);
	CHECK_EQ(dq_finish(u, r[0].slot, DQ_DONE_DELIVERED), -EINVAL);
	{
		struct dq_track_stats ts;
		static const struct dq_track_stats zero;

		memset(&ts, 0xff, sizeof(ts));
		CHECK_EQ(dq_queue_track_stats(u, &ts), 0);
		CHECK(!memcmp(&ts, &zero, sizeof(ts)));
	}
	dq_queue_close(u);

	/* max_inflight needs DQ_OPEN_F_TRACK, and at most DQ_MAX_SLOTS. */
	dq_params_init(&p);
	p.backend = b->backend;
	p.max_inflight = 2;
	u = (struct dqshim_queue *)&p;
	CHECK_EQ(dq_queue_open(&p, &u), -EINVAL);
	CHECK(u == NULL);
	p.flags = DQ_OPEN_F_TRACK;
	p.max_inflight = DQ_MAX_SLOTS + 1;
	CHECK_EQ(dq_queue_open(&p, &u), -EINVAL);
	p.flags = 1U << 31;
	p.max_inflight = 0;
	CHECK_EQ(dq_queue_open(&p, &u), -EINVAL);
}

/* ---- (e) the counters, against the test's own ------------------------ */

static void t_stats(void *arg)
{
	struct dqshim_queue *q = topen(arg, 16, DQ_OPEN_F_TRACK, 0);
	uint64_t due[6], t0 = contract_now(), after;
	struct dq_track_stats ts;
	struct dq_queue_stats st;
	struct dq_reaped r[6];
	int i, delivered = 0, failed = 0, inflight;

	REQUIRE_EQ(dq_queue_track_stats(q, &ts), 0);
	CHECK_EQ(ts.inflight, 0);
	CHECK_EQ(ts.oldest_ns, 0);
	CHECK_EQ(ts.consumer, 1);
	for (i = 0; i < 6; i++) {
		due[i] = t0 + (uint64_t)i * MS;
		put(q, (uint64_t)i, due[i], 0);
	}
	REQUIRE_EQ(dq_flush(q), 6);
	reap_n(q, r, 6, due);
	after = contract_now();
	inflight = 6;
	REQUIRE_EQ(dq_queue_track_stats(q, &ts), 0);
	CHECK_EQ(ts.inflight, (uint64_t)inflight);
	/* The oldest in flight was released between flush and reap. */
	CHECK(ts.oldest_ns >= due[0] && ts.oldest_ns <= after,
	      "oldest_ns %llu", (unsigned long long)ts.oldest_ns);
	CHECK_EQ(ts.done_delivered, 0);
	CHECK_EQ(ts.done_failed, 0);

	for (i = 0; i < 6; i++) {
		int ret;

		if (i % 3 == 2) {
			ret = dq_finish(q, r[i].slot, DQ_DONE_FAILED);
			failed++;
		} else if (i % 3 == 1) {
			ret = dq_done(q, r[i].slot);	/* = DELIVERED */
			delivered++;
		} else {
			ret = dq_finish(q, r[i].slot, DQ_DONE_DELIVERED);
			delivered++;
		}
		REQUIRE_EQ(ret, 0);
		inflight--;
		/* Refused by the library, never reaching the engine. */
		CHECK_EQ(dq_finish(q, r[i].slot, DQ_DONE_DELIVERED), -EINVAL);
		REQUIRE_EQ(dq_queue_track_stats(q, &ts), 0);
		CHECK_EQ(ts.inflight, (uint64_t)inflight);
		CHECK_EQ(ts.done_delivered, (uint64_t)delivered);
		CHECK_EQ(ts.done_failed, (uint64_t)failed);
		CHECK_EQ(ts.done_refused, 0);
		CHECK_EQ(ts.redelivered, 0);
	}
	CHECK_EQ(ts.oldest_ns, 0);
	CHECK_EQ(ts.credit_waits, 0);
	CHECK_EQ(ts.max_inflight, 0);
	REQUIRE_EQ(dq_queue_get_stats(q, &st), 0);
	CHECK_EQ(st.released, 6);
	CHECK_EQ(st.submitted, 6);
	CHECK_EQ(st.paced, 0);
	dq_queue_close(q);
}

/* ---- (f) on time ---------------------------------------------------- */

static void t_on_time(void *arg)
{
	struct dqshim_queue *q = topen(arg, 16, DQ_OPEN_F_TRACK, 4);
	uint64_t due[10], t0 = contract_now(), worst = 0;
	int i, got = 0;

	/* Spread out and finished at once: the cap never holds one back. */
	for (i = 0; i < 10; i++) {
		due[i] = t0 + 50 * MS + (uint64_t)((i * 3) % 10) * 45 * MS;
		put(q, (uint64_t)i, due[i], 0);
	}
	REQUIRE_EQ(dq_flush(q), 10);
	while (got < 10) {
		struct dq_reaped r[10];
		int n = dq_reap(q, r, 10, 10000 * MS), k;
		uint64_t now = contract_now();

		REQUIRE(n > 0, "dq_reap: %s", dq_strerror(n));
		for (k = 0; k < n; k++) {
			uint64_t id = payload_id(&r[k]);

			REQUIRE(id < 10);
			CHECK(payload_is(&r[k], id));
			CHECK(now >= due[id], "id %llu early by %llu ns",
			      (unsigned long long)id,
			      (unsigned long long)(due[id] - now));
			CHECK(now - due[id] < LATE_BOUND, "id %llu %llu ms late",
			      (unsigned long long)id,
			      (unsigned long long)(now - due[id]) / MS);
			if (now - due[id] > worst)
				worst = now - due[id];
			CHECK_EQ(dq_finish(q, r[k].slot, DQ_DONE_DELIVERED), 0);
		}
		got += n;
	}
	tap_diag("worst lateness %llu us", (unsigned long long)worst / 1000);
	dq_queue_close(q);
}

/* ---- (g) a named queue: producer, consumer, the next consumer ------- */

/* dqctl: $DQCTL, else the one built next to this program (../dqctl). */
static int dqctl(const char *args)
{
	char exe[PATH_MAX], bin[PATH_MAX + 16], cmd[2 * PATH_MAX + 64];
	const char *env = getenv("DQCTL");
	ssize_t n;

	if (env) {
		snprintf(bin, sizeof(bin), "%s", env);
	} else {
		n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
		if (n <= 0)
			return -1;
		exe[n] = 0;
		snprintf(bin, sizeof(bin), "%s/../dqctl", dirname(exe));
	}
	if (access(bin, X_OK))
		return -1;
	snprintf(cmd, sizeof(cmd), "%s %s >/dev/null 2>&1", bin, args);
	return system(cmd);
}

/* Attach as the consumer, while the last one's file may still be going. */
static struct dqshim_queue *attach_consumer(const char *name,
					    const struct dq_params *p)
{
	uint64_t deadline = contract_now() + 5000 * MS;
	struct dqshim_queue *q;
	int ret;

	while ((ret = dq_queue_attach(name, p, &q)) == -EBUSY &&
	       contract_now() < deadline)
		usleep(10000);
	REQUIRE(ret == 0, "attach %s as consumer: %s", name, dq_strerror(ret));
	return q;
}

static void t_named(void *arg)
{
	const struct tb *b = arg;
	struct dqshim_queue *prod, *cons, *x = NULL;
	uint64_t due[4], t0;
	struct dq_track_stats ts;
	struct dq_reaped r[4];
	struct dq_params p;
	char name[32], args[128];
	int i;

	if (access("/dev/dq", F_OK))
		SKIP("no /dev/dq (dq.ko not loaded)");
	snprintf(name, sizeof(name), "dqtrack%d%s", (int)getpid(), b->suffix);
	snprintf(args, sizeof(args),
		 "create %s --slots 8 --slot-size 64 --track --inflight 2", name);
	if (dqctl(args))
		SKIP("dqctl create failed (no dqctl built, or not root)");

	dq_params_init(&p);
	if (b->path == DQ_PATH_IOCTL)
		p.flags |= DQ_OPEN_F_IOCTL;
	REQUIRE_EQ(dq_queue_attach(name, &p, &prod), 0);
	p.flags |= DQ_OPEN_F_TRACK;
	cons = attach_consumer(name, &p);
	/* One consumer; a producer-only attach may neither reap nor finish. */
	CHECK_EQ(dq_queue_attach(name, &p, &x), -EBUSY);
	CHECK(x == NULL);
	CHECK_EQ(dq_reap(prod, r, 4, 0), -EPERM);
	CHECK_EQ(dq_finish(prod, 0, DQ_DONE_DELIVERED), -EPERM);

	t0 = contract_now();
	for (i = 0; i < 4; i++) {
		due[i] = t0 + (uint64_t)i * MS;
		put(prod, (uint64_t)i, due[i], (uint16_t)(10 + i));
	}
	REQUIRE_EQ(dq_flush(prod), 4);
	/* The cap is the queue's: 2 out. */
	reap_n(cons, r, 2, due);
	CHECK_EQ(dq_reap(cons, r + 2, 2, 200 * MS), -ETIME);
	for (i = 0; i < 2; i++) {
		CHECK_EQ(payload_id(&r[i]), (uint64_t)i);
		CHECK(payload_is(&r[i], (uint64_t)i));
		CHECK_EQ(r[i].attempts, 10 + i);
		CHECK_EQ(r[i].redeliveries, 0);
	}
	/* Another process's message, finished by this one. */
	REQUIRE_EQ(dq_finish(cons, r[0].slot, DQ_DONE_DELIVERED), 0);
	reap_n(cons, r, 1, due);
	CHECK_EQ(payload_id(&r[0]), 2);

	/* The consumer goes holding 1 and 2; 3 waits for a credit. */
	dq_queue_close(cons);
	cons = attach_consumer(name, &p);
	reap_n(cons, r, 2, due);
	for (i = 0; i < 2; i++) {
		CHECK_EQ(payload_id(&r[i]), (uint64_t)(i + 1));
		CHECK(payload_is(&r[i], (uint64_t)(i + 1)));
		CHECK_EQ(r[i].attempts, 11 + i);
		CHECK_EQ(r[i].redeliveries, 1);
	}
	CHECK_EQ(dq_reap(cons, r + 2, 2, 200 * MS), -ETIME);
	CHECK_EQ(dq_finish(cons, r[0].slot, DQ_DONE_FAILED), 0);
	CHECK_EQ(dq_finish(cons, r[1].slot, DQ_DONE_DELIVERED), 0);
	reap_n(cons, r, 1, due);
	CHECK_EQ(payload_id(&r[0]), 3);
	CHECK_EQ(r[0].attempts, 13);
	CHECK_EQ(r[0].redeliveries, 0);
	CHECK_EQ(dq_done(cons, r[0].slot), 0);
	REQUIRE_EQ(dq_queue_track_stats(cons, &ts), 0);
	CHECK_EQ(ts.inflight, 0);
	CHECK_EQ(ts.done_delivered, 3);
	CHECK_EQ(ts.done_failed, 1);
	CHECK_EQ(ts.redelivered, 2);
	CHECK_EQ(ts.max_inflight, 2);
	CHECK_EQ(ts.consumer, 1);
	dq_queue_close(cons);
	dq_queue_close(prod);
	snprintf(args, sizeof(args), "delete %s --force", name);
	CHECK_EQ(dqctl(args), 0);
}

/*
 * Issue 33's case as reported: a named queue created with a visibility
 * timeout, a consumer attached with DQ_OPEN_F_TRACK that holds a message
 * past it.  Every redelivery (waited for, not slept for) is finished by
 * slot in the end; the older deliveries are refused with -ESTALE
 * (dq_finish_reaped()) and finish nothing, and once finished the message
 * never comes back: a message due 3 visibility periods later is the next
 * thing reaped (2 periods after the latest an unfinished one would be).
 */
static void t_named_visibility(void *arg)
{
	const struct tb *b = arg;
	const uint64_t vis = 300 * MS;
	struct dqshim_queue *prod, *cons;
	struct dq_reaped r[3], t[4];
	struct dq_params p;
	char name[32], args[160];
	uint64_t t0, t_fin;
	int i, n;

	if (access("/dev/dq", F_OK))
		SKIP("no /dev/dq (dq.ko not loaded)");
	snprintf(name, sizeof(name), "dqvis%d%s", (int)getpid(), b->suffix);
	snprintf(args, sizeof(args),
		 "create %s --slots 64 --slot-size 64 --track --visibility 300ms",
		 name);
	if (dqctl(args))
		SKIP("dqctl create failed (no dqctl built, or not root)");
	dq_params_init(&p);
	if (b->path == DQ_PATH_IOCTL)
		p.flags |= DQ_OPEN_F_IOCTL;
	REQUIRE_EQ(dq_queue_attach(name, &p, &prod), 0);
	p.flags |= DQ_OPEN_F_TRACK;
	cons = attach_consumer(name, &p);

	t0 = contract_now();
	put(prod, 0, t0, 5);
	REQUIRE_EQ(dq_flush(prod), 1);
	/* Delivery 0, then 1 and 2 while it is still held. */
	for (i = 0; i < 3; i++) {
		reap_n(cons, &r[i], 1, NULL);
		CHECK(payload_is(&r[i], 0));
		CHECK_EQ(r[i].attempts, 5);
		CHECK_EQ(r[i].redeliveries, i);
		CHECK_EQ(r[i].slot, r[0].slot);
		CHECK(contract_now() >= t0 + (uint64_t)i * vis,
		      "delivery %d before %d visibility periods", i, i);
	}
	/* The older deliveries: refused, nothing finished. */
	CHECK_EQ(dq_finish_reaped(cons, &r[0], DQ_DONE_DELIVERED), -ESTALE);
	CHECK_EQ(dq_finish_reaped(cons, &r[1], DQ_DONE_DELIVERED), -ESTALE);
	/* By slot: the newest delivery, accepted. */
	CHECK_EQ(dq_finish(cons, r[2].slot, DQ_DONE_DELIVERED), 0);
	CHECK_EQ(dq_done(cons, r[2].slot), -EINVAL);
	t_fin = contract_now();

	put(prod, 1, t_fin + 3 * vis, 0);
	REQUIRE_EQ(dq_flush(prod), 1);
	n = dq_reap(cons, t, 4, 10000 * MS);
	REQUIRE_EQ(n, 1);
	CHECK_EQ(payload_id(&t[0]), 1);
	CHECK(payload_is(&t[0], 1));
	CHECK_EQ(dq_done(cons, t[0].slot), 0);
	dq_queue_close(cons);
	dq_queue_close(prod);
	snprintf(args, sizeof(args), "delete %s --force", name);
	CHECK_EQ(dqctl(args), 0);
}

/* ---- registration --------------------------------------------------- */

/* ---- batch calls: dq_reserve_n(), dq_finish_n(), dq_done_n() ------- */

#define BATCH	150	/* more than one engine call's chunk (64) */

static void t_batch(void *arg)
{
	struct dqshim_queue *q = topen(arg, BATCH + 8, DQ_OPEN_F_TRACK, 0);
	uint64_t due[BATCH], t0 = contract_now();
	static struct dq_reaped r[BATCH];
	struct dqshim_msg m[BATCH + 8];
	uint32_t slots[BATCH + 2];
	int res[BATCH + 2];
	struct dq_track_stats ts;
	int i, n;

	/* Reserve in one call: every free slot, distinct, writable. */
	n = dq_reserve_n(q, m, BATCH + 8);
	CHECK_EQ(n, BATCH + 8);
	for (i = 0; i < n; i++) {
		int k;

		for (k = 0; k < i; k++)
			CHECK(m[k].slot != m[i].slot, "slot %u twice", m[i].slot);
	}
	CHECK_EQ(dq_reserve_n(q, m, 1), -ENOSPC);
	CHECK_EQ(dq_reserve_n(q, m, 0), -EINVAL);
	for (i = BATCH; i < BATCH + 8; i++)
		CHECK_EQ(dq_abort(q, &m[i]), 0);
	for (i = 0; i < BATCH; i++) {
		due[i] = t0 + 10 * MS;
		fill(m[i].data, (uint64_t)i);
		REQUIRE_EQ(dq_commit(q, &m[i], PAYLOAD, due[i], (uint64_t)i), 0);
		if ((i + 1) % 64 == 0)
			REQUIRE(dq_flush(q) >= 0, "flush");
	}
	REQUIRE(dq_flush(q) >= 0, "flush");
	reap_n(q, r, BATCH, due);
	for (i = 0; i < BATCH; i++) {
		CHECK(payload_is(&r[i], payload_id(&r[i])));
		slots[i] = r[i].slot;
	}
	/* The last 10 finished FAILED, the rest DELIVERED in one call with
	 * a slot named twice and one out of range: those two refused. */
	slots[BATCH] = slots[0];
	slots[BATCH + 1] = UINT32_MAX;
	CHECK_EQ(dq_finish_n(q, slots + BATCH - 10, 10, DQ_DONE_FAILED, NULL), 10);
	memmove(slots + BATCH - 10, slots + BATCH, 2 * sizeof(slots[0]));
	n = dq_done_n(q, slots, BATCH - 8, res);
	CHECK_EQ(n, BATCH - 10);
	for (i = 0; i < BATCH - 10; i++)
		CHECK_EQ(res[i], 0);
	CHECK_EQ(res[BATCH - 10], -EINVAL);	/* slot 0's again */
	CHECK_EQ(res[BATCH - 9], -EINVAL);	/* out of range */
	/* All finished: nothing in flight, counted as the engine saw it. */
	REQUIRE_EQ(dq_queue_track_stats(q, &ts), 0);
	CHECK_EQ(ts.inflight, 0);
	CHECK_EQ(ts.done_delivered, (uint64_t)(BATCH - 10));
	CHECK_EQ(ts.done_failed, 10);
	/* Finished twice: refused, nothing changes. */
	CHECK_EQ(dq_done_n(q, slots, 3, res), 0);
	CHECK_EQ(res[0], -EINVAL);
	CHECK_EQ(dq_finish_n(q, slots, 1, DQ_DONE_NR, NULL), -EINVAL);
	/* Every slot is free again. */
	CHECK_EQ(dq_reserve_n(q, m, BATCH + 8), BATCH + 8);
	dq_queue_close(q);
}

static const struct tcase cases[] = {
	{ "held_until_finish", t_held_until_finish, 30, false },
	{ "cap", t_cap, 60, false },
	{ "cap_never_early", t_cap_never_early, 30, false },
	{ "finish_wakes_reaper", t_finish_wakes_reaper, 30, false },
	{ "attempts", t_attempts, 30, false },
	{ "errors", t_errors, 30, false },
	{ "stats", t_stats, 30, false },
	{ "on_time", t_on_time, 30, false },
	{ "batch", t_batch, 30, false },
	{ "named", t_named, 60, true },
	{ "named_visibility", t_named_visibility, 60, true },
};

int main(int argc, char **argv)
{
	contract_add_matrix(cases, sizeof(cases) / sizeof(cases[0]));
	return tap_main(argc, argv);
}
