// SPDX-License-Identifier: LGPL-2.1 OR MIT
/*
 * dqlat - where does a dq message's lateness come from?
 *
 * Splits the time from a message's due time to the moment its consumer
 * reaps it into timer lateness, wake delay, run-queue delay and reap delay,
 * next to the end-to-end figure, as log2 histograms with percentiles.
 * See docs/observability.md.
 *
 * USAGE: dqlat [-p PID] [-q QUEUE] [-n NODE] [--json] [--pin] [interval [count]]
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/statfs.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "dqlat.h"
#include "dqlat.skel.h"

#ifndef BPF_FS_MAGIC
#define BPF_FS_MAGIC		0xcafe4a11
#endif

#define PIN_DIR			"/sys/fs/bpf/dq"

static struct env {
	pid_t pid;
	long queue;		/* -1: every queue */
	int node;		/* -1: every node */
	bool json;
	bool pin;
	bool sched_only;
	bool raw_tp;
	bool timestamp;
	bool verbose;
	unsigned long interval;	/* seconds */
	unsigned long times;
} env = {
	.queue = -1,
	.node = -1,
	.interval = 99999999,
	.times = 99999999,
};

static volatile sig_atomic_t exiting;

static const struct part_desc {
	const char *key;	/* JSON name */
	const char *title;
} parts[DQLAT_NR_PARTS] = {
	[DQLAT_TIMER] = { "timer", "timer lateness (due -> release)" },
	[DQLAT_WAKE] = { "wake", "wake delay (release -> consumer woken)" },
	[DQLAT_RUNQ] = { "runq", "run-queue delay (woken -> on CPU)" },
	[DQLAT_REAP] = { "reap", "reap delay (on CPU -> reaped)" },
	[DQLAT_E2E] = { "e2e", "end to end (due -> reaped), per message" },
	[DQLAT_CHAIN] = { "release_to_reap",
			  "release -> reaped, per wake-up (= wake + runq + reap)" },
};

static const double pcts[] = { 0.50, 0.99, 0.999 };
static const char *const pct_keys[] = { "p50_us", "p99_us", "p999_us" };
#define NR_PCTS (sizeof(pcts) / sizeof(pcts[0]))

static void usage(FILE *f)
{
	fprintf(f,
"Usage: dqlat [OPTIONS] [interval [count]]\n"
"Split dq message lateness into timer, wake, run-queue and reap delay.\n"
"\n"
"  -p, --pid PID      only queues used by (and consumers of) process PID;\n"
"                     with --sched-only, only PID's threads\n"
"  -q, --queue ID     only queue ID\n"
"  -n, --node NODE    only queues served by NUMA node NODE's engine\n"
"  -j, --json         one JSON object per interval (JSON lines)\n"
"  -P, --pin          pin the maps under " PIN_DIR " while running\n"
"  -s, --sched-only   only the run-queue delay (sched_wakeup -> sched_switch)\n"
"                     of every task, or of PID's threads; needs no dq.ko\n"
"  -r, --raw-tp       attach the sched events with raw_tp, not tp_btf\n"
"  -T, --timestamp    print a timestamp with each interval\n"
"  -v, --verbose      libbpf debug output\n"
"  -h, --help\n"
"\n"
"Runs until Ctrl-C (or SIGTERM) without interval, then prints once.\n"
"Percentiles are computed from the log2 histograms: pXX_us is the upper\n"
"edge of the bucket holding that percentile (the value is below it and at\n"
"least half of it); count, mean and max are exact.\n"
"\n"
"Examples:\n"
"  dqlat                 # until Ctrl-C, then histograms of all five parts\n"
"  dqlat 1 10            # ten 1-second intervals\n"
"  dqlat -q 3 --json 5   # queue 3, a JSON object every 5 s\n");
}

static int parse_long(const char *s, long min, long max, long *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 0);
	if (errno || end == s || *end || v < min || v > max)
		return -1;
	*out = v;
	return 0;
}

