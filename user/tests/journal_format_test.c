// SPDX-License-Identifier: LGPL-2.1 OR MIT
/*
 * The journal's on-disk format (src/dq_jformat.c, docs/journal.md) on
 * the host, without a queue: CRC32C against RFC 3720's vectors, encode
 * and decode of the segment header and of every record type, that a
 * single flipped bit anywhere in a record is refused, and the scan of a
 * segment: a tail torn at every byte, a bad record in a sealed segment
 * skipped with the ones after it found, a preallocated zero tail, a SEAL
 * whose count is off, records longer than the scan's read chunk; and the
 * directory listing: gaps, foreign and damaged segments, other files.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dq_jformat.h"
#include "tap.h"

#define JID	0x1234567890abcdefULL

/* ---- a segment image in memory --------------------------------------- */

struct img {
	struct dqj_seg_hdr h;	/* v2 unless img_init_v() said 1 */
	uint8_t *b;
	size_t len, cap;
	uint64_t off[64];	/* each record's offset */
	uint32_t rlen[64];	/* and its len */
	int n;
};

static void img_grow(struct img *im, size_t n)
{
	if (im->len + n <= im->cap)
		return;
	im->cap = (im->len + n) * 2;
	im->b = realloc(im->b, im->cap);
	REQUIRE(im->b != NULL);
}

/* A segment without sync marks (both all zero: never written). */
static void img_init_v(struct img *im, uint64_t seg, uint64_t jid,
		       uint32_t version)
{
	struct dqj_seg_hdr h = {
		.version = version, .salt = 0x5a175a17c0ffeeULL ^ seg,
		.journal_id = jid, .segment_no = seg, .first_msg_id = seg * 100,
		.created_ns = 1700000000000000000ULL, .slot_size = 4096,
		.queue_flags = DQJ_Q_F_KEYS,
	};

	memset(im, 0, sizeof(*im));
	im->h = h;
	if (version == DQJ_VERSION_1)
		im->h.salt = 0;
	img_grow(im, DQJ_V2_DATA);
	memset(im->b, 0, DQJ_V2_DATA);
	dqj_seg_hdr_encode(im->b, &im->h);
	REQUIRE(dqj_seg_hdr_decode(im->b, &im->h) == 0);
	im->len = dqj_data_start(&im->h);
}

static void img_init(struct img *im, uint64_t seg, uint64_t jid)
{
	img_init_v(im, seg, jid, DQJ_VERSION);
}

/* The record seed at the image's end. */
static uint32_t img_seed(const struct img *im)
{
	return dqj_seed(&im->h, im->len);
}

/* Sync mark @seq of the image: durable up to @end. */
static void img_put_mark(struct img *im, uint64_t seq, uint64_t end,
			 uint64_t first, uint32_t flags)
{
	struct dqj_mark m = {
		.flags = flags, .seq = seq, .durable_end = end,
		.first_segment = first,
	};

	dqj_mark_encode(im->b + dqj_mark_off(seq), &im->h, &m);
}

static void img_mark(struct img *im, uint32_t len)
{
	REQUIRE(im->n < 64);
	im->off[im->n] = im->len;
	im->rlen[im->n++] = len;
}

/* A payload that differs per message and per byte. */
static void fill(uint8_t *p, uint32_t n, uint64_t seed)
{
	uint32_t i;

	for (i = 0; i < n; i++)
		p[i] = (uint8_t)(seed * 31 + i * 7 + (i >> 8));
}

static void img_commit(struct img *im, uint64_t msg_id, uint32_t plen)
{
	uint32_t bytes = dqj_commit_bytes(plen);
	uint8_t *p;

	img_grow(im, bytes);
	p = im->b + im->len;
	memset(p, 0, bytes);
	fill(p + DQJ_COMMIT_SIZE, plen, msg_id);
	dqj_commit_encode(p, img_seed(im), DQJ_COMMIT_F_KEY, msg_id,
			  msg_id + 1000,
			  (int64_t)msg_id * 1000000, 1, p + DQJ_COMMIT_SIZE,
			  plen);
	img_mark(im, DQJ_COMMIT_SIZE + plen);
	im->len += bytes;
}

static void img_retire(struct img *im, uint64_t first, uint32_t count)
{
	uint64_t e[16];
	uint32_t i;

	REQUIRE(count <= 16);
	for (i = 0; i < count; i++)
		e[i] = DQJ_RETIRE_ENTRY(first + i, DQJ_RETIRE_DONE);
	img_grow(im, dqj_retire_bytes(count));
	dqj_retire_encode(im->b + im->len, img_seed(im), e, count);
	img_mark(im, dqj_retire_bytes(count));
	im->len += dqj_retire_bytes(count);
}

static void img_seal(struct img *im, uint32_t records, uint64_t last)
{
	img_grow(im, DQJ_SEAL_SIZE);
	dqj_seal_encode(im->b + im->len, img_seed(im), records, last);
	img_mark(im, DQJ_SEAL_SIZE);
	im->len += DQJ_SEAL_SIZE;
}

/* The end of the last nonzero byte of @im in [from, len). */
static uint64_t img_nz_end(const struct img *im, uint64_t from, uint64_t len)
{
	while (len > from && !im->b[len - 1])
		len--;
	return len;
}

/* ---- files ----------------------------------------------------------- */

static char tmpdir[64];

static int tmp_dir(void)
{
	int fd;

	snprintf(tmpdir, sizeof(tmpdir), "/tmp/dqj-test.XXXXXX");
	REQUIRE(mkdtemp(tmpdir) != NULL);
	fd = open(tmpdir, O_RDONLY | O_DIRECTORY);
	REQUIRE(fd >= 0);
	return fd;
}

static void tmp_dir_rm(int dirfd)
{
	DIR *d = fdopendir(dirfd);
	struct dirent *de;

	REQUIRE(d != NULL);
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			unlinkat(dirfd, de->d_name, 0);
	closedir(d);
	rmdir(tmpdir);
}

/* Write @len bytes of @b as @name in @dirfd, the file @size bytes long. */
static void put_file(int dirfd, const char *name, const void *b, size_t len,
		     size_t size)
{
	int fd = openat(dirfd, name, O_RDWR | O_CREAT | O_TRUNC, 0644);

	REQUIRE(fd >= 0);
	REQUIRE(pwrite(fd, b, len, 0) == (ssize_t)len);
	REQUIRE(ftruncate(fd, (off_t)size) == 0);
	close(fd);
}

static void put_seg(int dirfd, uint64_t seg, const struct img *im)
{
	char name[32];

	dqj_seg_name(name, seg);
	put_file(dirfd, name, im->b, im->len, im->len);
}

/* ---- scanning -------------------------------------------------------- */

struct ev {
	enum dqj_event_kind kind;
	uint64_t off, len;
	uint32_t type, count, payload_len;
	uint64_t msg_id;
	bool payload_ok;
};

struct log {
	struct ev ev[128];
	int n;
	int stop_at;	/* return 42 at this event (1-based), 0: never */
};

static int log_fn(void *arg, const struct dqj_event *e)
{
	struct log *l = arg;
	struct ev *v;

	REQUIRE(l->n < 128);
	v = &l->ev[l->n++];
	memset(v, 0, sizeof(*v));
	v->kind = e->kind;
	v->off = e->off;
	v->len = e->len;
	if (e->rec) {
		v->type = e->rec->type;
		v->count = e->rec->count;
		v->msg_id = e->rec->msg_id;
		v->payload_len = e->rec->payload_len;
		if (e->rec->type == DQJ_REC_COMMIT) {
			uint8_t *want = malloc(e->rec->payload_len + 1);

			fill(want, e->rec->payload_len, e->rec->msg_id);
			v->payload_ok = !memcmp(want, e->rec->payload,
						e->rec->payload_len);
			free(want);
		}
	}
	if (e->kind == DQJ_EV_SEGMENT)
		CHECK(e->hdr && e->hdr->journal_id == JID);
	return l->n == l->stop_at ? 42 : 0;
}

