package web

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"agentloop/internal/wait"
	"agentloop/rollout"

	"github.com/coder/websocket"
)

func snap(id string, elapsed int64, status string) rollout.Snapshot {
	return rollout.Snapshot{RunID: id, Status: status, ElapsedNS: elapsed,
		Lanes: []rollout.LaneSnapshot{{Lane: rollout.LaneWS, Status: status, Turns: []rollout.Turn{{Index: 0, Text: "secret text",
			Calls: []rollout.Call{{Name: "read_file", CallID: "call_1", Arguments: `{"path":"a"}`, Output: "big output"}}}}}}}
}

func elapsedOf(t *testing.T, b []byte) int64 {
	t.Helper()
	var s rollout.Snapshot
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	return s.ElapsedNS
}

// feedCount is how many races the hub fans out.
func (h *hub) feedCount() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.feeds)
}

// watchers is how many pages watch runID.
func (h *hub) watchers(runID string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	if f := h.feeds[runID]; f != nil {
		return len(f.subs)
	}
	return 0
}

// TestHubDropsSlowSubscriber: a page that never reads is dropped once its
// buffer is full; a page that keeps up gets every snapshot, and the race's
// final snapshot closes it normally.
func TestHubDropsSlowSubscriber(t *testing.T) {
	const buf = 3
	races := &fakeRaces{running: map[string]bool{"run_x": true}}
	h := newHub(races.Running, func(s rollout.Snapshot) any { return liveSnapshot(s) }, slog.New(slog.DiscardHandler), buf)
	fast, leaveFast, ok := h.subscribe("run_x")
	if !ok {
		t.Fatal("not live")
	}
	defer leaveFast()
	slow, leaveSlow, _ := h.subscribe("run_x")
	defer leaveSlow()
	if n := h.feedCount(); n != 1 {
		t.Fatalf("%d feeds for one race", n)
	}
	// The runner publishes; the hub offers each snapshot to every page.
	for i := int64(1); i <= buf+2; i++ {
		h.publish(snap("run_x", i, rollout.StatusRunning))
		if got := elapsedOf(t, <-fast.msgs); got != i {
			t.Fatalf("fast page got snapshot %d, want %d", got, i)
		}
	}
	var kept []int64
	for b := range slow.msgs {
		kept = append(kept, elapsedOf(t, b))
	}
	if len(kept) != buf || kept[0] != 1 || !slow.slow {
		t.Fatalf("slow page kept %v (slow=%v), want the first %d then a drop", kept, slow.slow, buf)
	}
	h.publish(snap("run_x", 99, rollout.StatusPassed))
	if got := elapsedOf(t, <-fast.msgs); got != 99 {
		t.Fatalf("fast page after the drop got %d", got)
	}
	if _, open := <-fast.msgs; open || fast.slow {
		t.Fatalf("the race's end must close the fast page normally (open=%v slow=%v)", open, fast.slow)
	}
	if n := h.feedCount(); n != 0 {
		t.Fatalf("%d feeds after the race ended", n)
	}
}

func TestHubLateJoinerAndLastLeave(t *testing.T) {
	races := &fakeRaces{running: map[string]bool{"run_x": true}}
	h := newHub(races.Running, func(s rollout.Snapshot) any { return liveSnapshot(s) }, slog.New(slog.DiscardHandler), 4)
	h.publish(snap("run_x", 1, rollout.StatusRunning)) // nobody watches yet: dropped
	first, leaveFirst, _ := h.subscribe("run_x")
	select {
	case <-first.msgs:
		t.Fatal("a snapshot published before anyone watched was kept")
	default:
	}
	h.publish(snap("run_x", 5, rollout.StatusRunning))
	<-first.msgs
	late, leaveLate, ok := h.subscribe("run_x")
	if !ok {
		t.Fatal("not live")
	}
	select {
	case b := <-late.msgs:
		if elapsedOf(t, b) != 5 {
			t.Fatal("late joiner did not start from the latest snapshot")
		}
	default:
		t.Fatal("late joiner got nothing")
	}
	leaveFirst()
	leaveLate()
	if n := h.feedCount(); n != 0 {
		t.Fatalf("%d feeds after the last page left, want none", n)
	}
	h.publish(snap("run_x", 6, rollout.StatusRunning)) // nobody watches: nothing to do
	if _, _, ok := h.subscribe("run_none"); ok {
		t.Fatal("a run that is not running must not be live")
	}
}

