// SPDX-License-Identifier: LGPL-2.1 OR MIT
/*
 * bench.c - the shared benchmark harness: workload, bookkeeping, metrics,
 * JSON.  See bench.h.
 *
 * Workloads (the same seed gives every system the same delay sequence):
 *
 *  throughput  n messages submitted as fast as the system takes them, each
 *              due a uniform delay in [dmin, dmax] after its submission.
 *              msgs/s = n / (last release - first submit).
 *  lateness    rate msgs/s for duration s, delays uniform in [dmin, dmax];
 *              the lateness histogram is the point.  The rate is the
 *              offered rate: a system that cannot take it (the producer
 *              falls more than max_lag_ms behind its schedule) is cut off
 *              there and marked cannot_offer (not a failure: the messages
 *              it took are still checked).
 *  capacity    release capacity: n messages submitted ahead of time, due
 *              uniformly within one second [T, T + 1 s), T = fill start +
 *              lead_s; how many are released within ontime_ms of their due
 *              time, how many before T + 1 s, and when the last one came
 *              out.  A fill that overruns T is reported (fill_overrun).
 *  pending     n messages due far ahead (far_s) are submitted ("fill"),
 *              bytes per held message are measured, then an idle window
 *              (idle_s) counts wake-ups and CPU with nothing due, then a
 *              burst of probe_n messages all due at one instant T measures
 *              the insert cost (per message, with n held) and the release
 *              cost (drain time and CPU per message from T on).
 *
 * Accounting: every message id has its due time and its state in one word
 * (rec_of[]); a release before its due time is "early", a second release of
 * an id is "dup" (from whichever thread), a payload whose header or tag does
 * not match, or whose due time is not the one the harness recorded, is
 * "corrupt".  Lateness is the consumer's clock minus the recorded due time,
 * the clock read once per delivered batch after the batch was reaped
 * (bench_deliver_batch()).  Counters and the histogram are per consumer
 * thread, summed when the run is judged.  A measured
 * message not released by the deadline (last due + grace) is "overdue" when
 * the peer shows it still holds it (peer.held(), after stop) and "lost"
 * otherwise.  Early, lost, dup, corrupt and consumer errors are correctness
 * violations: the run's verdict says so and the program exits with status 4.
 * Overdue messages are missed deadlines, reported as such.
 *
 * Memory: bytes per held message beyond the payload, from the growth of the
 * system's own memory only.  With --memcg DIR (run.sh puts the peer and its
 * server in a fresh cgroup v2 in the VM) it is the growth of DIR's
 * memory.current: everything the kernel charges to those processes (their
 * pages, and kernel objects allocated with __GFP_ACCOUNT: files, epoll
 * items, io_uring requests, dq.ko's arena and records).  Without it, it is
 * the growth of the RSS (smaps_rollup) of this process and the server, which
 * cannot see kernel objects: a system that keeps its per-message state there
 * (bench_state_in_kernel()) gets no figure.  The harness's own per-message
 * arrays are written before the baseline, so they are in neither reading
 * (harness_bytes: how much RSS that writing took, for the record).
 * Population rule, the same for every system: what setup() allocates or
 * populates up front (dq's pre-populated arena) is counted for the share of
 * the capacity that is held (pre = before setup, post = after it), and
 * everything populated later is counted in full: no system's population is
 * left outside the measured window.
 */
#include "bench.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <fcntl.h>
#include <time.h>
#include <unistd.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/utsname.h>

#define NS_PER_S 1000000000ULL
#define NS_PER_MS 1000000ULL
#define NS_PER_US 1000ULL

static struct bench_opts O;
const struct bench_opts *bench_o = &O;

/* ------------------------------------------------------------ time */

uint64_t bench_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * NS_PER_S + (uint64_t)ts.tv_nsec;
}

void bench_sleep_until(uint64_t t_ns)
{
	struct timespec ts = {
		.tv_sec = (time_t)(t_ns / NS_PER_S),
		.tv_nsec = (long)(t_ns % NS_PER_S),
	};
	int i;

	/* bounded: EINTR can only come from a signal */
	for (i = 0; i < 1000; i++)
		if (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) != EINTR)
			break;
}

/* ------------------------------------------------------------ logging */

static char notes[1024];
static pthread_mutex_t notes_mx = PTHREAD_MUTEX_INITIALIZER;

void bench_note(const char *fmt, ...)
{
	char buf[256];
	va_list ap;
	size_t l;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	pthread_mutex_lock(&notes_mx);
	l = strlen(notes);
	if (!strstr(notes, buf))
		snprintf(notes + l, sizeof(notes) - l, "%s%s", l ? "; " : "", buf);
	pthread_mutex_unlock(&notes_mx);
}

