// SPDX-License-Identifier: LGPL-2.1 OR MIT
/*
 * libdqshim: the journal's on-disk format (dq_jformat.h, docs/journal.md).
 *
 * Encoders write every integer with explicit little-endian stores, so the
 * layout does not depend on struct padding or on the host.  Decoders
 * trust nothing: a record is only handed out once its length fits the
 * file, its shape fits its type and its CRC matches.
 *
 * The scan reads a segment through a window of DQJ_CHUNK bytes (one pread
 * per chunk, not one per record); a record straddling the window's end
 * moves the window to start at it, and a record longer than the window
 * has its CRC checked piecewise before the window grows to hold it, so a
 * damaged length field cannot make the scan allocate much.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <isa-l/crc.h>

#include "dq_jformat.h"

#define DQJ_CHUNK		(1U << 20)

/* Byte offsets on disk (docs/journal.md). */
#define H_MAGIC		0
#define H_VERSION	8
#define H_CRC		12
#define H_JOURNAL_ID	16
#define H_SEGMENT_NO	24
#define H_FIRST_MSG_ID	32
#define H_CREATED_NS	40
#define H_SLOT_SIZE	48
#define H_QUEUE_FLAGS	52
#define H_SALT		56	/* v1: resv, 0 */

#define R_CRC		0
#define R_LEN		4
#define R_TYPE		8
#define R_FLAGS		10
#define R_COUNT		12
#define C_MSG_ID	16
#define C_USER_DATA	24
#define C_DUE		32
#define C_PAYLOAD_LEN	40
#define C_ATTEMPTS	44
#define C_RESV		46
#define S_LAST_MSG_ID	16
#define S_RESV		24
#define M_CRC		0
#define M_MAGIC		4
#define M_FLAGS		6
#define M_SEQ		8
#define M_DURABLE_END	16
#define M_FIRST_SEG	24

static inline void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static inline void put32(uint8_t *p, uint32_t v)
{
	put16(p, (uint16_t)v);
	put16(p + 2, (uint16_t)(v >> 16));
}

static inline void put64(uint8_t *p, uint64_t v)
{
	put32(p, (uint32_t)v);
	put32(p + 4, (uint32_t)(v >> 32));
}

static inline uint16_t get16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static inline uint32_t get32(const uint8_t *p)
{
	return (uint32_t)get16(p) | (uint32_t)get16(p + 2) << 16;
}

static inline uint64_t get64(const uint8_t *p)
{
	return (uint64_t)get32(p) | (uint64_t)get32(p + 4) << 32;
}

/* ---- CRC32C -------------------------------------------------------- */

/*
 * isa-l's crc32_iscsi() neither inverts the initial value nor the result
 * (crc32_iscsi(buf, n, ~0) ^ ~0 is the standard CRC32C), and takes an int
 * length.  Keeping the running value in its finished (inverted) form
 * makes dqj_crc32c_update(0, ...) the plain CRC and lets a caller chain
 * pieces without knowing the convention.
 */
uint32_t dqj_crc32c_update(uint32_t crc, const void *buf, size_t len)
{
	/* isa-l's API lacks const */
	unsigned char *p = (unsigned char *)buf;
	unsigned int c = ~crc;

	while (len) {
		int n = len > INT_MAX / 2 ? INT_MAX / 2 : (int)len;

		c = crc32_iscsi(p, n, c);
		p += n;
		len -= (size_t)n;
	}
	return ~c;
}

uint32_t dqj_crc32c(const void *buf, size_t len)
{
	return dqj_crc32c_update(0, buf, len);
}

/* ---- segment header ------------------------------------------------ */

void dqj_seg_hdr_encode(void *buf, const struct dqj_seg_hdr *h)
{
	uint8_t *p = buf;

	memset(p, 0, DQJ_HDR_SIZE);
	memcpy(p + H_MAGIC, DQJ_MAGIC, 8);
	put32(p + H_VERSION, h->version == DQJ_VERSION_1 ? DQJ_VERSION_1 :
							    DQJ_VERSION);
	if (h->version != DQJ_VERSION_1)
		put64(p + H_SALT, h->salt);
	put64(p + H_JOURNAL_ID, h->journal_id);
	put64(p + H_SEGMENT_NO, h->segment_no);
	put64(p + H_FIRST_MSG_ID, h->first_msg_id);
	put64(p + H_CREATED_NS, h->created_ns);
	put32(p + H_SLOT_SIZE, h->slot_size);
	put32(p + H_QUEUE_FLAGS, h->queue_flags);
	put32(p + H_CRC, dqj_crc32c(p, DQJ_HDR_SIZE));
}

