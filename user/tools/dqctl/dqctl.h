/* SPDX-License-Identifier: LGPL-2.1 OR MIT */
/*
 * dqctl: what every part shares.  The commands (queue.c, node.c,
 * events.c, raw.c) take the netlink handle (nl.h), the parsed command
 * line (args.h) and the output context (print.h); main.c picks one.
 */
#ifndef DQCTL_H
#define DQCTL_H

#include <stdio.h>

#define DQCTL_VERSION	DQ_VERSION	/* VERSION, through dqctl.mk */

/*
 * Exit status: 0 ok, 1 usage error, 2 the kernel refused or failed.
 * journal: 0 clean, 1 findings, 2 usage or I/O error.
 */
#define EXIT_USAGE	1
#define EXIT_KERNEL	2
#define EXIT_FINDINGS	1

#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))

struct nl;
struct args;
struct pr;

/* "dqctl: MSG" on stderr, after flushing stdout (args.c; not err.h's). */
void warnx(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* A command: returns the exit status. */
typedef int cmd_fn(struct nl *nl, const struct args *a, struct pr *pr);

cmd_fn cmd_create, cmd_delete, cmd_list, cmd_show, cmd_set, cmd_stats;
cmd_fn cmd_node_stats, cmd_monitor, cmd_raw, cmd_journal;

#endif /* DQCTL_H */
