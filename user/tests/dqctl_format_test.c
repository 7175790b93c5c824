// SPDX-License-Identifier: LGPL-2.1 OR MIT
/*
 * dqctl's output formats, pinned on the host: linked with dqctl's objects
 * but main's, queue replies are filled in as the netlink parser fills
 * them (struct qinfo), and every printer runs on them, text and JSON:
 * show, stats of one queue, the list and stats tables, their JSON arrays,
 * stats --node (through the netlink exchange, on a faked socket),
 * monitor's event lines, and how the kernel's errors are worded (its
 * extended acks, faked the same way) with dqctl's exit status; the
 * requests create and set send for delivery tracking (--track,
 * --inflight, --visibility) and application keys (--keys) and the
 * replies to them through the parser; the usage errors of those options
 * (each in a child: usage errors exit).
 * dqctl_format_test.sh compares the output byte
 * for byte with dqctl_format.golden, written by the dqctl the
 * control-plane suite (selftests/ctl) judged in the VM (its stats --node,
 * monitor and error parts by dqctl.c before it was split into dqctl/).  So a
 * change to how dqctl prints is checked here first, without a kernel.
 *
 *	user/build/tests/dqctl_format_test > out && diff golden out
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <libmnl/libmnl.h>
#include <linux/genetlink.h>
#include <linux/netlink.h>

#include <linux/dq.h>

#include "args.h"
#include "attrs.h"
#include "dqctl.h"
#include "events.h"
#include "fmt.h"
#include "nl.h"
#include "print.h"
#include "queue.h"

#define FAMILY	0x1d

/*
 * stats --node and the errors go through nl.c's exchange: this program's
 * socket calls stand in for libmnl's and answer with fake_rx (one
 * per-node STATS message and the ack, or an error built from the request).
 */
static char fake_rx[4096];
static size_t fake_rx_len;

static void error_reply(const struct nlmsghdr *req);
static const struct fake_err *fake_err;
static void req_reply(const struct nlmsghdr *req);
static const struct req_case *fake_req;

ssize_t mnl_socket_sendto(const struct mnl_socket *sk, const void *buf,
			  size_t len)
{
	(void)sk;
	if (fake_err)
		error_reply(buf);
	if (fake_req)
		req_reply(buf);
	return (ssize_t)len;
}

/*
 * CLOCK_MONOTONIC stands still at FAKE_MONO_NS, so that the age of the
 * oldest message in flight (now - DQ_STATS_OLDEST_NS, now read by the
 * parser) prints the same every run.  Other clocks are the kernel's.
 */
#define FAKE_MONO_NS	5000000000000ULL	/* 5000 s after boot */

int clock_gettime(clockid_t clk, struct timespec *ts)
{
	if (clk != CLOCK_MONOTONIC)
		return (int)syscall(SYS_clock_gettime, clk, ts);
	ts->tv_sec = (time_t)(FAKE_MONO_NS / 1000000000ULL);
	ts->tv_nsec = (long)(FAKE_MONO_NS % 1000000000ULL);
	return 0;
}

