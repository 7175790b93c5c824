// SPDX-License-Identifier: LGPL-2.1 OR MIT

package dq

/*
#include <errno.h>
#include <stdlib.h>
#include "glue.h"
*/
import "C"

import (
	"context"
	"errors"
	"os"
	"syscall"
	"time"
	"unsafe"
)

// Reaped is a due message.  Data is its slot in the arena (Len bytes),
// valid until Done or Finish of Slot; it belongs to the goroutine that
// reaped it until then (it may hand it on).
type Reaped struct {
	Data         []byte
	UserData     uint64 // as committed (the key on a keyed queue)
	Due          uint64 // as committed, absolute CLOCK_MONOTONIC ns
	Release      uint64 // when the engine released it
	Handle       uint64 // as committed
	Slot         uint32 // Done/Finish take it
	Attempts     uint16 // tracked: as committed
	Redeliveries uint16 // tracked: deliveries before this one
}

// Outcome of Finish.
const (
	Delivered = C.DQ_DONE_DELIVERED
	Failed    = C.DQ_DONE_FAILED
)

// shortWait is how long Reap waits before it has a goroutine watch its
// context, and so the longest a cancellation may take to be seen.
const shortWait = 2 * time.Millisecond

// Reap takes up to len(out) due messages into out, in release order, in
// one cgo call, blocking until one is due or ctx ends; it returns the
// number (>= 1), or ctx.Err() (context.DeadlineExceeded at ctx's
// deadline) when ctx ended first.  Messages reaped are never dropped:
// if they come with the cancellation, they are returned.
//
// How a wait honours ctx: it is not the library's blocking dq_reap
// (nothing could end it early) but, by default, poll(2) in C on the
// queue's fd (readable when something is due) and an eventfd of the
// queue; with Params.ReapNetpoll, Go's netpoller on an epoll fd of the
// same two, the goroutine parked and no OS thread held (a goroutine in a
// blocking cgo call pins its thread and keeps its P, which the runtime's
// sysmon polls every 20 us and hands off when the other Ps are busy).  A
// goroutine watching ctx.Done() writes the eventfd, ending the wait at
// once.  Every round starts with a non-blocking dq_reap, which is exact,
// and each wait is bounded to 100 ms, so a release the fd does not
// announce (a credit returned on a tracked queue with MaxInflight) is
// taken at most that late.  Close ends a blocked Reap too (EBADF).  The
// first 2 ms of a wait are made without the watching goroutine (its start
// and stop cost more than a reap on a busy queue), so a cancellation is
// seen within 2 ms, at once after that.
//
// One Reap (or TryReap) at a time per queue: an overlapping call returns
// EBUSY.  It may run beside every other call, from any goroutine.
func (q *Queue) Reap(ctx context.Context, out []Reaped) (int, error) {
	if len(out) == 0 {
		return 0, syscall.EINVAL
	}
	g, buf, err := q.reapBegin(len(out))
	if err != nil {
		return 0, err
	}
	defer q.reapEnd()
	if err := ctx.Err(); err != nil {
		rc := C.dq_reap(g.q, &buf[0], C.uint(len(out)), 0)
		if rc != 0 {
			return q.convert(rc, buf, out)
		}
		return 0, err
	}
	timeout := int64(-1)
	var dl time.Time
	hasDL := false
	if dl, hasDL = ctx.Deadline(); hasDL {
		// Past the deadline before ctx's own timer said so (a late
		// call): what is due, else DeadlineExceeded, never (0, nil).
		if timeout = int64(time.Until(dl)); timeout <= 0 {
			rc := C.dq_reap(g.q, &buf[0], C.uint(len(out)), 0)
			if rc != 0 {
				return q.convert(rc, buf, out)
			}
			return 0, context.DeadlineExceeded
		}
	}
	// A short wait first, without a goroutine watching ctx: on a busy
	// queue the next release is that close, and starting and stopping the
	// watcher cost more than the reap (a goroutine, a channel close, an
	// OS thread woken).  Only Close ends it early; ctx is looked at after.
	short := int64(shortWait)
	if timeout >= 0 && timeout < short {
		short = timeout
	}
	rc := q.wait(g, buf[:len(out)], short)
	switch {
	case rc == -C.ECANCELED:
		C.dqgo_unwake(g)
		return 0, syscall.EBADF
	case rc != -C.ETIME:
		return q.convert(rc, buf, out)
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if hasDL {
		if timeout = int64(time.Until(dl)); timeout <= 0 {
			return 0, context.DeadlineExceeded
		}
	}
	var stop, fired chan struct{}
	if done := ctx.Done(); done != nil {
		stop = make(chan struct{})
		fired = make(chan struct{}, 1)
		go func() {
			select {
			case <-done:
				C.dqgo_wake(g)
				fired <- struct{}{}
			case <-stop:
			}
			close(fired)
		}()
	}
	rc = q.wait(g, buf[:len(out)], timeout)
	woken := false
	if stop != nil {
		close(stop)
		for range fired {
			woken = true
		}
	}
	if woken || rc == -C.ECANCELED {
		C.dqgo_unwake(g)
	}
	switch {
	case rc > 0:
		return q.convert(rc, buf, out)
	case rc == -C.ETIME:
		return 0, context.DeadlineExceeded
	case rc == -C.ECANCELED && q.closing.Load() != 0 && ctx.Err() == nil:
		return 0, syscall.EBADF
	case rc == -C.ECANCELED:
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		return 0, syscall.EINTR
	}
	return q.convert(rc, buf, out)
}

// guardWait bounds one wait in the netpoller: see Reap.
const guardWait = 100 * time.Millisecond

// wait reaps into buf, waiting up to timeout ns (< 0: no end), in C or
// (ReapNetpoll) in the netpoller for q.pf: what dq_reap returns (> 0 or
// -errno), -ECANCELED after dqgo_wake, or -ETIME.  The caller holds
// q.reaping, which makes it the only user of q.pf's deadline.
func (q *Queue) wait(g *C.struct_dqgo_queue, buf []C.struct_dq_reaped, timeout int64) C.int {
	if q.pf == nil {
		return C.dqgo_reap_wait(g, &buf[0], C.uint(len(buf)), C.int64_t(timeout))
	}
	var end time.Time
	if timeout >= 0 {
		end = time.Now().Add(time.Duration(timeout))
	}
	var rc C.int
	round := func(uintptr) bool {
		rc = q.reapPoll(g, buf)
		return rc != 0
	}
	for {
		d := time.Now().Add(guardWait)
		if timeout >= 0 && end.Before(d) {
			d = end
		}
		if err := q.pf.SetReadDeadline(d); err != nil {
			return -C.EBADF
		}
		err := q.prc.Read(round)
		switch {
		case err == nil:
			return rc
		case !errors.Is(err, os.ErrDeadlineExceeded):
			return -C.EBADF
		case timeout >= 0 && !time.Now().Before(end):
			// The last round at the deadline: what is due, else ETIME.
			if rc = q.reapPoll(g, buf); rc != 0 {
				return rc
			}
			return -C.ETIME
		}
	}
}

// reapPoll is one ReapNetpoll round (dqgo_reap_poll), a fast call on an
// embedded non-durable queue (fastcall.go): the first call of a consumer
// the netpoller woke, which as a cgo call would wake the runtime's sysmon.
func (q *Queue) reapPoll(g *C.struct_dqgo_queue, buf []C.struct_dq_reaped) C.int {
	if !q.fast {
		return C.dqgo_reap_poll(g, &buf[0], C.uint(len(buf)))
	}
	c := C.struct_dqgo_fc{g: g, buf: unsafe.Pointer(&buf[0]), op: C.DQGO_FC_REAP_POLL, n: C.uint32_t(len(buf))}
	fastcall(&c)
	return c.ret
}

// TryReap is Reap without waiting: 0 when nothing is due.  One at a time
// per queue, with Reap.
func (q *Queue) TryReap(out []Reaped) (int, error) {
	if len(out) == 0 {
		return 0, syscall.EINVAL
	}
	g, buf, err := q.reapBegin(len(out))
	if err != nil {
		return 0, err
	}
	defer q.reapEnd()
	if !q.fast {
		return q.convert(C.dq_reap(g.q, &buf[0], C.uint(len(out)), 0), buf, out)
	}
	c := C.struct_dqgo_fc{g: g, buf: unsafe.Pointer(&buf[0]), op: C.DQGO_FC_TRY_REAP, n: C.uint32_t(len(out))}
	fastcall(&c)
	return q.convert(c.ret, buf, out)
}

// reapBegin is Reap's and TryReap's entry: the queue held, this call the
// one reaper (else EBUSY), and the C buffer for n; reapEnd ends both.
func (q *Queue) reapBegin(n int) (*C.struct_dqgo_queue, []C.struct_dq_reaped, error) {
	g, err := q.acquire()
	if err != nil {
		return nil, nil, err
	}
	if !q.reaping.CompareAndSwap(0, 1) {
		q.mu.RUnlock()
		return nil, nil, syscall.EBUSY
	}
	return g, q.scratch(n), nil
}

func (q *Queue) reapEnd() {
	q.reaping.Store(0)
	q.mu.RUnlock()
}

// scratch is Reap's buffer; the caller holds q.reaping.  It is C memory:
// a Go buffer would be scanned whole for Go pointers (cgocheck) at every
// call, which cost more than the reap itself (~20 us per call of 256).
func (q *Queue) scratch(n int) []C.struct_dq_reaped {
	if len(q.rbuf) < n {
		C.free(unsafe.Pointer(q.rbufp))
		q.rbufp = (*C.struct_dq_reaped)(C.calloc(C.size_t(n), C.size_t(unsafe.Sizeof(C.struct_dq_reaped{}))))
		if q.rbufp == nil {
			panic("dq: out of memory")
		}
		q.rbuf = unsafe.Slice(q.rbufp, n)
	}
	return q.rbuf
}

func (q *Queue) convert(rc C.int, buf []C.struct_dq_reaped, out []Reaped) (int, error) {
	if rc < 0 {
		return 0, errno(rc)
	}
	for i := 0; i < int(rc); i++ {
		r := &buf[i]
		out[i] = Reaped{
			Data:         unsafe.Slice((*byte)(r.data), int(r.len)),
			UserData:     uint64(r.user_data),
			Due:          uint64(r.due_ns),
			Release:      uint64(r.release_ns),
			Handle:       uint64(r.handle),
			Slot:         uint32(r.slot),
			Attempts:     uint16(r.attempts),
			Redeliveries: uint16(r.redeliveries),
		}
	}
	return int(rc), nil
}

// Done gives a reaped message's slot back (dq_done; on a tracked queue
// Finish(slot, Delivered)).  Any goroutine, beside Reap.
func (q *Queue) Done(slot uint32) error {
	g, err := q.acquire()
	if err != nil {
		return err
	}
	defer q.mu.RUnlock()
	if !q.fast {
		return errno(C.dq_done(g.q, C.uint32_t(slot)))
	}
	c := C.struct_dqgo_fc{g: g, op: C.DQGO_FC_DONE, arg: C.uint32_t(slot)}
	fastcall(&c)
	return errno(c.ret)
}

// Finish ends a tracked message's delivery with outcome Delivered or
// Failed (dq_finish).  Any goroutine, beside Reap.
func (q *Queue) Finish(slot uint32, outcome uint32) error {
	g, err := q.acquire()
	if err != nil {
		return err
	}
	defer q.mu.RUnlock()
	if !q.fast {
		return errno(C.dq_finish(g.q, C.uint32_t(slot), C.uint32_t(outcome)))
	}
	c := C.struct_dqgo_fc{g: g, op: C.DQGO_FC_FINISH, arg: C.uint32_t(slot), outcome: C.uint32_t(outcome)}
	fastcall(&c)
	return errno(c.ret)
}

// DoneN is Done of every slot in one cgo call (dq_done_n); results (nil,
// or len(slots) long) get each slot's error.  Returns the number done.
// Any goroutine, beside Reap.
func (q *Queue) DoneN(slots []uint32, results []error) (int, error) {
	return q.finishN(slots, Delivered, results, true)
}

// FinishN is Finish of every slot with outcome in one cgo call
// (dq_finish_n), results as DoneN.  Any goroutine, beside Reap.
func (q *Queue) FinishN(slots []uint32, outcome uint32, results []error) (int, error) {
	return q.finishN(slots, outcome, results, false)
}

func (q *Queue) finishN(slots []uint32, outcome uint32, results []error, done bool) (int, error) {
	if len(slots) == 0 || (results != nil && len(results) < len(slots)) {
		return 0, syscall.EINVAL
	}
	g, err := q.acquire()
	if err != nil {
		return 0, err
	}
	defer q.mu.RUnlock()
	var res *C.int
	var rbuf []C.int
	if results != nil {
		rbuf = make([]C.int, len(slots))
		res = &rbuf[0]
	}
	sp := (*C.uint32_t)(unsafe.Pointer(&slots[0]))
	var rc C.int
	switch {
	case q.fast:
		c := C.struct_dqgo_fc{g: g, buf: unsafe.Pointer(sp), res: res, op: C.DQGO_FC_FINISH_N,
			n: C.uint32_t(len(slots)), outcome: C.uint32_t(outcome)}
		if done {
			c.op = C.DQGO_FC_DONE_N
		}
		fastcall(&c)
		rc = c.ret
	case done:
		rc = C.dq_done_n(g.q, sp, C.uint(len(slots)), res)
	default:
		rc = C.dq_finish_n(g.q, sp, C.uint(len(slots)), C.uint32_t(outcome), res)
	}
	for i := range rbuf {
		results[i] = errno(rbuf[i])
	}
	if rc < 0 {
		return 0, errno(rc)
	}
	return int(rc), nil
}
