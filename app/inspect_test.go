package app_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"agentloop/api"
	"agentloop/app"
	"agentloop/app/apptest"
	"agentloop/inspect"
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
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
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
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("sessions never showed every turn: %s", body)
		}
	}
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
