// SPDX-License-Identifier: LGPL-2.1 OR MIT
/*
 * dq_basic: the device, DQ_IOC_SETUP, the mmap() regions, and a single
 * message's life.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "dqtest.h"
#include "tap.h"

/* What this ABI version must offer, and every bit it defines. */
#define ALL_FEATURES (DQ_FEAT_RELATIVE_DUE | DQ_FEAT_CANCEL | DQ_FEAT_WAIT | \
		      DQ_FEAT_NODE_ENGINES)
#ifdef DQ_FEAT_URING_CMD
#define FEAT_URING DQ_FEAT_URING_CMD
#else
#define FEAT_URING 0
#endif
#ifdef DQ_FEAT_NAMED
#define FEAT_NAMED DQ_FEAT_NAMED
#else
#define FEAT_NAMED 0
#endif
#ifdef DQ_FEAT_PACING
#define FEAT_PACING DQ_FEAT_PACING
#else
#define FEAT_PACING 0
#endif
#ifdef DQ_FEAT_TRACK
#define FEAT_TRACK DQ_FEAT_TRACK
#else
#define FEAT_TRACK 0
#endif
#ifdef DQ_FEAT_KEYS
#define FEAT_KEYS DQ_FEAT_KEYS
#else
#define FEAT_KEYS 0
#endif
#ifdef DQ_FEAT_VISIBILITY
#define FEAT_VISIBILITY DQ_FEAT_VISIBILITY
#else
#define FEAT_VISIBILITY 0
#endif
#ifdef DQ_FEAT_TIME_NS
#define FEAT_TIME_NS DQ_FEAT_TIME_NS
#else
#define FEAT_TIME_NS 0
#endif
#ifdef DQ_FEAT_INSTANCE
#define FEAT_INSTANCE DQ_FEAT_INSTANCE
#else
#define FEAT_INSTANCE 0
#endif
#ifdef DQ_FEAT_READY_BACKLOG
#define FEAT_READY_BACKLOG DQ_FEAT_READY_BACKLOG
#else
#define FEAT_READY_BACKLOG 0
#endif
#ifdef DQ_FEAT_SLOT_ALIGN8
#define FEAT_SLOT_ALIGN8 DQ_FEAT_SLOT_ALIGN8
#else
#define FEAT_SLOT_ALIGN8 0
#endif
/* A module reports no feature its uapi header does not define. */
#define KNOWN_FEATURES (ALL_FEATURES | FEAT_URING | FEAT_NAMED | FEAT_PACING | \
			FEAT_TRACK | FEAT_KEYS | FEAT_VISIBILITY | FEAT_TIME_NS | \
			FEAT_INSTANCE | FEAT_READY_BACKLOG | FEAT_SLOT_ALIGN8)

static uint64_t page_align(uint64_t v)
{
	uint64_t pg = (uint64_t)sysconf(_SC_PAGESIZE);

	return (v + pg - 1) & ~(pg - 1);
}

static void check_ring_offsets(const char *which, const struct dq_ring_offsets *o,
			       uint32_t want_entries, uint32_t esz)
{
	DIAG("%s ring: producer %u consumer %u flags %u entries %u nr %u esz %u map %llu",
	     which, o->producer, o->consumer, o->flags, o->entries,
	     o->ring_entries, o->entry_size, (unsigned long long)o->map_size);
	if (want_entries)
		EXPECT_EQ(o->ring_entries, want_entries);
	EXPECT_NE(o->ring_entries, 0);
	EXPECT_EQ(o->ring_entries & (o->ring_entries - 1), 0);
	EXPECT_LE(o->ring_entries, DQ_MAX_RING_ENTRIES);
	EXPECT_EQ(o->entry_size, esz);
	EXPECT_EQ(o->producer % 4, 0);
	EXPECT_EQ(o->consumer % 4, 0);
	EXPECT_EQ(o->flags % 4, 0);
	EXPECT_EQ(o->entries % 8, 0);
	/* producer and consumer on separate cache lines */
	EXPECT_NE(o->producer / 64, o->consumer / 64);
	EXPECT_LE((uint64_t)o->producer + 4, o->map_size);
	EXPECT_LE((uint64_t)o->consumer + 4, o->map_size);
	EXPECT_LE((uint64_t)o->flags + 4, o->map_size);
	EXPECT_LE((uint64_t)o->entries + (uint64_t)o->ring_entries * esz, o->map_size);
	/* the indices and flags do not overlap the entry array */
	EXPECT_TRUE(o->producer + 4 <= o->entries || o->producer >= o->entries +
		    (uint64_t)o->ring_entries * esz);
	EXPECT_TRUE(o->consumer + 4 <= o->entries || o->consumer >= o->entries +
		    (uint64_t)o->ring_entries * esz);
	EXPECT_TRUE(o->flags + 4 <= o->entries || o->flags >= o->entries +
		    (uint64_t)o->ring_entries * esz);
	EXPECT_NE(o->flags, o->producer);
	EXPECT_NE(o->flags, o->consumer);
}

