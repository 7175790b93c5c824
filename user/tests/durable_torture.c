// SPDX-License-Identifier: LGPL-2.1 OR MIT
/*
 * durable_torture - fault injection for durable queues (docs/journal.md,
 * docs/durability-tests.md): a producer/consumer is killed at random
 * points and restarted on the same journal, and the test's OWN records
 * (never what dq reports) must show the durability contract:
 *
 *  - every id acknowledged as durable (dq_durable_wait() of its mark
 *    returned) is delivered at least once, across all runs;
 *  - every delivered id is one the producer was about to commit (logged
 *    before dq_commit()), was not refused (commit error, reject), and is
 *    delivered with exactly the payload bytes committed (a deterministic
 *    function of the id: length 1..500 and bytes);
 *  - never early against the due time the test chose; on time within a
 *    bound of max(due, end of the recovery); messages already overdue at
 *    the open come out in due order;
 *  - a redelivered id (delivered more than once) was delivered by a run
 *    that was killed, after that run's last acknowledgement (a done
 *    followed by a flush and a durable wait is durable, docs/journal.md
 *    "Retire entries ... made durable by the same group commit"); never
 *    twice in one run, never after a clean close;
 *  - a final run drains every recovered message and closes; opening the
 *    journal again recovers nothing.
 *
 * Roles:
 *   durable_torture torture --dir D --logdir L [options]
 *	the parent loop: fork a child run, kill -9 it after a random delay
 *	(some runs get SIGTERM and close cleanly instead), repeat for
 *	--iterations or --seconds, then a final run without a kill that
 *	drains everything, a verify run, and the verdict over L/run-*.log.
 *   durable_torture child --dir D --run R --log FILE|- [--final|--verify]
 *	one run (the power-cut test runs this in the VM, log on the serial
 *	terminal: --log - --sync-log).
 *   durable_torture verify [--late-ms N] [--floor-file F] [final] LOG...
 *	the verdict over logs (lines "DQT ..." anywhere in them).
 *
 * Common options: --backend user|kernel, --durability batch|always|mix,
 * --track, --seed N, --late-ms N (on-time bound, default 200),
 * --order-tol-us N (overdue order tolerance, default 1000),
 * --floor-file F (the on-time bound grows by this machine's disk and
 * scheduler floor beside the runs: see floor_bound()),
 * --batch-max N, --hold-max N, --long-permille N (messages due in 1..3 s:
 * they pin old segments, so relocation runs), --segment-mb, --max-mb.
 * torture: --iterations N (300), --seconds S (120), --max-kill-ms N (600),
 * --term-percent N (10), --between CMD (run by sh after each child, e.g.
 * rmmod/insmod), --final-timeout S.
 *
 * Log lines (one writer per run; each line "DQT <run> <T> ... *<fnv32>",
 * the checksum drops torn or garbled lines, e.g. a serial line cut by a
 * power cut):
 *   S boot pid durability backend start_rt start_mono   before the open
 *   O rec_ns rec_recovered rec_overdue rec_records rec_segments
 *     rec_torn_bytes rec_corrupt open_mono open_rt     after the open
 *   F errno what			fatal (open or durable wait failed)
 *   C id due_mono due_rt		about to commit (written before it)
 *   N id errno				the commit did not happen
 *   R id errno reason			rejected at the flush
 *   A lo hi				ids lo..hi of this run (C, not N/R)
 *					are durable: written after
 *					dq_durable_wait() returned
 *   D id reap_mono reap_rt attempts redeliveries   delivered, payload
 *					checked, written before dq_done()
 *   E id what				the child saw something wrong
 *   X					closed cleanly (after SIGTERM)
 *   Z delivered_old recovered		final run drained and closed
 *   V recovered			verify run: recovered after the final
 * With --sync-log each batch of lines is on its way out before the next
 * dq call: fdatasync() for a file, tcdrain() for a terminal.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "dqshim.h"

#define NSEC		1000000000LL
#define MSEC		1000000LL
#define SLOT_COUNT	4096
#define SLOT_SIZE	512
#define MAX_PAYLOAD	500
#define REAP_MAX	64
/* Recovered messages went through CLOCK_REALTIME <-> CLOCK_MONOTONIC
 * conversions (docs/journal.md, Recovery 6) by the library and the test,
 * each from two clock reads: this much "early" is the conversion's. */
#define EARLY_TOL_NS	(2 * MSEC)

/* ------------------------------------------------------------ options */

struct opts {
	const char *dir;
	const char *logdir;
	const char *log;
	const char *between;
	int backend;		/* DQ_BACKEND_* */
	int durability;		/* 1 batch, 2 always, 0 mix */
	bool track;
	bool sync_log;
	bool final;
	bool verify;
	uint64_t seed;
	long run;
	long iterations;
	long seconds;
	long max_kill_ms;
	long term_percent;
	long late_ms;
	long batch_max;
	long hold_max;
	long long_permille;
	long segment_mb;
	long max_mb;
	long final_timeout;
	long start_run;
	long order_tol_us;
	const char *floor_file;
};

static struct opts o = {
	.backend = DQ_BACKEND_USER, .durability = 0, .seed = 0,
	.iterations = 300, .seconds = 120, .max_kill_ms = 600,
	.term_percent = 10, .late_ms = 200, .batch_max = 8, .hold_max = 1500,
	.long_permille = 15, .segment_mb = 1, .max_mb = 16, .final_timeout = 30,
	.start_run = 1, .order_tol_us = 1000,
};

static void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, "durable_torture: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
	exit(2);
}

/* ---------------------------------------------------------- utilities */

static int64_t now_ns(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return (int64_t)ts.tv_sec * NSEC + ts.tv_nsec;
}

/*
 * CLOCK_MONOTONIC and CLOCK_REALTIME of one instant: CLOCK_REALTIME read
 * between two CLOCK_MONOTONIC reads, again while they are more than 20 us
 * apart (a preemption between the reads, ms in a TCG guest, would shift
 * the test's recorded due times), the tightest of up to 50 tries.
 */
static void now_pair(int64_t *mono, int64_t *rt)
{
	int64_t best = INT64_MAX;

	for (int i = 0; i < 50 && best > 20000; i++) {
		int64_t m1 = now_ns(CLOCK_MONOTONIC);
		int64_t r = now_ns(CLOCK_REALTIME);
		int64_t m2 = now_ns(CLOCK_MONOTONIC);

		if (m2 - m1 < best) {
			best = m2 - m1;
			*mono = m1 + (m2 - m1) / 2;
			*rt = r;
		}
	}
}

static uint64_t mix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ULL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

static uint64_t rng_state;
static uint64_t rnd(void)
{
	rng_state += 0x9e3779b97f4a7c15ULL;
	return mix64(rng_state);
}
static uint64_t rnd_below(uint64_t n) { return n ? rnd() % n : 0; }

