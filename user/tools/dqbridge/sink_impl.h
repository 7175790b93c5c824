/* SPDX-License-Identifier: LGPL-2.1 OR MIT */
/*
 * The two implementations behind sink.h: the native HTTP/1.1 client
 * (sink_http1.c, plain http:// URLs) and libcurl's multi interface
 * (sink_curl.c, everything else).  sink.c picks one at sink_open() and
 * forwards every call through its table; each defines its own
 * struct sink_impl.  The functions mean what sink.h says of their
 * sink_* namesakes.
 */
#ifndef DQB_SINK_IMPL_H
#define DQB_SINK_IMPL_H

#include "sink.h"

struct sink_impl;

struct sink_ops {
	const char *name;	/* "native" or "curl", as logged */
	int (*open)(const struct config *c, const struct log *log,
		    struct ev *ev, uint64_t now, struct sink_impl **out);
	void (*close)(struct sink_impl *s);
	int (*send)(struct sink_impl *s, const char *id, const void *body,
		    size_t len, void *ctx, uint64_t now);
	unsigned int (*inflight)(const struct sink_impl *s);
	int (*timeout_ms)(const struct sink_impl *s, uint64_t now);
	int (*run_timers)(struct sink_impl *s, uint64_t now);
	int (*result)(struct sink_impl *s, struct sink_result *r, uint64_t now);
};

extern const struct sink_ops sink_curl_ops;
extern const struct sink_ops sink_http1_ops;

#endif /* DQB_SINK_IMPL_H */
