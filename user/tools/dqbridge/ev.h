/* SPDX-License-Identifier: LGPL-2.1 OR MIT */
/*
 * dqbridge's event loop: one epoll set for every descriptor the bridge
 * waits on (the signalfd, dq's queue fd, the source's connection, the
 * sink's sockets as libcurl names them).  A descriptor is registered
 * once and changed only when what it waits for changes, so a loop turn
 * costs one epoll_wait() however many connections are open (the poll()
 * of every descriptor on every turn it replaces was most of the
 * bridge's CPU at a few thousand messages a second).
 *
 * Level-triggered; each registration carries a callback, run from
 * ev_wait() for the events that fired.  Single-threaded, like the loop.
 */
#ifndef DQB_EV_H
#define DQB_EV_H

#include <stdint.h>

struct ev;

/* Called with the epoll events (EPOLLIN, EPOLLOUT, EPOLLERR, EPOLLHUP). */
typedef void (*ev_cb)(void *arg, int fd, uint32_t events);

int ev_new(struct ev **out);
void ev_free(struct ev *e);

/*
 * Watch @fd for @events (0: registered but quiet), calling @cb(@arg).
 * Adding a descriptor already watched changes it.  0 or -errno.
 */
int ev_watch(struct ev *e, int fd, uint32_t events, ev_cb cb, void *arg);

/* Stop watching @fd (before it is closed).  0 or -errno. */
int ev_unwatch(struct ev *e, int fd);

/*
 * Wait up to @timeout_ms (0: not at all, -1: forever) and run the
 * callbacks of what fired.  Returns how many fired, or -errno
 * (-EINTR is 0).
 */
int ev_wait(struct ev *e, int timeout_ms);

#endif /* DQB_EV_H */
