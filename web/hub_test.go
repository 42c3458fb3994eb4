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

// TestHubDropsSlowSubscriber: a page that never reads is dropped once its
// buffer is full; a page that keeps up gets every snapshot, and the race's
// end closes it normally.
func TestHubDropsSlowSubscriber(t *testing.T) {
	const buf = 3
	races := &fakeRaces{live: map[string]chan rollout.Snapshot{"run_x": make(chan rollout.Snapshot)}}
	h := newHub(races, slog.New(slog.DiscardHandler), buf)
	fast, leaveFast, ok := h.subscribe("run_x")
	if !ok {
		t.Fatal("not live")
	}
	defer leaveFast()
	slow, leaveSlow, _ := h.subscribe("run_x")
	defer leaveSlow()
	if races.subscribed != 1 {
		t.Fatalf("%d upstream subscriptions for one race", races.subscribed)
	}
	upstream := races.live["run_x"]
	// Lockstep with the fast page: once it has snapshot i, the hub has
	// offered snapshot i to every page.
	for i := int64(1); i <= buf+2; i++ {
		upstream <- snap("run_x", i, rollout.StatusRunning)
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
	upstream <- snap("run_x", 99, rollout.StatusPassed)
	if got := elapsedOf(t, <-fast.msgs); got != 99 {
		t.Fatalf("fast page after the drop got %d", got)
	}
	close(upstream)
	if _, open := <-fast.msgs; open || fast.slow {
		t.Fatalf("the race's end must close the fast page normally (open=%v slow=%v)", open, fast.slow)
	}
}

func TestHubLateJoinerAndLastLeave(t *testing.T) {
	races := &fakeRaces{live: map[string]chan rollout.Snapshot{"run_x": make(chan rollout.Snapshot)}}
	h := newHub(races, slog.New(slog.DiscardHandler), 4)
	first, leaveFirst, _ := h.subscribe("run_x")
	races.live["run_x"] <- snap("run_x", 5, rollout.StatusRunning)
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
	races.mu.Lock()
	cancelled := races.cancelled
	races.mu.Unlock()
	if cancelled != 1 {
		t.Fatalf("upstream cancelled %d times after the last page left, want 1", cancelled)
	}
	if _, _, ok := h.subscribe("run_none"); ok {
		t.Fatal("a run that is not running must not be live")
	}
	close(races.live["run_x"]) // ends the pump
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
	upstream := make(chan rollout.Snapshot)
	tp.races.live["run_live"] = upstream
	srv := httptest.NewServer(tp.e)
	defer srv.Close()
	wsURL := "ws" + strings.TrimPrefix(srv.URL, "http")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	t.Run("live run", func(t *testing.T) {
		c, _, err := websocket.Dial(ctx, wsURL+"/ui/runs/run_live/live", nil)
		if err != nil {
			t.Fatal(err)
		}
		defer c.CloseNow()
		go func() {
			upstream <- snap("run_live", 1, rollout.StatusRunning)
			upstream <- snap("run_live", 2, rollout.StatusPassed)
			close(upstream)
		}()
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
	tp.races.live["run_live"] = make(chan rollout.Snapshot)
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
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		tp.pg.mu.Lock()
		n := len(tp.pg.conns)
		tp.pg.mu.Unlock()
		if n == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("socket never registered")
		}
	}
	tp.pg.Shutdown(ctx)
	if _, _, err := c.Read(ctx); websocket.CloseStatus(err) != websocket.StatusGoingAway {
		t.Fatalf("after shutdown: %v", err)
	}
}
