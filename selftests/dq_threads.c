// SPDX-License-Identifier: LGPL-2.1 OR MIT
/*
 * dq_threads: producers and a consumer on different threads of one queue.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "dqtest.h"
#include "tap.h"

#define NPROD		2
#define PER_PROD	4000
#define SLOTS		512		/* each producer owns SLOTS / NPROD */
#define TOTAL		(NPROD * PER_PROD)
#define PAYLOAD		48

struct owner {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	uint32_t free[SLOTS / NPROD];
	uint32_t nr_free;
};

struct shared {
	struct dqt_queue q;
	pthread_mutex_t ring_lock;	/* the submit ring's producer side */
	struct owner own[NPROD];
	uint32_t gen[SLOTS];
	uint64_t due[TOTAL];
	uint32_t slot_of[TOTAL];
	uint8_t seen[TOTAL];
	uint64_t seed;
	atomic_uint errors;
	atomic_uint early;
	atomic_uint dups;
	atomic_uint received;
	atomic_int stop;
};

static uint64_t msg_seed(struct shared *s, uint64_t id)
{
	return s->seed ^ (id * 0x9E3779B97F4A7C15ULL);
}

struct prod_arg {
	struct shared *s;
	int idx;
};

static void *producer(void *p)
{
	struct prod_arg *a = p;
	struct shared *s = a->s;
	struct owner *o = &s->own[a->idx];
	uint64_t rs = s->seed + (uint64_t)a->idx + 1;
	uint32_t done = 0;

	while (done < PER_PROD && !atomic_load(&s->stop)) {
		uint32_t slots[16], k = 0;

		/* take up to 16 free slots, at least one */
		pthread_mutex_lock(&o->lock);
		while (!o->nr_free && !atomic_load(&s->stop)) {
			struct timespec ts;

			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_sec += 1;
			pthread_cond_timedwait(&o->cond, &o->lock, &ts);
		}
		while (o->nr_free && k < 16 && done + k < PER_PROD)
			slots[k++] = o->free[--o->nr_free];
		pthread_mutex_unlock(&o->lock);

		struct dq_desc d[16];

		for (uint32_t i = 0; i < k; i++) {
			uint64_t id = (uint64_t)a->idx * PER_PROD + done + i;
			uint32_t slot = slots[i];

			s->due[id] = dqt_now_ns() + (dqt_rand(&rs) % 20001) * NSEC_PER_USEC;
			s->slot_of[id] = slot;
			dqt_fill_payload(dqt_slot_ptr(&s->q, slot), PAYLOAD, msg_seed(s, id));
			d[i] = (struct dq_desc){
				.due_ns = s->due[id], .user_data = id, .slot = slot,
				.len = PAYLOAD, .gen = ++s->gen[slot],
			};
		}

		/* the submit ring is shared: serialize its producer and SUBMIT */
		pthread_mutex_lock(&s->ring_lock);
		uint32_t accepted = 0;

		for (uint32_t i = 0; i < k; i++) {
			int r = dqt_push(&s->q, &d[i]);

			if (r == -EAGAIN) {
				struct dq_submit sub;
				int n = dqt_submit(&s->q, 0, NULL, 0, &sub);

				if (n < 0 || sub.rejected)
					atomic_fetch_add(&s->errors, 1);
				accepted += n > 0 ? (uint32_t)n : 0;
				r = dqt_push(&s->q, &d[i]);
			}
			if (r)
				atomic_fetch_add(&s->errors, 1);
		}
		struct dq_submit sub;
		int n = dqt_submit(&s->q, 0, NULL, 0, &sub);

		if (n < 0 || sub.rejected) {
			tap_diag("producer %d: submit %d, %u rejected", a->idx, n, sub.rejected);
			atomic_fetch_add(&s->errors, 1);
		}
		accepted += n > 0 ? (uint32_t)n : 0;
		pthread_mutex_unlock(&s->ring_lock);
		if (accepted != k) {
			tap_diag("producer %d: %u of %u accepted", a->idx, accepted, k);
			atomic_fetch_add(&s->errors, 1);
		}
		done += k;
	}
	return NULL;
}

