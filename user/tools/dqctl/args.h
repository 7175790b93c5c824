/* SPDX-License-Identifier: LGPL-2.1 OR MIT */
/* dqctl's command line: options, and the parsers of their values. */
#ifndef DQCTL_ARGS_H
#define DQCTL_ARGS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

enum opt_id {
	O_SLOTS = 1, O_SLOT_SIZE, O_SUBMIT_ENTRIES, O_READY_ENTRIES, O_NODE,
	O_GRANULARITY, O_MAX_PENDING, O_RATE, O_BURST, O_HIGH_WM, O_UID,
	O_GID, O_MODE, O_FORCE, O_ID, O_COUNT, O_TIMEOUT, O_DUMP, O_TRACK,
	O_INFLIGHT, O_KEYS, O_VISIBILITY, O_RECORDS,
	O_NR,
};

struct args {
	const char *cmd;
	const char *pos[64];
	int npos;
	const char *val[O_NR];	/* NULL: not given; "" for a flag */
	bool json;		/* --json */
	bool verbose;		/* -v */
};

void usage(FILE *f);
_Noreturn void usage_err(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));

/* Fills @a; --help and --version print and exit, bad options exit 1. */
void parse_args(int argc, char **argv, struct args *a);
/* Refuse options @a->cmd does not take: @allowed is a 0-terminated list. */
void only_opts(const struct args *a, const enum opt_id *allowed);
void check_name(const char *name);

/* Values; each exits with a usage error naming @opt when @s is bad. */
uint64_t parse_u64(const char *opt, const char *s, uint64_t max);
uint32_t parse_u32(const char *opt, const char *s);
int32_t parse_node(const char *opt, const char *s);
/*
 * A time with a unit (ns, us, ms, s, m, h), in ns; @bare: the unit of a
 * plain number, or NULL.
 */
uint64_t parse_time(const char *opt, const char *s, const char *bare);
uint32_t parse_mode(const char *opt, const char *s);
uint32_t parse_uid(const char *opt, const char *s);
uint32_t parse_gid(const char *opt, const char *s);
/*
 * A cap on messages in flight: 1 .. UINT32_MAX (the kernel checks the
 * upper end), or "none": DQ_MAX_SLOTS, the value that means no cap.
 */
uint32_t parse_inflight(const char *opt, const char *s);

#endif /* DQCTL_ARGS_H */
