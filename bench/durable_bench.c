// SPDX-License-Identifier: LGPL-2.1 OR MIT
/*
 * durable_bench.c - the driver of bench/durable.sh: durable delay queues
 * on one disk, dq's journal (libdqshim, embedded engine) against Redis
 * (sorted set, AOF) and beanstalkd (binlog), and the disk's own limits.
 *
 * Every subcommand prints one line "result key=value ..." on stdout (the
 * script collects them) and exits 0; 3 on a correctness violation (a
 * message acknowledged as durable and then missing, a duplicate, a corrupt
 * payload, fewer messages recovered than were durable), 1 on a failure.
 *
 *   disk      --dir D [--sync-n N] [--bw-mib M]
 *             fdatasync latency of 4 KiB writes (appending into a
 *             fallocate()d file, as the journal does, and overwriting one
 *             written block) and sequential write bandwidth (O_DIRECT 1 MiB
 *             writes; buffered writes + one fdatasync)
 *   dq        --dir D --mode batch|always [--seconds S] [--rate R]
 *             [--batch B] [--max-n N] [--verify-reopen]
 *             producer commits batches of B 500-byte messages due in an
 *             hour, flushes; a waiter thread (batch) or the producer
 *             (always) sees each batch durable.  Throughput counts a
 *             message once dq_durable_pos() passed its batch's mark.
 *   consume   the same with delays 0..--dmax-ms and a consumer thread
 *             reaping and dq_done()-ing while the producer writes
 *   fill      dq --max-n N, then dq_queue_close() and exit (the held
 *             messages must survive the close); --due-spread-s S: due
 *             1 h + uniform 0..S s, so that due order is not commit order
 *   recover   --dir D --n N: time dq_queue_open_durable() of the journal
 *             (a fresh process); fails when it finds fewer than N
 *   crash     --dir D --mode M: a child produces (delays 1..2 s) and
 *             publishes what it has seen durable; it is SIGKILLed
 *             --kill-ms after its first durable batch; the journal is recovered here and every message
 *             is reaped and checked (acknowledged ones all there, once,
 *             payload intact)
 *   dropcache --dir D: posix_fadvise(DONTNEED) on every file of D
 *   idle      --dir D --mode M --n N --seconds S: context switches per
 *             second of an open durable queue, empty and holding N
 *   redis     --port P --server-pid PID [--seconds S] [--rate R]
 *             [--batch B]: ZADD dqd <due ms> <500-byte member>, pipelined
 *             B at a time (hiredis); ZCARD must equal the acknowledged
 *   beanstalkd --port P --server-pid PID ...: "put 0 3600 120 500",
 *             pipelined B at a time; current-jobs-delayed must equal the
 *             acknowledged
 */
#include <dqshim.h>
#include <hiredis/hiredis.h>

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define PAYLOAD		500U
#define SLOT_SIZE	512U
#define STAMP_MAGIC	0x9e3779b97f4a7c15ULL
#define HOUR_NS		(3600ULL * 1000000000ULL)
#define RING		256U	/* batches between producer and waiter */
#define REAP_MAX	256U

enum { EXIT_OK = 0, EXIT_FAIL = 1, EXIT_VIOLATION = 3 };

/* ------------------------------------------------------------ options */

static struct {
	const char *dir;
	const char *mode;
	double seconds;
	double rate;		/* msgs/s offered, 0: as fast as it goes */
	unsigned int batch;
	uint64_t max_n;
	uint64_t n;
	unsigned int sync_n;
	unsigned int bw_mib;
	int port;
	int server_pid;
	int verify_reopen;
	double dmin_ms;
	double dmax_ms;
	unsigned int kill_ms;
	uint64_t segment_bytes;
	uint64_t spread_ns;	/* far dues: 1 h + uniform 0..spread */
	uint64_t seed;
} O = {
	.seconds = 3, .batch = 256, .max_n = 1500000, .sync_n = 300,
	.bw_mib = 256, .port = 6379, .dmax_ms = 100, .kill_ms = 800,
	.seed = 1,
};

static void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, "durable_bench: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
	exit(EXIT_FAIL);
}

static int violations;

static void violation(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, "durable_bench: VIOLATION: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
	violations++;
}

