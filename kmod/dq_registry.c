// SPDX-License-Identifier: GPL-2.0
/*
 * dq queue registry: every live queue, by id, and the named ones by name.
 *
 * A named queue belongs to the registry, which holds a reference on it, and
 * so outlives the processes that use it; QUEUE_DEL drops that reference.
 * A file's private queue is listed too (for stats) but holds no registry
 * reference: its last file closing frees it.
 */
#include <linux/capability.h>
#include <linux/cred.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/string.h>

#include "dq.h"

/* Protects dq_queues and every queue's reg_link, name and owner. */
DEFINE_MUTEX(dq_registry_lock);
static LIST_HEAD(dq_queues);

void dq_registry_add_anon(struct dq_queue *q)
{
	mutex_lock(&dq_registry_lock);
	list_add_tail(&q->reg_link, &dq_queues);
	mutex_unlock(&dq_registry_lock);
}

/* From the queue's last reference going away. */
void dq_registry_del(struct dq_queue *q)
{
	mutex_lock(&dq_registry_lock);
	list_del_init(&q->reg_link);
	mutex_unlock(&dq_registry_lock);
}

/*
 * The live queue named @name, or with id @id when @name is NULL, with a
 * reference the caller must put; NULL if there is none.
 */
struct dq_queue *dq_registry_find_locked(const char *name, u32 id)
{
	struct dq_queue *q;

	lockdep_assert_held(&dq_registry_lock);
	list_for_each_entry(q, &dq_queues, reg_link) {
		if (name ? !q->name[0] || strcmp(q->name, name) : q->id != id)
			continue;
		/* Its last reference may be on the way out: skip it then. */
		return kref_get_unless_zero(&q->ref) ? q : NULL;
	}
	return NULL;
}

/* The live queue with the smallest id above @last, with a reference. */
struct dq_queue *dq_registry_next_locked(u32 last, bool named_only)
{
	struct dq_queue *q, *best = NULL;

	lockdep_assert_held(&dq_registry_lock);
	list_for_each_entry(q, &dq_queues, reg_link) {
		if (q->id <= last || (named_only && !q->name[0]))
			continue;
		if (!best || q->id < best->id)
			best = q;
	}
	if (best && !kref_get_unless_zero(&best->ref))
		best = NULL;
	return best;
}

/* Give @q a unique name; the registry then owns a reference on it. */
int dq_registry_name_locked(struct dq_queue *q, const char *name)
{
	struct dq_queue *other;

	lockdep_assert_held(&dq_registry_lock);
	list_for_each_entry(other, &dq_queues, reg_link)
		if (other->name[0] && !strcmp(other->name, name))
			return -EEXIST;
	strscpy(q->name, name, sizeof(q->name));
	kref_get(&q->ref);
	return 0;
}

/*
 * May the caller attach to @q?  Read and write permission in its mode,
 * checked like a file's: owner, then group, then others; CAP_DAC_OVERRIDE
 * overrides, as it does for files.
 */
int dq_queue_attach_check(struct dq_queue *q)
{
	umode_t mode = q->mode;

	if (uid_eq(current_fsuid(), q->uid))
		mode >>= 6;
	else if (in_group_p(q->gid))
		mode >>= 3;
	if ((mode & 06) == 06 || capable(CAP_DAC_OVERRIDE))
		return 0;
	return -EACCES;
}

/*
 * Module exit: no file is open and netlink is gone, so only the registry
 * still holds the named queues.  Drop them, messages and all.
 */
void dq_registry_exit(void)
{
	for (;;) {
		struct dq_queue *q = NULL, *it;

		mutex_lock(&dq_registry_lock);
		list_for_each_entry(it, &dq_queues, reg_link) {
			if (it->name[0]) {
				it->name[0] = '\0';
				q = it;
				break;
			}
		}
		mutex_unlock(&dq_registry_lock);
		if (!q)
			break;
		WRITE_ONCE(q->dead, true);
		dq_queue_purge(q);
		dq_queue_put(q);
	}
}
