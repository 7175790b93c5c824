/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * The key index of a DQ_SETUP_F_KEYS queue: which slot holds the message
 * with a given 64-bit application key.  Shared by dq.ko and libdqshim's
 * embedded engine.
 *
 * A key is unique among a queue's held and in-flight messages, and there
 * is at most one such message per slot, so the index is a chained hash
 * with its links inside two u32 arrays and no allocation after setup:
 * head[bucket] and next[slot] hold slot + 1 (0 ends a chain).  Buckets
 * are slot_count rounded up to a power of two, so a chain holds one entry
 * on average: find, add and delete are O(1).  The key itself is not
 * stored: it is the record's user_data (DQ_DESC_F_KEY), read through the
 * @key_of callback, so an index costs 8 bytes per slot (4 with one bucket
 * per slot, 4 for the link) and queues without keys pay nothing.
 *
 * Locking: the caller's.  dq.ko holds its queue's key_lock (kmod/dq.h);
 * the embedded engine its mutex.
 */
#ifndef DQ_KEYS_H
#define DQ_KEYS_H

#include <linux/types.h>

struct dq_keys {
	u32 *head;		/* 1 << bits buckets: first slot + 1, or 0 */
	u32 *next;		/* slot_count links: next slot + 1, or 0 */
	u32 bits;		/* log2 of the bucket count, >= 1 */
};

/* A slot's key: the accepted record's user_data. */
typedef u64 (*dq_key_of_fn)(const void *owner, u32 slot);

/* Buckets and bits for @slot_count slots: the bucket count is >= it. */
static inline u32 dq_keys_bits(u32 slot_count)
{
	u32 bits = 1;

	while ((1ULL << bits) < slot_count)
		bits++;
	return bits;
}

/* Fibonacci hashing: the top @bits of key * 2^64 / phi. */
static inline u32 dq_keys_bucket(const struct dq_keys *k, u64 key)
{
	return (u32)((key * 0x9e3779b97f4a7c15ULL) >> (64 - k->bits));
}

/* The slot holding @key, or U32_MAX. */
static inline u32 dq_keys_find(const struct dq_keys *k, u64 key,
			       dq_key_of_fn key_of, const void *owner)
{
	u32 at = k->head[dq_keys_bucket(k, key)];

	while (at) {
		if (key_of(owner, at - 1) == key)
			return at - 1;
		at = k->next[at - 1];
	}
	return U32_MAX;
}

/* Index @slot under @key; the caller proved @key absent. */
static inline void dq_keys_add(struct dq_keys *k, u32 slot, u64 key)
{
	u32 *head = &k->head[dq_keys_bucket(k, key)];

	k->next[slot] = *head;
	*head = slot + 1;
}

/* Unlink @slot, indexed under @key.  False when it was not there. */
static inline bool dq_keys_del(struct dq_keys *k, u32 slot, u64 key)
{
	u32 *link = &k->head[dq_keys_bucket(k, key)];

	while (*link) {
		if (*link == slot + 1) {
			*link = k->next[slot];
			k->next[slot] = 0;
			return true;
		}
		link = &k->next[*link - 1];
	}
	return false;
}

#endif /* DQ_KEYS_H */
