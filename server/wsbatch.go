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
// stream writes between hold and release, and sends them in one write(2)
// when the batch ends. The WebSocket library still frames each event as
// its own message; only the syscalls are shared. A response writes its
// events for one scheduler tick inside one batch, so a token still leaves
// as soon as its tick released it, and the syscall, the largest cost of
// streaming, is paid once per stream per tick instead of once per event.
//
// Writes outside a batch (errors, pongs, close frames) go straight out,
// after anything still gathered.
type batchConn struct {
	net.Conn
	writing *atomic.Int64 // the connection's stall stamp: unix nanos while a write(2) runs

	mu      sync.Mutex
	buf     *[]byte // gathered bytes; nil when none, so an idle connection holds no buffer
	holding bool
}

// batchDirect is the size from which a write in a batch goes out at once
// (after what was gathered) instead of being copied: a large snapshot
// costs its syscall anyway, and copying it would double its memory.
const batchDirect = 64 << 10

// batchBufs recycles batch buffers between connections and ticks.
var batchBufs = sync.Pool{New: func() any { b := make([]byte, 0, 4<<10); return &b }}

// hold starts a batch: writes are gathered until release.
func (b *batchConn) hold() {
	b.mu.Lock()
	b.holding = true
	b.mu.Unlock()
}

// release ends the batch and writes what it gathered.
func (b *batchConn) release() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.holding = false
	return b.flushLocked()
}

func (b *batchConn) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.holding && len(p) < batchDirect {
		if b.buf == nil {
			b.buf = batchBufs.Get().(*[]byte)
		}
		*b.buf = append(*b.buf, p...)
		return len(p), nil
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
