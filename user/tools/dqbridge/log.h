/* SPDX-License-Identifier: LGPL-2.1 OR MIT */
/*
 * dqbridge's structured logs: one line per event on stderr,
 *   ts=2026-12-03T10:00:00.123Z level=info event=diverted id=1-0 ...
 * so that journald, grep and any log shipper can split them without a
 * parser.  The level lives in struct log, owned by the caller (no global):
 * every part that logs is handed a pointer to it.
 */
#ifndef DQB_LOG_H
#define DQB_LOG_H

enum log_level { LOG_ERR = 0, LOG_WARN = 1, LOG_INFO = 2, LOG_DEBUG = 3 };

struct log {
	int level;		/* enum log_level: lines above it are dropped */
};

/* 0 and the level for "error", "warn", "info", "debug"; else -EINVAL. */
int log_level_parse(const char *s, int *level);

/*
 * One line: ts, level, event=@event, then @fmt (key=value pairs the caller
 * formats; values with spaces must be quoted by the caller, log_q() helps).
 */
void logkv(const struct log *l, int level, const char *event,
	   const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/*
 * @s as a log value: unchanged when it has no space, quote or control
 * character, else double-quoted with those escaped.  Written into @buf
 * (@n bytes, truncated), which is returned.
 */
const char *log_q(char *buf, unsigned int n, const char *s);

#endif /* DQB_LOG_H */
