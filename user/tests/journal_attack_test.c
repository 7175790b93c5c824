// SPDX-License-Identifier: LGPL-2.1 OR MIT
/*
 * A durable queue's journal after single-bit damage, judged as an outsider
 * would (issue 33, item 1): only the public API (dqshim.h) and the format
 * as docs/journal.md describes it, on the user engine.
 *
 *	user/build/tests/journal_attack_test [case...]
 *	DQ_JATTACK_SEED=N (default 33) picks the payloads and the damage;
 *	DQ_TEST_TMPDIR (default /tmp) where the journals go.
 *
 * Two journals are built once, each by a child process: "clean" (6000
 * messages, closed with dq_queue_close()) and "crash" (3000 messages, the
 * child _exit()s after dq_durable_wait() without closing: the last
 * segment stays active, everything in it acknowledged).  Durability
 * `always`, 1 MiB segments, so there are several sealed segments and a
 * last one.  A tenth of the messages are cancelled, a tenth done; the rest
 * stay live (reaped and held, which keeps them live in the journal).
 * Payloads are hostile: some are mostly zeros, and in the second half an
 * eighth carry, after their 16-byte tag, a chain of well-formed records
 * encoded here from docs/journal.md with a correct plain CRC32C (the
 * checksum of today's format): a COMMIT reusing the msg_id and user_data
 * of a live message committed earlier (so "the newest copy wins" would
 * hand back forged bytes), a COMMIT of an id and user_data never used, a
 * RETIRE naming two live messages, and a COMMIT of an unused id carrying
 * a live message's user_data.  The chain ends exactly where the carrying
 * record ends.  Message ids are learnt by reading the journal half way.
 *
 * Every case copies a pristine journal, flips single bits in COMMIT
 * records it finds by searching the files for the payload bytes it
 * recorded (the record header is the 48 bytes before them), opens the
 * copy with dq_queue_open_durable() and reads every message out (every
 * due time is before the open).  The verdict, against the test's own
 * record of what it committed and did not retire:
 *  - nothing delivered that the test did not commit, or retired (only
 *    COMMIT records are damaged, so every acknowledged RETIRE is intact:
 *    a retired message coming back means a neighbour was lost);
 *  - every delivered payload byte-identical to what was committed with
 *    that user_data; no message delivered twice;
 *  - a damaged record may cost its own message, never another: every
 *    committed live message not delivered must be one whose record was
 *    damaged (so lost <= records damaged);
 *  - the open must succeed: docs/journal.md names no refusal for damaged
 *    records, only for a damaged segment header (-EXDEV, nothing
 *    changed), which one case checks;
 *  - after the open new commits work, and a second open after a clean
 *    close delivers the same messages plus the new ones.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "dqshim.h"
#include "tap.h"

#define MSEC		1000000ULL
#define SLOT_SIZE	1024U
#define SLOTS		8192U
#define SEG_BYTES	(1ULL << 20)
#define BATCH		64U
#define N_CLEAN		6000U
#define N_CRASH		3000U
#define N_NEW		40U		/* committed after each damaged open */
#define TAG_LEN		16U		/* "JATK", index, user_data */
#define REC_HDR		16U
#define COMMIT_HDR	48U		/* record header + COMMIT fields */
#define PATH_LEN	1024		/* a directory (< 512) and a name */
/*
 * Draining ends when the engine holds nothing more: no message pending,
 * none due and waiting for room or pacing tokens, and every one it
 * posted on the ready ring reaped (dq_queue_stats; the queue is new at
 * the open, so its counters count only this open's messages).  The
 * counters only decide when to stop reading, never the verdict: were
 * they wrong, messages would be missed and counted lost.  Every due time
 * in the journal (real and forged) is before the open, so the engine
 * holds nothing for later.  DRAIN_NS bounds the whole drain (a hang
 * fails the case, with the counters).
 */
#define DRAIN_NS	(30000 * MSEC)
#define DRAIN_POLL_NS	(50 * MSEC)

#define UD_REAL		0x4a41000000000000ULL	/* | index */
#define UD_NEW		0x4e45000000000000ULL	/* | index, after the open */
#define UD_FORGED	0xf0f0000000000000ULL	/* never committed */
#define ID_FORGED	(1ULL << 40)		/* never a real msg_id here */

enum { ST_LIVE, ST_DONE, ST_CANCELLED };

/* One committed message, as the test recorded it. */
struct jmsg {
	uint64_t ud;
	uint64_t msg_id;	/* read from its record (0: not found) */
	uint64_t seg;		/* segment number holding its record */
	uint64_t off;		/* the record's offset in that file */
	uint32_t len;
	uint8_t state;
	uint8_t carrier;	/* its payload holds forged records */
	uint8_t hits;		/* records found with its payload */
};

/* A pristine journal and the test's record of it (shared with builder). */
struct journal {
	char dir[512];
	uint32_t n;
	uint64_t last_seg;	/* the newest segment number */
	uint32_t nsegs;
	uint32_t carriers, live;
	uint32_t newest;	/* live message with the last record */
	struct jmsg *m;
	uint8_t *pay;		/* payload i at i * SLOT_SIZE */
};

static uint64_t g_seed = 33;
static char g_root[256];
static struct journal g_clean, g_crash;

/* ---- deterministic randomness (splitmix64) ------------------------- */

