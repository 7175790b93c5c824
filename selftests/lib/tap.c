// SPDX-License-Identifier: LGPL-2.1 OR MIT
/*
 * tap.c - the dq TAP harness (see tap.h): test registry, forked runner in
 * a process group of its own, timeouts and the closing
 * "N passed, N failed, N skipped" line.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "tap.h"

#include <dirent.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define TAP_EXIT_PASS	0
#define TAP_EXIT_FAIL	1
#define TAP_EXIT_SKIP	4

static struct tap_case *tap_cases;
static unsigned int tap_ncases;

/* The running test's process group, for the parent's signal handler. */
static volatile sig_atomic_t tap_cur_pgid;

/* State of the test running in this (child) process. */
static atomic_int tap_failed;
static int tap_skip_fd = -1;

/*
 * Where each thread of a stuck test process is, from /proc (the kernel
 * stack needs root; wchan does not): the first thing to know about a
 * process that a SIGKILL cannot end.
 */
static void tap_dump_stuck(pid_t pid)
{
	char path[320], line[256];
	struct dirent *de;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	d = opendir(path);
	if (!d)
		return;
	while ((de = readdir(d))) {
		const char *const files[] = { "wchan", "stack" };
		unsigned int i;

		if (de->d_name[0] == '.')
			continue;
		for (i = 0; i < 2; i++) {
			FILE *f;

			snprintf(path, sizeof(path), "/proc/%d/task/%s/%s",
				 (int)pid, de->d_name, files[i]);
			f = fopen(path, "re");
			if (!f)
				continue;
			while (fgets(line, sizeof(line), f)) {
				line[strcspn(line, "\n")] = 0;
				tap_diag("  task %s %s: %s", de->d_name,
					 files[i], line);
			}
			fclose(f);
		}
	}
	closedir(d);
}

void tap_register(struct tap_case *tc)
{
	tc->order = tap_ncases++;
	tc->next = tap_cases;
	tap_cases = tc;
}

void tap_add_at(int line, const char *name, void (*fn)(void *arg), void *arg,
		unsigned int timeout_s)
{
	struct tap_case *tc = calloc(1, sizeof(*tc));

	if (!tc || !(tc->name = strdup(name))) {
		fprintf(stderr, "tap_add: out of memory\n");
		exit(2);
	}
	tc->fn_arg = fn;
	tc->arg = arg;
	tc->timeout_s = timeout_s;
	tc->line = line;
	tap_register(tc);
}

static void tap_vprint(const char *prefix, const char *fmt, va_list ap)
{
	char buf[2048];
	int n = vsnprintf(buf, sizeof(buf), fmt, ap);

	if (n < 0)
		return;
	/* One "# " per line, whole message in one write. */
	char out[4096];
	size_t o = 0;
	const char *p = buf;

	o += (size_t)snprintf(out + o, sizeof(out) - o, "# %s", prefix);
	for (; *p && o + 4 < sizeof(out); p++) {
		out[o++] = *p;
		if (*p == '\n' && p[1]) {
			out[o++] = '#';
			out[o++] = ' ';
		}
	}
	if (o && out[o - 1] != '\n')
		out[o++] = '\n';
	fwrite(out, 1, o, stdout);
	fflush(stdout);
}

void tap_diag(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	tap_vprint("", fmt, ap);
	va_end(ap);
}

void tap_fail_at(const char *file, int line, const char *fmt, ...)
{
	char prefix[256];
	va_list ap;

	atomic_store(&tap_failed, 1);
	snprintf(prefix, sizeof(prefix), "%s:%d: FAIL: ", file, line);
	va_start(ap, fmt);
	tap_vprint(prefix, fmt, ap);
	va_end(ap);
}

int tap_has_failed(void)
{
	return atomic_load(&tap_failed);
}

_Noreturn void tap_abort(void)
{
	atomic_store(&tap_failed, 1);
	fflush(stdout);
	fflush(stderr);
	_exit(TAP_EXIT_FAIL);
}

