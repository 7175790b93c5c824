// SPDX-License-Identifier: LGPL-2.1 OR MIT
/*
 * gen_seeds: write the fuzzers' seed corpora (fuzz/corpus/<target>/),
 * `make -C fuzz seeds`.  Each seed is a small program in the target's
 * input format (see the top of each fuzz_*.c), every one under 4 KiB:
 * valid and invalid setups with operation sequences for fuzz_intake,
 * segments built with the real encoders (good, torn, corrupt, sealed,
 * odd sizes) for fuzz_journal_scan and journals for fuzz_journal_recover.
 * Deterministic: the same corpus every time.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "dq_jformat.h"
#include "linux/dq.h"

struct buf {
	uint8_t b[4096];
	size_t n;
};

static void put(struct buf *b, const void *p, size_t n)
{
	if (b->n + n > sizeof(b->b)) {
		fprintf(stderr, "gen_seeds: seed over 4 KiB\n");
		exit(1);
	}
	memcpy(b->b + b->n, p, n);
	b->n += n;
}

static void w8(struct buf *b, uint8_t v) { put(b, &v, 1); }
static void w16(struct buf *b, uint16_t v) { put(b, &v, 2); }
static void w32(struct buf *b, uint32_t v) { put(b, &v, 4); }
static void w64(struct buf *b, uint64_t v) { put(b, &v, 8); }

static const char *outdir;
static unsigned int nseeds;

static void save(const char *target, const char *name, const struct buf *b)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", outdir, target);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/%s/%s", outdir, target, name);
	f = fopen(path, "wb");
	if (!f || fwrite(b->b, 1, b->n, f) != b->n || fclose(f)) {
		perror(path);
		exit(1);
	}
	nseeds++;
}

/* ---- fuzz_intake ---------------------------------------------------- */

enum { OP_RAW = 0, OP_RESERVE = 2, OP_COMMIT, OP_ABORT, OP_FLUSH, OP_CANCEL,
       OP_KEY, OP_FLUSH_REAP, OP_DONE, OP_STATS, OP_BROKEN, OP_REAP };

/* The setup part: a raw struct dq_setup, then the queue's 6 bytes. */
static void in_head(struct buf *b, const struct dq_setup *s, uint8_t cfg,
		    uint8_t slots, uint8_t max_inflight)
{
	put(b, s, sizeof(*s));
	w8(b, cfg);		/* 1 track, 2 keys, 4 max_inflight */
	w8(b, slots - 1);	/* slot_count 1 + n */
	w8(b, 0);		/* slot size 64 */
	w8(b, 0);		/* submit entries: default */
	w8(b, 50);		/* granularity 50 us */
	w8(b, max_inflight - 1);
}

/* due_value(): class, value */
static void due(struct buf *b, uint8_t cls, uint64_t v)
{
	w8(b, cls);
	w64(b, v);
}

/* A raw descriptor with the small (structured) field encodings. */
static void raw(struct buf *b, uint8_t due_cls, uint64_t due_v, uint8_t ud,
		uint8_t slot, uint16_t len, uint8_t gen, uint8_t flags,
		uint8_t resv)
{
	w8(b, OP_RAW);
	w8(b, resv ? 64 : 0);	/* shape: structured fields */
	due(b, due_cls, due_v);
	w8(b, ud);
	w8(b, slot);
	w16(b, len);
	w8(b, gen);
	w8(b, flags);
	if (resv)
		w8(b, resv);
}

/* reserve, then commit it: how (0 commit, 1 delay, 2+ key flags<<2) */
static void commit(struct buf *b, uint8_t how, uint16_t len, uint8_t due_cls,
		   uint64_t due_v, uint8_t ud)
{
	w8(b, OP_RESERVE);
	w8(b, OP_COMMIT);
	w8(b, how);
	w8(b, 0);		/* pick the first reserved */
	if (how & 0x40)
		w16(b, 3);	/* attempts */
	w16(b, len);
	due(b, due_cls, due_v);
	w8(b, ud);
}

static void op2(struct buf *b, uint8_t op, uint8_t a)
{
	w8(b, op);
	w8(b, a);
}

/* cancel the handle (slot, the model's gen) */
static void cancel(struct buf *b, uint8_t slot)
{
	w8(b, OP_CANCEL);
	w8(b, 0);
	w8(b, slot);
}

/* done (how: 0x80 finish, outcome << 2) of a slot */
static void done(struct buf *b, uint8_t how, uint8_t slot)
{
	w8(b, OP_DONE);
	w8(b, how);
	w8(b, slot);
}