static uint64_t rnd(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* ---- the format, written from docs/journal.md ---------------------- */

/*
 * CRC32C (Castagnoli, reflected polynomial 0x82f63b78, initial and final
 * value inverted), bit by bit: the checksum docs/journal.md names for
 * format version 1.  Checked against the RFC 3720 check value in main().
 */
static uint32_t crc32c(const void *buf, size_t len)
{
	const uint8_t *p = buf;
	uint32_t c = ~0U;
	int k;

	while (len--) {
		c ^= *p++;
		for (k = 0; k < 8; k++)
			c = (c >> 1) ^ (0x82f63b78U & (0U - (c & 1)));
	}
	return ~c;
}

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static void put32(uint8_t *p, uint32_t v)
{
	put16(p, (uint16_t)v);
	put16(p + 2, (uint16_t)(v >> 16));
}

static void put64(uint8_t *p, uint64_t v)
{
	put32(p, (uint32_t)v);
	put32(p + 4, (uint32_t)(v >> 32));
}

static uint32_t get32(const uint8_t *p)
{
	return p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

static uint64_t get64(const uint8_t *p)
{
	return get32(p) | (uint64_t)get32(p + 4) << 32;
}

static uint32_t align8(uint32_t n)
{
	return (n + 7) & ~7U;
}

/* A COMMIT record at @p (align8(48 + @plen) bytes, padding zeroed). */
static uint32_t forge_commit(uint8_t *p, uint64_t id, uint64_t ud,
			     int64_t due_rt, const uint8_t *pl, uint32_t plen)
{
	uint32_t len = COMMIT_HDR + plen;

	memset(p, 0, align8(len));
	put32(p + 4, len);
	put16(p + 8, 1);		/* COMMIT, flags 0, count 0 */
	put64(p + 16, id);
	put64(p + 24, ud);
	put64(p + 32, (uint64_t)due_rt);
	put32(p + 40, plen);		/* attempts 0, resv 0 */
	memcpy(p + COMMIT_HDR, pl, plen);
	put32(p, crc32c(p + 4, len - 4));
	return align8(len);
}

/* A RETIRE record at @p retiring @ids as done (reason 1). */
static uint32_t forge_retire(uint8_t *p, const uint64_t *ids, uint32_t n)
{
	uint32_t len = REC_HDR + 8 * n, i;

	memset(p, 0, len);
	put32(p + 4, len);
	put16(p + 8, 2);
	put32(p + 12, n);
	for (i = 0; i < n; i++)
		put64(p + REC_HDR + 8 * i, ids[i] | 1ULL << 56);
	put32(p, crc32c(p + 4, len - 4));
	return len;
}

/* ---- files --------------------------------------------------------- */

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* The segment numbers in @dir, ascending (<16 hex>.dqj); their count. */
static uint32_t list_segs(const char *dir, uint64_t *segs, uint32_t max)
{
	struct dirent *de;
	uint32_t n = 0;
	DIR *d = opendir(dir);
	char *end;

	if (!d)
		return 0;
	while ((de = readdir(d)))
		if (strlen(de->d_name) == 20 &&
		    !strcmp(de->d_name + 16, ".dqj") && n < max) {
			segs[n] = strtoull(de->d_name, &end, 16);
			if (end == de->d_name + 16)
				n++;
		}
	closedir(d);
	qsort(segs, n, sizeof(*segs), cmp_u64);
	return n;
}

static void seg_path(char *buf, size_t sz, const char *dir, uint64_t seg)
{
	snprintf(buf, sz, "%s/%016llx.dqj", dir, (unsigned long long)seg);
}

/* The whole file @path (malloc'ed, *@len bytes), or NULL. */
static uint8_t *read_file(const char *path, size_t *len)
{
	struct stat st;
	uint8_t *buf;
	size_t got = 0;
	ssize_t k;
	int fd = open(path, O_RDONLY);

	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) || !(buf = malloc(st.st_size + 1))) {
		close(fd);
		return NULL;
	}
	while (got < (size_t)st.st_size) {
		k = pread(fd, buf + got, st.st_size - got, (off_t)got);
		if (k <= 0)
			break;
		got += (size_t)k;
	}
	close(fd);
	if (got != (size_t)st.st_size) {
		free(buf);
		return NULL;
	}
	*len = got;
	return buf;
}

static int write_file(const char *path, const uint8_t *buf, size_t len)
{
	size_t put = 0;
	ssize_t k;
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	if (fd < 0)
		return -errno;
	while (put < len) {
		k = write(fd, buf + put, len - put);
		if (k <= 0) {
			close(fd);
			return -EIO;
		}
		put += (size_t)k;
	}
	return close(fd) ? -errno : 0;
}

/* Copy every regular file of @from into a new directory @to. */
static int copy_dir(const char *from, const char *to)
{
	char src[PATH_LEN], dst[PATH_LEN];
	struct dirent *de;
	uint8_t *buf;
	size_t len;
	int ret = 0;
	DIR *d;

	if (mkdir(to, 0755))
		return -errno;
	d = opendir(from);
	if (!d)
		return -errno;
	while (!ret && (de = readdir(d))) {
		if (de->d_type != DT_REG)
			continue;
		if (snprintf(src, sizeof(src), "%s/%s", from, de->d_name) >=
		    (int)sizeof(src) ||
		    snprintf(dst, sizeof(dst), "%s/%s", to, de->d_name) >=
		    (int)sizeof(dst)) {
			ret = -ENAMETOOLONG;
			break;
		}
		buf = read_file(src, &len);
		ret = buf ? write_file(dst, buf, len) : -EIO;
		free(buf);
	}
	closedir(d);
	return ret;
}