/* The payload of message @id: its length and bytes depend on @id only. */
static uint32_t payload_len(uint64_t id)
{
	return 1 + (uint32_t)(mix64(id ^ 0x5eed1e55c0ffeeULL) % MAX_PAYLOAD);
}

static void payload_fill(uint64_t id, uint8_t *buf, uint32_t len)
{
	for (uint32_t i = 0; i < len; i += 8) {
		uint64_t w = mix64(id * 0x2545f4914f6cdd1dULL + i / 8);
		uint32_t n = len - i < 8 ? len - i : 8;

		memcpy(buf + i, &w, n);
	}
}

static uint32_t fnv32(const char *s, size_t n)
{
	uint32_t h = 2166136261u;

	for (size_t i = 0; i < n; i++) {
		h ^= (uint8_t)s[i];
		h *= 16777619u;
	}
	return h;
}

#define RUN_OF(id)	((long)((id) >> 32))
#define SEQ_OF(id)	((uint32_t)(id))
#define MKID(run, seq)	(((uint64_t)(run) << 32) | (uint32_t)(seq))

/* ---------------------------------------------------------- the child */

/*
 * A run has two threads on one private queue: the producer (commit,
 * flush, dq_durable_wait, acknowledge) and the consumer (dq_reap blocking,
 * check, log, dq_done), so that neither's waiting makes the other late.
 * Each thread buffers its lines; log_flush() writes them under one lock.
 */
struct logbuf {
	char *buf;
	size_t len, cap;
};

static struct {
	pthread_mutex_t lock;
	int fd;
	bool is_tty;
	bool sync;
	long run;
} lg = { .lock = PTHREAD_MUTEX_INITIALIZER };

static void log_line(struct logbuf *b, char type, const char *fmt, ...)
{
	char line[256];
	int n, m;
	va_list ap;

	n = snprintf(line, sizeof(line), "DQT %ld %c", lg.run, type);
	if (fmt && *fmt) {
		line[n++] = ' ';
		va_start(ap, fmt);
		n += vsnprintf(line + n, sizeof(line) - n, fmt, ap);
		va_end(ap);
	}
	m = snprintf(line + n, sizeof(line) - n, " *%08x\n", fnv32(line, n));
	n += m;
	if (b->len + n > b->cap) {
		b->cap = (b->len + n) * 2 + 4096;
		b->buf = realloc(b->buf, b->cap);
		if (!b->buf)
			die("out of memory");
	}
	memcpy(b->buf + b->len, line, n);
	b->len += n;
}

/* Out with the buffered lines; with --sync-log, on stable storage (file)
 * or through the UART (terminal) before this returns. */
static void log_flush(struct logbuf *b)
{
	size_t off = 0;

	if (!b->len)
		return;
	pthread_mutex_lock(&lg.lock);
	while (off < b->len) {
		ssize_t r = write(lg.fd, b->buf + off, b->len - off);

		if (r < 0) {
			if (errno == EINTR)
				continue;
			die("log write: %s", strerror(errno));
		}
		off += r;
	}
	b->len = 0;
	if (lg.sync) {
		if (lg.is_tty) {
			while (tcdrain(lg.fd) && errno == EINTR)
				;
		} else if (fdatasync(lg.fd)) {
			die("log fdatasync: %s", strerror(errno));
		}
	}
	pthread_mutex_unlock(&lg.lock);
}

static volatile sig_atomic_t term_flag;
static void on_term(int sig) { (void)sig; term_flag = 1; }

struct rejected {
	uint64_t id[4096];
	int err[4096];
	uint32_t reason[4096];
	unsigned int n;
};
static struct rejected rejs;

static void on_reject(void *arg, const struct dq_reject *rej)
{
	(void)arg;
	if (rejs.n < 4096) {
		rejs.id[rejs.n] = rej->user_data;
		rejs.err[rejs.n] = rej->error;
		rejs.reason[rejs.n] = rej->reason;
		rejs.n++;
	}
}

static void read_boot_id(char *out, size_t n)
{
	FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");

	snprintf(out, n, "unknown");
	if (f) {
		char b[64];

		if (fgets(b, sizeof(b), f)) {
			b[strcspn(b, "-\n")] = 0;
			snprintf(out, n, "%.32s", b);
		}
		fclose(f);
	}
}

/* What the two threads share. */
static struct {
	struct dqshim_queue *q;
	int64_t open_mono;
	uint64_t recovered;
	long held;		/* atomic: committed or recovered, not done */
	uint64_t done_batch;	/* atomic: last consumer batch fully done */
	bool stop;		/* atomic */
	int rc;			/* atomic or */
} cs;

static void *consumer_main(void *arg)
{
	struct dq_reaped out[REAP_MAX];
	static uint8_t expect[SLOT_SIZE];
	struct logbuf lb = { 0 };
	uint64_t batch = 0, old_delivered = 0;
	int ret;

	(void)arg;
	for (;;) {
		int64_t reap_mono, reap_rt;
		int n;

		if (o.final) {
			int64_t t = now_ns(CLOCK_MONOTONIC);

			if (old_delivered >= cs.recovered && t > cs.open_mono + 300 * MSEC)
				break;
			if (t > cs.open_mono + o.final_timeout * NSEC) {
				log_line(&lb, 'E', "0 final_drain=%" PRIu64 "/%" PRIu64,
					 old_delivered, cs.recovered);
				__atomic_or_fetch(&cs.rc, 1, __ATOMIC_RELAXED);
				break;
			}
		} else if (__atomic_load_n(&cs.stop, __ATOMIC_ACQUIRE)) {
			break;
		}

		n = dq_reap(cs.q, out, REAP_MAX, 20 * MSEC);
		if (n < 0 && n != -ETIME && n != -EINTR) {
			log_line(&lb, 'E', "0 reap=%d", n);
			__atomic_or_fetch(&cs.rc, 1, __ATOMIC_RELAXED);
			break;
		}
		if (n <= 0)
			continue;
		now_pair(&reap_mono, &reap_rt);
		batch++;
		for (int i = 0; i < n; i++) {
			uint64_t id = out[i].user_data;
			uint32_t len = payload_len(id);

			payload_fill(id, expect, len);
			if (out[i].len != len || memcmp(out[i].data, expect, len)) {
				log_line(&lb, 'E', "%" PRIu64 " payload len=%u want=%u",
					 id, out[i].len, len);
				__atomic_or_fetch(&cs.rc, 1, __ATOMIC_RELAXED);
			}
			log_line(&lb, 'D', "%" PRIu64 " %" PRId64 " %" PRId64 " %u %u %" PRIu64,
				 id, reap_mono, reap_rt, out[i].attempts,
				 out[i].redeliveries, batch);
			if (RUN_OF(id) != o.run)
				old_delivered++;
		}
		/* The record of delivery is out before the dones. */
		log_flush(&lb);
		for (int i = 0; i < n; i++) {
			ret = o.track ? dq_finish(cs.q, out[i].slot, DQ_DONE_DELIVERED)
				      : dq_done(cs.q, out[i].slot);
			if (ret) {
				log_line(&lb, 'E', "%" PRIu64 " done=%d",
					 out[i].user_data, ret);
				__atomic_or_fetch(&cs.rc, 1, __ATOMIC_RELAXED);
			}
		}
		__atomic_sub_fetch(&cs.held, n, __ATOMIC_RELAXED);
		__atomic_store_n(&cs.done_batch, batch, __ATOMIC_RELEASE);
		log_flush(&lb);
	}
	if (o.final) {
		log_line(&lb, 'Z', "%" PRIu64 " %" PRIu64, old_delivered, cs.recovered);
		if (old_delivered != cs.recovered) {
			log_line(&lb, 'E', "0 final_delivered_old=%" PRIu64 "!=recovered=%" PRIu64,
				 old_delivered, cs.recovered);
			__atomic_or_fetch(&cs.rc, 1, __ATOMIC_RELAXED);
		}
	}
	log_flush(&lb);
	free(lb.buf);
	return NULL;
}

