// SPDX-License-Identifier: LGPL-2.1 OR MIT
/*
 * dq_keys: application keys (DQ_SETUP_F_KEYS).  A keyed descriptor's
 * user_data is its key, unique among the queue's held (and, tracked, in
 * flight) messages: a second one is rejected (DQ_REJ_KEY, -EEXIST) unless
 * it replaces the holder (DQ_DESC_F_REPLACE: the holder's slot comes back
 * as a DQ_REPLACED entry); DQ_IOC_KEY looks a key up or cancels its
 * message.  Judged against what each test submitted (which message is in
 * which slot, its sequence number written in its payload, its due time
 * on the test's clock), not against what dq reports.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>

#include "dqtest.h"
#include "tap.h"

#define KEYS(...) DQT_PARAMS(.slot_size = 64, .flags = DQ_SETUP_F_KEYS, \
			     __VA_ARGS__)
#define PAYLOAD_LEN	32U
/* Lateness allowed before a release counts as late, for this suite. */
#define LATE_BOUND_NS	(2 * NSEC_PER_SEC)

/* One keyed message: payload = its seq, then the seq's pattern. */
static int push_keyed(struct dqt_queue *q, uint32_t slot, uint64_t seq,
		      uint64_t key, uint64_t due_ns, uint16_t flags)
{
	uint8_t *p = dqt_slot_ptr(q, slot);
	struct dq_desc d = {
		.due_ns = due_ns,
		.user_data = key,
		.slot = slot,
		.len = PAYLOAD_LEN,
		.gen = (uint32_t)seq,
		.flags = DQ_DESC_F_KEY | flags,
	};

	memcpy(p, &seq, sizeof(seq));
	dqt_fill_payload(p + sizeof(seq), PAYLOAD_LEN - sizeof(seq), seq);
	return dqt_push(q, &d);
}

/* The seq a released payload carries, or UINT64_MAX when it is damaged. */
static uint64_t payload_seq(struct dqt_queue *q, uint32_t slot, uint32_t len)
{
	const uint8_t *p = dqt_slot_ptr(q, slot);
	uint64_t seq;

	if (len != PAYLOAD_LEN)
		return UINT64_MAX;
	memcpy(&seq, p, sizeof(seq));
	if (dqt_check_payload(p + sizeof(seq), PAYLOAD_LEN - sizeof(seq), seq))
		return UINT64_MAX;
	return seq;
}

static int key_op(struct dqt_queue *q, uint32_t op, uint64_t key,
		  struct dq_key_op *out)
{
	struct dq_key_op k = { .key = key, .op = op };
	int ret = ioctl(q->fd, DQ_IOC_KEY, &k);

	if (out)
		*out = k;
	return ret < 0 ? -errno : 0;
}

/* Reap what is ready within @secs seconds, until @want entries. */
static int reap_some(struct dqt_queue *q, struct dq_ready *out, uint32_t want,
		     unsigned int secs)
{
	uint32_t got = 0;
	int ret = dqt_reap_until(q, out, NULL, want,
				 dqt_now_ns() + secs * NSEC_PER_SEC,
				 DQT_WAIT_IOCTL, &got);

	return ret < 0 ? ret : (int)got;
}

