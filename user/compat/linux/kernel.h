/* SPDX-License-Identifier: MIT */
/* <linux/kernel.h> for kmod/shared/ in user space: the system's, plus ARRAY_SIZE. */
#ifndef DQ_COMPAT_LINUX_KERNEL_H
#define DQ_COMPAT_LINUX_KERNEL_H

#include_next <linux/kernel.h>

#ifndef ARRAY_SIZE
#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))
#endif

#endif
