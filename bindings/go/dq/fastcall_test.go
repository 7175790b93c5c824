// SPDX-License-Identifier: LGPL-2.1 OR MIT

package dq

import (
	"context"
	"errors"
	"os"
	"runtime"
	"syscall"
	"testing"
	"time"
)

// The calls that never wait are fast calls on an embedded, non-durable
// queue (fastcall.go): Now, PutN, a ReapNetpoll Reap's rounds, TryReap,
// Done, DoneN, Finish, FinishN make no cgo call (runtime.NumCgoCall
// stays), which is what keeps a goroutine the netpoller or a timer woke
// from waking the runtime's sysmon, and they answer what their cgo forms
// answer (the payloads the test wrote, the errors).  On a durable queue and on dq.ko
// they stay cgo calls.  Not under the race detector, where every call is
// a cgo call: make check runs it from the test binary without -race too.
func TestFastCalls(t *testing.T) {
	if !fastCalls {
		t.Skip("race detector or dq_cgocall build: every call is a cgo call")
	}
	cases := []struct {
		name             string
		tg               target
		durable, tracked bool
		fast             bool
	}{
		{"user-netpoll", target{"user-netpoll", BackendUser, 0, true}, false, false, true},
		{"user-tracked", target{"user", BackendUser, 0, false}, false, true, true},
		{"user-durable", target{"user-netpoll", BackendUser, 0, true}, true, false, false},
		{"kernel-netpoll", target{"kernel-netpoll", BackendKernel, 0, true}, false, false, false},
	}
	for _, c := range cases {
		c := c
		t.Run(c.name, func(t *testing.T) {
			if c.tg.backend == BackendKernel {
				if _, err := os.Stat("/dev/dq"); err != nil {
					t.Skip("no /dev/dq (dq.ko not loaded)")
				}
			}
			p := Params{Slots: 64, SlotSize: 256, Backend: c.tg.backend, ReapNetpoll: c.tg.netpoll}
			if c.tracked {
				p.Flags |= FlagTrack
			}
			var q *Queue
			var err error
			if c.durable {
				q, err = OpenDurable(&p, JournalParams{Dir: t.TempDir(), Durability: DurableBatch})
			} else {
				q, err = Open(&p)
			}
			if err != nil {
				t.Fatalf("open: %v", err)
			}
			defer q.Close()
			fastCallsRounds(t, q, c.tg.netpoll, c.tracked, c.fast)
		})
	}
}

// fastCallsRounds: rounds of 4 messages due at once, put, reaped,
// checked and done, the calls counted.
func fastCallsRounds(t *testing.T, q *Queue, netpoll, tracked, fast bool) {
	const rounds, k = 50, 4
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out := make([]Reaped, 2*k)
	slots := make([]uint32, k)
	results := make([]error, k)
	var cgo int64
	for i := 0; i < rounds; i++ {
		base := uint64(i * k)
		buf, ents := putBatch(base, k, func(int) uint64 { return Now() })
		c0 := runtime.NumCgoCall()
		if n, err := q.PutN(buf, ents, nil); n != k || err != nil {
			t.Fatalf("round %d: PutN: %d, %v", i, n, err)
		}
		got := 0
		for got < k {
			var n int
			var err error
			if netpoll {
				n, err = q.Reap(ctx, out[got:])
			} else {
				n, err = q.TryReap(out[got:])
			}
			if err != nil {
				t.Fatalf("round %d: reap: %v", i, err)
			}
			got += n
		}
		if got != k || Now() < ents[k-1].Due {
			t.Fatalf("round %d: reaped %d of %d, or before their due time", i, got, k)
		}
		for j, r := range out[:k] {
			id := r.UserData
			if id < base || id >= base+k || !payloadOK(r.Data, id, int(ents[id-base].Len)) {
				t.Fatalf("round %d: message %d (user data %d) is not what was put", i, j, id)
			}
			slots[j] = r.Slot
		}
		if tracked {
			err := q.Finish(slots[0], Delivered)
			n, errN := q.FinishN(slots[1:], Delivered, results)
			if err != nil || n != k-1 || errN != nil {
				t.Fatalf("round %d: Finish: %v, FinishN: %d, %v", i, err, n, errN)
			}
		} else {
			err := q.Done(slots[0])
			n, errN := q.DoneN(slots[1:], results)
			if err != nil || n != k-1 || errN != nil {
				t.Fatalf("round %d: Done: %v, DoneN: %d, %v", i, err, n, errN)
			}
		}
		for j, e := range results[:k-1] {
			if e != nil {
				t.Fatalf("round %d: slot %d: %v", i, j+1, e)
			}
		}
		// Errors come back as from the cgo call: the slot is done.
		if err := q.Done(slots[0]); err == nil || (!tracked && !errors.Is(err, syscall.EINVAL)) {
			t.Fatalf("round %d: Done of a done slot: %v", i, err)
		}
		if n, err := q.TryReap(out); n != 0 || err != nil {
			t.Fatalf("round %d: TryReap with nothing due: %d, %v", i, n, err)
		}
		cgo += runtime.NumCgoCall() - c0
	}
	// As cgo calls, a round makes at least 6 (PutN, a reap, Done, DoneN,
	// Done, TryReap; Now is a fast call whatever the queue).  Nothing else
	// in this test binary makes cgo calls while it runs, so fast calls
	// leave the count at 0: under one a round is a margin for any stray one.
	if fast && cgo >= rounds {
		t.Fatalf("%d cgo calls in %d rounds of fast calls, want < %d", cgo, rounds, rounds)
	}
	if !fast && cgo < 6*rounds {
		t.Fatalf("%d cgo calls in %d rounds, want >= %d (these calls must stay cgo calls)", cgo, rounds, 6*rounds)
	}
	t.Logf("%d cgo calls in %d rounds", cgo, rounds)
}
