/* SPDX-License-Identifier: MIT */
/* <linux/bitops.h> for kmod/shared/ in user space: the bit searches it uses. */
#ifndef DQ_COMPAT_LINUX_BITOPS_H
#define DQ_COMPAT_LINUX_BITOPS_H

#include <linux/types.h>

/* Position of the most significant set bit, counting from 1; 0 for 0. */
static inline unsigned int fls64(u64 x)
{
	return x ? 64 - (unsigned int)__builtin_clzll(x) : 0;
}

/* Index of the least significant set bit; @x must not be 0. */
static inline unsigned int __ffs64(u64 x)
{
	return (unsigned int)__builtin_ctzll(x);
}

#endif
