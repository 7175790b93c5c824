/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * dq timer slack: how long after the wheel's next work its timer may
 * fire, adapted to the density of due times.
 *
 * This file is kernel code that builds both inside dq.ko (the per-node
 * engine's hrtimer slack) and inside libdqshim's embedded engine (its
 * timerfd), like dq_wheel.h: kernel APIs only, which user space gets
 * from user/compat/.
 *
 * A slack s lets one wake-up release everything due within s of the
 * first due time, at the price of up to s of lateness for that first
 * one.  It pays when releases are dense (several due within s share the
 * wake-up) and is pure lateness when they are sparse (one message per
 * wake-up whatever s is).  So:
 *
 *  - gap_ewma, a moving average of the gap between consecutive released
 *    due times, sampled once per release run (the run's mean gap,
 *    weighing min(n, 8)/8 for a run of n), each sample capped at
 *    DQ_SLACK_GAP_CAP slack windows so that one idle spell is forgotten
 *    after a few runs;
 *  - slack = max (the bound: the granularity less the wheel's tick) once
 *    two or more releases are expected within it (gap <= max / 2), else
 *    max * (max / gap) / 2: proportionally less, and within a few tens
 *    of ns of the due time for a queue that releases one message per
 *    many windows;
 *  - fixed: always max (DQ_OPEN_F_FIXED_SLACK, dq.ko's fixed_slack).
 *
 * Never early either way: the slack only moves the latest expiry after
 * the due time; callers never arm before it.
 *
 * No locking of its own: the caller serialises every call (dq.ko: the
 * node engine's spinlock; libdqshim: the engine's mutex).
 */
#ifndef DQ_SLACK_H
#define DQ_SLACK_H

#include <linux/math64.h>
#include <linux/types.h>

#include "dq_wheel.h"

/* A gap sample counts at most this many slack windows (see above). */
#define DQ_SLACK_GAP_CAP	64U
/* A run of this many releases or more replaces gap_ewma outright. */
#define DQ_SLACK_WEIGHT_SHIFT	3

struct dq_slack {
	u64 max;	/* bound: granularity less the wheel's tick */
	u64 cur;	/* for the next arming: <= max */
	u64 gap_ewma;	/* ns between consecutive released due times */
	u64 last_due;	/* the last released due time */
	bool fixed;	/* cur is always max */
};

static inline u64 dq_slack_gap_cap(const struct dq_slack *s)
{
	return (u64)DQ_SLACK_GAP_CAP * (s->max + 1);
}

/* Recompute cur from gap_ewma (after a sample, or a change of mode). */
static inline void dq_slack_update(struct dq_slack *s)
{
	u64 g = s->gap_ewma;

	if (s->fixed || g <= s->max / 2)
		s->cur = s->max;
	else
		s->cur = div64_u64(s->max * s->max, 2 * g);
}

/*
 * (Re)start with bound @max.  Nothing seen yet reads as sparse, i.e.
 * precise, until releases say otherwise: a gap measured against another
 * bound says nothing about this one (a 1 ms gap is sparse for a 50 us
 * slack, dense for a 20 ms one).  One run of 8 or more releases replaces
 * the estimate, so relearning is quick.
 */
static inline void dq_slack_init(struct dq_slack *s, u64 max, bool fixed)
{
	s->max = max;
	s->fixed = fixed;
	s->gap_ewma = dq_slack_gap_cap(s);
	s->last_due = 0;
	dq_slack_update(s);
}

/* Bound changed (a queue came or went): relearn, see dq_slack_init(). */
static inline void dq_slack_set_max(struct dq_slack *s, u64 max)
{
	if (s->max != max)
		dq_slack_init(s, max, s->fixed);
}

static inline void dq_slack_set_fixed(struct dq_slack *s, bool fixed)
{
	if (s->fixed != fixed) {
		s->fixed = fixed;
		dq_slack_update(s);
	}
}

/*
 * A release run let out @n (> 0) records, the last due at @due (release
 * order is due order): one gap sample, their mean gap since the last
 * run's last.  Once per run, not per record.  Leaves cur alone: the
 * caller decides when the new estimate takes effect (dq_slack_update()).
 */
static inline void dq_slack_sample(struct dq_slack *s, u64 due,
				   unsigned int n)
{
	u64 cap = dq_slack_gap_cap(s);
	u64 gap = due > s->last_due ? div_u64(due - s->last_due, n) : 0;
	u64 w = n < BIT(DQ_SLACK_WEIGHT_SHIFT) ? n : BIT(DQ_SLACK_WEIGHT_SHIFT);

	if (gap > cap)
		gap = cap;
	if (due > s->last_due)
		s->last_due = due;
	/* gap_ewma += (gap - gap_ewma) * w / 8, in unsigned arithmetic. */
	s->gap_ewma = s->gap_ewma - (s->gap_ewma * w >> DQ_SLACK_WEIGHT_SHIFT) +
		      (gap * w >> DQ_SLACK_WEIGHT_SHIFT);
}

/*
 * Is the wheel's next work (dq_wheel_next()) a cascade, i.e. the start
 * of a bucket above level 0, rather than a level-0 bucket's last ns?
 * dq_wheel_next() answers start + DQ_WHEEL_TICK_NS - 1 for level 0 and
 * the start (a multiple of 2^DQ_WHEEL_BITS0 ticks) for the others; hotpath_test's
 * slack case and the dq_slack KUnit suite fail when that changes.
 */
static inline bool dq_slack_is_cascade(u64 next)
{
	return (next & (DQ_WHEEL_TICK_NS - 1)) != DQ_WHEEL_TICK_NS - 1;
}

/*
 * The slack for a timer armed for the wheel's next work @next (not yet
 * due).  A record gets cur.  A cascade moves records due at or after
 * @next, but how long after is not known here; firing it early only to
 * find its first record not yet due is a wake-up for nothing (measured
 * in libdqshim: 2k of 8.6k wake-ups/s at 10k msg/s, 50 us granularity).
 * So a cascade gets the whole max, except when releases are sparse (cur
 * under max / 8: less than one release per four windows), where
 * precision is what the slack is for and an extra wake-up is cheap.
 */
static inline u64 dq_slack_next(const struct dq_slack *s, u64 next)
{
	bool sparse = s->cur < s->max / 8;

	return dq_slack_is_cascade(next) && !sparse ? s->max : s->cur;
}

#endif /* DQ_SLACK_H */
