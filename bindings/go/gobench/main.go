// SPDX-License-Identifier: LGPL-2.1 OR MIT

// Command gobench compares, in one Go process and one run, the designs a
// Go service uses to hold messages until they are due:
//
//	dq-go      the dq package (embedded engine): ReserveN/CommitN/Flush in
//	           batches, one consumer goroutine Reap + DoneN
//	chan-sleep a buffered channel; 1024 goroutines each pop a message and
//	           time.Sleep until it is due (head-of-line blocking)
//	afterfunc  time.AfterFunc per message
//	redis-zset a Redis sorted set (score: due time), polled every 200 ms
//	           (ZRANGEBYSCORE + ZREMRANGEBYSCORE in MULTI)
//
// at an offered rate (-rate), delays uniform in 0-1 s, 500-byte payloads,
// for -seconds.  Per system: CPU per message (this process's, plus
// redis-server's for redis-zset), lateness p50/p99/max (the consumer's
// clock minus the due time the producer chose), bytes per held message
// (RSS growth of this process, and of redis-server, over the messages
// held at the measurement), and what a kill -9 of this process loses (by
// construction: what is held only in its memory).
package main

import (
	"bufio"
	"context"
	"encoding/binary"
	"flag"
	"fmt"
	"net"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"dq.example/dq"
)

const payloadLen = 500

var (
	rate      = flag.Int("rate", 10000, "messages per second offered")
	seconds   = flag.Float64("seconds", 3, "how long messages are offered")
	maxDelay  = flag.Duration("max-delay", time.Second, "delays are uniform in 0..this")
	systems   = flag.String("systems", "baseline,dq-go,chan-sleep,afterfunc,redis-zset", "which to run (baseline first: it is subtracted)")
	redisAddr = flag.String("redis", "", "redis-server address for redis-zset (host:port)")
	redisPid  = flag.Int("redis-pid", 0, "redis-server's pid (its CPU and RSS are counted)")
	workers   = flag.Int("workers", 1024, "chan-sleep's sleeping goroutines")
	cpuprof   = flag.String("cpuprofile", "", "write a CPU profile")
	gran      = flag.Duration("granularity", 0, "dq-go's timer slack (0: the library's 50 us)")
	netpoll   = flag.Bool("netpoll", false, "dq-go's Reap waits in Go's netpoller (Params.ReapNetpoll)")
)

// result of one system's run.
type result struct {
	name                string
	offered, delivered  int
	early, dup, corrupt int
	cpuNsPerMsg         float64
	p50, p99, max       time.Duration
	bytesPerHeld        float64
	held                int
	killLoss            string
}

// recorder keeps what the consumer saw, judged on the producer's records.
type recorder struct {
	mu    sync.Mutex
	due   []int64 // by id: the due time the producer chose
	seen  []bool
	late  []int64
	early int
	dup   int
	bad   int
	n     atomic.Int64
}

func newRecorder(n int) *recorder {
	return &recorder{due: make([]int64, n), seen: make([]bool, n), late: make([]int64, 0, n)}
}

// saw notes message id with payload p seen at now.
func (r *recorder) saw(p []byte, now int64) {
	id := binary.LittleEndian.Uint64(p)
	r.mu.Lock()
	defer r.mu.Unlock()
	if id >= uint64(len(r.due)) || !payloadOK(p, id) {
		r.bad++
		return
	}
	if r.seen[id] {
		r.dup++
		return
	}
	r.seen[id] = true
	if now < r.due[id] {
		r.early++
	}
	r.late = append(r.late, now-r.due[id])
	r.n.Add(1)
}

func fill(p []byte, id uint64) {
	binary.LittleEndian.PutUint64(p, id)
	for i := 8; i < len(p); i++ {
		p[i] = byte(id>>3) ^ byte(i)
	}
}

func payloadOK(p []byte, id uint64) bool {
	if len(p) != payloadLen {
		return false
	}
	for i := 8; i < len(p); i++ {
		if p[i] != byte(id>>3)^byte(i) {
			return false
		}
	}
	return true
}

func now() int64 { return int64(dq.Now()) }

