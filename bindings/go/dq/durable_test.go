// SPDX-License-Identifier: LGPL-2.1 OR MIT

package dq

import (
	"bufio"
	"context"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The durable helper process: this test binary re-executed with
// DQGO_HELPER=durable.  It opens the durable queue in DQGO_DIR, commits
// 50 messages due at once and 50 due in 1.25-1.5 s, reaps the first 50 and
// finishes half of them, waits until all that is durable, then commits
// one message at a time for ever, flushing each (DurableAlways), and says
// on stdout what it did only once the call returned:
//
//	held ID DUE .   committed, flushed, durable, not done
//	done ID .       reaped and done, and the retire durable
//
// The test kills it with SIGKILL at a random moment.
func TestDurableHelper(t *testing.T) {
	if os.Getenv("DQGO_HELPER") != "durable" {
		t.Skip("the helper process of TestDurableKill9")
	}
	be, _ := strconv.Atoi(os.Getenv("DQGO_BACKEND"))
	fl, _ := strconv.Atoi(os.Getenv("DQGO_FLAGS"))
	q, err := OpenDurable(&Params{Slots: 4096, SlotSize: 256, Backend: Backend(be), Flags: uint32(fl)},
		JournalParams{Dir: os.Getenv("DQGO_DIR"), Durability: DurableAlways})
	if err != nil {
		fmt.Println("open failed:", err)
		os.Exit(1)
	}
	w := bufio.NewWriter(os.Stdout)
	say := func(f string, a ...interface{}) {
		fmt.Fprintf(w, f+"\n", a...)
		w.Flush()
	}
	fail := func(what string, err error) {
		say("error %s: %v", what, err)
		os.Exit(1)
	}
	due := make(map[uint64]uint64)
	for id := uint64(0); id < 100; id++ {
		m, err := q.Reserve()
		if err != nil {
			fail("reserve", err)
		}
		n := 8 + int(id*37%200)
		fill(m.Data[:n], id)
		d := Now()
		if id >= 50 {
			d += 1000*ms + id*5*ms
		}
		due[id] = d
		if err := q.Commit(&m, n, d, id); err != nil {
			fail("commit", err)
		}
	}
	if _, err := q.Flush(); err != nil {
		fail("flush", err)
	}
	out := make([]Reaped, 64)
	var taken []Reaped
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for len(taken) < 50 {
		k, err := q.Reap(ctx, out)
		if err != nil {
			fail("reap", err)
		}
		taken = append(taken, out[:k]...)
	}
	var doneIDs []uint64
	for i, r := range taken {
		if i%2 == 0 {
			if err := q.Done(r.Slot); err != nil {
				fail("done", err)
			}
			doneIDs = append(doneIDs, r.UserData)
		}
	}
	if err := q.DurableWait(q.JournalMark(), -1); err != nil {
		fail("durable wait", err)
	}
	for _, id := range doneIDs {
		say("done %d .", id)
	}
	for id := uint64(0); id < 100; id++ {
		if !contains(doneIDs, id) {
			say("held %d %d .", id, due[id])
		}
	}
	for id := uint64(100); ; id++ {
		m, err := q.ReserveWait(-1)
		if err != nil {
			fail("reserve", err)
		}
		n := 8 + int(id*37%200)
		fill(m.Data[:n], id)
		d := Now() + (id%20)*50*ms
		if err := q.Commit(&m, n, d, id); err != nil {
			fail("commit", err)
		}
		if _, err := q.Flush(); err != nil {
			fail("flush", err)
		}
		say("held %d %d .", id, d)
	}
}

func contains(s []uint64, v uint64) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// Durable recovery after kill -9 of a Go process: every message the
// helper said was durable and not done comes back exactly once, payload
// intact, never before its due time; no done message comes back; nothing
// comes back that the helper did not commit.
// wallStep says how far the wall clock stepped against the monotonic one
// since off0 (wallOffset()'s value then), in ns. The journal keeps due
// times as wall-clock times, so a step between a commit and the recovery
// (NTP; a VM's clock after a snapshot: 0.4 ms once in this lab) moves a
// recovered message's due time by as much on the monotonic clock.
func wallStep(off0 int64) uint64 {
	d := wallOffset() - off0
	if d < 0 {
		d = -d
	}
	return uint64(d)
}

func wallOffset() int64 { return time.Now().UnixNano() - int64(Now()) }

func TestDurableKill9(t *testing.T) {
	each(t, func(t *testing.T, tg target) {
		off0 := wallOffset()
		dir := t.TempDir()
		cmd := exec.Command(os.Args[0], "-test.run=^TestDurableHelper$")
		cmd.Env = append(os.Environ(), "DQGO_HELPER=durable", "DQGO_DIR="+dir,
			fmt.Sprintf("DQGO_BACKEND=%d", tg.backend), fmt.Sprintf("DQGO_FLAGS=%d", tg.flags))
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		held := make(map[uint64]uint64)
		done := make(map[uint64]bool)
		lines := make(chan string)
		go func() {
			sc := bufio.NewScanner(stdout)
			for sc.Scan() {
				lines <- sc.Text()
			}
			close(lines)
		}()
		// Kill after a random number (1..300) of the loop's messages.
		rng := rand.New(rand.NewSource(time.Now().UnixNano()))
		killAfter := 100 + 1 + rng.Intn(300)
		killed := false
		timeout := time.After(60 * time.Second)
	read:
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					break read
				}
				f := strings.Fields(l)
				switch {
				case len(f) == 4 && f[0] == "held" && f[3] == ".":
					id, _ := strconv.ParseUint(f[1], 10, 64)
					d, _ := strconv.ParseUint(f[2], 10, 64)
					held[id] = d
				case len(f) == 3 && f[0] == "done" && f[2] == ".":
					id, _ := strconv.ParseUint(f[1], 10, 64)
					done[id] = true
				case len(f) > 0 && f[0] == "held":
					// A line cut by the kill: not acknowledged.
				default:
					t.Fatalf("helper: %s", l)
				}
				if !killed && len(held)+len(done) >= killAfter {
					cmd.Process.Signal(syscall.SIGKILL)
					killed = true
				}
			case <-timeout:
				cmd.Process.Signal(syscall.SIGKILL)
				t.Fatalf("helper stalled with %d acknowledged", len(held))
			}
		}
		err = cmd.Wait()
		if !killed || err == nil || !strings.Contains(err.Error(), "killed") {
			t.Fatalf("helper ended by itself (%v), %d acknowledged", err, len(held))
		}
		t.Logf("killed after %d acknowledged (%d held, %d done)", len(held)+len(done), len(held), len(done))

		q, err := OpenDurable(&Params{Slots: 4096, SlotSize: 256, Backend: tg.backend, Flags: tg.flags, ReapNetpoll: tg.netpoll},
			JournalParams{Dir: dir, Durability: DurableAlways})
		if err != nil {
			t.Fatalf("OpenDurable after kill -9: %v", err)
		}
		defer q.Close()
		js, _ := q.JournalStats()
		var last uint64
		for id := range held {
			if id > last {
				last = id
			}
		}
		seen := make(map[uint64]bool)
		out := make([]Reaped, 64)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		missing := func() int {
			n := 0
			for id := range held {
				if !seen[id] {
					n++
				}
			}
			return n
		}
		for missing() > 0 {
			k, err := q.Reap(ctx, out)
			at := Now()
			if err != nil {
				t.Fatalf("Reap: %v; %d acknowledged messages missing", err, missing())
			}
			for _, r := range out[:k] {
				id := r.UserData
				d, ok := held[id]
				switch {
				case done[id]:
					t.Errorf("message %d was done, came back", id)
				case !ok && id != last+1:
					t.Errorf("message %d was never committed", id)
				case seen[id]:
					t.Errorf("message %d twice", id)
				case !payloadOK(r.Data, id, 8+int(id*37%200)):
					t.Errorf("message %d: payload damaged", id)
				case ok && at+wallStep(off0) < d:
					t.Errorf("message %d early by %d ns (the wall clock stepped %d ns)", id, d-at, wallStep(off0))
				}
				seen[id] = true
				q.Done(r.Slot)
			}
		}
		// Nothing more (the one commit the kill may have cut is allowed).
		ctx2, cancel2 := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel2()
		for {
			k, err := q.Reap(ctx2, out)
			if err != nil {
				break
			}
			for _, r := range out[:k] {
				if r.UserData != last+1 || seen[r.UserData] {
					t.Errorf("extra message %d after recovery", r.UserData)
				}
				seen[r.UserData] = true
				q.Done(r.Slot)
			}
		}
		t.Logf("recovered %d (%d overdue), all %d acknowledged back", js.RecRecovered, js.RecOverdue, len(held))
	})
}