/* Scan the file @name of @dirfd; the events in @l. */
static int scan_file(int dirfd, const char *name, bool last, struct log *l,
		     uint64_t *end)
{
	struct stat st;
	int fd, ret;

	memset(l, 0, sizeof(*l));
	fd = openat(dirfd, name, O_RDONLY);
	REQUIRE(fd >= 0);
	REQUIRE(fstat(fd, &st) == 0);
	ret = dqj_seg_scan(fd, 1, (uint64_t)st.st_size, last, log_fn, l, end);
	close(fd);
	return ret;
}

/* Records 0 .. @n - 1 of @im are events 1 .. @n of @l (0 the header). */
static void check_records(const struct img *im, const struct log *l, int n)
{
	int i;

	REQUIRE(l->n >= n + 1);
	CHECK_EQ(l->ev[0].kind, DQJ_EV_SEGMENT);
	for (i = 0; i < n; i++) {
		const struct ev *v = &l->ev[i + 1];

		CHECK_EQ(v->kind, DQJ_EV_RECORD);
		CHECK_EQ(v->off, im->off[i]);
		CHECK_EQ(v->len, im->rlen[i]);
		if (v->type == DQJ_REC_COMMIT)
			CHECK(v->payload_ok, "record %d", i);
	}
}

/* ======================================================================= */

TEST(crc32c_vectors)
{
	static const uint8_t digits[] = "123456789";
	uint8_t b[32], big[5000];
	uint32_t crc;
	size_t i, j;

	memset(b, 0, 32);
	CHECK_EQ(dqj_crc32c(b, 32), 0x8a9136aaU);
	memset(b, 0xff, 32);
	CHECK_EQ(dqj_crc32c(b, 32), 0x62a8ab43U);
	for (i = 0; i < 32; i++)
		b[i] = (uint8_t)i;
	CHECK_EQ(dqj_crc32c(b, 32), 0x46dd794eU);
	for (i = 0; i < 32; i++)
		b[i] = (uint8_t)(31 - i);
	CHECK_EQ(dqj_crc32c(b, 32), 0x113fdb5cU);
	CHECK_EQ(dqj_crc32c(digits, 9), 0xe3069283U);
	CHECK_EQ(dqj_crc32c(digits, 0), 0U);

	/* Pieces give the one-shot value, wherever they are cut. */
	fill(big, sizeof(big), 7);
	crc = dqj_crc32c(big, sizeof(big));
	for (i = 0; i <= 64; i++) {
		for (j = i; j <= 64; j += 5) {
			uint32_t c = dqj_crc32c_update(0, big, i);

			c = dqj_crc32c_update(c, big + i, j - i);
			c = dqj_crc32c_update(c, big + j, sizeof(big) - j);
			CHECK_EQ(c, crc);
		}
	}
	crc = dqj_crc32c(digits, 4);
	CHECK_EQ(dqj_crc32c_update(crc, digits + 4, 5), 0xe3069283U);
}

TEST(seg_hdr_round_trip)
{
	struct dqj_seg_hdr h = {
		.version = DQJ_VERSION, .salt = 0x5a175a17c0ffee01ULL,
		.journal_id = JID, .segment_no = 0x0102030405060708ULL,
		.first_msg_id = 77, .created_ns = 1700000000123456789ULL,
		.slot_size = 65536, .queue_flags = DQJ_Q_F_KEYS | DQJ_Q_F_TRACK,
	}, d;
	uint8_t b[DQJ_HDR_SIZE], c[DQJ_HDR_SIZE];
	unsigned int bit, bad = 0;

	dqj_seg_hdr_encode(b, &h);
	/* The layout of docs/journal.md, byte for byte where it matters. */
	CHECK(!memcmp(b, "DQJRNL01", 8));
	CHECK_EQ(b[8], 2);
	CHECK_EQ(b[16], 0xef);			/* journal_id, LE */
	CHECK_EQ(b[24], 0x08);			/* segment_no, LE */
	CHECK_EQ(b[31], 0x01);
	CHECK_EQ(b[32], 77);
	CHECK_EQ(dqj_le64(b + 40), h.created_ns);
	CHECK_EQ(b[50], 1);			/* slot_size 65536 */
	CHECK_EQ(b[52], 3);
	CHECK_EQ(dqj_le64(b + 56), h.salt);

	memset(&d, 0xa5, sizeof(d));
	REQUIRE_EQ(dqj_seg_hdr_decode(b, &d), 0);
	CHECK_EQ(d.version, DQJ_VERSION);
	CHECK_EQ(d.salt, h.salt);
	CHECK_EQ(d.journal_id, h.journal_id);
	CHECK_EQ(d.segment_no, h.segment_no);
	CHECK_EQ(d.first_msg_id, h.first_msg_id);
	CHECK_EQ(d.created_ns, h.created_ns);
	CHECK_EQ(d.slot_size, h.slot_size);
	CHECK_EQ(d.queue_flags, h.queue_flags);

	/* Every single bit flip is refused. */
	for (bit = 0; bit < DQJ_HDR_SIZE * 8; bit++) {
		memcpy(c, b, sizeof(c));
		c[bit / 8] ^= (uint8_t)(1U << (bit % 8));
		if (dqj_seg_hdr_decode(c, &d) != -EBADMSG)
			bad++;
	}
	CHECK_EQ(bad, 0U);

	/* A good CRC does not make a wrong version or v1 resv good. */
	memcpy(c, b, sizeof(c));
	c[8] = 3;
	memset(c + 12, 0, 4);
	bit = dqj_crc32c(c, sizeof(c));
	memcpy(c + 12, &bit, 4);
	CHECK_EQ(dqj_seg_hdr_decode(c, &d), -EBADMSG);
	h.version = DQJ_VERSION_1;
	dqj_seg_hdr_encode(b, &h);
	CHECK_EQ(b[8], 1);
	CHECK_EQ(dqj_le64(b + 56), 0ULL);	/* v1: no salt */
	REQUIRE_EQ(dqj_seg_hdr_decode(b, &d), 0);
	CHECK_EQ(d.version, DQJ_VERSION_1);
	memcpy(c, b, sizeof(c));
	c[63] = 1;
	memset(c + 12, 0, 4);
	bit = dqj_crc32c(c, sizeof(c));
	memcpy(c + 12, &bit, 4);
	CHECK_EQ(dqj_seg_hdr_decode(c, &d), -EBADMSG);
	c[63] = 0;
	/* The CRC of resv 1 */
	CHECK_EQ(dqj_seg_hdr_decode(c, &d), -EBADMSG);
}

