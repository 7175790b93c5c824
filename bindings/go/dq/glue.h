/* SPDX-License-Identifier: LGPL-2.1 OR MIT */
/*
 * glue.h - the C side of the Go package: what cgo cannot do well itself
 * (a reject callback, struct arrays holding pointers, a cancellable wait)
 * done here so that each Go call is one cgo call, also for a batch.
 */
#ifndef DQGO_GLUE_H
#define DQGO_GLUE_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <dqshim.h>

/* Queue parameters as Go passes them; dqgo_fill_params() maps them. */
struct dqgo_params {
	uint32_t slot_count;
	uint32_t slot_size;
	uint32_t submit_entries;
	uint32_t ready_entries;
	int32_t numa_node;
	uint32_t granularity_ns;
	uint32_t backend;
	uint32_t uring_depth;
	uint32_t flags;
	uint32_t max_inflight;
	uint64_t visibility_ns;
};

/* Journal parameters (dir passed apart, as a C string). */
struct dqgo_journal {
	uint32_t durability;
	uint32_t sync_interval_us;
	uint32_t sync_records;
	uint32_t retire_sync_us;
	uint64_t max_bytes;
	uint64_t segment_bytes;
};

/* One entry of dqgo_commit_n(): applies to the message of the same index. */
struct dqgo_ent {
	uint64_t due_ns;
	uint64_t user_data;
	uint32_t len;
	uint32_t flags;
};

/* Rejects kept for Queue.Rejects(); more than this are counted only. */
#define DQGO_REJECT_CAP	4096

struct dqgo_queue {
	struct dqshim_queue *q;
	int fast;		/* dqgo_fastcall() may serve it: see there */
	int qfd;		/* dq_queue_fd(): readable when something is due */
	int wakefd;		/* eventfd: ends a Reap's wait at once */
	int woken;		/* dqgo_wake() called, not yet unwake()d */
	pthread_mutex_t rej_lock;
	struct dq_reject *rej;
	uint32_t rej_n;
	uint64_t rej_dropped;
};

void dqgo_fill_params(struct dq_params *p, const struct dqgo_params *gp);
int dqgo_open(const struct dqgo_params *gp, const char *name,
	      const char *jdir, const struct dqgo_journal *gj,
	      struct dqgo_queue **out);
void dqgo_close(struct dqgo_queue *g);
int dqgo_reserve_n(struct dqgo_queue *g, void *msgs, size_t stride,
		   unsigned int n);
int dqgo_commit_n(struct dqgo_queue *g, const void *msgs, size_t stride,
		  const struct dqgo_ent *ents, unsigned int n);
int dqgo_put_n(struct dqgo_queue *g, const void *buf, size_t buflen,
	       const struct dqgo_ent *ents, unsigned int n, uint64_t *handles,
	       int *flush_err);
int dqgo_reap_wait(struct dqgo_queue *g, struct dq_reaped *out,
		   unsigned int max, int64_t timeout_ns);
int dqgo_netpoll_fd(struct dqgo_queue *g);
int dqgo_reap_poll(struct dqgo_queue *g, struct dq_reaped *out,
		   unsigned int max);
void dqgo_wake(struct dqgo_queue *g);
void dqgo_unwake(struct dqgo_queue *g);
/* dqgo_fastcall()'s operations. */
enum dqgo_fc_op {
	DQGO_FC_NOW,		/* now = dq_now_ns() */
	DQGO_FC_REAP_POLL,	/* ret = dqgo_reap_poll(g, buf, n) */
	DQGO_FC_TRY_REAP,	/* ret = dq_reap(g->q, buf, n, 0) */
	DQGO_FC_DONE,		/* ret = dq_done(g->q, arg) */
	DQGO_FC_FINISH,		/* ret = dq_finish(g->q, arg, outcome) */
	DQGO_FC_DONE_N,		/* ret = dq_done_n(g->q, buf, n, res) */
	DQGO_FC_FINISH_N,	/* ret = dq_finish_n(g->q, buf, n, outcome, res) */
	DQGO_FC_PUT_N,		/* ret = dqgo_put_n(g, buf, len, ents, n,
				 * handles, &flush_err) */
};

/* One dqgo_fastcall(): its arguments in, its result out. */
struct dqgo_fc {
	struct dqgo_queue *g;
	void *buf;
	int *res;
	const struct dqgo_ent *ents;
	uint64_t *handles;
	uint64_t len;
	uint32_t op;		/* enum dqgo_fc_op */
	uint32_t n;
	uint32_t arg;
	uint32_t outcome;
	int ret;
	int flush_err;
	uint64_t now;
};

void dqgo_fastcall(void *fc);
unsigned int dqgo_take_rejects(struct dqgo_queue *g, struct dq_reject *out,
			       unsigned int max, uint64_t *dropped);

#endif /* DQGO_GLUE_H */