static void gen_intake(void)
{
	static const char *T = "fuzz_intake";
	struct dq_setup good = { .slot_count = 8, .slot_size = 64 };
	struct dq_setup s;
	struct buf b;
	char name[64];
	unsigned int i;

	/* Setups alone: the normalisation and its comparison with open. */
	struct { const char *name; struct dq_setup s; } setups[] = {
		{ "setup-zero", { 0 } },
		{ "setup-good", { .slot_count = 16, .slot_size = 100 } },
		{ "setup-track", { .flags = DQ_SETUP_F_TRACK, .slot_count = 4,
				   .slot_size = 64, .max_inflight = 2 } },
		{ "setup-keys", { .flags = DQ_SETUP_F_KEYS, .slot_count = 4,
				  .slot_size = 64, .submit_entries = 3 } },
		{ "setup-badflag", { .flags = 0x80, .slot_count = 4,
				     .slot_size = 64 } },
		{ "setup-inflight-untracked", { .slot_count = 4, .slot_size = 64,
						.max_inflight = 1 } },
		{ "setup-visibility", { .flags = DQ_SETUP_F_TRACK, .slot_count = 4,
					.slot_size = 64,
					.visibility_ns = DQ_MIN_VISIBILITY_NS } },
		{ "setup-resv2", { .slot_count = 4, .slot_size = 64,
				   .resv2 = { 0, 1 } } },
		{ "setup-bigslot", { .slot_count = 1, .slot_size = DQ_MAX_SLOT_SIZE + 1 } },
		{ "setup-maxslots", { .slot_count = DQ_MAX_SLOTS + 1, .slot_size = 64 } },
		{ "setup-rings", { .slot_count = 4, .slot_size = 64,
				   .submit_entries = DQ_MAX_RING_ENTRIES + 1,
				   .ready_entries = 5 } },
		{ "setup-gran", { .slot_count = 4, .slot_size = 64,
				  .granularity_ns = DQ_MAX_GRANULARITY_NS + 1 } },
		{ "setup-numa", { .slot_count = 4, .slot_size = 64, .numa_node = -2 } },
	};
	for (i = 0; i < sizeof(setups) / sizeof(setups[0]); i++) {
		b.n = 0;
		put(&b, &setups[i].s, sizeof(setups[i].s));
		save(T, setups[i].name, &b);
	}

	/* Commit (past, future, relative), reap, done, cancel, stats. */
	b.n = 0;
	in_head(&b, &good, 0, 8, 1);
	commit(&b, 0, 10, 1, 12345, 1);		/* past: comes out */
	commit(&b, 0, 64, 2, 0, 2);		/* an hour ahead */
	commit(&b, 1, 0, 0, 0, 3);		/* delay 0 */
	commit(&b, 1, 65, 3, 0, 4);		/* too long: -EMSGSIZE */
	w8(&b, OP_FLUSH);
	op2(&b, OP_REAP, 7);
	done(&b, 0, 0);
	cancel(&b, 2);
	cancel(&b, 1);
	w8(&b, OP_STATS);
	save(T, "basic", &b);

	/* Every reject reason through raw descriptors. */
	b.n = 0;
	in_head(&b, &good, 0, 8, 1);
	raw(&b, 1, 5, 0, 0, 0, 1, 0, 0);		/* good */
	raw(&b, 1, 5, 0, 0, 0, 1, 0, 0);		/* busy */
	raw(&b, 1, 5, 0, 9, 0, 1, 0, 0);		/* slot */
	raw(&b, 1, 5, 0, 1, 65, 1, 0, 0);		/* len */
	raw(&b, 1, 5, 0, 1, 0, 1, 0x2, 0);		/* flags (attempts) */
	raw(&b, 1, 5, 0, 1, 0, 1, 0, 1);		/* resv */
	raw(&b, 4, 2, 0, 1, 0, 1, 1, 0);		/* relative > max */
	raw(&b, 5, 2, 0, 1, 0, 1, 0, 0);		/* absolute > max */
	raw(&b, 6, 0, 0, 1, 0, 1, 0, 0);		/* far beyond */
	raw(&b, 4, 0, 0, 2, 0, 1, 1, 0);		/* relative == max - 1 */
	raw(&b, 2, 0, 0, 3, 0, 1, 0x4, 0);		/* key on keyless */
	w8(&b, OP_FLUSH);
	w8(&b, OP_STATS);
	op2(&b, OP_FLUSH_REAP, 63);
	cancel(&b, 2);
	save(T, "rejects", &b);

	/* Keys: add, duplicate, replace, replace missing, lookup, cancel. */
	for (i = 0; i < 2; i++) {
		b.n = 0;
		in_head(&b, &good, 2 | i, 8, 1);
		commit(&b, 2, 8, 2, 0, 5);			/* key 5 */
		commit(&b, 2, 8, 2, 0, 5);			/* -EEXIST */
		commit(&b, 2 | (2 << 2), 8, 1, 7, 5);		/* replace 5 */
		commit(&b, 2 | (2 << 2), 8, 2, 0, 6);		/* -ENOENT */
		raw(&b, 1, 9, 6, 4, 0, 2, 0x4, 0);		/* raw key 6 */
		raw(&b, 0, 0, 6, 5, 0, 2, 0xc, 0);		/* raw replace 6 */
		raw(&b, 0, 0, 6, 6, 0, 2, 0x8, 0);		/* replace w/o key */
		w8(&b, OP_FLUSH);
		op2(&b, OP_KEY, 0); w8(&b, 5);			/* lookup 5 */
		op2(&b, OP_FLUSH_REAP, 7);
		op2(&b, OP_KEY, 0); w8(&b, 5);
		op2(&b, OP_KEY, 2); w8(&b, 5);			/* cancel 5 */
		op2(&b, OP_KEY, 2); w8(&b, 6);
		commit(&b, 2 | (1 << 2), 8, 3, 0, 7);		/* relative key */
		op2(&b, OP_KEY, 6); w8(&b, 7);			/* cancel, NULL */
		done(&b, 0x80 | (1 << 2), 1);
		w8(&b, OP_STATS);
		snprintf(name, sizeof(name), "keys%s", i ? "-tracked" : "");
		save(T, name, &b);
	}

	/* Tracked with a cap: pacing, finish delivered/failed/bogus. */
	b.n = 0;
	in_head(&b, &good, 1 | 4, 8, 2);
	for (i = 0; i < 5; i++)
		commit(&b, 0x40, 4, 1, 100 + i, (uint8_t)i);	/* attempts */
	raw(&b, 1, 3, 1, 6, 4, 3, 0x2, 9);			/* attempts 9 */
	op2(&b, OP_FLUSH_REAP, 63);
	w8(&b, OP_STATS);
	done(&b, 0x80 | (0 << 2), 0);
	done(&b, 0x80 | (1 << 2), 1);
	done(&b, 0x80 | (2 << 2), 2);
	w8(&b, OP_DONE); w8(&b, 0x82); w8(&b, 3); w32(&b, 7);
	op2(&b, OP_REAP, 63);
	op2(&b, OP_KEY, 0); w8(&b, 1);
	cancel(&b, 3);
	w8(&b, OP_STATS);
	save(T, "tracked-paced", &b);

	/* Forged commits, abort, a broken producer index, full ring. */
	b.n = 0;
	s = good;
	s.submit_entries = 2;
	in_head(&b, &s, 0, 4, 1);
	w8(&b, OP_RESERVE);
	op2(&b, OP_ABORT, 0);
	w8(&b, OP_COMMIT); w8(&b, 0x80); w8(&b, 1); w8(&b, 0);	/* forged */
	w16(&b, 0); due(&b, 0, 0); w8(&b, 0);
	for (i = 0; i < 6; i++)
		raw(&b, 2, i, 0, (uint8_t)i, 0, 0, 0, 0);
	op2(&b, OP_BROKEN, 3); w32(&b, 12345);
	op2(&b, OP_FLUSH_REAP, 3);
	for (i = 0; i < 4; i++) {
		cancel(&b, 0); w8(&b, (uint8_t)i);
	}
	w8(&b, OP_STATS);
	save(T, "ring", &b);

	/* Raw descriptors with every field raw. */
	for (i = 0; i < 6; i++) {
		b.n = 0;
		in_head(&b, &good, (uint8_t)i % 4, 8, 1);
		w8(&b, OP_RAW);
		w8(&b, 0x7f);
		due(&b, 7, 0x123456789ULL * (i + 1));
		w64(&b, 0xfeedULL << i);
		w32(&b, i & 1 ? 3 : 0xffffffffU);
		w32(&b, i & 2 ? 64 : 0x80000000U);
		w32(&b, i);
		w16(&b, (uint16_t)(0xffff >> i));
		w16(&b, (uint16_t)i);
		op2(&b, OP_FLUSH_REAP, 7);
		w8(&b, OP_STATS);
		snprintf(name, sizeof(name), "raw-fields-%u", i);
		save(T, name, &b);
	}
}

