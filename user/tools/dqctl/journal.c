// SPDX-License-Identifier: LGPL-2.1 OR MIT
/*
 * dqctl journal verify DIR and dqctl journal inspect DIR [--records]: a
 * durable queue's journal (docs/journal.md), read through the library's
 * own format code (user/src/dq_jformat.c, compiled into dqctl), so that
 * dqctl and recovery cannot disagree about what a good record is.
 *
 * Read only, and without DIR/LOCK: files are opened O_RDONLY, nothing is
 * truncated or repaired, and a live queue is neither stopped nor waited
 * for.  Beside a live queue what is read is a snapshot that may be
 * mid-write: the newest segment can show a torn tail where a write is in
 * flight, and the oldest can be deleted while it is read (an I/O error).
 *
 * Findings are what recovery would have to skip, cut, delete or refuse:
 * a missing segment (a gap, or one the newest segment's sync mark or
 * SEAL says must be there), a segment with a damaged header or of
 * another journal, a bad record, a torn tail, durable records missing
 * (a segment cut short), a damaged sync mark, a SEAL whose count is off,
 * a segment other than the newest without a SEAL, a segment left behind
 * by a reclamation cut short.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "args.h"
#include "dq_jformat.h"
#include "dqctl.h"
#include "fmt.h"
#include "print.h"

/* One segment file, as far as it could be read. */
struct jseg {
	uint64_t no;
	bool hdr_ok;		/* a good header of this journal */
	bool stale;		/* below the journal's first segment */
	bool has_mark;
	struct dqj_mark mark;	/* its best sync mark (v2) */
	struct dqj_seg_hdr hdr;
	uint64_t size, end;
	uint64_t n[DQJ_REC_SEAL + 1];	/* records by type */
	bool sealed;
	bool cut;		/* its scan ended in bad bytes */
	size_t nfindings;
	size_t first_rec, nrecs;	/* --records */
};

struct jfinding {
	uint64_t seg, off, len;
	bool has_off;
	const char *kind;
	char what[96];
};

/* A record, as --records lists it. */
struct jrec {
	uint64_t seg, off, msg_id, user_data, last_msg_id;
	int64_t due;
	uint32_t type, flags, len, count, payload_len;
	uint16_t attempts;
	size_t first_entry;	/* RETIRE: its ids in jstate.retired */
};

struct jcommit {
	uint64_t msg_id, seg, off;
	int64_t due;
};

struct jstate {
	bool records;
	struct jseg *segs;
	size_t nsegs;
	struct jfinding *f;
	size_t nf, capf;
	struct jrec *recs;
	size_t nrecs, caprecs;
	struct jcommit *commits;
	size_t ncommits, capcommits;
	uint64_t *retired;	/* every RETIRE entry's id, in order */
	size_t nretired, capretired;
	struct jseg *cur;
};

static void *grow(void *p, size_t *cap, size_t n, size_t size)
{
	if (n < *cap)
		return p;
	*cap = *cap ? 2 * *cap : 64;
	p = realloc(p, *cap * size);
	if (!p) {
		warnx("out of memory");
		exit(EXIT_KERNEL);
	}
	return p;
}

static void finding(struct jstate *st, uint64_t seg, bool has_off,
		    uint64_t off, uint64_t len, const char *kind,
		    const char *fmt, ...) __attribute__((format(printf, 7, 8)));

static void finding(struct jstate *st, uint64_t seg, bool has_off,
		    uint64_t off, uint64_t len, const char *kind,
		    const char *fmt, ...)
{
	struct jfinding *f;
	va_list ap;

	st->f = grow(st->f, &st->capf, st->nf, sizeof(*st->f));
	f = &st->f[st->nf++];
	f->seg = seg;
	f->has_off = has_off;
	f->off = off;
	f->len = len;
	f->kind = kind;
	va_start(ap, fmt);
	vsnprintf(f->what, sizeof(f->what), fmt, ap);
	va_end(ap);
}