int dqj_seg_hdr_decode(const void *buf, struct dqj_seg_hdr *h)
{
	const uint8_t *p = buf;
	uint8_t tmp[DQJ_HDR_SIZE];

	uint32_t version = get32(p + H_VERSION);

	if (memcmp(p + H_MAGIC, DQJ_MAGIC, 8) ||
	    (version != DQJ_VERSION && version != DQJ_VERSION_1) ||
	    (version == DQJ_VERSION_1 && get64(p + H_SALT)))
		return -EBADMSG;
	memcpy(tmp, p, DQJ_HDR_SIZE);
	put32(tmp + H_CRC, 0);
	if (dqj_crc32c(tmp, DQJ_HDR_SIZE) != get32(p + H_CRC))
		return -EBADMSG;
	h->version = version;
	h->salt = get64(p + H_SALT);
	h->journal_id = get64(p + H_JOURNAL_ID);
	h->segment_no = get64(p + H_SEGMENT_NO);
	h->first_msg_id = get64(p + H_FIRST_MSG_ID);
	h->created_ns = get64(p + H_CREATED_NS);
	h->slot_size = get32(p + H_SLOT_SIZE);
	h->queue_flags = get32(p + H_QUEUE_FLAGS);
	return 0;
}

uint32_t dqj_seed(const struct dqj_seg_hdr *h, uint64_t off)
{
	uint8_t b[16];

	if (h->version == DQJ_VERSION_1)
		return 0;
	put64(b, h->salt);
	put64(b + 8, off);
	return dqj_crc32c(b, sizeof(b));
}

/* ---- sync marks ---------------------------------------------------- */

void dqj_mark_encode(void *buf, const struct dqj_seg_hdr *h,
		     const struct dqj_mark *m)
{
	uint8_t *p = buf;
	uint32_t seed = dqj_seed(h, dqj_mark_off(m->seq));

	put16(p + M_MAGIC, DQJ_MARK_MAGIC);
	put16(p + M_FLAGS, (uint16_t)m->flags);
	put64(p + M_SEQ, m->seq);
	put64(p + M_DURABLE_END, m->durable_end);
	put64(p + M_FIRST_SEG, m->first_segment);
	put32(p + M_CRC, dqj_crc32c_update(seed, p + M_MAGIC,
					   DQJ_MARK_SIZE - M_MAGIC));
}

int dqj_mark_decode(const void *buf, const struct dqj_seg_hdr *h,
		    uint64_t off, struct dqj_mark *m)
{
	static const uint8_t zero[DQJ_MARK_SIZE];
	const uint8_t *p = buf;

	if (!memcmp(p, zero, DQJ_MARK_SIZE))
		return -ENODATA;
	if (get16(p + M_MAGIC) != DQJ_MARK_MAGIC ||
	    (get16(p + M_FLAGS) & ~DQJ_MARK_F_SEALED) ||
	    dqj_crc32c_update(dqj_seed(h, off), p + M_MAGIC,
			      DQJ_MARK_SIZE - M_MAGIC) != get32(p + M_CRC))
		return -EBADMSG;
	m->flags = get16(p + M_FLAGS);
	m->seq = get64(p + M_SEQ);
	m->durable_end = get64(p + M_DURABLE_END);
	m->first_segment = get64(p + M_FIRST_SEG);
	if (!m->seq || dqj_mark_off(m->seq) != off)
		return -EBADMSG;
	return 0;
}

int dqj_marks_read(int fd, const struct dqj_seg_hdr *h, uint64_t size,
		   struct dqj_mark *best, unsigned int *bad)
{
	static const uint32_t offs[2] = { DQJ_MARK_OFF0, DQJ_MARK_OFF1 };
	unsigned int i, nbad = 0;
	bool found = false;

