// SPDX-License-Identifier: LGPL-2.1 OR MIT
/*
 * dqpeer - a producer or consumer of a named dq queue, for the control-plane
 * tests (selftests/ctl/run.sh).  It speaks the raw ABI through the
 * selftests' ring client (selftests/lib/dqtest.h): DQ_IOC_ATTACH by name,
 * mmap of the three regions, DQ_IOC_SUBMIT and DQ_IOC_WAIT.
 *
 *   dqpeer attach NAME [--consumer]
 *	attach and detach; prints the queue's geometry.  --consumer: as the
 *	queue's consumer (DQ_ATTACH_F_CONSUMER).
 *   dqpeer produce NAME -n COUNT [--first SEQ] [--slot-base S] [--delay NS]
 *		  [--spacing NS] [--len BYTES] [--allow-reject] [--table FILE]
 *	submit COUNT messages, user_data = SEQ, SEQ+1, ...; message i due at
 *	start + delay + i * spacing in slot slot-base + i; the payload holds
 *	the sequence number.  Exits without reaping.  --table writes what it
 *	submitted (selftests/lib/relmodel.h): per message the due time it
 *	chose, its submission order, when it was queued and when the submit
 *	that carried it returned (rejected ones left out).
 *   dqpeer consume NAME -n COUNT --table FILE [--first SEQ] [--timeout NS]
 *		  [--dump FILE] [--linger NS]
 *	reap until COUNT messages came; judges them against the producer's
 *	table, never against what dq reports: each exactly once, never before
 *	its recorded due time on this process's clock (taken when the wait
 *	returned), in due order and FIFO among equal due times, payload
 *	intact.  --linger waits that much longer and counts anything more
 *	(duplicates).  --dump writes one line per message: seq due_ns
 *	release_ns reap_ns (due_ns: the recorded one; release_ns: dq's).
 *	--track: the queue tracks delivery; attach as its consumer
 *	(DQ_ATTACH_F_CONSUMER), read struct dq_ready_track entries and send
 *	DONE for each message, or for the first --done K only; every entry
 *	must carry --redeliveries R (default 0).  --hold: take exactly COUNT
 *	entries off the ring (more may stay on it unread), print the result,
 *	then sleep until killed: the test kills -9 a consumer holding
 *	messages in flight.
 *   dqpeer window FILE FROM_NS TO_NS [COST_NS]
 *	releases in a --dump file with FROM <= release_ns < TO: count, rate,
 *	largest gap; with COST_NS (1 s / rate) also the gaps longer than
 *	COST + 10 ms (dq.ko's pacing catch-up bound) and their excess, the
 *	release time such stalls lose for good.
 *   dqpeer windows FILE FROM_NS TO_NS WIN_NS
 *	pacing smoothness, on the consumer's own clock (reap_ns of a --dump
 *	file): [FROM, TO) cut into windows of WIN_NS; the count of each,
 *	the smallest and largest windowed rate, and the largest gap between
 *	consecutive reaps in [FROM, TO).
 *   dqpeer hold NAME
 *	attach, print "attached" on stderr, wait for end of file on stdin,
 *	then try to submit one message (slot 0): prints the result (e.g.
 *	after the queue was force-deleted meanwhile).  The caller decides
 *	when the submit happens, so no sleep races a slow kernel.
 *   dqpeer now
 *	CLOCK_MONOTONIC in ns.
 *   dqpeer sleeper NS FILE
 *	a stall witness beside a timing test: sleeps to absolute 1 ms steps
 *	for NS (or until killed) and writes "wake_ns late_ns" to FILE, line
 *	by line, for each wake more than 5 ms late: what the machine took
 *	from every process then (under TCG a host's stall of the vCPU
 *	threads), which a test may allow its own gaps, and no more.
 *
 * Output is one JSON object on stdout.  Exit status: 0 success, 1 usage,
 * 2 a system call failed (attach prints the errno name), 3 a check failed.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "dqtest.h"
#include "relmodel.h"

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
	      "consume NAME -n N [opts] | window FILE FROM TO | windows FILE FROM TO WIN |\n"
	      "       hold NAME | now | sleeper NS FILE\n",
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

/* Attach to @name and map it; on failure print why and exit 2. */
static void peer_attach_flags(struct dqt_queue *q, const char *name,
			      uint32_t flags)
{
	int ret = dqt_queue_attach_flags(q, name, flags);

	if (!ret)
		return;
	fprintf(stderr, "dqpeer: attach %s: %s (%s)\n", name, strerror(-ret),
		errname(-ret));
	printf("{\"attached\":false,\"errno\":\"%s\"}\n", errname(-ret));
	exit(2);
}

