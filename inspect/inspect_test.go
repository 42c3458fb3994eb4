package inspect

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"agentloop/api"
	"agentloop/apistack"
	"agentloop/internal/wait"
	"agentloop/store"
	"agentloop/store/sqlite"
)

var t0 = time.Unix(1_700_000_000, 0).UnixNano() // in the past: the inspector orders by real times

// span is a span of d nanoseconds.
func span(name string, d int64, items, tokens, bytes int64, note string) api.Span {
	kind := api.Measured
	if api.IsStackStage(name) || name == api.StageQueue || name == api.StagePrefill || name == api.StageGenerate {
		kind = api.Modelled
	}
	return api.Span{Name: name, DurationNS: d, Kind: kind, Items: items, Tokens: tokens, Bytes: bytes, Note: note}
}

// laidOut sets each span's start where the one before it ended.
func laidOut(spans ...api.Span) []api.Span {
	var at int64
	for i := range spans {
		spans[i].StartNS = at
		at += spans[i].DurationNS
	}
	return spans
}

func trace(session, transport string, at int64, spans ...api.Span) *api.Trace {
	return &api.Trace{ResponseID: api.NewID("resp"), Transport: transport, Engine: "v1", StartedUnixNS: t0 + at,
		Session: session, Spans: laidOut(spans...), Usage: &api.Usage{InputTokens: 100, OutputTokens: 10}}
}

// closed records traces and returns the inspector once it has recorded
// them all (Close drains the queue).
func closed(t *testing.T, st Store, traces ...*api.Trace) *Inspector {
	t.Helper()
	in := New(st, nil, Options{})
	for _, tr := range traces {
		in.ObserveTrace(tr)
	}
	in.Close(context.Background())
	return in
}

func TestTracesGroupIntoSessionsByKey(t *testing.T) {
	codex := &api.Client{UserAgent: "codex_exec/0.1", Originator: "codex_exec", Beta: "responses_websockets=2026-02-06"}
	ws := func(at int64) *api.Trace {
		tr := trace("ws:conn_a", TransportWebSocket, at, span(api.StageParse, 10, 1, 0, 100, ""))
		tr.Client = codex
		return tr
	}
	rejected := trace("http:key:chat-1", TransportHTTP, 5, span(api.StageParse, 10, 0, 0, 7, ""))
	rejected.Error, rejected.Status, rejected.Usage, rejected.ResponseID = "invalid_json", 400, nil, ""
	drilled := trace("http:key:chat-1", TransportHTTP, 6, span(api.StageParse, 10, 1, 0, 50, ""))
	drilled.Drill = "http-503"
	in := closed(t, nil, ws(1), ws(2), trace("http:key:chat-1", TransportHTTP, 3, span(api.StageParse, 10, 1, 0, 50, "")),
		ws(4), rejected, drilled, trace("http:conn:127.0.0.1:5000", TransportHTTP, 100))
	in.ObserveOpen("ws:conn_a") // its connection is still open

	got, seq := in.Since(0)
	if seq != 7 || len(got) != 3 {
		t.Fatalf("%d sessions at sequence %d, want 3 at 7: %+v", len(got), seq, got)
	}
	byKey := map[string]Session{}
	for _, s := range got {
		byKey[s.Key] = s
	}
	w := byKey["ws:conn_a"]
	if w.Transport != TransportWebSocket || w.Summary.Turns != 3 || w.Client != *codex || w.Summary.Estimate != nil || !w.Live {
		t.Fatalf("WebSocket session = %+v", w)
	}
	h := byKey["http:key:chat-1"]
	if h.Transport != TransportHTTP || h.Summary.Turns != 3 || h.Summary.Errors != 1 || h.Summary.Drills != 1 || h.Summary.Estimate == nil || h.Live {
		t.Fatalf("HTTP session = %+v", h)
	}
	if h.Summary.BytesIn != 107 || h.Summary.InputTokens != 200 || h.Summary.OutputTokens != 20 {
		t.Fatalf("HTTP session counts = %+v", h.Summary)
	}
	if got[0].Key != "http:conn:127.0.0.1:5000" || got[0].Version != 7 {
		t.Fatalf("the most recent session is not first: %+v", got[0])
	}
	// Since a sequence returns only what changed after it.
	if later, _ := in.Since(6); len(later) != 1 || later[0].Key != "http:conn:127.0.0.1:5000" {
		t.Fatalf("since 6: %+v", later)
	}
	detail, ok := in.Tail(h.ID, 1)
	if !ok || len(detail.Turns) != 2 || detail.Turns[0].Index != 1 || detail.Turns[0].Error != "invalid_json" ||
		detail.Turns[0].Status != 400 || detail.Turns[1].Drill != "http-503" {
		t.Fatalf("tail from 1 = %+v", detail.Turns)
	}
}

