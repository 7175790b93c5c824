// SPDX-License-Identifier: LGPL-2.1 OR MIT
/*
 * fuzz_journal_scan: dqj_seg_scan() (user/src/dq_jformat.c) over
 * arbitrary bytes as a segment file (a memfd), scanned both as the
 * journal's last segment and as a sealed one; also dqj_rec_decode() and
 * dqj_seg_hdr_decode() on the raw bytes.
 *
 * Input: one mode byte, then the bytes of the segment.  A version 2
 * segment's file has its two sync marks alone in 4 KiB blocks and its
 * records from 12288: the input holds it squeezed, header (64 bytes),
 * mark 0, mark 1 (32 bytes each), records, and the harness lays them out
 * (version 1: the input is the file).
 *   bit 0  prepend a valid 64-byte header (slot_size, queue_flags (u32
 *          each) and hv (u8) from the input; hv bit 0: version 1, else
 *          2 with a fixed salt), else the input starts with its own; for
 *          v2 each mark is a valid one (hv bit 1: mark 0, seq 2; bit 2:
 *          mark 1, seq 1; bit 3: both flagged sealed; durable_end the
 *          records' start + 8 * a u16 of the input) or 32 input bytes
 *   bit 1  fix the records' CRCs: walk the image from the records' start
 *          the way a scan would (and every 8 bytes past what does not
 *          parse) and write the right (seeded) CRC into each record whose
 *          length fits, so the fuzzer gets past the CRC to the checks
 *          behind it
 *   bit 2  (with a high nibble of 0xb: these are slow) put a valid RETIRE of ~1 MiB (zero entries) before the input's
 *          records: they then straddle the scan's 1 MiB read window
 *   bit 3  (high nibble 0xb) zero-extend the file to 1.125 MiB (a record longer than the
 *          window is possible: its CRC is checked piecewise)
 *
 * Invariants (abort on violation): the scan returns 0 or -EBADMSG (no
 * read error: the file does not change); a SEGMENT event first and only
 * for a header that decodes, BAD_MARK events right after it (v2 only);
 * every RECORD within the file, 8-byte aligned, after the previous one,
 * of a length its type allows, its seeded CRC right, its payload/entries
 * the file's bytes (RETIRE: 16 + 8 * count == len); CORRUPT in a v1
 * segment only sealed and last; TORN at most once and last, starting
 * where good data ends; LOST at most once and last; *end within the file
 * and right after the last good record; a header that decodes re-encodes
 * to the same 64 bytes; and the events and *end are exactly those of a
 * plain reference scan of the image in memory (ref_scan(): no read
 * window), which checks the window, durable-end and resynchronisation
 * logic.
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/mman.h>
#include <unistd.h>

#include "dq_jformat.h"
#include "fuzz_common.h"

#define WINDOW		(1U << 20)	/* DQJ_CHUNK in dq_jformat.c */
#define BIG_SIZE	(WINDOW + (128U << 10))

static uint32_t rd32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return v;
}

static void wr32(uint8_t *p, uint32_t v)
{
	memcpy(p, &v, 4);
}

/* The header the image has (a bad one: v1's plain CRCs, from 64). */
static void img_hdr(const uint8_t *img, size_t size, struct dqj_seg_hdr *h)
{
	if (size < DQJ_HDR_SIZE || dqj_seg_hdr_decode(img, h)) {
		memset(h, 0, sizeof(*h));
		h->version = DQJ_VERSION_1;
	}
}

/* Right CRCs into what looks like records, from the records' start on. */
static void fix_crcs(uint8_t *img, size_t from, size_t to, size_t size)
{
	struct dqj_seg_hdr h;
	size_t off;

	img_hdr(img, size, &h);
	off = from < dqj_data_start(&h) ? dqj_data_start(&h) : from;
	while (off + DQJ_REC_HDR_SIZE <= size && off < to) {
		uint32_t len = rd32(img + off + 4);

		if (len >= DQJ_REC_HDR_SIZE && len <= size - off) {
			wr32(img + off, dqj_crc32c_update(dqj_seed(&h, off),
							  img + off + 4,
							  len - 4));
			off += dqj_align(len);
		} else {
			off += DQJ_ALIGN;
		}
	}
}

/* An event as compared with the reference scan. */
struct ev {
	int kind;
	uint64_t off, len;
};

#define MAX_EV	4096

