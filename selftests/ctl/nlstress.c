// SPDX-License-Identifier: LGPL-2.1 OR MIT
/*
 * nlstress - randomized stress of the dq generic netlink family.
 *
 * One process, one netlink socket, single-threaded: until the deadline it
 * sends requests to the "dq" family and judges every answer.  The requests
 * are a mix of
 *
 *   valid     well-formed requests on a small pool of named queues (create,
 *             set, get, stats, delete with and without FORCE, dumps), on a
 *             private queue of its own (by ID) and on names and IDs no
 *             queue has; most must succeed, the rest fail with the errno
 *             uapi/linux/dq.h documents (EEXIST, ENOENT, EBUSY, E2BIG...);
 *   mutated   a valid request with 1-3 mutations: bit flips in the
 *             attributes, an attribute's length, type or flag bits
 *             (NLA_F_NESTED, NLA_F_NET_BYTEORDER) changed, attributes
 *             duplicated, removed or added, names mangled, garbage
 *             appended, the message cut short;
 *   soup      a random command (every DQ_CMD_* and unknown numbers) with
 *             random attributes: every type 0..DQ_A_MAX + 5, payloads of
 *             0..80 bytes, typed values at and around their limits,
 *             strings without a NUL, names of valid and invalid bytes,
 *             nests of random garbage up to 4 deep;
 *   header    a valid request with its header broken: nlmsg_flags junk
 *             bits (and REQUEST missing), genlmsghdr version and
 *             reserved, nlmsg_len truncated (below 16, below the genl
 *             header, inside the attributes) or beyond the datagram, and
 *             bytes after the message in the datagram.
 *
 * Some requests are sent without CAP_NET_ADMIN in the effective set (the
 * changes must then fail with EPERM).  Now and then it attaches to a pool
 * queue through /dev/dq (DQ_IOC_ATTACH + mmap) and submits a few
 * descriptors with random due times, so that deleting (with FORCE) hits
 * queues holding messages; once a queue is deleted its attached files'
 * DQ_IOC_SUBMIT must fail with ENODEV.
 *
 * The oracle: each request's bytes are parsed the way the kernel's
 * netlink core and strict attribute validation do, against the family's
 * policies (kmod/dq_netlink.c, docs/netlink/dq.yaml), and then checked
 * against a model of the queues (which exist, their IDs, slot counts,
 * whether they hold messages).  That gives for every request the set of
 * answers allowed: no answer at all (lengths the netlink core drops,
 * nlmsg_flags without REQUEST), an ack only, success, or an error from a
 * set of errnos.  An errno outside that set, a success that was not
 * allowed, a valid request failing, a malformed or stray reply, or no
 * reply within the receive timeout (10 s, times $DQ_TIMEOUT_SCALE) is a
 * failure.  Where no answer is expected, a ping (QUEUE_GET of a name no
 * queue has: ENOENT) must still be answered: the socket stays usable.
 *
 * At the end every queue it created is deleted (FORCE) and a dump must
 * show none of them.  Output: "# " diagnostics (counters by mode, command
 * and errno), one TAP line, and "N passed, N failed, 0 skipped" where N
 * counts checks (each request's answer is one).  Exit status 0 when
 * nothing failed, 1 when something did, 2 on a usage error.
 *
 * The generator is seeded (-s, printed first); the choice of requests
 * follows from the seed and the kernel's answers.  Needs root (and
 * dq.ko loaded) in the initial network namespace; the arena limit is read
 * from /sys/module/dq/parameters/max_arena_bytes.
 *
 * usage: nlstress [-t SECONDS] [-s SEED] [-n MAX_REQUESTS] [-v]
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <libmnl/libmnl.h>
#include <linux/capability.h>
#include <linux/genetlink.h>
#include <linux/netlink.h>

#include <linux/dq.h>

#include "dqtest.h"

#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))
#define GENL_HDR	(NLMSG_HDRLEN + GENL_HDRLEN)	/* 20 */
#define REQ_MAX		4096
#define RX_SIZE		65536
#define NPOOL		6
#define MAX_HANDLES	4
#define MAX_EXTRAS	32
#define MAX_ITEMS	512
#define MAX_SNAP	256
#define SMALL_ARENA	(4ULL << 20)	/* largest arena a request may create */
#define SMALL_RING	65536U		/* largest ring a request may create */
#define MAX_FAIL_PRINT	25

/* ------------------------------------------------------------ random */

static uint64_t rng_state;

static uint64_t mix64(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebULL;
	x ^= x >> 31;
	return x;
}

static uint64_t rnd(void)
{
	return dqt_rand(&rng_state);
}

static uint64_t below(uint64_t n)
{
	return n ? rnd() % n : 0;
}

static bool chance(unsigned int percent)
{
	return below(100) < percent;
}

/* ------------------------------------------------------------ counters */

enum mode { M_VALID, M_MUT, M_SOUP, M_HDR, M_PING, M_SYNC, M_NR };
static const char *const mode_name[M_NR] = {
	"valid", "mutated", "soup", "header", "ping", "sync",
};

static struct {
	unsigned long req[M_NR];
	unsigned long cmd[9];		/* 0..6, 7: unknown, 8: (no header) */
	unsigned long err[136];		/* [0]: success, [e]: -e; 135: other */
	unsigned long none;		/* no answer, as expected */
	unsigned long ack0;		/* ack only (no REQUEST flag) */
	unsigned long valid_ok_expected, valid_ok;
	unsigned long valid_err_expected, valid_err;
	unsigned long unpriv, dumps, resyncs;
	unsigned long attaches, attach_ok, submitted, accepted, enodev;
	unsigned long created, deleted, deleted_busy;
	unsigned long pass, fail;
} C;

static int verbose;
static double timeout_scale = 1;

static const char *errname(int e)
{
	static char buf[16];

	switch (e) {
	case 0: return "ok";
	case EPERM: return "EPERM";
	case ENOENT: return "ENOENT";
	case EINTR: return "EINTR";
	case E2BIG: return "E2BIG";
	case ENOMEM: return "ENOMEM";
	case EFAULT: return "EFAULT";
	case EBUSY: return "EBUSY";
	case EEXIST: return "EEXIST";
	case ENODEV: return "ENODEV";
	case EINVAL: return "EINVAL";
	case ENOSPC: return "ENOSPC";
	case ERANGE: return "ERANGE";
	case EMSGSIZE: return "EMSGSIZE";
	case EOPNOTSUPP: return "EOPNOTSUPP";
	case EPROTO: return "EPROTO";
	case ENOBUFS: return "ENOBUFS";
	case EIO: return "EIO";
	case EACCES: return "EACCES";
	case ENXIO: return "ENXIO";
	case EAGAIN: return "EAGAIN";
	case ETIMEDOUT: return "ETIMEDOUT";
	default:
		snprintf(buf, sizeof(buf), "errno %d", e);
		return buf;
	}
}

