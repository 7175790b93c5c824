// SPDX-License-Identifier: LGPL-2.1 OR MIT
/*
 * dq_memlock - a queue's pinned memory is charged to its creator's user
 * against RLIMIT_MEMLOCK (uapi/linux/dq.h, DQ_IOC_SETUP, "Memory
 * accounting"), unless the creator has CAP_IPC_LOCK:
 *
 *  - a queue whose charge fits the limit exactly is set up, one page less
 *    of limit fails -ENOMEM, and the node's MEMLOCK_REFUSED counter goes
 *    up by exactly one;
 *  - the charge is the test's own sum of the arena, ring and per-slot
 *    record pages (the formula the uapi header gives), with big slots and
 *    with small ones (where the records outweigh the arena);
 *  - the charge is held while a mapping or a file holds the queue and
 *    comes back when both are gone;
 *  - CAP_IPC_LOCK (root, or kept by another uid) is not charged;
 *  - a named queue (netlink QUEUE_NEW) is charged to the netlink caller,
 *    refused over its limit with an extack naming RLIMIT_MEMLOCK, and its
 *    charge comes back after QUEUE_DEL, or only when the last attached
 *    file closes;
 *  - memlock_accounting=0 charges nothing, and a queue made then gives
 *    nothing back later.
 *
 * Runs as root in the VM; each case forks a child that takes a fresh uid
 * of its own (so its user's count starts at 0), a RLIMIT_MEMLOCK, and no
 * capability but the ones named (CAP_NET_ADMIN for QUEUE_NEW).  Every
 * queue lives on node 0, whose counters (netlink STATS with NODE) give the
 * deltas; the expected charge is always computed here.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <linux/capability.h>
#include <linux/genetlink.h>
#include <linux/netlink.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "dqtest.h"
#include "tap.h"

#ifndef SOL_NETLINK
#define SOL_NETLINK	270
#endif

/* The ring header: three cache-line-aligned u32s (x86-64: 64-byte lines). */
#define RING_HDR	(3 * 64)
/* The kernel's record per slot, documented in uapi/linux/dq.h. */
#define REC_BYTES	64
#define PARAM_PATH	"/sys/module/dq/parameters/memlock_accounting"

/* The big-slot queue of most cases: 1 MiB arena, 64 KiB of records. */
#define BIG_SLOTS	1024U
#define BIG_SLOT_SIZE	1024U
#define RING_ENTRIES	64U

static unsigned long page_size;

static unsigned long pages_of(uint64_t bytes)
{
	return (unsigned long)((bytes + page_size - 1) / page_size);
}

static uint64_t pow2_at_least(uint32_t n)
{
	uint64_t b = 2;

	while (b < n)
		b <<= 1;
	return b;
}

/* The charge of a queue, in pages, as this test reads the uapi formula. */
static unsigned long expect_pages(uint32_t slots, uint32_t slot_size,
				  uint32_t sq, uint32_t rq, uint32_t flags)
{
	uint64_t meta = (uint64_t)slots * REC_BYTES;
	size_t resz = flags & DQ_SETUP_F_TRACK ? 48 : 32;

	if (flags & DQ_SETUP_F_TRACK)
		meta += (uint64_t)slots * 8;
	if (flags & DQ_SETUP_F_KEYS)
		meta += ((uint64_t)slots + pow2_at_least(slots)) * 4;
	return pages_of((uint64_t)slots * slot_size) +
	       pages_of(RING_HDR + (uint64_t)sq * sizeof(struct dq_desc)) +
	       pages_of(RING_HDR + (uint64_t)rq * resz) + pages_of(meta);
}

static unsigned long big_pages(void)
{
	return expect_pages(BIG_SLOTS, BIG_SLOT_SIZE, RING_ENTRIES,
			    RING_ENTRIES, 0);
}