func TestLiveSnapshotStripsContentWithoutTouchingTheRunner(t *testing.T) {
	in := snap("run_x", 1, rollout.StatusRunning)
	out := liveSnapshot(in)
	call := out.Lanes[0].Turns[0].Calls[0]
	if out.Lanes[0].Turns[0].Text != "" || call.Output != "" || call.Arguments != "" || call.Name != "read_file" {
		t.Errorf("live turn keeps content: %+v", out.Lanes[0].Turns[0])
	}
	orig := in.Lanes[0].Turns[0]
	if orig.Text != "secret text" || orig.Calls[0].Output != "big output" {
		t.Error("liveSnapshot changed the runner's snapshot")
	}
}

// TestLiveFeed drives /ui/runs/{id}/live over a real socket.
func TestLiveFeed(t *testing.T) {
	tp := newTestPlayground(t)
	srv := httptest.NewServer(tp.e)
	defer srv.Close()
	wsURL := "ws" + strings.TrimPrefix(srv.URL, "http")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	t.Run("live run", func(t *testing.T) {
		// A race started through the run API publishes to the hub.
		if rec := tp.do(http.MethodPost, "/api/runs", `{}`, jsonHeader); rec.Code != http.StatusOK {
			t.Fatalf("start: %d %s", rec.Code, rec.Body)
		}
		c, _, err := websocket.Dial(ctx, wsURL+"/ui/runs/run_fake/live", nil)
		if err != nil {
			t.Fatal(err)
		}
		defer c.CloseNow()
		wait.Until(t, "the page to join the feed", func() bool { return tp.pg.hub.watchers("run_fake") > 0 })
		tp.races.publish(snap("run_fake", 1, rollout.StatusRunning))
		tp.races.publish(snap("run_fake", 2, rollout.StatusPassed))
		for _, want := range []int64{1, 2} {
			_, b, err := c.Read(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if got := elapsedOf(t, b); got != want {
				t.Fatalf("snapshot %d, want %d", got, want)
			}
			if strings.Contains(string(b), "big output") {
				t.Fatal("tool output in the live feed")
			}
		}
		if _, _, err := c.Read(ctx); websocket.CloseStatus(err) != websocket.StatusNormalClosure {
			t.Fatalf("end of race: %v", err)
		}
	})
	t.Run("stored run", func(t *testing.T) {
		c, _, err := websocket.Dial(ctx, wsURL+"/ui/runs/run_done/live", nil)
		if err != nil {
			t.Fatal(err)
		}
		defer c.CloseNow()
		_, b, err := c.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var s rollout.Snapshot
		if err := json.Unmarshal(b, &s); err != nil || s.Status != rollout.StatusPassed || s.Summary == nil || len(s.Lanes) != 2 {
			t.Fatalf("stored snapshot %s (%v)", b, err)
		}
		if ws := s.Lanes[1]; ws.Lane != rollout.LaneWS || len(ws.Turns) != 3 || ws.Turn != 2 || ws.ElapsedNS != 6e8 {
			t.Errorf("ws lane %+v", ws)
		}
		if _, _, err := c.Read(ctx); websocket.CloseStatus(err) != websocket.StatusNormalClosure {
			t.Fatalf("after the stored snapshot: %v", err)
		}
	})
	t.Run("missing run", func(t *testing.T) {
		_, res, err := websocket.Dial(ctx, wsURL+"/ui/runs/run_missing/live", nil)
		if err == nil || res == nil || res.StatusCode != http.StatusNotFound {
			t.Fatalf("missing run: %v %v", res, err)
		}
	})
	t.Run("other origin", func(t *testing.T) {
		_, res, err := websocket.Dial(ctx, wsURL+"/ui/runs/run_done/live", &websocket.DialOptions{HTTPHeader: http.Header{"Origin": {"http://evil.example"}}})
		if err == nil || res == nil || res.StatusCode != http.StatusForbidden {
			t.Fatalf("cross-origin socket: %v %v", res, err)
		}
	})
}

// TestShutdownClosesLiveFeeds: http.Server.Shutdown does not wait for
// WebSockets; the playground closes them with 1001.
func TestShutdownClosesLiveFeeds(t *testing.T) {
	tp := newTestPlayground(t)
	tp.races.running["run_live"] = true
	srv := httptest.NewServer(tp.e)
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(srv.URL, "http")+"/ui/runs/run_live/live", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	// Wait until the handler has registered the socket.
	wait.Until(t, "the socket to register", func() bool {
		tp.pg.mu.Lock()
		defer tp.pg.mu.Unlock()
		return len(tp.pg.conns) == 1
	})
	tp.pg.Shutdown(ctx)
	if _, _, err := c.Read(ctx); websocket.CloseStatus(err) != websocket.StatusGoingAway {
		t.Fatalf("after shutdown: %v", err)
	}
}
