// SPDX-License-Identifier: LGPL-2.1 OR MIT
/*
 * What damage to a durable queue's journal costs (docs/journal.md,
 * "What damage costs"), through the public API on the user engine: a
 * journal is written by the library (or, for format version 1, by hand
 * from the documented layout), damaged as a disk or an operator would,
 * and opened again.  Every message that comes back must be one this
 * test committed, with its bytes; the ones that do not must be exactly
 * the ones the damage reached; an open that cannot know what is missing
 * must fail and leave the directory as it was.
 *
 *	a missing oldest or newest segment: -ENODATA, directory untouched
 *	a last segment cut in the middle of a record: the records before
 *	  the cut come back, the loss is reported (rec_lost_bytes)
 *	a flipped bit in one synced record in the middle of the last
 *	  segment: that message alone is lost
 *	a flipped CRC bit of a record whose payload holds well-formed
 *	  records (plain CRC32C): that message is lost, the embedded ones
 *	  never delivered
 *	segments a reclamation had deleted, back (its unlinks lost): the
 *	  open deletes them, nothing retired comes back
 *	a version 1 journal: recovered; a bad record ends its segment's
 *	  scan (the embedded records after it are not read); new records go
 *	  to a version 2 segment
 *
 * Records are found by their payload bytes (an id and a tag the test
 * wrote), never through the library's format code.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dqshim.h"
#include "tap.h"

#define MS		1000000ULL
#define SLOT_SIZE	512U
#define PLEN		300U	/* 348-byte records: ~3000 a segment */
#define NMSG		7000U	/* three segments of 1 MiB */
#define SEG_BYTES	(1ULL << 20)
#define REC_HDR		48U	/* a COMMIT's bytes before its payload */
#define FORGED_UD	0xf0f0f0f0ULL
#define TAG		"DQDAMAGE"

/* ---- the test's own record of what it committed ---------------------- */

/* Payload of message @id: id, tag, then id-dependent bytes. */
static void pay_fill(uint8_t *p, uint64_t id, uint32_t len)
{
	uint32_t i;

	memcpy(p, &id, 8);
	memcpy(p + 8, TAG, 8);
	for (i = 16; i < len; i++)
		p[i] = (uint8_t)(id * 131 + i * 7);
}

/* CRC32C, bitwise (the test's own, not the library's). */
static uint32_t crc32c(uint32_t crc, const uint8_t *p, size_t n)
{
	int k;

	crc = ~crc;
	while (n--) {
		crc ^= *p++;
		for (k = 0; k < 8; k++)
			crc = crc >> 1 ^ (0x82f63b78U & (0U - (crc & 1)));
	}
	return ~crc;
}

static void le16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static void le32(uint8_t *p, uint32_t v)
{
	le16(p, (uint16_t)v);
	le16(p + 2, (uint16_t)(v >> 16));
}

static void le64(uint8_t *p, uint64_t v)
{
	le32(p, (uint32_t)v);
	le32(p + 4, (uint32_t)(v >> 32));
}

/*
 * A COMMIT record as docs/journal.md lays it out, with a plain CRC32C
 * over bytes 4 .. len (format version 1's checksum), at @p; returns its
 * padded size.
 */
static uint32_t v1_commit(uint8_t *p, uint64_t msg_id, uint64_t ud,
			  int64_t due_rt, const uint8_t *payload, uint32_t n)
{
	uint32_t len = REC_HDR + n;

	memset(p, 0, (len + 7) & ~7U);
	le32(p + 4, len);
	le16(p + 8, 1);			/* COMMIT */
	le64(p + 16, msg_id);
	le64(p + 24, ud);
	le64(p + 32, (uint64_t)due_rt);
	le32(p + 40, n);
	memcpy(p + REC_HDR, payload, n);
	le32(p, crc32c(0, p + 4, len - 4));
	return (len + 7) & ~7U;
}

/*
 * A payload holding, at its start and 8-byte aligned in the file, two
 * well-formed COMMITs with plain CRCs: one of a message nobody committed
 * (user data FORGED_UD) and one reusing message id 1 (the journal's
 * first message) with other bytes.
 */
static void pay_forged(uint8_t *p, uint64_t id, uint32_t len)
{
	static const uint8_t bad[8] = "FORGED!";
	uint32_t n;

	pay_fill(p, id, len);
	n = v1_commit(p + 16, 0x7fff0001, FORGED_UD, 0, bad, 8);
	v1_commit(p + 16 + n, 1, 0, 0, bad, 8);
}