static struct dqt_params qparams(uint32_t slots, uint32_t slot_size,
				 uint32_t flags)
{
	struct dqt_params p = DQT_PARAMS(.slot_count = slots,
					 .slot_size = slot_size,
					 .submit_entries = RING_ENTRIES,
					 .ready_entries = RING_ENTRIES,
					 .flags = flags);

	p.numa_node = 0;
	return p;
}

/* ---- generic netlink, just enough for QUEUE_NEW/DEL and node STATS ---- */

struct nlc {
	int fd;
	uint16_t family;
	uint32_t seq;
	char errmsg[256];	/* the last error's extack message */
};

struct nlreq {
	struct nlmsghdr h;
	struct genlmsghdr g;
	char attrs[512];
};

static void nl_put(struct nlreq *r, uint16_t type, const void *data,
		   size_t len)
{
	struct nlattr *a = (struct nlattr *)((char *)r +
					     NLMSG_ALIGN(r->h.nlmsg_len));

	a->nla_type = type;
	a->nla_len = (uint16_t)(NLA_HDRLEN + len);
	if (len)
		memcpy((char *)a + NLA_HDRLEN, data, len);
	r->h.nlmsg_len = NLMSG_ALIGN(r->h.nlmsg_len) + NLA_ALIGN(a->nla_len);
}

static void nl_put_u32(struct nlreq *r, uint16_t type, uint32_t v)
{
	nl_put(r, type, &v, sizeof(v));
}

static void nl_put_str(struct nlreq *r, uint16_t type, const char *s)
{
	nl_put(r, type, s, strlen(s) + 1);
}

static void nl_init(struct nlreq *r, uint16_t family, uint8_t cmd,
		    uint8_t version)
{
	memset(r, 0, sizeof(*r));
	r->h.nlmsg_len = NLMSG_LENGTH(GENL_HDRLEN);
	r->h.nlmsg_type = family;
	r->h.nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK;
	r->g.cmd = cmd;
	r->g.version = version;
}

/* The extack message of an error reply, into c->errmsg. */
static void nl_extack(struct nlc *c, const struct nlmsghdr *r)
{
	const struct nlmsgerr *e = NLMSG_DATA(r);
	const char *p = (const char *)e + sizeof(*e);
	const char *end = (const char *)r + r->nlmsg_len;

	if (!(r->nlmsg_flags & NLM_F_ACK_TLVS))
		return;
	if (!(r->nlmsg_flags & NLM_F_CAPPED))
		p += e->msg.nlmsg_len - sizeof(e->msg);
	while (p + NLA_HDRLEN <= end) {
		const struct nlattr *a = (const struct nlattr *)p;

		if (a->nla_len < NLA_HDRLEN || p + a->nla_len > end)
			break;
		if ((a->nla_type & NLA_TYPE_MASK) == NLMSGERR_ATTR_MSG)
			snprintf(c->errmsg, sizeof(c->errmsg), "%.*s",
				 (int)(a->nla_len - NLA_HDRLEN), p + NLA_HDRLEN);
		p += NLA_ALIGN(a->nla_len);
	}
}

typedef void (*nl_cb)(const struct nlattr *a, void *arg);

/* Each top-level attribute of a reply's payload to @cb. */
static void nl_attrs(const struct nlmsghdr *r, nl_cb cb, void *arg)
{
	const char *p = (const char *)NLMSG_DATA(r) + GENL_HDRLEN;
	const char *end = (const char *)r + r->nlmsg_len;

	while (p + NLA_HDRLEN <= end) {
		const struct nlattr *a = (const struct nlattr *)p;

		if (a->nla_len < NLA_HDRLEN || p + a->nla_len > end)
			break;
		cb(a, arg);
		p += NLA_ALIGN(a->nla_len);
	}
}