func cpuNs() int64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// procCPU is utime+stime of pid in ns (clock ticks of 10 ms).
func procCPU(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	u, _ := strconv.ParseInt(f[11], 10, 64)
	k, _ := strconv.ParseInt(f[12], 10, 64)
	return (u + k) * 10 * int64(time.Millisecond)
}

func rss(pid int) int64 {
	name := "/proc/self/status"
	if pid != 0 {
		name = fmt.Sprintf("/proc/%d/status", pid)
	}
	b, _ := os.ReadFile(name)
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "VmRSS:") {
			kb, _ := strconv.ParseInt(strings.Fields(l)[1], 10, 64)
			return kb << 10
		}
	}
	return 0
}

// system is one design under test.
type system interface {
	// put holds messages ids[i] with payloads until due[i].
	put(ids []uint64, due []int64, payloads [][]byte)
	stop()
}

// drive offers the messages at the rate, then waits for them, and measures.
func drive(name string, mk func(rec *recorder) (system, error), extPid int) (*result, error) {
	n := int(float64(*rate) * *seconds)
	rec := newRecorder(n)
	debug.FreeOSMemory() // a GC, and the heap's free pages back to the OS
	rss0, ext0 := rss(0), rss(extPid)
	sys, err := mk(rec)
	if err != nil {
		return nil, err
	}
	cpu0, extCPU0 := cpuNs(), procCPU(extPid)
	seed := uint64(0x9e3779b97f4a7c15)
	ids := make([]uint64, 0, 1024)
	dues := make([]int64, 0, 1024)
	pls := make([][]byte, 0, 1024)
	start := time.Now()
	sent := 0
	var heldAt, rssAt, extAt int64
	measured := false
	for sent < n {
		want := int(time.Since(start).Seconds() * float64(*rate))
		if want > n {
			want = n
		}
		ids, dues, pls = ids[:0], dues[:0], pls[:0]
		for ; sent < want && len(ids) < 1024; sent++ {
			seed ^= seed << 13
			seed ^= seed >> 7
			seed ^= seed << 17
			d := now() + int64(seed%uint64(*maxDelay))
			rec.due[sent] = d
			p := make([]byte, payloadLen)
			fill(p, uint64(sent))
			ids = append(ids, uint64(sent))
			dues = append(dues, d)
			pls = append(pls, p)
		}
		if len(ids) > 0 {
			sys.put(ids, dues, pls)
		}
		// Steady state: 1 s in, rate x 0.5 s held on average.
		if !measured && time.Since(start) > time.Duration(*maxDelay)+200*time.Millisecond {
			measured = true
			heldAt = int64(sent) - rec.n.Load()
			rssAt, extAt = rss(0), rss(extPid)
		}
		time.Sleep(time.Millisecond)
	}
	// Everything is due by now + maxDelay; allow 3 s more for the slow.
	deadline := time.Now().Add(time.Duration(*maxDelay) + 3*time.Second)
	for rec.n.Load() < int64(n) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	cpu := cpuNs() - cpu0
	if extPid != 0 {
		cpu += procCPU(extPid) - extCPU0
	}
	sys.stop()
	rec.mu.Lock()
	defer rec.mu.Unlock()
	late := append([]int64(nil), rec.late...)
	sort.Slice(late, func(i, j int) bool { return late[i] < late[j] })
	pct := func(q float64) time.Duration {
		if len(late) == 0 {
			return 0
		}
		return time.Duration(late[int(q*float64(len(late)-1))])
	}
	r := &result{name: name, offered: n, delivered: len(late), early: rec.early,
		dup: rec.dup, corrupt: rec.bad, cpuNsPerMsg: float64(cpu) / float64(n),
		p50: pct(0.5), p99: pct(0.99), max: pct(1), held: int(heldAt)}
	if heldAt > 0 {
		r.bytesPerHeld = float64((rssAt-rss0)+(extAt-ext0)) / float64(heldAt)
	}
	return r, nil
}

// ---- dq-go -----------------------------------------------------------

