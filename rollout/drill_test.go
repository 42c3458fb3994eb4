package rollout_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"agentloop/api"
	"agentloop/app"
	"agentloop/app/apptest"
	"agentloop/rollout"
	"agentloop/workload"
)

// drillTraces keeps the traces the engine observed with a drill on them,
// the refused requests' included (they never reach the trace ring).
type drillTraces struct {
	mu      sync.Mutex
	traces  []api.Trace
	changed chan struct{} // closed and replaced on each trace
}

func newDrillTraces() *drillTraces { return &drillTraces{changed: make(chan struct{})} }

func (d *drillTraces) ObserveTrace(t *api.Trace) {
	if t.Drill != "" {
		d.mu.Lock()
		d.traces = append(d.traces, *t)
		close(d.changed)
		d.changed = make(chan struct{})
		d.mu.Unlock()
	}
}

// with waits until n traces name drill (the engine observes a request
// after its reply, so it may lag the client) and returns them; it fails
// the test if they do not come.
func (d *drillTraces) with(t *testing.T, drill string, n int) []api.Trace {
	t.Helper()
	timeout := time.After(20 * time.Second)
	for {
		d.mu.Lock()
		var out []api.Trace
		for _, tr := range d.traces {
			if tr.Drill == drill {
				out = append(out, tr)
			}
		}
		changed := d.changed
		d.mu.Unlock()
		if len(out) >= n {
			return out
		}
		select {
		case <-changed:
		case <-timeout:
			t.Fatalf("%d traces name %s, want %d", len(out), drill, n)
		}
	}
}

func apiJSON(t *testing.T, method, url string, body, out any) int {
	t.Helper()
	var rd *bytes.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	} else {
		rd = bytes.NewReader(nil)
	}
	req, _ := http.NewRequest(method, url, rd)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if out != nil {
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
			t.Fatal(err)
		}
	}
	return resp.StatusCode
}