/* CLOCK_REALTIME ns as ISO-8601 UTC, to the ns. */
static const char *fmt_rt(char *buf, size_t len, int64_t ns)
{
	int64_t s = ns / 1000000000, frac = ns % 1000000000;
	time_t t;
	struct tm tm;
	size_t n;

	if (frac < 0) {
		frac += 1000000000;
		s--;
	}
	t = (time_t)s;
	if (!gmtime_r(&t, &tm)) {
		snprintf(buf, len, "%" PRId64 "ns", ns);
		return buf;
	}
	n = strftime(buf, len, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf + n, len - n, ".%09" PRId64 "Z", frac);
	return buf;
}

static const char *rec_type_name(uint32_t type)
{
	switch (type) {
	case DQJ_REC_COMMIT:
		return "commit";
	case DQJ_REC_RETIRE:
		return "retire";
	case DQJ_REC_SEAL:
		return "seal";
	}
	return "?";
}

static const char *fmt_cflags(char *buf, size_t len, uint32_t flags)
{
	snprintf(buf, len, "%s%s%s%s",
		 flags & DQJ_COMMIT_F_KEY ? ",key" : "",
		 flags & DQJ_COMMIT_F_REPLACE ? ",replace" : "",
		 flags & DQJ_COMMIT_F_RELOC ? ",reloc" : "",
		 flags ? "" : ",-");
	return buf + 1;
}

/* ---- reading ------------------------------------------------------- */

static int scan_cb(void *arg, const struct dqj_event *ev)
{
	struct jstate *st = arg;
	struct jseg *s = st->cur;
	const struct dqj_rec *r = ev->rec;
	uint32_t i;

	switch (ev->kind) {
	case DQJ_EV_SEGMENT:
		s->has_mark = ev->mark != NULL;
		if (ev->mark)
			s->mark = *ev->mark;
		break;
	case DQJ_EV_BAD_MARK:
		finding(st, ev->seg, true, ev->off, ev->len, "bad_mark",
			"damaged sync mark");
		s->nfindings++;
		break;
	case DQJ_EV_LOST:
		finding(st, ev->seg, true, ev->off, ev->len, "lost",
			"%" PRIu64 " bytes of durable records missing (cut "
			"short or zeroed)", ev->len);
		s->nfindings++;
		break;
	case DQJ_EV_RECORD:
		s->cut = false;
		s->n[r->type]++;
		if (r->type == DQJ_REC_SEAL)
			s->sealed = true;
		if (r->type == DQJ_REC_COMMIT) {
			st->commits = grow(st->commits, &st->capcommits,
					   st->ncommits, sizeof(*st->commits));
			st->commits[st->ncommits++] = (struct jcommit){
				.msg_id = r->msg_id, .seg = ev->seg,
				.off = ev->off, .due = r->due_rt_ns,
			};
		}
		if (st->records) {
			st->recs = grow(st->recs, &st->caprecs, st->nrecs,
					sizeof(*st->recs));
			st->recs[st->nrecs++] = (struct jrec){
				.seg = ev->seg, .off = ev->off,
				.msg_id = r->msg_id, .user_data = r->user_data,
				.last_msg_id = r->last_msg_id,
				.due = r->due_rt_ns, .type = r->type,
				.flags = r->flags, .len = r->len,
				.count = r->count,
				.payload_len = r->payload_len,
				.attempts = r->attempts,
				.first_entry = st->nretired,
			};
			s->nrecs++;
		}
		if (r->type != DQJ_REC_RETIRE)
			break;
		for (i = 0; i < r->count; i++) {
			const uint8_t *e = (const uint8_t *)r->entries + 8 * i;

			st->retired = grow(st->retired, &st->capretired,
					   st->nretired, sizeof(*st->retired));
			st->retired[st->nretired++] =
				DQJ_RETIRE_ID(dqj_le64(e));
		}
		break;
	case DQJ_EV_CORRUPT:
		s->cut = true;
		finding(st, ev->seg, true, ev->off, ev->len, "corrupt",
			"bad record, %" PRIu64 " bytes skipped", ev->len);
		s->nfindings++;
		break;
	case DQJ_EV_TORN:
		s->cut = true;
		finding(st, ev->seg, true, ev->off, ev->len, "torn",
			"torn tail, %" PRIu64
			" bytes after the last good record", ev->len);
		s->nfindings++;
		break;
	case DQJ_EV_SEAL_MISMATCH:
		finding(st, ev->seg, true, ev->off, 0, "seal_mismatch",
			"SEAL counts %" PRIu32 " records, %" PRIu64 " found",
			r->count, s->n[DQJ_REC_COMMIT] + s->n[DQJ_REC_RETIRE]);
		s->nfindings++;
		break;
	}
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static int cmp_seg(const void *a, const void *b)
{
	return cmp_u64(&((const struct jseg *)a)->no,
		       &((const struct jseg *)b)->no);
}

/* By msg_id, then where: the newest copy of each id last. */
static int cmp_commit(const void *a, const void *b)
{
	const struct jcommit *x = a, *y = b;

	if (x->msg_id != y->msg_id)
		return x->msg_id < y->msg_id ? -1 : 1;
	if (x->seg != y->seg)
		return x->seg < y->seg ? -1 : 1;
	return x->off < y->off ? -1 : x->off > y->off;
}

/* The segment files of @dirfd, sorted; -errno on failure. */
static int list_segs(int dirfd, struct jstate *st)
{
	size_t cap = 0;
	struct dirent *de;
	DIR *d;
	int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return -errno;
	}
	while ((errno = 0, de = readdir(d))) {
		unsigned long long no;
		char name[32];

		/* Exactly the names dq_jformat.c takes: round trip. */
		if (sscanf(de->d_name, "%16llx", &no) != 1)
			continue;
		dqj_seg_name(name, no);
		if (strcmp(name, de->d_name))
			continue;
		st->segs = grow(st->segs, &cap, st->nsegs, sizeof(*st->segs));
		memset(&st->segs[st->nsegs], 0, sizeof(*st->segs));
		st->segs[st->nsegs++].no = no;
	}
	if (errno) {
		int err = -errno;

		closedir(d);
		return err;
	}
	closedir(d);
	if (st->nsegs)
		qsort(st->segs, st->nsegs, sizeof(*st->segs), cmp_seg);
	return 0;
}