/* ------------------------------------------------------------- helpers */

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static uint64_t realtime_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static void sleep_until(uint64_t t)
{
	struct timespec ts = { .tv_sec = (time_t)(t / 1000000000ULL),
			       .tv_nsec = (long)(t % 1000000000ULL) };

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

static uint64_t cpu_self_ns(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (uint64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000000ULL +
	       (uint64_t)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1000ULL;
}

/* utime+stime+cutime+cstime of a process from /proc/PID/stat, ns */
static uint64_t cpu_proc_ns(int pid)
{
	char path[64], buf[2048], *p;
	unsigned long long v[4] = { 0 };
	long tck = sysconf(_SC_CLK_TCK);
	FILE *f;
	size_t len;
	int i;

	if (pid <= 0)
		return 0;
	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	f = fopen(path, "re");
	if (!f)
		die("%s: %s", path, strerror(errno));
	len = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[len] = 0;
	p = strrchr(buf, ')');
	if (!p)
		die("%s: unreadable", path);
	p++;
	/* fields 3 (state) .. 13, then utime stime cutime cstime */
	for (i = 3; i <= 13; i++) {
		p = strchr(p + 1, ' ');
		if (!p)
			die("%s: short", path);
	}
	if (sscanf(p, " %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3]) != 4)
		die("%s: no times", path);
	return (v[0] + v[1] + v[2] + v[3]) * (1000000000ULL / (uint64_t)tck);
}

/* wchar / write_bytes of this process (/proc/self/io) */
static void proc_io(uint64_t *wchar, uint64_t *write_bytes)
{
	char line[128];
	FILE *f = fopen("/proc/self/io", "re");

	*wchar = *write_bytes = 0;
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long v;

		if (sscanf(line, "wchar: %llu", &v) == 1)
			*wchar = v;
		else if (sscanf(line, "write_bytes: %llu", &v) == 1)
			*write_bytes = v;
	}
	fclose(f);
}

struct lat {
	uint64_t *v;
	size_t n, cap;
};

static void lat_add(struct lat *l, uint64_t x)
{
	if (l->n == l->cap) {
		l->cap = l->cap ? l->cap * 2 : 4096;
		l->v = realloc(l->v, l->cap * sizeof(*l->v));
		if (!l->v)
			die("out of memory");
	}
	l->v[l->n++] = x;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* nearest-rank percentile, in microseconds */
static double lat_pct(struct lat *l, double pct)
{
	size_t k;

	if (!l->n)
		return NAN;
	qsort(l->v, l->n, sizeof(*l->v), cmp_u64);
	k = (size_t)ceil(pct / 100.0 * (double)l->n);
	if (k < 1)
		k = 1;
	return (double)l->v[k - 1] / 1000.0;
}

/* payload: id, id ^ magic, then a byte pattern of the id */
static void stamp(void *p, uint64_t id)
{
	uint64_t w[2] = { id, id ^ STAMP_MAGIC };

	memcpy(p, w, sizeof(w));
	memset((char *)p + sizeof(w), (int)(id * 31 + 7) & 0xff,
	       PAYLOAD - sizeof(w));
}

/* 0 when the payload is the one stamp(id) wrote */
static int check_stamp(const void *p, uint32_t len, uint64_t id)
{
	const unsigned char *c = p;
	uint64_t w[2];
	unsigned char b = (unsigned char)((id * 31 + 7) & 0xff);

	if (len != PAYLOAD)
		return -1;
	memcpy(w, p, sizeof(w));
	if (w[0] != id || w[1] != (id ^ STAMP_MAGIC))
		return -1;
	for (uint32_t i = sizeof(w); i < PAYLOAD; i += 37)
		if (c[i] != b)
			return -1;
	return c[PAYLOAD - 1] == b ? 0 : -1;
}

static uint64_t rng_state = 88172645463325252ULL;

static uint64_t rng(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

/* ----------------------------------------------------------------- disk */

static void *aligned_buf(size_t n, int fill)
{
	void *p;

	if (posix_memalign(&p, 4096, n))
		die("out of memory");
	memset(p, fill, n);
	return p;
}

static int cmd_disk(void)
{
	char path[4096];
	struct lat pre = { 0 }, over = { 0 };
	void *blk = aligned_buf(4096, 0x5a), *big;
	uint64_t t0, t1, bytes = (uint64_t)O.bw_mib << 20;
	double bw_direct, bw_buffered;
	int fd;

	/* 1: append 4 KiB into a preallocated (fallocate) file + fdatasync */
	snprintf(path, sizeof(path), "%s/sync-prealloc", O.dir);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0 || fallocate(fd, 0, 0, (off_t)O.sync_n * 4096 + 4096))
		die("%s: %s", path, strerror(errno));
	fsync(fd);
	for (unsigned int i = 0; i < O.sync_n; i++) {
		t0 = now_ns();
		if (pwrite(fd, blk, 4096, (off_t)i * 4096) != 4096 || fdatasync(fd))
			die("%s: %s", path, strerror(errno));
		lat_add(&pre, now_ns() - t0);
	}
	close(fd);
	unlink(path);

	/* 2: overwrite one written block + fdatasync (no metadata change) */
	snprintf(path, sizeof(path), "%s/sync-overwrite", O.dir);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0 || pwrite(fd, blk, 4096, 0) != 4096 || fsync(fd))
		die("%s: %s", path, strerror(errno));
	for (unsigned int i = 0; i < O.sync_n; i++) {
		t0 = now_ns();
		if (pwrite(fd, blk, 4096, 0) != 4096 || fdatasync(fd))
			die("%s: %s", path, strerror(errno));
		lat_add(&over, now_ns() - t0);
	}
	close(fd);
	unlink(path);

	/* 3: sequential O_DIRECT, 1 MiB writes, new file, fdatasync at end */
	big = aligned_buf(1 << 20, 0xa5);
	snprintf(path, sizeof(path), "%s/bw-direct", O.dir);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_DIRECT | O_CLOEXEC, 0600);
	if (fd < 0)
		die("%s: O_DIRECT: %s", path, strerror(errno));
	t0 = now_ns();
	for (uint64_t off = 0; off < bytes; off += 1 << 20)
		if (write(fd, big, 1 << 20) != 1 << 20)
			die("%s: %s", path, strerror(errno));
	if (fdatasync(fd))
		die("%s: %s", path, strerror(errno));
	t1 = now_ns();
	close(fd);
	unlink(path);
	bw_direct = (double)bytes / ((double)(t1 - t0) / 1e9) / 1e6;

	/* 4: buffered writes, one fdatasync at the end */
	snprintf(path, sizeof(path), "%s/bw-buffered", O.dir);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		die("%s: %s", path, strerror(errno));
	t0 = now_ns();
	for (uint64_t off = 0; off < bytes; off += 1 << 20)
		if (write(fd, big, 1 << 20) != 1 << 20)
			die("%s: %s", path, strerror(errno));
	if (fdatasync(fd))
		die("%s: %s", path, strerror(errno));
	t1 = now_ns();
	posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
	close(fd);
	unlink(path);
	bw_buffered = (double)bytes / ((double)(t1 - t0) / 1e9) / 1e6;

	printf("result system=disk sync_n=%u prealloc_p50_us=%.1f prealloc_p99_us=%.1f "
	       "overwrite_p50_us=%.1f overwrite_p99_us=%.1f bw_mib=%u "
	       "bw_direct_mbs=%.1f bw_buffered_mbs=%.1f\n",
	       O.sync_n, lat_pct(&pre, 50), lat_pct(&pre, 99),
	       lat_pct(&over, 50), lat_pct(&over, 99), O.bw_mib,
	       bw_direct, bw_buffered);
	return EXIT_OK;
}

static int cmd_dropcache(void)
{
	DIR *d = opendir(O.dir);
	struct dirent *e;
	char path[4096];
	unsigned int files = 0;

	if (!d)
		die("%s: %s", O.dir, strerror(errno));
	while ((e = readdir(d))) {
		int fd;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", O.dir, e->d_name);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		fdatasync(fd);
		posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
		close(fd);
		files++;
	}
	closedir(d);
	printf("result system=dropcache files=%u\n", files);
	return EXIT_OK;
}

/* bytes the files of @dir take on disk (st_blocks) */
static uint64_t dir_bytes(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	uint64_t sum = 0;

	if (!d)
		return 0;
	while ((e = readdir(d))) {
		struct stat sb;

		if (e->d_name[0] != '.' &&
		    !fstatat(dirfd(d), e->d_name, &sb, AT_SYMLINK_NOFOLLOW))
			sum += (uint64_t)sb.st_blocks * 512;
	}
	closedir(d);
	return sum;
}

/* ------------------------------------------------------------------- dq */

static struct dqshim_queue *q;
static atomic_uint_fast64_t rejects;

static void on_reject(void *arg, const struct dq_reject *rej)
{
	(void)arg;
	atomic_fetch_add(&rejects, 1);
	fprintf(stderr, "durable_bench: slot %u rejected: %s\n", rej->slot,
		dq_strerror(rej->error));
}

static enum dq_durability mode_of(const char *m)
{
	if (m && !strcmp(m, "batch"))
		return DQ_DURABLE_BATCH;
	if (m && !strcmp(m, "always"))
		return DQ_DURABLE_ALWAYS;
	die("--mode batch|always");
	return DQ_DURABLE_NONE;
}

/* open (or recover) the durable queue on O.dir; returns the wall ns */
static uint64_t dq_open(enum dq_durability d, uint64_t slots)
{
	struct dq_params p;
	struct dq_journal_params jp;
	uint64_t t0;
	int rc;

	dq_params_init(&p);
	if (slots > DQ_MAX_SLOTS)
		die("%" PRIu64 " slots: more than DQ_MAX_SLOTS", slots);
	p.slot_count = (uint32_t)slots;
	p.slot_size = SLOT_SIZE;
	p.submit_entries = 2 * O.batch;
	p.backend = DQ_BACKEND_USER;
	p.on_reject = on_reject;
	dq_journal_params_init(&jp, O.dir, d);
	jp.max_bytes = 16ULL << 30;
	if (O.segment_bytes)
		jp.segment_bytes = O.segment_bytes;
	t0 = now_ns();
	rc = dq_queue_open_durable(&p, &jp, &q);
	if (rc)
		die("dq_queue_open_durable(%s): %s", O.dir, dq_strerror(rc));
	return now_ns() - t0;
}

/* producer -> waiter: one flushed batch */
struct pending {
	uint64_t mark;		/* dq_journal_mark() after its commits */
	uint64_t t_flush;	/* when dq_flush() was called */
	uint64_t last_id;	/* our id of its last message */
};

static struct {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct pending e[RING];
	unsigned int head, tail;	/* tail - head entries */
	int done;
} ring = { .lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER };

static struct lat lat;
static uint64_t t_last_durable;
static _Atomic int64_t acked_upto = -1;	/* our ids <= this are durable */
static volatile int64_t *shared_acked;	/* crash: seen by the parent */
static int waiter_failed;

static void ring_push(const struct pending *e)
{
	pthread_mutex_lock(&ring.lock);
	while (ring.tail - ring.head == RING)
		pthread_cond_wait(&ring.cond, &ring.lock);
	ring.e[ring.tail++ % RING] = *e;
	pthread_cond_broadcast(&ring.cond);
	pthread_mutex_unlock(&ring.lock);
}

static void ack(uint64_t last_id, uint64_t t)
{
	atomic_store(&acked_upto, (int64_t)last_id);
	if (shared_acked)
		*shared_acked = (int64_t)last_id;
	t_last_durable = t;
}

static void *waiter_fn(void *arg)
{
	(void)arg;
	for (;;) {
		struct pending e;
		uint64_t t;
		int rc;

		pthread_mutex_lock(&ring.lock);
		while (ring.tail == ring.head && !ring.done)
			pthread_cond_wait(&ring.cond, &ring.lock);
		if (ring.tail == ring.head) {
			pthread_mutex_unlock(&ring.lock);
			return NULL;
		}
		e = ring.e[ring.head++ % RING];
		pthread_cond_broadcast(&ring.cond);
		pthread_mutex_unlock(&ring.lock);

		if (dq_durable_pos(q) < e.mark) {
			rc = dq_durable_wait(q, e.mark, 30000000000LL);
			if (rc) {
				fprintf(stderr, "durable_bench: dq_durable_wait: %s\n",
					dq_strerror(rc));
				waiter_failed = 1;
				return NULL;
			}
		}
		t = now_ns();
		if (dq_durable_pos(q) < e.mark) {
			violation("dq_durable_wait returned 0 with durable_pos %" PRIu64
				  " < mark %" PRIu64, dq_durable_pos(q), e.mark);
			waiter_failed = 1;
		}
		lat_add(&lat, t - e.t_flush);
		ack(e.last_id, t);
	}
}

/* consumer (consume, crash verification) */
static uint8_t *seen;
static uint64_t seen_cap;
static _Atomic uint64_t reaped, corrupt, dups, strays;
static volatile int consumer_stop;

static void deliver(const struct dq_reaped *r)
{
	uint64_t id = r->user_data;

	if (id >= seen_cap) {
		atomic_fetch_add(&strays, 1);
	} else if (check_stamp(r->data, r->len, id)) {
		atomic_fetch_add(&corrupt, 1);
	} else if (seen[id]++) {
		atomic_fetch_add(&dups, 1);
	}
	atomic_fetch_add(&reaped, 1);
}

static void *consumer_fn(void *arg)
{
	struct dq_reaped r[REAP_MAX];

	(void)arg;
	while (!consumer_stop) {
		int n = dq_reap(q, r, REAP_MAX, 20000000LL);

		if (n == -ETIME || n == -EINTR || n == 0)
			continue;
		if (n < 0)
			die("dq_reap: %s", dq_strerror(n));
		for (int i = 0; i < n; i++) {
			deliver(&r[i]);
			if (dq_done(q, r[i].slot))
				die("dq_done: failed");
		}
	}
	return NULL;
}

struct prod_result {
	uint64_t n, t_start, t_end_produce, flushes;
};

/*
 * Commit batches of O.batch messages until O.seconds passed or O.max_n
 * went in; @delay_fn gives each message's due time.
 */
static void produce(enum dq_durability d, int far, struct prod_result *res)
{
	uint64_t id = 0, k = 0, t_end, dmax = (uint64_t)(O.dmax_ms * 1e6);
	uint64_t dmin = (uint64_t)(O.dmin_ms * 1e6);
	struct pending e;
	int rc;

	res->t_start = now_ns();
	t_end = res->t_start + (uint64_t)(O.seconds * 1e9);
	while (id < O.max_n) {
		uint64_t now = now_ns(), due;

		if (now >= t_end)
			break;
		if (O.rate > 0)
			sleep_until(res->t_start +
				    (uint64_t)((double)k * O.batch * 1e9 / O.rate));
		k++;
		for (unsigned int i = 0; i < O.batch && id < O.max_n; i++, id++) {
			struct dqshim_msg m;

			rc = dq_reserve(q, &m);
			if (rc == -ENOSPC && !far) {
				dq_flush(q);
				rc = dq_reserve_wait(q, &m, 5000000000LL);
			}
			if (rc)
				die("dq_reserve (id %" PRIu64 "): %s", id, dq_strerror(rc));
			stamp(m.data, id);
			due = far ? now + HOUR_NS +
				    (O.spread_ns ? rng() % O.spread_ns : 0) :
				    now + dmin + 1 + (dmax > dmin ? rng() % (dmax - dmin) : 0);
			while ((rc = dq_commit(q, &m, PAYLOAD, due, id)) == -EAGAIN)
				dq_flush(q);
			if (rc)
				die("dq_commit: %s", dq_strerror(rc));
		}
		e.mark = dq_journal_mark(q);
		e.last_id = id - 1;
		e.t_flush = now_ns();
		rc = dq_flush(q);
		if (rc < 0)
			die("dq_flush: %s", dq_strerror(rc));
		res->flushes++;
		if (d == DQ_DURABLE_ALWAYS) {
			uint64_t t = now_ns();

			if (dq_durable_pos(q) < e.mark)
				violation("always: dq_flush returned with durable_pos %"
					  PRIu64 " < mark %" PRIu64, dq_durable_pos(q),
					  e.mark);
			lat_add(&lat, t - e.t_flush);
			ack(e.last_id, t);
		} else {
			ring_push(&e);
		}
	}
	res->n = id;
	res->t_end_produce = now_ns();
}

static void finish_waiter(pthread_t w)
{
	pthread_mutex_lock(&ring.lock);
	ring.done = 1;
	pthread_cond_broadcast(&ring.cond);
	pthread_mutex_unlock(&ring.lock);
	pthread_join(w, NULL);
}

static void print_jstats(const char *prefix)
{
	struct dq_journal_stats st = { .sz = sizeof(st) };
	int rc = dq_journal_stats(q, &st);

	if (rc)
		die("dq_journal_stats: %s", dq_strerror(rc));
	printf(" %ssegments=%u %sbytes=%" PRIu64 " %sused_bytes=%" PRIu64
	       " %scommits=%" PRIu64 " %sretires=%" PRIu64 " %sfsyncs=%" PRIu64
	       " %ssynced_records=%" PRIu64 " %ssync_ns_total=%" PRIu64
	       " %ssync_ns_max=%" PRIu64 " %srelocated=%" PRIu64
	       " %sreclaimed=%" PRIu64 " %sio_errors=%" PRIu64
	       " %senospc=%" PRIu64,
	       prefix, st.segments, prefix, st.bytes, prefix, st.used_bytes,
	       prefix, st.commits, prefix, st.retires, prefix, st.fsyncs,
	       prefix, st.synced_records, prefix, st.sync_ns_total,
	       prefix, st.sync_ns_max, prefix, st.relocated, prefix,
	       st.reclaimed, prefix, st.io_errors, prefix, st.enospc);
}

static void get_jstats(struct dq_journal_stats *st)
{
	int rc = dq_journal_stats(q, st);

	if (rc)
		die("dq_journal_stats: %s", dq_strerror(rc));
}

/* dq, fill, consume */
static int cmd_dq(int fill, int consume)
{
	enum dq_durability d = mode_of(O.mode);
	struct prod_result res = { 0 };
	pthread_t w = 0, c = 0;
	uint64_t cpu0, cpu1, wchar0, wb0, wchar1, wb1, t_durable, slots;
	struct dq_journal_stats st = { .sz = sizeof(st) };

	if (!O.dir)
		die("--dir");
	if (consume) {
		/* enough slots for what 2 x dmax of production holds */
		slots = O.rate > 0 ? (uint64_t)(O.rate * O.dmax_ms / 1000.0 * 4)
				   : 1000000;
		slots += 4 * O.batch + 1024;
		seen_cap = O.max_n;
		seen = calloc(seen_cap, 1);
		if (!seen)
			die("out of memory");
	} else {
		slots = O.max_n + 2 * O.batch;
	}
	dq_open(d, slots);
	get_jstats(&st);
	if (st.rec_recovered)
		die("%s: the journal was not empty (%" PRIu64 " recovered)", O.dir,
		    st.rec_recovered);
	if (consume && pthread_create(&c, NULL, consumer_fn, NULL))
		die("pthread_create");
	if (d == DQ_DURABLE_BATCH && pthread_create(&w, NULL, waiter_fn, NULL))
		die("pthread_create");

	proc_io(&wchar0, &wb0);
	cpu0 = cpu_self_ns();
	produce(d, !consume, &res);
	if (d == DQ_DURABLE_BATCH)
		finish_waiter(w);
	t_durable = t_last_durable;
	if (waiter_failed)
		die("the waiter failed");
	if (atomic_load(&acked_upto) != (int64_t)res.n - 1)
		violation("acknowledged up to %" PRId64 " of %" PRIu64,
			  (int64_t)atomic_load(&acked_upto), res.n);
	if (consume) {
		uint64_t deadline = now_ns() + (uint64_t)(O.dmax_ms * 1e6) +
				    5000000000ULL;

		while (atomic_load(&reaped) < res.n && now_ns() < deadline)
			usleep(1000);
		consumer_stop = 1;
		pthread_join(c, NULL);
		/* the retires of the last reaps: a flush + a sync */
		dq_flush(q);
		dq_durable_wait(q, dq_journal_mark(q), 5000000000LL);
	}
	cpu1 = cpu_self_ns();
	proc_io(&wchar1, &wb1);
	get_jstats(&st);

	if (st.commits < res.n)
		violation("journal commits %" PRIu64 " < %" PRIu64 " committed",
			  st.commits, res.n);
	if (atomic_load(&rejects))
		violation("%" PRIu64 " rejects", (uint64_t)atomic_load(&rejects));
	if (consume) {
		uint64_t missing = 0;

		for (uint64_t i = 0; i < res.n; i++)
			missing += !seen[i];
		if (missing || dups || corrupt || strays)
			violation("consume: %" PRIu64 " missing, %" PRIu64 " dup, %"
				  PRIu64 " corrupt, %" PRIu64 " stray of %" PRIu64,
				  missing, (uint64_t)dups, (uint64_t)corrupt,
				  (uint64_t)strays, res.n);
	}

	printf("result system=dq-%s%s n=%" PRIu64 " batch=%u offered=%.0f "
	       "secs=%.4f produce_secs=%.4f rate=%.1f cpu_us=%.3f "
	       "lat_p50_us=%.1f lat_p99_us=%.1f lat_max_us=%.1f batches=%zu "
	       "wchar_per_msg=%.1f write_bytes_per_msg=%.1f",
	       O.mode, consume ? "-consume" : "", res.n, O.batch, O.rate,
	       (double)(t_durable - res.t_start) / 1e9,
	       (double)(res.t_end_produce - res.t_start) / 1e9,
	       (double)res.n / ((double)(t_durable - res.t_start) / 1e9),
	       (double)(cpu1 - cpu0) / 1000.0 / (double)res.n,
	       lat_pct(&lat, 50), lat_pct(&lat, 99), lat_pct(&lat, 100), lat.n,
	       (double)(wchar1 - wchar0) / (double)res.n,
	       (double)(wb1 - wb0) / (double)res.n);
	print_jstats("");
	printf(" dir_bytes=%" PRIu64, dir_bytes(O.dir));

	if (fill) {
		/* exit without draining: the held messages stay in the journal */
		printf(" violations=%d\n", violations);
		fflush(stdout);
		dq_queue_close(q);
		_exit(violations ? EXIT_VIOLATION : EXIT_OK);
	}
	dq_queue_close(q);
	q = NULL;
	if (O.verify_reopen || consume) {
		/*
		 * Reopen: everything committed is still held (due in an hour),
		 * so recovery must find every message; after a consume run the
		 * count is what came back (retires not yet durable at close).
		 */
		uint64_t wall = dq_open(d, slots + (consume ? res.n : 0));

		get_jstats(&st);
		printf(" reopen_ms=%.1f reopen_recovered=%" PRIu64
		       " reopen_segments=%" PRIu64 " reopen_corrupt=%" PRIu64,
		       (double)wall / 1e6, st.rec_recovered, st.rec_segments,
		       st.rec_corrupt);
		if (!consume && st.rec_recovered != res.n)
			violation("reopen recovered %" PRIu64 " of %" PRIu64
				  " durable messages", st.rec_recovered, res.n);
		dq_queue_close(q);
	}
	printf(" violations=%d\n", violations);
	return violations ? EXIT_VIOLATION : EXIT_OK;
}

static int cmd_recover(void)
{
	struct dq_journal_stats st = { .sz = sizeof(st) };
	uint64_t wall, cpu0 = cpu_self_ns();

	if (!O.dir || !O.n)
		die("--dir and --n");
	wall = dq_open(DQ_DURABLE_BATCH, O.n + 2 * O.batch);
	get_jstats(&st);
	printf("result system=recover n=%" PRIu64 " wall_ms=%.1f rec_ms=%.1f "
	       "cpu_ms=%.1f rec_segments=%" PRIu64 " rec_records=%" PRIu64
	       " rec_recovered=%" PRIu64 " rec_corrupt=%" PRIu64
	       " rec_torn_bytes=%" PRIu64 " journal_bytes=%" PRIu64
	       " journal_used_bytes=%" PRIu64 " segments=%u",
	       O.n, (double)wall / 1e6, (double)st.rec_ns / 1e6,
	       (double)(cpu_self_ns() - cpu0) / 1e6, st.rec_segments,
	       st.rec_records, st.rec_recovered, st.rec_corrupt,
	       st.rec_torn_bytes, st.bytes, st.used_bytes, st.segments);
	if (st.rec_recovered != O.n)
		violation("recovered %" PRIu64 " of %" PRIu64
			  " committed-durable messages", st.rec_recovered, O.n);
	if (st.rec_corrupt)
		violation("%" PRIu64 " corrupt records", st.rec_corrupt);
	printf(" violations=%d\n", violations);
	fflush(stdout);
	/* leave the held messages in the journal for the next repeat */
	dq_queue_close(q);
	return violations ? EXIT_VIOLATION : EXIT_OK;
}

/*
 * crash: a child produces messages due 1..2 s ahead at full speed and
 * publishes the highest id it saw durable; SIGKILL O.kill_ms after the
 * first batch was seen durable; then
 * recover here and reap everything: every acknowledged id must come back
 * exactly once with its payload.
 */
static int cmd_crash(void)
{
	enum dq_durability d = mode_of(O.mode);
	volatile int64_t *sh;
	uint64_t slots = O.max_n + 2 * O.batch, deadline, missing = 0, wall;
	struct dq_journal_stats st = { .sz = sizeof(st) };
	int64_t acked;
	pid_t pid;
	int status;
	pthread_t c;

	if (!O.dir)
		die("--dir");
	sh = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
		  -1, 0);
	if (sh == MAP_FAILED)
		die("mmap: %s", strerror(errno));
	*sh = -1;
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		die("fork: %s", strerror(errno));
	if (pid == 0) {
		struct prod_result res = { 0 };
		pthread_t w;

		shared_acked = sh;
		O.seconds = 60;
		O.dmin_ms = 1000;	/* due 1..2 s ahead: none before the kill */
		O.dmax_ms = 2000;
		dq_open(d, slots);
		if (d == DQ_DURABLE_BATCH && pthread_create(&w, NULL, waiter_fn, NULL))
			die("pthread_create");
		produce(d, 0, &res);
		for (;;)
			pause();	/* max_n reached: wait for the kill */
	}
	/* the kill comes kill_ms after the first batch was seen durable */
	deadline = now_ns() + 60000000000ULL;
	while (*sh < 0 && now_ns() < deadline && waitpid(pid, &status, WNOHANG) == 0)
		usleep(1000);
	usleep(O.kill_ms * 1000);
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	acked = *sh;

	seen_cap = slots;
	seen = calloc(seen_cap, 1);
	if (!seen)
		die("out of memory");
	wall = dq_open(d, slots);
	get_jstats(&st);
	if (pthread_create(&c, NULL, consumer_fn, NULL))
		die("pthread_create");
	deadline = now_ns() + 10000000000ULL;
	while (atomic_load(&reaped) < st.rec_recovered && now_ns() < deadline)
		usleep(2000);
	usleep(50000);	/* anything beyond what recovery said */
	consumer_stop = 1;
	pthread_join(c, NULL);
	for (int64_t i = 0; i <= acked; i++)
		missing += !seen[i];
	printf("result system=crash-%s kill_ms=%u acked=%" PRId64
	       " recovered=%" PRIu64 " reaped=%" PRIu64 " missing=%" PRIu64
	       " dup=%" PRIu64 " corrupt=%" PRIu64 " stray=%" PRIu64
	       " rec_ms=%.1f wall_ms=%.1f torn_bytes=%" PRIu64,
	       O.mode, O.kill_ms, acked + 1, st.rec_recovered,
	       (uint64_t)reaped, missing, (uint64_t)dups, (uint64_t)corrupt,
	       (uint64_t)strays, (double)st.rec_ns / 1e6, (double)wall / 1e6,
	       st.rec_torn_bytes);
	if (acked < 0)
		violation("crash: nothing acknowledged before the kill");
	if (missing || dups || corrupt || strays)
		violation("crash: %" PRIu64 " acknowledged messages missing, %"
			  PRIu64 " dup, %" PRIu64 " corrupt, %" PRIu64 " stray",
			  missing, (uint64_t)dups, (uint64_t)corrupt,
			  (uint64_t)strays);
	if (reaped != st.rec_recovered)
		violation("crash: recovery said %" PRIu64 ", reaped %" PRIu64,
			  st.rec_recovered, (uint64_t)reaped);
	printf(" violations=%d\n", violations);
	dq_queue_close(q);
	return violations ? EXIT_VIOLATION : EXIT_OK;
}

/* voluntary + involuntary context switches of every thread of this process */
static uint64_t ctx_switches(void)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	uint64_t sum = 0;

	if (!d)
		die("/proc/self/task: %s", strerror(errno));
	while ((e = readdir(d))) {
		char path[300], line[128];
		FILE *f;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/status", e->d_name);
		f = fopen(path, "re");
		if (!f)
			continue;
		while (fgets(line, sizeof(line), f)) {
			unsigned long long v;

			if (sscanf(line, "voluntary_ctxt_switches: %llu", &v) == 1 ||
			    sscanf(line, "nonvoluntary_ctxt_switches: %llu", &v) == 1)
				sum += v;
		}
		fclose(f);
	}
	closedir(d);
	return sum;
}