/* ---- journal segments ---------------------------------------------- */

/*
 * The segment being written: its header (for the records' checksum
 * seeds), where its records start in the buffer and in the file, and
 * (v2 written by seg_hdr()) where its two marks are in the buffer.
 */
static struct dqj_seg_hdr cur_h;
static size_t cur_base, cur_marks;
static uint64_t cur_off0;

static uint32_t seed_here(const struct buf *b)
{
	return dqj_seed(&cur_h, cur_off0 + (b->n - cur_base));
}

/*
 * A v2 header as fuzz_journal_scan's mode 0 takes it: the file squeezed,
 * header, mark 0, mark 1 (zero until seg_marks()), records (from 12288
 * in the file).  Salt 0x5a17...
 */
static void seg_hdr(struct buf *b, uint64_t seg, uint32_t slot_size,
		    uint32_t qflags)
{
	struct dqj_seg_hdr h = {
		.version = DQJ_VERSION, .salt = 0x5a175a17c0ffee77ULL ^ seg,
		.journal_id = 0x5151, .segment_no = seg, .first_msg_id = 1,
		.created_ns = 1, .slot_size = slot_size, .queue_flags = qflags,
	};
	uint8_t p[DQJ_HDR_SIZE + 2 * DQJ_MARK_SIZE] = { 0 };

	dqj_seg_hdr_encode(p, &h);
	put(b, p, sizeof(p));
	cur_h = h;
	cur_marks = b->n - 2 * DQJ_MARK_SIZE;
	cur_base = b->n;
	cur_off0 = DQJ_V2_DATA;
}

