package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"agentloop/app/apptest"
	"agentloop/inspect"
	"agentloop/internal/wait"
	"agentloop/rollout"
	"agentloop/workload"
)

// TestInspectorExportsARaceAsItsWorkload: a replayed workload's sessions,
// as the inspector saw them, export (GET /api/sessions/{id}/workload) as
// the same workload: the same turns, calls and output tokens exactly, the
// new input within the render's framing, and tool times no shorter than
// the ones replayed (the server sees them with the round trip).
func TestInspectorExportsARaceAsItsWorkload(t *testing.T) {
	want, err := workload.Parse([]byte(`{"version":1,"instructions_tokens":300,"tools_tokens":50,"tools":1,"turns":[
		{"input":[{"kind":"user_message","tokens":40}],"output_tokens":60,"calls":[{"argument_tokens":25}],"tool_time_ms":30},
		{"input":[{"kind":"tool_output","tokens":500}],"output_tokens":90,"calls":[{"argument_tokens":30},{"argument_tokens":12}],"tool_time_ms":20},
		{"input":[{"kind":"tool_output","tokens":300},{"kind":"tool_output","tokens":20}],"output_tokens":150}]}`))
	if err != nil {
		t.Fatal(err)
	}
	a := apptest.Start(t)
	runner := rollout.NewRunner(a.URL(), a.DB, nil)
	lanes := []string{rollout.LaneHTTPOptimized, rollout.LaneWS}
	runID, sum, err := runner.Run(context.Background(), rollout.Config{Workload: want, Profile: "instant", Lanes: lanes}, nil)
	if err != nil || sum.Lanes[0].Status != rollout.StatusPassed || sum.Lanes[1].Status != rollout.StatusPassed {
		t.Fatalf("race: %v %+v", err, sum)
	}
	// The inspector records asynchronously: wait until both sessions hold
	// every response (the WebSocket's warm-up too).
	var sessions []inspect.Session
	wait.UntilErr(t, "both sessions to hold every response", func() error {
		_, body := do(t, "GET", a.URL()+"/api/sessions", "", nil)
		var list struct{ Data []inspect.Session }
		if err := json.Unmarshal([]byte(body), &list); err != nil {
			t.Fatalf("%s: %v", body, err)
		}
		sessions = sessions[:0]
		for _, s := range list.Data {
			if s.Summary.Turns >= len(want.Turns) {
				sessions = append(sessions, s)
			}
		}
		if len(sessions) == 2 && sessions[0].Summary.Turns+sessions[1].Summary.Turns == 2*len(want.Turns)+1 {
			return nil
		}
		return fmt.Errorf("sessions: %+v", list.Data)
	})
	// The race's sessions are tagged with its run and lane, and can be
	// filtered out.
	tags := map[string]bool{}
	for _, s := range sessions {
		tags[s.Race] = true
	}
	if !tags[runID+"/"+rollout.LaneHTTPOptimized] || !tags[runID+"/"+rollout.LaneWS] {
		t.Errorf("race tags %v, want %s/{http-optimized,ws}", tags, runID)
	}
	if _, body := do(t, "GET", a.URL()+"/api/sessions?races=hide", "", nil); strings.Contains(body, runID) {
		t.Errorf("?races=hide lists the race's sessions: %s", body)
	}
	for _, s := range sessions {
		resp, body := do(t, "GET", a.URL()+"/api/sessions/"+s.ID+"/workload", "", nil)
		if resp.StatusCode != 200 {
			t.Fatalf("%s: %d %s", s.ID, resp.StatusCode, body)
		}
		got, err := workload.Parse([]byte(body))
		if err != nil {
			t.Fatalf("%s: %v\n%s", s.ID, err, body)
		}
		if got.Source != "inspector" || len(got.Turns) != len(want.Turns) || got.Tools != 1 {
			t.Fatalf("%s (%s): %s", s.ID, s.Transport, body)
		}
		// Instructions and tools count their framing too.
		if d := got.InstructionsTokens - want.InstructionsTokens; d < 0 || d > 16 {
			t.Errorf("%s: instructions %d, replayed %d", s.Transport, got.InstructionsTokens, want.InstructionsTokens)
		}
		if d := got.ToolsTokens - want.ToolsTokens; d < 0 || d > 64 {
			t.Errorf("%s: tools %d, replayed %d", s.Transport, got.ToolsTokens, want.ToolsTokens)
		}
		for i, g := range got.Turns {
			w := want.Turns[i]
			if g.OutputTokens != w.OutputTokens || len(g.Calls) != len(w.Calls) || len(g.Input) != len(w.Input) {
				t.Errorf("%s turn %d: %+v, replayed %+v", s.Transport, i, g, w)
				continue
			}
			for j, c := range g.Calls {
				if c != w.Calls[j] {
					t.Errorf("%s turn %d call %d: %d argument tokens, replayed %d", s.Transport, i, j, c.ArgumentTokens, w.Calls[j].ArgumentTokens)
				}
			}
			for j, in := range g.Input {
				if d := in.Tokens - w.Input[j].Tokens; in.Kind != w.Input[j].Kind || d < 0 || d > workload.FramingPerItem {
					t.Errorf("%s turn %d input %d: %+v, replayed %+v", s.Transport, i, j, in, w.Input[j])
				}
			}
			if g.ToolTimeMs < w.ToolTimeMs {
				t.Errorf("%s turn %d: tool time %.1fms, replayed %.1fms", s.Transport, i, g.ToolTimeMs, w.ToolTimeMs)
			}
		}
		if t.Failed() {
			t.Logf("%s", body)
		}
	}
	if resp, body := do(t, "GET", a.URL()+"/api/sessions/sess_nope/workload", "", nil); resp.StatusCode != 404 || !strings.Contains(body, "not found") {
		t.Errorf("unknown session: %d %s", resp.StatusCode, body)
	}
}
