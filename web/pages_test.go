package web

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"agentloop/api"
	"agentloop/rollout"
	"agentloop/static"
)

func TestPages(t *testing.T) {
	cases := []struct {
		path   string
		status int
		want   []string
		avoid  []string
	}{
		// "Race it live" races what the recording ran (the classroom's
		// race); the full race is beside it.
		{"/", 200, []string{`id="start-preset" class="primary big" data-start data-preset="{&#34;scenario&#34;:&#34;quick-fix&#34;`, `&#34;take_turns&#34;:true`,
			`id="start-full" data-start data-preset="{&#34;scenario&#34;:&#34;fix-failing-test&#34;`, `&#34;sequential&#34;:true`,
			`&#34;stack&#34;:{&#34;preset&#34;:&#34;hosted-post-sprint&#34;`, "modelled hosted-post-sprint API stack", `data-testid="preset-estimate">about `,
			`data-testid="full-estimate">about `,
			`<script id="race-recording" type="application/json">`, "A recording (", "Race it live", `data-testid="race-track"`}, nil},
		// Presenter mode starts the classroom's race: lanes taking turns,
		// with how long it takes by its start button.
		{"/race?present", 200, []string{`<option value="quick-fix" selected`, `name="take_turns" checked`, `data-testid="race-estimate">about `}, []string{`name="sequential" checked`}},
		{"/docs", 200, []string{"http://example.com/v1", "ws://example.com/v1/responses", "supports_websockets = true", "/api/traces/{id}", "createOpenAI",
			`websocket_base_url=&#34;ws://example.com/v1&#34;`, "curl -sN http://example.com/v1/responses", "websocat -H", `html[data-ready=&#34;race&#34;]`, "race-summary"}, nil},
		{"/race", 200, []string{`data-testid="race-scenario"`, `data-testid="race-profile"`, `data-testid="race-rtt"`, `data-testid="race-start"`,
			`data-testid="race-summary"`, `<template data-lane-template="ws">`, `<h3 class="lane-label">WebSocket</h3>`, `max="5000"`, `data-groups="[{`, `data-testid="lane-status"`,
			`data-testid="race-stack"`, `<option value="hosted-post-sprint" selected`, `<option value="lean"`, `id="race-stack-hop_ms"`, `name="stack.hop_ms"`, `value="2.65"`,
			`id="race-stack-billing_hops"`, `data-stack-param="hop_ms" type="number" min="0" max="10000"`,
			`data-stack-param="state_load_mbps" type="number" min="0" max="1000000"`, `data-testid="race-decode-tps"`, `data-testid="race-reasoning-effort"`, `<option value="" selected>off (no lane reasons)</option>`, `<option value="xhigh">xhigh</option>`, `data-testid="race-reasoning-summary"`, `<option value="detailed">detailed</option>`, `name="sequential" checked`, `swatch-hatched`, "API stack (modelled)"},
			[]string{`id="race-recording"`}},
		{"/race?run=run_done", 200, []string{`data-testid="lane-http"`, `data-testid="lane-ws"`, `data-status="passed">passed</span>`, `data-run="run_done"`}, nil},
		{"/race?run=run_missing", 404, []string{"Run not found"}, nil},
		{"/explorer", 200, []string{`data-testid="explorer-body"`, `data-testid="explorer-send-ws"`, `data-testid="explorer-send-http"`, `data-testid="explorer-events"`, `value="chain"`,
			`value="lanes"`, `&#34;stream_id&#34;: &#34;agent_a&#34;`, `&#34;stream_id&#34;: &#34;agent_b&#34;`,
			// explorer.js reads the terminal events and the stream_id rule from api.
			`data-terminal="[&#34;response.completed&#34;,&#34;response.failed&#34;,&#34;response.incomplete&#34;,&#34;error&#34;]"`,
			`data-stream-id-pattern="^[A-Za-z0-9_.-]{1,256}$"`}, nil},
		{"/runs", 200, []string{`data-testid="run-row"`, `data-run="run_done"`, "40% sooner", " round trip · ", " stack · together", `data-label="Settings"`}, nil},
		{"/race?present", 200, []string{`<html lang="en" class="present">`, `data-testid="present-story"`, `<li data-lane="http-chained" class="lane-color-http-chained"><strong class="story-name">HTTP chained</strong>`, "Modelled", `data-present`,
			`data-testid="race-track"`, `<script id="race-recording" type="application/json">`, "A recording (", `data-preset="{&#34;scenario&#34;:&#34;quick-fix&#34;`, `&#34;take_turns&#34;:true`,
			`class="present-story panel step step-1"`, `data-testid="present-modelled"`, `href="/docs/stack"`}, nil},
		{"/runs?scenario=rename-api", 200, []string{"No runs yet"}, nil},
		{"/runs?since=soon", 400, []string{"From: since must be a date", `aria-invalid="true"`, `aria-describedby="filter-since-error"`, `id="filter-since-error"`},
			[]string{"No runs yet"}},
		{"/runs?until=soon", 400, []string{"To: until must be a date", `aria-describedby="filter-until-error"`}, []string{"No runs yet"}},
		{"/runs/run_done", 200, []string{"WebSocket finished in 600 ms and HTTP in 1.00 s: 40% sooner. The race had no optimized HTTP lane to compare with (preset lean, which models no hosted API stack). The lanes ran side by side and shared the CPU.",
			"lean (nothing modelled)", "Stack hop (ms)", "Stack billing hops", "Warm-up (generate: false)", "run_tests", "ok  \tpricing", `href="/api/runs/run_done"`, `data-link="http://example.com/runs/run_done"`}, nil},
		{"/runs/run_missing", 404, []string{"Run not found"}, nil},
	}
	tp := newTestPlayground(t)
	for _, tc := range cases {
		t.Run(tc.path, func(t *testing.T) {
			rec := tp.do(http.MethodGet, tc.path, "", nil)
			if rec.Code != tc.status {
				t.Fatalf("status %d, want %d", rec.Code, tc.status)
			}
			if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, "text/html") {
				t.Errorf("content type %q", ct)
			}
			body := rec.Body.String()
			for _, w := range tc.want {
				if !strings.Contains(body, w) {
					t.Errorf("page lacks %q", w)
				}
			}
			for _, a := range tc.avoid {
				if strings.Contains(body, a) {
					t.Errorf("page says %q", a)
				}
			}
			checkCSPSafe(t, body)
		})
	}
}

