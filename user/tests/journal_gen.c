// SPDX-License-Identifier: LGPL-2.1 OR MIT
/*
 * journal_gen: writes a journal directory (docs/journal.md) from a list
 * of steps, through dq_jformat.c's encoders, and damages it on request;
 * for dqctl_journal_test.sh, which checks what `dqctl journal` makes of
 * it.  Steps, in order:
 *
 *	v1			the segments after it are format version 1
 *				(no salt, no sync marks), as dq 0.5 .. 0.8 wrote
 *	first N			the sync marks' first_segment (default: the
 *				first segment made)
 *	seg N [JID]		start segment N (journal id JID, hex); v2:
 *				salt 0x5a17... ^ N, records from 12288
 *	commit ID PLEN [DUE_S [FLAGS]]
 *				a COMMIT: PLEN payload bytes, due at DUE_S s
 *				(CLOCK_REALTIME; default 1.7e9 + ID), FLAGS
 *				as dq_jformat.h's (default 0)
 *	forge ID PLEN FID	a COMMIT ID whose payload (PLEN >= 112) holds
 *				two well-formed COMMITs of message FID at
 *				8-byte boundaries: one with a plain CRC32C
 *				(v1's checksum), one with this segment's salt
 *				but the offset of ID's record (a copy)
 *	retire ID...		one RETIRE of these ids (reason done)
 *	seal			a SEAL: the segment's record count so far
 *	sync			the segment's sync mark covers the records so
 *				far (default: all of them, when it is written)
 *	nomark			the segment gets no sync marks (both zero)
 *	pad BYTES		the segment's file is BYTES long (zeros after
 *				its records, as fallocate() leaves them)
 *	flip SEG OFF [MASK]	xor a byte of a written segment (default 1)
 *	truncate SEG SIZE	cut a written segment
 *	rm SEG			delete one
 *	foreign SEG		give it another journal id (valid header)
 *
 * A segment is written when the next one starts, before the first
 * damaging step and at the end; a v2 one with two sync marks, seq 1
 * (at 8192: durable_end 12288, as made) and seq 2 (at 4096: durable_end
 * the end of its records or the last `sync`, sealed if its last record
 * is a SEAL).  Each record is printed as it is added: "TYPE SEG OFF LEN
 * ID", so a test can aim at it.
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
	uint64_t first;		/* marks' first_segment; 0: not yet */
	uint64_t synced;	/* `sync`: durable_end; 0: the end */
	struct dqj_seg_hdr h;
	uint32_t nrec;
	uint32_t version;
	bool open, nomark, sealed;
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
	g->sealed = !strcmp(type, "seal");
}

static void seg_write(struct gen *g)
{
	char name[32];
	int fd;

	if (!g->open)
		return;
	if (g->h.version != DQJ_VERSION_1 && !g->nomark) {
		struct dqj_mark m = {
			.seq = 1, .durable_end = DQJ_V2_DATA,
			.first_segment = g->first,
		};

		dqj_mark_encode(g->b + dqj_mark_off(1), &g->h, &m);
		m.seq = 2;
		m.durable_end = g->synced ? g->synced : g->len;
		m.flags = g->sealed && !g->synced ? DQJ_MARK_F_SEALED : 0;
		dqj_mark_encode(g->b + dqj_mark_off(2), &g->h, &m);
	}
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
		.version = g->version,
		.salt = g->version == DQJ_VERSION_1 ? 0 :
			0x5a175a17c0ffee00ULL ^ seg,
		.journal_id = jid, .segment_no = seg,
		.first_msg_id = g->last_id + 1,
		.created_ns = 1700000000000000000ULL + seg * 1000000000ULL,
		.slot_size = 4096, .queue_flags = DQJ_Q_F_KEYS,
	};

	seg_write(g);
	if (!g->first)
		g->first = seg;
	g->seg = seg;
	g->len = 0;
	g->pad = 0;
	g->nrec = 0;
	g->synced = 0;
	g->nomark = false;
	g->sealed = false;
	g->open = true;
	g->h = h;
	(void)room(g, dqj_data_start(&h));
	dqj_seg_hdr_encode(g->b, &h);
	g->len = dqj_data_start(&h);
}

/* The checksum seed of a record at the segment's end. */
static uint32_t seed(const struct gen *g)
{
	return dqj_seed(&g->h, g->len);
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
	struct gen g = { .jid = GEN_JID, .version = DQJ_VERSION };
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
		if (!strcmp(op, "v1") && !nargs) {
			g.version = DQJ_VERSION_1;
		} else if (!strcmp(op, "first") && nargs == 1) {
			g.first = num(a[0], 10);
		} else if (!strcmp(op, "sync") && !nargs) {
			g.synced = g.len;
		} else if (!strcmp(op, "nomark") && !nargs) {
			g.nomark = true;
		} else if (!strcmp(op, "forge") && nargs == 3) {
			uint64_t id = num(a[0], 10), fid = num(a[2], 10);
			uint32_t plen = (uint32_t)num(a[1], 10);
			uint32_t fb = dqj_commit_bytes(8);
			uint8_t *p, *f, fp[8] = "FORGED!";

			if (plen < 2 * fb)
				usage("forge: PLEN < 112");
			p = room(&g, dqj_commit_bytes(plen));
			f = p + DQJ_COMMIT_SIZE;
			memcpy(f + DQJ_COMMIT_SIZE, fp, 8);
			dqj_commit_encode(f, 0, 0, fid, fid * 10,
					  1700000000LL * 1000000000LL, 0,
					  fp, 8);
			memcpy(f + fb + DQJ_COMMIT_SIZE, fp, 8);
			dqj_commit_encode(f + fb, seed(&g), 0, fid, fid * 10,
					  1700000000LL * 1000000000LL, 0,
					  fp, 8);
			dqj_commit_encode(p, seed(&g), 0, id, id * 10,
					  (1700000000LL + (int64_t)id) *
					  1000000000LL, 0, f, plen);
			if (id > g.last_id)
				g.last_id = id;
			added(&g, "commit", DQJ_COMMIT_SIZE + plen, id);
		} else if (!strcmp(op, "seg") && (nargs == 1 || nargs == 2)) {
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
			dqj_commit_encode(p, seed(&g), flags, id, id * 10,
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
			dqj_retire_encode(room(&g, dqj_retire_bytes(nargs)),
					  seed(&g), e, (uint32_t)nargs);
			added(&g, "retire", dqj_retire_bytes(nargs),
			      DQJ_RETIRE_ID(e[0]));
		} else if (!strcmp(op, "seal") && !nargs) {
			dqj_seal_encode(room(&g, DQJ_SEAL_SIZE), seed(&g),
					g.nrec, g.last_id);
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
