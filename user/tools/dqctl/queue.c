// SPDX-License-Identifier: LGPL-2.1 OR MIT
/*
 * dqctl's queue commands: create, delete, show, set, list, stats (of one
 * queue or all), and how a queue prints (queue.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <linux/dq.h>

#include "args.h"
#include "attrs.h"
#include "dqctl.h"
#include "fmt.h"
#include "nl.h"
#include "print.h"
#include "queue.h"

/* ---- printing -------------------------------------------------------- */

/* JSON: only the attributes the reply carried; text: every one. */
#define HAS(pr, q, a)	(!(pr)->json || (q)->has[a])
/* JSON: only the counters the reply carried; text: every one. */
#define HAS_ST(pr, q, s)	(!(pr)->json || (q)->st_has[s])
/* Delivery counters: JSON as HAS_ST; text: all of a tracked queue's. */
#define HAS_TR(pr, q, s)	((pr)->json ? (q)->st_has[s] : qinfo_tracked(q))

static const char *qname(const struct qinfo *q)
{
	return q->has[DQ_A_NAME] ? q->disp : "-";
}

void queue_print_fields(struct pr *pr, const struct qinfo *q)
{
	char b1[32], b2[32], mode[8];
	uint64_t rate = q->v[DQ_A_RATE];
	uint64_t inflight = q->v[DQ_A_MAX_INFLIGHT];
	uint64_t visibility = q->v[DQ_A_VISIBILITY_NS];
	bool track = q->v[DQ_A_FLAGS] & DQ_SETUP_F_TRACK;

	pr_str_as(pr, "name", q->has[DQ_A_NAME] ? q->name : "", "%s", qname(q));
	if (HAS(pr, q, DQ_A_ID))
		pr_u64(pr, "id", "  id %" PRIu64, q->v[DQ_A_ID]);
	if (HAS(pr, q, DQ_A_NODE))
		pr_s64(pr, "node", "  node %" PRId64, (int64_t)q->v[DQ_A_NODE]);
	if (HAS(pr, q, DQ_A_USERS))
		pr_u64(pr, "users", "  users %" PRIu64 "\n", q->v[DQ_A_USERS]);
	if (HAS(pr, q, DQ_A_SLOTS))
		pr_u64(pr, "slots", "  slots %" PRIu64, q->v[DQ_A_SLOTS]);
	if (HAS(pr, q, DQ_A_SLOT_SIZE))
		pr_u64(pr, "slot_size", " x %" PRIu64 " B", q->v[DQ_A_SLOT_SIZE]);
	pr_text(pr, " (arena %s)", fmt_bytes(b1, sizeof(b1),
		q->v[DQ_A_SLOTS] * q->v[DQ_A_SLOT_SIZE]));
	if (HAS(pr, q, DQ_A_SUBMIT_ENTRIES))
		pr_u64(pr, "submit_entries", "  rings: submit %" PRIu64,
		       q->v[DQ_A_SUBMIT_ENTRIES]);
	if (HAS(pr, q, DQ_A_READY_ENTRIES))
		pr_u64(pr, "ready_entries", ", ready %" PRIu64 "\n",
		       q->v[DQ_A_READY_ENTRIES]);
	if (HAS(pr, q, DQ_A_GRANULARITY_NS))
		pr_u64_as(pr, "granularity_ns", q->v[DQ_A_GRANULARITY_NS],
			  "  granularity %s",
			  fmt_ns(b1, sizeof(b1), q->v[DQ_A_GRANULARITY_NS]));
	if (HAS(pr, q, DQ_A_MAX_PENDING))
		pr_u64(pr, "max_pending", "  max pending %" PRIu64,
		       q->v[DQ_A_MAX_PENDING]);
	if (HAS(pr, q, DQ_A_HIGH_WM)) {
		snprintf(b2, sizeof(b2), "%" PRIu64, q->v[DQ_A_HIGH_WM]);
		pr_u64_as(pr, "high_wm", q->v[DQ_A_HIGH_WM],
			  "  high watermark %s\n",
			  q->v[DQ_A_HIGH_WM] ? b2 : "off");
	}
	if (HAS(pr, q, DQ_A_RATE)) {
		snprintf(b1, sizeof(b1), "%" PRIu64 "/s", rate);
		pr_u64_as(pr, "rate", rate, "  pacing %s", rate ? b1 : "off\n");
	}
	if (HAS(pr, q, DQ_A_BURST)) {
		/* Text shows the burst only with a rate, as 1 when unset. */
		snprintf(b1, sizeof(b1), "  burst %" PRIu64 "\n",
			 q->v[DQ_A_BURST] ? q->v[DQ_A_BURST] : 1);
		pr_u64_as(pr, "burst", q->v[DQ_A_BURST], "%s", rate ? b1 : "");
	}
	if (HAS(pr, q, DQ_A_UID))
		pr_u64_as(pr, "uid", q->v[DQ_A_UID], "  owner %s",
			  fmt_user(b1, sizeof(b1), (uint32_t)q->v[DQ_A_UID]));
	if (HAS(pr, q, DQ_A_GID))
		pr_u64_as(pr, "gid", q->v[DQ_A_GID], ":%s",
			  fmt_group(b2, sizeof(b2), (uint32_t)q->v[DQ_A_GID]));
	if (HAS(pr, q, DQ_A_MODE)) {
		snprintf(mode, sizeof(mode), "%04" PRIo64, q->v[DQ_A_MODE]);
		pr_str(pr, "mode", "  mode %s\n", mode);
	}
	if (HAS(pr, q, DQ_A_FLAGS))
		pr_bool(pr, "track", "  track %s", track);
	if (HAS(pr, q, DQ_A_MAX_INFLIGHT)) {
		/* Text shows the cap only of a tracked queue; 0: no cap. */
		snprintf(b1, sizeof(b1), "%" PRIu64, inflight);
		pr_u64_as(pr, "max_inflight", inflight,
			  track ? "  max in flight %s" : NULL,
			  inflight ? b1 : "off");
	}
	if (HAS(pr, q, DQ_A_VISIBILITY_NS))
		/* Text: of a tracked queue only, as the cap; 0: none. */
		pr_u64_as(pr, "visibility_ns", visibility,
			  track ? "  visibility %s" : NULL,
			  visibility ? fmt_ns(b1, sizeof(b1), visibility) : "off");
	if (HAS(pr, q, DQ_A_FLAGS))
		pr_bool(pr, "keys", "  keys %s\n", qinfo_keyed(q));
}