void bench_log(const char *fmt, ...)
{
	va_list ap;

	if (!O.verbose)
		return;
	fprintf(stderr, "[%s] ", peer.name);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

void bench_err(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "[%s] error: ", peer.name);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/* ------------------------------------------------------------ payload */

static uint64_t mix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ULL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

static uint64_t rng_state;

static uint64_t rng_next(void)
{
	rng_state += 0x9e3779b97f4a7c15ULL;
	return mix64(rng_state);
}

static uint64_t rng_delay(void)
{
	uint64_t span = O.dmax_ns - O.dmin_ns;

	return O.dmin_ns + (span ? rng_next() % (span + 1) : 0);
}

static uint64_t payload_tag(uint64_t id, uint64_t due)
{
	return mix64(id ^ (due * 0x2545f4914f6cdd1dULL));
}

void bench_fill(void *dst, uint64_t id, uint64_t due_ns, uint32_t len)
{
	struct bench_hdr h = { .id = id, .due_ns = due_ns };
	uint64_t tag = payload_tag(id, due_ns);
	unsigned char *p = dst;

	memcpy(p, &h, sizeof(h));
	/* a cheap, id-dependent filler: the payload is really written */
	memset(p + sizeof(h), 'a' + (int)(id % 26), len - sizeof(h) - sizeof(tag));
	memcpy(p + len - sizeof(tag), &tag, sizeof(tag));
}

/* ------------------------------------------------------------ histogram */

/*
 * Log-linear buckets (as in HdrHistogram): values below 2^SUB_BITS are
 * exact, above that each power of two is split in 2^SUB_BITS buckets, so
 * a bucket is at most 1/64 = 1.6% wide.  Values are ns, up to 2^MAX_EXP.
 */
#define H_SUB_BITS 6
#define H_SUB (1U << H_SUB_BITS)
#define H_MAX_EXP 44
#define H_BUCKETS ((H_MAX_EXP - H_SUB_BITS + 1) * H_SUB)

static unsigned int h_index(uint64_t v)
{
	unsigned int e, shift;

	if (v >= (1ULL << H_MAX_EXP))
		v = (1ULL << H_MAX_EXP) - 1;
	if (v < H_SUB)
		return (unsigned int)v;
	e = 63 - (unsigned int)__builtin_clzll(v);
	shift = e - H_SUB_BITS;
	return (shift + 1) * H_SUB + (unsigned int)((v >> shift) - H_SUB);
}

/* the largest value that falls in bucket @i */
static uint64_t h_upper(unsigned int i)
{
	unsigned int shift, sub;

	if (i < H_SUB)
		return i;
	shift = i / H_SUB - 1;
	sub = i % H_SUB;
	return (((uint64_t)H_SUB + sub) << shift) + ((1ULL << shift) - 1);
}

/* ------------------------------------------------------------ accounting */

/*
 * What the harness recorded about message @id: its due time and its state
 * in one 64-bit word (rec_of[id]), so that checking a release touches one
 * cache line of the harness's, not two (a due-time array and a state
 * array, read at random: ids come out in due order, not id order).
 * CLOCK_MONOTONIC due times stay far below 2^61 ns (73 years of uptime);
 * submit_one() refuses one that does not.
 *   0              never sent (or the system refused it)
 *   SENT | due     the system took it
 *   + DONE         released (a second release finds DONE: a dup)
 *   + HELD         shown by peer.held() after stop
 */
#define REC_SENT	(1ULL << 63)
#define REC_DONE	(1ULL << 62)
#define REC_HELD	(1ULL << 61)
#define REC_DUE_MASK	(REC_HELD - 1)

static uint64_t *rec_of;	/* one word per id, see REC_* */
static uint64_t n_ids;		/* ids allocated */
static uint64_t meas_lo, meas_hi; /* ids that are measured */

static uint64_t rec_due(uint64_t id)
{
	return __atomic_load_n(&rec_of[id], __ATOMIC_RELAXED) & REC_DUE_MASK;
}

/*
 * Per-consumer-thread tallies.  Each consumer thread (the harness thread
 * in poll mode; fifo-sleep's workers, redis-zset's pollers, ... in
 * threaded mode) writes only its own, with relaxed atomic stores: plain
 * moves, no locked instruction and no cache line shared with another
 * consumer, and yet a merge may read them while the consumers run (at the
 * deadline, before stop()).  merge_tallies() sums them into M.  The one
 * shared per-message step left is the record word's DONE bit: it is what
 * catches a message released twice by two different threads.
 */
struct tally {
	uint64_t delivered;	/* measured ids released (first release) */
	uint64_t early, early_max_ns, dup, corrupt;
	uint64_t late_sum_ns, late_max_ns, last_ns;
	uint64_t ontime, in_window;	/* capacity workload */
	uint64_t hist[H_BUCKETS];
	struct tally *next;	/* the registry (tally_mx) */
} __attribute__((aligned(64)));

/* single writer: a relaxed store, readable by a concurrent merge */
#define T_SET(t, f, v)	__atomic_store_n(&(t)->f, (v), __ATOMIC_RELAXED)
#define T_ADD(t, f, v)	T_SET(t, f, (t)->f + (v))
#define T_MAX(t, f, v)	do { if ((v) > (t)->f) T_SET(t, f, (v)); } while (0)
#define T_GET(t, f)	__atomic_load_n(&(t)->f, __ATOMIC_RELAXED)

/*
 * Tallies of the first TALLY_STATIC consumer threads are static and
 * written before any memory baseline (as the per-id records), so that a
 * consumer thread's first release allocates nothing inside a measured
 * window; more threads (fifo-sleep with workers=4096) get theirs from the
 * heap.
 */
#define TALLY_STATIC 64
static struct tally tally_static[TALLY_STATIC];
static unsigned int tally_used;
static struct tally *tally_head;
static pthread_mutex_t tally_mx = PTHREAD_MUTEX_INITIALIZER;
static __thread struct tally *my_tally;

static uint64_t c_errors;
static uint64_t c_overdue, c_held;	/* from peer.held(), after stop */
static int state_in_kernel;		/* bench_state_in_kernel() */
/* capacity: released within ontime_ns of the due time; before window_end */
static uint64_t ontime_ns, window_end_ns;
static volatile int stopping;
/* the sum of every thread's tally, as of the last merge_tallies() */
static struct tally M;

/*
 * Measured ids released so far, published once per delivered batch (one
 * atomic add per batch, not per message): what wait_all() and the
 * watchdog look at.  merge_tallies() gives the same figure from the
 * tallies once the batches are in.
 */
static uint64_t c_delivered_meas;

static pthread_mutex_t done_mx = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t done_cv;
static uint64_t done_target;	/* signal when c_delivered_meas reaches it */

int bench_stopping(void)
{
	return __atomic_load_n(&stopping, __ATOMIC_RELAXED);
}

void bench_error_count(void)
{
	__atomic_fetch_add(&c_errors, 1, __ATOMIC_RELAXED);
}

static __attribute__((noinline)) struct tally *tally_register(void)
{
	struct tally *t;

	pthread_mutex_lock(&tally_mx);
	t = tally_used < TALLY_STATIC ? &tally_static[tally_used++] :
					calloc(1, sizeof(*t));
	if (t) {
		t->next = tally_head;
		tally_head = t;
	}
	pthread_mutex_unlock(&tally_mx);
	if (!t) {
		bench_err("out of memory for a consumer thread's tally");
		abort();
	}
	my_tally = t;
	return t;
}

static inline struct tally *tally_self(void)
{
	struct tally *t = my_tally;

	return __builtin_expect(t != NULL, 1) ? t : tally_register();
}

/* M = the sum of every thread's tally (consumers may still be running) */
static void merge_tallies(void)
{
	struct tally *t;
	unsigned int i;

	memset(&M, 0, sizeof(M));
	pthread_mutex_lock(&tally_mx);
	for (t = tally_head; t; t = t->next) {
		uint64_t x;

		M.delivered += T_GET(t, delivered);
		M.early += T_GET(t, early);
		M.dup += T_GET(t, dup);
		M.corrupt += T_GET(t, corrupt);
		M.late_sum_ns += T_GET(t, late_sum_ns);
		M.ontime += T_GET(t, ontime);
		M.in_window += T_GET(t, in_window);
		if ((x = T_GET(t, early_max_ns)) > M.early_max_ns)
			M.early_max_ns = x;
		if ((x = T_GET(t, late_max_ns)) > M.late_max_ns)
			M.late_max_ns = x;
		if ((x = T_GET(t, last_ns)) > M.last_ns)
			M.last_ns = x;
		for (i = 0; i < H_BUCKETS; i++)
			M.hist[i] += T_GET(t, hist[i]);
	}
	pthread_mutex_unlock(&tally_mx);
}

/*
 * The release of message @id whose payload said @due_hdr, seen by the
 * consumer at @now; @check_due 0 when there was no payload (by id).
 * Returns 1 when it counts as a measured release.
 */
static inline int record(struct tally *t, uint64_t id, uint64_t due_hdr,
			 int check_due, uint64_t now)
{
	uint64_t rec = __atomic_load_n(&rec_of[id], __ATOMIC_ACQUIRE);
	uint64_t due = rec & REC_DUE_MASK;

	/* not taken by the system (a bogus id), or not the due time it was given */
	if (!(rec & REC_SENT) || (check_due && due != due_hdr)) {
		T_ADD(t, corrupt, 1);
		return 0;
	}
	/*
	 * Already released: seen in the load; two threads releasing it at
	 * the same time: the atomic bit set lets exactly one of them pass.
	 */
	if (__builtin_expect((rec & (REC_DONE | REC_HELD)) ||
			     (__atomic_fetch_or(&rec_of[id], REC_DONE,
						__ATOMIC_ACQ_REL) & REC_DONE), 0)) {
		T_ADD(t, dup, 1);
		if (T_GET(t, dup) <= 10)
			bench_err("duplicate: id %" PRIu64 " due %" PRIu64 " released again %.3f ms after its due time",
				  id, due, ((double)now - (double)due) / 1e6);
		return 0;
	}
	if (now < due) {
		T_ADD(t, early, 1);
		if (T_GET(t, early) <= 10)
			bench_err("early: id %" PRIu64 " released %.3f ms before its due time",
				  id, (double)(due - now) / 1e6);
		T_MAX(t, early_max_ns, due - now);
	}
	if (id < meas_lo || id >= meas_hi)
		return 0;
	if (now >= due) {
		uint64_t late = now - due;

		if (ontime_ns && late <= ontime_ns)
			T_ADD(t, ontime, 1);
		T_ADD(t, hist[h_index(late)], 1);
		T_ADD(t, late_sum_ns, late);
		T_MAX(t, late_max_ns, late);
	}
	if (window_end_ns && now < window_end_ns)
		T_ADD(t, in_window, 1);
	T_MAX(t, last_ns, now);
	T_ADD(t, delivered, 1);
	return 1;
}

/* @n more measured releases: publish them, wake wait_all() at the target */
static void publish(uint64_t n)
{
	uint64_t total, target;

	if (!n)
		return;
	total = __atomic_add_fetch(&c_delivered_meas, n, __ATOMIC_SEQ_CST);
	target = __atomic_load_n(&done_target, __ATOMIC_SEQ_CST);
	if (target && total >= target && total - n < target) {
		pthread_mutex_lock(&done_mx);
		pthread_cond_broadcast(&done_cv);
		pthread_mutex_unlock(&done_mx);
	}
}

/* payload @p of @len bytes: header and tag intact?  Its id and due time. */
static inline int payload_ok(const void *p, size_t len, struct bench_hdr *h)
{
	uint64_t tag;

	if (len != O.payload || len < BENCH_MIN_PAYLOAD)
		return 0;
	memcpy(h, p, sizeof(*h));
	memcpy(&tag, (const char *)p + len - sizeof(tag), sizeof(tag));
	return h->id < n_ids && tag == payload_tag(h->id, h->due_ns);
}

void bench_deliver_batch(const struct bench_msg *m, unsigned int n)
{
	struct tally *t;
	uint64_t now, meas = 0;
	unsigned int i;

	if (!n)
		return;
	/*
	 * One clock read for the whole batch, taken here, i.e. after the
	 * peer reaped every message of it: each was released to the
	 * consumer at or before this instant, so the lateness below is never
	 * understated.  It is not overstated by the harness either: the
	 * checks of the batch come after the read.  (Reading it per message
	 * would charge message k the harness's checks of messages 0..k-1.)
	 */
	now = bench_now();
	t = tally_self();
	for (i = 0; i < n; i++) {
		struct bench_hdr h;

		if (!payload_ok(m[i].p, m[i].len, &h)) {
			T_ADD(t, corrupt, 1);
			continue;
		}
		meas += (uint64_t)record(t, h.id, h.due_ns, 1, now);
	}
	publish(meas);
}

void bench_deliver(const void *p, size_t len)
{
	struct bench_msg m = { p, len };

	bench_deliver_batch(&m, 1);
}

void bench_deliver_id(uint64_t id)
{
	struct tally *t = tally_self();
	uint64_t now = bench_now();

	if (id >= n_ids) {
		T_ADD(t, corrupt, 1);
		return;
	}
	publish((uint64_t)record(t, id, 0, 0, now));
}

/* after stop(), from peer.held() on the harness thread */
void bench_held(const void *p, size_t len)
{
	struct tally *t = tally_self();
	struct bench_hdr h;
	uint64_t rec;

	if (!payload_ok(p, len, &h)) {
		T_ADD(t, corrupt, 1);
		return;
	}
	rec = __atomic_fetch_or(&rec_of[h.id], REC_HELD, __ATOMIC_ACQ_REL);
	if (!(rec & REC_SENT) || (rec & REC_DUE_MASK) != h.due_ns) {
		T_ADD(t, corrupt, 1);
		return;
	}
	c_held++;
	if (rec & (REC_DONE | REC_HELD)) {
		/* released (or shown) already, and still held: a second copy */
		T_ADD(t, dup, 1);
		return;
	}
	if (h.id >= meas_lo && h.id < meas_hi)
		c_overdue++;
}

void bench_state_in_kernel(void)
{
	state_in_kernel = 1;
}

/* ------------------------------------------------------------ /proc */

static uint64_t read_u64_file_field(const char *path, int field)
{
	char buf[256];
	uint64_t v[8] = { 0 };
	FILE *f = fopen(path, "re");

	if (!f)
		return 0;
	if (!fgets(buf, sizeof(buf), f))
		buf[0] = 0;
	fclose(f);
	sscanf(buf, "%" SCNu64 " %" SCNu64 " %" SCNu64, &v[0], &v[1], &v[2]);
	return v[field];
}

struct task_sum {
	uint64_t run_ns;	/* schedstat field 1: time on CPU */
	uint64_t pcount;	/* schedstat field 3: times scheduled in */
	int ok;
};

/* sum /proc/PID/task/.../schedstat over every thread, skipping @skip_tid */
static struct task_sum task_sum(pid_t pid, pid_t skip_tid, uint64_t *skip_pcount)
{
	struct task_sum s = { 0, 0, 0 };
	char path[96];
	DIR *d;
	struct dirent *de;
	int count = 0;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	d = opendir(path);
	if (!d)
		return s;
	while ((de = readdir(d)) && count < 100000) {
		char p2[320];
		pid_t tid;

		count++;
		if (de->d_name[0] == '.')
			continue;
		tid = (pid_t)atoi(de->d_name);
		snprintf(p2, sizeof(p2), "/proc/%d/task/%s/schedstat", (int)pid,
			 de->d_name);
		if (tid == skip_tid) {
			if (skip_pcount)
				*skip_pcount = read_u64_file_field(p2, 2);
			continue;
		}
		s.run_ns += read_u64_file_field(p2, 0);
		s.pcount += read_u64_file_field(p2, 2);
		s.ok = 1;
	}
	closedir(d);
	return s;
}

/*
 * One "key value" field of a /proc or cgroup file ("Rss:   1628 kB" in
 * smaps_rollup, "anon 12345" in memory.stat), times @unit; -1 when absent.
 */
static int64_t file_field(const char *path, const char *key, int64_t unit)
{
	char line[256], k[64];
	long long v;
	int64_t out = -1;
	int lines = 0;
	FILE *f = fopen(path, "re");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f) && lines++ < 1000)
		if (sscanf(line, "%63[^: ]%*[: ]%lld", k, &v) == 2 && !strcmp(k, key)) {
			out = (int64_t)v * unit;
			break;
		}
	fclose(f);
	return out;
}

