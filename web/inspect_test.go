package web

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"agentloop/api"
	"agentloop/inspect"
	"agentloop/internal/wait"
	"agentloop/store/sqlite"

	"github.com/coder/websocket"
)

// newInspectPlayground is a playground with a real inspector over a real
// SQLite file.
func newInspectPlayground(t *testing.T) (*testPlayground, *inspect.Inspector) {
	t.Helper()
	ctx := context.Background()
	db, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "agentloop.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	in := inspect.New(db, nil, inspect.Options{})
	tp := &testPlayground{races: &fakeRaces{running: map[string]bool{}}, runs: &fakeRuns{}}
	tp.pg = New(Deps{Races: tp.races, Runs: tp.runs, Cores: 2, Inspector: in})
	tp.e = newEcho()
	tp.pg.Register(tp.e)
	t.Cleanup(func() {
		tp.pg.Shutdown(ctx)
		in.Close(ctx)
		db.Close()
	})
	return tp, in
}

func observedTrace(session, transport string, at int64) *api.Trace {
	return &api.Trace{ResponseID: api.NewID("resp"), Transport: transport, Engine: "v1", StartedUnixNS: time.Now().UnixNano() + at,
		Session: session, Client: &api.Client{UserAgent: "test-client/1.0", Originator: "agentloop_test"},
		Spans: []api.Span{{Name: api.StageParse, DurationNS: 1000, Kind: api.Measured, Items: 1, Bytes: 200},
			{Name: api.StageRender, StartNS: 1000, DurationNS: 5000, Kind: api.Measured, Items: 1, Tokens: 40},
			{Name: api.StageGenerate, StartNS: 6000, DurationNS: 90000, Kind: api.Modelled, Tokens: 12},
			{Name: api.StageFinalize, StartNS: 96000, DurationNS: 2000, Kind: api.Measured, Items: 1, Tokens: 12, Bytes: 900}},
		Usage: &api.Usage{InputTokens: 40, OutputTokens: 12}}
}

