// SPDX-License-Identifier: LGPL-2.1 OR MIT

package dq

// The cases of user/tests/contract.c that apply to the binding, judged on
// what each test recorded (payload bytes, order, due times on its own
// reading of the clock), never on values dq reports back.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The package's version is the header's, which is the library's: dq's
// one version, the file VERSION at the top, given to the test by
// gotest-run.sh when it knows it.
func TestVersion(t *testing.T) {
	maj, min := Version()
	want := os.Getenv("DQ_LIB_VERSION")
	if want == "" {
		t.Skip("DQ_LIB_VERSION not set")
	}
	if got := fmt.Sprintf("%d.%d.", maj, min); !strings.HasPrefix(want+".", got) && !strings.HasPrefix(want, got) {
		t.Errorf("header %d.%d, library %s", maj, min, want)
	}
}

// One message: payload in place, not early, user data, then done.
func TestOneMessage(t *testing.T) {
	each(t, func(t *testing.T, tg target) {
		q := open(t, tg, Params{Slots: 8, SlotSize: 256})
		m, err := q.Reserve()
		if err != nil {
			t.Fatal(err)
		}
		if len(m.Data) < 200 {
			t.Fatalf("slot of %d bytes", len(m.Data))
		}
		fill(m.Data[:200], 7)
		due := Now() + 100*ms
		if err := q.Commit(&m, 200, due, 7); err != nil {
			t.Fatal(err)
		}
		if n, err := q.Flush(); n != 1 || err != nil {
			t.Fatalf("Flush: %d, %v", n, err)
		}
		out := make([]Reaped, 4)
		if n, err := q.TryReap(out); n != 0 || err != nil {
			t.Fatalf("TryReap before due: %d, %v", n, err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		n, err := q.Reap(ctx, out)
		now := Now()
		if n != 1 || err != nil {
			t.Fatalf("Reap: %d, %v", n, err)
		}
		if now < due {
			t.Errorf("early by %d ns", due-now)
		}
		r := out[0]
		if r.UserData != 7 || !payloadOK(r.Data, 7, 200) {
			t.Errorf("user data %d, payload intact %v", r.UserData, payloadOK(r.Data, 7, 200))
		}
		// Zero copy: the reaped bytes are the reserved slot's.
		if &r.Data[0] != &m.Data[0] {
			t.Errorf("reaped payload at %p, written at %p", &r.Data[0], &m.Data[0])
		}
		if err := q.Done(r.Slot); err != nil {
			t.Fatal(err)
		}
		if err := q.Done(r.Slot); !errors.Is(err, syscall.EINVAL) {
			t.Errorf("second Done: %v, want EINVAL", err)
		}
		t.Logf("late by %d us", (now-due)/1000)
	})
}

// Batching: a full submit ring is EAGAIN, the reservation survives it, a
// flush carries the whole ring; the arena full is ENOSPC.
func TestBatchingAndErrors(t *testing.T) {
	each(t, func(t *testing.T, tg target) {
		q := open(t, tg, Params{Slots: 256, SlotSize: 64, SubmitEntries: 64})
		msgs := make([]Msg, 100)
		n, err := q.ReserveN(msgs)
		if n != 100 || err != nil {
			t.Fatalf("ReserveN: %d, %v", n, err)
		}
		due := Now() + 50*ms
		ents := make([]Entry, 100)
		for i := range ents {
			fill(msgs[i].Data[:64], uint64(i))
			ents[i] = Entry{Due: due + uint64(i%7)*ms, UserData: uint64(i), Len: 64}
		}
		c, err := q.CommitN(msgs, ents)
		if c != 64 || err != nil {
			t.Fatalf("CommitN into a 64-entry ring: %d, %v", c, err)
		}
		if _, err := q.CommitN(msgs[64:], ents[64:]); !errors.Is(err, syscall.EAGAIN) {
			t.Fatalf("CommitN on a full ring: %v, want EAGAIN", err)
		}
		if f, err := q.Flush(); f != 64 || err != nil {
			t.Fatalf("Flush: %d, %v", f, err)
		}
		if c, err := q.CommitN(msgs[64:], ents[64:]); c != 36 || err != nil {
			t.Fatalf("CommitN after flush: %d, %v", c, err)
		}
		if f, err := q.Flush(); f != 36 || err != nil {
			t.Fatalf("Flush: %d, %v", f, err)
		}
		// EMSGSIZE, and the arena full.
		rest := make([]Msg, 256)
		k, err := q.ReserveN(rest)
		if k != 156 || err != nil {
			t.Fatalf("ReserveN of the rest: %d, %v", k, err)
		}
		if err := q.Commit(&rest[0], 65, Now(), 0); !errors.Is(err, syscall.EMSGSIZE) {
			t.Errorf("Commit 65 bytes into 64: %v", err)
		}
		if _, err := q.Reserve(); !errors.Is(err, syscall.ENOSPC) {
			t.Errorf("Reserve with every slot held: %v, want ENOSPC", err)
		}
		for i := 0; i < k; i++ {
			if err := q.Abort(&rest[i]); err != nil {
				t.Fatal(err)
			}
		}
		got := reapAll(t, q, 100, 5*time.Second)
		for i, r := range got {
			if r.at < ents[r.id].Due {
				t.Errorf("message %d early", r.id)
			}
			if i > 0 && ents[got[i-1].id].Due > ents[r.id].Due {
				t.Errorf("message %d (due %d) after %d (due %d)", r.id,
					ents[r.id].Due, got[i-1].id, ents[got[i-1].id].Due)
			}
		}
	})
}

type got struct {
	id uint64
	at uint64 // Now() when Reap returned it
}

// reapAll reaps n messages (batch reap, batch done), checking payloads.
func reapAll(t *testing.T, q *Queue, n int, limit time.Duration) []got {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	out := make([]Reaped, 64)
	slots := make([]uint32, 0, 64)
	var res []got
	for len(res) < n {
		k, err := q.Reap(ctx, out)
		at := Now()
		if err != nil {
			t.Fatalf("Reap after %d of %d: %v", len(res), n, err)
		}
		slots = slots[:0]
		for _, r := range out[:k] {
			id := r.UserData
			if !payloadOK(r.Data, id, len(r.Data)) {
				t.Errorf("message %d: payload damaged", id)
			}
			res = append(res, got{id, at})
			slots = append(slots, r.Slot)
		}
		if d, err := q.DoneN(slots, nil); d != k || err != nil {
			t.Fatalf("DoneN: %d of %d, %v", d, k, err)
		}
	}
	return res
}

// FIFO among equal due times, in submission order.
func TestFifoTies(t *testing.T) {
	each(t, func(t *testing.T, tg target) {
		q := open(t, tg, Params{Slots: 600, SlotSize: 64, SubmitEntries: 256})
		due := Now() + 200*ms
		for i := uint64(0); i < 600; i++ {
			put(t, q, i, 16, due+(i/200)*ms)
			if i%200 == 199 {
				if _, err := q.Flush(); err != nil {
					t.Fatal(err)
				}
			}
		}
		res := reapAll(t, q, 600, 10*time.Second)
		for i, r := range res {
			if r.id != uint64(i) {
				t.Fatalf("position %d holds message %d", i, r.id)
			}
			if r.at < due+(r.id/200)*ms {
				t.Fatalf("message %d early", r.id)
			}
		}
	})
}

// Random due times: every message once, none early, in due order as
// relmodel (selftests/lib) judges it: a message seen after one due later
// is out of order only when it was due and in the engine (flushed) before
// that one was due (an overdue message is released at its flush, in
// submission order).
func TestRandomInOrder(t *testing.T) {
	each(t, func(t *testing.T, tg target) {
		const n = 2000
		q := open(t, tg, Params{Slots: n, SlotSize: 64, SubmitEntries: 4096})
		base := Now() + 100*ms
		due := make([]uint64, n)
		x := uint64(88172645463325252)
		for i := range due {
			x ^= x << 13
			x ^= x >> 7
			x ^= x << 17
			due[i] = base + (x%1000)*(500*1000) // 500 us steps: equal ones too
			put(t, q, uint64(i), 32, due[i])
		}
		if f, err := q.Flush(); f != n || err != nil {
			t.Fatalf("Flush: %d, %v", f, err)
		}
		flushed := Now()
		res := reapAll(t, q, n, 20*time.Second)
		seen := make([]bool, n)
		for _, r := range res {
			if seen[r.id] {
				t.Fatalf("message %d twice", r.id)
			}
			seen[r.id] = true
			if r.at < due[r.id] {
				t.Fatalf("message %d early by %d ns", r.id, due[r.id]-r.at)
			}
		}
		best, bestID := ^uint64(0), uint64(0)
		for p := len(res) - 1; p >= 0; p-- {
			id := res[p].id
			if best < due[id] {
				t.Fatalf("message %d (due %d) seen before %d (due and flushed by %d)",
					id, due[id], bestID, best)
			}
			t0 := due[id]
			if flushed > t0 {
				t0 = flushed
			}
			if t0 < best || (t0 == best && id < bestID) {
				best, bestID = t0, id
			}
		}
		// FIFO among equal due times (one submitter, in id order).
		last := make(map[uint64]uint64)
		for _, r := range res {
			if prev, ok := last[due[r.id]]; ok && prev > r.id && due[r.id] > flushed {
				t.Fatalf("equal due times: %d seen after %d", prev, r.id)
			}
			last[due[r.id]] = r.id
		}
	})
}

// Reap honours its context: its deadline, a cancel from another
// goroutine, and a message committed meanwhile that is due earlier.
func TestReapContext(t *testing.T) {
	each(t, func(t *testing.T, tg target) {
		q := open(t, tg, Params{Slots: 8, SlotSize: 64})
		out := make([]Reaped, 4)
		t0 := Now()
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		_, err := q.Reap(ctx, out)
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) || Now()-t0 < 100*ms {
			t.Fatalf("Reap with a 100 ms deadline: %v after %d ms", err, (Now()-t0)/ms)
		}
		put(t, q, 1, 16, Now()+10000*ms)
		if _, err := q.Flush(); err != nil {
			t.Fatal(err)
		}
		// Cancel: the blocked Reap returns context.Canceled; the held
		// message is not lost.
		ctx, cancel = context.WithCancel(context.Background())
		errc := make(chan error, 1)
		go func() { _, err := q.Reap(ctx, out); errc <- err }()
		time.Sleep(50 * time.Millisecond)
		tc := Now()
		cancel()
		if err := <-errc; !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled Reap: %v", err)
		}
		t.Logf("cancel took %d us", (Now()-tc)/1000)
		// An earlier message committed while Reap sleeps wakes it.
		type res struct {
			n   int
			err error
			at  uint64
		}
		rc := make(chan res, 1)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			n, err := q.Reap(ctx, out)
			rc <- res{n, err, Now()}
		}()
		time.Sleep(50 * time.Millisecond)
		due2 := Now() + 100*ms
		put(t, q, 2, 16, due2)
		if _, err := q.Flush(); err != nil {
			t.Fatal(err)
		}
		r := <-rc
		if r.n != 1 || r.err != nil || out[0].UserData != 2 || r.at < due2 {
			t.Fatalf("woken Reap: %d, %v, id %d, early %v", r.n, r.err, out[0].UserData, r.at < due2)
		}
		if r.at-due2 > 3000*ms {
			t.Errorf("earlier message %d ms late (bound 3 s, for a loaded TCG VM)", (r.at-due2)/ms)
		}
		if err := q.Done(out[0].Slot); err != nil {
			t.Fatal(err)
		}
		// Message 1 is still held: cancel it.
		n, err := q.TryReap(out)
		if n != 0 || err != nil {
			t.Fatalf("TryReap: %d %v", n, err)
		}
	})
}

