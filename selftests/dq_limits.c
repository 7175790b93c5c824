// SPDX-License-Identifier: LGPL-2.1 OR MIT
/*
 * dq_limits: full rings, a full arena, teardown with messages pending, and
 * the per-node release engines.
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "dqtest.h"
#include "tap.h"

TEST(submit_ring_full)
{
	struct dqt_queue q;

	ASSERT_OK(dqt_queue_init(&q, &DQT_PARAMS(.slot_count = 256, .slot_size = 64,
						  .submit_entries = 8)));
	uint32_t nr = q.sq.nr;

	DIAG("submit ring of %u entries", nr);
	ASSERT_GE(nr, 8);
	ASSERT_LE(nr * 2 + 1, 256);
	for (uint32_t i = 0; i < nr; i++)
		ASSERT_OK(dqt_push_msg(&q, i, 1, 10 * NSEC_PER_SEC, DQ_DESC_F_RELATIVE, 8, i));
	/* full: user space cannot publish another until the kernel consumes */
	EXPECT_EQ(dqt_push_msg(&q, nr, 1, 10 * NSEC_PER_SEC, DQ_DESC_F_RELATIVE, 8, nr),
		  -EAGAIN);
	EXPECT_EQ(dqt_sq_space(&q), 0);
	EXPECT_EQ(dqt_load_acq(q.sq.consumer), 0);
	EXPECT_EQ(dqt_submit(&q, 0, NULL, 0, NULL), (int)nr);
	EXPECT_EQ(dqt_load_acq(q.sq.consumer), nr);
	EXPECT_EQ(dqt_sq_space(&q), nr);
	/* once more around the ring, consumed in two parts */
	for (uint32_t i = nr; i < 2 * nr; i++)
		ASSERT_OK(dqt_push_msg(&q, i, 1, 10 * NSEC_PER_SEC, DQ_DESC_F_RELATIVE, 8, i));
	EXPECT_EQ(dqt_push_msg(&q, 2 * nr, 1, 0, DQ_DESC_F_RELATIVE, 8, 0), -EAGAIN);
	EXPECT_EQ(dqt_submit(&q, nr / 2, NULL, 0, NULL), (int)(nr / 2));
	EXPECT_EQ(dqt_sq_space(&q), nr / 2);
	EXPECT_EQ(dqt_submit(&q, 0, NULL, 0, NULL), (int)(nr - nr / 2));

	struct dq_queue_stats st;

	ASSERT_OK(dqt_queue_stats(&q, &st));
	EXPECT_EQ(st.submitted, 2 * nr);
	EXPECT_EQ(st.pending, 2 * nr);
	dqt_queue_fini(&q);
}