/* A version 1 header: the input is the file, records from 64. */
static void seg_hdr_v1(struct buf *b, uint64_t seg, uint32_t slot_size,
		       uint32_t qflags)
{
	struct dqj_seg_hdr h = {
		.version = DQJ_VERSION_1,
		.journal_id = 0x5151, .segment_no = seg, .first_msg_id = 1,
		.created_ns = 1, .slot_size = slot_size, .queue_flags = qflags,
	};
	uint8_t p[DQJ_HDR_SIZE];

	dqj_seg_hdr_encode(p, &h);
	put(b, p, sizeof(p));
	cur_h = h;
	cur_base = b->n;
	cur_off0 = DQJ_HDR_SIZE;
}

/*
 * The header a harness prepends (@salt its constant, 0: version 1): the
 * records that follow are seeded for it.
 */
static void seg_prepended(const struct buf *b, uint64_t salt)
{
	memset(&cur_h, 0, sizeof(cur_h));
	cur_h.version = salt ? DQJ_VERSION : DQJ_VERSION_1;
	cur_h.salt = salt;
	cur_base = b->n;
	cur_off0 = salt ? DQJ_V2_DATA : DQJ_HDR_SIZE;
}

/*
 * seg_hdr()'s two marks: seq 1 as made, seq 2 durable up to @rel bytes
 * of records (~0: all written so far), @flags.
 */
static void seg_marks(struct buf *b, uint64_t rel, uint32_t flags)
{
	struct dqj_mark m = {
		.seq = 1, .durable_end = DQJ_V2_DATA, .first_segment = 1,
	};

	dqj_mark_encode(b->b + cur_marks + DQJ_MARK_SIZE, &cur_h, &m);
	m.seq = 2;
	m.flags = flags;
	m.durable_end = cur_off0 + (rel == ~0ULL ? b->n - cur_base : rel);
	dqj_mark_encode(b->b + cur_marks, &cur_h, &m);
}

static void rec_commit(struct buf *b, uint32_t flags, uint64_t id,
		       uint64_t ud, int64_t due_rt, uint32_t plen)
{
	uint8_t p[DQJ_COMMIT_SIZE + 512], payload[512];
	uint32_t n = dqj_commit_bytes(plen);

	memset(payload, 'a' + (int)(id % 26), sizeof(payload));
	memset(p, 0, sizeof(p));
	dqj_commit_encode(p, seed_here(b), flags, id, ud, due_rt,
			  (uint16_t)(id % 3), payload, plen);
	memcpy(p + DQJ_COMMIT_SIZE, payload, plen);
	put(b, p, n);
}

static void rec_retire(struct buf *b, const uint64_t *ids, uint32_t n,
		       unsigned int reason)
{
	uint64_t e[32];
	uint8_t p[16 + 8 * 32];
	uint32_t i;

	for (i = 0; i < n; i++)
		e[i] = DQJ_RETIRE_ENTRY(ids[i], reason);
	dqj_retire_encode(p, seed_here(b), e, n);
	put(b, p, dqj_align(dqj_retire_bytes(n)));
}

static void rec_seal(struct buf *b, uint32_t records, uint64_t last)
{
	uint8_t p[DQJ_SEAL_SIZE];

	dqj_seal_encode(p, seed_here(b), records, last);
	put(b, p, sizeof(p));
}

static void zeros(struct buf *b, size_t n)
{
	uint8_t z[256] = { 0 };

	while (n) {
		size_t k = n < sizeof(z) ? n : sizeof(z);

		put(b, z, k);
		n -= k;
	}
}

