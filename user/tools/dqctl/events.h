/* SPDX-License-Identifier: LGPL-2.1 OR MIT */
/* dqctl monitor: the events multicast group (events.c). */
#ifndef DQCTL_EVENTS_H
#define DQCTL_EVENTS_H

#include <time.h>

#include "attrs.h"
#include "print.h"

/* One event (a DQ_CMD_EVENT message, parsed) received at @ts (realtime). */
void event_print(struct pr *pr, const struct qinfo *q,
		 const struct timespec *ts);

#endif /* DQCTL_EVENTS_H */
