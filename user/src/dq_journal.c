// SPDX-License-Identifier: LGPL-2.1 OR MIT
/*
 * libdqshim: the journal of a durable queue (docs/journal.md).
 *
 * Writing.  dq_commit() gives the message a journal id (plock, in commit
 * order, which is submit ring order) and reserves its bytes against the
 * size limit.  A durable queue does not publish its submit ring index at
 * commit: dq_flush() first writes the COMMIT records of the batch, one
 * write per run of records (dqj_write_run()), header from q->journal's
 * buffer and payload straight from the arena slot, and only then
 * publishes the index and hands the batch to the engine.  So no message
 * reaches the engine, and no consumer, before its record is in the file;
 * its retire entry is always after it.  `always`: io_uring writevs linked
 * to an fdatasync in the same io_uring_enter().  `batch`: pwritev(2),
 * and the sync thread (one per durable queue, the only thread the
 * library starts) calls fdatasync at most sync_interval_us after the
 * first record it does not cover, or at once after sync_records
 * records.  With retire_sync_us, while the records it does not cover
 * are only retire lists (no COMMIT a producer may wait on, no
 * dq_durable_wait() waiting), it still writes the list each interval but
 * syncs at most once per retire_sync_us.
 *
 * Retiring.  A message that leaves the queue (done, finished, cancelled,
 * replaced, rejected) has its id put on the retire list, under plock and
 * rlock; the sync thread writes the list as one RETIRE record before its
 * fdatasync, a flush writes it too when it is long.
 *
 * Segments.  Records go to the active segment (the newest file).  When
 * one does not fit, the active segment gets a SEAL and an fdatasync, and
 * a new preallocated file is made.  Every segment counts the live
 * messages whose current record is in it; the sync thread deletes the
 * oldest segments while they hold none, and relocates the last few live
 * messages of the oldest one when the journal is past half its limit.
 *
 * Locks, outermost first (with dq_internal.h's: cmd_lock -> jlock ->
 * plock -> rlock):
 *   jlock  the files: the active segment, its write offset, the segment
 *          list, the write io_uring, the counters of written and durable.
 *   rlock  the retire list and each segment's live count; innermost,
 *          taken under plock by the paths that free a slot.
 * j->durable_id and j->failed are also read without a lock (atomics).
 * Each store that moves durable_id after the open, and the first
 * failure, is followed by a write to dq_durable_fd()'s eventfd
 * (dqj_efd_signal()) and, but for dqj_fail(), a dcond broadcast
 * (dqj_durable_moved() where both go together).
 *
 * USDT probes (provider dqshim; `bpftrace -l 'usdt:libdqshim.so:*'`):
 *   journal_sync(records, ns, err)       each group-commit fdatasync
 *   journal_always(records, ns, err)     each `always` flush's write+sync
 *   journal_rotate(segment_no)           a new segment
 *   journal_recover(records, recovered, corrupt, ns)   at open
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include <liburing.h>
#include <sys/sdt.h>

#include "dq_internal.h"
#include "dq_jformat.h"

#define DQJ_DEF_SYNC_US		2000U
#define DQJ_DEF_SYNC_RECORDS	4096U
#define DQJ_DEF_MAX_BYTES	(1ULL << 30)
#define DQJ_DEF_SEG_BYTES	(64ULL << 20)
#define DQJ_MIN_SEG_BYTES	(1ULL << 20)
#define DQJ_MAX_SEG_BYTES	(1ULL << 30)
#define DQJ_URING_DEPTH		64U
#define DQJ_IOV_PER_SQE		1020U	/* below IOV_MAX (1024) */

/* A live message found by recovery. */
struct dqj_live {
	uint64_t msg_id;
	uint64_t user_data;
	int64_t due_rt_ns;
	uint64_t seg_no;
	uint32_t off;		/* of the record in its segment */
	uint32_t payload_len;
	uint16_t attempts;
	uint16_t flags;
};

struct dq_journal {
	struct dq_journal_params p;	/* normalised; dir copied */
	char *dir;
	int dirfd;
	int lockfd;
	uint64_t journal_id;
	uint64_t max_segments;		/* max_bytes / segment_bytes */
	uint32_t queue_flags;		/* DQJ_Q_F_* */

	/*
	 * The state (see struct dqj_shared): segs and js point into it.
	 * Named: statefd is DIR/STATE, also the write lock.
	 */
	struct dqj_shared *sh;
	size_t sh_size;
	bool named;
	int statefd;
	struct dqj_seg *segs;
	struct dqj_slot *js;

	/*
	 * Journal positions of this process's own commits (plock for
	 * committed_id; jlock for written_id), in commit order: what
	 * dq_journal_mark() and dq_durable_wait() count.  A private queue's
	 * are its message ids; a named queue's processes share the ids.
	 */
	uint64_t committed_id;		/* last position given out */

	pthread_mutex_t jlock;
	pthread_cond_t jcond;		/* work for the sync thread */
	pthread_cond_t dcond;		/* durable_id or retire_synced moved */
	struct io_uring ring;
	int fd;				/* active segment, O_RDWR */
	uint64_t fd_no;			/* ... its number */
	struct dqj_seg_hdr ahdr;	/* ... its header (salt, version) */
	uint8_t markbuf[DQJ_MARK_SIZE];	/* `always`: the mark in flight */
	uint64_t written_id;		/* last position whose record is written */
	uint64_t records_unsynced;
	/*
	 * jlock: of records_unsynced, those that are not RETIRE records
	 * (COMMITs, REPLACEs, relocated copies): a producer may be waiting
	 * on them, so they are synced on the sync_interval_us schedule even
	 * when retire_sync_us defers the retire-only syncs.  Set and reset
	 * with records_unsynced, under the same lock.
	 */
	uint64_t commits_unsynced;
	/*
	 * jlock: dq_durable_wait() wants the retire entries up to this
	 * count (retire_seq) durable: the sync thread syncs them on the
	 * sync_interval_us schedule, not retire_sync_us's.
	 */
	uint64_t retire_want;
	uint64_t dirty_since;		/* mono ns; 0: all written is synced */
	uint64_t last_sync_ns;		/* mono: when the last one began */
	uint64_t last_write_ns;		/* mono: the sync thread's last write
					 * of the retire list, synced or not */
	bool stop;
	bool thread_started;
	pthread_t thread;
	uint8_t *hdrbuf;		/* sq_entries COMMIT heads */
	struct iovec *iov;
	uint8_t zeros[DQJ_ALIGN];

	/* atomics */
	uint64_t durable_id;
	int failed;			/* first write/sync error, negative */
	int efd;			/* dq_durable_fd()'s eventfd; -1: none */
	uint64_t reserved_bytes;	/* committed, not yet written */
	uint64_t capacity_bytes;	/* what commits may still reserve */

	/*
	 * Retire list: entries (DQJ_RETIRE_ENTRY) and the slot each one
	 * freed (UINT32_MAX: none).  The state changes for them (the slot's
	 * entry cleared, its segment's live count) are made when they are
	 * written, under the write lock (dqj_retires_write()).
	 */
	pthread_mutex_t rlock;
	uint64_t *retires;
	uint32_t *retire_slots;
	size_t nretires, retires_cap;
	uint64_t retire_seq;		/* entries ever pushed */
	uint64_t retire_taken;		/* ... of them taken to be written */
	uint64_t retire_synced;		/* jlock: ... written and synced */
	pthread_cond_t rcond;		/* the idle sync thread sleeps here */
	bool kick;			/* a wakeup for it is pending */

	struct dq_journal_stats st;	/* jlock (rec_* set once) */
};

static uint64_t dqj_rt_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/*
 * CLOCK_MONOTONIC and CLOCK_REALTIME read as one instant: retried until
 * the two monotonic reads around the realtime one are within 20 us.
 * @rt_last: the realtime read comes after the monotonic one (*@mono the
 * first monotonic read), so a gap can only make the realtime value later;
 * else before it (*@mono the second read), the monotonic value later.
 * Writing a due time (rt_last) and mapping it back (!rt_last) then both
 * err towards late: a recovered message is never released early because
 * the thread was preempted between two clock reads.
 */
static void dqj_clock_pair(uint64_t *mono, uint64_t *rt, bool rt_last)
{
	int tries;

	for (tries = 0; tries < 8; tries++) {
		uint64_t m0 = dq_mono_ns(), r = dqj_rt_ns(), m1 = dq_mono_ns();

		*mono = rt_last ? m0 : m1;
		*rt = r;
		if (m1 - m0 <= 20000)
			return;
	}
}

static int dqj_params_normalise(struct dq_journal_params *p,
				const struct dq_journal_params *in)
{
	size_t i;

	*p = *in;
	if (!p->dir || !*p->dir || p->flags ||
	    p->durability > DQ_DURABLE_ALWAYS || p->resv32)
		return -EINVAL;
	for (i = 0; i < sizeof(p->resv) / sizeof(p->resv[0]); i++)
		if (p->resv[i])
			return -EINVAL;
	if (!p->sync_interval_us)
		p->sync_interval_us = DQJ_DEF_SYNC_US;
	if (!p->sync_records)
		p->sync_records = DQJ_DEF_SYNC_RECORDS;
	if (!p->segment_bytes)
		p->segment_bytes = DQJ_DEF_SEG_BYTES;
	if (!p->max_bytes)
		p->max_bytes = DQJ_DEF_MAX_BYTES;
	if (p->segment_bytes < DQJ_MIN_SEG_BYTES ||
	    p->segment_bytes > DQJ_MAX_SEG_BYTES ||
	    (p->segment_bytes & (DQJ_ALIGN - 1)))
		return -EINVAL;
	/* Room for the active segment, one to seal and one to spare. */
	if (p->max_bytes / p->segment_bytes < 3)
		return -EINVAL;
	return 0;
}

/* ---- segments ------------------------------------------------------ */

static struct dqj_seg *dqj_active(struct dq_journal *j)
{
	return &j->segs[j->sh->nsegs - 1];
}

static struct dqj_seg *dqj_seg_of(struct dq_journal *j, uint64_t no)
{
	if (!j->sh->nsegs || no < j->segs[0].no || no > dqj_active(j)->no)
		return NULL;
	return &j->segs[no - j->segs[0].no];
}

static int dqj_segs_push(struct dq_journal *j, uint64_t no)
{
	struct dqj_seg *g;

	if (j->sh->nsegs == j->sh->seg_cap)
		return -ENOSPC;
	g = &j->segs[j->sh->nsegs];
	memset(g, 0, sizeof(*g));
	g->no = no;
	g->used = DQJ_V2_DATA;
	j->sh->nsegs++;
	return 0;
}

/*
 * The write lock, inside jlock: a named queue's processes take turns at
 * the files and the shared state (flock() of DIR/STATE: the kernel drops
 * it when its holder dies).  Taking it also catches up with what the
 * others did: a batch a dead holder left half written is cut back
 * (struct dqj_shared), and the active segment may be a newer one.  A
 * private queue's is jlock alone.  Never held across a condition wait.
 */
static int dqj_reopen_active(struct dq_journal *j);

static void dqj_wlock(struct dq_journal *j)
{
	struct dqj_shared *sh = j->sh;

	if (!j->named)
		return;
	while (flock(j->statefd, LOCK_EX) < 0 && errno == EINTR)
		;
	if (sh->wb_busy) {
		if (sh->nsegs && j->segs[sh->nsegs - 1].no == sh->wb_seg)
			j->segs[sh->nsegs - 1].used = sh->wb_used;
		sh->wb_busy = 0;
		sh->torn_writes++;
	}
	if (sh->nsegs && j->segs[sh->nsegs - 1].no != j->fd_no &&
	    dqj_reopen_active(j) < 0)
		j->st.io_errors++;
}

static void dqj_wunlock(struct dq_journal *j)
{
	if (j->named)
		flock(j->statefd, LOCK_UN);
}