// One consumer at a time: an overlapping Reap is EBUSY; Close wakes a
// blocked Reap (EBADF), and calls after Close are EBADF.
func TestReapBusyAndClose(t *testing.T) {
	each(t, func(t *testing.T, tg target) {
		p := Params{Slots: 8, SlotSize: 64, Backend: tg.backend, Flags: tg.flags, ReapNetpoll: tg.netpoll}
		q, err := Open(&p)
		if err != nil {
			t.Fatal(err)
		}
		out := make([]Reaped, 2)
		errc := make(chan error, 1)
		go func() { _, err := q.Reap(context.Background(), out); errc <- err }()
		deadline := time.Now().Add(5 * time.Second)
		for q.reaping.Load() == 0 && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		if _, err := q.TryReap(make([]Reaped, 1)); !errors.Is(err, syscall.EBUSY) {
			t.Errorf("overlapping TryReap: %v, want EBUSY", err)
		}
		if err := q.Close(); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-errc:
			if !errors.Is(err, syscall.EBADF) {
				t.Errorf("Reap ended by Close: %v, want EBADF", err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("Close did not end the blocked Reap")
		}
		if _, err := q.Reserve(); !errors.Is(err, syscall.EBADF) {
			t.Errorf("Reserve after Close: %v", err)
		}
		if err := q.Close(); err != nil {
			t.Errorf("second Close: %v", err)
		}
	})
}

// A due time beyond DQ_MAX_DELAY_NS is rejected at the flush, reported,
// and its slot is free again.
func TestRejectReported(t *testing.T) {
	each(t, func(t *testing.T, tg target) {
		q := open(t, tg, Params{Slots: 4, SlotSize: 64})
		m, err := q.Reserve()
		if err != nil {
			t.Fatal(err)
		}
		if err := q.CommitDelay(&m, 8, time.Duration(1<<62), 42); err != nil {
			t.Fatal(err)
		}
		if n, err := q.Flush(); n != 0 || err != nil {
			t.Fatalf("Flush: %d %v", n, err)
		}
		rej := make([]Reject, 4)
		n, dropped, err := q.Rejects(rej)
		if n != 1 || dropped != 0 || err != nil {
			t.Fatalf("Rejects: %d, %d dropped, %v", n, dropped, err)
		}
		if rej[0].UserData != 42 || rej[0].Slot != m.Slot() || !errors.Is(rej[0].Error, syscall.EOVERFLOW) {
			t.Errorf("reject %+v", rej[0])
		}
		ms4 := make([]Msg, 4)
		if k, err := q.ReserveN(ms4); k != 4 || err != nil {
			t.Errorf("slots free after the reject: %d, %v", k, err)
		}
	})
}

// Cancel by handle: pending, unflushed, released, unknown, reused slot.
func TestCancelAnswers(t *testing.T) {
	each(t, func(t *testing.T, tg target) {
		q := open(t, tg, Params{Slots: 4, SlotSize: 64})
		h := put(t, q, 1, 8, Now()+1000*ms)
		if _, err := q.Flush(); err != nil {
			t.Fatal(err)
		}
		if err := q.Cancel(h); err != nil {
			t.Fatalf("Cancel pending: %v", err)
		}
		if err := q.Cancel(h); !errors.Is(err, syscall.EALREADY) {
			t.Errorf("Cancel again: %v", err)
		}
		h = put(t, q, 2, 8, Now()+5000*ms) // not flushed: Cancel flushes
		if err := q.Cancel(h); err != nil {
			t.Errorf("Cancel unflushed: %v", err)
		}
		h = put(t, q, 3, 8, Now()+20*ms)
		if _, err := q.Flush(); err != nil {
			t.Fatal(err)
		}
		res := reapAll(t, q, 1, 5*time.Second)
		if res[0].id != 3 {
			t.Fatalf("reaped %d, want 3: a cancelled message came out", res[0].id)
		}
		if err := q.Cancel(h); !errors.Is(err, syscall.EALREADY) {
			t.Errorf("Cancel released: %v", err)
		}
		if err := q.Cancel(99); !errors.Is(err, syscall.ENOENT) {
			t.Errorf("Cancel unknown: %v", err)
		}
		st, err := q.Stats()
		if err != nil || st.Cancelled != 2 || st.Released != 1 {
			t.Errorf("stats %+v, %v", st, err)
		}
	})
}

// Goroutines: 4 producers (single and batch calls), a consumer, stats and
// cancels at once (run with -race); every message once, payload intact.
func TestGoroutines(t *testing.T) {
	each(t, func(t *testing.T, tg target) {
		const per, nprod = 2000, 4
		q := open(t, tg, Params{Slots: 1024, SlotSize: 128, SubmitEntries: 256})
		var wg sync.WaitGroup
		errc := make(chan error, 16)
		for p := 0; p < nprod; p++ {
			wg.Add(1)
			go func(p int) {
				defer wg.Done()
				msgs := make([]Msg, 16)
				ents := make([]Entry, 16)
				for i := 0; i < per; {
					k := 16
					if per-i < k {
						k = per - i
					}
					n, err := q.ReserveN(msgs[:k])
					if errors.Is(err, syscall.ENOSPC) {
						time.Sleep(100 * time.Microsecond)
						continue
					}
					if err != nil {
						errc <- err
						return
					}
					for j := 0; j < n; j++ {
						id := uint64(p*per + i + j)
						fill(msgs[j].Data[:100], id)
						ents[j] = Entry{Due: uint64(j) * ms, UserData: id, Len: 100, Flags: CommitRelative}
					}
					c := 0
					for c < n {
						k, err := q.CommitN(msgs[c:n], ents[c:n])
						if errors.Is(err, syscall.EAGAIN) {
							if _, err := q.Flush(); err != nil {
								errc <- err
								return
							}
							continue
						}
						if err != nil {
							errc <- err
							return
						}
						c += k
					}
					if _, err := q.Flush(); err != nil {
						errc <- err
						return
					}
					i += n
				}
			}(p)
		}
		stop := make(chan struct{})
		var side sync.WaitGroup
		side.Add(1)
		go func() {
			defer side.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := q.Stats(); err != nil {
					errc <- err
				}
				_ = q.Cancel(12345) // unknown handle: ENOENT, harmless
				time.Sleep(time.Millisecond)
			}
		}()
		res := reapAll(t, q, nprod*per, 30*time.Second)
		close(stop)
		side.Wait()
		wg.Wait()
		close(errc)
		for err := range errc {
			t.Error(err)
		}
		seen := make(map[uint64]bool)
		for _, r := range res {
			if seen[r.id] {
				t.Fatalf("message %d twice", r.id)
			}
			seen[r.id] = true
		}
		if len(seen) != nprod*per {
			t.Fatalf("%d distinct messages, want %d", len(seen), nprod*per)
		}
	})
}