static void commit_round_trip(uint32_t plen)
{
	uint32_t bytes = dqj_commit_bytes(plen);
	uint8_t *b = calloc(1, bytes + 8);
	struct dqj_rec r;

	REQUIRE(b != NULL);
	CHECK_EQ(bytes % 8, 0U);
	CHECK(bytes >= DQJ_COMMIT_SIZE + plen &&
	      bytes < DQJ_COMMIT_SIZE + plen + 8);
	fill(b + DQJ_COMMIT_SIZE, plen, plen);
	dqj_commit_encode(b, 0, DQJ_COMMIT_F_KEY | DQJ_COMMIT_F_RELOC,
			  0x1122334455667788ULL, 0xdeadbeefULL, -5, 9,
			  b + DQJ_COMMIT_SIZE, plen);
	CHECK_EQ(dqj_le64(b + 4) & 0xffffffffU, DQJ_COMMIT_SIZE + plen);
	CHECK_EQ(b[8], DQJ_REC_COMMIT);
	CHECK_EQ(b[10], DQJ_COMMIT_F_KEY | DQJ_COMMIT_F_RELOC);
	CHECK_EQ(b[16], 0x88);
	CHECK_EQ(dqj_le64(b + 24), 0xdeadbeefULL);
	CHECK_EQ(dqj_le64(b + 32), (uint64_t)-5);
	CHECK_EQ(b[44], 9);

	REQUIRE_EQ(dqj_rec_decode(b, bytes, 0, &r), 0);
	CHECK_EQ(r.type, DQJ_REC_COMMIT);
	CHECK_EQ(r.flags, DQJ_COMMIT_F_KEY | DQJ_COMMIT_F_RELOC);
	CHECK_EQ(r.len, DQJ_COMMIT_SIZE + plen);
	CHECK_EQ(r.count, 0U);
	CHECK_EQ(r.msg_id, 0x1122334455667788ULL);
	CHECK_EQ(r.user_data, 0xdeadbeefULL);
	CHECK_EQ(r.due_rt_ns, -5);
	CHECK_EQ(r.attempts, 9);
	CHECK_EQ(r.payload_len, plen);
	CHECK(r.payload == b + DQJ_COMMIT_SIZE);
	/* Exactly len readable is enough; one byte less is not. */
	CHECK_EQ(dqj_rec_decode(b, DQJ_COMMIT_SIZE + plen, 0, &r), 0);
	CHECK_EQ(dqj_rec_decode(b, DQJ_COMMIT_SIZE + plen - 1, 0, &r), -EBADMSG);
	free(b);
}

TEST(commit_round_trip)
{
	static const uint32_t sizes[] = { 0, 1, 7, 8, 500, 65536 };
	size_t i;

	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		DIAG("payload %u", sizes[i]);
		commit_round_trip(sizes[i]);
	}
}

TEST(retire_seal_round_trip)
{
	uint64_t e[3] = {
		DQJ_RETIRE_ENTRY(5, DQJ_RETIRE_DONE),
		DQJ_RETIRE_ENTRY(DQJ_RETIRE_ID_MASK, DQJ_RETIRE_REJECTED),
		DQJ_RETIRE_ENTRY(1, DQJ_RETIRE_REPLACED),
	};
	uint8_t b[64];
	struct dqj_rec r;

	CHECK_EQ(dqj_retire_bytes(3), 40U);
	dqj_retire_encode(b, 0, e, 3);
	REQUIRE_EQ(dqj_rec_decode(b, sizeof(b), 0, &r), 0);
	CHECK_EQ(r.type, DQJ_REC_RETIRE);
	CHECK_EQ(r.len, 40U);
	CHECK_EQ(r.count, 3U);
	CHECK_EQ(r.flags, 0U);
	CHECK(r.entries == b + 16);
	CHECK_EQ(DQJ_RETIRE_ID(dqj_le64(b + 16)), 5ULL);
	CHECK_EQ(DQJ_RETIRE_REASON(dqj_le64(b + 16)), DQJ_RETIRE_DONE);
	CHECK_EQ(DQJ_RETIRE_ID(dqj_le64(b + 24)), DQJ_RETIRE_ID_MASK);
	CHECK_EQ(DQJ_RETIRE_REASON(dqj_le64(b + 24)), DQJ_RETIRE_REJECTED);
	CHECK_EQ(b[31], DQJ_RETIRE_REJECTED);	/* the reason: top byte */
	CHECK_EQ(DQJ_RETIRE_REASON(dqj_le64(b + 32)), DQJ_RETIRE_REPLACED);

	dqj_retire_encode(b, 0, e, 0);
	REQUIRE_EQ(dqj_rec_decode(b, 16, 0, &r), 0);
	CHECK_EQ(r.count, 0U);

	dqj_seal_encode(b, 0, 17, 0xabcdef);
	REQUIRE_EQ(dqj_rec_decode(b, DQJ_SEAL_SIZE, 0, &r), 0);
	CHECK_EQ(r.type, DQJ_REC_SEAL);
	CHECK_EQ(r.len, DQJ_SEAL_SIZE);
	CHECK_EQ(r.count, 17U);
	CHECK_EQ(r.last_msg_id, 0xabcdefULL);
	CHECK_EQ(dqj_le64(b + 24), 0ULL);
}

TEST(commit_every_bit_flip)
{
	uint8_t b[64], c[64], payload[5] = { 1, 2, 3, 4, 5 };
	uint32_t len = DQJ_COMMIT_SIZE + 5, bit;
	unsigned int bad = 0;
	struct dqj_rec r;

	memset(b, 0, sizeof(b));
	memcpy(b + DQJ_COMMIT_SIZE, payload, 5);
	dqj_commit_encode(b, 0, DQJ_COMMIT_F_KEY, 42, 7, 1000, 0, payload, 5);
	REQUIRE_EQ(dqj_rec_decode(b, dqj_commit_bytes(5), 0, &r), 0);
	for (bit = 0; bit < len * 8; bit++) {
		int ret;

		memcpy(c, b, sizeof(c));
		c[bit / 8] ^= (uint8_t)(1U << (bit % 8));
		ret = dqj_rec_decode(c, dqj_commit_bytes(5), 0, &r);
		if (ret != -EBADMSG) {
			DIAG("bit %u: %d", bit, ret);
			bad++;
		}
	}
	CHECK_EQ(bad, 0U);
}

/* A record with a good CRC but an impossible shape. */
static int reshaped(uint8_t *b, size_t avail, unsigned int off, uint32_t v,
		    unsigned int width)
{
	struct dqj_rec r;
	uint32_t len;

	if (width == 2) {
		b[off] = (uint8_t)v;
		b[off + 1] = (uint8_t)(v >> 8);
	} else {
		unsigned int i;

		for (i = 0; i < 4; i++)
			b[off + i] = (uint8_t)(v >> (8 * i));
	}
	len = (uint32_t)(dqj_le64(b) >> 32);
	if (len >= 4 && len <= avail) {
		uint32_t crc = dqj_crc32c(b + 4, len - 4);

		memcpy(b, &crc, 4);
	}
	return dqj_rec_decode(b, avail, 0, &r);
}

TEST(decode_rejects_shapes)
{
	uint8_t b[128];
	uint64_t e = 1;
	struct dqj_rec r;

#define COMMIT() (memset(b, 0, sizeof(b)), \
		  dqj_commit_encode(b, 0, 0, 1, 0, 0, 0, b + 48, 8))
	COMMIT();
	REQUIRE_EQ(dqj_rec_decode(b, 56, 0, &r), 0);
	CHECK_EQ(reshaped(b, 56, 8, 4, 2), -EBADMSG);	/* type 4 */
	COMMIT();
	CHECK_EQ(reshaped(b, 56, 8, 0, 2), -EBADMSG);	/* type 0 */
	COMMIT();
	CHECK_EQ(reshaped(b, 56, 10, 8, 2), -EBADMSG);	/* unknown flag */
	COMMIT();
	CHECK_EQ(reshaped(b, 56, 12, 1, 4), -EBADMSG);	/* a count */
	COMMIT();
	CHECK_EQ(reshaped(b, 56, 40, 9, 4), -EBADMSG);	/* payload_len */
	COMMIT();
	CHECK_EQ(reshaped(b, 56, 46, 1, 2), -EBADMSG);	/* resv */
	COMMIT();
	CHECK_EQ(reshaped(b, 56, 4, 15, 4), -EBADMSG);	/* len < 16 */
	COMMIT();
	CHECK_EQ(reshaped(b, 56, 4, 57, 4), -EBADMSG);	/* len > avail */
	COMMIT();
	CHECK_EQ(reshaped(b, 56, 4, 0, 4), -ENODATA);	/* the end */
	CHECK_EQ(dqj_rec_decode(b, 4, 0, &r), -EBADMSG);	/* no len */