/*
 * idle: an open durable queue with nothing to do (empty, and then holding
 * --n messages due in an hour, all durable): context switches of the
 * process per second over --seconds, i.e. the wake-ups of its threads.
 */
static int cmd_idle(void)
{
	enum dq_durability d = mode_of(O.mode);
	uint64_t c0, c1, t0, t1, id;
	double empty, held;
	int rc;

	if (!O.dir)
		die("--dir");
	dq_open(d, O.n + 2 * O.batch + 1);
	usleep(200000);
	c0 = ctx_switches();
	t0 = now_ns();
	usleep((useconds_t)(O.seconds * 1e6));
	c1 = ctx_switches();
	t1 = now_ns();
	empty = (double)(c1 - c0) / ((double)(t1 - t0) / 1e9);
	for (id = 0; id < O.n; id++) {
		struct dqshim_msg m;

		if ((rc = dq_reserve(q, &m)))
			die("dq_reserve: %s", dq_strerror(rc));
		stamp(m.data, id);
		while ((rc = dq_commit(q, &m, PAYLOAD, now_ns() + HOUR_NS, id)) == -EAGAIN)
			dq_flush(q);
		if (rc)
			die("dq_commit: %s", dq_strerror(rc));
	}
	if ((rc = dq_durable_wait(q, dq_journal_mark(q), 10000000000LL)))
		die("dq_durable_wait: %s", dq_strerror(rc));
	usleep(200000);
	c0 = ctx_switches();
	t0 = now_ns();
	usleep((useconds_t)(O.seconds * 1e6));
	c1 = ctx_switches();
	t1 = now_ns();
	held = (double)(c1 - c0) / ((double)(t1 - t0) / 1e9);
	printf("result system=idle-%s held=%" PRIu64 " secs=%.1f "
	       "wakeups_per_s_empty=%.1f wakeups_per_s_held=%.1f violations=%d\n",
	       O.mode, O.n, O.seconds, empty, held, violations);
	dq_queue_close(q);
	return violations ? EXIT_VIOLATION : EXIT_OK;
}

