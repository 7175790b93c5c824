// SPDX-License-Identifier: GPL-2.0
/*
 * splat_test - test-only module for the dq VM lab (selftests/vm).
 *
 * Loading it with plant_warn=1 triggers a WARN_ON_ONCE() so the lab's
 * splat detection can be checked; with plant_leak=1 it allocates an object
 * and forgets it, for the lab's kmemleak check (debug kernel).  It does
 * nothing else.  With plant_stall_s=N it spins N seconds at load time
 * with preemption off, so that the soft-lockup detector fires and the
 * lab's stall handling (stop the VM early) can be checked.
 */
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/bug.h>
#include <linux/jiffies.h>
#include <linux/preempt.h>
#include <linux/slab.h>

static bool plant_warn;
module_param(plant_warn, bool, 0444);
MODULE_PARM_DESC(plant_warn, "WARN_ON_ONCE(1) at load time");

static bool plant_leak;
module_param(plant_leak, bool, 0444);
MODULE_PARM_DESC(plant_leak, "leak one 128-byte object at load time");

static unsigned int plant_stall_s;
module_param(plant_stall_s, uint, 0444);
MODULE_PARM_DESC(plant_stall_s, "spin this many seconds with preemption off at load time");

static int __init splat_test_init(void)
{
	WARN_ON_ONCE(plant_warn);
	if (plant_stall_s) {
		unsigned long end = jiffies + plant_stall_s * HZ;

		preempt_disable();
		while (time_before(jiffies, end))
			cpu_relax();
		preempt_enable();
	}
	if (plant_leak) {
		/* Deliberately lost: nothing keeps the pointer. */
		void *p = kmalloc(128, GFP_KERNEL);

		pr_info("splat_test: leaked an object: %s\n", p ? "yes" : "no (ENOMEM)");
	}
	pr_info("splat_test: loaded (plant_warn=%d plant_leak=%d)\n",
		plant_warn, plant_leak);
	return 0;
}

static void __exit splat_test_exit(void)
{
	pr_info("splat_test: unloaded\n");
}

module_init(splat_test_init);
module_exit(splat_test_exit);

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("Test-only module that plants a kernel warning for the dq VM lab");
