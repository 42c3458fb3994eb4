package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"agentloop/api"
	"agentloop/server/drill"
	"agentloop/server/enginetest"
	"agentloop/server/request"

	"github.com/coder/websocket"
)

func TestDrillAPIArmsListsAndDisarms(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	code, b := h.post("/api/drills", `{"drill":"evict-cache","after_turns":2,"times":3}`)
	if code != http.StatusCreated {
		t.Fatalf("arm: %d %s", code, b)
	}
	var dr api.Drill
	if err := json.Unmarshal(b, &dr); err != nil || dr.ID == "" || dr.Drill != "evict-cache" || dr.AfterTurns != 2 || dr.Times != 3 {
		t.Fatalf("armed %s", b)
	}
	var list drill.DrillList
	getJSON(t, h.url+"/api/drills", &list)
	if list.Object != "list" || len(list.Data) != 1 || list.Data[0].ID != dr.ID || list.Data[0].Firings == nil {
		t.Fatalf("list %+v", list)
	}
	req, _ := http.NewRequest(http.MethodDelete, h.url+"/api/drills/"+dr.ID, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("disarm: %v %v", err, resp.Status)
	}
	resp.Body.Close()
	resp, _ = http.DefaultClient.Do(req)
	if resp.StatusCode != 404 {
		t.Fatalf("disarm twice: %d", resp.StatusCode)
	}
	resp.Body.Close()
	getJSON(t, h.url+"/api/drills", &list)
	if len(list.Data) != 0 {
		t.Fatalf("still armed: %+v", list.Data)
	}
}

func TestDrillAPIBadInputNamesTheParameter(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	for body, param := range map[string]string{
		`{"drill":"explode"}`:                     "drill",
		`{"after_turns":1}`:                       "drill",
		`{"drill":"stall","after_turns":"two"}`:   "after_turns",
		`{"drill":"stall","times":0.5}`:           "times",
		`{"drill":"stall","colour":"red"}`:        "colour",
		`{"drill":"evict-cache","duration_ms":5}`: "duration_ms",
		`{"drill":"stall","scope":""}`:            "scope",
		`{"drill":"stall","scope":"  "}`:          "scope",
		`{"drill":"stall"} {}`:                    "",
		``:                                        "",
	} {
		code, b := h.post("/api/drills", body)
		if code != 400 || decodeError(t, b).Param != param {
			t.Errorf("%s: %d %s, want a 400 naming %q", body, code, b, param)
		}
	}
}

func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %d", url, resp.StatusCode)
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatal(err)
	}
}

func FuzzDecodeDrillSpec(f *testing.F) {
	for _, s := range []string{`{"drill":"evict-cache","after_turns":2,"times":1}`, `{"drill":"stall","duration_ms":50,"scope":"k"}`,
		`{"drill":"http-429"}`, `{"drill":"x"}`, `{}`, `[]`, `{"drill":"stall","times":-1}`, `{"drill":"stall"}{}`, ``} {
		f.Add([]byte(s))
	}
	d := drill.NewDrills(nil, "")
	f.Fuzz(func(t *testing.T, body []byte) {
		spec, err := drill.DecodeDrillSpec(body)
		if err != nil {
			if err.Status != 400 || err.Message == "" {
				t.Fatalf("bad error %+v", err)
			}
			return
		}
		// An accepted spec is complete and arms as it is.
		again := spec
		if e := drill.Check(&again); e != nil || again != spec || spec.Times < 1 {
			t.Fatalf("accepted %+v re-checks as %+v (%v)", spec, again, e)
		}
		dr, e := d.Arm(spec)
		if e != nil {
			return // the registry is full
		}
		d.Disarm(dr.ID)
	})
}

func (h *harness) arm(spec api.DrillSpec) api.Drill {
	h.t.Helper()
	dr, err := h.sh.Drills.Arm(spec)
	if err != nil {
		h.t.Fatal(err)
	}
	return dr
}

const (
	drillCreate = `{"model":"burst","store":false,"stream":true,"input":"Say hello in a few words."}`
	drillWSWarm = `{"type":"response.create","model":"burst","store":false,"generate":false,"input":"You are terse."}`
)