/* ---------------------------------------------------------------- peers */

struct peer_run {
	uint64_t n, t_start, t_end, cpu_self0, cpu_srv0, cpu_self1, cpu_srv1;
};

static void peer_begin(struct peer_run *r)
{
	r->cpu_self0 = cpu_self_ns();
	r->cpu_srv0 = cpu_proc_ns(O.server_pid);
	r->t_start = now_ns();
}

static void peer_end(struct peer_run *r)
{
	r->t_end = now_ns();
	r->cpu_self1 = cpu_self_ns();
	r->cpu_srv1 = cpu_proc_ns(O.server_pid);
}

static void peer_print(const char *sys, struct peer_run *r, uint64_t held)
{
	double secs = (double)(r->t_end - r->t_start) / 1e9;

	printf("result system=%s n=%" PRIu64 " batch=%u offered=%.0f secs=%.4f "
	       "rate=%.1f cpu_us=%.3f client_cpu_us=%.3f server_cpu_us=%.3f "
	       "lat_p50_us=%.1f lat_p99_us=%.1f lat_max_us=%.1f batches=%zu "
	       "held=%" PRIu64 " violations=%d\n",
	       sys, r->n, O.batch, O.rate, secs, (double)r->n / secs,
	       (double)(r->cpu_self1 - r->cpu_self0 + r->cpu_srv1 - r->cpu_srv0) /
		       1000.0 / (double)r->n,
	       (double)(r->cpu_self1 - r->cpu_self0) / 1000.0 / (double)r->n,
	       (double)(r->cpu_srv1 - r->cpu_srv0) / 1000.0 / (double)r->n,
	       lat_pct(&lat, 50), lat_pct(&lat, 99), lat_pct(&lat, 100), lat.n,
	       held, violations);
}