ssize_t mnl_socket_recvfrom(const struct mnl_socket *sk, void *buf,
			    size_t len)
{
	(void)sk;
	if (fake_rx_len > len)
		return -1;
	memcpy(buf, fake_rx, fake_rx_len);
	return (ssize_t)fake_rx_len;
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

static void node_stats(struct nl *nl, struct pr *pr, const char *node)
{
	struct args a;

	memset(&a, 0, sizeof(a));
	a.cmd = "stats";
	a.val[O_NODE] = node;
	a.json = pr->json;
	cmd_stats(nl, &a, pr);
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

/* 2026-12-02 15:04:05.678901234 UTC */
static const struct timespec event_time = { 1796223845, 678901234 };

static void event_out(struct pr *pr, const struct nlmsghdr *nlh)
{
	struct qinfo q;

	qinfo_parse(nlh, &q);
	event_print(pr, &q, &event_time);
}

static void events(struct pr *pr)
{
	struct nlmsghdr *nlh;

	nlh = event(DQ_EVENT_HIGH_WM, 3, "orders.retry");
	mnl_attr_put_u32(nlh, DQ_A_HIGH_WM, 60000);
	event_out(pr, nlh);
	nlh = event(DQ_EVENT_FULL, 3, "orders.retry");
	mnl_attr_put_u32(nlh, DQ_A_MAX_PENDING, 80000);
	event_out(pr, nlh);
	nlh = event(DQ_EVENT_DELETED, 12, NULL);
	event_out(pr, nlh);
	/* a kind from a newer module; a name with control characters */
	nlh = event(9, 4, "odd\tname\x01\"q\\");
	event_out(pr, nlh);
}

#define RUN(fn)	fn(nl, &a, pr)
/*
 * Errors: the kernel's answer to the request just sent, an NLMSG_ERROR
 * with an extended ack that points at one of the request's attributes by
 * its offset, as dq.ko's policies and extack messages do.
 */
struct fake_err {
	int error;		/* errno */
	const char *msg;	/* NLMSGERR_ATTR_MSG, or NULL */
	uint16_t at;		/* the attribute it points at, 0: none */
	uint32_t policy_type;	/* NL_ATTR_TYPE_*, 0: no policy */
	bool range_u, range_s;
	uint64_t min_u, max_u;
	int64_t min_s, max_s;
	uint32_t max_len;	/* NL_POLICY_TYPE_ATTR_MAX_LENGTH, 0: none */
	uint16_t missing;	/* NLMSGERR_ATTR_MISS_TYPE, 0: none */
};

static void error_reply(const struct nlmsghdr *req)
{
	const struct fake_err *f = fake_err;
	const struct nlattr *a;
	struct nlmsghdr *nlh;
	struct nlmsgerr *e;
	struct nlattr *nest;

	nlh = mnl_nlmsg_put_header(fake_rx);
	nlh->nlmsg_type = NLMSG_ERROR;
	nlh->nlmsg_flags = NLM_F_CAPPED | NLM_F_ACK_TLVS;
	e = mnl_nlmsg_put_extra_header(nlh, sizeof(*e));
	e->error = -f->error;
	e->msg = *req;
	if (f->msg)
		mnl_attr_put_strz(nlh, NLMSGERR_ATTR_MSG, f->msg);
	mnl_attr_for_each(a, req, sizeof(struct genlmsghdr))
		if (f->at && mnl_attr_get_type(a) == f->at)
			mnl_attr_put_u32(nlh, NLMSGERR_ATTR_OFFS,
					 (uint32_t)((const char *)a - (const char *)req));
	if (f->missing)
		mnl_attr_put_u32(nlh, NLMSGERR_ATTR_MISS_TYPE, f->missing);
	if (f->policy_type) {
		nest = mnl_attr_nest_start(nlh, NLMSGERR_ATTR_POLICY);
		mnl_attr_put_u32(nlh, NL_POLICY_TYPE_ATTR_TYPE, f->policy_type);
		if (f->range_u) {
			mnl_attr_put_u64(nlh, NL_POLICY_TYPE_ATTR_MIN_VALUE_U, f->min_u);
			mnl_attr_put_u64(nlh, NL_POLICY_TYPE_ATTR_MAX_VALUE_U, f->max_u);
		}
		if (f->range_s) {
			mnl_attr_put_u64(nlh, NL_POLICY_TYPE_ATTR_MIN_VALUE_S,
					 (uint64_t)f->min_s);
			mnl_attr_put_u64(nlh, NL_POLICY_TYPE_ATTR_MAX_VALUE_S,
					 (uint64_t)f->max_s);
		}
		if (f->max_len)
			mnl_attr_put_u32(nlh, NL_POLICY_TYPE_ATTR_MAX_LENGTH,
					 f->max_len);
		mnl_attr_nest_end(nlh, nest);
	}
	fake_rx_len = nlh->nlmsg_len;
}

static const struct {
	struct fake_err e;
	const char *argv[10];
} error_cases[] = {
	{ { .error = ERANGE, .msg = "integer out of range", .at = DQ_A_SLOT_SIZE,
	    .policy_type = NL_ATTR_TYPE_U32,
	    .range_u = true, .min_u = 64, .max_u = 1048576 },
	  { "create", "x", "--slots", "10", "--slot-size", "1" } },
	{ { .error = EPERM },
	  { "create", "x", "--slots", "10", "--slot-size", "64" } },
	{ { .error = EPERM }, { "set", "x", "--rate", "5" } },
	{ { .error = EPERM }, { "delete", "x" } },
	{ { .error = EINVAL, .missing = DQ_A_SLOTS },
	  { "create", "x", "--slots", "10", "--slot-size", "64" } },
	{ { .error = EINVAL, .msg = "attribute missing", .missing = DQ_A_SLOTS },
	  { "create", "x", "--slots", "10", "--slot-size", "64" } },
	{ { .error = EBUSY,
	    .msg = "messages are pending or not reaped; FORCE drops them" },
	  { "delete", "big" } },
	{ { .error = EBUSY,
	    .msg = "messages are pending or not reaped; FORCE drops them" },
	  { "delete", "big", "--force" } },
	{ { .error = ENOENT, .msg = "no such queue" }, { "stats", "nope" } },
	{ { .error = ENOENT, .msg = "no such queue" },
	  { "set", "--id", "77", "--burst", "2" } },
	{ { .error = ENODEV, .msg = "no engine on that node" },
	  { "stats", "--node", "7" } },
	{ { .error = ERANGE, .msg = "integer out of range", .at = DQ_A_NODE,
	    .policy_type = NL_ATTR_TYPE_S32,
	    .range_s = true, .min_s = -1, .max_s = 1023 },
	  { "stats", "--node", "5000" } },
	{ { .error = ERANGE, .msg = "integer out of range", .at = 99,
	    .policy_type = NL_ATTR_TYPE_U32,
	    .range_u = true, .min_u = 1, .max_u = 8 },
	  { "raw", "new", "name=x", "99:u32=9" } },
	{ { .error = EINVAL, .at = DQ_A_NAME,
	    .policy_type = NL_ATTR_TYPE_NUL_STRING, .max_len = 32 },
	  { "raw", "new", "name=xx" } },
	{ { .error = ENOENT }, { "raw", "get" } },
	/* --inflight on a queue that does not track delivery; out of range */
	{ { .error = EINVAL, .msg = "the queue does not track delivery",
	    .at = DQ_A_MAX_INFLIGHT },
	  { "set", "x", "--inflight", "8" } },
	{ { .error = ERANGE, .msg = "integer out of range",
	    .at = DQ_A_MAX_INFLIGHT, .policy_type = NL_ATTR_TYPE_U32,
	    .range_u = true, .min_u = 1, .max_u = DQ_MAX_SLOTS },
	  { "set", "x", "--inflight", "20000000" } },
	/* a visibility timeout beyond DQ_MAX_DELAY_NS (the kernel's check) */
	{ { .error = ERANGE, .msg = "integer out of range",
	    .at = DQ_A_VISIBILITY_NS, .policy_type = NL_ATTR_TYPE_U64,
	    .range_u = true, .min_u = DQ_MIN_VISIBILITY_NS,
	    .max_u = DQ_MAX_DELAY_NS },
	  { "create", "x", "--slots", "10", "--slot-size", "64", "--track",
	    "--visibility=20000h" } },
	/* last: the old dqctl's -v stayed set */
	{ { .error = ERANGE, .msg = "integer out of range", .at = DQ_A_SLOT_SIZE,
	    .policy_type = NL_ATTR_TYPE_U32,
	    .range_u = true, .min_u = 64, .max_u = 1048576 },
	  { "-v", "create", "x", "--slots", "10", "--slot-size", "1" } },
};

/*
 * Parse @args (NULL-terminated, at most 12) as dqctl's command line,
 * after "== @what:" and the arguments, and run the command with @text or
 * @json as --json says.  Returns its exit status.
 */
static int run_args(struct nl *nl, struct pr *text, struct pr *json,
		    const char *what, const char *const *args)
{
	char *argv[14] = { "dqctl" };
	struct args a;
	struct pr *pr;
	int argc = 1, j;

	for (j = 0; args[j]; j++)
		argv[argc++] = (char *)args[j];
	printf("== %s:", what);
	for (j = 1; j < argc; j++)
		printf(" %s", argv[j]);
	printf("\n");
	fflush(stdout);		/* before a usage error's message */
	parse_args(argc, argv, &a);
	pr = a.json ? json : text;
	if (!strcmp(a.cmd, "create"))
		return RUN(cmd_create);
	if (!strcmp(a.cmd, "delete"))
		return RUN(cmd_delete);
	if (!strcmp(a.cmd, "set"))
		return RUN(cmd_set);
	if (!strcmp(a.cmd, "show"))
		return RUN(cmd_show);
	if (!strcmp(a.cmd, "stats"))
		return RUN(cmd_stats);
	return RUN(cmd_raw);
}

static void errors(struct nl *nl, struct pr *pr)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(error_cases); i++) {
		fake_err = &error_cases[i].e;
		printf("exit %d\n", run_args(nl, pr, pr, "error",
					      error_cases[i].argv));
	}
	fake_err = NULL;
}