static void remove_tree(const char *dir)
{
	char cmd[PATH_LEN + 16];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd))
		fprintf(stderr, "# could not remove %s\n", dir);
}

/* Every file of @dir (names and bytes) into one string, for comparing. */
static uint8_t *snapshot(const char *dir, size_t *len)
{
	struct dirent **names;
	uint8_t *out = NULL, *buf;
	size_t total = 0, flen;
	char path[PATH_LEN];
	int n, i;

	n = scandir(dir, &names, NULL, alphasort);
	if (n < 0)
		return NULL;
	for (i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, names[i]->d_name);
		buf = names[i]->d_type == DT_REG ? read_file(path, &flen) : NULL;
		if (!buf)
			flen = 0;
		out = realloc(out, total + 256 + flen);
		memset(out + total, 0, 256);
		memcpy(out + total, names[i]->d_name,
		       strnlen(names[i]->d_name, 255));
		memcpy(out + total + 256, buf ? buf : out, flen);
		total += 256 + flen;
		free(buf);
		free(names[i]);
	}
	free(names);
	*len = total;
	return out;
}

/* ---- finding the test's records ------------------------------------ */

static uint8_t *pay_of(const struct journal *j, uint32_t i)
{
	return j->pay + (size_t)i * SLOT_SIZE;
}

/*
 * Find the record of every message below @upto: an 8-byte aligned place
 * in a segment where its whole recorded payload is, preceded by a COMMIT
 * header (len 48 + payload, its user_data, its payload_len).  Sets each
 * message's msg_id, segment, offset and hits; the journal's segments.
 * Returns 0, or -EIO when a segment cannot be read.
 */
static int locate(struct journal *j, uint32_t upto)
{
	uint64_t segs[256];
	uint32_t ns, s, i;
	char path[PATH_LEN];

	for (i = 0; i < upto; i++)
		j->m[i].hits = 0;
	ns = list_segs(j->dir, segs, 256);
	for (s = 0; s < ns; s++) {
		size_t len, off;
		uint8_t *b;

		seg_path(path, sizeof(path), j->dir, segs[s]);
		b = read_file(path, &len);
		if (!b)
			return -EIO;
		for (off = COMMIT_HDR; off + TAG_LEN <= len; off += 8) {
			const uint8_t *p = b + off, *h = p - COMMIT_HDR;
			struct jmsg *m;

			if (memcmp(p, "JATK", 4))
				continue;
			i = get32(p + 4);
			if (i >= upto)
				continue;
			m = &j->m[i];
			if (off + m->len > len ||
			    memcmp(p, pay_of(j, i), m->len) ||
			    get32(h + 4) != COMMIT_HDR + m->len ||
			    get64(h + 24) != m->ud || get32(h + 40) != m->len)
				continue;
			m->msg_id = get64(h + 16);
			m->seg = segs[s];
			m->off = off - COMMIT_HDR;
			m->hits++;
		}
		free(b);
	}
	j->nsegs = ns;
	j->last_seg = ns ? segs[ns - 1] : 0;
	return 0;
}

/* How many of the test's records carry a plain CRC32C (v1's checksum). */
static uint32_t plain_crc_records(const struct journal *j, uint32_t *checked)
{
	uint32_t i, yes = 0, n = 0;
	char path[PATH_LEN];

	for (i = 0; i < j->n && n < 64; i += 97, n++) {
		const struct jmsg *m = &j->m[i];
		uint8_t h[COMMIT_HDR + SLOT_SIZE];
		int fd;

		seg_path(path, sizeof(path), j->dir, m->seg);
		fd = open(path, O_RDONLY);
		if (fd < 0)
			continue;
		if (pread(fd, h, COMMIT_HDR + m->len, (off_t)m->off) ==
		    (ssize_t)(COMMIT_HDR + m->len) &&
		    crc32c(h + 4, COMMIT_HDR + m->len - 4) == get32(h))
			yes++;
		close(fd);
	}
	*checked = n;
	return yes;
}

/* ---- building a journal (in a child process) ----------------------- */

