// SPDX-License-Identifier: GPL-2.0
/*
 * dq queue registry: every live queue by id, and the named ones by name.
 *
 * Every queue belongs to one network namespace, its creator's (the netlink
 * socket's for QUEUE_NEW, the task's for DQ_IOC_SETUP): names are unique
 * per namespace, and every lookup - by name, by id, a dump, an attach -
 * finds only the caller's namespace's queues.  Why the network namespace
 * and not the user namespace: the control plane is a generic netlink
 * family, whose requests arrive in a network namespace, and containers
 * get one of their own; its owning user namespace is where CAP_NET_ADMIN
 * is checked (GENL_UNS_ADMIN_PERM).  A queue holds no reference on its
 * namespace: when the namespace goes, dq_registry_net_exit() deletes its
 * named queues (messages and all, as rmmod does) and orphans its other
 * queues (net = NULL: still usable through their files, found by no
 * lookup), so q->net never points at a freed namespace.
 *
 * A named queue belongs to the registry, which holds a reference on it, and
 * so outlives the processes that use it; QUEUE_DEL drops that reference.
 * A file's private queue has an id too (for stats) but no registry
 * reference: its last file closing frees it.
 *
 * Ids come from an allocating xarray (O(1) lookup, dumps walk it in id
 * order in linear time); names from an rbtree of the named queues (O(log
 * n)).  An id is reserved while the queue is built and published when it
 * is complete, so no lookup sees a half-made queue.
 *
 * Locking: dq_registry_lock, a mutex private to this file, covers the
 * rbtree, every queue's net, name, name_node and owner (uid, gid, mode), and
 * the id xarray's stores and erases.  A queue's entry is erased under it
 * when its last reference goes (dq_registry_del(), before the queue is
 * freed), so a lookup under the lock may always try kref_get_unless_zero().
 */
#include <linux/capability.h>
#include <linux/cred.h>
#include <linux/mutex.h>
#include <linux/rbtree.h>
#include <linux/string.h>
#include <linux/user_namespace.h>
#include <linux/xarray.h>
#include <net/net_namespace.h>

#include "dq.h"

static DEFINE_MUTEX(dq_registry_lock);
static DEFINE_XARRAY_ALLOC1(dq_queue_ids);	/* id -> queue, from 1 */
static struct rb_root dq_queue_names = RB_ROOT;	/* named queues, by name */

/* The name tree's key: (namespace, name), namespaces by address. */
struct dq_name_key {
	const struct net *net;
	const char *name;
};

static int dq_name_key_cmp(const struct net *net, const char *name,
			   const struct dq_queue *q)
{
	if (net != q->net)
		return (unsigned long)net < (unsigned long)q->net ? -1 : 1;
	return strcmp(name, q->name);
}

static int dq_name_cmp(const void *key, const struct rb_node *node)
{
	const struct dq_name_key *k = key;

	return dq_name_key_cmp(k->net, k->name,
			       rb_entry(node, struct dq_queue, name_node));
}

static bool dq_name_less(struct rb_node *a, const struct rb_node *b)
{
	const struct dq_queue *qa = rb_entry(a, struct dq_queue, name_node);

	return dq_name_key_cmp(qa->net, qa->name,
			       rb_entry(b, struct dq_queue, name_node)) < 0;
}

/* A reference on @q, unless its last one is already on the way out. */
static struct dq_queue *dq_registry_tryget(struct dq_queue *q)
	__must_hold(&dq_registry_lock)
{
	lockdep_assert_held(&dq_registry_lock);
	return q && kref_get_unless_zero(&q->ref) ? q : NULL;
}

static struct dq_queue *
dq_registry_find_name_locked(const struct net *net, const char *name)
	__must_hold(&dq_registry_lock)
{
	struct dq_name_key key = { .net = net, .name = name };
	struct rb_node *node;

	lockdep_assert_held(&dq_registry_lock);
	node = rb_find(&key, &dq_queue_names, dq_name_cmp);
	return node ? rb_entry(node, struct dq_queue, name_node) : NULL;
}

