// SPDX-License-Identifier: LGPL-2.1 OR MIT

package dq

import (
	"testing"
)

// The cost of the binding per message, on the embedded engine, delay 0:
// reserve, write 500 bytes, commit, flush, reap, done.  Batch: 64 messages
// per call (5 cgo calls per 64 messages); Single: one call per message and
// step (5 cgo calls per message).  The difference is what the cgo
// crossings cost; BenchmarkCgoCall is one crossing alone.
func BenchmarkBatch64(b *testing.B) { benchRound(b, 64) }

func BenchmarkSingle(b *testing.B) { benchRound(b, 1) }

// Put64: PutN (reserve, copy, commit, flush in one cgo call), TryReap,
// DoneN: 3 cgo calls per 64 messages, the payload copied in C.
func BenchmarkPut64(b *testing.B) {
	q, err := Open(&Params{Slots: 1024, SlotSize: 512, SubmitEntries: 1024, Backend: BackendUser})
	if err != nil {
		b.Fatal(err)
	}
	defer q.Close()
	const batch = 64
	buf := make([]byte, batch*500)
	ents := make([]Entry, batch)
	out := make([]Reaped, batch)
	slots := make([]uint32, batch)
	b.SetBytes(500)
	b.ResetTimer()
	for done := 0; done < b.N; done += batch {
		for i := range ents {
			buf[i*500] = byte(done + i)
			ents[i] = Entry{Len: 500, UserData: uint64(done + i), Flags: CommitRelative}
		}
		if n, err := q.PutN(buf, ents, nil); n != batch || err != nil {
			b.Fatalf("put %d %v", n, err)
		}
		reapDone(b, q, out, slots, batch)
	}
}

// reapDone reaps n messages already due and marks them done, a batch at a
// time: the consumer half of the round-trip benchmarks.
func reapDone(b *testing.B, q *Queue, out []Reaped, slots []uint32, n int) {
	for got := 0; got < n; {
		k, err := q.TryReap(out)
		if err != nil {
			b.Fatal(err)
		}
		for i := 0; i < k; i++ {
			slots[i] = out[i].Slot
		}
		if d, err := q.DoneN(slots[:k], nil); d != k || err != nil {
			b.Fatalf("done %d %v", d, err)
		}
		got += k
	}
}

func benchRound(b *testing.B, batch int) {
	q, err := Open(&Params{Slots: 1024, SlotSize: 512, SubmitEntries: 1024, Backend: BackendUser})
	if err != nil {
		b.Fatal(err)
	}
	defer q.Close()
	msgs := make([]Msg, batch)
	ents := make([]Entry, batch)
	out := make([]Reaped, batch)
	slots := make([]uint32, batch)
	b.SetBytes(500)
	b.ResetTimer()
	for done := 0; done < b.N; {
		if batch == 1 {
			m, err := q.Reserve()
			if err != nil {
				b.Fatal(err)
			}
			m.Data[0] = byte(done)
			if err := q.CommitDelay(&m, 500, 0, uint64(done)); err != nil {
				b.Fatal(err)
			}
			if _, err := q.Flush(); err != nil {
				b.Fatal(err)
			}
			n, err := q.TryReap(out)
			if err != nil || n != 1 {
				b.Fatalf("reap %d %v", n, err)
			}
			if err := q.Done(out[0].Slot); err != nil {
				b.Fatal(err)
			}
			done++
			continue
		}
		n, err := q.ReserveN(msgs)
		if err != nil {
			b.Fatal(err)
		}
		for i := 0; i < n; i++ {
			msgs[i].Data[0] = byte(i)
			ents[i] = Entry{Len: 500, UserData: uint64(done + i), Flags: CommitRelative}
		}
		if c, err := q.CommitN(msgs[:n], ents[:n]); c != n || err != nil {
			b.Fatalf("commit %d %v", c, err)
		}
		if _, err := q.Flush(); err != nil {
			b.Fatal(err)
		}
		reapDone(b, q, out, slots, n)
		done += n
	}
}

// One cgo crossing (dq_now_ns: a clock read in C).
func BenchmarkCgoCall(b *testing.B) {
	for i := 0; i < b.N; i++ {
		cgoNow()
	}
}

// The same clock read as a fast call (Now, fastcall.go); a cgo call
// where there are none.
func BenchmarkFastCall(b *testing.B) {
	for i := 0; i < b.N; i++ {
		Now()
	}
}
