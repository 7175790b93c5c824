// SPDX-License-Identifier: LGPL-2.1 OR MIT

package dq

/*
#include "glue.h"
*/
import "C"

import (
	"time"
)

// Stats are a queue's counters (dq_queue_get_stats; dq.ko's
// DQ_IOC_QUEUE_STATS or the embedded engine's own).
type Stats struct {
	SlotCount, SlotSize uint32
	Pending             uint64 // held by the engine
	ReadyBacklog        uint64
	Submitted           uint64 // accepted
	Released            uint64
	Cancelled           uint64
	Rejected            [C.DQ_REJ_MAX]uint64 // by reason
	LateMaxNs           uint64
	LateSumNs           uint64
	Replaced            uint64
}

// Stats reads the queue's counters.  Any goroutine.
func (q *Queue) Stats() (Stats, error) {
	var st C.struct_dq_queue_stats
	g, err := q.acquire()
	if err != nil {
		return Stats{}, err
	}
	defer q.mu.RUnlock()
	if err := errno(C.dq_queue_get_stats(g.q, &st)); err != nil {
		return Stats{}, err
	}
	s := Stats{
		SlotCount: uint32(st.slot_count), SlotSize: uint32(st.slot_size),
		Pending: uint64(st.pending), ReadyBacklog: uint64(st.ready_backlog),
		Submitted: uint64(st.submitted), Released: uint64(st.released),
		Cancelled: uint64(st.cancelled), LateMaxNs: uint64(st.late_max_ns),
		LateSumNs: uint64(st.late_sum_ns), Replaced: uint64(st.replaced),
	}
	for i := range s.Rejected {
		s.Rejected[i] = uint64(st.rejected[i])
	}
	return s, nil
}

// TrackStats are a tracked queue's delivery counters (dq_queue_track_stats).
type TrackStats struct {
	Inflight, DoneDelivered, DoneFailed, DoneRefused uint64
	Redelivered, CreditWaits, Expired                uint64
	MaxInflight                                      uint32
}

// TrackStats reads them; all zero on an untracked queue.  Any goroutine.
func (q *Queue) TrackStats() (TrackStats, error) {
	var st C.struct_dq_track_stats
	g, err := q.acquire()
	if err != nil {
		return TrackStats{}, err
	}
	defer q.mu.RUnlock()
	if err := errno(C.dq_queue_track_stats(g.q, &st)); err != nil {
		return TrackStats{}, err
	}
	return TrackStats{
		Inflight: uint64(st.inflight), DoneDelivered: uint64(st.done_delivered),
		DoneFailed: uint64(st.done_failed), DoneRefused: uint64(st.done_refused),
		Redelivered: uint64(st.redelivered), CreditWaits: uint64(st.credit_waits),
		Expired: uint64(st.expired), MaxInflight: uint32(st.max_inflight),
	}, nil
}

// Info is what a queue is (dq_queue_info).
type Info struct {
	Backend   Backend
	Path      string // "uring", "ioctl" (dq.ko) or "local"
	QueueID   uint32
	Features  uint32
	SlotCount uint32
	SlotSize  uint32 // after rounding
}

// Info describes the queue.  Any goroutine.
func (q *Queue) Info() (Info, error) {
	in := C.struct_dq_info{sz: C.sizeof_struct_dq_info}
	g, err := q.acquire()
	if err != nil {
		return Info{}, err
	}
	defer q.mu.RUnlock()
	if err := errno(C.dq_queue_info(g.q, &in)); err != nil {
		return Info{}, err
	}
	return Info{
		Backend: Backend(in.backend), Path: C.GoString(C.dq_path_name(C.enum_dq_path(in.path))),
		QueueID: uint32(in.queue_id), Features: uint32(in.features),
		SlotCount: uint32(in.slot_count), SlotSize: uint32(in.slot_size),
	}, nil
}

