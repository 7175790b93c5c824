// SPDX-License-Identifier: LGPL-2.1 OR MIT
/*
 * attach_peer NAME COUNT: the library side of "a queue survives its
 * producer".  Attaches to the named queue through dq_queue_attach(), reaps
 * COUNT messages another process submitted (checking: never early, due
 * order, no duplicate user_data), gives their slots back, then produces
 * and reaps a few of its own on the same queue.  Run by selftests/ctl.
 * Prints one line of results; exits 0 only when everything held.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dqshim.h"

#define MS 1000000ULL
#define OWN 50

int main(int argc, char **argv)
{
	unsigned int want, got = 0, early = 0, order = 0, dup = 0, own = 0;
	uint64_t last_due = 0, deadline;
	struct dq_reaped r[64];
	struct dq_queue *q;
	unsigned char *seen;
	unsigned int i;
	int ret, n, k;

	if (argc != 3) {
		fprintf(stderr, "usage: attach_peer NAME COUNT\n");
		return 2;
	}
	want = (unsigned int)strtoul(argv[2], NULL, 0);
	ret = dq_queue_attach(argv[1], NULL, &q);
	if (ret) {
		fprintf(stderr, "attach_peer: attach %s: %s\n", argv[1],
			dq_strerror(ret));
		return 1;
	}
	seen = calloc(want + OWN, 1);
	if (!seen)
		return 1;

	deadline = dq_now_ns() + 30000 * MS;
	while (got < want && dq_now_ns() < deadline) {
		n = dq_reap(q, r, 64, 1000 * MS);
		if (n == -ETIME)
			continue;
		if (n < 0) {
			fprintf(stderr, "attach_peer: reap: %s\n",
				dq_strerror(n));
			return 1;
		}
		for (k = 0; k < n; k++) {
			uint64_t id = r[k].user_data;

			early += dq_now_ns() < r[k].due_ns;
			order += r[k].due_ns < last_due;
			last_due = r[k].due_ns;
			if (id >= want || seen[id]++)
				dup++;
			got++;
			dq_done(q, r[k].slot);
		}
	}

	/* Our own messages, in slots the library now knows are free. */
	for (i = 0; i < OWN; i++) {
		struct dq_msg m;

		ret = dq_reserve(q, &m);
		if (!ret)
			ret = dq_commit_delay(q, &m, 8, 10 * MS, want + i);
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
	deadline = dq_now_ns() + 30000 * MS;
	while (own < OWN && dq_now_ns() < deadline) {
		n = dq_reap(q, r, 64, 1000 * MS);
		if (n == -ETIME)
			continue;
		if (n < 0)
			return 1;
		for (k = 0; k < n; k++) {
			uint64_t id = r[k].user_data;

			early += dq_now_ns() < r[k].due_ns;
			if (id < want || id >= want + OWN || seen[id]++)
				dup++;
			own++;
			dq_done(q, r[k].slot);
		}
	}
	printf("{\"reaped\":%u,\"own\":%u,\"early\":%u,\"out_of_order\":%u,\"dup\":%u}\n",
	       got, own, early, order, dup);
	dq_queue_close(q);
	free(seen);
	return got == want && own == OWN && !early && !order && !dup ? 0 : 1;
}