static void *consumer(void *p)
{
	struct shared *s = p;
	struct dq_ready r[256];
	uint64_t deadline = dqt_now_ns() + 120 * NSEC_PER_SEC;

	while (atomic_load(&s->received) < TOTAL && dqt_now_ns() < deadline) {
		int n = dqt_reap(&s->q, r, 256);

		if (n < 0) {
			tap_diag("consumer: reap %d", n);
			atomic_fetch_add(&s->errors, 1);
			break;
		}
		if (!n) {
			int w = dqt_wait(&s->q, 1, 500 * NSEC_PER_MSEC);

			if (w < 0 && w != -ETIME && w != -EINTR) {
				tap_diag("consumer: wait %d", w);
				atomic_fetch_add(&s->errors, 1);
				break;
			}
			continue;
		}
		uint64_t now = dqt_now_ns();

		for (int i = 0; i < n; i++) {
			uint64_t id = r[i].user_data;

			if (id >= TOTAL) {
				atomic_fetch_add(&s->errors, 1);
				continue;
			}
			if (s->seen[id]++) {
				atomic_fetch_add(&s->dups, 1);
				continue;
			}
			if (r[i].release_ns < s->due[id] || now < s->due[id] ||
			    r[i].due_ns != s->due[id]) {
				if (atomic_fetch_add(&s->early, 1) < 5)
					tap_diag("id %llu: due %llu/%llu release %llu reaped %llu",
						 (unsigned long long)id,
						 (unsigned long long)r[i].due_ns,
						 (unsigned long long)s->due[id],
						 (unsigned long long)r[i].release_ns,
						 (unsigned long long)now);
			}
			uint32_t slot = r[i].slot;

			if (slot != s->slot_of[id] || r[i].len != PAYLOAD ||
			    dqt_check_payload(dqt_slot_ptr(&s->q, slot), PAYLOAD,
					      msg_seed(s, id))) {
				if (atomic_fetch_add(&s->errors, 1) < 5)
					tap_diag("id %llu: slot %u (sent %u) len %u or payload wrong",
						 (unsigned long long)id, slot,
						 s->slot_of[id], r[i].len);
				continue;
			}
			/* give the slot back to the producer that owns it */
			struct owner *o = &s->own[slot / (SLOTS / NPROD)];

			pthread_mutex_lock(&o->lock);
			o->free[o->nr_free++] = slot;
			pthread_cond_signal(&o->cond);
			pthread_mutex_unlock(&o->lock);
			atomic_fetch_add(&s->received, 1);
		}
	}
	atomic_store(&s->stop, 1);
	for (int i = 0; i < NPROD; i++) {
		pthread_mutex_lock(&s->own[i].lock);
		pthread_cond_broadcast(&s->own[i].cond);
		pthread_mutex_unlock(&s->own[i].lock);
	}
	return NULL;
}