TEST(device_node)
{
	struct stat st;
	int fd;

	ASSERT_SYSOK(stat(DQT_DEV_PATH, &st));
	EXPECT_TRUE(S_ISCHR(st.st_mode));
	fd = open(DQT_DEV_PATH, O_RDWR | O_CLOEXEC);
	ASSERT_GE(fd, 0);
	EXPECT_SYSOK(close(fd));
	/* many opens are independent files */
	int fds[8];

	for (int i = 0; i < 8; i++) {
		fds[i] = open(DQT_DEV_PATH, O_RDWR | O_CLOEXEC);
		EXPECT_GE(fds[i], 0);
	}
	for (int i = 0; i < 8; i++)
		if (fds[i] >= 0)
			close(fds[i]);
}

TEST(setup_valid)
{
	struct dq_setup s = {
		.slot_count = 1000, .slot_size = 100,	/* rounds up to 128 */
		.submit_entries = 100,			/* rounds up to 128 */
		.ready_entries = 0,			/* default */
		.numa_node = -1,
	};
	struct dq_queue_stats st;
	int fd = dqt_open_dev();

	ASSERT_GE(fd, 0);
	ASSERT_SYSOK(ioctl(fd, DQ_IOC_SETUP, &s));
	DIAG("abi %u features 0x%x queue_id %u arena %llu", s.abi_version,
	     s.features, s.queue_id, (unsigned long long)s.arena_size);
	EXPECT_EQ(s.abi_version, DQ_ABI_VERSION);
	EXPECT_EQ(s.features & ALL_FEATURES, ALL_FEATURES);
	EXPECT_EQ(s.features & ~KNOWN_FEATURES, 0);
	EXPECT_EQ(s.resv1, 0);
	for (int i = 0; i < 2; i++)
		EXPECT_EQ(s.resv2[i], 0);
	EXPECT_NE(s.instance, 0);
	EXPECT_EQ(s.arena_size, page_align(1000 * 128));
	check_ring_offsets("submit", &s.submit, 128, sizeof(struct dq_desc));
	check_ring_offsets("ready", &s.ready, 0, sizeof(struct dq_ready));

	ASSERT_OK(ioctl(fd, DQ_IOC_QUEUE_STATS, &st) < 0 ? -errno : 0);
	EXPECT_EQ(st.queue_id, s.queue_id);
	EXPECT_EQ(st.slot_count, 1000);
	EXPECT_EQ(st.slot_size, 128);
	EXPECT_GE(st.numa_node, 0);
	EXPECT_EQ(st.pending, 0);
	EXPECT_EQ(st.submitted, 0);
	EXPECT_EQ(st.released, 0);
	EXPECT_EQ(st.ring_errors, 0);

	/* the regions map, start zeroed, and hold what is written */
	void *sq = dqt_map(fd, DQ_OFF_SUBMIT_RING, s.submit.map_size, PROT_READ | PROT_WRITE);
	void *rq = dqt_map(fd, DQ_OFF_READY_RING, s.ready.map_size, PROT_READ | PROT_WRITE);
	uint8_t *ar = dqt_map(fd, DQ_OFF_ARENA, s.arena_size, PROT_READ | PROT_WRITE);

	ASSERT_TRUE(sq && rq && ar);
	EXPECT_EQ(*(uint32_t *)((char *)sq + s.submit.producer), 0);
	EXPECT_EQ(*(uint32_t *)((char *)sq + s.submit.consumer), 0);
	EXPECT_EQ(*(uint32_t *)((char *)sq + s.submit.flags), 0);
	EXPECT_EQ(*(uint32_t *)((char *)rq + s.ready.producer), 0);
	EXPECT_EQ(*(uint32_t *)((char *)rq + s.ready.consumer), 0);
	EXPECT_EQ(*(uint32_t *)((char *)rq + s.ready.flags), 0);
	size_t nz = 0;

	for (size_t i = 0; i < s.arena_size; i++)
		nz += ar[i] != 0;
	EXPECT_EQ(nz, 0);
	memset(ar, 0x5a, s.arena_size);
	EXPECT_EQ(ar[s.arena_size - 1], 0x5a);

	/* a second mapping of the arena sees the same memory */
	uint8_t *ar2 = dqt_map(fd, DQ_OFF_ARENA, s.arena_size, PROT_READ);

	EXPECT_TRUE(ar2 != NULL);
	if (ar2) {
		EXPECT_EQ(ar2[12345], 0x5a);
		munmap(ar2, s.arena_size);
	}
	munmap(sq, s.submit.map_size);
	munmap(rq, s.ready.map_size);
	munmap(ar, s.arena_size);
	close(fd);
}

static const struct dq_setup good_setup = {
	.slot_count = 16, .slot_size = 256, .numa_node = -1,
};

struct bad_setup {
	const char *what;
	void (*mod)(struct dq_setup *s);
};

#define BAD(name, body) \
	static void bad_##name(struct dq_setup *s) { body; }
