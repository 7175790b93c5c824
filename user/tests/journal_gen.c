// SPDX-License-Identifier: LGPL-2.1 OR MIT
/*
 * journal_gen: writes a journal directory (docs/journal.md) from a list
 * of steps, through dq_jformat.c's encoders, and damages it on request;
 * for dqctl_journal_test.sh, which checks what `dqctl journal` makes of
 * it.  Steps, in order:
 *
 *	seg N [JID]		start segment N (journal id JID, hex)
 *	commit ID PLEN [DUE_S [FLAGS]]
 *				a COMMIT: PLEN payload bytes, due at DUE_S s
 *				(CLOCK_REALTIME; default 1.7e9 + ID), FLAGS
 *				as dq_jformat.h's (default 0)
 *	retire ID...		one RETIRE of these ids (reason done)
 *	seal			a SEAL: the segment's record count so far
 *	pad BYTES		the segment's file is BYTES long (zeros after
 *				its records, as fallocate() leaves them)
 *	flip SEG OFF [MASK]	xor a byte of a written segment (default 1)
 *	truncate SEG SIZE	cut a written segment
 *	rm SEG			delete one
 *	foreign SEG		give it another journal id (valid header)
 *
 * A segment is written when the next one starts, before the first
 * damaging step and at the end.  Each record is printed as it is added:
 * "TYPE SEG OFF LEN ID", so a test can aim at it.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dq_jformat.h"

#define GEN_JID		0x00d0e1d0c0ffee01ULL

struct gen {
	int dirfd;
	uint8_t *b;
	size_t len, cap, pad;
	uint64_t seg, jid, last_id;
	uint32_t nrec;
	bool open;
};

static _Noreturn void die(const char *what)
{
	fprintf(stderr, "journal_gen: %s: %s\n", what, strerror(errno));
	exit(2);
}

static _Noreturn void usage(const char *why)
{
	fprintf(stderr, "journal_gen: %s\nusage: journal_gen DIR STEP...\n",
		why);
	exit(2);
}

static uint64_t num(const char *s, int base)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, base);
	if (!*s || *end || errno)
		usage("bad number");
	return v;
}

static uint8_t *room(struct gen *g, size_t n)
{
	if (!g->open)
		usage("a record before the first 'seg'");
	if (g->len + n > g->cap) {
		g->cap = (g->len + n) * 2;
		g->b = realloc(g->b, g->cap);
		if (!g->b)
			die("realloc");
	}
	memset(g->b + g->len, 0, n);
	return g->b + g->len;
}

static void added(struct gen *g, const char *type, uint32_t len, uint64_t id)
{
	printf("%s %" PRIu64 " %zu %u %" PRIu64 "\n", type, g->seg, g->len,
	       len, id);
	g->len += dqj_align(len);
	g->nrec++;
}

static void seg_write(struct gen *g)
{
	char name[32];
	int fd;

	if (!g->open)
		return;
	dqj_seg_name(name, g->seg);
	fd = openat(g->dirfd, name, O_WRONLY | O_CREAT | O_EXCL, 0644);
	if (fd < 0)
		die(name);
	if (pwrite(fd, g->b, g->len, 0) != (ssize_t)g->len ||
	    ftruncate(fd, (off_t)(g->pad > g->len ? g->pad : g->len)) ||
	    close(fd))
		die(name);
	g->open = false;
}

static void seg_start(struct gen *g, uint64_t seg, uint64_t jid)
{
	struct dqj_seg_hdr h = {
		.journal_id = jid, .segment_no = seg,
		.first_msg_id = g->last_id + 1,
		.created_ns = 1700000000000000000ULL + seg * 1000000000ULL,
		.slot_size = 4096, .queue_flags = DQJ_Q_F_KEYS,
	};

	seg_write(g);
	g->seg = seg;
	g->len = 0;
	g->pad = 0;
	g->nrec = 0;
	g->open = true;
	dqj_seg_hdr_encode(room(g, DQJ_HDR_SIZE), &h);
	g->len = DQJ_HDR_SIZE;
}

/* A written segment, open for damage. */
static int seg_open(struct gen *g, const char *arg, char *name)
{
	int fd;

	seg_write(g);
	dqj_seg_name(name, num(arg, 10));
	fd = openat(g->dirfd, name, O_RDWR);
	if (fd < 0)
		die(name);
	return fd;
}