func TestAFullQueueDropsAndCounts(t *testing.T) {
	in := newInspector(nil, nil, Options{Queue: 2})
	for i := range 5 {
		in.ObserveTrace(trace("ws:conn_a", TransportWebSocket, int64(i))) // returns at once: nothing reads yet
	}
	if in.Dropped() != 3 {
		t.Fatalf("dropped %d, want 3", in.Dropped())
	}
	go in.run()
	in.Close(context.Background())
	if got, _ := in.Since(0); len(got) != 1 || got[0].Summary.Turns != 2 {
		t.Fatalf("recorded %+v, want one session of 2 turns", got)
	}
}

func TestMemoryKeepsTheLatestSessionsAndTurns(t *testing.T) {
	in := New(nil, nil, Options{Sessions: 2, Turns: 3})
	for i, key := range []string{"ws:a", "ws:b", "ws:a", "ws:c", "ws:a", "ws:a", "ws:a"} {
		in.ObserveTrace(trace(key, TransportWebSocket, int64(i)))
	}
	in.Close(context.Background())
	got, _ := in.Since(0)
	if len(got) != 2 || got[0].Key != "ws:a" || got[1].Key != "ws:c" {
		t.Fatalf("kept %+v, want ws:a and ws:c (ws:b was the least recently active)", got)
	}
	a, _ := in.Tail(got[0].ID, 0)
	if a.Summary.Turns != 5 || len(a.Turns) != 3 || a.TurnsOmitted != 2 || a.Turns[0].Index != 2 {
		t.Fatalf("ws:a keeps %d turns from %d, omitted %d, summary %d", len(a.Turns), a.Turns[0].Index, a.TurnsOmitted, a.Summary.Turns)
	}
}

func TestCacheLookupsComeFromSpanNotesAndUsage(t *testing.T) {
	hit := trace("ws:a", TransportWebSocket, 0,
		span(api.StageResolve, 1, 0, 0, 0, "connection cache"),
		span(api.StageLoad, 1, 0, 0, 0, "connection cache"),
		span(api.StageRender, 1, 1, 20, 0, "appended to cached tokens; 1 token cache hits"))
	hit.Usage.InputTokensDetails.CachedTokens = 64
	miss := trace("http:key:k", TransportHTTP, 0,
		span(api.StageResolve, 1, 0, 0, 0, ""),
		span(api.StageLoad, 1, 3, 0, 900, "store"),
		span(api.StageRender, 1, 3, 120, 0, "2 token cache hits"))
	// A continuation whose state the engine's budget dropped: it fails in
	// load with previous_response_not_found.
	dropped := trace("ws:b", TransportWebSocket, 0,
		span(api.StageResolve, 1, 0, 0, 0, ""),
		span(api.StageLoad, 1, 0, 0, 0, "connection state dropped by the state budget"))
	dropped.Usage = nil
	for _, c := range []struct {
		tr           *api.Trace
		hits, misses int
		want         []CacheLookup
	}{
		{hit, 4, 0, []CacheLookup{{"model", true, "connection cache"}, {"state", true, "connection cache"},
			{"tokens", true, "appended to the connection's tokens"}, {"prefix", true, "64 of 100 input tokens cached"}}},
		{miss, 1, 3, []CacheLookup{{"model", false, "resolved anew"}, {"state", false, "loaded from the store"},
			{"tokens", true, "2 of 3 items from the token cache"}, {"prefix", false, "0 of 100 input tokens cached"}}},
		{dropped, 0, 2, []CacheLookup{{"model", false, "resolved anew"}, {"state", false, "dropped by the engine's state budget (--state-bytes)"}}},
	} {
		tu := turnOf(c.tr, 0)
		if len(tu.Cache) != len(c.want) {
			t.Fatalf("%s: lookups %+v, want %+v", c.tr.Session, tu.Cache, c.want)
		}
		for i := range c.want {
			if tu.Cache[i] != c.want[i] {
				t.Fatalf("%s: lookup %d = %+v, want %+v", c.tr.Session, i, tu.Cache[i], c.want[i])
			}
		}
		if s := Summarize([]Turn{tu}, false); s.CacheHits != c.hits || s.CacheMisses != c.misses {
			t.Fatalf("%s: %d hits, %d misses; want %d, %d", c.tr.Session, s.CacheHits, s.CacheMisses, c.hits, c.misses)
		}
		if s := Summarize([]Turn{tu}, false); (s.StateDrops == 1) != (c.tr == dropped) {
			t.Fatalf("%s: %d state drops", c.tr.Session, s.StateDrops)
		}
	}
}