BAD(flags, s->flags = DQ_SETUP_F_ALL + 1)
BAD(flags_high, s->flags = 0x80000000)
BAD(slots0, s->slot_count = 0)
BAD(slots_max1, s->slot_count = DQ_MAX_SLOTS + 1)
BAD(slots_huge, s->slot_count = 0xffffffff)
BAD(size0, s->slot_size = 0)
BAD(size_small, s->slot_size = DQ_MIN_SLOT_SIZE - 1)
BAD(size_max1, s->slot_size = DQ_MAX_SLOT_SIZE + 1)
BAD(size_huge, s->slot_size = 0xffffffff)
BAD(sq_max1, s->submit_entries = DQ_MAX_RING_ENTRIES + 1)
BAD(sq_huge, s->submit_entries = 0xffffffff)
BAD(rq_max1, s->ready_entries = DQ_MAX_RING_ENTRIES + 1)
BAD(rq_huge, s->ready_entries = 0x80000001)
BAD(gran, s->granularity_ns = DQ_MAX_GRANULARITY_NS + 1)
BAD(inflight_untracked, s->max_inflight = 1)
BAD(instance_in, s->instance = 1)
BAD(resv2_0, s->resv2[0] = 1)
BAD(resv2_1, s->resv2[1] = 1ULL << 63)
BAD(vis_untracked, s->visibility_ns = DQ_MIN_VISIBILITY_NS)

static const struct bad_setup bad_einval[] = {
	{ "flags=F_ALL+1 (unknown)", bad_flags }, { "flags=1<<31", bad_flags_high },
	{ "slot_count=0", bad_slots0 }, { "slot_count=MAX+1", bad_slots_max1 },
	{ "slot_count=~0", bad_slots_huge }, { "slot_size=0", bad_size0 },
	{ "slot_size=MIN-1", bad_size_small }, { "slot_size=MAX+1", bad_size_max1 },
	{ "slot_size=~0", bad_size_huge }, { "submit_entries=MAX+1", bad_sq_max1 },
	{ "submit_entries=~0", bad_sq_huge }, { "ready_entries=MAX+1", bad_rq_max1 },
	{ "ready_entries=2^31+1", bad_rq_huge }, { "granularity=MAX+1", bad_gran },
	{ "max_inflight=1 untracked", bad_inflight_untracked }, { "resv2[0]=1", bad_resv2_0 },
	{ "resv2[1]=1<<63", bad_resv2_1 }, { "instance=1 (out only)", bad_instance_in },
	{ "visibility_ns untracked", bad_vis_untracked },
};

TEST(setup_bad_params)
{
	int fd = dqt_open_dev();

	ASSERT_GE(fd, 0);
	for (size_t i = 0; i < sizeof(bad_einval) / sizeof(bad_einval[0]); i++) {
		struct dq_setup s = good_setup;

		bad_einval[i].mod(&s);
		errno = 0;
		int r = ioctl(fd, DQ_IOC_SETUP, &s);

		if (r != -1 || errno != EINVAL)
			FAIL("setup with %s: ret %d errno %s, expected EINVAL",
			     bad_einval[i].what, r, strerrorname_np(errno) ?: "0");
		if (r == 0)
			break;	/* the fd now has a queue; the rest would EBUSY */
	}

	/* nodes that do not exist (or are offline): -EINVAL */
	static const int32_t bad_nodes[] = { 99, -2, 1 << 20, 0x7fffffff, (int32_t)0x80000000 };

	for (size_t i = 0; i < sizeof(bad_nodes) / sizeof(bad_nodes[0]); i++) {
		struct dq_setup s = good_setup;

		if (dqt_node_online(bad_nodes[i]))
			continue;
		s.numa_node = bad_nodes[i];
		errno = 0;
		int r = ioctl(fd, DQ_IOC_SETUP, &s);

		if (r != -1 || errno != EINVAL)
			FAIL("setup with numa_node=%d: ret %d errno %s, expected EINVAL",
			     bad_nodes[i], r, strerrorname_np(errno) ?: "0");
		if (r == 0)
			break;
	}

	/* failed setups leave nothing behind: a good one works on the same fd */
	struct dq_setup s = good_setup;

	EXPECT_SYSOK(ioctl(fd, DQ_IOC_SETUP, &s));
	close(fd);
}

/*
 * The ready ring's default is sized apart from the slot count: one entry
 * per slot up to 4096, then 4096 (the backlog holds the rest); an explicit
 * size is the caller's, rounded up to a power of two, whatever the slots.
 */
TEST(setup_ready_ring_default)
{
	static const struct {
		uint32_t slots, ready, tracked, want;
	} c[] = {
		{ 1, 0, 0, 64 }, { 100, 0, 0, 128 }, { 4096, 0, 0, 4096 },
		{ 4097, 0, 0, 4096 }, { 100000, 0, 0, 4096 }, { 1 << 18, 0, 1, 4096 },
		{ 100000, 100000, 0, 131072 }, { 100, 65536, 0, 65536 },
		{ 100000, 10, 1, 16 },
	};

	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		struct dq_setup s = {
			.slot_count = c[i].slots, .slot_size = 64,
			.ready_entries = c[i].ready, .numa_node = -1,
			.flags = c[i].tracked ? DQ_SETUP_F_TRACK : 0,
		};
		int fd = dqt_open_dev();

		ASSERT_GE(fd, 0);
		ASSERT_SYSOK(ioctl(fd, DQ_IOC_SETUP, &s));
		if (s.ready.ring_entries != c[i].want)
			FAIL("slots %u ready_entries %u%s: ring %u, expected %u",
			     c[i].slots, c[i].ready, c[i].tracked ? " tracked" : "",
			     s.ready.ring_entries, c[i].want);
		EXPECT_EQ(s.ready_entries, c[i].want);
		check_ring_offsets("ready", &s.ready, c[i].want,
				   c[i].tracked ? sizeof(struct dq_ready_track) :
				   sizeof(struct dq_ready));
		EXPECT_TRUE(s.features & FEAT_READY_BACKLOG);
		close(fd);
	}
}

