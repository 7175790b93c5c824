/* SPDX-License-Identifier: MIT */
/* <linux/build_bug.h> for kmod/shared/ in user space: static_assert. */
#ifndef DQ_COMPAT_LINUX_BUILD_BUG_H
#define DQ_COMPAT_LINUX_BUILD_BUG_H

#include <assert.h>

#endif