/*
 * Requests: what create and set put on the wire (each attribute as
 * "name=value", in order), and what they print of the kernel's answer,
 * a queue as dq.ko's replies carry it (every attribute, FLAGS and
 * MAX_INFLIGHT always; the delivery counters for a tracked queue only)
 * through the reply parser.
 */
struct req_case {
	const char *argv[12];
	uint32_t flags, max_inflight;	/* of the queue in the reply */
	uint64_t visibility;		/* of the queue in the reply */
	/* STATS replies: the delivery counters, tracked queues only */
	uint64_t inflight, oldest_age, consumer, expired;
	uint64_t replaced;		/* STATS replies, every queue */
};

#define TRK	.flags = DQ_SETUP_F_TRACK
#define KEYS	.flags = DQ_SETUP_F_KEYS
#define TRK_KEYS	.flags = DQ_SETUP_F_TRACK | DQ_SETUP_F_KEYS

static const struct req_case req_cases[] = {
	{ { "create", "trk", "--slots", "64", "--slot-size", "64", "--track",
	    "--inflight", "16" }, TRK, .max_inflight = 16 },
	{ { "--json", "create", "trk", "--slots", "64", "--slot-size", "64",
	    "--track", "--inflight", "16" }, TRK, .max_inflight = 16 },
	/* no cap: FLAGS alone */
	{ { "create", "trk", "--slots", "64", "--slot-size", "64", "--track" },
	  TRK },
	{ { "create", "trk", "--slots", "64", "--slot-size", "64", "--track",
	    "--inflight", "none" }, TRK },
	/* untracked: neither attribute; the reply's FLAGS 0, MAX_INFLIGHT 0 */
	{ { "create", "plain", "--slots", "64", "--slot-size", "64" },
	  .flags = 0 },
	{ { "--json", "create", "plain", "--slots", "64", "--slot-size", "64" },
	  .flags = 0 },
	{ { "set", "trk", "--inflight", "8" }, TRK, .max_inflight = 8 },
	/* none: DQ_MAX_SLOTS, which the kernel stores (and answers) as 0 */
	{ { "set", "trk", "--inflight", "none" }, TRK },
	{ { "--json", "set", "--id", "7", "--inflight", "none" }, TRK },
	/* stats: nothing in flight, no consumer; then 3, the oldest 250ms */
	{ { "stats", "trk" }, TRK },
	{ { "--json", "stats", "trk" }, TRK },
	{ { "stats", "trk" }, TRK, .max_inflight = 8, .inflight = 3,
	  .oldest_age = 250000000, .consumer = 1 },
	{ { "--json", "stats", "trk" }, TRK, .max_inflight = 8, .inflight = 3,
	  .oldest_age = 250000000, .consumer = 1 },
	{ { "stats", "plain" }, .flags = 0 },
	{ { "--json", "stats", "plain" }, .flags = 0 },
	/* keys: FLAGS DQ_SETUP_F_KEYS, with --track both bits in one */
	{ { "create", "keyed", "--slots", "64", "--slot-size", "64",
	    "--keys" }, KEYS },
	{ { "--json", "create", "keyed", "--slots", "64", "--slot-size", "64",
	    "--keys" }, KEYS },
	{ { "create", "both", "--slots", "64", "--slot-size", "64", "--keys",
	    "--track", "--inflight", "16" }, TRK_KEYS, .max_inflight = 16 },
	{ { "--json", "create", "both", "--slots", "64", "--slot-size", "64",
	    "--track", "--keys" }, TRK_KEYS },
	/* a keyed queue's stats: 3 replaced */
	{ { "stats", "keyed" }, KEYS, .replaced = 3 },
	{ { "--json", "stats", "keyed" }, KEYS, .replaced = 3 },
	{ { "--json", "show", "both" }, TRK_KEYS, .max_inflight = 16 },
	/* visibility: VISIBILITY_NS (u64) after FLAGS, in ns */
	{ { "create", "vis", "--slots", "64", "--slot-size", "64", "--track",
	    "--visibility", "30s" }, TRK, .visibility = 30000000000ULL },
	{ { "--json", "create", "vis", "--slots", "64", "--slot-size", "64",
	    "--track", "--visibility", "1.5m" }, TRK,
	  .visibility = 90000000000ULL },
	{ { "create", "vis", "--slots", "64", "--slot-size", "64", "--track",
	    "--visibility", "1ms", "--keys" }, TRK_KEYS,
	  .visibility = DQ_MIN_VISIBILITY_NS },
	{ { "create", "vis", "--slots", "64", "--slot-size", "64", "--track",
	    "--visibility=2h" }, TRK, .visibility = 7200000000000ULL },
	/* a tracked queue's stats: 3 expired, put back for redelivery */
	{ { "stats", "vis" }, TRK, .visibility = 30000000000ULL, .inflight = 3,
	  .oldest_age = 250000000, .consumer = 1, .expired = 3 },
	{ { "--json", "stats", "vis" }, TRK, .visibility = 30000000000ULL,
	  .inflight = 3, .oldest_age = 250000000, .consumer = 1, .expired = 3 },
	{ { "--json", "show", "vis" }, TRK, .visibility = 30000000000ULL },
};

