// SPDX-License-Identifier: LGPL-2.1 OR MIT
/*
 * attach_peer NAME COUNT TABLE: the library side of "a queue survives its
 * producer".  Attaches to the named queue through dq_queue_attach(), reaps
 * COUNT messages another process submitted (user_data 0 .. COUNT-1, as
 * `dqpeer produce --table TABLE` recorded them), gives their slots back,
 * then produces and reaps a few of its own on the same queue.  Everything
 * is judged against the producers' records (selftests/lib/relmodel.h),
 * not against what dq reports: exactly once, never before the recorded
 * due time on this process's clock, due order, FIFO among equal due
 * times.  Run by selftests/ctl.  Prints one line of results; exits 0 only
 * when everything held.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dqshim.h"
#include "relmodel.h"

#define MS 1000000ULL
#define OWN 50

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

int main(int argc, char **argv)
{
	unsigned int want, got = 0, own = 0;
	uint64_t deadline, t;
	struct dq_reaped r[64];
	struct dqshim_queue *q;
	struct rm model;
	unsigned int i;
	long rows;
	FILE *tf;
	int ret, n, k;

	if (argc != 4) {
		fprintf(stderr, "usage: attach_peer NAME COUNT TABLE\n");
		return 2;
	}
	want = (unsigned int)strtoul(argv[2], NULL, 0);
	tf = fopen(argv[3], "r");
	if (!tf || rm_init(&model, want + OWN)) {
		fprintf(stderr, "attach_peer: %s: %s\n", argv[3], strerror(errno));
		return 1;
	}
	rows = rm_read(&model, tf, 0);
	fclose(tf);
	if (rows != (long)want) {
		fprintf(stderr, "attach_peer: %s: %ld messages, expected %u\n",
			argv[3], rows, want);
		return 1;
	}
	ret = dq_queue_attach(argv[1], NULL, &q);
	if (ret) {
		fprintf(stderr, "attach_peer: attach %s: %s\n", argv[1],
			dq_strerror(ret));
		return 1;
	}

	deadline = mono_ns() + 30000 * MS;
	while (got < want && mono_ns() < deadline) {
		n = dq_reap(q, r, 64, 1000 * MS);
		if (n == -ETIME)
			continue;
		if (n < 0) {
			fprintf(stderr, "attach_peer: reap: %s\n",
				dq_strerror(n));
			return 1;
		}
		t = mono_ns();
		for (k = 0; k < n; k++) {
			rm_seen(&model, r[k].user_data, t);
			got++;
			dq_done(q, r[k].slot);
		}
	}

	/* Our own messages, in slots the library now knows are free. */
	for (i = 0; i < OWN; i++) {
		uint64_t due;
		struct dqshim_msg m;

		ret = dq_reserve(q, &m);
		t = mono_ns();
		due = t + 10 * MS;
		rm_submit(&model, want + i, 1, i, due, t);
		if (!ret)
			ret = dq_commit(q, &m, 8, due, want + i);
		if (ret) {
			fprintf(stderr, "attach_peer: produce: %s\n",
				dq_strerror(ret));
			return 1;
		}
	}
	ret = dq_flush(q);
	if (ret != OWN) {
		fprintf(stderr, "attach_peer: flush: %d\n", ret);
		return 1;
	}
	for (t = mono_ns(), i = 0; i < OWN; i++)
		rm_in_engine(&model, want + i, t);
	deadline = mono_ns() + 30000 * MS;
	while (own < OWN && mono_ns() < deadline) {
		n = dq_reap(q, r, 64, 1000 * MS);
		if (n == -ETIME)
			continue;
		if (n < 0)
			return 1;
		t = mono_ns();
		for (k = 0; k < n; k++) {
			rm_seen(&model, r[k].user_data, t);
			own++;
			dq_done(q, r[k].slot);
		}
	}
	rm_finish(&model);
	if (model.first[0])
		fprintf(stderr, "attach_peer: first violation: %s\n", model.first);
	printf("{\"reaped\":%u,\"own\":%u,\"early\":%llu,\"out_of_order\":%llu,"
	       "\"dup\":%llu,\"lost\":%llu}\n", got, own,
	       (unsigned long long)model.early, (unsigned long long)model.order,
	       (unsigned long long)(model.dup + model.unknown),
	       (unsigned long long)model.lost);
	dq_queue_close(q);
	ret = got == want && own == OWN && !model.early && !model.order &&
	      !model.dup && !model.unknown && !model.lost;
	rm_free(&model);
	return ret ? 0 : 1;
}
