// SPDX-License-Identifier: LGPL-2.1 OR MIT
/*
 * dqbridge - consume a message queue, call a rate-limited downstream over
 * HTTP, and divert what it refuses into a durable dq queue, releasing it
 * at the pace the downstream takes.  docs/dqbridge.md.
 *
 * This file reads the command line and the configuration and starts the
 * loop (bridge.c).  The parts: source.h (source_redis.c, source_kafka.c),
 * sink.c (HTTP, libcurl multi), store.c (the dq queue), policy.c
 * (verdicts, retry delays, the adaptive rate), metrics.c (Prometheus
 * endpoint), config.c, log.c.
 *
 * Exit status: 0 after a clean stop (SIGTERM/SIGINT), 1 usage or
 * configuration error, 2 a runtime failure (dq's journal failed, ...):
 * systemd's Restart=on-failure restarts it, and nothing acked is lost.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bridge.h"
#include "config.h"
#include "log.h"

#define DQBRIDGE_VERSION DQ_VERSION	/* VERSION, through dqbridge.mk */

static void usage(FILE *f)
{
	fputs(
"usage: dqbridge [-c FILE] [--KEY VALUE | --KEY=VALUE]...\n"
"       dqbridge --print-config [-c FILE] [--KEY VALUE]...\n"
"       dqbridge --help-config | --help | --version\n"
"\n"
"  -c, --config FILE   read KEY = VALUE lines from FILE first; flags\n"
"                      override it (and SIGHUP re-reads its rate keys)\n"
"  --print-config      print the effective configuration and exit\n"
"  --help-config       list every key with its default\n"
"\n"
"Signals: TERM/INT drain requests in flight and exit 0; HUP reloads the\n"
"rate keys.  See docs/dqbridge.md.\n", f);
}

static int is_opt(const char *a, const char *name)
{
	return !strcmp(a, name);
}

int apply_flags(struct config *c, int argc, char **argv, char *err,
		size_t errlen)
{
	char key[128];
	const char *val, *eq;
	int i, ret;

	for (i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (is_opt(a, "-c") || is_opt(a, "--config")) {
			i++;
			continue;
		}
		if (is_opt(a, "--print-config"))
			continue;
		if (strncmp(a, "--", 2)) {
			snprintf(err, errlen, "unexpected argument '%s'", a);
			return -EINVAL;
		}
		a += 2;
		eq = strchr(a, '=');
		if (eq) {
			snprintf(key, sizeof(key), "%.*s", (int)(eq - a), a);
			val = eq + 1;
		} else {
			if (i + 1 >= argc) {
				snprintf(err, errlen, "--%s needs a value", a);
				return -EINVAL;
			}
			snprintf(key, sizeof(key), "%s", a);
			val = argv[++i];
		}
		ret = config_set(c, key, val, err, errlen);
		if (ret)
			return ret;
	}
	return 0;
}

int main(int argc, char **argv)
{
	const char *path = NULL;
	struct log log = { LOG_INFO };
	struct config *c;
	char err[512];
	int i, print = 0, ret;
	sigset_t set;

	for (i = 1; i < argc; i++) {
		if (is_opt(argv[i], "-h") || is_opt(argv[i], "--help")) {
			usage(stdout);
			return 0;
		}
		if (is_opt(argv[i], "--version")) {
			printf("dqbridge %s\n", DQBRIDGE_VERSION);
			return 0;
		}
		if (is_opt(argv[i], "--help-config")) {
			config_help(stdout);
			return 0;
		}
		if (is_opt(argv[i], "--print-config"))
			print = 1;
		if ((is_opt(argv[i], "-c") || is_opt(argv[i], "--config")) &&
		    i + 1 < argc)
			path = argv[++i];
	}
	c = malloc(sizeof(*c));
	if (!c)
		return 2;
	config_defaults(c);
	ret = path ? config_load(c, path, err, sizeof(err)) : 0;
	if (!ret)
		ret = apply_flags(c, argc, argv, err, sizeof(err));
	if (!ret)
		ret = config_finish(c, err, sizeof(err));
	if (!ret && log_level_parse(c->log_level, &log.level)) {
		snprintf(err, sizeof(err), "bad log_level '%s'", c->log_level);
		ret = -EINVAL;
	}
	if (ret) {
		fprintf(stderr, "dqbridge: %s\nTry 'dqbridge --help'.\n", err);
		free(c);
		return 1;
	}
	if (print) {
		config_print(c, stdout);
		free(c);
		return 0;
	}
	setvbuf(stderr, NULL, _IONBF, 0);
	/* Blocked before any thread starts (the metrics endpoint's), so
	 * that only the loop's signalfd sees them. */
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	sigprocmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);
	ret = bridge_run(c, path, argc, argv, &log);
	free(c);
	return ret ? 2 : 0;
}