static int parse_args(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "pid", required_argument, NULL, 'p' },
		{ "queue", required_argument, NULL, 'q' },
		{ "node", required_argument, NULL, 'n' },
		{ "json", no_argument, NULL, 'j' },
		{ "pin", no_argument, NULL, 'P' },
		{ "sched-only", no_argument, NULL, 's' },
		{ "raw-tp", no_argument, NULL, 'r' },
		{ "timestamp", no_argument, NULL, 'T' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{}
	};
	int c, npos = 0;
	long v;

	while ((c = getopt_long(argc, argv, "p:q:n:jPsrTvh", opts, NULL)) != -1) {
		switch (c) {
		case 'p':
			if (parse_long(optarg, 1, INT_MAX, &v))
				goto bad;
			env.pid = v;
			break;
		case 'q':
			if (parse_long(optarg, 0, UINT32_MAX, &v))
				goto bad;
			env.queue = v;
			break;
		case 'n':
			if (parse_long(optarg, 0, INT_MAX, &v))
				goto bad;
			env.node = v;
			break;
		case 'j': env.json = true; break;
		case 'P': env.pin = true; break;
		case 's': env.sched_only = true; break;
		case 'r': env.raw_tp = true; break;
		case 'T': env.timestamp = true; break;
		case 'v': env.verbose = true; break;
		case 'h': usage(stdout); exit(0);
		default: usage(stderr); return -1;
		}
	}
	for (; optind < argc; optind++, npos++) {
		if (parse_long(argv[optind], 1, LONG_MAX, &v)) {
			fprintf(stderr, "dqlat: invalid number '%s'\n",
				argv[optind]);
			return -1;
		}
		if (npos == 0) {
			env.interval = v;
		} else if (npos == 1) {
			env.times = v;
		} else {
			fprintf(stderr, "dqlat: unexpected argument '%s'\n",
				argv[optind]);
			return -1;
		}
	}
	return 0;
bad:
	fprintf(stderr, "dqlat: invalid argument to -%c: '%s'\n", c, optarg);
	return -1;
}

static int libbpf_print(enum libbpf_print_level level, const char *fmt,
			va_list args)
{
	if (level == LIBBPF_DEBUG && !env.verbose)
		return 0;
	if (level == LIBBPF_INFO && !env.verbose)
		return 0;
	return vfprintf(stderr, fmt, args);
}

static void on_signal(int sig)
{
	(void)sig;
	exiting = 1;
}

/* ---- loading ---------------------------------------------------------- */

static bool is_sched_prog(const struct bpf_program *p)
{
	return strncmp(bpf_program__name(p), "sched_", 6) == 0;
}

static bool is_btf_prog(const struct bpf_program *p)
{
	const char *n = bpf_program__name(p);
	size_t len = strlen(n);

	return len > 4 && strcmp(n + len - 4, "_btf") == 0;
}

/* Open and load with the tp_btf (raw == false) or raw_tp sched programs. */
static struct dqlat_bpf *open_and_load(bool raw, int *errp)
{
	struct dqlat_bpf *obj;
	struct bpf_program *prog;
	int err;

	obj = dqlat_bpf__open();
	if (!obj) {
		*errp = -errno;
		return NULL;
	}
	obj->rodata->targ_tgid = env.pid;
	obj->rodata->filter_queue = env.queue >= 0;
	obj->rodata->targ_queue = env.queue >= 0 ? env.queue : 0;
	obj->rodata->filter_node = env.node >= 0;
	obj->rodata->targ_node = env.node >= 0 ? env.node : 0;
	obj->rodata->sched_only = env.sched_only;

