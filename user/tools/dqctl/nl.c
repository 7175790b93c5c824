// SPDX-License-Identifier: LGPL-2.1 OR MIT
/*
 * dqctl: generic netlink to the dq family over libmnl (nl.h).  No
 * globals: everything lives in the caller's struct nl; every function
 * returns 0 or a negative errno, with the kernel's extended ack kept in
 * nl->err for nl_fail().
 */
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <linux/genetlink.h>
#include <linux/netlink.h>

#include <linux/dq.h>

#include "attrs.h"
#include "dqctl.h"
#include "nl.h"

/*
 * What NLMSGERR_ATTR_POLICY says of the attribute an error points at:
 * its type, range and length limits, each into its field of struct
 * nl_err (and its has_ flag).
 */
static const struct policy_field {
	uint16_t type;
	uint16_t len;		/* payload: 4 (u32) or 8 (u64, s64) */
	size_t off;		/* of the field */
	size_t has;		/* of its bool has_*, 0: none */
} policy_fields[] = {
#define PF(t, l, f, h)	{ NL_POLICY_TYPE_ATTR_##t, l, \
			  offsetof(struct nl_err, f), h }
#define HAS(f)		offsetof(struct nl_err, f)
	PF(TYPE, 4, policy_type, 0),
	PF(MIN_VALUE_U, 8, min_u, HAS(has_range_u)),
	PF(MAX_VALUE_U, 8, max_u, HAS(has_range_u)),
	PF(MIN_VALUE_S, 8, min_s, HAS(has_range_s)),
	PF(MAX_VALUE_S, 8, max_s, HAS(has_range_s)),
	PF(MIN_LENGTH, 4, min_len, HAS(has_len)),
	PF(MAX_LENGTH, 4, max_len, HAS(has_len)),
#undef HAS
#undef PF
};

static int parse_policy_cb(const struct nlattr *a, void *data)
{
	char *e = data;
	uint16_t len = mnl_attr_get_payload_len(a);
	size_t i;

	for (i = 0; i < ARRAY_SIZE(policy_fields); i++) {
		const struct policy_field *f = &policy_fields[i];

		if (f->type != mnl_attr_get_type(a) || f->len != len)
			continue;
		memcpy(e + f->off, mnl_attr_get_payload(a), len);
		if (f->has)
			*(bool *)(e + f->has) = true;
	}
	return MNL_CB_OK;
}

static int parse_extack_cb(const struct nlattr *a, void *data)
{
	struct nl_err *e = data;
	const char *s;
	size_t len;

	switch (mnl_attr_get_type(a)) {
	case NLMSGERR_ATTR_MSG:
		s = mnl_attr_get_payload(a);
		len = strnlen(s, mnl_attr_get_payload_len(a));
		if (len >= sizeof(e->msg))
			len = sizeof(e->msg) - 1;
		memcpy(e->msg, s, len);
		e->msg[len] = '\0';
		/* drop a trailing newline some kernel messages carry */
		while (len && (e->msg[len - 1] == '\n' || e->msg[len - 1] == ' '))
			e->msg[--len] = '\0';
		break;
	case NLMSGERR_ATTR_OFFS:
		if (mnl_attr_validate(a, MNL_TYPE_U32) >= 0) {
			e->offs = mnl_attr_get_u32(a);
			e->has_offs = true;
		}
		break;
	case NLMSGERR_ATTR_MISS_TYPE:
		if (mnl_attr_validate(a, MNL_TYPE_U32) >= 0)
			e->miss_type = mnl_attr_get_u32(a);
		break;
	case NLMSGERR_ATTR_POLICY:
		e->has_policy = true;
		mnl_attr_parse_nested(a, parse_policy_cb, e);
		break;
	}
	return MNL_CB_OK;
}

