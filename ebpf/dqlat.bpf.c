// SPDX-License-Identifier: GPL-2.0
/*
 * dqlat.bpf.c - split each dq message's lateness into the parts the
 * kernel and the scheduler add to it.
 *
 *   due ---timer---> release ---wake---> woken ---runq---> on CPU ---reap---> reaped
 *    \________________________ end to end (per message) _____________________/
 *
 * dq:* events are taken with raw_tp programs (their arguments are the
 * TP_PROTO arguments in order, as u64).  sched_wakeup, sched_wakeup_new
 * and sched_switch come from tp_btf programs, or from their raw_tp twins
 * when tp_btf does not load; user space picks one set.
 *
 * A consumer thread is followed from dq_wait_park to dq_reap through the
 * states in enum dqlat_cstate; dq_wake names it when a release satisfies
 * its wait, and only then do the sched events of that thread count.
 * Per message, dq_ready gives the timer part; its due time is remembered
 * per queue until the consumer next comes back to dq for the queue (a
 * successful dq_reap, or a dq_wait_park for one entry), which gives the
 * end-to-end part.  Nothing is sent to user space per event: all of it
 * lands in per-CPU histograms and counters.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "dqlat.h"

#define READ_ONCE(x)	(*(const volatile typeof(x) *)&(x))

/* Filters, set by user space before load. */
const volatile __u32 targ_tgid = 0;		/* 0: every process */
const volatile bool filter_queue = false;
const volatile __u32 targ_queue = 0;
const volatile bool filter_node = false;
const volatile __s32 targ_node = 0;
/* Only the run-queue delay of targ_tgid's threads (or of every task). */
const volatile bool sched_only = false;

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, DQLAT_NR_PARTS);
	__type(key, __u32);
	__type(value, struct dqlat_hist);
} hists SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct dqlat_counters);
} counters SEC(".maps");

/* Arrays, not hashes: the per-message path does no hash lookup. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, DQLAT_MAX_QUEUES);
	__type(key, __u32);
	__type(value, struct dqlat_queue);
} queues SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, DQLAT_MAX_QUEUES);
	__type(key, __u32);
	__type(value, struct dqlat_ring);
} unreaped SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, DQLAT_MAX_CONSUMERS);
	__type(key, __u32);
	__type(value, struct dqlat_consumer);
} consumers SEC(".maps");

/* The last dq_release on this CPU: dq_wake follows it under the same lock. */
struct last_release {
	__u32 queue_id;
	__u32 valid;
	__u64 now_ns;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct last_release);
} last_release SEC(".maps");

/* --sched-only: wakeup time of each tracked task. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, DQLAT_MAX_TASKS);
	__type(key, __u32);
	__type(value, __u64);
} wakeup_ts SEC(".maps");

static __always_inline struct dqlat_counters *cnt(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&counters, &zero);
}

/*
 * Event counters: per-CPU, and each is bumped from one kind of context,
 * so a plain add will do.  Anomalies can come from several: atomic.
 */
#define COUNT(field)							\
	do {								\
		struct dqlat_counters *__c = cnt();			\
		if (__c)						\
			__c->field++;					\
	} while (0)

#define COUNT_ATOMIC(field)						\
	do {								\
		struct dqlat_counters *__c = cnt();			\
		if (__c)						\
			__sync_fetch_and_add(&__c->field, 1);		\
	} while (0)

/* floor(log2(v)), 0 for 0; 64-bit throughout for the 6.1 verifier. */
static __always_inline __u64 log2_u64(__u64 v)
{
	__u64 r = 0, shift;

	shift = (__u64)(v > 0xffffffffULL) << 5; v >>= shift; r |= shift;
	shift = (__u64)(v > 0xffffULL) << 4; v >>= shift; r |= shift;
	shift = (__u64)(v > 0xffULL) << 3; v >>= shift; r |= shift;
	shift = (__u64)(v > 0xfULL) << 2; v >>= shift; r |= shift;
	shift = (__u64)(v > 0x3ULL) << 1; v >>= shift; r |= shift;
	r |= (v >> 1);
	return r;
}

/*
 * Add one value to a histogram.  Per-CPU, and no part is updated from two
 * contexts that can nest on one CPU (dq_ready runs with BHs off, dq_reap
 * in task context, sched_switch with IRQs off), so plain adds suffice.
 */
