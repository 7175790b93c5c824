// SPDX-License-Identifier: LGPL-2.1 OR MIT
/*
 * dqpeer - a producer or consumer of a named dq queue, for the control-plane
 * tests (selftests/ctl/run.sh).  It speaks the raw ABI: DQ_IOC_ATTACH by
 * name, mmap of the three regions, DQ_IOC_SUBMIT and DQ_IOC_WAIT.
 *
 *   dqpeer attach NAME
 *	attach and detach; prints the queue's geometry.
 *   dqpeer produce NAME -n COUNT [--first SEQ] [--slot-base S] [--delay NS]
 *		  [--spacing NS] [--len BYTES] [--allow-reject]
 *	submit COUNT messages, user_data = SEQ, SEQ+1, ...; message i due at
 *	start + delay + i * spacing in slot slot-base + i; the payload holds
 *	the sequence number.  Exits without reaping.
 *   dqpeer consume NAME -n COUNT [--first SEQ] [--timeout NS] [--dump FILE]
 *		  [--linger NS]
 *	reap until COUNT messages came; checks they come in sequence, never
 *	early, with their payload intact.  --linger waits that much longer
 *	and counts anything more (duplicates).  --dump writes one line per
 *	message: seq due_ns release_ns reap_ns.
 *   dqpeer window FILE FROM_NS TO_NS [COST_NS]
 *	releases in a --dump file with FROM <= release_ns < TO: count, rate,
 *	largest gap; with COST_NS (1 s / rate) also the gaps longer than
 *	COST + 10 ms (dq.ko's pacing catch-up bound) and their excess, the
 *	release time such stalls lose for good.
 *   dqpeer hold NAME NS
 *	attach, sleep NS, then try to submit one message (slot 0): prints the
 *	result (e.g. after the queue was force-deleted meanwhile).
 *   dqpeer now
 *	CLOCK_MONOTONIC in ns.
 *
 * Output is one JSON object on stdout.  Exit status: 0 success, 1 usage,
 * 2 a system call failed (attach prints the errno name), 3 a check failed.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <linux/dq.h>

#define NSEC_PER_SEC	1000000000ULL

struct ring {
	void *map;
	size_t size;
	uint32_t *producer, *consumer, *flags;
	void *entries;
	uint32_t mask;
	uint32_t nr;
};

struct peer {
	int fd;
	struct dq_attach at;
	struct ring sq, rq;
	uint8_t *arena;
	size_t arena_size;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * NSEC_PER_SEC + (uint64_t)ts.tv_nsec;
}

static const char *errname(int e)
{
	switch (e) {
	case EACCES: return "EACCES";
	case EPERM: return "EPERM";
	case ENOENT: return "ENOENT";
	case EINVAL: return "EINVAL";
	case EBUSY: return "EBUSY";
	case ENODEV: return "ENODEV";
	case ENXIO: return "ENXIO";
	case ENOSPC: return "ENOSPC";
	case ETIME: return "ETIME";
	case EPROTO: return "EPROTO";
	default: return "E?";
	}
}

static _Noreturn void usage(void)
{
	fputs("usage: dqpeer attach NAME | produce NAME -n N [opts] | "
	      "consume NAME -n N [opts] | window FILE FROM TO | hold NAME NS | now\n",
	      stderr);
	exit(1);
}

static uint64_t num(const char *s)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (!*s || *end || errno) {
		fprintf(stderr, "dqpeer: '%s' is not a number\n", s);
		exit(1);
	}
	return v;
}

static int map_ring(int fd, struct ring *r, const struct dq_ring_offsets *o,
		    uint64_t off)
{
	r->size = o->map_size;
	r->map = mmap(NULL, r->size, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		      (off_t)off);
	if (r->map == MAP_FAILED)
		return -errno;
	r->producer = (uint32_t *)((char *)r->map + o->producer);
	r->consumer = (uint32_t *)((char *)r->map + o->consumer);
	r->flags = (uint32_t *)((char *)r->map + o->flags);
	r->entries = (char *)r->map + o->entries;
	r->nr = o->ring_entries;
	r->mask = o->ring_entries - 1;
	return 0;
}

/* Attach to @name; 0 or -errno (the attach's own failure). */
static int peer_attach(struct peer *p, const char *name, bool map)
{
	int ret;

	memset(p, 0, sizeof(*p));
	p->fd = open("/dev/" DQ_DEVICE_NAME, O_RDWR | O_CLOEXEC);
	if (p->fd < 0)
		return -errno;
	snprintf(p->at.name, sizeof(p->at.name), "%s", name);
	if (ioctl(p->fd, DQ_IOC_ATTACH, &p->at) < 0)
		return -errno;
	if (!map)
		return 0;
	ret = map_ring(p->fd, &p->sq, &p->at.setup.submit, DQ_OFF_SUBMIT_RING);
	if (!ret)
		ret = map_ring(p->fd, &p->rq, &p->at.setup.ready,
			       DQ_OFF_READY_RING);
	if (ret)
		return ret;
	p->arena_size = p->at.setup.arena_size;
	p->arena = mmap(NULL, p->arena_size, PROT_READ | PROT_WRITE, MAP_SHARED,
			p->fd, (off_t)DQ_OFF_ARENA);
	if (p->arena == MAP_FAILED)
		return -errno;
	return 0;
}