#undef COMMIT

	dqj_retire_encode(b, 0, &e, 1);
	CHECK_EQ(reshaped(b, 64, 12, 2, 4), -EBADMSG);	/* count != len */
	dqj_retire_encode(b, 0, &e, 1);
	CHECK_EQ(reshaped(b, 64, 10, 1, 2), -EBADMSG);	/* flags */
	dqj_seal_encode(b, 0, 1, 1);
	CHECK_EQ(reshaped(b, 64, 4, 40, 4), -EBADMSG);	/* seal of 40 */
	dqj_seal_encode(b, 0, 1, 1);
	CHECK_EQ(reshaped(b, 64, 24, 1, 4), -EBADMSG);	/* seal resv */
	dqj_seal_encode(b, 0, 1, 1);
	CHECK_EQ(reshaped(b, 64, 10, 1, 2), -EBADMSG);	/* flags */
}

/* A segment: 5 commits of assorted sizes, a retire, more commits. */
static void build(struct img *im)
{
	static const uint32_t plen[] = { 0, 1, 7, 8, 500, 3, 100 };
	uint32_t i;

	img_init(im, 1, JID);
	for (i = 0; i < 5; i++)
		img_commit(im, i + 1, plen[i]);
	img_retire(im, 1, 3);
	img_commit(im, 6, plen[5]);
	img_commit(im, 7, plen[6]);
}

TEST(scan_clean)
{
	int dfd = tmp_dir();
	struct img im;
	struct log l;
	uint64_t end = 0;

	build(&im);
	put_seg(dfd, 1, &im);
	CHECK_EQ(scan_file(dfd, "0000000000000001.dqj", true, &l, &end), 0);
	CHECK_EQ(l.n, im.n + 1);
	check_records(&im, &l, im.n);
	CHECK_EQ(end, im.len);
	CHECK_EQ(l.ev[6].type, DQJ_REC_RETIRE);
	CHECK_EQ(l.ev[6].count, 3U);
	CHECK_EQ(l.ev[8].msg_id, 7ULL);

	/* The callback's nonzero value stops the scan and is returned. */
	memset(&l, 0, sizeof(l));
	{
		int fd = openat(dfd, "0000000000000001.dqj", O_RDONLY);

		l.stop_at = 3;
		CHECK_EQ(dqj_seg_scan(fd, 1, im.len, true, log_fn, &l, &end),
			 42);
		CHECK_EQ(l.n, 3);
		close(fd);
	}
	free(im.b);
	tmp_dir_rm(dfd);
}

/*
 * The last record cut at every byte: the file ends there (truncated), or
 * zeros follow (preallocated).  Either way the records before it are all
 * reported, the cut one is the torn tail unless none of it reached the
 * file, and *end is where it started.
 */
TEST(scan_torn_every_offset)
{
	int dfd = tmp_dir();
	struct img im;
	struct log l;
	uint64_t end, o, t, nz;
	int last, prealloc, fails = 0;

	build(&im);
	last = im.n - 1;
	o = im.off[last];
	for (prealloc = 0; prealloc < 2; prealloc++) {
		for (t = o; t < o + im.rlen[last]; t++) {
			size_t size = prealloc ? im.len + 4096 : t;
			int ret;

			put_file(dfd, "s.dqj", im.b, t, size);
			ret = scan_file(dfd, "s.dqj", true, &l, &end);
			nz = img_nz_end(&im, o, t);
			CHECK_EQ(ret, 0);
			check_records(&im, &l, last);
			CHECK_EQ(end, o);
			if (nz == o) {
				/* Nothing of it on disk: a clean end. */
				CHECK_EQ(l.n, last + 1);
			} else {
				REQUIRE_EQ(l.n, last + 2);
				CHECK_EQ(l.ev[last + 1].kind, DQJ_EV_TORN);
				CHECK_EQ(l.ev[last + 1].off, o);
				CHECK_EQ(l.ev[last + 1].len, nz - o);
			}
			if (tap_has_failed() && !fails++)
				DIAG("first failure: cut at %llu, prealloc %d",
				     (unsigned long long)t, prealloc);
		}
	}
	free(im.b);
	tmp_dir_rm(dfd);
}

/* A preallocated segment reads as zeros after its records. */
TEST(scan_zero_tail)
{
	int dfd = tmp_dir(), fd;
	struct img im;
	struct log l;
	uint64_t end;

	build(&im);
	fd = openat(dfd, "0000000000000001.dqj", O_RDWR | O_CREAT, 0644);
	REQUIRE(fd >= 0);
	if (fallocate(fd, 0, 0, 4 << 20) != 0)
		SKIP("fallocate: %s", strerror(errno));
	REQUIRE(pwrite(fd, im.b, im.len, 0) == (ssize_t)im.len);
	close(fd);
	CHECK_EQ(scan_file(dfd, "0000000000000001.dqj", true, &l, &end), 0);
	CHECK_EQ(l.n, im.n + 1);
	check_records(&im, &l, im.n);
	CHECK_EQ(end, im.len);
	CHECK_EQ(scan_file(dfd, "0000000000000001.dqj", false, &l, &end), 0);
	CHECK_EQ(l.n, im.n + 1);
	CHECK_EQ(end, im.len);
	free(im.b);
	tmp_dir_rm(dfd);
}

/*
 * The scan reads only where the file system says the file holds data
 * (SEEK_DATA): bytes written far into the preallocated tail, past never
 * written space (an unwritten extent) or a hole, are still found, as a
 * torn tail up to the last of them; with none there, the end is clean.
 */
TEST(scan_tail_data_past_holes)
{
	static const uint8_t junk[3] = { 0x5a, 0, 0xa5 };
	static const uint64_t at[] = { 64 << 10, (3 << 20) + 17, (4 << 20) - 3 };
	int dfd = tmp_dir(), fd, prealloc;
	struct img im;
	struct log l;
	uint64_t end;
	unsigned int i;

	build(&im);
	for (prealloc = 0; prealloc < 2; prealloc++) {
		for (i = 0; i < sizeof(at) / sizeof(at[0]); i++) {
			unlinkat(dfd, "0000000000000001.dqj", 0);
			fd = openat(dfd, "0000000000000001.dqj",
				    O_RDWR | O_CREAT, 0644);
			REQUIRE(fd >= 0);
			if (prealloc && fallocate(fd, 0, 0, 4 << 20) != 0)
				SKIP("fallocate: %s", strerror(errno));
			if (!prealloc)
				REQUIRE(ftruncate(fd, 4 << 20) == 0);
			REQUIRE(pwrite(fd, im.b, im.len, 0) == (ssize_t)im.len);
			REQUIRE(pwrite(fd, junk, sizeof(junk), (off_t)at[i]) ==
				(ssize_t)sizeof(junk));
			close(fd);
			CHECK_EQ(scan_file(dfd, "0000000000000001.dqj", true, &l,
					   &end), 0);
			check_records(&im, &l, im.n);
			CHECK_EQ(end, im.len);
			REQUIRE_EQ(l.n, im.n + 2);
			CHECK_EQ(l.ev[im.n + 1].kind, DQJ_EV_TORN);
			CHECK_EQ(l.ev[im.n + 1].off, im.len);
			/* up to the last nonzero byte: junk[2] */
			CHECK(l.ev[im.n + 1].len == at[i] + 3 - im.len,
			      "junk at %llu, prealloc %d: torn %llu bytes",
			      (unsigned long long)at[i], prealloc,
			      (unsigned long long)l.ev[im.n + 1].len);
		}
	}
	free(im.b);
	tmp_dir_rm(dfd);
}

