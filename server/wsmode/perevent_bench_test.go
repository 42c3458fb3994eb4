package wsmode

import (
	"fmt"
	"net"
	"testing"
)

// discardConn is a socket whose writes go nowhere, so that a benchmark
// measures the engine's side of the per-token path alone.
type discardConn struct{ net.Conn }

func (discardConn) Write(p []byte) (int, error) { return len(p), nil }

// BenchmarkStreamEvents measures the per-token path from the streamer to
// a WebSocket batch, on the default lane and on a named one (whose events
// carry their stream_id), one token or sixteen per delta; each op is one
// delta event and one flush.
func BenchmarkStreamEvents(b *testing.B) {
	for _, lane := range []string{"", "lane-a"} {
		for _, per := range []int{1, 16} {
			name := fmt.Sprintf("lane=%q/tokens=%d", lane, per)
			b.Run(name, func(b *testing.B) { benchStreamEvents(b, lane, per) })
		}
	}
}

func benchStreamEvents(b *testing.B, laneID string, per int) {
	l, st := laneStream(laneID)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := st.Advance(per); err != nil {
			b.Fatal(err)
		}
		if err := l.out.Flush(); err != nil {
			b.Fatal(err)
		}
	}
}