	memset(best, 0, sizeof(*best));
	for (i = 0; i < 2; i++) {
		uint8_t b[DQJ_MARK_SIZE];
		struct dqj_mark m;
		ssize_t n = 0;

		if (size >= offs[i] + DQJ_MARK_SIZE) {
			do {
				n = pread(fd, b, sizeof(b), offs[i]);
			} while (n < 0 && errno == EINTR);
			if (n < 0)
				return -errno;
		}
		if (n != (ssize_t)sizeof(b)) {
			nbad++;
			continue;
		}
		switch (dqj_mark_decode(b, h, offs[i], &m)) {
		case 0:
			if (!found || m.seq > best->seq)
				*best = m;
			found = true;
			break;
		case -EBADMSG:
			nbad++;
			break;
		}
	}
	if (bad)
		*bad = nbad;
	return found ? 0 : -ENODATA;
}

/* ---- records ------------------------------------------------------- */

static void rec_head(uint8_t *p, uint32_t len, uint32_t type, uint32_t flags,
		     uint32_t count)
{
	put32(p + R_CRC, 0);
	put32(p + R_LEN, len);
	put16(p + R_TYPE, (uint16_t)type);
	put16(p + R_FLAGS, (uint16_t)flags);
	put32(p + R_COUNT, count);
}

void dqj_commit_encode(void *buf, uint32_t seed, uint32_t flags,
		       uint64_t msg_id, uint64_t user_data, int64_t due_rt_ns,
		       uint16_t attempts, const void *payload,
		       uint32_t payload_len)
{
	uint8_t *p = buf;
	uint32_t crc;

	rec_head(p, DQJ_COMMIT_SIZE + payload_len, DQJ_REC_COMMIT, flags, 0);
	put64(p + C_MSG_ID, msg_id);
	put64(p + C_USER_DATA, user_data);
	put64(p + C_DUE, (uint64_t)due_rt_ns);
	put32(p + C_PAYLOAD_LEN, payload_len);
	put16(p + C_ATTEMPTS, attempts);
	put16(p + C_RESV, 0);
	crc = dqj_crc32c_update(seed, p + R_LEN, DQJ_COMMIT_SIZE - R_LEN);
	crc = dqj_crc32c_update(crc, payload, payload_len);
	put32(p + R_CRC, crc);
}

void dqj_retire_encode(void *buf, uint32_t seed, const uint64_t *entries,
		       uint32_t count)
{
	uint8_t *p = buf;
	uint32_t i, len = dqj_retire_bytes(count);

	rec_head(p, len, DQJ_REC_RETIRE, 0, count);
	for (i = 0; i < count; i++)
		put64(p + DQJ_REC_HDR_SIZE + 8 * i, entries[i]);
	put32(p + R_CRC, dqj_crc32c_update(seed, p + R_LEN, len - R_LEN));
}

void dqj_seal_encode(void *buf, uint32_t seed, uint32_t records,
		     uint64_t last_msg_id)
{
	uint8_t *p = buf;

	rec_head(p, DQJ_SEAL_SIZE, DQJ_REC_SEAL, 0, records);
	put64(p + S_LAST_MSG_ID, last_msg_id);
	put64(p + S_RESV, 0);
	put32(p + R_CRC, dqj_crc32c_update(seed, p + R_LEN,
					   DQJ_SEAL_SIZE - R_LEN));
}

/*
 * Whether a record of length @len may have the type-specific shape the
 * bytes at @p give it (@p holds at least min(len, DQJ_COMMIT_SIZE)
 * bytes).  Checked before the CRC so that a length read from garbage is
 * mostly refused without reading what it covers.
 */
static bool rec_shape_ok(const uint8_t *p, uint32_t len)
{
	uint32_t type = get16(p + R_TYPE), flags = get16(p + R_FLAGS);
	uint32_t count = get32(p + R_COUNT);

	if (len < DQJ_REC_HDR_SIZE)
		return false;
	switch (type) {
	case DQJ_REC_COMMIT:
		return len >= DQJ_COMMIT_SIZE && !(flags & ~DQJ_COMMIT_F_ALL) &&
		       !count && get16(p + C_RESV) == 0 &&
		       (uint64_t)len == (uint64_t)DQJ_COMMIT_SIZE +
					get32(p + C_PAYLOAD_LEN);
	case DQJ_REC_RETIRE:
		return !flags &&
		       (uint64_t)len == DQJ_REC_HDR_SIZE + 8ULL * count;
	case DQJ_REC_SEAL:
		return !flags && len == DQJ_SEAL_SIZE && !get64(p + S_RESV);
	default:
		return false;
	}
}