/* resident bytes of @pid: the page-table walk of smaps_rollup */
static int64_t smaps_rss_bytes(pid_t pid)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/smaps_rollup", (int)pid);
	return file_field(path, "Rss", 1024);
}

struct memcg_read {
	int64_t current;	/* memory.current: everything charged */
	int64_t anon, file, kernel, sock;	/* memory.stat */
	int ok;
};

static struct memcg_read read_memcg(void)
{
	struct memcg_read m = { 0, 0, 0, 0, 0, 0 };
	char path[512];
	long long v;
	FILE *f;

	if (!O.memcg)
		return m;
	snprintf(path, sizeof(path), "%s/memory.current", O.memcg);
	f = fopen(path, "re");
	if (!f)
		return m;
	m.ok = fscanf(f, "%lld", &v) == 1;
	fclose(f);
	if (!m.ok)
		return m;
	m.current = (int64_t)v;
	snprintf(path, sizeof(path), "%s/memory.stat", O.memcg);
	m.anon = file_field(path, "anon", 1);
	m.file = file_field(path, "file", 1);
	m.sock = file_field(path, "sock", 1);
	m.kernel = file_field(path, "kernel", 1);
	if (m.kernel < 0) {
		/* before "kernel" (5.18): its parts */
		static const char *const parts[] = { "slab", "kernel_stack",
						     "pagetables", "percpu" };
		size_t i;

		m.kernel = 0;
		for (i = 0; i < sizeof(parts) / sizeof(parts[0]); i++) {
			int64_t x = file_field(path, parts[i], 1);

			if (x > 0)
				m.kernel += x;
		}
	}
	return m;
}

/* busy jiffies of the whole machine (all CPUs), in ns */
static uint64_t sys_busy_ns(void)
{
	unsigned long long v[10] = { 0 };
	uint64_t total = 0;
	char line[512];
	FILE *f = fopen("/proc/stat", "re");
	int i;

	if (!f)
		return 0;
	if (fgets(line, sizeof(line), f))
		sscanf(line, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0],
		       &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7]);
	fclose(f);
	for (i = 0; i < 8; i++)
		if (i != 3 && i != 4) /* idle, iowait */
			total += v[i];
	return total * (NS_PER_S / (uint64_t)sysconf(_SC_CLK_TCK));
}

static pid_t main_tid;

struct snap {
	uint64_t t;
	uint64_t cpu_self_ns;
	uint64_t cpu_server_ns;
	uint64_t cpu_sys_ns;
	uint64_t wake_self;	/* scheduled-in count of our threads */
	uint64_t wake_main;	/* of the harness thread alone */
	uint64_t wake_server;
	uint64_t wake_extra;	/* peer's own count (kernel timers) */
	int extra_ok;
};

static struct snap take_snap(int with_wakeups)
{
	struct snap s;
	struct timespec cpu;
	struct task_sum ts;

	memset(&s, 0, sizeof(s));
	s.t = bench_now();
	/*
	 * Not getrusage(): it leaves out what the running thread used since
	 * its last tick, a lot for a busy event loop over a short phase.
	 */
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cpu);
	s.cpu_self_ns = (uint64_t)cpu.tv_sec * NS_PER_S + (uint64_t)cpu.tv_nsec;
	if (O.server_pid > 0) {
		ts = task_sum(O.server_pid, -1, NULL);
		s.cpu_server_ns = ts.run_ns;
		s.wake_server = ts.pcount;
	}
	s.cpu_sys_ns = sys_busy_ns();
	if (with_wakeups) {
		ts = task_sum(getpid(), main_tid, &s.wake_main);
		s.wake_self = ts.pcount;
		if (peer.extra_wakeups)
			s.extra_ok = peer.extra_wakeups(&s.wake_extra) == 0;
	}
	return s;
}

/* ------------------------------------------------------------ results */

struct result {
	double sent, delivered, early, lost, dup, corrupt, errors, overdue;
	double wall_s, msgs_per_s, submit_per_s, send_lag_max_ms;
	double cpu_self_s, cpu_server_s, cpu_us_per_msg, cpu_sys_us_per_msg;
	double late_p50_us, late_p90_us, late_p99_us, late_p999_us;
	double late_max_us, late_mean_us, early_max_us;
	double fill_ns_per_msg, fill_cpu_us_per_msg;
	double insert_ns_per_msg, insert_cpu_us_per_msg;
	double release_ns_per_msg, release_cpu_us_per_msg;
	double mem_bytes_per_msg, mem_err_bytes_per_msg;
	double mem_rss_bytes_per_msg, mem_memcg_bytes_per_msg;
	double rss_self_delta, rss_server_delta;
	double memcg_delta, memcg_anon_delta, memcg_file_delta;
	double memcg_kernel_delta, memcg_sock_delta;
	double idle_s, idle_wakeups_per_s, idle_cpu_us_per_s;
	double idle_sys_cpu_us_per_s, idle_extra_wakeups;
	double offered_rate, cannot_offer, submit_ns_per_msg, submit_cpu_us_per_msg;
	double lead_s, fill_overrun, cap_ontime, cap_in_second, cap_last_out_ms;
	double ontime_ms, harness_bytes;
};

static struct result R;
static char error_msg[256];
static const char *mem_method;	/* "memcg", "smaps" or NULL */

/*
 * The run's verdict: a correctness violation (early, lost, duplicated,
 * corrupt, consumer errors) wins over a failed run, which wins over ok.
 * Returns 2 for a violation, 1 for a failure, 0 for ok.
 */
static int verdict(char *buf, size_t len)
{
	static const struct {
		const char *what;
		size_t off;
	} v[] = {
		{ "early", offsetof(struct result, early) },
		{ "lost", offsetof(struct result, lost) },
		{ "dup", offsetof(struct result, dup) },
		{ "corrupt", offsetof(struct result, corrupt) },
		{ "consumer errors", offsetof(struct result, errors) },
	};
	size_t i, l = 0;
	int bad = 0;

	buf[0] = 0;
	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		double x = *(double *)((char *)&R + v[i].off);

		if (!isnan(x) && x > 0) {
			l += (size_t)snprintf(buf + l, len - l, "%s%s %.0f",
					      bad ? ", " : "violation: ", v[i].what, x);
			if (l >= len)
				l = len - 1;
			bad = 1;
		}
	}
	if (bad)
		return 2;
	if (error_msg[0]) {
		snprintf(buf, len, "failed: %.200s", error_msg);
		return 1;
	}
	if (!isnan(R.overdue) && R.overdue > 0)
		snprintf(buf, len, "ok; %.0f overdue (missed their deadlines, still held)",
			 R.overdue);
	else
		snprintf(buf, len, "ok");
	return 0;
}