static void *producer_main(void *arg)
{
	struct logbuf lb = { 0 };
	uint32_t seq = 0;
	int ret;

	(void)arg;
	while (!__atomic_load_n(&cs.stop, __ATOMIC_ACQUIRE)) {
		struct dqshim_msg m[64];
		uint64_t ids[64], mark, fb;
		int64_t dm[64], dr[64], mono, rt;
		bool ok[64];
		int k = 1 + (int)rnd_below(o.batch_max), got = 0, done = 0;

		if (__atomic_load_n(&cs.held, __ATOMIC_RELAXED) >= o.hold_max) {
			usleep(2000);
			continue;
		}
		for (; got < k; got++)
			if (dq_reserve(cs.q, &m[got]))
				break;
		if (!got) {
			usleep(2000);
			continue;
		}
		now_pair(&mono, &rt);
		for (int i = 0; i < got; i++) {
			int64_t d;

			if (o.long_permille && rnd_below(1000) < (uint64_t)o.long_permille)
				d = 1000 * MSEC + rnd_below(2000 * MSEC);
			else
				d = rnd_below(200 * MSEC + 1);
			ids[i] = MKID(o.run, seq++);
			dm[i] = mono + d;
			dr[i] = rt + d;
			log_line(&lb, 'C', "%" PRIu64 " %" PRId64 " %" PRId64, ids[i],
				 dm[i], dr[i]);
		}
		/* "About to commit" is out before the commits. */
		log_flush(&lb);
		rejs.n = 0;
		for (int i = 0; i < got; i++) {
			uint32_t len = payload_len(ids[i]);

			payload_fill(ids[i], m[i].data, len);
			ret = dq_commit(cs.q, &m[i], len, (uint64_t)dm[i], ids[i]);
			if (ret == -EAGAIN) {
				dq_flush(cs.q);
				ret = dq_commit(cs.q, &m[i], len, (uint64_t)dm[i], ids[i]);
			}
			ok[i] = !ret;
			if (ret) {
				log_line(&lb, 'N', "%" PRIu64 " %d", ids[i], ret);
				dq_abort(cs.q, &m[i]);
			} else {
				done++;
			}
		}
		if (!done) {
			log_flush(&lb);
			usleep(2000);
			continue;
		}
		__atomic_add_fetch(&cs.held, done, __ATOMIC_RELAXED);
		/* Every consumer batch done by now had its dones before
		 * this flush: their retires are written by it (or earlier)
		 * and durable with this batch's commits. */
		fb = __atomic_load_n(&cs.done_batch, __ATOMIC_ACQUIRE);
		ret = dq_flush(cs.q);
		if (ret < 0)
			log_line(&lb, 'E', "0 flush=%d", ret);
		for (unsigned int r = 0; r < rejs.n; r++) {
			log_line(&lb, 'R', "%" PRIu64 " %d %u", rejs.id[r], rejs.err[r],
				 rejs.reason[r]);
			__atomic_sub_fetch(&cs.held, 1, __ATOMIC_RELAXED);
		}
		mark = dq_journal_mark(cs.q);
		ret = dq_durable_wait(cs.q, mark, 60 * NSEC);
		if (ret) {
			log_line(&lb, 'F', "%d durable_wait", ret);
			log_flush(&lb);
			__atomic_or_fetch(&cs.rc, 4, __ATOMIC_RELAXED);
			break;
		}
		if (dq_durable_pos(cs.q) < mark) {
			log_line(&lb, 'E', "0 durable_pos<mark");
			__atomic_or_fetch(&cs.rc, 1, __ATOMIC_RELAXED);
		}
		/* Acknowledged: the batch's ids but those refused. */
		for (int i = 0; i < got;) {
			int j;

			if (!ok[i]) {
				i++;
				continue;
			}
			for (j = i; j + 1 < got && ok[j + 1]; j++)
				;
			log_line(&lb, 'A', "%" PRIu64 " %" PRIu64 " %" PRIu64, ids[i],
				 ids[j], fb);
			i = j + 1;
		}
		log_flush(&lb);
	}
	log_flush(&lb);
	free(lb.buf);
	return NULL;
}