/*
 * What commits may still reserve: the rest of the active segment and the
 * segments the limit allows, less one segment kept for retire entries,
 * seals and relocations (they free space, so they must always fit), and
 * less the largest record per segment (a record never straddles two).
 * Once retires have rotated into that last segment, it is the active one
 * and commits get none of it: had they filled it, the retires after them
 * would find no room, nothing would be reclaimed, and every commit would
 * get -ENOSPC with nothing held (durable_test's enospc_reserve).
 * jlock held.
 */
static void dqj_capacity_update(struct dq_journal *j, uint32_t slot_size)
{
	uint64_t per_seg = j->p.segment_bytes - DQJ_V2_DATA - DQJ_SEAL_SIZE -
			   dqj_commit_bytes(slot_size);
	uint64_t cap = 0;

	if (j->max_segments > j->sh->nsegs + 1)
		cap = (j->max_segments - j->sh->nsegs - 1) * per_seg;
	if (j->sh->nsegs && j->sh->nsegs < j->max_segments) {
		struct dqj_seg *a = dqj_active(j);
		uint64_t left = j->p.segment_bytes - DQJ_SEAL_SIZE - a->used;

		cap += left > dqj_commit_bytes(slot_size) ?
		       left - dqj_commit_bytes(slot_size) : 0;
	}
	__atomic_store_n(&j->capacity_bytes, cap, __ATOMIC_RELEASE);
}

/*
 * Tell dq_durable_fd()'s reader that durable_id moved or the journal
 * failed (stored before this).  An eventfd's write never blocks while its
 * counter is below 2^64 - 2, and its reader only needs "look again".
 */
static void dqj_efd_signal(struct dq_journal *j)
{
	int fd = __atomic_load_n(&j->efd, __ATOMIC_ACQUIRE);

	if (fd >= 0)
		(void)!eventfd_write(fd, 1);
}

/* durable_id moved (jlock held): its waiters and its descriptor. */
static void dqj_durable_moved(struct dq_journal *j)
{
	pthread_cond_broadcast(&j->dcond);
	dqj_efd_signal(j);
}

