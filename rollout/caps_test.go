package rollout_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"agentloop/api"
	"agentloop/rollout"
	"agentloop/workload"
)

// turnsWorkload is a workload of n turns, each followed by toolMs of tool
// time, each answering with out tokens.
func turnsWorkload(n int, toolMs float64, out int) *workload.Workload {
	w := &workload.Workload{Version: workload.Version}
	for range n {
		w.Turns = append(w.Turns, workload.Turn{Input: []workload.Input{{Kind: workload.KindUserMessage, Tokens: 1}}, OutputTokens: out, ToolTimeMs: toolMs})
	}
	return w
}

// TestRaceTurnsAreCapped: lanes × repeats × turns past MaxRaceTurns is a
// 400 naming the cap; 2 lanes × 3 repeats of 1,000 turns pass.
func TestRaceTurnsAreCapped(t *testing.T) {
	w := turnsWorkload(1000, 0, 1)
	ok := rollout.Config{Workload: w, Lanes: []string{rollout.LaneHTTPOptimized, rollout.LaneWS}, Repeats: 3}
	if err := rollout.Normalize(&ok); err != nil {
		t.Fatalf("2 lanes × 3 repeats × 1,000 turns: %v", err)
	}
	if ok.WorkloadSummary == nil || ok.WorkloadSummary.Turns != 1000 {
		t.Fatalf("summary %+v", ok.WorkloadSummary)
	}
	big := rollout.Config{Workload: w, Repeats: 20} // the default 4 lanes: 80,000 turns
	err := rollout.Normalize(&big)
	if err == nil || err.Status != 400 || !strings.Contains(err.Message, "max_race_turns") || !strings.Contains(err.Message, "80000 turns") {
		t.Fatalf("4 lanes × 20 repeats × 1,000 turns: %v", err)
	}
}

// TestRaceLongerThanItsTimeLimitIsRefused: a race whose recorded tool
// times alone pass the runner's time limit is refused before anything is
// stored (the runner has no store here); lanes together wait at once.
func TestRaceLongerThanItsTimeLimitIsRefused(t *testing.T) {
	w := turnsWorkload(4, 10*60*1000, 1) // 3 waits of 10 minutes
	runner := rollout.NewRunner("http://127.0.0.1:1", nil, nil)
	cfg := rollout.Config{Workload: w, Repeats: 20, Profile: api.ModelSpark}
	_, err := runner.Start("client", cfg, nil)
	var ae *api.Error
	if err == nil || !errors.As(err, &ae) || ae.Status != 400 || !strings.Contains(ae.Message, "min_duration") {
		t.Fatalf("20 repeats of 30 minutes' tool time: %v", err)
	}
	c := cfg
	if err := rollout.Normalize(&c); err != nil {
		t.Fatal(err)
	}
	if d := rollout.MinDuration(c); d < 20*30*time.Minute {
		t.Fatalf("MinDuration = %v", d)
	}
	c.Sequential = true
	if d := rollout.MinDuration(c); d < 4*20*30*time.Minute {
		t.Fatalf("lanes one after another: MinDuration = %v", d)
	}
	// With a fixed tool time of 0 the same workload is quick.
	c.Sequential, c.FixedToolTime, c.ToolTimeMs = false, true, 0
	if d := rollout.MinDuration(c); d > time.Second {
		t.Fatalf("fixed tool time 0: MinDuration = %v", d)
	}
}