/* Read headers, find gaps and strangers; -errno of an I/O error. */
static int check_segs(int dirfd, struct jstate *st, const char *dir)
{
	struct jseg *ref = NULL;
	size_t i;

	for (i = 0; i < st->nsegs; i++) {
		struct jseg *s = &st->segs[i];
		uint8_t b[DQJ_HDR_SIZE];
		struct stat sb;
		char name[32];
		ssize_t n;
		int fd;

		dqj_seg_name(name, s->no);
		fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
		if (fd < 0 || fstat(fd, &sb)) {
			warnx("%s/%s: %s", dir, name, strerror(errno));
			if (fd >= 0)
				close(fd);
			return -EIO;
		}
		s->size = (uint64_t)sb.st_size;
		n = pread(fd, b, sizeof(b), 0);
		close(fd);
		if (n < 0) {
			warnx("%s/%s: %s", dir, name, strerror(errno));
			return -EIO;
		}
		if (n != (ssize_t)sizeof(b) || dqj_seg_hdr_decode(b, &s->hdr) ||
		    s->hdr.segment_no != s->no) {
			finding(st, s->no, true, 0, DQJ_HDR_SIZE, "bad_header",
				n != (ssize_t)sizeof(b) ? "header cut short" :
				s->hdr.segment_no != s->no ?
				"header numbered for another segment" :
				"bad header (magic, version or CRC)");
			s->nfindings++;
			continue;
		}
		s->hdr_ok = true;
		ref = s;
	}
	/* The newest good header names the journal, as recovery's newest. */
	for (i = 0; ref && i < st->nsegs; i++) {
		struct jseg *s = &st->segs[i];

		if (s->hdr_ok && s->hdr.journal_id != ref->hdr.journal_id) {
			finding(st, s->no, false, 0, 0, "foreign",
				"journal_id %016" PRIx64 ", not the newest "
				"segment's %016" PRIx64, s->hdr.journal_id,
				ref->hdr.journal_id);
			s->hdr_ok = false;
			s->nfindings++;
		}
	}
	if (st->nsegs && st->segs[0].no == 0)
		finding(st, 0, false, 0, 0, "bad_name",
			"segment 0: segments are numbered from 1");
	for (i = 1; i < st->nsegs; i++) {
		uint64_t a = st->segs[i - 1].no + 1, b = st->segs[i].no - 1;

		if (a > b)
			continue;
		if (a == b)
			finding(st, a, false, 0, 0, "gap", "segment missing");
		else
			finding(st, a, false, 0, b - a + 1, "gap",
				"segments %" PRIu64 " .. %" PRIu64 " missing",
				a, b);
	}
	return 0;
}