var (
	scriptTag   = regexp.MustCompile(`<script\b[^>]*>`)
	inlineStyle = regexp.MustCompile(`(?i)<[^>]+\sstyle=`)
	inlineEvent = regexp.MustCompile(`(?i)<[^>]+\son[a-z]+=`)
)

// checkCSPSafe: the CSP (script-src 'self'; style-src 'self') forbids
// inline scripts, event handler attributes and style attributes.
func checkCSPSafe(t *testing.T, body string) {
	t.Helper()
	for _, tag := range scriptTag.FindAllString(body, -1) {
		// A JSON data block is not run (the carried recording).
		if !strings.Contains(tag, ` src="/static/`) && !strings.Contains(tag, ` type="application/json"`) {
			t.Errorf("inline script: %s", tag)
		}
	}
	if m := inlineStyle.FindString(body); m != "" {
		t.Errorf("style attribute: %s", m)
	}
	if m := inlineEvent.FindString(body); m != "" {
		t.Errorf("event handler attribute: %s", m)
	}
}

// TestHostileContentIsEscaped: tool outputs, arguments and model text come
// from the run and may hold anything.
func TestHostileContentIsEscaped(t *testing.T) {
	tp := newTestPlayground(t)
	run := fixtureRun("run_evil")
	hostile := []string{
		`<script>alert(1)</script>`,
		`<img src=x onerror=alert(2)>`,
		`"><svg onload=alert(3)>`,
		`</pre><iframe src="javascript:alert(4)">`,
	}
	run.Turns[0].Calls[0].Output = hostile[0] + hostile[3]
	run.Turns[0].Calls[0].Arguments = hostile[2]
	run.Turns[0].Calls[0].Name = hostile[1]
	run.Turns[0].Text = hostile[1]
	run.Turns[1].Error = hostile[0]
	run.Lanes[0].Error = hostile[2]
	tp.runs.runs["run_evil"] = run
	rec := tp.do(http.MethodGet, "/runs/run_evil", "", nil)
	if rec.Code != 200 {
		t.Fatal(rec.Code)
	}
	body := rec.Body.String()
	for _, h := range hostile {
		if strings.Contains(body, h) {
			t.Errorf("unescaped: %s", h)
		}
	}
	for _, frag := range []string{"&lt;script&gt;alert(1)&lt;/script&gt;", "&lt;img src=x onerror=alert(2)&gt;", "&#34;&gt;&lt;svg onload=alert(3)&gt;"} {
		if !strings.Contains(body, frag) {
			t.Errorf("the escaped form %q is missing", frag)
		}
	}
	checkCSPSafe(t, body)
	// The JSON export escapes HTML too, in case it is ever sniffed.
	rec = tp.do(http.MethodGet, "/api/runs/run_evil", "", nil)
	if strings.Contains(rec.Body.String(), "<script>") {
		t.Error("raw <script> in the JSON export")
	}
}