/*
 * A sealed segment with a flipped bit in record @bad: skipped and
 * reported where it starts, the scan resynchronises on the next record
 * and the SEAL's count shows the loss.  As the last segment the same
 * bit is a torn tail.
 */
static void sealed_corrupt(int bad, uint64_t flip_at)
{
	int dfd = tmp_dir(), i, n;
	struct img im;
	struct log l;
	uint64_t end;

	build(&im);
	n = im.n;
	img_seal(&im, (uint32_t)n, 7);
	im.b[im.off[bad] + flip_at] ^= 0x10;
	put_seg(dfd, 1, &im);
	CHECK_EQ(scan_file(dfd, "0000000000000001.dqj", false, &l, &end), 0);
	/* header, n records (one of them the CORRUPT), seal, mismatch */
	REQUIRE_EQ(l.n, n + 3);
	check_records(&im, &l, bad);
	CHECK_EQ(l.ev[bad + 1].kind, DQJ_EV_CORRUPT);
	CHECK_EQ(l.ev[bad + 1].off, im.off[bad]);
	CHECK_EQ(l.ev[bad + 1].len, im.off[bad + 1] - im.off[bad]);
	for (i = bad + 1; i <= n; i++) {
		CHECK_EQ(l.ev[i + 1].kind, DQJ_EV_RECORD);
		CHECK_EQ(l.ev[i + 1].off, im.off[i]);
	}
	CHECK_EQ(l.ev[n + 1].type, DQJ_REC_SEAL);
	CHECK_EQ(l.ev[n + 2].kind, DQJ_EV_SEAL_MISMATCH);
	CHECK_EQ(l.ev[n + 2].off, im.off[n]);
	CHECK_EQ(end, im.len);

	CHECK_EQ(scan_file(dfd, "0000000000000001.dqj", true, &l, &end), 0);
	REQUIRE_EQ(l.n, bad + 2);
	check_records(&im, &l, bad);
	CHECK_EQ(l.ev[bad + 1].kind, DQJ_EV_TORN);
	CHECK_EQ(l.ev[bad + 1].off, im.off[bad]);
	CHECK_EQ(l.ev[bad + 1].len, img_nz_end(&im, 0, im.len) - im.off[bad]);
	CHECK_EQ(end, im.off[bad]);
	free(im.b);
	tmp_dir_rm(dfd);
}

TEST(scan_sealed_corrupt_payload)
{
	sealed_corrupt(4, DQJ_COMMIT_SIZE + 100);	/* the 500-byte one */
}

TEST(scan_sealed_corrupt_crc)
{
	sealed_corrupt(2, 0);
}

TEST(scan_sealed_corrupt_len)
{
	sealed_corrupt(1, 6);		/* len + 0x100000 */
}

TEST(scan_sealed_corrupt_retire)
{
	sealed_corrupt(5, 20);
}

TEST(scan_sealed_corrupt_first)
{
	sealed_corrupt(0, 9);		/* type 1 -> 0x1001 */
}

/* The last record of a sealed segment bad: skipped up to the zeros. */
TEST(scan_sealed_corrupt_at_end)
{
	int dfd = tmp_dir();
	struct img im;
	struct log l;
	uint64_t end, zeros = 512;
	int n;

	build(&im);
	n = im.n;
	im.b[im.off[n - 1] + 50] ^= 1;
	put_file(dfd, "s.dqj", im.b, im.len, im.len + zeros);
	CHECK_EQ(scan_file(dfd, "s.dqj", false, &l, &end), 0);
	REQUIRE_EQ(l.n, n + 1);
	check_records(&im, &l, n - 1);
	CHECK_EQ(l.ev[n].kind, DQJ_EV_CORRUPT);
	CHECK_EQ(l.ev[n].off, im.off[n - 1]);
	/* up to its last nonzero byte */
	CHECK_EQ(l.ev[n].len, img_nz_end(&im, 0, im.len) - im.off[n - 1]);
	CHECK_EQ(end, im.off[n - 1]);
	free(im.b);
	tmp_dir_rm(dfd);
}

/*
 * A zero len with records after it in a sealed segment (the start of a
 * record lost) is a bad record, not the end: the ones after it count.
 */
TEST(scan_sealed_zero_len_hole)
{
	int dfd = tmp_dir();
	struct img im;
	struct log l;
	uint64_t end;
	int n;

	build(&im);
	n = im.n;
	memset(im.b + im.off[3], 0, 8);
	put_seg(dfd, 1, &im);
	CHECK_EQ(scan_file(dfd, "0000000000000001.dqj", false, &l, &end), 0);
	REQUIRE_EQ(l.n, n + 1);
	CHECK_EQ(l.ev[4].kind, DQJ_EV_CORRUPT);
	CHECK_EQ(l.ev[4].off, im.off[3]);
	CHECK_EQ(l.ev[4].len, im.off[4] - im.off[3]);
	CHECK_EQ(l.ev[n].off, im.off[n - 1]);
	CHECK_EQ(end, im.len);
	free(im.b);
	tmp_dir_rm(dfd);
}

/*
 * Records longer than the scan's 1 MiB read chunk, and records across
 * its boundary, in a sealed and in the last segment.
 */
TEST(scan_large_records)
{
	int dfd = tmp_dir();
	struct img im;
	struct log l;
	uint64_t end;
	int last;

	img_init(&im, 1, JID);
	img_commit(&im, 1, 1000);
	img_commit(&im, 2, 1U << 20);		/* 1 MiB + 48: > a chunk */
	img_commit(&im, 3, 1U << 20);
	img_commit(&im, 4, (1U << 20) - 3000);	/* across 3 MiB */
	img_commit(&im, 5, 5000);
	img_commit(&im, 6, 3U << 20);		/* 3 MiB */
	img_retire(&im, 1, 2);
	put_seg(dfd, 1, &im);
	for (last = 0; last < 2; last++) {
		CHECK_EQ(scan_file(dfd, "0000000000000001.dqj", last, &l,
				   &end), 0);
		CHECK_EQ(l.n, im.n + 1);
		check_records(&im, &l, im.n);
		CHECK_EQ(end, im.len);
	}
	/* A flipped bit in the big one: found, and the rest after it. */
	im.b[im.off[2] + 700000] ^= 4;
	put_seg(dfd, 1, &im);
	CHECK_EQ(scan_file(dfd, "0000000000000001.dqj", false, &l, &end), 0);
	REQUIRE_EQ(l.n, im.n + 1);
	CHECK_EQ(l.ev[3].kind, DQJ_EV_CORRUPT);
	CHECK_EQ(l.ev[3].off, im.off[2]);
	CHECK_EQ(l.ev[3].len, im.off[3] - im.off[2]);
	CHECK_EQ(l.ev[4].off, im.off[3]);
	CHECK(l.ev[4].payload_ok);
	CHECK_EQ(l.ev[6].len, im.rlen[5]);
	CHECK(l.ev[6].payload_ok);
	free(im.b);
	tmp_dir_rm(dfd);
}

