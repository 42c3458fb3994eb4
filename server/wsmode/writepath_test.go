package wsmode

import (
	"bytes"
	"io"
	"net"
	"sync/atomic"
	"testing"
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

// textFrame is a final, unmasked text frame, as a server writes it.
func textFrame(payload []byte) []byte {
	n := len(payload)
	var h []byte
	switch {
	case n <= 125:
		h = []byte{0x81, byte(n)}
	case n <= 65535:
		h = []byte{0x81, 126, byte(n >> 8), byte(n)}
	default:
		h = []byte{0x81, 127, 0, 0, 0, 0, byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)}
	}
	return append(h, payload...)
}

func TestBatchConnSendsABatchInOneWrite(t *testing.T) {
	srv, cli := loopbackPair(t)
	cc := &countingConn{Conn: srv}
	b := &batchConn{Conn: cc, writing: new(atomic.Int64)}
	pong := []byte{0x8a, 0}

	// A frame of the library's goes out at once.
	if _, err := b.Write(pong); err != nil {
		t.Fatal(err)
	}
	if cc.writes != 1 || !bytes.Equal(readN(t, cli, 2), pong) {
		t.Fatalf("%d writes", cc.writes)
	}

	// The engine's frames are gathered until release, then sent in one
	// write; a control frame from the library in the meantime goes out at
	// once, after what was gathered, so nothing is reordered.
	var want []byte
	for _, s := range []string{"one", "two"} {
		if err := b.text([]byte(s), ""); err != nil {
			t.Fatal(err)
		}
		want = append(want, textFrame([]byte(s))...)
	}
	if cc.writes != 1 {
		t.Fatalf("%d writes before release, want none new", cc.writes-1)
	}
	b.Write(pong)
	want = append(want, pong...)
	if cc.writes != 3 || !bytes.Equal(readN(t, cli, len(want)), want) {
		t.Fatalf("%d writes: want the batch, then the pong", cc.writes)
	}
	b.text([]byte("three"), "")
	if err := b.release(); err != nil {
		t.Fatal(err)
	}
	if three := textFrame([]byte("three")); cc.writes != 4 || !bytes.Equal(readN(t, cli, len(three)), three) {
		t.Fatalf("%d writes after release, want 4 in all", cc.writes)
	}
	if b.buf != nil || b.writing.Load() != 0 {
		t.Fatal("the batch kept its buffer or its stall stamp")
	}

	// Every length's header: 7, 16 and 64 bits. A large payload goes out
	// at once, after what was gathered and its own header, without being
	// copied into the batch.
	want = want[:0]
	done := make(chan struct{})
	go func() {
		defer close(done)
		for _, n := range []int{125, 126, 65535, 2 * batchDirect} {
			if err := b.text(bytes.Repeat([]byte("x"), n), ""); err != nil {
				t.Error(err)
			}
		}
		if err := b.release(); err != nil {
			t.Error(err)
		}
	}()
	for _, n := range []int{125, 126, 65535, 2 * batchDirect} {
		want = append(want, textFrame(bytes.Repeat([]byte("x"), n))...)
	}
	if got := readN(t, cli, len(want)); !bytes.Equal(got, want) {
		t.Fatal("the frames came out wrong or out of order")
	}
	<-done

	// Once the library's close frame went out, no event frame follows it.
	b.text([]byte("before"), "")
	closeFrame := []byte{0x88, 2, 0x03, 0xe8}
	if _, err := b.Write(closeFrame); err != nil {
		t.Fatal(err)
	}
	want = append(textFrame([]byte("before")), closeFrame...)
	if got := readN(t, cli, len(want)); !bytes.Equal(got, want) {
		t.Fatalf("got % x before the close, want % x", got, want)
	}
	writes := cc.writes
	if err := b.text([]byte("after"), ""); err != errFramesClosed {
		t.Fatalf("an event after the close frame: %v", err)
	}
	if err := b.release(); err != nil || cc.writes != writes {
		t.Fatalf("release after the close frame: %v, %d writes", err, cc.writes-writes)
	}

	// A failed write is reported by release, and nothing follows it.
	b2 := &batchConn{Conn: srv, writing: new(atomic.Int64)}
	srv.Close()
	b2.text([]byte("lost"), "")
	if err := b2.release(); err == nil {
		t.Fatal("release on a closed connection reported no error")
	}
	if err := b2.text([]byte("more"), ""); err != errFramesClosed {
		t.Fatalf("an event after a failed write: %v", err)
	}
}
