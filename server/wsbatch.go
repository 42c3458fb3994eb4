package server

import (
	"bufio"
	"errors"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// batchConn is a hijacked WebSocket connection that gathers the frames a
// stream writes in one scheduler tick and sends them in one write(2) when
// the tick's batch is released. The WebSocket library still frames each
// event as its own message; only the syscalls are shared. A token still
// leaves as soon as its tick released it, and the syscall, the largest
// cost of streaming, is paid once per stream per tick instead of once per
// event.
//
// Only the engine's own event frames are gathered: gather announces one,
// and its bytes are recognised by its first byte (a final text frame,
// 0x81) and its length. Every other write (pongs and close frames from the
// reader goroutine, error events) goes straight out, after anything
// gathered: a close frame the library writes just before it closes the
// socket must not wait in a batch.
type batchConn struct {
	net.Conn
	writing *atomic.Int64 // the connection's stall stamp: unix nanos while a write(2) runs

	mu      sync.Mutex
	buf     *[]byte // gathered bytes; nil when none, so an idle connection holds no buffer
	expect  int     // the length of an announced frame that has not started yet
	pending int     // bytes still to come of the engine's frame being written
}

// batchDirect is the size from which a write in a batch goes out at once
// (after what was gathered) instead of being copied: a large snapshot
// costs its syscall anyway, and copying it would double its memory.
const batchDirect = 64 << 10

// batchBufs recycles batch buffers between connections and ticks.
var batchBufs = sync.Pool{New: func() any { b := make([]byte, 0, 4<<10); return &b }}

// frameLen is the length on the wire of an unmasked frame (a server's)
// with a payload of n bytes (RFC 6455, 5.2).
func frameLen(n int) int {
	switch {
	case n <= 125:
		return n + 2
	case n <= 65535:
		return n + 4
	}
	return n + 10
}

// gather announces that the engine writes one text message of n bytes
// next; its frame joins the batch.
func (b *batchConn) gather(n int) {
	b.mu.Lock()
	b.expect = frameLen(n)
	b.mu.Unlock()
}

// release ends the batch and writes what it gathered.
func (b *batchConn) release() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.expect, b.pending = 0, 0
	return b.flushLocked()
}

func (b *batchConn) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	ours := b.pending > 0
	if !ours && b.expect > 0 && len(p) > 0 && p[0] == 0x81 { // FIN, text: the announced frame starts
		b.pending, b.expect, ours = b.expect, 0, true
	}
	if ours {
		b.pending = max(b.pending-len(p), 0)
		if len(p) < batchDirect {
			if b.buf == nil {
				b.buf = batchBufs.Get().(*[]byte)
			}
			*b.buf = append(*b.buf, p...)
			return len(p), nil
		}
	}
	if err := b.flushLocked(); err != nil {
		return 0, err
	}
	return b.write(p)
}

func (b *batchConn) flushLocked() error {
	if b.buf == nil {
		return nil
	}
	buf := b.buf
	b.buf = nil
	_, err := b.write(*buf)
	if cap(*buf) <= batchDirect {
		*buf = (*buf)[:0]
		batchBufs.Put(buf)
	}
	return err
}

// write is the one place a byte reaches the socket; the stall watchdog
// sees it from its stamp.
func (b *batchConn) write(p []byte) (int, error) {
	b.writing.Store(time.Now().UnixNano())
	n, err := b.Conn.Write(p)
	b.writing.Store(0)
	return n, err
}

// batchHijacker hands the WebSocket library a batchConn when it hijacks
// the connection, and keeps it for the engine.
type batchHijacker struct {
	http.ResponseWriter
	writing *atomic.Int64
	conn    *batchConn
}

func (h *batchHijacker) Unwrap() http.ResponseWriter { return h.ResponseWriter }

func (h *batchHijacker) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	hj, ok := http.ResponseWriter(h.ResponseWriter).(http.Hijacker)
	if !ok {
		return nil, nil, errors.New("the response writer cannot be hijacked")
	}
	nc, brw, err := hj.Hijack()
	if err != nil {
		return nil, nil, err
	}
	h.conn = &batchConn{Conn: nc, writing: h.writing}
	// The library flushes its writer after every frame; that flush now
	// lands in the batch. Reads still come from the hijacked reader.
	brw.Writer.Reset(h.conn)
	return h.conn, brw, nil
}
