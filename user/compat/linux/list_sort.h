/* SPDX-License-Identifier: MIT */
/*
 * <linux/list_sort.h> for kmod/shared/ in user space.  Header-only, so no
 * list_sort symbol leaks from libdqshim.a into the application.
 */
#ifndef DQ_COMPAT_LINUX_LIST_SORT_H
#define DQ_COMPAT_LINUX_LIST_SORT_H

#include <linux/list.h>

/* > 0 when @a must come after @b; equal elements keep their order. */
typedef int (*list_cmp_func_t)(void *priv, const struct list_head *a,
			       const struct list_head *b);

/* Merge two NULL-terminated runs linked through ->next; @a came first. */
static inline struct list_head *dq_compat_list_merge(void *priv,
						      list_cmp_func_t cmp,
						      struct list_head *a,
						      struct list_head *b)
{
	struct list_head head, *tail = &head;

	while (a && b) {
		if (cmp(priv, a, b) > 0) {
			tail->next = b;
			b = b->next;
		} else {
			tail->next = a;
			a = a->next;
		}
		tail = tail->next;
	}
	tail->next = a ? a : b;
	return head.next;
}

/*
 * Sort the list at @head by @cmp, stably, in O(n log n), allocating
 * nothing: a bottom-up merge sort whose pending runs of 2^k elements sit
 * in runs[k] (a binary counter), then one relinking pass for ->prev.
 */
static inline void list_sort(void *priv, struct list_head *head,
			     list_cmp_func_t cmp)
{
	struct list_head *runs[64] = { NULL };
	struct list_head *pos, *next, *run, *prev;
	unsigned int k, top = 0;

	if (list_empty(head) || head->next == head->prev)
		return;
	head->prev->next = NULL;
	for (pos = head->next; pos; pos = next) {
		next = pos->next;
		pos->next = NULL;
		run = pos;
		/* runs[k] holds earlier elements than @run: it goes first. */
		for (k = 0; k < 63 && runs[k]; k++) {
			run = dq_compat_list_merge(priv, cmp, runs[k], run);
			runs[k] = NULL;
		}
		runs[k] = run;
		if (k > top)
			top = k;
	}
	run = NULL;
	for (k = 0; k <= top; k++) {
		if (runs[k])
			run = run ? dq_compat_list_merge(priv, cmp, runs[k], run) :
				    runs[k];
	}
	prev = head;
	for (pos = run; pos; pos = pos->next) {
		prev->next = pos;
		pos->prev = prev;
		prev = pos;
	}
	prev->next = head;
	head->prev = prev;
}

#endif
