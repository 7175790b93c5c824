/* SPDX-License-Identifier: LGPL-2.1 OR MIT */
/*
 * Forced-included (-include) when kmod/dq_wheel.c is compiled into
 * libdqshim: kmod/dq_wheel_env.h's user-space half lacks u16, which
 * struct dq_wheel_entry uses.  A repeated identical typedef is valid C11,
 * so this stays harmless once the env header grows its own.
 */
#ifndef DQSHIM_WHEEL_ENV_USER_H
#define DQSHIM_WHEEL_ENV_USER_H

#include <stdint.h>

typedef uint16_t u16;

#endif
