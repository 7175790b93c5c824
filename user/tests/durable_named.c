// SPDX-License-Identifier: LGPL-2.1 OR MIT
/*
 * durable_named - a named durable queue shared by processes (dq.ko, in the
 * VM; driven by durable_named.sh): producer processes and a consumer
 * process attach to one named queue with one journal
 * (dq_queue_attach_durable()), are killed with SIGKILL at random points,
 * and dq.ko is unloaded and loaded again.  The verdict is drawn from the
 * test's OWN logs, never from what dq reports:
 *
 *  - every id a producer logged as durable (after dq_durable_wait()) is
 *    delivered at least once, across all runs and the reload;
 *  - every delivered id is one a producer was about to commit, and its
 *    commit did not fail; its payload is exactly the bytes committed (a
 *    function of the id), its user_data the id;
 *  - never early: delivered at or after the due time the producer chose
 *    (CLOCK_MONOTONIC: the VM is not rebooted, so one clock throughout);
 *  - no consumer run delivers an id twice (a redelivery is only allowed
 *    across runs: a consumer killed between its log line and its done,
 *    or a retire not yet durable when dq.ko went away).
 *
 * Both roles take --sync-log: each batch's lines are fdatasync()ed before
 * the dq calls they announce (the power cut test keeps its logs on the
 * disk that loses power).
 *
 * durable_named produce NAME DIR LOG RUN [--count N] [--always]
 *	commit ids RUN * 10^6 + 1, 2, ... in batches of 1..64, each batch
 *	flushed and waited durable, until killed (or N ids, then a clean
 *	close).  Lines: "O recovered records", "C id due_ns" before each
 *	commit, "N id errno" when it failed, "A id" once every id of the
 *	run up to it is durable, "X" at a clean close.
 * durable_named consume NAME DIR LOG [--idle-ms N [--idle-after FILE]]
 *	attach as the tracked queue's consumer, reap, check, log
 *	"D id now_ns", done; with --idle-ms exit cleanly after N ms with
 *	nothing to reap ("X delivered"), counted only from when FILE
 *	exists with --idle-after (the caller creates it once every
 *	producer it waits for has ended).  "E what" for anything wrong.
 * durable_named verify --max-redelivered N LOG...
 *	the verdict: TAP lines and "N passed, N failed".  N bounds the ids
 *	delivered again in a later run (see durable_named.sh).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "dqshim.h"

#define RUN_IDS		1000000ULL
#define MAX_LEN		400U

static int log_fd = -1;
static bool sync_log;		/* --sync-log: lines durable before the call */
static volatile sig_atomic_t stop;

static void on_term(int sig)
{
	(void)sig;
	stop = 1;
}

/* One line, one write(): a SIGKILL leaves whole lines (or none). */
static void logf_line(const char *fmt, ...)
{
	char buf[160];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf) - 1, fmt, ap);
	va_end(ap);
	buf[n++] = '\n';
	if (write(log_fd, buf, (size_t)n) != n)
		_exit(3);
}

