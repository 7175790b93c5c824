/* SPDX-License-Identifier: MIT */
/* <linux/bits.h> for kmod/shared/ in user space. */
#ifndef DQ_COMPAT_LINUX_BITS_H
#define DQ_COMPAT_LINUX_BITS_H

#define BIT(nr)		(1UL << (nr))
#define BIT_ULL(nr)	(1ULL << (nr))

#endif