static int child_main(void)
{
	struct dq_params p;
	struct dq_journal_params jp;
	struct dq_journal_stats st = { .sz = sizeof(st) };
	struct logbuf lb = { 0 };
	pthread_t ct, pt;
	char boot[40];
	int64_t start_mono, start_rt, open_rt;
	int durability, ret;
	bool producing = !o.final && !o.verify;
	sigset_t ss;

	/* Never outlive the parent (the loop, or strace in the crash points). */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() == 1)
		return 2;
	rng_state = mix64(o.seed ^ mix64((uint64_t)o.run));
	signal(SIGTERM, on_term);
	signal(SIGPIPE, SIG_IGN);

	lg.run = o.run;
	lg.sync = o.sync_log;
	if (!strcmp(o.log, "-")) {
		lg.fd = 1;
	} else {
		lg.fd = open(o.log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
		if (lg.fd < 0)
			die("%s: %s", o.log, strerror(errno));
	}
	lg.is_tty = isatty(lg.fd);

	durability = o.durability ? o.durability : 1 + (int)rnd_below(2);
	read_boot_id(boot, sizeof(boot));
	now_pair(&start_mono, &start_rt);
	log_line(&lb, 'S', "%s %d %s %s %" PRId64 " %" PRId64, boot, (int)getpid(),
		 durability == DQ_DURABLE_ALWAYS ? "always" : "batch",
		 o.backend == DQ_BACKEND_KERNEL ? "kernel" : "user", start_rt,
		 start_mono);
	log_flush(&lb);

	dq_params_init(&p);
	p.slot_count = SLOT_COUNT;
	p.slot_size = SLOT_SIZE;
	p.backend = o.backend;
	p.flags = o.track ? DQ_OPEN_F_TRACK : 0;
	p.on_reject = on_reject;
	dq_journal_params_init(&jp, o.dir, durability);
	jp.segment_bytes = (uint64_t)o.segment_mb << 20;
	jp.max_bytes = (uint64_t)o.max_mb << 20;
	ret = dq_queue_open_durable(&p, &jp, &cs.q);
	if (ret) {
		log_line(&lb, 'F', "%d open", ret);
		log_flush(&lb);
		fprintf(stderr, "run %ld: dq_queue_open_durable: %s\n", o.run,
			strerror(-ret));
		return 2;
	}
	now_pair(&cs.open_mono, &open_rt);
	ret = dq_journal_stats(cs.q, &st);
	if (ret)
		log_line(&lb, 'E', "0 journal_stats=%d", ret);
	cs.recovered = st.rec_recovered;
	cs.held = (long)st.rec_recovered;
	log_line(&lb, 'O', "%" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64
		 " %" PRIu64 " %" PRIu64 " %" PRId64 " %" PRId64,
		 st.rec_ns, st.rec_recovered, st.rec_overdue, st.rec_records,
		 st.rec_segments, st.rec_torn_bytes, st.rec_corrupt, cs.open_mono,
		 open_rt);
	log_flush(&lb);

	if (o.verify) {
		log_line(&lb, 'V', "%" PRIu64, cs.recovered);
		if (cs.recovered) {
			log_line(&lb, 'E', "0 verify_recovered=%" PRIu64, cs.recovered);
			cs.rc = 1;
		}
		log_flush(&lb);
		dq_queue_close(cs.q);
		return cs.rc;
	}

	/* SIGTERM goes to this thread only: it waits for it below. */
	sigemptyset(&ss);
	sigaddset(&ss, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &ss, NULL);
	if (pthread_create(&ct, NULL, consumer_main, NULL))
		die("pthread_create");
	if (producing && pthread_create(&pt, NULL, producer_main, NULL))
		die("pthread_create");
	pthread_sigmask(SIG_UNBLOCK, &ss, NULL);
	if (o.final) {
		pthread_join(ct, NULL);
	} else {
		while (!term_flag && !__atomic_load_n(&cs.rc, __ATOMIC_RELAXED))
			usleep(2000);
		__atomic_store_n(&cs.stop, true, __ATOMIC_RELEASE);
		pthread_join(pt, NULL);
		pthread_join(ct, NULL);
	}
	dq_queue_close(cs.q);
	if (!o.final)
		log_line(&lb, 'X', NULL);
	log_flush(&lb);
	return cs.rc;
}

/* ----------------------------------------------------------- verifier */

struct ent {
	int64_t due_mono, due_rt;
	uint32_t flags;
	uint32_t ndeliv;
	long last_d_run;
	uint64_t last_d_batch;	/* the consumer batch of its last delivery */
};
#define F_C	1u
#define F_N	2u
#define F_R	4u
#define F_A	8u

struct runinfo {
	bool seen, opened, clean, final, verify, fatal;
	char boot[40];
	uint64_t max_fb;	/* consumer batches done before an acked flush */
	int64_t start_mono, start_rt, open_mono, open_rt;
	uint64_t rec_ns, rec_recovered, rec_overdue, rec_torn, rec_corrupt;
	int64_t ord_prev_due;	/* overdue order: the last one's due_rt */
	uint64_t ord_prev_id;
	struct ent *e;
	uint32_t ne;
};

struct verdict {
	long nruns;
	struct runinfo *r;
	uint64_t lines, bad_lines;
	/* counts */
	uint64_t committed, refused, acked, delivered_ids, deliveries;
	uint64_t redelivered_ids, unacked_lost;
	/* failures */
	uint64_t f_lost_acked, f_not_committed, f_payload, f_early, f_late;
	uint64_t f_order, f_redeliv, f_dup_run, f_child, f_final;
	int64_t max_early, max_late, max_rec_early, max_inversion;
	uint64_t max_rec_ns;
	long max_rec_run;
	long max_late_run;
	uint64_t max_late_id;
	int printed;
};

static struct runinfo *run_get(struct verdict *v, long run)
{
	if (run < 0 || run > 10000000)
		return NULL;
	if (run >= v->nruns) {
		long n = run + 64;

		v->r = realloc(v->r, n * sizeof(*v->r));
		if (!v->r)
			die("out of memory");
		memset(v->r + v->nruns, 0, (n - v->nruns) * sizeof(*v->r));
		v->nruns = n;
	}
	return &v->r[run];
}

static struct ent *ent_get(struct verdict *v, uint64_t id, bool create)
{
	struct runinfo *r = run_get(v, RUN_OF(id));
	uint32_t s = SEQ_OF(id);

	if (!r)
		return NULL;
	if (s >= r->ne) {
		uint32_t n;

		if (!create || s > 50000000)
			return NULL;
		n = s + 1024 > r->ne * 2 ? s + 1024 : r->ne * 2;
		r->e = realloc(r->e, (size_t)n * sizeof(*r->e));
		if (!r->e)
			die("out of memory");
		memset(r->e + r->ne, 0, (size_t)(n - r->ne) * sizeof(*r->e));
		r->ne = n;
	}
	return &r->e[s];
}

#define FAILMSG(v, ...) do { \
	if ((v)->printed++ < 40) { printf("# FAIL: " __VA_ARGS__); printf("\n"); } \
} while (0)

/* A "DQT ..." line with a good checksum: its run, type and the rest. */
static bool parse_line(char *line, long *run, char *type, char **rest)
{
	char *p = strstr(line, "DQT "), *star, *end;
	uint32_t sum;

	if (!p)
		return false;
	end = p + strcspn(p, "\r\n");
	*end = 0;
	star = strrchr(p, '*');
	if (!star || star - p < 8 || star[-1] != ' ' || strlen(star + 1) != 8)
		return false;
	sum = (uint32_t)strtoul(star + 1, NULL, 16);
	if (fnv32(p, star - 1 - p) != sum)
		return false;
	star[-1] = 0;
	if (sscanf(p, "DQT %ld %c", run, type) != 2)
		return false;
	*rest = p + 4;
	*rest += strcspn(*rest, " ") + 1;	/* run */
	*rest += strcspn(*rest, " ");		/* type */
	if (**rest == ' ')
		(*rest)++;
	return true;
}

typedef void (*line_fn)(struct verdict *v, long run, char type, char *rest,
			uint64_t lineno);

static void scan_files(struct verdict *v, int nfiles, char **files, line_fn fn,
		       bool count)
{
	char *line = NULL;
	size_t cap = 0;
	uint64_t lineno = 0;

	for (int i = 0; i < nfiles; i++) {
		FILE *f = fopen(files[i], "r");

		if (!f)
			die("%s: %s", files[i], strerror(errno));
		while (getline(&line, &cap, f) > 0) {
			long run;
			char type, *rest;

			lineno++;
			if (!parse_line(line, &run, &type, &rest)) {
				if (count && strstr(line, "DQT "))
					v->bad_lines++;
				continue;
			}
			if (count)
				v->lines++;
			fn(v, run, type, rest, lineno);
		}
		fclose(f);
	}
	free(line);
}