/* --sync-log: what was logged is on disk before the next dq call. */
static void log_sync(void)
{
	if (sync_log && fdatasync(log_fd) < 0)
		_exit(3);
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static uint64_t rt_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* "S boot_id": CLOCK_MONOTONIC values compare only within one boot. */
static void log_boot(void)
{
	char id[64] = "unknown";
	FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");

	if (f) {
		if (!fgets(id, sizeof(id), f))
			strcpy(id, "unknown");
		fclose(f);
	}
	id[strcspn(id, "\n")] = 0;
	logf_line("S %s", id);
}

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* The payload of @id: its length and bytes follow from the id alone. */
static uint32_t payload_len(uint64_t id)
{
	return 1 + (uint32_t)((id * 2654435761ULL) % MAX_LEN);
}

static uint8_t payload_byte(uint64_t id, uint32_t i)
{
	return (uint8_t)((id * 31 + i * 7) ^ (id >> 8));
}

static void journal_params(struct dq_journal_params *jp, const char *dir,
			   bool always)
{
	dq_journal_params_init(jp, dir, always ? DQ_DURABLE_ALWAYS :
			       DQ_DURABLE_BATCH);
	/* Small segments: rotation and reclamation happen within a run. */
	jp->segment_bytes = 1U << 20;
	jp->max_bytes = 64U << 20;
}

static void log_open_stats(struct dqshim_queue *q)
{
	struct dq_journal_stats st = { .sz = sizeof(st) };

	if (dq_journal_stats(q, &st) == 0)
		logf_line("O %" PRIu64 " %" PRIu64, st.rec_recovered,
			  st.rec_records);
}

static int produce(const char *name, const char *dir, uint64_t run,
		   uint64_t count, bool always)
{
	struct dq_journal_params jp;
	struct dqshim_queue *q;
	uint64_t seed = run * 0x9e3779b97f4a7c15ULL + (uint64_t)getpid();
	uint64_t id = run * RUN_IDS, done = 0;
	int ret;

	log_boot();
	journal_params(&jp, dir, always);
	ret = dq_queue_attach_durable(name, NULL, &jp, &q);
	if (ret) {
		logf_line("F attach %d", ret);
		fprintf(stderr, "attach %s: %s\n", name, dq_strerror(ret));
		return 1;
	}
	log_open_stats(q);
	while (!stop && (!count || done < count)) {
		unsigned int n = 1 + (unsigned int)(rnd(&seed) % 64), i, k;
		struct dqshim_msg m[64];
		uint64_t due[64], last = 0;

		if (count && n > count - done)
			n = (unsigned int)(count - done);
		/* The batch's "about to commit" lines first, then commits. */
		for (i = 0; i < n; i++) {
			uint32_t len;

			ret = dq_reserve_wait(q, &m[i], 2000000000LL);
			if (ret) {
				logf_line("F reserve %d", ret);
				return 1;
			}
			len = payload_len(id + 1 + i);
			for (k = 0; k < len; k++)
				((uint8_t *)m[i].data)[k] =
					payload_byte(id + 1 + i, k);
			{
				uint64_t delay = rnd(&seed) % 400000000ULL;
				uint64_t m0 = mono_ns(), r0 = rt_ns();

				due[i] = m0 + delay;
				logf_line("C %" PRIu64 " %" PRIu64 " %" PRIu64,
					  id + 1 + i, due[i], r0 + delay);
			}
		}
		log_sync();
		for (i = 0; i < n; i++) {
			uint32_t len = payload_len(++id);

			ret = dq_commit(q, &m[i], len, due[i], id);
			if (ret == -EAGAIN) {
				dq_flush(q);
				ret = dq_commit(q, &m[i], len, due[i], id);
			}
			if (ret) {
				logf_line("N %" PRIu64 " %d", id, ret);
				dq_abort(q, &m[i]);
				continue;
			}
			last = id;
			done++;
		}
		ret = dq_flush(q);
		if (ret < 0) {
			logf_line("F flush %d", ret);
			return 1;
		}
		ret = dq_durable_wait(q, dq_journal_mark(q), 10000000000LL);
		if (ret) {
			logf_line("F durable_wait %d", ret);
			return 1;
		}
		if (last)
			logf_line("A %" PRIu64, last);
		usleep((useconds_t)(rnd(&seed) % 20000));
	}
	dq_queue_close(q);
	logf_line("X");
	return 0;
}

static int consume(const char *name, const char *dir, int64_t idle_ms,
		   const char *idle_after)
{
	struct dq_journal_params jp;
	struct dq_params p;
	struct dqshim_queue *q;
	struct dq_reaped out[64];
	uint64_t idle_since = mono_ns(), delivered = 0;
	int ret, n, i;

	log_boot();
	journal_params(&jp, dir, false);
	dq_params_init(&p);
	p.flags = DQ_OPEN_F_TRACK;
	if (getenv("DQ_NAMED_PLAIN"))	/* debugging: no journal */
		ret = dq_queue_attach(name, &p, &q);
	else
		ret = dq_queue_attach_durable(name, &p, &jp, &q);
	if (ret) {
		logf_line("F attach %d", ret);
		fprintf(stderr, "attach %s: %s\n", name, dq_strerror(ret));
		return 1;
	}
	log_open_stats(q);
	if (getenv("DQ_NAMED_DEBUG")) {
		struct dq_track_stats ts;

		dq_queue_track_stats(q, &ts);
		fprintf(stderr, "attached: inflight %llu\n",
			(unsigned long long)ts.inflight);
	}
	while (!stop) {
		n = dq_reap(q, out, 64, 100000000LL);
		if (getenv("DQ_NAMED_DEBUG"))
			fprintf(stderr, "reap %d\n", n);
		if (n == -ETIME || n == 0) {
			/*
			 * Idle only counts once the last producer is gone:
			 * a producer slow to start or to attach (it may wait
			 * on the other's recovery) is not an idle queue.
			 */
			if (idle_after) {
				if (access(idle_after, F_OK))
					continue;
				idle_after = NULL;
				idle_since = mono_ns();
			}
			if (idle_ms >= 0 &&
			    mono_ns() - idle_since > (uint64_t)idle_ms * 1000000)
				break;
			continue;
		}
		if (n < 0) {
			logf_line("F reap %d", n);
			return 1;
		}
		idle_since = mono_ns();
		for (i = 0; i < n; i++) {
			uint64_t id = out[i].user_data, now = mono_ns();
			const uint8_t *d = out[i].data;
			uint32_t k, len = payload_len(id);
			bool ok = out[i].len == len;

			for (k = 0; ok && k < len; k++)
				ok = d[k] == payload_byte(id, k);
			if (!ok)
				logf_line("E payload %" PRIu64 " len %u", id,
					  out[i].len);
			logf_line("D %" PRIu64 " %" PRIu64 " %" PRIu64, id, now,
				  rt_ns());
		}
		log_sync();
		for (i = 0; i < n; i++) {
			ret = dq_done(q, out[i].slot);
			if (ret) {
				logf_line("E done %" PRIu64 " %d",
					  out[i].user_data, ret);
				return 1;
			}
			delivered++;
		}
	}
	/* The dones' retire entries durable before the clean exit. */
	dq_durable_wait(q, 0, 10000000000LL);
	dq_queue_close(q);
	logf_line("X %" PRIu64, delivered);
	return 0;
}

/* ---- verdict ------------------------------------------------------- */

/* Across a reboot only CLOCK_REALTIME compares, and a recovered due time
 * went through it and back (docs/journal.md, Recovery 6), each way from
 * two clock reads: this much "early" is the conversion's. */
#define EARLY_TOL_NS	2000000ULL

struct rec {
	uint64_t id;
	uint64_t due;
	uint64_t due_rt;
	int boot;		/* index into boots[] of the committing run */
	int committed;		/* 1 C, -1 N */
	int delivered;
	bool acked;
};

static struct rec *recs;
static size_t nrecs, caprecs;
static char boots[256][64];
static int nboots;

/* The index of boot id @b (added when new). */
static int boot_index(const char *b)
{
	int i;

	for (i = 0; i < nboots; i++)
		if (!strcmp(boots[i], b))
			return i;
	if (nboots == 256)
		return 255;
	snprintf(boots[nboots], sizeof(boots[0]), "%s", b);
	return nboots++;
}

/* The run's boot: its "S" line (-1 without one). */
static int log_boot_of(const char *path)
{
	char line[256], b[64];
	FILE *f = fopen(path, "r");
	int r = -1;

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "S %63s", b) == 1) {
			r = boot_index(b);
			break;
		}
	if (f)
		fclose(f);
	return r;
}