static void pr_stat(struct pr *pr, const struct qinfo *q, unsigned int st,
		    const char *fmt)
{
	if (HAS_ST(pr, q, st))
		pr_u64(pr, stats_names[st], fmt, q->st[st]);
}

static void pr_stat_ns(struct pr *pr, const struct qinfo *q, unsigned int st,
		       const char *fmt)
{
	char b[32];

	if (HAS_ST(pr, q, st))
		pr_u64_as(pr, stats_names[st], q->st[st], fmt,
			  fmt_ns(b, sizeof(b), q->st[st]));
}

/* A tracked queue's delivery counters (none for another queue). */
static void queue_print_track_stats(struct pr *pr, const struct qinfo *q)
{
	uint64_t age = qinfo_oldest_age(q);
	char b[32];

	if (HAS_TR(pr, q, DQ_STATS_INFLIGHT))
		pr_u64(pr, stats_names[DQ_STATS_INFLIGHT],
		       "  in flight %" PRIu64, q->st[DQ_STATS_INFLIGHT]);
	if (HAS_TR(pr, q, DQ_STATS_OLDEST_NS)) {
		/* JSON: the release time and its age; text: the age. */
		pr_u64(pr, stats_names[DQ_STATS_OLDEST_NS], NULL,
		       q->st[DQ_STATS_OLDEST_NS]);
		pr_u64_as(pr, "oldest_inflight_age_ns", age, "  oldest %s",
			  q->st[DQ_STATS_OLDEST_NS] ?
			  fmt_ns(b, sizeof(b), age) : "none");
	}
	if (HAS_TR(pr, q, DQ_STATS_CONSUMER))
		pr_bool(pr, stats_names[DQ_STATS_CONSUMER], "  consumer %s",
			q->st[DQ_STATS_CONSUMER] != 0);
	if (HAS_TR(pr, q, DQ_STATS_REDELIVERED))
		pr_u64(pr, stats_names[DQ_STATS_REDELIVERED],
		       "  redelivered %" PRIu64, q->st[DQ_STATS_REDELIVERED]);
	if (HAS_TR(pr, q, DQ_STATS_EXPIRED))
		pr_u64(pr, stats_names[DQ_STATS_EXPIRED],
		       "  expired %" PRIu64, q->st[DQ_STATS_EXPIRED]);
	if (qinfo_tracked(q))
		pr_text(pr, "\n");
	if (HAS_TR(pr, q, DQ_STATS_DONE_DELIVERED))
		pr_u64(pr, stats_names[DQ_STATS_DONE_DELIVERED],
		       "  done delivered %" PRIu64,
		       q->st[DQ_STATS_DONE_DELIVERED]);
	if (HAS_TR(pr, q, DQ_STATS_DONE_FAILED))
		pr_u64(pr, stats_names[DQ_STATS_DONE_FAILED],
		       "  failed %" PRIu64, q->st[DQ_STATS_DONE_FAILED]);
	if (HAS_TR(pr, q, DQ_STATS_DONE_REFUSED))
		pr_u64(pr, stats_names[DQ_STATS_DONE_REFUSED],
		       "  refused %" PRIu64, q->st[DQ_STATS_DONE_REFUSED]);
	if (HAS_TR(pr, q, DQ_STATS_CREDIT_WAITS))
		pr_u64(pr, stats_names[DQ_STATS_CREDIT_WAITS],
		       "  credit waits %" PRIu64 "\n",
		       q->st[DQ_STATS_CREDIT_WAITS]);
}

