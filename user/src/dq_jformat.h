/* SPDX-License-Identifier: LGPL-2.1 OR MIT */
/*
 * The journal's on-disk format (docs/journal.md): CRC32C, segment headers,
 * records, and the scan of a segment and of a journal directory.  No
 * queue state here: dq_journal.c writes through it and recovers through
 * it, dqctl inspects and verifies through it.
 *
 * Every function returns 0 or a negative errno; nothing here keeps global
 * state.  All integers on disk are little-endian.
 */
#ifndef DQ_JFORMAT_H
#define DQ_JFORMAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define DQJ_MAGIC		"DQJRNL01"	/* 8 bytes, no NUL */
#define DQJ_VERSION		2U		/* what the library writes */
#define DQJ_VERSION_1		1U		/* still read (docs/journal.md) */
#define DQJ_HDR_SIZE		64U		/* segment header */
/*
 * Version 2: two sync marks, each alone in a 4 KiB block of its own (a
 * torn rewrite of one never touches the other or the header), then the
 * records.  Version 1 has no marks; its records start at DQJ_HDR_SIZE.
 */
#define DQJ_MARK_SIZE		32U
#define DQJ_MARK_OFF0		4096U
#define DQJ_MARK_OFF1		8192U
#define DQJ_V2_DATA		12288U		/* first record of a v2 segment */
#define DQJ_MARK_MAGIC		0x4b4dU		/* "MK" */
#define DQJ_MARK_F_SEALED	1U	/* with the SEAL: a successor exists */
#define DQJ_REC_HDR_SIZE	16U
#define DQJ_COMMIT_SIZE		48U		/* + payload */
#define DQJ_SEAL_SIZE		32U
#define DQJ_ALIGN		8U
#define DQJ_SUFFIX		".dqj"
#define DQJ_LOCK_NAME		"LOCK"

/* Record types */
#define DQJ_REC_COMMIT		1U
#define DQJ_REC_RETIRE		2U
#define DQJ_REC_SEAL		3U

/* COMMIT flags */
#define DQJ_COMMIT_F_KEY	(1U << 0)
#define DQJ_COMMIT_F_REPLACE	(1U << 1)
#define DQJ_COMMIT_F_RELOC	(1U << 2)
#define DQJ_COMMIT_F_ALL	(DQJ_COMMIT_F_KEY | DQJ_COMMIT_F_REPLACE | \
				 DQJ_COMMIT_F_RELOC)

/* Segment header queue_flags */
#define DQJ_Q_F_KEYS		(1U << 0)
#define DQJ_Q_F_TRACK		(1U << 1)
#define DQJ_Q_F_NAMED		(1U << 2)	/* a named queue's, shared */

/* RETIRE entry: msg_id in the low 56 bits, reason in the top 8. */
#define DQJ_RETIRE_ID_MASK	((1ULL << 56) - 1)
#define DQJ_RETIRE_ENTRY(id, reason) \
	(((uint64_t)(id) & DQJ_RETIRE_ID_MASK) | ((uint64_t)(reason) << 56))
#define DQJ_RETIRE_ID(e)	((e) & DQJ_RETIRE_ID_MASK)
#define DQJ_RETIRE_REASON(e)	((unsigned int)((e) >> 56))

enum dqj_retire_reason {
	DQJ_RETIRE_DONE = 1,
	DQJ_RETIRE_FAILED = 2,
	DQJ_RETIRE_CANCELLED = 3,
	DQJ_RETIRE_REPLACED = 4,
	DQJ_RETIRE_REJECTED = 5,
};

/* Record sizes with padding. */
static inline uint32_t dqj_align(uint32_t n)
{
	return (n + DQJ_ALIGN - 1) & ~(DQJ_ALIGN - 1);
}

static inline uint32_t dqj_commit_bytes(uint32_t payload_len)
{
	return dqj_align(DQJ_COMMIT_SIZE + payload_len);
}

