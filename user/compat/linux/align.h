/* SPDX-License-Identifier: MIT */
/* <linux/align.h> for kmod/shared/ in user space. */
#ifndef DQ_COMPAT_LINUX_ALIGN_H
#define DQ_COMPAT_LINUX_ALIGN_H

/* @x rounded up to a multiple of @a, a power of two. */
#define ALIGN(x, a)	(((x) + ((__typeof__(x))(a) - 1)) & ~((__typeof__(x))(a) - 1))

#endif
