// SPDX-License-Identifier: LGPL-2.1 OR MIT
/*
 * libdqshim: the extensible structs' size rules (dqshim.h, "Extensible
 * structs") and the entry points programs built against 0.9 and earlier
 * still bind to.
 *
 * Since 1.0 the structs the library reads or fills start with size_t sz.
 * A struct the library reads is copied into a library-sized one first:
 * the bytes the caller's sz does not cover read as zero, bytes past the
 * library's size must be zero (-E2BIG, libbpf's OPTS_VALID rule: a newer
 * program asking for a feature this library lacks fails instead of having
 * it silently ignored).  A struct the library fills is filled in a
 * library-sized copy, then min(sz, library size) bytes of it go out.
 *
 * The 0.x layouts had no sz.  Their symbols (dq_queue_open@LIBDQSHIM_0.1,
 * ...) are defined here on the old layouts, converting to the 1.0 calls,
 * so a binary linked against 0.9 runs unchanged on 1.0.
 */
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "dq_internal.h"

/* A reader's view of @src's sz, checked against @min_sz and @dst_size. */
static int dq_struct_in(void *dst, size_t dst_size, const void *src,
			size_t min_sz)
{
	const unsigned char *b = src;
	size_t sz, i;

	memcpy(&sz, src, sizeof(sz));
	if (sz < min_sz)
		return -EINVAL;
	for (i = dst_size; i < sz; i++)
		if (b[i])
			return -E2BIG;
	memset(dst, 0, dst_size);
	memcpy(dst, src, sz < dst_size ? sz : dst_size);
	memcpy(dst, &dst_size, sizeof(dst_size));
	return 0;
}

int dq_params_in(struct dq_params *dst, const struct dq_params *p)
{
	return dq_struct_in(dst, sizeof(*dst), p, DQ_PARAMS_SZ_MIN);
}

int dq_journal_params_in(struct dq_journal_params *dst,
			 const struct dq_journal_params *jp)
{
	return dq_struct_in(dst, sizeof(*dst), jp, DQ_JOURNAL_PARAMS_SZ_MIN);
}

int dq_struct_out_check(const void *dst)
{
	size_t sz;

	memcpy(&sz, dst, sizeof(sz));
	return sz < sizeof(size_t) ? -EINVAL : 0;
}

void dq_struct_out(void *dst, const void *src, size_t src_size)
{
	size_t sz;

	memcpy(&sz, dst, sizeof(sz));
	if (sz > src_size)
		sz = src_size;
	memcpy((char *)dst + sizeof(sz), (const char *)src + sizeof(sz),
	       sz - sizeof(sz));
	memcpy(dst, &sz, sizeof(sz));
}

/* ---- the 0.x layouts: everything of 1.0 but the leading sz ---------- */

struct dq_params_v0 {
	uint32_t slot_count;
	uint32_t slot_size;
	uint32_t submit_entries;
	uint32_t ready_entries;
	int32_t numa_node;
	uint32_t granularity_ns;
	uint32_t backend;
	uint32_t uring_depth;
	uint32_t flags;
	uint32_t max_inflight;
	dq_reject_fn on_reject;
	void *reject_arg;
	uint64_t visibility_ns;	/* 0.9; read only with DQ_OPEN_F_VISIBILITY */
};

struct dq_journal_params_v0 {
	const char *dir;
	uint32_t durability;
	uint32_t sync_interval_us;
	uint32_t sync_records;
	uint32_t flags;
	uint64_t max_bytes;
	uint64_t segment_bytes;
	uint64_t resv[4];
};