struct scan_ck {
	struct ev ev[MAX_EV];
	unsigned int nev;	/* events recorded (at most MAX_EV) */
	const uint8_t *img;
	size_t size;
	bool last;
	unsigned int events;
	bool seg_seen, torn_seen, lost_seen, rec_seen;
	struct dqj_seg_hdr hdr;
	uint64_t next;		/* first offset the next record may have */
	uint64_t good_end;	/* after the last good record */
	uint64_t seal_off;	/* offset of the last SEAL, or ~0 */
};

static int scan_cb(void *arg, const struct dqj_event *ev)
{
	struct scan_ck *c = arg;
	const struct dqj_rec *r = ev->rec;

	FZ_CHECK(!c->torn_seen, "an event after TORN");
	FZ_CHECK(!c->lost_seen, "an event after LOST");
	c->events++;
	if (c->nev < MAX_EV)
		c->ev[c->nev++] = (struct ev){ ev->kind, ev->off, ev->len };
	switch (ev->kind) {
	case DQJ_EV_SEGMENT:
		FZ_CHECK(c->events == 1 && !c->seg_seen && ev->off == 0 &&
			 ev->hdr, "SEGMENT event not first");
		FZ_CHECK(!ev->mark || ev->hdr->version != DQJ_VERSION_1,
			 "a sync mark in a v1 segment");
		c->seg_seen = true;
		c->hdr = *ev->hdr;
		c->next = c->good_end = dqj_data_start(ev->hdr);
		return 0;
	case DQJ_EV_BAD_MARK:
		FZ_CHECK(c->seg_seen && !c->rec_seen &&
			 c->hdr.version != DQJ_VERSION_1 &&
			 (ev->off == DQJ_MARK_OFF0 || ev->off == DQJ_MARK_OFF1),
			 "BAD_MARK at %llu", (unsigned long long)ev->off);
		return 0;
	case DQJ_EV_LOST:
		FZ_CHECK(c->hdr.version != DQJ_VERSION_1 && ev->len &&
			 ev->off >= c->good_end, "LOST at %llu+%llu",
			 (unsigned long long)ev->off,
			 (unsigned long long)ev->len);
		c->lost_seen = true;
		return 0;
	case DQJ_EV_RECORD:
		FZ_CHECK(c->seg_seen, "record before the header");
		c->rec_seen = true;
		FZ_CHECK(ev->off >= c->next && ev->off % DQJ_ALIGN == 0,
			 "record at %llu, expected >= %llu, aligned",
			 (unsigned long long)ev->off, (unsigned long long)c->next);
		FZ_CHECK(r && r->len == ev->len && r->len >= DQJ_REC_HDR_SIZE &&
			 ev->off + r->len <= c->size,
			 "record at %llu len %u beyond the file (%zu)",
			 (unsigned long long)ev->off, r ? r->len : 0, c->size);
		FZ_CHECK(dqj_crc32c_update(dqj_seed(&c->hdr, ev->off),
					   c->img + ev->off + 4, r->len - 4) ==
			 rd32(c->img + ev->off), "record CRC wrong");
		switch (r->type) {
		case DQJ_REC_COMMIT:
			FZ_CHECK(r->len == DQJ_COMMIT_SIZE + (uint64_t)r->payload_len &&
				 !(r->flags & ~DQJ_COMMIT_F_ALL),
				 "COMMIT shape");
			FZ_CHECK(!memcmp(r->payload, c->img + ev->off +
					 DQJ_COMMIT_SIZE, r->payload_len),
				 "COMMIT payload is not the file's");
			break;
		case DQJ_REC_RETIRE:
			FZ_CHECK(r->len == dqj_retire_bytes(r->count) &&
				 (uint64_t)r->count * 8 + 16 == r->len,
				 "RETIRE count %u len %u", r->count, r->len);
			FZ_CHECK(!memcmp(r->entries, c->img + ev->off + 16,
					 8ULL * r->count),
				 "RETIRE entries are not the file's");
			break;
		case DQJ_REC_SEAL:
			FZ_CHECK(r->len == DQJ_SEAL_SIZE, "SEAL len %u", r->len);
			c->seal_off = ev->off;
			break;
		default:
			FZ_CHECK(0, "record type %u", r->type);
		}
		c->next = ev->off + dqj_align(r->len);
		c->good_end = c->next;
		return 0;
	case DQJ_EV_CORRUPT:
		FZ_CHECK(!c->last || c->hdr.version != DQJ_VERSION_1,
			 "CORRUPT in a v1 last segment");
		c->rec_seen = true;
		FZ_CHECK(ev->off >= c->next && ev->len &&
			 ev->off + ev->len <= c->size, "CORRUPT out of range");
		c->next = ev->off + ev->len;
		return 0;
	case DQJ_EV_TORN:
		FZ_CHECK(c->last || c->hdr.version != DQJ_VERSION_1,
			 "TORN in a sealed v1 segment");
		FZ_CHECK(ev->off == c->good_end && ev->len &&
			 ev->off + ev->len <= c->size,
			 "TORN at %llu+%llu, good data ends at %llu, file %zu",
			 (unsigned long long)ev->off, (unsigned long long)ev->len,
			 (unsigned long long)c->good_end, c->size);
		c->torn_seen = true;
		return 0;
	case DQJ_EV_SEAL_MISMATCH:
		FZ_CHECK(r && r->type == DQJ_REC_SEAL && ev->off == c->seal_off,
			 "SEAL_MISMATCH not after its SEAL");
		return 0;
	}
	FZ_CHECK(0, "event kind %d", ev->kind);
	return 0;
}