func TestSessionsAPIAndPages(t *testing.T) {
	tp, in := newInspectPlayground(t)
	in.ObserveTrace(observedTrace("ws:conn_1", inspect.TransportWebSocket, 0))
	in.ObserveTrace(observedTrace("ws:conn_1", inspect.TransportWebSocket, 1))
	bad := observedTrace("http:key:<script>", inspect.TransportHTTP, 2)
	bad.Error, bad.Status, bad.Spans, bad.Usage = "invalid_json", 400, nil, nil
	in.ObserveTrace(bad)
	in.Close(context.Background()) // recorded and stored

	rec := tp.do(http.MethodGet, "/api/sessions", "", nil)
	if rec.Code != http.StatusOK || rec.Header().Get("Cache-Control") != "no-store" {
		t.Fatalf("list: %d %s", rec.Code, rec.Body)
	}
	var list struct {
		Object  string            `json:"object"`
		Data    []inspect.Session `json:"data"`
		Dropped *int64            `json:"dropped"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &list); err != nil || list.Object != "list" || len(list.Data) != 2 || list.Dropped == nil || *list.Dropped != 0 {
		t.Fatalf("list %s (%v)", rec.Body, err)
	}
	httpSess, wsSess := list.Data[0], list.Data[1]
	if httpSess.Transport == inspect.TransportWebSocket {
		httpSess, wsSess = wsSess, httpSess
	}
	if httpSess.Transport != inspect.TransportHTTP || httpSess.Summary.Errors != 1 || httpSess.Summary.Estimate == nil ||
		wsSess.Summary.Turns != 2 || wsSess.Client.Originator != "agentloop_test" || len(wsSess.Turns) != 0 {
		t.Fatalf("listed %+v", list.Data)
	}

	rec = tp.do(http.MethodGet, "/api/sessions/"+wsSess.ID, "", nil)
	var one inspect.Session
	if err := json.Unmarshal(rec.Body.Bytes(), &one); rec.Code != http.StatusOK || err != nil || len(one.Turns) != 2 ||
		one.Turns[1].Index != 1 || one.Turns[0].Spans[1].Name != api.StageRender || one.Summary.OutputTokens != 24 {
		t.Fatalf("session: %d %s (%v)", rec.Code, rec.Body, err)
	}

	rec = tp.do(http.MethodGet, "/api/sessions/"+wsSess.ID+"/export", "", nil)
	var exported inspect.Session
	if err := json.Unmarshal(rec.Body.Bytes(), &exported); rec.Code != http.StatusOK || err != nil || exported.ID != wsSess.ID || len(exported.Turns) != 2 {
		t.Fatalf("export: %d %s (%v)", rec.Code, rec.Body, err)
	}
	if cd := rec.Header().Get("Content-Disposition"); cd != `attachment; filename="`+wsSess.ID+`.json"` {
		t.Fatalf("export Content-Disposition %q", cd)
	}

	for target, want := range map[string]int{
		"/api/sessions/sess_none":        http.StatusNotFound,
		"/api/sessions/sess_none/export": http.StatusNotFound,
		"/api/sessions?limit=0":          http.StatusBadRequest,
		"/api/sessions?limit=x":          http.StatusBadRequest,
	} {
		rec := tp.do(http.MethodGet, target, "", nil)
		var e struct {
			Error struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		if rec.Code != want || json.Unmarshal(rec.Body.Bytes(), &e) != nil || e.Error.Message == "" {
			t.Errorf("%s: %d %s, want %d with an OpenAI-shaped error", target, rec.Code, rec.Body, want)
		}
	}

	rec = tp.do(http.MethodGet, "/inspect", "", nil)
	body := rec.Body.String()
	if rec.Code != http.StatusOK || strings.Count(body, `data-testid="session-row"`) != 2 || !strings.Contains(body, `data-session="`+wsSess.ID+`"`) ||
		!strings.Contains(body, `href="/inspect" aria-current="page"`) {
		t.Fatalf("/inspect: %d %s", rec.Code, body)
	}
	rec = tp.do(http.MethodGet, "/inspect/"+httpSess.ID, "", nil)
	body = rec.Body.String()
	if rec.Code != http.StatusOK || !strings.Contains(body, httpSess.ID) || !strings.Contains(body, `data-testid="session-estimate"`) {
		t.Fatalf("/inspect/{id}: %d %s", rec.Code, body)
	}
	// The session key is the client's own text: escaped, never markup.
	if strings.Contains(body, "<script>") || !strings.Contains(body, "http:key:&lt;script&gt;") {
		t.Fatal("the session key was not escaped")
	}
	if rec := tp.do(http.MethodGet, "/inspect/sess_none", "", nil); rec.Code != http.StatusNotFound {
		t.Fatalf("/inspect/sess_none: %d", rec.Code)
	}
}

// readFrame reads frames from c until one satisfies ok.
func readFrame[T any](t *testing.T, ctx context.Context, c *websocket.Conn, ok func(T) bool) T {
	t.Helper()
	for {
		_, b, err := c.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var v T
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatalf("frame %s: %v", b, err)
		}
		if ok(v) {
			return v
		}
	}
}

func waitWatched(t *testing.T, h *hub, feed string) {
	t.Helper()
	wait.Until(t, "a page to join "+feed, func() bool { return h.watched(feed) })
}

// TestInspectorLiveFeeds drives /ui/inspect/live and /ui/inspect/{id}/live
// over real sockets while a client's turns arrive.
func TestInspectorLiveFeeds(t *testing.T) {
	tp, in := newInspectPlayground(t)
	srv := httptest.NewServer(tp.e)
	defer srv.Close()
	wsURL := "ws" + strings.TrimPrefix(srv.URL, "http")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	list, _, err := websocket.Dial(ctx, wsURL+"/ui/inspect/live", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer list.CloseNow()
	waitWatched(t, tp.pg.hub, inspectListFeed)
	in.ObserveOpen("http:key:chat") // a turn in flight
	defer in.ObserveClose("http:key:chat")
	in.ObserveTrace(observedTrace("http:key:chat", inspect.TransportHTTP, 0))
	first := readFrame(t, ctx, list, func(f sessionsFrame) bool { return len(f.Sessions) > 0 })
	s := first.Sessions[0]
	if s.Key != "http:key:chat" || s.Summary.Turns != 1 || !s.Live || len(s.Turns) != 0 {
		t.Fatalf("first list frame %+v", first)
	}

	one, _, err := websocket.Dial(ctx, wsURL+"/ui/inspect/"+s.ID+"/live", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer one.CloseNow()
	waitWatched(t, tp.pg.hub, sessionFeed(s.ID))
	in.ObserveTrace(observedTrace("http:key:chat", inspect.TransportHTTP, 1))
	in.ObserveTrace(observedTrace("http:key:chat", inspect.TransportHTTP, 2))
	// Frames may carry one turn or several; together they carry every turn
	// once, in order, and the summary catches up.
	seen := map[int]bool{}
	readFrame(t, ctx, one, func(f sessionFrame) bool {
		for _, tu := range f.Session.Turns {
			if seen[tu.Index] {
				t.Fatalf("turn %d sent twice", tu.Index)
			}
			seen[tu.Index] = true
		}
		return f.Session.Summary.Turns == 3
	})
	if !seen[1] || !seen[2] {
		t.Fatalf("turns sent: %v, want 1 and 2", seen)
	}
	readFrame(t, ctx, list, func(f sessionsFrame) bool { return len(f.Sessions) == 1 && f.Sessions[0].Summary.Turns == 3 })

	// Shutdown closes the feeds with 1001.
	tp.pg.Shutdown(ctx)
	if _, _, err := list.Read(ctx); websocket.CloseStatus(err) != websocket.StatusGoingAway {
		t.Fatalf("list feed at shutdown: %v", err)
	}
}

func TestInspectPageRendersTheDrillForm(t *testing.T) {
	tp, _ := newInspectPlayground(t)
	rec := tp.do(http.MethodGet, "/inspect", "", nil)
	body := rec.Body.String()
	if rec.Code != http.StatusOK {
		t.Fatalf("/inspect: %d %s", rec.Code, body)
	}
	for _, want := range []string{`<form id="drill-form"`, `<label for="drill-name">`, `<label for="drill-after">`, `<label for="drill-times">`,
		`<label for="drill-duration">`, `<label for="drill-scope">`, `<th scope="col">Disarm</th>`, `id="drills-body"`} {
		if !strings.Contains(body, want) {
			t.Errorf("/inspect lacks %s", want)
		}
	}
	for _, name := range api.DrillNames {
		if !strings.Contains(body, `<option value="`+name+`">`+name+`</option>`) {
			t.Errorf("the drill form does not offer %s", name)
		}
	}
	if n := strings.Count(body, "<option "); n != len(api.DrillNames) {
		t.Errorf("%d options, want the %d drills", n, len(api.DrillNames))
	}
}
