// SPDX-License-Identifier: LGPL-2.1 OR MIT

package dq

import (
	"context"
	"errors"
	"testing"
	"time"
)

// lateCtx is a context whose deadline has passed before its timer has
// fired: Err() is still nil, as happens when Reap is entered after the
// deadline on a loaded machine (seen in the TCG VM: a Reap with a 100 ms
// deadline entered after 203 ms).
type lateCtx struct{ context.Context }

func (lateCtx) Deadline() (time.Time, bool) { return time.Now().Add(-time.Second), true }

// Reap at a passed deadline with nothing due says so: (0, nil) would
// read as "reaped nothing, no error", which no caller expects of a
// blocking Reap.
func TestReapPassedDeadline(t *testing.T) {
	each(t, func(t *testing.T, tg target) {
		q := open(t, tg, Params{Slots: 8, SlotSize: 64})
		out := make([]Reaped, 4)
		ctx := lateCtx{context.Background()}
		if n, err := q.Reap(ctx, out); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Reap at a passed deadline: %d, %v; want context.DeadlineExceeded", n, err)
		}
		// What is due still comes out.
		put(t, q, 3, 8, Now())
		if _, err := q.Flush(); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(5 * time.Second)
		for time.Now().Before(deadline) {
			n, err := q.Reap(ctx, out)
			if n == 1 && err == nil && out[0].UserData == 3 {
				return
			}
			if n != 0 || !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("Reap with a message due: %d, %v", n, err)
			}
			time.Sleep(time.Millisecond)
		}
		t.Fatal("the due message never came out of a Reap at a passed deadline")
	})
}