static void peer_attach(struct dqt_queue *q, const char *name)
{
	peer_attach_flags(q, name, 0);
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

/* The producer's record of what it submitted (--table), ids from --first. */
static struct rm *table;
static uint64_t table_base;

/* DQ_IOC_SUBMIT everything on the ring; counts accepted/rejected. */
static int submit(struct dqt_queue *q, uint64_t *acc, uint64_t *rej,
		  uint64_t *rej_reason)
{
	struct dq_reject rj[64];
	struct dq_submit s;
	uint32_t i;
	int ret;

	ret = dqt_submit(q, 0, rj, 64, &s);
	if (ret < 0)
		return ret;
	*acc += s.accepted;
	*rej += s.rejected;
	for (i = 0; i < s.rejected && i < 64; i++) {
		if (rj[i].reason < DQ_REJ_MAX)
			rej_reason[rj[i].reason]++;
		if (table)
			rm_withdraw(table, rj[i].user_data - table_base);
	}
	return 0;
}

static int cmd_produce(int argc, char **argv)
{
	uint64_t n = 0, first = 0, delay = 0, spacing = 0, start;
	uint64_t acc = 0, rej = 0, rej_reason[DQ_REJ_MAX] = { 0 };
	uint32_t slot_base = 0, len = 64;
	bool allow_reject = false;
	const char *table_path = NULL;
	uint64_t i, stamped = 0;
	struct rm model;
	struct dqt_queue q;
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
		else if (!strcmp(argv[a], "--table") && a + 1 < argc)
			table_path = argv[++a];
		else
			usage();
	}
	if (rm_init(&model, n)) {
		fprintf(stderr, "dqpeer: no memory for %" PRIu64 " messages\n", n);
		return 2;
	}
	table = &model;
	table_base = first;
	peer_attach(&q, argv[2]);
	if (len > q.setup.slot_size)
		len = q.setup.slot_size;
	if (slot_base + n > q.setup.slot_count) {
		fprintf(stderr, "dqpeer: %" PRIu64 " messages from slot %" PRIu32
			" do not fit %" PRIu32 " slots\n", n, slot_base,
			q.setup.slot_count);
		return 1;
	}

	start = dqt_now_ns();
	for (i = 0; i < n; i++) {
		struct dq_desc d = {
			.due_ns = start + delay + i * spacing,
			.user_data = first + i,
			.slot = slot_base + (uint32_t)i,
			.len = len,
			.gen = (uint32_t)(first + i),
		};

		/* Ring full: have the kernel consume what is there. */
		while (!dqt_sq_space(&q)) {
			ret = submit(&q, &acc, &rej, rej_reason);
			if (ret) {
				fprintf(stderr, "dqpeer: submit: %s\n",
					strerror(-ret));
				printf("{\"accepted\":%" PRIu64 ",\"error\":\"%s\"}\n",
				       acc, errname(-ret));
				return 2;
			}
			/* Everything queued before this submit is in. */
			for (uint64_t t = dqt_now_ns(); stamped < i; stamped++)
				rm_in_engine(&model, stamped, t);
		}
		fill_payload(dqt_slot_ptr(&q, d.slot), len, first + i);
		rm_submit(&model, i, 0, i, d.due_ns, dqt_now_ns());
		dqt_push(&q, &d);	/* room: checked above */
	}
	ret = submit(&q, &acc, &rej, rej_reason);
	if (ret) {
		fprintf(stderr, "dqpeer: submit: %s\n", strerror(-ret));
		printf("{\"accepted\":%" PRIu64 ",\"error\":\"%s\"}\n", acc,
		       errname(-ret));
		return 2;
	}
	for (uint64_t t = dqt_now_ns(); stamped < n; stamped++)
		rm_in_engine(&model, stamped, t);
	if (table_path) {
		FILE *tf = fopen(table_path, "w");

		if (!tf || rm_write(&model, tf, first) < 0 || fclose(tf)) {
			fprintf(stderr, "dqpeer: %s: %s\n", table_path,
				strerror(errno));
			return 2;
		}
	}
	printf("{\"accepted\":%" PRIu64 ",\"rejected\":%" PRIu64
	       ",\"rejected_full\":%" PRIu64 ",\"start_ns\":%" PRIu64
	       ",\"done_ns\":%" PRIu64 ",\"queue_id\":%" PRIu32 "}\n",
	       acc, rej, rej_reason[DQ_REJ_FULL], start, dqt_now_ns(),
	       q.setup.queue_id);
	if (acc + rej != n)
		return 3;
	if (rej && !allow_reject)
		return 3;
	return 0;
}

