package wsmode

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"agentloop/server/core"
	"agentloop/server/httpapi"

	"github.com/coder/websocket"
)

// BenchmarkWritePath measures the engine's write path over real loopback
// sockets: streams of one-token deltas, each op one scheduler tick of one
// stream (advance by one released token, then the flush that ends the
// tick), with writeStreams streams at once. Readers on the other end
// discard the bytes without parsing them. It reports events per second of
// wall time and per second of this process's CPU (writers, readers and the
// kernel's loopback work: about what the engine pays per event plus a
// plain read).
func BenchmarkWritePath(b *testing.B) {
	for _, transport := range []string{"ws", "sse"} {
		b.Run(transport, func(b *testing.B) { benchWritePath(b, transport) })
	}
}

const writeStreams = 64

func benchWritePath(b *testing.B, transport string) {
	var next atomic.Int64 // ops handed out so far
	var wg sync.WaitGroup
	ready := make(chan struct{})
	pieces := make([]string, b.N+1) // shared: every stream reads them
	for i := range pieces {
		pieces[i] = fmt.Sprintf(" w%d", i%100)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer wg.Done()
		var out core.Sink
		switch transport {
		case "ws":
			wc, err := benchWSSink(w, r)
			if err != nil {
				b.Error(err)
				return
			}
			defer wc.c.CloseNow()
			out = &laneSink{sock: wc} // the default lane's sink
		default:
			w.Header().Set("Content-Type", "text/event-stream")
			w.WriteHeader(http.StatusOK)
			out = httpapi.NewSSESink(w, time.Minute)
			if err := out.Flush(); err != nil { // the headers, so the client can wait for the start
				b.Error(err)
				return
			}
		}
		<-ready
		st := core.NewTextStream(out, pieces)
		for next.Add(1) <= int64(b.N) {
			if err := st.Advance(1); err != nil {
				b.Error(err)
				return
			}
			if err := out.Flush(); err != nil {
				b.Error(err)
				return
			}
		}
	}))
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")
	var readers sync.WaitGroup
	for range writeStreams {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			b.Fatal(err)
		}
		defer conn.Close()
		req := "GET /responses HTTP/1.1\r\nHost: " + addr + "\r\n"
		if transport == "ws" {
			req += "Connection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
		}
		wg.Add(1)
		if _, err := io.WriteString(conn, req+"\r\n"); err != nil {
			b.Fatal(err)
		}
		br := bufio.NewReaderSize(conn, 32<<10)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			b.Fatal(err)
		}
		if want := map[string]int{"ws": 101, "sse": 200}[transport]; resp.StatusCode != want {
			b.Fatalf("status %d, want %d", resp.StatusCode, want)
		}
		readers.Add(1)
		go func() {
			defer readers.Done()
			_, _ = io.Copy(io.Discard, br) // the raw bytes: frames or chunks
		}()
	}
	b.ReportAllocs()
	cpu := processCPU()
	b.ResetTimer()
	close(ready)
	wg.Wait()
	b.StopTimer()
	used := processCPU() - cpu
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
	if used > 0 {
		b.ReportMetric(float64(b.N)/used.Seconds(), "events/cpu-s")
	}
	srv.CloseClientConnections()
	readers.Wait()
}

// benchWSSink accepts a WebSocket as handleWebSocket does and returns the
// connection as the engine's sink.
func benchWSSink(w http.ResponseWriter, r *http.Request) (*wsConn, error) {
	hj := &batchHijacker{ResponseWriter: w, writing: new(atomic.Int64)}
	conn, err := websocket.Accept(hj, r, &websocket.AcceptOptions{CompressionMode: websocket.CompressionDisabled})
	if err != nil {
		return nil, err
	}
	return &wsConn{c: conn, out: hj.conn, writing: hj.writing, cancel: func() {}}, nil
}

func processCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