void queue_print_stats(struct pr *pr, const struct qinfo *q)
{
	bool any = false;
	char fmt[32];
	int i;

	pr_open(pr, "stats");
	pr_text(pr, "%s  id %" PRIu64 "  node %" PRId64 "\n", qname(q),
		q->v[DQ_A_ID], (int64_t)q->v[DQ_A_NODE]);
	pr_stat(pr, q, DQ_STATS_PENDING, "  pending %" PRIu64);
	pr_stat(pr, q, DQ_STATS_PACED, "  paced %" PRIu64);
	pr_stat(pr, q, DQ_STATS_READY_BACKLOG, "  ready backlog %" PRIu64 "\n");
	pr_stat(pr, q, DQ_STATS_SUBMITTED, "  submitted %" PRIu64);
	pr_stat(pr, q, DQ_STATS_RELEASED, "  released %" PRIu64);
	pr_stat(pr, q, DQ_STATS_CANCELLED, "  cancelled %" PRIu64);
	pr_stat(pr, q, DQ_STATS_REPLACED, "  replaced %" PRIu64);
	pr_stat(pr, q, DQ_STATS_THROTTLED, "  throttled %" PRIu64 "\n");
	if (!pr->json || q->has_rej) {
		pr_u64(pr, "rejected_total", "  rejected %" PRIu64,
		       qinfo_rej_total(q));
		/* Text: the reasons that counted, "(len 2, full 5)". */
		pr_open(pr, "rejected");
		for (i = 0; i < DQ_REJ_NR; i++) {
			snprintf(fmt, sizeof(fmt), "%s%s %%" PRIu64,
				 any ? ", " : " (", reject_names[i]);
			pr_u64(pr, reject_names[i], q->rej[i] ? fmt : NULL,
			       q->rej[i]);
			any |= q->rej[i] != 0;
		}
		pr_close(pr);
		if (any)
			pr_text(pr, ")");
	}
	pr_stat(pr, q, DQ_STATS_RING_ERRORS, "  ring errors %" PRIu64 "\n");
	pr_stat_ns(pr, q, DQ_STATS_LATE_EWMA_NS, "  lateness ewma %s");
	pr_stat_ns(pr, q, DQ_STATS_LATE_MAX_NS, "  max %s");
	pr_stat(pr, q, DQ_STATS_TIMER_FIRES, "  timer fires %" PRIu64 "\n");
	queue_print_track_stats(pr, q);
	pr_close(pr);
}

