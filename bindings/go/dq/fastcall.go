// SPDX-License-Identifier: LGPL-2.1 OR MIT

//go:build !race && !dq_cgocall && !go1.27

package dq

/*
#include "glue.h"
*/
import "C"

import "unsafe"

// The calls that cannot block (see dqgo_fastcall in glue.c) enter C
// through the runtime's asmcgocall, the switch to the system stack that
// cgo's own calls make, without cgo's entersyscall/exitsyscall around it.
//
// Why: entering a syscall (every cgo call is one, for the scheduler)
// while the runtime's sysmon thread sleeps deeply, which it does as soon
// as it sees every P idle, wakes sysmon and resets its poll interval to
// 20 us; it then polls at 20 us, a nanosleep and a context switch each,
// until every P is idle again.  A consumer woken by the netpoller a
// couple of thousand times a second paid that at every wake-up, more
// than the wake-up itself: 32-34 us of CPU per wake-up instead of 12.5
// (perf stat task-clock of a goroutine woken from the netpoller 2000
// times a second, with and without one syscall per wake-up; a C thread
// blocked in read() 8.3 us; the 2-CPU VM of
// docs/records/bench/go-goal-quiet.txt), 0.4-0.5 us per message of
// dq-go's at 100k msg/s; a producer woken by a timer paid it at its
// PutN.
//
// What it costs: the goroutine's P stays held for the call, as for any
// Go code, so only calls that never wait are made so, and only on an
// embedded, non-durable queue (dqgo_queue.fast): they hold the library's
// mutexes for short sections (a producer's batch at most) and make at
// most one timerfd_settime().  A Go CPU profile books their time to
// runtime._ExternalCode, not to the caller.  Everything else, Reap's wait
// in C, and every call under the race detector (whose happens-before
// edges through C are cgo's: a fast call would hide them) or with the
// dq_cgocall build tag, goes through cgo.
//
// asmcgocall is the runtime's, not an API: it is reached through a
// linkname, which Go 1.19 (Debian 12's, the one this is built and tested
// with) up to 1.26 link; Go 1.27's linker refuses a linkname to it (a
// public study of Go 1.27.1 says so; not tried here), so from go1.27 on
// this file is left out and every call is a cgo call (fastcall_cgo.go).
// Its signature has not changed since Go 1.5.

const fastCalls = true

//go:linkname asmcgocall runtime.asmcgocall
//go:noescape
func asmcgocall(fn, arg unsafe.Pointer) int32

// fastcall runs c in C; c stays on this goroutine's stack, which cannot
// move while the goroutine is in C.
func fastcall(c *C.struct_dqgo_fc) {
	asmcgocall(unsafe.Pointer(C.dqgo_fastcall), unsafe.Pointer(c))
}