TEST_TIMEOUT(two_producers_one_consumer, 180)
{
	struct shared *s = calloc(1, sizeof(*s));
	struct prod_arg pa[NPROD];
	pthread_t pt[NPROD], ct;
	struct dq_queue_stats st;

	ASSERT_TRUE(s);
	s->seed = dqt_seed();
	DIAG("seed 0x%llx", (unsigned long long)s->seed);
	ASSERT_OK(dqt_queue_init(&s->q, &DQT_PARAMS(.slot_count = SLOTS, .slot_size = 64,
						     .submit_entries = 64,
						     .ready_entries = 1024)));
	pthread_mutex_init(&s->ring_lock, NULL);
	for (int i = 0; i < NPROD; i++) {
		struct owner *o = &s->own[i];

		pthread_mutex_init(&o->lock, NULL);
		pthread_cond_init(&o->cond, NULL);
		for (uint32_t k = 0; k < SLOTS / NPROD; k++)
			o->free[o->nr_free++] = (uint32_t)i * (SLOTS / NPROD) + k;
	}
	uint64_t t0 = dqt_now_ns();

	ASSERT_EQ(pthread_create(&ct, NULL, consumer, s), 0);
	for (int i = 0; i < NPROD; i++) {
		pa[i] = (struct prod_arg){ s, i };
		ASSERT_EQ(pthread_create(&pt[i], NULL, producer, &pa[i]), 0);
	}
	for (int i = 0; i < NPROD; i++)
		pthread_join(pt[i], NULL);
	pthread_join(ct, NULL);
	DIAG("%u messages through in %.2f s", atomic_load(&s->received),
	     (dqt_now_ns() - t0) / 1e9);

	EXPECT_EQ(atomic_load(&s->received), TOTAL);
	EXPECT_EQ(atomic_load(&s->dups), 0);
	EXPECT_EQ(atomic_load(&s->early), 0);
	EXPECT_EQ(atomic_load(&s->errors), 0);
	uint32_t missing = 0;

	for (uint32_t i = 0; i < TOTAL; i++)
		missing += !s->seen[i];
	EXPECT_EQ(missing, 0);
	dqt_sleep_ns(50 * NSEC_PER_MSEC);
	EXPECT_EQ(dqt_ready_count(&s->q), 0);
	ASSERT_OK(dqt_queue_stats(&s->q, &st));
	EXPECT_EQ(st.submitted, TOTAL);
	EXPECT_EQ(st.released, TOTAL);
	EXPECT_EQ(st.pending, 0);
	EXPECT_EQ(st.ready_backlog, 0);
	for (int i = 0; i < DQ_REJ_NR; i++)
		EXPECT_EQ(st.rejected[i], 0);
	DIAG("late_max %.1f us, late avg %.1f us", st.late_max_ns / 1e3,
	     st.released ? (double)st.late_sum_ns / (double)st.released / 1e3 : 0.0);
	dqt_queue_fini(&s->q);
	free(s);
}

struct waiter {
	struct dqt_queue *q;
	int ret;
	uint64_t woke;
	atomic_int tid;
};

static void *wait_thread(void *p)
{
	struct waiter *w = p;

	atomic_store(&w->tid, gettid());
	w->ret = dqt_wait(w->q, 1, 30 * (int64_t)NSEC_PER_SEC);
	w->woke = dqt_now_ns();
	return NULL;
}

/*
 * Whether @w's thread sleeps in an ioctl (its DQ_IOC_WAIT: the only one
 * it makes), polled every 1 ms for up to 2 s: an event, where a fixed
 * sleep could end before the thread got there and the case then proves
 * less than it says, or nothing.
 */
static bool waiter_parked(struct waiter *w)
{
	uint64_t deadline = dqt_now_ns() + 2 * NSEC_PER_SEC;

	while (dqt_now_ns() < deadline) {
		char path[64], buf[64] = "";
		int tid = atomic_load(&w->tid);
		bool parked = false;
		FILE *f;

		dqt_sleep_ns(NSEC_PER_MSEC);
		if (!tid)
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%d/syscall", tid);
		f = fopen(path, "r");
		if (f) {
			parked = fgets(buf, sizeof(buf), f) &&
				 strtol(buf, NULL, 10) == SYS_ioctl;
			fclose(f);
		}
		if (parked)
			return true;
	}
	return false;
}

