// SPDX-License-Identifier: LGPL-2.1 OR MIT
/*
 * dq_file - the /dev/dq file's own interface: unknown ioctls before and
 * after setup, mappings that cannot work (MAP_PRIVATE), and what
 * madvise(MADV_DONTNEED) does to a mapped region (nothing the queue
 * notices: the next access maps the same page back).
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "dqtest.h"
#include "tap.h"

/* An ioctl the file does not have is -ENOTTY, queue or no queue. */
TEST(unknown_ioctl_before_setup_enotty)
{
	char buf[256] = { 0 };
	int fd = dqt_open_dev();

	ASSERT_GE(fd, 0);
	EXPECT_SYSERR(ioctl(fd, _IO(DQ_IOC_MAGIC, 0x7f)), ENOTTY);
	EXPECT_SYSERR(ioctl(fd, _IOWR(DQ_IOC_MAGIC, 0x40, char[16]), buf),
		      ENOTTY);
	EXPECT_SYSERR(ioctl(fd, _IOWR('x', 0x00, struct dq_setup), buf),
		      ENOTTY);
	/* A known queue ioctl without a queue stays -ENXIO (documented). */
	EXPECT_SYSERR(ioctl(fd, DQ_IOC_QUEUE_STATS, buf), ENXIO);
	EXPECT_SYSERR(ioctl(fd, DQ_IOC_SUBMIT, buf), ENXIO);
	close(fd);
}

/* MAP_PRIVATE would be a copy the kernel never sees: -EINVAL, every region. */
TEST(map_private_refused)
{
	static const uint64_t offs[] = { DQ_OFF_SUBMIT_RING, DQ_OFF_READY_RING,
					 DQ_OFF_ARENA };
	struct dqt_queue q;
	unsigned int i;

	ASSERT_EQ(dqt_queue_init(&q, &DQT_PARAMS(.slot_count = 16,
						 .slot_size = 64)), 0);
	for (i = 0; i < 3; i++) {
		void *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE, q.fd, (off_t)offs[i]);

		EXPECT_TRUE(p == MAP_FAILED);
		EXPECT_EQ(p == MAP_FAILED ? errno : 0, EINVAL);
		if (p != MAP_FAILED)
			munmap(p, 4096);
		p = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE, q.fd,
			 (off_t)offs[i]);
		EXPECT_TRUE(p == MAP_FAILED);
		EXPECT_EQ(p == MAP_FAILED ? errno : 0, EINVAL);
		if (p != MAP_FAILED)
			munmap(p, 4096);
	}
	dqt_queue_fini(&q);
}

/*
 * MADV_DONTNEED on the arena and on both rings: the next access maps the
 * same pages back (no SIGBUS), with their contents, and the queue keeps
 * working through them.
 */
TEST(madv_dontneed_maps_back)
{
	struct dqt_queue q;
	struct dq_ready r;
	uint8_t *slot;
	uint32_t len = 64;

	ASSERT_EQ(dqt_queue_init(&q, &DQT_PARAMS(.slot_count = 256,
						 .slot_size = 64)), 0);
	slot = dqt_slot_ptr(&q, 100);
	dqt_fill_payload(slot, len, 42);

	ASSERT_EQ(madvise(q.arena, q.arena_size, MADV_DONTNEED), 0);
	ASSERT_EQ(madvise(q.sq.map, q.sq.map_size, MADV_DONTNEED), 0);
	ASSERT_EQ(madvise(q.rq.map, q.rq.map_size, MADV_DONTNEED), 0);

	/* Same page, same bytes (a fresh zero page would fail this). */
	EXPECT_EQ(dqt_check_payload(slot, len, 42), 0U);
	/* The rings: a message goes through them after the zap. */
	ASSERT_EQ(dqt_push_msg(&q, 100, 0, dqt_now_ns(), 0, len, 777), 0);
	ASSERT_EQ(dqt_submit(&q, 0, NULL, 0, NULL), 1);
	ASSERT_EQ(dqt_wait(&q, 1, 10 * (int64_t)NSEC_PER_SEC), 1);
	ASSERT_EQ(madvise(q.rq.map, q.rq.map_size, MADV_DONTNEED), 0);
	ASSERT_EQ(dqt_reap(&q, &r, 1), 1);
	EXPECT_EQ(r.user_data, 777ULL);
	EXPECT_EQ(r.slot, 100U);
	ASSERT_EQ(madvise(q.arena, q.arena_size, MADV_DONTNEED), 0);
	EXPECT_EQ(dqt_check_payload(slot, len, 42), 0U);
	/* Written after a zap, seen through a second mapping of the arena. */
	slot[0] ^= 0xff;
	{
		uint8_t *again = dqt_map(q.fd, DQ_OFF_ARENA, q.arena_size,
					 PROT_READ);

		ASSERT_TRUE(again != NULL);
		EXPECT_EQ(again[(size_t)100 * q.slot_size], slot[0]);
		munmap(again, q.arena_size);
	}
	dqt_queue_fini(&q);
}

/* A partial unmap splits the mapping; the rest still faults back right. */
TEST(madv_dontneed_after_split)
{
	struct dqt_queue q;
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	uint8_t *tail;

	ASSERT_EQ(dqt_queue_init(&q, &DQT_PARAMS(.slot_count = 512,
						 .slot_size = 64)), 0);
	ASSERT_GE(q.arena_size, 4 * page);
	tail = q.arena + 2 * page;
	dqt_fill_payload(tail, 64, 7);
	ASSERT_EQ(munmap(q.arena + page, page), 0);
	ASSERT_EQ(madvise(tail, page, MADV_DONTNEED), 0);
	EXPECT_EQ(dqt_check_payload(tail, 64, 7), 0U);
	/* fini unmaps the whole range; the hole in it is fine. */
	dqt_queue_fini(&q);
}

TAP_MAIN()
