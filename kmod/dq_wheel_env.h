/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * What dq_wheel.c needs from its environment: the kernel's list and bit
 * helpers inside dq.ko, small equivalents of our own in user space.
 */
#ifndef DQ_WHEEL_ENV_H
#define DQ_WHEEL_ENV_H

#ifdef __KERNEL__

#include <linux/bitops.h>
#include <linux/limits.h>
#include <linux/list.h>
#include <linux/types.h>

#else /* user space */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef uint64_t u64;
typedef uint32_t u32;
typedef uint16_t u16;
typedef uint8_t u8;

#ifndef U64_MAX
#define U64_MAX UINT64_MAX
#endif

struct list_head {
	struct list_head *next, *prev;
};

#define LIST_HEAD_INIT(name) { &(name), &(name) }
#define LIST_HEAD(name) struct list_head name = LIST_HEAD_INIT(name)

static inline void INIT_LIST_HEAD(struct list_head *h)
{
	h->next = h;
	h->prev = h;
}

static inline bool list_empty(const struct list_head *h)
{
	return h->next == h;
}

static inline void list_add_tail(struct list_head *n, struct list_head *h)
{
	n->prev = h->prev;
	n->next = h;
	h->prev->next = n;
	h->prev = n;
}

static inline void list_del(struct list_head *n)
{
	n->prev->next = n->next;
	n->next->prev = n->prev;
	n->next = NULL;
	n->prev = NULL;
}

#define container_of(ptr, type, member) \
	((type *)((char *)(ptr) - offsetof(type, member)))
#define list_entry(ptr, type, member) container_of(ptr, type, member)
#define list_first_entry(h, type, member) list_entry((h)->next, type, member)
#define list_last_entry(h, type, member) list_entry((h)->prev, type, member)

/* Index of the most significant set bit, counting from 1; 0 for 0. */
static inline unsigned int fls64(u64 x)
{
	return x ? 64 - (unsigned int)__builtin_clzll(x) : 0;
}

/* Index of the least significant set bit; x must not be 0. */
static inline unsigned int __ffs64(u64 x)
{
	return (unsigned int)__builtin_ctzll(x);
}

#endif /* __KERNEL__ */
#endif /* DQ_WHEEL_ENV_H */