TEST(wait_woken_by_other_thread)
{
	/* a thread parked in WAIT wakes when a message another thread submits comes due */
	struct dqt_queue q;
	struct waiter w[2];
	pthread_t t[2];

	ASSERT_OK(dqt_queue_init(&q, &DQT_PARAMS(.slot_count = 4, .slot_size = 64)));
	for (int i = 0; i < 2; i++) {
		w[i] = (struct waiter){ .q = &q };
		ASSERT_EQ(pthread_create(&t[i], NULL, wait_thread, &w[i]), 0);
	}
	for (int i = 0; i < 2; i++)
		REQUIRE(waiter_parked(&w[i]),
			"cannot judge: waiter %d not asleep in DQ_IOC_WAIT within 2 s", i);
	uint64_t due = dqt_now_ns() + 50 * NSEC_PER_MSEC;

	ASSERT_OK(dqt_push_msg(&q, 0, 1, due, 0, 8, 1));
	ASSERT_EQ(dqt_submit(&q, 0, NULL, 0, NULL), 1);
	for (int i = 0; i < 2; i++) {
		pthread_join(t[i], NULL);
		EXPECT_EQ(w[i].ret, 1);
		EXPECT_GE(w[i].woke, due);
		DIAG("waiter %d woke %.2f ms after due", i, ((double)w[i].woke - (double)due) / 1e6);
	}
	if (dqt_ready_count(&q) == 1)
		DIAG("the message was released %.2f ms after due",
		     ((double)dqt_rq_entry(&q, 0)->release_ns - (double)due) / 1e6);
	dqt_queue_fini(&q);
}

TEST(close_while_waiting)
{
	/*
	 * Another thread closing the fd does not end the wait (the file stays
	 * open while in use); a message coming due does.  Nothing crashes.
	 */
	struct dqt_queue q;
	struct waiter w = { 0 };
	pthread_t t;

	ASSERT_OK(dqt_queue_init(&q, &DQT_PARAMS(.slot_count = 4, .slot_size = 64)));
	w.q = &q;
	uint64_t due = dqt_now_ns() + 300 * NSEC_PER_MSEC;

	ASSERT_OK(dqt_push_msg(&q, 0, 1, due, 0, 8, 1));
	ASSERT_EQ(dqt_submit(&q, 0, NULL, 0, NULL), 1);
	ASSERT_EQ(pthread_create(&t, NULL, wait_thread, &w), 0);
	/* close only once the thread sleeps in the ioctl (else: -EBADF) */
	REQUIRE(waiter_parked(&w), "cannot judge: the waiter not asleep in DQ_IOC_WAIT within 2 s");
	int fd = q.fd;

	q.fd = -1;
	close(fd);
	pthread_join(t, NULL);
	DIAG("WAIT across close: ret %d", w.ret);
	EXPECT_EQ(w.ret, 1);
	dqt_queue_fini(&q);
}

#define RACE_N 20000

struct race {
	struct dqt_queue q;
	int8_t cancel_res[RACE_N];	/* 1: not tried, else 0 or -errno */
	uint8_t seen[RACE_N];
	atomic_uint received;
	atomic_uint bad;
	atomic_int cancels_done;
};

static void *race_consumer(void *p)
{
	struct race *rc = p;
	struct dq_ready r[512];
	uint64_t deadline = dqt_now_ns() + 120 * NSEC_PER_SEC;

	for (;;) {
		int n = dqt_reap(&rc->q, r, 512);

		if (n < 0) {
			atomic_fetch_add(&rc->bad, 1);
			break;
		}
		for (int i = 0; i < n; i++) {
			uint64_t id = r[i].user_data;

			if (id >= RACE_N || rc->seen[id]++ || r[i].release_ns < r[i].due_ns)
				atomic_fetch_add(&rc->bad, 1);
			atomic_fetch_add(&rc->received, 1);
		}
		if (n)
			continue;
		if (dqt_now_ns() > deadline)
			break;
		/* done once the cancels are in and nothing more comes for a while */
		int w = dqt_wait(&rc->q, 1, 300 * NSEC_PER_MSEC);

		if (w == -ETIME && atomic_load(&rc->cancels_done)) {
			struct dq_queue_stats st;

			if (!dqt_queue_stats(&rc->q, &st) && !st.pending && !st.ready_backlog &&
			    !dqt_ready_count(&rc->q))
				break;
		}
	}
	return NULL;
}