TEST(ready_ring_backlog)
{
	const uint32_t n = 100;
	struct dqt_queue q;
	struct dq_queue_stats st;
	struct dq_ready r[128];
	uint64_t reap[128];
	uint64_t due[100];
	uint32_t got;

	ASSERT_OK(dqt_queue_init(&q, &DQT_PARAMS(.slot_count = 128, .slot_size = 64,
						  .ready_entries = 16)));
	uint32_t nr = q.rq.nr;

	DIAG("ready ring of %u entries", nr);
	if (nr >= n)
		SKIP("ready ring rounded up to %u entries, not smaller than %u", nr, n);

	uint64_t t = dqt_now_ns() + 30 * NSEC_PER_MSEC;

	for (uint32_t i = 0; i < n; i++) {
		due[i] = t + (i / 4) * 100 * NSEC_PER_USEC;	/* groups of 4 equal */
		ASSERT_OK(dqt_push_msg(&q, i, 1, due[i], 0, 8, i));
	}
	ASSERT_EQ(dqt_submit(&q, 0, NULL, 0, NULL), (int)n);

	/* everything comes due; only nr fit */
	uint64_t dl = t + 20 * NSEC_PER_SEC;

	do {
		dqt_sleep_ns(5 * NSEC_PER_MSEC);
		ASSERT_OK(dqt_queue_stats(&q, &st));
	} while (st.pending && dqt_now_ns() < dl);
	dqt_sleep_ns(20 * NSEC_PER_MSEC);
	ASSERT_OK(dqt_queue_stats(&q, &st));
	DIAG("pending %llu backlog %llu released %llu", (unsigned long long)st.pending,
	     (unsigned long long)st.ready_backlog, (unsigned long long)st.released);
	EXPECT_EQ(st.pending, 0);
	EXPECT_EQ(st.released, nr);
	EXPECT_EQ(st.ready_backlog, n - nr);
	EXPECT_EQ(dqt_ready_count(&q), nr);
	EXPECT_EQ(st.ring_errors, 0);

	/* a message waiting for room is still the kernel's: its slot is BUSY */
	struct dq_reject rej;
	struct dq_submit sub;

	ASSERT_OK(dqt_push_msg(&q, n - 1, 2, 0, DQ_DESC_F_RELATIVE, 8, 999));
	EXPECT_EQ(dqt_submit(&q, 0, &rej, 1, &sub), 0);
	EXPECT_EQ(sub.rejected, 1);
	EXPECT_EQ(rej.reason, DQ_REJ_BUSY);

	/* drain while waiting with WAIT and poll(): nothing lost, in order */
	int ret = dqt_reap_until(&q, r, reap, n, dqt_now_ns() + 30 * NSEC_PER_SEC,
				 DQT_WAIT_MIXED, &got);

	EXPECT_GE(ret, 0);
	EXPECT_EQ(got, n);
	for (uint32_t i = 0; i < got; i++) {
		if (r[i].user_data != i) {
			FAIL("ready[%u] = %llu, expected %u", i,
			     (unsigned long long)r[i].user_data, i);
			break;
		}
		EXPECT_EQ(r[i].due_ns, due[i]);
		EXPECT_GE(r[i].release_ns, due[i]);
		EXPECT_GE(reap[i], due[i]);
	}
	dqt_sleep_ns(20 * NSEC_PER_MSEC);
	EXPECT_EQ(dqt_ready_count(&q), 0);
	ASSERT_OK(dqt_queue_stats(&q, &st));
	EXPECT_EQ(st.ready_backlog, 0);
	EXPECT_EQ(st.released, n);
	EXPECT_EQ(st.pending, 0);
	dqt_queue_fini(&q);
}

TEST(backlog_drains_on_poll)
{
	/* the same with poll() alone as the consumer's wait */
	const uint32_t n = 64;
	struct dqt_queue q;
	struct dq_ready r[64];
	uint32_t got;

	ASSERT_OK(dqt_queue_init(&q, &DQT_PARAMS(.slot_count = n, .slot_size = 64,
						  .ready_entries = 8)));
	if (q.rq.nr >= n)
		SKIP("ready ring rounded up to %u entries", q.rq.nr);
	for (uint32_t i = 0; i < n; i++)
		ASSERT_OK(dqt_push_msg(&q, i, 1, i * NSEC_PER_USEC, DQ_DESC_F_RELATIVE, 8, i));
	ASSERT_EQ(dqt_submit(&q, 0, NULL, 0, NULL), (int)n);
	dqt_reap_until(&q, r, NULL, n, dqt_now_ns() + 30 * NSEC_PER_SEC, DQT_WAIT_POLL, &got);
	EXPECT_EQ(got, n);
	for (uint32_t i = 0; i < got; i++)
		if (r[i].user_data != i) {
			FAIL("ready[%u] = %llu", i, (unsigned long long)r[i].user_data);
			break;
		}
	dqt_queue_fini(&q);
}