static int cmd_redis(void)
{
	struct timeval tv = { .tv_sec = 30 };
	redisContext *c = redisConnectWithTimeout("127.0.0.1", O.port, tv);
	char member[PAYLOAD];
	struct peer_run r = { 0 };
	uint64_t id = 0, k = 0, t_end;
	redisReply *rep;
	long long held;
	char sys[64];

	if (!c || c->err)
		die("redis 127.0.0.1:%d: %s", O.port, c ? c->errstr : "no context");
	redisSetTimeout(c, tv);
	rep = redisCommand(c, "DEL dqd");
	freeReplyObject(rep);
	peer_begin(&r);
	t_end = r.t_start + (uint64_t)(O.seconds * 1e9);
	while (now_ns() < t_end && id < O.max_n) {
		uint64_t due_ms = realtime_ns() / 1000000ULL + 3600000ULL, t0;

		if (O.rate > 0)
			sleep_until(r.t_start +
				    (uint64_t)((double)k * O.batch * 1e9 / O.rate));
		k++;
		for (unsigned int i = 0; i < O.batch; i++) {
			stamp(member, id + i);
			if (redisAppendCommand(c, "ZADD dqd %llu %b",
					       (unsigned long long)due_ms, member,
					       (size_t)PAYLOAD) != REDIS_OK)
				die("redisAppendCommand: %s", c->errstr);
		}
		t0 = now_ns();
		for (unsigned int i = 0; i < O.batch; i++) {
			if (redisGetReply(c, (void **)&rep) != REDIS_OK || !rep)
				die("redis: %s", c->errstr);
			if (rep->type != REDIS_REPLY_INTEGER || rep->integer != 1)
				die("redis: ZADD answered type %d", rep->type);
			freeReplyObject(rep);
		}
		lat_add(&lat, now_ns() - t0);
		id += O.batch;
	}
	r.n = id;
	peer_end(&r);
	rep = redisCommand(c, "ZCARD dqd");
	if (!rep || rep->type != REDIS_REPLY_INTEGER)
		die("ZCARD failed");
	held = rep->integer;
	freeReplyObject(rep);
	if ((uint64_t)held != r.n)
		violation("redis holds %lld of %" PRIu64 " acknowledged", held, r.n);
	snprintf(sys, sizeof(sys), "redis-%s", O.mode ? O.mode : "?");
	peer_print(sys, &r, (uint64_t)held);
	redisFree(c);
	return violations ? EXIT_VIOLATION : EXIT_OK;
}