type dqSys struct {
	q      *dq.Queue
	msgs   []dq.Msg
	ents   []dq.Entry
	buf    []byte // PutN's payloads, back to back
	cancel context.CancelFunc
	done   chan struct{}
}

func newDq(rec *recorder) (system, error) {
	slots := uint32(float64(*rate)*maxDelay.Seconds()*1.3) + 4096
	q, err := dq.Open(&dq.Params{Slots: slots, SlotSize: payloadLen, SubmitEntries: 4096,
		Backend: dq.BackendUser, Flags: dq.FlagSlotAlign8 | dq.FlagLazyArena, Granularity: *gran,
		ReapNetpoll: *netpoll})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &dqSys{q: q, msgs: make([]dq.Msg, 1024), ents: make([]dq.Entry, 1024),
		buf: make([]byte, 0, 1024*payloadLen), cancel: cancel, done: make(chan struct{})}
	rctx := ctx
	if os.Getenv("GOBENCH_BG") != "" {
		rctx = context.Background()
	}
	go func() {
		defer close(s.done)
		out := make([]dq.Reaped, 256)
		slots := make([]uint32, 256)
		for {
			k, err := q.Reap(rctx, out)
			if err != nil {
				return
			}
			t := now()
			for i, r := range out[:k] {
				rec.saw(r.Data, t)
				slots[i] = r.Slot
			}
			q.DoneN(slots[:k], nil)
		}
	}()
	return s, nil
}

func (s *dqSys) put(ids []uint64, due []int64, pls [][]byte) {
	if os.Getenv("GOBENCH_DQ_STEPS") != "" { // the three-call path, for A/B
		s.putSteps(ids, due, pls)
		return
	}
	// The payloads back to back in one reused buffer: PutN reserves,
	// copies them into their slots, commits and flushes in one cgo call.
	s.buf = s.buf[:0]
	for i := range ids {
		s.buf = append(s.buf, pls[i]...)
		s.ents[i] = dq.Entry{Due: uint64(due[i]), UserData: ids[i], Len: payloadLen}
	}
	if n, err := s.q.PutN(s.buf, s.ents[:len(ids)], nil); n != len(ids) || err != nil {
		panic(fmt.Sprint("put ", n, err))
	}
}

// putSteps is put through ReserveN, a copy into each slot, CommitN, Flush.
func (s *dqSys) putSteps(ids []uint64, due []int64, pls [][]byte) {
	for off := 0; off < len(ids); {
		n, err := s.q.ReserveN(s.msgs[:len(ids)-off])
		if err != nil {
			panic(err)
		}
		for i := 0; i < n; i++ {
			copy(s.msgs[i].Data, pls[off+i]) // the producer's bytes, written in place
			s.ents[i] = dq.Entry{Due: uint64(due[off+i]), UserData: ids[off+i], Len: payloadLen}
		}
		if c, err := s.q.CommitN(s.msgs[:n], s.ents[:n]); c != n || err != nil {
			panic(fmt.Sprint("commit ", c, err))
		}
		if _, err := s.q.Flush(); err != nil {
			panic(err)
		}
		off += n
	}
}

func (s *dqSys) stop() { s.cancel(); s.q.Close(); <-s.done }

// ---- baseline: the driver alone ---------------------------------------

// baseline "delivers" each message as it is put: the producer's and the
// recorder's own CPU, subtracted from every system's figure (net).
type baseSys struct{ rec *recorder }

func newBase(rec *recorder) (system, error) { return &baseSys{rec}, nil }

func (s *baseSys) put(ids []uint64, due []int64, pls [][]byte) {
	t := now()
	for i := range ids {
		s.rec.mu.Lock()
		s.rec.due[ids[i]] = t // delivered on time: lateness 0
		s.rec.mu.Unlock()
		s.rec.saw(pls[i], t)
	}
}

func (s *baseSys) stop() {}

// ---- chan-sleep --------------------------------------------------------

type chanSys struct {
	ch chan chanMsg
	wg sync.WaitGroup
}

type chanMsg struct {
	due int64
	p   []byte
}