/* Findings about the set of segments, as dqj_dir_list() judges it. */
static bool listing_findings(const struct jstate *st)
{
	static const char *const kinds[] = {
		"gap", "bad_header", "foreign", "bad_name", "missing",
	};
	size_t i, k;

	for (i = 0; i < st->nf; i++)
		for (k = 0; k < ARRAY_SIZE(kinds); k++)
			if (!strcmp(st->f[i].kind, kinds[k]))
				return true;
	return false;
}

static int scan_segs(int dirfd, struct jstate *st, const char *dir)
{
	size_t i;

	for (i = 0; i < st->nsegs; i++) {
		struct jseg *s = &st->segs[i];
		bool last = i + 1 == st->nsegs;
		char name[32];
		int fd, ret;

		if (!s->hdr_ok || s->stale)
			continue;
		dqj_seg_name(name, s->no);
		fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
		if (fd < 0) {
			warnx("%s/%s: %s", dir, name, strerror(errno));
			return -EIO;
		}
		st->cur = s;
		s->first_rec = st->nrecs;
		ret = dqj_seg_scan(fd, s->no, s->size, last, scan_cb, st,
				   &s->end);
		close(fd);
		if (ret) {
			warnx("%s/%s: %s", dir, name, strerror(-ret));
			return -EIO;
		}
		/* (Its SEAL may be in what a bad record made unreadable.) */
		if (!last && !s->sealed && !s->cut) {
			finding(st, s->no, true, s->end, 0, "unsealed",
				"no SEAL in a segment that is not the newest");
			s->nfindings++;
		}
	}
	return 0;
}

/* ---- printing ------------------------------------------------------ */

static void print_finding(struct pr *pr, const struct jfinding *f)
{
	pr_open(pr, NULL);
	pr_u64(pr, "segment", "segment %" PRIu64, f->seg);
	if (f->has_off)
		pr_u64(pr, "offset", " offset %" PRIu64, f->off);
	pr_str(pr, "kind", NULL, f->kind);
	if (f->len)
		pr_u64(pr, "bytes", NULL, f->len);
	pr_str(pr, "what", ": %s\n", f->what);
	pr_close(pr);
}