struct rec {
	bool forged;		/* its payload is pay_forged()'s */
	bool seen;
};

static bool pay_ok(const struct rec *r, uint64_t id, const uint8_t *p,
		   uint32_t len)
{
	uint8_t want[PLEN];

	if (len != PLEN)
		return false;
	if (r->forged)
		pay_forged(want, id, PLEN);
	else
		pay_fill(want, id, PLEN);
	return !memcmp(want, p, PLEN);
}

/* ---- the journal ----------------------------------------------------- */

struct jcase {
	char dir[128];
	struct rec *r;
	uint32_t n;
};

static void jc_init(struct jcase *c, uint32_t n)
{
	snprintf(c->dir, sizeof(c->dir), "/tmp/dq-damage-XXXXXX");
	REQUIRE(mkdtemp(c->dir) != NULL);
	strcat(c->dir, "/j");
	c->r = calloc(n, sizeof(*c->r));
	REQUIRE(c->r != NULL);
	c->n = n;
}

static void jc_clean(struct jcase *c)
{
	char cmd[300];

	free(c->r);
	if (tap_has_failed()) {
		DIAG("journal kept in %s", c->dir);
		return;
	}
	*strrchr(c->dir, '/') = 0;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", c->dir);
	if (system(cmd))
		DIAG("could not remove %s", c->dir);
}

static int jc_open(struct jcase *c, struct dqshim_queue **q)
{
	struct dq_journal_params jp;
	struct dq_params p;

	dq_params_init(&p);
	p.slot_count = 8192;
	p.slot_size = SLOT_SIZE;
	p.backend = DQ_BACKEND_USER;
	dq_journal_params_init(&jp, c->dir, DQ_DURABLE_BATCH);
	jp.segment_bytes = SEG_BYTES;
	jp.max_bytes = 64 * SEG_BYTES;
	*q = NULL;
	return dq_queue_open_durable(&p, &jp, q);
}

/*
 * Commit messages 0 .. n-1 (user data = index; @forged_every: every such
 * one's payload holds forged records), due at once; all made durable,
 * none taken: the clean close leaves all of them held.
 */
static void jc_write(struct jcase *c, uint32_t forged_every)
{
	struct dqshim_queue *q;
	uint64_t now;
	uint32_t i;

	REQUIRE_EQ(jc_open(c, &q), 0);
	now = dq_now_ns();
	for (i = 0; i < c->n; i++) {
		struct dqshim_msg m;
		int ret;

		REQUIRE_EQ(dq_reserve(q, &m), 0);
		c->r[i].forged = forged_every && i % forged_every == 1;
		if (c->r[i].forged)
			pay_forged(m.data, i, PLEN);
		else
			pay_fill(m.data, i, PLEN);
		while ((ret = dq_commit(q, &m, PLEN, now + MS, i)) == -EAGAIN)
			REQUIRE(dq_flush(q) >= 0);
		REQUIRE_EQ(ret, 0);
	}
	REQUIRE_EQ(dq_durable_wait(q, dq_journal_mark(q), 10000 * MS), 0);
	dq_queue_close(q);
}

/*
 * Open again and take everything that comes: each must be one this test
 * committed, once, with its bytes.  All are overdue, so the engine
 * releases them at once: taking stops when rec_recovered came and then
 * nothing more within 300 ms.  Returns how many came.
 */
static uint32_t jc_recover(struct jcase *c, struct dq_journal_stats *st)
{
	struct dqshim_queue *q;
	struct dq_reaped rp[64];
	uint32_t got = 0;
	uint64_t until;
	int k, i;

	REQUIRE_EQ(jc_open(c, &q), 0);
	REQUIRE_EQ(dq_journal_stats(q, st), 0);
	until = dq_now_ns() + 20000 * MS;
	for (;;) {
		bool all = got >= st->rec_recovered;

		k = dq_reap(q, rp, 64, all ? 300 * MS : 1000 * MS);
		if (k == -ETIME) {
			if (all || dq_now_ns() > until)
				break;
			continue;
		}
		REQUIRE(k > 0);
		for (i = 0; i < k; i++) {
			uint64_t id = rp[i].user_data;

			if (id >= c->n) {
				FAIL("a message nobody committed came back: "
				     "user data %#llx, %u bytes",
				     (unsigned long long)id, rp[i].len);
				continue;
			}
			CHECK(pay_ok(&c->r[id], id, rp[i].data, rp[i].len),
			      "message %llu came back with other bytes",
			      (unsigned long long)id);
			CHECK(!c->r[id].seen, "message %llu came back twice",
			      (unsigned long long)id);
			c->r[id].seen = true;
			got++;
			REQUIRE_EQ(dq_done(q, rp[i].slot), 0);
		}
	}
	dq_queue_close(q);
	return got;
}

