// SPDX-License-Identifier: LGPL-2.1 OR MIT
/*
 * libdqshim's thread-safety contract (dqshim.h, "Thread safety") under a
 * concurrent hammer, on the user backend and, where /dev/dq exists, on
 * the kernel backend over io_uring and over the ioctls.
 *
 * For every pair of calls the contract lets run at once, two extra
 * threads run them in a loop while a background producer and the one
 * consumer keep messages flowing.  A watchdog fails the case when any
 * call has not returned within CALL_LIMIT_NS (a lost completion or a
 * deadlock shows up as exactly that).  Afterwards every message the test
 * committed is accounted for, against the test's own records: reaped
 * exactly once or cancelled (never both), payload bytes intact, never
 * before the earliest due time the test itself computed.
 *
 * The tracked_* cases do the same on a queue that tracks delivery
 * (DQ_OPEN_F_TRACK, a max_inflight cap well below the slot count): the
 * consumer hands each reaped slot to a finisher thread, whose dq_finish()
 * runs beside dq_reap() and everything else; every finish must succeed
 * and the delivery counters must match the finishes the test made.
 *
 *	user/build/tests/thread_test [-t case]
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "dqshim.h"
#include "tap.h"

#define NS		1ULL
#define MS		(1000000 * NS)
#define SEC		(1000 * MS)
/* Longest any one library call may take here before it counts as hung. */
#define CALL_LIMIT_NS	(5 * SEC)
#define MAX_MSGS	(1U << 20)
#define PAYLOAD_LEN	24U
#define TRACK_SLOTS	256U	/* the queue's slots: every reaped one fits */
#define TRACK_CAP	16U	/* max_inflight of the tracked cases */

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * SEC + (uint64_t)ts.tv_nsec;
}

/* The calls a hammer thread can loop on. */
enum call {
	C_PRODUCE,	/* reserve + commit_delay (+ flush when needed) */
	C_FLUSH,	/* dq_flush */
	C_CANCEL,	/* dq_cancel of a recently committed message */
	C_STATS,	/* dq_queue_get_stats + dq_queue_info + dq_queue_fd */
	C_ABORT,	/* dq_reserve + dq_abort */
	C_RESERVE_WAIT,	/* dq_reserve_wait (short) + commit */
	C_NR,
	C_CONSUME = -1,	/* the consumer (dq_reap, dq_done or hand-off) */
	C_FINISH = -2,	/* tracked: dq_finish of what the consumer reaped */
};

static const char *const call_name[C_NR] = {
	"produce", "flush", "cancel", "stats", "abort", "reserve_wait",
};

enum msg_state { M_UNUSED, M_COMMITTED, M_REAPED, M_CANCELLED };

/* What the test recorded about one message, indexed by user_data. */
struct record {
	_Atomic int state;
	uint64_t due_min;	/* mono_ns() before commit + delay */
	uint64_t handle;
};

struct hammer;

struct worker {
	struct hammer *h;
	pthread_t th;
	enum call call;		/* or -1: the consumer */
	uint64_t seed;
	_Atomic uint64_t in_call_since;	/* 0: not in a library call */
	_Atomic bool parked;		/* saw stop_producing, commits no more */
	const char *_Atomic in_call;
	uint64_t ops;
	int error;		/* first unexpected return, as -errno */
	const char *error_at;
};

struct hammer {
	struct dqshim_queue *q;
	struct record *rec;
	_Atomic uint32_t next_id;
	_Atomic bool stop_producing;
	_Atomic bool stop_all;
	_Atomic uint64_t reaped, cancelled, rejected;
	_Atomic uint64_t violations;
	char violation[256];
	pthread_mutex_t vlock;

	/* Tracked queues: reaped slots, consumer -> finisher. */
	bool tracked;
	pthread_mutex_t flock;
	pthread_cond_t fcond;
	uint32_t fslots[TRACK_SLOTS];
	uint32_t fhead, ftail;
	_Atomic bool consumer_done;
	_Atomic uint64_t delivered, failed;
};