/* Print the request; answer with the queue it names, and the ack. */
static void req_reply(const struct nlmsghdr *req)
{
	const struct genlmsghdr *g = mnl_nlmsg_get_payload(req);
	const struct req_case *c = fake_req;
	const char *name = "trk";
	uint32_t slots = 64, slot_size = 64;
	const struct nlattr *a;
	struct nlattr *nest, *rej;
	struct nlmsghdr *nlh;
	struct nlmsgerr *e;

	printf("request cmd %u:", g->cmd);
	mnl_attr_for_each(a, req, sizeof(*g)) {
		unsigned int t = mnl_attr_get_type(a);
		const char *n = attr_name(t);

		printf(" %s", n ? n : "?");
		if (t == DQ_A_NAME) {
			name = mnl_attr_get_str(a);
			printf("=\"%s\"", name);
		} else if (mnl_attr_get_payload_len(a) == 4) {
			printf("=%u", mnl_attr_get_u32(a));
			if (t == DQ_A_SLOTS)
				slots = mnl_attr_get_u32(a);
			if (t == DQ_A_SLOT_SIZE)
				slot_size = mnl_attr_get_u32(a);
		} else if (mnl_attr_get_payload_len(a) == 8) {
			printf("=%llu", (unsigned long long)mnl_attr_get_u64(a));
		}
	}
	printf("\n");

	fake_rx_len = 0;
	nlh = put_msg(g->cmd);
	mnl_attr_put_u32(nlh, DQ_A_ID, 7);
	mnl_attr_put_strz(nlh, DQ_A_NAME, name);
	mnl_attr_put_u32(nlh, DQ_A_SLOTS, slots);
	mnl_attr_put_u32(nlh, DQ_A_SLOT_SIZE, slot_size);
	mnl_attr_put_u32(nlh, DQ_A_SUBMIT_ENTRIES, 64);
	mnl_attr_put_u32(nlh, DQ_A_READY_ENTRIES, 64);
	mnl_attr_put_u32(nlh, DQ_A_NODE, 0);
	mnl_attr_put_u32(nlh, DQ_A_GRANULARITY_NS, 50000);
	mnl_attr_put_u32(nlh, DQ_A_MAX_PENDING, slots);
	mnl_attr_put_u64(nlh, DQ_A_RATE, 0);
	mnl_attr_put_u32(nlh, DQ_A_BURST, 1);
	mnl_attr_put_u32(nlh, DQ_A_HIGH_WM, 0);
	mnl_attr_put_u32(nlh, DQ_A_UID, 0);
	mnl_attr_put_u32(nlh, DQ_A_GID, 0);
	mnl_attr_put_u32(nlh, DQ_A_MODE, 0600);
	mnl_attr_put_u32(nlh, DQ_A_USERS, 0);
	mnl_attr_put_u32(nlh, DQ_A_FLAGS, c->flags);
	mnl_attr_put_u32(nlh, DQ_A_MAX_INFLIGHT, c->max_inflight);
	mnl_attr_put_u64(nlh, DQ_A_VISIBILITY_NS, c->visibility);
	if (g->cmd == DQ_CMD_STATS) {
		nest = mnl_attr_nest_start(nlh, DQ_A_STATS);
		mnl_attr_put_u64(nlh, DQ_STATS_PENDING, 5);
		mnl_attr_put_u64(nlh, DQ_STATS_PACED, 0);
		mnl_attr_put_u64(nlh, DQ_STATS_READY_BACKLOG, 0);
		mnl_attr_put_u64(nlh, DQ_STATS_SUBMITTED, 40);
		mnl_attr_put_u64(nlh, DQ_STATS_RELEASED, 35);
		mnl_attr_put_u64(nlh, DQ_STATS_CANCELLED, 0);
		mnl_attr_put_u64(nlh, DQ_STATS_RING_ERRORS, 0);
		mnl_attr_put_u64(nlh, DQ_STATS_LATE_EWMA_NS, 1500);
		mnl_attr_put_u64(nlh, DQ_STATS_LATE_MAX_NS, 20000);
		mnl_attr_put_u64(nlh, DQ_STATS_TIMER_FIRES, 40);
		mnl_attr_put_u64(nlh, DQ_STATS_THROTTLED, 0);
		mnl_attr_put_u64(nlh, DQ_STATS_REPLACED, c->replaced);
		if (c->flags & DQ_SETUP_F_TRACK) {
			/* as dq.ko orders them: after THROTTLED */
			mnl_attr_put_u64(nlh, DQ_STATS_INFLIGHT, c->inflight);
			mnl_attr_put_u64(nlh, DQ_STATS_OLDEST_NS,
					 c->oldest_age ?
					 FAKE_MONO_NS - c->oldest_age : 0);
			mnl_attr_put_u64(nlh, DQ_STATS_DONE_DELIVERED,
					 35 - c->inflight - 2);
			mnl_attr_put_u64(nlh, DQ_STATS_DONE_FAILED, 2);
			mnl_attr_put_u64(nlh, DQ_STATS_DONE_REFUSED, 1);
			mnl_attr_put_u64(nlh, DQ_STATS_REDELIVERED, 4);
			mnl_attr_put_u64(nlh, DQ_STATS_CREDIT_WAITS, 6);
			mnl_attr_put_u64(nlh, DQ_STATS_EXPIRED, c->expired);
			mnl_attr_put_u32(nlh, DQ_STATS_CONSUMER,
					 (uint32_t)c->consumer);
		}
		rej = mnl_attr_nest_start(nlh, DQ_STATS_REJECTED);
		mnl_attr_put_u64(nlh, DQ_REJ_SLOT + 1, 0);
		mnl_attr_nest_end(nlh, rej);
		mnl_attr_nest_end(nlh, nest);
	}
	end_msg(nlh);
	nlh = mnl_nlmsg_put_header(fake_rx + fake_rx_len);
	nlh->nlmsg_type = NLMSG_ERROR;
	nlh->nlmsg_flags = NLM_F_CAPPED;
	e = mnl_nlmsg_put_extra_header(nlh, sizeof(*e));
	e->error = 0;
	end_msg(nlh);
}