static __always_inline void hist_add_to(struct dqlat_hist *h, __u64 ns)
{
	__u64 slot = log2_u64(ns / 1000);

	if (slot > DQLAT_MAX_SLOTS - 1)
		slot = DQLAT_MAX_SLOTS - 1;
	h->slots[slot]++;
	h->count++;
	h->sum_ns += ns;
	if (ns > h->max_ns)
		h->max_ns = ns;
}

static __always_inline void hist_add(__u32 part, __u64 ns)
{
	struct dqlat_hist *h = bpf_map_lookup_elem(&hists, &part);

	if (h)
		hist_add_to(h, ns);
}

/* A part of a chain: end - start, or 0 and counted when negative. */
static __always_inline __u64 part_ns(__u64 start, __u64 end)
{
	if ((__s64)(end - start) < 0) {
		COUNT_ATOMIC(order);
		return 0;
	}
	return end - start;
}

static __always_inline __u32 queue_index(__u32 qid)
{
	return qid & (DQLAT_MAX_QUEUES - 1);
}

/* @qid's entry, or NULL when dqlat has not seen that queue. */
static __always_inline struct dqlat_queue *queue_find(__u32 qid)
{
	__u32 idx = queue_index(qid);
	struct dqlat_queue *q = bpf_map_lookup_elem(&queues, &idx);

	if (!q || !q->valid || q->queue_id != qid)
		return NULL;
	return q;
}

/* @qid's entry, taken (over) for it when needed. */
static __always_inline struct dqlat_queue *queue_get(__u32 qid)
{
	__u32 idx = queue_index(qid);
	struct dqlat_queue *q = bpf_map_lookup_elem(&queues, &idx);

	if (!q)
		return NULL;
	if (q->valid && q->queue_id == qid)
		return q;
	if (q->valid)
		COUNT_ATOMIC(evicted);
	q->queue_id = qid;
	q->node = -1;
	q->node_known = 0;
	q->pid_ok = 0;
	q->head = 0;
	q->tail = 0;
	q->valid = 1;
	return q;
}

static __always_inline bool queue_id_ok(__u32 qid)
{
	return !filter_queue || qid == targ_queue;
}

/* Do @q's events count, given the filters? */
static __always_inline bool queue_ok(struct dqlat_queue *q)
{
	if (targ_tgid && !q->pid_ok)
		return false;
	if (filter_node) {
		if (!q->node_known) {
			COUNT_ATOMIC(unknown_node);
			return false;
		}
		if (q->node != targ_node)
			return false;
	}
	return true;
}

/*
 * With -n, a queue whose node is not known yet has had no dq_submit,
 * dq_release or dq_ready seen, so it has no message dqlat could misplace:
 * a consumer that parks or times out on it before its first submit (a
 * consumer thread started before its producer) is skipped without being
 * counted as unknown_node, which counts messages only.
 */
static __always_inline bool queue_no_messages_yet(struct dqlat_queue *q)
{
	return filter_node && !q->node_known;
}

static __always_inline void queue_set_node(struct dqlat_queue *q, int node)
{
	if (!q->node_known || q->node != node) {
		q->node = node;
		q->node_known = 1;
	}
}

static __always_inline __u32 current_tgid(void)
{
	return bpf_get_current_pid_tgid() >> 32;
}

/* ---- dq events -------------------------------------------------------- */

SEC("raw_tp/dq_submit")
int BPF_PROG(dq_submit, __u32 queue_id, int node, __u32 slot, __u32 gen,
	     __u64 user_data, __u64 due_ns, __u64 now_ns)
{
	struct dqlat_queue *q;

	if (!queue_id_ok(queue_id))
		return 0;
	q = queue_get(queue_id);
	if (!q)
		return 0;
	queue_set_node(q, node);
	if (targ_tgid && !q->pid_ok && current_tgid() == targ_tgid)
		q->pid_ok = 1;
	if (queue_ok(q))
		COUNT(submit);
	return 0;
}

SEC("raw_tp/dq_reject")
int BPF_PROG(dq_reject, __u32 queue_id, __u32 index, __u32 reason, int error)
{
	if (!queue_id_ok(queue_id))
		return 0;
	if (targ_tgid && current_tgid() != targ_tgid)
		return 0;
	COUNT(reject);
	return 0;
}

SEC("raw_tp/dq_cancel")
int BPF_PROG(dq_cancel, __u32 queue_id, __u32 slot, __u32 gen, int result)
{
	if (!queue_id_ok(queue_id))
		return 0;
	if (targ_tgid && current_tgid() != targ_tgid)
		return 0;
	COUNT(cancel);
	return 0;
}

