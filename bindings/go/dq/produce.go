// SPDX-License-Identifier: LGPL-2.1 OR MIT

package dq

/*
#include <stdlib.h>
#include "glue.h"
*/
import "C"

import (
	"syscall"
	"time"
	"unsafe"
)

// Msg is a reserved slot.  Data is the slot itself (Cap bytes of the
// arena): write the payload there, then commit the first n bytes.  The Msg
// and its Data belong to the goroutine that reserved it until Commit* or
// Abort; after that Data must not be touched.
type Msg struct {
	m    C.struct_dqshim_msg // first: dqgo_*_n step over Msgs by stride
	Data []byte
}

// Handle names the message once committed (Cancel takes it).
func (m *Msg) Handle() uint64 { return uint64(m.m.handle) }

// Slot is the slot index.
func (m *Msg) Slot() uint32 { return uint32(m.m.slot) }

// SetAttempts sets the attempt count a tracked queue hands back in
// Reaped.Attempts (a producer committing a failed message again).
func (m *Msg) SetAttempts(n uint16) { m.m.attempts = C.uint16_t(n) }

func (m *Msg) fill() {
	m.Data = unsafe.Slice((*byte)(m.m.data), int(m.m.cap))
}

// Entry says how CommitN commits the message of the same index.
type Entry struct {
	Due      uint64 // absolute CLOCK_MONOTONIC ns (Now), or a delay with CommitRelative
	UserData uint64 // echoed in Reaped.UserData
	Len      uint32 // payload bytes, <= len(Msg.Data)
	Flags    uint32 // 0 or CommitRelative
}

// Entry must be struct dqgo_ent, which dqgo_commit_n reads: a size
// mismatch fails the build (a negative array length).
var _ [unsafe.Sizeof(Entry{}) - unsafe.Sizeof(C.struct_dqgo_ent{})]byte
var _ [unsafe.Sizeof(C.struct_dqgo_ent{}) - unsafe.Sizeof(Entry{})]byte
var _ [unsafe.Offsetof(Entry{}.Len) - unsafe.Offsetof(C.struct_dqgo_ent{}.len)]byte
var _ [unsafe.Offsetof(C.struct_dqgo_ent{}.len) - unsafe.Offsetof(Entry{}.Len)]byte

// Commit flags.
const (
	CommitRelative = C.DQ_COMMIT_F_RELATIVE // Due is a delay from the flush
	CommitReplace  = C.DQ_COMMIT_F_REPLACE  // CommitKey: take the key's holder back
)

// Reserve takes a free slot (dq_reserve): ENOSPC when every slot is held.
// Any goroutine (FlagSingleProducer: one producer goroutine at a time).
func (q *Queue) Reserve() (Msg, error) {
	var m Msg
	g, err := q.acquire()
	if err != nil {
		return m, err
	}
	defer q.mu.RUnlock()
	if err := errno(C.dq_reserve(g.q, &m.m)); err != nil {
		return m, err
	}
	m.fill()
	return m, nil
}

// ReserveWait is Reserve waiting up to timeout (< 0: forever) for a slot
// to come back; ETIME when none did (dq_reserve_wait).  It does not flush.
// Any goroutine, as Reserve.
func (q *Queue) ReserveWait(timeout time.Duration) (Msg, error) {
	var m Msg
	g, err := q.acquire()
	if err != nil {
		return m, err
	}
	defer q.mu.RUnlock()
	ns := int64(timeout)
	if timeout < 0 {
		ns = -1
	}
	if err := errno(C.dq_reserve_wait(g.q, &m.m, C.int64_t(ns))); err != nil {
		return m, err
	}
	m.fill()
	return m, nil
}

// ReserveN fills msgs with up to len(msgs) free slots, one cgo call per
// 64, and returns how many; ENOSPC when none is free.  Any goroutine, as
// Reserve.
func (q *Queue) ReserveN(msgs []Msg) (int, error) {
	return q.chunks(len(msgs), func(g *C.struct_dqgo_queue, s *scratch, off, k int) C.int {
		rc := C.dq_reserve_n(g.q, s.msgs, C.uint(k))
		if rc > 0 {
			cm := unsafe.Slice(s.msgs, int(rc))
			for i := range cm {
				msgs[off+i].m = cm[i]
				msgs[off+i].fill()
			}
		}
		return rc
	})
}

