// SPDX-License-Identifier: LGPL-2.1 OR MIT
/*
 * resp.c against hiredis: the XACK commands the bridge writes by hand
 * (Cost lever 12) must be, byte for byte, what redisFormatCommandArgv()
 * makes of the same arguments: stream ids, empty and long arguments, 1 to
 * 300 ids, the buffer grown from nothing and reused smaller.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "resp.h"

static int n_ok, n_fail;

static void __attribute__((format(printf, 2, 3))) ok(int cond, const char *fmt, ...)
{
	va_list ap;

	printf("%s %d - ", cond ? "ok" : "not ok", n_ok + n_fail + 1);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	if (cond)
		n_ok++;
	else
		n_fail++;
}

/* Does resp_command() write what hiredis does for head + tail? */
static int same(char **buf, size_t *cap, const char *const *head, unsigned int nh,
		char *const *tail, unsigned int nt)
{
	const char *argv[400];
	char *want = NULL;
	long long wl;
	ssize_t got;
	unsigned int i;
	int r;

	for (i = 0; i < nh; i++)
		argv[i] = head[i];
	for (i = 0; i < nt; i++)
		argv[nh + i] = tail[i];
	wl = redisFormatCommandArgv(&want, (int)(nh + nt), argv, NULL);
	got = resp_command(buf, cap, head, nh, tail, nt);
	r = wl > 0 && got == wl && *cap >= (size_t)got && !memcmp(*buf, want, (size_t)wl);
	if (!r)
		fprintf(stderr, "# want %lld bytes, got %zd\n", wl, got);
	redisFreeCommand(want);
	return r;
}

int main(void)
{
	const char *head[3] = { "XACK", "in", "bridge" };
	static char idv[300][40];
	char *ids[300], *buf = NULL, *big;
	size_t cap = 0;
	unsigned int i, n, good = 0, all = 0;
	unsigned long long x = 88172645463325252ULL;

	for (i = 0; i < 300; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		snprintf(idv[i], sizeof(idv[i]), "%llu-%u", x % 10000000000000ULL, i % 7 ? i : 0);
		ids[i] = idv[i];
	}
	for (n = 1; n <= 300; n += n < 40 ? 1 : 37) {
		good += same(&buf, &cap, head, 3, ids, n);
		all++;
	}
	ok(good == all, "XACK of 1..300 ids as hiredis writes it: %u of %u", good, all);
	ok(same(&buf, &cap, head, 3, ids, 2), "a short one after a long one, the buffer reused");
	{
		const char *h2[3] = { "", "a", "XACK" };
		char *t2[2] = { (char *)"", (char *)"0" };

		ok(same(&buf, &cap, h2, 3, t2, 2), "empty arguments");
	}
	big = malloc(100001);
	if (!big)
		return 1;
	memset(big, 'k', 100000);
	big[100000] = '\0';
	ids[0] = big;
	ok(same(&buf, &cap, head, 3, ids, 3), "an argument of 100000 bytes (the buffer grows)");
	ok(same(&buf, &cap, head, 0, ids + 1, 1), "no head");
	free(big);
	free(buf);
	printf("1..%d\n%d passed, %d failed\n", n_ok + n_fail, n_ok, n_fail);
	return n_fail ? 1 : 0;
}
