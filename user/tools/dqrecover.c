// SPDX-License-Identifier: LGPL-2.1 OR MIT
/*
 * dqrecover: put a named durable queue's journal back into the queue now.
 *
 *   dqrecover NAME DIR [--json]
 *   dqrecover --version | --help
 *
 * After a reboot or rmmod, `dqctl create NAME ...` makes an empty queue;
 * the first process that attaches with the journal in DIR recovers it
 * (dq_queue_attach_durable(), docs/journal.md "Named queues").  This is
 * that attach on its own, for a boot script or a systemd unit ordered
 * before the services (ExecStartPost= of the unit that creates the
 * queue): it attaches as a producer, recovers if the queue is new to the
 * journal, says what it found, and detaches; the messages stay in the
 * queue.  A queue the journal already knows (another process recovered
 * it) is joined and left as it is: "recovered 0".
 *
 * Exit status: 0 done, 1 usage, 2 the attach or the recovery failed
 * (the journal is left as it was).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "dqshim.h"

int main(int argc, char **argv)
{
	struct dq_journal_params jp;
	struct dq_journal_stats st = { .sz = sizeof(st) };
	struct dqshim_queue *q;
	int json = 0, ret;

	if (argc == 2 && !strcmp(argv[1], "--version")) {
		printf("dqrecover %s\n", DQ_VERSION);
		return 0;
	}
	if (argc == 2 && !strcmp(argv[1], "--help")) {
		printf("usage: dqrecover NAME DIR [--json]\n");
		return 0;
	}
	if (argc == 4 && !strcmp(argv[3], "--json"))
		json = 1;
	else if (argc != 3) {
		fprintf(stderr, "usage: dqrecover NAME DIR [--json]\n");
		return 1;
	}
	dq_journal_params_init(&jp, argv[2], DQ_DURABLE_BATCH);
	ret = dq_queue_attach_durable(argv[1], NULL, &jp, &q);
	if (ret) {
		fprintf(stderr, "dqrecover: %s with journal %s: %s\n", argv[1],
			argv[2], dq_strerror(ret));
		return 2;
	}
	ret = dq_journal_stats(q, &st);
	dq_queue_close(q);
	if (ret) {
		fprintf(stderr, "dqrecover: %s\n", dq_strerror(ret));
		return 2;
	}
	if (json)
		printf("{\"queue\":\"%s\",\"records\":%" PRIu64
		       ",\"recovered\":%" PRIu64 ",\"overdue\":%" PRIu64
		       ",\"corrupt\":%" PRIu64 ",\"torn_bytes\":%" PRIu64
		       ",\"ns\":%" PRIu64 "}\n", argv[1], st.rec_records,
		       st.rec_recovered, st.rec_overdue, st.rec_corrupt,
		       st.rec_torn_bytes, st.rec_ns);
	else
		printf("%s: records %" PRIu64 "  recovered %" PRIu64
		       "  overdue %" PRIu64 "  corrupt %" PRIu64
		       "  torn bytes %" PRIu64 "  took %.1f ms\n", argv[1],
		       st.rec_records, st.rec_recovered, st.rec_overdue,
		       st.rec_corrupt, st.rec_torn_bytes, st.rec_ns / 1e6);
	return 0;
}
