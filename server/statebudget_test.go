package server_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"agentloop/api"
	"agentloop/internal/wait"
	"agentloop/server"
	"agentloop/server/core"
	"agentloop/server/enginetest"

	"github.com/coder/websocket"
)

// stateSession is one WebSocket session of the state budget's tests: a
// reference client that keeps its full context, to resend it when the
// engine has dropped its state.
type stateSession struct {
	t     *testing.T
	c     *websocket.Conn
	input []json.RawMessage // everything sent and received so far
	prev  string
}

func newStateSession(t *testing.T, h *harness, text string) *stateSession {
	s := &stateSession{t: t, c: h.rawWS("/v1/responses")}
	s.create(t, "", userItem(text))
	return s
}

func userItem(text string) json.RawMessage {
	b, _ := json.Marshal(map[string]any{"type": "message", "role": "user", "content": text})
	return b
}

// create sends one create continuing prev ("" for none) with input, and
// returns its terminal response or its error frame.
func (s *stateSession) create(t *testing.T, prev string, input ...json.RawMessage) (*api.Response, *api.Error) {
	t.Helper()
	body := map[string]any{"type": "response.create", "model": "instant", "store": false, "input": input,
		"instructions": "You are a careful coding agent.", "max_output_tokens": 4, "ignore_eos": true}
	if prev != "" {
		body["previous_response_id"] = prev
	}
	b, _ := json.Marshal(body)
	send(t, s.c, string(b))
	for {
		ev := readEvent(t, s.c)
		if e := ev.AsError(); e != nil {
			return nil, e
		}
		if api.IsTerminal(ev.Type) {
			if ev.Response.Status != "completed" {
				t.Fatalf("response %s", ev.Response.Status)
			}
			if prev == "" {
				s.input = append([]json.RawMessage(nil), input...)
			} else {
				s.input = append(s.input, input...)
			}
			for _, it := range ev.Response.Output {
				raw, _ := json.Marshal(map[string]any{"type": it.Type, "role": it.Role, "content": it.Text()})
				s.input = append(s.input, raw)
			}
			s.prev = ev.Response.ID
			return ev.Response, nil
		}
	}
}

// next continues the session with a short new item.
func (s *stateSession) next(t *testing.T) (*api.Response, *api.Error) {
	t.Helper()
	return s.create(t, s.prev, userItem("Run the tests again."))
}

// resend is what a correct client does after previous_response_not_found:
// it sends its full context, and the short new item, with no
// previous_response_id.
func (s *stateSession) resend(t *testing.T) (*api.Response, *api.Error) {
	t.Helper()
	full := append(append([]json.RawMessage(nil), s.input...), userItem("Run the tests again."))
	return s.create(t, "", full...)
}

func stateDrops(t *testing.T, h *harness) string {
	t.Helper()
	resp, err := http.Get(h.url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "agentloop_connection_state_drops_total") {
			return line[strings.LastIndexByte(line, ' ')+1:]
		}
	}
	t.Fatal("no agentloop_connection_state_drops_total in /metrics")
	return ""
}

// loadNote is the load span's note of response id's trace, "" until it
// is observed.
func loadNote(l *traceLog, id string) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, tr := range l.traces {
		if sp, ok := tr.Span(api.StageLoad); ok && tr.ResponseID == id {
			return sp.Note
		}
	}
	return ""
}

// held waits until the engine holds n states and has dropped drops.
func held(t *testing.T, h *harness, n int, drops string) {
	t.Helper()
	wait.Until(t, fmt.Sprintf("%d states held, %s dropped", n, drops), func() bool {
		_, got := h.sh.States.Size()
		return got == n && stateDrops(t, h) == drops
	})
}

func sessionText(i int) string {
	return strings.Repeat(fmt.Sprintf("Session %d reads handler_%d.go and the tests beside it. ", i, i), 160)
}

// oneSessionState is what one session's state weighs, held by an engine
// with no bound: the budget tests size theirs in sessions.
func oneSessionState(t *testing.T) int64 {
	t.Helper()
	probe := newHarness(t)
	newStateSession(t, probe, sessionText(9))
	held(t, probe, 1, "0")
	one, _ := probe.sh.States.Size()
	return one
}

