package wsmode

import (
	"context"
	"fmt"
	"net"
	"sync/atomic"
	"testing"

	"agentloop/server/core"
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
	wc := &wsConn{out: &batchConn{Conn: discardConn{}, writing: new(atomic.Int64)}, cancel: func() {}}
	ls := newLanes(context.Background(), wc, false, newQueueBound(16), nil)
	l := ls.def
	if laneID != "" {
		l = ls.newLane(laneID)
	}
	pieces := make([]string, 4096)
	for i := range pieces {
		pieces[i] = fmt.Sprintf(" w%d", i%100)
	}
	st := core.NewTextStream(&l.out, pieces)
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
