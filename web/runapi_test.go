package web

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"agentloop/api"
	"agentloop/apistack"
	"agentloop/rollout"
	"agentloop/store"
	"agentloop/store/sqlite"

	"github.com/labstack/echo/v4"
)

type apiError struct {
	Error struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		Code    *string `json:"code"`
	} `json:"error"`
}

func decodeAPIError(t *testing.T, body []byte) apiError {
	t.Helper()
	var e apiError
	if err := json.Unmarshal(body, &e); err != nil || e.Error.Message == "" || e.Error.Type == "" {
		t.Fatalf("not an OpenAI-shaped error: %s (%v)", body, err)
	}
	return e
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func TestStartRun(t *testing.T) {
	big := `{"scenario":"` + strings.Repeat("x", maxRunBody) + `"}`
	cases := []struct {
		name      string
		body      string
		header    map[string]string
		startErr  error
		status    int
		code      string
		param     string
		wantStart bool
	}{
		{name: "valid", body: `{"scenario":"fix-failing-test","profile":"burst","rtt_ms":0,"tool_time_ms":5,"lanes":["http","ws"],"seed":7,"sequential":true,"repeats":3}`,
			header: jsonHeader, status: 200, wantStart: true},
		{name: "same origin", body: `{}`, header: map[string]string{"Content-Type": "application/json; charset=utf-8", "Sec-Fetch-Site": "same-origin"}, status: 200, wantStart: true},
		{name: "media type in capitals", body: `{}`, header: map[string]string{"Content-Type": " Application/JSON"}, status: 200, wantStart: true},
		{name: "typed in the address bar", body: `{}`, header: map[string]string{"Content-Type": "application/json", "Sec-Fetch-Site": "none"}, status: 200, wantStart: true},
		{name: "cross site", body: `{}`, header: map[string]string{"Content-Type": "application/json", "Sec-Fetch-Site": "cross-site"}, status: 403, code: "cross_site_request"},
		{name: "same site is not same origin", body: `{}`, header: map[string]string{"Content-Type": "application/json", "Sec-Fetch-Site": "same-site"}, status: 403, code: "cross_site_request"},
		{name: "form post", body: `scenario=x`, header: map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, status: 415, code: "unsupported_media_type"},
		{name: "no content type", body: `{}`, status: 415, code: "unsupported_media_type"},
		{name: "empty body", body: " ", header: jsonHeader, status: 400, code: "invalid_json"},
		{name: "not JSON", body: `{"scenario":`, header: jsonHeader, status: 400, code: "invalid_json"},
		{name: "syntax error", body: `{"scenario" "x"}`, header: jsonHeader, status: 400, code: "invalid_json"},
		{name: "array", body: `[1]`, header: jsonHeader, status: 400, code: "invalid_type"},
		{name: "unknown field", body: `{"scenari":"x"}`, header: jsonHeader, status: 400, code: "unknown_parameter", param: "scenari"},
		{name: "wrong type", body: `{"rtt_ms":"20"}`, header: jsonHeader, status: 400, code: "invalid_type", param: "rtt_ms"},
		{name: "lanes not a list", body: `{"lanes":"ws"}`, header: jsonHeader, status: 400, code: "invalid_type", param: "lanes"},
		{name: "repeats 0", body: `{"repeats":0}`, header: jsonHeader, status: 400, code: "invalid_value", param: "repeats"},
		{name: "seed 0", body: `{"seed":0}`, header: jsonHeader, status: 400, code: "invalid_value", param: "seed"},
		{name: "negative seed", body: `{"seed":-4}`, header: jsonHeader, status: 400, code: "invalid_value", param: "seed"},
		{name: "empty round trip", body: `{"rtt_ms":null}`, header: jsonHeader, status: 400, code: "invalid_value", param: "rtt_ms"},
		{name: "empty repeats", body: `{"repeats":null}`, header: jsonHeader, status: 400, code: "invalid_value", param: "repeats"},
		{name: "stack preset", body: `{"stack":"hosted"}`, header: jsonHeader, status: 200, wantStart: true},
		{name: "stack parameters", body: `{"stack":{"preset":"hosted","hop_ms":3},"decode_tps":250}`, header: jsonHeader, status: 200, wantStart: true},
		{name: "reasoning", body: `{"reasoning":{"effort":"low","summary":"auto"}}`, header: jsonHeader, status: 200, wantStart: true},
		{name: "reasoning with an unknown field", body: `{"reasoning":{"effort":"low","budget":3}}`, header: jsonHeader, status: 400, code: "unknown_parameter", param: "budget"},
		{name: "unknown stack", body: `{"stack":"turbo"}`, header: jsonHeader, status: 400, code: "invalid_value", param: "stack"},
		{name: "bad stack parameter", body: `{"stack":{"preset":"hosted","hop_ms":-3}}`, header: jsonHeader, status: 400, code: "invalid_value", param: "stack.hop_ms"},
		{name: "stack rate out of range", body: `{"stack":{"preset":"hosted","classify_tps":0.001}}`, header: jsonHeader, status: 400, code: "invalid_value", param: "stack.classify_tps"},
		{name: "unknown stack parameter", body: `{"stack":{"hops":3}}`, header: jsonHeader, status: 400, code: "invalid_value", param: "stack"},
		{name: "stack of the wrong type", body: `{"stack":3}`, header: jsonHeader, status: 400, code: "invalid_value", param: "stack"},
		{name: "two objects", body: `{} {}`, header: jsonHeader, status: 400, code: "invalid_json"},
		{name: "too large", body: big, header: jsonHeader, status: 413, code: "request_too_large"},
		{name: "runner refuses", body: `{"scenario":"nope"}`, header: jsonHeader, startErr: api.BadRequest("scenario", "invalid_value", "Unknown scenario 'nope'."),
			status: 400, code: "invalid_value", param: "scenario"},
		{name: "runner breaks", body: `{}`, header: jsonHeader, startErr: errors.New("database is locked"), status: 500, code: "server_error"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tp := newTestPlayground(t)
			tp.races.startErr = tc.startErr
			rec := tp.do(http.MethodPost, "/api/runs", tc.body, tc.header)
			if rec.Code != tc.status {
				t.Fatalf("status %d, want %d: %s", rec.Code, tc.status, rec.Body)
			}
			if got := len(tp.races.started) > 0; got != tc.wantStart {
				t.Fatalf("started %v, want %v", got, tc.wantStart)
			}
			if tc.status == 200 {
				var out struct{ ID string }
				if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil || out.ID != "run_fake" {
					t.Fatalf("body %s (%v)", rec.Body, err)
				}
				return
			}
			e := decodeAPIError(t, rec.Body.Bytes())
			if deref(e.Error.Code) != tc.code || deref(e.Error.Param) != tc.param {
				t.Errorf("code %q param %q, want %q %q: %s", deref(e.Error.Code), deref(e.Error.Param), tc.code, tc.param, rec.Body)
			}
			if strings.Contains(rec.Body.String(), "database is locked") {
				t.Error("the internal cause leaked into the response")
			}
		})
	}
}

