// SPDX-License-Identifier: LGPL-2.1 OR MIT

// Command example reads a Redis stream (consumer group), POSTs each entry's
// "body" field to a downstream, and when the downstream says 429 or 503
// (or cannot be reached) keeps the entry in a durable dq queue and sends
// it again when the downstream's Retry-After (or -backoff) has passed:
// never before, and, while the downstream pushes back, nothing else
// either.  An entry is XACKed only once it was delivered or is durable
// in the queue's journal, so a kill -9 loses nothing: the stream keeps
// what was not acked, the journal what was held.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"sync"
	"syscall"
	"time"

	"dq.example/dq"
)

type service struct {
	q        *dq.Queue
	down     string
	client   *http.Client
	backoff  time.Duration
	mu       sync.Mutex
	resumeAt time.Time // the downstream asked for nothing before this
}

// post sends one entry; ok, or how long the downstream asked to wait.
func (s *service) post(id string, body []byte) (bool, time.Duration) {
	req, err := http.NewRequest("POST", s.down, bytes.NewReader(body))
	if err != nil {
		log.Fatalf("downstream URL: %v", err)
	}
	req.Header.Set("X-Stream-Id", id)
	resp, err := s.client.Do(req)
	if err != nil {
		return false, s.backoff
	}
	resp.Body.Close()
	switch {
	case resp.StatusCode/100 == 2:
		return true, 0
	case resp.StatusCode == 429 || resp.StatusCode == 503 || resp.StatusCode/100 == 5:
		if secs, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && secs >= 0 {
			return false, time.Duration(secs) * time.Second
		}
		return false, s.backoff
	}
	// Any other answer is final: this example logs and drops it.
	log.Printf("entry %s: downstream answered %d, dropped", id, resp.StatusCode)
	return true, 0
}

// pause records the downstream's Retry-After; wait is how long from now.
func (s *service) pause(d time.Duration) {
	s.mu.Lock()
	if t := time.Now().Add(d); t.After(s.resumeAt) {
		s.resumeAt = t
	}
	s.mu.Unlock()
}

func (s *service) pausedFor() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return time.Until(s.resumeAt)
}

// hold commits the entry into dq, due after delay, and returns once it is
// durable (DurableAlways: the flush syncs).  The payload, "ID\nBODY", is
// written straight into the queue's slot.
func (s *service) hold(id string, body []byte, delay time.Duration) error {
	m, err := s.q.ReserveWait(-1)
	if err != nil {
		return err
	}
	n := len(id) + 1 + len(body)
	if n > len(m.Data) {
		s.q.Abort(&m)
		return fmt.Errorf("entry %s: %d bytes, slots hold %d", id, n, len(m.Data))
	}
	copy(m.Data, id)
	m.Data[len(id)] = '\n'
	copy(m.Data[len(id)+1:], body)
	if err := s.q.CommitDelay(&m, n, delay, 0); err != nil {
		s.q.Abort(&m)
		return err
	}
	_, err = s.q.Flush()
	return err
}

// read takes the stream's entries and sends or holds each, then XACKs it.
func (s *service) read(ctx context.Context, rc *redisConn, stream, group, consumer string) error {
	if _, err := rc.do("XGROUP", "CREATE", stream, group, "0", "MKSTREAM"); err != nil &&
		!bytes.HasPrefix([]byte(err.Error()), []byte("BUSYGROUP")) {
		return err
	}
	// "0" first: entries a previous run read and did not ack.  It may
	// have sent them and been refused, so they wait the backoff in dq
	// rather than go out at once.
	from := "0"
	for ctx.Err() == nil {
		v, err := rc.do("XREADGROUP", "GROUP", group, consumer, "COUNT", "64",
			"BLOCK", "500", "STREAMS", stream, from)
		if err != nil {
			return err
		}
		entries, err := parseXRead(v)
		if err != nil {
			return err
		}
		if from == "0" && len(entries) == 0 {
			from = ">"
			continue
		}
		for _, e := range entries {
			body := []byte(e.fields["body"])
			switch {
			case from == "0":
				err = s.hold(e.id, body, s.backoff)
			case s.pausedFor() > 0:
				err = s.hold(e.id, body, s.pausedFor())
			default:
				if ok, wait := s.post(e.id, body); !ok {
					s.pause(wait)
					err = s.hold(e.id, body, wait)
				}
			}
			if err != nil {
				return err
			}
			if _, err := rc.do("XACK", stream, group, e.id); err != nil {
				return err
			}
		}
	}
	return nil
}

// release sends what dq hands out, one at a time, and holds it again
// (after the downstream's Retry-After) when it is refused.
func (s *service) release(ctx context.Context) error {
	out := make([]dq.Reaped, 16)
	for {
		if d := s.pausedFor(); d > 0 {
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(d):
			}
		}
		n, err := s.q.Reap(ctx, out)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			return err
		}
		for _, r := range out[:n] {
			i := bytes.IndexByte(r.Data, '\n')
			if i < 0 {
				return errors.New("a held message without its id")
			}
			id, body := string(r.Data[:i]), r.Data[i+1:]
			if d := s.pausedFor(); d > 0 {
				err = s.hold(id, body, d)
			} else if ok, wait := s.post(id, body); !ok {
				s.pause(wait)
				err = s.hold(id, body, wait)
			}
			if err != nil {
				return err
			}
			// Delivered, or durable again: the old slot may go.
			if err := s.q.Done(r.Slot); err != nil {
				return err
			}
		}
	}
}

func main() {
	redis := flag.String("redis", "127.0.0.1:6379", "Redis address")
	stream := flag.String("stream", "jobs", "stream to read")
	group := flag.String("group", "example", "consumer group")
	consumer := flag.String("consumer", "c1", "consumer name")
	down := flag.String("downstream", "http://127.0.0.1:8080/", "URL to POST to")
	journal := flag.String("journal", "/var/lib/example/dq", "dq journal directory")
	slots := flag.Uint("slots", 65536, "most entries held at once")
	slotSize := flag.Uint("slot-size", 1024, "largest ID+body held, bytes")
	backoff := flag.Duration("backoff", time.Second, "wait when the downstream gives no Retry-After")
	flag.Parse()

	q, err := dq.OpenDurable(&dq.Params{Slots: uint32(*slots), SlotSize: uint32(*slotSize)},
		dq.JournalParams{Dir: *journal, Durability: dq.DurableAlways})
	if err != nil {
		log.Fatalf("dq journal %s: %v", *journal, err)
	}
	rc, err := dialRedis(*redis)
	if err != nil {
		log.Fatalf("redis: %v", err)
	}
	s := &service{q: q, down: *down, client: &http.Client{Timeout: 10 * time.Second}, backoff: *backoff}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	errc := make(chan error, 2)
	go func() { errc <- s.read(ctx, rc, *stream, *group, *consumer) }()
	go func() { errc <- s.release(ctx) }()
	if err := <-errc; err != nil {
		log.Printf("stopping: %v", err)
		stop()
	}
	<-errc
	q.Close() // what is held stays in the journal for the next run
	rc.Close()
	if err != nil {
		os.Exit(1)
	}
}
