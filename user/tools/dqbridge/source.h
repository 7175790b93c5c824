/* SPDX-License-Identifier: LGPL-2.1 OR MIT */
/*
 * dqbridge's source interface: where messages come from, where they are
 * acknowledged, and where dead letters go.
 *
 * Adding a source (RabbitMQ, NATS, ...) is one file, source_NAME.c,
 * defining `const struct source_ops NAME_source_ops`, plus its line in
 * source.c's table and its name in dqbridge.mk.  The bridge calls it from
 * one thread only (the main loop); nothing here needs a lock.
 *
 * The contract the bridge relies on:
 *  - poll() never blocks longer than @timeout_ms (0: not at all) and
 *    returns messages the source will deliver again (to this instance
 *    after a restart, or to another member of the group) until ack()ed:
 *    the bridge acks only once a message was delivered, is durable in dq,
 *    or was dead-lettered.  A message that comes twice (after a crash) is
 *    fine: the bridge deduplicates through dq's keys where it can, and
 *    the downstream sees the same Idempotency-Key.
 *  - ack() of an id already acked, or unknown, is not an error.
 *  - A message's id is a printable string without spaces, unique within
 *    the source, at most SRC_ID_MAX bytes: it becomes the HTTP
 *    Idempotency-Key and the dq key's hash.
 *  - dead_letter() returns 0 only once the dead letter is stored by the
 *    source's system (the bridge then acks the original).
 *  - pause()/resume(): back-pressure.  While paused the bridge does not
 *    call poll(); a source that must keep talking to its broker while
 *    not consuming (Kafka: poll for group membership) does so in poll()
 *    with max 0, which the bridge calls instead.
 *  - Errors are negative errno values; a source that lost its broker
 *    returns -ENOTCONN (or -EIO) from poll()/ack() and reconnects itself
 *    on a later call, at a pace of its own.
 */
#ifndef DQB_SOURCE_H
#define DQB_SOURCE_H

#include <stddef.h>
#include <stdint.h>

struct config;
struct ev;
struct log;
struct source;

#define SRC_ID_MAX 200

/* One message.  The bridge frees it with src_msg_free() when done. */
struct src_msg {
	char *id;		/* malloc'd, NUL-terminated */
	void *body;		/* malloc'd, len bytes (may be NULL when 0) */
	size_t len;
};

struct source_ops {
	const char *name;
	int (*open)(const struct config *c, const struct log *log,
		    struct source **out);
	/* Up to @max messages into @out; returns how many, or -errno. */
	int (*poll)(struct source *s, struct src_msg *out, unsigned int max,
		    int timeout_ms);
	/* Acknowledge @n ids: the source will not deliver them again. */
	int (*ack)(struct source *s, char *const *ids, unsigned int n);
	/* Store @m with @reason and @attempts where dead letters go. */
	int (*dead_letter)(struct source *s, const char *id, const void *body,
			   size_t len, const char *reason, unsigned int attempts);
	void (*pause)(struct source *s);
	void (*resume)(struct source *s);
	void (*close)(struct source *s);
	/*
	 * Optional.  The source waits for new messages on descriptors of its
	 * own in the bridge's epoll set @ev (ev.h), so that the loop wakes
	 * when it has some: the bridge then does not poll() it on a timer
	 * (every 10 ms while it may read), only on every loop turn and at
	 * least every 50 ms (reconnects, claims).  A source without it is
	 * polled on the timer.
	 */
	int (*attach)(struct source *s, struct ev *ev);
	/*
	 * Optional, for attached sources.  When poll() must next be called
	 * for the source to move on, on the CLOCK_MONOTONIC clock in ns: 0
	 * when a descriptor of its own wakes the loop first (a read is
	 * outstanding), so that an idle bridge sleeps until something comes
	 * rather than waking every source_read_interval_ms.  Without it an
	 * attached source is polled every source_read_interval_ms.
	 */
	uint64_t (*next_poll_ns)(const struct source *s, uint64_t now);
};

/* The source named @name, or NULL. */
const struct source_ops *source_find(const char *name);

/* Free @m's id and body (not @m itself). */
void src_msg_free(struct src_msg *m);

#endif /* DQB_SOURCE_H */