TEST_TIMEOUT(cancel_release_race, 180)
{
	/*
	 * Cancels race releases on the other CPU.  Every message ends exactly
	 * one way: cancelled (cancel returned 0, never on the ring) or released
	 * (on the ring once; a cancel of it returns -EALREADY).
	 */
	struct race *rc = calloc(1, sizeof(*rc));
	struct dq_queue_stats st;
	uint64_t rs = dqt_seed();
	uint32_t *perm = calloc(RACE_N, sizeof(*perm));
	pthread_t ct;

	ASSERT_TRUE(rc && perm);
	DIAG("seed 0x%llx", (unsigned long long)rs);
	ASSERT_OK(dqt_queue_init(&rc->q, &DQT_PARAMS(.slot_count = RACE_N, .slot_size = 64,
						      .submit_entries = 4096,
						      .ready_entries = 32768)));
	memset(rc->cancel_res, 1, sizeof(rc->cancel_res));
	for (uint32_t i = 0; i < RACE_N; i++)
		perm[i] = i;
	for (uint32_t i = RACE_N - 1; i > 0; i--) {
		uint32_t j = (uint32_t)(dqt_rand(&rs) % (i + 1)), t = perm[i];

		perm[i] = perm[j];
		perm[j] = t;
	}
	ASSERT_EQ(pthread_create(&ct, NULL, race_consumer, rc), 0);

	uint64_t t = dqt_now_ns() + 5 * NSEC_PER_MSEC;

	for (uint32_t i = 0; i < RACE_N; i++) {
		struct dq_desc d = {
			.due_ns = t + (dqt_rand(&rs) % 80000) * NSEC_PER_USEC,
			.user_data = i, .slot = i, .len = 8, .gen = i * 7 + 1,
		};

		ASSERT_OK(dqt_push_flush(&rc->q, &d));
	}
	ASSERT_GE(dqt_submit(&rc->q, 0, NULL, 0, NULL), 0);

	/* cancel half of them, in random order, while they come due */
	for (uint32_t k = 0; k < RACE_N; k += 2) {
		uint32_t id = perm[k];

		rc->cancel_res[id] = (int8_t)dqt_cancel(&rc->q, id, id * 7 + 1);
	}
	atomic_store(&rc->cancels_done, 1);
	pthread_join(ct, NULL);

	uint32_t ok_cancel = 0, already = 0, other = 0, lost = 0, ghost = 0, late_already = 0;

	for (uint32_t id = 0; id < RACE_N; id++) {
		int c = rc->cancel_res[id];

		if (c == 0) {
			ok_cancel++;
			if (rc->seen[id] && ghost++ < 5)
				FAIL("id %u cancelled (0) but released too", id);
		} else if (c == -EALREADY) {
			already++;
			if (!rc->seen[id] && late_already++ < 5)
				FAIL("id %u: cancel said -EALREADY but it was never released", id);
		} else if (c != 1) {
			if (other++ < 5)
				FAIL("id %u: cancel returned %d", id, c);
		}
		if (c != 0 && !rc->seen[id] && lost++ < 5)
			FAIL("id %u lost: not cancelled, never released", id);
	}
	DIAG("%u cancelled, %u already released when cancelled, %u received",
	     ok_cancel, already, atomic_load(&rc->received));
	EXPECT_EQ(ghost, 0);
	EXPECT_EQ(late_already, 0);
	EXPECT_EQ(other, 0);
	EXPECT_EQ(lost, 0);
	EXPECT_EQ(atomic_load(&rc->bad), 0);
	EXPECT_EQ(atomic_load(&rc->received), RACE_N - ok_cancel);
	ASSERT_OK(dqt_queue_stats(&rc->q, &st));
	EXPECT_EQ(st.cancelled, ok_cancel);
	EXPECT_EQ(st.released, RACE_N - ok_cancel);
	EXPECT_EQ(st.pending, 0);
	dqt_queue_fini(&rc->q);
	free(rc);
	free(perm);
}

TAP_MAIN()
