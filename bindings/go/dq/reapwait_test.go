// SPDX-License-Identifier: LGPL-2.1 OR MIT

package dq

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// blockedReaps is how many queues the child process waits on at once.
const blockedReaps = 32

// With Params.ReapNetpoll a Reap waiting for a due message holds no OS
// thread: it waits in Go's netpoller, not in a cgo call (which pins its
// thread and keeps a P that the runtime's sysmon polls every 20 us).  A fresh process (so that no
// thread is left over from other tests) blocks blockedReaps Reaps at once
// and reports the most threads it had meanwhile; a wait in C needs one
// thread per Reap, so blockedReaps or more threads means the waits are in
// C.  The bound does not depend on machine speed: the Go runtime of the
// child starts 4-8 threads.
func TestReapHoldsNoThread(t *testing.T) {
	if os.Getenv("DQGO_THREADS_CHILD") == "1" {
		threadsChild()
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestReapHoldsNoThread$")
	cmd.Env = append(os.Environ(), "DQGO_THREADS_CHILD=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	var most int
	for _, l := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(l, "most threads ") {
			most, _ = strconv.Atoi(strings.TrimPrefix(l, "most threads "))
		}
	}
	if most == 0 {
		t.Fatalf("child reported no thread count:\n%s", out)
	}
	t.Logf("%d Reaps blocked at once: at most %d threads", blockedReaps, most)
	if most >= blockedReaps {
		t.Errorf("%d threads for %d blocked Reaps: each Reap waits on a thread of its own", most, blockedReaps)
	}
}

// threadsChild is TestReapHoldsNoThread's child: it prints "most threads
// N" and exits non-zero on any error.
func threadsChild() {
	fail := func(f string, a ...any) {
		fmt.Printf(f+"\n", a...)
		os.Exit(1)
	}
	qs := make([]*Queue, blockedReaps)
	for i := range qs {
		q, err := Open(&Params{Slots: 4, SlotSize: 64, Backend: BackendUser, ReapNetpoll: true})
		if err != nil {
			fail("open: %v", err)
		}
		qs[i] = q
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, len(qs))
	for _, q := range qs {
		q := q
		go func() {
			_, err := q.Reap(ctx, make([]Reaped, 1))
			errc <- err
		}()
	}
	// Every Reap in progress, then watched for 50 ms (past the 2 ms
	// that a Reap waits before it watches its context).
	deadline := time.Now().Add(5 * time.Second)
	for _, q := range qs {
		for q.reaping.Load() == 0 && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		if q.reaping.Load() == 0 {
			fail("a Reap did not start")
		}
	}
	most := 0
	for end := time.Now().Add(50 * time.Millisecond); time.Now().Before(end); time.Sleep(time.Millisecond) {
		if n := threads(); n > most {
			most = n
		}
	}
	cancel()
	for range qs {
		if err := <-errc; !errors.Is(err, context.Canceled) {
			fail("Reap ended by cancel: %v", err)
		}
	}
	for _, q := range qs {
		q.Close()
	}
	fmt.Printf("most threads %d\n", most)
	os.Exit(0)
}

// threads is this process's thread count (/proc/self/status).
func threads() int {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "Threads:") {
			n, _ := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(l, "Threads:")))
			return n
		}
	}
	return 0
}
