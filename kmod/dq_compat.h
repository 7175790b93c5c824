/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Every difference between the kernels dq builds for (6.1 .. 6.18) lives
 * here, so the rest of the module is written against one API.
 */
#ifndef DQ_COMPAT_H
#define DQ_COMPAT_H

#include <linux/mm.h>
#include <linux/version.h>

/* 6.3 made vma->vm_flags read-only and added vm_flags_{set,clear}(). */
static inline void dq_vma_flags_set(struct vm_area_struct *vma,
				    unsigned long set, unsigned long clear)
{
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 3, 0)
	vm_flags_mod(vma, set, clear);
#else
	vma->vm_flags = (vma->vm_flags | set) & ~clear;
#endif
}

#endif /* DQ_COMPAT_H */