/* Send @req, feed the replies' attributes to @cb; 0 or -errno. */
static int nl_talk(struct nlc *c, struct nlreq *req, nl_cb cb, void *arg)
{
	static char buf[32768];

	c->errmsg[0] = 0;
	req->h.nlmsg_seq = ++c->seq;
	if (send(c->fd, req, req->h.nlmsg_len, 0) < 0)
		return -errno;
	for (;;) {
		ssize_t got = recv(c->fd, buf, sizeof(buf), 0);
		int n = (int)got;
		struct nlmsghdr *r;

		if (got < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		for (r = (struct nlmsghdr *)buf; NLMSG_OK(r, n);
		     r = NLMSG_NEXT(r, n)) {
			if (r->nlmsg_seq != req->h.nlmsg_seq)
				continue;
			if (r->nlmsg_type == NLMSG_ERROR) {
				const struct nlmsgerr *e = NLMSG_DATA(r);

				if (e->error)
					nl_extack(c, r);
				return e->error;
			}
			if (r->nlmsg_type == NLMSG_DONE)
				return 0;
			if (cb)
				nl_attrs(r, cb, arg);
		}
	}
}

static void family_cb(const struct nlattr *a, void *arg)
{
	if ((a->nla_type & NLA_TYPE_MASK) == CTRL_ATTR_FAMILY_ID)
		memcpy(arg, (const char *)a + NLA_HDRLEN, sizeof(uint16_t));
}

static int nl_open(struct nlc *c)
{
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK };
	struct nlreq req;
	int one = 1, ret;

	memset(c, 0, sizeof(*c));
	c->fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_GENERIC);
	if (c->fd < 0)
		return -errno;
	setsockopt(c->fd, SOL_NETLINK, NETLINK_EXT_ACK, &one, sizeof(one));
	setsockopt(c->fd, SOL_NETLINK, NETLINK_CAP_ACK, &one, sizeof(one));
	if (bind(c->fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		ret = -errno;
		close(c->fd);
		return ret;
	}
	nl_init(&req, GENL_ID_CTRL, CTRL_CMD_GETFAMILY, 1);
	nl_put_str(&req, CTRL_ATTR_FAMILY_NAME, DQ_GENL_NAME);
	ret = nl_talk(c, &req, family_cb, &c->family);
	if (!ret && !c->family)
		ret = -ENOENT;
	if (ret)
		close(c->fd);
	return ret;
}

static void nl_close(struct nlc *c)
{
	close(c->fd);
}

static int nl_queue_new(struct nlc *c, const char *name, uint32_t slots,
			uint32_t slot_size)
{
	struct nlreq req;
	int32_t node = 0;

	nl_init(&req, c->family, DQ_CMD_QUEUE_NEW, DQ_GENL_VERSION);
	nl_put_str(&req, DQ_A_NAME, name);
	nl_put_u32(&req, DQ_A_SLOTS, slots);
	nl_put_u32(&req, DQ_A_SLOT_SIZE, slot_size);
	nl_put_u32(&req, DQ_A_SUBMIT_ENTRIES, RING_ENTRIES);
	nl_put_u32(&req, DQ_A_READY_ENTRIES, RING_ENTRIES);
	nl_put(&req, DQ_A_NODE, &node, sizeof(node));
	nl_put_u32(&req, DQ_A_MODE, 0600);
	return nl_talk(c, &req, NULL, NULL);
}

static int nl_queue_del(struct nlc *c, const char *name, bool force)
{
	struct nlreq req;

	nl_init(&req, c->family, DQ_CMD_QUEUE_DEL, DQ_GENL_VERSION);
	nl_put_str(&req, DQ_A_NAME, name);
	if (force)
		nl_put(&req, DQ_A_FORCE, NULL, 0);
	return nl_talk(c, &req, NULL, NULL);
}

struct memlock_stats {
	uint64_t pages;
	uint64_t refused;
	int seen;		/* both attributes were in the reply */
};

