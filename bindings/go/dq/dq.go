// SPDX-License-Identifier: LGPL-2.1 OR MIT

// Package dq is the Go binding of libdqshim, dq's user-space library:
// delayed dispatch of messages that are written and read in place.
//
// A Queue holds messages until their due time (CLOCK_MONOTONIC, see Now)
// and then hands them to its consumer: never early, in due order, FIFO
// among equal due times, each exactly once.  A message lives in a
// fixed-size slot of the queue's payload arena: Reserve gives a Msg whose
// Data is a []byte over the slot itself, the producer writes the payload
// there and commits it; Reap gives Reaped entries whose Data is again the
// slot itself, valid until Done.  Nothing is copied, and a batch (ReserveN,
// CommitN, Reap, DoneN) is one cgo call, not one per message.
//
// Backends: the embedded engine (BackendUser, in this process) and dq.ko
// (BackendKernel, /dev/dq), with the same API and guarantees.  A durable
// queue (OpenDurable, AttachDurable) journals every message, and its held
// messages come back after the process dies, even by kill -9.
//
// Errors are syscall.Errno values, the library's negative errno returns
// made positive: errors.Is(err, syscall.EAGAIN) works.
//
// Goroutine safety follows the C library's contract (dqshim.h) call by
// call, stated on each method; in short: every call may be made from any
// number of goroutines at once, except Reap/TryReap (one at a time per
// queue: an overlapping one returns EBUSY), the producer calls on a queue
// opened with FlagSingleProducer (one goroutine at a time), and Close
// (which waits for the calls in progress and wakes a blocked Reap).
// A Msg or Reaped belongs to the goroutine that obtained it until it is
// committed, aborted or done; so does the memory its Data covers.
package dq

/*
#cgo pkg-config: dqshim
#include <stdlib.h>
#include "glue.h"
*/
import "C"

import (
	"math"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"
)

// Backend selects the engine a queue runs on.
type Backend uint32

const (
	BackendAuto   Backend = C.DQ_BACKEND_AUTO   // dq.ko if /dev/dq works, else the embedded engine
	BackendKernel Backend = C.DQ_BACKEND_KERNEL // dq.ko through /dev/dq
	BackendUser   Backend = C.DQ_BACKEND_USER   // the embedded engine, in this process
)

func (b Backend) String() string { return C.GoString(C.dq_backend_name(C.enum_dq_backend(b))) }

// Flags of Params (DQ_OPEN_F_* of dqshim.h; FlagVisibility is set for
// you when Params.Visibility is not 0).
const (
	FlagIoctl          = C.DQ_OPEN_F_IOCTL
	FlagTrack          = C.DQ_OPEN_F_TRACK
	FlagKeys           = C.DQ_OPEN_F_KEYS
	FlagSingleProducer = C.DQ_OPEN_F_SINGLE_PRODUCER
	FlagFixedSlack     = C.DQ_OPEN_F_FIXED_SLACK
	FlagSlotAlign8     = C.DQ_OPEN_F_SLOT_ALIGN8
	FlagLazyArena      = C.DQ_OPEN_F_LAZY_ARENA
	flagVisibility     = C.DQ_OPEN_F_VISIBILITY
)

// Params describe a queue.  Zero means the library's default for each
// field (1024 slots of 64 bytes, BackendAuto, 50 us granularity).
type Params struct {
	Slots         uint32 // slots in the arena: most messages held at once
	SlotSize      uint32 // bytes per slot (rounded up to 64, or 8 with FlagSlotAlign8)
	SubmitEntries uint32 // batch (submit ring) size
	ReadyEntries  uint32 // dq.ko's ready ring size
	NumaNode      int32  // dq.ko: node of engine and memory; 0 or -1: the caller's node (run on node 0 to get it)
	Granularity   time.Duration
	Backend       Backend
	UringDepth    uint32
	Flags         uint32 // Flag*
	MaxInflight   uint32 // FlagTrack: most messages reaped and not finished
	Visibility    time.Duration
	// ReapNetpoll: a waiting Reap is parked in Go's netpoller instead of
	// blocked in a cgo call (see Reap).  Go only (the library never sees
	// it), read at Open/Attach; the queue keeps it for its life.  On the
	// embedded engine, non-durable, the cheaper wait for busy and sparse
	// consumers alike (its rounds are fast calls: fastcall.go); on dq.ko
	// or durable, cheaper when other goroutines keep the Ps busy and a
	// wake-up brings many messages, dearer per wake-up on an otherwise
	// idle process: see the README's figures.
	ReapNetpoll bool
}