#define RF(f) { #f, offsetof(struct result, f) }
static const struct {
	const char *name;
	size_t off;
} result_fields[] = {
	RF(sent), RF(delivered), RF(early), RF(lost), RF(dup), RF(corrupt),
	RF(errors), RF(overdue), RF(wall_s), RF(msgs_per_s), RF(submit_per_s),
	RF(send_lag_max_ms), RF(cpu_self_s), RF(cpu_server_s),
	RF(cpu_us_per_msg), RF(cpu_sys_us_per_msg), RF(late_p50_us),
	RF(late_p90_us), RF(late_p99_us), RF(late_p999_us), RF(late_max_us),
	RF(late_mean_us), RF(early_max_us), RF(fill_ns_per_msg),
	RF(fill_cpu_us_per_msg), RF(insert_ns_per_msg),
	RF(insert_cpu_us_per_msg), RF(release_ns_per_msg),
	RF(release_cpu_us_per_msg), RF(mem_bytes_per_msg),
	RF(mem_err_bytes_per_msg), RF(mem_rss_bytes_per_msg),
	RF(mem_memcg_bytes_per_msg), RF(rss_self_delta), RF(rss_server_delta),
	RF(memcg_delta), RF(memcg_anon_delta), RF(memcg_file_delta),
	RF(memcg_kernel_delta), RF(memcg_sock_delta), RF(idle_s), RF(idle_wakeups_per_s),
	RF(idle_cpu_us_per_s), RF(idle_sys_cpu_us_per_s),
	RF(idle_extra_wakeups), RF(offered_rate), RF(cannot_offer),
	RF(submit_ns_per_msg), RF(submit_cpu_us_per_msg), RF(lead_s),
	RF(fill_overrun), RF(cap_ontime), RF(cap_in_second), RF(cap_last_out_ms),
	RF(ontime_ms), RF(harness_bytes),
};

static void result_init(void)
{
	size_t i;

	for (i = 0; i < sizeof(result_fields) / sizeof(result_fields[0]); i++)
		*(double *)((char *)&R + result_fields[i].off) = NAN;
}

struct jbuf {
	char *p;
	size_t len, cap;
};