/* ---- the files ------------------------------------------------------- */

/* The segment files' numbers, ascending (at most 64). */
static int segs_list(const char *dir, uint64_t *v)
{
	struct dirent *de;
	DIR *d = opendir(dir);
	int n = 0, i, j;

	REQUIRE(d != NULL);
	while ((de = readdir(d))) {
		unsigned long long no;
		char tail[8];

		if (sscanf(de->d_name, "%16llx.%7s", &no, tail) == 2 &&
		    !strcmp(tail, "dqj") && n < 64)
			v[n++] = no;
	}
	closedir(d);
	for (i = 1; i < n; i++)
		for (j = i; j > 0 && v[j - 1] > v[j]; j--) {
			uint64_t t = v[j];

			v[j] = v[j - 1];
			v[j - 1] = t;
		}
	return n;
}

static void seg_path(char *buf, size_t len, const char *dir, uint64_t no)
{
	snprintf(buf, len, "%s/%016llx.dqj", dir, (unsigned long long)no);
}

static uint8_t *file_read(const char *path, size_t *len)
{
	struct stat sb;
	uint8_t *b;
	int fd = open(path, O_RDONLY);

	REQUIRE(fd >= 0);
	REQUIRE(fstat(fd, &sb) == 0);
	*len = (size_t)sb.st_size;
	b = malloc(*len + 1);
	REQUIRE(b != NULL);
	REQUIRE(pread(fd, b, *len, 0) == (ssize_t)*len);
	close(fd);
	return b;
}

/* Every file of @dir: name, size and bytes, as one hash. */
static uint64_t dir_hash(const char *dir)
{
	char names[64][256], *path;
	struct dirent *de;
	uint64_t h = 1469598103934665603ULL;
	DIR *d = opendir(dir);
	int n = 0, i, j;

	REQUIRE(d != NULL);
	while ((de = readdir(d)))
		if (de->d_name[0] != '.' && n < 64)
			snprintf(names[n++], 256, "%s", de->d_name);
	closedir(d);
	for (i = 1; i < n; i++)
		for (j = i; j > 0 && strcmp(names[j - 1], names[j]) > 0; j--) {
			char t[256];

			memcpy(t, names[j], 256);
			memcpy(names[j], names[j - 1], 256);
			memcpy(names[j - 1], t, 256);
		}
	for (i = 0; i < n; i++) {
		int pn = asprintf(&path, "%s/%s", dir, names[i]);
		size_t len, k;
		uint8_t *b;

		REQUIRE(pn > 0);
		b = file_read(path, &len);
		free(path);
		for (k = 0; names[i][k]; k++)
			h = (h ^ (uint8_t)names[i][k]) * 1099511628211ULL;
		h = (h ^ len) * 1099511628211ULL;
		for (k = 0; k < len; k++)
			h = (h ^ b[k]) * 1099511628211ULL;
		free(b);
	}
	return h;
}

/*
 * Where message @id's record is: its segment and the offset of its
 * header (48 bytes before the payload the test wrote).  0: not found.
 */
static uint64_t rec_find(const char *dir, uint64_t id, uint64_t *seg)
{
	uint64_t v[64];
	uint8_t key[16];
	int n = segs_list(dir, v), i;

	memcpy(key, &id, 8);
	memcpy(key + 8, TAG, 8);
	for (i = 0; i < n; i++) {
		char path[300];
		size_t len;
		uint8_t *b, *p;

		seg_path(path, sizeof(path), dir, v[i]);
		b = file_read(path, &len);
		p = memmem(b, len, key, sizeof(key));
		if (p && (size_t)(p - b) >= REC_HDR) {
			uint64_t off = (uint64_t)(p - b) - REC_HDR;

			free(b);
			*seg = v[i];
			return off;
		}
		free(b);
	}
	return 0;
}