/* Fill @r from a record already checked; pointers into @p. */
static void rec_fill(const uint8_t *p, struct dqj_rec *r)
{
	memset(r, 0, sizeof(*r));
	r->type = get16(p + R_TYPE);
	r->flags = get16(p + R_FLAGS);
	r->len = get32(p + R_LEN);
	r->count = get32(p + R_COUNT);
	switch (r->type) {
	case DQJ_REC_COMMIT:
		r->msg_id = get64(p + C_MSG_ID);
		r->user_data = get64(p + C_USER_DATA);
		r->due_rt_ns = (int64_t)get64(p + C_DUE);
		r->payload_len = get32(p + C_PAYLOAD_LEN);
		r->attempts = get16(p + C_ATTEMPTS);
		r->payload = p + DQJ_COMMIT_SIZE;
		break;
	case DQJ_REC_RETIRE:
		r->entries = p + DQJ_REC_HDR_SIZE;
		break;
	case DQJ_REC_SEAL:
		r->last_msg_id = get64(p + S_LAST_MSG_ID);
		break;
	}
}

int dqj_rec_decode(const void *buf, size_t avail, uint32_t seed,
		   struct dqj_rec *r)
{
	const uint8_t *p = buf;
	uint32_t len;

	if (avail < R_LEN + 4)
		return -EBADMSG;
	len = get32(p + R_LEN);
	if (!len)
		return -ENODATA;
	if (len < DQJ_REC_HDR_SIZE || len > avail || !rec_shape_ok(p, len))
		return -EBADMSG;
	if (dqj_crc32c_update(seed, p + R_LEN, len - R_LEN) != get32(p + R_CRC))
		return -EBADMSG;
	rec_fill(p, r);
	return 0;
}

/* ---- scanning a segment -------------------------------------------- */

/* A window [woff, woff + wlen) of the file in buf (cap bytes). */
struct scan {
	const struct dqj_seg_hdr *hdr;	/* for each record's seed */
	int fd;
	uint64_t size;
	uint64_t data_end;	/* [data_end, size) holds no data: zeros */
	uint8_t *buf;
	size_t cap;
	uint64_t woff;
	size_t wlen;
};

static int read_full(int fd, void *buf, size_t len, uint64_t off)
{
	uint8_t *p = buf;

	while (len) {
		ssize_t n = pread(fd, p, len, (off_t)off);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		/* Shorter than the caller's size: it changed under us. */
		if (!n)
			return -EIO;
		p += n;
		len -= (size_t)n;
		off += (uint64_t)n;
	}
	return 0;
}

/*
 * Bytes [off, off + n) of the file, n <= size - off: a pointer into the
 * window, moved (and grown when n > cap) as needed.  Returns NULL with
 * *err set on a read or allocation failure.
 */
static const uint8_t *scan_at(struct scan *s, uint64_t off, size_t n, int *err)
{
	size_t want;

	if (off >= s->woff && off + n <= s->woff + s->wlen)
		return s->buf + (off - s->woff);
	if (n > s->cap) {
		size_t cap = (n + DQJ_CHUNK - 1) & ~(size_t)(DQJ_CHUNK - 1);
		uint8_t *b = realloc(s->buf, cap);

		if (!b) {
			*err = -ENOMEM;
			return NULL;
		}
		s->buf = b;
		s->cap = cap;
	}
	want = s->size - off < s->cap ? (size_t)(s->size - off) : s->cap;
	s->wlen = 0;
	*err = read_full(s->fd, s->buf, want, off);
	if (*err)
		return NULL;
	s->woff = off;
	s->wlen = want;
	return s->buf;
}

/*
 * The end of the last nonzero byte in [from, size) into *@nz_end (@from
 * when they are all zero).  A preallocated segment reads as zeros past
 * its records; anything else there is a record that did not finish.
 */
static int scan_nonzero_end(struct scan *s, uint64_t from, uint64_t *nz_end)
{
	uint64_t off = from;
	int err = 0;

	*nz_end = from;
	while (off < s->data_end) {
		size_t n = s->data_end - off < DQJ_CHUNK ?
			   (size_t)(s->data_end - off) : DQJ_CHUNK;
		const uint8_t *p = scan_at(s, off, n, &err);
		size_t i;

		if (!p)
			return err;
		for (i = n; i > 0; i--)
			if (p[i - 1])
				break;
		if (i)
			*nz_end = off + i;
		off += n;
	}
	return 0;
}

/*
 * Decode the record at @off: 0 and *@r (pointing into the window, valid
 * until the next scan_at), -ENODATA (len 0 or fewer than a record's
 * header bytes left), -EBADMSG, or a read error.
 */