func TestStartRunPassesTheConfig(t *testing.T) {
	tp := newTestPlayground(t)
	rec := tp.do(http.MethodPost, "/api/runs", `{"scenario":"rename-api","profile":"classic","rtt_ms":12.5,"tool_time_ms":40,"lanes":["ws","http"],"seed":9,"sequential":true,"repeats":3,"bandwidth_kbps":800,"tls":true}`, jsonHeader)
	if rec.Code != 200 {
		t.Fatal(rec.Code, rec.Body)
	}
	want := rollout.Config{Scenario: "rename-api", Profile: "classic", RTTms: 12.5, ToolTimeMs: 40, Lanes: []string{"ws", "http"}, Seed: 9,
		Sequential: true, Repeats: 3, BandwidthKbps: 800, TLS: true}
	got := tp.races.started[0]
	if g, w := mustJSON(t, got), mustJSON(t, want); g != w {
		t.Errorf("config %s, want %s", g, w)
	}
	// A workload rides in the config as it was sent.
	wl := `{"version":1,"source":"hand","instructions_tokens":10,"tools_tokens":5,"tools":1,"turns":[{"input":[{"kind":"user_message","tokens":3}],"output_tokens":4}]}`
	if rec := tp.do(http.MethodPost, "/api/runs", `{"workload":`+wl+`,"fixed_tool_time":true}`, jsonHeader); rec.Code != 200 {
		t.Fatal(rec.Code, rec.Body)
	}
	if got := tp.races.started[1]; got.Workload == nil || !got.FixedToolTime || mustJSON(t, got.Workload) != `{"version":1,"source":"hand","instructions_tokens":10,"tools_tokens":5,"tools":1,"turns":[{"input":[{"kind":"user_message","tokens":3}],"output_tokens":4}]}` {
		t.Errorf("workload config %s", mustJSON(t, got))
	}
	for body, want := range map[string]apistack.Stack{
		`{"stack":"hosted"}`:                       apistack.Hosted,
		`{"stack":{"preset":"hosted","hop_ms":3}}`: func() apistack.Stack { s := apistack.Hosted; s.Preset, s.HopMS = "custom", 3; return s }(),
		`{"stack":"lean"}`:                         apistack.Lean,
	} {
		tp := newTestPlayground(t)
		if rec := tp.do(http.MethodPost, "/api/runs", body, jsonHeader); rec.Code != 200 {
			t.Fatal(body, rec.Code, rec.Body)
		}
		if got := tp.races.started[0].Stack; got != want {
			t.Errorf("%s: stack %+v, want %+v", body, got, want)
		}
	}
}