static inline uint32_t dqj_retire_bytes(uint32_t count)
{
	return DQJ_REC_HDR_SIZE + 8U * count;
}

/*
 * CRC32C (Castagnoli, RFC 3720): isa-l's crc32_iscsi(), which uses the
 * SSE4.2 crc32 instruction where the CPU has it.  dqj_crc32c(buf, n) is
 * the standard value (RFC 3720 B.4: 32 zero bytes -> 0x8a9136aa);
 * dqj_crc32c_update() continues a running CRC over several pieces.
 */
uint32_t dqj_crc32c(const void *buf, size_t len);
uint32_t dqj_crc32c_update(uint32_t crc, const void *buf, size_t len);

/* A segment header, decoded. */
struct dqj_seg_hdr {
	uint32_t version;	/* DQJ_VERSION_1 or DQJ_VERSION; 0 encodes 2 */
	uint64_t salt;		/* v2: random, mixed into every checksum */
	uint64_t journal_id;
	uint64_t segment_no;
	uint64_t first_msg_id;
	uint64_t created_ns;
	uint32_t slot_size;
	uint32_t queue_flags;
};

/*
 * Encode @h into @buf (DQJ_HDR_SIZE bytes), CRC included: version 1 (no
 * salt: only journal_gen and the fuzz seeds still write it) or 2.
 */
void dqj_seg_hdr_encode(void *buf, const struct dqj_seg_hdr *h);
/*
 * Decode and check a header: 0; -EBADMSG: wrong magic, version, CRC or
 * (v1) a nonzero reserved field.
 */
int dqj_seg_hdr_decode(const void *buf, struct dqj_seg_hdr *h);

/* Where the records of a segment with header @h start. */
static inline uint64_t dqj_data_start(const struct dqj_seg_hdr *h)
{
	return h->version == DQJ_VERSION_1 ? DQJ_HDR_SIZE : DQJ_V2_DATA;
}

/*
 * The running checksum a record (or mark) at byte @off of the segment
 * with header @h starts from.  v2: CRC32C of (salt, off), both u64 LE, so
 * the checksum of a record is CRC32C(salt || off || bytes 4 .. len): bytes
 * that did not come from this segment's writer at this very offset (a
 * payload holding a well-formed record, a block copied from elsewhere)
 * match only by guessing the 64-bit salt.  v1: 0, the plain CRC32C.
 */
uint32_t dqj_seed(const struct dqj_seg_hdr *h, uint64_t off);

/*
 * A sync mark (v2): what the writer knew durable when it last synced the
 * segment.  Before every fdatasync of the active segment (and at its
 * creation, and before its SEAL's sync) the writer pwrites the next one,
 * alternating between DQJ_MARK_OFF0 (even seq) and DQJ_MARK_OFF1 (odd).
 * Layout: crc (seeded with dqj_seed(h, its offset)) over bytes 4..32,
 * magic u16, flags u16, seq u64, durable_end u64, first_segment u64.
 */
struct dqj_mark {
	uint32_t flags;		/* DQJ_MARK_F_* */
	uint64_t seq;		/* from 1, +1 per mark written */
	uint64_t durable_end;	/* every record before it was complete */
	uint64_t first_segment;	/* the oldest segment the journal needs */
};

static inline uint32_t dqj_mark_off(uint64_t seq)
{
	return seq & 1 ? DQJ_MARK_OFF1 : DQJ_MARK_OFF0;
}

/* Encode @m into @buf (DQJ_MARK_SIZE bytes) for its offset in @h's segment. */
void dqj_mark_encode(void *buf, const struct dqj_seg_hdr *h,
		     const struct dqj_mark *m);
/*
 * Decode the mark at offset @off (DQJ_MARK_OFF0/1): 0; -ENODATA: all
 * zero (never written); -EBADMSG: damaged (CRC, magic, or a seq that
 * does not belong at @off).
 */
