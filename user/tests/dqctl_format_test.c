// SPDX-License-Identifier: LGPL-2.1 OR MIT
/*
 * dqctl's output formats, pinned on the host: dqctl.c is compiled in here
 * with its main() renamed, queue replies are filled in as the netlink
 * parser fills them (struct qinfo), and every printer runs on them, text
 * and JSON: show, stats of one queue, the list and stats tables, their
 * JSON arrays.  dqctl_format_test.sh compares the output byte for byte
 * with dqctl_format.golden, written by the dqctl the control-plane suite
 * (selftests/ctl) judged in the VM.  So a change to how dqctl prints
 * (the field-once print layer of issue 14, say) is checked here first,
 * without a kernel.
 *
 *	user/build/tests/dqctl_format_test > out && diff golden out
 */
#define main dqctl_main
#include "../tools/dqctl.c"
#undef main

static void set(struct qinfo *q, unsigned int attr, uint64_t v)
{
	q->has[attr] = true;
	q->v[attr] = v;
}

static void set_stat(struct qinfo *q, unsigned int st, uint64_t v)
{
	q->has_stats = true;
	q->st_has[st] = true;
	q->st[st] = v;
}

/* A named, paced queue with a watermark and traffic behind it. */
static void queue_busy(struct qinfo *q)
{
	memset(q, 0, sizeof(*q));
	set(q, DQ_A_ID, 3);
	snprintf(q->name, sizeof(q->name), "orders.retry");
	safe_name(q->disp, sizeof(q->disp), q->name);
	q->has[DQ_A_NAME] = true;
	set(q, DQ_A_SLOTS, 100000);
	set(q, DQ_A_SLOT_SIZE, 512);
	set(q, DQ_A_SUBMIT_ENTRIES, 1024);
	set(q, DQ_A_READY_ENTRIES, 131072);
	set(q, DQ_A_NODE, 1);
	set(q, DQ_A_GRANULARITY_NS, 100000);
	set(q, DQ_A_MAX_PENDING, 80000);
	set(q, DQ_A_RATE, 500);
	set(q, DQ_A_BURST, 4);
	set(q, DQ_A_HIGH_WM, 60000);
	set(q, DQ_A_UID, 65534);
	set(q, DQ_A_GID, 0);
	set(q, DQ_A_MODE, 0640);
	set(q, DQ_A_USERS, 2);
	set_stat(q, DQ_STATS_PENDING, 41234);
	set_stat(q, DQ_STATS_PACED, 17);
	set_stat(q, DQ_STATS_READY_BACKLOG, 3);
	set_stat(q, DQ_STATS_SUBMITTED, 9876543);
	set_stat(q, DQ_STATS_RELEASED, 9835289);
	set_stat(q, DQ_STATS_CANCELLED, 12);
	set_stat(q, DQ_STATS_RING_ERRORS, 1);
	set_stat(q, DQ_STATS_LATE_EWMA_NS, 52345);
	set_stat(q, DQ_STATS_LATE_MAX_NS, 3456789);
	set_stat(q, DQ_STATS_TIMER_FIRES, 123456);
	set_stat(q, DQ_STATS_THROTTLED, 77);
	q->has_rej = true;
	q->rej[DQ_REJ_LEN] = 2;
	q->rej[DQ_REJ_FULL] = 5;
}

/* A file's private queue: no name, unpaced, no watermark, idle. */
static void queue_idle(struct qinfo *q)
{
	memset(q, 0, sizeof(*q));
	set(q, DQ_A_ID, 12);
	set(q, DQ_A_SLOTS, 10);
	set(q, DQ_A_SLOT_SIZE, 64);
	set(q, DQ_A_SUBMIT_ENTRIES, 64);
	set(q, DQ_A_READY_ENTRIES, 64);
	set(q, DQ_A_NODE, 0);
	set(q, DQ_A_GRANULARITY_NS, 50000);
	set(q, DQ_A_MAX_PENDING, 10);
	set(q, DQ_A_RATE, 0);
	set(q, DQ_A_BURST, 1);
	set(q, DQ_A_HIGH_WM, 0);
	set(q, DQ_A_UID, 0);
	set(q, DQ_A_GID, 0);
	set(q, DQ_A_MODE, 0600);
	set(q, DQ_A_USERS, 1);
	set_stat(q, DQ_STATS_PENDING, 0);
	set_stat(q, DQ_STATS_RELEASED, 0);
	set_stat(q, DQ_STATS_LATE_EWMA_NS, 0);
	set_stat(q, DQ_STATS_LATE_MAX_NS, 0);
	q->has_rej = true;
}

int main(void)
{
	struct qinfo qs[2];
	struct queue_list one = { .q = &qs[0], .n = 1 };
	unsigned int i;

	queue_busy(&qs[0]);
	queue_idle(&qs[1]);
	for (i = 0; i < 2; i++) {
		one.q = &qs[i];
		printf("== show %u (text)\n", i);
		opt_json = false;
		print_one_queue(NULL, &one, false);
		printf("== stats %u (text)\n", i);
		print_one_queue(NULL, &one, true);
		printf("== show %u (json)\n", i);
		opt_json = true;
		print_one_queue(NULL, &one, false);
		printf("== stats %u (json)\n", i);
		print_one_queue(NULL, &one, true);
	}
	opt_json = false;
	printf("== list (text)\n");
	print_queues(&list_view, qs, 2);
	printf("== stats (text)\n");
	print_queues(&stats_view, qs, 2);
	opt_json = true;
	printf("== list (json)\n");
	print_queues(&list_view, qs, 2);
	printf("== stats (json)\n");
	print_queues(&stats_view, qs, 2);
	return 0;
}