// Durability of a journal.
type Durability uint32

const (
	DurableBatch  Durability = C.DQ_DURABLE_BATCH  // group commit, see JournalParams.SyncInterval
	DurableAlways Durability = C.DQ_DURABLE_ALWAYS // Flush returns once its commits are on disk
)

// JournalParams describe a durable queue's journal (docs/journal.md).
type JournalParams struct {
	Dir          string // journal directory, made if missing
	Durability   Durability
	SyncInterval time.Duration // DurableBatch: at most one fdatasync per this long
	SyncRecords  uint32
	// DurableBatch: while the only entries not yet synced are retired
	// messages', at most one fdatasync per this long (0: SyncInterval's).
	// The entries are still written every SyncInterval: a killed
	// process loses none; a power cut may bring back up to this long of
	// retired messages once more.  At most 4294 s.  Since 1.1.
	RetireSync   time.Duration
	MaxBytes     uint64 // a commit that would pass it gets ENOSPC; 0: 1 GiB
	SegmentBytes uint64
}

// Queue is one dq queue.  See the package doc for goroutine safety.
type Queue struct {
	mu      sync.RWMutex // write-held by Close only
	g       *C.struct_dqgo_queue
	reaping atomic.Int32
	closing atomic.Int32
	rbuf    []C.struct_dq_reaped // Reap's (over rbufp, C memory), under reaping
	rbufp   *C.struct_dq_reaped
	pool    chan *scratch // producer batch buffers in C memory
	rejbuf  []C.struct_dq_reject
	rejmu   sync.Mutex
	pf      *os.File        // ReapNetpoll: dqgo_netpoll_fd(), in the netpoller; else nil
	prc     syscall.RawConn // pf's
	fast    bool            // the calls that never wait are fast calls (fastcall.go)
}

func errno(rc C.int) error {
	if rc >= 0 {
		return nil
	}
	return syscall.Errno(-rc)
}

func (p *Params) c() C.struct_dqgo_params {
	var gp C.struct_dqgo_params
	if p == nil {
		gp.numa_node = -1
		return gp
	}
	gp.slot_count = C.uint32_t(p.Slots)
	gp.slot_size = C.uint32_t(p.SlotSize)
	gp.submit_entries = C.uint32_t(p.SubmitEntries)
	gp.ready_entries = C.uint32_t(p.ReadyEntries)
	gp.numa_node = C.int32_t(p.NumaNode)
	if p.NumaNode == 0 {
		gp.numa_node = -1
	}
	gp.granularity_ns = C.uint32_t(p.Granularity.Nanoseconds())
	gp.backend = C.uint32_t(p.Backend)
	gp.uring_depth = C.uint32_t(p.UringDepth)
	gp.flags = C.uint32_t(p.Flags)
	gp.max_inflight = C.uint32_t(p.MaxInflight)
	if p.Visibility > 0 {
		gp.flags |= flagVisibility
		gp.visibility_ns = C.uint64_t(p.Visibility.Nanoseconds())
	}
	return gp
}

func openQueue(p *Params, name string, jp *JournalParams) (*Queue, error) {
	gp := p.c()
	var cname, cdir *C.char
	var gj C.struct_dqgo_journal
	if name != "" {
		cname = C.CString(name)
		defer C.free(unsafe.Pointer(cname))
	}
	if jp != nil {
		if jp.Dir == "" {
			return nil, syscall.EINVAL
		}
		cdir = C.CString(jp.Dir)
		defer C.free(unsafe.Pointer(cdir))
		gj.durability = C.uint32_t(jp.Durability)
		gj.sync_interval_us = C.uint32_t(jp.SyncInterval.Microseconds())
		gj.sync_records = C.uint32_t(jp.SyncRecords)
		if jp.RetireSync < 0 || jp.RetireSync.Microseconds() > math.MaxUint32 {
			return nil, syscall.EINVAL
		}
		gj.retire_sync_us = C.uint32_t(jp.RetireSync.Microseconds())
		gj.max_bytes = C.uint64_t(jp.MaxBytes)
		gj.segment_bytes = C.uint64_t(jp.SegmentBytes)
	}
	q := &Queue{pool: make(chan *scratch, 8)}
	if rc := C.dqgo_open(&gp, cname, cdir, &gj, &q.g); rc < 0 {
		return nil, errno(rc)
	}
	q.fast = fastCalls && q.g.fast != 0
	if p.ReapNetpoll {
		if err := q.netpoll(); err != nil {
			C.dqgo_close(q.g)
			return nil, err
		}
	}
	return q, nil
}