// RetireSync reaches the journal: with it, the retires of messages done
// after a sync are written but not synced for as long; without it, they
// are synced within SyncInterval.  The library's own test counts the
// fdatasync calls with strace (user/tests/durable_test.c, retire_lazy);
// this one checks the binding passes the setting, by the journal's sync
// count, and that it refuses what does not fit.
func TestDurableRetireSync(t *testing.T) {
	each(t, func(t *testing.T, tg target) {
		if tg.netpoll || tg.flags != 0 {
			t.Skip("the journal is the same on every path of a backend")
		}
		for _, rs := range []time.Duration{0, 10 * time.Second} {
			q, err := OpenDurable(&Params{Slots: 64, SlotSize: 64, Backend: tg.backend},
				JournalParams{Dir: t.TempDir(), Durability: DurableBatch,
					SyncInterval: 5 * time.Millisecond, RetireSync: rs})
			if err != nil {
				t.Fatalf("OpenDurable(RetireSync %v): %v", rs, err)
			}
			for id := uint64(0); id < 20; id++ {
				put(t, q, id, 16, Now())
			}
			if _, err := q.Flush(); err != nil {
				t.Fatal(err)
			}
			if err := q.DurableWait(q.JournalMark(), -1); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			out := make([]Reaped, 20)
			var got []Reaped
			for len(got) < 20 {
				k, err := q.Reap(ctx, out)
				if err != nil {
					t.Fatalf("reap: %v after %d", err, len(got))
				}
				got = append(got, out[:k]...)
			}
			cancel()
			// Settle the commits' sync, then count from here.
			time.Sleep(50 * time.Millisecond)
			st0, err := q.JournalStats()
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range got {
				if err := q.Done(r.Slot); err != nil {
					t.Fatal(err)
				}
			}
			time.Sleep(300 * time.Millisecond) // 60 sync intervals
			st1, err := q.JournalStats()
			if err != nil {
				t.Fatal(err)
			}
			n := st1.Fsyncs - st0.Fsyncs
			t.Logf("RetireSync %v: %d syncs in 300 ms after 20 retires", rs, n)
			if rs == 0 && n < 1 {
				t.Errorf("RetireSync 0: the retires were not synced within 300 ms")
			}
			if rs > 0 && n != 0 {
				t.Errorf("RetireSync %v: %d syncs of retires alone in 300 ms", rs, n)
			}
			q.Close()
		}
		for _, rs := range []time.Duration{-time.Millisecond, 4295 * time.Second} {
			_, err := OpenDurable(&Params{Slots: 64, SlotSize: 64, Backend: tg.backend},
				JournalParams{Dir: t.TempDir(), Durability: DurableBatch, RetireSync: rs})
			if err != syscall.EINVAL {
				t.Errorf("RetireSync %v: %v, want EINVAL", rs, err)
			}
		}
	})
}

