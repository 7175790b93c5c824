// SPDX-License-Identifier: GPL-2.0
/*
 * dq control plane: the "dq" generic netlink family (see uapi/linux/dq.h).
 *
 * Every command is validated strictly against its own policy (below);
 * failures say which attribute and why through extack.  The family works in
 * every network namespace and sees only that namespace's queues
 * (dq_registry.c).  Changes need CAP_NET_ADMIN in the user namespace that
 * owns the request's network namespace (GENL_UNS_ADMIN_PERM): root of a
 * container with its own network namespace manages its own queues, and
 * CAP_NET_ADMIN in a child user namespace gives nothing over the host's.
 * Reads need no capability.
 */
#include <linux/cred.h>
#include <linux/string.h>
#include <linux/uidgid.h>
#include <net/genetlink.h>
#include <net/net_namespace.h>
#include <net/netlink.h>
#include <net/sock.h>

#include "dq.h"

static struct netlink_range_validation dq_range_granularity = {
	.max = DQ_MAX_GRANULARITY_NS,
};

static struct netlink_range_validation dq_range_rate = {
	.max = NSEC_PER_SEC,
};

static struct netlink_range_validation dq_range_slots = {
	.min = 1,
	.max = DQ_MAX_SLOTS,
};

static struct netlink_range_validation dq_range_slot_size = {
	.min = DQ_MIN_SLOT_SIZE,
	.max = DQ_MAX_SLOT_SIZE,
};

static struct netlink_range_validation dq_range_ring = {
	.max = DQ_MAX_RING_ENTRIES,
};

static struct netlink_range_validation dq_range_burst = {
	.min = 1,
	.max = DQ_MAX_SLOTS,
};

static struct netlink_range_validation dq_range_visibility = {
	.min = DQ_MIN_VISIBILITY_NS,
	.max = DQ_MAX_DELAY_NS,
};

/* A cap of 0 would stop every release: DQ_MAX_SLOTS is "no cap". */
static struct netlink_range_validation dq_range_inflight = {
	.min = 1,
	.max = DQ_MAX_SLOTS,
};

/*
 * One policy per command, each with exactly the attributes the command
 * takes: strict validation refuses any other with -EINVAL ("Unsupported
 * attribute").  docs/netlink/dq.yaml is the same family in the kernel's
 * netlink spec format; selftests/host/nl_spec_test.py holds the two to
 * each other.
 */
#define DQ_NLA_QUEUE_REF						\
	[DQ_A_ID]		= NLA_POLICY_MIN(NLA_U32, 1),		\
	[DQ_A_NAME]		= { .type = NLA_NUL_STRING,		\
				    .len = DQ_NAME_MAX - 1 }

#define DQ_NLA_LIMITS							\
	[DQ_A_MAX_PENDING]	= { .type = NLA_U32 },			\
	[DQ_A_RATE]		= NLA_POLICY_FULL_RANGE(NLA_U64,	\
							&dq_range_rate), \
	[DQ_A_BURST]		= NLA_POLICY_FULL_RANGE(NLA_U32,	\
							&dq_range_burst), \
	[DQ_A_HIGH_WM]		= { .type = NLA_U32 },			\
	[DQ_A_MAX_INFLIGHT]	= NLA_POLICY_FULL_RANGE(NLA_U32,	\
							&dq_range_inflight)

static const struct nla_policy dq_queue_new_policy[DQ_A_MAX + 1] = {
	[DQ_A_NAME]		= { .type = NLA_NUL_STRING,
				    .len = DQ_NAME_MAX - 1 },
	[DQ_A_SLOTS]		= NLA_POLICY_FULL_RANGE(NLA_U32,
							&dq_range_slots),
	[DQ_A_SLOT_SIZE]	= NLA_POLICY_FULL_RANGE(NLA_U32,
							&dq_range_slot_size),
	[DQ_A_SUBMIT_ENTRIES]	= NLA_POLICY_FULL_RANGE(NLA_U32,
							&dq_range_ring),
	[DQ_A_READY_ENTRIES]	= NLA_POLICY_FULL_RANGE(NLA_U32,
							&dq_range_ring),
	[DQ_A_NODE]		= NLA_POLICY_RANGE(NLA_S32, -1,
						   MAX_NUMNODES - 1),
	[DQ_A_GRANULARITY_NS]	= NLA_POLICY_FULL_RANGE(NLA_U32,
							&dq_range_granularity),
	DQ_NLA_LIMITS,
	[DQ_A_UID]		= { .type = NLA_U32 },
	[DQ_A_GID]		= { .type = NLA_U32 },
	[DQ_A_MODE]		= NLA_POLICY_MAX(NLA_U32, 0777),
	[DQ_A_FLAGS]		= NLA_POLICY_MASK(NLA_U32, DQ_SETUP_F_ALL),
	[DQ_A_VISIBILITY_NS]	= NLA_POLICY_FULL_RANGE(NLA_U64,
							&dq_range_visibility),
};

