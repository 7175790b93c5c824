/* SPDX-License-Identifier: LGPL-2.1 OR MIT */
/* dqctl stats --node: a NUMA node's release engine (node.c). */
#ifndef DQCTL_NODE_H
#define DQCTL_NODE_H

#include <stdint.h>

#include "attrs.h"
#include "print.h"

void node_stats_print(struct pr *pr, int32_t node, const struct qinfo *q);

#endif /* DQCTL_NODE_H */