int dqj_mark_decode(const void *buf, const struct dqj_seg_hdr *h,
		    uint64_t off, struct dqj_mark *m);
/*
 * Read both marks of the v2 segment @fd (@size bytes): *@best the valid
 * one with the highest seq; *@bad (may be NULL) the number of damaged
 * ones (a mark past the end of the file counts as damaged).  0, -ENODATA
 * (no valid mark), or -errno of reading.
 */
int dqj_marks_read(int fd, const struct dqj_seg_hdr *h, uint64_t size,
		   struct dqj_mark *best, unsigned int *bad);

/* A record, decoded (pointers into the caller's buffer). */
struct dqj_rec {
	uint32_t type;		/* DQJ_REC_* */
	uint32_t flags;
	uint32_t len;		/* without padding */
	uint32_t count;
	/* COMMIT */
	uint64_t msg_id;
	uint64_t user_data;
	int64_t due_rt_ns;
	uint32_t payload_len;
	uint16_t attempts;
	const void *payload;
	/* RETIRE: count entries, little-endian u64 (read with dqj_le64) */
	const void *entries;
	/* SEAL */
	uint64_t last_msg_id;
};

/*
 * Every encoder and the decoder take @seed, dqj_seed() of the segment
 * and the record's offset in it: a record is only good where its writer
 * put it.
 *
 * Encode the 48-byte head of a COMMIT whose payload is @payload (its CRC
 * covers the payload: the payload is read here, not copied).  @buf gets
 * DQJ_COMMIT_SIZE bytes; the caller writes the payload after it and
 * dqj_commit_bytes(len) - DQJ_COMMIT_SIZE - len zero bytes of padding.
 */
void dqj_commit_encode(void *buf, uint32_t seed, uint32_t flags,
		       uint64_t msg_id, uint64_t user_data, int64_t due_rt_ns,
		       uint16_t attempts, const void *payload,
		       uint32_t payload_len);
/* A RETIRE of @count entries into @buf (dqj_retire_bytes(count) bytes). */
void dqj_retire_encode(void *buf, uint32_t seed, const uint64_t *entries,
		       uint32_t count);
/* A SEAL into @buf (DQJ_SEAL_SIZE bytes). */
void dqj_seal_encode(void *buf, uint32_t seed, uint32_t records,
		     uint64_t last_msg_id);

/*
 * Decode the record at @buf with @avail bytes readable: 0 and *@r filled;
 * -ENODATA: len 0 (the end of the segment's records); -EBADMSG: bad CRC,
 * impossible length (< 16, > avail, wrong size for its type), unknown
 * type or flags.
 */
int dqj_rec_decode(const void *buf, size_t avail, uint32_t seed,
		   struct dqj_rec *r);

static inline uint64_t dqj_le64(const void *p)
{
	uint64_t v;

	__builtin_memcpy(&v, p, 8);
	return v;	/* x86-64 and every target dq builds for: LE */
}

/* ---- scanning ------------------------------------------------------ */

/* What a scan reports, one call per item. */
enum dqj_event_kind {
	DQJ_EV_SEGMENT,		/* a segment header (seg, hdr; mark: its
				 * best sync mark, NULL if none or v1) */
	DQJ_EV_RECORD,		/* a good record (seg, off, rec) */
	DQJ_EV_CORRUPT,		/* a bad record, skipped (seg, off, bytes
				 * skipped in len) */
	DQJ_EV_TORN,		/* the torn tail: bad bytes at or after the
				 * durable end with no good record after
				 * them (seg, off: where good data ends;
				 * len: bytes after it up to the last
				 * nonzero byte) */
	DQJ_EV_SEAL_MISMATCH,	/* SEAL says count records, found others
				 * (seg, off, rec) */
	DQJ_EV_BAD_MARK,	/* a damaged sync mark (seg, off) */
	DQJ_EV_LOST,		/* the records end before the mark's durable
				 * end: bytes [off, off + len) that were
				 * durable are gone (truncated, zeroed) */
};