// TestDrillsAtTheProtocol checks what each drill does on the wire, as the
// README's table says, and that the request it hit names it.
func TestDrillsAtTheProtocol(t *testing.T) {
	t.Parallel()
	t.Run("http-429 and http-503 answer with Retry-After", func(t *testing.T) {
		h := newHarness(t)
		h.arm(api.DrillSpec{Drill: api.DrillHTTP429, DurationMS: 1500})
		h.arm(api.DrillSpec{Drill: api.DrillHTTP503, AfterTurns: 1})
		// One client session across the three requests, named by its
		// prompt_cache_key: without one, the session is the TCP connection,
		// and a shared client's idle connection may be gone by the third
		// (the tests run in parallel).
		create := `{"prompt_cache_key":"drills-at-the-protocol",` + drillCreate[1:]
		for _, want := range []struct {
			status           int
			drill, after, ms string
		}{{429, api.DrillHTTP429, "2", "1500"}, {200, "", "", ""}, {503, api.DrillHTTP503, "1", "1000"}} {
			resp, err := http.Post(h.url+"/v1/responses", "application/json", strings.NewReader(create))
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != want.status || resp.Header.Get("Retry-After") != want.after ||
				resp.Header.Get("retry-after-ms") != want.ms || resp.Header.Get(api.HeaderDrill) != want.drill {
				t.Fatalf("got %d %v %s, want %d after %s", resp.StatusCode, resp.Header, b, want.status, want.after)
			}
			if want.status != 200 {
				decodeError(t, b)
			}
		}
		body := metricsBody(t, h)
		for _, d := range []string{api.DrillHTTP429, api.DrillHTTP503} {
			if !regexp.MustCompile(`(?m)^agentloop_drill_firings_total\{drill="` + d + `"(,replica="[^"]*")?\} 1$`).MatchString(body) {
				t.Fatalf("%s's firing not counted in /metrics:\n%s", d, body)
			}
		}
	})
	t.Run("refuse-upgrade answers the handshake with 426", func(t *testing.T) {
		h := newHarness(t)
		h.arm(api.DrillSpec{Drill: api.DrillRefuseUpgrade, AfterTurns: 1})
		h.rawWS("/v1/responses") // the first attempt is let through
		_, resp, err := websocket.Dial(h.ctx(), "ws"+strings.TrimPrefix(h.url, "http")+"/v1/responses", nil)
		if err == nil || resp == nil || resp.StatusCode != http.StatusUpgradeRequired || resp.Header.Get(api.HeaderDrill) != api.DrillRefuseUpgrade {
			t.Fatalf("second upgrade: %v %+v", err, resp)
		}
		h.rawWS("/v1/responses") // times 1: spent
		dr := h.sh.Drills.List()[0]
		if dr.Fired != 1 || !dr.Firings[0].Upgrade {
			t.Fatalf("firings %+v", dr)
		}
	})
	t.Run("refuse-upgrade answers as a gateway does with its status, in its scope", func(t *testing.T) {
		h := newHarness(t)
		h.arm(api.DrillSpec{Drill: api.DrillRefuseUpgrade, Status: http.StatusMethodNotAllowed, Scope: "card"})
		_, resp, err := websocket.Dial(h.ctx(), "ws"+strings.TrimPrefix(h.url, "http")+"/scope/card/v1/responses", nil)
		if err == nil || resp == nil || resp.StatusCode != http.StatusMethodNotAllowed {
			t.Fatalf("upgrade on the scope's mount: %v %+v", err, resp)
		}
	})
	t.Run("evict-cache forgets the cached response", func(t *testing.T) {
		h := newHarness(t)
		h.arm(api.DrillSpec{Drill: api.DrillEvictCache, AfterTurns: 1})
		c := h.rawWS("/v1/responses")
		send(t, c, drillWSWarm)
		warm := readResponse(t, c)
		send(t, c, `{"type":"response.create","model":"burst","store":false,"previous_response_id":"`+warm[len(warm)-1].Response.ID+`","input":"Hi."}`)
		e := readEvent(t, c).AsError()
		if e == nil || e.Code != "previous_response_not_found" || e.Headers[api.HeaderDrill] != api.DrillEvictCache {
			t.Fatalf("continuation after the eviction: %+v", e)
		}
	})
	t.Run("connection-limit answers the create and closes 1000", func(t *testing.T) {
		h := newHarness(t)
		h.arm(api.DrillSpec{Drill: api.DrillConnectionLimit})
		c := h.rawWS("/v1/responses")
		send(t, c, drillWSWarm)
		e := readEvent(t, c).AsError()
		if e == nil || e.Code != "websocket_connection_limit_reached" || e.Headers[api.HeaderDrill] != api.DrillConnectionLimit ||
			!strings.Contains(e.Message, "(60 minutes)") {
			t.Fatalf("got %+v", e)
		}
		_, _, err := c.Read(context.Background())
		if websocket.CloseStatus(err) != websocket.StatusNormalClosure {
			t.Fatalf("close after the limit: %v", err)
		}
	})
	t.Run("connection-limit on a named lane names the lane and closes 1000", func(t *testing.T) {
		h := newHarness(t)
		h.arm(api.DrillSpec{Drill: api.DrillConnectionLimit})
		c := h.rawWS("/v1/responses")
		send(t, c, `{"type":"response.create","stream_id":"sub-1","model":"burst","store":false,"generate":false,"input":"You are terse."}`)
		ev := readEvent(t, c)
		if e := ev.AsError(); e == nil || e.Code != "websocket_connection_limit_reached" || ev.StreamID != "sub-1" {
			t.Fatalf("got %s", ev.Raw)
		}
		_, _, err := c.Read(context.Background())
		if websocket.CloseStatus(err) != websocket.StatusNormalClosure {
			t.Fatalf("close after the limit: %v", err)
		}
	})
	t.Run("drop-mid-stream cuts a WebSocket without a close frame", func(t *testing.T) {
		observed := make(chan api.Trace, 4)
		h := newHarness(t, func(c *enginetest.Config) { c.Observer = traceChan(observed) })
		h.arm(api.DrillSpec{Drill: api.DrillDropMidStream, AfterTurns: 1})
		c := h.rawWS("/v1/responses")
		send(t, c, drillWSWarm) // a warm-up generates nothing to cut, and counts
		readResponse(t, c)
		send(t, c, `{"type":"response.create","model":"burst","store":false,"input":"Say hello in a few words."}`)
		var deltas int
		for {
			_, b, err := c.Read(context.Background())
			if err != nil {
				if websocket.CloseStatus(err) != -1 || deltas == 0 {
					t.Fatalf("after %d deltas: %v", deltas, err)
				}
				break
			}
			ev, _ := api.DecodeEvent(b)
			if api.IsTerminal(ev.Type) {
				t.Fatalf("a terminal event arrived: %s", b)
			}
			if ev.Type == api.EventOutputTextDelta {
				deltas++
			}
		}
		f := h.sh.Drills.List()[0].Firings[0]
		var tr api.Trace
		select { // the engine observes the response once it has ended
		case tr = <-observed:
		case <-h.ctx().Done():
			t.Fatal("the dropped response was never observed")
		}
		if tr.ResponseID != f.ResponseID || tr.Drill != api.DrillDropMidStream || !request.IsWebSocketSession(f.Session) || tr.Session != f.Session {
			t.Fatalf("firing %+v, trace %+v", f, tr)
		}
	})
	t.Run("drop-mid-stream ends an SSE body without its terminal event", func(t *testing.T) {
		h := newHarness(t)
		h.arm(api.DrillSpec{Drill: api.DrillDropMidStream})
		resp, err := http.Post(h.url+"/v1/responses", "application/json", strings.NewReader(drillCreate))
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !bytes.Contains(raw, []byte(api.EventOutputTextDelta)) || bytes.Contains(raw, []byte(api.EventCompleted)) {
			t.Fatalf("body: %s", raw)
		}
	})
	for _, drill := range []string{api.DrillStall, api.DrillSlowFirstToken} {
		t.Run(drill+" holds the stream and records the hold", func(t *testing.T) {
			h := newHarness(t)
			h.arm(api.DrillSpec{Drill: drill, DurationMS: 30})
			evs := h.sseEvents("/v1/responses", drillCreate)
			checkGrammar(t, evs)
			id := evs[0].Response.ID
			tr, _ := h.sh.Traces.Get(id)
			s, ok := tr.Span(api.SpanDrill)
			if tr.Drill != drill || !ok || s.Note != drill || s.Kind != api.Modelled || s.DurationNS < 30e6 {
				t.Fatalf("trace %+v", tr)
			}
			if drill == api.DrillSlowFirstToken {
				q, ok := tr.Span(api.StageQueue)
				if !ok || q.StartNS < s.StartNS+s.DurationNS {
					t.Fatalf("the generation began before the hold ended: %+v", tr.Spans)
				}
			}
		})
	}
}