// TestEveryDrillTheAgentRecovers arms each drill through /api/drills,
// runs one short lane against it, and checks that the lane still passes
// its success check, that the drill fired and is recorded (GET
// /api/drills and the trace of the request it hit), and that the lane's
// turn shows the recovery and its cost.
// shortWorkload is the race of the tests whose point is not a scenario's
// length or its long context: a few short turns, each with a tool call but
// the last, enough for every drill to fire on a turn after the first ones
// and for the lane to go on after it. Recovery, connections, traces and the
// stack's costs are the lane's, the same for a workload as for a scenario
// (TestRaceEveryScenarioEveryLanePasses plays the scenarios whole).
func shortWorkload(t *testing.T) *workload.Workload {
	t.Helper()
	w, err := workload.Parse([]byte(`{
  "version": 1, "source": "test", "instructions_tokens": 600, "tools_tokens": 300, "tools": 1,
  "turns": [
    {"input": [{"kind": "user_message", "tokens": 40}], "output_tokens": 30, "calls": [{"argument_tokens": 10}]},
    {"input": [{"kind": "tool_output", "tokens": 200}], "output_tokens": 30, "calls": [{"argument_tokens": 10}]},
    {"input": [{"kind": "tool_output", "tokens": 200}], "output_tokens": 30, "calls": [{"argument_tokens": 10}]},
    {"input": [{"kind": "tool_output", "tokens": 200}], "output_tokens": 30, "calls": [{"argument_tokens": 10}]},
    {"input": [{"kind": "tool_output", "tokens": 200}], "output_tokens": 30, "calls": [{"argument_tokens": 10}]},
    {"input": [{"kind": "tool_output", "tokens": 200}], "output_tokens": 30}
  ]
}`))
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func TestEveryDrillTheAgentRecovers(t *testing.T) {
	t.Parallel() // a whole race on its own engine: overlaps the other slow races of this package
	cases := []struct {
		drill      string
		lane       string
		after      int
		durationMS int64
		action     string // the recovery the agent made; "" when it only waits
		wantError  string
	}{
		{api.DrillEvictCache, rollout.LaneWS, 2, 0, rollout.ActionFullContext, "previous_response_not_found"},
		{api.DrillConnectionLimit, rollout.LaneWS, 2, 0, rollout.ActionReconnect, "websocket_connection_limit_reached"},
		{api.DrillRefuseUpgrade, rollout.LaneWS, 0, 0, rollout.ActionHTTP, "upgrade refused (426)"},
		{api.DrillDropMidStream, rollout.LaneWS, 2, 0, rollout.ActionReconnect, "stream dropped"},
		{api.DrillDropMidStream, rollout.LaneHTTPOptimized, 1, 0, rollout.ActionRetry, "stream dropped"},
		{api.DrillStall, rollout.LaneHTTPChained, 1, 40, "", ""},
		{api.DrillHTTP429, rollout.LaneHTTPChained, 1, 20, rollout.ActionRetry, "rate_limit_exceeded"},
		{api.DrillHTTP503, rollout.LaneHTTP, 1, 20, rollout.ActionRetry, "server_error"},
		{api.DrillSlowFirstToken, rollout.LaneWS, 1, 40, "", ""},
	}
	for _, c := range cases {
		t.Run(c.drill+"/"+c.lane, func(t *testing.T) {
			seen := newDrillTraces()
			a := apptest.Start(t, func(cfg *app.Config) { cfg.Observer = seen })
			var armed api.Drill
			if code := apiJSON(t, http.MethodPost, a.URL()+"/api/drills",
				api.DrillSpec{Drill: c.drill, AfterTurns: c.after, DurationMS: c.durationMS}, &armed); code != http.StatusCreated {
				t.Fatalf("arm: %d", code)
			}
			runner := rollout.NewRunner(a.URL(), a.DB, nil)
			id, sum, err := runner.Run(context.Background(), rollout.Config{Workload: shortWorkload(t), Profile: "instant",
				Lanes: []string{c.lane}, Seed: 3}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if l := sum.Lanes[0]; l.Status != rollout.StatusPassed {
				t.Fatalf("lane %s %s: %s", l.Lane, l.Status, l.Error)
			}

			// The firing is recorded on the drill...
			var list struct{ Data []api.Drill }
			apiJSON(t, http.MethodGet, a.URL()+"/api/drills", nil, &list)
			if len(list.Data) != 1 || list.Data[0].Fired != 1 || len(list.Data[0].Firings) != 1 {
				t.Fatalf("drills after the race: %+v", list.Data)
			}
			f := list.Data[0].Firings[0]
			if f.AtUnixNS == 0 || (c.drill == api.DrillRefuseUpgrade) != f.Upgrade || (f.Session == "") != f.Upgrade {
				t.Fatalf("firing %+v", f)
			}
			// ...and in the trace of the request it hit.
			traces := seen.with(t, c.drill, 1)
			if len(traces) != 1 {
				t.Fatalf("%d traces name %s", len(traces), c.drill)
			}
			if f.ResponseID != "" && traces[0].ResponseID != f.ResponseID {
				t.Fatalf("firing hit %s, the trace is %s", f.ResponseID, traces[0].ResponseID)
			}

			// The run shows the drill on the turn it hit, with the recovery.
			rec, err := rollout.LoadRun(context.Background(), a.DB, id)
			if err != nil {
				t.Fatal(err)
			}
			var hit *rollout.Turn
			for i := range rec.Turns {
				if rec.Turns[i].Error != "" {
					t.Fatalf("turn %d failed: %s", rec.Turns[i].Index, rec.Turns[i].Error)
				}
				if len(rec.Turns[i].Recoveries) > 0 || slices.Contains(rec.Turns[i].Drills, c.drill) {
					if hit != nil {
						t.Fatalf("turns %d and %d both show the drill", hit.Index, rec.Turns[i].Index)
					}
					hit = &rec.Turns[i]
				}
			}
			if hit == nil {
				t.Fatal("no turn shows the drill")
			}
			var recovery, held int64
			for _, s := range hit.Stages {
				if s.Name == rollout.StageRecovery {
					if s.Kind == "measured" {
						recovery += s.DurationNS
					} else {
						held += s.DurationNS
					}
				}
			}
			if c.action == "" {
				// The stream was held: the engine's drill span is the turn's
				// modelled recovery time.
				if len(hit.Recoveries) != 0 || held < c.durationMS*1e6 || !slices.Contains(hit.Drills, c.drill) {
					t.Fatalf("turn %d: recoveries %+v, held %d ns, drills %v", hit.Index, hit.Recoveries, held, hit.Drills)
				}
				return
			}
			if len(hit.Recoveries) != 1 || hit.Recoveries[0].Action != c.action || hit.Recoveries[0].Error != c.wantError {
				t.Fatalf("turn %d recoveries %+v, want one %q after %q", hit.Index, hit.Recoveries, c.action, c.wantError)
			}
			if hit.RecoveryNS <= 0 || recovery != hit.RecoveryNS || !slices.Contains(hit.Drills, c.drill) {
				t.Fatalf("turn %d: recovery %d ns, stage %d ns, drills %v", hit.Index, hit.RecoveryNS, recovery, hit.Drills)
			}
			if c.durationMS > 0 && hit.RecoveryNS < c.durationMS*1e6 {
				t.Fatalf("the retry did not wait for retry-after-ms: %d ns", hit.RecoveryNS)
			}
		})
	}
}

// TestRaceDrillScheduleHitsOnlyItsLane runs a race whose config arms
// drills on two lanes, the same drill on both among them: each fires on
// its own lane only, the lanes recover and pass, the run names each drill
// on the turn it hit, and the drills are disarmed when the lanes end.
func TestRaceDrillScheduleHitsOnlyItsLane(t *testing.T) {
	t.Parallel() // a whole race on its own engine: overlaps the other slow races of this package
	seen := newDrillTraces()
	a := apptest.Start(t, func(cfg *app.Config) { cfg.Observer = seen })
	runner := rollout.NewRunner(a.URL(), a.DB, nil)
	id, sum, err := runner.Run(context.Background(), rollout.Config{Workload: shortWorkload(t), Profile: "instant",
		Lanes: []string{rollout.LaneWS, rollout.LaneHTTPOptimized}, Seed: 3, Drills: []rollout.LaneDrill{
			{Drill: api.DrillDropMidStream, Lane: rollout.LaneWS, AfterTurns: 2},
			{Drill: api.DrillDropMidStream, Lane: rollout.LaneHTTPOptimized, AfterTurns: 1},
			{Drill: api.DrillHTTP503, Lane: rollout.LaneHTTPOptimized, AfterTurns: 3, DurationMS: 10},
		}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range sum.Lanes {
		if l.Status != rollout.StatusPassed {
			t.Fatalf("lane %s %s: %s", l.Lane, l.Status, l.Error)
		}
	}
	rec, err := rollout.LoadRun(context.Background(), a.DB, id)
	if err != nil {
		t.Fatal(err)
	}
	hits := map[string][]string{}
	for _, turn := range rec.Turns {
		hits[turn.Lane] = append(hits[turn.Lane], turn.Drills...)
	}
	if !slices.Equal(hits[rollout.LaneWS], []string{api.DrillDropMidStream}) ||
		!slices.Equal(hits[rollout.LaneHTTPOptimized], []string{api.DrillDropMidStream, api.DrillHTTP503}) {
		t.Fatalf("drills per lane: %v", hits)
	}
	if len(seen.with(t, api.DrillDropMidStream, 2)) != 2 || len(seen.with(t, api.DrillHTTP503, 1)) != 1 {
		t.Fatal("each drill should have fired once")
	}
	var list struct{ Data []api.Drill }
	apiJSON(t, http.MethodGet, a.URL()+"/api/drills", nil, &list)
	if len(list.Data) != 0 {
		t.Fatalf("drills left armed after the race: %+v", list.Data)
	}
}

func TestRunAPIRefusesBadDrillSchedules(t *testing.T) {
	a := apptest.Start(t)
	for _, c := range []struct {
		drills []map[string]any
		param  string
	}{
		{[]map[string]any{{"drill": "explode", "lane": "ws"}}, "drills[0].drill"},
		{[]map[string]any{{"drill": "stall", "lane": "http"}}, "drills[0].lane"},               // not one of the race's lanes
		{[]map[string]any{{"drill": "evict-cache", "lane": "http-chained"}}, "drills[0].lane"}, // a WebSocket drill
		{[]map[string]any{{"drill": "stall", "lane": "ws", "after_turns": -1}}, "drills[0].after_turns"},
		{[]map[string]any{{"drill": "connection-limit", "lane": "ws", "after_ms": -1}}, "drills[0].after_ms"},
		{[]map[string]any{{"drill": "stall", "lane": "ws", "colour": "red"}}, "colour"},
	} {
		var out struct{ Error api.WireError }
		code := apiJSON(t, http.MethodPost, a.URL()+"/api/runs", map[string]any{"scenario": rollout.Scenarios()[0].Name,
			"profile": "instant", "lanes": []string{"ws", "http-chained"}, "drills": c.drills}, &out)
		if code != 400 || out.Error.Param != c.param {
			t.Errorf("%v: %d %+v, want a 400 naming %s", c.drills, code, out.Error, c.param)
		}
	}
}

func (*drillTraces) ObserveOpen(string)  {}
func (*drillTraces) ObserveClose(string) {}