static int scan_rec(struct scan *s, uint64_t off, struct dqj_rec *r)
{
	uint64_t left = s->size - off;
	const uint8_t *p;
	uint32_t len, want, crc;
	uint64_t pos;
	size_t n;
	int err = 0;

	if (left < DQJ_REC_HDR_SIZE)
		return -ENODATA;
	p = scan_at(s, off, DQJ_REC_HDR_SIZE, &err);
	if (!p)
		return err;
	len = get32(p + R_LEN);
	if (!len)
		return -ENODATA;
	/*
	 * With its padding: a record is written padded to 8 bytes, so one
	 * whose padding is past the end of the file did not land whole (and
	 * *end, after it, would be past the end of the file).
	 */
	if (len < DQJ_REC_HDR_SIZE ||
	    (((uint64_t)len + DQJ_ALIGN - 1) & ~(uint64_t)(DQJ_ALIGN - 1)) > left)
		return -EBADMSG;
	/*
	 * The shape before the bytes it covers: resynchronising tries every
	 * 8 bytes of garbage, and a plausible len must not move the window.
	 */
	p = scan_at(s, off, len < DQJ_COMMIT_SIZE ? len : DQJ_COMMIT_SIZE,
		    &err);
	if (!p)
		return err;
	if (!rec_shape_ok(p, len))
		return -EBADMSG;
	if (len <= s->cap) {
		p = scan_at(s, off, len, &err);
		if (!p)
			return err;
		return dqj_rec_decode(p, len, dqj_seed(s->hdr, off), r);
	}
	/* Longer than the window: the CRC piecewise, then load it whole. */
	want = get32(p + R_CRC);
	crc = dqj_seed(s->hdr, off);
	for (pos = off + R_LEN; pos < off + len; pos += n) {
		const uint8_t *q;

		n = off + len - pos < s->cap ? (size_t)(off + len - pos) :
					       s->cap;
		q = scan_at(s, pos, n, &err);
		if (!q)
			return err;
		crc = dqj_crc32c_update(crc, q, n);
	}
	if (crc != want)
		return -EBADMSG;
	p = scan_at(s, off, len, &err);
	if (!p)
		return err;
	return dqj_rec_decode(p, len, dqj_seed(s->hdr, off), r);
}

static int emit(dqj_scan_fn fn, void *arg, enum dqj_event_kind kind,
		uint64_t seg, uint64_t off, uint64_t len,
		const struct dqj_seg_hdr *hdr, const struct dqj_rec *r)
{
	struct dqj_event ev = {
		.kind = kind, .seg = seg, .off = off, .len = len,
		.hdr = hdr, .rec = r,
	};

	return fn(arg, &ev);
}

/*
 * The first offset after @off, 8-byte aligned, where a good record
 * starts, or @nz_end or beyond when none does: nothing can start past
 * the last nonzero byte.  The record there is left in *@r.  Only for v2
 * segments: a record is good only with the segment's salt at its own
 * offset, so payload bytes cannot pass for one.
 */
static int scan_resync(struct scan *s, uint64_t off, uint64_t nz_end,
		       struct dqj_rec *r, uint64_t *next)
{
	uint64_t pos;
	int ret;

	for (pos = off + DQJ_ALIGN; pos < nz_end; pos += DQJ_ALIGN) {
		ret = scan_rec(s, pos, r);
		if (!ret)
			break;
		if (ret != -ENODATA && ret != -EBADMSG)
			return ret;
	}
	*next = pos;
	return 0;
}

/* The segment's marks (v2): the best one, which ones are damaged. */
static int scan_marks(struct scan *s, const struct dqj_seg_hdr *h,
		      struct dqj_mark *best, bool *have, bool bad[2])
{
	static const uint32_t offs[2] = { DQJ_MARK_OFF0, DQJ_MARK_OFF1 };
	unsigned int i;
	int ret;

	*have = false;
	memset(best, 0, sizeof(*best));
	for (i = 0; i < 2; i++) {
		struct dqj_mark m;
		const uint8_t *p = NULL;
		int err = 0;

		if (s->size >= offs[i] + DQJ_MARK_SIZE) {
			p = scan_at(s, offs[i], DQJ_MARK_SIZE, &err);
			if (!p)
				return err;
			ret = dqj_mark_decode(p, h, offs[i], &m);
		} else {
			ret = -EBADMSG;	/* cut off with the file */
		}
		if (!ret) {
			if (!*have || m.seq > best->seq)
				*best = m;
			*have = true;
		}
		bad[i] = ret == -EBADMSG;
	}
	return 0;
}