/* Pass 1: what each run was (its start, open, end, last ack). */
static void pass1(struct verdict *v, long run, char type, char *rest,
		  uint64_t lineno)
{
	struct runinfo *r = run_get(v, run);

	(void)lineno;
	if (!r)
		return;
	r->seen = true;
	switch (type) {
	case 'S':
		sscanf(rest, "%39s %*d %*s %*s %" SCNd64 " %" SCNd64, r->boot,
		       &r->start_rt, &r->start_mono);
		break;
	case 'O':
		r->opened = true;
		sscanf(rest, "%" SCNu64 " %" SCNu64 " %" SCNu64 " %*u %*u %" SCNu64
		       " %" SCNu64 " %" SCNd64 " %" SCNd64, &r->rec_ns,
		       &r->rec_recovered, &r->rec_overdue, &r->rec_torn,
		       &r->rec_corrupt, &r->open_mono, &r->open_rt);
		r->ord_prev_due = INT64_MIN;
		break;
	case 'A': {
		uint64_t fb;

		if (sscanf(rest, "%*u %*u %" SCNu64, &fb) == 1 && fb > r->max_fb)
			r->max_fb = fb;
		break;
	}
	case 'X':
		r->clean = true;
		break;
	case 'Z':
		r->final = true;
		break;
	case 'V':
		r->verify = true;
		break;
	case 'F':
		r->fatal = true;
		break;
	}
}

/* Pass 2: every id's life. */
static void pass2(struct verdict *v, long run, char type, char *rest,
		  uint64_t lineno)
{
	struct runinfo *r = run_get(v, run), *cr;
	struct ent *e;
	uint64_t id, lo, hi;
	int64_t a, b;

	(void)lineno;
	if (!r)
		return;
	switch (type) {
	case 'C':
		if (sscanf(rest, "%" SCNu64 " %" SCNd64 " %" SCNd64, &id, &a, &b) != 3)
			return;
		e = ent_get(v, id, true);
		if (!e)
			return;
		e->flags |= F_C;
		e->due_mono = a;
		e->due_rt = b;
		break;
	case 'N':
	case 'R':
		if (sscanf(rest, "%" SCNu64, &id) != 1)
			return;
		e = ent_get(v, id, true);
		if (e)
			e->flags |= type == 'N' ? F_N : F_R;
		if (type == 'R')
			FAILMSG(v, "run %ld: id %" PRIu64 " rejected at flush (%s)", run, id, rest);
		break;
	case 'A':
		if (sscanf(rest, "%" SCNu64 " %" SCNu64, &lo, &hi) != 2 ||
		    RUN_OF(lo) != run || RUN_OF(hi) != run || hi < lo)
			return;
		for (id = lo; id <= hi; id++) {
			e = ent_get(v, id, true);
			if (e && (e->flags & F_C))
				e->flags |= F_A;
		}
		break;
	case 'E':
		v->f_child++;
		FAILMSG(v, "run %ld: child error: %s", run, rest);
		if (strstr(rest, "payload"))
			v->f_payload++;
		if (strstr(rest, "final") || strstr(rest, "verify"))
			v->f_final++;
		break;
	case 'F':
		v->f_child++;
		FAILMSG(v, "run %ld: fatal: %s", run, rest);
		break;
	case 'D': {
		int64_t rm, rr, early, late, base;
		uint64_t batch = 0;
		bool same_boot, own;

		if (sscanf(rest, "%" SCNu64 " %" SCNd64 " %" SCNd64 " %*u %*u %" SCNu64,
			   &id, &rm, &rr, &batch) != 4)
			return;
		v->deliveries++;
		e = ent_get(v, id, false);
		if (!e || !(e->flags & F_C)) {
			v->f_not_committed++;
			FAILMSG(v, "run %ld: delivered id %" PRIu64 " (run %ld seq %u) was never committed",
				run, id, RUN_OF(id), SEQ_OF(id));
			return;
		}
		if (e->flags & (F_N | F_R)) {
			v->f_not_committed++;
			FAILMSG(v, "run %ld: delivered id %" PRIu64 " whose commit %s",
				run, id, e->flags & F_N ? "failed" : "was rejected");
		}
		if (RUN_OF(id) > run) {
			v->f_not_committed++;
			FAILMSG(v, "run %ld: delivered id %" PRIu64 " of a later run", run, id);
			return;
		}
		cr = run_get(v, RUN_OF(id));
		own = RUN_OF(id) == run;
		same_boot = !strcmp(cr->boot, r->boot);
		/* Never early.  The own run's messages: exact, on
		 * CLOCK_MONOTONIC; recovered ones went through the journal's
		 * CLOCK_REALTIME (EARLY_TOL_NS). */
		if (same_boot) {
			early = e->due_mono - rm;
			base = e->due_mono > r->open_mono ? e->due_mono : r->open_mono;
			late = rm - base;
		} else {
			early = e->due_rt - rr;
			base = e->due_rt > r->open_rt ? e->due_rt : r->open_rt;
			late = rr - base;
		}
		if (own && early > v->max_early)
			v->max_early = early;
		if (!own && early > v->max_rec_early)
			v->max_rec_early = early;
		if (early > (own ? 0 : EARLY_TOL_NS)) {
			v->f_early++;
			FAILMSG(v, "run %ld: id %" PRIu64 " delivered %.3f ms early (%s)",
				run, id, early / 1e6, own ? "own run" : "recovered");
		}
		if (late > v->max_late) {
			v->max_late = late;
			v->max_late_run = run;
			v->max_late_id = id;
		}
		if (late > o.late_ms * MSEC) {
			v->f_late++;
			FAILMSG(v, "run %ld: id %" PRIu64 " delivered %.1f ms after max(due, open) (bound %ld ms)",
				run, id, late / 1e6, o.late_ms);
		}
		/* Overdue at the open: out in due order. */
		if (!own && e->due_rt < r->start_rt) {
			if (r->ord_prev_due != INT64_MIN &&
			    r->ord_prev_due - e->due_rt > v->max_inversion)
				v->max_inversion = r->ord_prev_due - e->due_rt;
			if (r->ord_prev_due != INT64_MIN &&
			    e->due_rt + o.order_tol_us * 1000 < r->ord_prev_due) {
				v->f_order++;
				FAILMSG(v, "run %ld: overdue id %" PRIu64 " (due %.3f ms before the open) came after id %" PRIu64 " due %.3f ms later",
					run, id, (r->start_rt - e->due_rt) / 1e6,
					r->ord_prev_id, (r->ord_prev_due - e->due_rt) / 1e6);
			}
			if (e->due_rt > r->ord_prev_due) {
				r->ord_prev_due = e->due_rt;
				r->ord_prev_id = id;
			}
		}
		/* Redelivery: only what a killed run had done after its
		 * last acknowledged durable wait. */
		if (e->ndeliv) {
			struct runinfo *pr = run_get(v, e->last_d_run);

			if (e->last_d_run == run) {
				v->f_dup_run++;
				FAILMSG(v, "run %ld: id %" PRIu64 " delivered twice in one run", run, id);
			} else if (pr->clean || pr->final) {
				v->f_redeliv++;
				FAILMSG(v, "run %ld: id %" PRIu64 " redelivered, done in run %ld which closed cleanly",
					run, id, e->last_d_run);
			} else if (e->last_d_batch <= pr->max_fb) {
				v->f_redeliv++;
				FAILMSG(v, "run %ld: id %" PRIu64 " redelivered, done in run %ld (batch %" PRIu64 ") before a flush whose durable wait returned (its retire should be durable)",
					run, id, e->last_d_run, e->last_d_batch);
			}
			if (e->ndeliv == 1)
				v->redelivered_ids++;
		} else {
			v->delivered_ids++;
		}
		e->ndeliv++;
		e->last_d_run = run;
		e->last_d_batch = batch;
		break;
	}
	}
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * The on-time bound, derived: --late-ms is dq's own allowance; a
 * delivery also waits for what the machine does beside the runs.  The
 * journal's runs share the disk with whatever else writes to it (make
 * check's lanes: on 2026-12-06 a debug kernel's build finishing, and
 * 200 ms was missed by 2.5-37 ms in a run beside it, while two busy CPU
 * loops gave at most 10 ms).  durable_torture.sh's probe writes 4 KiB and
 * fdatasync()s it in the journal's file system every 50 ms beside the
 * runs and keeps "SYNC_MAX_MS WAKE_MAX_MS PROBES" in the floor file: the
 * slowest sync and the latest wake-up from its 50 ms sleep.  A message
 * may wait for one sync in progress and one of its own, and a wake-up:
 * the bound is late_ms + 2 x sync + wake.  Returns false (cannot judge)
 * when the file is missing or holds fewer than 10 probes.
 */
