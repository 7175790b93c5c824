// SPDX-License-Identifier: LGPL-2.1 OR MIT
/*
 * Reproducers of what fuzzing found in the journal's recovery
 * (user/src/dq_journal.c), docs/fuzzing.md "Findings".  Each case writes
 * a one-segment journal with the real encoders (dq_jformat.h: valid
 * header, valid CRCs) into a fresh directory, opens it durable on the
 * user backend and says what should and what did happen.
 *
 *   make -C fuzz repros && fuzz/build/journal_recover_repro [CASE]
 *
 * Built with ASan and UBSan (and libdqshim's sources compiled the same
 * way, every check on).  Exit status: the number of cases that showed
 * the bug (0 once they are all fixed: so since ff6f1d6).
 *
 *   qsort-null       finding 1: recovery of a keyed queue with nothing
 *                    live calls qsort(NULL, 0, ...) (UBSan: nonnull)
 *   payload-over-slot finding 2: a COMMIT with payload_len > slot size was
 *                    pread() into the arena past its slot; open failed
 *                    with -EMSGSIZE, which dqshim.h does not document.
 *                    Since ff6f1d6 the record is skipped as corrupt
 *   far-due          finding 3: a COMMIT due more than DQ_MAX_DELAY_NS
 *                    after the clock mapping is rejected by the engine
 *                    in the replay, retired as REJECTED (gone from the
 *                    journal) and still counted in rec_recovered
 *   key-conflict     finding 4: keyed queue, live COMMITs id 1 (key K),
 *                    id 2 (no key, user_data K), id 3 (key K, REPLACE):
 *                    the conflict pass compares neighbours in (user_data,
 *                    msg_id) order, id 2 sits between and hides the
 *                    conflict; the replay keeps id 1 and the engine
 *                    rejects id 3 (-EEXIST), though "the later one wins
 *                    if it was a REPLACE" (docs/journal.md, Recovery 4)
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "dqshim.h"
#include "dq_jformat.h"

#define SLOT	64U

static char dir[64];

static void put_seg(const uint8_t *buf, size_t len)
{
	char path[128];
	int fd;

	snprintf(path, sizeof(path), "%s/0000000000000001.dqj", dir);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd < 0 || write(fd, buf, len) != (ssize_t)len) {
		perror(path);
		exit(100);
	}
	close(fd);
}

static size_t hdr(uint8_t *p, uint32_t qflags)
{
	/* Version 1 (still read): its records from offset 64, plain CRCs. */
	struct dqj_seg_hdr h = {
		.version = DQJ_VERSION_1,
		.journal_id = 1, .segment_no = 1, .first_msg_id = 1,
		.created_ns = 1, .slot_size = SLOT, .queue_flags = qflags,
	};

	memset(p, 0, 4096);
	dqj_seg_hdr_encode(p, &h);
	return DQJ_HDR_SIZE;
}

static size_t commit(uint8_t *p, uint32_t flags, uint64_t id, uint64_t ud,
		     int64_t due_rt, uint32_t len)
{
	static uint8_t payload[512];

	memset(payload, 'x', sizeof(payload));
	dqj_commit_encode(p, 0, flags, id, ud, due_rt, 0, payload, len);
	memcpy(p + DQJ_COMMIT_SIZE, payload, len);
	return dqj_commit_bytes(len);
}

static int open_it(uint32_t slots, uint32_t flags, struct dqshim_queue **q)
{
	struct dq_journal_params jp;
	struct dq_params p;

	dq_params_init(&p);
	p.backend = DQ_BACKEND_USER;
	p.slot_count = slots;
	p.slot_size = SLOT;
	p.flags = flags;
	dq_journal_params_init(&jp, dir, DQ_DURABLE_BATCH);
	jp.segment_bytes = 1U << 20;
	return dq_queue_open_durable(&p, &jp, q);
}

static void clean(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd))
		fprintf(stderr, "could not remove %s\n", dir);
}

/* 1: UBSan reports "null pointer passed as argument 1" in dq_journal.c. */
static int qsort_null(void)
{
	uint8_t seg[4096];
	struct dqshim_queue *q;
	int ret;

	put_seg(seg, hdr(seg, DQJ_Q_F_KEYS));
	ret = open_it(4, DQ_OPEN_F_KEYS, &q);
	printf("qsort-null: open of a keyed journal with nothing live: %d "
	       "(a UBSan report above is the bug)\n", ret);
	if (!ret)
		dq_queue_close(q);
	return 0;	/* the report is UBSan's, on stderr */
}