static void stats_cb(const struct nlattr *a, void *arg)
{
	struct memlock_stats *m = arg;
	const char *p = (const char *)a + NLA_HDRLEN;
	const char *end = (const char *)a + a->nla_len;

	if ((a->nla_type & NLA_TYPE_MASK) != DQ_A_STATS)
		return;
	while (p + NLA_HDRLEN <= end) {
		const struct nlattr *s = (const struct nlattr *)p;
		uint64_t v;

		if (s->nla_len < NLA_HDRLEN || p + s->nla_len > end)
			break;
		if (s->nla_len == NLA_HDRLEN + sizeof(v)) {
			memcpy(&v, p + NLA_HDRLEN, sizeof(v));
			if ((s->nla_type & NLA_TYPE_MASK) == DQ_STATS_MEMLOCK_PAGES) {
				m->pages = v;
				m->seen |= 1;
			} else if ((s->nla_type & NLA_TYPE_MASK) ==
				   DQ_STATS_MEMLOCK_REFUSED) {
				m->refused = v;
				m->seen |= 2;
			}
		}
		p += NLA_ALIGN(s->nla_len);
	}
}

/* Node 0's RLIMIT_MEMLOCK counters; asserts they are there. */
static struct memlock_stats node0(void)
{
	struct memlock_stats m = { 0 };
	struct nlreq req;
	struct nlc c;
	int32_t node = 0;

	ASSERT_EQ(nl_open(&c), 0);
	nl_init(&req, c.family, DQ_CMD_STATS, DQ_GENL_VERSION);
	nl_put(&req, DQ_A_NODE, &node, sizeof(node));
	ASSERT_EQ(nl_talk(&c, &req, stats_cb, &m), 0);
	nl_close(&c);
	ASSERT_EQ(m.seen, 3);
	return m;
}

/* ---- privileges ---------------------------------------------------- */

#define UID_BASE	61000

static int capset_to(uint64_t caps)
{
	struct __user_cap_header_struct h = {
		.version = _LINUX_CAPABILITY_VERSION_3,
	};
	struct __user_cap_data_struct d[2] = { { 0 } };

	d[0].effective = d[0].permitted = (uint32_t)caps;
	d[1].effective = d[1].permitted = (uint32_t)(caps >> 32);
	return (int)syscall(SYS_capset, &h, d);
}

static bool have_cap(int cap)
{
	struct __user_cap_header_struct h = {
		.version = _LINUX_CAPABILITY_VERSION_3,
	};
	struct __user_cap_data_struct d[2];

	if (syscall(SYS_capget, &h, d))
		return true;	/* be safe: the caller fails */
	return d[cap / 32].effective & (1U << (cap % 32));
}

/*
 * Become @uid (a fresh one: its user's locked count starts at 0) with
 * RLIMIT_MEMLOCK @limit_pages and exactly the capabilities @caps.
 */
static void become(uid_t uid, unsigned long limit_pages, uint64_t caps)
{
	struct rlimit rl = {
		.rlim_cur = (rlim_t)limit_pages * page_size,
		.rlim_max = (rlim_t)limit_pages * page_size,
	};

	ASSERT_EQ(setrlimit(RLIMIT_MEMLOCK, &rl) ? -errno : 0, 0);
	ASSERT_EQ(prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0) ? -errno : 0, 0);
	ASSERT_EQ(setgroups(0, NULL) ? -errno : 0, 0);
	ASSERT_EQ(setresgid(uid, uid, uid) ? -errno : 0, 0);
	ASSERT_EQ(setresuid(uid, uid, uid) ? -errno : 0, 0);
	ASSERT_EQ(capset_to(caps) ? -errno : 0, 0);
	ASSERT_EQ(have_cap(CAP_IPC_LOCK), !!(caps & (1ULL << CAP_IPC_LOCK)));
	ASSERT_EQ((uint64_t)getuid(), (uint64_t)uid);
}

