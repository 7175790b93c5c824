/* SPDX-License-Identifier: MIT */
/*
 * <linux/types.h> for kmod/shared/ in user space: the system's uapi
 * header, plus the kernel's own spellings.  u64 is __u64 (as in the
 * kernel), so a u64 * and a __u64 * point to the same type.
 */
#ifndef DQ_COMPAT_LINUX_TYPES_H
#define DQ_COMPAT_LINUX_TYPES_H

#include_next <linux/types.h>
#include <stdbool.h>
#include <stddef.h>

typedef __u64 u64;
typedef __u32 u32;
typedef __u16 u16;
typedef __u8 u8;
typedef __s64 s64;
typedef __s32 s32;

#endif