int main(int argc, char **argv)
{
	struct gen g = { .jid = GEN_JID };
	char name[32];
	int i, fd;

	if (argc < 2)
		usage("no directory");
	if (mkdir(argv[1], 0755) && errno != EEXIST)
		die(argv[1]);
	g.dirfd = open(argv[1], O_RDONLY | O_DIRECTORY);
	if (g.dirfd < 0)
		die(argv[1]);
	for (i = 2; i < argc; i++) {
		const char *op = argv[i];
		char **a = argv + i + 1;
		int nargs = 0;

		/* A step's arguments: the numbers after it. */
		while (i + 1 + nargs < argc && a[nargs][0] >= '0' &&
		       a[nargs][0] <= '9')
			nargs++;
		i += nargs;
		if (!strcmp(op, "seg") && (nargs == 1 || nargs == 2)) {
			seg_start(&g, num(a[0], 10),
				  nargs == 2 ? num(a[1], 16) : g.jid);
		} else if (!strcmp(op, "commit") && nargs >= 2 && nargs <= 4) {
			uint64_t id = num(a[0], 10);
			uint32_t plen = (uint32_t)num(a[1], 10), j;
			int64_t due = nargs >= 3 ? (int64_t)num(a[2], 10) :
				      1700000000 + (int64_t)id;
			uint32_t flags = nargs == 4 ?
					 (uint32_t)num(a[3], 10) : 0;
			uint32_t bytes = dqj_commit_bytes(plen);
			uint8_t *p = room(&g, bytes);

			for (j = 0; j < plen; j++)
				p[DQJ_COMMIT_SIZE + j] = (uint8_t)(id + j);
			dqj_commit_encode(p, flags, id, id * 10,
					  due * 1000000000LL, 0,
					  p + DQJ_COMMIT_SIZE, plen);
			if (id > g.last_id)
				g.last_id = id;
			added(&g, "commit", DQJ_COMMIT_SIZE + plen, id);
		} else if (!strcmp(op, "retire") && nargs >= 1) {
			uint64_t e[64];
			int j;

			if (nargs > 64)
				usage("retire: at most 64 ids");
			for (j = 0; j < nargs; j++)
				e[j] = DQJ_RETIRE_ENTRY(num(a[j], 10),
							DQJ_RETIRE_DONE);
			dqj_retire_encode(room(&g, dqj_retire_bytes(nargs)), e,
					  (uint32_t)nargs);
			added(&g, "retire", dqj_retire_bytes(nargs),
			      DQJ_RETIRE_ID(e[0]));
		} else if (!strcmp(op, "seal") && !nargs) {
			dqj_seal_encode(room(&g, DQJ_SEAL_SIZE), g.nrec,
					g.last_id);
			added(&g, "seal", DQJ_SEAL_SIZE, g.last_id);
		} else if (!strcmp(op, "pad") && nargs == 1) {
			g.pad = num(a[0], 10);
		} else if (!strcmp(op, "flip") && (nargs == 2 || nargs == 3)) {
			off_t off = (off_t)num(a[1], 10);
			uint8_t c;

			fd = seg_open(&g, a[0], name);
			if (pread(fd, &c, 1, off) != 1)
				die("flip: pread");
			c ^= nargs == 3 ? (uint8_t)num(a[2], 0) : 1;
			if (pwrite(fd, &c, 1, off) != 1)
				die("flip: pwrite");
			close(fd);
		} else if (!strcmp(op, "truncate") && nargs == 2) {
			fd = seg_open(&g, a[0], name);
			if (ftruncate(fd, (off_t)num(a[1], 10)))
				die("truncate");
			close(fd);
		} else if (!strcmp(op, "rm") && nargs == 1) {
			seg_write(&g);
			dqj_seg_name(name, num(a[0], 10));
			if (unlinkat(g.dirfd, name, 0))
				die(name);
		} else if (!strcmp(op, "foreign") && nargs == 1) {
			uint8_t b[DQJ_HDR_SIZE];
			struct dqj_seg_hdr h;

			fd = seg_open(&g, a[0], name);
			if (pread(fd, b, sizeof(b), 0) != (ssize_t)sizeof(b) ||
			    dqj_seg_hdr_decode(b, &h))
				usage("foreign: not a good segment");
			h.journal_id ^= 0xff;
			dqj_seg_hdr_encode(b, &h);
			if (pwrite(fd, b, sizeof(b), 0) != (ssize_t)sizeof(b))
				die("foreign: pwrite");
			close(fd);
		} else {
			fprintf(stderr,
				"journal_gen: step '%s' with %d numbers\n",
				op, nargs);
			usage("unknown step");
		}
	}
	seg_write(&g);
	free(g.b);
	return 0;
}