/* Run @fn in a child; its result as the test's (0: passed). */
static int in_child(void (*fn)(void *), void *arg)
{
	pid_t pid;
	int status;

	fflush(stdout);
	pid = fork();
	if (pid < 0)
		return -errno;
	if (!pid) {
		fn(arg);
		fflush(stdout);
		_exit(tap_has_failed() ? 1 : 0);
	}
	if (waitpid(pid, &status, 0) != pid)
		return -errno;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static void need_root(void)
{
	if (geteuid())
		tap_skip("needs root");
	page_size = (unsigned long)sysconf(_SC_PAGESIZE);
	if (access(PARAM_PATH, F_OK))
		tap_skip("dq.ko without memlock_accounting");
}

/* ---- (a) the limit, to the page ------------------------------------ */

static void exact_child(void *arg)
{
	unsigned long want = big_pages();
	struct dqt_params p = qparams(BIG_SLOTS, BIG_SLOT_SIZE, 0);
	struct memlock_stats s0, s1, s2, s3;
	struct dqt_queue q;
	struct rlimit rl;
	int ret;

	(void)arg;
	become(UID_BASE + 1, want, 0);
	s0 = node0();
	ASSERT_EQ(dqt_queue_init(&q, &p), 0);
	tap_diag("charge of %u x %u B: %lu pages expected; ring offsets %u/%u, map sizes %llu/%llu",
		 BIG_SLOTS, BIG_SLOT_SIZE, want, q.setup.submit.entries,
		 q.setup.ready.entries,
		 (unsigned long long)q.setup.submit.map_size,
		 (unsigned long long)q.setup.ready.map_size);
	/* What the formula assumes of the layout (cross-checks only). */
	EXPECT_EQ(q.setup.submit.entries, RING_HDR);
	EXPECT_EQ(q.setup.arena_size, (uint64_t)BIG_SLOTS * BIG_SLOT_SIZE);
	s1 = node0();
	EXPECT_EQ(s1.pages - s0.pages, (uint64_t)want);
	EXPECT_EQ(s1.refused, s0.refused);
	dqt_queue_fini(&q);
	s2 = node0();
	EXPECT_EQ(s2.pages, s0.pages);

	/* A bad setup is not a refusal. */
	ret = dqt_queue_init(&q, &DQT_PARAMS(.slot_count = 0, .slot_size = 64));
	EXPECT_EQ(ret, -EINVAL);
	EXPECT_EQ(node0().refused, s0.refused);

	/* One page less of limit: the same queue no longer fits. */
	rl.rlim_cur = rl.rlim_max = (rlim_t)(want - 1) * page_size;
	ASSERT_EQ(setrlimit(RLIMIT_MEMLOCK, &rl) ? -errno : 0, 0);
	ret = dqt_queue_init(&q, &p);
	EXPECT_EQ(ret, -ENOMEM);
	if (!ret)
		dqt_queue_fini(&q);
	s3 = node0();
	EXPECT_EQ(s3.refused - s0.refused, 1ULL);
	EXPECT_EQ(s3.pages, s0.pages);
	tap_diag("limit %lu pages: %s; node 0 memlock_refused %llu -> %llu",
		 want - 1, ret ? strerror(-ret) : "set up",
		 (unsigned long long)s0.refused, (unsigned long long)s3.refused);
}

TEST(charge_fits_to_the_page_and_one_page_less_is_enomem)
{
	need_root();
	EXPECT_EQ(in_child(exact_child, NULL), 0);
}

/*
 * Small slots: the records (64 B a slot, + 8 tracked, + the key index)
 * outweigh the arena, and are charged.
 */
static void small_child(void *arg)
{
	const uint32_t slots = 1000, flags = DQ_SETUP_F_TRACK | DQ_SETUP_F_KEYS;
	unsigned long want = expect_pages(slots, 64, RING_ENTRIES, RING_ENTRIES,
					  flags);
	unsigned long arena = pages_of((uint64_t)slots * 64);
	struct dqt_params p = qparams(slots, 64, flags);
	struct memlock_stats s0, s1;
	struct dqt_queue q;
	struct rlimit rl;
	int ret;

	(void)arg;
	become(UID_BASE + 2, want, 0);
	tap_diag("%u x 64 B, tracked and keyed: %lu pages expected, arena %lu",
		 slots, want, arena);
	ASSERT_GT(want, 2 * arena);
	s0 = node0();
	ASSERT_EQ(dqt_queue_init(&q, &p), 0);
	s1 = node0();
	EXPECT_EQ(s1.pages - s0.pages, (uint64_t)want);
	dqt_queue_fini(&q);
	EXPECT_EQ(node0().pages, s0.pages);

	rl.rlim_cur = rl.rlim_max = (rlim_t)(want - 1) * page_size;
	ASSERT_EQ(setrlimit(RLIMIT_MEMLOCK, &rl) ? -errno : 0, 0);
	ret = dqt_queue_init(&q, &p);
	EXPECT_EQ(ret, -ENOMEM);
	if (!ret)
		dqt_queue_fini(&q);
	EXPECT_EQ(node0().refused - s0.refused, 1ULL);
}

TEST(small_slots_records_charged)
{
	need_root();
	EXPECT_EQ(in_child(small_child, NULL), 0);
}

/* ---- (b) two queues; the charge comes back with the memory ---------- */

static void two_child(void *arg)
{
	unsigned long want = big_pages();
	struct dqt_params p = qparams(BIG_SLOTS, BIG_SLOT_SIZE, 0);
	struct memlock_stats s0, s1;
	struct dqt_queue a, b;
	int ret;

	(void)arg;
	become(UID_BASE + 3, want + want / 2, 0);
	s0 = node0();
	ASSERT_EQ(dqt_queue_init(&a, &p), 0);
	ret = dqt_queue_init(&b, &p);
	EXPECT_EQ(ret, -ENOMEM);
	if (!ret)
		dqt_queue_fini(&b);
	s1 = node0();
	EXPECT_EQ(s1.refused - s0.refused, 1ULL);
	EXPECT_EQ(s1.pages - s0.pages, (uint64_t)want);

	/* The file closed, the mappings kept: the memory is still pinned. */
	close(a.fd);
	a.fd = -1;
	ret = dqt_queue_init(&b, &p);
	EXPECT_EQ(ret, -ENOMEM);
	if (!ret)
		dqt_queue_fini(&b);
	EXPECT_EQ(node0().pages - s0.pages, (uint64_t)want);

	/* munmap too: the queue is freed and its charge returned. */
	dqt_queue_unmap(&a);
	EXPECT_EQ(node0().pages, s0.pages);
	ret = dqt_queue_init(&b, &p);
	EXPECT_EQ(ret, 0);
	EXPECT_EQ(node0().pages - s0.pages, (uint64_t)want);
	if (!ret)
		dqt_queue_fini(&b);
	EXPECT_EQ(node0().pages, s0.pages);
	EXPECT_EQ(node0().refused - s0.refused, 2ULL);
}

TEST(second_queue_over_limit_until_first_freed)
{
	need_root();
	EXPECT_EQ(in_child(two_child, NULL), 0);
}

/* ---- (c) CAP_IPC_LOCK ---------------------------------------------- */

static void caps_child(void *arg)
{
	struct dqt_params p = qparams(BIG_SLOTS, BIG_SLOT_SIZE, 0);
	struct memlock_stats s0;
	struct dqt_queue a, b;

	(void)arg;
	/* Another uid, keeping CAP_IPC_LOCK: a 1-page limit does not apply. */
	become(UID_BASE + 4, 1, 1ULL << CAP_IPC_LOCK);
	s0 = node0();
	ASSERT_EQ(dqt_queue_init(&a, &p), 0);
	ASSERT_EQ(dqt_queue_init(&b, &p), 0);
	EXPECT_EQ(node0().pages, s0.pages);
	dqt_queue_fini(&b);
	dqt_queue_fini(&a);
	EXPECT_EQ(node0().pages, s0.pages);
	EXPECT_EQ(node0().refused, s0.refused);
}

TEST(cap_ipc_lock_not_charged)
{
	struct dqt_params p;
	struct memlock_stats s0;
	struct rlimit rl;
	struct dqt_queue q;
	struct nlc c;

	need_root();
	p = qparams(BIG_SLOTS, BIG_SLOT_SIZE, 0);
	/* Root itself, RLIMIT_MEMLOCK one page: set up and QUEUE_NEW work. */
	rl.rlim_cur = rl.rlim_max = page_size;
	ASSERT_EQ(setrlimit(RLIMIT_MEMLOCK, &rl) ? -errno : 0, 0);
	ASSERT_TRUE(have_cap(CAP_IPC_LOCK));
	s0 = node0();
	ASSERT_EQ(dqt_queue_init(&q, &p), 0);
	ASSERT_EQ(nl_open(&c), 0);
	nl_queue_del(&c, "memlock-root", true);
	EXPECT_EQ(nl_queue_new(&c, "memlock-root", BIG_SLOTS, BIG_SLOT_SIZE), 0);
	EXPECT_EQ(node0().pages, s0.pages);
	EXPECT_EQ(nl_queue_del(&c, "memlock-root", false), 0);
	nl_close(&c);
	dqt_queue_fini(&q);
	EXPECT_EQ(node0().refused, s0.refused);

	EXPECT_EQ(in_child(caps_child, NULL), 0);
}

/* ---- (d) named queues: charged to the netlink caller ---------------- */

static const char *const names[] = {
	"memlock-a", "memlock-b", "memlock-e", "memlock-f",
};

static void cleanup_names(void)
{
	struct nlc c;
	size_t i;

	if (nl_open(&c))
		return;
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		nl_queue_del(&c, names[i], true);
	nl_close(&c);
}

static void named_child(void *arg)
{
	unsigned long want = big_pages();
	struct memlock_stats s0, s1;
	struct nlc c;
	int ret;

	(void)arg;
	become(UID_BASE + 5, want + want / 2, 1ULL << CAP_NET_ADMIN);
	ASSERT_EQ(nl_open(&c), 0);
	s0 = node0();
	ASSERT_EQ(nl_queue_new(&c, "memlock-a", BIG_SLOTS, BIG_SLOT_SIZE), 0);
	EXPECT_EQ(node0().pages - s0.pages, (uint64_t)want);

	ret = nl_queue_new(&c, "memlock-b", BIG_SLOTS, BIG_SLOT_SIZE);
	EXPECT_EQ(ret, -ENOMEM);
	tap_diag("second named queue: %s, extack \"%s\"", strerror(-ret),
		 c.errmsg);
	EXPECT_TRUE(strstr(c.errmsg, "RLIMIT_MEMLOCK") != NULL);
	s1 = node0();
	EXPECT_EQ(s1.refused - s0.refused, 1ULL);
	EXPECT_EQ(s1.pages - s0.pages, (uint64_t)want);

	/* Nobody attached: QUEUE_DEL frees it and returns the charge. */
	EXPECT_EQ(nl_queue_del(&c, "memlock-a", false), 0);
	EXPECT_EQ(node0().pages, s0.pages);
	EXPECT_EQ(nl_queue_new(&c, "memlock-b", BIG_SLOTS, BIG_SLOT_SIZE), 0);
	EXPECT_EQ(node0().pages - s0.pages, (uint64_t)want);
	EXPECT_EQ(nl_queue_del(&c, "memlock-b", false), 0);
	EXPECT_EQ(node0().pages, s0.pages);
	nl_close(&c);
}

TEST(named_queue_charged_to_netlink_caller)
{
	need_root();
	cleanup_names();
	EXPECT_EQ(in_child(named_child, NULL), 0);
	cleanup_names();
}

/* ---- (e) an attached file keeps a deleted named queue's charge ------ */

static void attached_child(void *arg)
{
	unsigned long want = big_pages();
	struct memlock_stats s0;
	struct dqt_queue q;
	struct nlc c;
	int ret;

	(void)arg;
	become(UID_BASE + 6, want + want / 2, 1ULL << CAP_NET_ADMIN);
	ASSERT_EQ(nl_open(&c), 0);
	s0 = node0();
	ASSERT_EQ(nl_queue_new(&c, "memlock-e", BIG_SLOTS, BIG_SLOT_SIZE), 0);
	ASSERT_EQ(dqt_queue_attach(&q, "memlock-e"), 0);
	EXPECT_EQ(nl_queue_del(&c, "memlock-e", false), 0);

	/* Deleted, still attached and mapped: still charged. */
	EXPECT_EQ(node0().pages - s0.pages, (uint64_t)want);
	ret = nl_queue_new(&c, "memlock-f", BIG_SLOTS, BIG_SLOT_SIZE);
	EXPECT_EQ(ret, -ENOMEM);
	EXPECT_EQ(node0().refused - s0.refused, 1ULL);

	/* The last file and mapping go: the charge comes back. */
	dqt_queue_fini(&q);
	EXPECT_EQ(node0().pages, s0.pages);
	EXPECT_EQ(nl_queue_new(&c, "memlock-f", BIG_SLOTS, BIG_SLOT_SIZE), 0);
	EXPECT_EQ(nl_queue_del(&c, "memlock-f", false), 0);
	EXPECT_EQ(node0().pages, s0.pages);
	nl_close(&c);
}

TEST(attached_file_keeps_named_charge)
{
	need_root();
	cleanup_names();
	EXPECT_EQ(in_child(attached_child, NULL), 0);
	cleanup_names();
}

/* ---- memlock_accounting=0 ------------------------------------------ */

static int write_param(const char *v)
{
	int fd = open(PARAM_PATH, O_WRONLY);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = write(fd, v, strlen(v));
	close(fd);
	return n == (ssize_t)strlen(v) ? 0 : -EIO;
}

struct off_sync {
	int made[2];	/* child -> parent: the queue is set up */
	int go[2];	/* parent -> child: accounting is back on */
};

static void off_child(void *arg)
{
	struct off_sync *s = arg;
	struct dqt_params p = qparams(BIG_SLOTS, BIG_SLOT_SIZE, 0);
	struct memlock_stats s0;
	struct dqt_queue q;
	char c = 0;

	become(UID_BASE + 7, 1, 0);
	s0 = node0();
	/* Over a 1-page limit, but accounting is off: set up, uncharged. */
	ASSERT_EQ(dqt_queue_init(&q, &p), 0);
	EXPECT_EQ(node0().pages, s0.pages);
	ASSERT_EQ(write(s->made[1], "m", 1), 1);
	ASSERT_EQ(read(s->go[0], &c, 1), 1);
	/* Accounting on again: a new queue is refused ... */
	{
		struct dqt_queue b;
		int ret = dqt_queue_init(&b, &p);

		EXPECT_EQ(ret, -ENOMEM);
		if (!ret)
			dqt_queue_fini(&b);
	}
	/* ... and the old one gives back nothing it was not charged. */
	dqt_queue_fini(&q);
	EXPECT_EQ(node0().pages, s0.pages);
	EXPECT_EQ(node0().refused - s0.refused, 1ULL);
}

TEST(accounting_off_charges_nothing)
{
	struct off_sync s;
	pid_t pid;
	int status;
	char c;

	need_root();
	signal(SIGPIPE, SIG_IGN);
	ASSERT_EQ(pipe(s.made), 0);
	ASSERT_EQ(pipe(s.go), 0);
	ASSERT_EQ(write_param("0"), 0);
	fflush(stdout);
	pid = fork();
	ASSERT_GE(pid, 0);
	if (!pid) {
		close(s.made[0]);
		close(s.go[1]);
		off_child(&s);
		fflush(stdout);
		_exit(tap_has_failed() ? 1 : 0);
	}
	/* Only the child's ends left open: its death is an EOF here. */
	close(s.made[1]);
	close(s.go[0]);
	if (read(s.made[0], &c, 1) != 1)
		tap_diag("the child did not set its queue up");
	EXPECT_EQ(write_param("1"), 0);
	if (write(s.go[1], "g", 1) != 1)
		tap_diag("the child is gone");
	ASSERT_EQ(waitpid(pid, &status, 0), pid);
	EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	/* Whatever happened, leave the default behind. */
	write_param("1");
}

TAP_MAIN()