// TestStateBudgetDropsOldestIdleAndClientsRecover holds the connection
// state to about two sessions' worth: a third session's state drops the
// oldest idle one, a continuation moves its session to the front, the
// dropped sessions' continuations get previous_response_not_found (and
// their load span says why, for the inspector), and a client that resends
// its full context recovers on the same socket.
func TestStateBudgetDropsOldestIdleAndClientsRecover(t *testing.T) {
	t.Parallel()
	one := oneSessionState(t)

	traces := newTraceLog()
	h := newHarness(t, func(c *enginetest.Config) { c.StateBytes = one * 5 / 2; c.Observer = traces })
	// Each step waits for the engine to keep the response's state, which
	// it does just after the terminal event.
	a := newStateSession(t, h, sessionText(1))
	held(t, h, 1, "0")
	b := newStateSession(t, h, sessionText(2))
	held(t, h, 2, "0")
	c := newStateSession(t, h, sessionText(3)) // drops a's
	held(t, h, 2, "1")
	r, aerr := b.next(t) // b is used: c becomes the oldest idle
	if aerr != nil {
		t.Fatalf("b's continuation: %v", aerr)
	}
	wait.Until(t, "b's continuation served by the connection cache", func() bool { return loadNote(traces, r.ID) == "connection cache" })
	held(t, h, 2, "1")
	d := newStateSession(t, h, sessionText(4)) // drops c's, not b's
	held(t, h, 2, "2")
	for _, s := range []*stateSession{b, d} {
		r, aerr := s.next(t)
		if aerr != nil {
			t.Fatalf("a session kept continues: %v", aerr)
		}
		wait.Until(t, "a kept session served by the connection cache", func() bool { return loadNote(traces, r.ID) == "connection cache" })
	}
	for _, s := range []*stateSession{c, a} {
		_, aerr := s.next(t)
		if aerr == nil || aerr.Code != api.CodePreviousResponseNotFound || aerr.Status != 400 {
			t.Fatalf("a dropped session's continuation: %+v, want previous_response_not_found", aerr)
		}
		r, aerr := s.resend(t)
		if aerr != nil || r.Status != "completed" {
			t.Fatalf("recovery with the full context: %v", aerr)
		}
	}
	// Each dropped state's continuation says so on its load span.
	droppedTraces := func() (n int) {
		traces.mu.Lock()
		defer traces.mu.Unlock()
		for _, tr := range traces.traces {
			if sp, ok := tr.Span(api.StageLoad); ok && strings.HasPrefix(sp.Note, core.NoteStateDropped) && tr.Error == api.CodePreviousResponseNotFound {
				n++
			}
		}
		return n
	}
	wait.Until(t, "two traces of dropped states", func() bool { return droppedTraces() == 2 })
	if bytes, _ := h.sh.States.Size(); bytes > one*5/2 {
		t.Fatalf("state %d bytes over the budget %d", bytes, one*5/2)
	}
}

// TestStateBudgetReleasesClosedConnections: a connection's state leaves
// the budget when the connection closes.
func TestStateBudgetReleasesClosedConnections(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	s := newStateSession(t, h, sessionText(1))
	held(t, h, 1, "0")
	s.c.Close(websocket.StatusNormalClosure, "")
	wait.Until(t, "no state held", func() bool { b, n := h.sh.States.Size(); return n == 0 && b == 0 })
}

// TestStateBudgetNeverDropsAResponseInFlight: a continuation takes its
// parent out of the budget while it runs, so other sessions filling the
// budget drop each other's idle state, never the one in flight, whose
// response then becomes its session's state and continues from the cache.
func TestStateBudgetNeverDropsAResponseInFlight(t *testing.T) {
	t.Parallel()
	one := oneSessionState(t)

	// a's continuation is held in flight, after its output and before its
	// terminal event, until the other sessions have filled the budget:
	// the test waits for states, not for a stream to be slow enough.
	var inFlight atomic.Pointer[string] // the parent a's continuation names
	release := make(chan struct{})
	releaseOnce := sync.OnceFunc(func() { close(release) })
	traces := newTraceLog()
	h := newHarness(t, func(c *enginetest.Config) {
		c.StateBytes, c.Observer = one*3/2, traces
		c.BeforeServing = func(es server.Engines) {
			es.V1.OnFinished(func(fl *core.Flight) {
				if p := inFlight.Load(); p != nil && fl.Request() != nil && fl.Request().PreviousResponseID == *p {
					<-release
				}
			})
		}
	})
	t.Cleanup(releaseOnce) // a failed test still lets the engine stop
	a := newStateSession(t, h, sessionText(1))
	held(t, h, 1, "0")
	parent := a.prev
	inFlight.Store(&parent)
	body, _ := json.Marshal(map[string]any{"type": "response.create", "model": "instant", "store": false,
		"previous_response_id": a.prev, "input": []json.RawMessage{userItem("Explain the tests at length.")},
		"instructions": "You are a careful coding agent.", "max_output_tokens": 8, "ignore_eos": true})
	send(t, a.c, string(body))
	for ev := readEvent(t, a.c); ev.Type != "response.output_text.delta"; ev = readEvent(t, a.c) {
		if e := ev.AsError(); e != nil || api.IsTerminal(ev.Type) {
			t.Fatalf("a's continuation ended before streaming: %+v", ev)
		}
	}
	newStateSession(t, h, sessionText(2))
	held(t, h, 1, "0")
	newStateSession(t, h, sessionText(3)) // drops b's, the only idle one
	held(t, h, 1, "1")
	releaseOnce()
	var done *api.Event
	for done = readEvent(t, a.c); !api.IsTerminal(done.Type); done = readEvent(t, a.c) {
	}
	if done.Response.Status != "completed" {
		t.Fatalf("the response in flight ended %s", done.Response.Status)
	}
	a.prev = done.Response.ID
	held(t, h, 1, "2") // a's new state drops c's
	r, aerr := a.next(t)
	if aerr != nil {
		t.Fatalf("the session that was in flight: %v", aerr)
	}
	wait.Until(t, "a's next continuation served by the connection cache", func() bool { return loadNote(traces, r.ID) == "connection cache" })
}