// efdWait reads the eventfd fd within d: true once it was readable.
func efdWait(fd int, d time.Duration) bool {
	var b [8]byte
	for end := time.Now().Add(d); ; {
		n, err := syscall.Read(fd, b[:])
		if n == 8 && err == nil {
			return true
		}
		if time.Now().After(end) {
			return false
		}
		time.Sleep(time.Millisecond)
	}
}

// DurablePoll and DurableFD reach dq_durable_poll and dq_durable_fd: a
// commit not flushed is not durable and moves nothing; once flushed, the
// descriptor becomes readable and the mark durable.  (The library's test,
// user/tests/durable_test.c durable_fd, also fails the journal's sync.)
func TestDurableFD(t *testing.T) {
	each(t, func(t *testing.T, tg target) {
		if tg.backend != BackendUser || tg.netpoll || tg.flags != 0 {
			t.Skip("the journal's sync thread is the library's: one path")
		}
		plain, err := Open(&Params{Slots: 16, SlotSize: 64, Backend: tg.backend})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := plain.DurableFD(); err != syscall.EOPNOTSUPP {
			t.Errorf("DurableFD without a journal: %v, want EOPNOTSUPP", err)
		}
		if _, err := plain.DurablePoll(1); err != syscall.EOPNOTSUPP {
			t.Errorf("DurablePoll without a journal: %v, want EOPNOTSUPP", err)
		}
		plain.Close()
		q, err := OpenDurable(&Params{Slots: 64, SlotSize: 64, Backend: tg.backend},
			JournalParams{Dir: t.TempDir(), Durability: DurableBatch,
				SyncInterval: 20 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		fd, err := q.DurableFD()
		if err != nil || fd < 0 {
			t.Fatalf("DurableFD: %d, %v", fd, err)
		}
		if !efdWait(fd, 0) {
			t.Errorf("the descriptor is not readable when made")
		}
		put(t, q, 1, 16, Now())
		mark := q.JournalMark()
		if efdWait(fd, 100*time.Millisecond) {
			t.Errorf("readable with only an unflushed commit")
		}
		if ok, err := q.DurablePoll(mark); ok || err != nil {
			t.Errorf("unflushed commit: DurablePoll %v, %v; want false, nil", ok, err)
		}
		if _, err := q.Flush(); err != nil {
			t.Fatal(err)
		}
		if !efdWait(fd, 5*time.Second) {
			t.Errorf("not readable within 5 s of the flush")
		}
		if ok, err := q.DurablePoll(mark); !ok || err != nil {
			t.Errorf("flushed commit: DurablePoll %v, %v; want true, nil", ok, err)
		}
		q.Close()
		if _, err := q.DurableFD(); err == nil {
			t.Errorf("DurableFD after Close: no error")
		}
	})
}
