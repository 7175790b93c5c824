/* SPDX-License-Identifier: LGPL-2.1 OR MIT */
/* dqctl: printing queues (queue.c), also for monitor's events. */
#ifndef DQCTL_QUEUE_H
#define DQCTL_QUEUE_H

#include <stdbool.h>
#include <stddef.h>

#include "attrs.h"
#include "print.h"

/* A queue's attributes: six lines of text, or members of the open object. */
void queue_print_fields(struct pr *pr, const struct qinfo *q);
/*
 * A queue's counters: a header and four lines (six for a queue that
 * tracks delivery), or the member "stats".
 */
void queue_print_stats(struct pr *pr, const struct qinfo *q);
/* One queue (show, create, set; with @stats: stats NAME). */
void queue_print(struct pr *pr, const struct qinfo *q, bool stats);

/* list and stats of every queue differ only in this. */
struct queue_view {
	const char *what;	/* the command, for its errors */
	uint8_t cmd;		/* DQ_CMD_QUEUE_GET or DQ_CMD_STATS */
	bool stats;		/* JSON: with the stats object */
	unsigned int cols;	/* the table's columns: QCOL_* */
};

extern const struct queue_view queue_list_view, queue_stats_view;

/* Every queue: a JSON array, or a table with a row per queue. */
void queue_print_all(struct pr *pr, const struct queue_view *v,
		     const struct qinfo *qs, size_t n);

#endif /* DQCTL_QUEUE_H */