	bpf_object__for_each_program(prog, obj->obj) {
		bool load;

		if (is_sched_prog(prog))
			load = is_btf_prog(prog) != raw;
		else
			load = !env.sched_only;
		/* One run per message: only when the filters need it. */
		if (prog == obj->progs.dq_submit)
			load = load && (env.pid || env.node >= 0);
		bpf_program__set_autoload(prog, load);
	}
	err = dqlat_bpf__load(obj);
	if (err) {
		dqlat_bpf__destroy(obj);
		*errp = err;
		return NULL;
	}
	return obj;
}

/* ---- pinning ---------------------------------------------------------- */

static struct bpf_map *pinned_maps(struct dqlat_bpf *obj, int i)
{
	struct bpf_map *maps[] = {
		obj->maps.hists, obj->maps.counters, obj->maps.queues,
		obj->maps.consumers, obj->maps.wakeup_ts,
	};

	return i < (int)(sizeof(maps) / sizeof(maps[0])) ? maps[i] : NULL;
}

static void unpin_maps(struct dqlat_bpf *obj)
{
	char path[PATH_MAX];
	struct bpf_map *m;
	int i;

	for (i = 0; (m = pinned_maps(obj, i)); i++) {
		snprintf(path, sizeof(path), PIN_DIR "/%s", bpf_map__name(m));
		bpf_map__unpin(m, path);
	}
	rmdir(PIN_DIR);
}

static int pin_maps(struct dqlat_bpf *obj)
{
	char path[PATH_MAX];
	struct statfs st;
	struct bpf_map *m;
	int i, err;

	if (statfs("/sys/fs/bpf", &st) || st.f_type != BPF_FS_MAGIC) {
		fprintf(stderr, "dqlat: /sys/fs/bpf is not a bpf filesystem "
			"(mount -t bpf bpf /sys/fs/bpf)\n");
		return -ENOTSUP;
	}
	if (mkdir(PIN_DIR, 0700) && errno != EEXIST) {
		err = -errno;
		fprintf(stderr, "dqlat: mkdir %s: %s\n", PIN_DIR, strerror(errno));
		return err;
	}
	for (i = 0; (m = pinned_maps(obj, i)); i++) {
		snprintf(path, sizeof(path), PIN_DIR "/%s", bpf_map__name(m));
		/* A pin left by a dqlat that was killed: replace it. */
		unlink(path);
		err = bpf_map__pin(m, path);
		if (err) {
			fprintf(stderr, "dqlat: pin %s: %s\n", path, strerror(-err));
			unpin_maps(obj);
			return err;
		}
	}
	return 0;
}

/* ---- reading ---------------------------------------------------------- */

static int nr_cpus;

static int read_hists(int fd, struct dqlat_hist *out)
{
	struct dqlat_hist *v;
	__u32 key;
	int cpu, s;

	v = calloc(nr_cpus, sizeof(*v));
	if (!v)
		return -ENOMEM;
	memset(out, 0, sizeof(*out) * DQLAT_NR_PARTS);
	for (key = 0; key < DQLAT_NR_PARTS; key++) {
		if (bpf_map_lookup_elem(fd, &key, v)) {
			free(v);
			return -errno;
		}
		for (cpu = 0; cpu < nr_cpus; cpu++) {
			out[key].count += v[cpu].count;
			out[key].sum_ns += v[cpu].sum_ns;
			if (v[cpu].max_ns > out[key].max_ns)
				out[key].max_ns = v[cpu].max_ns;
			for (s = 0; s < DQLAT_MAX_SLOTS; s++)
				out[key].slots[s] += v[cpu].slots[s];
		}
	}
	/* Start the next interval from zero. */
	memset(v, 0, sizeof(*v) * nr_cpus);
	for (key = 0; key < DQLAT_NR_PARTS; key++)
		bpf_map_update_elem(fd, &key, v, BPF_ANY);
	free(v);
	return 0;
}

#define NR_COUNTERS (sizeof(struct dqlat_counters) / sizeof(__u64))

