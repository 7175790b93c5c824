// SPDX-License-Identifier: GPL-2.0
/*
 * dq over io_uring: IORING_OP_URING_CMD on /dev/dq.
 *
 * SUBMIT and CANCEL complete while they are issued (see dq_uring_done_now()
 * for how).  WAIT parks (-EIOCBQUEUED), kept in its own io_uring_cmd
 * (no allocation; struct dq_uwait), on the queue's list of parked waits
 * until enough entries are ready, its
 * deadline passes, the file is closed by the process that parked it, or
 * (6.7+) its ring is cancelled.  Whoever takes a parked wait off the list,
 * under ready_lock, owns its completion; completions always go through
 * io_uring_cmd_complete_in_task(), so io_uring_cmd_done() runs in the
 * submitter's task context and never from a timer.
 */
#include <linux/hrtimer.h>
#include <linux/ktime.h>
#include <linux/bits.h>
#include <linux/sched.h>
#include <linux/threads.h>

#include "dq.h"
#include "dq_compat.h"
#include "dq_trace.h"

/*
 * A parked DQ_URING_CMD_WAIT, kept in the command's own pdu (32 bytes on
 * every kernel of the range): a WAIT parks without allocating anything.
 * Its queue is the command's file's (dq_file_queue(), fixed once set; the
 * request holds the file), with a reference taken at park and put at
 * completion; its deadline is the queue's one uwait_timer, armed for the
 * earliest parked deadline.  The whole struct is under ready_lock while
 * the WAIT is on q->uwaits; whoever takes it off (list_del_init) owns it.
 */
struct dq_uwait {
	struct list_head link;		/* q->uwaits while parked */
	union {
		u64 deadline;		/* parked: host ns; U64_MAX: none */
		int result;		/* unparked: what it completes with */
	};
	/*
	 * Packed to fit: a parked WAIT's min_ready is 1 .. rq_entries <=
	 * DQ_MAX_RING_ENTRIES (2^20; 0 never parks), and pids are below
	 * PID_MAX_LIMIT (2^22): both are checked at build time below.
	 */
	u64 min_ready_m1:20;		/* min_ready - 1 */
	u64 tid:22;			/* thread that parked it (tracing) */
	u64 tgid:22;			/* its process (->flush) */
};

static struct dq_uwait *dq_uwait_of(struct io_uring_cmd *cmd)
{
	BUILD_BUG_ON(sizeof(struct dq_uwait) > sizeof(cmd->pdu));
	BUILD_BUG_ON(BIT(20) < DQ_MAX_RING_ENTRIES);
	BUILD_BUG_ON(BIT(22) < PID_MAX_LIMIT);
	return (struct dq_uwait *)cmd->pdu;
}

static struct io_uring_cmd *dq_uwait_cmd(struct dq_uwait *uw)
{
	return container_of((void *)uw, struct io_uring_cmd, pdu);
}

static void dq_uwait_task_work(struct io_uring_cmd *cmd,
			       unsigned int issue_flags)
{
	struct dq_queue *q = dq_file_queue(cmd->file);
	int result = dq_uwait_of(cmd)->result;

	dq_trace_now(dq_reap, q->id, result);
	dq_queue_put(q);
	dq_uring_cmd_done(cmd, result, issue_flags);
}

/* dq_uwait_task_work() with the kernel's task-work signature. */
DQ_URING_TASK_WORK(dq_uwait_tw, dq_uwait_task_work)

/* Take @uw off @q's parked list and complete it with @result. */
static void dq_uwait_unpark_locked(struct dq_queue *q, struct dq_uwait *uw,
				   int result)
	__must_hold(&q->ready_lock)
{
	lockdep_assert_held(&q->ready_lock);

	list_del_init(&uw->link);
	uw->result = result;
	io_uring_cmd_complete_in_task(dq_uwait_cmd(uw), dq_uwait_tw);
}

static int dq_ready_result(struct dq_queue *q, u32 used)
{
	return used > q->rq_entries ? -EPROTO : used;
}

/* After a release run posted entries; ready_lock held. */
void dq_uring_wake_locked(struct dq_queue *q)
	__must_hold(&q->ready_lock)
{
	struct dq_uwait *uw, *tmp;
	u32 used;

	lockdep_assert_held(&q->ready_lock);

	if (list_empty(&q->uwaits))
		return;
	used = dq_queue_ready_used_locked(q);
	list_for_each_entry_safe(uw, tmp, &q->uwaits, link)
		if (used > uw->min_ready_m1) {
			trace_dq_wake(q->id, uw->tid, used);
			dq_uwait_unpark_locked(q, uw, dq_ready_result(q, used));
		}
}

