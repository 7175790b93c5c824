/* SPDX-License-Identifier: LGPL-2.1 OR MIT */
/*
 * dqbridge's store: the durable dq queue that holds diverted messages
 * (libdqshim: dq_queue_open_durable(), DQ_OPEN_F_TRACK | DQ_OPEN_F_KEYS).
 *
 * A slot holds a small header, the source id (NUL-terminated, so it can
 * be used in place as the Idempotency-Key) and the body:
 *
 *   u8 magic 'B', u8 version 1, u16 id bytes (with the NUL),
 *   u32 body bytes, u64 first diverted (CLOCK_REALTIME ms), id, body
 *
 * The dq key (user_data) is policy_key(id), with bit 0 the copy's parity
 * (see policy.h); the attempts ride in the descriptor.
 */
#ifndef DQB_STORE_H
#define DQB_STORE_H

#include <stddef.h>
#include <stdint.h>

struct config;
struct log;
struct store;

#define STORE_HDR 16

/* A released message; id and body point into the arena until finished. */
struct store_msg {
	uint32_t slot;
	uint64_t key;
	uint16_t attempts;
	uint64_t due_ns;	/* CLOCK_MONOTONIC */
	uint64_t release_ns;
	uint64_t first_rt_ms;
	const char *id;		/* NULL: the slot did not hold a record of ours */
	const void *body;
	uint32_t len;
};

/*
 * Called from store_flush() for each commit dq refused (@err: -EEXIST
 * when a copy with that key is held already, which the bridge counts as
 * durable; anything else is a real refusal).  @slot is the committed one.
 */
typedef void store_reject_fn(void *arg, uint32_t slot, uint64_t key, int err);

/* Open (and recover) the queue in c->dq_dir.  0 or -errno. */
int store_open(const struct config *c, const struct log *log,
	       store_reject_fn *on_reject, void *arg, struct store **out);
/* Close: what is held stays in the journal for the next open. */
void store_close(struct store *s);

/*
 * Right after store_open(): call @fn for each message recovery put back
 * (its id, its dq key as @key_of(id) with the copy's parity, its first
 * diverted time).  Returns how many.
 */
int store_scan(struct store *s, uint64_t (*key_of)(const char *id),
	       void (*fn)(void *arg, const char *id, uint64_t key,
			  uint64_t first_rt_ms),
	       void *arg);

/* Bytes of body a slot can take with this id. */
size_t store_room(const struct store *s, const char *id);

/*
 * Commit a copy of @body due @delay_ns from now.  *@slot gets its slot.
 * 0; -EMSGSIZE (too big for a slot); -ENOSPC (no free slot, or the
 * journal is at its limit: nothing committed); or another -errno.
 */
int store_put(struct store *s, const char *id, const void *body, size_t len,
	      uint16_t attempts, uint64_t delay_ns, uint64_t key,
	      uint64_t first_rt_ms, uint32_t *slot);

/* Hand the commits to dq (rejects reported now).  >= 0 or -errno. */
int store_flush(struct store *s);

/* The journal position of the last commit (dq_journal_mark()). */
uint64_t store_mark(struct store *s);

/*
 * Is everything up to @mark durable (dq_durable_poll())?  1, 0 (not
 * yet), or the journal's error: it never will be.  Never blocks.
 */
int store_durable(struct store *s, uint64_t mark);

/*
 * A descriptor readable once the durable position moved or the journal
 * failed (dq_durable_fd()); store_durable_ack() rearms it.  -errno.
 */
int store_durable_fd(struct store *s);
void store_durable_ack(struct store *s);

/* Up to @max released messages (no waiting).  >= 0 or -errno. */
int store_reap(struct store *s, struct store_msg *out, unsigned int max);

/* Finish a released message: delivered, or failed (retired either way). */
int store_finish(struct store *s, uint32_t slot, int delivered);

/* The fd readable when messages are due (dq_queue_fd()). */
int store_fd(const struct store *s);

/* Messages held (waiting + in flight), and in flight. */
int store_counts(struct store *s, uint64_t *held, uint64_t *inflight);

/* "kernel" or "user". */
const char *store_backend(const struct store *s);

#endif /* DQB_STORE_H */