/* The lowest id of a message whose payload is in segment @seg. */
static uint64_t seg_first_id(const char *dir, uint64_t seg)
{
	uint64_t best = UINT64_MAX;
	char path[300];
	size_t len;
	uint8_t *b, *p;

	seg_path(path, sizeof(path), dir, seg);
	b = file_read(path, &len);
	for (p = b + 8; (p = memmem(p, len - (size_t)(p - b), TAG, 8));
	     p += 8) {
		uint64_t id;

		memcpy(&id, p - 8, 8);
		if (id < best)
			best = id;
	}
	free(b);
	return best;
}

static void flip(const char *dir, uint64_t seg, uint64_t off, uint8_t mask)
{
	char path[300];
	uint8_t c;
	int fd;

	seg_path(path, sizeof(path), dir, seg);
	fd = open(path, O_RDWR);
	REQUIRE(fd >= 0);
	REQUIRE(pread(fd, &c, 1, (off_t)off) == 1);
	c ^= mask;
	REQUIRE(pwrite(fd, &c, 1, (off_t)off) == 1);
	close(fd);
}

/* ---- the cases ------------------------------------------------------- */

/* A missing segment (@which: 0 oldest, 1 newest): -ENODATA, untouched. */
static void missing(int which)
{
	struct dqshim_queue *q;
	struct jcase c;
	char path[300];
	uint64_t v[64], h;
	int n;

	jc_init(&c, NMSG);
	jc_write(&c, 0);
	n = segs_list(c.dir, v);
	REQUIRE(n >= 3);
	/* The segment holds messages this test committed. */
	{
		uint64_t seg = 0;

		REQUIRE(rec_find(c.dir, which ? NMSG - 1 : 0, &seg) != 0);
		REQUIRE_EQ(seg, v[which ? n - 1 : 0]);
	}
	seg_path(path, sizeof(path), c.dir, v[which ? n - 1 : 0]);
	REQUIRE(unlink(path) == 0);
	h = dir_hash(c.dir);
	CHECK_EQ(jc_open(&c, &q), -ENODATA);
	CHECK(q == NULL);
	if (q)
		dq_queue_close(q);
	CHECK(dir_hash(c.dir) == h, "the refused open changed the directory");
	jc_clean(&c);
}

TEST(missing_oldest_segment)
{
	missing(0);
}

TEST(missing_newest_segment)
{
	missing(1);
}

/*
 * The last segment cut in the middle of a record: the messages before
 * the cut come back, none after it, and the loss of what was durable is
 * reported.
 */
TEST(truncated_last_segment)
{
	struct dq_journal_stats st = { .sz = sizeof(st) };
	struct jcase c;
	uint64_t seg, last, off, v[64];
	uint32_t i, k = 0, want = 0;
	char path[300];
	int n;

	jc_init(&c, NMSG);
	jc_write(&c, 0);
	n = segs_list(c.dir, v);
	last = v[n - 1];
	/* A message in the middle of the last segment's records. */
	k = (uint32_t)seg_first_id(c.dir, last);
	REQUIRE(k < NMSG - 100);
	k = k + (NMSG - k) / 2;
	off = rec_find(c.dir, k, &seg);
	REQUIRE_EQ(seg, last);
	seg_path(path, sizeof(path), c.dir, last);
	REQUIRE(truncate(path, (off_t)(off + 100)) == 0);

	CHECK_EQ(jc_recover(&c, &st), k);
	for (i = 0; i < NMSG; i++) {
		CHECK_EQ(c.r[i].seen, i < k);
		want += i < k;
	}
	CHECK(st.rec_lost_bytes > 0, "the cut-off durable records are not "
	      "reported (rec_lost_bytes 0)");
	DIAG("cut at %llu of segment %llu: %u back, %llu durable bytes lost",
	     (unsigned long long)(off + 100), (unsigned long long)last, want,
	     (unsigned long long)st.rec_lost_bytes);
	jc_clean(&c);
}

/*
 * One flipped payload bit in a synced record in the middle of the last
 * segment: that message is lost, every other one comes back.
 */
TEST(flipped_bit_last_segment)
{
	struct dq_journal_stats st = { .sz = sizeof(st) };
	struct jcase c;
	uint64_t seg, last, off, v[64];
	uint32_t i, k = 0;
	int n;

	jc_init(&c, NMSG);
	jc_write(&c, 0);
	n = segs_list(c.dir, v);
	last = v[n - 1];
	k = (uint32_t)seg_first_id(c.dir, last);
	REQUIRE(k < NMSG - 100);
	k = k + (NMSG - k) / 2;
	off = rec_find(c.dir, k, &seg);
	REQUIRE_EQ(seg, last);
	flip(c.dir, seg, off + REC_HDR + 100, 0x10);

	CHECK_EQ(jc_recover(&c, &st), NMSG - 1);
	for (i = 0; i < NMSG; i++)
		if (c.r[i].seen != (i != k))
			FAIL("message %u %s", i, i == k ? "came back" :
			     "did not come back");
	CHECK_EQ(st.rec_corrupt, 1);
	DIAG("message %u of %u flipped (%u in the last segment)", k, NMSG,
	     NMSG - k);
	jc_clean(&c);
}