static void requests(struct nl *nl, struct pr *text, struct pr *json)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(req_cases); i++) {
		fake_req = &req_cases[i];
		printf("exit %d\n", run_args(nl, text, json, "request",
					      req_cases[i].argv));
	}
	fake_req = NULL;
}

/* Usage errors exit: each runs in a child, its stderr on our stdout. */
static const struct fake_err leaked = {
	.error = EPROTO, .msg = "not a usage error: the request was sent",
};

static const char *const usage_cases[][12] = {
	{ "create", "x", "--slots", "10", "--slot-size", "64",
	  "--inflight", "8" },
	{ "create", "x", "--slots", "10", "--slot-size", "64", "--track",
	  "--inflight", "0" },
	{ "create", "x", "--slots", "10", "--slot-size", "64", "--track",
	  "--inflight", "-1" },
	{ "create", "x", "--slots", "10", "--slot-size", "64", "--track=1" },
	{ "set", "x", "--inflight", "0" },
	{ "set", "x", "--inflight", "some" },
	{ "set", "x", "--inflight", "4294967296" },
	{ "set", "x", "--track" },
	{ "set", "x", "--keys" },
	{ "create", "x", "--slots", "10", "--slot-size", "64", "--keys=1" },
	{ "set", "x" },
	{ "show", "x", "--inflight", "3" },
	/* --visibility: only with --track, 1ms at least, a time with a unit */
	{ "create", "x", "--slots", "10", "--slot-size", "64",
	  "--visibility", "30s" },
	{ "create", "x", "--slots", "10", "--slot-size", "64", "--track",
	  "--visibility", "999us" },
	{ "create", "x", "--slots", "10", "--slot-size", "64", "--track",
	  "--visibility", "0" },
	{ "create", "x", "--slots", "10", "--slot-size", "64", "--track",
	  "--visibility", "30" },
	{ "create", "x", "--slots", "10", "--slot-size", "64", "--track",
	  "--visibility", "1d" },
	{ "create", "x", "--slots", "10", "--slot-size", "64", "--track",
	  "--visibility" },
	{ "set", "x", "--visibility", "30s" },
};