struct bconn {
	int fd;
	size_t pos, len;
	char buf[1 << 16];
};

static void writeall(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			die("write: %s", strerror(errno));
		p += w;
		n -= (size_t)w;
	}
}

/* one "\r\n"-terminated line, without it */
static char *bs_line(struct bconn *c)
{
	for (;;) {
		char *e = memmem(c->buf + c->pos, c->len - c->pos, "\r\n", 2);
		ssize_t r;

		if (e) {
			char *l = c->buf + c->pos;

			*e = 0;
			c->pos = (size_t)(e - c->buf) + 2;
			return l;
		}
		if (c->pos) {
			memmove(c->buf, c->buf + c->pos, c->len - c->pos);
			c->len -= c->pos;
			c->pos = 0;
		}
		if (c->len == sizeof(c->buf))
			die("beanstalkd: line too long");
		r = read(c->fd, c->buf + c->len, sizeof(c->buf) - c->len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			die("beanstalkd: read: %s", r ? strerror(errno) : "EOF");
		c->len += (size_t)r;
	}
}

static int cmd_beanstalkd(void)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	struct bconn *c = calloc(1, sizeof(*c));
	struct timeval tv = { .tv_sec = 30 };
	struct peer_run r = { 0 };
	uint64_t id = 0, k = 0, t_end, held = 0;
	size_t cap = (size_t)O.batch * (PAYLOAD + 64), len;
	char *out = malloc(cap), *l, sys[64];
	int one = 1;

	if (!c || !out)
		die("out of memory");
	sa.sin_port = htons((uint16_t)O.port);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	c->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (c->fd < 0 || connect(c->fd, (struct sockaddr *)&sa, sizeof(sa)))
		die("beanstalkd 127.0.0.1:%d: %s", O.port, strerror(errno));
	setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	setsockopt(c->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	peer_begin(&r);
	t_end = r.t_start + (uint64_t)(O.seconds * 1e9);
	while (now_ns() < t_end && id < O.max_n) {
		uint64_t t0;

		if (O.rate > 0)
			sleep_until(r.t_start +
				    (uint64_t)((double)k * O.batch * 1e9 / O.rate));
		k++;
		len = 0;
		for (unsigned int i = 0; i < O.batch; i++) {
			len += (size_t)sprintf(out + len, "put 0 3600 120 %u\r\n",
					       PAYLOAD);
			stamp(out + len, id + i);
			len += PAYLOAD;
			memcpy(out + len, "\r\n", 2);
			len += 2;
		}
		t0 = now_ns();
		writeall(c->fd, out, len);
		for (unsigned int i = 0; i < O.batch; i++) {
			l = bs_line(c);
			if (strncmp(l, "INSERTED ", 9))
				die("beanstalkd: put answered \"%s\"", l);
		}
		lat_add(&lat, now_ns() - t0);
		id += O.batch;
	}
	r.n = id;
	peer_end(&r);
	writeall(c->fd, "stats\r\n", 7);
	l = bs_line(c);
	if (strncmp(l, "OK ", 3))
		die("beanstalkd: stats answered \"%s\"", l);
	/* YAML lines end in \n, the body in \r\n: the "line" is the body */
	l = bs_line(c);
	l = strstr(l, "current-jobs-delayed: ");
	if (!l || sscanf(l, "current-jobs-delayed: %" SCNu64, &held) != 1)
		die("beanstalkd: no current-jobs-delayed in stats");
	if (held != r.n)
		violation("beanstalkd holds %" PRIu64 " delayed jobs of %" PRIu64
			  " acknowledged", held, r.n);
	snprintf(sys, sizeof(sys), "beanstalkd-%s", O.mode ? O.mode : "?");
	peer_print(sys, &r, held);
	close(c->fd);
	return violations ? EXIT_VIOLATION : EXIT_OK;
}

/* ----------------------------------------------------------------- main */

static void usage(void)
{
	fprintf(stderr,
		"usage: durable_bench disk|dq|consume|fill|recover|crash|dropcache|"
		"redis|beanstalkd [--dir D] [--mode M] [--seconds S] [--rate R] "
		"[--batch B] [--max-n N] [--n N] [--sync-n N] [--bw-mib M] "
		"[--port P] [--server-pid PID] [--verify-reopen] [--dmax-ms MS] "
		"[--kill-ms MS] [--segment-mib M] [--due-spread-s S] [--seed S]\n");
	exit(EXIT_FAIL);
}

int main(int argc, char **argv)
{
	const char *cmd;

	if (argc < 2)
		usage();
	cmd = argv[1];
	for (int i = 2; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

#define ARG(name) (!strcmp(a, name) && v && ++i)
		if (ARG("--dir"))
			O.dir = v;
		else if (ARG("--mode"))
			O.mode = v;
		else if (ARG("--seconds"))
			O.seconds = atof(v);
		else if (ARG("--rate"))
			O.rate = atof(v);
		else if (ARG("--batch"))
			O.batch = (unsigned int)strtoul(v, NULL, 10);
		else if (ARG("--max-n"))
			O.max_n = strtoull(v, NULL, 10);
		else if (ARG("--n"))
			O.n = strtoull(v, NULL, 10);
		else if (ARG("--sync-n"))
			O.sync_n = (unsigned int)strtoul(v, NULL, 10);
		else if (ARG("--bw-mib"))
			O.bw_mib = (unsigned int)strtoul(v, NULL, 10);
		else if (ARG("--port"))
			O.port = atoi(v);
		else if (ARG("--server-pid"))
			O.server_pid = atoi(v);
		else if (ARG("--dmax-ms"))
			O.dmax_ms = atof(v);
		else if (ARG("--kill-ms"))
			O.kill_ms = (unsigned int)strtoul(v, NULL, 10);
		else if (ARG("--segment-mib"))
			O.segment_bytes = strtoull(v, NULL, 10) << 20;
		else if (ARG("--due-spread-s"))
			O.spread_ns = (uint64_t)(atof(v) * 1e9);
		else if (ARG("--seed"))
			O.seed = strtoull(v, NULL, 10);
		else if (!strcmp(a, "--verify-reopen"))
			O.verify_reopen = 1;
		else
			usage();
#undef ARG
	}
	if (!O.batch || O.batch > 65536)
		die("--batch 1..65536");
	rng_state ^= O.seed * STAMP_MAGIC;
	setvbuf(stdout, NULL, _IOLBF, 0);

	if (!strcmp(cmd, "disk"))
		return O.dir ? cmd_disk() : (die("--dir"), 1);
	if (!strcmp(cmd, "dropcache"))
		return O.dir ? cmd_dropcache() : (die("--dir"), 1);
	if (!strcmp(cmd, "dq"))
		return cmd_dq(0, 0);
	if (!strcmp(cmd, "fill"))
		return cmd_dq(1, 0);
	if (!strcmp(cmd, "consume"))
		return cmd_dq(0, 1);
	if (!strcmp(cmd, "recover"))
		return cmd_recover();
	if (!strcmp(cmd, "crash"))
		return cmd_crash();
	if (!strcmp(cmd, "idle"))
		return cmd_idle();
	if (!strcmp(cmd, "redis"))
		return cmd_redis();
	if (!strcmp(cmd, "beanstalkd"))
		return cmd_beanstalkd();
	usage();
	return EXIT_FAIL;
}