TEST(setup_huge_arena)
{
	/*
	 * Each field is within its limit; the product (16 TiB) is over the
	 * module's max_arena_bytes (-E2BIG), or else it is not memory there
	 * is (-ENOMEM).
	 */
	struct dq_setup s = good_setup;
	unsigned long long max = 0;
	int fd = dqt_open_dev();
	FILE *f = fopen("/sys/module/dq/parameters/max_arena_bytes", "r");

	ASSERT_TRUE(f != NULL);
	ASSERT_EQ(fscanf(f, "%llu", &max), 1);
	fclose(f);
	ASSERT_GE(fd, 0);
	s.slot_count = DQ_MAX_SLOTS;
	s.slot_size = DQ_MAX_SLOT_SIZE;
	int want = (unsigned long long)DQ_MAX_SLOTS * DQ_MAX_SLOT_SIZE > max ?
		   E2BIG : ENOMEM;

	DIAG("16 TiB arena, max_arena_bytes %llu: expect %s", max,
	     strerrorname_np(want));
	EXPECT_SYSERR(ioctl(fd, DQ_IOC_SETUP, &s), want);
	s = good_setup;
	EXPECT_SYSOK(ioctl(fd, DQ_IOC_SETUP, &s));
	close(fd);
}

TEST(setup_twice_ebusy)
{
	struct dq_setup s = good_setup, s2 = good_setup;
	int fd = dqt_open_dev();

	ASSERT_GE(fd, 0);
	ASSERT_SYSOK(ioctl(fd, DQ_IOC_SETUP, &s));
	EXPECT_SYSERR(ioctl(fd, DQ_IOC_SETUP, &s2), EBUSY);
	/* the first queue is intact */
	struct dq_queue_stats st;

	EXPECT_SYSOK(ioctl(fd, DQ_IOC_QUEUE_STATS, &st));
	EXPECT_EQ(st.queue_id, s.queue_id);
	EXPECT_EQ(st.slot_count, 16);
	close(fd);
}

TEST(before_setup)
{
	struct dq_submit sub = { 0 };
	struct dq_wait w = { .min_ready = 1, .timeout_ns = 0 };
	struct dq_cancel c = { .handle = DQ_HANDLE(0, 0) };
	struct dq_queue_stats st;
	int fd = dqt_open_dev();

	uint64_t bits = 0;
	struct dq_slot_map sm = { .bitmap = (uintptr_t)&bits, .slot_count = 1 };
	struct dq_node_stats ns = { .node = 0 };

	ASSERT_GE(fd, 0);
	/* every queue call on a file without a queue: -ENXIO */
	EXPECT_SYSERR(ioctl(fd, DQ_IOC_SUBMIT, &sub), ENXIO);
	EXPECT_SYSERR(ioctl(fd, DQ_IOC_WAIT, &w), ENXIO);
	w.timeout_ns = -1;	/* would block forever with a queue */
	EXPECT_SYSERR(ioctl(fd, DQ_IOC_WAIT, &w), ENXIO);
	EXPECT_SYSERR(ioctl(fd, DQ_IOC_CANCEL, &c), ENXIO);
	EXPECT_SYSERR(ioctl(fd, DQ_IOC_QUEUE_STATS, &st), ENXIO);
	EXPECT_SYSERR(ioctl(fd, DQ_IOC_SLOT_MAP, &sm), ENXIO);
	/* the argument is not even read first */
	EXPECT_SYSERR(ioctl(fd, DQ_IOC_SUBMIT, (void *)16), ENXIO);
	/* NODE_STATS needs no queue */
	EXPECT_SYSOK(ioctl(fd, DQ_IOC_NODE_STATS, &ns));
	static const uint64_t offs[] = { DQ_OFF_SUBMIT_RING, DQ_OFF_READY_RING, DQ_OFF_ARENA };

	for (int i = 0; i < 3; i++) {
		errno = 0;
		void *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
			       (off_t)offs[i]);

		if (p != MAP_FAILED) {
			FAIL("mmap at 0x%llx before setup succeeded",
			     (unsigned long long)offs[i]);
			munmap(p, 4096);
		} else if (errno != ENXIO) {
			FAIL("mmap at 0x%llx before setup: errno %s, expected ENXIO",
			     (unsigned long long)offs[i], strerrorname_np(errno) ?: "0");
		}
	}
	/* poll: EPOLLERR alone, at once, for any events asked */
	struct pollfd pfd = { .fd = fd, .events = POLLIN | POLLOUT };

	EXPECT_EQ(poll(&pfd, 1, 1000), 1);
	EXPECT_EQ(pfd.revents, POLLERR);
	pfd = (struct pollfd){ .fd = fd, .events = 0 };
	EXPECT_EQ(poll(&pfd, 1, 0), 1);
	EXPECT_EQ(pfd.revents, POLLERR);
	/* after SETUP the same file is a queue: writable, not readable */
	struct dq_setup s = good_setup;

	ASSERT_SYSOK(ioctl(fd, DQ_IOC_SETUP, &s));
	pfd = (struct pollfd){ .fd = fd, .events = POLLIN | POLLOUT };
	EXPECT_EQ(poll(&pfd, 1, 0), 1);
	EXPECT_EQ(pfd.revents, POLLOUT);
	close(fd);
}

