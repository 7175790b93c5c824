/* SPDX-License-Identifier: LGPL-2.1 OR MIT */
/*
 * dqctl: the dq family's attributes (names, types) and a queue reply as
 * the parser fills it in (struct qinfo).
 */
#ifndef DQCTL_ATTRS_H
#define DQCTL_ATTRS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <libmnl/libmnl.h>
#include <linux/dq.h>

enum attr_kind { K_NONE, K_U32, K_S32, K_U64, K_STR, K_FLAG, K_NEST };

struct attr_info {
	const char *name;	/* as dqctl's option, without "--" */
	enum attr_kind kind;
};

extern const struct attr_info attr_info[DQ_A_MAX + 1];
extern const char *const stats_names[DQ_STATS_MAX + 1];
extern const char *const reject_names[DQ_REJ_MAX];

/* DQ_A_* name, or NULL for an attribute this dqctl does not know. */
const char *attr_name(unsigned int type);
/* DQ_EVENT_* name, or NULL. */
const char *event_name(uint32_t kind);

struct qinfo {
	bool has[DQ_A_MAX + 1];
	uint64_t v[DQ_A_MAX + 1];	/* integer attributes */
	char name[DQ_NAME_MAX];
	char disp[DQ_NAME_MAX];		/* name, safe to print */
	bool has_stats;
	bool st_has[DQ_STATS_MAX + 1];
	uint64_t st[DQ_STATS_MAX + 1];
	bool has_rej;
	uint64_t rej[DQ_REJ_MAX];
	bool has_node_in_stats;		/* see attrs.c, parse_stats_cb */
	int32_t node_in_stats;
	/* CLOCK_MONOTONIC when DQ_STATS_OLDEST_NS was parsed: its age's "now" */
	uint64_t mono_ns;
};

/* The queue tracks delivery (DQ_SETUP_F_TRACK, or its counters came). */
bool qinfo_tracked(const struct qinfo *q);
/* The queue takes application keys (DQ_SETUP_F_KEYS in FLAGS). */
bool qinfo_keyed(const struct qinfo *q);
/* Now - DQ_STATS_OLDEST_NS, as of mono_ns; 0 with nothing in flight. */
uint64_t qinfo_oldest_age(const struct qinfo *q);

/* Fill @q (zeroed first) from the attributes of a dq genl message. */
void qinfo_parse(const struct nlmsghdr *nlh, struct qinfo *q);
uint64_t qinfo_rej_total(const struct qinfo *q);

struct nl;

/* The replies of one request, in order (an mnl data callback's data). */
struct queue_list {
	const struct nl *nl;	/* replies of other families are skipped */
	struct qinfo *q;
	size_t n, cap;
};

int queue_list_cb(const struct nlmsghdr *nlh, void *data);

#endif /* DQCTL_ATTRS_H */