/* A typical segment: commits, a retire, maybe a seal. */
static void seg_body(struct buf *b, uint64_t first, bool seal, uint32_t qflags)
{
	uint64_t ids[2] = { first, first + 2 };
	uint32_t kf = qflags & DQJ_Q_F_KEYS ? DQJ_COMMIT_F_KEY : 0;

	rec_commit(b, kf, first, 1, 0, 10);			/* overdue */
	rec_commit(b, kf, first + 1, 2, INT64_MAX / 2, 64);	/* far */
	rec_commit(b, kf, first + 2, 3, 1000, 0);
	rec_retire(b, ids, 2, DQJ_RETIRE_DONE);
	rec_commit(b, kf | (kf ? DQJ_COMMIT_F_REPLACE : 0), first + 3, 1,
		   5000, 7);
	if (seal)
		rec_seal(b, 5, first + 3);
}

/*
 * A COMMIT (id @id, 200 bytes of payload) whose payload holds two
 * well-formed COMMITs of message 99 at 8-byte boundaries: one with a
 * plain CRC32C (format v1's checksum), one with the segment's salt but
 * seeded for the containing record's offset (a copy); @flip: the
 * containing record's CRC is damaged, so a scan must skip it and not
 * find the ones inside.
 */
static void rec_forged(struct buf *b, uint64_t id, bool flip)
{
	uint8_t p[DQJ_COMMIT_SIZE + 200] = { 0 }, *f = p + DQJ_COMMIT_SIZE;
	uint32_t fb = dqj_commit_bytes(8);
	uint32_t seed = seed_here(b);

	dqj_commit_encode(f, 0, 0, 99, 99, 0, 0, "FORGED!", 8);
	memcpy(f + DQJ_COMMIT_SIZE, "FORGED!", 8);
	dqj_commit_encode(f + fb, seed, 0, 99, 99, 0, 0, "FORGED!", 8);
	memcpy(f + fb + DQJ_COMMIT_SIZE, "FORGED!", 8);
	dqj_commit_encode(p, seed, 0, id, id, 0, 0, f, 200);
	if (flip)
		p[1] ^= 0x04;
	put(b, p, sizeof(p));
}