/*
 * Where the file's data ends, as the file system says before anything is
 * read: past it are holes or preallocated extents never written, which
 * read as zeros.  A segment's preallocated tail (most of it, 64 MiB by
 * default) is then not read at each open to see that it is zeros: that
 * was most of a small journal's recovery (bench/durable_bench recover,
 * 10 000 messages: docs/records/bench/journal-tail.txt).  Asked first,
 * since what the scan reads (and its readahead) stays in the page cache
 * and counts as data afterwards.  Without SEEK_DATA, or with too many
 * pieces to walk, all of the file counts as data.
 */
static uint64_t data_end_of(int fd, uint64_t size)
{
	uint64_t off = 0, end = 0;
	unsigned int n;

	for (n = 0; n < 256 && off < size; n++) {
		off_t d = lseek(fd, (off_t)off, SEEK_DATA), h;

		if (d < 0)
			return errno == ENXIO ? end : size;
		h = lseek(fd, d, SEEK_HOLE);
		if (h < d)
			return size;
		end = (uint64_t)h;
		off = end;
	}
	/* Data up to the end of the file, or too many pieces. */
	return size;
}

int dqj_seg_scan(int fd, uint64_t seg, uint64_t size, bool last,
		 dqj_scan_fn fn, void *arg, uint64_t *end)
{
	struct scan s = { .fd = fd, .size = size, .cap = DQJ_CHUNK };
	struct dqj_seg_hdr hdr;
	struct dqj_mark mark;
	struct dqj_event ev;
	struct dqj_rec r;
	uint64_t off, nz_end, next, durable = 0, covered;
	bool have_mark = false, v2, bad[2] = { false, false };
	uint32_t nrec = 0, i;
	const uint8_t *p;
	int ret = 0;

	*end = DQJ_HDR_SIZE;
	if (size < DQJ_HDR_SIZE)
		return -EBADMSG;
	s.data_end = data_end_of(fd, size);
	s.buf = malloc(s.cap);
	if (!s.buf)
		return -ENOMEM;
	s.hdr = &hdr;
	p = scan_at(&s, 0, DQJ_HDR_SIZE, &ret);
	if (!p)
		goto out;
	ret = dqj_seg_hdr_decode(p, &hdr);
	if (ret)
		goto out;
	v2 = hdr.version != DQJ_VERSION_1;
	if (v2) {
		ret = scan_marks(&s, &hdr, &mark, &have_mark, bad);
		if (ret)
			goto out;
	}
	/*
	 * What was durable: the mark's end.  Without one, a sealed segment
	 * was complete when sealed (all of it counts as durable: damage is
	 * skipped), the last one is known durable nowhere (the first bad
	 * record is its tail, as in v1).
	 */
	if (have_mark)
		durable = mark.durable_end;
	else if (!last)
		durable = UINT64_MAX;
	ev = (struct dqj_event){
		.kind = DQJ_EV_SEGMENT, .seg = seg, .off = 0, .len = size,
		.hdr = &hdr, .mark = have_mark ? &mark : NULL,
	};
	ret = fn(arg, &ev);
	for (i = 0; !ret && i < 2; i++)
		if (bad[i])
			ret = emit(fn, arg, DQJ_EV_BAD_MARK, seg,
				   i ? DQJ_MARK_OFF1 : DQJ_MARK_OFF0,
				   DQJ_MARK_SIZE, NULL, NULL);
	if (ret)
		goto out;

	off = dqj_data_start(&hdr);
	covered = off;
	*end = off;
	while (off < size) {
		ret = scan_rec(&s, off, &r);
		if (!ret) {
good:
			ret = emit(fn, arg, DQJ_EV_RECORD, seg, off, r.len,
				   NULL, &r);
			if (!ret && r.type == DQJ_REC_SEAL && r.count != nrec)
				ret = emit(fn, arg, DQJ_EV_SEAL_MISMATCH, seg,
					   off, r.len, NULL, &r);
			if (ret)
				goto out;
			/* A SEAL counts the records before it, not SEALs. */
			if (r.type != DQJ_REC_SEAL)
				nrec++;
			off += dqj_align(r.len);
			*end = off;
			covered = off;
			continue;
		}
		if (ret != -ENODATA && ret != -EBADMSG)
			goto out;
		/*
		 * A zero length (or too few bytes for a record) ends the
		 * records when only zeros follow, as the preallocation left
		 * them.  Bytes after it are a record that did not land whole
		 * (its first sector lost), so they count as a bad record.
		 */
		ret = scan_nonzero_end(&s, off, &nz_end);
		if (ret)
			goto out;
		if (nz_end == off)
			break;
		covered = nz_end;
		/* A tear can only be where the durable records end. */
		if (last && off >= durable) {
			ret = emit(fn, arg, DQJ_EV_TORN, seg, off, nz_end - off,
				   NULL, NULL);
			goto out;
		}
		if (!v2) {
			/*
			 * v1: resynchronising on a plain CRC could land in a
			 * payload that holds a well-formed record: the rest
			 * of the segment is skipped, not searched.
			 */
			ret = emit(fn, arg, DQJ_EV_CORRUPT, seg, off,
				   nz_end - off, NULL, NULL);
			goto out;
		}
		/* Damage: this record is lost, the ones after it are not. */
		ret = scan_resync(&s, off, nz_end, &r, &next);
		if (ret)
			goto out;
		if (next >= nz_end) {
			/*
			 * Nothing good after it: past the durable end of a
			 * sealed segment that is a tear too (a crash between
			 * making its successor and sealing it).
			 */
			ret = emit(fn, arg, off >= durable ? DQJ_EV_TORN :
				   DQJ_EV_CORRUPT, seg, off, nz_end - off,
				   NULL, NULL);
			goto lost;
		}
		ret = emit(fn, arg, DQJ_EV_CORRUPT, seg, off, next - off, NULL,
			   NULL);
		if (ret)
			goto out;
		off = next;
		/* scan_resync() decoded it, and the window still holds it. */
		goto good;
	}
	ret = 0;
lost:
	/* Records that were durable and are not there: cut or zeroed. */
	if (!ret && have_mark && covered < durable)
		ret = emit(fn, arg, DQJ_EV_LOST, seg, covered,
			   durable - covered, NULL, NULL);
out:
	free(s.buf);
	return ret;
}