static void die_attach(const char *name, int err)
{
	fprintf(stderr, "dqpeer: attach %s: %s (%s)\n", name, strerror(-err),
		errname(-err));
	printf("{\"attached\":false,\"errno\":\"%s\"}\n", errname(-err));
	exit(2);
}

static uint8_t *slot_ptr(struct peer *p, uint32_t slot)
{
	return p->arena + (size_t)slot * p->at.setup.slot_size;
}

static void fill_payload(uint8_t *b, uint32_t len, uint64_t seq)
{
	uint32_t i;

	if (len >= 8)
		memcpy(b, &seq, 8);
	for (i = 8; i < len; i++)
		b[i] = (uint8_t)(seq * 31 + i);
}

static bool check_payload(const uint8_t *b, uint32_t len, uint64_t seq)
{
	uint64_t got;
	uint32_t i;

	if (len >= 8) {
		memcpy(&got, b, 8);
		if (got != seq)
			return false;
	}
	for (i = 8; i < len; i++)
		if (b[i] != (uint8_t)(seq * 31 + i))
			return false;
	return true;
}

/* DQ_IOC_SUBMIT everything on the ring; counts accepted/rejected. */
static int submit(struct peer *p, uint64_t *acc, uint64_t *rej,
		  uint64_t *rej_reason)
{
	struct dq_reject rj[64];
	struct dq_submit s = {
		.rejects = (uintptr_t)rj,
		.reject_cap = 64,
	};
	uint32_t i;
	int ret;

	ret = ioctl(p->fd, DQ_IOC_SUBMIT, &s);
	if (ret < 0)
		return -errno;
	*acc += s.accepted;
	*rej += s.rejected;
	for (i = 0; i < s.rejected && i < 64; i++)
		if (rj[i].reason < DQ_REJ_MAX)
			rej_reason[rj[i].reason]++;
	return 0;
}