/* Reserve an id for @q (q->id), not yet visible to lookups. */
int dq_registry_reserve(struct dq_queue *q)
{
	return xa_alloc(&dq_queue_ids, &q->id, NULL, xa_limit_31b, GFP_KERNEL);
}

/* @q is complete: lookups by id in @net may find it from now on. */
void dq_registry_publish(struct dq_queue *q, struct net *net)
{
	mutex_lock(&dq_registry_lock);
	q->net = net;
	/* The slot is reserved: storing into it allocates nothing. */
	xa_store(&dq_queue_ids, q->id, q, GFP_KERNEL);
	mutex_unlock(&dq_registry_lock);
}

/* From the queue's last reference going away, or a failed create. */
void dq_registry_del(struct dq_queue *q)
{
	if (!q->id)
		return;
	mutex_lock(&dq_registry_lock);
	xa_erase(&dq_queue_ids, q->id);
	if (!RB_EMPTY_NODE(&q->name_node)) {
		rb_erase(&q->name_node, &dq_queue_names);
		RB_CLEAR_NODE(&q->name_node);
	}
	mutex_unlock(&dq_registry_lock);
}

/*
 * The live queue of @net with id @id, with a reference the caller must
 * put.  Another namespace's queue is not there (NULL), like a free id.
 */
struct dq_queue *dq_registry_get(const struct net *net, u32 id)
{
	struct dq_queue *q;

	mutex_lock(&dq_registry_lock);
	q = xa_load(&dq_queue_ids, id);
	q = dq_registry_tryget(q && q->net == net ? q : NULL);
	mutex_unlock(&dq_registry_lock);
	return q;
}

/* The live queue of @net named @name, with a reference to put. */
struct dq_queue *dq_registry_get_name(const struct net *net, const char *name)
{
	struct dq_queue *q;

	mutex_lock(&dq_registry_lock);
	q = dq_registry_tryget(dq_registry_find_name_locked(net, name));
	mutex_unlock(&dq_registry_lock);
	return q;
}

/*
 * May the caller attach to @q?  Read and write permission in its mode,
 * checked like a file's: owner, then group, then others.  CAP_DAC_OVERRIDE
 * overrides as it does for a file (capable_wrt_inode_uidgid()): held in
 * the caller's user namespace, and only over a queue whose owner and
 * group are mapped in it, so root in a container's user namespace gets
 * no say over a host user's queue.
 */
static int dq_registry_may_attach(struct dq_queue *q)
	__must_hold(&dq_registry_lock)
{
	struct user_namespace *ns = current_user_ns();
	umode_t mode = q->mode;

	lockdep_assert_held(&dq_registry_lock);
	if (uid_eq(current_fsuid(), q->uid))
		mode >>= 6;
	else if (in_group_p(q->gid))
		mode >>= 3;
	if ((mode & 06) == 06)
		return 0;
	if (kuid_has_mapping(ns, q->uid) && kgid_has_mapping(ns, q->gid) &&
	    ns_capable(ns, CAP_DAC_OVERRIDE))
		return 0;
	return -EACCES;
}

/*
 * DQ_IOC_ATTACH's lookup: the queue named @name with a reference, when
 * the caller may attach to it (its owner and mode read under the lock that
 * covers them); else an ERR_PTR, -ENOENT or -EACCES.
 */
struct dq_queue *dq_registry_attach(const struct net *net, const char *name)
{
	struct dq_queue *q;
	int ret = -ENOENT;

	mutex_lock(&dq_registry_lock);
	/* Listed under the lock, so not freed yet even if dying. */
	q = dq_registry_find_name_locked(net, name);
	/*
	 * QUEUE_DEL marks the queue dead before it takes the name away: from
	 * that moment on the queue is gone for an attach too.
	 */
	if (q && !READ_ONCE(q->dead)) {
		ret = dq_registry_may_attach(q);
		if (!ret && !dq_registry_tryget(q))
			ret = -ENOENT;
	}
	mutex_unlock(&dq_registry_lock);
	return ret ? ERR_PTR(ret) : q;
}

