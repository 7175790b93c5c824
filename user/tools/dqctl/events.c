// SPDX-License-Identifier: LGPL-2.1 OR MIT
/* dqctl monitor: follow the dq family's events multicast group. */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <linux/genetlink.h>
#include <linux/netlink.h>

#include <linux/dq.h>

#include "args.h"
#include "attrs.h"
#include "dqctl.h"
#include "events.h"
#include "nl.h"
#include "print.h"
#include "queue.h"

void event_print(struct pr *pr, const struct qinfo *q,
		 const struct timespec *ts)
{
	uint32_t k = (uint32_t)q->v[DQ_A_EVENT_KIND];
	const char *kind = event_name(k);
	char tbuf[32];
	struct tm tm;

	pr_open(pr, NULL);
	localtime_r(&ts->tv_sec, &tm);
	strftime(tbuf, sizeof(tbuf), "%H:%M:%S", &tm);
	pr_text(pr, "%s.%03ld  ", tbuf, ts->tv_nsec / 1000000);
	pr_str(pr, "event", "%-8s", kind ? kind : "unknown");
	if (!kind)
		pr_u64(pr, "kind", NULL, k);
	if (pr->json)
		queue_print_fields(pr, q);
	pr_text(pr, " %s (id %" PRIu64 ")", q->has[DQ_A_NAME] ? q->disp : "-",
		q->v[DQ_A_ID]);
	switch (k) {
	case DQ_EVENT_HIGH_WM:
		pr_text(pr, "  pending reached the high watermark %" PRIu64,
			q->v[DQ_A_HIGH_WM]);
		break;
	case DQ_EVENT_FULL:
		pr_text(pr, "  a submit hit max pending %" PRIu64,
			q->v[DQ_A_MAX_PENDING]);
		break;
	case DQ_EVENT_DELETED:
		pr_text(pr, "  deleted");
		break;
	default:
		pr_text(pr, "  kind %" PRIu32, k);
	}
	pr_text(pr, "\n");
	snprintf(tbuf, sizeof(tbuf), "%lld.%06ld", (long long)ts->tv_sec,
		 ts->tv_nsec / 1000);
	pr_num(pr, "time", tbuf);
	pr_close(pr);
	fflush(pr->f);
}

static volatile sig_atomic_t stop_signal;

static void on_signal(int sig)
{
	stop_signal = sig;
}

struct monitor {
	const struct nl *nl;
	struct pr *pr;
	uint64_t seen;
};

static int monitor_cb(const struct nlmsghdr *nlh, void *data)
{
	struct monitor *m = data;
	const struct genlmsghdr *g = mnl_nlmsg_get_payload(nlh);
	struct timespec ts;
	struct qinfo q;

	if (nlh->nlmsg_type != m->nl->family ||
	    mnl_nlmsg_get_payload_len(nlh) < sizeof(*g) ||
	    g->cmd != DQ_CMD_EVENT)
		return MNL_CB_OK;
	qinfo_parse(nlh, &q);
	clock_gettime(CLOCK_REALTIME, &ts);
	event_print(m->pr, &q, &ts);
	m->seen++;
	return MNL_CB_OK;
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static int subscribe(struct nl *nl, const struct args *a)
{
	struct sigaction sa;
	uint32_t grp;

	if (nl_open(nl))
		return nl_fail(nl, "monitor", NULL, a->verbose);
	grp = nl->mcgrp_events;
	if (!grp) {
		warnx("monitor: the dq family has no '%s' multicast group",
		      DQ_GENL_MCGRP_EVENTS);
		return EXIT_KERNEL;
	}
	if (mnl_socket_setsockopt(nl->sk, NETLINK_ADD_MEMBERSHIP, &grp,
				  sizeof(grp)) < 0) {
		warnx("monitor: cannot join the '%s' group: %s",
		      DQ_GENL_MCGRP_EVENTS, strerror(errno));
		return EXIT_KERNEL;
	}

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;	/* no SA_RESTART: poll returns EINTR */
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	sa.sa_handler = SIG_IGN;
	sigaction(SIGPIPE, &sa, NULL);

	if (a->verbose)
		warnx("monitoring dq events (group %s, id %" PRIu32 ")",
		      DQ_GENL_MCGRP_EVENTS, grp);
	return 0;
}

int cmd_monitor(struct nl *nl, const struct args *a, struct pr *pr)
{
	static const enum opt_id allowed[] = { O_COUNT, O_TIMEOUT, 0 };
	struct monitor m = { .nl = nl, .pr = pr };
	uint64_t count = 0, deadline = 0;
	int ret;

	only_opts(a, allowed);
	if (a->npos)
		usage_err("monitor takes no arguments");
	if (a->val[O_COUNT])
		count = parse_u64("--count", a->val[O_COUNT], UINT64_MAX);
	if (a->val[O_TIMEOUT])
		deadline = mono_ns() + parse_time("--timeout", a->val[O_TIMEOUT],
						  "s");
	ret = subscribe(nl, a);
	if (ret)
		return ret;

	while (!stop_signal && (!count || m.seen < count)) {
		struct pollfd pfd = { .fd = mnl_socket_get_fd(nl->sk),
				      .events = POLLIN };
		int timeout = -1, r;
		ssize_t n;

		if (deadline) {
			uint64_t now = mono_ns();

			if (now >= deadline)
				break;
			timeout = (int)((deadline - now + 999999) / 1000000);
		}
		r = poll(&pfd, 1, timeout);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			warnx("monitor: poll: %s", strerror(errno));
			return EXIT_KERNEL;
		}
		if (r == 0)
			continue;
		n = mnl_socket_recvfrom(nl->sk, nl->rx, sizeof(nl->rx));
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == ENOBUFS) {
				warnx("monitor: events were lost (socket buffer overrun)");
				continue;
			}
			warnx("monitor: %s", strerror(errno));
			return EXIT_KERNEL;
		}
		/* count may stop us halfway through a batch: fine. */
		if (nl_run(nl, (size_t)n, monitor_cb, &m) < 0 && nl->err.error)
			return nl_fail(nl, "monitor", NULL, a->verbose);
	}
	return 0;
}