static const struct nla_policy dq_queue_del_policy[DQ_A_MAX + 1] = {
	DQ_NLA_QUEUE_REF,
	[DQ_A_FORCE]		= { .type = NLA_FLAG },
};

static const struct nla_policy dq_queue_get_policy[DQ_A_MAX + 1] = {
	DQ_NLA_QUEUE_REF,
};

static const struct nla_policy dq_queue_set_policy[DQ_A_MAX + 1] = {
	DQ_NLA_QUEUE_REF,
	DQ_NLA_LIMITS,
};

static const struct nla_policy dq_stats_policy[DQ_A_MAX + 1] = {
	DQ_NLA_QUEUE_REF,
	[DQ_A_NODE]		= NLA_POLICY_RANGE(NLA_S32, -1,
						   MAX_NUMNODES - 1),
};

static struct genl_family dq_genl_family;

enum dq_genl_mcgrp {
	DQ_MCGRP_EVENTS,
};

static const struct genl_multicast_group dq_genl_mcgrps[] = {
	[DQ_MCGRP_EVENTS] = { .name = DQ_GENL_MCGRP_EVENTS },
};

/*
 * Names are printable ASCII identifiers: 1 to DQ_NAME_MAX - 1 of
 * A-Z a-z 0-9 . _ : -.  Not isalnum(): the kernel's ctype also counts the
 * ISO 8859-1 letters (0xc0-0xff), which the ABI does not allow.
 */
static bool dq_name_char_valid(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c >= '0' && c <= '9') || c == '.' || c == '_' || c == ':' ||
	       c == '-';
}

static bool dq_name_valid(const char *name)
{
	const char *c;

	if (!name[0])
		return false;
	for (c = name; *c; c++)
		if (!dq_name_char_valid(*c))
			return false;
	return true;
}

/* The queue a request names by DQ_A_NAME or DQ_A_ID, with a reference. */
static struct dq_queue *dq_nl_lookup(struct genl_info *info)
{
	struct nlattr **a = info->attrs;
	struct dq_queue *q;

	if (!a[DQ_A_NAME] && !a[DQ_A_ID]) {
		NL_SET_ERR_MSG(info->extack, "name the queue: NAME or ID");
		return ERR_PTR(-EINVAL);
	}
	if (a[DQ_A_NAME])
		q = dq_registry_get_name(genl_info_net(info),
					 nla_data(a[DQ_A_NAME]));
	else
		q = dq_registry_get(genl_info_net(info),
				    nla_get_u32(a[DQ_A_ID]));
	if (!q) {
		NL_SET_ERR_MSG_ATTR(info->extack,
				    a[DQ_A_NAME] ? a[DQ_A_NAME] : a[DQ_A_ID],
				    "no such queue");
		return ERR_PTR(-ENOENT);
	}
	return q;
}