static int64_t now_rt(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void tag(uint8_t *p, const char *magic, uint32_t i, uint64_t ud)
{
	memcpy(p, magic, 4);
	put32(p + 4, i);
	put64(p + 8, ud);
}

/* A plain hostile payload: random bytes, or mostly zeros. */
static uint32_t make_plain(uint8_t *p, uint32_t i, uint64_t ud, uint64_t *r)
{
	uint32_t len = TAG_LEN + 8 + (uint32_t)(rnd(r) % (SLOT_SIZE - TAG_LEN - 7));
	bool zeros = rnd(r) % 8 == 0;
	uint32_t k;

	tag(p, "JATK", i, ud);
	for (k = TAG_LEN; k < len; k++)
		p[k] = zeros ? (k == len - 1) : (uint8_t)rnd(r);
	return len;
}

/* A forged payload: "FRGD", a number, random bytes; 16..40 bytes. */
static uint32_t forged_payload(uint8_t *p, uint32_t k, uint64_t ud, uint64_t *r)
{
	uint32_t len = 16 + 8 * (uint32_t)(rnd(r) % 4), x;

	tag(p, "FRGD", k, ud);
	for (x = TAG_LEN; x < len; x++)
		p[x] = (uint8_t)rnd(r);
	return len;
}

/*
 * A carrier: tag, then forged records filling the payload to its end,
 * naming live messages of @targets (known msg_ids).  @fk numbers the
 * forgeries (unused ids and user_data).
 */
static uint32_t make_carrier(struct journal *j, uint8_t *p, uint32_t i,
			     uint64_t ud, uint64_t *r, const uint32_t *targets,
			     uint32_t nt, uint32_t *fk, int64_t due_rt)
{
	const struct jmsg *a = &j->m[targets[rnd(r) % nt]];
	const struct jmsg *d = &j->m[targets[rnd(r) % nt]];
	uint64_t ids[2];
	uint8_t fp[64];
	uint32_t len = TAG_LEN, fl;

	tag(p, "JATK", i, ud);
	/* An earlier live message again, with other bytes: newest wins. */
	fl = forged_payload(fp, (*fk)++, a->ud, r);
	len += forge_commit(p + len, a->msg_id, a->ud, due_rt, fp, fl);
	/* A message nobody committed. */
	fl = forged_payload(fp, *fk, UD_FORGED | *fk, r);
	len += forge_commit(p + len, ID_FORGED + *fk, UD_FORGED | *fk, due_rt,
			    fp, fl);
	(*fk)++;
	/* Two live messages retired by nobody. */
	ids[0] = j->m[targets[rnd(r) % nt]].msg_id;
	ids[1] = j->m[targets[rnd(r) % nt]].msg_id;
	len += forge_retire(p + len, ids, 2);
	/* A live message's user_data under an id never used. */
	fl = forged_payload(fp, *fk, d->ud, r);
	len += forge_commit(p + len, ID_FORGED + *fk, d->ud, due_rt, fp, fl);
	(*fk)++;
	return len;
}

static int open_queue(const char *dir, struct dqshim_queue **q)
{
	struct dq_journal_params jp;
	struct dq_params p;

	dq_params_init(&p);
	p.slot_count = SLOTS;
	p.slot_size = SLOT_SIZE;
	p.backend = DQ_BACKEND_USER;
	dq_journal_params_init(&jp, dir, DQ_DURABLE_ALWAYS);
	jp.segment_bytes = SEG_BYTES;
	return dq_queue_open_durable(&p, &jp, q);
}

#define BUILD_FAIL(...) do {						\
	fprintf(stderr, "# build %s: ", j->dir);			\
	fprintf(stderr, __VA_ARGS__);					\
	fprintf(stderr, "\n");						\
	_exit(1);							\
} while (0)

/* Take what is due now or within @timeout_ns; done the DONE ones. */
static uint32_t build_reap(struct journal *j, struct dqshim_queue *q,
			   int64_t timeout_ns)
{
	struct dq_reaped r[256];
	uint32_t got = 0, i;
	int k, x;

	k = dq_reap(q, r, 256, timeout_ns);
	if (k == -ETIME || k == 0)
		return 0;
	if (k < 0)
		BUILD_FAIL("dq_reap: %s", dq_strerror(k));
	for (x = 0; x < k; x++) {
		i = (uint32_t)(r[x].user_data & 0xffffffff);
		if ((r[x].user_data & ~0xffffffffULL) != UD_REAL || i >= j->n ||
		    j->m[i].state == ST_CANCELLED)
			BUILD_FAIL("reaped user_data %#llx",
				   (unsigned long long)r[x].user_data);
		if (j->m[i].state == ST_DONE && dq_done(q, r[x].slot))
			BUILD_FAIL("dq_done");
		got++;
	}
	return got;
}

/*
 * Commit j->n messages in batches, cancel and done some, learn the msg_ids
 * of the first half from the files, make carriers in the second half,
 * then wait until everything is durable; close or just exit.
 */
static void build(struct journal *j, bool close_cleanly, uint64_t seed)
{
	uint32_t *targets = calloc(j->n, sizeof(*targets));
	uint64_t *handles = calloc(j->n, sizeof(*handles));
	uint32_t nt = 0, half = (j->n / 2) / BATCH * BATCH, fk = 0;
	uint32_t reaped = 0, want = 0, b, i;
	struct dqshim_queue *q;
	uint64_t r = seed, deadline;
	int ret;

	if (!targets || !handles)
		BUILD_FAIL("out of memory");
	ret = open_queue(j->dir, &q);
	if (ret)
		BUILD_FAIL("dq_queue_open_durable: %s", dq_strerror(ret));
	for (b = 0; b < j->n; b += BATCH) {
		uint64_t now = dq_now_ns();
		int64_t rt = now_rt();

		if (b == half) {
			/* The first half's ids, from its records on disk. */
			ret = dq_durable_wait(q, dq_journal_mark(q), 10000 * MSEC);
			if (ret || locate(j, half))
				BUILD_FAIL("durable wait / locate: %d", ret);
			for (i = 0; i < half; i++)
				if (j->m[i].state == ST_LIVE && j->m[i].hits == 1)
					targets[nt++] = i;
			if (nt < half / 2)
				BUILD_FAIL("only %u first-half records found", nt);
		}
		for (i = b; i < b + BATCH && i < j->n; i++) {
			struct jmsg *m = &j->m[i];
			uint64_t x = rnd(&r) % 10, due;
			struct dqshim_msg msg;

			m->ud = UD_REAL | i;
			m->state = x == 0 ? ST_CANCELLED : x == 1 ? ST_DONE : ST_LIVE;
			m->carrier = b >= half && m->state == ST_LIVE &&
				     rnd(&r) % 8 == 0;
			if (m->carrier) {
				m->len = make_carrier(j, pay_of(j, i), i, m->ud, &r,
						      targets, nt, &fk, rt);
			} else {
				m->len = make_plain(pay_of(j, i), i, m->ud, &r);
			}
			/* Cancelled ones must not be due before the cancel. */
			due = now + (m->state == ST_CANCELLED ? 30000 : 1) * MSEC;
			ret = dq_reserve(q, &msg);
			if (ret)
				BUILD_FAIL("dq_reserve: %s", dq_strerror(ret));
			memcpy(msg.data, pay_of(j, i), m->len);
			ret = dq_commit(q, &msg, m->len, due, m->ud);
			if (ret)
				BUILD_FAIL("dq_commit: %s", dq_strerror(ret));
			handles[i] = msg.handle;
			want += m->state != ST_CANCELLED;
		}
		ret = dq_flush(q);
		if (ret != (int)(i - b))
			BUILD_FAIL("dq_flush: %d", ret);
		for (i = b; i < b + BATCH && i < j->n; i++)
			if (j->m[i].state == ST_CANCELLED &&
			    (ret = dq_cancel(q, handles[i])))
				BUILD_FAIL("dq_cancel: %s", dq_strerror(ret));
		reaped += build_reap(j, q, 0);
	}
	deadline = dq_now_ns() + 20000 * MSEC;
	while (reaped < want && dq_now_ns() < deadline)
		reaped += build_reap(j, q, 100 * MSEC);
	if (reaped != want)
		BUILD_FAIL("reaped %u of %u", reaped, want);
	ret = dq_durable_wait(q, dq_journal_mark(q), 10000 * MSEC);
	if (ret)
		BUILD_FAIL("dq_durable_wait: %s", dq_strerror(ret));
	/* Without a close: as a kill -9 after the acknowledgement. */
	if (close_cleanly)
		dq_queue_close(q);
	_exit(0);
}

