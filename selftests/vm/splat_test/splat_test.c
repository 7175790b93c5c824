// SPDX-License-Identifier: GPL-2.0
/*
 * splat_test - test-only module for the dq VM lab (selftests/vm).
 *
 * Loading it with plant_warn=1 triggers a WARN_ON_ONCE() so the lab's
 * splat detection can be checked.  It does nothing else.
 */
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/bug.h>

static bool plant_warn;
module_param(plant_warn, bool, 0444);
MODULE_PARM_DESC(plant_warn, "WARN_ON_ONCE(1) at load time");

static int __init splat_test_init(void)
{
	WARN_ON_ONCE(plant_warn);
	pr_info("splat_test: loaded (plant_warn=%d)\n", plant_warn);
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
