// SPDX-License-Identifier: LGPL-2.1 OR MIT
/*
 * dqctl's output formats, pinned on the host: dqctl.c is compiled in here
 * with its main() renamed, queue replies are filled in as the netlink
 * parser fills them (struct qinfo), and every printer runs on them, text
 * and JSON: show, stats of one queue, the list and stats tables, their
 * JSON arrays, stats --node and monitor's event lines.  dqctl_format_test.sh compares the output byte for byte
 * with dqctl_format.golden, written by the dqctl the control-plane suite
 * (selftests/ctl) judged in the VM.  So a change to how dqctl prints
 * (the field-once print layer of issue 14, say) is checked here first,
 * without a kernel.
 *
 *	user/build/tests/dqctl_format_test > out && diff golden out
 */
#include <time.h>
#include <libmnl/libmnl.h>

/*
 * stats --node goes through the netlink exchange: the socket calls are
 * replaced by a reply buffer (one per-node STATS message and the ack);
 * monitor stamps each event with the wall clock: a fixed one here.
 */
static ssize_t fake_sendto(const struct mnl_socket *sk, const void *buf,
			   size_t len);
static ssize_t fake_recvfrom(const struct mnl_socket *sk, void *buf,
			     size_t len);
static int fake_clock_gettime(clockid_t clk, struct timespec *ts);
#define mnl_socket_sendto fake_sendto
#define mnl_socket_recvfrom fake_recvfrom
#define clock_gettime fake_clock_gettime
#define main dqctl_main
#include "../tools/dqctl.c"
#undef main
#undef clock_gettime
#undef mnl_socket_recvfrom
#undef mnl_socket_sendto

#define FAMILY	0x1d

static char fake_rx[4096];
static size_t fake_rx_len;

static ssize_t fake_sendto(const struct mnl_socket *sk, const void *buf,
			   size_t len)
{
	(void)sk;
	(void)buf;
	return (ssize_t)len;
}

static ssize_t fake_recvfrom(const struct mnl_socket *sk, void *buf,
			     size_t len)
{
	(void)sk;
	if (fake_rx_len > len)
		return -1;
	memcpy(buf, fake_rx, fake_rx_len);
	return (ssize_t)fake_rx_len;
}

/* 2026-12-02 15:04:05.678901 UTC */
static int fake_clock_gettime(clockid_t clk, struct timespec *ts)
{
	(void)clk;
	ts->tv_sec = 1796223845;
	ts->tv_nsec = 678901234;
	return 0;
}

/* A genl message of the dq family at the end of fake_rx. */
static struct nlmsghdr *put_msg(uint8_t cmd)
{
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(fake_rx + fake_rx_len);
	struct genlmsghdr *g;

	nlh->nlmsg_type = FAMILY;
	g = mnl_nlmsg_put_extra_header(nlh, sizeof(*g));
	g->cmd = cmd;
	g->version = DQ_GENL_VERSION;
	return nlh;
}

static void end_msg(struct nlmsghdr *nlh)
{
	fake_rx_len += NLMSG_ALIGN(nlh->nlmsg_len);
}

/* dq.ko's per-node STATS reply, then the ack. */
static void node_reply(int32_t node, uint64_t pending, uint64_t released,
		       uint64_t fires)
{
	struct nlmsghdr *nlh;
	struct nlattr *nest;
	struct nlmsgerr *e;

	fake_rx_len = 0;
	nlh = put_msg(DQ_CMD_STATS);
	nest = mnl_attr_nest_start(nlh, DQ_A_STATS);
	mnl_attr_put_u32(nlh, DQ_A_NODE, (uint32_t)node);
	mnl_attr_put_u64(nlh, DQ_STATS_PENDING, pending);
	mnl_attr_put_u64(nlh, DQ_STATS_RELEASED, released);
	mnl_attr_put_u64(nlh, DQ_STATS_TIMER_FIRES, fires);
	mnl_attr_nest_end(nlh, nest);
	end_msg(nlh);
	nlh = mnl_nlmsg_put_header(fake_rx + fake_rx_len);
	nlh->nlmsg_type = NLMSG_ERROR;
	nlh->nlmsg_flags = NLM_F_CAPPED;
	e = mnl_nlmsg_put_extra_header(nlh, sizeof(*e));
	e->error = 0;
	end_msg(nlh);
}

static void node_stats(struct nl *nl, const char *node)
{
	struct args a;

	memset(&a, 0, sizeof(a));
	a.cmd = "stats";
	a.val[O_NODE] = node;
	cmd_stats(nl, &a);
}

/* An event as the events group carries it: kind, id, name, the limit. */
static struct nlmsghdr *event(uint32_t kind, uint32_t id, const char *name)
{
	struct nlmsghdr *nlh;

	fake_rx_len = 0;
	nlh = put_msg(DQ_CMD_EVENT);
	mnl_attr_put_u32(nlh, DQ_A_EVENT_KIND, kind);
	mnl_attr_put_u32(nlh, DQ_A_ID, id);
	if (name)
		mnl_attr_put_strz(nlh, DQ_A_NAME, name);
	return nlh;
}

static void events(struct nl *nl)
{
	struct monitor m = { .r.nl = nl };
	struct nlmsghdr *nlh;

	nlh = event(DQ_EVENT_HIGH_WM, 3, "orders.retry");
	mnl_attr_put_u32(nlh, DQ_A_HIGH_WM, 60000);
	monitor_cb(nlh, &m);
	nlh = event(DQ_EVENT_FULL, 3, "orders.retry");
	mnl_attr_put_u32(nlh, DQ_A_MAX_PENDING, 80000);
	monitor_cb(nlh, &m);
	nlh = event(DQ_EVENT_DELETED, 12, NULL);
	monitor_cb(nlh, &m);
	/* a kind from a newer module; a name with control characters */
	nlh = event(9, 4, "odd\tname\x01\"q\\");
	monitor_cb(nlh, &m);
}

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
	struct nl nl = { .sk = (struct mnl_socket *)&nl, .family = FAMILY };
	unsigned int i;

	setenv("TZ", "UTC", 1);
	tzset();

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
	for (i = 0; i < 2; i++) {
		opt_json = i;
		printf("== stats --node (%s)\n", i ? "json" : "text");
		node_reply(1, 41234, 9835289, 123456);
		node_stats(&nl, "1");
		node_reply(0, 0, 0, 0);
		node_stats(&nl, "0");
	}
	for (i = 0; i < 2; i++) {
		opt_json = i;
		printf("== monitor (%s)\n", i ? "json" : "text");
		events(&nl);
	}
	return 0;
}