_Noreturn void tap_skip(const char *fmt, ...)
{
	char buf[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (tap_skip_fd >= 0) {
		ssize_t r = write(tap_skip_fd, buf, strlen(buf));
		(void)r;
	}
	fflush(stdout);
	fflush(stderr);
	_exit(atomic_load(&tap_failed) ? TAP_EXIT_FAIL : TAP_EXIT_SKIP);
}

static void tap_fmt_val(char *buf, size_t len, int is_signed,
			unsigned long long v)
{
	if (is_signed)
		snprintf(buf, len, "%lld", (long long)v);
	else
		snprintf(buf, len, "%llu", v);
	if (v > 9 && (!is_signed || (long long)v > 9)) {
		size_t n = strlen(buf);

		snprintf(buf + n, len - n, " (0x%llx)", v);
	}
}

void tap_cmp_fail(const char *file, int line, const char *what,
		  const char *astr, const char *bstr,
		  int a_signed, unsigned long long a,
		  int b_signed, unsigned long long b)
{
	char av[64], bv[64];

	tap_fmt_val(av, sizeof(av), a_signed, a);
	tap_fmt_val(bv, sizeof(bv), b_signed, b);
	tap_fail_at(file, line, "expected %s %s %s\n  %s = %s\n  %s = %s",
		    astr, what, bstr, astr, av, bstr, bv);
}

void tap_errno_fail(const char *file, int line, const char *expr,
		    long long ret, int err, int want_err)
{
	if (ret != -1)
		tap_fail_at(file, line, "%s returned %lld, expected -1/%s",
			    expr, ret, strerrorname_np(want_err) ?: "?");
	else
		tap_fail_at(file, line, "%s failed with %s (%s), expected %s",
			    expr, strerrorname_np(err) ?: "?", strerror(err),
			    strerrorname_np(want_err) ?: "?");
}

double tap_timeout_scale(void)
{
	const char *s = getenv("DQ_TIMEOUT_SCALE");
	double v = s ? strtod(s, NULL) : 1.0;

	return v > 0 ? v : 1.0;
}

static int tap_cmp_line(const void *a, const void *b)
{
	const struct tap_case *x = *(struct tap_case * const *)a;
	const struct tap_case *y = *(struct tap_case * const *)b;

	if (x->line != y->line)
		return (x->line > y->line) - (x->line < y->line);
	return (x->order > y->order) - (x->order < y->order);
}

static uint64_t tap_mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void tap_sleep_ms(unsigned int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

enum tap_result { TAP_R_PASS, TAP_R_FAIL, TAP_R_SKIP };

static enum tap_result tap_run_one(struct tap_case *tc, char *skip_reason,
				   size_t skip_len)
{
	double scaled = tc->timeout_s * tap_timeout_scale() + 0.999;
	unsigned int timeout = scaled < 1 ? 1 : (unsigned int)scaled;
	int pfd[2];
	pid_t pid;

	skip_reason[0] = 0;
	if (pipe2(pfd, O_CLOEXEC)) {
		tap_diag("pipe: %s", strerror(errno));
		return TAP_R_FAIL;
	}
	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid < 0) {
		tap_diag("fork: %s", strerror(errno));
		close(pfd[0]);
		close(pfd[1]);
		return TAP_R_FAIL;
	}
	if (pid == 0) {
		/* A group of its own: what the test forks dies with it. */
		setpgid(0, 0);
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		close(pfd[0]);
		tap_skip_fd = pfd[1];
		atomic_store(&tap_failed, 0);
		/* SIGALRM's default action ends the child: a timeout. */
		signal(SIGALRM, SIG_DFL);
		alarm(timeout);
		if (tc->fn_arg)
			tc->fn_arg(tc->arg);
		else
			tc->fn();
		fflush(stdout);
		fflush(stderr);
		_exit(atomic_load(&tap_failed) ? TAP_EXIT_FAIL : TAP_EXIT_PASS);
	}
	setpgid(pid, pid);	/* either side may win the race; both set it */
	tap_cur_pgid = pid;
	close(pfd[1]);

	/* The parent backs the alarm up: SIGKILL a child stuck past it. */
	uint64_t start = tap_mono_ms();
	uint64_t kill_at = start + (uint64_t)timeout * 1000 + 5000;
	uint64_t give_up = kill_at + 10000;
	int status = 0, killed = 0;

	for (;;) {
		pid_t r = waitpid(pid, &status, WNOHANG);

		if (r == pid)
			break;
		if (r < 0 && errno != EINTR) {
			tap_diag("waitpid: %s", strerror(errno));
			kill(-pid, SIGKILL);
			tap_cur_pgid = 0;
			close(pfd[0]);
			return TAP_R_FAIL;
		}
		uint64_t now = tap_mono_ms();

		if (!killed && now >= kill_at) {
			tap_diag("test did not end %u s after its %u s timeout: SIGKILL",
				 5, timeout);
			tap_dump_stuck(pid);
			kill(-pid, SIGKILL);
			kill(pid, SIGKILL);
			killed = 1;
		}
		if (killed && now >= give_up) {
			tap_diag("test process %d cannot be reaped (stuck in the kernel?)",
				 (int)pid);
			tap_dump_stuck(pid);
			tap_cur_pgid = 0;
			close(pfd[0]);
			return TAP_R_FAIL;
		}
		tap_sleep_ms(now - start < 1000 ? 2 : 20);
	}

	/*
	 * Processes the test forked and left behind (or that outlived a
	 * timeout) would hold the output pipe open and run into the next
	 * test: end the whole group.
	 */
	if (kill(-pid, 0) == 0) {
		tap_diag("killing processes the test left behind (group %d)",
			 (int)pid);
		kill(-pid, SIGKILL);
	}
	tap_cur_pgid = 0;

	ssize_t n = read(pfd[0], skip_reason, skip_len - 1);

	skip_reason[n > 0 ? n : 0] = 0;
	close(pfd[0]);

	if (WIFSIGNALED(status)) {
		int sig = WTERMSIG(status);

		if (sig == SIGALRM)
			tap_diag("test timed out after %u s", timeout);
		else
			tap_diag("test killed by signal %d (%s)%s", sig,
				 strsignal(sig), WCOREDUMP(status) ? ", core dumped" : "");
		return TAP_R_FAIL;
	}
	if (!WIFEXITED(status))
		return TAP_R_FAIL;
	switch (WEXITSTATUS(status)) {
	case TAP_EXIT_PASS:
		return TAP_R_PASS;
	case TAP_EXIT_SKIP:
		return TAP_R_SKIP;
	case TAP_EXIT_FAIL:
		return TAP_R_FAIL;
	default:
		tap_diag("test exited with status %d", WEXITSTATUS(status));
		return TAP_R_FAIL;
	}
}

/*
 * Is @name named by $DQ_TAP_SKIP (shell patterns separated by blanks)?
 * The VM lane skips the embedded engine's cases ("*_user") on kernels
 * where they would only repeat the host's run: they never enter the
 * kernel.  @pat names the pattern that matched.
 */
static int tap_env_skips(const char *name, char *pat, size_t len)
{
	const char *env = getenv("DQ_TAP_SKIP"), *p = env;

	while (p && *p) {
		size_t n;

		p += strspn(p, " \t");
		n = strcspn(p, " \t");
		if (n && n < len) {
			memcpy(pat, p, n);
			pat[n] = '\0';
			if (!fnmatch(pat, name, 0))
				return 1;
		}
		p += n;
	}
	return 0;
}

static void tap_usage(const char *prog)
{
	printf("usage: %s [-l] [-t NAME]... [NAME]...\n"
	       "  -l        list the tests\n"
	       "  -t NAME   run only NAME (may be repeated; so may a bare NAME)\n"
	       "env: DQ_TIMEOUT_SCALE multiplies every test's timeout;\n"
	       "     DQ_TAP_SKIP: shell patterns of tests to skip, e.g. '*_user'\n",
	       prog);
}

/* SIGINT/SIGTERM to the runner: end the running test's group too. */
static void tap_on_signal(int sig)
{
	if (tap_cur_pgid > 0)
		kill(-(pid_t)tap_cur_pgid, SIGKILL);
	signal(sig, SIG_DFL);
	raise(sig);
}

int tap_main(int argc, char **argv)
{
	struct tap_case **cases;
	unsigned int i, n = 0, passed = 0, failed = 0, skipped = 0;
	int list = 0, nsel = 0;
	char **sel = calloc((size_t)argc + 1, sizeof(*sel));

	setvbuf(stdout, NULL, _IOLBF, 0);
	for (int a = 1; a < argc; a++) {
		if (!strcmp(argv[a], "-l")) {
			list = 1;
		} else if (!strcmp(argv[a], "-t") && a + 1 < argc) {
			sel[nsel++] = argv[++a];
		} else if (argv[a][0] != '-') {
			sel[nsel++] = argv[a];
		} else {
			tap_usage(argv[0]);
			return strcmp(argv[a], "-h") ? 2 : 0;
		}
	}

	cases = calloc(tap_ncases + 1, sizeof(*cases));
	for (struct tap_case *tc = tap_cases; tc; tc = tc->next) {
		int want = !nsel;

		for (int s = 0; s < nsel; s++)
			if (!strcmp(sel[s], tc->name))
				want = 1;
		if (want)
			cases[n++] = tc;
	}
	qsort(cases, n, sizeof(*cases), tap_cmp_line);

	if (list) {
		for (i = 0; i < n; i++)
			printf("%s\n", cases[i]->name);
		return 0;
	}
	if (nsel && (int)n != nsel) {
		fprintf(stderr, "%s: unknown test name given\n", argv[0]);
		return 2;
	}

	const char *prog = strrchr(argv[0], '/');

	signal(SIGINT, tap_on_signal);
	signal(SIGTERM, tap_on_signal);

	prog = prog ? prog + 1 : argv[0];
	printf("TAP version 13\n");
	printf("1..%u\n", n);
	for (i = 0; i < n; i++) {
		char reason[512], pat[128];
		uint64_t t0 = tap_mono_ms();

		if (tap_env_skips(cases[i]->name, pat, sizeof(pat))) {
			skipped++;
			printf("ok %u - %s # SKIP DQ_TAP_SKIP='%s'\n", i + 1,
			       cases[i]->name, pat);
			continue;
		}
		tap_diag("%s: %s", prog, cases[i]->name);
		enum tap_result r = tap_run_one(cases[i], reason, sizeof(reason));
		uint64_t ms = tap_mono_ms() - t0;

		switch (r) {
		case TAP_R_PASS:
			passed++;
			printf("ok %u - %s\n", i + 1, cases[i]->name);
			break;
		case TAP_R_SKIP:
			skipped++;
			printf("ok %u - %s # SKIP %s\n", i + 1, cases[i]->name,
			       reason[0] ? reason : "(no reason given)");
			break;
		case TAP_R_FAIL:
			failed++;
			printf("not ok %u - %s\n", i + 1, cases[i]->name);
			break;
		}
		if (ms >= 1000)
			tap_diag("%s took %.1f s", cases[i]->name, ms / 1000.0);
	}
	printf("%u passed, %u failed, %u skipped\n", passed, failed, skipped);
	fflush(stdout);
	free(cases);
	free(sel);
	return failed ? 1 : 0;
}