static int cmd_produce(int argc, char **argv)
{
	uint64_t n = 0, first = 0, delay = 0, spacing = 0, start;
	uint64_t acc = 0, rej = 0, rej_reason[DQ_REJ_MAX] = { 0 };
	uint32_t slot_base = 0, len = 64;
	bool allow_reject = false;
	struct peer p;
	uint64_t i;
	int ret, a;

	if (argc < 3)
		usage();
	for (a = 3; a < argc; a++) {
		if (!strcmp(argv[a], "-n") && a + 1 < argc)
			n = num(argv[++a]);
		else if (!strcmp(argv[a], "--first") && a + 1 < argc)
			first = num(argv[++a]);
		else if (!strcmp(argv[a], "--slot-base") && a + 1 < argc)
			slot_base = (uint32_t)num(argv[++a]);
		else if (!strcmp(argv[a], "--delay") && a + 1 < argc)
			delay = num(argv[++a]);
		else if (!strcmp(argv[a], "--spacing") && a + 1 < argc)
			spacing = num(argv[++a]);
		else if (!strcmp(argv[a], "--len") && a + 1 < argc)
			len = (uint32_t)num(argv[++a]);
		else if (!strcmp(argv[a], "--allow-reject"))
			allow_reject = true;
		else
			usage();
	}
	ret = peer_attach(&p, argv[2], true);
	if (ret)
		die_attach(argv[2], ret);
	if (len > p.at.setup.slot_size)
		len = p.at.setup.slot_size;
	if (slot_base + n > p.at.setup.slot_count) {
		fprintf(stderr, "dqpeer: %" PRIu64 " messages from slot %" PRIu32
			" do not fit %" PRIu32 " slots\n", n, slot_base,
			p.at.setup.slot_count);
		return 1;
	}

	start = now_ns();
	for (i = 0; i < n; i++) {
		uint32_t prod = *p.sq.producer;
		struct dq_desc *d;

		/* Ring full: have the kernel consume what is there. */
		while (prod - __atomic_load_n(p.sq.consumer, __ATOMIC_ACQUIRE) >=
		       p.sq.nr) {
			ret = submit(&p, &acc, &rej, rej_reason);
			if (ret) {
				fprintf(stderr, "dqpeer: submit: %s\n",
					strerror(-ret));
				printf("{\"accepted\":%" PRIu64 ",\"error\":\"%s\"}\n",
				       acc, errname(-ret));
				return 2;
			}
		}
		fill_payload(slot_ptr(&p, slot_base + (uint32_t)i), len,
			     first + i);
		d = (struct dq_desc *)p.sq.entries + (prod & p.sq.mask);
		memset(d, 0, sizeof(*d));
		d->due_ns = start + delay + i * spacing;
		d->user_data = first + i;
		d->slot = slot_base + (uint32_t)i;
		d->len = len;
		d->gen = (uint32_t)(first + i);
		__atomic_store_n(p.sq.producer, prod + 1, __ATOMIC_RELEASE);
	}
	ret = submit(&p, &acc, &rej, rej_reason);
	if (ret) {
		fprintf(stderr, "dqpeer: submit: %s\n", strerror(-ret));
		printf("{\"accepted\":%" PRIu64 ",\"error\":\"%s\"}\n", acc,
		       errname(-ret));
		return 2;
	}
	printf("{\"accepted\":%" PRIu64 ",\"rejected\":%" PRIu64
	       ",\"rejected_full\":%" PRIu64 ",\"start_ns\":%" PRIu64
	       ",\"done_ns\":%" PRIu64 ",\"queue_id\":%" PRIu32 "}\n",
	       acc, rej, rej_reason[DQ_REJ_FULL], start, now_ns(),
	       p.at.setup.queue_id);
	if (acc + rej != n)
		return 3;
	if (rej && !allow_reject)
		return 3;
	return 0;
}