TEST(arena_full_reserve)
{
	const uint32_t n = 8;
	struct dqt_queue q;
	struct dq_queue_stats st;
	struct dq_reject rej;
	struct dq_submit sub;
	int slot;

	ASSERT_OK(dqt_queue_init(&q, &DQT_PARAMS(.slot_count = n, .slot_size = 64)));
	/* user space reserves every slot and submits them all */
	for (uint32_t i = 0; i < n; i++) {
		slot = dqt_slot_reserve(&q);
		ASSERT_EQ(slot, (int)i);
		ASSERT_OK(dqt_push_msg(&q, (uint32_t)slot, 1, 20 * NSEC_PER_SEC,
				       DQ_DESC_F_RELATIVE, 8, i));
	}
	ASSERT_EQ(dqt_submit(&q, 0, NULL, 0, NULL), (int)n);
	EXPECT_EQ(dqt_slot_reserve(&q), -ENOSPC);
	ASSERT_OK(dqt_queue_stats(&q, &st));
	EXPECT_EQ(st.pending, n);

	/* every slot is held: any submit is BUSY */
	for (uint32_t i = 0; i < n; i++) {
		ASSERT_OK(dqt_push_msg(&q, i, 2, 0, DQ_DESC_F_RELATIVE, 8, 100 + i));
		EXPECT_EQ(dqt_submit(&q, 0, &rej, 1, &sub), 0);
		EXPECT_EQ(sub.rejected, 1);
		EXPECT_EQ(rej.reason, DQ_REJ_BUSY);
		EXPECT_EQ(rej.error, -EBUSY);
	}
	ASSERT_OK(dqt_queue_stats(&q, &st));
	EXPECT_EQ(st.rejected[DQ_REJ_BUSY], n);
	EXPECT_EQ(st.pending, n);

	/* cancel one: its slot can be reserved and used again */
	ASSERT_EQ(dqt_cancel(&q, 5, 1), 0);
	dqt_slot_put(&q, 5);
	slot = dqt_slot_reserve(&q);
	ASSERT_EQ(slot, 5);
	ASSERT_OK(dqt_push_msg(&q, 5, 2, 0, DQ_DESC_F_RELATIVE, 8, 55));
	EXPECT_EQ(dqt_submit(&q, 0, NULL, 0, NULL), 1);

	struct dq_ready r;
	uint32_t got;

	dqt_reap_until(&q, &r, NULL, 1, dqt_now_ns() + 10 * NSEC_PER_SEC, DQT_WAIT_IOCTL, &got);
	EXPECT_EQ(got, 1);
	EXPECT_EQ(r.user_data, 55);
	dqt_queue_fini(&q);
}

TEST(resubmit_after_release_before_reap)
{
	/* a posted entry gives the slot back even before user space reaps it */
	struct dqt_queue q;
	struct dq_ready r[2];
	uint32_t got;

	ASSERT_OK(dqt_queue_init(&q, &DQT_PARAMS(.slot_count = 2, .slot_size = 64)));
	ASSERT_OK(dqt_push_msg(&q, 0, 1, 0, DQ_DESC_F_RELATIVE, 8, 1));
	ASSERT_EQ(dqt_submit(&q, 0, NULL, 0, NULL), 1);
	uint64_t dl = dqt_now_ns() + 10 * NSEC_PER_SEC;

	while (!dqt_ready_count(&q) && dqt_now_ns() < dl)
		dqt_sleep_ns(NSEC_PER_MSEC);
	ASSERT_EQ(dqt_ready_count(&q), 1);
	ASSERT_OK(dqt_push_msg(&q, 0, 2, 20 * NSEC_PER_MSEC, DQ_DESC_F_RELATIVE, 8, 2));
	EXPECT_EQ(dqt_submit(&q, 0, NULL, 0, NULL), 1);
	dqt_reap_until(&q, r, NULL, 2, dl, DQT_WAIT_IOCTL, &got);
	EXPECT_EQ(got, 2);
	EXPECT_EQ(r[0].user_data, 1);
	EXPECT_EQ(r[1].user_data, 2);
	dqt_queue_fini(&q);
}

static uint64_t nodes_pending(int sfd, int *ok)
{
	uint64_t sum = 0;

	for (int node = 0; node < 64; node++) {
		struct dq_node_stats ns;

		if (!dqt_node_online(node))
			continue;
		if (dqt_node_stats(sfd, node, &ns)) {
			*ok = 0;
			continue;
		}
		sum += ns.pending;
	}
	return sum;
}

