/* SPDX-License-Identifier: LGPL-2.1 OR MIT */
/*
 * dqbridge's numbers and their Prometheus text endpoint (libmicrohttpd,
 * its own thread).  The main loop owns a struct mvals and changes it
 * freely; metrics_publish() copies it, under a lock, to where the
 * endpoint's thread reads it.  So the loop never waits for a scrape and a
 * scrape sees one consistent set.
 */
#ifndef DQB_METRICS_H
#define DQB_METRICS_H

#include <stdint.h>

struct log;
struct metrics;

#define LATE_BUCKETS 14

struct mvals {
	/* gauges */
	uint64_t held;		/* in dq: waiting + in flight */
	double oldest_age_s;	/* see docs/dqbridge.md */
	double rate;		/* msgs/s the bucket allows now */
	uint64_t inflight;	/* HTTP requests running */
	uint64_t unacked;	/* source messages read, not yet acked */
	uint64_t paused;	/* 1: the source is not read (back-pressure) */
	uint64_t draining;
	/* counters */
	uint64_t read;		/* messages from the source */
	uint64_t duplicates;	/* read again while still in hand: dropped */
	uint64_t direct;	/* sent without dq */
	uint64_t diverted;	/* committed into dq (first time) */
	uint64_t retried;	/* committed again after a failed release */
	uint64_t already_held;	/* commit refused: that key is held (-EEXIST) */
	uint64_t released;	/* taken out of dq and sent */
	uint64_t delivered;	/* 2xx */
	uint64_t dead_lettered;
	uint64_t acked;
	uint64_t http_429;
	uint64_t http_503;
	uint64_t http_other;	/* other non-2xx */
	uint64_t timeouts;
	uint64_t connect_errors;
	uint64_t bad_retry_after;
	uint64_t rate_decreases;
	uint64_t enospc;	/* commits or flushes refused for room */
	uint64_t pauses;
	/* lateness of releases (send time - due time) */
	uint64_t late_bucket[LATE_BUCKETS + 1];	/* the last is +Inf */
	double late_sum_s;
	uint64_t late_count;
};

/* Upper bounds (seconds) of the lateness buckets. */
extern const double metrics_late_bounds[LATE_BUCKETS];

/*
 * Start the endpoint on @listen ("host:port"; "" or NULL: no endpoint,
 * *@out still usable).  0 or -errno.
 */
int metrics_open(const char *listen, const struct log *log, struct metrics **out);
void metrics_close(struct metrics *m);
void metrics_publish(struct metrics *m, const struct mvals *v);
/* Count one release @late_ns after its due time. */
void mvals_late(struct mvals *v, uint64_t late_ns);

#endif /* DQB_METRICS_H */