struct dqj_event {
	enum dqj_event_kind kind;
	uint64_t seg;			/* segment number */
	uint64_t off;			/* byte offset in the segment file */
	uint64_t len;
	const struct dqj_seg_hdr *hdr;	/* DQJ_EV_SEGMENT */
	const struct dqj_mark *mark;	/* DQJ_EV_SEGMENT */
	const struct dqj_rec *rec;	/* DQJ_EV_RECORD, _SEAL_MISMATCH */
};

/* Return nonzero to stop the scan (returned as is). */
typedef int (*dqj_scan_fn)(void *arg, const struct dqj_event *ev);

/* What dqj_dir_list() found. */
struct dqj_dir {
	uint64_t *segs;		/* the journal's segments, first .. newest */
	size_t nsegs;
	uint64_t *stale;	/* present, below first: left by a
				 * reclamation cut short, not read */
	size_t nstale;
	struct dqj_seg_hdr newest;
	uint64_t first;		/* the oldest segment the journal needs */
	bool first_known;	/* from a sync mark (else the oldest found) */
	unsigned int bad_marks;	/* damaged marks of the newest segment */
	uint64_t missing;	/* -ENODATA: the first missing segment */
};

/*
 * A journal directory's segments, checked (docs/journal.md, Recovery
 * step 2).  The newest segment's best sync mark names the oldest segment
 * the journal needs (first_segment, F): every segment F .. newest must be
 * there; segments below F are leftovers of a reclamation cut short
 * (listed in stale, their headers not read).  Without a valid mark in
 * the newest segment (both damaged, or v1) F is the highest first_segment
 * of any other segment's marks, else the oldest segment found.  A v2
 * newest segment that is sealed must have had a successor (a new segment
 * is made before the old one is sealed): it is missing.  Every header of
 * F .. newest good and of one journal_id.  0 segments is success (a new
 * journal).  Errors: -ENODATA (a segment missing, d->missing), -EXDEV (a
 * header bad or of another journal_id), or the errno of opendir/open/read.
 * Files other than <16 hex>.dqj are ignored.  Free with dqj_dir_free().
 */
int dqj_dir_list(int dirfd, struct dqj_dir *d);
void dqj_dir_free(struct dqj_dir *d);

/* "%016llx.dqj" of @seg into @buf (at least 21 bytes). */
void dqj_seg_name(char *buf, uint64_t seg);

/*
 * Scan segment @seg (open read-only as @fd, @size bytes) calling @fn for
 * its header and every record.  @last: it is the journal's newest
 * segment.  v2: a bad record before the best mark's durable end (of any
 * segment) is corruption: skipped (DQJ_EV_CORRUPT) and the scan
 * resynchronises at the next 8-byte boundary where a record with a good
 * salted checksum starts; in the last segment the first bad record at or
 * after the durable end (or anywhere, without a valid mark) starts the
 * torn tail (DQJ_EV_TORN).  Records ending before the durable end:
 * DQJ_EV_LOST.  v1 (no salt, so resynchronising could land in a
 * payload): a bad record ends the scan, as the torn tail of the last
 * segment, else as DQJ_EV_CORRUPT up to the last nonzero byte.  *@end
 * gets the offset after the last good record (where a writer continues;
 * in the last segment everything nonzero after it is cut).  Reads the
 * file with pread in large chunks (a record may straddle a chunk).
 * Returns 0, @fn's nonzero value, -EBADMSG (a bad header), or -errno of
 * reading.
 */
int dqj_seg_scan(int fd, uint64_t seg, uint64_t size, bool last,
		 dqj_scan_fn fn, void *arg, uint64_t *end);

/* ---- the state of a named queue's journal (DIR/STATE) -------------- */