func metricsBody(t *testing.T, h *harness) string {
	t.Helper()
	resp, err := http.Get(h.url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// traceChan hands each observed trace that names a drill to a channel.
type traceChan chan api.Trace

func (c traceChan) ObserveTrace(t *api.Trace) {
	if t.Drill != "" {
		c <- *t
	}
}

func (traceChan) ObserveOpen(string)  {}
func (traceChan) ObserveClose(string) {}

// A browser cannot set headers on a WebSocket upgrade, so the scope also
// reads from its query alias: a drill scoped to "lane-a" refuses only the
// upgrade whose query names that scope.
func TestScopedDrillReadsTheUpgradesQueryAlias(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.arm(api.DrillSpec{Drill: api.DrillRefuseUpgrade, Scope: "lane-a"})
	h.rawWS("/v1/responses?agentloop_scope=lane-b") // another scope: let through
	_, resp, err := websocket.Dial(h.ctx(), "ws"+strings.TrimPrefix(h.url, "http")+"/v1/responses?agentloop_scope=lane-a", nil)
	if err == nil || resp == nil || resp.StatusCode != http.StatusUpgradeRequired || resp.Header.Get(api.HeaderDrill) != api.DrillRefuseUpgrade {
		t.Fatalf("the upgrade scoped lane-a by its query: %v %+v", err, resp)
	}
	if dr := h.sh.Drills.List()[0]; dr.Fired != 1 {
		t.Fatalf("firings %+v", dr)
	}
}