static void gen_scan(void)
{
	static const char *T = "fuzz_journal_scan";
	struct buf b;
	size_t mark;

	/* mode 0: the input is the whole file. */
	b.n = 0; w8(&b, 0); seg_hdr(&b, 1, 64, 0); seg_body(&b, 1, false, 0);
	zeros(&b, 64);
	save(T, "good-last", &b);

	b.n = 0; w8(&b, 0); seg_hdr(&b, 1, 64, 1); seg_body(&b, 1, true, 1);
	save(T, "good-sealed", &b);

	/* A wrong SEAL count. */
	b.n = 0; w8(&b, 0); seg_hdr(&b, 1, 64, 0); seg_body(&b, 1, false, 0);
	rec_seal(&b, 99, 4);
	save(T, "seal-mismatch", &b);

	/* Torn: the last record cut short. */
	b.n = 0; w8(&b, 0); seg_hdr(&b, 1, 64, 0); seg_body(&b, 1, false, 0);
	mark = b.n;
	rec_commit(&b, 0, 9, 9, 0, 40);
	b.n = mark + 30;
	save(T, "torn", &b);

	/* A flipped byte in the middle, good records after it. */
	b.n = 0; w8(&b, 0); seg_hdr(&b, 1, 64, 0);
	rec_commit(&b, 0, 1, 1, 0, 8);
	mark = b.n;
	rec_commit(&b, 0, 2, 1, 0, 8);
	b.b[mark + 20] ^= 0x40;
	rec_commit(&b, 0, 3, 1, 0, 8);
	rec_seal(&b, 3, 3);
	save(T, "corrupt-middle", &b);

	/* A record after a zero gap (a lost first sector). */
	b.n = 0; w8(&b, 0); seg_hdr(&b, 1, 64, 0);
	rec_commit(&b, 0, 1, 1, 0, 8);
	zeros(&b, 512);
	rec_commit(&b, 0, 2, 1, 0, 8);
	save(T, "zero-gap", &b);

	/* File sizes that are not a multiple of 8 (a record's padding cut). */
	b.n = 0; w8(&b, 0); seg_hdr(&b, 1, 64, 0);
	rec_commit(&b, 0, 1, 1, 0, 1);
	b.n -= 7;
	save(T, "short-padding", &b);
	b.n = 0; w8(&b, 0); seg_hdr(&b, 1, 64, 0);
	rec_retire(&b, (const uint64_t[]){ 1 }, 1, 1);
	w8(&b, 0);
	save(T, "odd-size", &b);

	/* Header only; short header; bad header; empty. */
	b.n = 0; w8(&b, 0); seg_hdr(&b, 1, 64, 0);
	save(T, "header-only", &b);
	b.n = 0; w8(&b, 0); seg_hdr(&b, 1, 64, 0); b.n = 40;
	save(T, "header-short", &b);
	b.n = 0; w8(&b, 0); seg_hdr(&b, 1, 64, 0); b.b[1 + 60] = 1;
	save(T, "header-resv", &b);
	b.n = 0; w8(&b, 0);
	save(T, "empty", &b);

	/* mode 1|2: header prepended, CRCs fixed: records to mutate. */
	b.n = 0; w8(&b, 3); w32(&b, 64); w32(&b, 0); w8(&b, 0); zeros(&b, 64);
	seg_prepended(&b, 0x5a175a17c0ffee00ULL);
	seg_body(&b, 1, true, 0);
	save(T, "fixcrc-body", &b);
	b.n = 0; w8(&b, 3); w32(&b, 64); w32(&b, 0); w8(&b, 0); zeros(&b, 64);
	/* Shapes that are wrong but CRC-right after the fix. */
	w32(&b, 0); w32(&b, 48); w16(&b, 1); w16(&b, 8); w32(&b, 0); zeros(&b, 32);
	w32(&b, 0); w32(&b, 24); w16(&b, 2); w16(&b, 0); w32(&b, 1); zeros(&b, 8);
	w32(&b, 0); w32(&b, 32); w16(&b, 3); w16(&b, 0); w32(&b, 0); zeros(&b, 8);
	w64(&b, 1);
	w32(&b, 0); w32(&b, 16); w16(&b, 4); w16(&b, 0); w32(&b, 0);
	save(T, "fixcrc-shapes", &b);

	/* v2 with sync marks: clean, durable end short of the end. */
	b.n = 0; w8(&b, 0); seg_hdr(&b, 1, 64, 0); seg_body(&b, 1, true, 0);
	seg_marks(&b, ~0ULL, DQJ_MARK_F_SEALED);
	save(T, "v2-marks-sealed", &b);
	b.n = 0; w8(&b, 0); seg_hdr(&b, 1, 64, 0); seg_body(&b, 1, false, 0);
	seg_marks(&b, 56, 0);
	mark = b.n;
	rec_commit(&b, 0, 9, 9, 0, 40);
	b.b[mark + 30] ^= 1;
	rec_commit(&b, 0, 10, 9, 0, 40);
	save(T, "v2-bad-after-durable", &b);
	b.n = 0; w8(&b, 0); seg_hdr(&b, 1, 64, 0); seg_body(&b, 1, false, 0);
	seg_marks(&b, 4096, 0);
	save(T, "v2-lost", &b);
	b.n = 0; w8(&b, 0); seg_hdr(&b, 1, 64, 0); seg_body(&b, 1, false, 0);
	seg_marks(&b, ~0ULL, 0);
	b.b[cur_marks + 9] ^= 1;
	save(T, "v2-bad-mark", &b);

	/* Records forged inside a payload, its record's CRC flipped. */
	b.n = 0; w8(&b, 0); seg_hdr(&b, 1, 64, 0);
	rec_commit(&b, 0, 1, 1, 0, 8);
	rec_forged(&b, 2, true);
	rec_commit(&b, 0, 3, 1, 0, 8);
	rec_seal(&b, 3, 3);
	seg_marks(&b, ~0ULL, DQJ_MARK_F_SEALED);
	save(T, "v2-forged-in-payload", &b);
	b.n = 0; w8(&b, 0); seg_hdr_v1(&b, 1, 64, 0);
	rec_commit(&b, 0, 1, 1, 0, 8);
	rec_forged(&b, 2, true);
	rec_commit(&b, 0, 3, 1, 0, 8);
	rec_seal(&b, 3, 3);
	save(T, "v1-forged-in-payload", &b);
	b.n = 0; w8(&b, 0); seg_hdr_v1(&b, 1, 64, 0); seg_body(&b, 1, true, 0);
	save(T, "v1-good-sealed", &b);
	/* mode 1|2, header prepended with marks (hv 2|4, u16 each). */
	b.n = 0; w8(&b, 3); w32(&b, 64); w32(&b, 0); w8(&b, 2 | 4);
	w16(&b, 20); w16(&b, 0);
	seg_prepended(&b, 0x5a175a17c0ffee00ULL);
	seg_body(&b, 1, false, 0);
	save(T, "prepend-v2-marks", &b);
	b.n = 0; w8(&b, 3); w32(&b, 64); w32(&b, 0); w8(&b, 1);
	seg_prepended(&b, 0);
	seg_body(&b, 1, true, 0);
	save(T, "prepend-v1", &b);

	/* 0xb_ modes: records across the 1 MiB window; a > 1 MiB record. */
	b.n = 0; w8(&b, 0xb0 | 4 | 3); w32(&b, 64); w32(&b, 0);
	w8(&b, 0); zeros(&b, 64);
	seg_body(&b, 1, false, 0);
	zeros(&b, 400);
	seg_body(&b, 10, true, 0);
	save(T, "window-straddle", &b);
	b.n = 0; w8(&b, 0xb0 | 8 | 3); w32(&b, 64); w32(&b, 0);
	w8(&b, 0); zeros(&b, 64);
	w32(&b, 0); w32(&b, 16 + 8 * 140000); w16(&b, 2); w16(&b, 0);
	w32(&b, 140000);
	save(T, "retire-over-window", &b);
}

