/* SPDX-License-Identifier: LGPL-2.1 OR MIT */
/*
 * dqbridge: a Redis command in RESP (an array of bulk strings) written by
 * hand into a buffer the caller keeps, for redisAppendFormattedCommand().
 *
 * Why: hiredis's redisAppendCommandArgv() builds each command with an
 * sdscatfmt() per argument into a fresh buffer the size of the command,
 * and glibc pays a malloc_consolidate() for each such buffer over 1 KiB
 * after the frees of a read's reply objects: an XACK of a few dozen ids
 * cost ~1.7k instructions per id at 3000 msg/s (docs/dqbridge.md, Cost
 * lever 12).  The bytes are those of hiredis (resp_test compares them).
 */
#ifndef DQBRIDGE_RESP_H
#define DQBRIDGE_RESP_H

#include <stddef.h>
#include <sys/types.h>

/*
 * The command @head[0..nhead) followed by @tail[0..ntail) (NUL-terminated
 * strings) into *@buf, grown with realloc() when *@cap is short (both
 * NULL/0 at first; the caller frees *@buf).  Its length, or -ENOMEM (the
 * buffer as it was).
 */
ssize_t resp_command(char **buf, size_t *cap, const char *const *head,
		     unsigned int nhead, char *const *tail, unsigned int ntail);

#endif