static int cmd_consume(int argc, char **argv)
{
	uint64_t n = 0, first = 0, timeout = 30 * NSEC_PER_SEC, linger = 0;
	uint64_t got = 0, extra = 0, early = 0, bad_payload = 0, out_of_order = 0;
	uint64_t attach_ns, deadline, last_reap = 0, first_release = 0;
	uint64_t last_release = 0, last_due = 0, expect;
	const char *dump = NULL;
	FILE *df = NULL;
	struct peer p;
	int ret, a;

	if (argc < 3)
		usage();
	for (a = 3; a < argc; a++) {
		if (!strcmp(argv[a], "-n") && a + 1 < argc)
			n = num(argv[++a]);
		else if (!strcmp(argv[a], "--first") && a + 1 < argc)
			first = num(argv[++a]);
		else if (!strcmp(argv[a], "--timeout") && a + 1 < argc)
			timeout = num(argv[++a]);
		else if (!strcmp(argv[a], "--linger") && a + 1 < argc)
			linger = num(argv[++a]);
		else if (!strcmp(argv[a], "--dump") && a + 1 < argc)
			dump = argv[++a];
		else
			usage();
	}
	if (dump) {
		df = fopen(dump, "w");
		if (!df) {
			fprintf(stderr, "dqpeer: %s: %s\n", dump, strerror(errno));
			return 2;
		}
	}
	ret = peer_attach(&p, argv[2], true);
	if (ret)
		die_attach(argv[2], ret);
	attach_ns = now_ns();
	deadline = attach_ns + timeout;
	expect = first;

	for (;;) {
		uint64_t now = now_ns();
		uint32_t cons, prod;
		struct dq_wait w = { .min_ready = 1 };

		if (got >= n) {
			if (!linger)
				break;
			if (deadline > now + linger)
				deadline = now + linger;
			linger = 0;
		}
		if (now >= deadline)
			break;
		cons = *p.rq.consumer;
		prod = __atomic_load_n(p.rq.producer, __ATOMIC_ACQUIRE);
		if (prod == cons) {
			w.timeout_ns = (int64_t)(deadline - now);
			if (w.timeout_ns > 200000000)
				w.timeout_ns = 200000000;
			if (ioctl(p.fd, DQ_IOC_WAIT, &w) < 0 &&
			    errno != ETIME && errno != EINTR) {
				fprintf(stderr, "dqpeer: wait: %s\n",
					strerror(errno));
				return 2;
			}
			continue;
		}
		if (prod - cons > p.rq.nr) {
			fprintf(stderr, "dqpeer: ready ring broken\n");
			return 2;
		}
		now = now_ns();
		for (; cons != prod; cons++) {
			const struct dq_ready *r =
				(const struct dq_ready *)p.rq.entries +
				(cons & p.rq.mask);
			struct dq_ready e = *r;

			if (got >= n) {
				extra++;
				continue;
			}
			if (e.user_data != expect || e.due_ns < last_due)
				out_of_order++;
			if (e.release_ns < e.due_ns)
				early++;
			if (e.slot >= p.at.setup.slot_count ||
			    !check_payload(slot_ptr(&p, e.slot), e.len,
					   e.user_data))
				bad_payload++;
			if (!got)
				first_release = e.release_ns;
			last_release = e.release_ns;
			last_due = e.due_ns;
			expect = e.user_data + 1;
			if (df)
				fprintf(df, "%" PRIu64 " %" PRIu64 " %" PRIu64
					" %" PRIu64 "\n", (uint64_t)e.user_data,
					(uint64_t)e.due_ns,
					(uint64_t)e.release_ns, now);
			got++;
			last_reap = now;
		}
		__atomic_store_n(p.rq.consumer, cons, __ATOMIC_RELEASE);
	}
	if (df)
		fclose(df);
	printf("{\"reaped\":%" PRIu64 ",\"want\":%" PRIu64 ",\"out_of_order\":%"
	       PRIu64 ",\"early\":%" PRIu64 ",\"bad_payload\":%" PRIu64
	       ",\"extra\":%" PRIu64 ",\"attach_ns\":%" PRIu64
	       ",\"first_release_ns\":%" PRIu64 ",\"last_release_ns\":%" PRIu64
	       ",\"last_reap_ns\":%" PRIu64 ",\"next_seq\":%" PRIu64 "}\n",
	       got, n, out_of_order, early, bad_payload, extra, attach_ns,
	       first_release, last_release, last_reap, expect);
	if (got != n || out_of_order || early || bad_payload || extra)
		return 3;
	return 0;
}