// TestWorkloadRacesAreFairByDefault: a workload race (as "Race this
// session" posts it) whose request leaves sequential and repeats out runs
// its lanes one after another, three times; a value the request gives is
// kept; a scenario race keeps its own defaults.
func TestWorkloadRacesAreFairByDefault(t *testing.T) {
	wl := `{"version":1,"source":"hand","instructions_tokens":10,"tools_tokens":5,"tools":1,"turns":[{"input":[{"kind":"user_message","tokens":3}],"output_tokens":4}]}`
	for _, tc := range []struct {
		body       string
		sequential bool
		repeats    int
	}{
		{`{"workload":` + wl + `,"profile":"spark","lanes":["http-optimized","ws"]}`, true, rollout.FairRepeats},
		{`{"workload":` + wl + `,"sequential":false}`, false, rollout.FairRepeats},
		{`{"workload":` + wl + `,"repeats":1}`, true, 1},
		{`{"workload":` + wl + `,"sequential":false,"repeats":2}`, false, 2},
		{`{"scenario":"fix-failing-test"}`, false, 0},
		// Lanes that take turns never overlap either: the order is kept.
		{`{"workload":` + wl + `,"take_turns":true}`, false, rollout.FairRepeats},
	} {
		tp := newTestPlayground(t)
		if rec := tp.do(http.MethodPost, "/api/runs", tc.body, jsonHeader); rec.Code != 200 {
			t.Fatal(tc.body, rec.Code, rec.Body)
		}
		if got := tp.races.started[0]; got.Sequential != tc.sequential || got.Repeats != tc.repeats {
			t.Errorf("%s: sequential %v, repeats %d; want %v, %d", tc.body, got.Sequential, got.Repeats, tc.sequential, tc.repeats)
		}
	}
	if rec := newTestPlayground(t).do(http.MethodPost, "/api/runs", `{"workload":`+wl+`,"repeats":0}`, jsonHeader); rec.Code != 400 {
		t.Errorf("repeats 0: %d, want 400 (a given value is validated, never changed)", rec.Code)
	}
}