static int dq_nl_put_queue(struct sk_buff *skb, struct dq_queue *q)
{
	struct user_namespace *ns = current_user_ns();

	if (nla_put_u32(skb, DQ_A_ID, q->id) ||
	    (q->name[0] && nla_put_string(skb, DQ_A_NAME, q->name)) ||
	    nla_put_u32(skb, DQ_A_SLOTS, q->slot_count) ||
	    nla_put_u32(skb, DQ_A_SLOT_SIZE, q->slot_size) ||
	    nla_put_u32(skb, DQ_A_SUBMIT_ENTRIES, q->sq_entries) ||
	    nla_put_u32(skb, DQ_A_READY_ENTRIES, q->rq_entries) ||
	    nla_put_s32(skb, DQ_A_NODE, q->node) ||
	    nla_put_u32(skb, DQ_A_GRANULARITY_NS, q->granularity_ns) ||
	    nla_put_u32(skb, DQ_A_MAX_PENDING, READ_ONCE(q->max_pending)) ||
	    nla_put_u64_64bit(skb, DQ_A_RATE, READ_ONCE(q->pace_rate),
			      DQ_A_PAD) ||
	    nla_put_u32(skb, DQ_A_BURST, READ_ONCE(q->pace_burst)) ||
	    nla_put_u32(skb, DQ_A_HIGH_WM, READ_ONCE(q->high_wm)) ||
	    nla_put_u32(skb, DQ_A_UID, from_kuid_munged(ns, q->uid)) ||
	    nla_put_u32(skb, DQ_A_GID, from_kgid_munged(ns, q->gid)) ||
	    nla_put_u32(skb, DQ_A_MODE, q->mode) ||
	    nla_put_u32(skb, DQ_A_USERS, atomic_read(&q->users)) ||
	    nla_put_u32(skb, DQ_A_FLAGS, q->flags) ||
	    nla_put_u32(skb, DQ_A_MAX_INFLIGHT, READ_ONCE(q->max_inflight)) ||
	    nla_put_u64_64bit(skb, DQ_A_VISIBILITY_NS, q->visibility_ns,
			      DQ_A_PAD))
		return -EMSGSIZE;
	return 0;
}

/* A tracked queue's delivery counters, in the DQ_A_STATS nest. */
static int dq_nl_put_track_stats(struct sk_buff *skb, struct dq_queue *q)
{
	struct dq_track_stats ts;

	if (!dq_queue_tracked(q))
		return 0;
	/* oldest_ns in the requester's clock: genl runs in its task. */
	dq_queue_track_stats(q, &ts, dq_timens_mono_offset());
	if (nla_put_u64_64bit(skb, DQ_STATS_INFLIGHT, ts.inflight,
			      DQ_STATS_PAD) ||
	    nla_put_u64_64bit(skb, DQ_STATS_OLDEST_NS, ts.oldest_ns,
			      DQ_STATS_PAD) ||
	    nla_put_u64_64bit(skb, DQ_STATS_DONE_DELIVERED, ts.done_delivered,
			      DQ_STATS_PAD) ||
	    nla_put_u64_64bit(skb, DQ_STATS_DONE_FAILED, ts.done_failed,
			      DQ_STATS_PAD) ||
	    nla_put_u64_64bit(skb, DQ_STATS_DONE_REFUSED, ts.done_refused,
			      DQ_STATS_PAD) ||
	    nla_put_u64_64bit(skb, DQ_STATS_REDELIVERED, ts.redelivered,
			      DQ_STATS_PAD) ||
	    nla_put_u64_64bit(skb, DQ_STATS_CREDIT_WAITS, ts.credit_waits,
			      DQ_STATS_PAD) ||
	    nla_put_u64_64bit(skb, DQ_STATS_EXPIRED, ts.expired,
			      DQ_STATS_PAD) ||
	    nla_put_u32(skb, DQ_STATS_CONSUMER, ts.consumer))
		return -EMSGSIZE;
	return 0;
}