static void jb_add(struct jbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void jb_add(struct jbuf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
	va_end(ap);
	if (n > 0)
		b->len += (size_t)n < b->cap - b->len ? (size_t)n : b->cap - b->len - 1;
}

static void jb_str(struct jbuf *b, const char *key, const char *v)
{
	const char *s;

	jb_add(b, "\"%s\":", key);
	if (!v) {
		jb_add(b, "null,");
		return;
	}
	jb_add(b, "\"");
	for (s = v; *s; s++) {
		if (*s == '"' || *s == '\\')
			jb_add(b, "\\%c", *s);
		else if ((unsigned char)*s < 0x20)
			jb_add(b, " ");
		else
			jb_add(b, "%c", *s);
	}
	jb_add(b, "\",");
}

static void jb_num(struct jbuf *b, const char *key, double v)
{
	if (isnan(v) || isinf(v))
		jb_add(b, "\"%s\":null,", key);
	else if (v == floor(v) && fabs(v) < 1e15)
		jb_add(b, "\"%s\":%.0f,", key, v);
	else
		jb_add(b, "\"%s\":%.6g,", key, v);
}

static char hostname[128], kernel_rel[128];
static int run_rep = 1;	/* --rep: which repetition of this run (run.sh) */

static void emit_json(void)
{
	char buf[8192];
	struct jbuf b = { buf, 0, sizeof(buf) };
	const char *variant = peer.describe ? peer.describe() : NULL;
	char label[256];
	size_t i;
	int fd;

	if (O.variant && *O.variant)
		snprintf(label, sizeof(label), "%s", O.variant);
	else if (variant && *variant)
		snprintf(label, sizeof(label), "%s %s", peer.name, variant);
	else
		snprintf(label, sizeof(label), "%s", peer.name);

	jb_add(&b, "{");
	jb_str(&b, "system", peer.name);
	jb_str(&b, "label", label);
	jb_str(&b, "variant", variant ? variant : "");
	jb_str(&b, "workload", O.workload_name);
	jb_str(&b, "env", O.env);
	jb_str(&b, "host", hostname);
	jb_str(&b, "kernel", kernel_rel);
	jb_num(&b, "stress", O.stress);
	jb_num(&b, "rep", run_rep);
	jb_num(&b, "seed", (double)O.seed);
	jb_num(&b, "n", O.workload == WL_LATENESS ? (double)n_ids : (double)O.n);
	jb_num(&b, "probe_n", O.workload == WL_PENDING ? (double)O.probe_n : NAN);
	jb_num(&b, "rate", O.workload == WL_LATENESS ? (double)O.rate : NAN);
	jb_num(&b, "duration_s", O.workload == WL_LATENESS ? O.duration_s : NAN);
	jb_num(&b, "payload", O.payload);
	jb_num(&b, "dmin_ms", (double)O.dmin_ns / 1e6);
	jb_num(&b, "dmax_ms", (double)O.dmax_ns / 1e6);
	jb_num(&b, "far_s", O.workload == WL_PENDING ? O.far_s : NAN);
	jb_num(&b, "grace_s", O.grace_s);
	jb_num(&b, "ncpu", (double)sysconf(_SC_NPROCESSORS_ONLN));
	for (i = 0; i < sizeof(result_fields) / sizeof(result_fields[0]); i++)
		jb_num(&b, result_fields[i].name,
		       *(double *)((char *)&R + result_fields[i].off));
	jb_str(&b, "mem_method", mem_method);
	{
		char vd[256];
		int bad = verdict(vd, sizeof(vd));

		jb_add(&b, "\"violation\":%s,", bad == 2 ? "true" : "false");
		jb_str(&b, "verdict", vd);
	}
	jb_add(&b, "\"ok\":%s,", error_msg[0] ? "false" : "true");
	jb_str(&b, "error", error_msg[0] ? error_msg : NULL);
	pthread_mutex_lock(&notes_mx);
	jb_str(&b, "notes", notes);
	pthread_mutex_unlock(&notes_mx);
	b.len--; /* the last comma */
	jb_add(&b, "}\n");

	if (!O.json_path) {
		fputs(buf, stdout);
		fflush(stdout);
		return;
	}
	fd = open(O.json_path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0 || write(fd, buf, b.len) != (ssize_t)b.len)
		bench_err("cannot append to %s: %s", O.json_path, strerror(errno));
	if (fd >= 0)
		close(fd);
}

static void fill_lateness(void)
{
	uint64_t total = 0, cum = 0, want[4];
	double q[4] = { 0.50, 0.90, 0.99, 0.999 };
	double *out[4] = { &R.late_p50_us, &R.late_p90_us, &R.late_p99_us,
			   &R.late_p999_us };
	unsigned int i, k = 0;
	FILE *cdf = NULL;

	for (i = 0; i < H_BUCKETS; i++)
		total += M.hist[i];
	if (!total)
		return;
	for (i = 0; i < 4; i++) {
		want[i] = (uint64_t)ceil(q[i] * (double)total);
		if (!want[i])
			want[i] = 1;
	}
	if (O.cdf_path) {
		cdf = fopen(O.cdf_path, "we");
		if (cdf)
			fprintf(cdf, "# lateness_us cumulative_fraction (%s %s)\n",
				peer.name, O.workload_name);
	}
	for (i = 0; i < H_BUCKETS; i++) {
		uint64_t up;

		if (!M.hist[i])
			continue;
		cum += M.hist[i];
		up = h_upper(i);
		if (up > M.late_max_ns)
			up = M.late_max_ns;
		while (k < 4 && cum >= want[k])
			*out[k++] = (double)up / 1e3;
		if (cdf)
			fprintf(cdf, "%.3f %.6f\n", (double)up / 1e3,
				(double)cum / (double)total);
	}
	if (cdf)
		fclose(cdf);
	R.late_max_us = (double)M.late_max_ns / 1e3;
	R.late_mean_us = (double)M.late_sum_ns / (double)total / 1e3;
}

/* write every page of [p, p + len) (volatile: the stores stay) */
static void prefault(void *p, size_t len)
{
	volatile unsigned char *c = p;
	size_t off, pg = (size_t)sysconf(_SC_PAGESIZE);

	for (off = 0; off < len; off += pg)
		c[off] = 0;
	if (len)
		c[len - 1] = 0;
}

/* ------------------------------------------------------------ watchdog */

static void *watchdog(void *arg)
{
	uint64_t deadline = *(uint64_t *)arg;

	bench_sleep_until(deadline);
	snprintf(error_msg, sizeof(error_msg), "watchdog: run exceeded %.0f s",
		 O.timeout_s);
	bench_err("%s", error_msg);
	R.delivered = (double)__atomic_load_n(&c_delivered_meas, __ATOMIC_RELAXED);
	emit_json();
	_exit(3);
	return NULL;
}

/* ------------------------------------------------------------ driving */

static int poll_mode;	/* the harness thread is the consumer (peer.poll) */

static int submit_one(uint64_t id, uint64_t delay_or_due, int absolute,
		      uint64_t give_up)
{
	int tries, rc = 0;

	for (tries = 0; tries < 10000000; tries++) {
		uint64_t now = bench_now();
		uint64_t due = absolute ? delay_or_due : now + delay_or_due;

		if (due & ~REC_DUE_MASK) {
			rc = -EOVERFLOW;	/* cannot be recorded */
			break;
		}
		/* before the system has it: a consumer may release it at once */
		__atomic_store_n(&rec_of[id], due | REC_SENT, __ATOMIC_RELEASE);
		rc = peer.submit(id, due);
		if (rc != -EAGAIN)
			break;
		__atomic_store_n(&rec_of[id], 0, __ATOMIC_RELEASE);
		if (now > give_up)
			break;
		if (peer.flush && (rc = peer.flush()) < 0)
			break;
		if (poll_mode)
			peer.poll(now + 200 * NS_PER_US);
		else
			bench_sleep_until(now + 200 * NS_PER_US);
		rc = -EAGAIN;
	}
	if (rc < 0)
		__atomic_store_n(&rec_of[id], 0, __ATOMIC_RELEASE);
	return rc;
}

static int do_flush(void)
{
	return peer.flush ? peer.flush() : 0;
}

/* wait until every measured message is released, or @deadline */
static void wait_all(uint64_t target, uint64_t deadline)
{
	/* seq_cst, as publish(): one of the two sees the other's store */
	__atomic_store_n(&done_target, target, __ATOMIC_SEQ_CST);
	if (poll_mode) {
		int guard;

		for (guard = 0; guard < 100000000; guard++) {
			uint64_t now = bench_now();

			if (__atomic_load_n(&c_delivered_meas, __ATOMIC_SEQ_CST) >= target ||
			    now >= deadline)
				break;
			peer.poll(now + 100 * NS_PER_MS < deadline ?
					  now + 100 * NS_PER_MS : deadline);
		}
		return;
	}
	pthread_mutex_lock(&done_mx);
	while (__atomic_load_n(&c_delivered_meas, __ATOMIC_SEQ_CST) < target) {
		struct timespec ts = {
			.tv_sec = (time_t)(deadline / NS_PER_S),
			.tv_nsec = (long)(deadline % NS_PER_S),
		};
		if (pthread_cond_timedwait(&done_cv, &done_mx, &ts) == ETIMEDOUT)
			break;
	}
	pthread_mutex_unlock(&done_mx);
}

/* sleep (or poll) until @t */
static void idle_until(uint64_t t)
{
	int guard;

	if (!poll_mode) {
		bench_sleep_until(t);
		return;
	}
	for (guard = 0; guard < 10000000; guard++) {
		uint64_t now = bench_now();

		if (now >= t)
			break;
		peer.poll(t);
	}
}

static void set_error(const char *what, int rc)
{
	if (!error_msg[0])
		snprintf(error_msg, sizeof(error_msg), "%s: %s", what, strerror(-rc));
	bench_err("%s: %s", what, strerror(-rc));
}

static double cpu_delta_ns(const struct snap *a, const struct snap *b)
{
	return (double)(b->cpu_self_ns - a->cpu_self_ns) +
	       (double)(b->cpu_server_ns - a->cpu_server_ns);
}

static uint64_t sent_meas_total;

/* counts at the deadline; again after stop() and held() (overdue) */
static void finish_counts(uint64_t sent_meas)
{
	uint64_t d, gone;

	merge_tallies();
	d = M.delivered;
	gone = d + c_overdue;

	sent_meas_total = sent_meas;
	R.sent = (double)sent_meas;
	R.delivered = (double)d;
	R.overdue = (double)c_overdue;
	R.lost = (double)(sent_meas > gone ? sent_meas - gone : 0);
	R.early = (double)M.early;
	R.early_max_us = M.early ? (double)M.early_max_ns / 1e3 : 0;
	R.dup = (double)M.dup;
	R.corrupt = (double)M.corrupt;
	R.errors = (double)c_errors;
}

static void run_throughput(void)
{
	uint64_t i, sent = 0, max_due = 0, give_up;
	struct snap s0, si, s1;
	uint64_t t_ins;
	int rc = 0;

	meas_lo = 0;
	meas_hi = O.n;
	s0 = take_snap(0);
	give_up = s0.t + (uint64_t)(O.timeout_s * 0.6 * 1e9);
	for (i = 0; i < O.n; i++) {
		rc = submit_one(i, rng_delay(), 0, give_up);
		if (rc < 0)
			break;
		sent++;
		if (rec_due(i) > max_due)
			max_due = rec_due(i);
		if ((i + 1) % O.batch == 0) {
			if ((rc = do_flush()) < 0)
				break;
			if (poll_mode)
				peer.poll(0);
		}
	}
	if (rc >= 0)
		rc = do_flush();
	if (rc < 0)
		set_error(rc == -EAGAIN ? "submit (full until give-up time)" : "submit", rc);
	si = take_snap(0);
	t_ins = si.t;
	wait_all(sent, max_due + (uint64_t)(O.grace_s * 1e9));
	s1 = take_snap(0);
	finish_counts(sent);
	/*
	 * The submit phase and the release phase apart: with delays of 0 (as
	 * run.sh runs it) msgs/s is the rate messages go through, not the
	 * delay window; with delays, the release phase includes the wait.
	 */
	if (sent) {
		R.submit_ns_per_msg = (double)(t_ins - s0.t) / (double)sent;
		R.submit_cpu_us_per_msg = cpu_delta_ns(&s0, &si) / 1e3 / (double)sent;
		R.release_cpu_us_per_msg = cpu_delta_ns(&si, &s1) / 1e3 / (double)sent;
	}
	R.wall_s = (double)(M.last_ns > s0.t ? M.last_ns - s0.t : s1.t - s0.t) / 1e9;
	if (R.lost > 0)
		R.wall_s = (double)(s1.t - s0.t) / 1e9;
	R.msgs_per_s = R.delivered / R.wall_s;
	R.submit_per_s = (double)sent / ((double)(t_ins - s0.t) / 1e9);
	R.cpu_self_s = (double)(s1.cpu_self_ns - s0.cpu_self_ns) / 1e9;
	R.cpu_server_s = (double)(s1.cpu_server_ns - s0.cpu_server_ns) / 1e9;
	if (sent) {
		R.cpu_us_per_msg = cpu_delta_ns(&s0, &s1) / 1e3 / (double)sent;
		R.cpu_sys_us_per_msg =
			(double)(s1.cpu_sys_ns - s0.cpu_sys_ns) / 1e3 / (double)sent;
	}
}

static void run_lateness(void)
{
	uint64_t n = (uint64_t)((double)O.rate * O.duration_s);
	uint64_t i = 0, sent = 0, max_due = 0, start, give_up, lag_max = 0;
	uint64_t tick = (uint64_t)O.tick_us * NS_PER_US;
	uint64_t max_lag = (uint64_t)(O.max_lag_ms * 1e6), t_end;
	struct snap s0, s1;
	int rc = 0, guard;

	R.offered_rate = (double)O.rate;
	R.cannot_offer = 0;
	meas_lo = 0;
	meas_hi = n;
	s0 = take_snap(0);
	start = s0.t + 10 * NS_PER_MS;
	give_up = start + (uint64_t)((O.duration_s * 2 + 5) * 1e9);
	for (guard = 0; i < n && guard < 100000000; guard++) {
		uint64_t now = bench_now();
		uint64_t should, next;

		if (now > give_up) {
			/* still sending long after the schedule ended */
			R.cannot_offer = 1;
			bench_note("cannot offer %" PRIu64 " msg/s: still sending %.1f s after the schedule ended; stopped after %" PRIu64 " of %" PRIu64 " messages",
				   O.rate, (double)(now - start) / 1e9 - O.duration_s, sent, n);
			break;
		}
		should = now < start ? 0 :
			(uint64_t)((double)(now - start) * (double)O.rate / 1e9) + 1;
		if (should > n)
			should = n;
		if (i < should) {
			uint64_t sched = start + i * NS_PER_S / O.rate;

			if (now > sched && now - sched > lag_max)
				lag_max = now - sched;
			if (lag_max > max_lag) {
				/* it cannot take the offered rate: stop offering */
				R.cannot_offer = 1;
				bench_note("cannot offer %" PRIu64 " msg/s: %.0f ms behind schedule after %" PRIu64 " of %" PRIu64 " messages; stopped sending",
					   O.rate, (double)lag_max / 1e6, sent, n);
				break;
			}
			for (; i < should; i++) {
				if (i % O.batch == 0) {
					/* behind the schedule within a long catch-up? */
					uint64_t t = bench_now(), due_i = start + i * NS_PER_S / O.rate;

					if (t > due_i && t - due_i > lag_max)
						lag_max = t - due_i;
					if (lag_max > max_lag)
						break;
				}
				rc = submit_one(i, rng_delay(), 0, give_up);
				if (rc < 0)
					break;
				sent++;
				if (rec_due(i) > max_due)
					max_due = rec_due(i);
				if ((i + 1) % O.batch == 0 && (rc = do_flush()) < 0)
					break;
			}
			if (rc < 0 || (rc = do_flush()) < 0)
				break;
			if (lag_max > max_lag) {
				R.cannot_offer = 1;
				bench_note("cannot offer %" PRIu64 " msg/s: %.0f ms behind schedule after %" PRIu64 " of %" PRIu64 " messages; stopped sending",
					   O.rate, (double)lag_max / 1e6, sent, n);
				break;
			}
			if (poll_mode)
				peer.poll(0);
			continue;
		}
		next = start + i * NS_PER_S / O.rate;
		if (next < now + tick)
			next = now + tick;
		if (poll_mode)
			idle_until(next);
		else
			bench_sleep_until(next);
	}
	if (rc < 0)
		set_error("submit", rc);
	t_end = bench_now();
	wait_all(sent, max_due + (uint64_t)(O.grace_s * 1e9));
	s1 = take_snap(0);
	/* what was not sent is not measured (cannot_offer) */
	meas_hi = sent;
	finish_counts(sent);
	R.wall_s = (double)(s1.t - s0.t) / 1e9;
	R.msgs_per_s = R.delivered / R.wall_s;
	/* the rate actually achieved, over the time spent sending */
	R.submit_per_s = t_end > start ? (double)sent / ((double)(t_end - start) / 1e9) :
					 (double)sent / O.duration_s;
	R.send_lag_max_ms = (double)lag_max / 1e6;
	R.cpu_self_s = (double)(s1.cpu_self_ns - s0.cpu_self_ns) / 1e9;
	R.cpu_server_s = (double)(s1.cpu_server_ns - s0.cpu_server_ns) / 1e9;
	if (sent) {
		R.cpu_us_per_msg = cpu_delta_ns(&s0, &s1) / 1e3 / (double)sent;
		R.cpu_sys_us_per_msg =
			(double)(s1.cpu_sys_ns - s0.cpu_sys_ns) / 1e3 / (double)sent;
	}
}

/*
 * Memory: "pre" is taken before the peer's setup, "post" once it is set up
 * and started.  What setup allocated up front (an arena sized for the
 * capacity, say) is a cost of every message it can hold: the share of the
 * messages actually held is added to what filling them took.
 */
struct memsnap {
	int64_t rss_self, rss_srv;
	struct memcg_read cg;
};

static struct memsnap mem_pre, mem_post;
static uint64_t run_capacity;

static struct memsnap take_memsnap(void)
{
	struct memsnap m;

	m.rss_self = smaps_rss_bytes(getpid());
	m.rss_srv = O.server_pid > 0 ? smaps_rss_bytes(O.server_pid) : 0;
	m.cg = read_memcg();
	return m;
}

/*
 * Bytes per held message beyond the payload from the memory the system
 * grew by (@delta for @n messages), or NaN with a note when the reading
 * cannot be one (below the payload: the method missed memory or the noise
 * exceeds the signal).  Never a negative figure.
 */
static double beyond_payload(double delta, uint64_t n, const char *what)
{
	double b = delta / (double)n - O.payload;

	if (isnan(b))
		return NAN;
	if (b < 0) {
		bench_note("%s: %.0f B per held message is below the %u B payload: no figure",
			   what, delta / (double)n, O.payload);
		return NAN;
	}
	return b;
}

static void run_pending(void)
{
	uint64_t i, sent_far = 0, sent_probe = 0, give_up, far, t_due, margin;
	struct memsnap m1;
	struct snap f0, f1, w0, w1, p0, p1, r0, r1;
	int rc = 0;

	meas_lo = O.n;
	meas_hi = O.n + O.probe_n;
	far = (uint64_t)(O.far_s * 1e9);

	/* baseline memory, everything set up and started */
	idle_until(bench_now() + 300 * NS_PER_MS);
	mem_post = take_memsnap();

	/* fill: n messages due between far and far + 60 s */
	f0 = take_snap(0);
	give_up = f0.t + (uint64_t)(O.timeout_s * 0.5 * 1e9);
	for (i = 0; i < O.n; i++) {
		rc = submit_one(i, f0.t + far + rng_next() % (60 * NS_PER_S), 1,
				give_up);
		if (rc < 0)
			break;
		sent_far++;
		if ((i + 1) % O.batch == 0) {
			if ((rc = do_flush()) < 0)
				break;
			if (poll_mode)
				peer.poll(0);
		}
	}
	if (rc >= 0)
		rc = do_flush();
	f1 = take_snap(0);
	if (rc < 0) {
		set_error("fill", rc);
		bench_note("fill stopped after %" PRIu64 " of %" PRIu64, sent_far, O.n);
	}
	if (sent_far) {
		R.fill_ns_per_msg = (double)(f1.t - f0.t) / (double)sent_far;
		R.fill_cpu_us_per_msg = cpu_delta_ns(&f0, &f1) / 1e3 / (double)sent_far;
	}

	/* memory held per message, once things settled */
	idle_until(bench_now() + 500 * NS_PER_MS);
	m1 = take_memsnap();
	if (sent_far) {
		/* the held messages' share of what setup allocated */
		double share = run_capacity ? (double)sent_far / (double)run_capacity : 1;
		int cg = mem_pre.cg.ok && mem_post.cg.ok && m1.cg.ok;

		if (share > 1)
			share = 1;
#define MEMD(field) ((double)m1.field - (double)mem_post.field + \
		     share * ((double)mem_post.field - (double)mem_pre.field))
		R.rss_self_delta = MEMD(rss_self);
		R.rss_server_delta = O.server_pid > 0 ? MEMD(rss_srv) : NAN;
		if (cg) {
			R.memcg_delta = MEMD(cg.current);
			R.memcg_anon_delta = MEMD(cg.anon);
			R.memcg_file_delta = MEMD(cg.file);
			R.memcg_kernel_delta = MEMD(cg.kernel);
			R.memcg_sock_delta = MEMD(cg.sock);
		}
#undef MEMD
		if (!state_in_kernel)
			R.mem_rss_bytes_per_msg = beyond_payload(
				R.rss_self_delta + (O.server_pid > 0 ? R.rss_server_delta : 0),
				sent_far, "smaps");
		if (cg) {
			/*
			 * memory.current moves in per-CPU batches of 64 pages
			 * (MEMCG_CHARGE_BATCH): each reading is up to that
			 * much per CPU over the truth, so the difference is
			 * within +- one batch per CPU.
			 */
			R.mem_memcg_bytes_per_msg = beyond_payload(R.memcg_delta, sent_far,
								   "memcg");
			R.mem_err_bytes_per_msg = 64.0 * (double)sysconf(_SC_PAGESIZE) *
						  (double)sysconf(_SC_NPROCESSORS_ONLN) /
						  (double)sent_far;
			R.mem_bytes_per_msg = R.mem_memcg_bytes_per_msg;
			mem_method = "memcg";
		} else {
			R.mem_bytes_per_msg = R.mem_rss_bytes_per_msg;
			mem_method = "smaps";
			if (state_in_kernel)
				bench_note("per-message state in kernel objects that smaps cannot see: no bytes/msg without a memory cgroup");
		}
	}

	/* idle window: nothing is due */
	if (O.idle_s > 0) {
		w0 = take_snap(1);
		idle_until(w0.t + (uint64_t)(O.idle_s * 1e9));
		w1 = take_snap(1);
		R.idle_s = (double)(w1.t - w0.t) / 1e9;
		{
			double wake = (double)(w1.wake_self - w0.wake_self) +
				      (double)(w1.wake_server - w0.wake_server);

			/* the harness thread: its one wake-up ends the window */
			if (poll_mode && w1.wake_main > w0.wake_main)
				wake += (double)(w1.wake_main - w0.wake_main - 1);
			if (w0.extra_ok && w1.extra_ok) {
				R.idle_extra_wakeups = (double)(w1.wake_extra - w0.wake_extra);
				wake += R.idle_extra_wakeups;
			}
			R.idle_wakeups_per_s = wake / R.idle_s;
		}
		R.idle_cpu_us_per_s = cpu_delta_ns(&w0, &w1) / 1e3 / R.idle_s;
		R.idle_sys_cpu_us_per_s =
			(double)(w1.cpu_sys_ns - w0.cpu_sys_ns) / 1e3 / R.idle_s;
	}

	/* probe burst: probe_n messages all due at T */
	margin = R.fill_ns_per_msg > 0 ?
			 (uint64_t)(3 * R.fill_ns_per_msg * (double)O.probe_n) : 0;
	if (margin < 200 * NS_PER_MS)
		margin = 200 * NS_PER_MS;
	if (margin > 20 * NS_PER_S)
		margin = 20 * NS_PER_S;
	p0 = take_snap(0);
	t_due = p0.t + margin;
	give_up = t_due + 10 * NS_PER_S;
	rc = 0;
	for (i = 0; i < O.probe_n && sent_far == O.n; i++) {
		rc = submit_one(O.n + i, t_due, 1, give_up);
		if (rc < 0)
			break;
		sent_probe++;
		if ((i + 1) % O.batch == 0) {
			if ((rc = do_flush()) < 0)
				break;
			if (poll_mode)
				peer.poll(0);
		}
	}
	if (rc >= 0)
		rc = do_flush();
	p1 = take_snap(0);
	if (rc < 0)
		set_error("probe", rc);
	if (sent_probe) {
		R.insert_ns_per_msg = (double)(p1.t - p0.t) / (double)sent_probe;
		R.insert_cpu_us_per_msg = cpu_delta_ns(&p0, &p1) / 1e3 / (double)sent_probe;
	}
	if (p1.t > t_due)
		bench_note("probe insert overran the release instant by %.0f ms",
			   (double)(p1.t - t_due) / 1e6);
	/* the release phase starts just before T (poll-mode peers release
	 * from inside idle_until()) */
	idle_until(t_due - NS_PER_MS);
	r0 = take_snap(0);
	wait_all(sent_probe, t_due + (uint64_t)(O.grace_s * 1e9));
	r1 = take_snap(0);
	finish_counts(sent_probe);
	if (sent_probe) {
		uint64_t from = t_due > p1.t ? t_due : p1.t;
		uint64_t to = M.last_ns;

		if (R.lost > 0)
			bench_note("%.0f of %" PRIu64 " probes not released within %.0f s of their due time",
				   R.lost, sent_probe, O.grace_s);
		else
			R.release_ns_per_msg = to > from ?
				(double)(to - from) / (double)sent_probe : 0;
		R.release_cpu_us_per_msg = cpu_delta_ns(&r0, &r1) / 1e3 / (double)sent_probe;
		R.cpu_us_per_msg = (cpu_delta_ns(&p0, &p1) + cpu_delta_ns(&r0, &r1)) /
				   1e3 / (double)sent_probe;
		R.cpu_sys_us_per_msg = (double)(p1.cpu_sys_ns - p0.cpu_sys_ns +
						r1.cpu_sys_ns - r0.cpu_sys_ns) /
				       1e3 / (double)sent_probe;
		R.msgs_per_s = R.release_ns_per_msg > 0 ? 1e9 / R.release_ns_per_msg : NAN;
	}
	R.cpu_self_s = (double)(r1.cpu_self_ns - f0.cpu_self_ns) / 1e9;
	R.cpu_server_s = (double)(r1.cpu_server_ns - f0.cpu_server_ns) / 1e9;
	R.wall_s = (double)(r1.t - f0.t) / 1e9;
}