/*
 * A segment sealed, kept active by recovery and sealed again: each SEAL
 * counts the records before it, SEALs not included.
 */
TEST(scan_two_seals)
{
	int dfd = tmp_dir(), i;
	struct img im;
	struct log l;
	uint64_t end;

	img_init(&im, 1, JID);
	img_commit(&im, 1, 10);
	img_seal(&im, 1, 1);
	img_commit(&im, 2, 10);
	img_retire(&im, 1, 1);
	img_seal(&im, 3, 2);
	put_seg(dfd, 1, &im);
	for (i = 0; i < 2; i++) {
		CHECK_EQ(scan_file(dfd, "0000000000000001.dqj", i, &l, &end),
			 0);
		CHECK_EQ(l.n, im.n + 1);
		check_records(&im, &l, im.n);
		CHECK_EQ(end, im.len);
	}
	free(im.b);
	tmp_dir_rm(dfd);
}

TEST(scan_bad_header)
{
	int dfd = tmp_dir();
	struct img im;
	struct log l;
	uint64_t end;

	build(&im);
	im.b[20] ^= 1;
	put_seg(dfd, 1, &im);
	CHECK_EQ(scan_file(dfd, "0000000000000001.dqj", true, &l, &end),
		 -EBADMSG);
	CHECK_EQ(l.n, 0);
	put_file(dfd, "short.dqj", im.b, 40, 40);
	CHECK_EQ(scan_file(dfd, "short.dqj", true, &l, &end), -EBADMSG);
	free(im.b);
	tmp_dir_rm(dfd);
}

/* ---- the directory --------------------------------------------------- */

static void put_segs(int dfd, uint64_t from, uint64_t to, uint64_t jid)
{
	struct img im;
	uint64_t s;

	for (s = from; s <= to; s++) {
		img_init(&im, s, jid);
		img_commit(&im, s, 10);
		put_seg(dfd, s, &im);
		free(im.b);
	}
}

static int list(int dfd, size_t *n, uint64_t *first,
		struct dqj_seg_hdr *newest)
{
	struct dqj_dir d;
	size_t i;
	int ret;

	ret = dqj_dir_list(dfd, &d);
	*newest = d.newest;
	*n = d.nsegs;
	if (ret) {
		CHECK(d.segs == NULL);
		CHECK_EQ(d.nsegs, 0U);
		dqj_dir_free(&d);
		return ret;
	}
	for (i = 0; i < *n; i++)
		CHECK_EQ(d.segs[i], d.segs[0] + i);
	*first = *n ? d.segs[0] : 0;
	CHECK_EQ(*first, d.first);
	dqj_dir_free(&d);
	return 0;
}

TEST(dir_list)
{
	int dfd = tmp_dir();
	struct dqj_seg_hdr nh;
	uint64_t first;
	size_t n;
	char name[32];

	CHECK_EQ(list(dfd, &n, &first, &nh), 0);
	CHECK_EQ(n, 0U);

	/* Not segments: ignored. */
	put_file(dfd, "LOCK", "", 0, 0);
	put_file(dfd, "notes.txt", "x", 1, 1);
	put_file(dfd, "000000000000000A.dqj", "x", 1, 1);
	put_file(dfd, "00000000000000001.dqj", "x", 1, 1);
	put_file(dfd, "0000000000000001.dqj.tmp", "x", 1, 1);
	put_file(dfd, "000000000000001.dqj", "x", 1, 1);
	CHECK_EQ(list(dfd, &n, &first, &nh), 0);
	CHECK_EQ(n, 0U);

	/* 0x0e .. 0x12 (the older ones deleted), in hex. */
	put_segs(dfd, 14, 18, JID);
	REQUIRE_EQ(list(dfd, &n, &first, &nh), 0);
	CHECK_EQ(n, 5U);
	CHECK_EQ(first, 14ULL);
	CHECK_EQ(nh.segment_no, 18ULL);
	CHECK_EQ(nh.journal_id, JID);
	CHECK_EQ(nh.first_msg_id, 1800ULL);
	dqj_seg_name(name, 18);
	CHECK(!strcmp(name, "0000000000000012.dqj"));

	/* A gap. */
	dqj_seg_name(name, 16);
	REQUIRE(renameat(dfd, name, dfd, "moved") == 0);
	CHECK_EQ(list(dfd, &n, &first, &nh), -ENODATA);
	REQUIRE(renameat(dfd, "moved", dfd, name) == 0);
	CHECK_EQ(list(dfd, &n, &first, &nh), 0);

	/* Another journal's segment, old or newest. */
	put_segs(dfd, 15, 15, JID + 1);
	CHECK_EQ(list(dfd, &n, &first, &nh), -EXDEV);
	put_segs(dfd, 15, 15, JID);
	put_segs(dfd, 18, 18, JID + 1);
	CHECK_EQ(list(dfd, &n, &first, &nh), -EXDEV);
	put_segs(dfd, 18, 18, JID);
	CHECK_EQ(list(dfd, &n, &first, &nh), 0);

	/* A damaged header: a flipped bit, short, named for another. */
	{
		struct img im;

		img_init(&im, 17, JID);
		im.b[40] ^= 0x80;
		put_seg(dfd, 17, &im);
		CHECK_EQ(list(dfd, &n, &first, &nh), -EXDEV);
		put_seg(dfd, 17, &(struct img){ .b = im.b, .len = 63 });
		CHECK_EQ(list(dfd, &n, &first, &nh), -EXDEV);
		put_seg(dfd, 17, &(struct img){ .b = im.b, .len = 0 });
		CHECK_EQ(list(dfd, &n, &first, &nh), -EXDEV);
		free(im.b);
		img_init(&im, 16, JID);
		put_seg(dfd, 17, &im);
		CHECK_EQ(list(dfd, &n, &first, &nh), -EXDEV);
		free(im.b);
		put_segs(dfd, 17, 17, JID);
		CHECK_EQ(list(dfd, &n, &first, &nh), 0);
	}

	/* Numbered from 1: a segment 0 is no journal's. */
	tmp_dir_rm(dfd);
	dfd = tmp_dir();
	put_segs(dfd, 0, 1, JID);
	CHECK_EQ(list(dfd, &n, &first, &nh), -EXDEV);
	tmp_dir_rm(dfd);
}

TEST(dir_list_errors)
{
	int dfd = tmp_dir(), fd;
	struct dqj_dir d;

	/* A directory that cannot be read: opendir's errno. */
	fd = openat(dfd, "f", O_RDWR | O_CREAT, 0644);
	REQUIRE(fd >= 0);
	CHECK_EQ(dqj_dir_list(fd, &d), -ENOTDIR);
	close(fd);
	put_segs(dfd, 1, 1, JID);
	if (geteuid() != 0) {
		REQUIRE(fchmodat(dfd, "0000000000000001.dqj", 0, 0) == 0);
		CHECK_EQ(dqj_dir_list(dfd, &d), -EACCES);
	}
	tmp_dir_rm(dfd);
}

/* ---- version 2: sync marks, salted checksums, version 1 ---------------- */

