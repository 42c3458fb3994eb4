package rollout_test

import (
	"context"
	"slices"
	"sort"
	"testing"

	"agentloop/apistack"
	"agentloop/app/apptest"
	"agentloop/rollout"
)

// TestLanesTakingTurns races three lanes that take turns on the short
// scenario: no request overlaps another anywhere in the race, yet the
// lanes move together; each lane's own clock leaves out its waits, so the
// race's wall clock holds every lane's total; the race clock never goes
// back; and Estimate's modelled stack matches what the engine modelled.
func TestLanesTakingTurns(t *testing.T) {
	t.Parallel()
	a := apptest.Start(t)
	runner := rollout.NewRunner(a.URL(), a.DB, nil)
	// The one-click race's stack with a classifier ten times as fast, so
	// that the modelled part is there but short.
	stack := apistack.DefaultRace
	stack.Preset, stack.ClassifyTPS, stack.ClassifyTPSBaseline = "custom", stack.ClassifyTPS*10, stack.ClassifyTPSBaseline*10
	cfg := rollout.Config{Scenario: "quick-fix", Profile: "instant", Lanes: []string{rollout.LaneHTTPOptimized, rollout.LaneHTTPChained, rollout.LaneWS},
		Seed: 1, TakeTurns: true, Stack: stack}
	var clocks []int64
	var last rollout.Snapshot
	id, sum, err := runner.Run(context.Background(), cfg, func(s rollout.Snapshot) {
		clocks = append(clocks, s.ClockNS)
		last = s
	})
	if err != nil {
		t.Fatal(err)
	}
	if !sum.TakeTurns || sum.Sequential {
		t.Errorf("summary order: take turns %v, sequential %v", sum.TakeTurns, sum.Sequential)
	}
	rec, err := rollout.LoadRun(context.Background(), a.DB, id)
	if err != nil {
		t.Fatal(err)
	}

	// Every request, warm-ups included, on the wall clock: at most one is
	// in flight at any time.
	type edge struct {
		at    int64
		delta int
	}
	var edges []edge
	firstEnd, lastStart := map[string]int64{}, map[string]int64{}
	for _, turn := range rec.Turns {
		if turn.Error != "" {
			t.Fatalf("lane %s turn %d: %s", turn.Lane, turn.Index, turn.Error)
		}
		start, end := turn.SentUnixNS, turn.SentUnixNS+turn.DoneNS-turn.SentNS
		edges = append(edges, edge{start, +1}, edge{end, -1})
		if e, ok := firstEnd[turn.Lane]; !ok || end < e {
			firstEnd[turn.Lane] = end
		}
		lastStart[turn.Lane] = max(lastStart[turn.Lane], start)
	}
	sort.Slice(edges, func(i, j int) bool {
		if edges[i].at != edges[j].at {
			return edges[i].at < edges[j].at
		}
		return edges[i].delta < edges[j].delta // an end before a start at the same instant
	})
	inFlight, most := 0, 0
	for _, e := range edges {
		inFlight += e.delta
		most = max(most, inFlight)
	}
	if most != 1 {
		t.Errorf("%d requests were in flight at once; lanes taking turns send one at a time", most)
	}
	// The lanes move together: every lane's first request ends before any
	// lane's last one starts.
	for la, end := range firstEnd {
		for lb, start := range lastStart {
			if end > start {
				t.Errorf("lane %s's first request ended after lane %s's last began: the lanes ran one after another", la, lb)
			}
		}
	}

	// Own clocks: the lanes never overlap, so their totals fit in the
	// race's wall clock; each lane's turns end within its own total.
	var totals int64
	var longest int64
	for _, l := range sum.Lanes {
		if l.Status != rollout.StatusPassed {
			t.Fatalf("lane %s %s: %s", l.Lane, l.Status, l.Error)
		}
		totals += l.TotalNS
		longest = max(longest, l.TotalNS)
		for _, turn := range rec.Turns {
			if turn.Lane == l.Lane && turn.DoneNS+turn.ToolNS > l.TotalNS {
				t.Errorf("lane %s turn %d ends at %d ns, past its own total %d ns", l.Lane, turn.Index, turn.DoneNS+turn.ToolNS, l.TotalNS)
			}
		}
	}
	if totals > sum.ElapsedNS {
		t.Errorf("the lanes' own totals add up to %d ns, more than the race's wall clock %d ns: an own clock counted a wait", totals, sum.ElapsedNS)
	}
	if !slices.IsSorted(clocks) {
		t.Errorf("the race clock went back: %v", clocks)
	}
	if !last.Final() || last.ClockNS != longest {
		t.Errorf("final race clock %d ns, want the longest lane's own total %d ns", last.ClockNS, longest)
	}

	// Estimate's inputs: with no round trip, no tool time and the instant
	// profile, a lane's estimate is its modelled stack alone, which the
	// engine recorded turn by turn.
	n := cfg
	if err := rollout.Normalize(&n); err != nil {
		t.Fatal(err)
	}
	for _, lane := range cfg.Lanes {
		one := n
		one.Lanes = []string{lane}
		est := rollout.Estimate(one)
		var modelled int64
		for _, turn := range rec.Turns {
			for _, s := range turn.Stages {
				if turn.Lane == lane && s.Name == rollout.StageAPIStack {
					modelled += s.DurationNS
				}
			}
		}
		if ratio := float64(est.Nanoseconds()) / float64(modelled); modelled == 0 || ratio < 1/1.5 || ratio > 1.5 {
			t.Errorf("lane %s: estimated stack %v, the engine modelled %d ns (want within a factor of 1.5)", lane, est, modelled)
		}
	}
}

// TestLanesTakingTurnsCancel: a take-turns race of two repeats, cancelled
// in its second, ends as interrupted, with no lane left waiting for the
// baton; the first repeat's lanes passed.
func TestLanesTakingTurnsCancel(t *testing.T) {
	t.Parallel()
	a := apptest.Start(t)
	runner := rollout.NewRunner(a.URL(), a.DB, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cfg := rollout.Config{Scenario: "quick-fix", Profile: "instant", Lanes: []string{rollout.LaneHTTPOptimized, rollout.LaneWS},
		Seed: 1, TakeTurns: true, Repeats: 2}
	id, _, err := runner.Run(ctx, cfg, func(s rollout.Snapshot) {
		for _, l := range s.Lanes {
			if l.Repeat == 1 && l.Turn >= 2 {
				cancel()
			}
		}
	})
	if err == nil {
		t.Fatal("the cancelled race ended without an error")
	}
	rec, err := rollout.LoadRun(context.Background(), a.DB, id)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Status != rollout.StatusInterrupted {
		t.Fatalf("status %s, want interrupted", rec.Status)
	}
	first := map[string]bool{}
	for _, turn := range rec.Turns {
		if turn.Repeat == 0 && turn.Error == "" && len(turn.Calls) == 0 && turn.Index >= 0 {
			first[turn.Lane] = true // the repeat's last turn: its final answer
		}
	}
	if len(first) != len(cfg.Lanes) {
		t.Errorf("lanes that finished the first repeat: %v, want %v", first, cfg.Lanes)
	}
}
