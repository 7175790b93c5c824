// SPDX-License-Identifier: GPL-2.0
/*
 * dq: zero-copy delayed dispatch.  The /dev/dq misc device.
 *
 * Each open file may set up one queue (DQ_IOC_SETUP); the queue lives as
 * long as the file, including any mapping of its regions.
 */
#include <linux/fs.h>
#include <linux/miscdevice.h>
#include <linux/module.h>
#include <linux/nsproxy.h>
#include <linux/poll.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "dq.h"
#include "dq_compat.h"

#define CREATE_TRACE_POINTS
#include "dq_trace.h"

struct dq_file {
	struct mutex lock;		/* serialises DQ_IOC_SETUP */
	struct dq_queue *q;		/* set once; smp_store_release */
};

struct dq_queue *dq_file_queue(struct file *file)
{
	struct dq_file *df = file->private_data;

	/* Pairs with the store-release in dq_ioctl_setup(). */
	return smp_load_acquire(&df->q);
}

static int dq_open(struct inode *inode, struct file *file)
{
	struct dq_file *df;

	df = kzalloc(sizeof(*df), GFP_KERNEL_ACCOUNT);
	if (!df)
		return -ENOMEM;
	mutex_init(&df->lock);
	file->private_data = df;
	return nonseekable_open(inode, file);
}

static int dq_release(struct inode *inode, struct file *file)
{
	struct dq_file *df = file->private_data;

	if (df->q) {
		/* Its messages in flight go to the next consumer. */
		dq_queue_consumer_gone(df->q, df);
		atomic_dec(&df->q->users);
		dq_queue_put(df->q);
	}
	kfree(df);
	return 0;
}

static long dq_ioctl_setup(struct file *file, void __user *argp)
{
	struct dq_file *df = file->private_data;
	struct dq_setup setup;
	struct dq_queue *q;
	long ret = 0;

	if (copy_from_user(&setup, argp, sizeof(setup)))
		return -EFAULT;

	mutex_lock(&df->lock);
	if (df->q) {
		ret = -EBUSY;
		goto out;
	}
	q = dq_queue_create(&setup, current->nsproxy->net_ns, NULL);
	if (IS_ERR(q)) {
		ret = PTR_ERR(q);
		goto out;
	}
	if (copy_to_user(argp, &setup, sizeof(setup))) {
		dq_queue_put(q);
		ret = -EFAULT;
		goto out;
	}
	/* The file that set a tracked queue up is its consumer: cannot fail. */
	if (dq_queue_tracked(q))
		dq_queue_claim_consumer(q, df);
	atomic_inc(&q->users);
	/* Publish the set-up queue: pairs with dq_file_queue(). */
	smp_store_release(&df->q, q);
out:
	mutex_unlock(&df->lock);
	return ret;
}

static long dq_ioctl_attach(struct file *file, void __user *argp)
{
	struct dq_file *df = file->private_data;
	struct dq_attach at;
	struct dq_queue *q;
	long ret;

	if (copy_from_user(&at, argp, sizeof(at)))
		return -EFAULT;
	if ((at.flags & ~DQ_ATTACH_F_ALL) || at.resv ||
	    !memchr(at.name, 0, sizeof(at.name)) || !at.name[0])
		return -EINVAL;

	mutex_lock(&df->lock);
	if (df->q) {
		ret = -EBUSY;
		goto out;
	}
	q = dq_registry_attach(current->nsproxy->net_ns, at.name);
	if (IS_ERR(q)) {
		ret = PTR_ERR(q);
		goto out;
	}
	/* Its rings' times are in its creator's clock: ours must be it. */
	if (!dq_queue_same_clock(q)) {
		ret = -EXDEV;
		goto put;
	}

	if ((at.flags & DQ_ATTACH_F_CONSUMER) && !dq_queue_tracked(q)) {
		ret = -EINVAL;
		goto put;
	}
	memset(&at.setup, 0, sizeof(at.setup));
	dq_queue_describe(q, &at.setup);
	if (copy_to_user(argp, &at, sizeof(at))) {
		ret = -EFAULT;
		goto put;
	}
	/* Last: a consumer claimed must not be given back on failure. */
	if (at.flags & DQ_ATTACH_F_CONSUMER) {
		ret = dq_queue_claim_consumer(q, df);
		if (ret)
			goto put;
	}
	atomic_inc(&q->users);
	/* Publish the attached queue: pairs with dq_file_queue(). */
	smp_store_release(&df->q, q);
	goto out;
put:
	dq_queue_put(q);
out:
	mutex_unlock(&df->lock);
	return ret;
}