static void *shared(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

/* Build @j in a child; find every record.  0 or -1 (said why). */
static int make_journal(struct journal *j, const char *name, uint32_t n,
			bool close_cleanly, uint64_t seed)
{
	uint32_t i;
	pid_t pid;
	int st;

	snprintf(j->dir, sizeof(j->dir), "%s/%s", g_root, name);
	j->n = n;
	j->m = shared(sizeof(*j->m) * n);
	j->pay = shared((size_t)SLOT_SIZE * n);
	if (!j->m || !j->pay)
		return -1;
	fflush(NULL);
	pid = fork();
	if (pid < 0)
		return -1;
	if (!pid)
		build(j, close_cleanly, seed);
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st))
		return -1;
	if (locate(j, n))
		return -1;
	for (i = 0; i < n; i++) {
		if (j->m[i].hits != 1) {
			printf("# %s: message %u: %u records with its payload\n",
			       name, i, j->m[i].hits);
			return -1;
		}
		j->live += j->m[i].state == ST_LIVE;
		j->carriers += j->m[i].carrier;
		if (j->m[i].state == ST_LIVE &&
		    (j->m[i].seg > j->m[j->newest].seg ||
		     (j->m[i].seg == j->m[j->newest].seg &&
		      j->m[i].off > j->m[j->newest].off)))
			j->newest = i;
	}
	return 0;
}

/* ---- the cases ----------------------------------------------------- */

enum where { W_SEALED, W_LAST, W_ANY };
/* K_NEWEST: the live message whose record is the last one in the journal */
enum kind { K_CARRIER, K_PLAIN, K_RETIRED, K_NEWEST, K_ANY };
enum field {
	F_CRC, F_LEN, F_TYPE, F_MSGID, F_DUE, F_PAYLOAD, F_FORGED, F_ANY,
	F_SEGHDR,
};

static const char *const field_name[] = {
	"crc", "len", "type", "msg_id", "due", "payload",
	"payload (a forged record in it)", "any", "segment header",
};

struct trial {
	const char *name;
	struct journal *j;
	enum where where;
	enum kind kind;
	enum field field;
	uint32_t records;	/* records damaged, each one bit */
};

/* What a reopen delivered, judged against the test's record. */
struct tally {
	uint8_t *seen;		/* per real message; then N_NEW new ones */
	uint32_t valid, invented, retired, mismatch, twice, reported;
};

static bool picks(const struct journal *j, const struct jmsg *m,
		  const struct trial *t)
{
	bool sealed = m->seg != j->last_seg;

	if ((t->where == W_SEALED && !sealed) || (t->where == W_LAST && sealed))
		return false;
	switch (t->kind) {
	case K_CARRIER:
		return m->carrier;
	case K_PLAIN:
		return !m->carrier && m->state == ST_LIVE;
	case K_RETIRED:
		return m->state != ST_LIVE;
	case K_NEWEST:
		return m == &j->m[j->newest];
	default:
		return true;
	}
}

/* Byte range [*lo, *hi) of @f in a record of @m. */
static void field_range(const struct jmsg *m, enum field f, uint32_t *lo,
			uint32_t *hi)
{
	static const uint32_t rg[][2] = {
		[F_CRC] = { 0, 4 }, [F_LEN] = { 4, 8 }, [F_TYPE] = { 8, 10 },
		[F_MSGID] = { 16, 24 }, [F_DUE] = { 32, 40 },
	};

	if (f == F_PAYLOAD) {
		*lo = COMMIT_HDR;
		*hi = COMMIT_HDR + m->len;
	} else if (f == F_FORGED) {
		*lo = COMMIT_HDR + TAG_LEN;
		*hi = COMMIT_HDR + m->len;
	} else {
		*lo = rg[f][0];
		*hi = rg[f][1];
	}
}

