// SPDX-License-Identifier: LGPL-2.1 OR MIT
/*
 * The extensible structs' size rules (dqshim.h, "Extensible structs") and
 * the 0.x entry points (src/dq_abi.c), on the user backend.
 *
 * Sizes are the test's own: a caller of an older header is a struct cut
 * short with sz saying so and garbage past it; a caller of a newer header
 * is the struct followed by a field this library does not know.  A
 * program built against 0.9 is simulated exactly: its calls are looked up
 * with dlvsym() at their 0.x versions, as the dynamic linker binds such a
 * program's references, and given the 0.9 layouts (declared here, not
 * taken from the library's sources).
 */
#include <dlfcn.h>
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dqshim.h"
#include "tap.h"

/* The 0.9 layouts, as dqshim.h 0.9 declared them. */
struct params_09 {
	uint32_t slot_count, slot_size, submit_entries, ready_entries;
	int32_t numa_node;
	uint32_t granularity_ns, backend, uring_depth, flags, max_inflight;
	dq_reject_fn on_reject;
	void *reject_arg;
	uint64_t visibility_ns;
};

struct jparams_09 {
	const char *dir;
	uint32_t durability, sync_interval_us, sync_records, flags;
	uint64_t max_bytes, segment_bytes, resv[4];
};

struct info_09 {
	uint32_t backend, path;
	int fd;
	int32_t numa_node;
	uint32_t queue_id, abi_version, features, slot_count, slot_size;
	uint32_t submit_entries, ready_entries, granularity_ns;
	void *arena;
	uint64_t arena_size;
};

#define CANARY	0xa5a5a5a5a5a5a5a5ULL

/* A caller of a newer header: one more field, unknown to this library. */
struct params_next {
	struct dq_params p;
	uint64_t next;
};

static void params_user(struct dq_params *p)
{
	dq_params_init(p);
	p->backend = DQ_BACKEND_USER;
	p->slot_count = 16;
	p->slot_size = 128;
}

/* Open then check the queue got the caller's sizes; closes it. */
static int open_check(const struct dq_params *p)
{
	struct dq_info info = { .sz = sizeof(info) };
	struct dqshim_queue *q;
	int ret = dq_queue_open(p, &q);

	if (ret)
		return ret;
	CHECK_EQ(dq_queue_info(q, &info), 0);
	CHECK_EQ(info.slot_count, 16);
	CHECK_EQ(info.slot_size, 128);
	dq_queue_close(q);
	return 0;
}

TEST(params_sz, 10)
{
	struct params_next big;
	struct dq_params p;

	params_user(&p);
	CHECK_EQ(p.sz, sizeof(struct dq_params));
	CHECK_EQ(open_check(&p), 0);

	/*
	 * An older caller: sz ends before visibility_ns, and the bytes past
	 * it are garbage the library must not read.  Read, visibility_ns 1
	 * would be refused (below DQ_MIN_VISIBILITY_NS): -EINVAL.
	 */
	p.flags = DQ_OPEN_F_TRACK | DQ_OPEN_F_VISIBILITY;
	p.visibility_ns = 1;
	CHECK_EQ(dq_queue_open(&p, &(struct dqshim_queue *){ NULL }), -EINVAL);
	p.sz = offsetof(struct dq_params, visibility_ns);
	CHECK_EQ(open_check(&p), 0);
	p.sz = DQ_PARAMS_SZ_MIN;
	CHECK_EQ(open_check(&p), 0);

	/* Shorter than any release's struct: refused. */
	p.sz = DQ_PARAMS_SZ_MIN - 1;
	CHECK_EQ(open_check(&p), -EINVAL);
	p.sz = 0;
	CHECK_EQ(open_check(&p), -EINVAL);

	/* A newer caller: its unknown field zero is fine, else -E2BIG. */
	memset(&big, 0xff, sizeof(big));
	params_user(&big.p);
	big.p.sz = sizeof(big);
	big.next = 0;
	CHECK_EQ(open_check(&big.p), 0);
	big.next = 1ULL << 63;
	CHECK_EQ(open_check(&big.p), -E2BIG);
	/* attach and the durable calls read it through the same rule */
	CHECK_EQ(dq_queue_attach("abi", &big.p, &(struct dqshim_queue *){ NULL }),
		 -E2BIG);
}

TEST(journal_params_sz, 10)
{
	struct {
		struct dq_journal_params jp;
		uint64_t next;
	} big;
	char dir[] = "/tmp/dq-abi-XXXXXX";
	struct dqshim_queue *q;
	struct dq_params p;

	REQUIRE(mkdtemp(dir));
	params_user(&p);
	memset(&big, 0, sizeof(big));
	dq_journal_params_init(&big.jp, dir, DQ_DURABLE_BATCH);
	CHECK_EQ(big.jp.sz, sizeof(struct dq_journal_params));
	big.jp.sz = sizeof(big);
	big.next = 7;
	CHECK_EQ(dq_queue_open_durable(&p, &big.jp, &q), -E2BIG);
	CHECK(q == NULL);
	big.jp.sz = DQ_JOURNAL_PARAMS_SZ_MIN - 1;
	CHECK_EQ(dq_queue_open_durable(&p, &big.jp, &q), -EINVAL);
	big.jp.sz = sizeof(big);
	big.next = 0;
	REQUIRE_EQ(dq_queue_open_durable(&p, &big.jp, &q), 0);
	{
		struct dq_journal_stats js = { .sz = sizeof(js) };

		CHECK_EQ(dq_journal_stats(q, &js), 0);
		CHECK_EQ(js.durability, DQ_DURABLE_BATCH);
		CHECK_EQ(js.sz, sizeof(js));
	}
	dq_queue_close(q);
	{
		char cmd[64];

		snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
		CHECK_EQ(system(cmd), 0);
	}
}