static long dq_ioctl_submit(struct dq_queue *q, void __user *argp)
{
	struct dq_submit args;
	long ret;

	if (copy_from_user(&args, argp, sizeof(args)))
		return -EFAULT;
	ret = dq_queue_submit(q, &args, u64_to_user_ptr(args.rejects), false);
	if (ret >= 0 && copy_to_user(argp, &args, sizeof(args)))
		return -EFAULT;
	return ret;
}

static long dq_ioctl_done(struct dq_queue *q, struct dq_file *df,
			  void __user *argp)
{
	struct dq_done_batch args;
	long ret;

	if (copy_from_user(&args, argp, sizeof(args)))
		return -EFAULT;
	ret = dq_queue_done(q, df, &args);
	if (ret >= 0 && copy_to_user(argp, &args, sizeof(args)))
		return -EFAULT;
	return ret;
}

static long dq_ioctl(struct file *file, unsigned int cmd, unsigned long arg)
{
	void __user *argp = (void __user *)arg;
	struct dq_queue *q;

	switch (cmd) {
	case DQ_IOC_SETUP:
		return dq_ioctl_setup(file, argp);
	case DQ_IOC_ATTACH:
		return dq_ioctl_attach(file, argp);
	case DQ_IOC_NODE_STATS: {
		struct dq_node_stats st;
		int ret;

		if (copy_from_user(&st, argp, sizeof(st)))
			return -EFAULT;
		if (st.resv0 || memchr_inv(st.resv, 0, sizeof(st.resv)))
			return -EINVAL;
		ret = dq_engine_stats(st.node, &st);
		if (ret)
			return ret;
		return copy_to_user(argp, &st, sizeof(st)) ? -EFAULT : 0;
	}
	case DQ_IOC_SUBMIT:
	case DQ_IOC_WAIT:
	case DQ_IOC_CANCEL:
	case DQ_IOC_SLOT_MAP:
	case DQ_IOC_QUEUE_STATS:
	case DQ_IOC_DONE:
	case DQ_IOC_TRACK_STATS:
	case DQ_IOC_KEY:
		break;
	default:
		/* What ioctl(2) documents for a request the file lacks. */
		return -ENOTTY;
	}

	/* A queue command on a file that has no queue (yet). */
	q = dq_file_queue(file);
	if (!q)
		return -ENXIO;

	switch (cmd) {
	case DQ_IOC_SUBMIT:
		return dq_ioctl_submit(q, argp);
	case DQ_IOC_WAIT: {
		struct dq_wait args;

		if (copy_from_user(&args, argp, sizeof(args)))
			return -EFAULT;
		return dq_queue_wait(q, &args);
	}
	case DQ_IOC_CANCEL: {
		struct dq_cancel args;

		if (copy_from_user(&args, argp, sizeof(args)))
			return -EFAULT;
		return dq_queue_cancel(q, &args);
	}
	case DQ_IOC_SLOT_MAP: {
		struct dq_slot_map args;

		if (copy_from_user(&args, argp, sizeof(args)))
			return -EFAULT;
		return dq_queue_slot_map(q, &args);
	}
	case DQ_IOC_QUEUE_STATS: {
		struct dq_queue_stats st;

		dq_queue_stats(q, &st);
		return copy_to_user(argp, &st, sizeof(st)) ? -EFAULT : 0;
	}
	case DQ_IOC_DONE:
		return dq_ioctl_done(q, file->private_data, argp);
	case DQ_IOC_TRACK_STATS: {
		struct dq_track_stats st;

		dq_queue_track_stats(q, &st, dq_timens_mono_offset());
		return copy_to_user(argp, &st, sizeof(st)) ? -EFAULT : 0;
	}
	case DQ_IOC_KEY: {
		struct dq_key_op op;
		int ret;

		if (copy_from_user(&op, argp, sizeof(op)))
			return -EFAULT;
		ret = dq_queue_key_op(q, &op);
		if (ret)
			return ret;
		return copy_to_user(argp, &op, sizeof(op)) ? -EFAULT : 0;
	}
	}
	return -ENOTTY;
}

