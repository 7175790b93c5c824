// SPDX-License-Identifier: LGPL-2.1 OR MIT

package dq

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// dqctl runs $DQCTL (the wrapper scripts set it to user/build/dqctl).
func dqctl(t *testing.T, args ...string) {
	t.Helper()
	bin := os.Getenv("DQCTL")
	if bin == "" {
		t.Skip("DQCTL not set")
	}
	if out, err := exec.Command(bin, args...).CombinedOutput(); err != nil {
		t.Skipf("dqctl %v: %v: %s (not root?)", args, err, out)
	}
}

// A named dq.ko queue: a producer and a tracked consumer attached in this
// process; the producer may not reap; what it commits, the consumer gets.
func TestAttachNamed(t *testing.T) {
	each(t, func(t *testing.T, tg target) {
		if tg.backend != BackendKernel {
			t.Skip("named queues are dq.ko's")
		}
		name := fmt.Sprintf("dqgo%d%s", os.Getpid(), tg.name)
		dqctl(t, "create", name, "--slots", "8", "--slot-size", "64", "--track", "--inflight", "2")
		defer exec.Command(os.Getenv("DQCTL"), "delete", name).Run()
		prod, err := Attach(name, &Params{Flags: tg.flags})
		if err != nil {
			t.Fatalf("Attach producer: %v", err)
		}
		defer prod.Close()
		cons, err := Attach(name, &Params{Flags: tg.flags | FlagTrack, ReapNetpoll: tg.netpoll})
		if err != nil {
			t.Fatalf("Attach consumer: %v", err)
		}
		defer cons.Close()
		if _, err := prod.TryReap(make([]Reaped, 1)); !errors.Is(err, syscall.EPERM) {
			t.Errorf("producer TryReap: %v, want EPERM", err)
		}
		due := Now() + 50*ms
		put(t, prod, 5, 40, due)
		if _, err := prod.Flush(); err != nil {
			t.Fatal(err)
		}
		out := make([]Reaped, 2)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		n, err := cons.Reap(ctx, out)
		if n != 1 || err != nil || out[0].UserData != 5 || !payloadOK(out[0].Data, 5, 40) || Now() < due {
			t.Fatalf("consumer Reap: %d %v", n, err)
		}
		if err := cons.Finish(out[0].Slot, Delivered); err != nil {
			t.Fatal(err)
		}
	})
}

// A named durable queue: a producer attached durably commits and closes
// (its process could be gone); a consumer attached durably to the same
// journal gets every message, payload intact, and after its Done the
// journal holds none: a third attach finds nothing.
func TestAttachDurableNamed(t *testing.T) {
	each(t, func(t *testing.T, tg target) {
		if tg.backend != BackendKernel {
			t.Skip("named queues are dq.ko's")
		}
		name := fmt.Sprintf("dqgod%d%s", os.Getpid(), tg.name)
		dqctl(t, "create", name, "--slots", "64", "--slot-size", "128", "--track", "--inflight", "none")
		defer exec.Command(os.Getenv("DQCTL"), "delete", name).Run()
		jp := JournalParams{Dir: t.TempDir(), Durability: DurableAlways}
		prod, err := AttachDurable(name, &Params{Flags: tg.flags}, jp)
		if errors.Is(err, syscall.EOPNOTSUPP) {
			t.Skip("dq.ko without DQ_FEAT_INSTANCE")
		}
		if err != nil {
			t.Fatalf("AttachDurable producer: %v", err)
		}
		due := Now() + 100*ms
		for id := uint64(0); id < 10; id++ {
			put(t, prod, id, 100, due)
		}
		if n, err := prod.Flush(); n != 10 || err != nil {
			t.Fatalf("Flush: %d %v", n, err)
		}
		prod.Close()
		cons, err := AttachDurable(name, &Params{Flags: tg.flags | FlagTrack, ReapNetpoll: tg.netpoll}, jp)
		if err != nil {
			t.Fatalf("AttachDurable consumer: %v", err)
		}
		res := reapAll(t, cons, 10, 10*time.Second)
		seen := make(map[uint64]bool)
		for _, r := range res {
			if seen[r.id] || r.id >= 10 || r.at < due {
				t.Errorf("message %d: twice, unknown or early", r.id)
			}
			seen[r.id] = true
		}
		if err := cons.DurableWait(cons.JournalMark(), 5*time.Second); err != nil {
			t.Fatalf("DurableWait: %v", err)
		}
		cons.Close()
		again, err := AttachDurable(name, &Params{Flags: tg.flags | FlagTrack, ReapNetpoll: tg.netpoll}, jp)
		if err != nil {
			t.Fatalf("AttachDurable again: %v", err)
		}
		defer again.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		if n, err := again.Reap(ctx, make([]Reaped, 4)); n != 0 {
			t.Errorf("a done message came back: %d, %v", n, err)
		}
	})
}