static int read_counters(int fd, struct dqlat_counters *out)
{
	__u64 *v, *o = (__u64 *)out;
	__u32 key = 0;
	size_t i;
	int cpu;

	v = calloc(nr_cpus, sizeof(struct dqlat_counters));
	if (!v)
		return -ENOMEM;
	memset(out, 0, sizeof(*out));
	if (bpf_map_lookup_elem(fd, &key, v)) {
		free(v);
		return -errno;
	}
	for (cpu = 0; cpu < nr_cpus; cpu++)
		for (i = 0; i < NR_COUNTERS; i++)
			o[i] += v[cpu * NR_COUNTERS + i];
	memset(v, 0, sizeof(struct dqlat_counters) * nr_cpus);
	bpf_map_update_elem(fd, &key, v, BPF_ANY);
	free(v);
	return 0;
}

/* Messages released and not reaped yet, over every queue seen (a gauge). */
static unsigned long long read_unreaped(int fd)
{
	unsigned long long sum = 0;
	struct dqlat_queue q;
	__u32 key, next;
	int err;

	for (err = bpf_map_get_next_key(fd, NULL, &next); !err;
	     err = bpf_map_get_next_key(fd, &key, &next)) {
		key = next;
		if (!bpf_map_lookup_elem(fd, &key, &q) && q.valid &&
		    q.tail >= q.head)
			sum += q.tail - q.head;
	}
	return sum;
}

/* Bucket index holding quantile @q of @h, -1 when empty. */
static int pct_slot(const struct dqlat_hist *h, double q)
{
	__u64 target, cum = 0;
	int s;

	if (!h->count)
		return -1;
	target = (__u64)(q * (double)h->count + 0.999999);
	if (target < 1)
		target = 1;
	for (s = 0; s < DQLAT_MAX_SLOTS; s++) {
		cum += h->slots[s];
		if (cum >= target)
			return s;
	}
	return DQLAT_MAX_SLOTS - 1;
}

/* Bucket s holds [lo, hi) us: [0, 2) for s == 0, else [2^s, 2^(s+1)). */
static unsigned long long slot_lo(int s)
{
	return s ? 1ULL << s : 0;
}

static unsigned long long slot_hi(int s)
{
	return 1ULL << (s + 1);
}

static long long pct_us(const struct dqlat_hist *h, double q)
{
	int s = pct_slot(h, q);

	return s < 0 ? -1 : (long long)slot_hi(s);
}

static double mean_us(const struct dqlat_hist *h)
{
	return h->count ? (double)h->sum_ns / (double)h->count / 1000.0 : 0.0;
}

/* ---- the consistency check -------------------------------------------- */

struct check {
	bool have_chains;
	bool split_ok;		/* parts add up to release -> reap, none < 0 */
	bool never_early;
	int e2e_vs_timer;	/* 1 ok, 0 failed, -1 not comparable */
	bool ok;
};

static void run_check(const struct dqlat_hist *h,
		      const struct dqlat_counters *c, struct check *ck)
{
	const struct dqlat_hist *w = &h[DQLAT_WAKE], *r = &h[DQLAT_RUNQ],
		*p = &h[DQLAT_REAP], *ch = &h[DQLAT_CHAIN],
		*t = &h[DQLAT_TIMER], *e = &h[DQLAT_E2E];
	size_t i;

	ck->have_chains = ch->count > 0;
	ck->split_ok = w->count == ch->count && r->count == ch->count &&
		       p->count == ch->count &&
		       w->sum_ns + r->sum_ns + p->sum_ns == ch->sum_ns &&
		       !c->order;
	ck->never_early = !c->early;
	/*
	 * Every message's end-to-end time is its timer lateness plus what
	 * follows the release, so over the same messages the e2e
	 * distribution dominates the timer one: sum and every percentile
	 * bucket at least as high.  Only the same messages compare: both
	 * counts equal (no message released in one interval and reaped in
	 * the next).
	 */
	ck->e2e_vs_timer = -1;
	if (t->count && t->count == e->count) {
		ck->e2e_vs_timer = e->sum_ns >= t->sum_ns;
		for (i = 0; i < NR_PCTS; i++)
			if (pct_slot(e, pcts[i]) < pct_slot(t, pcts[i]))
				ck->e2e_vs_timer = 0;
	}
	ck->ok = ck->split_ok && ck->never_early && ck->e2e_vs_timer != 0;
}

