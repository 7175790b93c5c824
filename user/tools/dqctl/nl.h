/* SPDX-License-Identifier: LGPL-2.1 OR MIT */
/*
 * dqctl: generic netlink to the dq family over libmnl.  Every call
 * returns 0 or a negative errno and keeps what the kernel said about an
 * error (its extended ack) in nl->err; nl_fail() tells the user.
 */
#ifndef DQCTL_NL_H
#define DQCTL_NL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <libmnl/libmnl.h>

#ifndef MNL_SOCKET_DUMP_SIZE
#define MNL_SOCKET_DUMP_SIZE	32768
#endif
#define NL_RX_SIZE	MNL_SOCKET_DUMP_SIZE
#define NL_TX_SIZE	4096

struct nl_err {
	int error;		/* positive errno, 0: none */
	char msg[256];		/* NLMSGERR_ATTR_MSG */
	bool has_offs;
	uint32_t offs;		/* NLMSGERR_ATTR_OFFS */
	uint32_t miss_type;	/* NLMSGERR_ATTR_MISS_TYPE, 0: none */
	bool has_policy;
	uint32_t policy_type;	/* NL_ATTR_TYPE_*, 0: unknown */
	bool has_range_u, has_range_s, has_len;
	uint64_t min_u, max_u;
	int64_t min_s, max_s;
	uint32_t min_len, max_len;
};

/* Where nl_open() failed, for nl_fail()'s message. */
enum nl_open_step { NL_OPEN_OK, NL_OPEN_SOCKET, NL_OPEN_BIND, NL_OPEN_FAMILY };

struct nl {
	struct mnl_socket *sk;
	uint32_t portid;
	uint32_t seq;
	uint16_t family;
	uint32_t family_version;
	uint32_t mcgrp_events;	/* 0: the family has no such group */
	enum nl_open_step open_failed;
	/* the last request, to name the attribute an error points at */
	char req[NL_TX_SIZE];
	size_t req_len;
	struct nl_err err;
	char rx[NL_RX_SIZE];
};

/* Open the socket and look up the family (nl_talk() does it when needed). */
int nl_open(struct nl *nl);
void nl_close(struct nl *nl);

/* Start a request of the dq family in nl->req: a doit with an ack, or a dump. */
struct nlmsghdr *nl_req(struct nl *nl, uint8_t cmd, bool dump);
/* Send nl->req; run @cb(reply, @data) on each reply up to the ack or done. */
int nl_talk(struct nl *nl, mnl_cb_t cb, void *data);
/* Run @cb on the messages of @len bytes in nl->rx (multicast: no seq). */
int nl_run(struct nl *nl, size_t len, mnl_cb_t cb, void *data);

/*
 * Print what went wrong with @what ("create q"): the kernel's extack
 * message, the attribute it points at and its valid range, else strerror;
 * @perm_action names what EPERM refused.  Returns EXIT_KERNEL.
 */
int nl_fail(const struct nl *nl, const char *what, const char *perm_action,
	    bool verbose);

#endif /* DQCTL_NL_H */