/*
 * Release capacity: n messages submitted ahead of time, all due within the
 * same second [T, T + 1 s), T = fill start + lead_s, due times uniform in
 * it (from the seed).  How many come out within ontime_ms of their due
 * time, how many before T + 1 s, and when the last one came out.
 */
static void run_release_capacity(void)
{
	uint64_t i, sent = 0, give_up, t0, T, end;
	struct snap f0, f1, r0, r1;
	int rc = 0;

	meas_lo = 0;
	meas_hi = O.n;
	R.lead_s = O.lead_s;
	R.ontime_ms = O.ontime_ms;
	R.fill_overrun = 0;
	f0 = take_snap(0);
	t0 = f0.t;
	T = t0 + (uint64_t)(O.lead_s * 1e9);
	end = T + NS_PER_S;
	ontime_ns = (uint64_t)(O.ontime_ms * 1e6);
	window_end_ns = end;
	give_up = T;
	for (i = 0; i < O.n; i++) {
		rc = submit_one(i, T + rng_next() % NS_PER_S, 1, give_up);
		if (rc < 0)
			break;
		sent++;
		if ((i + 1) % O.batch == 0) {
			if ((rc = do_flush()) < 0)
				break;
			if (poll_mode)
				peer.poll(0);
		}
	}
	if (rc >= 0)
		rc = do_flush();
	f1 = take_snap(0);
	if (rc < 0)
		set_error("fill", rc);
	if (sent) {
		R.fill_ns_per_msg = (double)(f1.t - f0.t) / (double)sent;
		R.fill_cpu_us_per_msg = cpu_delta_ns(&f0, &f1) / 1e3 / (double)sent;
	}
	if (f1.t > T) {
		/* the fill did not fit in the lead: the second was not offered */
		R.fill_overrun = 1;
		bench_note("fill of %" PRIu64 " took %.1f s, more than the %.1f s lead: the messages were not all in before their second began",
			   sent, (double)(f1.t - f0.t) / 1e9, O.lead_s);
	}
	idle_until(T > NS_PER_MS ? T - NS_PER_MS : T);
	r0 = take_snap(0);
	wait_all(sent, end + (uint64_t)(O.grace_s * 1e9));
	r1 = take_snap(0);
	finish_counts(sent);
	R.cap_ontime = (double)M.ontime;
	R.cap_in_second = (double)M.in_window;
	if (M.last_ns)
		R.cap_last_out_ms = ((double)M.last_ns - (double)end) / 1e6;
	if (sent) {
		R.release_cpu_us_per_msg = cpu_delta_ns(&r0, &r1) / 1e3 / (double)sent;
		R.cpu_us_per_msg = (cpu_delta_ns(&f0, &f1) + cpu_delta_ns(&r0, &r1)) / 1e3 /
				   (double)sent;
		R.cpu_sys_us_per_msg = (double)(f1.cpu_sys_ns - f0.cpu_sys_ns +
						r1.cpu_sys_ns - r0.cpu_sys_ns) /
				       1e3 / (double)sent;
	}
	R.cpu_self_s = (double)(r1.cpu_self_ns - f0.cpu_self_ns) / 1e9;
	R.cpu_server_s = (double)(r1.cpu_server_ns - f0.cpu_server_ns) / 1e9;
	R.wall_s = (double)(r1.t - f0.t) / 1e9;
}