static void usage_errors(struct nl *nl, struct pr *pr)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(usage_cases); i++) {
		int status = 0;
		pid_t pid;

		fflush(stdout);
		pid = fork();
		if (pid < 0) {
			perror("fork");
			exit(1);
		}
		if (!pid) {
			int ret;

			dup2(STDOUT_FILENO, STDERR_FILENO);
			/* a request that gets out is answered, and fails */
			fake_err = &leaked;
			ret = run_args(nl, pr, pr, "usage", usage_cases[i]);
			fflush(stdout);
			_exit(ret);
		}
		waitpid(pid, &status, 0);
		printf("exit %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
	}
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
	set(q, DQ_A_FLAGS, 0);
	set(q, DQ_A_MAX_INFLIGHT, 0);
	set(q, DQ_A_VISIBILITY_NS, 0);
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
	set_stat(q, DQ_STATS_REPLACED, 0);
	q->has_rej = true;
	q->rej[DQ_REJ_LEN] = 2;
	q->rej[DQ_REJ_FULL] = 5;
}

/*
 * A file's private queue: no name, unpaced, no watermark, idle; a sparse
 * reply (no PACED, SUBMITTED, ..., REPLACED; no VISIBILITY_NS, as from a
 * module before visibility timeouts): JSON prints only what came.
 */
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
	set(q, DQ_A_FLAGS, 0);
	set(q, DQ_A_MAX_INFLIGHT, 0);
	set_stat(q, DQ_STATS_PENDING, 0);
	set_stat(q, DQ_STATS_RELEASED, 0);
	set_stat(q, DQ_STATS_LATE_EWMA_NS, 0);
	set_stat(q, DQ_STATS_LATE_MAX_NS, 0);
	q->has_rej = true;
}

