package rollout_test

import (
	"context"
	"strings"
	"testing"

	"agentloop/app/apptest"
	"agentloop/rollout"
	"agentloop/workload"
)

const replayWorkload = `{
  "version": 1, "source": "test", "instructions_tokens": 1500, "tools_tokens": 900, "tools": 1,
  "turns": [
    {"input": [{"kind": "user_message", "tokens": 40}], "output_tokens": 60, "calls": [{"argument_tokens": 25}], "tool_time_ms": 3},
    {"input": [{"kind": "tool_output", "tokens": 1200}], "output_tokens": 90, "calls": [{"argument_tokens": 30}, {"argument_tokens": 12}], "tool_time_ms": 2},
    {"input": [{"kind": "tool_output", "tokens": 300}, {"kind": "tool_output", "tokens": 20}], "output_tokens": 150, "tool_time_ms": 1},
    {"input": [{"kind": "user_message", "tokens": 7}], "output_tokens": 1}
  ]
}`

// expectedInput is a replayed turn's prompt as docs/workload.md computes
// it: instructions, tools, everything earlier turns added and said, and
// this turn's new input.
func expectedInput(w *workload.Workload, i int) int {
	n := w.InstructionsTokens + w.ToolsTokens
	for j := range i {
		n += w.Turns[j].NewInputTokens() + w.Turns[j].OutputTokens
	}
	return n + w.Turns[i].NewInputTokens()
}

// TestRaceReplaysWorkload: every lane replays the workload turn by turn
// with the recorded output tokens exactly, and input tokens within the
// render framing docs/workload.md states.
func TestRaceReplaysWorkload(t *testing.T) {
	t.Parallel()
	w, err := workload.Parse([]byte(replayWorkload))
	if err != nil {
		t.Fatal(err)
	}
	a, rec := replayPasses(t, rollout.Config{Workload: w, Profile: "instant", Seed: 3})
	if rec.Config.Scenario != rollout.WorkloadScenario {
		t.Errorf("stored as scenario %q", rec.Config.Scenario)
	}
	// The summary carries the workload's answer, for the live page.
	if got := rec.Summary.WorkloadAnswer; !strings.HasPrefix(got, "Your workload: ") || got != rollout.WorkloadAnswer(rec.Config, rec.Summary) {
		t.Errorf("the summary's workload answer %q", got)
	}
	// The run names the workload by its content's id and holds only its
	// summary; the workload is stored once, compact.
	canonical, _ := w.Canonical()
	stored, _, err := a.DB.GetRun(context.Background(), rec.ID)
	if err != nil || stored.WorkloadID != workload.ID(canonical) || rec.Config.WorkloadID != stored.WorkloadID ||
		strings.Contains(string(stored.Config), `"turns":[`) || rec.Config.WorkloadSummary == nil || rec.Config.WorkloadSummary.Turns != len(w.Turns) {
		t.Fatalf("stored run %+v (%v), config %s", stored, err, stored.Config)
	}
	if sw, err := a.DB.GetWorkload(context.Background(), stored.WorkloadID); err != nil || string(sw.JSON) != string(canonical) {
		t.Fatalf("stored workload: %v", err)
	}
	seen := map[string]int{}
	for _, turn := range rec.Turns {
		if turn.Index < 0 {
			continue // the WebSocket's warm-up
		}
		seen[turn.Lane]++
		wt := w.Turns[turn.Index]
		if turn.OutputTokens != wt.OutputTokens {
			t.Errorf("%s turn %d: output_tokens %d, recorded %d", turn.Lane, turn.Index, turn.OutputTokens, wt.OutputTokens)
		}
		if len(turn.Calls) != len(wt.Calls) {
			t.Errorf("%s turn %d: %d calls, recorded %d", turn.Lane, turn.Index, len(turn.Calls), len(wt.Calls))
		}
		want := expectedInput(w, turn.Index)
		if d := turn.InputTokens - want; d < 0 || d > workload.InputFraming(w, turn.Index) {
			t.Errorf("%s turn %d: input_tokens %d, expected %d (+%d framing at most)", turn.Lane, turn.Index, turn.InputTokens, want, workload.InputFraming(w, turn.Index))
		}
		t.Logf("%s turn %d: input %d expected %d", turn.Lane, turn.Index, turn.InputTokens, want)
	}
	for _, lane := range rec.Config.Lanes {
		if seen[lane] != len(w.Turns) {
			t.Errorf("lane %s stored %d turns", lane, seen[lane])
		}
	}
}

func TestRaceRefusesBadWorkload(t *testing.T) {
	w, _ := workload.Parse([]byte(replayWorkload))
	cfg := rollout.Config{Workload: w, Lanes: []string{rollout.LanePrototype}}
	if err := rollout.Normalize(&cfg); err == nil || err.Param != "lanes" {
		t.Fatalf("prototype lane: %v", err)
	}
	bad := *w
	bad.Turns = nil
	cfg = rollout.Config{Workload: &bad}
	if err := rollout.Normalize(&cfg); err == nil || err.Param != "workload" || !strings.Contains(err.Message, "turns: a workload needs at least one turn") {
		t.Fatalf("empty workload: %v", err)
	}
}

// TestRaceReplaysWorkloadThroughDrills: a workload race takes a drill
// schedule as a scenario race does; the lanes recover and still replay
// every turn with the recorded output.
func TestRaceReplaysWorkloadThroughDrills(t *testing.T) {
	t.Parallel()
	w, err := workload.Parse([]byte(replayWorkload))
	if err != nil {
		t.Fatal(err)
	}
	a := apptest.Start(t)
	runner := rollout.NewRunner(a.URL(), a.DB, nil)
	id, sum, err := runner.Run(context.Background(), rollout.Config{Workload: w, Profile: "instant", Seed: 3,
		Lanes: []string{rollout.LaneWS, rollout.LaneHTTPOptimized}, Drills: []rollout.LaneDrill{
			{Drill: "evict-cache", Lane: rollout.LaneWS, AfterTurns: 2},
			{Drill: "http-503", Lane: rollout.LaneHTTPOptimized, AfterTurns: 1, DurationMS: 10},
		}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range sum.Lanes {
		if l.Status != rollout.StatusPassed || l.Turns != len(w.Turns) {
			t.Fatalf("lane %s %s after %d turns: %s", l.Lane, l.Status, l.Turns, l.Error)
		}
	}
	rec, err := rollout.LoadRun(context.Background(), a.DB, id)
	if err != nil {
		t.Fatal(err)
	}
	hit := map[string]bool{}
	for _, turn := range rec.Turns {
		if len(turn.Drills) > 0 {
			hit[turn.Lane] = true
		}
		if turn.Index >= 0 && turn.OutputTokens != w.Turns[turn.Index].OutputTokens {
			t.Errorf("%s turn %d: output_tokens %d", turn.Lane, turn.Index, turn.OutputTokens)
		}
	}
	if !hit[rollout.LaneWS] || !hit[rollout.LaneHTTPOptimized] {
		t.Errorf("drills hit %v, want both lanes", hit)
	}
}