/* ---- printing --------------------------------------------------------- */

static void print_stars(unsigned long long val, unsigned long long max, int width)
{
	int n = max ? (int)(val * width / max) : 0, i;

	for (i = 0; i < width; i++)
		putchar(i < n ? '*' : ' ');
	if (val > max)
		putchar('+');
}

static void print_hist_text(const struct dqlat_hist *h)
{
	unsigned long long max = 0;
	int s, last = -1;

	for (s = 0; s < DQLAT_MAX_SLOTS; s++) {
		if (h->slots[s])
			last = s;
		if (h->slots[s] > max)
			max = h->slots[s];
	}
	if (last < 0)
		return;
	printf("%*s%-*s : count    distribution\n", 5, "", 19, "usecs");
	for (s = 0; s <= last; s++) {
		printf("%10llu -> %-10llu : %-8llu |", slot_lo(s),
		       slot_hi(s) - 1, (unsigned long long)h->slots[s]);
		print_stars(h->slots[s], max, 40);
		printf("|\n");
	}
}

static unsigned long long unreaped;

/* dq_submit is only traced with -p or -n. */
static bool submit_traced(void)
{
	return !env.sched_only && (env.pid || env.node >= 0);
}

static const char *submit_str(const struct dqlat_counters *c)
{
	static char buf[32];

	if (!submit_traced())
		return "-";
	snprintf(buf, sizeof(buf), "%llu", (unsigned long long)c->submit);
	return buf;
}

static void print_text(const struct dqlat_hist *h,
		       const struct dqlat_counters *c, const struct check *ck)
{
	int i, first = env.sched_only ? DQLAT_RUNQ : 0;
	int last = env.sched_only ? DQLAT_RUNQ : DQLAT_NR_PARTS - 1;
	size_t k;

	if (env.timestamp) {
		char buf[32];
		time_t t = time(NULL);

		strftime(buf, sizeof(buf), "%H:%M:%S", localtime(&t));
		printf("%s\n", buf);
	}
	printf("%-16s %9s %10s %8s %8s %8s %11s\n", "part", "count",
	       "mean(us)", "p50<", "p99<", "p99.9<", "max(us)");
	for (i = first; i <= last; i++) {
		printf("%-16s %9llu %10.1f", parts[i].key,
		       (unsigned long long)h[i].count, mean_us(&h[i]));
		for (k = 0; k < NR_PCTS; k++) {
			long long v = pct_us(&h[i], pcts[k]);

			if (v < 0)
				printf(" %8s", "-");
			else
				printf(" %8lld", v);
		}
		printf(" %11.1f\n", h[i].max_ns / 1000.0);
	}
	for (i = first; i <= last; i++) {
		if (!h[i].count)
			continue;
		printf("\n%s\n", parts[i].title);
		print_hist_text(&h[i]);
	}
	if (env.sched_only) {
		printf("\n");
		return;
	}
	printf("\nevents: submit %s reject %llu release %llu ready %llu park %llu "
	       "wake %llu reap %llu cancel %llu\n", submit_str(c),
	       (unsigned long long)c->reject,
	       (unsigned long long)c->release,
	       (unsigned long long)h[DQLAT_TIMER].count,
	       (unsigned long long)c->park, (unsigned long long)c->wake,
	       (unsigned long long)c->reap, (unsigned long long)c->cancel);
	printf("released, not reaped yet: %llu\n", unreaped);
	printf("wake-ups: %llu slept, %llu woken on CPU, %llu never slept; "
	       "%llu reaps without wake, %llu failed\n",
	       (unsigned long long)c->chain_slept,
	       (unsigned long long)c->chain_running,
	       (unsigned long long)c->chain_nosleep,
	       (unsigned long long)c->reap_nowake,
	       (unsigned long long)c->chain_failed);
	if (c->early || c->order || c->e2e_overflow || c->e2e_race ||
	    c->unknown_node || c->map_full || c->evicted)
		printf("anomalies: early %llu order %llu e2e_overflow %llu "
		       "e2e_race %llu unknown_node %llu map_full %llu "
		       "evicted %llu\n",
		       (unsigned long long)c->early, (unsigned long long)c->order,
		       (unsigned long long)c->e2e_overflow,
		       (unsigned long long)c->e2e_race,
		       (unsigned long long)c->unknown_node,
		       (unsigned long long)c->map_full,
		       (unsigned long long)c->evicted);
	printf("check: %s (split %s, never early %s, e2e >= timer %s)\n\n",
	       ck->ok ? "ok" : "FAILED",
	       !ck->have_chains ? "n/a" : ck->split_ok ? "ok" : "FAILED",
	       ck->never_early ? "ok" : "FAILED",
	       ck->e2e_vs_timer < 0 ? "n/a" :
	       ck->e2e_vs_timer ? "ok" : "FAILED");
	fflush(stdout);
}