TEST(mark_round_trip)
{
	struct img im;
	struct dqj_mark m = {
		.flags = DQJ_MARK_F_SEALED, .seq = 7, .durable_end = 123456,
		.first_segment = 42,
	}, d;
	uint8_t b[DQJ_MARK_SIZE], c[DQJ_MARK_SIZE];
	unsigned int bit, bad = 0;

	img_init(&im, 3, JID);
	dqj_mark_encode(b, &im.h, &m);
	CHECK_EQ(dqj_mark_off(7), DQJ_MARK_OFF1);
	CHECK_EQ(dqj_mark_off(8), DQJ_MARK_OFF0);
	REQUIRE_EQ(dqj_mark_decode(b, &im.h, DQJ_MARK_OFF1, &d), 0);
	CHECK_EQ(d.flags, m.flags);
	CHECK_EQ(d.seq, m.seq);
	CHECK_EQ(d.durable_end, m.durable_end);
	CHECK_EQ(d.first_segment, m.first_segment);
	/* Only where its seq puts it, only with its segment's salt. */
	CHECK_EQ(dqj_mark_decode(b, &im.h, DQJ_MARK_OFF0, &d), -EBADMSG);
	im.h.salt ^= 1;
	CHECK_EQ(dqj_mark_decode(b, &im.h, DQJ_MARK_OFF1, &d), -EBADMSG);
	im.h.salt ^= 1;
	for (bit = 0; bit < DQJ_MARK_SIZE * 8; bit++) {
		memcpy(c, b, sizeof(c));
		c[bit / 8] ^= (uint8_t)(1U << (bit % 8));
		if (dqj_mark_decode(c, &im.h, DQJ_MARK_OFF1, &d) != -EBADMSG)
			bad++;
	}
	CHECK_EQ(bad, 0U);
	memset(c, 0, sizeof(c));
	CHECK_EQ(dqj_mark_decode(c, &im.h, DQJ_MARK_OFF0, &d), -ENODATA);
	free(im.b);
}

/* A record is good only at its own offset, only with its salt. */
TEST(record_salted)
{
	struct img im;
	struct dqj_rec r;
	uint64_t off;

	img_init(&im, 1, JID);
	off = im.len;
	img_commit(&im, 5, 40);
	CHECK_EQ(dqj_rec_decode(im.b + off, 88, dqj_seed(&im.h, off), &r), 0);
	CHECK_EQ(dqj_rec_decode(im.b + off, 88, dqj_seed(&im.h, off + 8), &r),
		 -EBADMSG);
	CHECK_EQ(dqj_rec_decode(im.b + off, 88, 0, &r), -EBADMSG);
	im.h.salt ^= 1ULL << 63;
	CHECK_EQ(dqj_rec_decode(im.b + off, 88, dqj_seed(&im.h, off), &r),
		 -EBADMSG);
	free(im.b);
}

/* Build, mark durable up to @durable (0: no mark), damage, scan. */
static int mark_scan(struct img *im, uint64_t durable, bool last,
		     struct log *l, uint64_t *end)
{
	int dfd = tmp_dir(), ret;

	if (durable) {
		img_put_mark(im, 1, DQJ_V2_DATA, 1, 0);
		img_put_mark(im, 2, durable, 1, 0);
	}
	put_seg(dfd, 1, im);
	ret = scan_file(dfd, "0000000000000001.dqj", last, l, end);
	tmp_dir_rm(dfd);
	return ret;
}

/*
 * The last segment, a flipped bit in record 2 before the mark's durable
 * end: skipped, the records after it found (not a torn tail).  At or
 * after the durable end it is the tail.
 */
TEST(scan_last_durable_end)
{
	struct img im;
	struct log l;
	uint64_t end;
	int i;

	build(&im);
	im.b[im.off[2] + 50] ^= 0x20;
	CHECK_EQ(mark_scan(&im, im.len, true, &l, &end), 0);
	REQUIRE_EQ(l.n, im.n + 1);
	check_records(&im, &l, 2);
	CHECK_EQ(l.ev[3].kind, DQJ_EV_CORRUPT);
	CHECK_EQ(l.ev[3].off, im.off[2]);
	CHECK_EQ(l.ev[3].len, im.off[3] - im.off[2]);
	for (i = 3; i < im.n; i++) {
		CHECK_EQ(l.ev[i + 1].kind, DQJ_EV_RECORD);
		CHECK_EQ(l.ev[i + 1].off, im.off[i]);
	}
	CHECK_EQ(end, im.len);

	/* Durable only up to record 2: the same bit starts the tail. */
	CHECK_EQ(mark_scan(&im, im.off[2], true, &l, &end), 0);
	REQUIRE_EQ(l.n, 4);
	CHECK_EQ(l.ev[3].kind, DQJ_EV_TORN);
	CHECK_EQ(l.ev[3].off, im.off[2]);
	CHECK_EQ(end, im.off[2]);

	/* Without a mark nothing is known durable: the tail too. */
	memset(im.b + DQJ_MARK_OFF0, 0, DQJ_MARK_SIZE);
	memset(im.b + DQJ_MARK_OFF1, 0, DQJ_MARK_SIZE);
	CHECK_EQ(mark_scan(&im, 0, true, &l, &end), 0);
	REQUIRE_EQ(l.n, 4);
	CHECK_EQ(l.ev[3].kind, DQJ_EV_TORN);
	free(im.b);
}

/* Records ending before the durable end (a cut file): LOST, last. */
TEST(scan_lost)
{
	struct img im;
	struct log l;
	uint64_t end, full;
	int dfd;

	build(&im);
	full = im.len;
	img_put_mark(&im, 1, DQJ_V2_DATA, 1, 0);
	img_put_mark(&im, 2, full, 1, 0);
	dfd = tmp_dir();
	put_file(dfd, "s.dqj", im.b, im.off[4], im.off[4]);
	CHECK_EQ(scan_file(dfd, "s.dqj", true, &l, &end), 0);
	REQUIRE_EQ(l.n, 6);
	check_records(&im, &l, 4);
	CHECK_EQ(l.ev[5].kind, DQJ_EV_LOST);
	CHECK_EQ(l.ev[5].off, im.off[4]);
	CHECK_EQ(l.ev[5].len, full - im.off[4]);
	CHECK_EQ(end, im.off[4]);
	/* Zeroed instead of cut: the same. */
	memset(im.b + im.off[4], 0, full - im.off[4]);
	put_file(dfd, "s.dqj", im.b, full, full + 4096);
	CHECK_EQ(scan_file(dfd, "s.dqj", false, &l, &end), 0);
	REQUIRE_EQ(l.n, 6);
	CHECK_EQ(l.ev[5].kind, DQJ_EV_LOST);
	CHECK_EQ(l.ev[5].len, full - im.off[4]);
	tmp_dir_rm(dfd);
	free(im.b);
}

/* A damaged mark is reported after the header; the other one is used. */
TEST(scan_bad_mark)
{
	struct img im;
	struct log l;
	uint64_t end;

	build(&im);
	im.b[im.off[5] + 20] ^= 0x20;	/* the RETIRE's entries */
	img_put_mark(&im, 1, im.len, 1, 0);
	img_put_mark(&im, 2, im.off[5], 1, 0);
	im.b[DQJ_MARK_OFF0 + 17] ^= 1;		/* seq 2 damaged */
	{
		int dfd = tmp_dir();

		put_seg(dfd, 1, &im);
		CHECK_EQ(scan_file(dfd, "0000000000000001.dqj", true, &l, &end),
			 0);
		tmp_dir_rm(dfd);
	}
	REQUIRE(l.n >= 2);
	CHECK_EQ(l.ev[0].kind, DQJ_EV_SEGMENT);
	CHECK_EQ(l.ev[1].kind, DQJ_EV_BAD_MARK);
	CHECK_EQ(l.ev[1].off, DQJ_MARK_OFF0);
	/* seq 1's durable end (all) rules: record 5 skipped, not a tail. */
	REQUIRE_EQ(l.n, im.n + 2);
	CHECK_EQ(l.ev[7].kind, DQJ_EV_CORRUPT);
	CHECK_EQ(l.ev[7].off, im.off[5]);
	CHECK_EQ(l.ev[8].kind, DQJ_EV_RECORD);
	free(im.b);
}

