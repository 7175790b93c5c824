// SPDX-License-Identifier: LGPL-2.1 OR MIT
/*
 * tap.c - see tap.h.  Child exit status: 0 pass, 1 fail, 77 skip.
 */
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tap.h"

#define TAP_SKIP_STATUS	77

static struct tap_test *tap_head, **tap_tail = &tap_head;
static int tap_child_failed;

void tap_register(struct tap_test *t)
{
	*tap_tail = t;
	tap_tail = &t->next;
}

void tap_diag(const char *fmt, ...)
{
	va_list ap;

	fputs("# ", stdout);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	fputc('\n', stdout);
	fflush(stdout);
}

void tap_failed(const char *file, int line, const char *fmt, ...)
{
	va_list ap;

	tap_child_failed = 1;
	printf("# %s:%d: ", file, line);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	fputc('\n', stdout);
	fflush(stdout);
}

void tap_end_fail(void)
{
	fflush(stdout);
	_exit(1);
}

void tap_end_skip(const char *fmt, ...)
{
	va_list ap;
	FILE *f;

	/* The reason goes to the parent through a file named by env. */
	f = fopen(getenv("TAP_SKIP_FILE"), "w");
	if (f) {
		va_start(ap, fmt);
		vfprintf(f, fmt, ap);
		va_end(ap);
		fclose(f);
	}
	fflush(stdout);
	/* A test that already failed stays failed. */
	_exit(tap_child_failed ? 1 : TAP_SKIP_STATUS);
}

static int tap_selected(const char *name, int argc, char **argv)
{
	int i;

	if (argc < 2)
		return 1;
	for (i = 1; i < argc; i++)
		if (!strcmp(argv[i], name))
			return 1;
	return 0;
}

int tap_run(int argc, char **argv)
{
	char skipfile[] = "/tmp/dqshim-tap-XXXXXX";
	int n = 0, i = 0, passed = 0, failed = 0, skipped = 0;
	struct tap_test *t;
	int fd;

	fd = mkstemp(skipfile);
	if (fd >= 0)
		close(fd);
	setenv("TAP_SKIP_FILE", skipfile, 1);
	for (t = tap_head; t; t = t->next)
		n += tap_selected(t->name, argc, argv);
	printf("TAP version 13\n1..%d\n", n);
	fflush(stdout);

	for (t = tap_head; t; t = t->next) {
		char reason[256] = "";
		int status = 0;
		pid_t pid;

		if (!tap_selected(t->name, argc, argv))
			continue;
		i++;
		pid = fork();
		if (pid == 0) {
			alarm(t->timeout_s);
			t->fn();
			fflush(stdout);
			_exit(tap_child_failed ? 1 : 0);
		}
		if (pid < 0 || waitpid(pid, &status, 0) < 0) {
			printf("not ok %d - %s # fork/wait failed\n", i, t->name);
			failed++;
			continue;
		}
		if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
			printf("ok %d - %s\n", i, t->name);
			passed++;
		} else if (WIFEXITED(status) &&
			   WEXITSTATUS(status) == TAP_SKIP_STATUS) {
			FILE *f = fopen(skipfile, "r");

			if (f) {
				if (!fgets(reason, sizeof(reason), f))
					reason[0] = 0;
				fclose(f);
			}
			printf("ok %d - %s # SKIP %s\n", i, t->name, reason);
			skipped++;
		} else {
			if (WIFSIGNALED(status))
				printf("# %s: killed by signal %d%s\n", t->name,
				       WTERMSIG(status),
				       WTERMSIG(status) == SIGALRM ?
				       " (timeout)" : "");
			printf("not ok %d - %s\n", i, t->name);
			failed++;
		}
		fflush(stdout);
	}
	unlink(skipfile);
	if (skipped)
		printf("# %d skipped\n", skipped);
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