/* Extended ack TLVs start at @off bytes into the message's payload. */
static void parse_extack(const struct nlmsghdr *nlh, size_t off,
			 struct nl_err *e)
{
	if (!(nlh->nlmsg_flags & NLM_F_ACK_TLVS))
		return;
	if (mnl_nlmsg_get_payload_len(nlh) < off)
		return;
	mnl_attr_parse(nlh, (unsigned int)off, parse_extack_cb, e);
}


/*
 * mnl_cb_run2 hands the same data pointer to the data and the control
 * callbacks: one call's struct nl, and the caller's callback and data.
 */
struct nl_call {
	struct nl *nl;
	mnl_cb_t cb;
	void *data;
};

static int cb_data(const struct nlmsghdr *nlh, void *data)
{
	struct nl_call *c = data;

	return c->cb ? c->cb(nlh, c->data) : MNL_CB_OK;
}

static int cb_error(const struct nlmsghdr *nlh, void *data)
{
	struct nl *nl = ((struct nl_call *)data)->nl;
	const struct nlmsgerr *err = mnl_nlmsg_get_payload(nlh);
	size_t off;

	if (mnl_nlmsg_get_payload_len(nlh) < sizeof(*err)) {
		errno = EBADMSG;
		return MNL_CB_ERROR;
	}
	if (err->error == 0)
		return MNL_CB_STOP;	/* the ack */
	nl->err.error = -err->error;
	off = sizeof(*err);
	if (!(nlh->nlmsg_flags & NLM_F_CAPPED))
		off += err->msg.nlmsg_len - sizeof(struct nlmsghdr);
	parse_extack(nlh, off, &nl->err);
	errno = nl->err.error;
	return MNL_CB_ERROR;
}

static int cb_done(const struct nlmsghdr *nlh, void *data)
{
	struct nl *nl = ((struct nl_call *)data)->nl;
	int error = 0;

	if (mnl_nlmsg_get_payload_len(nlh) >= sizeof(int))
		memcpy(&error, mnl_nlmsg_get_payload(nlh), sizeof(int));
	if (error == 0)
		return MNL_CB_STOP;
	nl->err.error = -error;
	parse_extack(nlh, sizeof(int), &nl->err);
	errno = nl->err.error;
	return MNL_CB_ERROR;
}

static int cb_noop(const struct nlmsghdr *nlh, void *data)
{
	(void)nlh;
	(void)data;
	return MNL_CB_OK;
}

static int cb_overrun(const struct nlmsghdr *nlh, void *data)
{
	struct nl *nl = ((struct nl_call *)data)->nl;

	(void)nlh;
	nl->err.error = ENOBUFS;
	errno = ENOBUFS;
	return MNL_CB_ERROR;
}

static mnl_cb_t ctl_cbs[NLMSG_MIN_TYPE] = {
	[NLMSG_NOOP] = cb_noop,
	[NLMSG_ERROR] = cb_error,
	[NLMSG_DONE] = cb_done,
	[NLMSG_OVERRUN] = cb_overrun,
};

/* Start a generic netlink request in @buf. */
static struct nlmsghdr *genl_req(void *buf, uint16_t type, uint16_t flags,
				 uint8_t cmd, uint8_t version)
{
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
	struct genlmsghdr *g;

	nlh->nlmsg_type = type;
	nlh->nlmsg_flags = NLM_F_REQUEST | flags;
	g = mnl_nlmsg_put_extra_header(nlh, sizeof(*g));
	g->cmd = cmd;
	g->version = version;
	return nlh;
}

/*
 * Its type, the family id, is filled in when it is sent: options are
 * checked before dqctl talks to the kernel at all.
 */
struct nlmsghdr *nl_req(struct nl *nl, uint8_t cmd, bool dump)
{
	return genl_req(nl->req, 0, dump ? NLM_F_DUMP : NLM_F_ACK, cmd,
			DQ_GENL_VERSION);
}