void queue_print(struct pr *pr, const struct qinfo *q, bool stats)
{
	pr_open(pr, NULL);
	if (pr->json || !stats)
		queue_print_fields(pr, q);
	if (stats && (q->has_stats || !pr->json))
		queue_print_stats(pr, q);
	pr_close(pr);
}

/* ---- tables: one list of columns for list and stats ------------------ */

enum { QCOL_LIST = 1, QCOL_STATS = 2, QCOL_ALL = 3 };

#define ROW(row)	((const struct qinfo *)(row))

static void cell_attr(char *b, size_t n, const void *row, unsigned int a)
{
	snprintf(b, n, "%" PRIu64, ROW(row)->v[a]);
}

/* An attribute whose 0 means "off". */
static void cell_attr_off(char *b, size_t n, const void *row, unsigned int a)
{
	if (ROW(row)->v[a])
		cell_attr(b, n, row, a);
	else
		snprintf(b, n, "off");
}

static void cell_s32(char *b, size_t n, const void *row, unsigned int a)
{
	snprintf(b, n, "%" PRId64, (int64_t)ROW(row)->v[a]);
}

static void cell_name(char *b, size_t n, const void *row, unsigned int a)
{
	(void)a;
	snprintf(b, n, "%s", qname(ROW(row)));
}

static void cell_rate(char *b, size_t n, const void *row, unsigned int a)
{
	if (ROW(row)->v[a])
		snprintf(b, n, "%" PRIu64 "/s", ROW(row)->v[a]);
	else
		snprintf(b, n, "off");
}

static void cell_owner(char *b, size_t n, const void *row, unsigned int a)
{
	char u[32], g[32];

	(void)a;
	snprintf(b, n, "%s:%s",
		 fmt_user(u, sizeof(u), (uint32_t)ROW(row)->v[DQ_A_UID]),
		 fmt_group(g, sizeof(g), (uint32_t)ROW(row)->v[DQ_A_GID]));
}

static void cell_mode(char *b, size_t n, const void *row, unsigned int a)
{
	snprintf(b, n, "%04" PRIo64, ROW(row)->v[a]);
}

static void cell_stat(char *b, size_t n, const void *row, unsigned int st)
{
	snprintf(b, n, "%" PRIu64, ROW(row)->st[st]);
}

static void cell_stat_ns(char *b, size_t n, const void *row, unsigned int st)
{
	fmt_ns(b, n, ROW(row)->st[st]);
}

static void cell_track(char *b, size_t n, const void *row, unsigned int a)
{
	(void)a;
	snprintf(b, n, "%s", qinfo_tracked(ROW(row)) ? "yes" : "no");
}

/* The rest are "-" for a queue that does not track delivery. */
static void cell_inflight_cap(char *b, size_t n, const void *row,
			      unsigned int a)
{
	if (!qinfo_tracked(ROW(row)))
		snprintf(b, n, "-");
	else
		cell_attr_off(b, n, row, a);
}

static void cell_track_stat(char *b, size_t n, const void *row,
			    unsigned int st)
{
	if (!qinfo_tracked(ROW(row)))
		snprintf(b, n, "-");
	else
		cell_stat(b, n, row, st);
}

static void cell_oldest(char *b, size_t n, const void *row, unsigned int st)
{
	if (!qinfo_tracked(ROW(row)))
		snprintf(b, n, "-");
	else if (!ROW(row)->st[st])
		snprintf(b, n, "none");
	else
		fmt_ns(b, n, qinfo_oldest_age(ROW(row)));
}

static void cell_consumer(char *b, size_t n, const void *row, unsigned int st)
{
	if (!qinfo_tracked(ROW(row)))
		snprintf(b, n, "-");
	else
		snprintf(b, n, "%s", ROW(row)->st[st] ? "yes" : "no");
}

static void cell_keys(char *b, size_t n, const void *row, unsigned int a)
{
	(void)a;
	snprintf(b, n, "%s", qinfo_keyed(ROW(row)) ? "yes" : "no");
}

