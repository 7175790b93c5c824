/* SPDX-License-Identifier: LGPL-2.1 OR MIT */
/*
 * relmodel.h - an independent model of what dq must release and in which
 * order, for tests and dqbench to judge dq against, never dq against
 * itself: no value dq reports back (a ready entry's due_ns or release_ns,
 * a handle, a sequence number) is an input.
 *
 * The producer records each message, by its id (the user_data it gives
 * dq, dense from 0): the due time it chose, the submitter (thread or
 * process) and its index among that submitter's messages, and two times
 * on its own CLOCK_MONOTONIC: before the commit that queued it (it cannot
 * be in the engine earlier) and after the flush/submit that carried it
 * returned (it is in the engine by then).  The consumer reports each id it
 * reaps with the time it saw it (after its wait returned, so never before
 * dq released it).  rm_finish() then judges:
 *
 *  early	seen before the recorded due time;
 *  dup		seen more than once; unknown: an id never submitted;
 *  lost	submitted and never seen;
 *  order	b seen before a although dq had to release a first, i.e. when
 *		a was in the engine before b could be released and
 *		  - same submitter, a queued before b, due(a) <= due(b)
 *		    (FIFO among equal due times), or
 *		  - max(due(a), in-engine(a)) < due(b) (earlier due, and both
 *		    due and present before b was due), or
 *		  - due(a) == due(b) and a was in the engine before b was
 *		    queued (FIFO across submitters).
 *		Pairs the model cannot order for sure (a queued while b was
 *		already due, or submitted concurrently) are not judged.
 *
 * Messages are judged in the order the consumer saw them: one consumer,
 * taking the ready ring in order.  Memory: 40 bytes per id, mapped lazily
 * (MAP_NORESERVE), so a large capacity costs only what is used.
 */
#ifndef DQ_RELMODEL_H
#define DQ_RELMODEL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define RM_UNKNOWN_TIME	UINT64_MAX

struct rm_msg {
	uint64_t due;		/* the due time the producer chose */
	uint64_t queued;	/* before the commit: not in the engine earlier */
	uint64_t in_engine;	/* after the flush returned (or RM_UNKNOWN_TIME) */
	uint64_t idx;		/* index among its submitter's messages */
	uint32_t pos;		/* position in the consumer's sequence */
	uint16_t src;		/* the submitter */
	uint8_t known;		/* submitted */
	uint8_t seen;		/* times seen (saturating) */
};

struct rm {
	struct rm_msg *m;
	uint64_t cap;
	uint64_t submitted;	/* known ids, counted by rm_finish() */
	/* The producer's: one past the highest id submitted. */
	uint64_t hi __attribute__((aligned(64)));
	/* The consumer's, on a cache line of their own. */
	uint32_t *seq __attribute__((aligned(64)));	/* ids in the order seen */
	uint64_t nseen;		/* messages seen once (the sequence) */
	/* Counters; lost and order are set by rm_finish(). */
	uint64_t early, dup, unknown, lost, order;
	uint64_t max_late;	/* of the messages seen on time */
	char first[512];	/* the first violation, in words */
};

/* Flags rm_seen() returns. */
#define RM_EARLY	1
#define RM_DUP		2
#define RM_BAD_ID	4

/* Room for ids 0 .. cap-1.  0 or -errno. */
int rm_init(struct rm *m, uint64_t cap);
void rm_free(struct rm *m);

/* Producer: before committing @id (@now: its clock, before the commit). */
void rm_submit(struct rm *m, uint64_t id, uint16_t src, uint64_t idx,
	       uint64_t due, uint64_t now);
/* Producer: after the flush that carried @id returned, at @now. */
static inline void rm_in_engine(struct rm *m, uint64_t id, uint64_t now)
{
	if (id < m->cap)
		m->m[id].in_engine = now;
}

/* Producer: @id will never be released (rejected, cancelled): not lost. */
void rm_withdraw(struct rm *m, uint64_t id);

/* Consumer: @id reaped, seen at @now.  0 or RM_* flags (counted). */
int rm_seen(struct rm *m, uint64_t id, uint64_t now);

/* Judge lost and order; returns the number of violations of every kind. */
uint64_t rm_finish(struct rm *m);

/*
 * The table as text, for a producer and a consumer in different
 * processes: one line per submitted id,
 *	USER_DATA DUE QUEUED IN_ENGINE SRC IDX
 * with USER_DATA = @base + id.  rm_read() adds the lines to @m (ids must
 * fall in [0, cap)); both return the number of lines or -errno.
 */
long rm_write(const struct rm *m, FILE *f, uint64_t base);
long rm_read(struct rm *m, FILE *f, uint64_t base);

/* The recorded due time of @id (0 when unknown). */
static inline uint64_t rm_due(const struct rm *m, uint64_t id)
{
	return id < m->cap && m->m[id].known ? m->m[id].due : 0;
}

static inline bool rm_known(const struct rm *m, uint64_t id)
{
	return id < m->cap && m->m[id].known;
}

#endif /* DQ_RELMODEL_H */
