// SPDX-License-Identifier: LGPL-2.1 OR MIT

package dq

import (
	"errors"
	"syscall"
	"testing"
	"time"
)

// putBatch lays out n messages ids base.. back to back for PutN, of
// lengths 8 + (id*37 % 200) (so that no two neighbours have the same
// length and an offset off by one shows), due at due(i); it returns buf
// and ents as the test recorded them.
func putBatch(base uint64, n int, due func(i int) uint64) ([]byte, []Entry) {
	var buf []byte
	ents := make([]Entry, n)
	for i := range ents {
		id := base + uint64(i)
		l := 8 + int(id*37%200)
		p := make([]byte, l)
		fill(p, id)
		buf = append(buf, p...)
		ents[i] = Entry{Due: due(i), UserData: id, Len: uint32(l)}
	}
	return buf, ents
}

// PutN: every payload lands in its own slot, byte for byte, with its user
// data and handle, released in due order; a batch larger than the submit
// batch is flushed on the way, not refused.
func TestPutN(t *testing.T) {
	each(t, func(t *testing.T, tg target) {
		q := open(t, tg, Params{Slots: 512, SlotSize: 256, SubmitEntries: 64})
		// Due 300 ms on, in 30 ms: a message due before the flush that
		// hands it over is released then, after ones of an earlier
		// flush due later (PutN flushes mid-batch), so every due time is
		// past the call's end, even in a TCG VM (PutN there: ~20 ms).
		now := Now() + 300*ms
		const n = 300 // > SubmitEntries: PutN flushes on EAGAIN
		buf, ents := putBatch(0, n, func(i int) uint64 { return now + uint64((i*7919)%n)*ms/10 })
		handles := make([]uint64, n)
		k, err := q.PutN(buf, ents, handles)
		if k != n || err != nil {
			t.Fatalf("PutN of %d: %d, %v", n, k, err)
		}
		for i, h := range handles {
			if h == 0 {
				t.Fatalf("message %d: no handle", i)
			}
		}
		// Every payload checked by reapAll against fill(id); the order
		// against the due times this test chose.
		res := reapAll(t, q, n, 10*time.Second)
		seen := make([]bool, n)
		for i, r := range res {
			if r.id >= n || seen[r.id] {
				t.Fatalf("reaped id %d twice or unknown", r.id)
			}
			seen[r.id] = true
			if i > 0 && ents[res[i-1].id].Due > ents[r.id].Due {
				t.Errorf("message %d (due %d) after %d (due %d)", r.id,
					ents[r.id].Due, res[i-1].id, ents[res[i-1].id].Due)
			}
		}
		// The handles are the committed messages': a second cancel
		// of a delivered one is refused, not ENOENT of a wrong one.
		buf, ents = putBatch(1000, 1, func(int) uint64 { return Now() + uint64(time.Hour) })
		if k, err := q.PutN(buf, ents, handles[:1]); k != 1 || err != nil {
			t.Fatalf("PutN: %d, %v", k, err)
		}
		if err := q.Cancel(handles[0]); err != nil {
			t.Errorf("Cancel of PutN's handle: %v", err)
		}
	})
}

// PutN stops at the first message it cannot put and leaves no slot
// reserved: out of slots (ENOSPC), a payload over the slot size
// (EMSGSIZE), payloads past buf (EINVAL, nothing taken).
func TestPutNPartial(t *testing.T) {
	each(t, func(t *testing.T, tg target) {
		const slots = 16
		q := open(t, tg, Params{Slots: slots, SlotSize: 256, SubmitEntries: 64})
		later := Now() + uint64(time.Hour)
		at := func(int) uint64 { return later }

		// Payloads past the end of buf: refused before any slot is taken.
		buf, ents := putBatch(0, 4, at)
		if k, err := q.PutN(buf[:len(buf)-1], ents, nil); k != 0 || !errors.Is(err, syscall.EINVAL) {
			t.Fatalf("PutN past buf: %d, %v; want 0, EINVAL", k, err)
		}
		// Message 3 of 6 over the slot size: 3 put, the rest's slots free.
		buf, ents = putBatch(0, 6, at)
		big := make([]byte, 300)
		buf = append(append(append([]byte(nil), buf[:ents[0].Len+ents[1].Len+ents[2].Len]...), big...),
			buf[ents[0].Len+ents[1].Len+ents[2].Len:]...)
		ents = append(ents[:3], append([]Entry{{Due: later, UserData: 99, Len: 300}}, ents[3:]...)...)
		if k, err := q.PutN(buf, ents, nil); k != 3 || err != nil {
			t.Fatalf("PutN with a 300 B payload 4th: %d, %v; want 3, nil", k, err)
		}
		if k, err := q.PutN(big, ents[3:4], nil); k != 0 || !errors.Is(err, syscall.EMSGSIZE) {
			t.Fatalf("PutN of a 300 B payload alone: %d, %v; want 0, EMSGSIZE", k, err)
		}
		// 3 held: 13 free.  Ask for 20: 13 put, then ENOSPC alone.
		buf, ents = putBatch(100, 20, at)
		if k, err := q.PutN(buf, ents, nil); k != slots-3 || err != nil {
			t.Fatalf("PutN of 20 with %d free: %d, %v", slots-3, k, err)
		}
		if k, err := q.PutN(buf, ents, nil); k != 0 || !errors.Is(err, syscall.ENOSPC) {
			t.Fatalf("PutN with no slot free: %d, %v; want 0, ENOSPC", k, err)
		}
		st, err := q.Stats()
		if err != nil {
			t.Fatal(err)
		}
		if st.Pending != slots {
			t.Errorf("%d pending after PutN filled %d slots", st.Pending, slots)
		}
	})
}