static void fill_and_close(uint32_t round, uint32_t pending, int close_first,
			   long *live_kb)
{
	const uint32_t slots = 8192, size = 4096;
	struct dqt_queue q;

	ASSERT_OK(dqt_queue_init(&q, &DQT_PARAMS(.slot_count = slots, .slot_size = size,
						  .submit_entries = 1024,
						  .ready_entries = 1024)));
	for (uint32_t i = 0; i < pending; i++) {
		uint64_t *p = (uint64_t *)dqt_slot_ptr(&q, i);

		p[0] = round;
		p[1] = i;
		struct dq_desc d = {
			.due_ns = 3600 * NSEC_PER_SEC, .user_data = i, .slot = i,
			.len = 16, .gen = round, .flags = DQ_DESC_F_RELATIVE,
		};

		ASSERT_OK(dqt_push_flush(&q, &d));
	}
	ASSERT_GE(dqt_submit(&q, 0, NULL, 0, NULL), 0);
	struct dq_queue_stats st;

	ASSERT_OK(dqt_queue_stats(&q, &st));
	ASSERT_EQ(st.pending, pending);
	if (live_kb)
		*live_kb = dqt_free_kb();
	if (close_first) {
		/* close the fd while the regions are mapped, unmap after */
		close(q.fd);
		q.fd = -1;
		/* the mappings stay valid until unmapped */
		dqt_slot_ptr(&q, slots - 1)[size - 1] = 1;
		EXPECT_EQ(((uint64_t *)dqt_slot_ptr(&q, 0))[0], round);
		EXPECT_EQ(dqt_ready_count(&q), 0);
	}
	dqt_queue_fini(&q);
}

TEST_TIMEOUT(close_with_pending_no_leak, 300)
{
	const uint32_t rounds = 20, pending = 5000;
	int ok = 1;
	int sfd = dqt_stats_fd();

	ASSERT_GE(sfd, 0);
	uint64_t pend0 = nodes_pending(sfd, &ok);

	ASSERT_TRUE(ok);
	/* warm up caches and slabs */
	fill_and_close(1000, pending, 0, NULL);
	fill_and_close(1001, pending, 1, NULL);
	dqt_sleep_ns(200 * NSEC_PER_MSEC);
	long mem0 = dqt_free_kb(), avail0 = dqt_mem_available_kb(), live = 0;

	ASSERT_GT(mem0, 0);
	for (uint32_t i = 0; i < rounds; i++) {
		fill_and_close(i, pending, i & 1, i ? NULL : &live);
		if (!i) {
			/*
			 * The probe must see a live queue (5000 touched 4 KiB
			 * slots at least), or a leak would go unseen too.
			 */
			DIAG("free memory with one queue alive: %ld kB less", mem0 - live);
			EXPECT_GE(mem0 - live, 24 * 1024);
		}
		/* the engines let go of everything the queue held */
		uint64_t dl = dqt_now_ns() + 5 * NSEC_PER_SEC, pend;

		do {
			pend = nodes_pending(sfd, &ok);
			if (pend == pend0)
				break;
			dqt_sleep_ns(5 * NSEC_PER_MSEC);
		} while (dqt_now_ns() < dl);
		if (pend != pend0) {
			FAIL("round %u: engines hold %llu pending, %llu before", i,
			     (unsigned long long)pend, (unsigned long long)pend0);
			break;
		}
	}
	dqt_sleep_ns(300 * NSEC_PER_MSEC);
	long mem1 = 0;

	for (int i = 0; i < 5; i++) {
		long m = dqt_free_kb();

		mem1 = m > mem1 ? m : mem1;
		dqt_sleep_ns(50 * NSEC_PER_MSEC);
	}
	long drift = mem0 - mem1;

	DIAG("free memory %ld kB before, %ld kB after %u rounds of a 32 MiB arena with %u pending: drift %ld kB (MemAvailable drift %ld kB)",
	     mem0, mem1, rounds, pending, drift, avail0 - dqt_mem_available_kb());
	/* a leaked arena is 32 MiB a round, a leaked record set ~0.3 MiB */
	EXPECT_LT(drift, 4 * 1024);
}