static int cmp_id(const void *a, const void *b)
{
	const struct rec *x = a, *y = b;

	return x->id < y->id ? -1 : x->id > y->id;
}

static struct rec *rec_find(uint64_t id)
{
	struct rec key = { .id = id };

	return bsearch(&key, recs, nrecs, sizeof(*recs), cmp_id);
}

static int tap_n;

static void tap(bool ok, const char *fmt, ...)
{
	va_list ap;

	printf("%s %d - ", ok ? "ok" : "not ok", ++tap_n);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
}

static int verify(int argc, char **argv, uint64_t max_redelivered)
{
	uint64_t early = 0, lost = 0, unknown = 0, refused = 0, errors = 0;
	uint64_t dup_in_run = 0, dups = 0, acked = 0, delivered = 0;
	uint64_t worst_late = 0;
	int pass = 0, fail = 0, a;
	char line[256];

	/* Pass 1: the commits and acknowledgements. */
	for (a = 0; a < argc; a++) {
		int boot = log_boot_of(argv[a]);
		FILE *f = fopen(argv[a], "r");
		uint64_t id, v, vr;

		if (!f) {
			perror(argv[a]);
			return 2;
		}
		while (fgets(line, sizeof(line), f)) {
			if (sscanf(line, "C %" SCNu64 " %" SCNu64 " %" SCNu64,
				   &id, &v, &vr) != 3)
				continue;
			if (nrecs == caprecs) {
				caprecs = caprecs ? 2 * caprecs : 4096;
				recs = realloc(recs, caprecs * sizeof(*recs));
				if (!recs)
					return 2;
			}
			recs[nrecs++] = (struct rec){ .id = id, .due = v,
						      .due_rt = vr,
						      .boot = boot,
						      .committed = 1 };
		}
		fclose(f);
	}
	qsort(recs, nrecs, sizeof(*recs), cmp_id);
	for (a = 0; a < argc; a++) {
		FILE *f = fopen(argv[a], "r");
		uint64_t id;
		int e;

		while (f && fgets(line, sizeof(line), f)) {
			struct rec *r;

			if (sscanf(line, "N %" SCNu64 " %d", &id, &e) == 2) {
				r = rec_find(id);
				if (r)
					r->committed = -1;
			} else if (sscanf(line, "A %" SCNu64, &id) == 1) {
				/* Every id of this run up to it. */
				uint64_t lo = id - (id - 1) % RUN_IDS;
				size_t k;

				r = rec_find(id);
				for (k = r ? (size_t)(r - recs) + 1 : 0; k-- > 0;) {
					if (recs[k].id < lo || recs[k].acked)
						break;
					if (recs[k].committed == 1)
						recs[k].acked = true;
				}
			} else if (line[0] == 'E') {
				errors++;
				printf("# %s: %s", argv[a], line);
			}
		}
		if (f)
			fclose(f);
	}
	/* Pass 2: deliveries, run by run (one log is one run). */
	for (a = 0; a < argc; a++) {
		int boot = log_boot_of(argv[a]);
		FILE *f = fopen(argv[a], "r");
		uint64_t id, now, now_rt;
		size_t i;

		for (i = 0; i < nrecs; i++)
			recs[i].delivered &= ~0x10000;	/* this run's mark */
		while (f && fgets(line, sizeof(line), f)) {
			struct rec *r;

			if (sscanf(line, "D %" SCNu64 " %" SCNu64 " %" SCNu64,
				   &id, &now, &now_rt) != 3)
				continue;
			delivered++;
			r = rec_find(id);
			if (!r) {
				unknown++;
				printf("# delivered %" PRIu64 ", never about to be committed\n", id);
				continue;
			}
			if (r->committed != 1) {
				refused++;
				printf("# delivered %" PRIu64 ", its commit failed\n", id);
			}
			/*
			 * Never early: within a boot on CLOCK_MONOTONIC,
			 * exactly (a recovery's mapping errs late, rmmod or
			 * not); across a reboot on CLOCK_REALTIME, within
			 * EARLY_TOL_NS.
			 */
			{
				bool same = boot >= 0 && boot == r->boot;
				uint64_t d = same ? r->due : r->due_rt;
				uint64_t t = same ? now : now_rt;

				if (same ? t < d : t + EARLY_TOL_NS < d) {
					early++;
					printf("# %" PRIu64 " delivered %" PRIu64 " ns early%s\n",
					       id, d - t, same ? "" : " (another boot)");
				} else if (t > d && t - d > worst_late) {
					worst_late = t - d;
				}
			}
			if (r->delivered & 0x10000)
				dup_in_run++;
			if (r->delivered & 0xffff)
				dups++;
			r->delivered = (r->delivered & 0xffff) + 1;
			r->delivered |= 0x10000;
		}
		if (f)
			fclose(f);
	}
	for (size_t i = 0; i < nrecs; i++) {
		if (!recs[i].acked)
			continue;
		acked++;
		if (!(recs[i].delivered & 0xffff)) {
			if (lost < 10)
				printf("# acknowledged durable, never delivered: %" PRIu64 "\n",
				       recs[i].id);
			lost++;
		}
	}
	printf("# %zu ids about to be committed, %" PRIu64 " acknowledged durable, %" PRIu64
	       " deliveries, %" PRIu64 " redelivered across runs; latest %.1f ms after due\n",
	       nrecs, acked, delivered, dups, worst_late / 1e6);
#define CHECK(c, ...) do { tap((c), __VA_ARGS__); if (c) pass++; else fail++; } while (0)
	CHECK(acked > 0 && delivered > 0, "the runs committed and delivered something");
	CHECK(lost == 0, "every id acknowledged durable was delivered (%" PRIu64 " lost)", lost);
	CHECK(unknown == 0 && refused == 0,
	      "every delivered id was committed (%" PRIu64 " never, %" PRIu64 " refused)",
	      unknown, refused);
	CHECK(errors == 0, "payloads byte-identical, no consumer error (%" PRIu64 ")", errors);
	CHECK(early == 0, "nothing delivered before its due time (%" PRIu64 " early)", early);
	CHECK(dup_in_run == 0, "no run delivered an id twice (%" PRIu64 ")", dup_in_run);
	CHECK(dups <= max_redelivered,
	      "redelivered across runs within the bound of the kills (%" PRIu64 " <= %" PRIu64 ")",
	      dups, max_redelivered);
	printf("%d passed, %d failed\n", pass, fail);
	free(recs);
	return fail ? 1 : 0;
}