/*
 * A record in a sealed segment whose payload holds well-formed records
 * with plain CRCs, its own CRC flipped: it is lost, the records inside
 * its payload are never taken for journal records (no stranger, no
 * message with other bytes).
 */
TEST(forged_records_in_payload)
{
	struct dq_journal_stats st = { .sz = sizeof(st) };
	struct jcase c;
	uint64_t seg, off, v[64];
	uint32_t i, k, lost = 0;
	int n;

	jc_init(&c, NMSG);
	jc_write(&c, 7);
	n = segs_list(c.dir, v);
	REQUIRE(n >= 2);
	/* A forged-payload message in the first (sealed) segment. */
	k = 7 * 40 + 1;
	REQUIRE(c.r[k].forged);
	off = rec_find(c.dir, k, &seg);
	REQUIRE_EQ(seg, v[0]);
	flip(c.dir, seg, off + 1, 0x04);	/* its CRC */

	jc_recover(&c, &st);
	for (i = 0; i < NMSG; i++)
		if (!c.r[i].seen) {
			lost++;
			CHECK_EQ(i, k);
		}
	CHECK_EQ(lost, 1);
	jc_clean(&c);
}

/*
 * A reclamation cut short: segments it had deleted are back (their
 * unlinks never reached the disk).  The journal's mark says it no longer
 * needs them: the open succeeds, deletes them, and nothing retired comes
 * back.
 */
TEST(reclaimed_segments_left_over)
{
	struct dq_journal_stats st = { .sz = sizeof(st) };
	struct dqshim_queue *q;
	struct jcase c;
	uint64_t v[64], old[2];
	uint8_t *keep[2];
	size_t klen[2];
	char path[300];
	int n, i, fd;

	jc_init(&c, NMSG);
	jc_write(&c, 0);
	n = segs_list(c.dir, v);
	REQUIRE(n >= 3);
	for (i = 0; i < 2; i++) {
		old[i] = v[i];
		seg_path(path, sizeof(path), c.dir, v[i]);
		keep[i] = file_read(path, &klen[i]);
	}
	/* Everything taken and done; the next open reclaims. */
	CHECK_EQ(jc_recover(&c, &st), NMSG);
	REQUIRE_EQ(jc_open(&c, &q), 0);
	dq_queue_close(q);
	n = segs_list(c.dir, v);
	REQUIRE(n >= 1 && v[0] > old[1]);
	for (i = 0; i < 2; i++) {
		seg_path(path, sizeof(path), c.dir, old[i]);
		fd = open(path, O_CREAT | O_WRONLY | O_EXCL, 0600);
		REQUIRE(fd >= 0);
		REQUIRE(write(fd, keep[i], klen[i]) == (ssize_t)klen[i]);
		close(fd);
		free(keep[i]);
	}
	memset(c.r, 0, NMSG * sizeof(*c.r));
	CHECK_EQ(jc_recover(&c, &st), 0);
	CHECK_EQ(st.rec_stale_segments, 2);
	n = segs_list(c.dir, v);
	CHECK(n >= 1 && v[0] > old[1], "the leftovers are still there");
	jc_clean(&c);
}

/* ---- format version 1 ------------------------------------------------ */

struct v1seg {
	uint8_t b[65536];
	uint32_t len, nrec;
	uint64_t last_id;
};

static void v1_start(struct v1seg *s, uint64_t no, uint64_t first_id)
{
	memset(s, 0, sizeof(*s));
	memcpy(s->b, "DQJRNL01", 8);
	le32(s->b + 8, 1);
	le64(s->b + 16, 0x0123456789abcdefULL);	/* journal_id */
	le64(s->b + 24, no);
	le64(s->b + 32, first_id);
	le64(s->b + 40, 1700000000000000000ULL);
	le32(s->b + 48, SLOT_SIZE);
	le32(s->b + 52, 0);
	le32(s->b + 12, crc32c(0, s->b, 64));
	s->len = 64;
}

