/* SPDX-License-Identifier: LGPL-2.1 OR MIT */
/* dqctl: values as people read them.  Each returns @buf. */
#ifndef DQCTL_FMT_H
#define DQCTL_FMT_H

#include <stddef.h>
#include <stdint.h>

const char *fmt_ns(char *buf, size_t len, uint64_t ns);	/* 1.5ms */
const char *fmt_bytes(char *buf, size_t len, uint64_t b);	/* 48.83 MiB */
const char *fmt_user(char *buf, size_t len, uint32_t uid);	/* name or uid */
const char *fmt_group(char *buf, size_t len, uint32_t gid);
/* A queue name fit for a terminal: control characters become '?'. */
const char *safe_name(char *buf, size_t len, const char *s);

#endif /* DQCTL_FMT_H */