static bool floor_bound(void)
{
	long sync_ms, wake_ms, probes;
	FILE *f;
	int n;

	if (!o.floor_file)
		return true;
	f = fopen(o.floor_file, "re");
	if (!f) {
		printf("# cannot judge lateness: no floor figures (%s: %s)\n", o.floor_file, strerror(errno));
		return false;
	}
	n = fscanf(f, "%ld %ld %ld", &sync_ms, &wake_ms, &probes);
	fclose(f);
	if (n != 3 || sync_ms < 0 || wake_ms < 0 || probes < 10) {
		printf("# cannot judge lateness: %s holds no floor of >= 10 probes\n", o.floor_file);
		return false;
	}
	printf("# floor beside the runs (%ld probes): fdatasync max %ld ms, wake-up max %ld ms late: "
	       "on-time bound %ld + 2 x %ld + %ld = %ld ms\n", probes, sync_ms, wake_ms, o.late_ms,
	       sync_ms, wake_ms, o.late_ms + 2 * sync_ms + wake_ms);
	o.late_ms += 2 * sync_ms + wake_ms;
	return true;
}

static int verify_logs(int nfiles, char **files, bool expect_final, long loop_bad)
{
	bool can_judge_late = floor_bound();
	struct verdict v = { 0 };
	uint64_t *recns, *recn, nrec = 0, rec_torn = 0, rec_corrupt = 0;
	long runs = 0, clean = 0, killed = 0, nfinal = 0, nverify = 0;
	int pass = 0, fail = 0, t = 0;

	v.max_early = v.max_rec_early = INT64_MIN;
	scan_files(&v, nfiles, files, pass1, true);
	scan_files(&v, nfiles, files, pass2, false);

	recns = calloc(v.nruns + 1, sizeof(*recns));
	recn = calloc(v.nruns + 1, sizeof(*recn));
	for (long i = 0; i < v.nruns; i++) {
		struct runinfo *r = &v.r[i];

		if (!r->seen)
			continue;
		runs++;
		if (r->clean)
			clean++;
		else if (!r->final && !r->verify)
			killed++;
		nfinal += r->final;
		nverify += r->verify;
		if (r->opened) {
			if (r->rec_ns > v.max_rec_ns) {
				v.max_rec_ns = r->rec_ns;
				v.max_rec_run = i;
			}
			recns[nrec] = r->rec_ns;
			recn[nrec++] = r->rec_recovered;
			rec_torn += r->rec_torn;
			rec_corrupt += r->rec_corrupt;
		}
		for (uint32_t s = 0; s < r->ne; s++) {
			struct ent *e = &r->e[s];

			if (!(e->flags & F_C))
				continue;
			if (e->flags & (F_N | F_R)) {
				v.refused++;
				continue;
			}
			v.committed++;
			if (e->flags & F_A) {
				v.acked++;
				if (!e->ndeliv) {
					v.f_lost_acked++;
					FAILMSG(&v, "id %" PRIu64 " (run %ld seq %u) acknowledged as durable, never delivered",
						MKID(i, s), i, s);
				}
			} else if (!e->ndeliv) {
				v.unacked_lost++;
			}
		}
	}
	qsort(recns, nrec, sizeof(*recns), cmp_u64);
	qsort(recn, nrec, sizeof(*recn), cmp_u64);

	printf("# runs %ld (killed %ld, clean close %ld, final %ld, verify %ld), log lines %" PRIu64 " (torn/garbled %" PRIu64 ")\n",
	       runs, killed, clean, nfinal, nverify, v.lines, v.bad_lines);
	printf("# messages: committed %" PRIu64 ", acked %" PRIu64 ", refused %" PRIu64
	       ", delivered %" PRIu64 " ids in %" PRIu64 " deliveries, redelivered %" PRIu64
	       " ids, committed-unacked never delivered %" PRIu64 "\n",
	       v.committed, v.acked, v.refused, v.delivered_ids, v.deliveries,
	       v.redelivered_ids, v.unacked_lost);
	if (nrec)
		printf("# recovery: rec_ns p50 %.2f ms max %.2f ms (run %ld); rec_recovered p50 %" PRIu64
		       " max %" PRIu64 "; torn bytes %" PRIu64 ", corrupt records %" PRIu64 "\n",
		       recns[nrec / 2] / 1e6, recns[nrec - 1] / 1e6, v.max_rec_run,
		       recn[nrec / 2], recn[nrec - 1], rec_torn, rec_corrupt);
	printf("# overdue order: largest inversion %.3f ms (tolerance %.3f ms)\n",
	       v.max_inversion / 1e6, o.order_tol_us / 1e3);
	printf("# timing: max lateness %.1f ms (run %ld id %" PRIu64 "); closest to early: own run %.3f ms, recovered %.3f ms after due\n",
	       v.max_late / 1e6, v.max_late_run, v.max_late_id,
	       v.max_early == INT64_MIN ? 0.0 : -v.max_early / 1e6,
	       v.max_rec_early == INT64_MIN ? 0.0 : -v.max_rec_early / 1e6);

#define TCHECK(cond, ...) do { \
	t++; \
	if (cond) { pass++; printf("ok %d - ", t); } \
	else { fail++; printf("not ok %d - ", t); } \
	printf(__VA_ARGS__); printf("\n"); \
} while (0)
	if (loop_bad >= 0)
		TCHECK(!loop_bad, "every run ended as the loop meant: killed, closed on SIGTERM, final and verify exit 0 (%ld did not)", loop_bad);
	TCHECK(!v.f_child, "children ran without errors (%" PRIu64 " errors)", v.f_child);
	TCHECK(!v.f_lost_acked && v.acked, "every acked id delivered (%" PRIu64 " acked, %" PRIu64 " lost)",
	       v.acked, v.f_lost_acked);
	TCHECK(!v.f_not_committed, "every delivered id was committed (%" PRIu64 " not)", v.f_not_committed);
	TCHECK(!v.f_payload, "payload bytes identical (%" PRIu64 " differ)", v.f_payload);
	TCHECK(!v.f_early, "never early (%" PRIu64 " early)", v.f_early);
	if (can_judge_late)
		TCHECK(!v.f_late, "on time within %ld ms of max(due, open) (%" PRIu64 " late)", o.late_ms, v.f_late);
	else
		TCHECK(false, "on time: cannot judge without the floor beside the runs (%s)", o.floor_file);
	TCHECK(!v.f_order, "overdue recovered messages in due order, within %.1f ms (%" PRIu64 " out of order)",
	       o.order_tol_us / 1e3, v.f_order);
	/* Far below the total: in the kill loop (loop_bad >= 0), at most
	 * 5%; crash points' runs are too short for a ratio. */
	TCHECK(!v.f_redeliv && !v.f_dup_run &&
	       (loop_bad < 0 || v.redelivered_ids * 20 <= v.delivered_ids + 20),
	       "redeliveries only of a killed run's last done (%" PRIu64 " redelivered ids, %" PRIu64 " not allowed, %" PRIu64 " twice in a run)",
	       v.redelivered_ids, v.f_redeliv, v.f_dup_run);
	if (expect_final)
		TCHECK(nfinal == 1 && nverify == 1 && !v.f_final,
		       "final run drained every recovered message, reopen recovered nothing");
	printf("%d passed, %d failed\n", pass, fail);
	free(recns);
	free(recn);
	return fail ? 1 : 0;
}