static int flip_bit(const char *dir, uint64_t seg, uint64_t off, unsigned int bit)
{
	char path[PATH_LEN];
	uint8_t c;
	int fd, ret = -EIO;

	seg_path(path, sizeof(path), dir, seg);
	fd = open(path, O_RDWR);
	if (fd < 0)
		return -errno;
	if (pread(fd, &c, 1, (off_t)off) == 1) {
		c ^= (uint8_t)(1U << bit);
		if (pwrite(fd, &c, 1, (off_t)off) == 1)
			ret = 0;
	}
	close(fd);
	return ret;
}

/* Reported one by one up to this many per reopen, then only counted. */
#define REPORT_MAX	6

static void report(struct tally *t, const char *fmt, unsigned long long ud,
		   uint32_t len)
{
	if (t->reported++ < REPORT_MAX)
		tap_diag(fmt, ud, len);
}

/*
 * Read every message out of @q (held, not done) and judge each against
 * the test's record: @new_ok: the N_NEW committed after the damaged open
 * count too; @reaped: messages reaped from @q since its open (see
 * DRAIN_NS), updated.
 */
static void drain(struct dqshim_queue *q, const struct journal *j,
		  const uint8_t *newpay, const uint32_t *newlen, bool new_ok,
		  uint64_t *reaped, struct tally *t)
{
	struct dq_reaped r[256];
	uint32_t got = 0;
	int k, x;

	uint64_t deadline = dq_now_ns() + (uint64_t)(DRAIN_NS * tap_timeout_scale());
	struct dq_queue_stats st;

	for (;;) {
		k = dq_reap(q, r, 256, DRAIN_POLL_NS);
		if (k == -ETIME) {
			ASSERT_EQ(dq_queue_get_stats(q, &st), 0);
			if (!st.pending && !st.ready_backlog && !st.paced &&
			    st.released == *reaped)
				break;
			CHECK(dq_now_ns() < deadline, "drain: %u reaped, engine "
			      "pending %llu backlog %llu paced %llu released %llu",
			      got, (unsigned long long)st.pending,
			      (unsigned long long)st.ready_backlog,
			      (unsigned long long)st.paced,
			      (unsigned long long)st.released);
			if (dq_now_ns() >= deadline)
				break;
			continue;
		}
		ASSERT_GT(k, 0);
		got += (uint32_t)k;
		*reaped += (uint64_t)k;
		for (x = 0; x < k; x++) {
			uint64_t ud = r[x].user_data, hi = ud & ~0xffffffffULL;
			uint32_t i = (uint32_t)ud, slot = i, len = 0;
			const uint8_t *want = NULL;

			if (hi == UD_REAL && i < j->n) {
				if (j->m[i].state != ST_LIVE) {
					t->retired++;
					report(t, "delivered user_data %#llx (%u bytes): "
					       "the test retired it", ud, r[x].len);
					continue;
				}
				want = pay_of(j, i);
				len = j->m[i].len;
			} else if (hi == UD_NEW && i < N_NEW && new_ok) {
				want = newpay + (size_t)i * SLOT_SIZE;
				len = newlen[i];
				slot = j->n + i;
			} else {
				t->invented++;
				report(t, "delivered user_data %#llx (%u bytes): "
				       "never committed by the test", ud, r[x].len);
				continue;
			}
			if (r[x].len != len || memcmp(r[x].data, want, len)) {
				t->mismatch++;
				report(t, "delivered user_data %#llx (%u bytes): "
				       "not the bytes committed with it", ud,
				       r[x].len);
				continue;
			}
			if (t->seen[slot]) {
				t->twice++;
				report(t, "delivered user_data %#llx (%u bytes) "
				       "twice", ud, r[x].len);
				continue;
			}
			t->seen[slot] = 1;
			t->valid++;
		}
	}
}

static void judge(const struct tally *t, const char *when)
{
	CHECK(t->invented == 0, "%s: %u messages delivered that were never "
	      "committed", when, t->invented);
	CHECK(t->retired == 0, "%s: %u retired messages delivered again",
	      when, t->retired);
	CHECK(t->mismatch == 0, "%s: %u messages delivered with bytes other "
	      "than those committed", when, t->mismatch);
	CHECK(t->twice == 0, "%s: %u messages delivered twice", when, t->twice);
}