static void print_rec(struct pr *pr, const struct jstate *st,
		      const struct jrec *r)
{
	char b[64];
	uint32_t i;

	pr_open(pr, NULL);
	pr_text(pr, "  ");
	pr_u64(pr, "offset", "%8" PRIu64, r->off);
	pr_str(pr, "type", "  %-6s", rec_type_name(r->type));
	pr_u64(pr, "len", "  len %" PRIu64, r->len);
	switch (r->type) {
	case DQJ_REC_COMMIT:
		pr_u64(pr, "msg_id", "  msg_id %" PRIu64, r->msg_id);
		pr_u64_as(pr, "flags", r->flags, "  flags %s",
			  fmt_cflags(b, sizeof(b), r->flags));
		pr_u64(pr, "user_data", "  user_data %" PRIu64, r->user_data);
		pr_u64(pr, "attempts", "  attempts %" PRIu64, r->attempts);
		pr_u64(pr, "payload_len", "  payload_len %" PRIu64,
		       r->payload_len);
		pr_s64(pr, "due_ns", NULL, r->due);
		pr_str(pr, "due", "  due %s", fmt_rt(b, sizeof(b), r->due));
		break;
	case DQJ_REC_RETIRE:
		pr_u64(pr, "count", "  count %" PRIu64 ":", r->count);
		pr_list_open(pr, "msg_ids");
		for (i = 0; i < r->count; i++)
			pr_u64(pr, NULL, " %" PRIu64,
			       st->retired[r->first_entry + i]);
		pr_close(pr);
		break;
	case DQJ_REC_SEAL:
		pr_u64(pr, "count", "  count %" PRIu64, r->count);
		pr_u64(pr, "last_msg_id", "  last_msg_id %" PRIu64,
		       r->last_msg_id);
		break;
	}
	pr_text(pr, "\n");
	pr_close(pr);
}

static void print_seg(struct pr *pr, const struct jstate *st,
		      const struct jseg *s)
{
	char b[64];
	size_t i;

	pr_open(pr, NULL);
	pr_u64(pr, "segment", "segment %" PRIu64, s->no);
	pr_u64(pr, "size", "  size %" PRIu64, s->size);
	pr_bool(pr, "header_ok", NULL, s->hdr_ok);
	if (s->hdr_ok) {
		pr_u64(pr, "version", "  v%" PRIu64, s->hdr.version);
		pr_u64(pr, "first_msg_id", "  first_msg_id %" PRIu64,
		       s->hdr.first_msg_id);
		pr_u64(pr, "created_ns", NULL, s->hdr.created_ns);
		pr_str(pr, "created", "  created %s",
		       fmt_rt(b, sizeof(b), (int64_t)s->hdr.created_ns));
		pr_u64(pr, "end", "  end %" PRIu64, s->end);
		pr_bool(pr, "sealed", "  sealed %s", s->sealed);
		pr_text(pr, "\n ");
		pr_u64(pr, "commits", " commits %" PRIu64,
		       s->n[DQJ_REC_COMMIT]);
		pr_u64(pr, "retires", "  retires %" PRIu64,
		       s->n[DQJ_REC_RETIRE]);
		pr_u64(pr, "seals", "  seals %" PRIu64, s->n[DQJ_REC_SEAL]);
		if (s->has_mark) {
			pr_u64(pr, "mark_seq", "  mark %" PRIu64, s->mark.seq);
			pr_u64(pr, "durable_end", ": durable_end %" PRIu64,
			       s->mark.durable_end);
			pr_u64(pr, "first_segment", " first_segment %" PRIu64,
			       s->mark.first_segment);
		}
		pr_bool(pr, "stale", s->stale ? "  stale" : NULL, s->stale);
	}
	pr_u64(pr, "findings", "  findings %" PRIu64 "\n", s->nfindings);
	for (i = 0; !pr->json && i < st->nf; i++) {
		if (st->f[i].seg != s->no)
			continue;
		pr_text(pr, "  ");
		print_finding(pr, &st->f[i]);
	}
	if (st->records && s->hdr_ok) {
		pr_list_open(pr, "records");
		for (i = 0; i < s->nrecs; i++)
			print_rec(pr, st, &st->recs[s->first_rec + i]);
		pr_close(pr);
	}
	pr_close(pr);
}