// chunks is the batch calls' loop (ReserveN, CommitN): with the queue
// held and a scratch buffer, step takes items [off, off+k) of n, k <=
// scratchN, and returns how many it did or a negative errno.  It stops at
// the first step that does fewer than k; the result is the number done,
// or the first step's error when none was.
func (q *Queue) chunks(n int, step func(g *C.struct_dqgo_queue, s *scratch, off, k int) C.int) (int, error) {
	if n == 0 {
		return 0, syscall.EINVAL
	}
	g, err := q.acquire()
	if err != nil {
		return 0, err
	}
	defer q.mu.RUnlock()
	s := q.getScratch()
	defer q.putScratch(s)
	done := 0
	for done < n {
		k := n - done
		if k > scratchN {
			k = scratchN
		}
		rc := step(g, s, done, k)
		if rc < 0 {
			if done > 0 {
				break
			}
			return 0, errno(rc)
		}
		done += int(rc)
		if int(rc) < k {
			break
		}
	}
	return done, nil
}

// call runs one C call with the queue held: the single-message calls.
func (q *Queue) call(fn func(g *C.struct_dqgo_queue) C.int) error {
	g, err := q.acquire()
	if err != nil {
		return err
	}
	defer q.mu.RUnlock()
	return errno(fn(g))
}

// scratchN messages per batch buffer: the library's batch calls take one
// lock round per call, and 64 is what dqgo_commit_n hands it at once.
const scratchN = 64

// scratch is a producer batch buffer in C memory.  Passing the caller's
// []Msg to C instead would have cgo scan the whole slice for Go pointers
// (cgocheck) at every call: more than the batch call itself costs.
type scratch struct {
	msgs *C.struct_dqshim_msg
	ents *C.struct_dqgo_ent
}

func (s *scratch) free() {
	C.free(unsafe.Pointer(s.msgs))
	C.free(unsafe.Pointer(s.ents))
}

func (q *Queue) getScratch() *scratch {
	select {
	case s := <-q.pool:
		return s
	default:
	}
	s := &scratch{
		msgs: (*C.struct_dqshim_msg)(C.calloc(scratchN, C.size_t(unsafe.Sizeof(C.struct_dqshim_msg{})))),
		ents: (*C.struct_dqgo_ent)(C.calloc(scratchN, C.size_t(unsafe.Sizeof(C.struct_dqgo_ent{})))),
	}
	if s.msgs == nil || s.ents == nil {
		panic("dq: out of memory")
	}
	return s
}

func (q *Queue) putScratch(s *scratch) {
	select {
	case q.pool <- s:
	default:
		s.free()
	}
}

// Abort gives a reserved, uncommitted slot back (dq_abort).  Any
// goroutine, as Reserve.
func (q *Queue) Abort(m *Msg) error {
	return q.call(func(g *C.struct_dqgo_queue) C.int { return C.dq_abort(g.q, &m.m) })
}

// Commit queues m's first n bytes, due at due (absolute, Now's clock),
// with userData echoed at reap (dq_commit); the engine takes it at the
// next Flush.  EAGAIN: the batch is full, Flush and commit again (the
// reservation is kept); EMSGSIZE: n > len(m.Data).  Any goroutine, as
// Reserve.
func (q *Queue) Commit(m *Msg, n int, due uint64, userData uint64) error {
	return q.call(func(g *C.struct_dqgo_queue) C.int {
		return C.dq_commit(g.q, &m.m, C.uint32_t(n), C.uint64_t(due), C.uint64_t(userData))
	})
}

// CommitDelay is Commit due delay after the flush that hands it to the
// engine (dq_commit_delay).  Any goroutine, as Reserve.
func (q *Queue) CommitDelay(m *Msg, n int, delay time.Duration, userData uint64) error {
	if delay < 0 {
		delay = 0
	}
	return q.call(func(g *C.struct_dqgo_queue) C.int {
		return C.dq_commit_delay(g.q, &m.m, C.uint32_t(n), C.uint64_t(delay), C.uint64_t(userData))
	})
}