static void cell_rejected(char *b, size_t n, const void *row, unsigned int a)
{
	(void)a;
	snprintf(b, n, "%" PRIu64, qinfo_rej_total(ROW(row)));
}

static const struct pr_col queue_cols[] = {
	{ "ID", false, QCOL_ALL, cell_attr, DQ_A_ID },
	{ "NAME", true, QCOL_ALL, cell_name, DQ_A_NAME },
	{ "NODE", false, QCOL_ALL, cell_s32, DQ_A_NODE },
	{ "SLOTS", false, QCOL_LIST, cell_attr, DQ_A_SLOTS },
	{ "SLOT_SIZE", false, QCOL_LIST, cell_attr, DQ_A_SLOT_SIZE },
	{ "RATE", false, QCOL_LIST, cell_rate, DQ_A_RATE },
	{ "BURST", false, QCOL_LIST, cell_attr, DQ_A_BURST },
	{ "MAX_PENDING", false, QCOL_LIST, cell_attr, DQ_A_MAX_PENDING },
	{ "HIGH_WM", false, QCOL_LIST, cell_attr_off, DQ_A_HIGH_WM },
	{ "OWNER", true, QCOL_LIST, cell_owner, DQ_A_UID },
	{ "MODE", false, QCOL_LIST, cell_mode, DQ_A_MODE },
	{ "USERS", false, QCOL_LIST, cell_attr, DQ_A_USERS },
	{ "TRACK", true, QCOL_LIST, cell_track, DQ_A_FLAGS },
	{ "MAX_INFLIGHT", false, QCOL_LIST, cell_inflight_cap, DQ_A_MAX_INFLIGHT },
	{ "KEYS", true, QCOL_LIST, cell_keys, DQ_A_FLAGS },
	{ "PENDING", false, QCOL_STATS, cell_stat, DQ_STATS_PENDING },
	{ "PACED", false, QCOL_STATS, cell_stat, DQ_STATS_PACED },
	{ "BACKLOG", false, QCOL_STATS, cell_stat, DQ_STATS_READY_BACKLOG },
	{ "SUBMITTED", false, QCOL_STATS, cell_stat, DQ_STATS_SUBMITTED },
	{ "RELEASED", false, QCOL_STATS, cell_stat, DQ_STATS_RELEASED },
	{ "CANCELLED", false, QCOL_STATS, cell_stat, DQ_STATS_CANCELLED },
	{ "REJECTED", false, QCOL_STATS, cell_rejected, DQ_STATS_REJECTED },
	{ "LATE_EWMA", false, QCOL_STATS, cell_stat_ns, DQ_STATS_LATE_EWMA_NS },
	{ "LATE_MAX", false, QCOL_STATS, cell_stat_ns, DQ_STATS_LATE_MAX_NS },
	{ "TIMER_FIRES", false, QCOL_STATS, cell_stat, DQ_STATS_TIMER_FIRES },
	{ "INFLIGHT", false, QCOL_STATS, cell_track_stat, DQ_STATS_INFLIGHT },
	{ "OLDEST", false, QCOL_STATS, cell_oldest, DQ_STATS_OLDEST_NS },
	{ "CONSUMER", true, QCOL_STATS, cell_consumer, DQ_STATS_CONSUMER },
	{ "REDELIVERED", false, QCOL_STATS, cell_track_stat,
	  DQ_STATS_REDELIVERED },
};

const struct queue_view queue_list_view = {
	.what = "list", .cmd = DQ_CMD_QUEUE_GET, .cols = QCOL_LIST,
};

const struct queue_view queue_stats_view = {
	.what = "stats", .cmd = DQ_CMD_STATS, .stats = true,
	.cols = QCOL_STATS,
};