/* Arm the deadline timer for @deadline if that is earlier than it is set. */
static void dq_uwait_arm_locked(struct dq_queue *q, u64 deadline)
	__must_hold(&q->ready_lock)
{
	lockdep_assert_held(&q->ready_lock);

	if (deadline >= q->uwait_armed)
		return;
	q->uwait_armed = deadline;
	hrtimer_start(&q->uwait_timer, ns_to_ktime(deadline),
		      HRTIMER_MODE_ABS_SOFT);
}

/*
 * The deadline timer: end the parked WAITs whose deadline passed, re-arm
 * for the earliest left.  It may fire early (the WAIT it was armed for
 * was completed meanwhile): then it only re-arms.  O(parked WAITs).
 */
enum hrtimer_restart dq_uwait_timer_fn(struct hrtimer *timer)
{
	struct dq_queue *q = container_of(timer, struct dq_queue, uwait_timer);
	struct dq_uwait *uw, *tmp;
	u64 now = ktime_get_ns(), next = U64_MAX;

	spin_lock(&q->ready_lock);
	/* A park may have re-armed it since it expired: then that stands. */
	if (!hrtimer_is_queued(timer))
		q->uwait_armed = U64_MAX;
	list_for_each_entry_safe(uw, tmp, &q->uwaits, link) {
		if (uw->deadline <= now)
			dq_uwait_unpark_locked(q, uw, -ETIME);
		else
			next = min(next, uw->deadline);
	}
	if (next != U64_MAX)
		dq_uwait_arm_locked(q, next);
	spin_unlock(&q->ready_lock);
	return HRTIMER_NORESTART;
}

/* The queue was deleted: end every parked wait with @result. */
void dq_uring_end_all_locked(struct dq_queue *q, int result)
	__must_hold(&q->ready_lock)
{
	struct dq_uwait *uw, *tmp;

	lockdep_assert_held(&q->ready_lock);
	list_for_each_entry_safe(uw, tmp, &q->uwaits, link)
		dq_uwait_unpark_locked(q, uw, result);
}

/*
 * ->flush: the process closing its descriptor of the queue file will not
 * reap what its parked waits would return; end them with -ECANCELED
 * instead of leaving them to their deadline.
 */
void dq_uring_flush(struct dq_queue *q)
{
	struct dq_uwait *uw, *tmp;

	spin_lock_bh(&q->ready_lock);
	list_for_each_entry_safe(uw, tmp, &q->uwaits, link)
		if (uw->tgid == current->tgid)
			dq_uwait_unpark_locked(q, uw, -ECANCELED);
	spin_unlock_bh(&q->ready_lock);
}

static int dq_uring_wait(struct dq_queue *q, struct io_uring_cmd *cmd,
			 unsigned int issue_flags)
{
	const struct dq_wait *src = dq_uring_cmd_payload(cmd);
	u32 min_ready = READ_ONCE(src->min_ready);
	s64 timeout = READ_ONCE(src->timeout_ns);
	struct dq_uwait *uw = dq_uwait_of(cmd);
	u64 park_ns;
	u32 used;

	if (READ_ONCE(src->flags) || min_ready > q->rq_entries)
		return -EINVAL;

	/* Without a cancel hook, a parked command must end by itself. */
	park_ns = timeout < 0 ? U64_MAX : timeout;
	if (!DQ_HAVE_URING_CANCEL)
		park_ns = min_t(u64, park_ns, DQ_URING_MAX_PARK_NS);

	spin_lock_bh(&q->ready_lock);
	used = dq_queue_ready_refill_locked(q);
	/* Read under ready_lock: dq_queue_kill_waits() sets it before. */
	if (used < min_ready && READ_ONCE(q->dead)) {
		spin_unlock_bh(&q->ready_lock);
		return -ENODEV;
	}
	if (used >= min_ready || !park_ns) {
		int res = used < min_ready ? -ETIME : dq_ready_result(q, used);

		spin_unlock_bh(&q->ready_lock);
		/* Completes inline: still a wait and a reap, for tracing. */
		trace_dq_wait_park(q->id, current->pid, min_ready);
		dq_trace_now(dq_reap, q->id, res);
		return res;
	}
	kref_get(&q->ref);
	uw->deadline = park_ns == U64_MAX ? U64_MAX :
		       dq_time_shift(ktime_get_ns(), min_t(u64, park_ns, S64_MAX));
	uw->min_ready_m1 = min_ready - 1;	/* >= 1: 0 never gets here */
	uw->tid = current->pid;
	uw->tgid = current->tgid;
	list_add_tail(&uw->link, &q->uwaits);
	trace_dq_wait_park(q->id, uw->tid, min_ready);
	if (uw->deadline != U64_MAX)
		dq_uwait_arm_locked(q, uw->deadline);
	spin_unlock_bh(&q->ready_lock);

	dq_uring_cmd_mark_cancelable(cmd, issue_flags);
	return -EIOCBQUEUED;
}