TEST(keys_setup_and_flags)
{
	struct dq_reject rej[4];
	struct dq_key_op k;
	struct dqt_queue q;

	ASSERT_OK(dqt_queue_init(&q, &KEYS(.slot_count = 8)));
	EXPECT_TRUE(q.setup.features & DQ_FEAT_KEYS);
	EXPECT_EQ(q.setup.flags, DQ_SETUP_F_KEYS);
	/* REPLACE needs KEY */
	ASSERT_OK(dqt_push_msg(&q, 0, 1, NSEC_PER_SEC, DQ_DESC_F_RELATIVE |
			       DQ_DESC_F_REPLACE, 8, 5));
	EXPECT_EQ(dqt_submit(&q, 0, rej, 4, NULL), 0);
	EXPECT_EQ(rej[0].reason, DQ_REJ_FLAGS);
	/* the op and reserved fields are checked */
	k = (struct dq_key_op){ .key = 1, .op = DQ_KEY_CANCEL + 1 };
	EXPECT_SYSERR(ioctl(q.fd, DQ_IOC_KEY, &k), EINVAL);
	k = (struct dq_key_op){ .key = 1, .flags = 1 };
	EXPECT_SYSERR(ioctl(q.fd, DQ_IOC_KEY, &k), EINVAL);
	k = (struct dq_key_op){ .key = 1, .resv = 1 };
	EXPECT_SYSERR(ioctl(q.fd, DQ_IOC_KEY, &k), EINVAL);
	EXPECT_SYSERR(ioctl(q.fd, DQ_IOC_KEY, (void *)8), EFAULT);
	EXPECT_EQ(key_op(&q, DQ_KEY_LOOKUP, 1, NULL), -ENOENT);
	dqt_queue_fini(&q);

	/* a queue without keys: the flags are unknown, DQ_IOC_KEY too */
	ASSERT_OK(dqt_queue_init(&q, &DQT_PARAMS(.slot_count = 8, .slot_size = 64)));
	ASSERT_OK(dqt_push_msg(&q, 0, 1, NSEC_PER_SEC, DQ_DESC_F_RELATIVE |
			       DQ_DESC_F_KEY, 8, 5));
	EXPECT_EQ(dqt_submit(&q, 0, rej, 4, NULL), 0);
	EXPECT_EQ(rej[0].reason, DQ_REJ_FLAGS);
	EXPECT_EQ(rej[0].error, -EOPNOTSUPP);
	EXPECT_EQ(key_op(&q, DQ_KEY_LOOKUP, 5, NULL), -EOPNOTSUPP);
	dqt_queue_fini(&q);
}

TEST(keys_unique_among_held)
{
	struct dq_queue_stats st;
	struct dq_ready r[4];
	struct dq_reject rej[4];
	struct dq_submit s;
	struct dqt_queue q;
	uint64_t due;

	ASSERT_OK(dqt_queue_init(&q, &KEYS(.slot_count = 8)));
	due = dqt_now_ns() + 300 * NSEC_PER_MSEC;
	ASSERT_OK(push_keyed(&q, 0, 1, 77, due, 0));
	/* the same key in the same submit, and in a later one */
	ASSERT_OK(push_keyed(&q, 1, 2, 77, due, 0));
	ASSERT_OK(push_keyed(&q, 2, 3, 78, due, 0));
	EXPECT_EQ(dqt_submit(&q, 0, rej, 4, &s), 2);
	EXPECT_EQ(s.rejected, 1);
	EXPECT_EQ(rej[0].reason, DQ_REJ_KEY);
	EXPECT_EQ(rej[0].error, -EEXIST);
	EXPECT_EQ(rej[0].slot, 1);
	EXPECT_EQ(rej[0].user_data, 77);
	ASSERT_OK(push_keyed(&q, 1, 4, 77, due, 0));
	EXPECT_EQ(dqt_submit(&q, 0, rej, 4, NULL), 0);
	EXPECT_EQ(rej[0].error, -EEXIST);
	ASSERT_OK(dqt_queue_stats(&q, &st));
	EXPECT_EQ(st.rejected[DQ_REJ_KEY], 2);

	/* released: both keys are free again, and the payloads are ours */
	ASSERT_EQ(reap_some(&q, r, 2, 10), 2);
	for (int i = 0; i < 2; i++) {
		EXPECT_GE(dqt_now_ns(), due);
		EXPECT_LT(dqt_now_ns(), due + LATE_BOUND_NS);
		EXPECT_EQ(payload_seq(&q, r[i].slot, r[i].len),
			  r[i].slot == 0 ? 1 : 3);
	}
	EXPECT_EQ(key_op(&q, DQ_KEY_LOOKUP, 77, NULL), -ENOENT);
	ASSERT_OK(push_keyed(&q, 1, 5, 77, 0, DQ_DESC_F_RELATIVE));
	EXPECT_EQ(dqt_submit(&q, 0, NULL, 0, NULL), 1);
	ASSERT_EQ(reap_some(&q, r, 1, 10), 1);
	EXPECT_EQ(payload_seq(&q, r[0].slot, r[0].len), 5);
	dqt_queue_fini(&q);
}

