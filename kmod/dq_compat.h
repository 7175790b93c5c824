/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Every difference between the kernels dq builds for lives here, so the
 * rest of the module is written against one API.  Where the kernel offers
 * a macro to test for a feature this header tests it; otherwise it checks
 * LINUX_VERSION_CODE, and each check names the kernel change behind it.
 *
 * The supported range is DQ_KERNEL_MIN .. DQ_KERNEL_MAX: the kernels the
 * lab builds, boots and tests (selftests/vm/kernels.conf, make check)
 * bound it.  A kernel outside it stops the build with one #error line; a
 * newer kernel can be tried with DQ_UNTESTED_KERNEL=1 in the environment
 * of make (Kbuild turns it into -DDQ_UNTESTED_KERNEL), at the risk of a
 * cascade of errors if its API moved again.  README.md ("Kernels") says
 * how to add a kernel.
 *
 * Differences that need no code:
 *  - 6.12 removed no_llseek.  dq_open() calls nonseekable_open(), which
 *    clears FMODE_LSEEK, and every kernel since 5.x answers lseek() on
 *    such a file with -ESPIPE before looking at ->llseek, so dq_fops sets
 *    no ->llseek at all.
 *  - <linux/hrtimer.h> is the same header everywhere; only the way a
 *    timer is set up changed (dq_hrtimer_setup() below).
 *  - struct time_namespace, its offsets and nsproxy->time_ns are the same
 *    from 6.1 to 7.3 (7.2 put the vvar_page field, which dq does not use,
 *    under CONFIG_TIME_NS_VDSO).  What differs is the config: see
 *    dq_timens_mono_offset() below.
 */
#ifndef DQ_COMPAT_H
#define DQ_COMPAT_H

#include <linux/hrtimer.h>
#include <linux/mm.h>
#include <linux/nsproxy.h>
#include <linux/sched.h>
#include <linux/time_namespace.h>
#include <linux/version.h>

/*
 * The range.  Lower bound: the issue_flags argument of io_uring_cmd_done()
 * and of the uring_cmd task-work callback ("block/io_uring: pass in
 * issue_flags for uring_cmd task_work handling", 6.3) reached 6.1.y in
 * 6.1.23; 6.2.y is not supported.  Upper bound: the newest kernel of the
 * lab's matrix.
 */
#define DQ_KERNEL_MIN		KERNEL_VERSION(6, 1, 23)
#define DQ_KERNEL_MAX		KERNEL_VERSION(7, 3, 255)

#if LINUX_VERSION_CODE < DQ_KERNEL_MIN || \
	(LINUX_VERSION_CODE >= KERNEL_VERSION(6, 2, 0) && \
	 LINUX_VERSION_CODE < KERNEL_VERSION(6, 3, 0))
#error "dq needs Linux 6.1.23 or later (6.1.y from 6.1.23, or 6.3+; not 6.2.y)"
#elif LINUX_VERSION_CODE > DQ_KERNEL_MAX && !defined(DQ_UNTESTED_KERNEL)
#error "dq is tested up to Linux 7.3.y: make DQ_UNTESTED_KERNEL=1 to try this newer kernel"
#endif

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
 * io_uring_sqe_cmd() accessor; 7.0 made that a macro taking the payload's
 * type, to check at build time that it fits the SQE's 16-byte command
 * area.  dq's payloads are all 16 bytes at most (uapi/linux/dq.h), so the
 * check is made for the whole area.
 */
struct dq_uring_cmd_area {
	u8 bytes[16];
};

static inline const void *dq_uring_cmd_payload(const struct io_uring_cmd *cmd)
{
#if LINUX_VERSION_CODE >= KERNEL_VERSION(7, 0, 0)
	return io_uring_sqe_cmd(cmd->sqe, struct dq_uring_cmd_area);
#elif LINUX_VERSION_CODE >= KERNEL_VERSION(6, 4, 0)
	return io_uring_sqe_cmd(cmd->sqe);
#else
	return cmd->cmd;
#endif
}