TEST(size_limits)
{
	/* the largest slots: the last byte of the last slot is the payload's end */
	struct dqt_queue q;
	struct dq_ready r;
	uint32_t got;

	ASSERT_OK(dqt_queue_init(&q, &DQT_PARAMS(.slot_count = 3,
						  .slot_size = DQ_MAX_SLOT_SIZE)));
	EXPECT_EQ(q.slot_size, DQ_MAX_SLOT_SIZE);
	EXPECT_GE(q.setup.arena_size, 3ULL * DQ_MAX_SLOT_SIZE);
	uint8_t *last = dqt_slot_ptr(&q, 2);

	dqt_fill_payload(last, DQ_MAX_SLOT_SIZE, 99);
	ASSERT_OK(dqt_push_msg(&q, 2, 1, 0, DQ_DESC_F_RELATIVE, DQ_MAX_SLOT_SIZE, 2));
	ASSERT_EQ(dqt_submit(&q, 0, NULL, 0, NULL), 1);
	dqt_reap_until(&q, &r, NULL, 1, dqt_now_ns() + 10 * NSEC_PER_SEC, DQT_WAIT_IOCTL, &got);
	ASSERT_EQ(got, 1);
	EXPECT_EQ(r.len, DQ_MAX_SLOT_SIZE);
	EXPECT_EQ(dqt_check_payload(dqt_slot_ptr(&q, r.slot), r.len, 99), 0);
	dqt_queue_fini(&q);

	/* one slot of the smallest size */
	ASSERT_OK(dqt_queue_init(&q, &DQT_PARAMS(.slot_count = 1,
						  .slot_size = DQ_MIN_SLOT_SIZE,
						  .submit_entries = 2)));
	EXPECT_EQ(q.slot_size, DQ_MIN_SLOT_SIZE);
	ASSERT_OK(dqt_push_msg(&q, 0, 1, 0, DQ_DESC_F_RELATIVE, DQ_MIN_SLOT_SIZE, 1));
	ASSERT_OK(dqt_push_msg(&q, 1, 1, 0, DQ_DESC_F_RELATIVE, 1, 2));
	struct dq_reject rej;
	struct dq_submit sub;

	EXPECT_EQ(dqt_submit(&q, 0, &rej, 1, &sub), 1);
	EXPECT_EQ(rej.reason, DQ_REJ_SLOT);
	dqt_queue_fini(&q);

	/* the largest rings */
	ASSERT_OK(dqt_queue_init(&q, &DQT_PARAMS(.slot_count = 1, .slot_size = 64,
						  .submit_entries = DQ_MAX_RING_ENTRIES,
						  .ready_entries = DQ_MAX_RING_ENTRIES)));
	EXPECT_EQ(q.sq.nr, DQ_MAX_RING_ENTRIES);
	EXPECT_EQ(q.rq.nr, DQ_MAX_RING_ENTRIES);
	/* a full ring: every entry but the last is bad, the last is good */
	for (uint32_t i = 0; i < DQ_MAX_RING_ENTRIES - 1; i++)
		dqt_sq_entry(&q, i)->slot = 0xffffffff;	/* bad: rejected */
	*dqt_sq_entry(&q, DQ_MAX_RING_ENTRIES - 1) = (struct dq_desc){
		.due_ns = 0, .user_data = 7, .slot = 0, .len = 8, .gen = 1,
		.flags = DQ_DESC_F_RELATIVE,
	};
	dqt_store_rel(q.sq.producer, DQ_MAX_RING_ENTRIES);
	EXPECT_EQ(dqt_submit(&q, 0, NULL, 0, &sub), 1);
	EXPECT_EQ(sub.rejected, DQ_MAX_RING_ENTRIES - 1);
	EXPECT_EQ(dqt_load_acq(q.sq.consumer), DQ_MAX_RING_ENTRIES);
	dqt_reap_until(&q, &r, NULL, 1, dqt_now_ns() + 10 * NSEC_PER_SEC, DQT_WAIT_IOCTL, &got);
	EXPECT_EQ(got, 1);
	EXPECT_EQ(r.user_data, 7);
	dqt_queue_fini(&q);
}