static void violation(struct hammer *h, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void violation(struct hammer *h, const char *fmt, ...)
{
	va_list ap;

	if (atomic_fetch_add(&h->violations, 1))
		return;
	pthread_mutex_lock(&h->vlock);
	va_start(ap, fmt);
	vsnprintf(h->violation, sizeof(h->violation), fmt, ap);
	va_end(ap);
	pthread_mutex_unlock(&h->vlock);
}

static void enter(struct worker *w, const char *what)
{
	atomic_store(&w->in_call, what);
	atomic_store(&w->in_call_since, mono_ns());
}

static void leave(struct worker *w)
{
	atomic_store(&w->in_call_since, 0);
}

static void worker_error(struct worker *w, const char *at, int err)
{
	if (!w->error) {
		w->error = err;
		w->error_at = at;
	}
}

static uint64_t xorshift(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static void on_reject(void *arg, const struct dq_reject *rej)
{
	struct hammer *h = arg;

	atomic_fetch_add(&h->rejected, 1);
	violation(h, "engine rejected user_data %llu: reason %u error %d",
		  (unsigned long long)rej->user_data, rej->reason, rej->error);
}

/* Commit one message from a fresh reservation @m; false when out of ids. */
static bool commit_one(struct worker *w, struct dqshim_msg *m)
{
	struct hammer *h = w->h;
	uint32_t id = atomic_fetch_add(&h->next_id, 1);
	uint64_t delay = xorshift(&w->seed) % (2 * MS);
	struct record *r;
	int ret;

	if (id >= MAX_MSGS) {
		dq_abort(h->q, m);
		return false;
	}
	r = &h->rec[id];
	memset(m->data, 0, PAYLOAD_LEN);
	memcpy(m->data, &id, sizeof(id));
	memcpy((char *)m->data + 8, &m->handle, sizeof(m->handle));
	r->handle = m->handle;
	r->due_min = mono_ns() + delay;
	atomic_store(&r->state, M_COMMITTED);
	for (;;) {
		enter(w, "dq_commit_delay");
		ret = dq_commit_delay(h->q, m, PAYLOAD_LEN, delay, id);
		leave(w);
		if (ret != -EAGAIN)
			break;
		enter(w, "dq_flush");
		ret = dq_flush(h->q);
		leave(w);
		if (ret < 0) {
			worker_error(w, "dq_flush (batch full)", ret);
			break;
		}
	}
	if (ret) {
		atomic_store(&r->state, M_UNUSED);
		worker_error(w, "dq_commit_delay", ret);
		dq_abort(h->q, m);
	}
	return true;
}

static void do_produce(struct worker *w)
{
	struct dqshim_msg m;
	int ret;

	enter(w, "dq_reserve");
	ret = dq_reserve(w->h->q, &m);
	leave(w);
	if (ret == -ENOSPC) {
		enter(w, "dq_flush");
		ret = dq_flush(w->h->q);
		leave(w);
		if (ret < 0)
			worker_error(w, "dq_flush (no slot)", ret);
		sched_yield();
		return;
	}
	if (ret) {
		worker_error(w, "dq_reserve", ret);
		return;
	}
	if (!commit_one(w, &m))
		atomic_store(&w->h->stop_producing, true);
	if (!(xorshift(&w->seed) % 8)) {
		enter(w, "dq_flush");
		ret = dq_flush(w->h->q);
		leave(w);
		if (ret < 0)
			worker_error(w, "dq_flush", ret);
	}
}

static void do_cancel(struct worker *w)
{
	struct hammer *h = w->h;
	uint32_t n = atomic_load(&h->next_id), id;
	struct record *r;
	int ret, st;

	if (!n)
		return;
	n = n > MAX_MSGS ? MAX_MSGS : n;
	/* A recent one: most are still pending. */
	id = n - 1 - (uint32_t)(xorshift(&w->seed) % (n < 64 ? n : 64));
	r = &h->rec[id];
	if (atomic_load(&r->state) != M_COMMITTED)
		return;
	enter(w, "dq_cancel");
	ret = dq_cancel(h->q, r->handle);
	leave(w);
	if (ret == 0) {
		st = M_COMMITTED;
		if (!atomic_compare_exchange_strong(&r->state, &st,
						    M_CANCELLED))
			violation(h, "id %u: cancel returned 0 but state %d",
				  id, st);
		atomic_fetch_add(&h->cancelled, 1);
	} else if (ret != -EALREADY && ret != -ENOENT) {
		worker_error(w, "dq_cancel", ret);
	}
}

static void do_stats(struct worker *w)
{
	struct dq_queue_stats st;
	struct dq_track_stats ts;
	struct dq_info info = { .sz = sizeof(info) };
	int ret;

	enter(w, "dq_queue_get_stats");
	ret = dq_queue_get_stats(w->h->q, &st);
	leave(w);
	if (ret)
		worker_error(w, "dq_queue_get_stats", ret);
	if (w->h->tracked) {
		enter(w, "dq_queue_track_stats");
		ret = dq_queue_track_stats(w->h->q, &ts);
		leave(w);
		if (ret)
			worker_error(w, "dq_queue_track_stats", ret);
		else if (ts.inflight > TRACK_CAP)
			violation(w->h, "%llu in flight, cap %u",
				  (unsigned long long)ts.inflight, TRACK_CAP);
	}
	enter(w, "dq_queue_info");
	ret = dq_queue_info(w->h->q, &info);
	leave(w);
	if (ret)
		worker_error(w, "dq_queue_info", ret);
	if (dq_queue_fd(w->h->q) != info.fd)
		worker_error(w, "dq_queue_fd", -EINVAL);
}

static void do_abort(struct worker *w)
{
	struct dqshim_msg m;
	int ret;

	enter(w, "dq_reserve");
	ret = dq_reserve(w->h->q, &m);
	leave(w);
	if (ret == -ENOSPC)
		return;
	if (ret) {
		worker_error(w, "dq_reserve", ret);
		return;
	}
	enter(w, "dq_abort");
	ret = dq_abort(w->h->q, &m);
	leave(w);
	if (ret)
		worker_error(w, "dq_abort", ret);
}

static void do_reserve_wait(struct worker *w)
{
	struct dqshim_msg m;
	int ret;

	enter(w, "dq_reserve_wait");
	ret = dq_reserve_wait(w->h->q, &m, 2 * MS);
	leave(w);
	if (ret == -ETIME)
		return;
	if (ret) {
		worker_error(w, "dq_reserve_wait", ret);
		return;
	}
	if (!commit_one(w, &m))
		atomic_store(&w->h->stop_producing, true);
}

static void *worker_fn(void *arg)
{
	struct worker *w = arg;
	struct hammer *h = w->h;

	while (!atomic_load(&h->stop_all)) {
		bool producing = w->call == C_PRODUCE ||
				 w->call == C_RESERVE_WAIT;

		if (producing && atomic_load(&h->stop_producing)) {
			atomic_store(&w->parked, true);
			sched_yield();
			continue;
		}
		switch (w->call) {
		case C_PRODUCE:
			do_produce(w);
			break;
		case C_FLUSH: {
			int ret;

			enter(w, "dq_flush");
			ret = dq_flush(h->q);
			leave(w);
			if (ret < 0)
				worker_error(w, "dq_flush", ret);
			break;
		}
		case C_CANCEL:
			do_cancel(w);
			break;
		case C_STATS:
			do_stats(w);
			break;
		case C_ABORT:
			do_abort(w);
			break;
		case C_RESERVE_WAIT:
			do_reserve_wait(w);
			break;
		default:
			break;
		}
		w->ops++;
	}
	return NULL;
}

static void check_reaped(struct hammer *h, const struct dq_reaped *r,
			 uint64_t now)
{
	uint32_t id = (uint32_t)r->user_data, pid;
	uint64_t handle;
	struct record *rec;
	int st = M_COMMITTED;

	if (r->user_data >= MAX_MSGS) {
		violation(h, "reaped unknown user_data %llu",
			  (unsigned long long)r->user_data);
		return;
	}
	rec = &h->rec[id];
	if (!atomic_compare_exchange_strong(&rec->state, &st, M_REAPED)) {
		violation(h, "id %u reaped in state %d (%s)", id, st,
			  st == M_REAPED ? "twice" :
			  st == M_CANCELLED ? "after a successful cancel" :
			  "never committed");
		return;
	}
	if (now < rec->due_min)
		violation(h, "id %u reaped %llu ns before its earliest due time",
			  id, (unsigned long long)(rec->due_min - now));
	memcpy(&pid, r->data, sizeof(pid));
	memcpy(&handle, (const char *)r->data + 8, sizeof(handle));
	if (r->len != PAYLOAD_LEN || pid != id || handle != rec->handle)
		violation(h, "id %u: payload len %u id %u handle %llx, committed %u/%llx",
			  id, r->len, pid, (unsigned long long)handle,
			  PAYLOAD_LEN, (unsigned long long)rec->handle);
	atomic_fetch_add(&h->reaped, 1);
}

static void *consumer_fn(void *arg)
{
	struct worker *w = arg;
	struct hammer *h = w->h;
	struct dq_reaped out[64];

	while (!atomic_load(&h->stop_all)) {
		uint64_t now;
		int n, i;

		enter(w, "dq_reap");
		n = dq_reap(h->q, out, 64, 2 * MS);
		leave(w);
		now = mono_ns();
		if (n == -ETIME)
			continue;
		if (n < 0) {
			worker_error(w, "dq_reap", n);
			break;
		}
		for (i = 0; i < n; i++) {
			int ret;

			check_reaped(h, &out[i], now);
			if (h->tracked) {
				pthread_mutex_lock(&h->flock);
				h->fslots[h->ftail++ % TRACK_SLOTS] = out[i].slot;
				pthread_cond_signal(&h->fcond);
				pthread_mutex_unlock(&h->flock);
				continue;
			}
			enter(w, "dq_done");
			ret = dq_done(h->q, out[i].slot);
			leave(w);
			if (ret)
				worker_error(w, "dq_done", ret);
		}
		w->ops += n;
	}
	atomic_store(&h->consumer_done, true);
	return NULL;
}

/* Tracked: finish every slot the consumer reaped, until it stopped. */
static void *finisher_fn(void *arg)
{
	struct worker *w = arg;
	struct hammer *h = w->h;

	for (;;) {
		uint32_t slot, outcome;
		int ret;

		pthread_mutex_lock(&h->flock);
		while (h->fhead == h->ftail &&
		       !atomic_load(&h->consumer_done)) {
			struct timespec ts;

			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_nsec += 2000000;
			if (ts.tv_nsec >= 1000000000) {
				ts.tv_sec++;
				ts.tv_nsec -= 1000000000;
			}
			pthread_cond_timedwait(&h->fcond, &h->flock, &ts);
		}
		if (h->fhead == h->ftail) {
			pthread_mutex_unlock(&h->flock);
			break;
		}
		slot = h->fslots[h->fhead++ % TRACK_SLOTS];
		pthread_mutex_unlock(&h->flock);

		outcome = xorshift(&w->seed) % 4 ? DQ_DONE_DELIVERED :
			  DQ_DONE_FAILED;
		enter(w, "dq_finish");
		ret = dq_finish(h->q, slot, outcome);
		leave(w);
		if (ret) {
			worker_error(w, "dq_finish", ret);
			continue;
		}
		atomic_fetch_add(outcome == DQ_DONE_DELIVERED ? &h->delivered :
				 &h->failed, 1);
		w->ops++;
	}
	return NULL;
}

/* Fails the case (from the watchdog thread) when a call is stuck. */
static void *watchdog_fn(void *arg)
{
	struct worker *ws = arg;
	struct hammer *h = ws[0].h;

	while (!atomic_load(&h->stop_all)) {
		uint64_t now = mono_ns();
		int i;

		for (i = 0; ws[i].h; i++) {
			uint64_t since = atomic_load(&ws[i].in_call_since);

			if (since && now > since && now - since > CALL_LIMIT_NS) {
				tap_fail_at(__FILE__, __LINE__,
					    "%s (thread %d) has not returned for %.1f s",
					    atomic_load(&ws[i].in_call), i,
					    (double)(now - since) / SEC);
				tap_abort();
			}
		}
		usleep(50000);
	}
	return NULL;
}

static struct dqshim_queue *open_queue(enum dq_backend be, bool ioctl_path,
				   struct hammer *h)
{
	struct dq_params p;
	struct dqshim_queue *q = NULL;
	struct dq_info info = { .sz = sizeof(info) };
	int ret;

	if (be == DQ_BACKEND_KERNEL && access("/dev/dq", F_OK))
		tap_skip("no /dev/dq (dq.ko not loaded)");
	dq_params_init(&p);
	p.backend = be;
	p.slot_count = TRACK_SLOTS;
	p.slot_size = 64;
	p.submit_entries = 64;
	p.on_reject = on_reject;
	p.reject_arg = h;
	if (ioctl_path)
		p.flags |= DQ_OPEN_F_IOCTL;
	if (h->tracked) {
		p.flags |= DQ_OPEN_F_TRACK;
		p.max_inflight = TRACK_CAP;
	}
	ret = dq_queue_open(&p, &q);
	if (ret) {
		tap_fail_at(__FILE__, __LINE__, "dq_queue_open: %s",
			    dq_strerror(ret));
		tap_abort();
	}
	ASSERT_EQ(dq_queue_info(q, &info), 0);
	ASSERT_EQ(info.backend, (uint32_t)be);
	if (be == DQ_BACKEND_KERNEL && !ioctl_path && info.path != DQ_PATH_URING)
		tap_skip("kernel takes no dq uring commands");
	return q;
}

/*
 * One pair (@a, @b) beside the background producer and consumer, for
 * @run_ns; then drain and account for every message.
 */
static void hammer_pair(struct dqshim_queue *q, struct hammer *h, enum call a,
			enum call b, uint64_t run_ns)
{
	/* producer, a, b, consumer, finisher (tracked); h NULL ends it */
	struct worker ws[6];
	int nw = h->tracked ? 5 : 4;
	struct dq_track_stats ts0, ts;
	pthread_t wd;
	uint64_t committed = 0, end;
	uint32_t i, n;
	int k;

	memset(ws, 0, sizeof(ws));
	h->q = q;
	atomic_store(&h->next_id, 0);
	atomic_store(&h->stop_producing, false);
	atomic_store(&h->stop_all, false);
	atomic_store(&h->reaped, 0);
	atomic_store(&h->cancelled, 0);
	atomic_store(&h->violations, 0);
	h->violation[0] = '\0';
	memset(h->rec, 0, sizeof(*h->rec) * MAX_MSGS);
	h->fhead = h->ftail = 0;
	atomic_store(&h->consumer_done, false);
	atomic_store(&h->delivered, 0);
	atomic_store(&h->failed, 0);
	if (h->tracked)
		ASSERT_EQ(dq_queue_track_stats(q, &ts0), 0);

	ws[0].call = C_PRODUCE;
	ws[1].call = a;
	ws[2].call = b;
	ws[3].call = C_CONSUME;
	ws[4].call = C_FINISH;
	for (k = 0; k < nw; k++) {
		ws[k].h = h;
		ws[k].seed = 0x9e3779b97f4a7c15ULL * (uint64_t)(k + 1) + a * 7 + b;
	}
	ASSERT_EQ(pthread_create(&wd, NULL, watchdog_fn, ws), 0);
	for (k = 0; k < nw; k++)
		ASSERT_EQ(pthread_create(&ws[k].th, NULL,
					 k == 3 ? consumer_fn :
					 k == 4 ? finisher_fn : worker_fn,
					 &ws[k]), 0);
	usleep((useconds_t)(run_ns / 1000));
	atomic_store(&h->stop_producing, true);
	/*
	 * Every producing thread must have finished its last commit before
	 * the count is taken: one preempted inside commit_one() would commit
	 * an id past it, left over for the next pair's consumer.
	 */
	end = mono_ns() + 20 * SEC;
	for (k = 0; k < 3; k++) {
		bool producing = ws[k].call == C_PRODUCE ||
				 ws[k].call == C_RESERVE_WAIT;

		while (producing && !atomic_load(&ws[k].parked) &&
		       mono_ns() < end)
			usleep(1000);
		if (producing && !atomic_load(&ws[k].parked))
			tap_fail_at(__FILE__, __LINE__, "%s thread never stopped",
				    call_name[ws[k].call]);
	}
	ASSERT_GE(dq_flush(q), 0);
	n = atomic_load(&h->next_id);
	n = n > MAX_MSGS ? MAX_MSGS : n;
	end = mono_ns() + 20 * SEC;
	for (;;) {
		uint64_t left = 0;

		for (i = 0; i < n; i++)
			if (atomic_load(&h->rec[i].state) == M_COMMITTED)
				left++;
		if (!left || mono_ns() > end)
			break;
		ASSERT_GE(dq_flush(q), 0);
		usleep(10000);
	}
	atomic_store(&h->stop_all, true);
	/* The finisher drains what the consumer handed it, then stops. */
	for (k = 0; k < nw; k++)
		pthread_join(ws[k].th, NULL);
	pthread_join(wd, NULL);

	for (k = 0; k < nw; k++)
		if (ws[k].error)
			tap_fail_at(__FILE__, __LINE__, "%s thread: %s -> %s",
				    k == 3 ? "consumer" : k == 4 ? "finisher" :
				    call_name[ws[k].call],
				    ws[k].error_at, dq_strerror(ws[k].error));
	if (h->tracked) {
		/* Every reaped message finished, as the test counted. */
		ASSERT_EQ(dq_queue_track_stats(q, &ts), 0);
		EXPECT_EQ(ts.inflight, 0);
		EXPECT_EQ(ts.done_delivered - ts0.done_delivered,
			  atomic_load(&h->delivered));
		EXPECT_EQ(ts.done_failed - ts0.done_failed,
			  atomic_load(&h->failed));
		EXPECT_EQ(atomic_load(&h->delivered) + atomic_load(&h->failed),
			  atomic_load(&h->reaped));
		EXPECT_EQ(ts.done_refused, 0);
	}
	for (i = 0; i < n; i++) {
		int st = atomic_load(&h->rec[i].state);

		if (st != M_UNUSED)
			committed++;
		if (st == M_COMMITTED)
			violation(h, "id %u committed, never reaped nor cancelled",
				  i);
	}
	if (atomic_load(&h->violations))
		tap_fail_at(__FILE__, __LINE__, "%s+%s: %llu violation(s), first: %s",
			    call_name[a], call_name[b],
			    (unsigned long long)atomic_load(&h->violations),
			    h->violation);
	EXPECT_EQ(atomic_load(&h->reaped) + atomic_load(&h->cancelled),
		  committed);
	EXPECT_GT(committed, 0ULL);
	tap_diag("%-12s + %-12s: %llu committed, %llu reaped, %llu cancelled; ops %llu/%llu",
		 call_name[a], call_name[b], (unsigned long long)committed,
		 (unsigned long long)atomic_load(&h->reaped),
		 (unsigned long long)atomic_load(&h->cancelled),
		 (unsigned long long)ws[1].ops, (unsigned long long)ws[2].ops);
}

static void hammer_init(struct hammer *h, bool tracked)
{
	memset(h, 0, sizeof(*h));
	pthread_mutex_init(&h->vlock, NULL);
	pthread_mutex_init(&h->flock, NULL);
	pthread_cond_init(&h->fcond, NULL);
	h->tracked = tracked;
	h->rec = calloc(MAX_MSGS, sizeof(*h->rec));
	ASSERT_TRUE(h->rec != NULL);
}

static void hammer_all_pairs(enum dq_backend be, bool ioctl_path,
			     uint64_t run_ns)
{
	struct hammer h;
	struct dqshim_queue *q;
	int a, b;

	hammer_init(&h, false);
	q = open_queue(be, ioctl_path, &h);
	for (a = 0; a < C_NR; a++)
		for (b = a; b < C_NR; b++) {
			hammer_pair(q, &h, a, b, run_ns);
			if (tap_has_failed())
				break;
		}
	dq_queue_close(q);
	free(h.rec);
}

/*
 * Tracked: every call beside the consumer and the finisher, three pairs
 * (each call once), on one queue.
 */
static void hammer_tracked(enum dq_backend be, bool ioctl_path,
			   uint64_t run_ns)
{
	static const enum call pairs[][2] = {
		{ C_PRODUCE, C_CANCEL },
		{ C_FLUSH, C_STATS },
		{ C_ABORT, C_RESERVE_WAIT },
	};
	struct hammer h;
	struct dqshim_queue *q;
	unsigned int i;

	hammer_init(&h, true);
	q = open_queue(be, ioctl_path, &h);
	for (i = 0; i < sizeof(pairs) / sizeof(pairs[0]); i++) {
		hammer_pair(q, &h, pairs[i][0], pairs[i][1], run_ns);
		if (tap_has_failed())
			break;
	}
	dq_queue_close(q);
	free(h.rec);
}

static uint64_t run_ns(void)
{
	const char *s = getenv("DQ_HAMMER_MS");

	return (s ? strtoull(s, NULL, 10) : 300) * MS;
}

TEST_TIMEOUT(user_backend_all_pairs, 300)
{
	hammer_all_pairs(DQ_BACKEND_USER, false, run_ns());
}

TEST_TIMEOUT(kernel_uring_all_pairs, 300)
{
	hammer_all_pairs(DQ_BACKEND_KERNEL, false, run_ns());
}

TEST_TIMEOUT(kernel_ioctl_all_pairs, 300)
{
	hammer_all_pairs(DQ_BACKEND_KERNEL, true, run_ns());
}

TEST_TIMEOUT(tracked_user_backend, 120)
{
	hammer_tracked(DQ_BACKEND_USER, false, run_ns());
}

TEST_TIMEOUT(tracked_kernel_uring, 120)
{
	hammer_tracked(DQ_BACKEND_KERNEL, false, run_ns());
}

TEST_TIMEOUT(tracked_kernel_ioctl, 120)
{
	hammer_tracked(DQ_BACKEND_KERNEL, true, run_ns());
}

TAP_MAIN()