int nl_run(struct nl *nl, size_t len, mnl_cb_t cb, void *data)
{
	struct nl_call c = { .nl = nl, .cb = cb, .data = data };
	int ret;

	errno = 0;
	ret = mnl_cb_run2(nl->rx, len, 0, 0, cb_data, &c, ctl_cbs,
			  NLMSG_MIN_TYPE);
	if (ret < 0)
		return -(nl->err.error ? nl->err.error : errno ? errno : EPROTO);
	return 0;
}

/*
 * Send @nlh and run @cb on every reply until the ack, the end of a dump
 * or an error.
 */
static int nl_exchange(struct nl *nl, struct nlmsghdr *nlh, mnl_cb_t cb,
		       void *data)
{
	struct nl_call c = { .nl = nl, .cb = cb, .data = data };
	int ret;

	memset(&nl->err, 0, sizeof(nl->err));
	nlh->nlmsg_seq = ++nl->seq;
	if (mnl_socket_sendto(nl->sk, nlh, nlh->nlmsg_len) < 0) {
		nl->err.error = errno;
		return -nl->err.error;
	}
	for (;;) {
		ssize_t n = mnl_socket_recvfrom(nl->sk, nl->rx, sizeof(nl->rx));

		if (n < 0) {
			if (errno == EINTR)
				continue;
			nl->err.error = errno;
			return -nl->err.error;
		}
		errno = 0;
		ret = mnl_cb_run2(nl->rx, (size_t)n, nlh->nlmsg_seq, nl->portid,
				  cb_data, &c, ctl_cbs, NLMSG_MIN_TYPE);
		if (ret == MNL_CB_STOP)
			return 0;
		if (ret < 0) {
			if (!nl->err.error)
				nl->err.error = errno ? errno : EPROTO;
			return -nl->err.error;
		}
	}
}

/* Send the dq request in nl->req (opening the socket first if need be). */
int nl_talk(struct nl *nl, mnl_cb_t cb, void *data)
{
	struct nlmsghdr *nlh = (struct nlmsghdr *)nl->req;
	int ret;

	if (!nl->sk) {
		ret = nl_open(nl);
		if (ret)
			return ret;
	}
	nlh->nlmsg_type = nl->family;
	nl->req_len = nlh->nlmsg_len;
	return nl_exchange(nl, nlh, cb, data);
}

/* The attribute of the last request at byte offset @offs, or 0. */
static unsigned int req_attr_at(const struct nl *nl, uint32_t offs)
{
	const struct nlmsghdr *nlh = (const struct nlmsghdr *)nl->req;
	const struct nlattr *a;

	if (offs >= nl->req_len)
		return 0;
	mnl_attr_for_each(a, nlh, sizeof(struct genlmsghdr)) {
		if ((const char *)a - (const char *)nlh == (ptrdiff_t)offs)
			return mnl_attr_get_type(a);
	}
	return 0;
}

/* Describe the attribute an error points at: "--slot-size" or "attribute 42". */
static void attr_label(char *buf, size_t len, unsigned int type)
{
	const char *n = attr_name(type);

	if (n)
		snprintf(buf, len, "%s", n);
	else
		snprintf(buf, len, "attribute type %u", type);
}

/*
 * Print what went wrong with @what ("create q"): the kernel's extack
 * message when there is one, the attribute it points at and the valid
 * range when the policy says, else strerror.  Returns EXIT_KERNEL.
 */
static int nl_report(const struct nl *nl, const char *what,
		     const char *perm_action, bool verbose);

/* Why nl_open() failed. */
static int nl_open_fail(const struct nl *nl, bool verbose)
{
	switch (nl->open_failed) {
	case NL_OPEN_SOCKET:
		warnx("cannot open a generic netlink socket: %s",
		      strerror(nl->err.error));
		break;
	case NL_OPEN_BIND:
		warnx("cannot bind a generic netlink socket: %s",
		      strerror(nl->err.error));
		break;
	default:
		if (nl->err.error == ENOENT) {
			warnx("module dq not loaded (no generic netlink family '%s')",
			      DQ_GENL_NAME);
			break;
		}
		return nl_report(nl, "looking up the generic netlink family 'dq'",
				 NULL, verbose);
	}
	return EXIT_KERNEL;
}