// JournalStats are a durable queue's journal counters (a subset of
// struct dq_journal_stats).
type JournalStats struct {
	Segments                 uint32
	CommitPos, DurablePos    uint64
	Commits, Retires, Fsyncs uint64
	RecRecovered, RecOverdue uint64 // what the recovery at open put back
	RecCorrupt, RecTornBytes uint64
	IOErrors, Enospc         uint64
}

// JournalStats reads them; EOPNOTSUPP without a journal.  Any goroutine.
func (q *Queue) JournalStats() (JournalStats, error) {
	st := C.struct_dq_journal_stats{sz: C.sizeof_struct_dq_journal_stats}
	g, err := q.acquire()
	if err != nil {
		return JournalStats{}, err
	}
	defer q.mu.RUnlock()
	if err := errno(C.dq_journal_stats(g.q, &st)); err != nil {
		return JournalStats{}, err
	}
	return JournalStats{
		Segments: uint32(st.segments), CommitPos: uint64(st.commit_pos),
		DurablePos: uint64(st.durable_pos), Commits: uint64(st.commits),
		Retires: uint64(st.retires), Fsyncs: uint64(st.fsyncs),
		RecRecovered: uint64(st.rec_recovered), RecOverdue: uint64(st.rec_overdue),
		RecCorrupt: uint64(st.rec_corrupt), RecTornBytes: uint64(st.rec_torn_bytes),
		IOErrors: uint64(st.io_errors), Enospc: uint64(st.enospc),
	}, nil
}

// JournalMark is the journal position of everything committed so far (0
// without a journal).  Any goroutine.
func (q *Queue) JournalMark() uint64 {
	g, err := q.acquire()
	if err != nil {
		return 0
	}
	defer q.mu.RUnlock()
	return uint64(C.dq_journal_mark(g.q))
}

// DurableWait flushes, then waits up to timeout (< 0: forever) until
// everything committed up to mark is on stable storage (dq_durable_wait):
// ETIME, the flush's error, EIO once the journal failed, EOPNOTSUPP
// without a journal.  Any goroutine.
func (q *Queue) DurableWait(mark uint64, timeout time.Duration) error {
	g, err := q.acquire()
	if err != nil {
		return err
	}
	defer q.mu.RUnlock()
	ns := int64(timeout)
	if timeout < 0 {
		ns = -1
	}
	return errno(C.dq_durable_wait(g.q, C.uint64_t(mark), C.int64_t(ns)))
}

// DurablePoll tells without waiting whether everything committed up to
// mark is on stable storage (dq_durable_poll, since 1.1): true; false,
// nil: not yet (Flush first: an unflushed commit never becomes durable);
// EIO (or the sync's errno) once the journal failed before mark, which
// then never becomes durable; EOPNOTSUPP without a journal.  Unlike
// DurableWait it flushes nothing and asks no sync of retired messages.
// Any goroutine.
func (q *Queue) DurablePoll(mark uint64) (bool, error) {
	g, err := q.acquire()
	if err != nil {
		return false, err
	}
	defer q.mu.RUnlock()
	rc := C.dq_durable_poll(g.q, C.uint64_t(mark))
	return rc == 1, errno(rc)
}

// DurableFD returns the queue's descriptor (an eventfd) that is readable
// once the durable position (JournalStats().DurablePos) moved or the
// journal failed (dq_durable_fd, since 1.1),
// for an event loop that waits on it beside its sockets (read its 8 bytes
// to rearm it, then DurablePoll).  The queue owns it: Close closes it, so
// do not wrap it in an os.File that would close it too.  EOPNOTSUPP
// without a journal.  Any goroutine.
func (q *Queue) DurableFD() (int, error) {
	g, err := q.acquire()
	if err != nil {
		return -1, err
	}
	defer q.mu.RUnlock()
	rc := C.dq_durable_fd(g.q)
	if rc < 0 {
		return -1, errno(rc)
	}
	return int(rc), nil
}
