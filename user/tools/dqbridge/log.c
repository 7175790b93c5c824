// SPDX-License-Identifier: LGPL-2.1 OR MIT
/*
 * dqbridge: structured logs (log.h).  Each line is built in a buffer and
 * written with one fputs on an unbuffered stderr, so lines from the
 * metrics thread and the main loop do not interleave mid-line.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "log.h"

static const char *const level_names[] = { "error", "warn", "info", "debug" };

int log_level_parse(const char *s, int *level)
{
	unsigned int i;

	for (i = 0; i < sizeof(level_names) / sizeof(level_names[0]); i++)
		if (!strcmp(s, level_names[i])) {
			*level = (int)i;
			return 0;
		}
	return -EINVAL;
}

void logkv(const struct log *l, int level, const char *event,
	   const char *fmt, ...)
{
	char line[2048];
	struct timespec ts;
	struct tm tm;
	va_list ap;
	int n;

	if (l && level > l->level)
		return;
	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	n = snprintf(line, sizeof(line),
		     "ts=%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ level=%s event=%s",
		     tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
		     tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000000,
		     level_names[level < 0 ? 0 : level > 3 ? 3 : level], event);
	if (fmt && *fmt && n > 0 && (size_t)n < sizeof(line) - 2) {
		line[n++] = ' ';
		va_start(ap, fmt);
		vsnprintf(line + n, sizeof(line) - n - 1, fmt, ap);
		va_end(ap);
	}
	n = strlen(line);
	if ((size_t)n > sizeof(line) - 2)
		n = sizeof(line) - 2;
	line[n++] = '\n';
	line[n] = '\0';
	fputs(line, stderr);
}

const char *log_q(char *buf, unsigned int n, const char *s)
{
	unsigned int o = 0;
	const char *p;
	int plain = 1;

	if (!s)
		s = "";
	for (p = s; *p; p++)
		if (*p == ' ' || *p == '"' || *p == '\\' || *p == '=' ||
		    (unsigned char)*p < 0x20)
			plain = 0;
	if (plain && *s) {
		snprintf(buf, n, "%s", s);
		return buf;
	}
	if (n < 3) {
		if (n)
			buf[0] = '\0';
		return buf;
	}
	buf[o++] = '"';
	for (p = s; *p && o + 3 < n; p++) {
		if (*p == '"' || *p == '\\') {
			buf[o++] = '\\';
			buf[o++] = *p;
		} else if ((unsigned char)*p < 0x20) {
			buf[o++] = ' ';
		} else {
			buf[o++] = *p;
		}
	}
	buf[o++] = '"';
	buf[o] = '\0';
	return buf;
}