// httpTurn is a stateless HTTP turn over a context of items items and
// tokens tokens that answered with one item of 20 tokens, under the
// hosted stack.
func httpTurn(at, items, tokens int64) *api.Trace {
	tr := trace("http:key:k", TransportHTTP, at,
		span(api.StageParse, 400*items, items, 0, 100*items, ""),
		span(api.StageResolve, 100, 0, 0, 0, "config cache"),
		span(api.StageStackConfigHop, 2_650_000, 0, 0, 0, ""),
		span(api.StageLoad, 50, 0, 0, 0, ""),
		span(api.StageValidate, 100*items, items, 0, 0, ""),
		span(api.StageRender, 10*tokens, items, tokens, 0, ""),
		span(api.StageSafety, 200*items, items, 0, 0, ""),
		span(api.StageStackClassify, apistack.Hosted.Classify(int(tokens), false).Nanoseconds(), 0, tokens, 0, ""),
		span(api.StagePrefill, 1_000_000, 0, tokens, 0, ""),
		span(api.StageGenerate, 5_000_000, 0, 20, 0, ""),
		span(api.StageFinalize, 300, 1, 20, 500, ""),
		span(api.StageStackBilling, 2_650_000, 0, 0, 0, ""))
	tr.Stack = "hosted"
	return tr
}

func TestTheWebSocketEstimateOfAnHTTPSession(t *testing.T) {
	// A WebSocket continuation seen earlier sets what resolve and load
	// cost on a connection-cache hit.
	ws := trace("ws:a", TransportWebSocket, 0,
		span(api.StageResolve, 10, 0, 0, 0, "connection cache"),
		span(api.StageLoad, 20, 0, 0, 0, "connection cache"))
	first := httpTurn(1, 2, 100)
	second := httpTurn(2, 4, 150)    // 2 items + 1 output carried, 1 new; 100 + 20 tokens carried, 30 new
	restarted := httpTurn(3, 1, 500) // a new conversation under the same key
	in := closed(t, nil, ws, first, second, restarted)
	var h Session
	for _, s := range mustSince(in) {
		if s.Transport == TransportHTTP {
			h, _ = in.Tail(s.ID, 0)
		}
	}
	if len(h.Turns) != 3 {
		t.Fatalf("HTTP session has %d turns", len(h.Turns))
	}
	e0, e1, e2 := h.Turns[0].Estimate, h.Turns[1].Estimate, h.Turns[2].Estimate
	if e0.Continuation || e0.OverheadNS != h.Turns[0].OverheadNS || e0.StackNS != h.Turns[0].StackNS {
		t.Fatalf("first turn estimate %+v: a WebSocket does the same work on a first turn", e0)
	}
	if e2.Continuation {
		t.Fatalf("a turn whose context shrank was estimated as a continuation: %+v", e2)
	}
	if !e1.Continuation || e1.NewItems != 1 || e1.NewTokens != 30 || e1.WSSamples != 1 {
		t.Fatalf("second turn estimate %+v, want 1 new item, 30 new tokens, 1 sample", e1)
	}
	// parse 1600·¼ + resolve 10 + load 20 + validate 400·¼ + render 1500·30/150
	// + safety 800·¼ + finalize 300.
	if want := int64(400 + 10 + 20 + 100 + 300 + 200 + 300); e1.OverheadNS != want {
		t.Fatalf("estimated overhead %d, want %d", e1.OverheadNS, want)
	}
	// The classifier for 30 tokens, no config hop, billing as it was.
	if want := apistack.Hosted.Classify(30, false).Nanoseconds() + 2_650_000; e1.StackNS != want {
		t.Fatalf("estimated stack %d, want %d", e1.StackNS, want)
	}
	sum := h.Summary.Estimate
	actual := h.Summary.OverheadNS + h.Summary.StackNS
	if sum == nil || sum.Label != "estimate" || sum.Method != EstimateMethod || sum.Continuations != 1 ||
		sum.OverheadNS+sum.StackNS+sum.SavedNS != actual || sum.SavedNS <= 0 {
		t.Fatalf("summary estimate %+v against actual %d", sum, actual)
	}
}