/*
 * A record whose payload holds well-formed records (a plain CRC, and
 * this segment's salt at the containing record's offset), its own CRC
 * flipped: skipped in one piece, in a sealed and in the last segment.
 * In a version 1 segment the scan stops at it instead: a plain CRC is
 * all v1 has, so it does not search the rest.
 */
static void forged(uint32_t version, bool last)
{
	struct img im;
	struct log l;
	uint64_t end, off;
	uint8_t *p, *f;
	uint32_t fb = dqj_commit_bytes(8), plen = 200;
	int dfd, i;

	img_init_v(&im, 1, JID, version);
	img_commit(&im, 1, 30);
	off = im.len;
	img_grow(&im, dqj_commit_bytes(plen));
	p = im.b + off;
	memset(p, 0, dqj_commit_bytes(plen));
	f = p + DQJ_COMMIT_SIZE;
	dqj_commit_encode(f, 0, 0, 99, 0, 0, 0, "FORGED!", 8);
	memcpy(f + DQJ_COMMIT_SIZE, "FORGED!", 8);
	dqj_commit_encode(f + fb, img_seed(&im), 0, 99, 0, 0, 0, "FORGED!", 8);
	memcpy(f + fb + DQJ_COMMIT_SIZE, "FORGED!", 8);
	dqj_commit_encode(p, img_seed(&im), 0, 2, 0, 0, 0, f, plen);
	img_mark(&im, DQJ_COMMIT_SIZE + plen);
	im.len += dqj_commit_bytes(plen);
	img_commit(&im, 3, 30);
	img_seal(&im, 3, 3);
	if (version != DQJ_VERSION_1) {
		img_put_mark(&im, 1, DQJ_V2_DATA, 1, 0);
		img_put_mark(&im, 2, im.len, 1, DQJ_MARK_F_SEALED);
	}
	p[1] ^= 0x04;		/* the containing record's CRC */
	dfd = tmp_dir();
	put_seg(dfd, 1, &im);
	CHECK_EQ(scan_file(dfd, "0000000000000001.dqj", last, &l, &end), 0);
	tmp_dir_rm(dfd);
	for (i = 0; i < l.n; i++)
		CHECK(l.ev[i].msg_id != 99, "event %d: the forged record", i);
	REQUIRE(l.n >= 3);
	CHECK_EQ(l.ev[1].kind, DQJ_EV_RECORD);
	CHECK_EQ(l.ev[2].off, off);
	if (version == DQJ_VERSION_1) {
		CHECK_EQ(l.n, 3);
		CHECK_EQ(l.ev[2].kind, last ? DQJ_EV_TORN : DQJ_EV_CORRUPT);
		CHECK_EQ(l.ev[2].len, img_nz_end(&im, off, im.len) - off);
	} else {
		REQUIRE_EQ(l.n, 6);
		CHECK_EQ(l.ev[2].kind, DQJ_EV_CORRUPT);
		CHECK_EQ(l.ev[2].len, dqj_commit_bytes(plen));
		CHECK_EQ(l.ev[3].msg_id, 3ULL);
		CHECK_EQ(l.ev[4].type, DQJ_REC_SEAL);
		CHECK_EQ(l.ev[5].kind, DQJ_EV_SEAL_MISMATCH);
	}
	free(im.b);
}

TEST(scan_forged_in_payload)
{
	forged(DQJ_VERSION, false);
	forged(DQJ_VERSION, true);
	forged(DQJ_VERSION_1, false);
	forged(DQJ_VERSION_1, true);
}

/* Segments @from .. @to, v2, each with marks naming @first. */
static void put_marked(int dfd, uint64_t from, uint64_t to, uint64_t first,
		       bool seal_last)
{
	struct img im;
	uint64_t s;

	for (s = from; s <= to; s++) {
		bool sealed = s < to || seal_last;

		img_init(&im, s, JID);
		img_commit(&im, s, 10);
		if (sealed)
			img_seal(&im, 1, s);
		img_put_mark(&im, 1, DQJ_V2_DATA, first, 0);
		img_put_mark(&im, 2, im.len, first,
			     sealed ? DQJ_MARK_F_SEALED : 0);
		put_seg(dfd, s, &im);
		free(im.b);
	}
}

/*
 * The newest mark names the first segment needed: a missing one (oldest,
 * middle) is -ENODATA with its number, older ones are stale; a sealed
 * newest one had a successor; with the newest's marks damaged the
 * others' marks bound the first segment from below.
 */
TEST(dir_list_marks)
{
	int dfd = tmp_dir();
	struct dqj_dir d;
	char name[32];

	put_marked(dfd, 3, 6, 3, false);
	REQUIRE_EQ(dqj_dir_list(dfd, &d), 0);
	CHECK_EQ(d.nsegs, 4U);
	CHECK_EQ(d.first, 3ULL);
	CHECK(d.first_known);
	CHECK_EQ(d.nstale, 0U);
	dqj_dir_free(&d);

	/* The oldest gone. */
	dqj_seg_name(name, 3);
	REQUIRE(renameat(dfd, name, dfd, "moved") == 0);
	CHECK_EQ(dqj_dir_list(dfd, &d), -ENODATA);
	CHECK_EQ(d.missing, 3ULL);
	CHECK(d.segs == NULL);
	dqj_dir_free(&d);
	REQUIRE(renameat(dfd, "moved", dfd, name) == 0);

	/* The mark says 5 on: 3 and 4 are leftovers. */
	put_marked(dfd, 6, 6, 5, false);
	REQUIRE_EQ(dqj_dir_list(dfd, &d), 0);
	CHECK_EQ(d.nsegs, 2U);
	CHECK_EQ(d.segs[0], 5ULL);
	CHECK_EQ(d.nstale, 2U);
	CHECK_EQ(d.stale[0], 3ULL);
	CHECK_EQ(d.stale[1], 4ULL);
	dqj_dir_free(&d);

	/* The newest sealed: 7 is missing. */
	put_marked(dfd, 6, 6, 5, true);
	CHECK_EQ(dqj_dir_list(dfd, &d), -ENODATA);
	CHECK_EQ(d.missing, 7ULL);
	dqj_dir_free(&d);

	/*
	 * Both marks of the newest damaged: segment 5's marks (first 3)
	 * bound it; 3 .. 6 all needed, none missing.
	 */
	put_marked(dfd, 6, 6, 5, false);
	{
		uint8_t junk[2] = { 0xff, 0xff };
		int fd;

		dqj_seg_name(name, 6);
		fd = openat(dfd, name, O_RDWR);
		REQUIRE(fd >= 0);
		REQUIRE(pwrite(fd, junk, 2, DQJ_MARK_OFF0 + 8) == 2);
		REQUIRE(pwrite(fd, junk, 2, DQJ_MARK_OFF1 + 8) == 2);
		close(fd);
	}
	REQUIRE_EQ(dqj_dir_list(dfd, &d), 0);
	CHECK(!d.first_known);
	CHECK_EQ(d.bad_marks, 2U);
	CHECK_EQ(d.first, 3ULL);
	CHECK_EQ(d.nsegs, 4U);
	dqj_dir_free(&d);
	tmp_dir_rm(dfd);
}

TAP_MAIN()