// Keys: a taken key is EEXIST at the flush, a replace swaps the holder
// (exactly one released), lookup and cancel by key.
func TestKeys(t *testing.T) {
	each(t, func(t *testing.T, tg target) {
		q := open(t, tg, Params{Slots: 8, SlotSize: 64, Flags: FlagKeys})
		commit := func(id, key uint64, delay uint64, flags uint32) {
			m, err := q.Reserve()
			if err != nil {
				t.Fatal(err)
			}
			fill(m.Data[:16], id)
			binPutID(m.Data, id)
			if err := q.CommitKey(&m, 16, delay, key, flags|CommitRelative); err != nil {
				t.Fatal(err)
			}
		}
		commit(1, 100, 300*ms, 0)
		commit(2, 100, 300*ms, 0) // same key: rejected
		if n, err := q.Flush(); n != 1 || err != nil {
			t.Fatalf("Flush: %d %v", n, err)
		}
		rej := make([]Reject, 8)
		n, _, _ := q.Rejects(rej)
		if n != 1 || !errors.Is(rej[0].Error, syscall.EEXIST) {
			t.Fatalf("rejects %v", rej[:n])
		}
		ki, err := q.LookupKey(100)
		if err != nil || ki.State != KeyPending {
			t.Fatalf("LookupKey: %+v %v", ki, err)
		}
		commit(3, 100, 100*ms, CommitReplace)
		if n, err := q.Flush(); n != 1 || err != nil {
			t.Fatalf("Flush replace: %d %v", n, err)
		}
		n, _, _ = q.Rejects(rej)
		if n != 1 || rej[0].Reason != Replaced {
			t.Fatalf("replace entries %v", rej[:n])
		}
		commit(4, 200, 5000*ms, 0)
		if _, err := q.Flush(); err != nil {
			t.Fatal(err)
		}
		if _, err := q.CancelKey(200); err != nil {
			t.Errorf("CancelKey: %v", err)
		}
		if _, err := q.CancelKey(200); !errors.Is(err, syscall.ENOENT) {
			t.Errorf("CancelKey again: %v", err)
		}
		out := make([]Reaped, 4)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		k, err := q.Reap(ctx, out)
		if k != 1 || err != nil || out[0].UserData != 100 || !payloadOK(out[0].Data, 3, 16) {
			t.Fatalf("reaped %d, %v: want the replacing message 3 only", k, err)
		}
		q.Done(out[0].Slot)
		ctx2, cancel2 := context.WithTimeout(context.Background(), 500*time.Millisecond)
		defer cancel2()
		if k, err := q.Reap(ctx2, out); k != 0 {
			t.Fatalf("the replaced message came out too (%d, %v)", k, err)
		}
	})
}