/* ---- the journal directory ----------------------------------------- */

void dqj_seg_name(char *buf, uint64_t seg)
{
	snprintf(buf, 21, "%016llx" DQJ_SUFFIX, (unsigned long long)seg);
}

/* <16 lowercase hex digits>.dqj: 1 and the number, else 0. */
static bool seg_name_parse(const char *name, uint64_t *seg)
{
	uint64_t v = 0;
	int i;

	if (strlen(name) != 16 + sizeof(DQJ_SUFFIX) - 1 ||
	    strcmp(name + 16, DQJ_SUFFIX))
		return false;
	for (i = 0; i < 16; i++) {
		char c = name[i];

		if (c >= '0' && c <= '9')
			v = v << 4 | (uint64_t)(c - '0');
		else if (c >= 'a' && c <= 'f')
			v = v << 4 | (uint64_t)(c - 'a' + 10);
		else
			return false;
	}
	*seg = v;
	return true;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * Read and check segment @seg's header: 0, -EXDEV (short, bad, or
 * numbered other than its name says), or the errno of open/read.  With
 * @fdp the file stays open there (read-only).
 */
static int seg_hdr_read(int dirfd, uint64_t seg, struct dqj_seg_hdr *h,
			int *fdp)
{
	uint8_t buf[DQJ_HDR_SIZE];
	char name[32];
	ssize_t n;
	int fd, ret;

	dqj_seg_name(name, seg);
	fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -errno;
	do {
		n = pread(fd, buf, sizeof(buf), 0);
	} while (n < 0 && errno == EINTR);
	ret = n < 0 ? -errno : 0;
	/* A header that is not all there is a damaged one. */
	if (!ret && (n != (ssize_t)sizeof(buf) ||
		     dqj_seg_hdr_decode(buf, h) || h->segment_no != seg))
		ret = -EXDEV;
	if (ret || !fdp)
		close(fd);
	else
		*fdp = fd;
	return ret;
}

/* The best sync mark of segment @seg: 0, -ENODATA (none, or v1), -errno. */
static int seg_mark_read(int dirfd, uint64_t seg, struct dqj_seg_hdr *h,
			 struct dqj_mark *m, unsigned int *bad)
{
	struct stat sb;
	int fd, ret;