/*
 * The rows of the producer's table @path for ids first .. first + n - 1,
 * as a temporary file: a consumer may take a window of what was produced
 * (the rest went to another consumer).  NULL with errno on failure.
 */
static FILE *table_window(const char *path, uint64_t first, uint64_t n)
{
	FILE *in = fopen(path, "r"), *out;
	char line[256];

	if (!in)
		return NULL;
	out = tmpfile();
	while (out && fgets(line, sizeof(line), in)) {
		unsigned long long ud;

		if (sscanf(line, "%llu", &ud) == 1 && ud >= first &&
		    ud - first < n)
			fputs(line, out);
	}
	fclose(in);
	if (out)
		rewind(out);
	return out;
}

static int cmd_consume(int argc, char **argv)
{
	uint64_t n = 0, first = 0, timeout = 30 * NSEC_PER_SEC, linger = 0;
	uint64_t got = 0, extra = 0, early = 0, bad_payload = 0, out_of_order = 0;
	uint64_t attach_ns, deadline, last_reap = 0, first_release = 0;
	uint64_t last_release = 0, expect, lost;
	uint64_t done_max = UINT64_MAX, bad_redeliveries = 0, done_failed = 0;
	uint64_t redeliveries = 0;
	bool track = false, hold = false;
	struct dq_track_stats ts = { 0 };
	const char *dump = NULL, *table_path = NULL;
	FILE *df = NULL, *tf;
	struct rm model;
	struct dqt_queue q;
	long rows;
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
		else if (!strcmp(argv[a], "--table") && a + 1 < argc)
			table_path = argv[++a];
		else if (!strcmp(argv[a], "--track"))
			track = true;
		else if (!strcmp(argv[a], "--done") && a + 1 < argc)
			done_max = num(argv[++a]);
		else if (!strcmp(argv[a], "--redeliveries") && a + 1 < argc)
			redeliveries = num(argv[++a]);
		else if (!strcmp(argv[a], "--hold"))
			hold = true;
		else
			usage();
	}
	/* What to expect is the producer's record, not what dq says. */
	if (!table_path) {
		fprintf(stderr, "dqpeer: consume needs --table (from produce --table)\n");
		return 1;
	}
	tf = table_window(table_path, first, n);
	if (!tf || rm_init(&model, n)) {
		fprintf(stderr, "dqpeer: %s: %s\n", table_path, strerror(errno));
		return 2;
	}
	rows = rm_read(&model, tf, first);
	fclose(tf);
	if (rows < 0) {
		fprintf(stderr, "dqpeer: %s: %s (ids %" PRIu64 "..%" PRIu64 ")\n",
			table_path, strerror((int)-rows), first, first + n - 1);
		return 2;
	}
	if ((uint64_t)rows != n) {
		fprintf(stderr, "dqpeer: %s has %ld messages, -n says %" PRIu64 "\n",
			table_path, rows, n);
		return 1;
	}
	if (dump) {
		df = fopen(dump, "w");
		if (!df) {
			fprintf(stderr, "dqpeer: %s: %s\n", dump, strerror(errno));
			return 2;
		}
	}
	peer_attach_flags(&q, argv[2], track ? DQ_ATTACH_F_CONSUMER : 0);
	if (track != !!(q.setup.flags & DQ_SETUP_F_TRACK)) {
		fprintf(stderr, "dqpeer: --track on a queue %s tracking\n",
			track ? "without" : "with");
		return 1;
	}
	attach_ns = dqt_now_ns();
	deadline = attach_ns + timeout;
	expect = first;

	for (;;) {
		uint64_t now = dqt_now_ns();
		uint32_t cons;
		int ready;

		if (got >= n) {
			if (!linger)
				break;
			if (deadline > now + linger)
				deadline = now + linger;
			linger = 0;
		}
		if (now >= deadline)
			break;
		ready = dqt_ready_peek(&q, &cons);
		if (ready == 0) {
			int64_t t = (int64_t)(deadline - now);

			ret = dqt_wait(&q, 1, t > 200000000 ? 200000000 : t);
			if (ret < 0 && ret != -ETIME && ret != -EINTR) {
				fprintf(stderr, "dqpeer: wait: %s\n",
					strerror(-ret));
				return 2;
			}
			continue;
		}
		if (ready < 0) {
			fprintf(stderr, "dqpeer: ready ring broken\n");
			return 2;
		}
		/* Holding: what is not taken stays on the ring, unread. */
		if (hold && (uint64_t)ready > n - got)
			ready = (int)(n - got);
		now = dqt_now_ns();
		for (int k = 0; k < ready; k++) {
			struct dq_ready e = *dqt_rq_entry(&q, cons + (uint32_t)k);
			uint64_t id = e.user_data - first;

			/* now: after the wait returned, so at or after release. */
			if (rm_seen(&model, id, now) & (RM_DUP | RM_BAD_ID)) {
				extra++;
				continue;
			}
			if (e.slot >= q.setup.slot_count ||
			    !check_payload(dqt_slot_ptr(&q, e.slot), e.len,
					   e.user_data))
				bad_payload++;
			if (!got)
				first_release = e.release_ns;
			last_release = e.release_ns;
			expect = e.user_data + 1;
			if (df)
				fprintf(df, "%" PRIu64 " %" PRIu64 " %" PRIu64
					" %" PRIu64 "\n", (uint64_t)e.user_data,
					rm_due(&model, id),
					(uint64_t)e.release_ns, now);
			got++;
			last_reap = now;
			if (track) {
				const struct dq_ready_track *t =
					dqt_rq_track(&q, cons + (uint32_t)k);

				if (t->redeliveries != redeliveries)
					bad_redeliveries++;
				if (got <= done_max &&
				    dqt_done_one(&q, t, DQ_DONE_DELIVERED))
					done_failed++;
			}
		}
		dqt_ready_advance(&q, (uint32_t)ready);
	}
	if (track)
		dqt_track_stats(&q, &ts);
	if (df)
		fclose(df);
	rm_finish(&model);
	early = model.early;
	out_of_order = model.order;
	lost = model.lost;
	if (model.first[0])
		fprintf(stderr, "dqpeer: first violation: %s\n", model.first);
	printf("{\"reaped\":%" PRIu64 ",\"want\":%" PRIu64 ",\"out_of_order\":%"
	       PRIu64 ",\"early\":%" PRIu64 ",\"bad_payload\":%" PRIu64
	       ",\"extra\":%" PRIu64 ",\"lost\":%" PRIu64
	       ",\"max_late_ns\":%" PRIu64 ",\"attach_ns\":%" PRIu64
	       ",\"first_release_ns\":%" PRIu64 ",\"last_release_ns\":%" PRIu64
	       ",\"last_reap_ns\":%" PRIu64 ",\"next_seq\":%" PRIu64
	       ",\"bad_redeliveries\":%" PRIu64 ",\"done_failed\":%" PRIu64
	       ",\"inflight\":%" PRIu64 ",\"redelivered\":%" PRIu64
	       ",\"done_delivered\":%" PRIu64 "}\n",
	       got, n, out_of_order, early, bad_payload, extra, lost,
	       model.max_late, attach_ns,
	       first_release, last_release, last_reap, expect,
	       bad_redeliveries, done_failed, (uint64_t)ts.inflight,
	       (uint64_t)ts.redelivered, (uint64_t)ts.done_delivered);
	fflush(stdout);
	if (got != n || out_of_order || early || bad_payload || extra || lost ||
	    bad_redeliveries || done_failed)
		return 3;
	/* Keep the messages in flight until the test kills us. */
	while (hold)
		pause();
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