TEST(keys_lookup_and_cancel)
{
	struct dq_queue_stats st;
	struct dq_ready r[2];
	struct dq_key_op k;
	struct dqt_queue q;
	uint64_t due;

	ASSERT_OK(dqt_queue_init(&q, &KEYS(.slot_count = 8)));
	due = dqt_now_ns() + 400 * NSEC_PER_MSEC;
	ASSERT_OK(push_keyed(&q, 3, 9, 1234, due, 0));
	ASSERT_OK(push_keyed(&q, 4, 10, 1235, due, 0));
	ASSERT_EQ(dqt_submit(&q, 0, NULL, 0, NULL), 2);

	ASSERT_OK(key_op(&q, DQ_KEY_LOOKUP, 1234, &k));
	EXPECT_EQ(k.handle, DQ_HANDLE(3, 9));
	EXPECT_EQ(k.due_ns, due);
	EXPECT_EQ(k.state, DQ_KEY_PENDING);
	ASSERT_OK(key_op(&q, DQ_KEY_CANCEL, 1234, &k));
	EXPECT_EQ(k.handle, DQ_HANDLE(3, 9));
	EXPECT_EQ(key_op(&q, DQ_KEY_LOOKUP, 1234, NULL), -ENOENT);
	EXPECT_EQ(key_op(&q, DQ_KEY_CANCEL, 1234, NULL), -ENOENT);
	ASSERT_OK(dqt_queue_stats(&q, &st));
	EXPECT_EQ(st.cancelled, 1);
	/* a cancel by handle frees the key too */
	EXPECT_EQ(dqt_cancel(&q, 4, 10), 0);
	EXPECT_EQ(key_op(&q, DQ_KEY_LOOKUP, 1235, NULL), -ENOENT);

	/* the slot and the key take a new message; only it comes out */
	ASSERT_OK(push_keyed(&q, 3, 11, 1234, 0, DQ_DESC_F_RELATIVE));
	ASSERT_EQ(dqt_submit(&q, 0, NULL, 0, NULL), 1);
	ASSERT_EQ(reap_some(&q, r, 1, 10), 1);
	EXPECT_EQ(payload_seq(&q, r[0].slot, r[0].len), 11);
	dqt_sleep_until(due + 100 * NSEC_PER_MSEC);
	EXPECT_EQ(dqt_reap(&q, r, 2), 0);
	dqt_queue_fini(&q);
}

