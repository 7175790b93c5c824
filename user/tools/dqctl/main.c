// SPDX-License-Identifier: LGPL-2.1 OR MIT
/*
 * dqctl - the control plane of dq.ko over its generic netlink family "dq"
 * (uapi/linux/dq.h): create, delete, list, show and tune named queues, read
 * their statistics and follow the events multicast group.
 *
 * This file picks the command; args.c reads the command line, nl.c talks
 * to the kernel, queue.c, node.c, events.c and raw.c are the commands
 * (journal.c reads a durable queue's journal, no kernel),
 * print.c (text and JSON from one call per field) and fmt.c print.
 *
 * Exit status: 0 success, 1 usage error, 2 the kernel refused or failed.
 * See docs/dqctl.md.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "dqctl.h"
#include "nl.h"
#include "print.h"

static const struct {
	const char *name;
	cmd_fn *fn;
} cmds[] = {
	{ "create", cmd_create },
	{ "delete", cmd_delete },
	{ "list", cmd_list },
	{ "show", cmd_show },
	{ "set", cmd_set },
	{ "stats", cmd_stats },
	{ "monitor", cmd_monitor },
	{ "raw", cmd_raw },
	{ "journal", cmd_journal },
};

int main(int argc, char **argv)
{
	struct nl *nl;
	struct args a;
	struct pr pr;
	size_t i;
	int ret;

	parse_args(argc, argv, &a);
	if (!a.cmd) {
		usage(stderr);
		return EXIT_USAGE;
	}
	if (!strcmp(a.cmd, "help")) {
		usage(stdout);
		return 0;
	}
	for (i = 0; i < ARRAY_SIZE(cmds); i++)
		if (!strcmp(a.cmd, cmds[i].name))
			break;
	if (i == ARRAY_SIZE(cmds))
		usage_err("unknown command '%s'", a.cmd);

	nl = calloc(1, sizeof(*nl));
	if (!nl) {
		warnx("out of memory");
		return EXIT_KERNEL;
	}
	pr_init(&pr, stdout, a.json);
	ret = cmds[i].fn(nl, &a, &pr);
	if (fflush(stdout) || ferror(stdout)) {
		if (!ret && errno != EPIPE) {
			warnx("writing the output: %s", strerror(errno));
			ret = EXIT_KERNEL;
		}
	}
	nl_close(nl);
	free(nl);
	return ret;
}