func TestStatic(t *testing.T) {
	tp := newTestPlayground(t)
	css := static.URL("css/app.css")
	if !strings.Contains(css, "?v=") {
		t.Fatalf("asset URL without a version: %s", css)
	}
	cases := []struct {
		path, header, status, ctype, cache string
	}{
		{css, "", "200", "text/css", "immutable"},
		{"/static/css/app.css", "", "200", "text/css", "no-cache"},
		{"/static/js/race.js", "", "200", "javascript", "no-cache"},
		{"/static/img/icon.svg", "", "200", "image/svg+xml", "no-cache"},
		{"/static/css/app.css", `"` + static.Version("css/app.css") + `"`, "304", "", ""},
		{"/static/../static.go", "", "404", "", ""},
		{"/static/css/", "", "404", "", ""},
		{"/static/nope.js", "", "404", "", ""},
		{"/favicon.ico", "", "200", "image/svg+xml", "max-age"},
	}
	for _, tc := range cases {
		t.Run(tc.path, func(t *testing.T) {
			h := map[string]string{}
			if tc.header != "" {
				h["If-None-Match"] = tc.header
			}
			rec := tp.do(http.MethodGet, tc.path, "", h)
			if got := http.StatusText(rec.Code); rec.Code != atoi(tc.status) {
				t.Fatalf("status %d (%s)", rec.Code, got)
			}
			if !strings.Contains(rec.Header().Get("Content-Type"), tc.ctype) || !strings.Contains(rec.Header().Get("Cache-Control"), tc.cache) {
				t.Errorf("content type %q, cache %q", rec.Header().Get("Content-Type"), rec.Header().Get("Cache-Control"))
			}
		})
	}
}

func atoi(s string) int {
	n := 0
	for _, r := range s {
		n = n*10 + int(r-'0')
	}
	return n
}

// TestLoginPageAfterStatus: app's key check writes 401 before it calls the
// page; the page must still render, once.
func TestLoginPageAfterStatus(t *testing.T) {
	for _, committed := range []bool{false, true} {
		tp := newTestPlayground(t)
		rec := httptest.NewRecorder()
		c := tp.e.NewContext(httptest.NewRequest(http.MethodGet, "/race", nil), rec)
		if committed {
			c.Response().WriteHeader(http.StatusUnauthorized)
		}
		if err := tp.pg.LoginPage(c); err != nil {
			t.Fatal(err)
		}
		body := rec.Body.String()
		if rec.Code != http.StatusUnauthorized || !strings.Contains(body, `id="login-form"`) || !strings.Contains(body, "js/login.js") {
			t.Errorf("committed=%v: %d %s", committed, rec.Code, body)
		}
		checkCSPSafe(t, body)
	}
}

func TestRaceViewSaysLanesShareTheCores(t *testing.T) {
	for _, tc := range []struct {
		cfg  rollout.Config
		want string
	}{
		{rollout.Config{}, "shared the 2 cores"},
		{rollout.Config{Sequential: true}, "one after another"},
	} {
		if got := fairness(tc.cfg, 2, true); !strings.Contains(got, tc.want) {
			t.Errorf("%+v: %q", tc.cfg, got)
		}
	}
}

// The lanes example is two creates, each on a lane of its own, that the
// explorer sends as two frames on one WebSocket.
func TestExplorerLanesExample(t *testing.T) {
	for _, ex := range explorerExamples() {
		if ex.Key != "lanes" {
			continue
		}
		var bodies []struct {
			Model    string `json:"model"`
			StreamID string `json:"stream_id"`
			Input    string `json:"input"`
		}
		if err := json.Unmarshal([]byte(ex.Body), &bodies); err != nil {
			t.Fatalf("the lanes example is not an array of bodies: %v\n%s", err, ex.Body)
		}
		if len(bodies) != 2 || bodies[0].StreamID != "agent_a" || bodies[1].StreamID != "agent_b" {
			t.Fatalf("want lanes agent_a and agent_b: %+v", bodies)
		}
		for _, b := range bodies {
			if b.Model == "" || b.Input == "" || !api.ValidStreamID(b.StreamID) {
				t.Fatalf("not a create the engine runs: %+v", b)
			}
		}
		return
	}
	t.Fatal("no lanes example")
}

// TestPresetLabelSaysTheOrder: the ready-made races' labels say how the
// lanes run, the classroom's that they take turns.
func TestPresetLabelSaysTheOrder(t *testing.T) {
	for cfg, want := range map[*rollout.Config]string{&preset: ", one after another ·", &rollout.Classroom: ", taking turns ·"} {
		if got := presetLabel(*cfg); !strings.Contains(got, want) {
			t.Errorf("presetLabel = %q, want it to hold %q", got, want)
		}
	}
}