/* Live: the newest copy of each committed msg_id that no RETIRE names. */
static void print_totals(struct pr *pr, struct jstate *st)
{
	uint64_t live = 0, bytes = 0, used = 0, n[DQJ_REC_SEAL + 1] = { 0 };
	int64_t oldest = INT64_MAX;
	char b[64];
	size_t i, j;

	/* (qsort and bsearch take no NULL array, even of 0 elements) */
	if (st->nretired)
		qsort(st->retired, st->nretired, sizeof(*st->retired),
		      cmp_u64);
	if (st->ncommits)
		qsort(st->commits, st->ncommits, sizeof(*st->commits),
		      cmp_commit);
	for (i = 0; i < st->ncommits; i++) {
		const struct jcommit *c = &st->commits[i];

		if (i + 1 < st->ncommits && c[1].msg_id == c->msg_id)
			continue;
		if (st->nretired &&
		    bsearch(&c->msg_id, st->retired, st->nretired,
			    sizeof(*st->retired), cmp_u64))
			continue;
		live++;
		if (c->due < oldest)
			oldest = c->due;
	}
	for (i = 0; i < st->nsegs; i++) {
		bytes += st->segs[i].size;
		used += st->segs[i].end;
		for (j = 0; j <= DQJ_REC_SEAL; j++)
			n[j] += st->segs[i].n[j];
	}
	pr_open(pr, "totals");
	pr_text(pr, "total:");
	pr_u64(pr, "segments", " segments %" PRIu64, st->nsegs);
	pr_u64(pr, "commits", "  commits %" PRIu64, n[DQJ_REC_COMMIT]);
	pr_u64(pr, "retires", "  retires %" PRIu64, n[DQJ_REC_RETIRE]);
	pr_u64(pr, "retired", "  retired %" PRIu64, st->nretired);
	pr_u64(pr, "live", "  live %" PRIu64, live);
	if (live) {
		pr_s64(pr, "oldest_due_ns", NULL, oldest);
		pr_str(pr, "oldest_due", "  oldest due %s",
		       fmt_rt(b, sizeof(b), oldest));
	}
	pr_u64_as(pr, "bytes", bytes, "\n  bytes %s",
		  fmt_bytes(b, sizeof(b), bytes));
	pr_u64(pr, "used_bytes", "  used %" PRIu64, used);
	pr_u64(pr, "findings", "  findings %" PRIu64 "\n", st->nf);
	pr_close(pr);
}

static void jstate_free(struct jstate *st)
{
	free(st->segs);
	free(st->f);
	free(st->recs);
	free(st->commits);
	free(st->retired);
}

/*
 * `journal stats DIR`: a named queue's journal as its processes see it
 * now (DIR/STATE, docs/journal.md "Named queues"), read under a shared
 * flock so the snapshot is consistent (the writers hold it exclusively
 * for one batch at a time).
 */