/* One segment file. */
struct dqj_seg {
	uint64_t no;
	uint64_t live;		/* messages whose current record is here */
	uint64_t used;		/* bytes written (end of the last record) */
	uint64_t last_id;	/* highest msg id committed here */
	uint32_t records;
	uint32_t sealed;
};

/* Where a slot's message is in the journal (16 bytes a slot). */
struct dqj_slot {
	uint64_t id;		/* 0: no journaled message holds the slot */
	uint32_t seg;		/* segment number (< 2^32 segments) */
	uint32_t off;		/* record offset in it (segments <= 1 GiB) */
};

#define DQJ_STATE_NAME		"STATE"
#define DQJ_STATE_MAGIC		0x3130455441545344ULL	/* "DSTATE01" */

/*
 * The journal's in-memory state: the segments, where each slot's message
 * is, the next message id.  A private queue keeps it in its own memory.
 * A named queue's processes share it: it is the file DIR/STATE, mapped
 * by every process attached with the journal, and every field is read
 * and written under the write lock (flock() of that file, taken inside
 * jlock: dqj_wlock()).  It is never synced: recovery rebuilds it from the
 * segments, and `instance` says which queue it describes (the kernel's
 * dq_setup.instance), so after rmmod or a reboot the first process to
 * attach finds a stale one and recovers.  Layout: this header, seg_cap
 * segments, slot_count slots.
 */
struct dqj_shared {
	uint64_t magic;
	uint64_t instance;	/* 0: being rebuilt, or private */
	uint64_t journal_id;
	uint64_t next_id;	/* the next record's message id */
	uint64_t segment_bytes;	/* the journal's, fixed by recovery */
	uint64_t max_bytes;
	uint32_t slot_count;
	uint32_t slot_size;
	uint32_t seg_cap;
	uint32_t nsegs;		/* segs[0] the oldest, segs[nsegs - 1] active */
	/*
	 * A batch of COMMIT records is being written at wb_used of segment
	 * wb_seg (the active segment's `used` already counts it).  Found set
	 * by the next holder of the write lock, the writer died mid-batch:
	 * `used` goes back to wb_used, so the next records overwrite what it
	 * left, never follow a hole (which recovery would take for the torn
	 * tail, losing everything after it).
	 */
	uint64_t wb_busy;
	uint64_t wb_seg;
	uint64_t wb_used;
	uint64_t torn_writes;	/* such batches repaired */
	/* Counters of every process (atomics), for `dqctl journal stats`. */
	uint64_t commits;	/* COMMIT records written (RELOC not) */
	uint64_t retires;	/* retire entries written */
	uint64_t fsyncs;	/* group-commit, `always` and seal syncs */
	uint64_t synced_records;
	uint64_t sync_ns_total;
	uint64_t sync_ns_max;
	uint64_t relocated;
	uint64_t reclaimed;	/* segments deleted */
	/* The last recovery (the process that stamped `instance`). */
	uint64_t rec_records;
	uint64_t rec_recovered;
	uint64_t rec_corrupt;
	uint64_t rec_torn_bytes;
	uint64_t rec_ns;
	int64_t rec_at_rt_ns;	/* when it ended, CLOCK_REALTIME */
	/*
	 * Every message id up to it is durable: the highest id written when
	 * a sync that since returned began (any process's).  Durable lag:
	 * next_id - 1 - synced_id.
	 */
	uint64_t synced_id;
	/*
	 * The active segment's last sync mark (seq; its first_segment),
	 * written under the write lock by whichever process syncs, so the
	 * seq goes on across processes and neither field goes back.
	 */
	uint64_t mark_seq;
	uint64_t mark_first;
	uint64_t resv[5];
};

static inline size_t dqj_shared_size(uint32_t seg_cap, uint32_t slot_count)
{
	return sizeof(struct dqj_shared) +
	       (size_t)seg_cap * sizeof(struct dqj_seg) +
	       (size_t)slot_count * sizeof(struct dqj_slot);
}

#endif /* DQ_JFORMAT_H */