/*
 * The reference: docs/journal.md's scan over the whole image in memory,
 * written plainly (no read window, no resync shortcuts), with the
 * library's record decoder.  The library's events must be these.
 */
__attribute__((noinline)) static size_t ref_nz_end(const uint8_t *img, size_t from, size_t size)
{
	size_t i = size;

	while (i > from && !img[i - 1])
		i--;
	return i;
}

static const struct dqj_seg_hdr *ref_h;	/* the image's, for seeds */

/* 0: a good record at @off; -ENODATA: the records end; -EBADMSG. */
static int ref_rec(const uint8_t *img, size_t off, size_t size,
		   struct dqj_rec *r)
{
	uint32_t len;

	if (size - off < DQJ_REC_HDR_SIZE)
		return -ENODATA;
	len = rd32(img + off + 4);
	if (!len)
		return -ENODATA;
	/* A record and its padding must be in the file. */
	if (len < DQJ_REC_HDR_SIZE ||
	    (((uint64_t)len + 7) & ~7ULL) > size - off)
		return -EBADMSG;
	return dqj_rec_decode(img + off, len, dqj_seed(ref_h, off), r) ?
	       -EBADMSG : 0;
}

/*
 * docs/journal.md, Recovery step 3: the durable end of the best valid
 * mark (none: a sealed segment all durable, the last one nowhere); a
 * bad record before it skipped with a resync, at or after it in the
 * last segment the torn tail; v1 never resynchronises; LOST for durable
 * bytes the records do not reach.
 */
static unsigned int ref_scan(const uint8_t *img, size_t size, bool last,
			     struct ev *ev, uint64_t *end)
{
	static const uint32_t moff[2] = { DQJ_MARK_OFF0, DQJ_MARK_OFF1 };
	struct dqj_seg_hdr h;
	struct dqj_mark m, best = { 0 };
	unsigned int n = 0, i;
	size_t off, nz, pos, covered;
	uint64_t durable;
	bool have = false, v2;
	struct dqj_rec r;

	img_hdr(img, size, &h);
	ref_h = &h;
	v2 = h.version != DQJ_VERSION_1;
	off = dqj_data_start(&h);
	*end = off;
	ev[n++] = (struct ev){ DQJ_EV_SEGMENT, 0, size };
	for (i = 0; v2 && i < 2; i++) {
		int ret = size >= moff[i] + DQJ_MARK_SIZE ?
			  dqj_mark_decode(img + moff[i], &h, moff[i], &m) :
			  -EBADMSG;

		if (!ret && (!have || m.seq > best.seq)) {
			best = m;
			have = true;
		}
		if (ret == -EBADMSG)
			ev[n++] = (struct ev){ DQJ_EV_BAD_MARK, moff[i],
					       DQJ_MARK_SIZE };
	}
	durable = have ? best.durable_end : last ? 0 : UINT64_MAX;
	covered = off;
	while (off < size && n + 4 < MAX_EV) {
		if (!ref_rec(img, off, size, &r)) {
good:
			ev[n++] = (struct ev){ DQJ_EV_RECORD, off, r.len };
			off += dqj_align(r.len);
			*end = off;
			covered = off;
			continue;
		}
		nz = ref_nz_end(img, off, size);
		if (nz == off)
			break;
		covered = nz;
		if (last && off >= durable) {
			ev[n++] = (struct ev){ DQJ_EV_TORN, off, nz - off };
			return n;
		}
		if (!v2) {
			ev[n++] = (struct ev){ DQJ_EV_CORRUPT, off, nz - off };
			return n;
		}
		for (pos = off + 8; pos < nz; pos += 8)
			if (!ref_rec(img, pos, size, &r))
				break;
		if (pos >= nz) {
			ev[n++] = (struct ev){ off >= durable ? DQJ_EV_TORN :
					       DQJ_EV_CORRUPT, off, nz - off };
			break;
		}
		ev[n++] = (struct ev){ DQJ_EV_CORRUPT, off, pos - off };
		off = pos;
		goto good;
	}
	if (off < size && n + 4 >= MAX_EV)
		return 0;
	if (have && covered < durable)
		ev[n++] = (struct ev){ DQJ_EV_LOST, covered,
				       durable - covered };
	return n;
}