static void v1_add(struct v1seg *s, struct jcase *c, uint64_t id)
{
	uint8_t p[PLEN];

	if (c->r[id].forged)
		pay_forged(p, id, PLEN);
	else
		pay_fill(p, id, PLEN);
	/* msg_id = user data + 1: the library's ids start at 1 */
	s->len += v1_commit(s->b + s->len, id + 1, id,
			    1700000000000000000LL, p, PLEN);
	s->nrec++;
	s->last_id = id + 1;
}

static void v1_put(struct v1seg *s, const char *dir, uint64_t no, bool seal)
{
	char path[300];
	int fd;

	if (seal) {
		uint8_t *p = s->b + s->len;

		le32(p + 4, 32);
		le16(p + 8, 3);
		le32(p + 12, s->nrec);
		le64(p + 16, s->last_id);
		le32(p, crc32c(0, p + 4, 28));
		s->len += 32;
	}
	seg_path(path, sizeof(path), dir, no);
	fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0600);
	REQUIRE(fd >= 0);
	REQUIRE(write(fd, s->b, sizeof(s->b)) == (ssize_t)sizeof(s->b));
	close(fd);
}

/*
 * A journal of the old format, two segments (messages 0..59 and 60..99),
 * message 20's payload holding forged records and its CRC flipped: 0..19
 * and 60..99 come back, 20..59 (the rest of its segment, not searched)
 * do not, nothing forged does; then the queue writes on in a v2 segment
 * and a second open finds the same messages.
 */
TEST(version1_journal)
{
	static struct v1seg s;
	struct dq_journal_stats st = { .sz = sizeof(st) };
	struct dqshim_queue *q;
	struct jcase c;
	uint32_t i;
	uint64_t v[64];
	size_t len;
	uint8_t *b;
	char path[300];
	int n;

	jc_init(&c, 100);
	REQUIRE(mkdir(c.dir, 0700) == 0);
	c.r[20].forged = true;
	c.r[70].forged = true;
	v1_start(&s, 1, 1);
	for (i = 0; i < 60; i++)
		v1_add(&s, &c, i);
	v1_put(&s, c.dir, 1, true);
	v1_start(&s, 2, 61);
	for (i = 60; i < 100; i++)
		v1_add(&s, &c, i);
	v1_put(&s, c.dir, 2, false);
	/* Clean first: all 100 come back. */
	CHECK_EQ(jc_recover(&c, &st), 100);
	for (i = 0; i < 100; i++)
		c.r[i].seen = false;

	/* Again from scratch, now damaged. */
	n = segs_list(c.dir, v);
	for (i = 0; i < (uint32_t)n; i++) {
		seg_path(path, sizeof(path), c.dir, v[i]);
		unlink(path);
	}
	v1_start(&s, 1, 1);
	for (i = 0; i < 60; i++)
		v1_add(&s, &c, i);
	v1_put(&s, c.dir, 1, true);
	v1_start(&s, 2, 61);
	for (i = 60; i < 100; i++)
		v1_add(&s, &c, i);
	v1_put(&s, c.dir, 2, false);
	{
		uint64_t seg, off = rec_find(c.dir, 20, &seg);

		REQUIRE_EQ(seg, 1);
		flip(c.dir, 1, off, 0x01);
	}
	CHECK_EQ(jc_recover(&c, &st), 60);
	for (i = 0; i < 100; i++)
		CHECK_EQ(c.r[i].seen, i < 20 || i >= 60);
	CHECK_EQ(st.rec_corrupt, 1);

	/*
	 * The old last segment was sealed; the queue wrote on in a v2 one,
	 * segment 3 (1 and 2 may be reclaimed: everything was done).
	 */
	n = segs_list(c.dir, v);
	REQUIRE(n >= 1);
	REQUIRE_EQ(v[n - 1], 3);
	seg_path(path, sizeof(path), c.dir, v[n - 1]);
	b = file_read(path, &len);
	CHECK(len >= 64 && b[8] == 2, "the new segment is not version 2");
	free(b);
	/* Everything was taken and done: nothing comes back now. */
	REQUIRE_EQ(jc_open(&c, &q), 0);
	REQUIRE_EQ(dq_journal_stats(q, &st), 0);
	CHECK_EQ(st.rec_recovered, 0);
	dq_queue_close(q);
	jc_clean(&c);
}

TAP_MAIN()