static int cmd_window(int argc, char **argv)
{
	uint64_t from, to, count = 0, seq, due, rel, reap, first = 0, last = 0;
	uint64_t prev = 0, max_gap = 0, cost = 0, stalls = 0, excess = 0;
	const uint64_t catchup = 10000000;
	FILE *f;

	if (argc != 5 && argc != 6)
		usage();
	from = num(argv[3]);
	to = num(argv[4]);
	if (argc == 6)
		cost = num(argv[5]);
	f = fopen(argv[2], "r");
	if (!f) {
		fprintf(stderr, "dqpeer: %s: %s\n", argv[2], strerror(errno));
		return 2;
	}
	while (fscanf(f, "%" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64,
		      &seq, &due, &rel, &reap) == 4) {
		if (rel < from || rel >= to)
			continue;
		if (!count)
			first = rel;
		else if (rel - prev > max_gap)
			max_gap = rel - prev;
		if (count && cost && rel - prev > cost + catchup) {
			stalls++;
			excess += rel - prev - cost - catchup;
		}
		prev = last = rel;
		count++;
	}
	fclose(f);
	printf("{\"count\":%" PRIu64 ",\"rate\":%.3f,\"first_ns\":%" PRIu64
	       ",\"last_ns\":%" PRIu64 ",\"max_gap_ns\":%" PRIu64
	       ",\"stalls\":%" PRIu64 ",\"stall_excess_ns\":%" PRIu64 "}\n",
	       count,
	       to > from ? (double)count * 1e9 / (double)(to - from) : 0.0,
	       first, last, max_gap, stalls, excess);
	return 0;
}

static int cmd_attach(int argc, char **argv)
{
	struct peer p;
	int ret;

	if (argc != 3)
		usage();
	ret = peer_attach(&p, argv[2], true);
	if (ret)
		die_attach(argv[2], ret);
	printf("{\"attached\":true,\"queue_id\":%" PRIu32 ",\"slots\":%" PRIu32
	       ",\"slot_size\":%" PRIu32 ",\"submit_entries\":%" PRIu32
	       ",\"ready_entries\":%" PRIu32 ",\"node\":%" PRId32
	       ",\"granularity_ns\":%" PRIu32 ",\"features\":%" PRIu32 "}\n",
	       p.at.setup.queue_id, p.at.setup.slot_count,
	       p.at.setup.slot_size, p.at.setup.submit_entries,
	       p.at.setup.ready_entries, p.at.setup.numa_node,
	       p.at.setup.granularity_ns, p.at.setup.features);
	return 0;
}

static int cmd_hold(int argc, char **argv)
{
	uint64_t acc = 0, rej = 0, reasons[DQ_REJ_MAX] = { 0 };
	struct timespec ts;
	struct dq_desc *d;
	struct peer p;
	uint64_t ns;
	uint32_t prod;
	int ret;

	if (argc != 4)
		usage();
	ns = num(argv[3]);
	ret = peer_attach(&p, argv[2], true);
	if (ret)
		die_attach(argv[2], ret);
	fprintf(stderr, "dqpeer: attached\n");
	ts.tv_sec = (time_t)(ns / NSEC_PER_SEC);
	ts.tv_nsec = (long)(ns % NSEC_PER_SEC);
	nanosleep(&ts, NULL);
	prod = *p.sq.producer;
	d = (struct dq_desc *)p.sq.entries + (prod & p.sq.mask);
	memset(d, 0, sizeof(*d));
	d->due_ns = now_ns();
	d->slot = 0;
	d->len = 8;
	__atomic_store_n(p.sq.producer, prod + 1, __ATOMIC_RELEASE);
	ret = submit(&p, &acc, &rej, reasons);
	printf("{\"submit\":\"%s\",\"accepted\":%" PRIu64 "}\n",
	       ret ? errname(-ret) : "ok", acc);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 2)
		usage();
	if (!strcmp(argv[1], "now")) {
		printf("%" PRIu64 "\n", now_ns());
		return 0;
	}
	if (!strcmp(argv[1], "attach"))
		return cmd_attach(argc, argv);
	if (!strcmp(argv[1], "produce"))
		return cmd_produce(argc, argv);
	if (!strcmp(argv[1], "consume"))
		return cmd_consume(argc, argv);
	if (!strcmp(argv[1], "window"))
		return cmd_window(argc, argv);
	if (!strcmp(argv[1], "hold"))
		return cmd_hold(argc, argv);
	usage();
}