// CommitKey commits m carrying key (a FlagKeys queue; the key is its
// UserData), flags CommitRelative and/or CommitReplace (dq_commit_key).
// What the key does is decided at Flush and reported through Rejects.
// Any goroutine, as Reserve.
func (q *Queue) CommitKey(m *Msg, n int, due uint64, key uint64, flags uint32) error {
	return q.call(func(g *C.struct_dqgo_queue) C.int {
		return C.dq_commit_key(g.q, &m.m, C.uint32_t(n), C.uint64_t(due), C.uint64_t(key), C.uint(flags))
	})
}

// CommitN commits msgs[i] as ents[i] says, in order, one cgo call per 64
// (one lock round in the library), and returns how many were committed:
// it stops at the first that fails (EAGAIN: the batch is full; the rest
// stay reserved).  The error is that entry's when none was committed.
// Any goroutine, as Reserve.
func (q *Queue) CommitN(msgs []Msg, ents []Entry) (int, error) {
	if len(msgs) < len(ents) {
		return 0, syscall.EINVAL
	}
	return q.chunks(len(ents), func(g *C.struct_dqgo_queue, s *scratch, off, k int) C.int {
		cm := unsafe.Slice(s.msgs, k)
		ce := unsafe.Slice((*Entry)(unsafe.Pointer(s.ents)), k)
		for i := 0; i < k; i++ {
			cm[i] = msgs[off+i].m
			ce[i] = ents[off+i]
		}
		return C.dqgo_commit_n(g, unsafe.Pointer(s.msgs), C.size_t(unsafe.Sizeof(cm[0])), s.ents, C.uint(k))
	})
}

// PutN is a producer's whole step for a batch in one cgo call (ReserveN,
// a copy, CommitN and Flush were three, and a copy per message in Go):
// it reserves a slot for each of ents, copies message i's payload into it
// (ents[i].Len bytes of buf, right after message i-1's: buf holds the
// payloads back to back), commits it as ents[i] says and flushes.  It
// returns how many were committed, the first ones, in order: it stops at
// the first message that fails (no free slot: ENOSPC, a payload over the
// slot size: EMSGSIZE), and no slot stays reserved.  A full submit batch
// is flushed and the rest committed.  The error is the failing message's
// when none was committed, else the final Flush's (the n committed wait
// for the next Flush).  handles (nil, or len(ents) long) gets each
// committed message's handle (Cancel takes it).  EINVAL: ents empty, buf
// shorter than the payloads, handles too short.  buf is only read, and
// only during the call.  Any goroutine, as Reserve.
func (q *Queue) PutN(buf []byte, ents []Entry, handles []uint64) (int, error) {
	if len(ents) == 0 || (handles != nil && len(handles) < len(ents)) {
		return 0, syscall.EINVAL
	}
	g, err := q.acquire()
	if err != nil {
		return 0, err
	}
	defer q.mu.RUnlock()
	var bp unsafe.Pointer
	if len(buf) > 0 {
		bp = unsafe.Pointer(&buf[0])
	}
	var hp *C.uint64_t
	if handles != nil {
		hp = (*C.uint64_t)(unsafe.Pointer(&handles[0]))
	}
	var ferr, rc C.int
	// Entry has dqgo_ent's layout (checked above) and no Go pointers, so
	// cgo's pointer check of ents is cheap: no C copy as in CommitN.
	ep := (*C.struct_dqgo_ent)(unsafe.Pointer(&ents[0]))
	if q.fast {
		// A fast call (fastcall.go): it never waits (no free slot is
		// ENOSPC, a full batch is flushed), and a producer woken by a
		// timer would otherwise wake the runtime's sysmon here.
		c := C.struct_dqgo_fc{g: g, buf: bp, len: C.uint64_t(len(buf)), ents: ep, n: C.uint32_t(len(ents)),
			handles: hp, op: C.DQGO_FC_PUT_N}
		fastcall(&c)
		rc, ferr = c.ret, c.flush_err
	} else {
		rc = C.dqgo_put_n(g, bp, C.size_t(len(buf)), ep, C.uint(len(ents)), hp, &ferr)
	}
	if rc < 0 {
		return 0, errno(rc)
	}
	return int(rc), errno(ferr)
}

