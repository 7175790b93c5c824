/* SPDX-License-Identifier: LGPL-2.1 OR MIT */
/*
 * dqbridge: when each message held in dq was first diverted, so that
 * dqbridge_oldest_age_seconds is the oldest held message's real age.
 *
 * One entry per message (the dq key without its parity bit: a retry's
 * two copies are one message), set when a copy is committed and durable,
 * dropped when the message leaves dq (delivered or dead-lettered; a
 * retry's old copy keeps it).  At open the recovered messages are read
 * from their arena slots (store_scan()), so a restart keeps their ages.
 * A hash table of the keys and a min-heap of the times (ages.c): set
 * and drop O(log n), the oldest O(1).
 */
#ifndef DQB_AGES_H
#define DQB_AGES_H

#include <stdint.h>

struct ages;

/* For up to @max messages.  0 or -ENOMEM. */
int ages_new(unsigned int max, struct ages **out);
void ages_free(struct ages *a);
/* Message @key (parity ignored) first diverted at @first_rt_ms; an entry
 * already there keeps the older time.  0, or -ENOSPC (more than max). */
int ages_set(struct ages *a, uint64_t key, uint64_t first_rt_ms);
/* Message @key left dq.  0, or -ENOENT. */
int ages_drop(struct ages *a, uint64_t key);
/* Messages tracked. */
unsigned int ages_count(const struct ages *a);
/* The oldest first_rt_ms, or 0 when none is tracked. */
uint64_t ages_oldest(const struct ages *a);

#endif /* DQB_AGES_H */