TEST(mmap_rejects)
{
	struct dqt_queue q;
	const int rw = PROT_READ | PROT_WRITE;

	ASSERT_OK(dqt_queue_init(&q, &DQT_PARAMS(.slot_count = 64, .slot_size = 64)));
	struct {
		const char *what;
		uint64_t off;
		size_t len;
		int prot;
		int err;
	} bad[] = {
		{ "unknown offset 0x30000000", 0x30000000ULL, 4096, rw, EINVAL },
		{ "unknown offset 0x40000000", 0x40000000ULL, 4096, rw, EINVAL },
		{ "unknown offset 0xfffff000", 0xfffff000ULL, 4096, rw, EINVAL },
		{ "submit ring too long", DQ_OFF_SUBMIT_RING, q.sq.map_size + 4096, rw, EINVAL },
		{ "ready ring too long", DQ_OFF_READY_RING, q.rq.map_size + 4096, rw, EINVAL },
		{ "arena too long", DQ_OFF_ARENA, q.arena_size + 4096, rw, EINVAL },
		{ "arena much too long", DQ_OFF_ARENA, q.arena_size + (64 << 20), rw, EINVAL },
		{ "submit ring PROT_EXEC", DQ_OFF_SUBMIT_RING, q.sq.map_size, rw | PROT_EXEC, EPERM },
		{ "ready ring PROT_EXEC", DQ_OFF_READY_RING, q.rq.map_size, PROT_READ | PROT_EXEC, EPERM },
		{ "arena PROT_EXEC", DQ_OFF_ARENA, q.arena_size, rw | PROT_EXEC, EPERM },
		{ "arena PROT_EXEC alone", DQ_OFF_ARENA, q.arena_size, PROT_EXEC, EPERM },
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		errno = 0;
		void *p = mmap(NULL, bad[i].len, bad[i].prot, MAP_SHARED, q.fd,
			       (off_t)bad[i].off);

		if (p != MAP_FAILED) {
			FAIL("mmap %s succeeded", bad[i].what);
			munmap(p, bad[i].len);
		} else if (errno != bad[i].err) {
			FAIL("mmap %s: errno %s, expected %s", bad[i].what,
			     strerrorname_np(errno) ?: "0", strerrorname_np(bad[i].err));
		}
	}

	/* a mapped region cannot be made executable later either: -EACCES */
	void *p = dqt_map(q.fd, DQ_OFF_ARENA, q.arena_size, PROT_READ);

	EXPECT_TRUE(p != NULL);
	if (p) {
		EXPECT_SYSERR(mprotect(p, q.arena_size, PROT_READ | PROT_EXEC), EACCES);
		munmap(p, q.arena_size);
	}

	/* nor grown past the region with mremap() */
	struct {
		const char *what;
		void *addr;
		size_t len;
	} reg[] = {
		{ "submit ring", q.sq.map, q.sq.map_size },
		{ "ready ring", q.rq.map, q.rq.map_size },
		{ "arena", q.arena, q.arena_size },
	};

	for (int i = 0; i < 3; i++) {
		errno = 0;
		void *n = mremap(reg[i].addr, reg[i].len, reg[i].len + (1 << 20),
				 MREMAP_MAYMOVE);

		if (n == MAP_FAILED && errno != EFAULT)
			FAIL("mremap growing the %s mapping: errno %s, expected EFAULT",
			     reg[i].what, strerrorname_np(errno) ?: "0");
		if (n != MAP_FAILED) {
			FAIL("mremap grew the %s mapping", reg[i].what);
			/* put things back as they were for the teardown */
			if (i == 0)
				q.sq.map = n, q.sq.map_size += 1 << 20;
			else if (i == 1)
				q.rq.map = n, q.rq.map_size += 1 << 20;
			else
				q.arena = n, q.arena_size += 1 << 20;
		}
	}
	dqt_queue_fini(&q);
}

