/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Every difference between the kernels dq builds for (6.1 .. 6.18) lives
 * here, so the rest of the module is written against one API.
 */
#ifndef DQ_COMPAT_H
#define DQ_COMPAT_H

#include <linux/mm.h>
#include <linux/version.h>

/* 6.8 moved the uring_cmd API out of io_uring.h into io_uring/cmd.h. */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 8, 0)
#include <linux/io_uring/cmd.h>
#else
#include <linux/io_uring.h>
#endif

/* 6.3 made vma->vm_flags read-only and added vm_flags_{set,clear,mod}(). */
static inline void dq_vma_flags_set(struct vm_area_struct *vma,
				    unsigned long set, unsigned long clear)
{
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 3, 0)
	vm_flags_mod(vma, set, clear);
#else
	vma->vm_flags = (vma->vm_flags | set) & ~clear;
#endif
}

/*
 * The command payload: 6.4 replaced io_uring_cmd->cmd with ->sqe and the
 * io_uring_sqe_cmd() accessor.
 */
static inline const void *dq_uring_cmd_payload(const struct io_uring_cmd *cmd)
{
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 4, 0)
	return io_uring_sqe_cmd(cmd->sqe);
#else
	return cmd->cmd;
#endif
}

/*
 * Completing a parked command.  issue_flags joined io_uring_cmd_done() and
 * the task-work callback in 6.3 and was backported to 6.1.y (6.1.22);
 * 6.18 dropped the unused res2 argument.  dq does not build on 6.1 point
 * releases older than that backport.
 */
#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 1, 22)
#error "dq needs the uring_cmd issue_flags API (6.1.22 or later)"
#endif

static inline void dq_uring_cmd_done(struct io_uring_cmd *cmd, int ret,
				     unsigned int issue_flags)
{
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 18, 0)
	io_uring_cmd_done(cmd, ret, issue_flags);
#else
	io_uring_cmd_done(cmd, ret, 0, issue_flags);
#endif
}

/*
 * 6.7 lets a parked command be cancelled when its ring goes away: the
 * driver marks it cancelable and ->uring_cmd() is called again with
 * IO_URING_F_CANCEL.  Before that a parked command must end by itself,
 * which is why dq bounds every parked WAIT there (DQ_URING_MAX_PARK_NS).
 */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 7, 0)
#define DQ_HAVE_URING_CANCEL	1
static inline void dq_uring_cmd_mark_cancelable(struct io_uring_cmd *cmd,
						unsigned int issue_flags)
{
	io_uring_cmd_mark_cancelable(cmd, issue_flags);
}

static inline bool dq_uring_is_cancel(unsigned int issue_flags)
{
	return issue_flags & IO_URING_F_CANCEL;
}
#else
#define DQ_HAVE_URING_CANCEL	0
static inline void dq_uring_cmd_mark_cancelable(struct io_uring_cmd *cmd,
						unsigned int issue_flags)
{
}

static inline bool dq_uring_is_cancel(unsigned int issue_flags)
{
	return false;
}
#endif

/*
 * KUnit visibility (kmod/tests/dq_kunit.c): helpers that are static in a
 * normal build become global and exported to the test namespace when the
 * kernel has KUnit.  <kunit/visibility.h> came with 6.2; 6.13 made
 * MODULE_IMPORT_NS() take a string.
 */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 2, 0)
#include <kunit/visibility.h>
#else
#if IS_ENABLED(CONFIG_KUNIT)
#define VISIBLE_IF_KUNIT
#define dq_export_if_kunit(symbol) \
	EXPORT_SYMBOL_NS(symbol, EXPORTED_FOR_KUNIT_TESTING)
#else
#define VISIBLE_IF_KUNIT static
#define dq_export_if_kunit(symbol)
#endif
/* An alias, so checkpatch does not take the definition for an export. */
#define EXPORT_SYMBOL_IF_KUNIT dq_export_if_kunit
#endif

#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 13, 0)
#define DQ_IMPORT_KUNIT_NS() MODULE_IMPORT_NS("EXPORTED_FOR_KUNIT_TESTING")
#else
#define DQ_IMPORT_KUNIT_NS() MODULE_IMPORT_NS(EXPORTED_FOR_KUNIT_TESTING)
#endif

#endif /* DQ_COMPAT_H */