static __poll_t dq_poll(struct file *file, poll_table *wait)
{
	struct dq_queue *q = dq_file_queue(file);

	if (!q)
		return EPOLLERR;
	poll_wait(file, &q->wait, wait);
	return dq_queue_poll_mask(q);
}

static int dq_uring_cmd_op(struct io_uring_cmd *cmd, unsigned int issue_flags)
{
	struct dq_queue *q = dq_file_queue(cmd->file);

	if (!q)
		return -ENXIO;
	return dq_uring_cmd(q, cmd, issue_flags);
}

static int dq_flush(struct file *file, fl_owner_t id)
{
	struct dq_queue *q = dq_file_queue(file);

	if (q)
		dq_uring_flush(q);
	return 0;
}

static int dq_mmap(struct file *file, struct vm_area_struct *vma)
{
	struct dq_queue *q = dq_file_queue(file);

	if (!q)
		return -ENXIO;
	return dq_queue_mmap(q, vma);
}

static const struct file_operations dq_fops = {
	.owner = THIS_MODULE,
	.open = dq_open,
	.release = dq_release,
	.unlocked_ioctl = dq_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
	.poll = dq_poll,
	.mmap = dq_mmap,
	.uring_cmd = dq_uring_cmd_op,
	.flush = dq_flush,
};

/*
 * /dev/dq is created 0666: any user may set up private queues, which is
 * the point of a delay queue next to the application.  What that lets a
 * user pin is bounded by its RLIMIT_MEMLOCK (dq_queue.c) and its memcg;
 * a named queue needs CAP_NET_ADMIN to create and its own mode to attach.
 * Hosts that want fewer users on it narrow the node with udev
 * (packaging/udev/60-dq.rules: group dq, 0660), which overrides this.
 */
static struct miscdevice dq_miscdev = {
	.minor = MISC_DYNAMIC_MINOR,
	.name = DQ_DEVICE_NAME,
	.fops = &dq_fops,
	.mode = 0666,
};

static int __init dq_init(void)
{
	int ret;

	ret = dq_engines_init();
	if (ret)
		return ret;
	ret = dq_netlink_init();
	if (ret)
		goto fail_engines;
	ret = misc_register(&dq_miscdev);
	if (ret)
		goto fail_netlink;
	pr_info("dq: ABI %d, %u node engine(s)\n", DQ_ABI_VERSION,
		nr_node_ids);
	return 0;

fail_netlink:
	dq_netlink_exit();
fail_engines:
	dq_engines_exit();
	return ret;
}

static void __exit dq_exit(void)
{
	misc_deregister(&dq_miscdev);
	dq_netlink_exit();
	dq_queues_exit();
	dq_engines_exit();
}

module_init(dq_init);
module_exit(dq_exit);

MODULE_DESCRIPTION("dq: zero-copy delayed dispatch");
MODULE_VERSION(DQ_VERSION);	/* from VERSION, through Kbuild */
MODULE_LICENSE("GPL");
