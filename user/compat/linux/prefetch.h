/* SPDX-License-Identifier: MIT */
/* <linux/prefetch.h> for kmod/shared/ in user space: hints only. */
#ifndef DQ_COMPAT_LINUX_PREFETCH_H
#define DQ_COMPAT_LINUX_PREFETCH_H

#define prefetch(x)	__builtin_prefetch(x)
#define prefetchw(x)	__builtin_prefetch(x, 1)

#endif