/* ------------------------------------------------------------- parent */

static pid_t spawn_child(long run, bool final, bool verify, const char *logpath)
{
	sigset_t ss, old;
	pid_t pid;

	/* A SIGTERM sent at once must find the child's handler. */
	sigemptyset(&ss);
	sigaddset(&ss, SIGTERM);
	sigprocmask(SIG_BLOCK, &ss, &old);
	pid = fork();
	if (pid < 0)
		die("fork: %s", strerror(errno));
	if (pid == 0) {
		signal(SIGTERM, on_term);
		sigprocmask(SIG_SETMASK, &old, NULL);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		o.run = run;
		o.final = final;
		o.verify = verify;
		o.log = logpath;
		_exit(child_main());
	}
	sigprocmask(SIG_SETMASK, &old, NULL);
	return pid;
}

static int wait_child(pid_t pid, int64_t timeout_ns, int *status)
{
	int64_t end = now_ns(CLOCK_MONOTONIC) + timeout_ns;

	for (;;) {
		pid_t r = waitpid(pid, status, WNOHANG);

		if (r == pid)
			return 0;
		if (now_ns(CLOCK_MONOTONIC) > end)
			return -ETIME;
		usleep(1000);
	}
}

static int torture_main(void)
{
	char path[4096], **files;
	int64_t t0 = now_ns(CLOCK_MONOTONIC);
	long it, nkill = 0, nterm = 0, nearly = 0, bad = 0, run;
	int status, nf = 0;
	int64_t kill_ms_sum = 0;

	if (!o.seed)
		o.seed = (uint64_t)now_ns(CLOCK_REALTIME) ^ getpid();
	rng_state = mix64(o.seed);
	printf("# durable_torture: backend %s, durability %s, track %d, dir %s, logs %s, seed %" PRIu64 "\n",
	       o.backend == DQ_BACKEND_KERNEL ? "kernel" : "user",
	       o.durability == 2 ? "always" : o.durability == 1 ? "batch" : "mix",
	       o.track, o.dir, o.logdir, o.seed);
	fflush(stdout);
	mkdir(o.logdir, 0755);

	run = o.start_run;
	for (it = 0; it < o.iterations &&
	     now_ns(CLOCK_MONOTONIC) - t0 < o.seconds * NSEC; it++, run++) {
		int64_t delay;
		bool term = rnd_below(100) < (uint64_t)o.term_percent;

		/* A sixth of the kills land in the open (recovery) itself. */
		if (rnd_below(6) == 0)
			delay = rnd_below(30 * MSEC);
		else
			delay = 30 * MSEC + rnd_below(o.max_kill_ms * MSEC);
		snprintf(path, sizeof(path), "%s/run-%06ld.log", o.logdir, run);
		pid_t pid = spawn_child(run, false, false, path);

		if (!wait_child(pid, delay, &status)) {
			printf("# FAIL: run %ld ended by itself before its kill (status %#x)\n",
			       run, status);
			bad++;
			nearly++;
		} else {
			kill(pid, term ? SIGTERM : SIGKILL);
			if (wait_child(pid, 20 * NSEC, &status)) {
				printf("# FAIL: run %ld did not end within 20 s of SIG%s\n",
				       run, term ? "TERM" : "KILL");
				kill(pid, SIGKILL);
				waitpid(pid, &status, 0);
				bad++;
			} else if (term) {
				nterm++;
				if (!WIFEXITED(status) || WEXITSTATUS(status)) {
					printf("# FAIL: run %ld: clean close after SIGTERM ended with status %#x\n",
					       run, status);
					bad++;
				}
			} else {
				nkill++;
				if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGKILL) {
					printf("# FAIL: run %ld: status %#x, not killed\n", run, status);
					bad++;
				}
			}
			kill_ms_sum += delay / MSEC;
		}
		if (o.between) {
			int rc = system(o.between);

			if (rc) {
				printf("# FAIL: after run %ld: '%s' exited %#x\n", run, o.between, rc);
				bad++;
				it++;
				run++;
				break;
			}
		}
	}
	printf("# %ld iterations in %.1f s: %ld kill -9, %ld SIGTERM (clean close), %ld ended early; mean kill delay %.0f ms\n",
	       it, (now_ns(CLOCK_MONOTONIC) - t0) / 1e9, nkill, nterm, nearly,
	       it ? (double)kill_ms_sum / it : 0.0);

	/*
	 * The last producing run closes cleanly (SIGTERM): everything it
	 * committed is acknowledged, and much of it still held, so the
	 * final run's recovery must bring back acked messages (a recovery
	 * that loses the newest record shows here: a killed run's newest
	 * is mostly unacknowledged, and a message a recovery skipped is
	 * still live for the next one).
	 */
	snprintf(path, sizeof(path), "%s/run-%06ld.log", o.logdir, run);
	{
		pid_t cpid = spawn_child(run, false, false, path);
		int64_t delay = 1000 * MSEC + rnd_below(o.max_kill_ms * MSEC);

		if (!wait_child(cpid, delay, &status)) {
			printf("# FAIL: closing run %ld ended by itself (status %#x)\n", run, status);
			bad++;
		} else {
			kill(cpid, SIGTERM);
			if (wait_child(cpid, 20 * NSEC, &status)) {
				kill(cpid, SIGKILL);
				waitpid(cpid, &status, 0);
				printf("# FAIL: closing run %ld did not end after SIGTERM\n", run);
				bad++;
			} else if (!WIFEXITED(status) || WEXITSTATUS(status)) {
				printf("# FAIL: closing run %ld: status %#x\n", run, status);
				bad++;
			}
		}
		if (o.between && system(o.between)) {
			printf("# FAIL: after run %ld: '%s' failed\n", run, o.between);
			bad++;
		}
		run++;
	}

	/* The final run: no kill, drains everything, closes. */
	snprintf(path, sizeof(path), "%s/run-%06ld.log", o.logdir, run);
	pid_t pid = spawn_child(run, true, false, path);

	if (wait_child(pid, (o.final_timeout + 30) * NSEC, &status)) {
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
		printf("# FAIL: final run %ld did not end\n", run);
		bad++;
	} else if (!WIFEXITED(status) || WEXITSTATUS(status)) {
		printf("# FAIL: final run %ld: status %#x\n", run, status);
		bad++;
	}
	run++;
	snprintf(path, sizeof(path), "%s/run-%06ld.log", o.logdir, run);
	pid = spawn_child(run, false, true, path);
	if (wait_child(pid, 60 * NSEC, &status)) {
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
		printf("# FAIL: verify run %ld did not end\n", run);
		bad++;
	} else if (!WIFEXITED(status) || WEXITSTATUS(status)) {
		printf("# FAIL: verify run %ld: status %#x\n", run, status);
		bad++;
	}
	fflush(stdout);

	files = calloc(run - o.start_run + 1, sizeof(*files));
	for (long r = o.start_run; r <= run; r++) {
		snprintf(path, sizeof(path), "%s/run-%06ld.log", o.logdir, r);
		if (access(path, R_OK) == 0)
			files[nf++] = strdup(path);
	}
	printf("TAP version 13\n");
	return verify_logs(nf, files, true, bad);
}