static int dq_nl_put_stats(struct sk_buff *skb, struct dq_queue *q)
{
	struct dq_node_stats node = {};
	struct dq_queue_stats st;
	struct nlattr *nest, *rej;
	u64 ewma;
	int i;

	dq_queue_stats(q, &st);
	dq_engine_stats(q->node, &node);
	spin_lock_bh(&q->ready_lock);
	ewma = q->late_ewma_ns;
	spin_unlock_bh(&q->ready_lock);

	nest = nla_nest_start(skb, DQ_A_STATS);
	if (!nest)
		return -EMSGSIZE;
	if (nla_put_u64_64bit(skb, DQ_STATS_PENDING, st.pending,
			      DQ_STATS_PAD) ||
	    nla_put_u64_64bit(skb, DQ_STATS_PACED, st.paced, DQ_STATS_PAD) ||
	    nla_put_u64_64bit(skb, DQ_STATS_READY_BACKLOG, st.ready_backlog,
			      DQ_STATS_PAD) ||
	    nla_put_u64_64bit(skb, DQ_STATS_SUBMITTED, st.submitted,
			      DQ_STATS_PAD) ||
	    nla_put_u64_64bit(skb, DQ_STATS_RELEASED, st.released,
			      DQ_STATS_PAD) ||
	    nla_put_u64_64bit(skb, DQ_STATS_CANCELLED, st.cancelled,
			      DQ_STATS_PAD) ||
	    nla_put_u64_64bit(skb, DQ_STATS_RING_ERRORS, st.ring_errors,
			      DQ_STATS_PAD) ||
	    nla_put_u64_64bit(skb, DQ_STATS_LATE_EWMA_NS, ewma,
			      DQ_STATS_PAD) ||
	    nla_put_u64_64bit(skb, DQ_STATS_LATE_MAX_NS, st.late_max_ns,
			      DQ_STATS_PAD) ||
	    nla_put_u64_64bit(skb, DQ_STATS_TIMER_FIRES, node.timer_fires,
			      DQ_STATS_PAD) ||
	    nla_put_u64_64bit(skb, DQ_STATS_THROTTLED, st.throttled,
			      DQ_STATS_PAD) ||
	    nla_put_u64_64bit(skb, DQ_STATS_REPLACED, st.replaced,
			      DQ_STATS_PAD) ||
	    dq_nl_put_track_stats(skb, q))
		goto cancel;
	rej = nla_nest_start(skb, DQ_STATS_REJECTED);
	if (!rej)
		goto cancel;
	for (i = 0; i < DQ_REJ_NR; i++)
		if (nla_put_u64_64bit(skb, i + 1, st.rejected[i], 0))
			goto cancel;
	nla_nest_end(skb, rej);
	nla_nest_end(skb, nest);
	return 0;
cancel:
	nla_nest_cancel(skb, nest);
	return -EMSGSIZE;
}

static int dq_nl_fill(struct sk_buff *skb, struct dq_queue *q, u32 portid,
		      u32 seq, int flags, u8 cmd)
{
	void *hdr = genlmsg_put(skb, portid, seq, &dq_genl_family, flags, cmd);

	if (!hdr)
		return -EMSGSIZE;
	if (dq_nl_put_queue(skb, q) ||
	    (cmd == DQ_CMD_STATS && dq_nl_put_stats(skb, q))) {
		genlmsg_cancel(skb, hdr);
		return -EMSGSIZE;
	}
	genlmsg_end(skb, hdr);
	return 0;
}

static int dq_nl_reply(struct genl_info *info, struct dq_queue *q, u8 cmd)
{
	struct sk_buff *msg = genlmsg_new(NLMSG_GOODSIZE, GFP_KERNEL);
	int ret;

	if (!msg)
		return -ENOMEM;
	ret = dq_nl_fill(msg, q, info->snd_portid, info->snd_seq, 0, cmd);
	if (ret) {
		nlmsg_free(msg);
		return ret;
	}
	return genlmsg_reply(msg, info);
}

