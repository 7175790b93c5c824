/* SPDX-License-Identifier: LGPL-2.1 OR MIT */
/*
 * dqbridge's main loop: source -> (HTTP directly | durable dq queue ->
 * paced release -> HTTP) -> ack.  docs/dqbridge.md describes the policy;
 * this header only says how main.c starts it.
 */
#ifndef DQB_BRIDGE_H
#define DQB_BRIDGE_H

#include "config.h"
#include "log.h"

/*
 * Run until SIGTERM/SIGINT (drain, then return 0) or a fatal error
 * (return -errno).  @c is the live configuration (SIGHUP reloads its rate
 * keys from @config_path, then the flags in @argv again); the caller has
 * blocked SIGTERM, SIGINT and SIGHUP in every thread.
 */
int bridge_run(struct config *c, const char *config_path, int argc,
	       char **argv, struct log *log);

/* Apply the `--key value` flags of @argv to @c (main.c).  0 or -EINVAL. */
int apply_flags(struct config *c, int argc, char **argv, char *err,
		size_t errlen);

#endif /* DQB_BRIDGE_H */