func newChan(rec *recorder) (system, error) {
	s := &chanSys{ch: make(chan chanMsg, int(float64(*rate)*maxDelay.Seconds()*1.3)+4096)}
	for w := 0; w < *workers; w++ {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			for m := range s.ch {
				if d := m.due - now(); d > 0 {
					time.Sleep(time.Duration(d))
				}
				rec.saw(m.p, now())
			}
		}()
	}
	return s, nil
}

func (s *chanSys) put(ids []uint64, due []int64, pls [][]byte) {
	for i := range ids {
		s.ch <- chanMsg{due[i], pls[i]}
	}
}

func (s *chanSys) stop() { close(s.ch); s.wg.Wait() }

// ---- afterfunc ---------------------------------------------------------

type afterSys struct{ rec *recorder }

func newAfter(rec *recorder) (system, error) { return &afterSys{rec}, nil }

func (s *afterSys) put(ids []uint64, due []int64, pls [][]byte) {
	for i := range ids {
		p := pls[i]
		time.AfterFunc(time.Duration(due[i]-now()), func() { s.rec.saw(p, now()) })
	}
}

func (s *afterSys) stop() {}

// ---- redis-zset --------------------------------------------------------

type redisSys struct {
	w     *bufio.Writer
	c     net.Conn
	r     *bufio.Reader
	mu    sync.Mutex
	stopc chan struct{}
	done  chan struct{}
	key   string
}

func respCmd(w *bufio.Writer, args ...[]byte) {
	fmt.Fprintf(w, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(w, "$%d\r\n", len(a))
		w.Write(a)
		w.WriteString("\r\n")
	}
}