static int dq_nl_queue_new(struct sk_buff *skb, struct genl_info *info)
{
	struct user_namespace *ns = current_user_ns();
	struct nlattr **a = info->attrs;
	struct dq_setup s = { .numa_node = -1 };
	const char *name;
	struct dq_queue *q;
	kuid_t uid = current_fsuid();
	kgid_t gid = current_fsgid();
	bool memlock;
	int ret;

	if (GENL_REQ_ATTR_CHECK(info, DQ_A_NAME)) {
		NL_SET_ERR_MSG(info->extack, "missing the queue NAME");
		return -EINVAL;
	}
	if (GENL_REQ_ATTR_CHECK(info, DQ_A_SLOTS)) {
		NL_SET_ERR_MSG(info->extack, "missing SLOTS");
		return -EINVAL;
	}
	if (GENL_REQ_ATTR_CHECK(info, DQ_A_SLOT_SIZE)) {
		NL_SET_ERR_MSG(info->extack, "missing SLOT_SIZE");
		return -EINVAL;
	}
	name = nla_data(a[DQ_A_NAME]);
	if (!dq_name_valid(name)) {
		NL_SET_ERR_MSG_ATTR(info->extack, a[DQ_A_NAME],
				    "queue name: 1 to 31 of A-Z a-z 0-9 . _ : -");
		return -EINVAL;
	}
	if (a[DQ_A_MAX_PENDING] &&
	    nla_get_u32(a[DQ_A_MAX_PENDING]) > nla_get_u32(a[DQ_A_SLOTS])) {
		NL_SET_ERR_MSG_ATTR(info->extack, a[DQ_A_MAX_PENDING],
				    "max_pending above the slot count");
		return -ERANGE;
	}
	if (!(a[DQ_A_FLAGS] &&
	      (nla_get_u32(a[DQ_A_FLAGS]) & DQ_SETUP_F_TRACK))) {
		if (a[DQ_A_MAX_INFLIGHT]) {
			NL_SET_ERR_MSG_ATTR(info->extack, a[DQ_A_MAX_INFLIGHT],
					    "max_inflight needs FLAGS with TRACK");
			return -EINVAL;
		}
		if (a[DQ_A_VISIBILITY_NS]) {
			NL_SET_ERR_MSG_ATTR(info->extack, a[DQ_A_VISIBILITY_NS],
					    "visibility_ns needs FLAGS with TRACK");
			return -EINVAL;
		}
	}
	if (a[DQ_A_UID]) {
		uid = make_kuid(ns, nla_get_u32(a[DQ_A_UID]));
		if (!uid_valid(uid)) {
			NL_SET_ERR_MSG_ATTR(info->extack, a[DQ_A_UID],
					    "uid not mapped");
			return -EINVAL;
		}
	}
	if (a[DQ_A_GID]) {
		gid = make_kgid(ns, nla_get_u32(a[DQ_A_GID]));
		if (!gid_valid(gid)) {
			NL_SET_ERR_MSG_ATTR(info->extack, a[DQ_A_GID],
					    "gid not mapped");
			return -EINVAL;
		}
	}

	s.slot_count = nla_get_u32(a[DQ_A_SLOTS]);
	s.slot_size = nla_get_u32(a[DQ_A_SLOT_SIZE]);
	if (a[DQ_A_SUBMIT_ENTRIES])
		s.submit_entries = nla_get_u32(a[DQ_A_SUBMIT_ENTRIES]);
	if (a[DQ_A_READY_ENTRIES])
		s.ready_entries = nla_get_u32(a[DQ_A_READY_ENTRIES]);
	if (a[DQ_A_NODE])
		s.numa_node = nla_get_s32(a[DQ_A_NODE]);
	if (a[DQ_A_GRANULARITY_NS])
		s.granularity_ns = nla_get_u32(a[DQ_A_GRANULARITY_NS]);
	if (a[DQ_A_FLAGS])
		s.flags = nla_get_u32(a[DQ_A_FLAGS]);
	if (a[DQ_A_VISIBILITY_NS])
		s.visibility_ns = nla_get_u64(a[DQ_A_VISIBILITY_NS]);
	/* DQ_MAX_SLOTS is "no cap", as at QUEUE_SET. */
	if (a[DQ_A_MAX_INFLIGHT] &&
	    nla_get_u32(a[DQ_A_MAX_INFLIGHT]) < DQ_MAX_SLOTS)
		s.max_inflight = nla_get_u32(a[DQ_A_MAX_INFLIGHT]);

	q = dq_queue_create(&s, genl_info_net(info), &memlock);
	if (IS_ERR(q)) {
		ret = PTR_ERR(q);
		if (memlock)
			NL_SET_ERR_MSG(info->extack,
				       "the queue's pinned memory is over the caller's RLIMIT_MEMLOCK");
		else if (ret == -E2BIG)
			NL_SET_ERR_MSG(info->extack,
				       "arena (slots x slot size) over the max_arena_bytes module limit");
		else if (ret == -EINVAL && a[DQ_A_NODE])
			NL_SET_ERR_MSG_ATTR(info->extack, a[DQ_A_NODE],
					    "node not online");
		else if (ret == -ENOMEM)
			NL_SET_ERR_MSG(info->extack, "out of memory for the arena");
		return ret;
	}

	ret = dq_registry_name(q, name, uid, gid,
			       a[DQ_A_MODE] ? nla_get_u32(a[DQ_A_MODE]) : 0600);
	if (ret) {
		NL_SET_ERR_MSG_ATTR(info->extack, a[DQ_A_NAME],
				    "a queue with this name exists");
		dq_queue_put(q);
		return ret;
	}

	dq_queue_set_limits(q, a[DQ_A_MAX_PENDING] ?
			    nla_get_u32(a[DQ_A_MAX_PENDING]) : 0,
			    a[DQ_A_HIGH_WM] ? nla_get_u32(a[DQ_A_HIGH_WM]) : 0);
	if (a[DQ_A_RATE] || a[DQ_A_BURST])
		dq_queue_set_pacing(q, a[DQ_A_RATE] ?
				    nla_get_u64(a[DQ_A_RATE]) : 0,
				    a[DQ_A_BURST] ?
				    nla_get_u32(a[DQ_A_BURST]) : 1);

	ret = dq_nl_reply(info, q, DQ_CMD_QUEUE_NEW);
	dq_queue_put(q);	/* the registry holds its own reference */
	return ret;
}