int main(int argc, char **argv)
{
	struct sigaction sa = { .sa_handler = on_term };

	if (argc >= 4 && !strcmp(argv[1], "verify") &&
	    !strcmp(argv[2], "--max-redelivered"))
		return verify(argc - 4, argv + 4, strtoull(argv[3], NULL, 0));
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	if (argc >= 6 && !strcmp(argv[1], "produce")) {
		uint64_t count = 0;
		bool always = false;
		int i;

		for (i = 6; i < argc; i++) {
			if (!strcmp(argv[i], "--count") && i + 1 < argc)
				count = strtoull(argv[++i], NULL, 0);
			else if (!strcmp(argv[i], "--always"))
				always = true;
			else if (!strcmp(argv[i], "--sync-log"))
				sync_log = true;
		}
		log_fd = open(argv[4], O_WRONLY | O_CREAT | O_APPEND, 0644);
		if (log_fd < 0)
			return 2;
		return produce(argv[2], argv[3], strtoull(argv[5], NULL, 0),
			       count, always);
	}
	if (argc >= 5 && !strcmp(argv[1], "consume")) {
		const char *idle_after = NULL;
		int64_t idle = -1;
		int i;

		for (i = 5; i < argc; i++) {
			if (!strcmp(argv[i], "--idle-ms") && i + 1 < argc)
				idle = strtoll(argv[++i], NULL, 0);
			else if (!strcmp(argv[i], "--idle-after") && i + 1 < argc)
				idle_after = argv[++i];
			else if (!strcmp(argv[i], "--sync-log"))
				sync_log = true;
		}
		log_fd = open(argv[4], O_WRONLY | O_CREAT | O_APPEND, 0644);
		if (log_fd < 0)
			return 2;
		return consume(argv[2], argv[3], idle, idle_after);
	}
	fprintf(stderr, "usage: %s produce NAME DIR LOG RUN [--count N] [--always] [--sync-log]\n"
		"       %s consume NAME DIR LOG [--idle-ms N [--idle-after FILE]] [--sync-log]\n"
		"       %s verify --max-redelivered N LOG...\n", argv[0], argv[0],
		argv[0]);
	return 2;
}
