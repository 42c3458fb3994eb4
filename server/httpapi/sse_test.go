package httpapi

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/labstack/echo/v4"
)

// A stalled SSE write is counted as a stall wherever it fails: in an event
// larger than the sink's buffer, which is written by event, or in the
// flush through echo's writer, whose own Flush drops the error.
func TestSSEStallIsCountedWhereverItFails(t *testing.T) {
	for _, size := range []int{1 << 20, 512} {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			var stalls atomic.Int64
			result := make(chan error, 1)
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				res := echo.NewResponse(w, echo.New()) // as the engine's handler gets it
				res.WriteHeader(http.StatusOK)
				s := newSSESink(res, 100*time.Millisecond)
				s.stalled = func() { stalls.Add(1) }
				err := s.Flush()
				ev := bytes.Repeat([]byte("x"), size)
				// Until the unread socket's buffers are full; like the engine,
				// stop when the request's context ends (net/http ends it
				// when a write fails).
				for err == nil && r.Context().Err() == nil {
					if err = s.Event("response.output_text.delta", ev); err == nil {
						err = s.Flush()
					}
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
				t.Fatalf("the stalled write returned %v", err)
			}
			if stalls.Load() != 1 {
				t.Fatalf("%d stalls counted, want 1", stalls.Load())
			}
		})
	}
}
