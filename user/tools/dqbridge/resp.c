// SPDX-License-Identifier: LGPL-2.1 OR MIT
/*
 * dqbridge: RESP commands by hand (resp.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "resp.h"

static size_t digits(size_t v)
{
	size_t n = 1;

	while (v >= 10) {
		v /= 10;
		n++;
	}
	return n;
}

/* @c, then the decimal of @v, then CR LF at @p: the bytes written. */
static size_t put_len(char *p, char c, size_t v)
{
	size_t n = digits(v), i;

	p[0] = c;
	for (i = n; i; i--) {
		p[i] = (char)('0' + v % 10);
		v /= 10;
	}
	p[n + 1] = '\r';
	p[n + 2] = '\n';
	return n + 3;
}

static size_t arg_bytes(size_t len)
{
	return 1 + digits(len) + 2 + len + 2;	/* $<len>\r\n<arg>\r\n */
}

static size_t put_arg(char *p, const char *a, size_t len)
{
	size_t k = put_len(p, '$', len);

	memcpy(p + k, a, len);
	k += len;
	p[k] = '\r';
	p[k + 1] = '\n';
	return k + 2;
}

ssize_t resp_command(char **buf, size_t *cap, const char *const *head,
		     unsigned int nhead, char *const *tail, unsigned int ntail)
{
	size_t argc = (size_t)nhead + ntail, need = 1 + digits(argc) + 2, k, i;
	char *p;

	for (i = 0; i < nhead; i++)
		need += arg_bytes(strlen(head[i]));
	for (i = 0; i < ntail; i++)
		need += arg_bytes(strlen(tail[i]));
	if (need > *cap) {
		size_t c = *cap ? *cap : 1024;

		while (c < need)
			c *= 2;
		p = realloc(*buf, c);
		if (!p)
			return -ENOMEM;
		*buf = p;
		*cap = c;
	}
	p = *buf;
	k = put_len(p, '*', argc);
	for (i = 0; i < nhead; i++)
		k += put_arg(p + k, head[i], strlen(head[i]));
	for (i = 0; i < ntail; i++)
		k += put_arg(p + k, tail[i], strlen(tail[i]));
	return (ssize_t)k;
}