void queue_print_all(struct pr *pr, const struct queue_view *v,
		     const struct qinfo *qs, size_t n)
{
	size_t i;

	if (!pr->json) {
		pr_table(pr, queue_cols, ARRAY_SIZE(queue_cols), v->cols, qs, n,
			 sizeof(*qs));
		return;
	}
	pr_array_open(pr);
	for (i = 0; i < n; i++) {
		pr_open(pr, NULL);
		queue_print_fields(pr, &qs[i]);
		if (v->stats)
			queue_print_stats(pr, &qs[i]);
		pr_close(pr);
	}
	pr_array_close(pr);
}

/* ---- commands -------------------------------------------------------- */

/*
 * The queue a command names: NAME or --id.  Fills @what ("show q") and
 * puts the attribute on @nlh.
 */
static void put_queue_ref(const struct args *a, struct nlmsghdr *nlh,
			  char *what, size_t len, const char *verb)
{
	if (a->val[O_ID] && a->npos)
		usage_err("%s: give NAME or --id, not both", a->cmd);
	if (a->val[O_ID]) {
		uint32_t id = parse_u32("--id", a->val[O_ID]);

		mnl_attr_put_u32(nlh, DQ_A_ID, id);
		snprintf(what, len, "%s queue id %" PRIu32, verb, id);
		return;
	}
	if (a->npos != 1)
		usage_err("%s needs one queue NAME (or --id N)", a->cmd);
	check_name(a->pos[0]);
	mnl_attr_put_strz(nlh, DQ_A_NAME, a->pos[0]);
	snprintf(what, len, "%s %s", verb, a->pos[0]);
}

enum reply_print { PRINT_NONE, PRINT_QUEUE, PRINT_STATS };

/*
 * Send the request in nl->req and print the queue it answers with.
 * @perm_action: what EPERM refused ("creating queues"), or NULL.
 */
static int queue_talk(struct nl *nl, const struct args *a, struct pr *pr,
		      const char *what, const char *perm_action,
		      enum reply_print print)
{
	struct queue_list l = { .nl = nl };
	int ret = 0;

	if (nl_talk(nl, queue_list_cb, &l) < 0)
		ret = nl_fail(nl, what, perm_action, a->verbose);
	else if (print != PRINT_NONE && l.n)
		queue_print(pr, &l.q[0], print == PRINT_STATS);
	free(l.q);
	return ret;
}

/* An optional u32 option as its attribute. */
static void put_u32_opt(struct nlmsghdr *nlh, const struct args *a,
			enum opt_id o, uint16_t attr, const char *opt)
{
	if (a->val[o])
		mnl_attr_put_u32(nlh, attr, parse_u32(opt, a->val[o]));
}