int nl_fail(const struct nl *nl, const char *what, const char *perm_action,
	    bool verbose)
{
	if (nl->open_failed)
		return nl_open_fail(nl, verbose);
	return nl_report(nl, what, perm_action, verbose);
}

static int nl_report(const struct nl *nl, const char *what,
		     const char *perm_action, bool verbose)
{
	const struct nl_err *e = &nl->err;
	char detail[160] = "", label[48];
	const char *msg = e->msg[0] ? e->msg : strerror(e->error);
	unsigned int bad = e->has_offs ? req_attr_at(nl, e->offs) : 0;

	if (e->error == EPERM && perm_action && !e->msg[0]) {
		warnx("permission denied: %s needs CAP_NET_ADMIN", perm_action);
		return EXIT_KERNEL;
	}
	if (e->miss_type && !e->msg[0]) {
		attr_label(label, sizeof(label), e->miss_type);
		warnx("%s: missing required attribute %s", what, label);
		return EXIT_KERNEL;
	}
	if (bad && (e->has_policy || !attr_name(bad))) {
		static const char *const types[] = {
			[NL_ATTR_TYPE_FLAG] = "a flag",
			[NL_ATTR_TYPE_U8] = "u8", [NL_ATTR_TYPE_U16] = "u16",
			[NL_ATTR_TYPE_U32] = "u32", [NL_ATTR_TYPE_U64] = "u64",
			[NL_ATTR_TYPE_S8] = "s8", [NL_ATTR_TYPE_S16] = "s16",
			[NL_ATTR_TYPE_S32] = "s32", [NL_ATTR_TYPE_S64] = "s64",
			[NL_ATTR_TYPE_BINARY] = "binary",
			[NL_ATTR_TYPE_STRING] = "a string",
			[NL_ATTR_TYPE_NUL_STRING] = "a NUL-terminated string",
			[NL_ATTR_TYPE_NESTED] = "nested",
		};
		const char *tn = e->policy_type < ARRAY_SIZE(types) ?
				 types[e->policy_type] : NULL;
		size_t l;

		attr_label(label, sizeof(label), bad);
		l = (size_t)snprintf(detail, sizeof(detail), " (%s", label);
		if (tn && l < sizeof(detail))
			l += (size_t)snprintf(detail + l, sizeof(detail) - l,
					      ": %s", tn);
		if (e->has_range_u && l < sizeof(detail))
			l += (size_t)snprintf(detail + l, sizeof(detail) - l,
					      "%s valid range %" PRIu64 "..%" PRIu64,
					      tn ? "," : ":", e->min_u, e->max_u);
		else if (e->has_range_s && l < sizeof(detail))
			l += (size_t)snprintf(detail + l, sizeof(detail) - l,
					      "%s valid range %" PRId64 "..%" PRId64,
					      tn ? "," : ":", e->min_s, e->max_s);
		else if (e->has_len && e->max_len && l < sizeof(detail))
			l += (size_t)snprintf(detail + l, sizeof(detail) - l,
					      "%s at most %" PRIu32 " bytes",
					      tn ? "," : ":", e->max_len);
		if (l < sizeof(detail))
			snprintf(detail + l, sizeof(detail) - l, ")");
	}
	if (e->miss_type && e->msg[0]) {
		attr_label(label, sizeof(label), e->miss_type);
		snprintf(detail + strlen(detail), sizeof(detail) - strlen(detail),
			 " (missing %s)", label);
	}
	warnx("%s: %s%s", what, msg, detail);
	if (verbose)
		warnx("(errno %d: %s)", e->error, strerror(e->error));
	return EXIT_KERNEL;
}

