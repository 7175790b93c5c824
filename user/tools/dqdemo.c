// SPDX-License-Identifier: LGPL-2.1 OR MIT
/*
 * dqdemo: watch dq release messages on time.
 *
 * Commits a handful of messages with delays given out of order (some
 * equal), flushes them in one batch, reaps them as they come due and
 * prints, side by side, when each was due and when it was released and
 * reaped.  Runs on whichever backend libdqshim picks: dq.ko when /dev/dq
 * exists, the embedded user engine otherwise.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dqshim.h"

#define MS 1000000ULL

static const uint32_t delays_ms[] = {
	900, 100, 1500, 300, 300, 300, 50, 1200, 600, 20, 2000, 750,
};
#define NMSG (sizeof(delays_ms) / sizeof(delays_ms[0]))

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

int main(void)
{
	uint64_t late[NMSG], start, max_late = 0;
	unsigned int i, got = 0, early = 0;
	struct dq_params p;
	struct dqshim_queue *q;
	int ret;

	dq_params_init(&p);
	p.slot_count = 64;
	p.slot_size = 128;
	ret = dq_queue_open(&p, &q);
	if (ret) {
		fprintf(stderr, "dqdemo: open: %s\n", dq_strerror(ret));
		return 1;
	}
	printf("dq demo: %u messages, backend %s\n", (unsigned int)NMSG,
	       dq_backend_name(dq_queue_backend(q)));

	start = dq_now_ns();
	for (i = 0; i < NMSG; i++) {
		struct dqshim_msg m;

		ret = dq_reserve(q, &m);
		if (!ret) {
			snprintf(m.data, m.cap, "message %u, due in %u ms", i,
				 delays_ms[i]);
			ret = dq_commit(q, &m, strlen(m.data) + 1,
					start + delays_ms[i] * MS, i);
		}
		if (ret) {
			fprintf(stderr, "dqdemo: commit: %s\n",
				dq_strerror(ret));
			return 1;
		}
	}
	ret = dq_flush(q);
	if (ret != (int)NMSG) {
		fprintf(stderr, "dqdemo: flush: %s\n",
			dq_strerror(ret < 0 ? ret : -EIO));
		return 1;
	}

	printf("\n%4s  %-28s %10s %12s %12s %9s\n", "id", "payload (read in place)",
	       "due ms", "released ms", "reaped ms", "late us");
	while (got < NMSG) {
		struct dq_reaped r[NMSG];
		int n = dq_reap(q, r, NMSG, 5000 * MS), k;
		uint64_t now = dq_now_ns();

		if (n < 0) {
			fprintf(stderr, "dqdemo: reap: %s\n", dq_strerror(n));
			return 1;
		}
		for (k = 0; k < n; k++) {
			uint64_t l = now - r[k].due_ns;

			early += now < r[k].due_ns;
			late[got++] = l;
			if (l > max_late)
				max_late = l;
			printf("%4llu  %-28.28s %10.3f %12.3f %12.3f %9.1f\n",
			       (unsigned long long)r[k].user_data,
			       (const char *)r[k].data,
			       (r[k].due_ns - start) / 1e6,
			       (r[k].release_ns - start) / 1e6,
			       (now - start) / 1e6, l / 1e3);
			dq_done(q, r[k].slot);
		}
	}
	qsort(late, NMSG, sizeof(late[0]), cmp_u64);
	printf("\n%u released, %u early; lateness (reaped - due): median %.1f us, max %.1f us\n",
	       got, early, late[NMSG / 2] / 1e3, max_late / 1e3);
	dq_queue_close(q);
	return early ? 1 : 0;
}
