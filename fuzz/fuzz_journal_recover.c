// SPDX-License-Identifier: LGPL-2.1 OR MIT
/*
 * fuzz_journal_recover: dq_queue_open_durable() (DQ_BACKEND_USER) on a
 * journal directory made from the input: recovery (user/src/dq_journal.c)
 * through the format code (dq_jformat.c), then close.
 *
 * Input:
 *   cfg      bits 0-1: segments (1 + n % 3); 2: keyed queue; 3: tracked;
 *            4-6: segment i gets a valid header prepended (else its first
 *            64 bytes are the input's); 7: fix the records' CRCs (as
 *            fuzz_journal_scan does) so recovery gets past them
 *   hdrcfg   bit 0: the headers say the input's slot size and flags, not
 *            the queue's; bit 1: segments numbered from the input's byte,
 *            not 1; bit 2: a gap in the numbers; bit 3: the last segment
 *            another journal_id; bit 4: prepended headers are version 1
 *            (else 2, a fixed salt, records from 12288); bit 5: v2
 *            segments get sync marks (seq 1 and 2, durable_end of seq 2
 *            the records' start + 8 * a u16 of the input, per segment);
 *            bit 6: the marks name the second segment as the first one
 *            needed (the first is stale); bit 7: the last segment's
 *            marks say sealed (its successor is missing)
 *   slots    slot_count 1 + n % 16; slot size 64 or 128 (bit 4)
 *   first_msg_id (u8), [slot size, flags (u32 each) when hdrcfg bit 0],
 *   [first segment number (u8) when hdrcfg bit 1]
 *   lengths  u16 per segment but the last (of what is left)
 *   bytes    the segments' bytes
 *
 * The directory is /dev/shm/dq-fuzz-recover.<pid> (tmpfs: fast), emptied
 * after every input.  Invariants (abort): no crash, no sanitizer report,
 * no leak (LeakSanitizer, at exit); open returns 0 or an errno that
 * dqshim.h documents for it (-EBUSY, -EXDEV, -ENODATA, -ENOBUFS, -EINVAL,
 * -ENOMEM, or a file operation's errno); a failed open leaves the
 * segment files as they were; after a good open what recovery says it
 * put back is held by the queue (rec_recovered == pending + paced,
 * nothing rejected in the replay), recovered <= slots, overdue <=
 * recovered, and every message that comes out (those overdue: reap with
 * timeout 0) has len <= slot size.  (That a record embedded in a
 * payload is never taken for one is fuzz_journal_scan's reference scan
 * and journal_format_test's to check: here the salt is the harness's
 * constant, so a mutation may legitimately make one a record.)
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dq_internal.h"
#include "dq_jformat.h"
#include "fuzz_common.h"

#define MAX_FILE	(64U << 10)

static char dir[64];
static int dirfd_ = -1;

static void wr32(uint8_t *p, uint32_t v)
{
	memcpy(p, &v, 4);
}

static uint32_t rd32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return v;
}

/* Right (seeded) CRCs into what looks like records. */
static void fix_crcs(uint8_t *img, size_t size)
{
	struct dqj_seg_hdr h;
	size_t off;

	if (size < DQJ_HDR_SIZE || dqj_seg_hdr_decode(img, &h)) {
		memset(&h, 0, sizeof(h));
		h.version = DQJ_VERSION_1;
	}
	off = dqj_data_start(&h);
	while (off + DQJ_REC_HDR_SIZE <= size) {
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

/* Every file of the directory removed (segments, LOCK, leftovers). */
static void empty_dir(void)
{
	DIR *d;
	struct dirent *de;
	int fd = openat(dirfd_, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	FZ_CHECK(fd >= 0, "open dir");
	d = fdopendir(fd);
	FZ_CHECK(d, "fdopendir");
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			unlinkat(dirfd_, de->d_name, 0);
	closedir(d);
}

static void cleanup(void)
{
	if (dirfd_ >= 0) {
		empty_dir();
		close(dirfd_);
		rmdir(dir);
	}
}

/*
 * Directories of earlier runs that died (a crash aborts before atexit):
 * /dev/shm/dq-fuzz-recover.<pid> whose process is gone.
 */
static void remove_stale(void)
{
	DIR *d = opendir("/dev/shm");
	struct dirent *de;
	char path[300];
	int pid;

	if (!d)
		return;
	while ((de = readdir(d))) {
		if (sscanf(de->d_name, "dq-fuzz-recover.%d", &pid) != 1 ||
		    pid <= 0 || pid == (int)getpid() ||
		    kill(pid, 0) == 0 || errno != ESRCH)
			continue;
		snprintf(path, sizeof(path), "rm -rf /dev/shm/%s", de->d_name);
		if (system(path))
			fprintf(stderr, "could not remove /dev/shm/%s\n",
				de->d_name);
	}
	closedir(d);
}

struct seg_file {
	char name[32];
	uint8_t *img;
	size_t len;
};

/* The file is still there with these bytes. */
static bool same_file(const struct seg_file *sf)
{
	uint8_t *buf = malloc(sf->len + 1);
	ssize_t n;
	int fd;
	bool same;

	FZ_CHECK(buf, "malloc");
	fd = openat(dirfd_, sf->name, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		free(buf);
		return false;
	}
	n = pread(fd, buf, sf->len + 1, 0);
	close(fd);
	same = n == (ssize_t)sf->len && !memcmp(buf, sf->img, sf->len);
	free(buf);
	return same;
}

static bool documented(int ret)
{
	switch (-ret) {
	case 0:
	case EBUSY: case EXDEV: case ENODATA: case ENOBUFS: case EINVAL:
	case ENOMEM:
	/* File operations' errnos. */
	case EIO: case ENOSPC: case EACCES: case EPERM: case ENOENT:
	case ENOTDIR: case EROFS: case EMFILE: case ENFILE: case EFBIG:
	case EDQUOT: case ELOOP:
		return true;
	}
	return false;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz f = { .p = data, .n = size };
	uint8_t cfg = fz_u8(&f), hdrcfg = fz_u8(&f), slots = fz_u8(&f);
	unsigned int nsegs = 1 + (cfg & 3) % 3, i;
	struct seg_file sf[3];
	struct dq_journal_params jp;
	struct dq_params p;
	struct dqshim_queue *q = NULL;
	uint32_t hdr_slot_size, hdr_flags, qflags;
	uint64_t first_seg = 1, first_msg;
	uint16_t durs[3] = { 0, 0, 0 };
	size_t lens[3];
	int ret;

	if (dirfd_ < 0) {
		remove_stale();
		snprintf(dir, sizeof(dir), "/dev/shm/dq-fuzz-recover.%d",
			 (int)getpid());
		FZ_CHECK(mkdir(dir, 0700) == 0 || errno == EEXIST, "mkdir %s", dir);
		dirfd_ = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		FZ_CHECK(dirfd_ >= 0, "open %s", dir);
		empty_dir();
		atexit(cleanup);
	}

	dq_params_init(&p);
	p.backend = DQ_BACKEND_USER;
	p.slot_count = 1 + slots % 16;
	p.slot_size = slots & 0x10 ? 128 : 64;
	p.flags = (cfg & 4 ? DQ_OPEN_F_KEYS : 0) | (cfg & 8 ? DQ_OPEN_F_TRACK : 0);
	qflags = (cfg & 4 ? DQJ_Q_F_KEYS : 0) | (cfg & 8 ? DQJ_Q_F_TRACK : 0);
	hdr_slot_size = p.slot_size;
	hdr_flags = qflags;
	first_msg = fz_u8(&f);
	if (hdrcfg & 1) {
		hdr_slot_size = fz_u32(&f);
		hdr_flags = fz_u32(&f);
	}
	if (hdrcfg & 2)
		first_seg = fz_u8(&f);
	if (hdrcfg & 0x20)
		for (i = 0; i < nsegs; i++)
			durs[i] = fz_u16(&f);
	for (i = 0; i + 1 < nsegs; i++) {
		size_t l = fz_u16(&f);

		lens[i] = fz_left(&f) ? l % (fz_left(&f) + 1) : 0;
	}

	for (i = 0; i < nsegs; i++) {
		bool hdr = cfg & (0x10 << i);
		size_t take = i + 1 < nsegs ? lens[i] : fz_left(&f);
		uint64_t seg = first_seg + i + ((hdrcfg & 4) && i + 1 == nsegs);
		size_t at = 0;

		if (take > fz_left(&f))
			take = fz_left(&f);
		if (take > MAX_FILE)
			take = MAX_FILE;
		sf[i].img = calloc(1, take + DQJ_V2_DATA);
		FZ_CHECK(sf[i].img, "calloc");
		if (hdr) {
			struct dqj_seg_hdr h = {
				.version = hdrcfg & 0x10 ? DQJ_VERSION_1 :
							   DQJ_VERSION,
				.salt = hdrcfg & 0x10 ? 0 :
					0x5a175a17c0ffee00ULL ^ seg,
				.journal_id = (hdrcfg & 8) && i + 1 == nsegs ?
					      0xbad : 0x5151,
				.segment_no = seg, .first_msg_id = first_msg,
				.created_ns = 1, .slot_size = hdr_slot_size,
				.queue_flags = hdr_flags,
			};

			dqj_seg_hdr_encode(sf[i].img, &h);
			at = dqj_data_start(&h);
			if (h.version != DQJ_VERSION_1 && (hdrcfg & 0x20)) {
				struct dqj_mark m = {
					.seq = 1, .durable_end = at,
					.first_segment = first_seg +
						!!(hdrcfg & 0x40),
				};

				dqj_mark_encode(sf[i].img + DQJ_MARK_OFF1, &h,
						&m);
				m.seq = 2;
				m.durable_end = at + 8ULL * durs[i];
				if ((hdrcfg & 0x80) && i + 1 == nsegs)
					m.flags = DQJ_MARK_F_SEALED;
				dqj_mark_encode(sf[i].img + DQJ_MARK_OFF0, &h,
						&m);
			}
		}
		fz_bytes(&f, sf[i].img + at, take);
		sf[i].len = at + take;
		if (cfg & 0x80)
			fix_crcs(sf[i].img, sf[i].len);
		dqj_seg_name(sf[i].name, seg);
	}
	for (i = 0; i < nsegs; i++) {
		int fd = openat(dirfd_, sf[i].name,
				O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

		FZ_CHECK(fd >= 0, "create %s", sf[i].name);
		FZ_CHECK(write(fd, sf[i].img, sf[i].len) == (ssize_t)sf[i].len,
			 "write");
		close(fd);
	}

	dq_journal_params_init(&jp, dir, DQ_DURABLE_BATCH);
	jp.segment_bytes = 1U << 20;	/* the least: less to preallocate */
	ret = dq_queue_open_durable(&p, &jp, &q);
	FZ_CHECK(documented(ret), "dq_queue_open_durable: %d (%s), not an errno "
		 "dqshim.h documents", ret, dq_strerror(ret));
	if (ret) {
		FZ_CHECK(!q, "failed open left a queue");
		for (i = 0; i < nsegs; i++)
			FZ_CHECK(same_file(&sf[i]),
				 "failed open (%d) changed %s", ret, sf[i].name);
	} else {
		struct dq_journal_stats st = { .sz = sizeof(st) };
		struct dq_queue_stats qs;
		struct dq_reaped out[16];
		uint64_t rej = 0;
		int n, k;

		FZ_CHECK(dq_journal_stats(q, &st) == 0, "journal stats");
		FZ_CHECK(dq_queue_get_stats(q, &qs) == 0, "queue stats");
		for (k = 0; k < DQ_REJ_MAX; k++)
			rej += qs.rejected[k];
		FZ_CHECK(st.rec_recovered <= q->slot_count &&
			 st.rec_overdue <= st.rec_recovered,
			 "recovered %llu overdue %llu slots %u",
			 (unsigned long long)st.rec_recovered,
			 (unsigned long long)st.rec_overdue, q->slot_count);
		/* What recovery says it put back is in the queue. */
		FZ_CHECK(qs.pending + qs.paced == st.rec_recovered && !rej,
			 "recovered %llu, the queue holds %llu, %llu rejected "
			 "(time %llu, key %llu)",
			 (unsigned long long)st.rec_recovered,
			 (unsigned long long)(qs.pending + qs.paced),
			 (unsigned long long)rej,
			 (unsigned long long)qs.rejected[DQ_REJ_TIME],
			 (unsigned long long)qs.rejected[DQ_REJ_KEY]);
		do {
			n = dq_reap(q, out, 16, 0);
			FZ_CHECK(n >= 0, "reap: %d", n);
			for (k = 0; k < n; k++) {
				FZ_CHECK(out[k].len <= q->slot_size,
					 "recovered message of %u bytes, slot %u",
					 out[k].len, q->slot_size);
				FZ_CHECK(dq_done(q, out[k].slot) == 0, "done");
			}
		} while (n > 0);
		dq_queue_close(q);
	}
	for (i = 0; i < nsegs; i++)
		free(sf[i].img);
	empty_dir();
	return 0;
}