static void t_attack(void *arg)
{
	const struct trial *t = arg;
	const struct journal *j = t->j;
	/* Each case's own stream: the seed and its name. */
	uint64_t r = g_seed ^ (uint64_t)crc32c(t->name, strlen(t->name)) << 20;
	uint32_t *cand, nc = 0, i, d, lost = 0, lost_other = 0, nrec = t->records;
	uint64_t reaped;
	uint8_t *damaged, *newpay, *snap = NULL;
	uint32_t newlen[N_NEW] = { 0 };
	struct tally t1 = { 0 }, t2 = { 0 };
	struct dqshim_queue *q = NULL;
	char dir[PATH_LEN];
	size_t snaplen = 0;
	int ret;

	tap_diag("seed %llu (DQ_JATTACK_SEED reproduces); journal %s: %u "
		 "messages, %u live, %u carriers, %u segments",
		 (unsigned long long)g_seed, j->dir, j->n, j->live, j->carriers,
		 j->nsegs);
	snprintf(dir, sizeof(dir), "%s/t-%s", g_root, t->name);
	ASSERT_OK(copy_dir(j->dir, dir));
	cand = calloc(j->n, sizeof(*cand));
	damaged = calloc(j->n, 1);
	newpay = calloc(N_NEW, SLOT_SIZE);
	t1.seen = calloc(j->n + N_NEW, 1);
	t2.seen = calloc(j->n + N_NEW, 1);
	ASSERT_TRUE(cand && damaged && newpay && t1.seen && t2.seen);

	if (t->field == F_SEGHDR) {
		/* A sealed segment's header: documented -EXDEV, no change. */
		uint64_t seg = j->last_seg - 1 - rnd(&r) % (j->nsegs - 1);
		uint32_t byte = (uint32_t)(rnd(&r) % 64), bit = rnd(&r) % 8;

		tap_diag("flip: segment %llu header byte %u bit %u",
			 (unsigned long long)seg, byte, bit);
		ASSERT_OK(flip_bit(dir, seg, byte, bit));
		snap = snapshot(dir, &snaplen);
		ASSERT_TRUE(snap != NULL);
		ret = open_queue(dir, &q);
		EXPECT_EQ(ret, -EXDEV);
		if (!ret)
			dq_queue_close(q);
		{
			size_t l2;
			uint8_t *s2 = snapshot(dir, &l2);

			CHECK(s2 && l2 == snaplen && !memcmp(s2, snap, l2),
			      "the refused open changed the directory");
			free(s2);
		}
		goto out;
	}

	for (i = 0; i < j->n; i++)
		if (picks(j, &j->m[i], t))
			cand[nc++] = i;
	ASSERT_GE(nc, nrec);
	for (d = 0; d < nrec; d++) {
		uint32_t pick, lo, hi, byte, bit, x = (uint32_t)(rnd(&r) % nc);
		enum field f = t->field;
		const struct jmsg *m;

		pick = cand[x];
		cand[x] = cand[--nc];
		m = &j->m[pick];
		if (f == F_ANY)
			f = (enum field)(rnd(&r) % (m->carrier ? 7 : 6));
		field_range(m, f, &lo, &hi);
		byte = lo + (uint32_t)(rnd(&r) % (hi - lo));
		bit = (uint32_t)(rnd(&r) % 8);
		tap_diag("flip: message %u (user_data %#llx, %s%s) record at "
			 "segment %llu%s offset %llu: %s byte %u bit %u", pick,
			 (unsigned long long)m->ud,
			 m->state == ST_LIVE ? "live" : "retired",
			 m->carrier ? ", carrier" : "",
			 (unsigned long long)m->seg,
			 m->seg == j->last_seg ? " (last)" : " (sealed)",
			 (unsigned long long)m->off, field_name[f], byte, bit);
		ASSERT_OK(flip_bit(dir, m->seg, m->off + byte, bit));
		damaged[pick] = 1;
	}

	/* The damaged open: records only, so it must succeed. */
	ret = open_queue(dir, &q);
	if (ret) {
		FAIL("dq_queue_open_durable of a journal with %u damaged "
		     "record(s): %s (docs/journal.md names no refusal for it)",
		     nrec, dq_strerror(ret));
		goto out;
	}
	reaped = 0;
	drain(q, j, newpay, newlen, false, &reaped, &t1);
	judge(&t1, "first open");
	for (i = 0; i < j->n; i++) {
		if (j->m[i].state != ST_LIVE || t1.seen[i])
			continue;
		lost++;
		if (!damaged[i]) {
			if (lost_other++ < REPORT_MAX)
				tap_diag("lost user_data %#llx (segment %llu "
					 "offset %llu): its record was not "
					 "damaged", (unsigned long long)j->m[i].ud,
					 (unsigned long long)j->m[i].seg,
					 (unsigned long long)j->m[i].off);
		}
	}
	tap_diag("first open: %u of %u live messages delivered intact, %u "
		 "lost, %u records damaged", t1.valid, j->live, lost, nrec);
	CHECK(lost_other == 0, "first open: lost %u live messages whose "
	      "records were not damaged (lost %u, damaged %u; a damaged "
	      "record may cost only itself)", lost_other, lost, nrec);

	/* New commits after the damaged open. */
	for (i = 0; i < N_NEW; i++) {
		struct dqshim_msg m;
		uint8_t *p = newpay + (size_t)i * SLOT_SIZE;

		newlen[i] = make_plain(p, j->n + i, UD_NEW | i, &r);
		memcpy(p, "JNEW", 4);
		ASSERT_OK(dq_reserve(q, &m));
		memcpy(m.data, p, newlen[i]);
		ASSERT_OK(dq_commit(q, &m, newlen[i], dq_now_ns(), UD_NEW | i));
	}
	EXPECT_EQ(dq_flush(q), (int)N_NEW);
	EXPECT_OK(dq_durable_wait(q, dq_journal_mark(q), 10000 * MSEC));
	{
		struct tally tn = { .seen = calloc(j->n + N_NEW, 1) };

		ASSERT_TRUE(tn.seen != NULL);
		drain(q, j, newpay, newlen, true, &reaped, &tn);
		judge(&tn, "new commits");
		for (i = 0; i < N_NEW; i++)
			CHECK(tn.seen[j->n + i], "new message %u not delivered",
			      i);
		EXPECT_EQ(tn.valid, N_NEW);
		free(tn.seen);
	}
	dq_queue_close(q);

	/* A clean reopen delivers the same messages, and the new ones. */
	ret = open_queue(dir, &q);
	if (ret) {
		FAIL("second open: %s", dq_strerror(ret));
		goto out;
	}
	reaped = 0;
	drain(q, j, newpay, newlen, true, &reaped, &t2);
	judge(&t2, "second open");
	for (i = 0; i < j->n + N_NEW; i++)
		if (t2.seen[i] != (i < j->n ? t1.seen[i] : 1)) {
			FAIL("second open: message %u %s", i, t2.seen[i] ?
			     "delivered, not by the first open" :
			     "not delivered again");
			break;
		}
	dq_queue_close(q);
out:
	if (!tap_has_failed())
		remove_tree(dir);
	else
		tap_diag("damaged journal kept in %s", dir);
	free(snap);
	free(cand);
	free(damaged);
	free(newpay);
	free(t1.seen);
	free(t2.seen);
}

