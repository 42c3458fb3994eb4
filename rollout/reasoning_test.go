package rollout_test

import (
	"context"
	"testing"

	"agentloop/app/apptest"
	"agentloop/rollout"
	"agentloop/workload"
)

// A reasoning race runs every lane as a reasoning client, race-wide: each
// turn reasons the same tokens on every lane (the recorded usage says so),
// and the stateless HTTP lanes pay for resending the reasoning items in
// bytes, where WebSocket mode's connection cache holds them.
func TestReasoningRaceReasonsAlikeOnEveryLane(t *testing.T) {
	t.Parallel()
	a := apptest.Start(t)
	runner := rollout.NewRunner(a.URL(), a.DB, nil)
	race := func(reasoning *rollout.RaceReasoning) (*rollout.RunRecord, error) {
		w, err := workload.Parse([]byte(replayWorkload))
		if err != nil {
			t.Fatal(err)
		}
		return runRace(t, a.DB, runner, rollout.Config{Workload: w, Profile: "instant", Seed: 5, Reasoning: reasoning,
			Lanes: []string{rollout.LaneHTTPOptimized, rollout.LaneHTTPChained, rollout.LaneWS}})
	}
	plain, err := race(nil)
	if err != nil {
		t.Fatal(err)
	}
	withReasoning := &rollout.RaceReasoning{Effort: "low", Summary: "auto"}
	reasoned, err := race(withReasoning)
	if err != nil {
		t.Fatal(err)
	}
	if reasoned.Config.Reasoning == nil || *reasoned.Config.Reasoning != *withReasoning {
		t.Fatalf("the stored config lost the reasoning option: %+v", reasoned.Config.Reasoning)
	}

	perTurn := map[string]map[int]int{}
	for _, turn := range reasoned.Turns {
		if turn.Index < 0 {
			continue // the WebSocket warm-up generates nothing
		}
		if perTurn[turn.Lane] == nil {
			perTurn[turn.Lane] = map[int]int{}
		}
		if turn.ReasoningTokens <= 0 || turn.OutputTokens <= turn.ReasoningTokens {
			t.Fatalf("lane %s turn %d: %d reasoning tokens of %d output tokens", turn.Lane, turn.Index, turn.ReasoningTokens, turn.OutputTokens)
		}
		perTurn[turn.Lane][turn.Index] = turn.ReasoningTokens
	}
	want := perTurn[rollout.LaneWS]
	if len(want) < 4 {
		t.Fatalf("the WebSocket lane reasoned on %d turns", len(want))
	}
	distinct := map[int]bool{}
	for lane, got := range perTurn {
		if len(got) != len(want) {
			t.Fatalf("lane %s ran %d turns, ws %d", lane, len(got), len(want))
		}
		for i, n := range want {
			distinct[n] = true
			if got[i] != n {
				t.Errorf("turn %d: lane %s reasoned %d tokens, ws %d", i, lane, got[i], n)
			}
		}
	}
	if len(distinct) < 2 {
		t.Errorf("every turn reasoned %v tokens: the turn does not enter the draw", distinct)
	}
	for _, turn := range plain.Turns {
		if turn.ReasoningTokens != 0 {
			t.Fatalf("a race without the option reasoned: lane %s turn %d", turn.Lane, turn.Index)
		}
	}

	// What resending costs: the stateless lane's uploads grow by far more
	// than the WebSocket lane's, which sends each reasoning item never.
	sent := func(rec *rollout.RunRecord, lane string) int64 {
		var n int64
		for _, turn := range rec.Turns {
			if turn.Lane == lane {
				n += turn.BytesSent
			}
		}
		return n
	}
	httpGrew := sent(reasoned, rollout.LaneHTTPOptimized) - sent(plain, rollout.LaneHTTPOptimized)
	wsGrew := sent(reasoned, rollout.LaneWS) - sent(plain, rollout.LaneWS)
	if httpGrew <= 3*wsGrew || httpGrew <= 0 {
		t.Errorf("reasoning added %d bytes to the HTTP lane's uploads and %d to WebSocket's: resending should cost HTTP far more", httpGrew, wsGrew)
	}
}

func runRace(t *testing.T, db rollout.RunStore, runner *rollout.Runner, cfg rollout.Config) (*rollout.RunRecord, error) {
	t.Helper()
	id, sum, err := runner.Run(context.Background(), cfg, nil)
	if err != nil {
		return nil, err
	}
	for _, l := range sum.Lanes {
		if l.Status != rollout.StatusPassed {
			t.Fatalf("lane %s %s: %s", l.Lane, l.Status, l.Error)
		}
	}
	return rollout.LoadRun(context.Background(), db, id)
}

func TestNormalizeRefusesABadReasoningOption(t *testing.T) {
	for _, r := range []rollout.RaceReasoning{{}, {Effort: "none"}, {Effort: "extreme"}, {Effort: "low", Summary: "long"}} {
		cfg := rollout.Config{Reasoning: &r}
		if err := rollout.Normalize(&cfg); err == nil || err.Status != 400 {
			t.Errorf("reasoning %+v: %v, want a 400", r, err)
		}
	}
	cfg := rollout.Config{Reasoning: &rollout.RaceReasoning{Effort: "high", Summary: "detailed"}}
	if err := rollout.Normalize(&cfg); err != nil {
		t.Fatal(err)
	}
}
