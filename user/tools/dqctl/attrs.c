// SPDX-License-Identifier: LGPL-2.1 OR MIT
/*
 * dqctl: the dq family's attribute tables (attrs.h) and the parser that
 * fills a struct qinfo from a reply or an event.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <linux/genetlink.h>

#include "attrs.h"
#include "dqctl.h"
#include "fmt.h"
#include "nl.h"

const struct attr_info attr_info[DQ_A_MAX + 1] = {
	[DQ_A_ID]		= { "id", K_U32 },
	[DQ_A_NAME]		= { "name", K_STR },
	[DQ_A_SLOTS]		= { "slots", K_U32 },
	[DQ_A_SLOT_SIZE]	= { "slot-size", K_U32 },
	[DQ_A_SUBMIT_ENTRIES]	= { "submit-entries", K_U32 },
	[DQ_A_READY_ENTRIES]	= { "ready-entries", K_U32 },
	[DQ_A_NODE]		= { "node", K_S32 },
	[DQ_A_GRANULARITY_NS]	= { "granularity", K_U32 },
	[DQ_A_MAX_PENDING]	= { "max-pending", K_U32 },
	[DQ_A_RATE]		= { "rate", K_U64 },
	[DQ_A_BURST]		= { "burst", K_U32 },
	[DQ_A_HIGH_WM]		= { "high-wm", K_U32 },
	[DQ_A_UID]		= { "uid", K_U32 },
	[DQ_A_GID]		= { "gid", K_U32 },
	[DQ_A_MODE]		= { "mode", K_U32 },
	[DQ_A_FORCE]		= { "force", K_FLAG },
	[DQ_A_PAD]		= { "pad", K_NONE },
	[DQ_A_STATS]		= { "stats", K_NEST },
	[DQ_A_EVENT_KIND]	= { "event-kind", K_U32 },
	[DQ_A_USERS]		= { "users", K_U32 },
	[DQ_A_FLAGS]		= { "flags", K_U32 },
	[DQ_A_MAX_INFLIGHT]	= { "inflight", K_U32 },
	[DQ_A_VISIBILITY_NS]	= { "visibility", K_U64 },
};

const char *attr_name(unsigned int type)
{
	if (type <= DQ_A_MAX && attr_info[type].name)
		return attr_info[type].name;
	return NULL;
}

const char *const stats_names[DQ_STATS_MAX + 1] = {
	[DQ_STATS_PENDING]	= "pending",
	[DQ_STATS_PACED]	= "paced",
	[DQ_STATS_READY_BACKLOG] = "ready_backlog",
	[DQ_STATS_SUBMITTED]	= "submitted",
	[DQ_STATS_RELEASED]	= "released",
	[DQ_STATS_CANCELLED]	= "cancelled",
	[DQ_STATS_REJECTED]	= "rejected",
	[DQ_STATS_RING_ERRORS]	= "ring_errors",
	[DQ_STATS_LATE_EWMA_NS]	= "late_ewma_ns",
	[DQ_STATS_LATE_MAX_NS]	= "late_max_ns",
	[DQ_STATS_TIMER_FIRES]	= "timer_fires",
	[DQ_STATS_THROTTLED]	= "throttled",
	[DQ_STATS_PAD]		= "pad",
	[DQ_STATS_INFLIGHT]	= "inflight",
	[DQ_STATS_OLDEST_NS]	= "oldest_inflight_ns",
	[DQ_STATS_DONE_DELIVERED] = "done_delivered",
	[DQ_STATS_DONE_FAILED]	= "done_failed",
	[DQ_STATS_DONE_REFUSED]	= "done_refused",
	[DQ_STATS_REDELIVERED]	= "redelivered",
	[DQ_STATS_CREDIT_WAITS]	= "credit_waits",
	[DQ_STATS_CONSUMER]	= "consumer",
	[DQ_STATS_REPLACED]	= "replaced",
	[DQ_STATS_EXPIRED]	= "expired",
	[DQ_STATS_MEMLOCK_PAGES] = "memlock_pages",
	[DQ_STATS_MEMLOCK_REFUSED] = "memlock_refused",
};

const char *const reject_names[DQ_REJ_MAX] = {
	[DQ_REJ_SLOT]	= "slot",
	[DQ_REJ_LEN]	= "len",
	[DQ_REJ_FLAGS]	= "flags",
	[DQ_REJ_RESV]	= "resv",
	[DQ_REJ_TIME]	= "time",
	[DQ_REJ_BUSY]	= "busy",
	[DQ_REJ_FULL]	= "full",
	[DQ_REJ_KEY]	= "key",
};

static const char *const event_names[] = {
	[DQ_EVENT_HIGH_WM]	= "high_wm",
	[DQ_EVENT_FULL]		= "full",
	[DQ_EVENT_DELETED]	= "deleted",
};

const char *event_name(uint32_t kind)
{
	return kind < ARRAY_SIZE(event_names) ? event_names[kind] : NULL;
}

static int parse_rej_cb(const struct nlattr *a, void *data)
{
	struct qinfo *q = data;
	unsigned int t = mnl_attr_get_type(a);

	if (t >= 1 && t <= DQ_REJ_MAX &&
	    mnl_attr_validate(a, MNL_TYPE_U64) >= 0)
		q->rej[t - 1] = mnl_attr_get_u64(a);
	return MNL_CB_OK;
}

static int parse_stats_cb(const struct nlattr *a, void *data)
{
	struct qinfo *q = data;
	unsigned int t = mnl_attr_get_type(a);

	if (t == DQ_STATS_REJECTED) {
		/*
		 * dq.ko's per-node STATS reply puts DQ_A_NODE (an s32 whose
		 * number is DQ_STATS_REJECTED's) inside the stats nest; tell
		 * the two apart by the nest flag.
		 */
		if (!(a->nla_type & NLA_F_NESTED) &&
		    mnl_attr_get_payload_len(a) == 4) {
			q->has_node_in_stats = true;
			q->node_in_stats = (int32_t)mnl_attr_get_u32(a);
			return MNL_CB_OK;
		}
		q->has_rej = true;
		mnl_attr_parse_nested(a, parse_rej_cb, q);
		return MNL_CB_OK;
	}
	if (t == DQ_STATS_CONSUMER) {
		if (mnl_attr_validate(a, MNL_TYPE_U32) >= 0) {
			q->st[t] = mnl_attr_get_u32(a);
			q->st_has[t] = true;
		}
		return MNL_CB_OK;
	}
	if (t <= DQ_STATS_MAX && t != DQ_STATS_PAD &&
	    mnl_attr_validate(a, MNL_TYPE_U64) >= 0) {
		q->st[t] = mnl_attr_get_u64(a);
		q->st_has[t] = true;
		if (t == DQ_STATS_OLDEST_NS) {
			struct timespec ts;

			clock_gettime(CLOCK_MONOTONIC, &ts);
			q->mono_ns = (uint64_t)ts.tv_sec * 1000000000ULL +
				     (uint64_t)ts.tv_nsec;
		}
	}
	return MNL_CB_OK;
}