TEST(filled_sz, 10)
{
	struct {
		struct dq_info info;
		uint64_t next;
	} big;
	struct dq_lib_stats ls;
	struct dqshim_queue *q;
	struct dq_params p;
	size_t cut = offsetof(struct dq_info, arena);

	params_user(&p);
	REQUIRE_EQ(dq_queue_open(&p, &q), 0);

	/* An older caller: nothing past its sz is written. */
	memset(&big, 0xa5, sizeof(big));
	big.info.sz = cut;
	CHECK_EQ(dq_queue_info(q, &big.info), 0);
	CHECK_EQ(big.info.sz, cut);
	CHECK_EQ(big.info.slot_count, 16);
	CHECK_EQ(big.info.slot_size, 128);
	CHECK_EQ(big.info.backend, DQ_BACKEND_USER);
	CHECK_EQ((uint64_t)(uintptr_t)big.info.arena, (uint64_t)(uintptr_t)CANARY);
	CHECK_EQ(big.info.arena_size, CANARY);
	CHECK_EQ(big.next, CANARY);

	/* A newer caller: sz comes back as what was filled, the rest left. */
	big.info.sz = sizeof(big);
	CHECK_EQ(dq_queue_info(q, &big.info), 0);
	CHECK_EQ(big.info.sz, sizeof(struct dq_info));
	CHECK(big.info.arena != NULL);
	CHECK_EQ(big.next, CANARY);

	big.info.sz = 0;
	CHECK_EQ(dq_queue_info(q, &big.info), -EINVAL);
	memset(&ls, 0xa5, sizeof(ls));
	ls.sz = offsetof(struct dq_lib_stats, resv);
	CHECK_EQ(dq_queue_lib_stats(q, &ls), 0);
	CHECK_EQ(ls.resv[0], CANARY);
	CHECK_EQ(ls.wakeups_idle, 0);
	dq_queue_close(q);
}

/* A program linked against 0.9: its calls bind to the 0.x versions. */
#define OLD(sym, ver) dlvsym(RTLD_DEFAULT, #sym, ver)

TEST(binary_0_9, 10)
{
	void (*init)(struct params_09 *) = OLD(dq_params_init, "LIBDQSHIM_0.1");
	int (*open)(const struct params_09 *, struct dqshim_queue **) =
		OLD(dq_queue_open, "LIBDQSHIM_0.1");
	int (*info)(struct dqshim_queue *, struct info_09 *) =
		OLD(dq_queue_info, "LIBDQSHIM_0.1");
	void (*jinit)(struct jparams_09 *, const char *, enum dq_durability) =
		OLD(dq_journal_params_init, "LIBDQSHIM_0.5");
	int (*open_durable)(const struct params_09 *, const struct jparams_09 *,
			    struct dqshim_queue **) =
		OLD(dq_queue_open_durable, "LIBDQSHIM_0.5");
	struct {
		struct params_09 p;
		uint64_t after;
	} o;
	struct {
		struct info_09 i;
		uint64_t after;
	} oi;
	struct jparams_09 jp;
	char dir[] = "/tmp/dq-abi-XXXXXX", cmd[64];
	struct dqshim_queue *q;
	struct dqshim_msg m;
	struct dq_reaped r;

	REQUIRE(init && open && info && jinit && open_durable);

	/* 0.9's init: visibility_ns left alone (0.8 programs lack it). */
	memset(&o, 0xa5, sizeof(o));
	init(&o.p);
	CHECK_EQ(o.p.slot_count, 1024);
	CHECK_EQ(o.p.numa_node, -1);
	CHECK_EQ(o.p.flags, 0);
	CHECK_EQ(o.p.visibility_ns, CANARY);
	CHECK_EQ(o.after, CANARY);
	o.p.backend = DQ_BACKEND_USER;
	o.p.slot_count = 16;
	o.p.slot_size = 128;
	REQUIRE_EQ(open(&o.p, &q), 0);
	memset(&oi, 0xa5, sizeof(oi));
	CHECK_EQ(info(q, &oi.i), 0);
	CHECK_EQ(oi.i.backend, DQ_BACKEND_USER);
	CHECK_EQ(oi.i.slot_count, 16);
	CHECK_EQ(oi.i.slot_size, 128);
	CHECK_EQ(oi.i.arena_size >= 16 * 128, 1);
	CHECK_EQ(oi.after, CANARY);
	/* and the queue works */
	REQUIRE_EQ(dq_reserve(q, &m), 0);
	memcpy(m.data, "abi", 3);
	REQUIRE_EQ(dq_commit(q, &m, 3, 0, 42), 0);
	REQUIRE_EQ(dq_flush(q), 1);
	REQUIRE_EQ(dq_reap(q, &r, 1, 1000000000LL), 1);
	CHECK_EQ(r.user_data, 42);
	CHECK_EQ(r.len, 3);
	CHECK_EQ(memcmp(r.data, "abi", 3), 0);
	CHECK_EQ(dq_done(q, r.slot), 0);
	dq_queue_close(q);

	/* A 0.9 durable open: the 0.9 journal layout. */
	REQUIRE(mkdtemp(dir));
	jinit(&jp, dir, DQ_DURABLE_ALWAYS);
	REQUIRE_EQ(open_durable(&o.p, &jp, &q), 0);
	{
		struct dq_journal_stats js = { .sz = sizeof(js) };

		CHECK_EQ(dq_journal_stats(q, &js), 0);
		CHECK_EQ(js.durability, DQ_DURABLE_ALWAYS);
	}
	dq_queue_close(q);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	CHECK_EQ(system(cmd), 0);
}

int main(int argc, char **argv)
{
	return tap_main(argc, argv);
}