/* --------------------------------------------------------------- main */

static long num(const char *s)
{
	char *end;
	long v = strtol(s, &end, 0);

	if (*s == 0 || *end)
		die("bad number '%s'", s);
	return v;
}

int main(int argc, char **argv)
{
	const char *role;
	int i;

	if (argc < 2)
		die("usage: durable_torture torture|child|verify [options] (see the source's header)");
	role = argv[1];
	setvbuf(stdout, NULL, _IOLBF, 0);
	for (i = 2; i < argc && argv[i][0] == '-' && argv[i][1] == '-'; i++) {
		const char *a = argv[i];
		const char *val = i + 1 < argc ? argv[i + 1] : NULL;

#define ARG(name) (!strcmp(a, name) && (val || (die("%s needs a value", name), 0)) && ++i)
		if (!strcmp(a, "--")) {
			i++;
			break;
		} else if (ARG("--dir")) {
			o.dir = val;
		} else if (ARG("--logdir")) {
			o.logdir = val;
		} else if (ARG("--log")) {
			o.log = val;
		} else if (ARG("--between")) {
			o.between = val;
		} else if (ARG("--backend")) {
			if (!strcmp(val, "user"))
				o.backend = DQ_BACKEND_USER;
			else if (!strcmp(val, "kernel"))
				o.backend = DQ_BACKEND_KERNEL;
			else
				die("--backend user|kernel");
		} else if (ARG("--durability")) {
			if (!strcmp(val, "batch"))
				o.durability = DQ_DURABLE_BATCH;
			else if (!strcmp(val, "always"))
				o.durability = DQ_DURABLE_ALWAYS;
			else if (!strcmp(val, "mix"))
				o.durability = 0;
			else
				die("--durability batch|always|mix");
		} else if (!strcmp(a, "--track")) {
			o.track = true;
		} else if (!strcmp(a, "--sync-log")) {
			o.sync_log = true;
		} else if (!strcmp(a, "--final")) {
			o.final = true;
		} else if (!strcmp(a, "--verify")) {
			o.verify = true;
		} else if (ARG("--seed")) {
			o.seed = strtoull(val, NULL, 0);
		} else if (ARG("--run")) {
			o.run = num(val);
		} else if (ARG("--start-run")) {
			o.start_run = num(val);
		} else if (ARG("--iterations")) {
			o.iterations = num(val);
		} else if (ARG("--seconds")) {
			o.seconds = num(val);
		} else if (ARG("--max-kill-ms")) {
			o.max_kill_ms = num(val);
		} else if (ARG("--term-percent")) {
			o.term_percent = num(val);
		} else if (ARG("--late-ms")) {
			o.late_ms = num(val);
		} else if (ARG("--batch-max")) {
			o.batch_max = num(val);
		} else if (ARG("--hold-max")) {
			o.hold_max = num(val);
		} else if (ARG("--long-permille")) {
			o.long_permille = num(val);
		} else if (ARG("--segment-mb")) {
			o.segment_mb = num(val);
		} else if (ARG("--max-mb")) {
			o.max_mb = num(val);
		} else if (ARG("--order-tol-us")) {
			o.order_tol_us = num(val);
		} else if (ARG("--floor-file")) {
			o.floor_file = val;
		} else if (ARG("--final-timeout")) {
			o.final_timeout = num(val);
		} else {
			die("unknown option %s", a);
		}
	}
	if (o.batch_max < 1 || o.batch_max > 64)
		die("--batch-max 1..64");
	if (!strcmp(role, "torture")) {
		if (!o.dir || !o.logdir)
			die("torture needs --dir and --logdir");
		return torture_main();
	}
	if (!strcmp(role, "child")) {
		if (!o.dir || !o.log || o.run <= 0)
			die("child needs --dir, --log and --run");
		if (!o.seed)
			o.seed = (uint64_t)now_ns(CLOCK_REALTIME);
		return child_main();
	}
	if (!strcmp(role, "verify")) {
		bool expect_final = false;

		if (i < argc && !strcmp(argv[i], "final")) {
			expect_final = true;
			i++;
		}
		if (i >= argc)
			die("verify needs log files");
		printf("TAP version 13\n");
		return verify_logs(argc - i, argv + i, expect_final, -1);
	}
	die("unknown role %s", role);
	return 2;
}
