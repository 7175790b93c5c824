/* SPDX-License-Identifier: MIT */
/*
 * <linux/math64.h> for kmod/shared/ in user space.  The kernel spells 64-bit
 * divisions out because 32-bit architectures have no such instruction;
 * here the compiler's own division serves.
 */
#ifndef DQ_COMPAT_LINUX_MATH64_H
#define DQ_COMPAT_LINUX_MATH64_H

#include <linux/types.h>

static inline u64 div_u64(u64 dividend, u32 divisor)
{
	return dividend / divisor;
}

static inline u64 div64_u64(u64 dividend, u64 divisor)
{
	return dividend / divisor;
}

#endif
