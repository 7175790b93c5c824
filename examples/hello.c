// SPDX-License-Identifier: LGPL-2.1 OR MIT
#include <dqshim.h>
#include <stdio.h>
#include <string.h>

int main(void)
{
	static const char *word[] = { "world", "hello", "dq" };
	static const unsigned int delay_ms[] = { 200, 100, 300 };
	struct dqshim_queue *q;
	struct dq_params p;
	struct dq_reaped r;
	int i, ret;

	dq_params_init(&p);			/* 1024 slots of 64 bytes */
	ret = dq_queue_open(&p, &q);		/* dq.ko if loaded, else in-process */
	if (ret) {
		fprintf(stderr, "dq_queue_open: %s\n", dq_strerror(ret));
		return 1;
	}
	for (i = 0; i < 3; i++) {
		struct dqshim_msg m;

		if (dq_reserve(q, &m))		/* a slot of the payload arena */
			return 1;
		strcpy(m.data, word[i]);	/* the payload, written in place */
		if (dq_commit_delay(q, &m, strlen(word[i]) + 1,
				    delay_ms[i] * 1000000ULL, i))
			return 1;
	}
	if (dq_flush(q) != 3)			/* one system call for all three */
		return 1;
	for (i = 0; i < 3; i++) {
		if (dq_reap(q, &r, 1, -1) != 1)	/* sleeps until one is due */
			return 1;
		printf("%s\n", (char *)r.data);	/* read in place: no copy */
		dq_done(q, r.slot);		/* the slot is free again */
	}
	dq_queue_close(q);
	return 0;
}