static void gen_recover(void)
{
	static const char *T = "fuzz_journal_recover";
	struct buf b;
	size_t lenpos;
	uint16_t l;

	/* cfg: 1 seg, header prepended, CRCs fixed; 4 slots of 64. */
	b.n = 0; w8(&b, 0x10 | 0x80); w8(&b, 0); w8(&b, 3); w8(&b, 1);
	seg_body(&b, 1, false, 0);
	save(T, "one-seg", &b);

	/* Keyed, with a conflict the REPLACE wins. */
	b.n = 0; w8(&b, 0x10 | 0x80 | 4); w8(&b, 0); w8(&b, 3); w8(&b, 1);
	seg_body(&b, 1, false, DQJ_Q_F_KEYS);
	save(T, "keyed", &b);

	/* Tracked, two segments (sealed + last), the first prepended. */
	b.n = 0; w8(&b, 1 | 0x10 | 0x20 | 0x80 | 8); w8(&b, 0); w8(&b, 7);
	w8(&b, 1);
	lenpos = b.n; w16(&b, 0);
	seg_body(&b, 1, true, DQJ_Q_F_TRACK);
	l = (uint16_t)(b.n - lenpos - 2);
	memcpy(b.b + lenpos, &l, 2);
	seg_body(&b, 5, false, DQJ_Q_F_TRACK);
	save(T, "two-segs", &b);

	/* Three segments, a gap, a foreign journal id. */
	b.n = 0; w8(&b, 2 | 0x70 | 0x80); w8(&b, 4); w8(&b, 7); w8(&b, 1);
	w16(&b, 100); w16(&b, 100);
	seg_body(&b, 1, true, 0);
	seg_body(&b, 6, true, 0);
	seg_body(&b, 11, false, 0);
	save(T, "three-gap", &b);
	b.n = 0; w8(&b, 2 | 0x70 | 0x80); w8(&b, 8); w8(&b, 7); w8(&b, 1);
	w16(&b, 0); w16(&b, 0);
	seg_body(&b, 1, false, 0);
	save(T, "foreign-id", &b);

	/* Headers of another slot size / flags; numbered from 0. */
	b.n = 0; w8(&b, 0x10 | 0x80); w8(&b, 1); w8(&b, 3); w8(&b, 1);
	w32(&b, 128); w32(&b, 0);
	seg_body(&b, 1, false, 0);
	save(T, "other-slot-size", &b);
	b.n = 0; w8(&b, 0x10 | 0x80); w8(&b, 2); w8(&b, 3); w8(&b, 1); w8(&b, 0);
	seg_body(&b, 1, false, 0);
	save(T, "segment-zero", &b);

	/* More live messages than slots: -ENOBUFS. */
	b.n = 0; w8(&b, 0x10 | 0x80); w8(&b, 0); w8(&b, 0); w8(&b, 1);
	seg_body(&b, 1, false, 0);
	save(T, "nobufs", &b);

	/* A torn tail, then a header that is the input's own. */
	b.n = 0; w8(&b, 0x10 | 0x80); w8(&b, 0); w8(&b, 3); w8(&b, 1);
	seg_body(&b, 1, false, 0);
	w32(&b, 0xdeadbeef); w32(&b, 200); zeros(&b, 24);
	save(T, "torn-tail", &b);
	b.n = 0; w8(&b, 0x80); w8(&b, 0); w8(&b, 3); w8(&b, 1);
	seg_hdr_v1(&b, 1, 64, 0);
	seg_body(&b, 1, false, 0);
	save(T, "own-header", &b);

	/* A COMMIT whose payload is longer than the queue's slot. */
	b.n = 0; w8(&b, 0x10 | 0x80); w8(&b, 0); w8(&b, 3); w8(&b, 1);
	rec_commit(&b, 0, 1, 1, 0, 100);
	save(T, "payload-over-slot", &b);

	/*
	 * Keyed: id 1 (key 42), id 2 (no key, user_data 42), id 3 (key 42,
	 * REPLACE), all live: finding 4 (docs/fuzzing.md).
	 */
	b.n = 0; w8(&b, 0x10 | 0x80 | 4); w8(&b, 0); w8(&b, 3); w8(&b, 1);
	rec_commit(&b, DQJ_COMMIT_F_KEY, 1, 42, 0, 8);
	rec_commit(&b, 0, 2, 42, 0, 8);
	rec_commit(&b, DQJ_COMMIT_F_KEY | DQJ_COMMIT_F_REPLACE, 3, 42, 0, 8);
	save(T, "key-conflict-hidden", &b);

	/* Relocated copies, duplicate ids, retire of unknown ids. */
	b.n = 0; w8(&b, 0x10 | 0x80); w8(&b, 0); w8(&b, 3); w8(&b, 1);
	rec_commit(&b, 0, 1, 1, 0, 8);
	rec_commit(&b, DQJ_COMMIT_F_RELOC, 1, 1, 0, 9);
	rec_commit(&b, 0, 0, 1, 0, 8);
	rec_retire(&b, (const uint64_t[]){ 77, 1ULL << 55 }, 2, 5);
	save(T, "reloc-dup", &b);

	/* v2 sync marks (hdrcfg 0x20, durable_end 12288 + 8 * u16). */
	b.n = 0; w8(&b, 0x10 | 0x80); w8(&b, 0x20); w8(&b, 3); w8(&b, 1);
	w16(&b, 20);
	seg_body(&b, 1, false, 0);
	save(T, "v2-marks", &b);
	/* Two segments, the marks say the second is the first needed. */
	b.n = 0; w8(&b, 1 | 0x30 | 0x80); w8(&b, 0x20 | 0x40); w8(&b, 7);
	w8(&b, 1); w16(&b, 40); w16(&b, 20);
	lenpos = b.n; w16(&b, 0);
	seg_body(&b, 1, true, 0);
	l = (uint16_t)(b.n - lenpos - 2);
	memcpy(b.b + lenpos, &l, 2);
	seg_body(&b, 5, false, 0);
	save(T, "stale-first", &b);
	/* The newest's marks say sealed: its successor is missing. */
	b.n = 0; w8(&b, 0x10 | 0x80); w8(&b, 0x20 | 0x80); w8(&b, 3);
	w8(&b, 1); w16(&b, 20);
	seg_body(&b, 1, true, 0);
	save(T, "sealed-newest", &b);
	/* Version 1 headers. */
	b.n = 0; w8(&b, 0x10 | 0x80); w8(&b, 0x10); w8(&b, 3); w8(&b, 1);
	seg_body(&b, 1, false, 0);
	save(T, "v1-headers", &b);

	/*
	 * Records forged inside a payload, its record's CRC flipped; CRCs
	 * as written (no fixing): v2 (durable past it), v1 last, v1 sealed.
	 */
	b.n = 0; w8(&b, 0x10); w8(&b, 0x20); w8(&b, 7); w8(&b, 1);
	w16(&b, 100);
	seg_prepended(&b, 0x5a175a17c0ffee00ULL ^ 1);
	rec_commit(&b, 0, 1, 1, 0, 8);
	rec_forged(&b, 2, true);
	rec_commit(&b, 0, 3, 1, 0, 8);
	save(T, "forged-v2", &b);
	b.n = 0; w8(&b, 0x10); w8(&b, 0x10); w8(&b, 7); w8(&b, 1);
	seg_prepended(&b, 0);
	rec_commit(&b, 0, 1, 1, 0, 8);
	rec_forged(&b, 2, true);
	rec_commit(&b, 0, 3, 1, 0, 8);
	save(T, "forged-v1-last", &b);
	b.n = 0; w8(&b, 1 | 0x30); w8(&b, 0x10); w8(&b, 7); w8(&b, 1);
	lenpos = b.n; w16(&b, 0);
	seg_prepended(&b, 0);
	rec_commit(&b, 0, 1, 1, 0, 8);
	rec_forged(&b, 2, true);
	rec_commit(&b, 0, 3, 1, 0, 8);
	rec_seal(&b, 3, 3);
	l = (uint16_t)(b.n - lenpos - 2);
	memcpy(b.b + lenpos, &l, 2);
	seg_prepended(&b, 0);
	rec_commit(&b, 0, 4, 1, 0, 8);
	save(T, "forged-v1-sealed", &b);
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: gen_seeds DIR\n");
		return 2;
	}
	outdir = argv[1];
	if (mkdir(outdir, 0755) && errno != EEXIST) {
		perror(outdir);
		return 1;
	}
	gen_intake();
	gen_scan();
	gen_recover();
	printf("gen_seeds: %u seeds in %s\n", nseeds, outdir);
	return 0;
}