static int journal_stats(const char *dir, struct pr *pr)
{
	const struct dqj_shared *sh;
	const struct dqj_seg *segs;
	uint64_t live = 0, used = 0, oldest_live = 0;
	char path[4096], b[64];
	struct stat sb;
	void *map;
	int fd;
	uint32_t i;

	snprintf(path, sizeof(path), "%s/%s", dir, DQJ_STATE_NAME);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		warnx("%s: %s (a named queue's journal, attached since the "
		      "last reboot, has one)", path, strerror(errno));
		return EXIT_KERNEL;
	}
	while (flock(fd, LOCK_SH) < 0 && errno == EINTR)
		;
	if (fstat(fd, &sb) < 0 || (uint64_t)sb.st_size < sizeof(*sh)) {
		warnx("%s: not a journal state file", path);
		close(fd);
		return EXIT_KERNEL;
	}
	map = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED) {
		warnx("%s: %s", path, strerror(errno));
		close(fd);
		return EXIT_KERNEL;
	}
	sh = map;
	if (sh->magic != DQJ_STATE_MAGIC || sh->nsegs > sh->seg_cap ||
	    dqj_shared_size(sh->seg_cap, sh->slot_count) !=
	    (size_t)sb.st_size) {
		warnx("%s: not a journal state file, or of another version",
		      path);
		munmap(map, (size_t)sb.st_size);
		close(fd);
		return EXIT_KERNEL;
	}
	segs = (const struct dqj_seg *)(sh + 1);
	for (i = 0; i < sh->nsegs; i++) {
		live += segs[i].live;
		used += segs[i].used;
		if (!oldest_live && segs[i].live)
			oldest_live = segs[i].no;
	}
	pr_open(pr, NULL);
	pr_str(pr, "dir", "journal %s", dir);
	pr_u64(pr, "instance", ": queue instance %016" PRIx64 "\n",
	       sh->instance);
	if (!sh->instance)
		pr_text(pr, "  (not stamped: never recovered, or a recovery "
			"did not finish)\n");
	pr_u64(pr, "segments", "  segments %" PRIu64, sh->nsegs);
	pr_u64_as(pr, "bytes", sh->nsegs * sh->segment_bytes, "  bytes %s",
		  fmt_bytes(b, sizeof(b), sh->nsegs * sh->segment_bytes));
	pr_u64(pr, "used_bytes", "  used %" PRIu64, used);
	pr_u64(pr, "max_bytes", "  limit %" PRIu64 "\n", sh->max_bytes);
	pr_u64(pr, "live", "  live messages %" PRIu64, live);
	pr_u64(pr, "oldest_live_segment", "  oldest live segment %" PRIu64,
	       oldest_live);
	pr_u64(pr, "next_msg_id", "  next id %" PRIu64, sh->next_id);
	pr_u64(pr, "durable_lag", "  durable lag %" PRIu64 " records\n",
	       sh->next_id - 1 > sh->synced_id ?
	       sh->next_id - 1 - sh->synced_id : 0);
	pr_u64(pr, "commits", "  commits %" PRIu64, sh->commits);
	pr_u64(pr, "retires", "  retires %" PRIu64, sh->retires);
	pr_u64(pr, "relocated", "  relocated %" PRIu64, sh->relocated);
	pr_u64(pr, "reclaimed", "  segments reclaimed %" PRIu64 "\n",
	       sh->reclaimed);
	pr_u64(pr, "fsyncs", "  fsyncs %" PRIu64, sh->fsyncs);
	pr_u64(pr, "synced_records", "  records synced %" PRIu64,
	       sh->synced_records);
	pr_u64(pr, "records_per_fsync", "  per fsync %" PRIu64,
	       sh->fsyncs ? sh->synced_records / sh->fsyncs : 0);
	pr_u64(pr, "sync_ns_avg", "  fsync avg %" PRIu64 " ns",
	       sh->fsyncs ? sh->sync_ns_total / sh->fsyncs : 0);
	pr_u64(pr, "sync_ns_max", "  max %" PRIu64 " ns\n", sh->sync_ns_max);
	pr_u64(pr, "torn_writes", "  batches of dead writers cut back %" PRIu64
	       "\n", sh->torn_writes);
	pr_open(pr, "last_recovery");
	pr_text(pr, "  last recovery:");
	pr_u64(pr, "records", " records %" PRIu64, sh->rec_records);
	pr_u64(pr, "recovered", "  recovered %" PRIu64, sh->rec_recovered);
	pr_u64(pr, "corrupt", "  corrupt %" PRIu64, sh->rec_corrupt);
	pr_u64(pr, "torn_bytes", "  torn bytes %" PRIu64, sh->rec_torn_bytes);
	pr_u64(pr, "ns", "  took %" PRIu64 " ns", sh->rec_ns);
	pr_s64(pr, "at_rt_ns", NULL, sh->rec_at_rt_ns);
	pr_str(pr, "at", "  at %s\n", fmt_rt(b, sizeof(b), sh->rec_at_rt_ns));
	pr_close(pr);
	pr_close(pr);
	munmap(map, (size_t)sb.st_size);
	close(fd);
	return 0;
}