static void check(bool ok, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/*
 * Failures by kind: the message without its numbers (sequence numbers,
 * IDs, lengths), so that the first of each kind is printed even past
 * MAX_FAIL_PRINT, and the end says how many of each.
 */
#define MAX_KINDS	32
static struct {
	char key[72];
	unsigned long n;
} kinds[MAX_KINDS];
static unsigned int nkinds;

static bool fail_kind_new(const char *msg)
{
	const char *skip = strstr(msg, " flags "), *end = NULL;
	char key[72];
	size_t k = 0;
	unsigned int i;

	/* "MODE #SEQ: CMD flags F len L/D ver V resv R[ unprivileged]: WHY" */
	if (skip) {
		const char *cmd = strstr(msg, ": ");

		end = strstr(skip, ": ");
		if (cmd && cmd < skip)
			msg = cmd + 2;
	}
	for (; *msg && k < sizeof(key) - 1; msg++) {
		if (msg == skip && end) {
			msg = end;
			key[k++] = ':';
			continue;
		}
		if (!(*msg >= '0' && *msg <= '9') && *msg != '#')
			key[k++] = *msg;
	}
	key[k] = 0;
	for (i = 0; i < nkinds; i++)
		if (!strcmp(kinds[i].key, key)) {
			kinds[i].n++;
			return false;
		}
	if (nkinds == MAX_KINDS)
		return false;
	memcpy(kinds[nkinds].key, key, sizeof(key));
	kinds[nkinds++].n = 1;
	return true;
}

static void check(bool ok, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	if (ok) {
		C.pass++;
		return;
	}
	C.fail++;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (!fail_kind_new(msg) && C.fail > MAX_FAIL_PRINT)
		return;
	printf("# nlstress: FAIL: %s\n", msg);
	fflush(stdout);
}

static void diag(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void diag(const char *fmt, ...)
{
	va_list ap;

	printf("# nlstress: ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
}

/* snprintf at buf + *l, never past cap. */
static void appendf(char *buf, size_t cap, size_t *l, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void appendf(char *buf, size_t cap, size_t *l, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (*l >= cap)
		return;
	va_start(ap, fmt);
	n = vsnprintf(buf + *l, cap - *l, fmt, ap);
	va_end(ap);
	if (n > 0)
		*l += (size_t)n;
}

/* ------------------------------------------------------------ socket */

static struct mnl_socket *nls;
static uint32_t portid, next_seq;
static uint16_t family;
static uint8_t rxbuf[RX_SIZE];

static int nl_socket(void)
{
	int one = 1;
	struct timeval tv;
	double t = 10 * timeout_scale;

	if (nls)
		mnl_socket_close(nls);
	nls = mnl_socket_open(NETLINK_GENERIC);
	if (!nls)
		return -errno;
	mnl_socket_setsockopt(nls, NETLINK_EXT_ACK, &one, sizeof(one));
	mnl_socket_setsockopt(nls, NETLINK_CAP_ACK, &one, sizeof(one));
	tv.tv_sec = (time_t)t;
	tv.tv_usec = (suseconds_t)((t - (double)tv.tv_sec) * 1e6);
	if (setsockopt(mnl_socket_get_fd(nls), SOL_SOCKET, SO_RCVTIMEO, &tv,
		       sizeof(tv)))
		return -errno;
	if (mnl_socket_bind(nls, 0, MNL_SOCKET_AUTOPID) < 0)
		return -errno;
	portid = mnl_socket_get_portid(nls);
	return 0;
}

static int family_attr_cb(const struct nlattr *a, void *data)
{
	if (mnl_attr_get_type(a) == CTRL_ATTR_FAMILY_ID &&
	    mnl_attr_validate(a, MNL_TYPE_U16) >= 0)
		*(uint16_t *)data = mnl_attr_get_u16(a);
	return MNL_CB_OK;
}

static int family_cb(const struct nlmsghdr *nlh, void *data)
{
	mnl_attr_parse(nlh, GENL_HDRLEN, family_attr_cb, data);
	return MNL_CB_OK;
}

static int resolve_family(void)
{
	char buf[256];
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
	struct genlmsghdr *g;
	uint16_t id = 0;
	int ret;

	nlh->nlmsg_type = GENL_ID_CTRL;
	nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK;
	nlh->nlmsg_seq = ++next_seq;
	g = mnl_nlmsg_put_extra_header(nlh, sizeof(*g));
	g->cmd = CTRL_CMD_GETFAMILY;
	g->version = 1;
	mnl_attr_put_strz(nlh, CTRL_ATTR_FAMILY_NAME, DQ_GENL_NAME);
	if (mnl_socket_sendto(nls, nlh, nlh->nlmsg_len) < 0)
		return -errno;
	for (;;) {
		ssize_t n = mnl_socket_recvfrom(nls, rxbuf, sizeof(rxbuf));

		if (n < 0)
			return -errno;
		ret = mnl_cb_run(rxbuf, (size_t)n, nlh->nlmsg_seq, portid,
				 family_cb, &id);
		if (ret < 0)
			return -errno;
		if (ret == MNL_CB_STOP)
			break;
	}
	if (!id)
		return -ENOENT;
	family = id;
	return 0;
}

/* CAP_NET_ADMIN in the effective set, on or off (permitted stays). */
static bool can_unpriv;

static int net_admin(bool on)
{
	struct __user_cap_header_struct h = {
		.version = _LINUX_CAPABILITY_VERSION_3,
	};
	struct __user_cap_data_struct d[2];
	unsigned int w = CAP_NET_ADMIN / 32, bit = 1U << (CAP_NET_ADMIN % 32);

	if (syscall(SYS_capget, &h, d))
		return -errno;
	if (on)
		d[w].effective |= bit;
	else
		d[w].effective &= ~bit;
	if (syscall(SYS_capset, &h, d))
		return -errno;
	return 0;
}

static bool have_permitted_net_admin(void)
{
	struct __user_cap_header_struct h = {
		.version = _LINUX_CAPABILITY_VERSION_3,
	};
	struct __user_cap_data_struct d[2];

	if (syscall(SYS_capget, &h, d))
		return false;
	return d[CAP_NET_ADMIN / 32].permitted & (1U << (CAP_NET_ADMIN % 32));
}

/* ------------------------------------------------------------ model */

enum busy { B_NO, B_YES, B_MAYBE };

struct pq {
	char name[DQ_NAME_MAX];
	bool exists;
	uint32_t id;
	uint32_t slots;
	bool tracked;
	enum busy busy;
};

struct extra {
	char name[DQ_NAME_MAX];
	uint32_t id;
	bool used;
};

struct handle {
	bool used;
	uint32_t qid;
	struct dqt_queue q;
};

static struct pq pool[NPOOL];
static struct extra extras[MAX_EXTRAS];
static struct handle handles[MAX_HANDLES];
static char ghost[DQ_NAME_MAX];
/*
 * The ping's name: unlike ghost, no generator puts it in a request, so a
 * QUEUE_NEW without ACK cannot create it between the request and the
 * ping (the ping's answer is predicted before that request's success is
 * applied to the model).
 */
static char ping_name[DQ_NAME_MAX];
static struct dqt_queue priv;
static bool priv_live;
static uint32_t priv_id, priv_slots;
static uint32_t dead_ids[16];
static unsigned int ndead;
/* What existed before the run: never ours to delete. */
static char snap_name[MAX_SNAP][DQ_NAME_MAX];
static uint32_t snap_id[MAX_SNAP];
static unsigned int nsnap_name, nsnap_id;
static uint64_t arena_limit;
static bool limit_known;
static bool need_resync;

static bool in_snap_name(const char *s)
{
	unsigned int i;

	for (i = 0; i < nsnap_name; i++)
		if (!strcmp(snap_name[i], s))
			return true;
	return false;
}

static bool in_snap_id(uint32_t id)
{
	unsigned int i;

	for (i = 0; i < nsnap_id; i++)
		if (snap_id[i] == id)
			return true;
	return false;
}

static int pool_by_name(const char *s)
{
	int i;

	for (i = 0; i < NPOOL; i++)
		if (!strcmp(pool[i].name, s))
			return i;
	return -1;
}

static int extra_by_name(const char *s)
{
	int i;

	for (i = 0; i < MAX_EXTRAS; i++)
		if (extras[i].used && !strcmp(extras[i].name, s))
			return i;
	return -1;
}

static void extra_add(const char *name, uint32_t id)
{
	int i = extra_by_name(name);

	if (i < 0)
		for (i = 0; i < MAX_EXTRAS && extras[i].used; i++)
			;
	if (i >= MAX_EXTRAS) {
		need_resync = true;	/* cleaned up from the dump */
		return;
	}
	extras[i].used = true;
	extras[i].id = id;
	snprintf(extras[i].name, sizeof(extras[i].name), "%s", name);
}

static void dead_add(uint32_t id)
{
	dead_ids[ndead++ % ARRAY_SIZE(dead_ids)] = id;
}

/* The kernel's dq_name_valid(), as uapi/linux/dq.h documents it. */
static bool name_valid_doc(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (!((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') ||
		      (*s >= '0' && *s <= '9') || strchr("._:-", *s)))
			return false;
	return true;
}

/*
 * What the kernel's isalnum() also takes: the ISO 8859-1 letters of its
 * lib/ctype.c (0xc0-0xff but 0xd7 and 0xf7).  dq.ko took such names until
 * nlstress found it (2026-12-03); the generator keeps sending them, and
 * only the documented set may succeed.
 */
static bool name_valid_latin1(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c >= 0xc0 && c != 0xd7 && c != 0xf7)
			continue;
		if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
		      (c >= '0' && c <= '9') || strchr("._:-", c)))
			return false;
	}
	return true;
}

/* ------------------------------------------------------------ policies */

enum pkind { P_NONE, P_U32, P_U64, P_NODE, P_MASK, P_FLAG, P_NAME };

struct pol {
	uint8_t kind;
	uint64_t min, max;	/* P_U32, P_U64; P_MASK: max is the mask */
};

#define NCMD	(DQ_CMD_STATS + 1)
static struct pol pol_tab[NCMD][DQ_A_MAX + 1];

static void pol_init(void)
{
	static const int ref[] = {
		DQ_CMD_QUEUE_DEL, DQ_CMD_QUEUE_GET, DQ_CMD_QUEUE_SET,
		DQ_CMD_STATS,
	};
	static const int lim[] = { DQ_CMD_QUEUE_NEW, DQ_CMD_QUEUE_SET };
	struct pol u32any = { P_U32, 0, UINT32_MAX };
	struct pol name = { P_NAME, 0, 0 };
	struct pol node = { P_NODE, 0, 0 };
	size_t i;

	for (i = 0; i < ARRAY_SIZE(lim); i++) {
		struct pol *p = pol_tab[lim[i]];

		p[DQ_A_MAX_PENDING] = u32any;
		p[DQ_A_RATE] = (struct pol){ P_U64, 0, 1000000000ULL };
		p[DQ_A_BURST] = (struct pol){ P_U32, 1, DQ_MAX_SLOTS };
		p[DQ_A_HIGH_WM] = u32any;
		p[DQ_A_MAX_INFLIGHT] = (struct pol){ P_U32, 1, DQ_MAX_SLOTS };
	}
	for (i = 0; i < ARRAY_SIZE(ref); i++) {
		pol_tab[ref[i]][DQ_A_ID] = (struct pol){ P_U32, 1, UINT32_MAX };
		pol_tab[ref[i]][DQ_A_NAME] = name;
	}
	pol_tab[DQ_CMD_QUEUE_DEL][DQ_A_FORCE] = (struct pol){ P_FLAG, 0, 0 };
	pol_tab[DQ_CMD_STATS][DQ_A_NODE] = node;

	pol_tab[DQ_CMD_QUEUE_NEW][DQ_A_NAME] = name;
	pol_tab[DQ_CMD_QUEUE_NEW][DQ_A_SLOTS] =
		(struct pol){ P_U32, 1, DQ_MAX_SLOTS };
	pol_tab[DQ_CMD_QUEUE_NEW][DQ_A_SLOT_SIZE] =
		(struct pol){ P_U32, DQ_MIN_SLOT_SIZE, DQ_MAX_SLOT_SIZE };
	pol_tab[DQ_CMD_QUEUE_NEW][DQ_A_SUBMIT_ENTRIES] =
		(struct pol){ P_U32, 0, DQ_MAX_RING_ENTRIES };
	pol_tab[DQ_CMD_QUEUE_NEW][DQ_A_READY_ENTRIES] =
		(struct pol){ P_U32, 0, DQ_MAX_RING_ENTRIES };
	pol_tab[DQ_CMD_QUEUE_NEW][DQ_A_NODE] = node;
	pol_tab[DQ_CMD_QUEUE_NEW][DQ_A_GRANULARITY_NS] =
		(struct pol){ P_U32, 0, DQ_MAX_GRANULARITY_NS };
	pol_tab[DQ_CMD_QUEUE_NEW][DQ_A_UID] = u32any;
	pol_tab[DQ_CMD_QUEUE_NEW][DQ_A_GID] = u32any;
	pol_tab[DQ_CMD_QUEUE_NEW][DQ_A_MODE] = (struct pol){ P_U32, 0, 0777 };
	pol_tab[DQ_CMD_QUEUE_NEW][DQ_A_FLAGS] =
		(struct pol){ P_MASK, 0, DQ_SETUP_F_ALL };
	pol_tab[DQ_CMD_QUEUE_NEW][DQ_A_VISIBILITY_NS] =
		(struct pol){ P_U64, DQ_MIN_VISIBILITY_NS, DQ_MAX_DELAY_NS };
}

/* ------------------------------------------------------------ requests */

enum xkind { X_NONE, X_ACK0, X_REPLY };
enum tkind { T_NONE, T_POOL, T_PRIV, T_EXTRA, T_MISSING, T_UNKNOWN, T_NODE };

struct expect {
	enum xkind kind;
	bool ok;		/* success allowed */
	bool sure;		/* a success is understood by the model */
	bool only_ok;		/* success is the one allowed answer */
	uint64_t errs[3];	/* allowed errnos, bit e */
	uint8_t cmd;
	bool dump, ack;
	enum tkind tkind;
	int tidx;
	uint32_t want_id;
	char want_name[DQ_NAME_MAX];
	bool check_new;
	uint32_t want_slots, want_slot_size, want_flags;
	int node;
	bool latin1;		/* known issue: see known_issue() */
	bool force;
	bool too_big;		/* could create a large queue: not sent */
};

struct req {
	uint8_t buf[REQ_MAX + 128];
	size_t dlen;		/* bytes sent */
	enum mode mode;
	bool unpriv;
	uint32_t seq;
	struct expect e;
};

static struct nlmsghdr *nlh_of(struct req *r)
{
	return (struct nlmsghdr *)r->buf;
}

static void b_start(struct req *r, uint8_t cmd, uint16_t flags)
{
	struct nlmsghdr *nlh = nlh_of(r);
	struct genlmsghdr *g = (struct genlmsghdr *)(r->buf + NLMSG_HDRLEN);

	memset(r->buf, 0, sizeof(r->buf));
	nlh->nlmsg_len = GENL_HDR;
	nlh->nlmsg_type = family;
	nlh->nlmsg_flags = flags;
	g->cmd = cmd;
	g->version = DQ_GENL_VERSION;
	r->dlen = GENL_HDR;
}

/* Room for an attribute of plen payload bytes? */
static bool b_room(struct req *r, size_t plen)
{
	return NLMSG_ALIGN(nlh_of(r)->nlmsg_len) + NLA_HDRLEN + NLA_ALIGN(plen) <=
	       REQ_MAX;
}

/* Append an attribute; nla_len is NLA_HDRLEN + plen; padding random. */
static void b_attr(struct req *r, uint16_t type, const void *p, size_t plen)
{
	struct nlmsghdr *nlh = nlh_of(r);
	size_t off = NLMSG_ALIGN(nlh->nlmsg_len), i;
	struct nlattr *a = (struct nlattr *)(r->buf + off);

	if (!b_room(r, plen))
		return;
	a->nla_len = (uint16_t)(NLA_HDRLEN + plen);
	a->nla_type = type;
	if (plen)
		memcpy(r->buf + off + NLA_HDRLEN, p, plen);
	for (i = plen; i < NLA_ALIGN(plen); i++)
		r->buf[off + NLA_HDRLEN + i] = chance(10) ? (uint8_t)rnd() : 0;
	nlh->nlmsg_len = (uint32_t)(off + NLA_HDRLEN + NLA_ALIGN(plen));
	r->dlen = nlh->nlmsg_len;
}

static void put_u32(struct req *r, uint16_t t, uint32_t v)
{
	b_attr(r, t, &v, 4);
}

static void put_u64(struct req *r, uint16_t t, uint64_t v)
{
	b_attr(r, t, &v, 8);
}

static void put_str(struct req *r, uint16_t t, const char *s)
{
	b_attr(r, t, s, strlen(s) + 1);
}

static void put_flag(struct req *r, uint16_t t)
{
	b_attr(r, t, NULL, 0);
}

static uint32_t u32_at(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return v;
}

static uint64_t u64_at(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return v;
}

/* ------------------------------------------------------------ the oracle */

static void allow(struct expect *e, int err)
{
	if (err > 0 && err < 192)
		e->errs[err / 64] |= 1ULL << (err % 64);
}

static bool allowed(const struct expect *e, int err)
{
	return err > 0 && err < 192 && (e->errs[err / 64] >> (err % 64) & 1);
}

static void fail_with(struct expect *e, int err)
{
	allow(e, err);
	e->ok = false;
}

static bool no_errs(const struct expect *e)
{
	return !e->errs[0] && !e->errs[1] && !e->errs[2];
}

struct parsed {
	bool bad;		/* strict validation refuses it */
	bool byteorder;		/* an attribute with NLA_F_NET_BYTEORDER */
	bool node_soft;		/* a NODE the policy may refuse (>= 1) */
	const uint8_t *a[DQ_A_MAX + 1];	/* payload of the last of each type */
	uint16_t plen[DQ_A_MAX + 1];
};

/*
 * Attributes as the kernel parses them: nla_for_each_attr() over the
 * bytes, then __nla_validate_parse() with NL_VALIDATE_STRICT against the
 * command's policy (lib/nlattr.c).
 */
static void parse_attrs(const uint8_t *p, int len, int cmd, struct parsed *ps)
{
	int rem = len;

	memset(ps, 0, sizeof(*ps));
	while (rem >= NLA_HDRLEN) {
		uint16_t nlen, ntype, type, plen;
		const struct pol *pt;
		const uint8_t *d = p + NLA_HDRLEN;

		memcpy(&nlen, p, 2);
		memcpy(&ntype, p + 2, 2);
		if (nlen < NLA_HDRLEN || nlen > rem)
			break;
		type = ntype & NLA_TYPE_MASK;
		plen = (uint16_t)(nlen - NLA_HDRLEN);
		if (type == 0 || type > DQ_A_MAX)
			goto bad;	/* "Unknown attribute type" */
		pt = &pol_tab[cmd][type];
		if (pt->kind == P_NONE)
			goto bad;	/* "Unsupported attribute" */
		if (ntype & NLA_F_NESTED)
			goto bad;	/* "NLA_F_NESTED not expected" */
		if (ntype & NLA_F_NET_BYTEORDER)
			ps->byteorder = true;
		switch (pt->kind) {
		case P_U32:
			if (plen != 4 || u32_at(d) < pt->min ||
			    u32_at(d) > pt->max)
				goto bad;
			break;
		case P_MASK:
			if (plen != 4 || (u32_at(d) & ~(uint32_t)pt->max))
				goto bad;
			break;
		case P_NODE:
			if (plen != 4 || (int32_t)u32_at(d) < -1)
				goto bad;
			/* -1 .. MAX_NUMNODES - 1: the upper bound is the
			 * kernel config's */
			if ((int32_t)u32_at(d) >= 1)
				ps->node_soft = true;
			break;
		case P_U64:
			if (plen != 8 || u64_at(d) < pt->min ||
			    u64_at(d) > pt->max)
				goto bad;
			break;
		case P_FLAG:
			if (plen)
				goto bad;
			break;
		case P_NAME: {
			int minlen = plen < DQ_NAME_MAX ? plen : DQ_NAME_MAX;
			int l = plen;

			if (!minlen || !memchr(d, 0, (size_t)minlen))
				goto bad;
			if (!d[l - 1])
				l--;
			if (l > DQ_NAME_MAX - 1)
				goto bad;
			break;
		}
		}
		ps->a[type] = d;
		ps->plen[type] = plen;
		rem -= NLA_ALIGN(nlen);
		p += NLA_ALIGN(nlen);
	}
	if (rem > 0)
		goto bad;	/* "bytes leftover after parsing attributes" */
	return;
bad:
	ps->bad = true;
}

/* The queue a request names (NAME first, as the kernel looks it up). */
static void lookup(const struct parsed *ps, struct expect *e)
{
	e->tkind = T_NONE;
	if (!ps->a[DQ_A_NAME] && !ps->a[DQ_A_ID]) {
		fail_with(e, EINVAL);
		return;
	}
	if (ps->a[DQ_A_NAME]) {
		const char *s = (const char *)ps->a[DQ_A_NAME];
		int i = pool_by_name(s);

		snprintf(e->want_name, sizeof(e->want_name), "%s", s);
		if (i >= 0 && pool[i].exists) {
			e->tkind = T_POOL;
			e->tidx = i;
			e->want_id = pool[i].id;
		} else if ((i = extra_by_name(s)) >= 0) {
			e->tkind = T_EXTRA;
			e->tidx = i;
			e->want_id = extras[i].id;
		} else if (in_snap_name(s)) {
			e->tkind = T_UNKNOWN;
		} else {
			e->tkind = T_MISSING;
		}
		return;
	}
	{
		uint32_t id = u32_at(ps->a[DQ_A_ID]);
		int i;

		e->want_id = id;
		for (i = 0; i < NPOOL; i++)
			if (pool[i].exists && pool[i].id == id) {
				e->tkind = T_POOL;
				e->tidx = i;
				snprintf(e->want_name, sizeof(e->want_name),
					 "%s", pool[i].name);
				return;
			}
		for (i = 0; i < MAX_EXTRAS; i++)
			if (extras[i].used && extras[i].id == id) {
				e->tkind = T_EXTRA;
				e->tidx = i;
				snprintf(e->want_name, sizeof(e->want_name),
					 "%s", extras[i].name);
				return;
			}
		if (priv_live && id == priv_id) {
			e->tkind = T_PRIV;
			return;
		}
		/*
		 * Queues are numbered by xa_alloc() below 2^31; what the run
		 * found at its start may still be there; anything else no
		 * process made meanwhile (the stress runs alone).
		 */
		e->tkind = in_snap_id(id) ? T_UNKNOWN : T_MISSING;
	}
}

static void sem_new(const struct parsed *ps, struct expect *e)
{
	const char *name;
	uint32_t slots, size, flags = 0, sub = 0, rdy = 0;
	uint32_t align, size_rounded;
	uint64_t arena;
	int32_t node = -1;
	int i;

	if (!ps->a[DQ_A_NAME] || !ps->a[DQ_A_SLOTS] || !ps->a[DQ_A_SLOT_SIZE]) {
		fail_with(e, EINVAL);
		return;
	}
	name = (const char *)ps->a[DQ_A_NAME];
	slots = u32_at(ps->a[DQ_A_SLOTS]);
	size = u32_at(ps->a[DQ_A_SLOT_SIZE]);
	if (ps->a[DQ_A_MAX_PENDING] && u32_at(ps->a[DQ_A_MAX_PENDING]) > slots)
		fail_with(e, ERANGE);
	if (ps->a[DQ_A_FLAGS])
		flags = u32_at(ps->a[DQ_A_FLAGS]);
	if (!(flags & DQ_SETUP_F_TRACK) &&
	    (ps->a[DQ_A_MAX_INFLIGHT] || ps->a[DQ_A_VISIBILITY_NS]))
		fail_with(e, EINVAL);
	if ((ps->a[DQ_A_UID] && u32_at(ps->a[DQ_A_UID]) == UINT32_MAX) ||
	    (ps->a[DQ_A_GID] && u32_at(ps->a[DQ_A_GID]) == UINT32_MAX))
		fail_with(e, EINVAL);	/* not mapped in the initial ns */
	/* The kernel rounds as dq_setup_slot_align() says. */
	align = flags & DQ_SETUP_F_SLOT_ALIGN8 ? 8 : 64;
	size_rounded = (size + align - 1) & ~(align - 1);
	arena = (uint64_t)slots * size_rounded;
	if (!limit_known)
		allow(e, E2BIG);
	else if (arena > arena_limit)
		fail_with(e, E2BIG);
	if (ps->a[DQ_A_NODE])
		node = (int32_t)u32_at(ps->a[DQ_A_NODE]);
	if (node == 1)
		allow(e, EINVAL);	/* online on a two-node VM */
	else if (node >= 2)
		fail_with(e, EINVAL);
	allow(e, ENOMEM);
	i = pool_by_name(name);
	if ((i >= 0 && pool[i].exists) || extra_by_name(name) >= 0 ||
	    in_snap_name(name))
		fail_with(e, EEXIST);
	/*
	 * The name last: a name the kernel's isalnum() takes is a known
	 * issue only when nothing else is wrong with the request.
	 */
	if (!name_valid_doc(name)) {
		if (name_valid_latin1(name) && e->ok)
			e->latin1 = true;
		fail_with(e, EINVAL);
	}
	if (ps->a[DQ_A_SUBMIT_ENTRIES])
		sub = u32_at(ps->a[DQ_A_SUBMIT_ENTRIES]);
	if (ps->a[DQ_A_READY_ENTRIES])
		rdy = u32_at(ps->a[DQ_A_READY_ENTRIES]);
	/* Keep the kernel's memory small: such a request is not sent. */
	if ((e->ok || e->latin1) &&
	    (arena > SMALL_ARENA || sub > SMALL_RING || rdy > SMALL_RING ||
	     (!rdy && slots > SMALL_RING)))
		e->too_big = true;
	e->check_new = true;
	snprintf(e->want_name, sizeof(e->want_name), "%s", name);
	e->want_slots = slots;
	e->want_slot_size = size_rounded;
	e->want_flags = flags;
	e->tkind = T_NONE;
}

static void sem_del(const struct parsed *ps, struct expect *e)
{
	bool force = ps->a[DQ_A_FORCE] != NULL;

	e->force = force;
	lookup(ps, e);
	switch (e->tkind) {
	case T_NONE:
		break;
	case T_POOL:
		if (!force && pool[e->tidx].busy == B_YES)
			fail_with(e, EBUSY);
		else if (!force && pool[e->tidx].busy == B_MAYBE)
			allow(e, EBUSY);
		break;
	case T_EXTRA:
		break;
	case T_PRIV:
		fail_with(e, EINVAL);
		break;
	case T_MISSING:
		fail_with(e, ENOENT);
		break;
	default:
		allow(e, ENOENT);
		allow(e, EINVAL);
		allow(e, EBUSY);
		e->sure = false;
		break;
	}
}

static void sem_get(const struct parsed *ps, struct expect *e)
{
	lookup(ps, e);
	if (e->tkind == T_MISSING) {
		fail_with(e, ENOENT);
	} else if (e->tkind == T_UNKNOWN) {
		allow(e, ENOENT);
	}
}

static void sem_set(const struct parsed *ps, struct expect *e)
{
	uint32_t slots = 0;
	bool tracked = false;

	lookup(ps, e);
	switch (e->tkind) {
	case T_POOL:
		slots = pool[e->tidx].slots;
		tracked = pool[e->tidx].tracked;
		break;
	case T_PRIV:
		slots = priv_slots;
		break;
	case T_MISSING:
		fail_with(e, ENOENT);
		return;
	case T_NONE:
		return;
	default:
		/* an extra is deleted at once; its shape is not kept */
		allow(e, ENOENT);
		allow(e, ERANGE);
		allow(e, EINVAL);
		e->sure = e->tkind == T_EXTRA;
		return;
	}
	if (ps->a[DQ_A_MAX_PENDING] && u32_at(ps->a[DQ_A_MAX_PENDING]) > slots)
		fail_with(e, ERANGE);
	if (ps->a[DQ_A_MAX_INFLIGHT] && !tracked)
		fail_with(e, EINVAL);
}

static void sem_stats(const struct parsed *ps, struct expect *e)
{
	if (ps->a[DQ_A_NODE] && !ps->a[DQ_A_NAME] && !ps->a[DQ_A_ID]) {
		int32_t node = (int32_t)u32_at(ps->a[DQ_A_NODE]);

		e->tkind = T_NODE;
		e->node = node;
		if (node == 0)
			return;
		if (node == 1)
			allow(e, ENOENT);
		else
			fail_with(e, ENOENT);
		return;
	}
	sem_get(ps, e);
}

/*
 * What the kernel must answer to the request in r->buf (r->dlen bytes
 * sent): netlink_rcv_skb(), genl_rcv_msg() and genl_header_check() of the
 * netlink core, strict attribute validation, then dq_netlink.c.
 */
static void oracle(struct req *r)
{
	struct expect *e = &r->e;
	const struct nlmsghdr *nlh = nlh_of(r);
	const struct genlmsghdr *g;
	struct parsed ps;
	uint32_t len;
	uint16_t flags, f;
	bool admin;

	memset(e, 0, sizeof(*e));
	e->ok = true;
	e->sure = true;
	e->tidx = -1;
	e->kind = X_NONE;
	if (r->dlen < NLMSG_HDRLEN)
		return;
	len = nlh->nlmsg_len;
	if (len < NLMSG_HDRLEN || len > r->dlen)
		return;		/* dropped whole */
	flags = nlh->nlmsg_flags;
	e->ack = flags & NLM_F_ACK;
	if (!(flags & NLM_F_REQUEST)) {
		e->kind = X_ACK0;	/* an ack of 0 if ACK, else nothing */
		return;
	}
	e->kind = X_REPLY;
	if (len < GENL_HDR) {
		fail_with(e, EINVAL);
		return;
	}
	g = (const struct genlmsghdr *)(r->buf + NLMSG_HDRLEN);
	e->cmd = g->cmd;
	if (g->cmd >= DQ_CMD_QUEUE_NEW) {	/* the family's resv_start_op */
		f = flags;
		if ((f & NLM_F_DUMP) == NLM_F_DUMP)
			f &= ~NLM_F_DUMP;
		if (g->reserved ||
		    (f & ~(NLM_F_REQUEST | NLM_F_ACK | NLM_F_ECHO))) {
			fail_with(e, EINVAL);
			return;
		}
	}
	if (g->cmd < DQ_CMD_QUEUE_NEW || g->cmd > DQ_CMD_STATS) {
		fail_with(e, EOPNOTSUPP);
		return;
	}
	e->dump = (flags & NLM_F_DUMP) == NLM_F_DUMP;
	admin = g->cmd == DQ_CMD_QUEUE_NEW || g->cmd == DQ_CMD_QUEUE_DEL ||
		g->cmd == DQ_CMD_QUEUE_SET;
	if (r->unpriv && admin) {
		fail_with(e, EPERM);
		if (e->dump)	/* split ops (6.2+): no such op first */
			allow(e, EOPNOTSUPP);
		return;
	}
	if (e->dump && admin) {
		fail_with(e, EOPNOTSUPP);
		return;
	}
	parse_attrs(r->buf + GENL_HDR, (int)(len - GENL_HDR), g->cmd, &ps);
	if (ps.bad) {
		fail_with(e, EINVAL);
		allow(e, ERANGE);
		return;
	}
	if (ps.node_soft)
		allow(e, ERANGE);	/* MAX_NUMNODES is the config's */
	if (e->dump) {
		/* the attributes are validated, then ignored */
	} else {
		switch (g->cmd) {
		case DQ_CMD_QUEUE_NEW: sem_new(&ps, e); break;
		case DQ_CMD_QUEUE_DEL: sem_del(&ps, e); break;
		case DQ_CMD_QUEUE_GET: sem_get(&ps, e); break;
		case DQ_CMD_QUEUE_SET: sem_set(&ps, e); break;
		case DQ_CMD_STATS: sem_stats(&ps, e); break;
		}
		allow(e, ENOMEM);	/* the reply's skb */
	}
	if (ps.byteorder) {
		/* NLA_F_NET_BYTEORDER is ignored by the 6.1 core; not
		 * promised */
		allow(e, EINVAL);
		allow(e, ERANGE);
		e->sure = false;
	}
	/* success the one answer (ENOMEM aside): a request that must work */
	e->only_ok = e->ok && !e->latin1;
	{
		struct expect t = *e;

		t.errs[ENOMEM / 64] &= ~(1ULL << (ENOMEM % 64));
		if (!no_errs(&t))
			e->only_ok = false;
	}
}

/* ------------------------------------------------------------ generators */

static const char name_chars[] =
	"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._:-";
static const char bad_chars[] =
	" /\\%$#@!*?\x01\x1f\x7f\x80\x9f\xa0\xbf,;'\"\t\n=+~";
static const char latin1_chars[] = "\xc0\xc9\xd6\xd8\xdf\xe9\xf6\xf8\xff";

/* A random name, mostly of valid characters; NUL-terminated in buf. */
static size_t rand_name(char *buf, size_t cap)
{
	size_t n, i;
	unsigned int how = (unsigned int)below(100);

	if (how < 30) {
		snprintf(buf, cap, "%s", pool[below(NPOOL)].name);
		return strlen(buf);
	}
	if (how < 35) {
		snprintf(buf, cap, "%s", ghost);
		return strlen(buf);
	}
	n = chance(10) ? below(cap) : 1 + below(31);
	if (chance(5))
		n = 0;
	if (n >= cap)
		n = cap - 1;
	for (i = 0; i < n; i++) {
		if (how < 75 || !chance(15))
			buf[i] = name_chars[below(sizeof(name_chars) - 1)];
		else if (chance(80))
			buf[i] = bad_chars[below(sizeof(bad_chars) - 1)];
		else
			buf[i] = latin1_chars[below(sizeof(latin1_chars) - 1)];
	}
	buf[n] = 0;
	/* never a name of the pool's shape: the model would not know it */
	if (!strncmp(buf, "nlst.", 5))
		buf[0] = 'x';
	return n;
}

static uint32_t rand_u32_edge(void)
{
	static const uint32_t e[] = {
		0, 1, 2, 3, 7, 63, 64, 65, 511, 0777, 01000, 4095, 4096,
		65535, 65536, 0x100000, 0x100001, 0xffffff, 0x1000000,
		0x1000001, 1000000000, 1000000001, 0x7fffffff, 0x80000000,
		0xfffffffe, 0xffffffff,
	};

	if (chance(25))
		return (uint32_t)rnd();
	return e[below(ARRAY_SIZE(e))];
}

static uint64_t rand_u64_edge(void)
{
	static const uint64_t e[] = {
		0, 1, 999999, 1000000, 1000001, 1000000000, 1000000001,
		DQ_MAX_DELAY_NS, DQ_MAX_DELAY_NS + 1, UINT32_MAX,
		1ULL << 32, INT64_MAX, UINT64_MAX,
	};

	if (chance(25))
		return rnd();
	return e[below(ARRAY_SIZE(e))];
}

/* Random nested garbage of at most cap bytes at p; returns its length. */
static size_t rand_nest(uint8_t *p, size_t cap, int depth)
{
	size_t off = 0;
	int k = (int)below(5);

	while (k-- > 0 && off + NLA_HDRLEN <= cap) {
		struct nlattr *a = (struct nlattr *)(p + off);
		size_t room = cap - off - NLA_HDRLEN, plen;

		a->nla_type = (uint16_t)below(DQ_STATS_MAX + 4);
		if (depth < 4 && chance(30)) {
			a->nla_type |= NLA_F_NESTED;
			plen = rand_nest(p + off + NLA_HDRLEN, room, depth + 1);
		} else {
			plen = chance(50) ? 8 : below(13);
			if (plen > room)
				plen = room;
			for (size_t i = 0; i < plen; i++)
				p[off + NLA_HDRLEN + i] = (uint8_t)rnd();
		}
		a->nla_len = (uint16_t)(NLA_HDRLEN + plen);
		if (chance(3))
			a->nla_len = (uint16_t)rnd();	/* broken inside */
		off += NLA_HDRLEN + NLA_ALIGN(plen);
		if (off > cap)
			off = cap;
	}
	return off;
}

/* One random attribute: any type, any payload. */
static void soup_attr(struct req *r)
{
	uint8_t p[128];
	uint16_t t;
	size_t plen, i;
	unsigned int how = (unsigned int)below(100);

	if (chance(85))
		t = (uint16_t)below(DQ_A_MAX + 6);
	else
		t = (uint16_t)below(NLA_TYPE_MASK + 1);
	if (how < 30) {
		uint32_t v = rand_u32_edge();

		if (t == DQ_A_SLOTS && chance(80))
			v = 1 + (uint32_t)below(64);
		if (t == DQ_A_SLOT_SIZE && chance(80))
			v = 64 + (uint32_t)below(4096);
		memcpy(p, &v, 4);
		plen = 4;
	} else if (how < 42) {
		uint64_t v = rand_u64_edge();

		memcpy(p, &v, 8);
		plen = 8;
	} else if (how < 62) {
		char s[48];

		plen = rand_name(s, sizeof(s));
		memcpy(p, s, plen);
		if (chance(80))
			p[plen++] = 0;
		else if (chance(50))	/* NUL in the middle, bytes after */
			for (i = 0; i < 1 + below(8); i++)
				p[plen++] = chance(30) ? 0 : (uint8_t)rnd();
	} else if (how < 72) {
		if (chance(50))
			t = DQ_A_STATS;
		t |= NLA_F_NESTED;
		plen = rand_nest(p, sizeof(p) - 48, 1);
	} else if (how < 80) {
		plen = 0;
	} else {
		plen = below(81);
		for (i = 0; i < plen; i++)
			p[i] = (uint8_t)rnd();
	}
	if (chance(5))
		t |= NLA_F_NESTED;
	if (chance(5))
		t |= NLA_F_NET_BYTEORDER;
	b_attr(r, t, p, plen);
}

static uint16_t rand_flags(void)
{
	static const uint16_t f[] = {
		NLM_F_REQUEST | NLM_F_ACK,
		NLM_F_REQUEST,
		NLM_F_REQUEST | NLM_F_ACK | NLM_F_ECHO,
		NLM_F_REQUEST | NLM_F_DUMP,
		NLM_F_REQUEST | NLM_F_ACK | NLM_F_DUMP,
		NLM_F_REQUEST | NLM_F_ROOT,
		NLM_F_REQUEST | NLM_F_MATCH | NLM_F_ACK,
		NLM_F_REQUEST | NLM_F_ATOMIC | NLM_F_ACK,
		NLM_F_REQUEST | NLM_F_MULTI | NLM_F_ACK,
		NLM_F_REQUEST | NLM_F_ACK | 0x10,	/* DUMP_INTR */
		NLM_F_REQUEST | NLM_F_ACK | 0x20,	/* DUMP_FILTERED */
		NLM_F_REQUEST | NLM_F_ACK | NLM_F_EXCL | NLM_F_CREATE,
		NLM_F_REQUEST | NLM_F_ACK | NLM_F_APPEND,
		NLM_F_ACK,
		0,
	};

	if (chance(5))
		return (uint16_t)rnd() | (chance(70) ? NLM_F_REQUEST : 0);
	if (chance(50))
		return NLM_F_REQUEST | NLM_F_ACK;
	return f[below(ARRAY_SIZE(f))];
}

static int pick_pool(bool want_exists, int pct)
{
	int i, start = (int)below(NPOOL);

	if (!chance(pct))
		return start;
	for (i = 0; i < NPOOL; i++) {
		int k = (start + i) % NPOOL;

		if (pool[k].exists == want_exists)
			return k;
	}
	return start;
}

/* Name the queue: by NAME mostly, by ID when it has one. */
static void put_ref(struct req *r, int i)
{
	if (pool[i].exists && chance(30))
		put_u32(r, DQ_A_ID, pool[i].id);
	else
		put_str(r, DQ_A_NAME, pool[i].name);
}

static uint32_t missing_id(void)
{
	if (ndead && chance(50)) {
		uint32_t id = dead_ids[below(ndead < ARRAY_SIZE(dead_ids) ?
					     ndead : ARRAY_SIZE(dead_ids))];

		if (id)
			return id;
	}
	return 0x80000000U + (uint32_t)below(0x7fffffff);
}

static void gen_new(struct req *r, uint16_t fl)
{
	int i = pick_pool(false, 75);
	uint32_t slots, size, flags = 0;

	b_start(r, DQ_CMD_QUEUE_NEW, fl);
	if (chance(4)) {
		char s[40];

		/* a name the kernel must refuse */
		snprintf(s, sizeof(s), "nlst bad%c%u",
			 bad_chars[below(sizeof(bad_chars) - 1)],
			 (unsigned int)below(100));
		put_str(r, DQ_A_NAME, s);
	} else {
		put_str(r, DQ_A_NAME, pool[i].name);
	}
	slots = chance(80) ? 1 + (uint32_t)below(64) : 1 + (uint32_t)below(1024);
	size = DQ_MIN_SLOT_SIZE + (uint32_t)below(chance(80) ? 512 : 4096);
	if (chance(4)) {	/* over max_arena_bytes */
		slots = DQ_MAX_SLOTS;
		size = DQ_MAX_SLOT_SIZE;
		if (limit_known && arena_limit / 4096 < DQ_MAX_SLOTS && chance(50)) {
			slots = (uint32_t)(arena_limit / 4096) + 1;
			size = 4096;
		}
	}
	put_u32(r, DQ_A_SLOTS, slots);
	put_u32(r, DQ_A_SLOT_SIZE, size);
	if (chance(30))
		put_u32(r, DQ_A_SUBMIT_ENTRIES, (uint32_t)below(600));
	if (chance(30))
		put_u32(r, DQ_A_READY_ENTRIES, (uint32_t)below(600));
	if (chance(20))
		put_u32(r, DQ_A_NODE, chance(50) ? (uint32_t)-1 : 0);
	if (chance(20)) {
		static const uint32_t gr[] = { 0, 1, 1000, 50000, 1000000,
					       DQ_MAX_GRANULARITY_NS };

		put_u32(r, DQ_A_GRANULARITY_NS, gr[below(ARRAY_SIZE(gr))]);
	}
	if (chance(20))
		put_u32(r, DQ_A_MAX_PENDING,
			(uint32_t)below(slots + (chance(10) ? 3 : 1)));
	if (chance(20))
		put_u64(r, DQ_A_RATE, chance(20) ? 1000000000 : below(100000));
	if (chance(20))
		put_u32(r, DQ_A_BURST, 1 + (uint32_t)below(1000));
	if (chance(20))
		put_u32(r, DQ_A_HIGH_WM, (uint32_t)below(slots + 1));
	if (chance(15))
		put_u32(r, DQ_A_UID, chance(50) ? 0 : 65534);
	if (chance(15))
		put_u32(r, DQ_A_GID, chance(50) ? 0 : 65534);
	if (chance(20))
		put_u32(r, DQ_A_MODE, (uint32_t)below(01000));
	if (chance(35)) {
		flags = (uint32_t)below(DQ_SETUP_F_ALL + 1);
		put_u32(r, DQ_A_FLAGS, flags);
	}
	if ((flags & DQ_SETUP_F_TRACK) ? chance(40) : chance(3))
		put_u32(r, DQ_A_MAX_INFLIGHT, 1 + (uint32_t)below(DQ_MAX_SLOTS));
	if ((flags & DQ_SETUP_F_TRACK) ? chance(30) : chance(3))
		put_u64(r, DQ_A_VISIBILITY_NS,
			DQ_MIN_VISIBILITY_NS + below(1000000000000ULL));
}

static void gen_valid(struct req *r)
{
	unsigned int c = (unsigned int)below(100);
	uint16_t fl = NLM_F_REQUEST | (chance(90) ? NLM_F_ACK : 0) |
		      (chance(5) ? NLM_F_ECHO : 0);
	int i;

	if (c < 24) {
		gen_new(r, fl);
	} else if (c < 38) {		/* QUEUE_DEL */
		b_start(r, DQ_CMD_QUEUE_DEL, fl);
		if (chance(5) && priv_live) {
			put_u32(r, DQ_A_ID, priv_id);
		} else if (chance(5)) {
			put_u32(r, DQ_A_ID, missing_id());
		} else {
			i = pick_pool(true, 80);
			put_ref(r, i);
		}
		if (chance(60))
			put_flag(r, DQ_A_FORCE);
	} else if (c < 54) {		/* QUEUE_GET */
		b_start(r, DQ_CMD_QUEUE_GET, fl);
		if (chance(8) && priv_live)
			put_u32(r, DQ_A_ID, priv_id);
		else if (chance(8))
			put_u32(r, DQ_A_ID, missing_id());
		else if (chance(5))
			put_str(r, DQ_A_NAME, ghost);
		else
			put_ref(r, pick_pool(true, 70));
	} else if (c < 70) {		/* QUEUE_SET */
		bool tracked;

		b_start(r, DQ_CMD_QUEUE_SET, fl);
		if (chance(8) && priv_live) {
			put_u32(r, DQ_A_ID, priv_id);
			tracked = false;
			i = -1;
		} else {
			i = pick_pool(true, 85);
			put_ref(r, i);
			tracked = pool[i].tracked;
		}
		if (chance(40)) {
			uint32_t s = i >= 0 ? pool[i].slots : priv_slots;

			put_u32(r, DQ_A_MAX_PENDING,
				(uint32_t)below(s + (chance(10) ? 4 : 1)));
		}
		if (chance(40))
			put_u64(r, DQ_A_RATE, chance(30) ? 0 : below(1000000));
		if (chance(40))
			put_u32(r, DQ_A_BURST, 1 + (uint32_t)below(1000));
		if (chance(30))
			put_u32(r, DQ_A_HIGH_WM, (uint32_t)below(100));
		if (tracked ? chance(50) : chance(5))
			put_u32(r, DQ_A_MAX_INFLIGHT,
				chance(20) ? DQ_MAX_SLOTS :
				1 + (uint32_t)below(100));
	} else if (c < 88) {		/* STATS */
		b_start(r, DQ_CMD_STATS, fl);
		if (chance(15)) {
			put_u32(r, DQ_A_NODE, chance(70) ? 0 : (uint32_t)-1);
		} else if (chance(8) && priv_live) {
			put_u32(r, DQ_A_ID, priv_id);
		} else if (chance(5)) {
			put_u32(r, DQ_A_ID, missing_id());
		} else {
			put_ref(r, pick_pool(true, 70));
			if (chance(10))
				put_u32(r, DQ_A_NODE, 0);	/* NAME wins */
		}
	} else {			/* dumps */
		uint8_t cmd = chance(50) ? DQ_CMD_QUEUE_GET : DQ_CMD_STATS;

		b_start(r, cmd, NLM_F_REQUEST | NLM_F_DUMP |
			(chance(20) ? NLM_F_ACK : 0));
		if (chance(10))
			put_str(r, DQ_A_NAME, pool[below(NPOOL)].name);
	}
}

static void gen_soup(struct req *r)
{
	static const uint8_t cmds[] = {
		DQ_CMD_UNSPEC, DQ_CMD_QUEUE_NEW, DQ_CMD_QUEUE_DEL,
		DQ_CMD_QUEUE_GET, DQ_CMD_QUEUE_SET, DQ_CMD_STATS, DQ_CMD_EVENT,
	};
	uint8_t cmd;
	int n, k;

	if (chance(85))
		cmd = cmds[below(ARRAY_SIZE(cmds))];
	else
		cmd = (uint8_t)rnd();
	b_start(r, cmd, chance(70) ? NLM_F_REQUEST | NLM_F_ACK : rand_flags());
	n = (int)below(9);
	for (k = 0; k < n; k++)
		soup_attr(r);
}

/* The attributes of the request, for the mutations: offsets, <= 64. */
static int attr_offsets(struct req *r, uint32_t *offs, int cap)
{
	uint32_t len = nlh_of(r)->nlmsg_len, off = GENL_HDR;
	int n = 0;

	while (off + NLA_HDRLEN <= len && n < cap) {
		uint16_t nlen;

		memcpy(&nlen, r->buf + off, 2);
		if (nlen < NLA_HDRLEN || off + nlen > len)
			break;
		offs[n++] = off;
		off += NLA_ALIGN(nlen);
	}
	return n;
}

static void mutate_attrs(struct req *r)
{
	struct nlmsghdr *nlh = nlh_of(r);
	uint32_t offs[64], len = nlh->nlmsg_len, off;
	int n = attr_offsets(r, offs, 64), m = (int)below(8);
	uint16_t v16;

	if (!n && m < 6)
		m = 6;
	off = n ? offs[below(n)] : 0;
	switch (m) {
	case 0:				/* flip bits in an attribute */
		if (len > GENL_HDR) {
			int k = 1 + (int)below(3);

			while (k--)
				r->buf[GENL_HDR + below(len - GENL_HDR)] ^=
					(uint8_t)(1U << below(8));
		}
		break;
	case 1:				/* its nla_len */
		memcpy(&v16, r->buf + off, 2);
		v16 = chance(50) ? (uint16_t)(v16 + below(17) - 8) :
				   (uint16_t)below(chance(50) ? 96 : 65536);
		memcpy(r->buf + off, &v16, 2);
		break;
	case 2:				/* its type or flag bits */
		memcpy(&v16, r->buf + off + 2, 2);
		if (chance(40))
			v16 ^= NLA_F_NESTED;
		else if (chance(40))
			v16 ^= NLA_F_NET_BYTEORDER;
		else
			v16 = (uint16_t)((v16 & ~NLA_TYPE_MASK) |
					 below(DQ_A_MAX + 6));
		memcpy(r->buf + off + 2, &v16, 2);
		break;
	case 3: {			/* duplicate it (last one wins) */
		uint16_t nlen;

		memcpy(&nlen, r->buf + off, 2);
		if (len + NLA_ALIGN(nlen) <= REQ_MAX) {
			memcpy(r->buf + len, r->buf + off, NLA_ALIGN(nlen));
			nlh->nlmsg_len = len + NLA_ALIGN(nlen);
		}
		break;
	}
	case 4: {			/* remove it */
		uint16_t nlen, al;

		memcpy(&nlen, r->buf + off, 2);
		al = (uint16_t)NLA_ALIGN(nlen);
		if (off + al > len)
			al = (uint16_t)(len - off);
		memmove(r->buf + off, r->buf + off + al, len - off - al);
		nlh->nlmsg_len = len - al;
		break;
	}
	case 5: {			/* mangle the name */
		int k;

		for (k = 0; k < n; k++) {
			uint16_t t, nlen;

			memcpy(&nlen, r->buf + offs[k], 2);
			memcpy(&t, r->buf + offs[k] + 2, 2);
			if ((t & NLA_TYPE_MASK) != DQ_A_NAME || nlen <= NLA_HDRLEN)
				continue;
			if (chance(50))	/* drop the NUL */
				r->buf[offs[k] + nlen - 1] = 'z';
			else
				r->buf[offs[k] + NLA_HDRLEN +
				       below(nlen - NLA_HDRLEN)] =
					chance(50) ? bad_chars[below(sizeof(bad_chars) - 1)] :
						     latin1_chars[below(sizeof(latin1_chars) - 1)];
			break;
		}
		break;
	}
	case 6:				/* one more, of any kind */
		r->dlen = nlh->nlmsg_len;
		soup_attr(r);
		break;
	default: {			/* garbage after the attributes */
		uint32_t k = 1 + (uint32_t)below(80), i;

		if (len + k <= REQ_MAX) {
			for (i = 0; i < k; i++)
				r->buf[len + i] = (uint8_t)rnd();
			nlh->nlmsg_len = len + k;
		}
		break;
	}
	}
	r->dlen = nlh->nlmsg_len;
}

static void mutate_header(struct req *r)
{
	struct nlmsghdr *nlh = nlh_of(r);
	struct genlmsghdr *g = (struct genlmsghdr *)(r->buf + NLMSG_HDRLEN);
	uint32_t len = nlh->nlmsg_len;

	switch (below(10)) {
	case 0:
	case 1:
		nlh->nlmsg_flags = rand_flags();
		break;
	case 2:
		g->reserved = (uint16_t)(chance(50) ? 1 : rnd());
		break;
	case 3:
		g->version = (uint8_t)rnd();	/* ignored */
		break;
	case 4:
		g->cmd = chance(50) ? (uint8_t)below(8) : (uint8_t)rnd();
		break;
	case 5:				/* cut inside the attributes */
		if (len > GENL_HDR)
			nlh->nlmsg_len = GENL_HDR + (uint32_t)below(len - GENL_HDR);
		r->dlen = len;		/* the rest stays in the datagram */
		break;
	case 6:				/* inside the headers */
		nlh->nlmsg_len = (uint32_t)below(GENL_HDR);
		break;
	case 7:				/* more than was sent */
		nlh->nlmsg_len = len + 1 + (uint32_t)below(chance(50) ? 16 : 5000);
		break;
	case 8:				/* a datagram shorter than a header */
		r->dlen = 1 + below(NLMSG_HDRLEN - 1);	/* 0: ENODATA */
		break;
	default: {			/* bytes after the message */
		uint32_t k = 1 + (uint32_t)below(15), i;

		for (i = 0; i < k; i++)
			r->buf[len + i] = (uint8_t)rnd();
		r->dlen = len + k;
		break;
	}
	}
}

/*
 * netlink_rcv_skb() goes on with what follows NLMSG_ALIGN(nlmsg_len) in
 * the datagram if 16 bytes or more are left: keep less, so a request is
 * one message (a second one would be garbage addressed to anyone).
 */
static void one_message(struct req *r)
{
	uint32_t len = nlh_of(r)->nlmsg_len;

	if (r->dlen < NLMSG_HDRLEN || len < NLMSG_HDRLEN || len > r->dlen)
		return;		/* dropped whole */
	if (r->dlen > NLMSG_ALIGN(len) + NLMSG_HDRLEN - 1)
		r->dlen = NLMSG_ALIGN(len) + NLMSG_HDRLEN - 1;
	if (r->dlen < len)
		r->dlen = len;
}

static void gen_request(struct req *r)
{
	unsigned int x = (unsigned int)below(100);
	int tries;

	for (tries = 0; tries < 20; tries++) {
		if (x < 45) {
			r->mode = M_VALID;
			gen_valid(r);
		} else if (x < 72) {
			int k = 1 + (int)below(3);

			r->mode = M_MUT;
			gen_valid(r);
			while (k--)
				mutate_attrs(r);
			if (chance(10))
				mutate_header(r);
		} else if (x < 90) {
			r->mode = M_SOUP;
			gen_soup(r);
			if (chance(10))
				mutate_header(r);
		} else {
			r->mode = M_HDR;
			gen_valid(r);
			mutate_header(r);
		}
		one_message(r);
		r->unpriv = can_unpriv && chance(8);
		oracle(r);
		if (!r->e.too_big)
			return;
		/* it could create a large queue: another one */
	}
	/* give up: a plain GET */
	r->mode = M_VALID;
	b_start(r, DQ_CMD_QUEUE_GET, NLM_F_REQUEST | NLM_F_ACK);
	put_str(r, DQ_A_NAME, ghost);
	r->unpriv = false;
	oracle(r);
}

/* ------------------------------------------------------------ replies */

struct item {
	uint8_t cmd;
	bool multi, has_id, has_stats, has_node;
	uint32_t id, slots, slot_size, flags;
	int32_t node;
	char name[DQ_NAME_MAX];
	bool has_name;
};

struct resp {
	int nerr;		/* NLMSG_ERROR messages, acks included */
	int err;		/* the first one's error */
	int nafter;		/* messages after the terminal one */
	int ndone, done_err;
	int ndata;
	bool terminal;
	char ext[160];		/* extack message of the error */
	char bad[160];		/* the first malformed reply */
	int nitems;
	struct item items[MAX_ITEMS];
};

static int stray;
static char stray_why[160];

static void parse_extack(const struct nlmsghdr *nlh, size_t off, char *buf,
			 size_t cap)
{
	const struct nlattr *a;

	if (!(nlh->nlmsg_flags & NLM_F_ACK_TLVS) ||
	    mnl_nlmsg_get_payload_len(nlh) < off)
		return;
	mnl_attr_for_each(a, nlh, off) {
		if (mnl_attr_get_type(a) == NLMSGERR_ATTR_MSG) {
			snprintf(buf, cap, "%.*s",
				 (int)mnl_attr_get_payload_len(a),
				 (const char *)mnl_attr_get_payload(a));
			buf[strcspn(buf, "\n")] = 0;
		}
	}
}

static void item_of(struct resp *rs, const struct nlmsghdr *nlh)
{
	const struct genlmsghdr *g = mnl_nlmsg_get_payload(nlh);
	const uint8_t *p = (const uint8_t *)g + GENL_HDRLEN;
	int rem = (int)nlh->nlmsg_len - GENL_HDR;
	struct item it = { .cmd = g->cmd, .multi = nlh->nlmsg_flags & NLM_F_MULTI };

	while (rem >= NLA_HDRLEN) {
		const struct nlattr *a = (const struct nlattr *)p;
		uint16_t t = a->nla_type & NLA_TYPE_MASK, pl;
		const uint8_t *d = p + NLA_HDRLEN;

		if (a->nla_len < NLA_HDRLEN || a->nla_len > rem)
			break;
		pl = (uint16_t)(a->nla_len - NLA_HDRLEN);
		switch (t) {
		case DQ_A_ID:
			it.has_id = pl == 4;
			it.id = it.has_id ? u32_at(d) : 0;
			break;
		case DQ_A_NAME:
			if (pl >= 1 && pl <= DQ_NAME_MAX && !d[pl - 1]) {
				it.has_name = true;
				memcpy(it.name, d, pl);
			} else if (!rs->bad[0]) {
				snprintf(rs->bad, sizeof(rs->bad),
					 "reply NAME of %u bytes without its NUL", pl);
			}
			break;
		case DQ_A_SLOTS:
			it.slots = pl == 4 ? u32_at(d) : 0;
			break;
		case DQ_A_SLOT_SIZE:
			it.slot_size = pl == 4 ? u32_at(d) : 0;
			break;
		case DQ_A_FLAGS:
			it.flags = pl == 4 ? u32_at(d) : 0;
			break;
		case DQ_A_NODE:
			it.has_node = pl == 4;
			it.node = pl == 4 ? (int32_t)u32_at(d) : 0;
			break;
		case DQ_A_STATS:
			it.has_stats = true;
			break;
		}
		rem -= NLA_ALIGN(a->nla_len);
		p += NLA_ALIGN(a->nla_len);
	}
	if (rem > 0 && !rs->bad[0])
		snprintf(rs->bad, sizeof(rs->bad),
			 "reply cmd %u: %d bytes after its attributes", g->cmd, rem);
	if (rs->nitems < MAX_ITEMS)
		rs->items[rs->nitems++] = it;
}

static void absorb(struct resp *rs, const struct nlmsghdr *nlh)
{
	if (rs->terminal) {
		rs->nafter++;
		if (nlh->nlmsg_type == NLMSG_ERROR &&
		    nlh->nlmsg_len >= NLMSG_HDRLEN + sizeof(int)) {
			const struct nlmsgerr *e = mnl_nlmsg_get_payload(nlh);

			if (e->error && !rs->bad[0])
				snprintf(rs->bad, sizeof(rs->bad),
					 "error %d after the end", e->error);
		}
		return;
	}
	switch (nlh->nlmsg_type) {
	case NLMSG_ERROR: {
		const struct nlmsgerr *e = mnl_nlmsg_get_payload(nlh);
		size_t off = sizeof(*e);

		if (mnl_nlmsg_get_payload_len(nlh) < sizeof(*e)) {
			snprintf(rs->bad, sizeof(rs->bad), "short NLMSG_ERROR");
			rs->terminal = true;
			return;
		}
		rs->nerr++;
		rs->err = e->error;
		rs->terminal = true;
		if (!(nlh->nlmsg_flags & NLM_F_CAPPED))
			off += e->msg.nlmsg_len - sizeof(struct nlmsghdr);
		parse_extack(nlh, off, rs->ext, sizeof(rs->ext));
		return;
	}
	case NLMSG_DONE:
		rs->ndone++;
		if (mnl_nlmsg_get_payload_len(nlh) >= sizeof(int))
			memcpy(&rs->done_err, mnl_nlmsg_get_payload(nlh),
			       sizeof(int));
		parse_extack(nlh, sizeof(int), rs->ext, sizeof(rs->ext));
		rs->terminal = true;
		return;
	default:
		if (nlh->nlmsg_type != family) {
			if (!rs->bad[0])
				snprintf(rs->bad, sizeof(rs->bad),
					 "reply of type %u", nlh->nlmsg_type);
			return;
		}
		rs->ndata++;
		if (nlh->nlmsg_len < GENL_HDR) {
			if (!rs->bad[0])
				snprintf(rs->bad, sizeof(rs->bad),
					 "reply of %u bytes", nlh->nlmsg_len);
			return;
		}
		item_of(rs, nlh);
	}
}

/*
 * Read until the answer to seq wseq is complete: its NLMSG_ERROR (error
 * or ack) or NLMSG_DONE.  Messages of seq aseq go to *a, of bseq to *b.
 * 0, or -errno (-EAGAIN: the receive timeout).
 */
static int rx_wait(uint32_t wseq, struct resp *a, uint32_t aseq,
		   struct resp *b, uint32_t bseq)
{
	struct resp *w = wseq == aseq ? a : b;

	while (!w->terminal) {
		ssize_t n = recv(mnl_socket_get_fd(nls), rxbuf, sizeof(rxbuf), 0);
		const struct nlmsghdr *nlh = (const struct nlmsghdr *)rxbuf;
		int len;

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		len = (int)n;
		while (mnl_nlmsg_ok(nlh, len)) {
			if (a && nlh->nlmsg_seq == aseq)
				absorb(a, nlh);
			else if (b && nlh->nlmsg_seq == bseq)
				absorb(b, nlh);
			else if (!stray++)
				snprintf(stray_why, sizeof(stray_why),
					 "type %u flags %#x seq %u (waiting for %u)",
					 nlh->nlmsg_type, nlh->nlmsg_flags,
					 nlh->nlmsg_seq, wseq);
			nlh = mnl_nlmsg_next(nlh, &len);
		}
		if (len > 0 && !stray++)
			snprintf(stray_why, sizeof(stray_why),
				 "%d bytes of a broken message", len);
	}
	return 0;
}

static int xsend(struct req *r)
{
	ssize_t n;
	int ret = 0;

	r->seq = ++next_seq;
	if (r->dlen >= 12)
		memcpy(r->buf + 8, &r->seq, 4);
	if (r->unpriv && net_admin(false))
		r->unpriv = false;	/* cannot: a privileged one then */
	n = send(mnl_socket_get_fd(nls), r->buf, r->dlen, 0);
	if (n < 0)
		ret = -errno;
	else if ((size_t)n != r->dlen)
		ret = -EIO;
	if (r->unpriv && net_admin(true)) {
		diag("cannot raise CAP_NET_ADMIN again: %s", strerror(errno));
		exit(1);
	}
	return ret;
}

static void hexdump(const struct req *r)
{
	size_t i, n = r->dlen < 160 ? r->dlen : 160;
	char line[3 * 32 + 1];

	for (i = 0; i < n; i += 32) {
		size_t j, l = 0;

		for (j = i; j < n && j < i + 32; j++)
			l += (size_t)snprintf(line + l, sizeof(line) - l, "%02x ",
					      r->buf[j]);
		printf("#   %04zx: %s\n", i, line);
	}
}

static const char *cmd_name(unsigned int c)
{
	static const char *const n[] = {
		"UNSPEC", "QUEUE_NEW", "QUEUE_DEL", "QUEUE_GET", "QUEUE_SET",
		"STATS", "EVENT",
	};
	static char buf[16];

	if (c < ARRAY_SIZE(n))
		return n[c];
	snprintf(buf, sizeof(buf), "cmd %u", c);
	return buf;
}

static void describe(const struct req *r, char *buf, size_t cap)
{
	const struct nlmsghdr *nlh = (const struct nlmsghdr *)r->buf;
	const struct genlmsghdr *g =
		(const struct genlmsghdr *)(r->buf + NLMSG_HDRLEN);

	if (r->dlen < GENL_HDR)
		snprintf(buf, cap, "%s #%u: %zu bytes", mode_name[r->mode],
			 r->seq, r->dlen);
	else
		snprintf(buf, cap,
			 "%s #%u: %s flags %#x len %u/%zu ver %u resv %u%s",
			 mode_name[r->mode], r->seq, cmd_name(g->cmd),
			 nlh->nlmsg_flags, nlh->nlmsg_len, r->dlen, g->version,
			 g->reserved, r->unpriv ? " unprivileged" : "");
}

static void allowed_str(const struct expect *e, char *buf, size_t cap)
{
	size_t l = 0;
	int i;

	buf[0] = 0;
	appendf(buf, cap, &l, "%s", e->ok ? "ok" : "");
	for (i = 1; i < 192; i++)
		if (allowed(e, i))
			appendf(buf, cap, &l, "%s%s", l ? " " : "", errname(i));
}

static void apply_success(const struct req *r, const struct resp *rs);
static void handles_queue_gone(uint32_t qid);
static int resync(void);

/*
 * Judge the answer: 1 check.  Returns the outcome: 0 success, > 0 errno,
 * -1 no reply expected and none came (or an ack of 0), -2 failure.
 */
static int judge(struct req *r, struct resp *rs)
{
	const struct expect *e = &r->e;
	char why[320] = "", d[200], al[160];
	int outcome = -2;

	if (e->kind == X_NONE || e->kind == X_ACK0) {
		bool want_ack = e->kind == X_ACK0 && e->ack;

		if (rs->ndata || rs->ndone || rs->nerr != (want_ack ? 1 : 0) ||
		    (want_ack && rs->err))
			snprintf(why, sizeof(why),
				 "expected %s; got %d data, %d errors (first %d), %d done",
				 want_ack ? "an ack only" : "no answer",
				 rs->ndata, rs->nerr, rs->err, rs->ndone);
		else
			outcome = -1;
		if (outcome == -1) {
			if (want_ack)
				C.ack0++;
			else
				C.none++;
		}
		goto out;
	}
	if (rs->bad[0]) {
		snprintf(why, sizeof(why), "malformed answer: %s", rs->bad);
		goto out;
	}
	if (rs->nerr && rs->err) {
		int err = -rs->err;

		if (err <= 0 || err >= 4096) {
			snprintf(why, sizeof(why), "error field %d", rs->err);
			goto out;
		}
		outcome = err;
		if (rs->ndata) {
			snprintf(why, sizeof(why), "%d data messages, then %s",
				 rs->ndata, errname(err));
			goto out;
		}
		if (!allowed(e, err)) {
			allowed_str(e, al, sizeof(al));
			snprintf(why, sizeof(why), "%s (\"%.100s\"), allowed: %.150s",
				 errname(err), rs->ext, al);
		}
		goto out;
	}
	/* success */
	outcome = 0;
	if (!e->ok) {
		allowed_str(e, al, sizeof(al));
		snprintf(why, sizeof(why), "succeeded, allowed: %s", al);
		goto out;
	}
	if (e->dump) {
		int i;

		if (rs->ndone != 1 || rs->done_err) {
			snprintf(why, sizeof(why), "dump ended with %d DONE, error %d",
				 rs->ndone, rs->done_err);
			goto out;
		}
		if (rs->nafter > (e->ack ? 1 : 0)) {
			snprintf(why, sizeof(why), "%d messages after DONE",
				 rs->nafter);
			goto out;
		}
		for (i = 0; i < rs->nitems; i++)
			if (!rs->items[i].multi || rs->items[i].cmd != e->cmd ||
			    !rs->items[i].has_id) {
				snprintf(why, sizeof(why),
					 "dump message %d: cmd %u multi %d id %d", i,
					 rs->items[i].cmd, rs->items[i].multi,
					 rs->items[i].has_id);
				goto out;
			}
		if (rs->nitems < MAX_ITEMS) {
			for (i = 0; i < NPOOL; i++) {
				int k, found = -1;

				for (k = 0; k < rs->nitems; k++)
					if (rs->items[k].has_name &&
					    !strcmp(rs->items[k].name, pool[i].name))
						found = k;
				if (e->sure && pool[i].exists &&
				    (found < 0 || rs->items[found].id != pool[i].id))
					snprintf(why, sizeof(why),
						 "dump: %.31s (id %u) missing", pool[i].name,
						 pool[i].id);
				if (e->sure && !pool[i].exists && found >= 0)
					snprintf(why, sizeof(why),
						 "dump: deleted %.31s listed (id %u)",
						 pool[i].name, rs->items[found].id);
			}
			if (e->cmd == DQ_CMD_STATS && priv_live) {
				int k;

				for (k = 0; k < rs->nitems; k++)
					if (rs->items[k].id == priv_id)
						break;
				if (k == rs->nitems)
					snprintf(why, sizeof(why),
						 "stats dump: private queue %u missing",
						 priv_id);
			}
		}
		goto out;
	}
	if (e->ack && (rs->nerr != 1 || rs->err)) {
		snprintf(why, sizeof(why), "no ack");
		goto out;
	}
	if (!e->ack && rs->nerr) {
		snprintf(why, sizeof(why), "an ack nobody asked for");
		goto out;
	}
	if (e->cmd == DQ_CMD_QUEUE_DEL) {
		if (rs->ndata)
			snprintf(why, sizeof(why), "QUEUE_DEL answered %d messages",
				 rs->ndata);
		goto out;
	}
	if (rs->ndata != 1 || rs->nitems != 1) {
		snprintf(why, sizeof(why), "%d replies, expected 1", rs->ndata);
		goto out;
	}
	{
		const struct item *it = &rs->items[0];

		if (it->cmd != e->cmd) {
			snprintf(why, sizeof(why), "reply cmd %u", it->cmd);
		} else if (e->tkind == T_NODE) {
			if (!it->has_node || it->node != e->node || !it->has_stats)
				snprintf(why, sizeof(why),
					 "node stats reply: node %d (%d), stats %d",
					 it->node, it->has_node, it->has_stats);
		} else if (!it->has_id) {
			snprintf(why, sizeof(why), "reply without ID");
		} else if (e->cmd == DQ_CMD_STATS && !it->has_stats) {
			snprintf(why, sizeof(why), "STATS reply without DQ_A_STATS");
		} else if (e->check_new &&
			   (!it->has_name || strcmp(it->name, e->want_name) ||
			    it->slots != e->want_slots ||
			    it->slot_size != e->want_slot_size ||
			    it->flags != e->want_flags)) {
			snprintf(why, sizeof(why),
				 "created %s slots %u size %u flags %u, asked %s %u %u %u",
				 it->name, it->slots, it->slot_size, it->flags,
				 e->want_name, e->want_slots, e->want_slot_size,
				 e->want_flags);
		} else if (e->sure && (e->tkind == T_POOL || e->tkind == T_EXTRA ||
				       e->tkind == T_PRIV) &&
			   it->id != e->want_id) {
			snprintf(why, sizeof(why), "reply id %u, expected %u",
				 it->id, e->want_id);
		} else if (e->sure && (e->tkind == T_POOL || e->tkind == T_EXTRA) &&
			   (!it->has_name || strcmp(it->name, e->want_name))) {
			snprintf(why, sizeof(why), "reply name '%s', expected '%s'",
				 it->name, e->want_name);
		}
	}
out:
	if (why[0]) {
		describe(r, d, sizeof(d));
		check(false, "%s: %s", d, why);
		if (C.fail <= 5)
			hexdump(r);
		return -2;
	}
	check(true, "%s", "");
	return outcome;
}

/* ------------------------------------------------------------ exchange */

static struct resp resp_main, resp_ping;

static void count_outcome(int outcome)
{
	if (outcome >= 0 && outcome < 135)
		C.err[outcome]++;
	else if (outcome >= 135)
		C.err[135]++;
}

static void build_ping(struct req *p)
{
	p->mode = M_PING;
	p->unpriv = false;
	b_start(p, DQ_CMD_QUEUE_GET, NLM_F_REQUEST | NLM_F_ACK);
	put_str(p, DQ_A_NAME, ping_name);
	oracle(p);
}

/* A lost answer: the socket is reopened (the next answers would be off). */
static void reopen(const char *why, const struct req *r)
{
	char d[200];

	describe(r, d, sizeof(d));
	check(false, "%s: %s", d, why);
	if (C.fail <= 5)
		hexdump(r);
	if (nl_socket()) {
		diag("cannot reopen the netlink socket: %s", strerror(errno));
		exit(1);
	}
}

/*
 * Send r, collect its answer, judge it, update the model.  Returns the
 * outcome as judge() does.
 */
static int exchange(struct req *r)
{
	static struct req ping;
	struct resp *rs = &resp_main;
	bool waitable, need_ping;
	int ret, outcome;

	memset(rs, 0, sizeof(*rs));
	stray = 0;
	ret = xsend(r);
	if (ret) {
		char d[200];

		describe(r, d, sizeof(d));
		check(false, "%s: send: %s", d, strerror(-ret));
		return -2;
	}
	C.req[r->mode]++;
	if (r->dlen >= GENL_HDR) {
		uint8_t c = r->buf[NLMSG_HDRLEN];

		C.cmd[c < 7 ? c : 7]++;
	} else {
		C.cmd[8]++;
	}
	if (r->unpriv)
		C.unpriv++;
	if (r->e.dump)
		C.dumps++;

	/* the answers that end in an NLMSG_ERROR or NLMSG_DONE */
	waitable = r->e.kind == X_REPLY && (r->e.ack || r->e.dump || !r->e.ok);
	need_ping = r->e.kind != X_REPLY || !r->e.ack || (r->e.dump && r->e.ack) ||
		    chance(3);
	if (r->e.kind == X_REPLY && !r->e.ack && !r->e.dump) {
		/* an error ends with NLMSG_ERROR, a success with nothing */
		waitable = false;
	}
	if (waitable) {
		ret = rx_wait(r->seq, rs, r->seq, NULL, 0);
		if (ret) {
			char w[64];

			snprintf(w, sizeof(w), "no answer (%s)", strerror(-ret));
			reopen(w, r);
			return -2;
		}
	}
	if (need_ping) {
		memset(&resp_ping, 0, sizeof(resp_ping));
		build_ping(&ping);
		ret = xsend(&ping);
		if (!ret)
			ret = rx_wait(ping.seq, rs, r->seq, &resp_ping, ping.seq);
		if (ret) {
			char w[80];

			snprintf(w, sizeof(w), "no answer to the ping after it (%s)",
				 strerror(-ret));
			reopen(w, r);
			return -2;
		}
		C.req[M_PING]++;
		judge(&ping, &resp_ping);	/* not in the by-answer counts */
	}
	if (stray) {
		char d[200];

		describe(r, d, sizeof(d));
		check(false, "%s: %d stray messages: %s", d, stray, stray_why);
	}
	outcome = judge(r, rs);
	count_outcome(outcome);
	if (verbose) {
		char d[200];

		describe(r, d, sizeof(d));
		printf("# %s -> %s\n", d, outcome == -1 ? "(none)" :
		       outcome == -2 ? "FAIL" : errname(outcome));
	}
	if (r->mode == M_VALID) {
		if (r->e.only_ok) {
			C.valid_ok_expected++;
			if (outcome == 0)
				C.valid_ok++;
		} else if (!r->e.ok) {
			C.valid_err_expected++;
			if (outcome > 0)
				C.valid_err++;
		}
	}
	if (outcome == 0)
		apply_success(r, rs);
	else if (outcome == ENOMEM && r->e.cmd == DQ_CMD_QUEUE_NEW)
		need_resync = true;	/* "created all the same" */
	else if (outcome == EBUSY && r->e.tkind == T_POOL)
		C.deleted_busy++;
	else if (outcome == -2 && r->e.kind == X_REPLY)
		need_resync = true;
	return outcome;
}

/* ------------------------------------------------------------ the model */

static void pool_gone(int i)
{
	if (!pool[i].exists)
		return;
	pool[i].exists = false;
	dead_add(pool[i].id);
	handles_queue_gone(pool[i].id);
}

static void extra_gone(int i)
{
	extras[i].used = false;
	dead_add(extras[i].id);
	handles_queue_gone(extras[i].id);
}

static void apply_success(const struct req *r, const struct resp *rs)
{
	const struct expect *e = &r->e;

	if (e->kind != X_REPLY || e->dump)
		return;
	switch (e->cmd) {
	case DQ_CMD_QUEUE_NEW: {
		const struct item *it = &rs->items[0];
		int i;

		if (rs->nitems != 1 || !it->has_name) {
			need_resync = true;
			return;
		}
		C.created++;
		i = pool_by_name(it->name);
		if (i >= 0) {
			pool[i].exists = true;
			pool[i].id = it->id;
			pool[i].slots = it->slots;
			pool[i].tracked = it->flags & DQ_SETUP_F_TRACK;
			pool[i].busy = B_NO;
		} else {
			extra_add(it->name, it->id);
		}
		break;
	}
	case DQ_CMD_QUEUE_DEL:
		C.deleted++;
		if (e->tkind == T_POOL)
			pool_gone(e->tidx);
		else if (e->tkind == T_EXTRA)
			extra_gone(e->tidx);
		else
			need_resync = true;
		break;
	}
	if (!e->sure)
		need_resync = true;
}

/* Delete a queue by name, FORCE: must succeed (or ENOENT if allowed). */
static int delete_name(const char *name, bool enoent_ok)
{
	static struct req r;
	int out;

	r.mode = M_SYNC;
	r.unpriv = false;
	b_start(&r, DQ_CMD_QUEUE_DEL, NLM_F_REQUEST | NLM_F_ACK);
	put_str(&r, DQ_A_NAME, name);
	put_flag(&r, DQ_A_FORCE);
	oracle(&r);
	if (enoent_ok)
		allow(&r.e, ENOENT);
	out = exchange(&r);
	return out;
}

/* A dump of the named queues, into resp_main; 0 or -1. */
static int dump_named(void)
{
	static struct req r;

	r.mode = M_SYNC;
	r.unpriv = false;
	b_start(&r, DQ_CMD_QUEUE_GET, NLM_F_REQUEST | NLM_F_DUMP);
	oracle(&r);
	r.e.sure = false;	/* no model check: this is how it is made */
	return exchange(&r) == 0 ? 0 : -1;
}

/*
 * The model from a dump: which pool queues exist (a queue re-created
 * under a pool name by a request the model could not follow starts
 * idle), and the queues nobody asked for, deleted.
 */
static int resync(void)
{
	static struct item items[MAX_ITEMS];
	int n, i, k;

	need_resync = false;
	C.resyncs++;
	if (dump_named())
		return -1;
	n = resp_main.nitems;
	memcpy(items, resp_main.items, sizeof(items[0]) * (size_t)n);
	for (i = 0; i < NPOOL; i++) {
		for (k = 0; k < n; k++)
			if (items[k].has_name && !strcmp(items[k].name, pool[i].name))
				break;
		if (k == n) {
			pool_gone(i);
			continue;
		}
		if (!pool[i].exists || pool[i].id != items[k].id) {
			if (pool[i].exists)
				pool_gone(i);
			pool[i].exists = true;
			pool[i].id = items[k].id;
			pool[i].busy = B_NO;
		}
		pool[i].slots = items[k].slots;
		pool[i].tracked = items[k].flags & DQ_SETUP_F_TRACK;
	}
	for (i = 0; i < MAX_EXTRAS; i++) {
		if (!extras[i].used)
			continue;
		for (k = 0; k < n; k++)
			if (items[k].has_name && !strcmp(items[k].name, extras[i].name))
				break;
		if (k == n)
			extra_gone(i);
	}
	/* anything else that was not there at the start is ours */
	for (k = 0; k < n; k++) {
		if (!items[k].has_name || pool_by_name(items[k].name) >= 0 ||
		    in_snap_name(items[k].name))
			continue;
		if (extra_by_name(items[k].name) < 0)
			extra_add(items[k].name, items[k].id);
	}
	return 0;
}

/* Delete the extras: queues a random request created. */
static void delete_extras(void)
{
	int i;

	for (i = 0; i < MAX_EXTRAS; i++)
		if (extras[i].used) {
			char name[DQ_NAME_MAX];

			memcpy(name, extras[i].name, sizeof(name));
			if (delete_name(name, false) != 0)
				extras[i].used = false;	/* the dump decides */
		}
}

/* ------------------------------------------------------------ /dev/dq */

static void handle_close(struct handle *h)
{
	dqt_queue_fini(&h->q);
	h->used = false;
}

/* The queue was deleted: its files' submits fail with ENODEV. */
static void handles_queue_gone(uint32_t qid)
{
	int i;

	for (i = 0; i < MAX_HANDLES; i++) {
		struct handle *h = &handles[i];
		int ret;

		if (!h->used || h->qid != qid)
			continue;
		ret = dqt_submit(&h->q, 0, NULL, 0, NULL);
		C.enodev++;
		check(ret == -ENODEV,
		      "DQ_IOC_SUBMIT on a file attached to deleted queue %u: %s, expected ENODEV",
		      qid, ret < 0 ? errname(-ret) : "ok");
		handle_close(h);
	}
}

/* Attach to a pool queue and submit a few descriptors. */
static void attach_and_submit(void)
{
	int i = pick_pool(true, 85), k, n, ret;
	struct handle *h = NULL;
	struct dq_reject rej[16];
	struct dq_submit out;

	C.attaches++;
	for (k = 0; k < MAX_HANDLES; k++)
		if (handles[k].used && handles[k].qid == pool[i].id &&
		    pool[i].exists && chance(70))
			h = &handles[k];
	if (!h) {
		for (k = 0; k < MAX_HANDLES && handles[k].used; k++)
			;
		if (k == MAX_HANDLES) {
			k = (int)below(MAX_HANDLES);
			handle_close(&handles[k]);
		}
		h = &handles[k];
		ret = dqt_queue_attach(&h->q, pool[i].name);
		if (!pool[i].exists) {
			check(ret == -ENOENT,
			      "DQ_IOC_ATTACH of deleted %s: %s, expected ENOENT",
			      pool[i].name, ret ? errname(-ret) : "ok");
			if (!ret)
				handle_close(h);
			return;
		}
		check(ret == 0 || ret == -ENOMEM, "DQ_IOC_ATTACH %s: %s",
		      pool[i].name, errname(-ret));
		if (ret)
			return;
		check(h->q.setup.queue_id == pool[i].id,
		      "DQ_IOC_ATTACH %s: queue id %u, expected %u", pool[i].name,
		      h->q.setup.queue_id, pool[i].id);
		h->used = true;
		h->qid = pool[i].id;
		C.attach_ok++;
	}
	n = 1 + (int)below(8);
	if ((uint32_t)n > dqt_sq_space(&h->q))
		n = (int)dqt_sq_space(&h->q);
	for (k = 0; k < n; k++) {
		struct dq_desc d = {
			.slot = (uint32_t)below(h->q.slot_count + (chance(10) ? 2 : 0)),
			.len = (uint32_t)below(h->q.slot_size + 1),
			.gen = (uint32_t)rnd(),
			.user_data = rnd(),
			.flags = DQ_DESC_F_RELATIVE,
		};

		switch (below(4)) {
		case 0: d.due_ns = below(2 * NSEC_PER_MSEC); break;
		case 1: d.due_ns = below(NSEC_PER_SEC); break;
		case 2: d.due_ns = 3600 * NSEC_PER_SEC; break;
		default:
			d.flags = 0;
			d.due_ns = dqt_now_ns() + below(NSEC_PER_SEC);
		}
		if (chance(5))
			d.flags |= (uint16_t)(1U << (4 + below(12)));	/* rejected */
		*dqt_sq_next(&h->q, (uint32_t)k) = d;
	}
	dqt_sq_publish(&h->q, (uint32_t)k);
	C.submitted += (unsigned long)k;
	ret = dqt_submit(&h->q, 0, rej, ARRAY_SIZE(rej), &out);
	check(ret >= 0, "DQ_IOC_SUBMIT on %s (queue %u): %s", pool[i].name,
	      h->qid, ret < 0 ? errname(-ret) : "");
	if (ret > 0) {
		C.accepted += (unsigned long)ret;
		for (k = 0; k < NPOOL; k++)
			if (pool[k].exists && pool[k].id == h->qid)
				pool[k].busy = B_YES;
	}
	/* Now and then the released ones are taken off the ready ring. */
	if (chance(20) && !pool[i].tracked) {
		dqt_ready_discard(&h->q);
		for (k = 0; k < NPOOL; k++)
			if (pool[k].exists && pool[k].id == h->qid &&
			    pool[k].busy == B_YES)
				pool[k].busy = B_MAYBE;
	}
	if (chance(15))
		handle_close(h);
}

static void priv_open(void)
{
	int ret;

	priv_slots = 4;
	ret = dqt_queue_init(&priv, &DQT_PARAMS(.slot_count = priv_slots,
						 .slot_size = 64));
	check(ret == 0, "DQ_IOC_SETUP of the private queue: %s", errname(-ret));
	priv_live = ret == 0;
	if (priv_live)
		priv_id = priv.setup.queue_id;
}

static void priv_close(void)
{
	if (!priv_live)
		return;
	dqt_queue_fini(&priv);
	priv_live = false;
	dead_add(priv_id);
}

/* ------------------------------------------------------------ main */

static void snapshot(void)
{
	static struct req r;
	int k;

	/* every queue by STATS (private ones too), then the named ones */
	r.mode = M_SYNC;
	r.unpriv = false;
	b_start(&r, DQ_CMD_STATS, NLM_F_REQUEST | NLM_F_DUMP);
	oracle(&r);
	r.e.sure = false;
	if (exchange(&r) == 0)
		for (k = 0; k < resp_main.nitems && nsnap_id < MAX_SNAP; k++)
			snap_id[nsnap_id++] = resp_main.items[k].id;
	if (dump_named() == 0)
		for (k = 0; k < resp_main.nitems && nsnap_name < MAX_SNAP; k++)
			if (resp_main.items[k].has_name)
				memcpy(snap_name[nsnap_name++], resp_main.items[k].name,
				       DQ_NAME_MAX);
}

static void read_limit(void)
{
	FILE *f = fopen("/sys/module/dq/parameters/max_arena_bytes", "r");
	unsigned long long v;

	if (f && fscanf(f, "%llu", &v) == 1) {
		arena_limit = v;
		limit_known = true;
	}
	if (f)
		fclose(f);
}

static void on_alarm(int sig)
{
	static const char msg[] =
		"# nlstress: FAIL: still running long after the deadline (hung?)\n"
		"not ok 1 - nlstress\n0 passed, 1 failed, 0 skipped\n";

	(void)sig;
	if (write(STDOUT_FILENO, msg, sizeof(msg) - 1) < 0)
		_exit(1);
	_exit(1);
}

static void print_counters(double secs)
{
	unsigned long total = 0, n;
	char line[1024];
	size_t l;
	int i;

	for (i = 0; i < M_NR; i++)
		total += C.req[i];
	diag("%lu requests in %.1f s (%.0f/s): valid %lu, mutated %lu, soup %lu, "
	     "header %lu, pings %lu, sync %lu", total, secs,
	     secs > 0 ? (double)total / secs : 0.0, C.req[M_VALID], C.req[M_MUT],
	     C.req[M_SOUP], C.req[M_HDR], C.req[M_PING], C.req[M_SYNC]);
	l = 0;
	appendf(line, sizeof(line), &l, "by command:");
	for (i = 0; i < 9; i++)
		appendf(line, sizeof(line), &l, " %s %lu",
			i < 7 ? cmd_name((unsigned int)i) :
			i == 7 ? "unknown" : "(short)", C.cmd[i]);
	diag("%s", line);
	l = 0;
	appendf(line, sizeof(line), &l, "by answer: none %lu, ack only %lu",
		C.none, C.ack0);
	for (i = 0; i < 136; i++) {
		n = C.err[i];
		if (n)
			appendf(line, sizeof(line), &l, ", %s %lu",
				i == 135 ? "other" : errname(i), n);
	}
	diag("%s", line);
	diag("valid requests: %lu/%lu that must succeed did, %lu/%lu that must "
	     "fail failed with an allowed errno; %lu unprivileged, %lu dumps, "
	     "%lu resyncs", C.valid_ok, C.valid_ok_expected, C.valid_err,
	     C.valid_err_expected, C.unpriv, C.dumps, C.resyncs);
	diag("queues: %lu created, %lu deleted, %lu deletes refused EBUSY; "
	     "/dev/dq: %lu attach rounds (%lu attaches), %lu descriptors, "
	     "%lu accepted, %lu ENODEV checks", C.created, C.deleted,
	     C.deleted_busy, C.attaches, C.attach_ok, C.submitted, C.accepted,
	     C.enodev);
	for (i = 0; i < (int)nkinds; i++)
		diag("failures of this kind: %lu x \"%s\"", kinds[i].n,
		     kinds[i].key);
}

int main(int argc, char **argv)
{
	uint64_t seed = 0, secs = 20, max_req = 0, deadline, t0, n = 0;
	bool have_seed = false;
	const char *s;
	int opt, i, ret;

	while ((opt = getopt(argc, argv, "t:s:n:vh")) != -1) {
		switch (opt) {
		case 't': secs = strtoull(optarg, NULL, 0); break;
		case 's': seed = strtoull(optarg, NULL, 0); have_seed = true; break;
		case 'n': max_req = strtoull(optarg, NULL, 0); break;
		case 'v': verbose = 1; break;
		default:
			fprintf(stderr, "usage: %s [-t SECONDS] [-s SEED] "
				"[-n MAX_REQUESTS] [-v]\n", argv[0]);
			return 2;
		}
	}
	if (secs < 1) {
		fprintf(stderr, "nlstress: -t must be positive\n");
		return 2;
	}
	if (!have_seed)
		seed = mix64(dqt_now_ns() ^ ((uint64_t)getpid() << 32));
	s = getenv("DQ_TIMEOUT_SCALE");
	if (s && atof(s) >= 1)
		timeout_scale = atof(s);
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("TAP version 13\n1..1\n");
	diag("seed=%" PRIu64 " time=%" PRIu64 "s", seed, secs);
	diag("reproduce with: nlstress -s %" PRIu64 " -t %" PRIu64, seed, secs);
	rng_state = mix64(seed + 0x9e3779b97f4a7c15ULL) | 1;
	signal(SIGALRM, on_alarm);
	alarm((unsigned int)(secs * 2 + 300 * timeout_scale));

	pol_init();
	read_limit();
	if (limit_known)
		diag("max_arena_bytes %" PRIu64, arena_limit);
	else
		diag("max_arena_bytes unknown (no /sys/module/dq): no E2BIG checks");
	ret = nl_socket();
	if (!ret)
		ret = resolve_family();
	if (ret) {
		diag("generic netlink family '%s': %s (is dq.ko loaded?)",
		     DQ_GENL_NAME, strerror(-ret));
		printf("not ok 1 - nlstress\n0 passed, 1 failed, 0 skipped\n");
		return 1;
	}
	can_unpriv = geteuid() == 0 && have_permitted_net_admin() &&
		     net_admin(false) == 0 && net_admin(true) == 0;
	if (!can_unpriv)
		diag("cannot drop CAP_NET_ADMIN: no EPERM checks");
	for (i = 0; i < NPOOL; i++)
		snprintf(pool[i].name, sizeof(pool[i].name), "nlst.%d.%d",
			 (int)(getpid() % 100000), i);
	snprintf(ghost, sizeof(ghost), "nlst.%d.ghost", (int)(getpid() % 100000));
	snprintf(ping_name, sizeof(ping_name), "nlst.%d.ping",
		 (int)(getpid() % 100000));

	snapshot();
	priv_open();
	t0 = dqt_now_ns();
	deadline = t0 + secs * NSEC_PER_SEC;
	while (dqt_now_ns() < deadline && (!max_req || n < max_req)) {
		static struct req r;

		if (need_resync)
			resync();
		delete_extras();
		if (chance(4)) {
			attach_and_submit();
			continue;
		}
		if (chance(1)) {
			priv_close();
			priv_open();
		}
		gen_request(&r);
		exchange(&r);
		n++;
	}

	/* Cleanup: close the files, delete every queue of ours, check. */
	for (i = 0; i < MAX_HANDLES; i++)
		if (handles[i].used)
			handle_close(&handles[i]);
	priv_close();
	resync();
	for (i = 0; i < NPOOL; i++)
		if (pool[i].exists && delete_name(pool[i].name, false) == 0)
			pool_gone(i);
	delete_extras();
	{
		int k, left = 0;
		char names[256] = "";

		ret = dump_named();
		for (k = 0; !ret && k < resp_main.nitems; k++) {
			const struct item *it = &resp_main.items[k];

			if (it->has_name && !in_snap_name(it->name)) {
				left++;
				if (strlen(names) + strlen(it->name) + 2 < sizeof(names)) {
					strcat(names, " ");
					strcat(names, it->name);
				}
			}
		}
		check(!ret && !left, "after the cleanup %d queues of the run are left:%s",
		      left, names);
	}
	print_counters((double)(dqt_now_ns() - t0) / 1e9);
	if (C.fail) {
		diag("FAIL seed=%" PRIu64, seed);
		printf("not ok 1 - nlstress seed=%" PRIu64 "\n", seed);
	} else {
		diag("PASS seed=%" PRIu64, seed);
		printf("ok 1 - nlstress seed=%" PRIu64 "\n", seed);
	}
	printf("%lu passed, %lu failed, 0 skipped\n", C.pass, C.fail);
	mnl_socket_close(nls);
	return C.fail ? 1 : 0;
}
