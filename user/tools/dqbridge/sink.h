/* SPDX-License-Identifier: LGPL-2.1 OR MIT */
/*
 * dqbridge's HTTP sink: POSTs to the downstream over libcurl's multi
 * interface, from the main loop's thread, at most max_inflight at once on
 * kept-alive connections.  Each request carries the source message id as
 * `Idempotency-Key` and the message payload as its body.
 *
 * The body is NOT copied: it must stay valid until the request's result
 * has been taken with sink_result() (the bridge points it into the dq
 * arena slot, or the source message, both held until then).
 */
#ifndef DQB_SINK_H
#define DQB_SINK_H

#include <stddef.h>
#include <stdint.h>

struct config;
struct ev;
struct log;
struct sink;

/* How a request ended. */
enum sink_kind {
	SINK_HTTP = 0,		/* an HTTP status came back: status */
	SINK_TIMEOUT = 1,	/* sink_timeout_ms passed */
	SINK_CONNECT = 2,	/* could not connect / connection lost */
	SINK_ERROR = 3,		/* any other transport error */
};

struct sink_result {
	void *ctx;		/* as given to sink_send() */
	int kind;		/* enum sink_kind */
	long status;		/* HTTP status (SINK_HTTP) */
	char retry_after[64];	/* the Retry-After header, "" if none */
	char error[128];	/* libcurl's message for a transport error */
	uint64_t elapsed_ns;
};

/*
 * Its sockets are watched in @ev; @now is the loop's CLOCK_MONOTONIC ns.
 * sink_url is parsed here, once: one libcurl cannot parse is -EINVAL
 * (logged, event sink_url_invalid); else 0, -ENOMEM or -EIO.
 */
int sink_open(const struct config *c, const struct log *log, struct ev *ev,
	      uint64_t now, struct sink **out);
void sink_close(struct sink *s);

/*
 * Start a POST of @body (@len bytes, kept by the caller until the result)
 * with Idempotency-Key @id.  0, -EBUSY (max_inflight requests already
 * running), -ENOMEM or -EIO.
 */
int sink_send(struct sink *s, const char *id, const void *body, size_t len,
	      void *ctx, uint64_t now);

/* Requests started and not yet returned by sink_result(). */
unsigned int sink_inflight(const struct sink *s);

/*
 * How long the loop may sleep for libcurl's sake: ms until its timer
 * (0: due), -1 when it has none.  Its sockets are in the loop's epoll set
 * and move on from their callbacks.
 */
int sink_timeout_ms(const struct sink *s, uint64_t now);

/* Run libcurl's timer when due at @now.  0, or -EIO / a failed epoll
 * registration. */
int sink_run_timers(struct sink *s, uint64_t now);

/* One finished request into @r: 1, or 0 when none is finished. */
int sink_result(struct sink *s, struct sink_result *r, uint64_t now);

#endif /* DQB_SINK_H */