TEST(one_message)
{
	struct dqt_queue q;
	struct dq_submit sub;
	struct dq_queue_stats st;
	struct dq_ready r[4];
	const uint32_t slot = 2, len = 200;
	const uint64_t seed = 0x1234abcdULL;

	ASSERT_OK(dqt_queue_init(&q, &DQT_PARAMS(.slot_count = 4, .slot_size = 256)));
	dqt_fill_payload(dqt_slot_ptr(&q, slot), len, seed);

	uint64_t due = dqt_now_ns() + 20 * NSEC_PER_MSEC;

	ASSERT_OK(dqt_push_msg(&q, slot, 1, due, 0, len, 0xabc));
	ASSERT_EQ(dqt_submit(&q, 0, NULL, 0, &sub), 1);
	EXPECT_EQ(sub.accepted, 1);
	EXPECT_EQ(sub.rejected, 0);
	EXPECT_EQ(dqt_load_acq(q.sq.consumer), 1);
	ASSERT_OK(dqt_queue_stats(&q, &st));
	if (dqt_now_ns() < due) {
		EXPECT_EQ(st.pending, 1);
		EXPECT_EQ(dqt_ready_count(&q), 0);
	}
	EXPECT_EQ(st.submitted, 1);

	/* the kernel posts on its own: watch the producer index, no WAIT */
	uint64_t deadline = due + 10 * NSEC_PER_SEC;
	uint64_t reap_ns = 0;

	while (!dqt_ready_count(&q) && dqt_now_ns() < deadline)
		dqt_sleep_ns(NSEC_PER_MSEC / 2);
	reap_ns = dqt_now_ns();
	ASSERT_EQ(dqt_reap(&q, r, 4), 1);
	EXPECT_GE(reap_ns, due);
	EXPECT_EQ(r[0].user_data, 0xabc);
	EXPECT_EQ(r[0].due_ns, due);
	EXPECT_GE(r[0].release_ns, due);
	EXPECT_LE(r[0].release_ns, reap_ns);
	EXPECT_EQ(r[0].slot, slot);
	EXPECT_EQ(r[0].len, len);
	EXPECT_EQ(dqt_check_payload(dqt_slot_ptr(&q, r[0].slot), r[0].len, seed), 0);
	DIAG("late by %.1f us (kernel), %.1f us (reaped)",
	     (r[0].release_ns - due) / 1e3, (reap_ns - due) / 1e3);

	/* released once */
	dqt_sleep_ns(100 * NSEC_PER_MSEC);
	EXPECT_EQ(dqt_ready_count(&q), 0);
	ASSERT_OK(dqt_queue_stats(&q, &st));
	EXPECT_EQ(st.pending, 0);
	EXPECT_EQ(st.submitted, 1);
	EXPECT_EQ(st.released, 1);
	EXPECT_EQ(st.ready_backlog, 0);
	EXPECT_EQ(st.cancelled, 0);
	EXPECT_EQ(st.late_max_ns, r[0].release_ns - due);
	EXPECT_EQ(st.late_sum_ns, r[0].release_ns - due);
	for (int i = 0; i < DQ_REJ_NR; i++)
		EXPECT_EQ(st.rejected[i], 0);
	dqt_queue_fini(&q);
}

#ifdef DQ_SETUP_F_SLOT_ALIGN8
/*
 * DQ_SETUP_F_SLOT_ALIGN8: 500-byte slots take 504 bytes, back to back
 * (so some straddle a page), the arena is sized for that, a descriptor
 * may fill a slot to its 504th byte but not one further, and every slot
 * filled to its last byte comes out intact: neighbours share cache lines
 * and pages, never bytes.  Without the flag, the 64-byte rounding.
 */