// respSkip reads one reply; bulk strings of arrays go to fn.
func respSkip(r *bufio.Reader, fn func([]byte)) error {
	l, err := r.ReadString('\n')
	if err != nil {
		return err
	}
	switch l[0] {
	case '+', ':':
		return nil
	case '-':
		return fmt.Errorf("redis: %s", strings.TrimSpace(l))
	case '$':
		n, _ := strconv.Atoi(strings.TrimSpace(l[1:]))
		if n < 0 {
			return nil
		}
		b := make([]byte, n+2)
		if _, err := ioReadFull(r, b); err != nil {
			return err
		}
		if fn != nil {
			fn(b[:n])
		}
		return nil
	case '*':
		n, _ := strconv.Atoi(strings.TrimSpace(l[1:]))
		for i := 0; i < n; i++ {
			if err := respSkip(r, fn); err != nil {
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("redis: reply %q", l)
}

func ioReadFull(r *bufio.Reader, b []byte) (int, error) {
	n := 0
	for n < len(b) {
		k, err := r.Read(b[n:])
		n += k
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

func newRedis(rec *recorder) (system, error) {
	if *redisAddr == "" {
		return nil, fmt.Errorf("no -redis")
	}
	dial := func() (net.Conn, error) { return net.Dial("tcp", *redisAddr) }
	c, err := dial()
	if err != nil {
		return nil, err
	}
	s := &redisSys{c: c, w: bufio.NewWriterSize(c, 1<<20), r: bufio.NewReader(c),
		stopc: make(chan struct{}), done: make(chan struct{}), key: fmt.Sprintf("gobench:%d", os.Getpid())}
	pc, err := dial()
	if err != nil {
		return nil, err
	}
	go func() { // the poller: every 200 ms, take what is due
		defer close(s.done)
		defer pc.Close()
		w, r := bufio.NewWriter(pc), bufio.NewReader(pc)
		tk := time.NewTicker(200 * time.Millisecond)
		defer tk.Stop()
		for {
			select {
			case <-s.stopc:
				return
			case <-tk.C:
			}
			lim := []byte(strconv.FormatInt(now(), 10))
			respCmd(w, []byte("MULTI"))
			respCmd(w, []byte("ZRANGEBYSCORE"), []byte(s.key), []byte("-inf"), lim)
			respCmd(w, []byte("ZREMRANGEBYSCORE"), []byte(s.key), []byte("-inf"), lim)
			respCmd(w, []byte("EXEC"))
			w.Flush()
			for i := 0; i < 3; i++ { // +OK, +QUEUED, +QUEUED
				if err := respSkip(r, nil); err != nil {
					panic(err)
				}
			}
			t := now()
			if err := respSkip(r, func(b []byte) {
				if len(b) == payloadLen {
					rec.saw(b, t)
				}
			}); err != nil {
				panic(err)
			}
		}
	}()
	return s, nil
}

func (s *redisSys) put(ids []uint64, due []int64, pls [][]byte) {
	args := [][]byte{[]byte("ZADD"), []byte(s.key)}
	for i := range ids {
		args = append(args, []byte(strconv.FormatInt(due[i], 10)), pls[i])
	}
	respCmd(s.w, args...)
	s.w.Flush()
	if err := respSkip(s.r, nil); err != nil {
		panic(err)
	}
}

func (s *redisSys) stop() {
	close(s.stopc)
	<-s.done
	respCmd(s.w, []byte("DEL"), []byte(s.key))
	s.w.Flush()
	respSkip(s.r, nil)
	s.c.Close()
}

func main() {
	flag.Parse()
	if *cpuprof != "" {
		f, err := os.Create(*cpuprof)
		if err != nil {
			panic(err)
		}
		pprof.StartCPUProfile(f)
		defer pprof.StopCPUProfile()
	}
	mk := map[string]func(*recorder) (system, error){
		"baseline": newBase, "dq-go": newDq, "chan-sleep": newChan, "afterfunc": newAfter, "redis-zset": newRedis,
	}
	loss := map[string]string{
		"baseline":   "-",
		"dq-go":      "all held (memory queue; a durable queue loses none: TestDurableKill9)",
		"chan-sleep": "all held (in this process's memory)",
		"afterfunc":  "all held (in this process's memory)",
		"redis-zset": "none held (in redis-server; lost if it dies unpersisted)",
	}
	fmt.Printf("# gobench: %d msg/s offered for %.0f s, delays 0-%v, %d B payloads, GOMAXPROCS %d\n",
		*rate, *seconds, *maxDelay, payloadLen, runtime.GOMAXPROCS(0))
	fmt.Printf("%-11s %7s %9s %6s %9s %9s %9s %9s %10s %8s  %s\n", "system", "rate", "delivered", "early",
		"cpu/msg", "net", "p50", "p99", "B/held", "held", "kill -9 loses")
	base := 0.0
	failed := false
	for _, name := range strings.Split(*systems, ",") {
		f, ok := mk[name]
		if !ok {
			fmt.Fprintf(os.Stderr, "unknown system %s\n", name)
			os.Exit(2)
		}
		ext := 0
		if name == "redis-zset" {
			ext = *redisPid
		}
		r, err := drive(name, f, ext)
		if err != nil {
			fmt.Printf("%-11s %7d error: %v\n", name, *rate, err)
			failed = true
			continue
		}
		if name == "baseline" {
			base = r.cpuNsPerMsg
		}
		label := name
		if name == "dq-go" && *gran != 0 {
			label = fmt.Sprintf("dq-go/%v", *gran)
		}
		if name == "dq-go" && *netpoll {
			label += "/np"
		}
		fmt.Printf("%-11s %7d %9d %6d %7.2fus %7.2fus %9s %9s %10.0f %8d  %s\n", label, *rate, r.delivered,
			r.early, r.cpuNsPerMsg/1000, (r.cpuNsPerMsg-base)/1000, r.p50.Round(time.Microsecond),
			r.p99.Round(time.Microsecond), r.bytesPerHeld, r.held, loss[name])
		if r.early+r.dup+r.corrupt > 0 || (name != "chan-sleep" && r.delivered != r.offered) {
			fmt.Printf("%-11s BROKEN: %d early, %d duplicated, %d corrupt, %d of %d delivered\n",
				name, r.early, r.dup, r.corrupt, r.delivered, r.offered)
			failed = true
		}
		runtime.GC()
		time.Sleep(200 * time.Millisecond)
	}
	if failed {
		pprof.StopCPUProfile()
		os.Exit(1)
	}
}
