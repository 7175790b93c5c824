// SPDX-License-Identifier: LGPL-2.1 OR MIT
/*
 * dq_memcg - a queue's arena and rings are charged to the memory cgroup
 * of the task that sets it up, the charge goes away when the queue does,
 * and a memory.max too small for the arena makes DQ_IOC_SETUP fail with
 * -ENOMEM (never the OOM killer).
 *
 * Needs root and a kernel with MEMCG (every lab kernel); mounts cgroup2
 * on /sys/fs/cgroup when nothing is mounted there (the lab VM).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "dqtest.h"
#include "tap.h"

#define CG_ROOT		"/sys/fs/cgroup"
#define MIB		(1024ULL * 1024)

static char cg_dir[128];

static int write_file(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = write(fd, s, strlen(s));
	close(fd);
	return n == (ssize_t)strlen(s) ? 0 : n < 0 ? -errno : -EIO;
}

static long long read_ll(const char *dir, const char *file)
{
	char path[256], buf[64];
	FILE *f;
	long long v = -1;

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	f = fopen(path, "r");
	if (!f)
		return -1;
	if (fgets(buf, sizeof(buf), f))
		v = strtoll(buf, NULL, 10);
	fclose(f);
	return v;
}

/* memory.events' "oom_kill N". */
static long long oom_kills(const char *dir)
{
	char path[256], key[64];
	long long v, kills = -1;
	FILE *f;

	snprintf(path, sizeof(path), "%s/memory.events", dir);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fscanf(f, "%63s %lld", key, &v) == 2)
		if (!strcmp(key, "oom_kill"))
			kills = v;
	fclose(f);
	return kills;
}

/* A fresh child cgroup with the memory controller; skips without one. */
static void cg_setup(void)
{
	char path[256];
	struct stat st;

	if (geteuid())
		tap_skip("needs root");
	snprintf(path, sizeof(path), "%s/cgroup.controllers", CG_ROOT);
	if (stat(path, &st)) {
		mkdir(CG_ROOT, 0755);
		ASSERT_EQ(mount("cgroup2", CG_ROOT, "cgroup2", 0, NULL) ? errno : 0,
			  0);
	}
	snprintf(path, sizeof(path), "%s/cgroup.subtree_control", CG_ROOT);
	ASSERT_EQ(write_file(path, "+memory"), 0);
	snprintf(cg_dir, sizeof(cg_dir), "%s/dq-memcg-%d", CG_ROOT, getpid());
	ASSERT_EQ(mkdir(cg_dir, 0755) ? errno : 0, 0);
}

static void cg_teardown(void)
{
	rmdir(cg_dir);
}

/* Run @fn in a child process placed in cg_dir; its exit status. */
static int in_cgroup(void (*fn)(int), int arg)
{
	pid_t pid = fork();
	int status;

	if (pid < 0)
		return -errno;
	if (!pid) {
		char path[256], me[32];

		snprintf(path, sizeof(path), "%s/cgroup.procs", cg_dir);
		snprintf(me, sizeof(me), "%d", getpid());
		if (write_file(path, me))
			_exit(90);
		fn(arg);
		_exit(0);
	}
	if (waitpid(pid, &status, 0) != pid)
		return -errno;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

#define ARENA_SLOTS	(64 * 1024)	/* x 512 B = 32 MiB */
#define ARENA_SLOT_SIZE	512

/*
 * In the cgroup: memory.current before the setup, after it, after the
 * close; exit 0 when the charge is right, 10+ for each kind of wrong.
 */
static void charge_child(int unused)
{
	struct dqt_queue q;
	long long before, during, after;
	unsigned long long arena = (unsigned long long)ARENA_SLOTS * ARENA_SLOT_SIZE;

	(void)unused;
	before = read_ll(cg_dir, "memory.current");
	if (dqt_queue_init(&q, &DQT_PARAMS(.slot_count = ARENA_SLOTS,
					   .slot_size = ARENA_SLOT_SIZE)))
		_exit(10);
	during = read_ll(cg_dir, "memory.current");
	dqt_queue_fini(&q);
	/* The queue is freed with its last file: the close above. */
	after = read_ll(cg_dir, "memory.current");
	printf("# memory.current: before %lld, with the queue %lld (+%lld, arena %llu), after close %lld\n",
	       before, during, during - before, arena, after);
	fflush(stdout);
	if (before < 0 || during < 0 || after < 0)
		_exit(11);
	/* Arena + rings + records; the mappings' page tables on top. */
	if ((unsigned long long)(during - before) < arena)
		_exit(12);
	if ((unsigned long long)(during - before) > arena + arena / 4 + 4 * MIB)
		_exit(13);
	if (after > before + (long long)(2 * MIB))
		_exit(14);
}

TEST_TIMEOUT(arena_charged_to_creator_cgroup, 120)
{
	cg_setup();
	EXPECT_EQ(in_cgroup(charge_child, 0), 0);
	cg_teardown();
}

/* In a cgroup whose memory.max is below the arena: -ENOMEM, alive. */
static void limit_child(int unused)
{
	struct dqt_queue q;
	int ret;

	(void)unused;
	ret = dqt_queue_init(&q, &DQT_PARAMS(.slot_count = ARENA_SLOTS,
					     .slot_size = ARENA_SLOT_SIZE));
	printf("# setup of a 32 MiB arena under memory.max 8 MiB: %s\n",
	       ret ? strerror(-ret) : "succeeded");
	fflush(stdout);
	if (!ret) {
		dqt_queue_fini(&q);
		_exit(20);
	}
	if (ret != -ENOMEM)
		_exit(21);
	/* Still usable for a queue that fits. */
	if (dqt_queue_init(&q, &DQT_PARAMS(.slot_count = 64, .slot_size = 64)))
		_exit(22);
	dqt_queue_fini(&q);
}

TEST_TIMEOUT(memory_max_below_arena_enomem, 120)
{
	char path[256];

	cg_setup();
	snprintf(path, sizeof(path), "%s/memory.max", cg_dir);
	ASSERT_EQ(write_file(path, "8388608"), 0);
	EXPECT_EQ(in_cgroup(limit_child, 0), 0);
	EXPECT_EQ(oom_kills(cg_dir), 0LL);
	cg_teardown();
}

TAP_MAIN()