TEST(setup_slot_align8)
{
	const uint32_t n = 64, size = 500, aligned = 504;
	const uint64_t pg = (uint64_t)sysconf(_SC_PAGESIZE);
	struct dq_ready r[64];
	struct dq_reject rej[2];
	struct dq_queue_stats st;
	struct dq_submit sub;
	struct dqt_queue q;
	uint32_t i, got = 0, straddle = 0;

	ASSERT_OK(dqt_queue_init(&q, &DQT_PARAMS(.slot_count = n,
						 .slot_size = size)));
	EXPECT_EQ(q.setup.slot_size, 512);
	EXPECT_EQ(q.setup.flags & DQ_SETUP_F_SLOT_ALIGN8, 0);
	dqt_queue_fini(&q);

	ASSERT_OK(dqt_queue_init(&q, &DQT_PARAMS(.slot_count = n,
						 .slot_size = size,
						 .flags = DQ_SETUP_F_SLOT_ALIGN8)));
	EXPECT_TRUE(q.setup.features & DQ_FEAT_SLOT_ALIGN8);
	EXPECT_EQ(q.setup.flags, DQ_SETUP_F_SLOT_ALIGN8);
	EXPECT_EQ(q.setup.slot_size, aligned);
	EXPECT_EQ(q.slot_size, aligned);
	EXPECT_EQ(q.setup.arena_size, page_align((uint64_t)n * aligned));
	ASSERT_OK(dqt_queue_stats(&q, &st));
	EXPECT_EQ(st.slot_size, aligned);

	for (i = 0; i < n; i++) {
		uintptr_t a = (uintptr_t)dqt_slot_ptr(&q, i);

		straddle += a / pg != (a + aligned - 1) / pg;
		dqt_fill_payload(dqt_slot_ptr(&q, i), aligned, 0x5107 + i);
	}
	EXPECT_GT(straddle, 0);
	/* one byte more than the slot: refused, the slot stays free */
	ASSERT_OK(dqt_push_msg(&q, 0, 1, dqt_now_ns(), 0, aligned + 1, 0));
	ASSERT_EQ(dqt_submit(&q, 0, rej, 2, &sub), 0);	/* none accepted */
	EXPECT_EQ(sub.rejected, 1);
	EXPECT_EQ(rej[0].reason, DQ_REJ_LEN);
	/* every slot full, due last slot first */
	uint64_t due = dqt_now_ns() + 20 * NSEC_PER_MSEC;

	for (i = 0; i < n; i++)
		ASSERT_OK(dqt_push_msg(&q, i, 2, due + (n - i) * 100000ULL, 0,
				       aligned, 0x5107 + i));
	ASSERT_EQ(dqt_submit(&q, 0, rej, 2, &sub), (int)n);
	EXPECT_EQ(sub.accepted, n);
	EXPECT_EQ(sub.rejected, 0);
	ASSERT_EQ(dqt_reap_until(&q, r, NULL, n, dqt_now_ns() + 20 * NSEC_PER_SEC,
				 DQT_WAIT_IOCTL, &got), (int)n);
	for (i = 0; i < n; i++) {
		EXPECT_EQ(r[i].slot, n - 1 - i);
		EXPECT_EQ(r[i].len, aligned);
		EXPECT_EQ(r[i].user_data, 0x5107 + r[i].slot);
		EXPECT_EQ(dqt_check_payload(dqt_slot_ptr(&q, r[i].slot),
					    r[i].len, 0x5107 + r[i].slot), 0);
	}
	dqt_queue_fini(&q);

	/* the flag above the known ones is as unknown as ever */
	struct dq_setup bad = good_setup;
	int fd = dqt_open_dev();

	ASSERT_GE(fd, 0);
	bad.flags = DQ_SETUP_F_SLOT_ALIGN8 << 1;
	EXPECT_SYSERR(ioctl(fd, DQ_IOC_SETUP, &bad), EINVAL);
	close(fd);
}
#endif

TEST(relative_and_past_due)
{
	struct dqt_queue q;
	struct dq_ready r[3];
	uint64_t reap[3];
	uint32_t got;

	ASSERT_OK(dqt_queue_init(&q, &DQT_PARAMS(.slot_count = 8, .slot_size = 64)));
	uint64_t t0 = dqt_now_ns();

	ASSERT_OK(dqt_push_msg(&q, 0, 1, 30 * NSEC_PER_MSEC, DQ_DESC_F_RELATIVE, 8, 100));
	ASSERT_OK(dqt_push_msg(&q, 1, 1, 0, DQ_DESC_F_RELATIVE, 8, 101));
	ASSERT_OK(dqt_push_msg(&q, 2, 1, 1, 0, 8, 102));	/* absolute, long past */
	ASSERT_EQ(dqt_submit(&q, 0, NULL, 0, NULL), 3);
	uint64_t t1 = dqt_now_ns();

	dqt_reap_until(&q, r, reap, 3, t1 + 10 * NSEC_PER_SEC, DQT_WAIT_IOCTL, &got);
	ASSERT_EQ(got, 3);
	/* the past ones first (submit order among them), then the relative one */
	for (int i = 0; i < 3; i++) {
		EXPECT_GE(r[i].release_ns, r[i].due_ns);
		EXPECT_GE(reap[i], r[i].due_ns);
		if (r[i].user_data == 100) {
			EXPECT_GE(r[i].due_ns, t0 + 30 * NSEC_PER_MSEC);
			EXPECT_LE(r[i].due_ns, t1 + 30 * NSEC_PER_MSEC);
			EXPECT_EQ(i, 2);
		} else if (r[i].user_data == 101) {
			EXPECT_GE(r[i].due_ns, t0);
			EXPECT_LE(r[i].due_ns, t1);
		} else if (r[i].user_data == 102) {
			EXPECT_EQ(r[i].due_ns, 1);
		} else {
			FAIL("unexpected user_data %llu", (unsigned long long)r[i].user_data);
		}
	}
	/* due order: 102 (due 1) before 101 (due ~t0) */
	EXPECT_EQ(r[0].user_data, 102);
	EXPECT_EQ(r[1].user_data, 101);
	dqt_queue_fini(&q);
}