static void print_json_hist(const struct dqlat_hist *h)
{
	bool first = true;
	size_t k;
	int s;

	printf("{\"count\":%llu,\"sum_ns\":%llu,\"max_ns\":%llu,"
	       "\"mean_us\":%.3f,\"max_us\":%.3f",
	       (unsigned long long)h->count, (unsigned long long)h->sum_ns,
	       (unsigned long long)h->max_ns, mean_us(h), h->max_ns / 1000.0);
	for (k = 0; k < NR_PCTS; k++) {
		long long v = pct_us(h, pcts[k]);

		if (v < 0)
			printf(",\"%s\":null", pct_keys[k]);
		else
			printf(",\"%s\":%lld", pct_keys[k], v);
	}
	printf(",\"hist\":[");
	for (s = 0; s < DQLAT_MAX_SLOTS; s++) {
		if (!h->slots[s])
			continue;
		printf("%s{\"lo_us\":%llu,\"hi_us\":%llu,\"count\":%llu}",
		       first ? "" : ",", slot_lo(s), slot_hi(s),
		       (unsigned long long)h->slots[s]);
		first = false;
	}
	printf("]}");
}

#define JC(name) printf("%s\"" #name "\":%llu", sep, \
			(unsigned long long)c->name), sep = ","

static void print_json(const struct dqlat_hist *h,
		       const struct dqlat_counters *c, const struct check *ck,
		       double interval_s, bool raw)
{
	const char *sep = "";
	struct timespec ts;
	int i;

	clock_gettime(CLOCK_REALTIME, &ts);
	printf("{\"time\":%lld.%03ld,\"interval_s\":%.3f,\"mode\":\"%s\","
	       "\"sched_attach\":\"%s\",\"filter\":{\"pid\":%d,\"queue\":%ld,"
	       "\"node\":%d},\"parts\":{",
	       (long long)ts.tv_sec, ts.tv_nsec / 1000000, interval_s,
	       env.sched_only ? "sched-only" : "dq", raw ? "raw_tp" : "tp_btf",
	       env.pid, env.queue, env.node);
	for (i = 0; i < DQLAT_NR_PARTS; i++) {
		printf("%s\"%s\":", i ? "," : "", parts[i].key);
		print_json_hist(&h[i]);
	}
	printf("},\"counters\":{");
	if (submit_traced())
		JC(submit);
	else
		printf("\"submit\":null"), sep = ",";
	JC(reject); JC(release);
	printf(",\"ready\":%llu", (unsigned long long)h[DQLAT_TIMER].count);
	JC(park); JC(wake);
	JC(reap); JC(cancel); JC(chain_slept); JC(chain_running);
	JC(chain_nosleep); JC(reap_nowake); JC(chain_failed); JC(early);
	JC(order); JC(e2e_overflow); JC(e2e_race); JC(unknown_node);
	JC(map_full); JC(evicted);
	printf("},\"unreaped\":%llu", unreaped);
	if (!env.sched_only) {
		printf(",\"check\":{\"split_ok\":%s,\"never_early\":%s,"
		       "\"e2e_ge_timer\":%s,\"ok\":%s}",
		       !ck->have_chains ? "null" : ck->split_ok ? "true" : "false",
		       ck->never_early ? "true" : "false",
		       ck->e2e_vs_timer < 0 ? "null" :
		       ck->e2e_vs_timer ? "true" : "false",
		       ck->ok ? "true" : "false");
	}
	printf("}\n");
	fflush(stdout);
}

