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
#define DQJ_VERSION		1U
#define DQJ_HDR_SIZE		64U		/* segment header */
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
	uint64_t journal_id;
	uint64_t segment_no;
	uint64_t first_msg_id;
	uint64_t created_ns;
	uint32_t slot_size;
	uint32_t queue_flags;
};

/* Encode @h into @buf (DQJ_HDR_SIZE bytes), CRC included. */
void dqj_seg_hdr_encode(void *buf, const struct dqj_seg_hdr *h);
/*
 * Decode and check a header: 0; -EBADMSG: wrong magic, version, CRC or a
 * nonzero reserved field.
 */
int dqj_seg_hdr_decode(const void *buf, struct dqj_seg_hdr *h);

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
 * Encode the 48-byte head of a COMMIT whose payload is @payload (its CRC
 * covers the payload: the payload is read here, not copied).  @buf gets
 * DQJ_COMMIT_SIZE bytes; the caller writes the payload after it and
 * dqj_commit_bytes(len) - DQJ_COMMIT_SIZE - len zero bytes of padding.
 */
void dqj_commit_encode(void *buf, uint32_t flags, uint64_t msg_id,
		       uint64_t user_data, int64_t due_rt_ns,
		       uint16_t attempts, const void *payload,
		       uint32_t payload_len);
/* A RETIRE of @count entries into @buf (dqj_retire_bytes(count) bytes). */
void dqj_retire_encode(void *buf, const uint64_t *entries, uint32_t count);
/* A SEAL into @buf (DQJ_SEAL_SIZE bytes). */
void dqj_seal_encode(void *buf, uint32_t records, uint64_t last_msg_id);

/*
 * Decode the record at @buf with @avail bytes readable: 0 and *@r filled;
 * -ENODATA: len 0 (the end of the segment's records); -EBADMSG: bad CRC,
 * impossible length (< 16, > avail, wrong size for its type), unknown
 * type or flags.
 */
int dqj_rec_decode(const void *buf, size_t avail, struct dqj_rec *r);

static inline uint64_t dqj_le64(const void *p)
{
	uint64_t v;

	__builtin_memcpy(&v, p, 8);
	return v;	/* x86-64 and every target dq builds for: LE */
}

/* ---- scanning ------------------------------------------------------ */

/* What a scan reports, one call per item. */
enum dqj_event_kind {
	DQJ_EV_SEGMENT,		/* a segment header (seg, hdr) */
	DQJ_EV_RECORD,		/* a good record (seg, off, rec) */
	DQJ_EV_CORRUPT,		/* a bad record in a sealed segment, skipped
				 * (seg, off, bytes skipped in len) */
	DQJ_EV_TORN,		/* the torn tail of the last segment (seg,
				 * off: where good data ends; len: bytes
				 * after it up to the last nonzero byte) */
	DQJ_EV_SEAL_MISMATCH,	/* SEAL says count records, found others
				 * (seg, off, rec) */
};

struct dqj_event {
	enum dqj_event_kind kind;
	uint64_t seg;			/* segment number */
	uint64_t off;			/* byte offset in the segment file */
	uint64_t len;
	const struct dqj_seg_hdr *hdr;	/* DQJ_EV_SEGMENT */
	const struct dqj_rec *rec;	/* DQJ_EV_RECORD, _SEAL_MISMATCH */
};

/* Return nonzero to stop the scan (returned as is). */
typedef int (*dqj_scan_fn)(void *arg, const struct dqj_event *ev);

/*
 * A journal directory's segments, checked (docs/journal.md, Recovery
 * steps 2): numbers sorted ascending, contiguous, every header good and
 * of one journal_id.  On success *@segs (malloc'ed, *@nsegs of them; free
 * it) and the newest header in *@newest.  0 segments is success (a new
 * journal).  Errors: -ENODATA (a gap: a segment missing), -EXDEV (a
 * header bad or of another journal_id), or the errno of opendir/open/read.
 * Files other than <16 hex>.dqj and LOCK are ignored.
 */
int dqj_dir_list(int dirfd, uint64_t **segs, size_t *nsegs,
		 struct dqj_seg_hdr *newest);

/* "%016llx.dqj" of @seg into @buf (at least 21 bytes). */
void dqj_seg_name(char *buf, uint64_t seg);

/*
 * Scan segment @seg (open read-only as @fd, @size bytes) calling @fn for
 * its header and every record.  @last: it is the journal's newest
 * segment, so a bad record ends it (DQJ_EV_TORN) instead of being skipped
 * (DQJ_EV_CORRUPT with resync at the next 8-byte boundary where a record
 * with a good CRC starts).  *@end gets the offset after the last good
 * record (where a writer continues, or where the torn tail is cut).
 * Reads the file with pread in large chunks (a record may straddle a
 * chunk).  Returns 0, @fn's nonzero value, or -errno of reading.
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
	uint64_t resv[8];
};

static inline size_t dqj_shared_size(uint32_t seg_cap, uint32_t slot_count)
{
	return sizeof(struct dqj_shared) +
	       (size_t)seg_cap * sizeof(struct dqj_seg) +
	       (size_t)slot_count * sizeof(struct dqj_slot);
}

#endif /* DQ_JFORMAT_H */
