package server_test

import (
	"net/http"
	"strings"
	"sync"
	"testing"

	"agentloop/api"
	"agentloop/internal/wait"
	"agentloop/server/enginetest"
	"agentloop/server/request"

	"github.com/coder/websocket"
)

// traceLog is an Observer that keeps what it sees.
type traceLog struct {
	mu     sync.Mutex
	traces []api.Trace
	seen   chan struct{}
	open   map[string]int // connections open and turns in flight, per session
}

func newTraceLog() *traceLog { return &traceLog{seen: make(chan struct{}, 64), open: map[string]int{}} }

func (l *traceLog) ObserveOpen(key string) {
	l.mu.Lock()
	l.open[key]++
	l.mu.Unlock()
}

func (l *traceLog) ObserveClose(key string) {
	l.mu.Lock()
	l.open[key]--
	l.mu.Unlock()
}

// opened is the session's count of open connections and turns in flight.
func (l *traceLog) opened(key string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.open[key]
}

func (l *traceLog) ObserveTrace(t *api.Trace) {
	l.mu.Lock()
	l.traces = append(l.traces, *t)
	l.mu.Unlock()
	l.seen <- struct{}{}
}

// wait blocks until n traces have been observed in all, and returns them.
func (l *traceLog) wait(t *testing.T, n int) []api.Trace {
	t.Helper()
	for {
		l.mu.Lock()
		if len(l.traces) >= n {
			out := append([]api.Trace(nil), l.traces...)
			l.mu.Unlock()
			return out
		}
		l.mu.Unlock()
		<-l.seen
	}
}

func observed(l *traceLog) func(*enginetest.Config) {
	return func(c *enginetest.Config) { c.Observer = l }
}

func TestSessionsGroupHTTPByCacheKeyAndWebSocketByConnection(t *testing.T) {
	t.Parallel()
	log := newTraceLog()
	h := newHarness(t, observed(log))
	post := func(body string, hdr map[string]string) int {
		req, _ := http.NewRequest(http.MethodPost, h.url+"/v1/responses", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	codex := map[string]string{"User-Agent": "codex_exec/0.171.0", "Originator": "codex_exec"}
	post(`{"model":"instant","input":"one","prompt_cache_key":"agent-7"}`, codex)
	post(`{"model":"instant","input":"two","prompt_cache_key":"agent-7"}`, codex)
	if code := post(`{"model":"instant","input":[{"type":"nonsense"}],"prompt_cache_key":"agent-7"}`, codex); code != 400 {
		t.Fatalf("bad item: status %d", code)
	}
	ws := h.rawWSWith("/v1/responses", http.Header{"OpenAI-Beta": {"responses_websockets=2026-02-06"}})
	send(t, ws, `{"type":"response.create","model":"instant","input":"three","store":false}`)
	readResponse(t, ws)
	send(t, ws, `{"type":"response.create","model":"instant","input":"four","store":false}`)
	readResponse(t, ws)

	got := log.wait(t, 5)
	http1, http2, rejected, ws1, ws2 := got[0], got[1], got[2], got[3], got[4]
	if http1.Session != "http:key:agent-7" || http2.Session != http1.Session || rejected.Session != http1.Session {
		t.Errorf("HTTP sessions %q %q %q, want all http:key:agent-7", http1.Session, http2.Session, rejected.Session)
	}
	if http1.Client == nil || http1.Client.Originator != "codex_exec" || http1.Client.UserAgent != "codex_exec/0.171.0" {
		t.Errorf("client %+v", http1.Client)
	}
	if http1.Error != "" || rejected.Error == "" || rejected.Status != 400 {
		t.Errorf("errors: ok %q/%d, rejected %q/%d", http1.Error, http1.Status, rejected.Error, rejected.Status)
	}
	if !request.IsWebSocketSession(ws1.Session) || ws2.Session != ws1.Session || ws1.Transport != "websocket" {
		t.Errorf("WebSocket sessions %q %q (%s)", ws1.Session, ws2.Session, ws1.Transport)
	}
	if ws1.Client == nil || ws1.Client.Beta != "responses_websockets=2026-02-06" {
		t.Errorf("WebSocket client %+v", ws1.Client)
	}
	if http1.Replica == "" || ws1.Replica != http1.Replica {
		t.Errorf("replica ids %q %q, want this process's", http1.Replica, ws1.Replica)
	}
	if len(http1.Spans) == 0 || http1.ResponseID == "" {
		t.Errorf("an observed trace carries its spans and response id: %+v", http1)
	}

	// The engine reports what keeps a session live: the connection is open
	// until it closes; each HTTP turn was reported open and closed again.
	if n := log.opened(ws1.Session); n != 1 {
		t.Errorf("the open connection is reported open %d times, want 1", n)
	}
	if n := log.opened(http1.Session); n != 0 {
		t.Errorf("the finished HTTP turns are still reported open %d times", n)
	}
	ws.Close(websocket.StatusNormalClosure, "")
	wait.Until(t, "the closed connection reported closed", func() bool { return log.opened(ws1.Session) == 0 })
}