SEC("raw_tp/dq_release")
int BPF_PROG(dq_release, __u32 queue_id, int node, __u32 count,
	     __u64 first_due_ns, __u64 last_due_ns, __u64 now_ns)
{
	struct last_release *lr;
	struct dqlat_queue *q;
	__u32 zero = 0;

	/* dq_wake events for this queue follow on this CPU, lock held. */
	lr = bpf_map_lookup_elem(&last_release, &zero);
	if (lr) {
		lr->queue_id = queue_id;
		lr->now_ns = now_ns;
		lr->valid = 1;
	}
	if (!queue_id_ok(queue_id))
		return 0;
	q = queue_get(queue_id);
	if (!q)
		return 0;
	queue_set_node(q, node);
	if (queue_ok(q))
		COUNT(release);
	return 0;
}

SEC("raw_tp/dq_ready")
int BPF_PROG(dq_ready, __u32 queue_id, __u32 slot, __u64 user_data,
	     __u64 due_ns, __u64 release_ns, int node)
{
	struct dqlat_ring *ring;
	struct dqlat_queue *q;
	__u32 idx;
	__u64 tail;

	if (!queue_id_ok(queue_id))
		return 0;
	q = queue_get(queue_id);
	if (!q)
		return 0;
	queue_set_node(q, node);
	if (!queue_ok(q))
		return 0;

	if ((__s64)(release_ns - due_ns) < 0) {
		COUNT_ATOMIC(early);
		hist_add(DQLAT_TIMER, 0);
	} else {
		hist_add(DQLAT_TIMER, release_ns - due_ns);
	}

	/*
	 * Remember the due time until the queue's next reap.  Producers of
	 * one queue are serialised by its ready_lock in dq.ko.
	 */
	idx = queue_index(queue_id);
	ring = bpf_map_lookup_elem(&unreaped, &idx);
	if (!ring)
		return 0;
	tail = q->tail;
	if (tail - READ_ONCE(q->head) >= DQLAT_RING) {
		COUNT_ATOMIC(e2e_overflow);
		return 0;
	}
	ring->e[tail & (DQLAT_RING - 1)].due_ns = due_ns;
	ring->e[tail & (DQLAT_RING - 1)].release_ns = release_ns;
	/* Entry before index (a full barrier: the reaper may be elsewhere). */
	__sync_fetch_and_add(&q->tail, 1);
	return 0;
}

struct drain_ctx {
	struct dqlat_ring *ring;
	struct dqlat_hist *hist;
	__u64 head;
	__u64 now_ns;
	__u32 stopped;
};

static long drain_one(__u32 i, void *data)
{
	struct drain_ctx *d = data;
	struct dqlat_unreaped *e = &d->ring->e[(d->head + i) & (DQLAT_RING - 1)];
	__u64 due = e->due_ns;

	/*
	 * Released after the reap took its timestamp (on another CPU, while
	 * this program ran): that one is for the next reap.
	 */
	if ((__s64)(d->now_ns - e->release_ns) < 0) {
		d->stopped = 1;
		return 1;
	}
	if ((__s64)(d->now_ns - due) < 0) {
		COUNT_ATOMIC(order);
		hist_add_to(d->hist, 0);
	} else {
		hist_add_to(d->hist, d->now_ns - due);
	}
	return 0;
}

/*
 * End to end: every message released on @qid since the consumer last came
 * back to dq (a successful dq_reap, or a dq_wait_park for one entry), up
 * to @now_ns (0: now, read only when there is something to reap).
 */
static __always_inline void drain_unreaped(struct dqlat_queue *q, __u32 qid,
					   __u64 now_ns)
{
	struct drain_ctx d = { .now_ns = now_ns };
	__u32 part = DQLAT_E2E, idx = queue_index(qid);
	__u64 head, tail;
	long n;

	d.ring = bpf_map_lookup_elem(&unreaped, &idx);
	d.hist = bpf_map_lookup_elem(&hists, &part);
	if (!d.ring || !d.hist)
		return;
	head = READ_ONCE(q->head);
	tail = READ_ONCE(q->tail);
	if (tail == head || tail - head > DQLAT_RING)
		return;
	if (!d.now_ns)
		d.now_ns = bpf_ktime_get_ns();
	d.head = head;
	/* Iterations run, the one that stopped early included. */
	n = bpf_loop(tail - head, drain_one, &d, 0);
	if (n > 0 && d.stopped)
		n--;
	/* A second consumer reaping the queue at once counts them again. */
	if (n > 0 && __sync_val_compare_and_swap(&q->head, head, head + n) != head)
		COUNT_ATOMIC(e2e_race);
}

