/* SPDX-License-Identifier: MIT */
/* <linux/limits.h> for kmod/shared/ in user space: adds the kernel's U*_MAX. */
#ifndef DQ_COMPAT_LINUX_LIMITS_H
#define DQ_COMPAT_LINUX_LIMITS_H

#include_next <linux/limits.h>
#include <stdint.h>

#ifndef U16_MAX
#define U16_MAX UINT16_MAX
#endif
#ifndef U64_MAX
#define U64_MAX UINT64_MAX
#endif
#ifndef U32_MAX
#define U32_MAX UINT32_MAX
#endif

#endif