static int memfd = -1;
static uint8_t *img_buf;
static size_t img_cap, img_used;

static void scan_one(const uint8_t *img, size_t size, bool last)
{
	static struct scan_ck c;
	uint64_t end = ~0ULL;
	int ret;

	c.nev = 0;
	c.img = img;
	c.size = size;
	c.last = last;
	c.events = 0;
	c.seg_seen = c.torn_seen = c.lost_seen = c.rec_seen = false;
	c.next = c.good_end = DQJ_HDR_SIZE;
	c.seal_off = ~0ULL;

	ret = dqj_seg_scan(memfd, 1, size, last, scan_cb, &c, &end);
	FZ_CHECK(ret == 0 || ret == -EBADMSG, "scan: %d", ret);
	if (ret) {
		/* Short file or a bad header: nothing reported. */
		FZ_CHECK(!c.seg_seen || c.events == 1, "events after a bad header");
		return;
	}
	FZ_CHECK(c.seg_seen, "scan 0 without a header");
	FZ_CHECK(end >= dqj_data_start(&c.hdr) && end <= size,
		 "*end %llu outside the file (%zu bytes, %s)",
		 (unsigned long long)end, size, last ? "last" : "sealed");
	FZ_CHECK(end == c.good_end, "*end %llu, last good record ends at %llu",
		 (unsigned long long)end, (unsigned long long)c.good_end);

	/* The same events as the reference scan (SEAL_MISMATCH aside). */
	{
		static struct ev want[MAX_EV];
		uint64_t ref_end;
		unsigned int nw = ref_scan(img, size, last, want, &ref_end);
		unsigned int i, k = 0;

		if (!nw || c.nev >= MAX_EV)
			return;		/* too many to compare */
		for (i = 0; i < c.nev; i++) {
			if (c.ev[i].kind == DQJ_EV_SEAL_MISMATCH)
				continue;
			FZ_CHECK(k < nw && c.ev[i].kind == want[k].kind &&
				 c.ev[i].off == want[k].off &&
				 c.ev[i].len == want[k].len,
				 "%s scan event %u: kind %d off %llu len %llu, "
				 "reference: kind %d off %llu len %llu", last ?
				 "last" : "sealed", i, c.ev[i].kind,
				 (unsigned long long)c.ev[i].off,
				 (unsigned long long)c.ev[i].len,
				 k < nw ? want[k].kind : -1,
				 k < nw ? (unsigned long long)want[k].off : 0,
				 k < nw ? (unsigned long long)want[k].len : 0);
			k++;
		}
		FZ_CHECK(k == nw, "%u events, the reference has %u", k, nw);
		FZ_CHECK(end == ref_end, "*end %llu, reference %llu",
			 (unsigned long long)end, (unsigned long long)ref_end);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz f = { .p = data, .n = size };
	uint8_t mode = fz_u8(&f);
	/* The slow shapes (1 MiB files) only with a high nibble of 0xb. */
	bool filler = (mode & 4) && (mode >> 4) == 0xb;
	bool big = (mode & 8) && (mode >> 4) == 0xb;
	size_t at = 0, len, cap, data_end;
	uint8_t *img;
	struct dqj_seg_hdr h;
	struct dqj_rec r;

	if (memfd < 0) {
		memfd = memfd_create("fuzz_seg", MFD_CLOEXEC);
		FZ_CHECK(memfd >= 0, "memfd_create");
	}
	cap = fz_left(&f) + DQJ_V2_DATA + (filler ? WINDOW : 0) + 64;
	if (big && cap < BIG_SIZE)
		cap = BIG_SIZE;
	/* One buffer, kept: zeroing what the last input used is cheaper. */
	if (cap > img_cap) {
		free(img_buf);
		img_buf = calloc(1, cap);
		FZ_CHECK(img_buf, "calloc");
		img_cap = cap;
	} else {
		/* Everything the last input wrote is below its file size. */
		memset(img_buf, 0, img_used);
	}
	img = img_buf;
	img_used = 0;
	if (mode & 1) {
		uint32_t ss = fz_u32(&f), qf = fz_u32(&f), i;
		uint8_t hv = fz_u8(&f);
		struct dqj_seg_hdr sh = {
			.version = hv & 1 ? DQJ_VERSION_1 : DQJ_VERSION,
			.salt = hv & 1 ? 0 : 0x5a175a17c0ffee00ULL,
			.journal_id = 0x1234, .segment_no = 1, .first_msg_id = 1,
			.created_ns = 1, .slot_size = ss, .queue_flags = qf,
		};

		dqj_seg_hdr_encode(img, &sh);
		at = dqj_data_start(&sh);
		for (i = 0; !(hv & 1) && i < 2; i++) {
			uint32_t mo = i ? DQJ_MARK_OFF1 : DQJ_MARK_OFF0;

			if (hv & (2U << i)) {
				struct dqj_mark m = {
					.flags = hv & 8 ? DQJ_MARK_F_SEALED : 0,
					.seq = i ? 1 : 2,
					.durable_end = at + 8ULL * fz_u16(&f),
					.first_segment = 1,
				};

				dqj_mark_encode(img + mo, &sh, &m);
			} else {
				fz_bytes(&f, img + mo, DQJ_MARK_SIZE);
			}
		}
	} else if (fz_left(&f) >= DQJ_HDR_SIZE &&
		   !dqj_seg_hdr_decode(f.p, &h) && h.version != DQJ_VERSION_1) {
		/* A v2 file, squeezed: header, mark 0, mark 1, records. */
		fz_bytes(&f, img, DQJ_HDR_SIZE);
		fz_bytes(&f, img + DQJ_MARK_OFF0, DQJ_MARK_SIZE);
		fz_bytes(&f, img + DQJ_MARK_OFF1, DQJ_MARK_SIZE);
		at = DQJ_V2_DATA;
	} else if (filler) {
		/* The input's first 64 bytes are still the header. */
		fz_bytes(&f, img, DQJ_HDR_SIZE);
		at = DQJ_HDR_SIZE;
	}
	if (filler) {
		/* One RETIRE up to a few hundred bytes short of 1 MiB. */
		uint32_t count = (WINDOW - 512 - (uint32_t)at) / 8 - 2;
		struct dqj_seg_hdr fh;

		img_hdr(img, at, &fh);
		wr32(img + at + 4, dqj_retire_bytes(count));
		img[at + 8] = DQJ_REC_RETIRE;
		wr32(img + at + 12, count);
		wr32(img + at, dqj_crc32c_update(dqj_seed(&fh, at), img + at + 4,
						 dqj_retire_bytes(count) - 4));
		at += dqj_retire_bytes(count);
	}
	len = fz_left(&f);
	memcpy(img + at, f.p, len);
	len += at;
	data_end = len;
	if (big && len < BIG_SIZE)
		len = BIG_SIZE;
	/* Only the input's own bytes: not 1 MiB of zeros 8 bytes at a time. */
	if (mode & 2)
		fix_crcs(img, filler ? at : 0,
			 data_end, len);

	/* The raw decoders. */
	if (len >= DQJ_HDR_SIZE && !dqj_seg_hdr_decode(img, &h)) {
		uint8_t again[DQJ_HDR_SIZE];

		dqj_seg_hdr_encode(again, &h);
		FZ_CHECK(!memcmp(again, img, DQJ_HDR_SIZE),
			 "header does not re-encode to itself");
	}
	if (len > DQJ_HDR_SIZE && !dqj_rec_decode(img + DQJ_HDR_SIZE,
						  len - DQJ_HDR_SIZE, 0, &r))
		FZ_CHECK(r.len <= len - DQJ_HDR_SIZE, "decoded record too long");

	img_used = len;
	/* The bytes up to the input's end; the zeros after it a hole. */
	FZ_CHECK(ftruncate(memfd, 0) == 0, "ftruncate");
	FZ_CHECK(pwrite(memfd, img, data_end, 0) == (ssize_t)data_end, "pwrite");
	FZ_CHECK(ftruncate(memfd, (off_t)len) == 0, "ftruncate");
	scan_one(img, len, true);
	scan_one(img, len, false);
	return 0;
}