/*
 * A named queue that tracks delivery, capped at 256 in flight, its
 * consumer attached: 37 in flight, the oldest released 1.5 s ago.
 */
static void queue_tracked(struct qinfo *q)
{
	memset(q, 0, sizeof(*q));
	set(q, DQ_A_ID, 5);
	snprintf(q->name, sizeof(q->name), "jobs");
	safe_name(q->disp, sizeof(q->disp), q->name);
	q->has[DQ_A_NAME] = true;
	set(q, DQ_A_SLOTS, 4096);
	set(q, DQ_A_SLOT_SIZE, 1024);
	set(q, DQ_A_SUBMIT_ENTRIES, 1024);
	set(q, DQ_A_READY_ENTRIES, 4096);
	set(q, DQ_A_NODE, 0);
	set(q, DQ_A_GRANULARITY_NS, 50000);
	set(q, DQ_A_MAX_PENDING, 4096);
	set(q, DQ_A_RATE, 0);
	set(q, DQ_A_BURST, 1);
	set(q, DQ_A_HIGH_WM, 3000);
	set(q, DQ_A_UID, 0);
	set(q, DQ_A_GID, 0);
	set(q, DQ_A_MODE, 0660);
	set(q, DQ_A_USERS, 2);
	set(q, DQ_A_FLAGS, DQ_SETUP_F_TRACK);
	set(q, DQ_A_MAX_INFLIGHT, 256);
	set(q, DQ_A_VISIBILITY_NS, 0);
	set_stat(q, DQ_STATS_PENDING, 120);
	set_stat(q, DQ_STATS_PACED, 0);
	set_stat(q, DQ_STATS_READY_BACKLOG, 0);
	set_stat(q, DQ_STATS_SUBMITTED, 500000);
	set_stat(q, DQ_STATS_RELEASED, 499880);
	set_stat(q, DQ_STATS_CANCELLED, 0);
	set_stat(q, DQ_STATS_RING_ERRORS, 0);
	set_stat(q, DQ_STATS_LATE_EWMA_NS, 12345);
	set_stat(q, DQ_STATS_LATE_MAX_NS, 2000000);
	set_stat(q, DQ_STATS_TIMER_FIRES, 98765);
	set_stat(q, DQ_STATS_THROTTLED, 0);
	set_stat(q, DQ_STATS_REPLACED, 0);
	set_stat(q, DQ_STATS_INFLIGHT, 37);
	set_stat(q, DQ_STATS_OLDEST_NS, FAKE_MONO_NS - 1500000000ULL);
	set_stat(q, DQ_STATS_DONE_DELIVERED, 499834);
	set_stat(q, DQ_STATS_DONE_FAILED, 9);
	set_stat(q, DQ_STATS_DONE_REFUSED, 3);
	set_stat(q, DQ_STATS_REDELIVERED, 12);
	set_stat(q, DQ_STATS_CREDIT_WAITS, 4567);
	set_stat(q, DQ_STATS_EXPIRED, 0);
	set_stat(q, DQ_STATS_CONSUMER, 1);
	q->mono_ns = FAKE_MONO_NS;	/* as the parser reads it */
	q->has_rej = true;
}

/*
 * A named queue with application keys, untracked: 3 messages taken back
 * by a keyed replace, 2 keyed submits refused (the key was taken).
 */
