// SPDX-License-Identifier: LGPL-2.1 OR MIT
/*
 * relmodel.c - see relmodel.h.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "relmodel.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

static void *rm_map(size_t bytes)
{
	void *p = mmap(NULL, bytes ? bytes : 1, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

int rm_init(struct rm *m, uint64_t cap)
{
	memset(m, 0, sizeof(*m));
	if (cap > UINT32_MAX)
		return -EOVERFLOW;
	m->m = rm_map(cap * sizeof(*m->m));
	m->seq = rm_map(cap * sizeof(*m->seq));
	if (!m->m || !m->seq) {
		rm_free(m);
		return -ENOMEM;
	}
	m->cap = cap;
	return 0;
}

void rm_free(struct rm *m)
{
	if (m->m)
		munmap(m->m, m->cap * sizeof(*m->m) ? : 1);
	if (m->seq)
		munmap(m->seq, m->cap * sizeof(*m->seq) ? : 1);
	m->m = NULL;
	m->seq = NULL;
}

__attribute__((format(printf, 2, 3)))
static void rm_note(struct rm *m, const char *fmt, ...)
{
	va_list ap;

	if (m->first[0])
		return;
	va_start(ap, fmt);
	vsnprintf(m->first, sizeof(m->first), fmt, ap);
	va_end(ap);
}

void rm_submit(struct rm *m, uint64_t id, uint16_t src, uint64_t idx,
	       uint64_t due, uint64_t now)
{
	struct rm_msg *x;

	if (id >= m->cap)
		return;
	x = &m->m[id];
	x->due = due;
	x->queued = now;
	x->in_engine = RM_UNKNOWN_TIME;
	x->idx = idx;
	x->src = src;
	x->known = 1;
	if (id >= m->hi)
		m->hi = id + 1;
}

void rm_withdraw(struct rm *m, uint64_t id)
{
	if (id < m->cap)
		m->m[id].known = 0;
}

int rm_seen(struct rm *m, uint64_t id, uint64_t now)
{
	struct rm_msg *x;

	if (id >= m->cap || !m->m[id].known) {
		m->unknown++;
		rm_note(m, "id %llu was never submitted",
			(unsigned long long)id);
		return RM_BAD_ID;
	}
	x = &m->m[id];
	if (x->seen) {
		if (x->seen < UINT8_MAX)
			x->seen++;
		m->dup++;
		rm_note(m, "id %llu seen again (at position %llu, first at %u)",
			(unsigned long long)id, (unsigned long long)m->nseen,
			x->pos);
		return RM_DUP;
	}
	x->seen = 1;
	x->pos = (uint32_t)m->nseen;
	m->seq[m->nseen++] = (uint32_t)id;
	if (now < x->due) {
		m->early++;
		rm_note(m, "id %llu seen %llu ns before its due time %llu",
			(unsigned long long)id,
			(unsigned long long)(x->due - now),
			(unsigned long long)x->due);
		return RM_EARLY;
	}
	if (now - x->due > m->max_late)
		m->max_late = now - x->due;
	return 0;
}

long rm_write(const struct rm *m, FILE *f, uint64_t base)
{
	long n = 0;
	uint64_t i;

	for (i = 0; i < m->hi; i++) {
		const struct rm_msg *x = &m->m[i];

		if (!x->known)
			continue;
		if (fprintf(f, "%llu %llu %llu %llu %u %llu\n",
			    (unsigned long long)(base + i),
			    (unsigned long long)x->due,
			    (unsigned long long)x->queued,
			    (unsigned long long)x->in_engine, x->src,
			    (unsigned long long)x->idx) < 0)
			return -EIO;
		n++;
	}
	return fflush(f) ? -EIO : n;
}

long rm_read(struct rm *m, FILE *f, uint64_t base)
{
	unsigned long long ud, due, queued, in_engine, idx;
	unsigned int src;
	long n = 0;
	int r;

	while ((r = fscanf(f, "%llu %llu %llu %llu %u %llu", &ud, &due,
			   &queued, &in_engine, &src, &idx)) == 6) {
		if (ud < base || ud - base >= m->cap || src > UINT16_MAX)
			return -ERANGE;
		rm_submit(m, ud - base, (uint16_t)src, idx, due, queued);
		rm_in_engine(m, ud - base, in_engine);
		n++;
	}
	return r == EOF && !ferror(f) ? n : -EINVAL;
}

/* ---- order ------------------------------------------------------------ */

static struct rm *rm_sort_ctx;

/* Seen ids by (src, idx). */
static int rm_cmp_src_idx(const void *a, const void *b)
{
	const struct rm_msg *x = &rm_sort_ctx->m[*(const uint32_t *)a];
	const struct rm_msg *y = &rm_sort_ctx->m[*(const uint32_t *)b];

	if (x->src != y->src)
		return x->src < y->src ? -1 : 1;
	return (x->idx > y->idx) - (x->idx < y->idx);
}

/* Seen ids by (due, pos). */
static int rm_cmp_due_pos(const void *a, const void *b)
{
	const struct rm_msg *x = &rm_sort_ctx->m[*(const uint32_t *)a];
	const struct rm_msg *y = &rm_sort_ctx->m[*(const uint32_t *)b];

	if (x->due != y->due)
		return x->due < y->due ? -1 : 1;
	return (x->pos > y->pos) - (x->pos < y->pos);
}

static int rm_cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