int cmd_create(struct nl *nl, const struct args *a, struct pr *pr)
{
	static const enum opt_id allowed[] = {
		O_SLOTS, O_SLOT_SIZE, O_SUBMIT_ENTRIES, O_READY_ENTRIES,
		O_NODE, O_GRANULARITY, O_MAX_PENDING, O_RATE, O_BURST,
		O_HIGH_WM, O_UID, O_GID, O_MODE, O_TRACK, O_INFLIGHT, O_KEYS,
		O_VISIBILITY, 0,
	};
	struct nlmsghdr *nlh;
	char what[64];

	only_opts(a, allowed);
	if (a->npos != 1)
		usage_err("create needs one queue NAME");
	if (!a->val[O_SLOTS] || !a->val[O_SLOT_SIZE])
		usage_err("create needs --slots N and --slot-size BYTES");
	if (a->val[O_INFLIGHT] && !a->val[O_TRACK])
		usage_err("--inflight caps a tracked queue: it needs --track");
	if (a->val[O_VISIBILITY] && !a->val[O_TRACK])
		usage_err("--visibility times out a tracked queue's messages: it needs --track");
	check_name(a->pos[0]);
	snprintf(what, sizeof(what), "create %s", a->pos[0]);

	nlh = nl_req(nl, DQ_CMD_QUEUE_NEW, false);
	mnl_attr_put_strz(nlh, DQ_A_NAME, a->pos[0]);
	put_u32_opt(nlh, a, O_SLOTS, DQ_A_SLOTS, "--slots");
	put_u32_opt(nlh, a, O_SLOT_SIZE, DQ_A_SLOT_SIZE, "--slot-size");
	put_u32_opt(nlh, a, O_SUBMIT_ENTRIES, DQ_A_SUBMIT_ENTRIES,
		    "--submit-entries");
	put_u32_opt(nlh, a, O_READY_ENTRIES, DQ_A_READY_ENTRIES,
		    "--ready-entries");
	if (a->val[O_NODE])
		mnl_attr_put_u32(nlh, DQ_A_NODE,
				 (uint32_t)parse_node("--node", a->val[O_NODE]));
	if (a->val[O_GRANULARITY]) {
		uint64_t g = parse_time("--granularity", a->val[O_GRANULARITY],
					NULL);

		if (g > UINT32_MAX)
			usage_err("--granularity: %s is too large",
				  a->val[O_GRANULARITY]);
		mnl_attr_put_u32(nlh, DQ_A_GRANULARITY_NS, (uint32_t)g);
	}
	put_u32_opt(nlh, a, O_MAX_PENDING, DQ_A_MAX_PENDING, "--max-pending");
	/*
	 * The module applies BURST only together with RATE: a burst given
	 * alone goes with rate 0 (unpaced) so it is kept for a later rate.
	 */
	if (a->val[O_RATE] || a->val[O_BURST])
		mnl_attr_put_u64(nlh, DQ_A_RATE,
				 a->val[O_RATE] ?
				 parse_u64("--rate", a->val[O_RATE], UINT64_MAX) :
				 0);
	put_u32_opt(nlh, a, O_BURST, DQ_A_BURST, "--burst");
	put_u32_opt(nlh, a, O_HIGH_WM, DQ_A_HIGH_WM, "--high-wm");
	if (a->val[O_UID])
		mnl_attr_put_u32(nlh, DQ_A_UID, parse_uid("--uid", a->val[O_UID]));
	if (a->val[O_GID])
		mnl_attr_put_u32(nlh, DQ_A_GID, parse_gid("--gid", a->val[O_GID]));
	if (a->val[O_MODE])
		mnl_attr_put_u32(nlh, DQ_A_MODE,
				 parse_mode("--mode", a->val[O_MODE]));
	if (a->val[O_TRACK] || a->val[O_KEYS])
		mnl_attr_put_u32(nlh, DQ_A_FLAGS,
				 (a->val[O_TRACK] ? DQ_SETUP_F_TRACK : 0) |
				 (a->val[O_KEYS] ? DQ_SETUP_F_KEYS : 0));
	if (a->val[O_INFLIGHT]) {
		uint32_t cap = parse_inflight("--inflight", a->val[O_INFLIGHT]);

		/* none: the attribute left out, which is no cap */
		if (cap != DQ_MAX_SLOTS)
			mnl_attr_put_u32(nlh, DQ_A_MAX_INFLIGHT, cap);
	}
	if (a->val[O_VISIBILITY]) {
		uint64_t v = parse_time("--visibility", a->val[O_VISIBILITY],
					NULL);

		/* the upper end (DQ_MAX_DELAY_NS) is the kernel's to check */
		if (v < DQ_MIN_VISIBILITY_NS)
			usage_err("--visibility: %s is below the minimum, 1ms",
				  a->val[O_VISIBILITY]);
		mnl_attr_put_u64(nlh, DQ_A_VISIBILITY_NS, v);
	}
	return queue_talk(nl, a, pr, what, "creating queues", PRINT_QUEUE);
}

int cmd_delete(struct nl *nl, const struct args *a, struct pr *pr)
{
	static const enum opt_id allowed[] = { O_FORCE, O_ID, 0 };
	struct nlmsghdr *nlh;
	char what[80];
	int ret;

	only_opts(a, allowed);
	nlh = nl_req(nl, DQ_CMD_QUEUE_DEL, false);
	put_queue_ref(a, nlh, what, sizeof(what), "delete");
	if (a->val[O_FORCE])
		mnl_attr_put(nlh, DQ_A_FORCE, 0, NULL);
	ret = queue_talk(nl, a, pr, what, "deleting queues", PRINT_NONE);
	if (ret && nl->err.error == EBUSY && !a->val[O_FORCE])
		fprintf(stderr,
			"dqctl: (delete --force drops the pending messages)\n");
	return ret;
}