func mustSince(in *Inspector) []Session {
	s, _ := in.Since(0)
	return s
}

func TestSessionsPersistAndReadBack(t *testing.T) {
	ctx := context.Background()
	db, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "agentloop.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	in := closed(t, db, httpTurn(1, 2, 100), httpTurn(2, 4, 150), trace("ws:a", TransportWebSocket, 3))
	live, _ := in.Since(0)

	// A new inspector (a restart) finds them in the store.
	again := New(db, nil, Options{})
	defer again.Close(ctx)
	listed, err := again.Sessions(ctx, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(listed) != 2 || listed[0].ID != live[0].ID || listed[1].ID != live[1].ID || listed[0].Live {
		t.Fatalf("listed %+v, want %+v, not live", listed, live)
	}
	for _, want := range live {
		got, err := again.Session(ctx, want.ID)
		if err != nil {
			t.Fatal(err)
		}
		mem, _ := in.Tail(want.ID, 0)
		if len(got.Turns) != len(mem.Turns) || got.Summary.OverheadNS != mem.Summary.OverheadNS ||
			got.Summary.Turns != mem.Summary.Turns || (got.Summary.Estimate == nil) != (mem.Summary.Estimate == nil) {
			t.Fatalf("stored %+v, recorded %+v", got, mem)
		}
		if got.Summary.Estimate != nil && *got.Summary.Estimate != *mem.Summary.Estimate {
			t.Fatalf("stored estimate %+v, recorded %+v", got.Summary.Estimate, mem.Summary.Estimate)
		}
	}
	if _, err := again.Session(ctx, "sess_none"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("missing session: %v", err)
	}
}

// TestALongSessionIsReadFromTheStore records more turns than memory keeps
// and than one transaction writes: the detail then comes from the store,
// whole.
func TestALongSessionIsReadFromTheStore(t *testing.T) {
	ctx := context.Background()
	db, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "agentloop.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	n := turnsPerTx*2 + 10
	traces := make([]*api.Trace, n)
	for i := range traces {
		traces[i] = trace("ws:long", TransportWebSocket, int64(i), span(api.StageParse, 10, 1, 0, 100, ""))
	}
	in := New(db, nil, Options{Queue: n, Turns: 50})
	for _, tr := range traces {
		in.ObserveTrace(tr)
	}
	in.Close(ctx)
	if in.Dropped() != 0 || in.Unsaved() != 0 {
		t.Fatalf("dropped %d, unsaved %d", in.Dropped(), in.Unsaved())
	}
	live, _ := in.Since(0)
	mem, _ := in.Tail(live[0].ID, 0)
	if len(mem.Turns) != 50 || mem.TurnsOmitted != n-50 {
		t.Fatalf("memory holds %d turns, omits %d", len(mem.Turns), mem.TurnsOmitted)
	}
	got, err := in.Session(ctx, live[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Turns) != n || got.TurnsOmitted != 0 || got.Summary.Turns != n || got.Turns[n-1].Index != n-1 || got.Version != mem.Version {
		t.Fatalf("read back %d turns (omitted %d, summary %d, version %d)", len(got.Turns), got.TurnsOmitted, got.Summary.Turns, got.Version)
	}
}

// TestAStoreFarBehindMissesTurnsNotTheEngine: beyond Options.Pending
// turns waiting for a flush, turns stay in memory only, counted.
func TestAStoreFarBehindMissesTurnsNotTheEngine(t *testing.T) {
	ctx := context.Background()
	db, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "agentloop.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	const pending = 32
	n := pending + 8
	in := newInspector(db, nil, Options{Queue: n, FlushEvery: time.Hour, Pending: pending})
	for i := range n {
		in.ObserveTrace(trace("ws:busy", TransportWebSocket, int64(i)))
	}
	go in.run()
	in.Close(ctx) // one flush, after every trace is recorded
	if in.Dropped() != 0 || in.Unsaved() != 8 {
		t.Fatalf("dropped %d, unsaved %d; want 0 and 8", in.Dropped(), in.Unsaved())
	}
	live, _ := in.Since(0)
	_, turns, err := db.LoadInspectSession(ctx, live[0].ID)
	if err != nil || len(turns) != pending || live[0].Summary.Turns != n {
		t.Fatalf("stored %d turns (%v), recorded %d", len(turns), err, live[0].Summary.Turns)
	}
}

// Live means a connection open or a turn in flight, as the engine reports
// them; not a recent turn. Closing gives the session a new version, so the
// live feeds send it again.
func TestLiveMeansAConnectionOpenOrATurnInFlight(t *testing.T) {
	in := New(nil, nil, Options{})
	defer in.Close(context.Background())
	in.ObserveOpen("ws:conn_a")
	in.ObserveOpen("ws:conn_a") // a second report of the same key counts too
	in.ObserveTrace(trace("ws:conn_a", TransportWebSocket, 1))
	in.ObserveTrace(trace("http:key:k", TransportHTTP, 2))
	var ws, http Session
	wait.Until(t, "both sessions recorded", func() bool {
		got, _ := in.Since(0)
		for _, s := range got {
			switch s.Key {
			case "ws:conn_a":
				ws = s
			case "http:key:k":
				http = s
			}
		}
		return len(got) == 2
	})
	if !ws.Live || http.Live {
		t.Fatalf("open connection live %v (want true), finished HTTP turn live %v (want false)", ws.Live, http.Live)
	}
	in.ObserveClose("ws:conn_a")
	if s, _ := in.Tail(ws.ID, 0); !s.Live {
		t.Fatal("one of two reports closed: still live")
	}
	in.ObserveClose("ws:conn_a")
	if s, _ := in.Tail(ws.ID, 0); s.Live {
		t.Fatal("closed: still live")
	}
	wait.Until(t, "the closed connection published not live", func() bool {
		later, _ := in.Since(ws.Version)
		for _, s := range later {
			if s.Key == "ws:conn_a" && !s.Live {
				return true
			}
		}
		return false
	})
}

// A turn whose spans claim to end in the future (a modelled wait that was
// never made) never moves its session past the time it was recorded.
func TestSessionsOrderByRealTimes(t *testing.T) {
	now := time.Now().UnixNano()
	future := trace("http:key:dropped", TransportHTTP, 0, span(api.StageStackClassify, int64(5*time.Hour), 0, 1000, 0, ""))
	future.StartedUnixNS = now
	in := closed(t, nil, future)
	got, _ := in.Since(0)
	if len(got) != 1 || got[0].UpdatedUnixNS > time.Now().UnixNano() {
		t.Fatalf("session updated at %d, after now %d", got[0].UpdatedUnixNS, time.Now().UnixNano())
	}
}