// TestStartRunWithTheRunner checks the runner's own validation reaches the
// client as a 400 naming the parameter.
func TestStartRunWithTheRunner(t *testing.T) {
	runner, db := validatingRunner(t)
	pg := New(Deps{Races: runner, Runs: StoreRuns(db)})
	e := newEcho()
	pg.Register(e)
	tp := &testPlayground{pg: pg, e: e}
	for _, tc := range []struct{ body, param string }{
		{`{"scenario":"nope"}`, "scenario"},
		{`{"profile":"turbo"}`, "profile"},
		{`{"lanes":["ws","pigeon"]}`, "lanes"},
		{`{"rtt_ms":-1}`, "rtt_ms"},
		{`{"repeats":99}`, "repeats"},
		{`{"stack":"turbo"}`, "stack"},
		{`{"profile":"burst","decode_tps":250}`, "decode_tps"},
		{`{"decode_tps":0.5}`, "decode_tps"},
		{`{"reasoning":{"effort":"extreme"}}`, "reasoning.effort"},
		{`{"sequential":true,"take_turns":true}`, "take_turns"},
		{`{"workload":{"version":1,"turns":[{"input":[{"kind":"user_message","tokens":3}],"output_tokens":1}]},"sequential":true,"take_turns":true}`, "take_turns"},
		{`{"take_turns":"yes"}`, "take_turns"},
		{`{"reasoning":{"effort":"low","summary":"long"}}`, "reasoning.summary"},
		{`{"workload":{"version":1,"turns":[]}}`, "workload"},
		{`{"workload":{"version":1,"turns":[{"input":[{"kind":"tool_output","tokens":3}],"output_tokens":1}]}}`, "workload"},
		{`{"workload":{"version":1,"turns":[{"input":[{"kind":"user_message","tokens":3}],"output_tokens":1}]},"lanes":["prototype"]}`, "lanes"},
	} {
		rec := tp.do(http.MethodPost, "/api/runs", tc.body, jsonHeader)
		if rec.Code != 400 {
			t.Errorf("%s: status %d: %s", tc.body, rec.Code, rec.Body)
			continue
		}
		if e := decodeAPIError(t, rec.Body.Bytes()); deref(e.Error.Param) != tc.param {
			t.Errorf("%s: param %q, want %q", tc.body, deref(e.Error.Param), tc.param)
		}
	}
	if runs, _, err := db.ListRuns(context.Background(), store.RunFilter{}); err != nil || len(runs) != 0 {
		t.Errorf("refused configs stored %d runs (%v)", len(runs), err)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestGetRun(t *testing.T) {
	tp := newTestPlayground(t)
	rec := tp.do(http.MethodGet, "/api/runs/run_done", "", nil)
	if rec.Code != 200 {
		t.Fatal(rec.Code, rec.Body)
	}
	var got rollout.RunRecord
	if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil || got.ID != "run_done" || len(got.Turns) != 5 || got.Turns[0].Calls[0].Output == "" {
		t.Fatalf("run %+v (%v)", got, err)
	}
	rec = tp.do(http.MethodGet, "/api/runs/run_missing", "", nil)
	if rec.Code != 404 {
		t.Fatal(rec.Code, rec.Body)
	}
	if e := decodeAPIError(t, rec.Body.Bytes()); !strings.Contains(e.Error.Message, "run_missing") {
		t.Errorf("message %q", e.Error.Message)
	}
	tp.runs.failing = true
	if rec = tp.do(http.MethodGet, "/api/runs/run_done", "", nil); rec.Code != 500 || strings.Contains(rec.Body.String(), "fire") {
		t.Errorf("store failure: %d %s", rec.Code, rec.Body)
	}
}

func TestListRuns(t *testing.T) {
	local := func(y int, m time.Month, d int) time.Time { return time.Date(y, m, d, 0, 0, 0, 0, time.Local) }
	cases := []struct {
		query  string
		status int
		param  string
		want   store.RunFilter
	}{
		{query: "", status: 200, want: store.RunFilter{Limit: 51}},
		{query: "?scenario=fix-failing-test&profile=burst&limit=5", status: 200, want: store.RunFilter{Scenario: "fix-failing-test", Profile: "burst", Limit: 6}},
		{query: "?since=2026-12-01&until=2026-12-02", status: 200, want: store.RunFilter{Since: local(2026, 12, 1), Until: local(2026, 12, 3), Limit: 51}},
		{query: "?since=2026-12-01T10:00:00Z", status: 200, want: store.RunFilter{Since: time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC), Limit: 51}},
		{query: "?since=yesterday", status: 400, param: "since"},
		{query: "?until=2026-13-01", status: 400, param: "until"},
		{query: "?since=1600-01-01", status: 400, param: "since"},
		{query: "?until=3000-01-01", status: 400, param: "until"},
		{query: "?since=9999-12-31T00:00:00Z", status: 400, param: "since"},
		{query: "?limit=0", status: 400, param: "limit"},
		{query: "?limit=1001", status: 400, param: "limit"},
		{query: "?limit=ten", status: 400, param: "limit"},
	}
	for _, tc := range cases {
		t.Run(tc.query, func(t *testing.T) {
			tp := newTestPlayground(t)
			rec := tp.do(http.MethodGet, "/api/runs"+tc.query, "", nil)
			if rec.Code != tc.status {
				t.Fatalf("status %d: %s", rec.Code, rec.Body)
			}
			if tc.status != 200 {
				if e := decodeAPIError(t, rec.Body.Bytes()); deref(e.Error.Param) != tc.param {
					t.Errorf("param %q, want %q", deref(e.Error.Param), tc.param)
				}
				return
			}
			f := tp.runs.filters[0]
			if f.Scenario != tc.want.Scenario || f.Profile != tc.want.Profile || f.Limit != tc.want.Limit || !f.Since.Equal(tc.want.Since) || !f.Until.Equal(tc.want.Until) {
				t.Errorf("filter %+v, want %+v", f, tc.want)
			}
			var list struct {
				Object  string              `json:"object"`
				Data    []rollout.RunRecord `json:"data"`
				HasMore bool                `json:"has_more"`
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &list); err != nil || list.Object != "list" || list.Data == nil {
				t.Fatalf("list %s (%v)", rec.Body, err)
			}
		})
	}
}

func TestListRunsHasMore(t *testing.T) {
	tp := newTestPlayground(t)
	for _, id := range []string{"run_a", "run_b", "run_c"} {
		tp.runs.runs[id] = fixtureRun(id)
	}
	for _, tc := range []struct {
		limit string
		n     int
		more  bool
	}{{"2", 2, true}, {"4", 4, false}, {"10", 4, false}} {
		rec := tp.do(http.MethodGet, "/api/runs?limit="+tc.limit, "", nil)
		var list struct {
			Data    []rollout.RunRecord `json:"data"`
			HasMore bool                `json:"has_more"`
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &list); err != nil {
			t.Fatal(err)
		}
		if len(list.Data) != tc.n || list.HasMore != tc.more {
			t.Errorf("limit %s: %d runs, has_more %v; want %d, %v", tc.limit, len(list.Data), list.HasMore, tc.n, tc.more)
		}
	}
}

func TestDeleteRun(t *testing.T) {
	running := fixtureRun("run_elsewhere")
	running.Status = rollout.StatusRunning
	cases := []struct {
		name   string
		id     string
		header map[string]string
		token  bool // send the run's cancel token
		status int
		code   string
		gone   bool
	}{
		{name: "stored", id: "run_done", token: true, status: 200, gone: true},
		{name: "same origin", id: "run_done", token: true, header: map[string]string{"Sec-Fetch-Site": "same-origin"}, status: 200, gone: true},
		{name: "without its token", id: "run_done", status: 403, code: api.CodeInvalidCancelToken},
		{name: "with another run's token", id: "run_done", header: map[string]string{HeaderCancelToken: newCancelTokens([]byte("other")).token("run_done")}, status: 403, code: api.CodeInvalidCancelToken},
		{name: "cross site", id: "run_done", token: true, header: map[string]string{"Sec-Fetch-Site": "cross-site"}, status: 403, code: "cross_site_request"},
		{name: "missing", id: "run_missing", status: 404, code: "not_found"},
		{name: "running here", id: "run_live", token: true, status: 409, code: "run_running"},
		{name: "running in another process", id: "run_elsewhere", token: true, status: 409, code: "run_running"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tp := newTestPlayground(t)
			tp.runs.runs["run_elsewhere"] = running
			tp.runs.runs["run_live"] = fixtureRun("run_live")
			tp.races.running["run_live"] = true
			header := map[string]string{}
			for k, v := range tc.header {
				header[k] = v
			}
			if tc.token {
				header[HeaderCancelToken] = tp.pg.cancels.token(tc.id)
			}
			rec := tp.do(http.MethodDelete, "/api/runs/"+tc.id, "", header)
			if rec.Code != tc.status {
				t.Fatalf("status %d: %s", rec.Code, rec.Body)
			}
			_, stillThere := tp.runs.runs[tc.id]
			if tc.gone == stillThere && tc.id != "run_missing" {
				t.Errorf("run still stored: %v", stillThere)
			}
			if tc.status == 200 {
				var out struct {
					ID      string `json:"id"`
					Deleted bool   `json:"deleted"`
				}
				if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil || out.ID != tc.id || !out.Deleted {
					t.Errorf("body %s", rec.Body)
				}
				return
			}
			if e := decodeAPIError(t, rec.Body.Bytes()); deref(e.Error.Code) != tc.code {
				t.Errorf("code %q, want %q", deref(e.Error.Code), tc.code)
			}
		})
	}
}