static int parse_queue_cb(const struct nlattr *a, void *data)
{
	struct qinfo *q = data;
	unsigned int t = mnl_attr_get_type(a);

	if (t > DQ_A_MAX)
		return MNL_CB_OK;	/* from a newer module */
	switch (attr_info[t].kind) {
	case K_U32:
	case K_S32:
		if (mnl_attr_validate(a, MNL_TYPE_U32) < 0)
			return MNL_CB_OK;
		q->v[t] = attr_info[t].kind == K_S32 ?
			  (uint64_t)(int64_t)(int32_t)mnl_attr_get_u32(a) :
			  mnl_attr_get_u32(a);
		break;
	case K_U64:
		if (mnl_attr_validate(a, MNL_TYPE_U64) < 0)
			return MNL_CB_OK;
		q->v[t] = mnl_attr_get_u64(a);
		break;
	case K_STR:
		if (mnl_attr_validate(a, MNL_TYPE_NUL_STRING) < 0)
			return MNL_CB_OK;
		snprintf(q->name, sizeof(q->name), "%s", mnl_attr_get_str(a));
		safe_name(q->disp, sizeof(q->disp), q->name);
		break;
	case K_FLAG:
		break;
	case K_NEST:
		q->has_stats = true;
		mnl_attr_parse_nested(a, parse_stats_cb, q);
		break;
	case K_NONE:
		return MNL_CB_OK;
	}
	q->has[t] = true;
	return MNL_CB_OK;
}

void qinfo_parse(const struct nlmsghdr *nlh, struct qinfo *q)
{
	memset(q, 0, sizeof(*q));
	mnl_attr_parse(nlh, sizeof(struct genlmsghdr), parse_queue_cb, q);
}

bool qinfo_tracked(const struct qinfo *q)
{
	return (q->v[DQ_A_FLAGS] & DQ_SETUP_F_TRACK) ||
	       q->st_has[DQ_STATS_INFLIGHT];
}

bool qinfo_keyed(const struct qinfo *q)
{
	return q->v[DQ_A_FLAGS] & DQ_SETUP_F_KEYS;
}

uint64_t qinfo_oldest_age(const struct qinfo *q)
{
	uint64_t oldest = q->st[DQ_STATS_OLDEST_NS];

	return oldest && q->mono_ns > oldest ? q->mono_ns - oldest : 0;
}

uint64_t qinfo_rej_total(const struct qinfo *q)
{
	uint64_t sum = 0;
	int i;

	for (i = 0; i < DQ_REJ_MAX; i++)
		sum += q->rej[i];
	return sum;
}

int queue_list_cb(const struct nlmsghdr *nlh, void *data)
{
	struct queue_list *l = data;
	const struct genlmsghdr *g = mnl_nlmsg_get_payload(nlh);

	if (nlh->nlmsg_type != l->nl->family ||
	    mnl_nlmsg_get_payload_len(nlh) < sizeof(*g))
		return MNL_CB_OK;
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 8;
		struct qinfo *p = realloc(l->q, cap * sizeof(*p));

		if (!p) {
			errno = ENOMEM;
			return MNL_CB_ERROR;
		}
		l->q = p;
		l->cap = cap;
	}
	qinfo_parse(nlh, &l->q[l->n++]);
	return MNL_CB_OK;
}