int cmd_journal(struct nl *nl, const struct args *a, struct pr *pr)
{
	static const enum opt_id inspect_opts[] = { O_RECORDS, 0 };
	static const enum opt_id verify_opts[] = { 0 };
	struct jstate st = { 0 };
	struct dqj_dir dl;
	const char *dir;
	size_t i, k;
	bool inspect;
	int dirfd, ret, lr = 0;

	(void)nl;
	if (a->npos < 1)
		usage_err("journal: verify DIR, inspect DIR [--records] or "
			  "stats DIR");
	if (!strcmp(a->pos[0], "stats")) {
		only_opts(a, verify_opts);
		if (a->npos != 2)
			usage_err("journal stats: give one DIR");
		return journal_stats(a->pos[1], pr);
	}
	if (!strcmp(a->pos[0], "inspect"))
		inspect = true;
	else if (!strcmp(a->pos[0], "verify"))
		inspect = false;
	else
		usage_err("journal: unknown subcommand '%s' (verify, inspect, "
			  "stats)",
			  a->pos[0]);
	if (!inspect && a->val[O_RECORDS])
		usage_err("journal verify does not take --records");
	only_opts(a, inspect ? inspect_opts : verify_opts);
	if (a->npos != 2)
		usage_err("journal %s: give one DIR", a->pos[0]);
	dir = a->pos[1];
	st.records = inspect && a->val[O_RECORDS];

	dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dirfd < 0) {
		warnx("%s: %s", dir, strerror(errno));
		return EXIT_KERNEL;
	}
	ret = list_segs(dirfd, &st);
	if (ret)
		warnx("%s: %s", dir, strerror(-ret));
	if (!ret)
		ret = check_segs(dirfd, &st, dir);
	/*
	 * Recovery's own verdict on the listing: which segments the journal
	 * needs (the newest's sync mark), which are left over, which are
	 * missing.
	 */
	if (!ret) {
		lr = dqj_dir_list(dirfd, &dl);
		if (lr && lr != -ENODATA && lr != -EXDEV) {
			warnx("%s: %s", dir, strerror(-lr));
			ret = lr;
		}
		for (i = 0; !ret && !lr && i < dl.nstale; i++) {
			for (k = 0; k < st.nsegs; k++)
				if (st.segs[k].no == dl.stale[i])
					st.segs[k].stale = true;
			finding(&st, dl.stale[i], false, 0, 0, "stale",
				"not needed (the journal starts at segment %"
				PRIu64 "): recovery deletes it", dl.first);
		}
		if (lr == -ENODATA && dl.missing && st.nsegs &&
		    (dl.missing < st.segs[0].no ||
		     dl.missing > st.segs[st.nsegs - 1].no))
			finding(&st, dl.missing, false, 0, 0, "missing",
				dl.missing < st.segs[0].no ?
				"segment missing: the newest segment's sync "
				"mark needs it" :
				"segment missing: the newest one found is "
				"sealed, so it had a successor");
		if (!lr || lr == -ENODATA || lr == -EXDEV)
			dqj_dir_free(&dl);
	}
	if (!ret)
		ret = scan_segs(dirfd, &st, dir);
	/* A finding above must account for a refusal (belt and braces). */
	if (!ret && lr && !listing_findings(&st))
		finding(&st, 0, false, 0, 0, "listing",
			"recovery would refuse the listing: %s",
			strerror(-lr));
	close(dirfd);
	if (ret) {
		jstate_free(&st);
		return EXIT_KERNEL;
	}

	pr_open(pr, NULL);
	pr_str(pr, "dir", inspect ? "journal %s" : "%s", dir);
	if (inspect) {
		pr_u64(pr, "segments", ": %" PRIu64 " segments\n", st.nsegs);
		pr_list_open(pr, "segments");
		for (i = 0; i < st.nsegs; i++)
			print_seg(pr, &st, &st.segs[i]);
		pr_close(pr);
	} else {
		pr_u64(pr, "segments", NULL, st.nsegs);
		pr_text(pr, ": %s", st.nf ? "" : "clean, ");
		pr_text(pr, st.nf ? "%zu findings\n" : "%zu segments\n",
			st.nf ? st.nf : st.nsegs);
	}
	pr_list_open(pr, "findings");
	for (i = 0; i < st.nf; i++)
		if (pr->json || !inspect)
			print_finding(pr, &st.f[i]);
	pr_close(pr);
	if (inspect)
		print_totals(pr, &st);
	pr_bool(pr, "clean", NULL, !st.nf);
	pr_close(pr);
	ret = !inspect && st.nf ? EXIT_FINDINGS : 0;
	jstate_free(&st);
	return ret;
}