static void queue_keyed(struct qinfo *q)
{
	memset(q, 0, sizeof(*q));
	set(q, DQ_A_ID, 8);
	snprintf(q->name, sizeof(q->name), "sessions");
	safe_name(q->disp, sizeof(q->disp), q->name);
	q->has[DQ_A_NAME] = true;
	set(q, DQ_A_SLOTS, 1024);
	set(q, DQ_A_SLOT_SIZE, 256);
	set(q, DQ_A_SUBMIT_ENTRIES, 1024);
	set(q, DQ_A_READY_ENTRIES, 1024);
	set(q, DQ_A_NODE, 0);
	set(q, DQ_A_GRANULARITY_NS, 50000);
	set(q, DQ_A_MAX_PENDING, 1024);
	set(q, DQ_A_RATE, 0);
	set(q, DQ_A_BURST, 1);
	set(q, DQ_A_HIGH_WM, 0);
	set(q, DQ_A_UID, 0);
	set(q, DQ_A_GID, 0);
	set(q, DQ_A_MODE, 0600);
	set(q, DQ_A_USERS, 1);
	set(q, DQ_A_FLAGS, DQ_SETUP_F_KEYS);
	set(q, DQ_A_MAX_INFLIGHT, 0);
	set(q, DQ_A_VISIBILITY_NS, 0);
	set_stat(q, DQ_STATS_PENDING, 900);
	set_stat(q, DQ_STATS_PACED, 0);
	set_stat(q, DQ_STATS_READY_BACKLOG, 0);
	set_stat(q, DQ_STATS_SUBMITTED, 1210);
	set_stat(q, DQ_STATS_RELEASED, 300);
	set_stat(q, DQ_STATS_CANCELLED, 7);
	set_stat(q, DQ_STATS_RING_ERRORS, 0);
	set_stat(q, DQ_STATS_LATE_EWMA_NS, 800);
	set_stat(q, DQ_STATS_LATE_MAX_NS, 40000);
	set_stat(q, DQ_STATS_TIMER_FIRES, 290);
	set_stat(q, DQ_STATS_THROTTLED, 0);
	set_stat(q, DQ_STATS_REPLACED, 3);
	q->has_rej = true;
	q->rej[DQ_REJ_KEY] = 2;
}

/* The tracked queue again, with keys too: "leases", id 9, 1 replaced. */
static void queue_tracked_keyed(struct qinfo *q)
{
	queue_tracked(q);
	set(q, DQ_A_ID, 9);
	snprintf(q->name, sizeof(q->name), "leases");
	safe_name(q->disp, sizeof(q->disp), q->name);
	set(q, DQ_A_FLAGS, DQ_SETUP_F_TRACK | DQ_SETUP_F_KEYS);
	set_stat(q, DQ_STATS_REPLACED, 1);
}

/*
 * The tracked queue again, with a visibility timeout of 30 s: "tasks",
 * id 10; 3 messages expired (in flight 30 s without DONE, put back).
 */
static void queue_visible(struct qinfo *q)
{
	queue_tracked(q);
	set(q, DQ_A_ID, 10);
	snprintf(q->name, sizeof(q->name), "tasks");
	safe_name(q->disp, sizeof(q->disp), q->name);
	set(q, DQ_A_VISIBILITY_NS, 30000000000ULL);
	set_stat(q, DQ_STATS_EXPIRED, 3);
}

#define NQ	6

int main(void)
{
	struct qinfo qs[NQ];
	struct nl nl = { .sk = (struct mnl_socket *)&nl, .family = FAMILY };
	struct pr text, json;
	unsigned int i;

	setenv("TZ", "UTC", 1);
	tzset();
	pr_init(&text, stdout, false);
	pr_init(&json, stdout, true);
	queue_busy(&qs[0]);
	queue_idle(&qs[1]);
	queue_tracked(&qs[2]);
	queue_keyed(&qs[3]);
	queue_tracked_keyed(&qs[4]);
	queue_visible(&qs[5]);
	for (i = 0; i < NQ; i++) {
		printf("== show %u (text)\n", i);
		queue_print(&text, &qs[i], false);
		printf("== stats %u (text)\n", i);
		queue_print(&text, &qs[i], true);
		printf("== show %u (json)\n", i);
		queue_print(&json, &qs[i], false);
		printf("== stats %u (json)\n", i);
		queue_print(&json, &qs[i], true);
	}
	printf("== list (text)\n");
	queue_print_all(&text, &queue_list_view, qs, NQ);
	printf("== stats (text)\n");
	queue_print_all(&text, &queue_stats_view, qs, NQ);
	printf("== list (json)\n");
	queue_print_all(&json, &queue_list_view, qs, NQ);
	printf("== stats (json)\n");
	queue_print_all(&json, &queue_stats_view, qs, NQ);
	for (i = 0; i < 2; i++) {
		struct pr *pr = i ? &json : &text;

		printf("== stats --node (%s)\n", i ? "json" : "text");
		node_reply(1, 41234, 9835289, 123456);
		node_stats(&nl, pr, "1");
		node_reply(0, 0, 0, 0);
		node_stats(&nl, pr, "0");
	}
	for (i = 0; i < 2; i++) {
		printf("== monitor (%s)\n", i ? "json" : "text");
		events(i ? &json : &text);
	}
	errors(&nl, &text);
	requests(&nl, &text, &json);
	usage_errors(&nl, &text);
	return 0;
}