SEC("raw_tp/dq_wait_park")
int BPF_PROG(dq_wait_park, __u32 queue_id, int tid, __u32 min_ready)
{
	struct dqlat_consumer *c;
	struct dqlat_queue *q;
	__u32 key = tid;

	if (!queue_id_ok(queue_id))
		return 0;
	if (targ_tgid && current_tgid() != targ_tgid)
		return 0;
	q = queue_get(queue_id);
	if (!q)
		return 0;
	if (targ_tgid)
		q->pid_ok = 1;
	/* The node may not be known yet: dq_wake checks it again. */
	if (!filter_node || (q->node_known && q->node == targ_node))
		COUNT(park);
	else if (q->node_known)
		return 0;

	/* A consumer's entry stays (LRU) between waits: no update per wait. */
	c = bpf_map_lookup_elem(&consumers, &key);
	if (c) {
		c->queue_id = queue_id;
		c->state = DQLAT_C_PARKED;
	} else {
		struct dqlat_consumer nc = {
			.queue_id = queue_id,
			.state = DQLAT_C_PARKED,
		};

		if (bpf_map_update_elem(&consumers, &key, &nc, BPF_ANY))
			COUNT_ATOMIC(map_full);
	}
	/*
	 * A consumer that waits for one entry has taken what it saw: it may
	 * have read the ready ring without any syscall (libdqshim does), and
	 * this is the first time dq sees it again.
	 */
	if (min_ready <= 1 && !queue_no_messages_yet(q) && queue_ok(q))
		drain_unreaped(q, queue_id, 0);
	return 0;
}

SEC("raw_tp/dq_wake")
int BPF_PROG(dq_wake, __u32 queue_id, int tid, __u32 ready)
{
	struct dqlat_consumer *c;
	struct last_release *lr;
	struct dqlat_queue *q;
	__u32 key = tid, zero = 0;
	__u64 release_ns;

	c = bpf_map_lookup_elem(&consumers, &key);
	if (!c)
		return 0;
	q = queue_find(queue_id);
	if (!q || !queue_ok(q))
		return 0;
	COUNT(wake);
	/* A waiter stays listed until it runs: only the first wake counts. */
	if (c->state != DQLAT_C_PARKED)
		return 0;
	lr = bpf_map_lookup_elem(&last_release, &zero);
	if (lr && lr->valid && lr->queue_id == queue_id)
		release_ns = lr->now_ns;
	else
		release_ns = bpf_ktime_get_ns();
	c->queue_id = queue_id;
	c->release_ns = release_ns;
	c->state = DQLAT_C_RELEASED;
	return 0;
}

SEC("raw_tp/dq_reap")
int BPF_PROG(dq_reap, __u32 queue_id, int result, __u64 now_ns)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	__u64 wake, runq, reap, rel;
	struct dqlat_consumer *c;
	struct dqlat_queue *q;

	c = bpf_map_lookup_elem(&consumers, &tid);
	q = queue_find(queue_id);
	if (!q || !queue_id_ok(queue_id) ||
	    (result <= 0 && queue_no_messages_yet(q)) || !queue_ok(q)) {
		if (c)
			c->state = DQLAT_C_IDLE;
		return 0;
	}
	COUNT(reap);
	if (result > 0)
		drain_unreaped(q, queue_id, now_ns);

	if (!c || c->state == DQLAT_C_IDLE)
		return 0;
	if (c->state == DQLAT_C_PARKED) {
		COUNT(reap_nowake);
		goto idle;
	}
	if (result <= 0) {
		COUNT(chain_failed);
		goto idle;
	}
	rel = c->release_ns;
	switch (c->state) {
	case DQLAT_C_ONCPU:
		wake = part_ns(rel, c->wakeup_ns);
		runq = part_ns(c->wakeup_ns, c->oncpu_ns);
		reap = part_ns(c->oncpu_ns, now_ns);
		if (c->oncpu_ns == c->wakeup_ns)
			COUNT(chain_running);
		else
			COUNT(chain_slept);
		break;
	case DQLAT_C_WOKEN:
		/* Woken while still on its CPU: no run-queue wait. */
		wake = part_ns(rel, c->wakeup_ns);
		runq = 0;
		reap = part_ns(c->wakeup_ns, now_ns);
		COUNT(chain_running);
		break;
	default:
		/* Never slept after the release: all of it is reap delay. */
		wake = 0;
		runq = 0;
		reap = part_ns(rel, now_ns);
		COUNT(chain_nosleep);
		break;
	}
	hist_add(DQLAT_WAKE, wake);
	hist_add(DQLAT_RUNQ, runq);
	hist_add(DQLAT_REAP, reap);
	/* From dq.ko's own two timestamps, not from the sum above. */
	hist_add(DQLAT_CHAIN, part_ns(rel, now_ns));
