// SPDX-License-Identifier: LGPL-2.1 OR MIT

package dq

import (
	"encoding/binary"
	"os"
	"strings"
	"testing"
	"time"
)

const ms = uint64(time.Millisecond)

// A backend a case runs on: the embedded engine always; dq.ko over
// io_uring and over its ioctls when /dev/dq is there (the lab VM).
type target struct {
	name    string
	backend Backend
	flags   uint32
	netpoll bool // Params.ReapNetpoll: Reap's other wait
}

var targets = []target{
	{"user", BackendUser, 0, false},
	{"user-netpoll", BackendUser, 0, true},
	{"kernel", BackendKernel, 0, false},
	{"kernel-netpoll", BackendKernel, 0, true},
	{"ioctl", BackendKernel, FlagIoctl, false},
}

// onlyTargets: DQ_GO_TARGETS, the targets to run (names separated by
// spaces; empty: all).  make check's VM runs on other kernels than the
// newest leave the embedded engine's targets to the host's run: they
// never enter the kernel.
var onlyTargets = strings.Fields(os.Getenv("DQ_GO_TARGETS"))

func targetWanted(name string) bool {
	if len(onlyTargets) == 0 {
		return true
	}
	for _, n := range onlyTargets {
		if n == name {
			return true
		}
	}
	return false
}

// each runs fn once per target, as subtests; dq.ko's skip without /dev/dq.
func each(t *testing.T, fn func(t *testing.T, tg target)) {
	for _, tg := range targets {
		tg := tg
		t.Run(tg.name, func(t *testing.T) {
			if !targetWanted(tg.name) {
				t.Skip("not in DQ_GO_TARGETS")
			}
			if tg.backend == BackendKernel {
				if _, err := os.Stat("/dev/dq"); err != nil {
					t.Skip("no /dev/dq (dq.ko not loaded)")
				}
			}
			fn(t, tg)
		})
	}
}

// open opens a queue on tg, failing the test when it cannot, and checks
// it runs where asked.
func open(t *testing.T, tg target, p Params) *Queue {
	t.Helper()
	p.Backend = tg.backend
	p.Flags |= tg.flags
	p.ReapNetpoll = tg.netpoll
	q, err := Open(&p)
	if err != nil {
		t.Fatalf("Open(%+v): %v", p, err)
	}
	in, err := q.Info()
	if err != nil || in.Backend != tg.backend {
		t.Fatalf("queue runs on %v (%v), asked for %v", in.Backend, err, tg.backend)
	}
	t.Cleanup(func() { q.Close() })
	return q
}

// fill writes message id's payload: its id, then bytes derived from it
// (every byte value, NULs and 0xff included: payloads are hostile).
func fill(b []byte, id uint64) {
	binary.LittleEndian.PutUint64(b, id)
	x := id*0x9e3779b97f4a7c15 + 1
	for i := 8; i < len(b); i++ {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		b[i] = byte(x)
	}
}

func payloadOK(b []byte, want uint64, n int) bool {
	if len(b) != n || n < 8 {
		return false
	}
	ref := make([]byte, n)
	fill(ref, want)
	for i := range b {
		if b[i] != ref[i] {
			return false
		}
	}
	return true
}

// put reserves, fills and commits message id due at due; returns its handle.
func put(t *testing.T, q *Queue, id uint64, n int, due uint64) uint64 {
	t.Helper()
	m, err := q.Reserve()
	if err != nil {
		t.Fatalf("Reserve: %v", err)
	}
	fill(m.Data[:n], id)
	if err := q.Commit(&m, n, due, id); err != nil {
		t.Fatalf("Commit: %v", err)
	}
	return m.Handle()
}