static const struct trial trials[] = {
	/* The attack: a carrier's CRC in a sealed segment. */
	{ "sealed_carrier_crc", &g_clean, W_SEALED, K_CARRIER, F_CRC, 1 },
	{ "sealed_carrier_len", &g_clean, W_SEALED, K_CARRIER, F_LEN, 1 },
	{ "sealed_carrier_type", &g_clean, W_SEALED, K_CARRIER, F_TYPE, 1 },
	{ "sealed_carrier_msgid", &g_clean, W_SEALED, K_CARRIER, F_MSGID, 1 },
	{ "sealed_carrier_due", &g_clean, W_SEALED, K_CARRIER, F_DUE, 1 },
	{ "sealed_carrier_forged", &g_clean, W_SEALED, K_CARRIER, F_FORGED, 1 },
	{ "sealed_plain_crc", &g_clean, W_SEALED, K_PLAIN, F_CRC, 1 },
	{ "sealed_plain_len", &g_clean, W_SEALED, K_PLAIN, F_LEN, 1 },
	{ "sealed_plain_payload", &g_clean, W_SEALED, K_PLAIN, F_PAYLOAD, 1 },
	{ "sealed_retired_crc", &g_clean, W_SEALED, K_RETIRED, F_CRC, 1 },
	{ "last_plain_crc", &g_clean, W_LAST, K_PLAIN, F_CRC, 1 },
	{ "last_plain_payload", &g_clean, W_LAST, K_PLAIN, F_PAYLOAD, 1 },
	{ "last_carrier_crc", &g_clean, W_LAST, K_CARRIER, F_CRC, 1 },
	/* Nothing after it but what a tear would leave: still not a tear. */
	{ "last_newest_crc", &g_clean, W_LAST, K_NEWEST, F_CRC, 1 },
	{ "many_records_any", &g_clean, W_ANY, K_ANY, F_ANY, 8 },
	{ "sealed_segment_header", &g_clean, W_SEALED, K_ANY, F_SEGHDR, 0 },
	/* The last segment left active after an acknowledged sync. */
	{ "active_last_plain_crc", &g_crash, W_LAST, K_PLAIN, F_CRC, 1 },
	{ "active_last_plain_len", &g_crash, W_LAST, K_PLAIN, F_LEN, 1 },
	{ "active_last_carrier_crc", &g_crash, W_LAST, K_CARRIER, F_CRC, 1 },
	{ "active_last_carrier_msgid", &g_crash, W_LAST, K_CARRIER, F_MSGID, 1 },
	{ "active_newest_crc", &g_crash, W_LAST, K_NEWEST, F_CRC, 1 },
	{ "active_newest_len", &g_crash, W_LAST, K_NEWEST, F_LEN, 1 },
	{ "active_last_many_any", &g_crash, W_LAST, K_ANY, F_ANY, 10 },
	{ "active_sealed_carrier_crc", &g_crash, W_SEALED, K_CARRIER, F_CRC, 1 },
	{ "active_many_records_any", &g_crash, W_ANY, K_ANY, F_ANY, 6 },
};

int main(int argc, char **argv)
{
	const char *base = getenv("DQ_TEST_TMPDIR"), *s = getenv("DQ_JATTACK_SEED");
	uint32_t checked, plain;
	size_t i;
	int ret;

	if (s)
		g_seed = strtoull(s, NULL, 0);
	/* RFC 3720 B.4 and the usual check value: the forgeries are sound. */
	if (crc32c("123456789", 9) != 0xe3069283U) {
		printf("Bail out! crc32c check value wrong\n");
		return 1;
	}
	snprintf(g_root, sizeof(g_root), "%s/dq-jattack-XXXXXX",
		 base ? base : "/tmp");
	if (!mkdtemp(g_root)) {
		printf("Bail out! mkdtemp %s: %s\n", g_root, strerror(errno));
		return 1;
	}
	printf("# seed %llu; journals in %s\n", (unsigned long long)g_seed,
	       g_root);
	if (make_journal(&g_clean, "clean", N_CLEAN, true, g_seed) ||
	    make_journal(&g_crash, "crash", N_CRASH, false, g_seed + 1)) {
		printf("Bail out! could not build the journals (kept in %s)\n"
		       "0 passed, 1 failed, 0 skipped\n", g_root);
		return 1;
	}
	plain = plain_crc_records(&g_clean, &checked);
	printf("# %u of %u sampled records carry a plain CRC32C (the v1 "
	       "checksum the forgeries use)\n", plain, checked);
	for (i = 0; i < sizeof(trials) / sizeof(trials[0]); i++)
		tap_add_at(1000 + (int)i, trials[i].name, t_attack,
			   (void *)&trials[i], 60);
	ret = tap_main(argc, argv);
	if (!ret)
		remove_tree(g_root);
	else
		printf("# journals kept in %s\n", g_root);
	return ret;
}