/*
 * The live queue of @net with the smallest id above @last, with a
 * reference.
 */
struct dq_queue *dq_registry_next(const struct net *net, u32 last,
				  bool named_only)
{
	unsigned long id;
	struct dq_queue *q, *found = NULL;

	mutex_lock(&dq_registry_lock);
	xa_for_each_start(&dq_queue_ids, id, q, (unsigned long)last + 1) {
		if (q->net != net ||
		    (named_only && RB_EMPTY_NODE(&q->name_node)))
			continue;
		found = dq_registry_tryget(q);
		if (found)
			break;
	}
	mutex_unlock(&dq_registry_lock);
	return found;
}

/*
 * Give @q a name unique in its namespace and its owner; the registry then
 * holds a reference on it.  -EEXIST when the name is taken there.
 */
int dq_registry_name(struct dq_queue *q, const char *name, kuid_t uid,
		     kgid_t gid, umode_t mode)
{
	int ret = -EEXIST;

	mutex_lock(&dq_registry_lock);
	if (!dq_registry_find_name_locked(q->net, name)) {
		strscpy(q->name, name, sizeof(q->name));
		q->uid = uid;
		q->gid = gid;
		q->mode = mode;
		rb_add(&q->name_node, &dq_queue_names, dq_name_less);
		kref_get(&q->ref);
		ret = 0;
	}
	mutex_unlock(&dq_registry_lock);
	return ret;
}

/*
 * QUEUE_DEL: @q loses its name, so no lookup by name finds it again; the
 * caller then drops the registry's reference.  False if it had no name.
 */
bool dq_registry_unname(struct dq_queue *q)
{
	bool named;

	mutex_lock(&dq_registry_lock);
	named = !RB_EMPTY_NODE(&q->name_node);
	if (named) {
		rb_erase(&q->name_node, &dq_queue_names);
		RB_CLEAR_NODE(&q->name_node);
		q->name[0] = '\0';
	}
	mutex_unlock(&dq_registry_lock);
	return named;
}

/*
 * Module or namespace exit: unname one named queue (of @net; any when
 * NULL) and hand the registry's reference on it to the caller; NULL when
 * none is left.
 */
struct dq_queue *dq_registry_take_named(const struct net *net)
{
	struct rb_node *node;
	struct dq_queue *q = NULL;

	mutex_lock(&dq_registry_lock);
	for (node = rb_first(&dq_queue_names); node; node = rb_next(node)) {
		q = rb_entry(node, struct dq_queue, name_node);
		if (!net || q->net == net)
			break;
	}
	if (node) {
		rb_erase(&q->name_node, &dq_queue_names);
		RB_CLEAR_NODE(&q->name_node);
		q->name[0] = '\0';
	} else {
		q = NULL;
	}
	mutex_unlock(&dq_registry_lock);
	return q;
}

/*
 * @net is going away (its pernet exit; every socket in it is gone, so no
 * request of it is running): after its named queues went, orphan the
 * queues its tasks set up and still hold open elsewhere.
 */
void dq_registry_net_exit(const struct net *net)
{
	unsigned long id;
	struct dq_queue *q;

	mutex_lock(&dq_registry_lock);
	xa_for_each(&dq_queue_ids, id, q)
		if (q->net == net)
			q->net = NULL;
	mutex_unlock(&dq_registry_lock);
}

/*
 * @q's namespace with a reference (put_net() it), for an event; NULL
 * when the queue is orphaned or its namespace is already dying.
 */
struct net *dq_registry_get_net(struct dq_queue *q)
{
	struct net *net;

	mutex_lock(&dq_registry_lock);
	net = q->net ? maybe_get_net(q->net) : NULL;
	mutex_unlock(&dq_registry_lock);
	return net;
}