static void dqj_fail(struct dq_journal *j, int err)
{
	int zero = 0;

	if (err >= 0)
		err = -EIO;
	if (__atomic_compare_exchange_n(&j->failed, &zero, err, false,
					__ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
		j->st.io_errors++;
		dqj_efd_signal(j);
	}
}

/* Add to a counter of the state (every process's, for dqctl). */
#define DQJ_SH_ADD(j, field, n) \
	__atomic_fetch_add(&(j)->sh->field, (uint64_t)(n), __ATOMIC_RELAXED)

/* Every message id up to @id is durable (state; any process). */
static void dqj_sh_synced(struct dq_journal *j, uint64_t id)
{
	uint64_t cur = __atomic_load_n(&j->sh->synced_id, __ATOMIC_RELAXED);

	while (cur < id &&
	       !__atomic_compare_exchange_n(&j->sh->synced_id, &cur, id, false,
					    __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		;
}

/* Full-length pwrite (jlock held). */
static int dqj_pwrite(int fd, const void *buf, size_t len, uint64_t off)
{
	const uint8_t *p = buf;

	while (len) {
		ssize_t n = pwrite(fd, p, len, (off_t)off);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			return -EIO;
		p += n;
		len -= (size_t)n;
		off += (uint64_t)n;
	}
	return 0;
}

/*
 * Preallocate a segment of @size bytes; 0 or -errno (-EOPNOTSUPP: the
 * file system cannot).  tmpfs fails fallocate() with EINTR, its
 * allocation given back, whenever a signal is pending, one with
 * SA_RESTART too, and 64 MiB of 4 KiB pages take long enough to meet
 * one: a Go program's runtime signals (go-6.1, a journal on the guest's
 * tmpfs, 2026-12-07), any program's timers.  Retrying is no cure: under
 * a 200 us SIGALRM in the 6.1 guest every retry of even 256 KiB pieces
 * was interrupted.  So the call runs with this thread's signals blocked
 * (those pending are delivered when it returns, a few ms late at most;
 * process-directed ones go to another thread meanwhile).
 */
static int dqj_fallocate(int fd, uint64_t size)
{
	sigset_t all, old;
	int i, ret = 0;

	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	for (i = 0; i < 8; i++) {
		ret = fallocate(fd, 0, 0, (off_t)size) < 0 ? -errno : 0;
		if (ret != -EINTR)
			break;
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return ret;
}

/*
 * 64 random bits, unpredictable to whoever writes payloads (the salt is
 * what keeps payload bytes from passing for records), without waiting
 * for the entropy pool at boot: GRND_INSECURE (Linux 5.6) when the pool
 * is not ready, a blocking read only on older kernels.
 */
static uint64_t dqj_random64(void)
{
#ifndef GRND_INSECURE
#define GRND_INSECURE 0x0004
#endif
	uint64_t v = 0;

	if (getrandom(&v, sizeof(v), GRND_NONBLOCK) == sizeof(v) ||
	    getrandom(&v, sizeof(v), GRND_INSECURE) == sizeof(v) ||
	    getrandom(&v, sizeof(v), 0) == sizeof(v))
		return v;
	return (dqj_rt_ns() ^ dq_mono_ns() << 20 ^ (uint64_t)getpid() << 44) *
	       0x9e3779b97f4a7c15ULL;
}

/*
 * Write sync mark @m into the segment @fd whose header is @h (a plain
 * pwrite: the caller's fdatasync makes it durable).
 */
static int dqj_mark_put(int fd, const struct dqj_seg_hdr *h,
			const struct dqj_mark *m)
{
	uint8_t buf[DQJ_MARK_SIZE];

	dqj_mark_encode(buf, h, m);
	return dqj_pwrite(fd, buf, sizeof(buf), dqj_mark_off(m->seq));
}

/*
 * The next sync mark of the active segment (write lock held, so no write
 * of any process is in flight and `used` is where the completed records
 * end): durable_end @end, the oldest segment the journal still needs
 * @first (never less than a mark said before), @flags.  Written before
 * the fdatasync that makes it (and the records before @end) durable.
 * A v1 active segment (only between a recovery and its rotation) has no
 * marks.
 */
static void dqj_mark_fill(struct dq_journal *j, uint64_t end, uint64_t first,
			  uint32_t flags, struct dqj_mark *m)
{
	if (first < j->sh->mark_first)
		first = j->sh->mark_first;
	m->flags = flags;
	m->seq = ++j->sh->mark_seq;
	m->durable_end = end;
	m->first_segment = first;
	j->sh->mark_first = first;
}

static int dqj_mark_next(struct dq_journal *j, uint64_t end, uint64_t first,
			 uint32_t flags)
{
	struct dqj_mark m;

	if (j->ahdr.version == DQJ_VERSION_1)
		return 0;
	dqj_mark_fill(j, end, first, flags, &m);
	return dqj_mark_put(j->fd, &j->ahdr, &m);
}

/*
 * Make segment @no: written as "<name>.new" (preallocated: a full disk
 * shows here, as -ENOSPC, before any record depends on it; header (v2,
 * a new salt) and first sync mark (@first_seg: the oldest segment the
 * journal needs) written and synced), then renamed into place and the
 * directory synced.  A crash part way leaves only the .new file, which
 * the journal's readers ignore and the next recovery removes, never a
 * segment without a header.  Returns the fd (header in *@hout) or
 * -errno; on error no file is left.
 */
static int dqj_seg_create(struct dq_journal *j, uint64_t no,
			  uint64_t first_id, uint32_t slot_size,
			  uint64_t first_seg, struct dqj_seg_hdr *hout)
{
	struct dqj_mark m = {
		.seq = 1, .durable_end = DQJ_V2_DATA,
		.first_segment = first_seg,
	};
	struct dqj_seg_hdr h = {
		.version = DQJ_VERSION,
		.salt = dqj_random64(),
		.journal_id = j->journal_id,
		.segment_no = no,
		.first_msg_id = first_id,
		.created_ns = dqj_rt_ns(),
		.slot_size = slot_size,
		.queue_flags = j->queue_flags,
	};
	uint8_t buf[DQJ_HDR_SIZE];
	char name[32], tmp[40];
	int fd, ret;

	dqj_seg_name(name, no);
	snprintf(tmp, sizeof(tmp), "%s.new", name);
	unlinkat(j->dirfd, tmp, 0);
	fd = openat(j->dirfd, tmp, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC,
		    0600);
	if (fd < 0)
		return -errno;
	ret = dqj_fallocate(fd, j->p.segment_bytes);
	if (ret == -EOPNOTSUPP)
		ret = ftruncate(fd, (off_t)j->p.segment_bytes) < 0 ? -errno : 0;
	if (ret)
		goto fail;
	dqj_seg_hdr_encode(buf, &h);
	ret = dqj_pwrite(fd, buf, sizeof(buf), 0);
	if (!ret)
		ret = dqj_mark_put(fd, &h, &m);
	if (ret)
		goto fail;
	if (fdatasync(fd) < 0 ||
	    renameat2(j->dirfd, tmp, j->dirfd, name, RENAME_NOREPLACE) < 0) {
		ret = -errno;
		goto fail;
	}
	if (fsync(j->dirfd) < 0) {
		ret = -errno;
		unlinkat(j->dirfd, name, 0);
		close(fd);
		return ret;
	}
	*hout = h;
	return fd;
fail:
	close(fd);
	unlinkat(j->dirfd, tmp, 0);
	return ret;
}

/* Open the active segment (another process made it).  Write lock held. */
static int dqj_reopen_active(struct dq_journal *j)
{
	uint64_t no = dqj_active(j)->no;
	uint8_t b[DQJ_HDR_SIZE];
	struct dqj_seg_hdr h;
	char name[32];
	int fd;

	dqj_seg_name(name, no);
	fd = openat(j->dirfd, name, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	/* Its salt: the records this process writes there are seeded by it. */
	if (pread(fd, b, sizeof(b), 0) != (ssize_t)sizeof(b) ||
	    dqj_seg_hdr_decode(b, &h)) {
		close(fd);
		return -EIO;
	}
	if (j->fd >= 0)
		close(j->fd);
	j->fd = fd;
	j->fd_no = no;
	j->ahdr = h;
	return 0;
}

/* Remove what a crash in dqj_seg_create() left behind. */
static void dqj_remove_partial(struct dq_journal *j)
{
	struct dirent *de;
	DIR *d;
	int fd = dup(j->dirfd);

	if (fd < 0)
		return;
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return;
	}
	rewinddir(d);
	while ((de = readdir(d))) {
		size_t n = strlen(de->d_name);

		if (n > 8 && !strcmp(de->d_name + n - 8, ".dqj.new"))
			unlinkat(j->dirfd, de->d_name, 0);
	}
	closedir(d);
}

/*
 * SEAL the active segment at its end and sync it, with a mark saying it
 * is sealed (so its successor, made before, exists: recovery can tell a
 * deleted newest segment).  Write lock held.
 */
static int dqj_seal_active(struct dq_journal *j)
{
	struct dqj_seg *a = dqj_active(j);
	uint8_t buf[DQJ_SEAL_SIZE];
	int ret;

	dqj_seal_encode(buf, dqj_seed(&j->ahdr, a->used), a->records,
			a->last_id);
	ret = dqj_pwrite(j->fd, buf, sizeof(buf), a->used);
	if (!ret)
		ret = dqj_mark_next(j, a->used + DQJ_SEAL_SIZE, j->segs[0].no,
				    DQJ_MARK_F_SEALED);
	if (!ret && fdatasync(j->fd) < 0)
		ret = -errno;
	if (ret)
		return ret;
	a->used += DQJ_SEAL_SIZE;
	a->sealed = true;
	return 0;
}

/*
 * Start the next segment and seal the active one.  Everything written so
 * far (by every process) is durable afterwards.  The new segment is made
 * first, so a sealed segment always has a successor (recovery finds a
 * deleted newest segment by it), and a failure to make it (a full disk)
 * leaves the active segment as it was.  Write lock held.
 */
static int dqj_rotate(struct dqshim_queue *q, struct dq_journal *j,
		      bool force)
{
	uint64_t no = dqj_active(j)->no + 1;
	struct dqj_seg_hdr h;
	int fd, ret;

	/* Recovery (@force) may pass the limit: the journal was there. */
	if (!force && j->sh->nsegs + 1 > j->max_segments)
		return -ENOSPC;
	if (j->sh->nsegs == j->sh->seg_cap)
		return -ENOSPC;
	fd = dqj_seg_create(j, no, j->sh->next_id, q->slot_size,
			    j->segs[0].no, &h);
	if (fd < 0)
		return fd;
	ret = dqj_seal_active(j);
	if (ret) {
		/*
		 * The new segment stays (its predecessor's SEAL may reach
		 * the disk): the journal is failed, never retried into a
		 * second segment of that number.
		 */
		close(fd);
		return ret == -ENOSPC || ret == -EDQUOT ? -EIO : ret;
	}
	j->st.fsyncs++;
	DQJ_SH_ADD(j, fsyncs, 1);
	dqj_sh_synced(j, j->sh->next_id - 1);
	j->retire_synced = j->retire_taken;
	__atomic_store_n(&j->durable_id, j->written_id, __ATOMIC_RELEASE);
	dqj_durable_moved(j);
	j->records_unsynced = 0;
	j->commits_unsynced = 0;
	j->dirty_since = 0;

	ret = dqj_segs_push(j, no);
	if (ret) {
		/* Checked above: cannot happen; never a sealed newest. */
		close(fd);
		return -EIO;
	}
	close(j->fd);
	j->fd = fd;
	j->fd_no = no;
	j->ahdr = h;
	j->sh->mark_seq = 1;
	if (j->sh->wb_busy) {
		/* All of the batch so far is in the sealed segment. */
		j->sh->wb_seg = no;
		j->sh->wb_used = DQJ_V2_DATA;
	}
	DTRACE_PROBE1(dqshim, journal_rotate, no);
	j->st.bytes += j->p.segment_bytes;
	return 0;
}

/* Room for @bytes in the active segment, rotating when needed. */
static int dqj_room(struct dqshim_queue *q, struct dq_journal *j,
		    uint64_t bytes)
{
	if (dqj_active(j)->used + bytes + DQJ_SEAL_SIZE <= j->p.segment_bytes)
		return 0;
	return dqj_rotate(q, j, false);
}

/* Wake the sync thread from its idle sleep (rcond).  rlock not held. */
static void dqj_kick(struct dq_journal *j)
{
	pthread_mutex_lock(&j->rlock);
	j->kick = true;
	pthread_cond_signal(&j->rcond);
	pthread_mutex_unlock(&j->rlock);
}

/*
 * @records were written and wait for a sync (jlock held).  @retire: they
 * are RETIRE records, which retire_sync_us may leave unsynced longer; the
 * first other record wakes the sync thread from such a wait.
 */
static void dqj_mark_dirty(struct dq_journal *j, uint64_t records,
			   bool retire)
{
	bool first_commit = false;

	if (!j->dirty_since) {
		j->dirty_since = dq_mono_ns();
		dqj_kick(j);
	}
	j->records_unsynced += records;
	if (!retire) {
		first_commit = !j->commits_unsynced;
		j->commits_unsynced += records;
	}
	if (j->records_unsynced >= j->p.sync_records ||
	    j->records_unsynced == records || first_commit)
		pthread_cond_signal(&j->jcond);
}

/* ---- retire list --------------------------------------------------- */

/*
 * Append an entry (rlock held).  Without memory the entry is lost: the
 * message is then not retired on disk and may come back once after a
 * crash, which at-least-once allows.
 */
static void dqj_retire_push(struct dq_journal *j, uint64_t entry,
			    uint32_t slot)
{
	if (j->nretires == j->retires_cap) {
		size_t cap = j->retires_cap ? 2 * j->retires_cap : 1024;
		uint64_t *n = realloc(j->retires, cap * sizeof(*n));
		uint32_t *ns;

		if (!n)
			return;
		j->retires = n;
		ns = realloc(j->retire_slots, cap * sizeof(*ns));
		if (!ns)
			return;
		j->retire_slots = ns;
		j->retires_cap = cap;
	}
	j->retire_slots[j->nretires] = slot;
	j->retires[j->nretires++] = entry;
	j->retire_seq++;
	j->st.retires++;
	if (!j->kick) {
		j->kick = true;
		pthread_cond_signal(&j->rcond);
	}
}

/*
 * A slot's message left the queue.  plock held (this process cannot
 * commit the slot again before this returns).  The slot's entry names the
 * message whoever committed it (on a named queue, maybe another process):
 * it was set under the write lock before the message was published, and
 * only a commit into this slot changes it, which cannot happen while the
 * slot is ours.  Read here without the write lock; the state changes wait
 * for the entry to be written.
 */
void dq_journal_retire_locked(struct dqshim_queue *q, uint32_t slot,
			      unsigned int reason)
{
	struct dq_journal *j = q->journal;
	uint64_t id = __atomic_load_n(&j->js[slot].id, __ATOMIC_ACQUIRE);

	if (!id)
		return;		/* nothing journaled holds the slot */
	pthread_mutex_lock(&j->rlock);
	dqj_retire_push(j, DQJ_RETIRE_ENTRY(id, reason), slot);
	pthread_mutex_unlock(&j->rlock);
}

/*
 * The state changes of retire entries about to be written: a slot whose
 * entry still names the retired message is cleared and its segment loses
 * a live message.  (A slot committed again since then already counted the
 * old message gone, in dq_journal_write_batch().)  Write lock held.
 */
static void dqj_retires_apply(struct dq_journal *j, const uint64_t *list,
			      const uint32_t *slots, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		struct dqj_slot *js;
		struct dqj_seg *g;

		if (slots[i] >= j->sh->slot_count)
			continue;
		js = &j->js[slots[i]];
		if (js->id != DQJ_RETIRE_ID(list[i]))
			continue;
		g = dqj_seg_of(j, js->seg);
		if (g && g->live)
			g->live--;
		__atomic_store_n(&js->id, 0, __ATOMIC_RELEASE);
	}
}

/*
 * Write the retire list as RETIRE records.  jlock and the write lock
 * held; rlock is taken to take the list, not while writing.
 */
static int dqj_retires_write(struct dqshim_queue *q, struct dq_journal *j)
{
	uint64_t *list;
	uint32_t *slots;
	size_t n, done = 0;
	int ret = 0;

	pthread_mutex_lock(&j->rlock);
	list = j->retires;
	slots = j->retire_slots;
	n = j->nretires;
	j->retires = NULL;
	j->retire_slots = NULL;
	j->nretires = 0;
	j->retires_cap = 0;
	j->retire_taken = j->retire_seq;
	pthread_mutex_unlock(&j->rlock);
	if (!n) {
		free(list);
		free(slots);
		return 0;
	}
	dqj_retires_apply(j, list, slots, n);

	while (done < n && !ret) {
		uint64_t room = j->p.segment_bytes / 2;
		uint32_t cnt = (uint32_t)(n - done);
		uint32_t bytes;
		uint8_t *buf;

		if (dqj_retire_bytes(cnt) > room)
			cnt = (uint32_t)((room - DQJ_REC_HDR_SIZE) / 8);
		bytes = dqj_retire_bytes(cnt);
		ret = dqj_room(q, j, bytes);
		if (ret)
			break;
		buf = malloc(bytes);
		if (!buf) {
			ret = -ENOMEM;
			break;
		}
		dqj_retire_encode(buf, dqj_seed(&j->ahdr, dqj_active(j)->used),
				  list + done, cnt);
		ret = dqj_pwrite(j->fd, buf, bytes, dqj_active(j)->used);
		free(buf);
		if (ret)
			break;
		dqj_active(j)->used += bytes;
		dqj_active(j)->records++;
		j->st.used_bytes += bytes;
		dqj_mark_dirty(j, 1, true);
		DQJ_SH_ADD(j, retires, cnt);
		done += cnt;
	}
	if (ret) {
		/* The journal is failed: nothing is durable after this. */
		dqj_fail(j, ret);
	}
	free(list);
	free(slots);
	dqj_capacity_update(j, q->slot_size);
	return ret;
}

/* ---- commit -------------------------------------------------------- */

/*
 * dq_commit() of a durable queue: the message's journal position and its
 * bytes against the limit (its message id comes when its record is
 * written).  plock held.  -ENOSPC: the journal is at its limit; the
 * journal's error once it failed.
 */
int dq_journal_commit_locked(struct dqshim_queue *q, uint32_t slot,
			     uint32_t len)
{
	struct dq_journal *j = q->journal;
	uint64_t bytes = dqj_commit_bytes(len);
	uint64_t cap = __atomic_load_n(&j->capacity_bytes, __ATOMIC_ACQUIRE);
	int failed = __atomic_load_n(&j->failed, __ATOMIC_ACQUIRE);

	(void)slot;
	if (failed)
		return failed;
	if (j->reserved_bytes + bytes > cap) {
		__atomic_fetch_add(&j->st.enospc, 1, __ATOMIC_RELAXED);
		return -ENOSPC;
	}
	__atomic_fetch_add(&j->reserved_bytes, bytes, __ATOMIC_RELAXED);
	j->committed_id++;
	return 0;
}

/* Submit @n prepared SQEs and reap them; 0 or the first error. */
static int dqj_uring_run(struct dq_journal *j, unsigned int n,
			 const uint64_t *expect)
{
	struct io_uring_cqe *cqe;
	unsigned int got = 0;
	int ret, err = 0;

	ret = io_uring_submit(&j->ring);
	if (ret < 0)
		return ret;
	while (got < n) {
		ret = io_uring_wait_cqe(&j->ring, &cqe);
		if (ret == -EINTR)
			continue;
		if (ret < 0)
			return ret;
		if (cqe->res < 0 && !err)
			err = cqe->res;
		else if (cqe->res >= 0 && expect &&
			 (uint64_t)cqe->res != expect[cqe->user_data] && !err)
			err = -EIO;	/* short write: fallocated, so never */
		io_uring_cqe_seen(&j->ring, cqe);
		got++;
	}
	return err;
}

/*
 * `always`: every write of a submission is linked, so they run in order
 * and the fdatasync at the chain's end starts only after all of them
 * completed.  (Unlinked SQEs may run concurrently with the sync.)  A
 * submission without the sync ends its chain at io_uring_enter().
 */
static void dqj_link_always(struct dq_journal *j, struct io_uring_sqe *sqe)
{
	if (j->p.durability == DQ_DURABLE_ALWAYS)
		sqe->flags |= IOSQE_IO_LINK;
}

/*
 * The run of records in iov[@iov0, @niov), @bytes at @off of the active
 * segment.  `always`: one writev SQE, linked to the batch's fdatasync
 * (its expected result goes to @expect).  `batch`: one pwritev(2) now.
 * The caller waits for its writes either way, and a buffered write that
 * io_uring cannot do without blocking (ext4 has no non-blocking buffered
 * write) goes to an io-wq worker: two thread hand-offs a flush for
 * nothing that the sync thread's fdatasync does not already give
 * (dqbridge's peer bench: the worker was 7 % of the bridge's CPU while
 * it diverted).  Short only on an error: the segment is fallocated.
 */
static int dqj_write_run(struct dq_journal *j, unsigned int iov0,
			 unsigned int niov, uint64_t off, uint64_t bytes,
			 uint64_t *expect, unsigned int *nsqe)
{
	struct io_uring_sqe *sqe;
	ssize_t n;

	dqj_active(j)->used += bytes;
	if (j->p.durability != DQ_DURABLE_ALWAYS) {
		n = pwritev(j->fd, j->iov + iov0, (int)(niov - iov0), (off_t)off);
		if (n < 0)
			return -errno;
		return (uint64_t)n == bytes ? 0 : -EIO;
	}
	sqe = io_uring_get_sqe(&j->ring);
	io_uring_prep_writev(sqe, j->fd, j->iov + iov0, niov - iov0, off);
	dqj_link_always(j, sqe);
	sqe->user_data = *nsqe;
	expect[(*nsqe)++] = bytes;
	return 0;
}

/*
 * Write the COMMIT records of submit ring entries [@from, @to) (cmd_lock
 * held, entries not yet published).  Payloads are written from the arena.
 * `always`: the writes are linked to an fdatasync.  0 or -errno; on error
 * nothing of the batch has reached the engine and the journal is failed.
 */
int dq_journal_write_batch(struct dqshim_queue *q, uint32_t from, uint32_t to)
{
	struct dq_journal *j = q->journal;
	uint64_t now_mono, now_rt;
	uint64_t expect[DQJ_URING_DEPTH];
	uint64_t first_off = 0, run_bytes = 0;
	uint64_t total = 0;
	unsigned int nsqe = 0, niov = 0, iov0 = 0, nrec = 0, run_recs = 0;
	uint32_t idx;
	int ret = 0;

	dqj_clock_pair(&now_mono, &now_rt, true);
	pthread_mutex_lock(&j->jlock);
	dqj_wlock(j);
	ret = __atomic_load_n(&j->failed, __ATOMIC_ACQUIRE);
	if (ret)
		goto unlock;
	ret = dqj_retires_write(q, j);
	if (ret)
		goto unlock;
	/*
	 * A batch that does not fit the rest of the active segment starts a
	 * new one first: a full disk (-ENOSPC) then fails the flush before
	 * anything of the batch is written, and the batch stays in the ring
	 * for a later flush.  Only a batch larger than a whole segment
	 * rotates in the middle, where a failure is the journal's end.
	 */
	for (idx = from; idx != to; idx++)
		total += dqj_commit_bytes(q->sq_ring[idx &
					(q->sq_entries - 1)].len);
	if (dqj_active(j)->used + total + DQJ_SEAL_SIZE > j->p.segment_bytes &&
	    DQJ_V2_DATA + total + DQJ_SEAL_SIZE <= j->p.segment_bytes) {
		ret = dqj_rotate(q, j, false);
		if (ret == -ENOSPC || ret == -EDQUOT) {
			__atomic_fetch_add(&j->st.enospc, 1, __ATOMIC_RELAXED);
			goto unlock;	/* reservations kept for the retry */
		}
		if (ret)
			goto fail;
	}

	/* From here the active segment's `used` runs ahead of the writes. */
	j->sh->wb_busy = 1;
	j->sh->wb_seg = dqj_active(j)->no;
	j->sh->wb_used = dqj_active(j)->used;
	for (idx = from; idx != to; idx++) {
		const struct dq_desc *d = &q->sq_ring[idx & (q->sq_entries - 1)];
		uint32_t bytes = dqj_commit_bytes(d->len);
		uint8_t *head = j->hdrbuf + (size_t)(idx - from) * DQJ_COMMIT_SIZE;
		const void *payload = q->arena + (size_t)d->slot * q->slot_size;
		struct dqj_slot *js = &j->js[d->slot];
		uint64_t id = j->sh->next_id++;
		uint32_t flags = 0;
		int64_t due_rt;

		if (d->flags & DQ_DESC_F_RELATIVE)
			due_rt = (int64_t)(now_rt + d->due_ns);
		else
			due_rt = (int64_t)now_rt + (int64_t)(d->due_ns - now_mono);
		if (d->flags & DQ_DESC_F_KEY)
			flags |= DQJ_COMMIT_F_KEY;
		if (d->flags & DQ_DESC_F_REPLACE)
			flags |= DQJ_COMMIT_F_REPLACE;

		/* A full SQE, full ring, or no room: write what is built. */
		if (niov + 3 > iov0 + DQJ_IOV_PER_SQE ||
		    dqj_active(j)->used + run_bytes + bytes + DQJ_SEAL_SIZE >
		    j->p.segment_bytes) {
			if (run_recs) {
				ret = dqj_write_run(j, iov0, niov, first_off,
						    run_bytes, expect, &nsqe);
				if (ret)
					goto fail;
				iov0 = niov;
				run_bytes = 0;
				run_recs = 0;
			}
			/* Room for the last run, a mark and a sync. */
			if (nsqe >= DQJ_URING_DEPTH - 3 ||
			    niov + 3 > q->sq_entries * 3 ||
			    dqj_active(j)->used + bytes + DQJ_SEAL_SIZE >
			    j->p.segment_bytes) {
				ret = dqj_uring_run(j, nsqe, expect);
				nsqe = 0;
				niov = iov0 = 0;
				if (ret)
					goto fail;
				ret = dqj_room(q, j, bytes);
				if (ret)
					goto fail;
			}
		}
		if (!run_recs)
			first_off = dqj_active(j)->used;
		dqj_commit_encode(head, dqj_seed(&j->ahdr, first_off + run_bytes),
				  flags, id, d->user_data, due_rt,
				  d->flags & DQ_DESC_F_ATTEMPTS ? d->resv : 0,
				  payload, d->len);
		j->iov[niov].iov_base = head;
		j->iov[niov++].iov_len = DQJ_COMMIT_SIZE;
		if (d->len) {
			j->iov[niov].iov_base = (void *)payload;
			j->iov[niov++].iov_len = d->len;
		}
		if (bytes != DQJ_COMMIT_SIZE + d->len) {
			j->iov[niov].iov_base = j->zeros;
			j->iov[niov++].iov_len = bytes - DQJ_COMMIT_SIZE - d->len;
		}
		if (js->id) {
			/*
			 * The slot's last message left the queue and its
			 * retire entry is on its way (dqj_retires_apply()
			 * will find the slot taken): it is gone from here.
			 */
			struct dqj_seg *g = dqj_seg_of(j, js->seg);

			if (g && g->live)
				g->live--;
		}
		js->seg = (uint32_t)dqj_active(j)->no;
		js->off = (uint32_t)(first_off + run_bytes);
		__atomic_store_n(&js->id, id, __ATOMIC_RELEASE);
		dqj_active(j)->live++;
		run_bytes += bytes;
		run_recs++;
		dqj_active(j)->records++;
		dqj_active(j)->last_id = id;
		nrec++;
	}
	if (run_recs) {
		struct io_uring_sqe *sqe;

		ret = dqj_write_run(j, iov0, niov, first_off, run_bytes,
				    expect, &nsqe);
		if (ret)
			goto fail;
		if (j->p.durability == DQ_DURABLE_ALWAYS &&
		    j->ahdr.version != DQJ_VERSION_1) {
			/* The sync mark, linked after the records. */
			struct dqj_mark m;

			dqj_mark_fill(j, dqj_active(j)->used, j->segs[0].no, 0,
				      &m);
			dqj_mark_encode(j->markbuf, &j->ahdr, &m);
			sqe = io_uring_get_sqe(&j->ring);
			io_uring_prep_write(sqe, j->fd, j->markbuf,
					    DQJ_MARK_SIZE, dqj_mark_off(m.seq));
			dqj_link_always(j, sqe);
			sqe->user_data = nsqe;
			expect[nsqe++] = DQJ_MARK_SIZE;
		}
		if (j->p.durability == DQ_DURABLE_ALWAYS) {
			sqe = io_uring_get_sqe(&j->ring);
			io_uring_prep_fsync(sqe, j->fd, IORING_FSYNC_DATASYNC);
			sqe->user_data = nsqe;
			expect[nsqe++] = 0;
		}
	}
	if (nsqe) {
		uint64_t t0 = dq_mono_ns();

		ret = dqj_uring_run(j, nsqe, expect);
		if (j->p.durability == DQ_DURABLE_ALWAYS && run_recs)
			DTRACE_PROBE3(dqshim, journal_always, nrec,
				      dq_mono_ns() - t0, ret);
		if (ret)
			goto fail;
		if (j->p.durability == DQ_DURABLE_ALWAYS && run_recs) {
			uint64_t dt = dq_mono_ns() - t0;

			j->st.fsyncs++;
			j->st.sync_ns_total += dt;
			DQJ_SH_ADD(j, fsyncs, 1);
			DQJ_SH_ADD(j, sync_ns_total, dt);
			DQJ_SH_ADD(j, synced_records,
				   nrec + j->records_unsynced);
			dqj_sh_synced(j, j->sh->next_id - 1);
			if (dt > j->st.sync_ns_max)
				j->st.sync_ns_max = dt;
		}
	}
	j->sh->wb_busy = 0;
	j->st.commits += nrec;
	DQJ_SH_ADD(j, commits, nrec);
	j->st.used_bytes += total;
	j->written_id += nrec;
	if (j->p.durability == DQ_DURABLE_ALWAYS) {
		/* Earlier writes (retires) went before this fsync too. */
		j->st.synced_records += nrec + j->records_unsynced;
		j->records_unsynced = 0;
		j->commits_unsynced = 0;
		j->dirty_since = 0;
		j->retire_synced = j->retire_taken;
		__atomic_store_n(&j->durable_id, j->written_id,
				 __ATOMIC_RELEASE);
		dqj_durable_moved(j);
	} else if (nrec) {
		dqj_mark_dirty(j, nrec, false);
	}
	goto out;
fail:
	/* Nothing may follow the part of the batch that was not written. */
	if (j->sh->wb_busy && dqj_active(j)->no == j->sh->wb_seg)
		dqj_active(j)->used = j->sh->wb_used;
	j->sh->wb_busy = 0;
	dqj_fail(j, ret);
out:
	/* The batch's reservations are written now (or the journal failed). */
	__atomic_fetch_sub(&j->reserved_bytes, total, __ATOMIC_RELAXED);
unlock:
	dqj_capacity_update(j, q->slot_size);
	dqj_wunlock(j);
	pthread_mutex_unlock(&j->jlock);
	return ret;
}

/* ---- sync thread --------------------------------------------------- */

/*
 * Delete the oldest segments while no live message is in them (a prefix:
 * a retire entry may name a message of an older segment, so only the
 * oldest may go).  The active segment stays.  jlock and the write lock
 * held.
 */
static void dqj_reclaim(struct dqshim_queue *q, struct dq_journal *j)
{
	size_t gone = 0, can = 0;

	while (can + 1 < j->sh->nsegs && j->segs[can].sealed &&
	       !j->segs[can].live)
		can++;
	/*
	 * A segment emptied by relocation: its messages' copies must be
	 * durable before it goes, and on a named queue they may be another
	 * process's, written after the sync this follows.  Copies are in
	 * the active segment (older ones were synced when sealed).  And the
	 * active segment's mark must say they are no longer needed before
	 * any of them goes: a recovery then tells a segment deleted by
	 * reclamation from a lost one.
	 */
	if (!can ||
	    dqj_mark_next(j, dqj_active(j)->used, j->segs[can].no, 0) ||
	    fdatasync(j->fd) < 0)
		return;
	for (; gone < can; gone++) {
		char name[32];

		dqj_seg_name(name, j->segs[gone].no);
		if (unlinkat(j->dirfd, name, 0) < 0 && errno != ENOENT)
			break;
		/*
		 * One at a time, synced: whatever a power cut keeps of these
		 * unlinks, what remains is contiguous (oldest gone first).
		 */
		fsync(j->dirfd);
	}
	if (!gone)
		return;
	memmove(j->segs, j->segs + gone,
		(j->sh->nsegs - gone) * sizeof(*j->segs));
	j->sh->nsegs -= gone;
	j->st.reclaimed += gone;
	DQJ_SH_ADD(j, reclaimed, gone);
	j->st.bytes -= gone * j->p.segment_bytes;
	dqj_capacity_update(j, q->slot_size);
}

/*
 * The oldest segment pins the journal with a few live messages: copy them
 * (RELOC records, same id) into the active segment.  Only when the journal
 * is past half its limit and the oldest segment's live messages are few
 * (their records under an eighth of a segment), so the copying is small
 * next to what it frees.  The copy is made from the record itself, read
 * back and its CRC checked, never from the arena: on a named queue the
 * slot may already hold another process's next message.  A message
 * retired meanwhile has its retire entry written after the copy, so the
 * copy cannot bring it back.  jlock and the write lock held.
 */
static void dqj_relocate(struct dqshim_queue *q, struct dq_journal *j)
{
	uint32_t slot, rec_max = dqj_commit_bytes(q->slot_size);
	uint64_t live, old_no, moved = 0;
	struct dqj_seg_hdr oh;
	uint8_t *buf = NULL;
	char name[32];
	int fd, ret;

	if (j->sh->nsegs < 3 ||
	    j->sh->nsegs * j->p.segment_bytes < j->p.max_bytes / 2)
		return;
	live = j->segs[0].live;
	if (!live || live * rec_max > j->p.segment_bytes / 8)
		return;
	old_no = j->segs[0].no;
	dqj_seg_name(name, old_no);
	fd = openat(j->dirfd, name, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	buf = malloc(rec_max > DQJ_HDR_SIZE ? rec_max : DQJ_HDR_SIZE);
	if (!buf)
		goto out;
	/* Its salt: its records are checked against it. */
	if (pread(fd, buf, DQJ_HDR_SIZE, 0) != (ssize_t)DQJ_HDR_SIZE ||
	    dqj_seg_hdr_decode(buf, &oh))
		goto out;

	for (slot = 0; slot < q->slot_count; slot++) {
		struct dqj_slot *js = &j->js[slot];
		uint32_t bytes, off;
		struct dqj_rec r;
		ssize_t got;

		if (!js->id || js->seg != old_no)
			continue;
		got = pread(fd, buf, rec_max, (off_t)js->off);
		if (got < (ssize_t)DQJ_COMMIT_SIZE ||
		    dqj_rec_decode(buf, (size_t)got, dqj_seed(&oh, js->off),
				   &r) ||
		    r.type != DQJ_REC_COMMIT || r.msg_id != js->id)
			continue;
		bytes = dqj_commit_bytes(r.payload_len);
		ret = dqj_room(q, j, bytes);
		if (ret) {
			/* The limit or a full disk: later; else it failed. */
			if (ret != -ENOSPC && ret != -EDQUOT)
				dqj_fail(j, ret);
			break;
		}
		off = (uint32_t)dqj_active(j)->used;
		/* Same id, user data, due time, attempts, payload bytes. */
		dqj_commit_encode(buf, dqj_seed(&j->ahdr, off),
				  r.flags | DQJ_COMMIT_F_RELOC, r.msg_id,
				  r.user_data, r.due_rt_ns, r.attempts,
				  buf + DQJ_COMMIT_SIZE, r.payload_len);
		memset(buf + DQJ_COMMIT_SIZE + r.payload_len, 0,
		       bytes - DQJ_COMMIT_SIZE - r.payload_len);
		if (dqj_pwrite(j->fd, buf, bytes, off))
			break;
		dqj_active(j)->used += bytes;
		dqj_active(j)->records++;
		j->st.used_bytes += bytes;
		dqj_mark_dirty(j, 1, false);
		js->seg = (uint32_t)dqj_active(j)->no;
		js->off = off;
		if (j->segs[0].no == old_no && j->segs[0].live)
			j->segs[0].live--;
		dqj_active(j)->live++;
		moved++;
		if (j->segs[0].no != old_no)
			break;
	}
	j->st.relocated += moved;
	DQJ_SH_ADD(j, relocated, moved);
out:
	free(buf);
	close(fd);
}

/*
 * The group commit.  Sleeps until something is written and not synced,
 * then until sync_interval_us after the first such write (or at once when
 * sync_records wait), writes the retire list, and calls fdatasync without
 * jlock, so flushes go on writing meanwhile.  What it covers is what was
 * written when it let go of jlock.
 *
 * retire_sync_us (batch, when longer than sync_interval_us): while what
 * waits is only retire entries (commits_unsynced 0, no dq_durable_wait()
 * wanting them), the list is still written on the interval's schedule
 * but without a mark or an fdatasync, and the sync comes retire_sync_us
 * after the last one began (or earlier, once a commit or a
 * dq_durable_wait() comes: then on the interval's schedule).
 */
static void *dqj_sync_main(void *arg)
{
	struct dqshim_queue *q = arg;
	struct dq_journal *j = q->journal;
	uint64_t interval = (uint64_t)j->p.sync_interval_us * 1000ULL;
	uint64_t rinterval = interval;

	if (j->p.durability == DQ_DURABLE_BATCH &&
	    j->p.retire_sync_us > j->p.sync_interval_us)
		rinterval = (uint64_t)j->p.retire_sync_us * 1000ULL;
	pthread_mutex_lock(&j->jlock);
	while (!j->stop) {
		uint64_t now = dq_mono_ns(), target, rtarget, records, t0, dt;
		uint64_t gtarget;
		size_t nret;
		bool lazy;
		int fd, ret;

		pthread_mutex_lock(&j->rlock);
		nret = j->nretires;
		pthread_mutex_unlock(&j->rlock);
		if (!j->dirty_since && nret)
			j->dirty_since = now;
		if (!j->dirty_since ||
		    __atomic_load_n(&j->failed, __ATOMIC_ACQUIRE)) {
			/*
			 * Idle (or failed): sleep without a timeout (nothing
			 * pending, no wakeups) until kicked, under rlock,
			 * which every waker holds to set kick: a retire
			 * (under plock, so it cannot take jlock), a write
			 * (dqj_mark_dirty()) and close.  rlock is taken
			 * before jlock is let go, so no wakeup slips between
			 * the look above and the wait.
			 */
			pthread_mutex_lock(&j->rlock);
			if (!j->kick) {
				pthread_mutex_unlock(&j->jlock);
				while (!j->kick)
					pthread_cond_wait(&j->rcond, &j->rlock);
				j->kick = false;
				pthread_mutex_unlock(&j->rlock);
				pthread_mutex_lock(&j->jlock);
			} else {
				j->kick = false;
				pthread_mutex_unlock(&j->rlock);
			}
			continue;
		}
		/*
		 * Only retires wait and nobody waits on them: the list is
		 * written each interval (a kill -9 loses none of it), the
		 * sync waits for retire_sync_us.  A commit (dqj_mark_dirty())
		 * or a dq_durable_wait() signals jcond and ends the wait.
		 * The retire lists written meanwhile are records, but not
		 * what sync_records is for (a read's commits waiting): the
		 * list written each interval does not bring the sync forward.
		 */
		lazy = rinterval > interval && !j->commits_unsynced &&
		       j->retire_want <= j->retire_synced;
		if (lazy && now < j->last_sync_ns + rinterval) {
			struct timespec ts;
			uint64_t at = j->last_sync_ns + rinterval;
			uint64_t wat = j->last_write_ns + interval;

			if (nret && now >= wat) {
				dqj_wlock(j);
				dqj_retires_write(q, j);
				dqj_wunlock(j);
				j->last_write_ns = now;
				continue;
			}
			if (wat <= now)
				wat = now + interval;
			if (wat < at)
				at = wat;
			ts.tv_sec = (time_t)(at / 1000000000ULL);
			ts.tv_nsec = (long)(at % 1000000000ULL);
			pthread_cond_timedwait(&j->jcond, &j->jlock, &ts);
			continue;
		}
		/*
		 * Group commit: at most one fdatasync per interval.  A write
		 * after a quiet spell (the last sync began an interval ago
		 * or more) is synced at once; under load the writes of one
		 * interval share the next sync.
		 */
		if (!lazy && now < j->last_sync_ns + interval &&
		    j->records_unsynced < j->p.sync_records) {
			struct timespec ts;
			uint64_t at = j->last_sync_ns + interval;

			ts.tv_sec = (time_t)(at / 1000000000ULL);
			ts.tv_nsec = (long)(at % 1000000000ULL);
			pthread_cond_timedwait(&j->jcond, &j->jlock, &ts);
			continue;
		}
		dqj_wlock(j);
		ret = dqj_retires_write(q, j);
		/* The mark this sync makes durable with the records. */
		if (!ret) {
			ret = dqj_mark_next(j, dqj_active(j)->used,
					    j->segs[0].no, 0);
			if (ret)
				dqj_fail(j, ret);
		}
		/*
		 * Its own descriptor of the active segment: a rotation
		 * (this process's or, named, another's) may close j->fd
		 * while the sync runs.  Everything written before it is in
		 * this segment or in sealed ones, synced when sealed.
		 */
		fd = ret ? -1 : fcntl(j->fd, F_DUPFD_CLOEXEC, 0);
		gtarget = j->sh->next_id - 1;
		dqj_wunlock(j);
		if (ret)
			continue;
		if (fd < 0) {
			dqj_fail(j, -errno);
			continue;
		}
		target = j->written_id;
		rtarget = j->retire_taken;
		records = j->records_unsynced;
		j->records_unsynced = 0;
		j->commits_unsynced = 0;
		j->dirty_since = 0;
		t0 = dq_mono_ns();
		j->last_sync_ns = t0;
		j->last_write_ns = t0;
		pthread_mutex_unlock(&j->jlock);

		ret = fdatasync(fd) < 0 ? -errno : 0;
		close(fd);
		dt = dq_mono_ns() - t0;
		DTRACE_PROBE3(dqshim, journal_sync, records, dt, ret);

		pthread_mutex_lock(&j->jlock);
		j->st.fsyncs++;
		j->st.sync_ns_total += dt;
		if (dt > j->st.sync_ns_max)
			j->st.sync_ns_max = dt;
		DQJ_SH_ADD(j, fsyncs, 1);
		DQJ_SH_ADD(j, sync_ns_total, dt);
		if (dt > __atomic_load_n(&j->sh->sync_ns_max, __ATOMIC_RELAXED))
			__atomic_store_n(&j->sh->sync_ns_max, dt,
					 __ATOMIC_RELAXED);
		if (ret) {
			dqj_fail(j, ret);
		} else {
			j->st.synced_records += records;
			DQJ_SH_ADD(j, synced_records, records);
			dqj_sh_synced(j, gtarget);
			if (rtarget > j->retire_synced)
				j->retire_synced = rtarget;
			if (target > __atomic_load_n(&j->durable_id,
						     __ATOMIC_RELAXED)) {
				__atomic_store_n(&j->durable_id, target,
						 __ATOMIC_RELEASE);
				dqj_efd_signal(j);
			}
			dqj_wlock(j);
			dqj_reclaim(q, j);
			dqj_relocate(q, j);
			dqj_wunlock(j);
		}
		pthread_cond_broadcast(&j->dcond);
	}
	pthread_mutex_unlock(&j->jlock);
	return NULL;
}

/* ---- recovery ------------------------------------------------------ */

/* Live messages by id: open addressing over indices into an array. */
struct dqj_table {
	struct dqj_live *v;
	size_t n, cap;
	uint32_t *buckets;	/* index + 1; 0 empty */
	size_t nbuckets;	/* power of two */
	size_t dead;		/* entries removed (v[i].msg_id == 0) */
};

static size_t dqj_hash(uint64_t id, size_t nb)
{
	return (size_t)((id * 0x9e3779b97f4a7c15ULL) >> 17) & (nb - 1);
}

static int dqj_table_grow(struct dqj_table *t)
{
	size_t nb = t->nbuckets ? 2 * t->nbuckets : 1024, i;
	uint32_t *b = calloc(nb, sizeof(*b));

	if (!b)
		return -ENOMEM;
	for (i = 0; i < t->n; i++) {
		size_t h;

		if (!t->v[i].msg_id)
			continue;
		h = dqj_hash(t->v[i].msg_id, nb);
		while (b[h])
			h = (h + 1) & (nb - 1);
		b[h] = (uint32_t)(i + 1);
	}
	free(t->buckets);
	t->buckets = b;
	t->nbuckets = nb;
	return 0;
}

/* The bucket of @id, or of where it would go. */
static uint32_t *dqj_table_slot(struct dqj_table *t, uint64_t id)
{
	size_t h = dqj_hash(id, t->nbuckets);

	while (t->buckets[h] && t->v[t->buckets[h] - 1].msg_id != id)
		h = (h + 1) & (t->nbuckets - 1);
	return &t->buckets[h];
}

/*
 * Removed entries keep their bucket (msg_id 0 never matches a lookup and
 * is skipped when the table grows), so probing stays correct; the table
 * is rebuilt when they pile up.
 */
static int dqj_table_put(struct dqj_table *t, const struct dqj_live *l)
{
	uint32_t *b;

	if ((t->n + 1) * 2 > t->nbuckets) {
		int ret;

		if (t->dead > t->n / 2) {
			size_t i, k = 0;

			for (i = 0; i < t->n; i++)
				if (t->v[i].msg_id)
					t->v[k++] = t->v[i];
			t->n = k;
			t->dead = 0;
			free(t->buckets);
			t->buckets = NULL;
			t->nbuckets /= 2;
		}
		ret = dqj_table_grow(t);
		if (ret)
			return ret;
	}
	b = dqj_table_slot(t, l->msg_id);
	if (*b) {
		t->v[*b - 1] = *l;	/* a newer copy (RELOC) */
		return 0;
	}
	if (t->n == t->cap) {
		size_t cap = t->cap ? 2 * t->cap : 1024;
		struct dqj_live *v = realloc(t->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		t->v = v;
		t->cap = cap;
	}
	t->v[t->n] = *l;
	*b = (uint32_t)++t->n;
	return 0;
}

static void dqj_table_del(struct dqj_table *t, uint64_t id)
{
	uint32_t *b;

	if (!t->nbuckets)
		return;
	b = dqj_table_slot(t, id);
	if (*b) {
		t->v[*b - 1].msg_id = 0;
		t->dead++;
	}
}

struct dqj_scan_state {
	struct dqj_table t;
	struct dq_journal_stats *st;
	uint64_t max_id;
	uint32_t seg_records;	/* of the segment being scanned */
	uint64_t seg_last_id;
	bool last;		/* it is the newest */
	bool last_sealed;	/* ... and has a SEAL */
	uint64_t last_mark_seq;	/* ... its best mark's */
	uint64_t tail_end;	/* ... where its bad tail ends (cut) */
	uint32_t slot_size;
	int err;
};

static int dqj_scan_cb(void *arg, const struct dqj_event *ev)
{
	struct dqj_scan_state *s = arg;
	const struct dqj_rec *r = ev->rec;
	uint32_t i;

	switch (ev->kind) {
	case DQJ_EV_SEGMENT:
		s->st->rec_segments++;
		if (s->last && ev->mark)
			s->last_mark_seq = ev->mark->seq;
		return 0;
	case DQJ_EV_CORRUPT:
		s->st->rec_corrupt++;
		if (s->last && ev->off + ev->len > s->tail_end)
			s->tail_end = ev->off + ev->len;
		return 0;
	case DQJ_EV_TORN:
		/* Only the last segment's is cut: the others are not written. */
		s->st->rec_torn_bytes += ev->len;
		if (s->last && ev->off + ev->len > s->tail_end)
			s->tail_end = ev->off + ev->len;
		return 0;
	case DQJ_EV_BAD_MARK:
		s->st->rec_bad_marks++;
		return 0;
	case DQJ_EV_LOST:
		s->st->rec_lost_bytes += ev->len;
		return 0;
	case DQJ_EV_SEAL_MISMATCH:
		return 0;
	case DQJ_EV_RECORD:
		break;
	}
	s->st->rec_records++;
	if (s->last && r->type == DQJ_REC_SEAL)
		s->last_sealed = true;
	if (r->type != DQJ_REC_SEAL)
		s->seg_records++;
	if (r->type == DQJ_REC_COMMIT) {
		struct dqj_live l = {
			.msg_id = r->msg_id,
			.user_data = r->user_data,
			.due_rt_ns = r->due_rt_ns,
			.seg_no = ev->seg,
			.off = (uint32_t)ev->off,
			.payload_len = r->payload_len,
			.attempts = r->attempts,
			.flags = (uint16_t)r->flags,
		};

		/*
		 * A good CRC around a payload the slots cannot hold (or id
		 * 0): not what this journal's queues write; skipped and
		 * counted like a bad record, never delivered.
		 */
		if (!r->msg_id || r->payload_len > s->slot_size) {
			s->st->rec_corrupt++;
			return 0;
		}
		if (r->msg_id > s->max_id)
			s->max_id = r->msg_id;
		if (r->msg_id > s->seg_last_id)
			s->seg_last_id = r->msg_id;
		s->err = dqj_table_put(&s->t, &l);
		return s->err;
	}
	if (r->type == DQJ_REC_RETIRE)
		for (i = 0; i < r->count; i++)
			dqj_table_del(&s->t, DQJ_RETIRE_ID(dqj_le64(
				(const uint8_t *)r->entries + 8 * i)));
	return 0;
}

static int dqj_cmp_key(const void *a, const void *b)
{
	const struct dqj_live *x = a, *y = b;

	/* Keyed ones together: a keyless commit must not split a key's run. */
	if ((x->flags ^ y->flags) & DQJ_COMMIT_F_KEY)
		return x->flags & DQJ_COMMIT_F_KEY ? -1 : 1;
	if (x->user_data != y->user_data)
		return x->user_data < y->user_data ? -1 : 1;
	return x->msg_id < y->msg_id ? -1 : x->msg_id > y->msg_id;
}

static int dqj_cmp_due(const void *a, const void *b)
{
	const struct dqj_live *x = a, *y = b;

	if (x->due_rt_ns != y->due_rt_ns)
		return x->due_rt_ns < y->due_rt_ns ? -1 : 1;
	return x->msg_id < y->msg_id ? -1 : x->msg_id > y->msg_id;
}

/*
 * Two live messages with one key: the replaced one's retire entry was not
 * written before the crash.  The later wins if it was a REPLACE, else the
 * earlier (the later would have been refused with -EEXIST).  Losers get
 * msg_id 0 in @v and their ids in @lost.
 */
static size_t dqj_key_conflicts(struct dqj_live *v, size_t n, uint64_t *lost)
{
	size_t i, nlost = 0;

	if (n < 2)
		return 0;
	qsort(v, n, sizeof(*v), dqj_cmp_key);
	for (i = 1; i < n; i++) {
		struct dqj_live *a = &v[i - 1], *b = &v[i];

		if (!(a->flags & DQJ_COMMIT_F_KEY) ||
		    !(b->flags & DQJ_COMMIT_F_KEY) ||
		    a->user_data != b->user_data || !a->msg_id)
			continue;
		if (b->flags & DQJ_COMMIT_F_REPLACE) {
			lost[nlost++] = a->msg_id;
			a->msg_id = 0;
		} else {
			lost[nlost++] = b->msg_id;
			*b = *a;	/* the earlier stays the one compared */
			a->msg_id = 0;
		}
	}
	return nlost;
}

/* Put the live messages into the (empty) queue, in due order. */
static int dqj_replay(struct dqshim_queue *q, struct dq_journal *j,
		      struct dqj_live *v, size_t n, uint8_t *const *maps,
		      const uint64_t *sizes, uint64_t first_seg)
{
	uint64_t now_mono, now_rt;
	size_t i, accepted = 0;
	int ret = 0;

	dqj_clock_pair(&now_mono, &now_rt, false);
	q->jreplay = true;
	for (i = 0; i < n && !ret; i++) {
		const struct dqj_live *l = &v[i];
		struct dqshim_msg m;
		uint64_t due;
		size_t si = l->seg_no - first_seg;

		ret = dq_reserve(q, &m);
		if (ret)
			break;
		/* The scan checked the record, CRC included, within the file. */
		if ((uint64_t)l->off + DQJ_COMMIT_SIZE + l->payload_len >
		    sizes[si] || l->payload_len > q->slot_size) {
			dq_abort(q, &m);
			ret = -EIO;
			break;
		}
		memcpy(m.data, maps[si] + l->off + DQJ_COMMIT_SIZE,
		       l->payload_len);
		if (l->due_rt_ns <= (int64_t)now_rt) {
			due = now_mono;
			j->st.rec_overdue++;
		} else if ((uint64_t)l->due_rt_ns - now_rt > DQ_MAX_DELAY_NS) {
			/*
			 * Only a realtime clock set back by more than a year
			 * (or a forged record) gets here: the engine would
			 * reject it and the message would be lost; hold it
			 * as long as the engine can instead.
			 */
			due = now_mono + DQ_MAX_DELAY_NS;
		} else {
			due = now_mono + ((uint64_t)l->due_rt_ns - now_rt);
		}
		m.attempts = l->attempts;
		if (l->flags & DQJ_COMMIT_F_KEY)
			ret = dq_commit_key(q, &m, l->payload_len, due,
					    l->user_data, 0);
		else
			ret = dq_commit(q, &m, l->payload_len, due,
					l->user_data);
		if (ret == -EAGAIN) {
			ret = dq_flush(q);
			if (ret > 0)
				accepted += (size_t)ret;
			if (ret >= 0)
				ret = l->flags & DQJ_COMMIT_F_KEY ?
				      dq_commit_key(q, &m, l->payload_len,
						    due, l->user_data, 0) :
				      dq_commit(q, &m, l->payload_len, due,
						l->user_data);
		}
		if (ret) {
			dq_abort(q, &m);
			break;
		}
		pthread_mutex_lock(&q->plock);
		j->js[m.slot].id = l->msg_id;
		j->js[m.slot].seg = (uint32_t)l->seg_no;
		j->js[m.slot].off = l->off;
		pthread_mutex_unlock(&q->plock);
		j->segs[l->seg_no - first_seg].live++;
	}
	if (!ret) {
		ret = dq_flush(q);
		if (ret > 0) {
			accepted += (size_t)ret;
			ret = 0;
		}
	}
	q->jreplay = false;
	/* The engine's rejects (retired, on_reject told) are not back. */
	j->st.rec_recovered = ret ? 0 : accepted;
	return ret;
}

/*
 * Make the state for a journal of @nsegs segments (recovery, write lock
 * held): a private queue's in its memory, a named queue's as DIR/STATE,
 * emptied and sized again (a stale one may be of another size).  Its
 * instance stays 0 until the recovery succeeded.
 */
static int dqj_state_setup(struct dqshim_queue *q, struct dq_journal *j,
			   size_t nsegs)
{
	uint64_t cap = j->max_segments > nsegs ? j->max_segments : nsegs;
	struct dqj_shared *sh;
	size_t size;

	/* Past the limit only after a limit lowered by hand; bounded. */
	if (cap + 4 > 1U << 20)
		return -EFBIG;
	size = dqj_shared_size((uint32_t)cap + 4, q->slot_count);
	if (j->sh) {
		if (j->named)
			munmap(j->sh, j->sh_size);
		else
			free(j->sh);
		j->sh = NULL;
	}
	if (j->named) {
		void *p;

		if (ftruncate(j->statefd, 0) < 0 ||
		    ftruncate(j->statefd, (off_t)size) < 0)
			return -errno;
		p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED,
			 j->statefd, 0);
		if (p == MAP_FAILED)
			return -errno;
		sh = p;
	} else {
		sh = calloc(1, size);
		if (!sh)
			return -ENOMEM;
	}
	j->sh = sh;
	j->sh_size = size;
	sh->magic = DQJ_STATE_MAGIC;
	sh->slot_count = q->slot_count;
	sh->slot_size = q->slot_size;
	sh->seg_cap = (uint32_t)cap + 4;
	sh->segment_bytes = j->p.segment_bytes;
	sh->max_bytes = j->p.max_bytes;
	j->segs = (struct dqj_seg *)(sh + 1);
	j->js = (struct dqj_slot *)(j->segs + sh->seg_cap);
	return 0;
}

/*
 * Scan the directory, put back the live messages, cut the torn tail,
 * sync.  Nothing on disk changes before the replay succeeded.
 */
static int dqj_recover(struct dqshim_queue *q, struct dq_journal *j)
{
	struct dqj_scan_state s = { .st = &j->st, .slot_size = q->slot_size };
	uint64_t *segs = NULL, *lost = NULL, t0 = dq_mono_ns(), end = 0;
	struct dqj_seg_hdr newest;
	struct dqj_dir dl;
	size_t nsegs = 0, i, nlive = 0, nlost = 0;
	struct dqj_live *v = NULL;
	uint8_t **maps = NULL;
	uint64_t *sizes = NULL;
	int *fds = NULL, ret, fd;

	ret = dqj_dir_list(j->dirfd, &dl);
	if (ret)
		return ret;
	segs = dl.segs;
	nsegs = dl.nsegs;
	newest = dl.newest;
	ret = dqj_state_setup(q, j, nsegs);
	if (ret)
		goto out;
	if (!nsegs) {
		/*
		 * The id tells journals apart, it guards nothing: do not
		 * wait for the entropy pool (a first open right after boot
		 * blocked ~1 s in the VM); time and pid mix in when it is
		 * not ready.
		 */
		if (getrandom(&j->journal_id, sizeof(j->journal_id),
			      GRND_NONBLOCK) != sizeof(j->journal_id))
			j->journal_id = (dqj_rt_ns() ^ dq_mono_ns() << 20 ^
					 (uint64_t)getpid() << 44) *
					0x9e3779b97f4a7c15ULL;
		j->sh->journal_id = j->journal_id;
		j->sh->next_id = 1;
		fd = dqj_seg_create(j, 1, 1, q->slot_size, 1, &j->ahdr);
		if (fd < 0) {
			ret = fd;
			goto out;
		}
		ret = dqj_segs_push(j, 1);
		if (ret) {
			close(fd);
			goto out;
		}
		j->fd = fd;
		j->fd_no = 1;
		j->sh->mark_seq = 1;
		j->sh->mark_first = 1;
		j->st.bytes = j->p.segment_bytes;
		j->st.used_bytes = DQJ_V2_DATA;
		goto done;
	}
	if (newest.slot_size != q->slot_size ||
	    newest.queue_flags != j->queue_flags) {
		ret = -EXDEV;
		goto out;
	}
	j->journal_id = newest.journal_id;
	j->sh->journal_id = j->journal_id;
	fds = calloc(nsegs, sizeof(*fds));
	if (!fds) {
		ret = -ENOMEM;
		goto out;
	}
	for (i = 0; i < nsegs; i++)
		fds[i] = -1;
	for (i = 0; i < nsegs; i++) {
		char name[32];
		struct stat sb;

		dqj_seg_name(name, segs[i]);
		fds[i] = openat(j->dirfd, name, O_RDWR | O_CLOEXEC);
		if (fds[i] < 0 || fstat(fds[i], &sb) < 0) {
			ret = -errno;
			goto out;
		}
		ret = dqj_segs_push(j, segs[i]);
		if (ret)
			goto out;
		s.last = i + 1 == nsegs;
		ret = dqj_seg_scan(fds[i], segs[i], (uint64_t)sb.st_size,
				   s.last, dqj_scan_cb, &s, &end);
		if (!ret)
			ret = s.err;
		/* A header bad since the listing read it: damaged. */
		if (ret == -EBADMSG)
			ret = -EXDEV;
		if (ret)
			goto out;
		j->segs[i].used = end;
		j->segs[i].sealed = i + 1 < nsegs;
		j->segs[i].records = s.seg_records;
		j->segs[i].last_id = s.seg_last_id;
		s.seg_records = 0;
		s.seg_last_id = 0;
		j->st.bytes += (uint64_t)sb.st_size;
		j->st.used_bytes += end;
	}
	/*
	 * A v2 segment is sealed only after its successor exists: a sealed
	 * newest one lost its successor (the listing saw no SEALED mark:
	 * that mark was damaged).  Refused like any missing segment.
	 */
	if (s.last_sealed && newest.version != DQJ_VERSION_1) {
		ret = -ENODATA;
		goto out;
	}
	j->sh->next_id = s.max_id + 1 > newest.first_msg_id ?
		     s.max_id + 1 : newest.first_msg_id;

	/* The live ones, compacted. */
	v = s.t.v;
	for (i = 0; i < s.t.n; i++)
		if (v[i].msg_id)
			v[nlive++] = v[i];
	if (j->queue_flags & DQJ_Q_F_KEYS) {
		size_t had = nlive;

		lost = malloc((nlive + 1) * sizeof(*lost));
		if (!lost) {
			ret = -ENOMEM;
			goto out;
		}
		nlost = dqj_key_conflicts(v, had, lost);
		j->st.rec_key_conflicts = nlost;
		for (i = 0, nlive = 0; i < had; i++)
			if (v[i].msg_id)
				v[nlive++] = v[i];
	}
	if (nlive > q->slot_count) {
		ret = -ENOBUFS;
		goto out;
	}
	if (nlive > 1)
		qsort(v, nlive, sizeof(*v), dqj_cmp_due);
	/*
	 * Payloads are copied from a mapping of each segment: one pread per
	 * message was 40 % of a 1 M-message recovery (bench/durable.sh).
	 */
	maps = calloc(nsegs, sizeof(*maps));
	sizes = calloc(nsegs, sizeof(*sizes));
	if (!maps || !sizes) {
		ret = -ENOMEM;
		goto out;
	}
	for (i = 0; i < nsegs; i++) {
		struct stat sb;
		void *p;

		if (fstat(fds[i], &sb) < 0) {
			ret = -errno;
			goto out;
		}
		sizes[i] = (uint64_t)sb.st_size;
		if (!sizes[i])
			continue;
		p = mmap(NULL, sizes[i], PROT_READ, MAP_SHARED, fds[i], 0);
		if (p == MAP_FAILED) {
			ret = -errno;
			goto out;
		}
		maps[i] = p;
	}
	ret = dqj_replay(q, j, v, nlive, maps, sizes, segs[0]);
	if (ret)
		goto out;

	/* Committed to this recovery: now the files change. */
	dqj_remove_partial(j);
	/*
	 * Segments the newest mark says the journal no longer needs: a
	 * reclamation deleted the ones before them and was cut short.
	 */
	for (i = 0; i < dl.nstale; i++) {
		char name[32];

		dqj_seg_name(name, dl.stale[i]);
		if (!unlinkat(j->dirfd, name, 0))
			j->st.rec_stale_segments++;
	}
	if (dl.nstale)
		fsync(j->dirfd);
	for (i = 0; i < nlost; i++)
		dqj_retire_push(j, DQJ_RETIRE_ENTRY(lost[i],
						    DQJ_RETIRE_REPLACED),
				UINT32_MAX);
	/*
	 * The last segment stays the active one: records go on after its
	 * last good one.  A torn tail is cut by zeroing it (a later scan
	 * then ends there), which keeps the file's preallocated blocks: a
	 * recovery on a full disk needs no new space.
	 */
	fd = fds[nsegs - 1];
	j->fd = fd;
	j->fd_no = segs[nsegs - 1];
	j->ahdr = newest;
	j->sh->mark_seq = s.last_mark_seq;
	j->sh->mark_first = segs[0];
	fds[nsegs - 1] = -1;
	/*
	 * A last segment cut short (damage) gets its preallocation back, so
	 * a full disk shows here and not in the middle of a record.
	 */
	if (sizes[nsegs - 1] < j->p.segment_bytes) {
		ret = dqj_fallocate(fd, j->p.segment_bytes);
		if (ret && ret != -EOPNOTSUPP)
			goto out;
		ret = 0;
	}
	if (s.tail_end > end) {
		uint8_t *zero = calloc(1, 65536);
		uint64_t off = end, left = s.tail_end - end;

		if (!zero) {
			ret = -ENOMEM;
			goto out;
		}
		while (left && !ret) {
			size_t n = left < 65536 ? (size_t)left : 65536;

			ret = dqj_pwrite(fd, zero, n, off);
			off += n;
			left -= n;
		}
		free(zero);
		if (ret)
			goto out;
	}
	/*
	 * A kill -9 left records in the page cache only: durable now, with
	 * a mark that says so (and which segments the journal needs).  A
	 * v1 last segment is sealed instead: new records go to a new (v2)
	 * segment.
	 */
	if (newest.version == DQJ_VERSION_1) {
		ret = dqj_rotate(q, j, true);
	} else {
		ret = dqj_mark_next(j, end, segs[0], 0);
		if (!ret && fdatasync(fd) < 0)
			ret = -errno;
	}
	if (ret)
		goto out;
	j->written_id = j->sh->next_id - 1;
	dqj_reclaim(q, j);
done:
	j->written_id = j->sh->next_id - 1;
	j->committed_id = j->sh->next_id - 1;
	__atomic_store_n(&j->durable_id, j->written_id, __ATOMIC_RELEASE);
	dqj_capacity_update(j, q->slot_size);
	dqj_reclaim(q, j);
	j->st.rec_ns = dq_mono_ns() - t0;
	j->sh->rec_records = j->st.rec_records;
	j->sh->rec_recovered = j->st.rec_recovered;
	j->sh->rec_corrupt = j->st.rec_corrupt;
	j->sh->rec_torn_bytes = j->st.rec_torn_bytes;
	j->sh->rec_ns = j->st.rec_ns;
	j->sh->rec_at_rt_ns = (int64_t)dqj_rt_ns();
	j->sh->synced_id = j->sh->next_id - 1;
	DTRACE_PROBE4(dqshim, journal_recover, j->st.rec_records,
		      j->st.rec_recovered, j->st.rec_corrupt, j->st.rec_ns);
	ret = 0;
out:
	if (maps)
		for (i = 0; i < nsegs; i++)
			if (maps[i])
				munmap(maps[i], sizes[i]);
	free(maps);
	free(sizes);
	if (fds)
		for (i = 0; i < nsegs; i++)
			if (fds[i] >= 0)
				close(fds[i]);
	free(fds);
	dqj_dir_free(&dl);
	free(lost);
	free(s.t.v);
	free(s.t.buckets);
	return ret;
}

/* ---- open, close, API ---------------------------------------------- */

static int dqj_mkdir(const char *dir)
{
	if (mkdir(dir, 0700) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}

static void dqj_free(struct dq_journal *j)
{
	if (j->fd >= 0)
		close(j->fd);
	if (j->sh) {
		if (j->named)
			munmap(j->sh, j->sh_size);
		else
			free(j->sh);
	}
	if (j->statefd >= 0)
		close(j->statefd);	/* drops the write lock if held */
	if (j->lockfd >= 0)
		close(j->lockfd);	/* drops the flock */
	if (j->dirfd >= 0)
		close(j->dirfd);
	if (j->ring.ring_fd > 0)
		io_uring_queue_exit(&j->ring);
	if (j->efd >= 0)
		close(j->efd);
	pthread_mutex_destroy(&j->jlock);
	pthread_mutex_destroy(&j->rlock);
	pthread_cond_destroy(&j->jcond);
	pthread_cond_destroy(&j->dcond);
	pthread_cond_destroy(&j->rcond);
	free(j->retires);
	free(j->retire_slots);
	free(j->hdrbuf);
	free(j->iov);
	free(j->dir);
	free(j);
}

/*
 * A named queue's process joins the state the others keep (write lock
 * held): DIR/STATE describes this very queue (its instance) and was
 * completely rebuilt.  1: joined; 0: it is stale, recover; -errno.
 */
static int dqj_state_join(struct dqshim_queue *q, struct dq_journal *j)
{
	struct dqj_shared *sh;
	struct stat sb;
	void *p;
	int ret;

	if (fstat(j->statefd, &sb) < 0)
		return -errno;
	if ((uint64_t)sb.st_size < sizeof(*sh))
		return 0;
	p = mmap(NULL, (size_t)sb.st_size, PROT_READ | PROT_WRITE, MAP_SHARED,
		 j->statefd, 0);
	if (p == MAP_FAILED)
		return -errno;
	sh = p;
	if (sh->magic != DQJ_STATE_MAGIC || sh->instance != q->instance ||
	    sh->slot_count != q->slot_count ||
	    sh->slot_size != q->slot_size || sh->nsegs > sh->seg_cap ||
	    !sh->nsegs ||
	    dqj_shared_size(sh->seg_cap, sh->slot_count) !=
	    (size_t)sb.st_size) {
		munmap(p, (size_t)sb.st_size);
		return 0;
	}
	j->sh = sh;
	j->sh_size = (size_t)sb.st_size;
	j->segs = (struct dqj_seg *)(sh + 1);
	j->js = (struct dqj_slot *)(j->segs + sh->seg_cap);
	j->journal_id = sh->journal_id;
	/* The journal's sizes are the ones it was recovered with. */
	j->p.segment_bytes = sh->segment_bytes;
	j->p.max_bytes = sh->max_bytes;
	j->max_segments = j->p.max_bytes / j->p.segment_bytes;
	ret = dqj_reopen_active(j);
	if (ret)
		return ret;
	j->written_id = j->sh->next_id - 1;
	j->committed_id = j->written_id;
	__atomic_store_n(&j->durable_id, j->written_id, __ATOMIC_RELEASE);
	dqj_capacity_update(j, q->slot_size);
	return 1;
}

/*
 * A named queue's journal: every process attached with it shares the
 * directory (LOCK held shared, so a private queue's open, which holds it
 * exclusively, is refused, and the other way round) and the state.  The
 * first one after the queue was made (rmmod, reboot, `dqctl create`)
 * recovers; the others wait on the write lock meanwhile, then join.
 */
static int dqj_open_named(struct dqshim_queue *q, struct dq_journal *j)
{
	int ret;

	if (!q->instance)
		return -EOPNOTSUPP;	/* dq.ko without DQ_FEAT_INSTANCE */
	if (flock(j->lockfd, LOCK_SH | LOCK_NB) < 0)
		return errno == EWOULDBLOCK ? -EBUSY : -errno;
	j->statefd = openat(j->dirfd, DQJ_STATE_NAME,
			    O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (j->statefd < 0)
		return -errno;
	while (flock(j->statefd, LOCK_EX) < 0)
		if (errno != EINTR)
			return -errno;
	/*
	 * What the queue holds now, recovered messages included, is not
	 * ours: the slots that are free and the submit ring's index are
	 * read only now, under the write lock.
	 */
	ret = dq_slots_adopt(q);
	if (ret) {
		flock(j->statefd, LOCK_UN);
		return ret;
	}
	q->sq_tail = dq_load_acquire_u32(q->sq_prod);
	pthread_mutex_lock(&j->jlock);
	ret = dqj_state_join(q, j);
	if (ret == 0) {
		ret = dqj_recover(q, j);
		if (!ret)
			j->sh->instance = q->instance;
	} else if (ret == 1) {
		ret = 0;
	}
	pthread_mutex_unlock(&j->jlock);
	flock(j->statefd, LOCK_UN);
	return ret;
}

/*
 * Lock the directory, recover what it holds into @q (opened, empty), start
 * the sync thread.  @named: @q is a named queue (dq_queue_attach_durable),
 * whose journal its processes share.  On error the directory is as it was
 * and @q has no journal.
 */
int dq_journal_open(struct dqshim_queue *q, const struct dq_journal_params *in,
		    bool named)
{
	struct dq_journal *j;
	pthread_condattr_t ca;
	int ret;

	j = calloc(1, sizeof(*j));
	if (!j)
		return -ENOMEM;
	j->fd = j->lockfd = j->dirfd = j->statefd = j->efd = -1;
	j->named = named;
	pthread_mutex_init(&j->jlock, NULL);
	pthread_mutex_init(&j->rlock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&j->jcond, &ca);
	pthread_cond_init(&j->dcond, &ca);
	pthread_cond_init(&j->rcond, &ca);
	pthread_condattr_destroy(&ca);

	ret = dqj_params_normalise(&j->p, in);
	if (ret)
		goto fail;
	j->dir = strdup(in->dir);
	j->p.dir = j->dir;
	j->max_segments = j->p.max_bytes / j->p.segment_bytes;
	j->queue_flags = (q->keyed ? DQJ_Q_F_KEYS : 0) |
			 (q->tracked ? DQJ_Q_F_TRACK : 0) |
			 (named ? DQJ_Q_F_NAMED : 0);
	j->st.durability = j->p.durability;
	j->hdrbuf = malloc((size_t)q->sq_entries * DQJ_COMMIT_SIZE);
	j->iov = malloc((size_t)q->sq_entries * 3 * sizeof(*j->iov));
	if (!j->dir || !j->hdrbuf || !j->iov) {
		ret = -ENOMEM;
		goto fail;
	}
	ret = io_uring_queue_init(DQJ_URING_DEPTH, &j->ring, 0);
	if (ret) {
		j->ring.ring_fd = 0;
		goto fail;
	}
	ret = dqj_mkdir(j->dir);
	if (ret)
		goto fail;
	j->dirfd = open(j->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (j->dirfd < 0) {
		ret = -errno;
		goto fail;
	}
	j->lockfd = openat(j->dirfd, DQJ_LOCK_NAME,
			   O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (j->lockfd < 0) {
		ret = -errno;
		goto fail;
	}

	q->journal = j;
	if (named) {
		ret = dqj_open_named(q, j);
	} else if (flock(j->lockfd, LOCK_EX | LOCK_NB) < 0) {
		ret = errno == EWOULDBLOCK ? -EBUSY : -errno;
	} else {
		pthread_mutex_lock(&j->jlock);
		ret = dqj_recover(q, j);
		pthread_mutex_unlock(&j->jlock);
	}
	if (ret)
		goto fail_q;
	ret = pthread_create(&j->thread, NULL, dqj_sync_main, q);
	if (ret) {
		ret = -ret;
		goto fail_q;
	}
	j->thread_started = true;
	return 0;
fail_q:
	q->journal = NULL;
fail:
	dqj_free(j);
	return ret;
}

/*
 * Stop the sync thread, write what waits, sync.  The messages the queue
 * still holds stay live in the journal: the next open puts them back.
 */
void dq_journal_close(struct dqshim_queue *q)
{
	struct dq_journal *j = q->journal;

	if (!j)
		return;
	pthread_mutex_lock(&j->jlock);
	j->stop = true;
	pthread_cond_signal(&j->jcond);
	pthread_mutex_unlock(&j->jlock);
	dqj_kick(j);
	if (j->thread_started)
		pthread_join(j->thread, NULL);
	pthread_mutex_lock(&j->jlock);
	dqj_wlock(j);
	if (!__atomic_load_n(&j->failed, __ATOMIC_ACQUIRE) &&
	    !dqj_retires_write(q, j) &&
	    !dqj_mark_next(j, dqj_active(j)->used, j->segs[0].no, 0) &&
	    fdatasync(j->fd) == 0) {
		__atomic_store_n(&j->durable_id, j->written_id,
				 __ATOMIC_RELEASE);
		dqj_sh_synced(j, j->sh->next_id - 1);
	}
	dqj_wunlock(j);
	pthread_mutex_unlock(&j->jlock);
	q->journal = NULL;
	dqj_free(j);
}

DQ_API uint64_t dq_journal_mark(struct dqshim_queue *q)
{
	uint64_t id;

	if (!q->journal)
		return 0;
	pthread_mutex_lock(&q->plock);
	id = q->journal->committed_id;
	pthread_mutex_unlock(&q->plock);
	return id;
}

DQ_API uint64_t dq_durable_pos(struct dqshim_queue *q)
{
	if (!q->journal)
		return 0;
	return __atomic_load_n(&q->journal->durable_id, __ATOMIC_ACQUIRE);
}

DQ_API int dq_durable_poll(struct dqshim_queue *q, uint64_t mark)
{
	struct dq_journal *j = q->journal;
	int failed;

	if (!j)
		return -EOPNOTSUPP;
	/*
	 * The failure first: nothing becomes durable after it, but a sync
	 * that ended before it may have made @mark durable.
	 */
	failed = __atomic_load_n(&j->failed, __ATOMIC_ACQUIRE);
	if (__atomic_load_n(&j->durable_id, __ATOMIC_ACQUIRE) >= mark)
		return 1;
	return failed;
}

DQ_API int dq_durable_fd(struct dqshim_queue *q)
{
	struct dq_journal *j = q->journal;
	int fd, none = -1;

	if (!j)
		return -EOPNOTSUPP;
	fd = __atomic_load_n(&j->efd, __ATOMIC_ACQUIRE);
	if (fd >= 0)
		return fd;
	fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (!__atomic_compare_exchange_n(&j->efd, &none, fd, false,
					 __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
		close(fd);	/* another thread's came first */
		return none;
	}
	/* Readable at once: what moved before it existed is looked at. */
	(void)!eventfd_write(fd, 1);
	return fd;
}

DQ_API int dq_durable_wait(struct dqshim_queue *q, uint64_t mark,
			   int64_t timeout_ns)
{
	struct dq_journal *j = q->journal;
	uint64_t retired;
	struct timespec ts;
	int ret;

	if (!j)
		return -EOPNOTSUPP;
	/* The retires made before this call must be durable too. */
	pthread_mutex_lock(&j->rlock);
	retired = j->retire_seq;
	pthread_mutex_unlock(&j->rlock);
	ret = dq_flush(q);
	if (ret < 0) {
		/* What earlier flushes wrote still becomes durable. */
		pthread_mutex_lock(&j->jlock);
		if (mark > j->written_id) {
			pthread_mutex_unlock(&j->jlock);
			return ret;
		}
		pthread_mutex_unlock(&j->jlock);
	}
	if (timeout_ns >= 0) {
		uint64_t at = dq_mono_ns() + (uint64_t)timeout_ns;

		ts.tv_sec = (time_t)(at / 1000000000ULL);
		ts.tv_nsec = (long)(at % 1000000000ULL);
	}
	pthread_mutex_lock(&j->jlock);
	if (retired > j->retire_synced && retired > j->retire_want) {
		/* Not on retire_sync_us's schedule: the interval's. */
		j->retire_want = retired;
		pthread_cond_signal(&j->jcond);
	}
	ret = 0;
	while (__atomic_load_n(&j->durable_id, __ATOMIC_ACQUIRE) < mark ||
	       j->retire_synced < retired) {
		ret = __atomic_load_n(&j->failed, __ATOMIC_ACQUIRE);
		if (ret)
			break;
		if (timeout_ns < 0) {
			pthread_cond_wait(&j->dcond, &j->jlock);
		} else if (pthread_cond_timedwait(&j->dcond, &j->jlock, &ts) ==
			   ETIMEDOUT) {
			ret = __atomic_load_n(&j->durable_id,
					      __ATOMIC_ACQUIRE) < mark ||
			      j->retire_synced < retired ? -ETIME : 0;
			break;
		}
	}
	pthread_mutex_unlock(&j->jlock);
	return ret;
}

DQ_API int dq_journal_stats(struct dqshim_queue *q,
			    struct dq_journal_stats *out)
{
	struct dq_journal_stats s = { .sz = sizeof(s) }, *st = &s;
	struct dq_journal *j = q->journal;

	if (dq_struct_out_check(out))
		return -EINVAL;
	if (!j) {
		dq_struct_out(out, st, sizeof(*st));
		return -EOPNOTSUPP;
	}
	pthread_mutex_lock(&j->jlock);
	*st = j->st;
	st->sz = sizeof(*st);
	st->segments = (uint32_t)j->sh->nsegs;
	if (j->named) {
		/* The journal's, not this process's share of it. */
		uint32_t i;

		st->bytes = 0;
		st->used_bytes = 0;
		for (i = 0; i < j->sh->nsegs; i++) {
			st->bytes += j->p.segment_bytes;
			st->used_bytes += j->segs[i].used;
		}
	}
	st->enospc = __atomic_load_n(&j->st.enospc, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&j->jlock);
	pthread_mutex_lock(&j->rlock);
	st->retires = j->st.retires;
	pthread_mutex_unlock(&j->rlock);
	st->commit_pos = dq_journal_mark(q);
	st->durable_pos = dq_durable_pos(q);
	dq_struct_out(out, st, sizeof(*st));
	return 0;
}