static double mono_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	struct dqlat_hist h[DQLAT_NR_PARTS];
	struct dqlat_counters c;
	struct dqlat_bpf *obj;
	struct sigaction sa = { .sa_handler = on_signal };
	bool raw = env.raw_tp;
	double t0, t1;
	int err = 0, lerr;
	struct check ck;

	if (parse_args(argc, argv))
		return 2;
	raw = env.raw_tp;
	libbpf_set_print(libbpf_print);

	nr_cpus = libbpf_num_possible_cpus();
	if (nr_cpus < 0) {
		fprintf(stderr, "dqlat: cannot count CPUs: %s\n",
			strerror(-nr_cpus));
		return 1;
	}

	obj = open_and_load(raw, &lerr);
	if (!obj && !raw) {
		fprintf(stderr, "dqlat: tp_btf programs failed to load (%s), "
			"falling back to raw_tp\n", strerror(-lerr));
		raw = true;
		obj = open_and_load(raw, &lerr);
	}
	if (!obj) {
		fprintf(stderr, "dqlat: failed to load BPF programs: %s\n",
			strerror(-lerr));
		return 1;
	}

	err = dqlat_bpf__attach(obj);
	if (err) {
		fprintf(stderr, "dqlat: failed to attach: %s\n", strerror(-err));
		if (!env.sched_only && access("/sys/module/dq", F_OK))
			fprintf(stderr, "dqlat: the dq:* tracepoints need dq.ko "
				"loaded (or use --sched-only)\n");
		goto out;
	}
	if (env.pin) {
		err = pin_maps(obj);
		if (err)
			goto out;
	}

	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);

	fprintf(stderr, "dqlat: tracing %s (sched events: %s)%s... "
		"Hit Ctrl-C to end.\n",
		env.sched_only ? "run-queue delay" : "dq lateness",
		raw ? "raw_tp" : "tp_btf", env.pin ? ", maps pinned in " PIN_DIR : "");

	t0 = mono_s();
	while (!exiting) {
		struct timespec left = { .tv_sec = env.interval };

		/* A signal cuts the interval short and ends the run. */
		while (!exiting && nanosleep(&left, &left) && errno == EINTR)
			;
		t1 = mono_s();
		err = read_hists(bpf_map__fd(obj->maps.hists), h);
		if (!err)
			err = read_counters(bpf_map__fd(obj->maps.counters), &c);
		if (err) {
			fprintf(stderr, "dqlat: reading maps: %s\n",
				strerror(-err));
			break;
		}
		if (!env.sched_only)
			unreaped = read_unreaped(bpf_map__fd(obj->maps.queues));
		run_check(h, &c, &ck);
		if (env.json)
			print_json(h, &c, &ck, t1 - t0, raw);
		else
			print_text(h, &c, &ck);
		t0 = t1;
		if (--env.times == 0)
			break;
	}
	if (env.pin)
		unpin_maps(obj);
out:
	dqlat_bpf__destroy(obj);
	return err != 0;
}