TEST(many_queues)
{
	/* queues share their node's engine; each gets only its own, in order */
	enum { NQ = 24, PER = 100 };
	struct dqt_queue *q = calloc(NQ, sizeof(*q));
	struct dq_ready r[PER];
	uint32_t got;

	ASSERT_TRUE(q);
	for (int i = 0; i < NQ; i++)
		ASSERT_OK(dqt_queue_init(&q[i], &DQT_PARAMS(.slot_count = PER, .slot_size = 64,
							     .ready_entries = 128)));
	uint64_t t = dqt_now_ns() + 300 * NSEC_PER_MSEC;

	/* interleaved due times across queues, reversed within each */
	for (int i = 0; i < NQ; i++) {
		for (uint32_t k = 0; k < PER; k++)
			ASSERT_OK(dqt_push_msg(&q[i], k, 1, t + ((PER - 1 - k) * NQ + (uint32_t)i) *
					       20 * NSEC_PER_USEC, 0, 8,
					       ((uint64_t)i << 32) | (PER - 1 - k)));
		ASSERT_EQ(dqt_submit(&q[i], 0, NULL, 0, NULL), PER);
	}
	for (int i = NQ - 1; i >= 0; i--) {
		dqt_reap_until(&q[i], r, NULL, PER, t + 30 * NSEC_PER_SEC, DQT_WAIT_MIXED, &got);
		EXPECT_EQ(got, PER);
		for (uint32_t k = 0; k < got; k++) {
			if (r[k].user_data != (((uint64_t)i << 32) | k) ||
			    r[k].release_ns < r[k].due_ns) {
				FAIL("queue %d ready[%u]: user_data 0x%llx", i, k,
				     (unsigned long long)r[k].user_data);
				break;
			}
		}
	}
	for (int i = 0; i < NQ; i++) {
		struct dq_queue_stats st;

		EXPECT_OK(dqt_queue_stats(&q[i], &st));
		EXPECT_EQ(st.released, PER);
		EXPECT_EQ(dqt_ready_count(&q[i]), 0);
		dqt_queue_fini(&q[i]);
	}
	free(q);
}

TEST(close_with_backlog_and_ready)
{
	/*
	 * Teardown with messages in every state: pending, on the ready ring,
	 * waiting for room (backlog), cancelled.  Nothing stays behind.
	 */
	int ok = 1;
	int sfd = dqt_stats_fd();

	ASSERT_GE(sfd, 0);
	uint64_t pend0 = nodes_pending(sfd, &ok);

	ASSERT_TRUE(ok);
	for (int round = 0; round < 6; round++) {
		struct dqt_queue q;
		struct dq_queue_stats st;

		ASSERT_OK(dqt_queue_init(&q, &DQT_PARAMS(.slot_count = 512, .slot_size = 64,
							  .ready_entries = 16)));
		for (uint32_t i = 0; i < 512; i++) {
			struct dq_desc d = {
				.due_ns = i < 64 ? 0 : 3600 * NSEC_PER_SEC, .user_data = i,
				.slot = i, .len = 8, .gen = 1, .flags = DQ_DESC_F_RELATIVE,
			};

			ASSERT_OK(dqt_push_flush(&q, &d));
		}
		ASSERT_GE(dqt_submit(&q, 0, NULL, 0, NULL), 0);
		EXPECT_EQ(dqt_cancel(&q, 100, 1), 0);
		uint64_t dl = dqt_now_ns() + 10 * NSEC_PER_SEC;

		do {
			dqt_sleep_ns(2 * NSEC_PER_MSEC);
			ASSERT_OK(dqt_queue_stats(&q, &st));
		} while (st.released + st.ready_backlog < 64 && dqt_now_ns() < dl);
		EXPECT_EQ(st.ready_backlog, q.rq.nr < 64 ? 64 - q.rq.nr : 0);
		EXPECT_EQ(st.submitted, 512);
		EXPECT_EQ(st.pending, 512 - 64 - 1);
		if (round & 1) {
			close(q.fd);
			q.fd = -1;
		}
		dqt_queue_fini(&q);
		uint64_t pend;

		dl = dqt_now_ns() + 5 * NSEC_PER_SEC;
		do {
			pend = nodes_pending(sfd, &ok);
			if (pend == pend0)
				break;
			dqt_sleep_ns(5 * NSEC_PER_MSEC);
		} while (dqt_now_ns() < dl);
		EXPECT_EQ(pend, pend0);
	}
}