TEST(two_queues_isolated)
{
	struct dqt_queue a, b;
	struct dq_ready r[4];
	struct dq_queue_stats sa, sb;
	uint32_t got;

	ASSERT_OK(dqt_queue_init(&a, &DQT_PARAMS(.slot_count = 4, .slot_size = 64)));
	ASSERT_OK(dqt_queue_init(&b, &DQT_PARAMS(.slot_count = 4, .slot_size = 64)));
	EXPECT_NE(a.setup.queue_id, b.setup.queue_id);
	memset(dqt_slot_ptr(&a, 0), 0xaa, 64);
	memset(dqt_slot_ptr(&b, 0), 0xbb, 64);
	ASSERT_OK(dqt_push_msg(&a, 0, 1, 5 * NSEC_PER_MSEC, DQ_DESC_F_RELATIVE, 64, 1));
	ASSERT_OK(dqt_push_msg(&b, 0, 1, 5 * NSEC_PER_MSEC, DQ_DESC_F_RELATIVE, 64, 2));
	ASSERT_OK(dqt_push_msg(&b, 1, 1, 5 * NSEC_PER_MSEC, DQ_DESC_F_RELATIVE, 64, 3));
	ASSERT_EQ(dqt_submit(&a, 0, NULL, 0, NULL), 1);
	ASSERT_EQ(dqt_submit(&b, 0, NULL, 0, NULL), 2);

	uint64_t dl = dqt_now_ns() + 10 * NSEC_PER_SEC;

	dqt_reap_until(&a, r, NULL, 1, dl, DQT_WAIT_IOCTL, &got);
	ASSERT_EQ(got, 1);
	EXPECT_EQ(r[0].user_data, 1);
	dqt_reap_until(&b, r, NULL, 2, dl, DQT_WAIT_IOCTL, &got);
	ASSERT_EQ(got, 2);
	EXPECT_EQ(r[0].user_data, 2);
	EXPECT_EQ(r[1].user_data, 3);
	dqt_sleep_ns(50 * NSEC_PER_MSEC);
	EXPECT_EQ(dqt_ready_count(&a), 0);
	EXPECT_EQ(dqt_ready_count(&b), 0);
	EXPECT_EQ(dqt_slot_ptr(&a, 0)[10], 0xaa);
	EXPECT_EQ(dqt_slot_ptr(&b, 0)[10], 0xbb);
	ASSERT_OK(dqt_queue_stats(&a, &sa));
	ASSERT_OK(dqt_queue_stats(&b, &sb));
	EXPECT_EQ(sa.released, 1);
	EXPECT_EQ(sb.released, 2);
	EXPECT_EQ(sa.queue_id, a.setup.queue_id);
	EXPECT_EQ(sb.queue_id, b.setup.queue_id);
	dqt_queue_fini(&a);
	dqt_queue_fini(&b);
}

TEST(fork_child_close)
{
	/*
	 * A child inherits the file and the mappings; its exit (closing and
	 * unmapping everything) leaves the parent's queue intact.
	 */
	struct dqt_queue q;
	struct dq_ready r[2];
	uint32_t got;
	int status;

	ASSERT_OK(dqt_queue_init(&q, &DQT_PARAMS(.slot_count = 4, .slot_size = 64)));
	memset(dqt_slot_ptr(&q, 0), 0x42, 64);
	ASSERT_OK(dqt_push_msg(&q, 0, 1, 100 * NSEC_PER_MSEC, DQ_DESC_F_RELATIVE, 64, 1));
	ASSERT_EQ(dqt_submit(&q, 0, NULL, 0, NULL), 1);
	pid_t pid = fork();

	ASSERT_GE(pid, 0);
	if (pid == 0) {
		/* the child sees the same arena, then goes away */
		int ok = dqt_slot_ptr(&q, 0)[63] == 0x42;

		dqt_slot_ptr(&q, 1)[0] = 0x99;
		dqt_queue_fini(&q);
		_exit(ok ? 0 : 1);
	}
	ASSERT_EQ(waitpid(pid, &status, 0), pid);
	EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	EXPECT_EQ(dqt_slot_ptr(&q, 1)[0], 0x99);	/* MAP_SHARED */

	dqt_reap_until(&q, r, NULL, 1, dqt_now_ns() + 10 * NSEC_PER_SEC, DQT_WAIT_IOCTL, &got);
	EXPECT_EQ(got, 1);
	EXPECT_EQ(r[0].user_data, 1);
	ASSERT_OK(dqt_push_msg(&q, 1, 1, 0, DQ_DESC_F_RELATIVE, 8, 2));
	EXPECT_EQ(dqt_submit(&q, 0, NULL, 0, NULL), 1);
	dqt_reap_until(&q, r, NULL, 1, dqt_now_ns() + 10 * NSEC_PER_SEC, DQT_WAIT_IOCTL, &got);
	EXPECT_EQ(got, 1);
	EXPECT_EQ(r[0].user_data, 2);
	dqt_queue_fini(&q);
}

TEST(unknown_ioctl)
{
	struct dqt_queue q;
	char buf[256] = { 0 };

	ASSERT_OK(dqt_queue_init(&q, &DQT_PARAMS(.slot_count = 4, .slot_size = 64)));
	EXPECT_SYSERR(ioctl(q.fd, _IO(DQ_IOC_MAGIC, 0x7f)), ENOTTY);
	EXPECT_SYSERR(ioctl(q.fd, _IOWR(DQ_IOC_MAGIC, 0x40, char[16]), buf), ENOTTY);
	EXPECT_SYSERR(ioctl(q.fd, _IOWR('x', 0x00, struct dq_setup), buf), ENOTTY);
	dqt_queue_fini(&q);
}

TAP_MAIN()
