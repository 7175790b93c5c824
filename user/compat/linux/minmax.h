/* SPDX-License-Identifier: MIT */
/* <linux/minmax.h> for kmod/shared/ in user space. */
#ifndef DQ_COMPAT_LINUX_MINMAX_H
#define DQ_COMPAT_LINUX_MINMAX_H

/* @val within [@lo, @hi], each evaluated once. */
#define clamp(val, lo, hi) ({					\
	__typeof__(val) _v = (val);				\
	__typeof__(val) _lo = (lo);				\
	__typeof__(val) _hi = (hi);				\
	_v < _lo ? _lo : _v > _hi ? _hi : _v; })

#endif