/* The new struct is the old one behind sz: the old bytes copy as they are. */
#define DQ_V0_LAYOUT(newt, oldt)					\
	_Static_assert(sizeof(struct newt) - sizeof(size_t) ==		\
		       sizeof(struct oldt), #newt " is " #oldt " plus sz")
DQ_V0_LAYOUT(dq_params, dq_params_v0);
DQ_V0_LAYOUT(dq_journal_params, dq_journal_params_v0);

static void dq_params_from_v0(struct dq_params *p,
			      const struct dq_params_v0 *o)
{
	/* A 0.8 program's struct ends before visibility_ns. */
	size_t n = o->flags & DQ_OPEN_F_VISIBILITY ? sizeof(*o) :
		   offsetof(struct dq_params_v0, visibility_ns);

	memset(p, 0, sizeof(*p));
	p->sz = sizeof(*p);
	memcpy((char *)p + sizeof(p->sz), o, n);
}

static void dq_jparams_from_v0(struct dq_journal_params *jp,
			       const struct dq_journal_params_v0 *o)
{
	jp->sz = sizeof(*jp);
	memcpy((char *)jp + sizeof(jp->sz), o, sizeof(*o));
}

#define DQ_COMPAT(impl, sym, ver) \
	__asm__(".symver " #impl ", " #sym "@" #ver)

DQ_API void dq_params_init_v0(struct dq_params_v0 *p);
DQ_COMPAT(dq_params_init_v0, dq_params_init, LIBDQSHIM_0.1);
DQ_API void dq_params_init_v0(struct dq_params_v0 *p)
{
	/* As 0.9 did: not visibility_ns, which a 0.8 program lacks. */
	memset(p, 0, offsetof(struct dq_params_v0, visibility_ns));
	p->slot_count = DQ_DEFAULT_SLOTS;
	p->slot_size = DQ_MIN_SLOT_SIZE;
	p->numa_node = -1;
	p->backend = DQ_BACKEND_AUTO;
}

DQ_API void dq_journal_params_init_v0(struct dq_journal_params_v0 *jp,
				      const char *dir,
				      enum dq_durability durability);
DQ_COMPAT(dq_journal_params_init_v0, dq_journal_params_init, LIBDQSHIM_0.5);
DQ_API void dq_journal_params_init_v0(struct dq_journal_params_v0 *jp,
				      const char *dir,
				      enum dq_durability durability)
{
	memset(jp, 0, sizeof(*jp));
	jp->dir = dir;
	jp->durability = durability;
}

DQ_API int dq_queue_open_v0(const struct dq_params_v0 *o,
			    struct dqshim_queue **out);
DQ_COMPAT(dq_queue_open_v0, dq_queue_open, LIBDQSHIM_0.1);
DQ_API int dq_queue_open_v0(const struct dq_params_v0 *o,
			    struct dqshim_queue **out)
{
	struct dq_params p;

	if (!o)
		return dq_queue_open(NULL, out);
	dq_params_from_v0(&p, o);
	return dq_queue_open(&p, out);
}

DQ_API int dq_queue_attach_v0(const char *name, const struct dq_params_v0 *o,
			      struct dqshim_queue **out);
DQ_COMPAT(dq_queue_attach_v0, dq_queue_attach, LIBDQSHIM_0.1);
DQ_API int dq_queue_attach_v0(const char *name, const struct dq_params_v0 *o,
			      struct dqshim_queue **out)
{
	struct dq_params p;

	if (!o)
		return dq_queue_attach(name, NULL, out);
	dq_params_from_v0(&p, o);
	return dq_queue_attach(name, &p, out);
}

DQ_API int dq_queue_open_durable_v0(const struct dq_params_v0 *o,
				    const struct dq_journal_params_v0 *ojp,
				    struct dqshim_queue **out);
DQ_COMPAT(dq_queue_open_durable_v0, dq_queue_open_durable, LIBDQSHIM_0.5);
DQ_API int dq_queue_open_durable_v0(const struct dq_params_v0 *o,
				    const struct dq_journal_params_v0 *ojp,
				    struct dqshim_queue **out)
{
	struct dq_journal_params jp;
	struct dq_params p;

	if (o)
		dq_params_from_v0(&p, o);
	if (ojp)
		dq_jparams_from_v0(&jp, ojp);
	return dq_queue_open_durable(o ? &p : NULL, ojp ? &jp : NULL, out);
}

DQ_API int dq_queue_attach_durable_v0(const char *name,
				      const struct dq_params_v0 *o,
				      const struct dq_journal_params_v0 *ojp,
				      struct dqshim_queue **out);
DQ_COMPAT(dq_queue_attach_durable_v0, dq_queue_attach_durable, LIBDQSHIM_0.6);
DQ_API int dq_queue_attach_durable_v0(const char *name,
				      const struct dq_params_v0 *o,
				      const struct dq_journal_params_v0 *ojp,
				      struct dqshim_queue **out)
{
	struct dq_journal_params jp;
	struct dq_params p;

	if (o)
		dq_params_from_v0(&p, o);
	if (ojp)
		dq_jparams_from_v0(&jp, ojp);
	return dq_queue_attach_durable(name, o ? &p : NULL, ojp ? &jp : NULL,
				       out);
}

/* The filled structs: 0.x had them without sz, at their full size. */
#define DQ_FILL_V0(type, call, ver)					\
	DQ_API int call##_v0(struct dqshim_queue *q, void *st);		\
	DQ_COMPAT(call##_v0, call, ver);				\
	DQ_API int call##_v0(struct dqshim_queue *q, void *st)		\
	{								\
		struct type n = { .sz = sizeof(n) };			\
		int ret = call(q, &n);					\
									\
		memcpy(st, (char *)&n + sizeof(n.sz),			\
		       sizeof(n) - sizeof(n.sz));			\
		return ret;						\
	}

DQ_FILL_V0(dq_info, dq_queue_info, LIBDQSHIM_0.1)
DQ_FILL_V0(dq_lib_stats, dq_queue_lib_stats, LIBDQSHIM_0.7)
DQ_FILL_V0(dq_journal_stats, dq_journal_stats, LIBDQSHIM_0.5)