/*
 * Completing a parked command.  issue_flags joined io_uring_cmd_done() and
 * the task-work callback in 6.3 and 6.1.23 (DQ_KERNEL_MIN above); 6.18
 * dropped the unused res2 argument.
 */
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
 * The callback of io_uring_cmd_complete_in_task().  Up to 6.18 it is
 * void (*)(struct io_uring_cmd *, unsigned int issue_flags); 6.19 made it
 * io_uring's generic void (*)(struct io_tw_req, io_tw_token_t), the
 * command coming from io_uring_cmd_from_tw() and the issue flags being
 * IO_URING_CMD_TASK_WORK_ISSUE_FLAGS.  DQ_URING_TASK_WORK(name, fn)
 * defines name(), of the kernel's type, which calls
 * fn(struct io_uring_cmd *cmd, unsigned int issue_flags).
 */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 19, 0)
#define DQ_URING_TASK_WORK(name, fn)					\
static void name(struct io_tw_req tw_req, io_tw_token_t tw)		\
{									\
	fn(io_uring_cmd_from_tw(tw_req),				\
	   IO_URING_CMD_TASK_WORK_ISSUE_FLAGS);				\
}
#else
#define DQ_URING_TASK_WORK(name, fn)					\
static void name(struct io_uring_cmd *cmd, unsigned int issue_flags)	\
{									\
	fn(cmd, issue_flags);						\
}
#endif

/*
 * Timers: 6.13 added hrtimer_setup(), which takes the callback with the
 * clock and the mode; 6.15 deleted hrtimer_init().
 */
static inline void
dq_hrtimer_setup(struct hrtimer *timer,
		 enum hrtimer_restart (*fn)(struct hrtimer *),
		 clockid_t clock, enum hrtimer_mode mode)
{
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 13, 0)
	hrtimer_setup(timer, fn, clock, mode);
#else
	hrtimer_init(timer, clock, mode);
	timer->function = fn;
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
 * RLIMIT_MEMLOCK accounting (dq_queue.c) charges the creator's
 * user_struct->locked_vm, the per-user count of pinned pages that
 * io_uring's registered buffers, AF_XDP umems and RDMA share.  It is an
 * atomic_long_t of pages on every kernel of the range, but whether it
 * exists depends on the config: 6.1, 6.12 and 7.3 have it with CONFIG_NET
 * (or IO_URING, VFIO_PCI_ZDEV_KVM, IOMMUFD, SECRETMEM); the lab's 7.2
 * headers list PERF_EVENTS and BPF_SYSCALL as well.  Every list has
 * CONFIG_NET, which dq needs anyway for its netlink family: with it the
 * field is there, and the build says so plainly otherwise.
 */
#include <linux/sched/user.h>

#if !IS_ENABLED(CONFIG_NET)
#error "dq needs CONFIG_NET (its generic netlink family; user_struct->locked_vm)"
#endif

static inline atomic_long_t *dq_user_locked_vm(struct user_struct *user)
{
	return &user->locked_vm;
}

/*
 * Time namespaces (CLONE_NEWTIME): the calling task's CLOCK_MONOTONIC is
 * the host's plus its time namespace's monotonic offset; this returns
 * that offset in ns (0 in the initial namespace).  A kernel without
 * CONFIG_TIME_NS (the debug lab's) has one clock: init_nsproxy sets
 * ->time_ns only with the option, so there it is NULL and the offset 0.
 *
 * No lock: a task's nsproxy is replaced only by the task itself (setns,
 * unshare), and the offsets of a namespace that has a task in it are
 * frozen (/proc/PID/timens_offsets can be written only before the first
 * task enters it).  The offset lies within +-KTIME_SEC_MAX s, so it is
 * never S64_MIN and may be negated.  nsproxy is NULL only in do_exit()
 * after exit_task_namespaces(), where dq is not asked for a clock; 0 then
 * rather than an oops.
 */
static inline s64 dq_timens_mono_offset(void)
{
#if IS_ENABLED(CONFIG_TIME_NS)
	struct nsproxy *nsp = current->nsproxy;

	if (nsp && nsp->time_ns)
		return timespec64_to_ns(&nsp->time_ns->offsets.monotonic);
#endif
	return 0;
}

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