/* ------------------------------------------------------------ options */

int bench_raise_nofile(uint64_t want)
{
	struct rlimit rl;
	uint64_t nr_open = read_u64_file_field("/proc/sys/fs/nr_open", 0);

	if (getrlimit(RLIMIT_NOFILE, &rl))
		return -errno;
	if (rl.rlim_cur >= want)
		return 0;
	if (nr_open && want > nr_open)
		want = nr_open;
	rl.rlim_cur = want;
	if (rl.rlim_max < want) {
		struct rlimit hard = { want, want };

		/* needs CAP_SYS_RESOURCE; else settle for the hard limit */
		if (!setrlimit(RLIMIT_NOFILE, &hard))
			return 0;
		rl.rlim_cur = rl.rlim_max;
	}
	if (setrlimit(RLIMIT_NOFILE, &rl))
		return -errno;
	return rl.rlim_cur >= want ? 0 : -EMFILE;
}

static void usage(const char *argv0)
{
	fprintf(stderr,
		"usage: %s --workload throughput|lateness|pending|capacity [options]\n"
		"  --n N            messages (throughput) / messages held (pending)\n"
		"  --rate R         lateness: messages per second offered (10000)\n"
		"  --max-lag-ms M   lateness: stop offering (cannot_offer) this far behind (1000)\n"
		"  --lead-s S --ontime-ms M   capacity: the second starts S after the fill\n"
		"                   does (10); on time = within M of the due time (50)\n"
		"  --duration S     lateness: seconds of sending (10)\n"
		"  --dmin-ms/--dmax-ms  delay range (0..1000; lateness 100..2000)\n"
		"  --payload B      payload bytes (500)\n"
		"  --seed S         workload seed (1)\n"
		"  --probe N --idle-s S --far-s S   pending workload (10000, 5, 3600)\n"
		"  --grace-s S      wait this long past the last due time (5)\n"
		"  --batch N        messages per producer flush (64)\n"
		"  --tick-us U      lateness: producer tick (1000)\n"
		"  --timeout S      watchdog for the whole run (600)\n"
		"  --server-pid P   count this process's CPU, memory, wake-ups too\n"
		"  --memcg DIR      the cgroup v2 holding this process and the server:\n"
		"                   bytes/msg from its memory.current (default: smaps)\n"
		"  --env host|vm --stress 0|1 --label TEXT --rep N   labels for the report\n"
		"  --json FILE      append the JSON line to FILE (default stdout)\n"
		"  --cdf FILE       write the lateness CDF to FILE\n"
		"  --opt KEY=VALUE  a peer option (repeatable)\n"
		"  -v               verbose\n",
		argv0);
	exit(2);
}

static double num_arg(const char *s, const char *what)
{
	char *end;
	double v = strtod(s, &end);

	if (end == s || *end || v < 0) {
		fprintf(stderr, "bad %s '%s'\n", what, s);
		exit(2);
	}
	return v;
}