TEST(keys_replace)
{
	struct dq_queue_stats st;
	struct dq_reject rej[4];
	struct dq_ready r[4];
	struct dq_submit s;
	struct dq_key_op k;
	struct dqt_queue q;
	uint64_t far, soon, t0;

	ASSERT_OK(dqt_queue_init(&q, &KEYS(.slot_count = 8)));
	t0 = dqt_now_ns();
	far = t0 + 60 * NSEC_PER_SEC;
	soon = t0 + 200 * NSEC_PER_MSEC;
	ASSERT_OK(push_keyed(&q, 0, 1, 42, far, 0));
	ASSERT_EQ(dqt_submit(&q, 0, NULL, 0, NULL), 1);

	/* reschedule: the new due time and payload, the old slot back */
	ASSERT_OK(push_keyed(&q, 1, 2, 42, soon, DQ_DESC_F_REPLACE));
	EXPECT_EQ(dqt_submit(&q, 0, rej, 4, &s), 1);
	EXPECT_EQ(s.rejected, 1);
	EXPECT_EQ(rej[0].reason, DQ_REPLACED);
	EXPECT_EQ(rej[0].error, 0);
	EXPECT_EQ(rej[0].slot, 0);
	EXPECT_EQ(rej[0].user_data, 42);
	ASSERT_OK(key_op(&q, DQ_KEY_LOOKUP, 42, &k));
	EXPECT_EQ(k.handle, DQ_HANDLE(1, 2));
	EXPECT_EQ(k.due_ns, soon);
	/* the replaced message is gone: its handle no longer cancels */
	EXPECT_EQ(dqt_cancel(&q, 0, 1), -EALREADY);

	/* a replace whose key nobody holds */
	ASSERT_OK(push_keyed(&q, 0, 3, 43, soon, DQ_DESC_F_REPLACE));
	EXPECT_EQ(dqt_submit(&q, 0, rej, 4, &s), 0);
	EXPECT_EQ(rej[0].reason, DQ_REJ_KEY);
	EXPECT_EQ(rej[0].error, -ENOENT);

	/* in one submit: a message and its replacement */
	ASSERT_OK(push_keyed(&q, 0, 4, 44, far, 0));
	ASSERT_OK(push_keyed(&q, 2, 5, 44, soon, DQ_DESC_F_REPLACE));
	EXPECT_EQ(dqt_submit(&q, 0, rej, 4, &s), 2);
	EXPECT_EQ(s.rejected, 1);
	EXPECT_EQ(rej[0].reason, DQ_REPLACED);
	EXPECT_EQ(rej[0].slot, 0);
	ASSERT_OK(dqt_queue_stats(&q, &st));
	EXPECT_EQ(st.replaced, 2);
	EXPECT_EQ(st.cancelled, 0);
	EXPECT_EQ(st.pending, 2);

	/* out come exactly the replacements, on time, never the originals */
	ASSERT_EQ(reap_some(&q, r, 2, 10), 2);
	for (int i = 0; i < 2; i++) {
		uint64_t seq = payload_seq(&q, r[i].slot, r[i].len);

		EXPECT_TRUE(seq == 2 || seq == 5);
		/* reaped after release: the test's clock bounds it */
		EXPECT_GE(dqt_now_ns(), soon);
		EXPECT_LT(dqt_now_ns(), soon + LATE_BOUND_NS);
	}
	dqt_sleep_ns(200 * NSEC_PER_MSEC);
	EXPECT_EQ(dqt_reap(&q, r, 4), 0);
	dqt_queue_fini(&q);
}

TEST(keys_tracked_until_done)
{
	struct dq_ready_track t[2];
	struct dq_reject rej[2];
	struct dq_key_op k;
	struct dqt_queue q;
	uint32_t got = 0;

	ASSERT_OK(dqt_queue_init(&q, &DQT_PARAMS(.slot_count = 8,
						 .slot_size = 64,
						 .flags = DQ_SETUP_F_KEYS |
							  DQ_SETUP_F_TRACK)));
	ASSERT_OK(push_keyed(&q, 0, 1, 9, 0, DQ_DESC_F_RELATIVE));
	ASSERT_EQ(dqt_submit(&q, 0, NULL, 0, NULL), 1);
	for (uint64_t dl = dqt_now_ns() + 10 * NSEC_PER_SEC;
	     !got && dqt_now_ns() < dl;)
		if (dqt_wait(&q, 1, 100 * NSEC_PER_MSEC) > 0)
			got = (uint32_t)dqt_reap_track(&q, t, 2);
	ASSERT_EQ(got, 1);
	EXPECT_EQ(payload_seq(&q, t[0].r.slot, t[0].r.len), 1);

	/* in flight: the key is still taken; replace and cancel refused */
	ASSERT_OK(key_op(&q, DQ_KEY_LOOKUP, 9, &k));
	EXPECT_EQ(k.state, DQ_KEY_INFLIGHT);
	EXPECT_EQ(key_op(&q, DQ_KEY_CANCEL, 9, NULL), -EALREADY);
	ASSERT_OK(push_keyed(&q, 1, 2, 9, 0, DQ_DESC_F_RELATIVE));
	EXPECT_EQ(dqt_submit(&q, 0, rej, 2, NULL), 0);
	EXPECT_EQ(rej[0].error, -EEXIST);
	ASSERT_OK(push_keyed(&q, 1, 3, 9, 0, DQ_DESC_F_RELATIVE |
			     DQ_DESC_F_REPLACE));
	EXPECT_EQ(dqt_submit(&q, 0, rej, 2, NULL), 0);
	EXPECT_EQ(rej[0].reason, DQ_REJ_KEY);
	EXPECT_EQ(rej[0].error, -EBUSY);

	/* done: free */
	EXPECT_EQ(dqt_done_one(&q, &t[0], DQ_DONE_DELIVERED), 0);
	EXPECT_EQ(key_op(&q, DQ_KEY_LOOKUP, 9, NULL), -ENOENT);
	ASSERT_OK(push_keyed(&q, 1, 4, 9, NSEC_PER_SEC, DQ_DESC_F_RELATIVE));
	EXPECT_EQ(dqt_submit(&q, 0, NULL, 0, NULL), 1);
	dqt_queue_fini(&q);
}