func TestCancelRun(t *testing.T) {
	json := map[string]string{"Content-Type": "application/json"}
	for _, tc := range []struct {
		name   string
		id     string
		header map[string]string
		token  bool
		status int
		code   string
	}{
		{"running here", "run_live", json, true, 202, ""},
		{"without its token", "run_live", json, false, 403, api.CodeInvalidCancelToken},
		{"ended", "run_done", json, true, 409, "run_not_running"},
		{"missing", "run_missing", json, true, 404, "not_found"},
		{"cross site", "run_live", map[string]string{"Content-Type": "application/json", "Sec-Fetch-Site": "cross-site"}, true, 403, "cross_site_request"},
		{"not JSON", "run_live", map[string]string{"Content-Type": "text/plain"}, true, 415, "unsupported_media_type"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tp := newTestPlayground(t)
			tp.races.running["run_live"] = true
			header := map[string]string{}
			for k, v := range tc.header {
				header[k] = v
			}
			if tc.token {
				header[HeaderCancelToken] = tp.pg.cancels.token(tc.id)
			}
			rec := tp.do(http.MethodPost, "/api/runs/"+tc.id+"/cancel", "{}", header)
			if rec.Code != tc.status || (tc.code != "" && !strings.Contains(rec.Body.String(), tc.code)) {
				t.Fatalf("%d %s, want %d %s", rec.Code, rec.Body.String(), tc.status, tc.code)
			}
			if cancelled := len(tp.races.cancelled) == 1; cancelled != (tc.status == 202) {
				t.Fatalf("cancelled %v", tp.races.cancelled)
			}
		})
	}
}

