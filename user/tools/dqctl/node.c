// SPDX-License-Identifier: LGPL-2.1 OR MIT
/* dqctl stats --node N: the counters of one node's release engine. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include <linux/dq.h>

#include "args.h"
#include "attrs.h"
#include "dqctl.h"
#include "nl.h"
#include "node.h"
#include "print.h"

void node_stats_print(struct pr *pr, int32_t node, const struct qinfo *q)
{
	pr_open(pr, NULL);
	pr_s64(pr, "node", "node %" PRId64, node);
	pr_u64(pr, "pending", "  pending %" PRIu64, q->st[DQ_STATS_PENDING]);
	pr_u64(pr, "released", "  released %" PRIu64, q->st[DQ_STATS_RELEASED]);
	pr_u64(pr, "timer_fires", "  timer fires %" PRIu64 "\n",
	       q->st[DQ_STATS_TIMER_FIRES]);
	/* RLIMIT_MEMLOCK: what the node's queues charge, creates refused. */
	if (q->st_has[DQ_STATS_MEMLOCK_PAGES])
		pr_u64(pr, "memlock_pages", "  memlock pages %" PRIu64,
		       q->st[DQ_STATS_MEMLOCK_PAGES]);
	if (q->st_has[DQ_STATS_MEMLOCK_REFUSED])
		pr_u64(pr, "memlock_refused", "  memlock refused %" PRIu64 "\n",
		       q->st[DQ_STATS_MEMLOCK_REFUSED]);
	pr_close(pr);
}

/* Called by cmd_stats, which has checked the options. */
int cmd_node_stats(struct nl *nl, const struct args *a, struct pr *pr)
{
	struct queue_list l = { .nl = nl };
	struct nlmsghdr *nlh;
	int32_t node = parse_node("--node", a->val[O_NODE]);
	char what[48];
	int ret = 0;

	if (a->npos || a->val[O_ID])
		usage_err("stats: give NAME, --id or --node, one of them");
	snprintf(what, sizeof(what), "stats of node %" PRId32, node);
	nlh = nl_req(nl, DQ_CMD_STATS, false);
	mnl_attr_put_u32(nlh, DQ_A_NODE, (uint32_t)node);
	if (nl_talk(nl, queue_list_cb, &l) < 0)
		ret = nl_fail(nl, what, NULL, a->verbose);
	else if (l.n)
		node_stats_print(pr, node, &l.q[0]);
	free(l.q);
	return ret;
}