static int cmd_windows(int argc, char **argv)
{
	uint64_t from, to, win, seq, due, rel, reap, prev = 0, max_gap = 0;
	uint64_t *counts, nwin, i, n = 0, cmin = UINT64_MAX, cmax = 0;
	FILE *f;

	if (argc != 6)
		usage();
	from = num(argv[3]);
	to = num(argv[4]);
	win = num(argv[5]);
	if (to <= from || !win || (to - from) / win == 0) {
		fprintf(stderr, "dqpeer: windows: empty range\n");
		return 1;
	}
	nwin = (to - from) / win;
	counts = calloc(nwin, sizeof(*counts));
	f = fopen(argv[2], "r");
	if (!f || !counts) {
		fprintf(stderr, "dqpeer: %s: %s\n", argv[2], strerror(errno));
		return 2;
	}
	/* The dump is in reap order: reap_ns never goes down. */
	while (fscanf(f, "%" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64,
		      &seq, &due, &rel, &reap) == 4) {
		if (reap < from || reap >= from + nwin * win)
			continue;
		counts[(reap - from) / win]++;
		if (n && reap - prev > max_gap)
			max_gap = reap - prev;
		prev = reap;
		n++;
	}
	fclose(f);
	printf("{\"windows\":[");
	for (i = 0; i < nwin; i++) {
		printf("%s%" PRIu64, i ? "," : "", counts[i]);
		if (counts[i] < cmin)
			cmin = counts[i];
		if (counts[i] > cmax)
			cmax = counts[i];
	}
	printf("],\"min_rate\":%.3f,\"max_rate\":%.3f,\"max_gap_ns\":%" PRIu64
	       ",\"count\":%" PRIu64 "}\n",
	       (double)cmin * 1e9 / (double)win, (double)cmax * 1e9 / (double)win,
	       max_gap, n);
	free(counts);
	return 0;
}