func binPutID(b []byte, id uint64) { fill(b[:16], id) }

// Tracked redelivery: a message reaped and not finished comes again after
// the visibility timeout, on the same slot and handle, Redeliveries 1;
// Finish(Failed) then ends it; Attempts as committed come back.
func TestTrackedRedelivery(t *testing.T) {
	each(t, func(t *testing.T, tg target) {
		const vis = 200 * time.Millisecond
		q := open(t, tg, Params{Slots: 4, SlotSize: 64, Flags: FlagTrack, Visibility: vis})
		m, err := q.Reserve()
		if err != nil {
			t.Fatal(err)
		}
		fill(m.Data[:48], 9)
		m.SetAttempts(3)
		t0 := Now()
		if err := q.CommitDelay(&m, 48, 0, 9); err != nil {
			t.Fatal(err)
		}
		if _, err := q.Flush(); err != nil {
			t.Fatal(err)
		}
		out := make([]Reaped, 2)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if n, err := q.Reap(ctx, out); n != 1 || err != nil {
			t.Fatalf("Reap: %d %v", n, err)
		}
		first := out[0]
		if first.Redeliveries != 0 || first.Attempts != 3 || !payloadOK(first.Data, 9, 48) {
			t.Fatalf("first delivery %+v", first)
		}
		n, err := q.Reap(ctx, out)
		if n != 1 || err != nil {
			t.Fatalf("second Reap: %d %v", n, err)
		}
		if Now() < t0+uint64(vis) {
			t.Errorf("redelivered before the visibility timeout")
		}
		again := out[0]
		if again.Slot != first.Slot || again.Handle != first.Handle ||
			again.Redeliveries != 1 || !payloadOK(again.Data, 9, 48) {
			t.Fatalf("redelivery %+v", again)
		}
		if err := q.Finish(again.Slot, Failed); err != nil {
			t.Fatal(err)
		}
		ts, err := q.TrackStats()
		if err != nil || ts.DoneFailed != 1 || ts.Inflight != 0 {
			t.Errorf("track stats %+v %v", ts, err)
		}
		ctx2, cancel2 := context.WithTimeout(context.Background(), 3*vis)
		defer cancel2()
		if n, err := q.Reap(ctx2, out); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("a finished message came again: %d %v", n, err)
		}
	})
}

// MaxInflight: a due message waiting for a credit is reaped once a
// Finish returns one, while Reap waits.
func TestInflightCredit(t *testing.T) {
	each(t, func(t *testing.T, tg target) {
		q := open(t, tg, Params{Slots: 4, SlotSize: 64, Flags: FlagTrack, MaxInflight: 1})
		put(t, q, 1, 8, Now())
		put(t, q, 2, 8, Now())
		if _, err := q.Flush(); err != nil {
			t.Fatal(err)
		}
		out := make([]Reaped, 4)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		n, err := q.Reap(ctx, out)
		if n != 1 || err != nil || out[0].UserData != 1 {
			t.Fatalf("Reap: %d %v", n, err)
		}
		slot := out[0].Slot
		go func() {
			time.Sleep(50 * time.Millisecond)
			q.Done(slot)
		}()
		t0 := Now()
		n, err = q.Reap(ctx, out)
		if n != 1 || err != nil || out[0].UserData != 2 {
			t.Fatalf("Reap after the credit: %d %v", n, err)
		}
		t.Logf("second message %d ms after the wait began (the finish came at 50 ms)", (Now()-t0)/ms)
		q.Done(out[0].Slot)
	})
}