static void parse_args(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "workload", 1, 0, 'w' }, { "n", 1, 0, 'n' },
		{ "rate", 1, 0, 'r' }, { "duration", 1, 0, 'd' },
		{ "dmin-ms", 1, 0, 1 }, { "dmax-ms", 1, 0, 2 },
		{ "payload", 1, 0, 'p' }, { "seed", 1, 0, 's' },
		{ "probe", 1, 0, 3 }, { "idle-s", 1, 0, 4 },
		{ "far-s", 1, 0, 5 }, { "grace-s", 1, 0, 6 },
		{ "batch", 1, 0, 'b' }, { "tick-us", 1, 0, 7 },
		{ "timeout", 1, 0, 't' }, { "server-pid", 1, 0, 8 },
		{ "env", 1, 0, 9 }, { "stress", 1, 0, 10 },
		{ "label", 1, 0, 11 }, { "json", 1, 0, 'j' },
		{ "cdf", 1, 0, 12 }, { "opt", 1, 0, 'o' },
		{ "memcg", 1, 0, 13 }, { "max-lag-ms", 1, 0, 14 },
		{ "lead-s", 1, 0, 15 }, { "ontime-ms", 1, 0, 16 },
		{ "rep", 1, 0, 17 },
		{ "verbose", 0, 0, 'v' }, { "help", 0, 0, 'h' },
		{ 0, 0, 0, 0 },
	};
	int c, dmin_set = 0, dmax_set = 0;
	double dmin = 0, dmax = 1000;

	O.workload_name = NULL;
	O.n = 1000000;
	O.rate = 10000;
	O.duration_s = 10;
	O.payload = 500;
	O.seed = 1;
	O.probe_n = 10000;
	O.idle_s = 5;
	O.far_s = 3600;
	O.grace_s = 5;
	O.batch = 64;
	O.tick_us = 1000;
	O.timeout_s = 600;
	O.env = "host";
	O.max_lag_ms = 1000;
	O.lead_s = 10;
	O.ontime_ms = 50;
	while ((c = getopt_long(argc, argv, "w:n:r:d:p:s:b:t:j:o:vh", lo, NULL)) != -1) {
		switch (c) {
		case 'w': O.workload_name = optarg; break;
		case 'n': O.n = (uint64_t)num_arg(optarg, "--n"); break;
		case 'r': O.rate = (uint64_t)num_arg(optarg, "--rate"); break;
		case 'd': O.duration_s = num_arg(optarg, "--duration"); break;
		case 1: dmin = num_arg(optarg, "--dmin-ms"); dmin_set = 1; break;
		case 2: dmax = num_arg(optarg, "--dmax-ms"); dmax_set = 1; break;
		case 'p': O.payload = (uint32_t)num_arg(optarg, "--payload"); break;
		case 's': O.seed = (uint64_t)num_arg(optarg, "--seed"); break;
		case 3: O.probe_n = (uint64_t)num_arg(optarg, "--probe"); break;
		case 4: O.idle_s = num_arg(optarg, "--idle-s"); break;
		case 5: O.far_s = num_arg(optarg, "--far-s"); break;
		case 6: O.grace_s = num_arg(optarg, "--grace-s"); break;
		case 'b': O.batch = (uint32_t)num_arg(optarg, "--batch"); break;
		case 7: O.tick_us = (uint32_t)num_arg(optarg, "--tick-us"); break;
		case 't': O.timeout_s = num_arg(optarg, "--timeout"); break;
		case 8: O.server_pid = (pid_t)num_arg(optarg, "--server-pid"); break;
		case 9: O.env = optarg; break;
		case 10: O.stress = (int)num_arg(optarg, "--stress"); break;
		case 11: O.variant = optarg; break;
		case 'j': O.json_path = optarg; break;
		case 12: O.cdf_path = optarg; break;
		case 13: O.memcg = optarg; break;
		case 14: O.max_lag_ms = num_arg(optarg, "--max-lag-ms"); break;
		case 15: O.lead_s = num_arg(optarg, "--lead-s"); break;
		case 16: O.ontime_ms = num_arg(optarg, "--ontime-ms"); break;
		case 17: run_rep = (int)num_arg(optarg, "--rep"); break;
		case 'o': {
			char *eq = strchr(optarg, '=');

			if (!eq || !peer.opt) {
				fprintf(stderr, "bad --opt '%s'\n", optarg);
				exit(2);
			}
			*eq = 0;
			if (peer.opt(optarg, eq + 1)) {
				fprintf(stderr, "%s: unknown or bad option %s=%s\n",
					peer.name, optarg, eq + 1);
				exit(2);
			}
			break;
		}
		case 'v': O.verbose = 1; break;
		default: usage(argv[0]);
		}
	}
	if (!O.workload_name || optind != argc)
		usage(argv[0]);
	if (!strcmp(O.workload_name, "throughput")) {
		O.workload = WL_THROUGHPUT;
	} else if (!strcmp(O.workload_name, "lateness")) {
		O.workload = WL_LATENESS;
		if (!dmin_set)
			dmin = 100;
		if (!dmax_set)
			dmax = 2000;
	} else if (!strcmp(O.workload_name, "pending")) {
		O.workload = WL_PENDING;
	} else if (!strcmp(O.workload_name, "capacity")) {
		O.workload = WL_CAPACITY;
	} else {
		usage(argv[0]);
	}
	if (dmax < dmin || O.payload < BENCH_MIN_PAYLOAD || !O.batch || !O.rate ||
	    !O.tick_us || O.timeout_s <= 0) {
		fprintf(stderr, "bad option values\n");
		exit(2);
	}
	O.dmin_ns = (uint64_t)(dmin * 1e6);
	O.dmax_ns = (uint64_t)(dmax * 1e6);
}

int main(int argc, char **argv)
{
	pthread_condattr_t ca;
	pthread_t wd;
	uint64_t capacity, wd_deadline;
	struct utsname un;
	int rc;

	setvbuf(stderr, NULL, _IOLBF, 0);
	/* a server that goes away must be an error, not a silent death */
	signal(SIGPIPE, SIG_IGN);
	parse_args(argc, argv);
	result_init();
	main_tid = (pid_t)syscall(SYS_gettid);
	if (!uname(&un)) {
		snprintf(hostname, sizeof(hostname), "%s", un.nodename);
		snprintf(kernel_rel, sizeof(kernel_rel), "%s", un.release);
	}
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&done_cv, &ca);
	rng_state = O.seed * 0x100000001b3ULL + 0xcbf29ce484222325ULL;

	switch (O.workload) {
	case WL_THROUGHPUT:
	case WL_CAPACITY:
		n_ids = O.n;
		capacity = O.n;
		break;
	case WL_LATENESS:
		n_ids = (uint64_t)((double)O.rate * O.duration_s);
		/* held at once: rate x the longest delay, plus slack */
		capacity = (uint64_t)((double)O.rate * ((double)O.dmax_ns / 1e9 + 1.0));
		if (capacity > n_ids)
			capacity = n_ids;
		break;
	default:
		n_ids = O.n + O.probe_n;
		capacity = n_ids;
		break;
	}
	if (!n_ids) {
		fprintf(stderr, "nothing to do\n");
		return 2;
	}
	/*
	 * Allocated and written before any memory baseline, so that they are
	 * in none of the system's figures.  (A memset() after calloc() does
	 * not do it: the compiler drops it, and the pages would be first
	 * touched inside the measured window.)
	 */
	rec_of = calloc(n_ids, sizeof(*rec_of));
	if (!rec_of) {
		fprintf(stderr, "out of memory for %" PRIu64 " ids\n", n_ids);
		return 1;
	}
	{
		int64_t before = smaps_rss_bytes(getpid());

		prefault(rec_of, n_ids * sizeof(*rec_of));
		prefault(tally_static, sizeof(tally_static));
		/* what the harness's own arrays take: in no system's figure */
		R.harness_bytes = (double)(smaps_rss_bytes(getpid()) - before);
	}

	wd_deadline = bench_now() + (uint64_t)(O.timeout_s * 1e9);
	pthread_create(&wd, NULL, watchdog, &wd_deadline);
	pthread_detach(wd);

	poll_mode = peer.poll && !(peer.threaded && peer.threaded());
	run_capacity = capacity;
	if (O.workload == WL_PENDING)
		mem_pre = take_memsnap();
	rc = peer.setup(&O, capacity);
	if (rc < 0) {
		set_error("setup", rc);
		emit_json();
		return 1;
	}
	if (peer.start && (rc = peer.start()) < 0) {
		set_error("start", rc);
		emit_json();
		if (peer.teardown)
			peer.teardown();
		return 1;
	}
	bench_log("running %s, n=%" PRIu64 " capacity=%" PRIu64, O.workload_name, O.n,
		  capacity);
	switch (O.workload) {
	case WL_THROUGHPUT: run_throughput(); break;
	case WL_LATENESS: run_lateness(); break;
	case WL_PENDING: run_pending(); break;
	case WL_CAPACITY: run_release_capacity(); break;
	}
	__atomic_store_n(&stopping, 1, __ATOMIC_RELEASE);
	if (peer.stop)
		peer.stop();
	/* what the peer still holds: overdue, not lost */
	if (peer.held)
		peer.held();
	finish_counts(sent_meas_total);
	fill_lateness();
	emit_json();
	if (peer.teardown)
		peer.teardown();
	{
		char vd[256];
		int bad = verdict(vd, sizeof(vd));

		fprintf(stderr,
			"[%s] %s: sent %.0f delivered %.0f early %.0f lost %.0f dup %.0f"
			" overdue %.0f | %.0f msg/s %.2f us/msg | late p50 %.0f p99 %.0f"
			" max %.0f us | %s%s\n",
			peer.name, O.workload_name, R.sent, R.delivered, R.early, R.lost,
			R.dup, R.overdue, R.msgs_per_s, R.cpu_us_per_msg, R.late_p50_us,
			R.late_p99_us, R.late_max_us, bad == 2 ? "VIOLATION " : "", vd);
		return bad == 2 ? 4 : bad;
	}
}