/*
 * Many keyed submits, replaces and cancels over few keys, racing with
 * their own releases, against a model of which message holds which key.
 * Every accepted message must end exactly one way (released once,
 * cancelled or replaced), never early, with its own payload; at no time
 * may two released-or-held messages share a key beyond what the model
 * allows.
 */
#define MODEL_SLOTS	64U
#define MODEL_KEYS	12U
#define MODEL_OPS	3000U

enum { M_NONE, M_HELD, M_RELEASED, M_CANCELLED, M_REPLACED, M_REJECTED };

struct model_msg {
	uint64_t key;
	uint64_t due;
	uint32_t slot;
	uint8_t end;
};

/* What the test submitted, and what became of it. */
struct model {
	struct model_msg msgs[MODEL_OPS + 1];	/* by seq, from 1 */
	uint64_t slot_seq[MODEL_SLOTS];		/* seq a slot holds; 0: none */
	uint64_t seq;
	uint64_t bad, twice, early, late;
	uint64_t released, cancelled, replaced, rej_exist;
};

/* Reap what is ready and hold each entry to the model; the count or -errno. */
static int model_reap(struct dqt_queue *q, struct model *md)
{
	struct dq_ready r[MODEL_SLOTS];
	int n = dqt_reap(q, r, MODEL_SLOTS);

	for (int i = 0; i < n; i++) {
		uint64_t now = dqt_now_ns();
		uint64_t m = payload_seq(q, r[i].slot, r[i].len);

		if (m == UINT64_MAX || m > md->seq ||
		    md->slot_seq[r[i].slot] != m) {
			md->bad++;
			continue;
		}
		if (md->msgs[m].end != M_HELD)
			md->twice++;
		md->msgs[m].end = M_RELEASED;
		if (r[i].user_data != md->msgs[m].key)
			md->bad++;
		if (now < md->msgs[m].due)
			md->early++;
		if (now > md->msgs[m].due + LATE_BOUND_NS)
			md->late++;
		md->released++;
		md->slot_seq[r[i].slot] = 0;
		dqt_slot_put(q, r[i].slot);
	}
	return n;
}

/* DQ_KEY_CANCEL of @key, held to the model. */
static void model_cancel(struct dqt_queue *q, struct model *md, uint64_t key)
{
	struct dq_key_op k;
	int ret = key_op(q, DQ_KEY_CANCEL, key, &k);
	uint32_t slot;
	uint64_t m;

	if (ret) {
		if (ret != -ENOENT && ret != -EALREADY)
			md->bad++;
		return;
	}
	slot = DQ_HANDLE_SLOT(k.handle);
	m = md->slot_seq[slot];
	if (!m || md->msgs[m].end != M_HELD || md->msgs[m].key != key)
		md->bad++;
	else
		md->msgs[m].end = M_CANCELLED;
	md->cancelled++;
	md->slot_seq[slot] = 0;
	dqt_slot_put(q, slot);
}

/*
 * Commit message @seq (slot @slot, @key, due @due, maybe a replace) and
 * hold what the submit says to the model: the new message accepted or
 * rejected, a replaced one taken back.
 */