static int cmd_attach(int argc, char **argv)
{
	struct dqt_queue q;

	if (argc == 4 && !strcmp(argv[3], "--consumer"))
		peer_attach_flags(&q, argv[2], DQ_ATTACH_F_CONSUMER);
	else if (argc == 3)
		peer_attach(&q, argv[2]);
	else
		usage();
	printf("{\"attached\":true,\"queue_id\":%" PRIu32 ",\"slots\":%" PRIu32
	       ",\"slot_size\":%" PRIu32 ",\"submit_entries\":%" PRIu32
	       ",\"ready_entries\":%" PRIu32 ",\"node\":%" PRId32
	       ",\"granularity_ns\":%" PRIu32 ",\"features\":%" PRIu32 "}\n",
	       q.setup.queue_id, q.setup.slot_count,
	       q.setup.slot_size, q.setup.submit_entries,
	       q.setup.ready_entries, q.setup.numa_node,
	       q.setup.granularity_ns, q.setup.features);
	return 0;
}

static int cmd_hold(int argc, char **argv)
{
	uint64_t acc = 0, rej = 0, reasons[DQ_REJ_MAX] = { 0 };
	struct dqt_queue q;
	char buf[64];
	int ret;

	if (argc != 3)
		usage();
	peer_attach(&q, argv[2]);
	fprintf(stderr, "dqpeer: attached\n");
	for (;;) {
		ssize_t n = read(STDIN_FILENO, buf, sizeof(buf));

		if (n == 0 || (n < 0 && errno != EINTR))
			break;
	}
	/* Written as it was, room or not: the submit is what is asked. */
	*dqt_sq_next(&q, 0) = (struct dq_desc){ .due_ns = dqt_now_ns(), .len = 8 };
	dqt_sq_publish(&q, 1);
	ret = submit(&q, &acc, &rej, reasons);
	printf("{\"submit\":\"%s\",\"accepted\":%" PRIu64 "}\n",
	       ret ? errname(-ret) : "ok", acc);
	return 0;
}

static int cmd_sleeper(int argc, char **argv)
{
	uint64_t t, end, now;
	struct timespec ts;
	FILE *f;

	if (argc != 4)
		usage();
	f = fopen(argv[3], "w");
	if (!f) {
		fprintf(stderr, "dqpeer: %s: %s\n", argv[3], strerror(errno));
		return 2;
	}
	setvbuf(f, NULL, _IOLBF, 0);
	t = dqt_now_ns();
	end = t + num(argv[2]);
	while (t < end) {
		t += 1000000;
		ts.tv_sec = (time_t)(t / NSEC_PER_SEC);
		ts.tv_nsec = (long)(t % NSEC_PER_SEC);
		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts,
				       NULL) == EINTR)
			;
		now = dqt_now_ns();
		if (now - t > 5000000)
			fprintf(f, "%" PRIu64 " %" PRIu64 "\n", now, now - t);
		/* After a stall, on from now: no burst of catch-up wakes. */
		if (now > t)
			t = now;
	}
	fclose(f);
	printf("{\"slept\":true}\n");
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 2)
		usage();
	if (!strcmp(argv[1], "now")) {
		printf("%" PRIu64 "\n", dqt_now_ns());
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
	if (!strcmp(argv[1], "windows"))
		return cmd_windows(argc, argv);
	if (!strcmp(argv[1], "hold"))
		return cmd_hold(argc, argv);
	if (!strcmp(argv[1], "sleeper"))
		return cmd_sleeper(argc, argv);
	usage();
}
