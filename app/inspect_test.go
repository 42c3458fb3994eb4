package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"agentloop/api"
	"agentloop/app"
	"agentloop/app/apptest"
	"agentloop/inspect"
	"agentloop/internal/wait"
	"agentloop/store/sqlite"

	"github.com/coder/websocket"
)

type countingObserver struct{ n atomic.Int64 }

func (o *countingObserver) ObserveTrace(*api.Trace) { o.n.Add(1) }

// wsTurn sends one response.create and reads to its terminal event.
func wsTurn(t *testing.T, c *websocket.Conn, body string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Write(ctx, websocket.MessageText, []byte(body)); err != nil {
		t.Fatal(err)
	}
	for {
		_, b, err := c.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		ev, _ := api.DecodeEvent(b)
		if ev != nil && ev.Type == api.EventCompleted {
			return ev.Response.ID
		}
	}
}

// TestTheInspectorSeesEveryClientSession drives a WebSocket client and an
// HTTP client through the whole app, then reads their sessions from the
// inspector's API and, after a restart, from the store.
func TestTheInspectorSeesEveryClientSession(t *testing.T) {
	db := filepath.Join(t.TempDir(), "agentloop.db")
	also := &countingObserver{}
	a := apptest.Start(t, apptest.DB(db), func(c *app.Config) { c.Observer = also })

	c, _, err := websocket.Dial(context.Background(), "ws"+a.URL()[len("http"):]+"/v1/responses",
		&websocket.DialOptions{HTTPHeader: map[string][]string{"User-Agent": {"ws-client/2"}, "Originator": {"codex_exec"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	first := wsTurn(t, c, `{"type":"response.create","model":"instant","store":false,"input":"hello"}`)
	wsTurn(t, c, `{"type":"response.create","model":"instant","store":false,"previous_response_id":"`+first+`","input":"again"}`)

	// An HTTP client chains its second turn on the first: a continuation
	// the WebSocket estimate replays.
	key := map[string]string{"Content-Type": "application/json", "User-Agent": "http-client/1"}
	_, body := do(t, "POST", a.URL()+"/v1/responses", `{"model":"instant","prompt_cache_key":"inspect-test","input":"hello"}`, key)
	var resp struct{ ID string }
	if err := json.Unmarshal([]byte(body), &resp); err != nil || resp.ID == "" {
		t.Fatalf("first HTTP turn: %s (%v)", body, err)
	}
	do(t, "POST", a.URL()+"/v1/responses", `{"model":"instant","prompt_cache_key":"inspect-test","previous_response_id":"`+resp.ID+`","input":"hello again"}`, key)
	do(t, "POST", a.URL()+"/v1/responses", `{"model":"instant","prompt_cache_key":"inspect-test","input":[{"type":"function_call_output","call_id":"call_none","output":"x"}]}`, key)

	// The inspector records asynchronously: wait for the state.
	var wsSess, httpSess inspect.Session
	wait.UntilErr(t, "the sessions to show every turn", func() error {
		_, body := do(t, "GET", a.URL()+"/api/sessions", "", nil)
		var list struct{ Data []inspect.Session }
		if err := json.Unmarshal([]byte(body), &list); err != nil {
			t.Fatalf("%s: %v", body, err)
		}
		for _, s := range list.Data {
			switch s.Key {
			case "http:key:inspect-test":
				httpSess = s
			default:
				if s.Transport == inspect.TransportWebSocket {
					wsSess = s
				}
			}
		}
		if wsSess.Summary.Turns == 2 && httpSess.Summary.Turns == 3 {
			return nil
		}
		return fmt.Errorf("sessions: %s", body)
	})
	if wsSess.Client.UserAgent != "ws-client/2" || wsSess.Client.Originator != "codex_exec" || wsSess.Summary.CacheHits == 0 ||
		wsSess.Summary.OutputTokens == 0 || wsSess.Summary.Estimate != nil {
		t.Fatalf("WebSocket session %+v", wsSess)
	}
	if httpSess.Transport != inspect.TransportHTTP || httpSess.Client.UserAgent != "http-client/1" || httpSess.Summary.Errors != 1 ||
		httpSess.Summary.Estimate == nil || httpSess.Summary.Estimate.Continuations != 1 || httpSess.Summary.OverheadNS <= 0 {
		t.Fatalf("HTTP session %+v", httpSess)
	}
	if n := also.n.Load(); n < 5 {
		t.Fatalf("Config.Observer saw %d requests, want 5", n)
	}

	c.Close(websocket.StatusNormalClosure, "")
	// Shutdown writes the last batch before the store closes.
	if err := a.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	st, err := sqlite.Open(context.Background(), db, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for _, want := range []inspect.Session{wsSess, httpSess} {
		s, turns, err := st.LoadInspectSession(context.Background(), want.ID)
		if err != nil || s.Turns != want.Summary.Turns || len(turns) != want.Summary.Turns {
			t.Fatalf("stored %s: %+v, %d turns (%v)", want.Key, s, len(turns), err)
		}
	}
}

func (*countingObserver) ObserveOpen(string)  {}
func (*countingObserver) ObserveClose(string) {}

// sessionsByKey reads /api/sessions, by session key.
func sessionsByKey(t *testing.T, a *app.App) map[string]inspect.Session {
	t.Helper()
	_, body := do(t, "GET", a.URL()+"/api/sessions", "", nil)
	var list struct{ Data []inspect.Session }
	if err := json.Unmarshal([]byte(body), &list); err != nil {
		t.Fatalf("%s: %v", body, err)
	}
	out := map[string]inspect.Session{}
	for _, s := range list.Data {
		out[s.Key] = s
	}
	return out
}

// waitSession polls /api/sessions until a session matches: a state,
// never a moment.
func waitSession(t *testing.T, a *app.App, what string, ok func(map[string]inspect.Session) bool) map[string]inspect.Session {
	t.Helper()
	var got map[string]inspect.Session
	wait.UntilErr(t, what, func() error {
		if got = sessionsByKey(t, a); ok(got) {
			return nil
		}
		return fmt.Errorf("sessions %+v", got)
	})
	return got
}

// On /inspect, live means a connection still open or a turn in flight, as
// the engine reports them: not "a turn arrived in the last minute". And a
// request dropped while it waited in a modelled stage records the time it
// really waited, so its session's update time is never in the future.
func TestInspectLiveIsTrueAndADroppedWaitRecordsItsRealTime(t *testing.T) {
	a := apptest.Start(t, apptest.DB(filepath.Join(t.TempDir(), "agentloop.db")))
	c, _, err := websocket.Dial(context.Background(), "ws"+a.URL()[len("http"):]+"/v1/responses", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	wsTurn(t, c, `{"type":"response.create","model":"instant","store":false,"input":"hello"}`)
	do(t, "POST", a.URL()+"/v1/responses", `{"model":"instant","store":false,"prompt_cache_key":"done","input":"hello"}`,
		map[string]string{"Content-Type": "application/json"})

	var wsKey string
	waitSession(t, a, "the open connection live, the finished HTTP turn not", func(m map[string]inspect.Session) bool {
		for k, s := range m {
			if s.Transport == inspect.TransportWebSocket && s.Live {
				wsKey = k
			}
		}
		h, ok := m["http:key:done"]
		return wsKey != "" && ok && !h.Live
	})
	c.Close(websocket.StatusNormalClosure, "")
	waitSession(t, a, "the closed connection not live", func(m map[string]inspect.Session) bool { return !m[wsKey].Live })

	// A session's turn waits in stack_classify (10 s of hop alone): the
	// session is live while it does; then its client goes away.
	do(t, "POST", a.URL()+"/v1/responses", `{"model":"instant","store":false,"prompt_cache_key":"dropped","input":"hello"}`,
		map[string]string{"Content-Type": "application/json"})
	waitSession(t, a, "the first turn recorded, not live", func(m map[string]inspect.Session) bool {
		s, ok := m["http:key:dropped"]
		return ok && s.Summary.Turns == 1 && !s.Live
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dropped := make(chan error, 1)
	go func() {
		req, _ := http.NewRequestWithContext(ctx, "POST", a.URL()+"/v1/responses",
			strings.NewReader(`{"model":"instant","store":false,"prompt_cache_key":"dropped","input":"Read main.go and say what it does."}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set(api.HeaderStack, `{"preset":"hosted","hop_ms":10000,"config_hops":0}`)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		dropped <- err
	}()
	wait.Until(t, "the request to wait in stack_classify", func() bool {
		_, m := do(t, "GET", a.URL()+"/metrics", "", nil)
		return strings.Contains(m, `stage="stack_classify"} 1`)
	})
	waitSession(t, a, "the session live while its turn is in flight", func(m map[string]inspect.Session) bool { return m["http:key:dropped"].Live })
	cancel()
	<-dropped
	got := waitSession(t, a, "the dropped request recorded", func(m map[string]inspect.Session) bool { return m["http:key:dropped"].Summary.Turns == 2 })
	s := got["http:key:dropped"]
	if s.Summary.StackNS >= (10 * time.Second).Nanoseconds() {
		t.Errorf("the dropped request recorded %v of modelled stack, the full cost it never waited", time.Duration(s.Summary.StackNS))
	}
	if now := time.Now().UnixNano(); s.UpdatedUnixNS > now {
		t.Errorf("the dropped request's session is updated %v in the future", time.Duration(s.UpdatedUnixNS-now))
	}
	if s.Live {
		t.Error("the dropped request's session is live: no connection is open and no turn in flight")
	}
}