/* 6.7+: the ring is going away; end the parked wait now. */
static int dq_uring_cancel_parked(struct dq_queue *q, struct io_uring_cmd *cmd,
				  unsigned int issue_flags)
{
	struct dq_uwait *uw = dq_uwait_of(cmd);
	bool mine = false;

	spin_lock_bh(&q->ready_lock);
	if (!list_empty(&uw->link)) {
		list_del_init(&uw->link);
		mine = true;
	}
	spin_unlock_bh(&q->ready_lock);
	if (mine) {
		dq_queue_put(q);
		dq_uring_cmd_done(cmd, -ECANCELED, issue_flags);
	}
	return 0;
}

static int dq_uring_submit(struct dq_queue *q, struct io_uring_cmd *cmd,
			   unsigned int issue_flags)
{
	const struct dq_uring_submit *src = dq_uring_cmd_payload(cmd);
	void __user *argp = u64_to_user_ptr(READ_ONCE(src->args));
	struct dq_submit args;
	int ret;

	if (READ_ONCE(src->resv))
		return -EINVAL;
	if (copy_from_user(&args, argp, sizeof(args)))
		return -EFAULT;
	ret = dq_queue_submit(q, &args, u64_to_user_ptr(args.rejects),
			      issue_flags & IO_URING_F_NONBLOCK);
	if (ret >= 0 && copy_to_user(argp, &args, sizeof(args)))
		return -EFAULT;
	return ret;
}

static int dq_uring_done(struct dq_queue *q, struct io_uring_cmd *cmd)
{
	const struct dq_uring_submit *src = dq_uring_cmd_payload(cmd);
	void __user *argp = u64_to_user_ptr(READ_ONCE(src->args));
	struct dq_done_batch args;
	int ret;

	if (READ_ONCE(src->resv))
		return -EINVAL;
	if (copy_from_user(&args, argp, sizeof(args)))
		return -EFAULT;
	/* The consumer is a file: the one the command was issued on. */
	ret = dq_queue_done(q, cmd->file->private_data, &args);
	if (ret >= 0 && copy_to_user(argp, &args, sizeof(args)))
		return -EFAULT;
	return ret;
}

static int dq_uring_cancel(struct dq_queue *q, struct io_uring_cmd *cmd)
{
	const struct dq_cancel *src = dq_uring_cmd_payload(cmd);
	struct dq_cancel args = {
		.handle = READ_ONCE(src->handle),
		.resv = READ_ONCE(src->resv),
	};

	return dq_queue_cancel(q, &args);
}

/*
 * Finish a command that got its result while it was issued.
 *
 * An error goes back as the return value: io_uring fails the request and
 * cuts its link on every issue path, and -EAGAIN from a non-blocking
 * issue makes it retry the command from io-wq.  A result >= 0 must not be
 * returned: 6.1's io_uring_cmd() hands it back to io_issue_sqe() as if it
 * were an error, so io-wq never posts it (it posts only negative values:
 * the command never completes and ring teardown waits for it forever)
 * and the inline path posts it through the failure path, which cancels
 * the requests linked after it.  Post it with io_uring_cmd_done() and
 * tell io_uring the command is ours, as ublk does; that is correct on
 * every kernel dq builds for, so it is not a compat difference.
 */
static int dq_uring_done_now(struct io_uring_cmd *cmd, int res,
			     unsigned int issue_flags)
{
	if (res < 0)
		return res;
	dq_uring_cmd_done(cmd, res, issue_flags);
	return -EIOCBQUEUED;
}

int dq_uring_cmd(struct dq_queue *q, struct io_uring_cmd *cmd,
		 unsigned int issue_flags)
{
	int res;

	if (dq_uring_is_cancel(issue_flags))
		return dq_uring_cancel_parked(q, cmd, issue_flags);

	switch (cmd->cmd_op) {
	case DQ_URING_CMD_SUBMIT:
		res = dq_uring_submit(q, cmd, issue_flags);
		break;
	case DQ_URING_CMD_WAIT:
		res = dq_uring_wait(q, cmd, issue_flags);
		if (res == -EIOCBQUEUED)
			return res;	/* parked: completes later */
		break;
	case DQ_URING_CMD_CANCEL:
		res = dq_uring_cancel(q, cmd);
		break;
	case DQ_URING_CMD_DONE:
		res = dq_uring_done(q, cmd);
		break;
	default:
		res = -EOPNOTSUPP;
		break;
	}
	return dq_uring_done_now(cmd, res, issue_flags);
}