static int model_commit(struct dqt_queue *q, struct model *md, uint32_t slot,
			uint64_t key, uint64_t due, uint16_t flags)
{
	uint64_t seq = ++md->seq;
	struct dq_reject rej[8];
	struct dq_submit s;
	int n;

	md->msgs[seq] = (struct model_msg){
		.key = key, .due = due, .slot = slot, .end = M_HELD,
	};
	n = push_keyed(q, slot, seq, key, due, flags);
	if (n)
		return n;
	n = dqt_submit(q, 0, rej, 8, &s);
	if (n < 0)
		return n;
	if (s.rejected > 2)
		md->bad++;
	md->slot_seq[slot] = seq;
	for (uint32_t i = 0; i < s.rejected && i < 8; i++) {
		uint32_t rs = rej[i].slot;
		uint64_t m = md->slot_seq[rs];

		if (rej[i].reason == DQ_REPLACED) {
			if (!m || md->msgs[m].end != M_HELD ||
			    md->msgs[m].key != key || rs == slot)
				md->bad++;
			else
				md->msgs[m].end = M_REPLACED;
			md->replaced++;
		} else {
			if (rej[i].reason != DQ_REJ_KEY || rs != slot)
				md->bad++;
			if (rej[i].error == -EEXIST)
				md->rej_exist++;
			md->msgs[seq].end = M_REJECTED;
		}
		md->slot_seq[rs] = 0;
		dqt_slot_put(q, rs);
	}
	if ((uint32_t)n != (md->msgs[seq].end == M_HELD))
		md->bad++;
	return 0;
}

TEST_TIMEOUT(keys_model_heavy_collisions, 300)
{
	static struct model md;
	uint64_t seed = dqt_seed(), rng = seed;
	struct dqt_queue q;

	tap_diag("seed %llu", (unsigned long long)seed);
	memset(&md, 0, sizeof(md));
	ASSERT_OK(dqt_queue_init(&q, &KEYS(.slot_count = MODEL_SLOTS)));

	for (uint32_t op = 0; op < MODEL_OPS; op++) {
		uint64_t key = 1000 + dqt_rand(&rng) % MODEL_KEYS;
		uint32_t what = (uint32_t)(dqt_rand(&rng) % 8);
		uint64_t due = dqt_now_ns() +
			       dqt_rand(&rng) % (20 * NSEC_PER_MSEC);
		int slot;

		if (what == 0) {
			model_cancel(&q, &md, key);
		} else {
			slot = dqt_slot_reserve(&q);
			if (slot >= 0)
				ASSERT_OK(model_commit(&q, &md, (uint32_t)slot,
						       key, due, what <= 3 ?
						       DQ_DESC_F_REPLACE : 0));
		}
		/* reap what is due, without waiting */
		ASSERT_GE(model_reap(&q, &md), 0);
	}
	/* drain: everything still held comes out */
	for (uint64_t dl = dqt_now_ns() + 20 * NSEC_PER_SEC;
	     dqt_now_ns() < dl;) {
		uint32_t held = 0;

		for (uint32_t i = 0; i < MODEL_SLOTS; i++)
			held += md.slot_seq[i] != 0;
		if (!held)
			break;
		dqt_wait(&q, 1, 100 * NSEC_PER_MSEC);
		ASSERT_GE(model_reap(&q, &md), 0);
	}
	for (uint64_t m = 1; m <= md.seq; m++)
		if (md.msgs[m].end == M_HELD)
			md.bad++;		/* lost */
	tap_diag("%llu messages: %llu released, %llu cancelled, %llu replaced, %llu key collisions",
		 (unsigned long long)md.seq, (unsigned long long)md.released,
		 (unsigned long long)md.cancelled,
		 (unsigned long long)md.replaced,
		 (unsigned long long)md.rej_exist);
	EXPECT_EQ(md.bad, 0);
	EXPECT_EQ(md.twice, 0);
	EXPECT_EQ(md.early, 0);
	EXPECT_EQ(md.late, 0);
	/* the workload did what it is for */
	EXPECT_GT(md.replaced, 50);
	EXPECT_GT(md.rej_exist, 50);
	EXPECT_GT(md.cancelled, 20);
	dqt_queue_fini(&q);
}

TAP_MAIN()
