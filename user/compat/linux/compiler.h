/* SPDX-License-Identifier: MIT */
/* <linux/compiler.h> for kmod/shared/ in user space. */
#ifndef DQ_COMPAT_LINUX_COMPILER_H
#define DQ_COMPAT_LINUX_COMPILER_H

/*
 * One access of @x that the compiler may neither tear, merge nor repeat;
 * scalars only.  No ordering with other accesses: that is what the
 * caller's locks or acquire/release pairs are for.
 */
#define READ_ONCE(x)		(*(const volatile __typeof__(x) *)&(x))
#define WRITE_ONCE(x, val)	(*(volatile __typeof__(x) *)&(x) = (val))

#ifndef __always_inline
#define __always_inline		inline __attribute__((__always_inline__))
#endif

#endif