static int payload_over_slot(void)
{
	uint8_t seg[4096];
	struct dqshim_queue *q;
	size_t n = hdr(seg, 0);
	int ret, bad = 0;

	/* 100 bytes of payload for 64-byte slots, due long ago. */
	n += commit(seg + n, 0, 1, 7, 0, 100);
	put_seg(seg, n);
	ret = open_it(4, 0, &q);
	printf("payload-over-slot: open: %d (%s); expected -EXDEV or the "
	       "record skipped as corrupt, never a read past the slot\n", ret,
	       dq_strerror(ret));
	bad += ret == -EMSGSIZE || ret == -EFAULT;
	if (!ret)
		dq_queue_close(q);
	clean();
	if (mkdir(dir, 0700))
		exit(100);
	/* Longer than the whole arena: the read runs off its end. */
	n = hdr(seg, 0);
	n += commit(seg + n, 0, 1, 7, 0, 0);
	put_seg(seg, n);
	{
		/* 5000 bytes: 1 slot of 64, a 4096-byte arena. */
		static uint8_t big[8192];
		uint8_t *payload = calloc(1, 5000);

		n = hdr(big, 0);
		dqj_commit_encode(big + n, 0, 0, 1, 7, 0, 0, payload, 5000);
		n += dqj_commit_bytes(5000);
		free(payload);
		put_seg(big, n);
	}
	ret = open_it(1, 0, &q);
	printf("payload-over-slot: 5000 bytes, 1 slot: open: %d (%s)\n", ret,
	       dq_strerror(ret));
	bad += ret == -EMSGSIZE || ret == -EFAULT;
	if (!ret)
		dq_queue_close(q);
	return bad != 0;
}

static int far_due(void)
{
	uint8_t seg[4096];
	struct dqshim_queue *q;
	struct dq_journal_stats js = { .sz = sizeof(js) };
	struct dq_queue_stats qs;
	size_t n = hdr(seg, 0);
	int ret, bad = 0;

	n += commit(seg + n, 0, 1, 1, 0, 8);			/* overdue */
	n += commit(seg + n, 0, 2, 2, INT64_MAX / 2, 8);	/* 146 years */
	put_seg(seg, n);
	ret = open_it(4, 0, &q);
	if (ret) {
		printf("far-due: open: %d\n", ret);
		return 1;
	}
	dq_journal_stats(q, &js);
	dq_queue_get_stats(q, &qs);
	printf("far-due: rec_recovered %llu, the queue holds %llu, rejected "
	       "for time %llu; expected 2 held (due clamped) or the open "
	       "refused, never a message retired as rejected\n",
	       (unsigned long long)js.rec_recovered,
	       (unsigned long long)(qs.pending + qs.paced),
	       (unsigned long long)qs.rejected[DQ_REJ_TIME]);
	bad = qs.pending + qs.paced != js.rec_recovered;
	dq_queue_close(q);
	return bad;
}

static int key_conflict(void)
{
	uint8_t seg[4096];
	struct dqshim_queue *q;
	struct dq_journal_stats js = { .sz = sizeof(js) };
	struct dq_queue_stats qs;
	struct dq_key_info ki;
	size_t n = hdr(seg, DQJ_Q_F_KEYS);
	int ret, bad;

	/*
	 * Due an hour from now (CLOCK_REALTIME), in id order; no retire of
	 * id 1: the crash lost it.
	 */
	{
		struct timespec ts;
		int64_t due;
		uint64_t id;

		clock_gettime(CLOCK_REALTIME, &ts);
		due = (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec +
		      3600LL * 1000000000LL;
		for (id = 1; id <= 3; id++) {
			uint32_t f = id == 1 ? DQJ_COMMIT_F_KEY : id == 2 ? 0 :
				     DQJ_COMMIT_F_KEY | DQJ_COMMIT_F_REPLACE;

			n += commit(seg + n, f, id, 42, due + (int64_t)id, 8);
		}
	}
	put_seg(seg, n);
	ret = open_it(4, DQ_OPEN_F_KEYS, &q);
	if (ret) {
		printf("key-conflict: open: %d\n", ret);
		return 1;
	}
	dq_journal_stats(q, &js);
	dq_queue_get_stats(q, &qs);
	ret = dq_lookup_key(q, 42, &ki);
	printf("key-conflict: rec_recovered %llu, rec_key_conflicts %llu, "
	       "held %llu, rejected for the key %llu; key 42 is held by the "
	       "message of due %llu (the REPLACE, id 3, is due last); expected "
	       "2 held, 1 conflict, id 3 holding the key\n",
	       (unsigned long long)js.rec_recovered,
	       (unsigned long long)js.rec_key_conflicts,
	       (unsigned long long)(qs.pending + qs.paced),
	       (unsigned long long)qs.rejected[DQ_REJ_KEY],
	       ret ? 0ULL : (unsigned long long)ki.due_ns);
	bad = qs.rejected[DQ_REJ_KEY] != 0 || js.rec_key_conflicts != 1;
	dq_queue_close(q);
	return bad;
}

int main(int argc, char **argv)
{
	static const struct {
		const char *name;
		int (*fn)(void);
	} cases[] = {
		{ "qsort-null", qsort_null },
		{ "payload-over-slot", payload_over_slot },
		{ "far-due", far_due },
		{ "key-conflict", key_conflict },
	};
	unsigned int i;
	int bugs = 0;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		if (argc > 1 && strcmp(argv[1], cases[i].name))
			continue;
		snprintf(dir, sizeof(dir), "/dev/shm/dq-repro.%d", (int)getpid());
		clean();
		if (mkdir(dir, 0700)) {
			perror(dir);
			return 100;
		}
		bugs += cases[i].fn();
		clean();
	}
	return bugs;
}