	*bad = 0;
	ret = seg_hdr_read(dirfd, seg, h, &fd);
	if (ret)
		return ret;
	if (h->version == DQJ_VERSION_1)
		ret = -ENODATA;
	else if (fstat(fd, &sb) < 0)
		ret = -errno;
	else
		ret = dqj_marks_read(fd, h, (uint64_t)sb.st_size, m, bad);
	close(fd);
	return ret;
}

void dqj_dir_free(struct dqj_dir *d)
{
	free(d->segs);
	free(d->stale);
	memset(d, 0, sizeof(*d));
}

int dqj_dir_list(int dirfd, struct dqj_dir *d)
{
	uint64_t *v = NULL, seg, first;
	size_t n = 0, cap = 0, i, k;
	struct dqj_seg_hdr h;
	struct dqj_mark m;
	struct dirent *de;
	DIR *dir;
	int fd, ret = 0;

	memset(d, 0, sizeof(*d));
	/* fdopendir() owns its fd: give it one of its own. */
	fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	dir = fdopendir(fd);
	if (!dir) {
		ret = -errno;
		close(fd);
		return ret;
	}
	for (;;) {
		errno = 0;
		de = readdir(dir);
		if (!de) {
			ret = -errno;
			break;
		}
		if (!seg_name_parse(de->d_name, &seg))
			continue;
		if (n == cap) {
			uint64_t *nv;

			cap = cap ? 2 * cap : 16;
			nv = realloc(v, cap * sizeof(*v));
			if (!nv) {
				ret = -ENOMEM;
				break;
			}
			v = nv;
		}
		v[n++] = seg;
	}
	closedir(dir);
	if (ret)
		goto fail;
	if (!n)
		return 0;
	qsort(v, n, sizeof(*v), cmp_u64);
	/* Numbered from 1: a segment 0 is no segment of a journal. */
	if (!v[0]) {
		ret = -EXDEV;
		goto fail;
	}
	/* The newest names the journal and the segments it needs. */
	ret = seg_mark_read(dirfd, v[n - 1], &d->newest, &m, &d->bad_marks);
	if (ret && ret != -ENODATA)
		goto fail;
	first = v[0];
	if (!ret) {
		/* A sealed newest segment had a successor: it is gone. */
		if (m.flags & DQJ_MARK_F_SEALED) {
			d->missing = v[n - 1] + 1;
			ret = -ENODATA;
			goto fail;
		}
		first = m.first_segment;
		d->first_known = true;
	} else if (d->newest.version != DQJ_VERSION_1) {
		/*
		 * Both marks of the newest damaged: the other segments'
		 * marks still bound it from below (first_segment only
		 * grows), else every segment found counts.
		 */
		for (i = n - 1; i-- > 0;) {
			unsigned int b2;

			if (!seg_mark_read(dirfd, v[i], &h, &m, &b2) &&
			    h.journal_id == d->newest.journal_id &&
			    m.first_segment > first) {
				first = m.first_segment;
				break;
			}
		}
	}
	ret = 0;
	if (first > v[n - 1] || !first) {
		ret = -EXDEV;	/* not what a writer of this journal says */
		goto fail;
	}
	for (k = 0; k < n && v[k] < first; k++)
		;
	/* Every segment first .. newest, none missing. */
	for (i = k; i < n; i++) {
		if (v[i] != first + (i - k)) {
			d->missing = first + (i - k);
			ret = -ENODATA;
			goto fail;
		}
	}
	for (i = k; i + 1 < n; i++) {
		ret = seg_hdr_read(dirfd, v[i], &h, NULL);
		if (!ret && h.journal_id != d->newest.journal_id)
			ret = -EXDEV;
		if (ret)
			goto fail;
	}
	d->first = first;
	if (k) {
		d->stale = malloc(k * sizeof(*d->stale));
		if (!d->stale) {
			ret = -ENOMEM;
			goto fail;
		}
		memcpy(d->stale, v, k * sizeof(*v));
		d->nstale = k;
	}
	memmove(v, v + k, (n - k) * sizeof(*v));
	d->segs = v;
	d->nsegs = n - k;
	return 0;
fail:
	free(v);
	free(d->stale);
	d->stale = NULL;
	d->nstale = 0;
	d->segs = NULL;
	d->nsegs = 0;
	return ret;
}