// netpoll gives the queue the fd a ReapNetpoll Reap waits on.  It is
// non-blocking, so os.NewFile puts it in the netpoller; a deadline is
// refused (os.ErrNoDeadline) if it did not, and that is EIO.
func (q *Queue) netpoll() error {
	fd := C.dqgo_netpoll_fd(q.g)
	if fd < 0 {
		return errno(fd)
	}
	f := os.NewFile(uintptr(fd), "dq-reap")
	rc, err := f.SyscallConn()
	if err == nil {
		err = f.SetReadDeadline(time.Time{})
	}
	if err != nil {
		f.Close()
		return syscall.EIO
	}
	q.pf, q.prc = f, rc
	return nil
}

// Open creates a private queue (dq_queue_open).  Any goroutine.
func Open(p *Params) (*Queue, error) { return openQueue(p, "", nil) }

// Attach attaches to the named dq.ko queue made by `dqctl create`
// (dq_queue_attach): p supplies only Flags and UringDepth.  FlagTrack
// attaches as the queue's consumer.  Any goroutine.
func Attach(name string, p *Params) (*Queue, error) { return openQueue(p, name, nil) }

// OpenDurable creates a private durable queue: the messages a journal in
// jp.Dir holds from an earlier run are put back before it returns
// (dq_queue_open_durable).  Any goroutine.
func OpenDurable(p *Params, jp JournalParams) (*Queue, error) { return openQueue(p, "", &jp) }

// AttachDurable attaches to a named durable queue (dq_queue_attach_durable).
// Any goroutine.
func AttachDurable(name string, p *Params, jp JournalParams) (*Queue, error) {
	return openQueue(p, name, &jp)
}

// acquire takes the queue for one call; release with q.mu.RUnlock().
func (q *Queue) acquire() (*C.struct_dqgo_queue, error) {
	q.mu.RLock()
	if q.g == nil {
		q.mu.RUnlock()
		return nil, syscall.EBADF
	}
	return q.g, nil
}

// Close destroys the queue (dq_queue_close): held messages are dropped
// (a durable queue keeps them in its journal), every Data slice into the
// arena becomes invalid.  A Reap blocked in another goroutine returns
// EBADF; Close waits for the calls in progress, and calls after it return
// EBADF.  Any goroutine; a second Close is a no-op.
func (q *Queue) Close() error {
	q.closing.Store(1)
	q.mu.RLock()
	if q.g != nil {
		C.dqgo_wake(q.g)
	}
	q.mu.RUnlock()
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.g == nil {
		return nil
	}
	if q.pf != nil {
		q.pf.Close()
	}
	C.dqgo_close(q.g)
	q.g = nil
	C.free(unsafe.Pointer(q.rbufp))
	q.rbufp, q.rbuf = nil, nil
	for len(q.pool) > 0 {
		(<-q.pool).free()
	}
	return nil
}

// Version is the version of libdqshim's header the package was built
// against (DQSHIM_VERSION_MAJOR, _MINOR): the package's version is the
// library's.
func Version() (major, minor int) {
	return int(C.DQSHIM_VERSION_MAJOR), int(C.DQSHIM_VERSION_MINOR)
}

// Now is CLOCK_MONOTONIC in nanoseconds: the clock of every due time.
// Any goroutine.  A fast call (fastcall.go): a consumer that reads the
// clock at each wake-up would otherwise wake the runtime's sysmon there.
func Now() uint64 {
	if !fastCalls {
		return cgoNow()
	}
	c := C.struct_dqgo_fc{op: C.DQGO_FC_NOW}
	fastcall(&c)
	return uint64(c.now)
}

// cgoNow is Now as a cgo call (BenchmarkCgoCall measures one).
func cgoNow() uint64 { return uint64(C.dq_now_ns()) }

// StrError describes err in dq's terms (dq_strerror).
func StrError(err syscall.Errno) string { return C.GoString(C.dq_strerror(C.int(err))) }
