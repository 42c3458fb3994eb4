package wsmode

import (
	"bufio"
	"errors"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"agentloop/api"
)

// batchConn is a hijacked WebSocket connection on which the engine writes
// its own event frames: a stream's frames of one scheduler tick gather in a
// pooled buffer and go out in one write(2) when the tick releases them. A
// token still leaves as soon as its tick released it, and the syscall, the
// largest cost of streaming, is paid once per stream per tick instead of
// once per event.
//
// An event frame is a final, unmasked text frame: two to ten header bytes
// and the payload, appended here without the WebSocket library's writer
// (its lock, message state and flush per frame were about an eighth of the
// engine's CPU when streaming). The library still owns the handshake and
// the reads, and writes the control frames, pongs and close frames, through
// Write: each goes out at once, after anything gathered, and once a close
// frame went out no event frame may follow it (RFC 6455, 5.5.1), so text
// then fails as the library's own writer would.
type batchConn struct {
	net.Conn
	writing *atomic.Int64 // the connection's stall stamp: unix nanos while a write(2) runs

	mu     sync.Mutex
	buf    *[]byte // gathered frames; nil when none, so an idle connection holds no buffer
	closed bool    // a close frame went out, or a write failed: no more frames
}

// batchDirect is the payload size from which an event goes out at once
// (after what was gathered) instead of being copied: a large snapshot costs
// its syscall anyway, and copying it would double its memory.
const batchDirect = 64 << 10

// batchBufs recycles batch buffers between connections and ticks.
var batchBufs = sync.Pool{New: func() any { b := make([]byte, 0, 4<<10); return &b }}

// errFramesClosed is what text returns once no frame may be written.
var errFramesClosed = errors.New("websocket: the connection is closing or closed")

// appendTextHeader appends the header of a final, unmasked text frame (a
// server's) whose payload is n bytes (RFC 6455, 5.2).
func appendTextHeader(b []byte, n int) []byte {
	switch {
	case n <= 125:
		return append(b, 0x81, byte(n))
	case n <= 65535:
		return append(b, 0x81, 126, byte(n>>8), byte(n))
	}
	return append(b, 0x81, 127, 0, 0, 0, 0, byte(n>>24), byte(n>>16), byte(n>>8), byte(n))
}

// text frames one event into the batch that release sends; a named
// lane's event (stream not "") gets its stream_id as it is copied in
// (api.AppendWithStreamID), so it is copied once, under one lock.
func (b *batchConn) text(p []byte, stream string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return errFramesClosed
	}
	if b.buf == nil {
		b.buf = batchBufs.Get().(*[]byte)
	}
	n := len(p)
	if stream != "" {
		n += len(`,"stream_id":""`) + len(stream)
	}
	if n >= batchDirect {
		if stream != "" {
			p = api.AppendWithStreamID(nil, p, stream)
		}
		*b.buf = appendTextHeader(*b.buf, len(p))
		if err := b.flushLocked(); err != nil {
			return err
		}
		return b.writeLocked(p)
	}
	start := len(*b.buf)
	*b.buf = appendTextHeader(*b.buf, n)
	if stream == "" {
		*b.buf = append(*b.buf, p...)
		return nil
	}
	at := len(*b.buf)
	*b.buf = api.AppendWithStreamID(*b.buf, p, stream)
	if got := len(*b.buf) - at; got != n {
		// An event that does not open with its type takes the field
		// first, with or without a comma: frame what was written.
		framed := append([]byte(nil), (*b.buf)[at:]...)
		*b.buf = append(appendTextHeader((*b.buf)[:start], got), framed...)
	}
	return nil
}

// release ends the batch and writes what it gathered.
func (b *batchConn) release() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.flushLocked()
}

// Write is the library's: the handshake's reply and control frames, one
// frame per call (it flushes after each). It goes out at once, after
// anything gathered.
func (b *batchConn) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.flushLocked(); err != nil {
		return 0, err
	}
	if len(p) > 0 && p[0] == 0x88 { // FIN, close
		b.closed = true
	}
	if err := b.writeLocked(p); err != nil {
		return 0, err
	}
	return len(p), nil
}

func (b *batchConn) flushLocked() error {
	if b.buf == nil {
		return nil
	}
	buf := b.buf
	b.buf = nil
	err := b.writeLocked(*buf)
	if cap(*buf) <= batchDirect {
		*buf = (*buf)[:0]
		batchBufs.Put(buf)
	}
	return err
}

// writeLocked writes p whole; after a failed write a frame may be cut
// short, so no frame follows it.
func (b *batchConn) writeLocked(p []byte) error {
	if _, err := b.write(p); err != nil {
		b.closed = true
		return err
	}
	return nil
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
	// The library flushes its writer after every frame, so each of its
	// frames reaches Write whole. Reads still come from the hijacked reader.
	brw.Writer.Reset(h.conn)
	return h.conn, brw, nil
}