static int dq_nl_queue_del(struct sk_buff *skb, struct genl_info *info)
{
	bool force = nla_get_flag(info->attrs[DQ_A_FORCE]);
	struct dq_queue *q = dq_nl_lookup(info);
	u64 held;
	int ret = 0;

	if (IS_ERR(q))
		return PTR_ERR(q);

	/* Marked dead under submit_lock: no submit can slip in after. */
	mutex_lock(&q->submit_lock);
	held = dq_queue_unreaped(q);
	if (!q->name[0]) {
		NL_SET_ERR_MSG(info->extack,
			       "a file's private queue goes away with the file");
		ret = -EINVAL;
	} else if (held && !force) {
		NL_SET_ERR_MSG(info->extack,
			       "messages are pending or not reaped; FORCE drops them");
		ret = -EBUSY;
	} else {
		WRITE_ONCE(q->dead, true);
	}
	mutex_unlock(&q->submit_lock);
	if (ret)
		goto out;

	if (force)
		dq_queue_purge(q);
	dq_queue_kill_waits(q);
	dq_netlink_event(q, DQ_EVENT_DELETED);
	if (dq_registry_unname(q))
		dq_queue_put(q);	/* the registry's reference */
out:
	dq_queue_put(q);
	return ret;
}

static int dq_nl_queue_get(struct sk_buff *skb, struct genl_info *info)
{
	struct dq_queue *q = dq_nl_lookup(info);
	int ret;

	if (IS_ERR(q))
		return PTR_ERR(q);
	ret = dq_nl_reply(info, q, info->genlhdr->cmd);
	dq_queue_put(q);
	return ret;
}

static int dq_nl_queue_set(struct sk_buff *skb, struct genl_info *info)
{
	struct nlattr **a = info->attrs;
	struct dq_queue *q = dq_nl_lookup(info);
	int ret;

	if (IS_ERR(q))
		return PTR_ERR(q);
	if (a[DQ_A_MAX_PENDING] &&
	    nla_get_u32(a[DQ_A_MAX_PENDING]) > q->slot_count) {
		NL_SET_ERR_MSG_ATTR(info->extack, a[DQ_A_MAX_PENDING],
				    "max_pending above the slot count");
		dq_queue_put(q);
		return -ERANGE;
	}
	if (a[DQ_A_MAX_INFLIGHT] && !dq_queue_tracked(q)) {
		NL_SET_ERR_MSG_ATTR(info->extack, a[DQ_A_MAX_INFLIGHT],
				    "the queue does not track delivery");
		dq_queue_put(q);
		return -EINVAL;
	}
	if (a[DQ_A_MAX_INFLIGHT]) {
		u32 cap = nla_get_u32(a[DQ_A_MAX_INFLIGHT]);

		dq_queue_set_inflight(q, cap < DQ_MAX_SLOTS ? cap : 0);
	}
	if (a[DQ_A_MAX_PENDING] || a[DQ_A_HIGH_WM])
		dq_queue_set_limits(q, a[DQ_A_MAX_PENDING] ?
				    nla_get_u32(a[DQ_A_MAX_PENDING]) :
				    READ_ONCE(q->max_pending),
				    a[DQ_A_HIGH_WM] ?
				    nla_get_u32(a[DQ_A_HIGH_WM]) :
				    READ_ONCE(q->high_wm));
	if (a[DQ_A_RATE] || a[DQ_A_BURST])
		dq_queue_set_pacing(q, a[DQ_A_RATE] ?
				    nla_get_u64(a[DQ_A_RATE]) :
				    READ_ONCE(q->pace_rate),
				    a[DQ_A_BURST] ? nla_get_u32(a[DQ_A_BURST]) :
				    READ_ONCE(q->pace_burst));
	ret = dq_nl_reply(info, q, DQ_CMD_QUEUE_SET);
	dq_queue_put(q);
	return ret;
}

