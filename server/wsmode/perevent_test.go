package wsmode

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"agentloop/api"
	"agentloop/server/core"
)

// The per-token path allocates nothing per event: from the streamer's
// delta (one token or several) through a lane's sink, the named lane's
// stream_id included, into the connection's batch. The ceiling is 0; a
// change that adds a copy or a string per event fails here.
func TestPerEventPathAllocatesNothing(t *testing.T) {
	for _, laneID := range []string{"", "lane-a"} {
		for _, per := range []int{1, 16} {
			t.Run(fmt.Sprintf("lane=%q/tokens=%d", laneID, per), func(t *testing.T) {
				l, st := laneStream(laneID)
				step := func() {
					if err := st.Advance(per); err != nil {
						t.Fatal(err)
					}
					if err := l.out.Flush(); err != nil {
						t.Fatal(err)
					}
				}
				step() // the item's opening events and the first buffers
				if allocs := testing.AllocsPerRun(200, step); allocs > 0 {
					t.Fatalf("%.2f allocations per event, want 0", allocs)
				}
			})
		}
	}
}

// laneStream is a text stream on lane laneID ("" the default) of a
// connection whose socket discards what it is sent: the per-token path
// from the streamer to the batch, and nothing after it.
func laneStream(laneID string) (*lane, *core.TextStream) {
	wc := &wsConn{out: &batchConn{Conn: discardConn{}, writing: new(atomic.Int64)}, cancel: func() {}}
	ls := newLanes(context.Background(), wc, false, newQueueBound(16), nil, nil)
	l := ls.def
	if laneID != "" {
		l = ls.newLane(laneID)
	}
	pieces := make([]string, 4096)
	for i := range pieces {
		pieces[i] = fmt.Sprintf(" word%d", i%100) // 16 make a delta past the runtime's 32-byte stack buffer
	}
	return l, core.NewTextStream(&l.out, pieces)
}

// A named lane's frame is the event with its stream_id as
// api.AppendWithStreamID writes it, whatever the event opens with.
func TestNamedFrameIsTheEventWithItsStreamID(t *testing.T) {
	for _, ev := range []string{`{"type":"response.output_text.delta","sequence_number":3,"delta":"hi"}`, `{"error":{}}`, `{}`} {
		var got, want recordConn
		g := &batchConn{Conn: &got, writing: new(atomic.Int64)}
		w := &batchConn{Conn: &want, writing: new(atomic.Int64)}
		if err := g.text([]byte(ev), "lane-a"); err != nil {
			t.Fatal(err)
		}
		if err := w.text(api.AppendWithStreamID(nil, []byte(ev), "lane-a"), ""); err != nil {
			t.Fatal(err)
		}
		g.release()
		w.release()
		if string(got.b) != string(want.b) {
			t.Fatalf("%s: framed %q, want %q", ev, got.b, want.b)
		}
	}
}

// recordConn keeps what is written to it.
type recordConn struct {
	discardConn
	b []byte
}

func (c *recordConn) Write(p []byte) (int, error) { c.b = append(c.b, p...); return len(p), nil }