// A run is cancelled and deleted only by whoever started it: the start
// answers its cancel token to a client without the server's key, and
// only that token cancels it. A client holding the key (a login, the key
// as a bearer token) gets none and needs none. Each race is started as
// the client Identify names.
func TestOnlyWhoeverStartedARunStopsIt(t *testing.T) {
	keyed := false
	tp := newTestPlayground(t, func(d *Deps) {
		d.Identify = func(c echo.Context) Client {
			if keyed {
				return Client{ID: "login:abc", Keyed: true}
			}
			return AddressOf(c)
		}
	})
	rec := tp.do(http.MethodPost, "/api/runs", `{}`, jsonHeader)
	var started struct {
		ID          string `json:"id"`
		CancelToken string `json:"cancel_token"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &started); err != nil || rec.Code != 200 || started.CancelToken == "" {
		t.Fatalf("start: %d %s, want an id and a cancel_token", rec.Code, rec.Body)
	}
	if got := tp.races.clients[0]; got != "addr:192.0.2.1" {
		t.Errorf("the race's client is %q, want the address's", got)
	}
	cancel := func(header map[string]string) int {
		h := map[string]string{"Content-Type": "application/json"}
		for k, v := range header {
			h[k] = v
		}
		return tp.do(http.MethodPost, "/api/runs/"+started.ID+"/cancel", "{}", h).Code
	}
	if code := cancel(nil); code != 403 {
		t.Fatalf("cancel without the token: %d, want 403", code)
	}
	if code := cancel(map[string]string{HeaderCancelToken: started.CancelToken + "x"}); code != 403 {
		t.Fatalf("cancel with a wrong token: %d, want 403", code)
	}
	if code := cancel(map[string]string{HeaderCancelToken: started.CancelToken}); code != 202 {
		t.Fatalf("cancel with the token: %d, want 202", code)
	}
	keyed = true
	rec = tp.do(http.MethodPost, "/api/runs", `{}`, jsonHeader)
	if strings.Contains(rec.Body.String(), "cancel_token") || tp.races.clients[1] != "login:abc" {
		t.Fatalf("a keyed start: %s as %q, want no cancel_token, as the login", rec.Body, tp.races.clients[1])
	}
	if code := cancel(nil); code != 202 {
		t.Fatalf("cancel with the key: %d, want 202", code)
	}
}

// TestRaceFormDrills: the race form offers every drill and lane for its
// schedule, the body race.js sends carries the drills into the run's
// config, a refusal names the drill's field, and a run's schedule comes
// back to the form.
func TestRaceFormDrills(t *testing.T) {
	tp := newTestPlayground(t)
	page := tp.do(http.MethodGet, "/race", "", nil).Body.String()
	for _, want := range []string{`id="race-drills" data-drills="[]"`, `<template id="race-drill-template">`, `id="race-drill-add"`,
		`<option value="ws">WebSocket</option>`, `<label data-key="after_turns">After turns</label>`} {
		if !strings.Contains(page, want) {
			t.Errorf("/race lacks %s", want)
		}
	}
	// Each drill says which transports it affects, and carries the lanes
	// it can hit, so the form's first row is a valid pair.
	for _, name := range api.DrillNames {
		if !strings.Contains(page, `<option value="`+name+`" data-lanes="`+strings.Join(rollout.DrillLanes(name), " ")+`">`+name+` (`) {
			t.Errorf("the drill schedule does not offer %s with its lanes", name)
		}
	}
	if !strings.Contains(page, `evict-cache (WebSocket only)`) || !strings.Contains(page, `http-503 (HTTP lanes only)`) {
		t.Error("the drills do not say which transports they affect")
	}

	// The shape readForm sends.
	body := `{"scenario":"rename-api","profile":"instant","rtt_ms":0,"tool_time_ms":0,"lanes":["http","ws"],"seed":1,"repeats":1,"sequential":false,` +
		`"stack":{"preset":"lean"},"drills":[{"lane":"ws","drill":"evict-cache","after_turns":2,"times":1},{"lane":"http","drill":"http-503","after_turns":0,"times":2}]}`
	if rec := tp.do(http.MethodPost, "/api/runs", body, jsonHeader); rec.Code != http.StatusOK {
		t.Fatal(rec.Code, rec.Body)
	}
	want := []rollout.LaneDrill{{Drill: "evict-cache", Lane: "ws", AfterTurns: 2, Times: 1}, {Drill: "http-503", Lane: "http", Times: 2}}
	if got := tp.races.started[0].Drills; mustJSON(t, got) != mustJSON(t, want) {
		t.Errorf("drills %+v, want %+v", got, want)
	}

	// A refusal names the drill's field (race.js marks race-drill-0-lane).
	runner, db := validatingRunner(t)
	real := &testPlayground{pg: New(Deps{Races: runner, Runs: StoreRuns(db)}), e: newEcho()}
	real.pg.Register(real.e)
	rec := real.do(http.MethodPost, "/api/runs", `{"lanes":["http"],"drills":[{"lane":"ws","drill":"evict-cache","after_turns":1}]}`, jsonHeader)
	if e := decodeAPIError(t, rec.Body.Bytes()); rec.Code != http.StatusBadRequest || deref(e.Error.Param) != "drills[0].lane" {
		t.Errorf("a drill on a lane not raced: %d %s", rec.Code, rec.Body)
	}

	// A run's schedule fills the form again.
	run := fixtureRun("run_drills")
	run.Config.Drills = []rollout.LaneDrill{{Drill: "stall", Lane: "ws", AfterTurns: 1, Times: 1, DurationMS: 50}}
	tp.runs.runs[run.ID] = run
	page = tp.do(http.MethodGet, "/race?run=run_drills", "", nil).Body.String()
	if !strings.Contains(page, `data-drills="[{&#34;drill&#34;:&#34;stall&#34;,&#34;lane&#34;:&#34;ws&#34;,&#34;after_turns&#34;:1,&#34;times&#34;:1,&#34;duration_ms&#34;:50}]"`) {
		t.Errorf("the run's schedule is not on the form:\n%s", page)
	}
}

// validatingRunner is a real runner on its own database whose engine
// cannot be reached: what a test sees from it is its own validation.
func validatingRunner(t *testing.T) (*rollout.Runner, *sqlite.DB) {
	t.Helper()
	db, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "runs.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	runner := rollout.NewRunner("http://127.0.0.1:1", db, nil)
	t.Cleanup(func() {
		runner.Shutdown(context.Background())
		db.Close()
	})
	return runner, db
}