/* Rank of @v among the sorted unique values @u[0..n): 1-based. */
static uint64_t rm_rank(const uint64_t *u, uint64_t n, uint64_t v)
{
	uint64_t lo = 0, hi = n;

	while (lo < hi) {
		uint64_t mid = lo + (hi - lo) / 2;

		if (u[mid] < v)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo + 1;
}

static void rm_flag(struct rm *m, uint8_t *bad, uint32_t b, uint32_t a,
		    const char *rule)
{
	const struct rm_msg *x = &m->m[b], *y = &m->m[a];

	if (!bad[b]) {
		bad[b] = 1;
		m->order++;
	}
	rm_note(m, "order (%s): id %u (due %llu, src %u #%llu) seen at "
		"position %u, before id %u (due %llu, src %u #%llu, in the "
		"engine by %llu) at position %u", rule, b,
		(unsigned long long)x->due, x->src, (unsigned long long)x->idx,
		x->pos, a, (unsigned long long)y->due, y->src,
		(unsigned long long)y->idx, (unsigned long long)y->in_engine,
		y->pos);
}

/*
 * Same submitter: no a before b in submission order with due(a) <=
 * due(b) may be seen after b.  Per submitter, in submission order, a
 * Fenwick tree over due ranks keeps the largest position seen so far.
 */
static void rm_order_same_src(struct rm *m, uint8_t *bad, uint32_t *ids,
			      uint64_t n, uint64_t *dues, int64_t *fen,
			      uint32_t *fen_id)
{
	uint64_t i = 0;

	rm_sort_ctx = m;
	qsort(ids, n, sizeof(*ids), rm_cmp_src_idx);
	while (i < n) {
		uint64_t j = i, k, nu = 0, r;
		uint16_t src = m->m[ids[i]].src;

		while (j < n && m->m[ids[j]].src == src)
			j++;
		for (k = i; k < j; k++)
			dues[k - i] = m->m[ids[k]].due;
		qsort(dues, j - i, sizeof(*dues), rm_cmp_u64);
		for (k = 0; k < j - i; k++)
			if (!nu || dues[nu - 1] != dues[k])
				dues[nu++] = dues[k];
		for (k = 0; k <= nu; k++)
			fen[k] = -1;
		for (k = i; k < j; k++) {
			const struct rm_msg *b = &m->m[ids[k]];
			uint64_t rb = rm_rank(dues, nu, b->due);
			int64_t best = -1;
			uint32_t best_id = 0;

			for (r = rb; r; r -= r & -r)
				if (fen[r] > best) {
					best = fen[r];
					best_id = fen_id[r];
				}
			if (best > (int64_t)b->pos)
				rm_flag(m, bad, ids[k], best_id, "same submitter");
			for (r = rb; r <= nu; r += r & -r)
				if ((int64_t)b->pos > fen[r]) {
					fen[r] = b->pos;
					fen_id[r] = ids[k];
				}
		}
		i = j;
	}
}

/*
 * Any submitters: a seen after b with max(due(a), in-engine(a)) < due(b).
 * Backwards over the sequence, the least such bound of what comes later.
 */
static void rm_order_due(struct rm *m, uint8_t *bad)
{
	uint64_t best = UINT64_MAX;
	uint32_t best_id = 0;
	uint64_t p;

	for (p = m->nseen; p--; ) {
		uint32_t id = m->seq[p];
		const struct rm_msg *x = &m->m[id];
		uint64_t t = x->in_engine > x->due ? x->in_engine : x->due;

		if (best < x->due)
			rm_flag(m, bad, id, best_id, "earlier due");
		if (t < best) {
			best = t;
			best_id = id;
		}
	}
}

/*
 * Equal due times, any submitters: a in the engine before b was queued
 * must not be seen after b.  Per due time, backwards by position.
 */
static void rm_order_ties(struct rm *m, uint8_t *bad, uint32_t *ids, uint64_t n)
{
	uint64_t i = 0;

	rm_sort_ctx = m;
	qsort(ids, n, sizeof(*ids), rm_cmp_due_pos);
	while (i < n) {
		uint64_t j = i, k, best = UINT64_MAX;
		uint32_t best_id = 0;

		while (j < n && m->m[ids[j]].due == m->m[ids[i]].due)
			j++;
		for (k = j; k-- > i; ) {
			const struct rm_msg *b = &m->m[ids[k]];

			if (best <= b->queued)
				rm_flag(m, bad, ids[k], best_id, "FIFO tie");
			if (b->in_engine < best) {
				best = b->in_engine;
				best_id = ids[k];
			}
		}
		i = j;
	}
}

uint64_t rm_finish(struct rm *m)
{
	uint64_t n = m->nseen, i;
	uint32_t *ids;
	uint64_t *dues;
	int64_t *fen;
	uint32_t *fen_id;
	uint8_t *bad;

	m->lost = 0;
	m->submitted = 0;
	for (i = 0; i < m->hi; i++) {
		m->submitted += m->m[i].known;
		if (m->m[i].known && !m->m[i].seen) {
			if (!m->lost)
				rm_note(m, "id %llu (due %llu) never seen",
					(unsigned long long)i,
					(unsigned long long)m->m[i].due);
			m->lost++;
		}
	}
	m->order = 0;
	ids = malloc((n ? n : 1) * sizeof(*ids));
	dues = malloc((n ? n : 1) * sizeof(*dues));
	fen = malloc((n + 1) * sizeof(*fen));
	fen_id = malloc((n + 1) * sizeof(*fen_id));
	bad = calloc(m->hi ? m->hi : 1, 1);
	if (!ids || !dues || !fen || !fen_id || !bad) {
		rm_note(m, "out of memory judging the order");
		m->order++;
	} else {
		memcpy(ids, m->seq, n * sizeof(*ids));
		rm_order_same_src(m, bad, ids, n, dues, fen, fen_id);
		rm_order_due(m, bad);
		rm_order_ties(m, bad, ids, n);
	}
	free(ids);
	free(dues);
	free(fen);
	free(fen_id);
	free(bad);
	return m->early + m->dup + m->unknown + m->lost + m->order;
}