TEST(numa_node1_engine)
{
	const uint32_t n = 200;
	struct dq_node_stats a0, a1, b0, b1, m1;
	struct dq_queue_stats st;
	struct dqt_queue q;
	struct dq_ready r[200];
	uint32_t got;

	if (!dqt_node_online(1))
		SKIP("no NUMA node 1");
	int sfd = dqt_stats_fd();

	ASSERT_GE(sfd, 0);
	/* stay on node 0: the queue still goes to node 1's engine */
	int cpu0 = dqt_node_first_cpu(0);

	if (cpu0 >= 0)
		ASSERT_OK(dqt_pin_to_cpu(cpu0));
	struct dqt_params prm = DQT_PARAMS(.slot_count = n, .slot_size = 64,
					   .ready_entries = 256);

	prm.numa_node = 1;
	ASSERT_OK(dqt_queue_init(&q, &prm));
	ASSERT_OK(dqt_queue_stats(&q, &st));
	EXPECT_EQ(st.numa_node, 1);
	ASSERT_OK(dqt_node_stats(sfd, 0, &a0));
	ASSERT_OK(dqt_node_stats(sfd, 1, &a1));
	EXPECT_EQ(a1.node, 1);

	uint64_t t = dqt_now_ns() + 500 * NSEC_PER_MSEC;

	for (uint32_t i = 0; i < n; i++)
		ASSERT_OK(dqt_push_msg(&q, i, 1, t + i * 200 * NSEC_PER_USEC, 0, 8, i));
	ASSERT_EQ(dqt_submit(&q, 0, NULL, 0, NULL), (int)n);
	ASSERT_OK(dqt_node_stats(sfd, 1, &m1));
	if (dqt_now_ns() < t)
		EXPECT_EQ(m1.pending, a1.pending + n);

	dqt_reap_until(&q, r, NULL, n, t + 30 * NSEC_PER_SEC, DQT_WAIT_IOCTL, &got);
	EXPECT_EQ(got, n);
	dqt_sleep_ns(20 * NSEC_PER_MSEC);
	ASSERT_OK(dqt_node_stats(sfd, 0, &b0));
	ASSERT_OK(dqt_node_stats(sfd, 1, &b1));
	DIAG("node 1: released +%llu, timer fires +%llu (+%llu on the node), cascaded +%llu",
	     (unsigned long long)(b1.released - a1.released),
	     (unsigned long long)(b1.timer_fires - a1.timer_fires),
	     (unsigned long long)(b1.fires_on_node - a1.fires_on_node),
	     (unsigned long long)(b1.cascaded - a1.cascaded));
	EXPECT_EQ(b1.released - a1.released, n);
	EXPECT_EQ(b1.pending, a1.pending);
	EXPECT_GT(b1.timer_fires, a1.timer_fires);
	EXPECT_EQ(b0.released, a0.released);
	EXPECT_EQ(b0.pending, a0.pending);
	EXPECT_EQ(b0.timer_fires, a0.timer_fires);
	dqt_queue_fini(&q);
}

TEST(numa_default_node)
{
	/* numa_node = -1 picks the caller's node */
	struct dq_queue_stats st;
	struct dqt_queue q;

	if (!dqt_node_online(1))
		SKIP("no NUMA node 1");
	for (int node = 0; node < 2; node++) {
		int cpu = dqt_node_first_cpu(node);

		if (cpu < 0)
			SKIP("node %d has no CPU", node);
		ASSERT_OK(dqt_pin_to_cpu(cpu));
		ASSERT_OK(dqt_queue_init(&q, &DQT_PARAMS(.slot_count = 4, .slot_size = 64)));
		ASSERT_OK(dqt_queue_stats(&q, &st));
		EXPECT_EQ(st.numa_node, node);
		dqt_queue_fini(&q);
	}
}

TEST(node_stats_bad_node)
{
	struct dq_node_stats ns;
	int sfd = dqt_stats_fd();

	ASSERT_GE(sfd, 0);
	EXPECT_OK(dqt_node_stats(sfd, 0, &ns));
	EXPECT_EQ(ns.node, 0);
	static const int bad[] = { -1, 99, 1 << 20, 0x7fffffff };

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (dqt_node_online(bad[i]))
			continue;
		int r = dqt_node_stats(sfd, bad[i], &ns);

		if (r != -EINVAL)
			FAIL("NODE_STATS for node %d: %d, expected -EINVAL", bad[i], r);
	}
}

TAP_MAIN()