/* show NAME, stats NAME */
static int show(struct nl *nl, const struct args *a, struct pr *pr,
		bool stats)
{
	static const enum opt_id allowed[] = { O_ID, 0 };
	struct nlmsghdr *nlh;
	char what[80];

	only_opts(a, allowed);
	nlh = nl_req(nl, stats ? DQ_CMD_STATS : DQ_CMD_QUEUE_GET, false);
	put_queue_ref(a, nlh, what, sizeof(what), stats ? "stats" : "show");
	return queue_talk(nl, a, pr, what, NULL,
			  stats ? PRINT_STATS : PRINT_QUEUE);
}

int cmd_show(struct nl *nl, const struct args *a, struct pr *pr)
{
	return show(nl, a, pr, false);
}

int cmd_set(struct nl *nl, const struct args *a, struct pr *pr)
{
	static const enum opt_id allowed[] = {
		O_RATE, O_BURST, O_MAX_PENDING, O_HIGH_WM, O_INFLIGHT, O_ID, 0,
	};
	struct nlmsghdr *nlh;
	char what[80];

	only_opts(a, allowed);
	if (!a->val[O_RATE] && !a->val[O_BURST] && !a->val[O_MAX_PENDING] &&
	    !a->val[O_HIGH_WM] && !a->val[O_INFLIGHT])
		usage_err("set needs one of --rate, --burst, --max-pending, --high-wm, --inflight");
	nlh = nl_req(nl, DQ_CMD_QUEUE_SET, false);
	put_queue_ref(a, nlh, what, sizeof(what), "set");
	if (a->val[O_RATE])
		mnl_attr_put_u64(nlh, DQ_A_RATE,
				 parse_u64("--rate", a->val[O_RATE], UINT64_MAX));
	put_u32_opt(nlh, a, O_BURST, DQ_A_BURST, "--burst");
	put_u32_opt(nlh, a, O_MAX_PENDING, DQ_A_MAX_PENDING, "--max-pending");
	put_u32_opt(nlh, a, O_HIGH_WM, DQ_A_HIGH_WM, "--high-wm");
	if (a->val[O_INFLIGHT])
		mnl_attr_put_u32(nlh, DQ_A_MAX_INFLIGHT,
				 parse_inflight("--inflight", a->val[O_INFLIGHT]));
	return queue_talk(nl, a, pr, what, "changing queues", PRINT_QUEUE);
}

static int qinfo_cmp(const void *x, const void *y)
{
	const struct qinfo *a = x, *b = y;

	return a->v[DQ_A_ID] < b->v[DQ_A_ID] ? -1 : a->v[DQ_A_ID] > b->v[DQ_A_ID];
}

/* A dump of every queue, sorted by id. */
static int dump_queues(struct nl *nl, const struct args *a, struct pr *pr,
		       const struct queue_view *v)
{
	struct queue_list l = { .nl = nl };
	int ret = 0;

	nl_req(nl, v->cmd, true);
	if (nl_talk(nl, queue_list_cb, &l) < 0) {
		ret = nl_fail(nl, v->what, NULL, a->verbose);
	} else {
		qsort(l.q, l.n, sizeof(*l.q), qinfo_cmp);
		queue_print_all(pr, v, l.q, l.n);
	}
	free(l.q);
	return ret;
}

int cmd_list(struct nl *nl, const struct args *a, struct pr *pr)
{
	static const enum opt_id allowed[] = { 0 };

	only_opts(a, allowed);
	if (a->npos)
		usage_err("list takes no arguments");
	return dump_queues(nl, a, pr, &queue_list_view);
}

int cmd_stats(struct nl *nl, const struct args *a, struct pr *pr)
{
	static const enum opt_id allowed[] = { O_ID, O_NODE, 0 };

	only_opts(a, allowed);
	if (a->val[O_NODE])
		return cmd_node_stats(nl, a, pr);
	if (a->npos || a->val[O_ID])
		return show(nl, a, pr, true);
	return dump_queues(nl, a, pr, &queue_stats_view);
}