/* ---- family resolution -------------------------------------------- */
/* ---- family resolution -------------------------------------------- */

struct family_reply {
	uint16_t id;
	uint32_t version;
	uint32_t mcgrp;
};


static int family_grp_cb(const struct nlattr *a, void *data)
{
	struct family_reply *f = data;
	const struct nlattr *x;
	const char *name = NULL;
	uint32_t id = 0;

	mnl_attr_for_each_nested(x, a) {
		switch (mnl_attr_get_type(x)) {
		case CTRL_ATTR_MCAST_GRP_NAME:
			if (mnl_attr_validate(x, MNL_TYPE_NUL_STRING) >= 0)
				name = mnl_attr_get_str(x);
			break;
		case CTRL_ATTR_MCAST_GRP_ID:
			if (mnl_attr_validate(x, MNL_TYPE_U32) >= 0)
				id = mnl_attr_get_u32(x);
			break;
		}
	}
	if (name && !strcmp(name, DQ_GENL_MCGRP_EVENTS))
		f->mcgrp = id;
	return MNL_CB_OK;
}

static int family_attr_cb(const struct nlattr *a, void *data)
{
	struct family_reply *f = data;

	switch (mnl_attr_get_type(a)) {
	case CTRL_ATTR_FAMILY_ID:
		if (mnl_attr_validate(a, MNL_TYPE_U16) >= 0)
			f->id = mnl_attr_get_u16(a);
		break;
	case CTRL_ATTR_VERSION:
		if (mnl_attr_validate(a, MNL_TYPE_U32) >= 0)
			f->version = mnl_attr_get_u32(a);
		break;
	case CTRL_ATTR_MCAST_GROUPS:
		mnl_attr_parse_nested(a, family_grp_cb, f);
		break;
	}
	return MNL_CB_OK;
}

static int family_cb(const struct nlmsghdr *nlh, void *data)
{
	mnl_attr_parse(nlh, sizeof(struct genlmsghdr), family_attr_cb, data);
	return MNL_CB_OK;
}

int nl_open(struct nl *nl)
{
	struct family_reply f = { .id = 0 };
	char buf[256];
	struct nlmsghdr *nlh;
	int one = 1, ret;

	nl->sk = mnl_socket_open(NETLINK_GENERIC);
	if (!nl->sk) {
		nl->err.error = errno;
		nl->open_failed = NL_OPEN_SOCKET;
		return -nl->err.error;
	}
	/* Error messages from the kernel, without our request echoed back. */
	mnl_socket_setsockopt(nl->sk, NETLINK_EXT_ACK, &one, sizeof(one));
	mnl_socket_setsockopt(nl->sk, NETLINK_CAP_ACK, &one, sizeof(one));
	if (mnl_socket_bind(nl->sk, 0, MNL_SOCKET_AUTOPID) < 0) {
		nl->err.error = errno;
		nl->open_failed = NL_OPEN_BIND;
		return -nl->err.error;
	}
	nl->portid = mnl_socket_get_portid(nl->sk);
	nl->seq = (uint32_t)time(NULL);

	nlh = genl_req(buf, GENL_ID_CTRL, NLM_F_ACK, CTRL_CMD_GETFAMILY, 1);
	mnl_attr_put_strz(nlh, CTRL_ATTR_FAMILY_NAME, DQ_GENL_NAME);
	nl->req_len = 0;
	ret = nl_exchange(nl, nlh, family_cb, &f);
	if (!ret && !f.id) {
		nl->err.error = ENOENT;
		ret = -ENOENT;
	}
	if (ret) {
		nl->open_failed = NL_OPEN_FAMILY;
		return ret;
	}
	nl->family = f.id;
	nl->family_version = f.version;
	nl->mcgrp_events = f.mcgrp;
	return 0;
}

void nl_close(struct nl *nl)
{
	if (nl->sk)
		mnl_socket_close(nl->sk);
	nl->sk = NULL;
}
