/* SPDX-License-Identifier: MIT */
/* <linux/log2.h> for kmod/shared/ in user space. */
#ifndef DQ_COMPAT_LINUX_LOG2_H
#define DQ_COMPAT_LINUX_LOG2_H

/* The smallest power of two >= @n; @n must be at least 1. */
static inline unsigned long roundup_pow_of_two(unsigned long n)
{
	return n <= 1 ? 1 : 1UL << (64 - __builtin_clzl(n - 1));
}

#endif
