// SPDX-License-Identifier: LGPL-2.1 OR MIT
/*
 * dq_purge_bench - what closing a queue that holds messages costs, and
 * what it costs the node's other queues (docs/records/bench/kbatch.txt).
 *
 * Queue A (SLOTS slots of 64 B) holds PENDING messages due in an hour,
 * spread evenly over its slots; queue B, on the same node, has a message
 * due every 200 us over the 100 ms from just before A's close.  The
 * program pins itself to the node's first CPU (where the node's release
 * timer runs), closes A (its last reference: the detach drops every held
 * record) and reports how long close() took and B's worst release
 * lateness among the messages due while it ran, next to B's worst
 * lateness over the same window without a close (the baseline).
 *
 * Built with the selftests, not run by them: a measurement, not a test.
 *
 * usage: dq_purge_bench [SLOTS PENDING RUNS]...   (default: the two
 *        shapes of docs/records/bench/kbatch.txt, 3 runs each)
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dqtest.h"
#include "tap.h"

#define B_MSGS		500U
#define B_STEP_NS	(200 * NSEC_PER_USEC)

static int fill(struct dqt_queue *a, uint32_t slots, uint32_t pending)
{
	uint64_t far = dqt_now_ns() + 3600 * NSEC_PER_SEC;
	uint64_t stride = slots / pending;
	uint32_t i;

	for (i = 0; i < pending; i++) {
		struct dq_desc d = {
			.due_ns = far + i, .slot = (uint32_t)(i * stride),
			.gen = 1, .len = 8, .user_data = i,
		};
		int r = dqt_push_flush(a, &d);

		if (r)
			return r;
	}
	return dqt_submit(a, 0, NULL, 0, NULL) < 0 ? -EIO : 0;
}

/*
 * B's messages due from @start, one per B_STEP_NS; after they are all
 * out, the worst lateness (ns) of those due in [@from, @to).
 */
static int b_arm(struct dqt_queue *b, uint64_t start)
{
	uint32_t i;

	for (i = 0; i < B_MSGS; i++) {
		struct dq_desc d = {
			.due_ns = start + i * B_STEP_NS, .slot = i, .gen = 1,
			.len = 8, .user_data = i,
		};
		int r = dqt_push_flush(b, &d);

		if (r)
			return r;
	}
	return dqt_submit(b, 0, NULL, 0, NULL) == (int)B_MSGS ? 0 : -EIO;
}

static uint64_t b_worst(struct dqt_queue *b, uint64_t from, uint64_t to)
{
	static struct dq_ready r[B_MSGS];
	uint64_t worst = 0;
	int got = 0, n;

	while (got < (int)B_MSGS) {
		n = dqt_wait(b, 1, 5 * NSEC_PER_SEC);
		if (n <= 0)
			break;
		n = dqt_reap(b, r + got, B_MSGS - got);
		if (n <= 0)
			break;
		got += n;
	}
	for (n = 0; n < got; n++)
		if (r[n].due_ns >= from && r[n].due_ns < to &&
		    r[n].release_ns - r[n].due_ns > worst)
			worst = r[n].release_ns - r[n].due_ns;
	return got == (int)B_MSGS ? worst : UINT64_MAX;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static void report(const char *what, uint64_t *v, unsigned int n)
{
	qsort(v, n, sizeof(*v), cmp_u64);
	printf("  %-34s median %9.3f ms  min %9.3f  max %9.3f\n", what,
	       v[n / 2] / 1e6, v[0] / 1e6, v[n - 1] / 1e6);
}

static int shape(uint32_t slots, uint32_t pending, unsigned int runs)
{
	uint64_t close_ns[16], late[16], base[16];
	unsigned int run;

	if (runs > 16)
		runs = 16;
	printf("queue A: %u slots, %u pending; %u runs\n", slots, pending, runs);
	for (run = 0; run < runs; run++) {
		struct dqt_queue a, b;
		uint64_t t0, t1, start;

		struct dqt_params pa = DQT_PARAMS(.slot_count = slots, .slot_size = 64,
						  .submit_entries = 4096,
						  .ready_entries = 1024);
		struct dqt_params pb = DQT_PARAMS(.slot_count = B_MSGS, .slot_size = 64,
						  .submit_entries = 1024,
						  .ready_entries = 1024);

		pa.numa_node = 0;
		pb.numa_node = 0;
		if (dqt_queue_init(&a, &pa) || dqt_queue_init(&b, &pb)) {
			fprintf(stderr, "queue setup failed\n");
			return 1;
		}
		if (fill(&a, slots, pending)) {
			fprintf(stderr, "fill failed\n");
			return 1;
		}

		/* Baseline: the same window with nothing being closed. */
		start = dqt_now_ns() + 20 * NSEC_PER_MSEC;
		if (b_arm(&b, start))
			return 1;
		dqt_sleep_until(start + B_MSGS * B_STEP_NS);
		base[run] = b_worst(&b, start, start + B_MSGS * B_STEP_NS);

		/* A's maps go first, so close() drops the last reference. */
		dqt_queue_unmap(&a);
		start = dqt_now_ns() + 20 * NSEC_PER_MSEC;
		if (b_arm(&b, start))
			return 1;
		dqt_sleep_until(start + 10 * NSEC_PER_MSEC);
		t0 = dqt_now_ns();
		close(a.fd);
		t1 = dqt_now_ns();
		a.fd = -1;
		dqt_queue_fini(&a);
		dqt_sleep_until(start + B_MSGS * B_STEP_NS + 10 * NSEC_PER_MSEC);
		close_ns[run] = t1 - t0;
		/* B's messages due while close() ran (and one step after). */
		late[run] = b_worst(&b, t0, t1 + B_STEP_NS);
		if (late[run] == UINT64_MAX)
			late[run] = 0;	/* none was due inside a short close */
		dqt_queue_fini(&b);
	}
	report("close(A)", close_ns, runs);
	report("B worst lateness during close", late, runs);
	report("B worst lateness, no close", base, runs);
	return 0;
}

int main(int argc, char **argv)
{
	int cpu = dqt_node_first_cpu(0), i, rc = 0;

	if (cpu >= 0)
		dqt_pin_to_cpu(cpu);
	if (argc < 4) {
		rc |= shape(1U << 20, 64, 3);
		rc |= shape(1U << 18, 1U << 18, 3);
		return rc;
	}
	for (i = 1; i + 2 < argc; i += 3)
		rc |= shape(strtoul(argv[i], NULL, 0), strtoul(argv[i + 1], NULL, 0),
			    strtoul(argv[i + 2], NULL, 0));
	return rc;
}