static int dq_nl_node_stats(struct genl_info *info, int node)
{
	struct dq_node_stats st = {};
	struct dq_engine *e;
	struct sk_buff *msg;
	struct nlattr *nest;
	void *hdr;

	if (dq_engine_stats(node, &st)) {
		NL_SET_ERR_MSG_ATTR(info->extack, info->attrs[DQ_A_NODE],
				    "no engine on that node");
		return -ENOENT;
	}
	msg = genlmsg_new(NLMSG_GOODSIZE, GFP_KERNEL);
	if (!msg)
		return -ENOMEM;
	hdr = genlmsg_put(msg, info->snd_portid, info->snd_seq,
			  &dq_genl_family, 0, DQ_CMD_STATS);
	if (!hdr)
		goto nospace;
	if (nla_put_s32(msg, DQ_A_NODE, node))
		goto nospace;
	/*
	 * With the engine's counters, the node's RLIMIT_MEMLOCK ones: the
	 * pages of its queues charged to their creators now, and the creates
	 * the limit refused (dq_queue.c).  Per node, where a queue's memory
	 * is; an operator adds the nodes up for the module's totals.
	 */
	e = dq_engine_get(node);
	nest = nla_nest_start(msg, DQ_A_STATS);
	if (!nest ||
	    nla_put_u64_64bit(msg, DQ_STATS_PENDING, st.pending,
			      DQ_STATS_PAD) ||
	    nla_put_u64_64bit(msg, DQ_STATS_RELEASED, st.released,
			      DQ_STATS_PAD) ||
	    nla_put_u64_64bit(msg, DQ_STATS_TIMER_FIRES, st.timer_fires,
			      DQ_STATS_PAD) ||
	    nla_put_u64_64bit(msg, DQ_STATS_MEMLOCK_PAGES,
			      atomic_long_read(&e->memlock_pages),
			      DQ_STATS_PAD) ||
	    nla_put_u64_64bit(msg, DQ_STATS_MEMLOCK_REFUSED,
			      atomic64_read(&e->memlock_refused),
			      DQ_STATS_PAD))
		goto nospace;
	nla_nest_end(msg, nest);
	genlmsg_end(msg, hdr);
	return genlmsg_reply(msg, info);
nospace:
	nlmsg_free(msg);
	return -EMSGSIZE;
}

static int dq_nl_stats(struct sk_buff *skb, struct genl_info *info)
{
	if (info->attrs[DQ_A_NODE] && !info->attrs[DQ_A_NAME] &&
	    !info->attrs[DQ_A_ID])
		return dq_nl_node_stats(info,
					nla_get_s32(info->attrs[DQ_A_NODE]));
	return dq_nl_queue_get(skb, info);
}

/*
 * Dumps walk the registry by queue id: cb->args[0] is the last id sent, so
 * a dump resumes correctly even when queues come and go in between.
 */
static int dq_nl_dump(struct sk_buff *skb, struct netlink_callback *cb,
		      u8 cmd, bool named_only)
{
	struct net *net = sock_net(skb->sk);
	u32 last = cb->args[0];

	for (;;) {
		struct dq_queue *q;
		int ret;

		q = dq_registry_next(net, last, named_only);
		if (!q)
			break;
		ret = dq_nl_fill(skb, q, NETLINK_CB(cb->skb).portid,
				 cb->nlh->nlmsg_seq, NLM_F_MULTI, cmd);
		if (!ret)
			last = q->id;
		dq_queue_put(q);
		if (ret)
			break;
	}
	cb->args[0] = last;
	return skb->len;
}

static int dq_nl_queue_dump(struct sk_buff *skb, struct netlink_callback *cb)
{
	return dq_nl_dump(skb, cb, DQ_CMD_QUEUE_GET, true);
}

static int dq_nl_stats_dump(struct sk_buff *skb, struct netlink_callback *cb)
{
	return dq_nl_dump(skb, cb, DQ_CMD_STATS, false);
}

