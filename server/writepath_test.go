package server

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// countingConn counts the writes that reach a real socket.
type countingConn struct {
	net.Conn
	writes int
}

func (c *countingConn) Write(p []byte) (int, error) {
	c.writes++
	return c.Conn.Write(p)
}

// loopbackPair returns both ends of a real TCP connection.
func loopbackPair(t *testing.T) (server, client net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		accepted <- c
	}()
	client, err = net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	server = <-accepted
	if server == nil {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { server.Close(); client.Close() })
	return server, client
}

func readN(t *testing.T, c net.Conn, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	if _, err := io.ReadFull(c, b); err != nil {
		t.Fatal(err)
	}
	return b
}

func TestBatchConnSendsABatchInOneWrite(t *testing.T) {
	srv, cli := loopbackPair(t)
	cc := &countingConn{Conn: srv}
	b := &batchConn{Conn: cc, writing: new(atomic.Int64)}

	// Outside a batch, a write goes out at once.
	if _, err := b.Write([]byte("ping")); err != nil {
		t.Fatal(err)
	}
	if cc.writes != 1 || string(readN(t, cli, 4)) != "ping" {
		t.Fatalf("%d writes", cc.writes)
	}

	// In a batch, writes are gathered until release, then sent in one.
	b.hold()
	for _, s := range []string{"one ", "two ", "three"} {
		if _, err := b.Write([]byte(s)); err != nil {
			t.Fatal(err)
		}
	}
	if cc.writes != 1 {
		t.Fatalf("%d writes before release, want none new", cc.writes-1)
	}
	if err := b.release(); err != nil {
		t.Fatal(err)
	}
	if cc.writes != 2 || string(readN(t, cli, 13)) != "one two three" {
		t.Fatalf("%d writes after release, want 2 in all", cc.writes)
	}
	if b.buf != nil || b.writing.Load() != 0 {
		t.Fatal("the batch kept its buffer or its stall stamp")
	}

	// A large write in a batch goes out after what was gathered, in order,
	// without being copied into the batch.
	b.hold()
	b.Write([]byte("head "))
	big := bytes.Repeat([]byte("x"), batchDirect)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if _, err := b.Write(big); err != nil {
			t.Error(err)
		}
		b.Write([]byte(" tail"))
		if err := b.release(); err != nil {
			t.Error(err)
		}
	}()
	got := readN(t, cli, len("head ")+len(big)+len(" tail"))
	if !strings.HasPrefix(string(got), "head xxx") || !strings.HasSuffix(string(got), "xxx tail") {
		t.Fatalf("out of order: %q…%q", got[:10], got[len(got)-10:])
	}
	<-done

	// A failed write is reported by release.
	srv.Close()
	b.hold()
	b.Write([]byte("lost"))
	if err := b.release(); err == nil {
		t.Fatal("release on a closed connection reported no error")
	}
}

// An SSE event larger than the sink's buffer is written by event, not by
// the flush: a stall there must be counted too.
func TestSSEStallInALargeEventIsCounted(t *testing.T) {
	var stalls atomic.Int64
	result := make(chan error, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
		s := newSSESink(w, 100*time.Millisecond)
		s.stalled = func() { stalls.Add(1) }
		err := s.flush()
		big := bytes.Repeat([]byte("x"), 1<<20)
		for err == nil { // until the unread socket's buffers are full
			err = s.event("response.output_text.delta", big)
		}
		result <- err
	}))
	defer srv.Close()
	raw, err := net.Dial("tcp", strings.TrimPrefix(srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	raw.(*net.TCPConn).SetReadBuffer(4096)
	fmt.Fprintf(raw, "GET / HTTP/1.1\r\nHost: x\r\n\r\n") // and never read
	if err := <-result; !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("the stalled event returned %v", err)
	}
	if stalls.Load() != 1 {
		t.Fatalf("%d stalls counted, want 1", stalls.Load())
	}
}
