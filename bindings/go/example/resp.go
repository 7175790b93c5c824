// SPDX-License-Identifier: LGPL-2.1 OR MIT

package main

// A minimal Redis client: RESP2 requests and replies over one connection,
// enough for XGROUP, XREADGROUP and XACK.  Standard library only.

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
)

type redisConn struct {
	c net.Conn
	r *bufio.Reader
	w *bufio.Writer
}

// redisError is a "-ERR ..." reply: the command failed, the connection is fine.
type redisError string

func (e redisError) Error() string { return string(e) }

func dialRedis(addr string) (*redisConn, error) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	return &redisConn{c: c, r: bufio.NewReader(c), w: bufio.NewWriter(c)}, nil
}

func (rc *redisConn) Close() error { return rc.c.Close() }

// do sends one command and reads its reply: string (simple or bulk),
// int64, nil (a null bulk or array), []interface{}, or a redisError.
func (rc *redisConn) do(args ...string) (interface{}, error) {
	fmt.Fprintf(rc.w, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(rc.w, "$%d\r\n%s\r\n", len(a), a)
	}
	if err := rc.w.Flush(); err != nil {
		return nil, err
	}
	v, err := rc.read()
	if err != nil {
		return nil, err
	}
	if e, ok := v.(redisError); ok {
		return nil, e
	}
	return v, nil
}

func (rc *redisConn) line() (string, error) {
	s, err := rc.r.ReadString('\n')
	if err != nil {
		return "", err
	}
	if len(s) < 3 || s[len(s)-2] != '\r' {
		return "", errors.New("resp: malformed line")
	}
	return s[:len(s)-2], nil
}

func (rc *redisConn) read() (interface{}, error) {
	l, err := rc.line()
	if err != nil {
		return nil, err
	}
	if l == "" {
		return nil, errors.New("resp: empty line")
	}
	switch l[0] {
	case '+':
		return l[1:], nil
	case '-':
		return redisError(l[1:]), nil
	case ':':
		return strconv.ParseInt(l[1:], 10, 64)
	case '$':
		n, err := strconv.Atoi(l[1:])
		if err != nil || n < -1 || n > 512<<20 {
			return nil, errors.New("resp: bad bulk length")
		}
		if n == -1 {
			return nil, nil
		}
		b := make([]byte, n+2)
		if _, err := io.ReadFull(rc.r, b); err != nil {
			return nil, err
		}
		return string(b[:n]), nil
	case '*':
		n, err := strconv.Atoi(l[1:])
		if err != nil || n < -1 || n > 1<<20 {
			return nil, errors.New("resp: bad array length")
		}
		if n == -1 {
			return nil, nil
		}
		a := make([]interface{}, n)
		for i := range a {
			if a[i], err = rc.read(); err != nil {
				return nil, err
			}
		}
		return a, nil
	}
	return nil, fmt.Errorf("resp: unknown reply type %q", l[0])
}

// streamEntry is one entry of an XREADGROUP reply.
type streamEntry struct {
	id     string
	fields map[string]string
}

// parseXRead takes the entries of the one stream an XREADGROUP named.
func parseXRead(v interface{}) ([]streamEntry, error) {
	if v == nil {
		return nil, nil // BLOCK timed out
	}
	streams, ok := v.([]interface{})
	if !ok || len(streams) != 1 {
		return nil, errors.New("xreadgroup: unexpected reply")
	}
	st, ok := streams[0].([]interface{})
	if !ok || len(st) != 2 {
		return nil, errors.New("xreadgroup: unexpected stream")
	}
	items, _ := st[1].([]interface{})
	var out []streamEntry
	for _, it := range items {
		e, ok := it.([]interface{})
		if !ok || len(e) != 2 {
			return nil, errors.New("xreadgroup: unexpected entry")
		}
		id, _ := e[0].(string)
		kv, _ := e[1].([]interface{}) // nil: the entry was deleted
		f := make(map[string]string)
		for i := 0; i+1 < len(kv); i += 2 {
			k, _ := kv[i].(string)
			val, _ := kv[i+1].(string)
			f[k] = val
		}
		out = append(out, streamEntry{id, f})
	}
	return out, nil
}