/* Events go to the listeners in the queue's network namespace only. */
void dq_netlink_event(struct dq_queue *q, u32 kind)
{
	struct sk_buff *msg;
	struct net *net;
	void *hdr;

	net = dq_registry_get_net(q);
	if (!net)
		return;
	if (!genl_has_listeners(&dq_genl_family, net, DQ_MCGRP_EVENTS))
		goto out;
	msg = genlmsg_new(NLMSG_GOODSIZE, GFP_KERNEL);
	if (!msg)
		goto out;
	hdr = genlmsg_put(msg, 0, 0, &dq_genl_family, 0, DQ_CMD_EVENT);
	if (!hdr ||
	    nla_put_u32(msg, DQ_A_EVENT_KIND, kind) ||
	    nla_put_u32(msg, DQ_A_ID, q->id) ||
	    (q->name[0] && nla_put_string(msg, DQ_A_NAME, q->name)) ||
	    nla_put_u32(msg, DQ_A_MAX_PENDING, READ_ONCE(q->max_pending)) ||
	    nla_put_u32(msg, DQ_A_HIGH_WM, READ_ONCE(q->high_wm))) {
		nlmsg_free(msg);
		goto out;
	}
	genlmsg_end(msg, hdr);
	genlmsg_multicast_netns(&dq_genl_family, net, msg, 0, DQ_MCGRP_EVENTS,
				GFP_KERNEL);
out:
	put_net(net);
}

static const struct genl_ops dq_genl_ops[] = {
	{
		.cmd = DQ_CMD_QUEUE_NEW,
		.doit = dq_nl_queue_new,
		.policy = dq_queue_new_policy,
		.maxattr = DQ_A_MAX,
		.flags = GENL_UNS_ADMIN_PERM,
	},
	{
		.cmd = DQ_CMD_QUEUE_DEL,
		.doit = dq_nl_queue_del,
		.policy = dq_queue_del_policy,
		.maxattr = DQ_A_MAX,
		.flags = GENL_UNS_ADMIN_PERM,
	},
	{
		.cmd = DQ_CMD_QUEUE_GET,
		.doit = dq_nl_queue_get,
		.dumpit = dq_nl_queue_dump,
		.policy = dq_queue_get_policy,
		.maxattr = DQ_A_MAX,
	},
	{
		.cmd = DQ_CMD_QUEUE_SET,
		.doit = dq_nl_queue_set,
		.policy = dq_queue_set_policy,
		.maxattr = DQ_A_MAX,
		.flags = GENL_UNS_ADMIN_PERM,
	},
	{
		.cmd = DQ_CMD_STATS,
		.doit = dq_nl_stats,
		.dumpit = dq_nl_stats_dump,
		.policy = dq_stats_policy,
		.maxattr = DQ_A_MAX,
	},
};

static struct genl_family dq_genl_family __ro_after_init = {
	.name = DQ_GENL_NAME,
	.version = DQ_GENL_VERSION,
	.maxattr = DQ_A_MAX,
	.module = THIS_MODULE,
	.ops = dq_genl_ops,
	.n_ops = ARRAY_SIZE(dq_genl_ops),
	.resv_start_op = DQ_CMD_QUEUE_NEW,
	.mcgrps = dq_genl_mcgrps,
	.n_mcgrps = ARRAY_SIZE(dq_genl_mcgrps),
	.netnsok = true,
};

/*
 * A network namespace going away takes its named queues with it, messages
 * and all, as rmmod does (an interface or a qdisc goes the same way); its
 * other queues are orphaned.  Also run for every namespace at rmmod, by
 * unregister_pernet_subsys().
 */
static void dq_net_exit(struct net *net)
{
	struct dq_queue *q;

	while ((q = dq_registry_take_named(net)))
		dq_queue_drop_named(q);
	dq_registry_net_exit(net);
}

static struct pernet_operations dq_net_ops = {
	.exit = dq_net_exit,
};

int dq_netlink_init(void)
{
	int ret = register_pernet_subsys(&dq_net_ops);

	if (ret)
		return ret;
	ret = genl_register_family(&dq_genl_family);
	if (ret)
		unregister_pernet_subsys(&dq_net_ops);
	return ret;
}

/*
 * No request can come in after the family is gone; then every namespace's
 * named queues go (nothing can attach anymore: /dev/dq is gone first).
 */
void dq_netlink_exit(void)
{
	genl_unregister_family(&dq_genl_family);
	unregister_pernet_subsys(&dq_net_ops);
}