idle:
	c->state = DQLAT_C_IDLE;
	return 0;
}

/* ---- sched events ----------------------------------------------------- */

static __always_inline int on_wakeup(__u32 tid, __u32 tgid)
{
	struct dqlat_consumer *c;
	__u64 now;

	if (sched_only) {
		if (!tid || (targ_tgid && tgid != targ_tgid))
			return 0;
		now = bpf_ktime_get_ns();
		bpf_map_update_elem(&wakeup_ts, &tid, &now, BPF_ANY);
		return 0;
	}
	c = bpf_map_lookup_elem(&consumers, &tid);
	if (!c || c->state != DQLAT_C_RELEASED)
		return 0;
	c->wakeup_ns = bpf_ktime_get_ns();
	c->state = DQLAT_C_WOKEN;
	return 0;
}

static __always_inline int on_switch(__u32 prev_tid, __u32 next_tid)
{
	struct dqlat_consumer *c;
	__u64 *tsp, now;

	if (sched_only) {
		/* Woken while still on the CPU: it never waited for one. */
		bpf_map_delete_elem(&wakeup_ts, &prev_tid);
		tsp = bpf_map_lookup_elem(&wakeup_ts, &next_tid);
		if (!tsp)
			return 0;
		now = bpf_ktime_get_ns();
		if ((__s64)(now - *tsp) >= 0)
			hist_add(DQLAT_RUNQ, now - *tsp);
		bpf_map_delete_elem(&wakeup_ts, &next_tid);
		return 0;
	}
	/*
	 * A consumer leaving the CPU while still "woken" was on it when the
	 * wake-up came: no run-queue wait, it has been on a CPU since then.
	 */
	c = bpf_map_lookup_elem(&consumers, &prev_tid);
	if (c && c->state == DQLAT_C_WOKEN) {
		c->oncpu_ns = c->wakeup_ns;
		c->state = DQLAT_C_ONCPU;
	}
	c = bpf_map_lookup_elem(&consumers, &next_tid);
	if (!c || c->state != DQLAT_C_WOKEN)
		return 0;
	c->oncpu_ns = bpf_ktime_get_ns();
	c->state = DQLAT_C_ONCPU;
	return 0;
}

SEC("tp_btf/sched_wakeup")
int BPF_PROG(sched_wakeup_btf, struct task_struct *p)
{
	return on_wakeup(p->pid, p->tgid);
}

SEC("tp_btf/sched_wakeup_new")
int BPF_PROG(sched_wakeup_new_btf, struct task_struct *p)
{
	return on_wakeup(p->pid, p->tgid);
}

SEC("tp_btf/sched_switch")
int BPF_PROG(sched_switch_btf, bool preempt, struct task_struct *prev,
	     struct task_struct *next)
{
	return on_switch(prev->pid, next->pid);
}

SEC("raw_tp/sched_wakeup")
int BPF_PROG(sched_wakeup_raw, struct task_struct *p)
{
	return on_wakeup(BPF_CORE_READ(p, pid), BPF_CORE_READ(p, tgid));
}

SEC("raw_tp/sched_wakeup_new")
int BPF_PROG(sched_wakeup_new_raw, struct task_struct *p)
{
	return on_wakeup(BPF_CORE_READ(p, pid), BPF_CORE_READ(p, tgid));
}

SEC("raw_tp/sched_switch")
int BPF_PROG(sched_switch_raw, bool preempt, struct task_struct *prev,
	     struct task_struct *next)
{
	return on_switch(BPF_CORE_READ(prev, pid), BPF_CORE_READ(next, pid));
}

char LICENSE[] SEC("license") = "GPL";