// Flush hands every committed message to the engine in one call and
// returns how many it accepted (dq_flush).  Rejected ones (and, with
// keys, the messages a CommitReplace took the place of) come out of
// Rejects.  Any goroutine.
func (q *Queue) Flush() (int, error) {
	g, err := q.acquire()
	if err != nil {
		return 0, err
	}
	defer q.mu.RUnlock()
	rc := C.dq_flush(g.q)
	if rc < 0 {
		return 0, errno(rc)
	}
	return int(rc), nil
}

// Cancel takes back a committed message the engine still holds (flushing
// first): nil, EALREADY (already handed to the consumer, or cancelled),
// ENOENT (no such message).  Any goroutine.
func (q *Queue) Cancel(handle uint64) error {
	g, err := q.acquire()
	if err != nil {
		return err
	}
	defer q.mu.RUnlock()
	return errno(C.dq_cancel(g.q, C.uint64_t(handle)))
}

// KeyState says where a keyed message is.
type KeyState uint32

const (
	KeyPending  KeyState = C.DQ_KEY_PENDING  // not yet due
	KeyDue      KeyState = C.DQ_KEY_DUE      // due, not yet handed to the consumer
	KeyInflight KeyState = C.DQ_KEY_INFLIGHT // tracked: reaped, not finished
)

// KeyInfo is where a key's message is (or was, for CancelKey).
type KeyInfo struct {
	Handle uint64
	Due    uint64
	State  KeyState
}

func keyInfo(ki *C.struct_dq_key_info) KeyInfo {
	return KeyInfo{Handle: uint64(ki.handle), Due: uint64(ki.due_ns), State: KeyState(ki.state)}
}

// CancelKey cancels the message holding key (dq_cancel_key): ENOENT (no
// such key), EALREADY (handed to the consumer), EOPNOTSUPP (no keys).
// Any goroutine.
func (q *Queue) CancelKey(key uint64) (KeyInfo, error) {
	var ki C.struct_dq_key_info
	g, err := q.acquire()
	if err != nil {
		return KeyInfo{}, err
	}
	defer q.mu.RUnlock()
	if err := errno(C.dq_cancel_key(g.q, C.uint64_t(key), &ki)); err != nil {
		return KeyInfo{}, err
	}
	return keyInfo(&ki), nil
}

// LookupKey says where the message holding key is (dq_lookup_key).  Any
// goroutine.
func (q *Queue) LookupKey(key uint64) (KeyInfo, error) {
	var ki C.struct_dq_key_info
	g, err := q.acquire()
	if err != nil {
		return KeyInfo{}, err
	}
	defer q.mu.RUnlock()
	if err := errno(C.dq_lookup_key(g.q, C.uint64_t(key), &ki)); err != nil {
		return KeyInfo{}, err
	}
	return keyInfo(&ki), nil
}

// Replaced is Reject.Reason of a message a CommitReplace took the place
// of: not a failure, its slot is free again.
const Replaced = C.DQ_REPLACED

// Reject is a message the engine refused at a flush (Error a negative
// errno's Errno, Reason an enum dq_reject_reason) or, Reason Replaced, a
// message replaced by key.  Its slot is already free.
type Reject struct {
	Reason   uint32
	Error    syscall.Errno // 0 for Replaced
	Slot     uint32
	UserData uint64
}

// Rejects moves up to len(out) rejects of earlier flushes (any
// goroutine's, in flush order) into out and returns how many, and how
// many were dropped since the last call because more than 4096 waited.
// Any goroutine.
func (q *Queue) Rejects(out []Reject) (n int, dropped uint64, err error) {
	if len(out) == 0 {
		return 0, 0, syscall.EINVAL
	}
	g, err := q.acquire()
	if err != nil {
		return 0, 0, err
	}
	defer q.mu.RUnlock()
	q.rejmu.Lock()
	defer q.rejmu.Unlock()
	if len(q.rejbuf) < len(out) {
		q.rejbuf = make([]C.struct_dq_reject, len(out))
	}
	var d C.uint64_t
	k := int(C.dqgo_take_rejects(g, &q.rejbuf[0], C.uint(len(out)), &d))
	for i := 0; i < k; i++ {
		r := &q.rejbuf[i]
		out[i] = Reject{Reason: uint32(r.reason), Error: syscall.Errno(-r.error),
			Slot: uint32(r.slot), UserData: uint64(r.user_data)}
	}
	return k, uint64(d), nil
}
