package rollout_test

import (
	"context"
	"strings"
	"testing"

	"agentloop/api"
	"agentloop/apistack"
	"agentloop/app/apptest"
	"agentloop/rollout"
)

// TestRecosted re-costs one recorded race: under its own stack it is the
// same run; with hop_ms doubled each lane's total grows by exactly the
// hops its turns made; under lean the stack's time is gone. Runs that
// recorded no stack work cannot be re-costed.
func TestRecosted(t *testing.T) {
	t.Parallel() // a whole race on its own engine
	a := apptest.Start(t)
	// The hosted stack's stages, with fast classifiers to keep the race short.
	hosted := apistack.Hosted
	hosted.Preset, hosted.ClassifyTPS, hosted.ClassifyTPSBaseline = "custom", 5e6, 1e6
	cfg := rollout.Config{Workload: shortWorkload(t), Profile: "instant", Sequential: true,
		Lanes: []string{rollout.LaneHTTP, rollout.LaneHTTPOptimized, rollout.LaneWS}, Stack: hosted}
	id, _, err := rollout.NewRunner(a.URL(), a.DB, nil).Run(context.Background(), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := rollout.LoadRun(context.Background(), a.DB, id)
	if err != nil {
		t.Fatal(err)
	}
	totals := func(r *rollout.RunRecord) map[string]int64 {
		m := map[string]int64{}
		for _, l := range r.Summary.Lanes {
			m[l.Lane] = l.TotalNS
		}
		return m
	}
	// What the lanes' turns did: hops made and stack time recorded.
	hops, stack := map[string]float64{}, map[string]int64{}
	worked := map[string]map[string]bool{}
	for _, turn := range rec.Turns {
		if worked[turn.Lane] == nil {
			worked[turn.Lane] = map[string]bool{}
		}
		for _, w := range turn.StackWork {
			worked[turn.Lane][w.Stage] = true
			switch w.Stage {
			case api.StageStackClassify:
				hops[turn.Lane]++
			case api.StageStackConfigHop:
				hops[turn.Lane] += hosted.ConfigHops
			case api.StageStackSprintHops:
				hops[turn.Lane] += hosted.SprintHops
			case api.StageStackBilling:
				hops[turn.Lane] += hosted.BillingHops
			}
		}
		for _, s := range turn.Stages {
			if s.Name == rollout.StageAPIStack {
				stack[turn.Lane] += s.DurationNS
			}
		}
	}
	if !worked[rollout.LaneHTTP][api.StageStackSprintHops] || !worked[rollout.LaneWS][api.StageStackClassify] || worked[rollout.LaneWS][api.StageStackSprintHops] {
		t.Fatalf("stack work recorded: %v", worked)
	}

	same, err := rec.Recosted(hosted)
	if err != nil {
		t.Fatal(err)
	}
	for lane, total := range totals(rec) {
		if got := totals(same)[lane]; got != total {
			t.Errorf("%s under its own stack: total %d, raced %d", lane, got, total)
		}
	}
	if same.Summary.SavedVsOptimized[rollout.LaneWS] != rec.Summary.SavedVsOptimized[rollout.LaneWS] {
		t.Errorf("saving %g, raced %g", same.Summary.SavedVsOptimized[rollout.LaneWS], rec.Summary.SavedVsOptimized[rollout.LaneWS])
	}

	doubled := hosted
	doubled.Preset, doubled.HopMS = "custom", 2*hosted.HopMS
	more, err := rec.Recosted(doubled)
	if err != nil {
		t.Fatal(err)
	}
	for lane, total := range totals(rec) {
		want := total + int64(hops[lane]*hosted.HopMS*1e6)
		if got := totals(more)[lane]; got < want-100 || got > want+100 { // ns rounding per stage
			t.Errorf("%s with hop_ms doubled: total %d, want %d (%.0f hops more)", lane, got, want, hops[lane])
		}
	}
	if more.Config.Stack != doubled {
		t.Errorf("re-costed config stack %+v", more.Config.Stack)
	}

	lean, err := rec.Recosted(apistack.Lean)
	if err != nil {
		t.Fatal(err)
	}
	for lane, total := range totals(rec) {
		if got := totals(lean)[lane]; got != total-stack[lane] {
			t.Errorf("%s under lean: total %d, want %d − %d", lane, got, total, stack[lane])
		}
	}
	for _, l := range lean.Summary.Lanes {
		if l.StageNS[rollout.StageAPIStack] != 0 || l.StackPerTurnNS != 0 {
			t.Errorf("%s under lean keeps api_stack %d", l.Lane, l.StageNS[rollout.StageAPIStack])
		}
	}

	// Runs that recorded no stack work.
	if _, err := lean.Recosted(hosted); err == nil || !strings.Contains(err.Error(), "lean") {
		t.Errorf("a lean run re-costed: %v", err)
	}
	noSprint := *rec
	noSprint.Config.Stack.Preset, noSprint.Config.Stack.SprintHops = "custom", 0
	if _, err := noSprint.Recosted(hosted); err == nil || !strings.Contains(err.Error(), api.StageStackSprintHops) {
		t.Errorf("a run without sprint hops re-costed with them: %v", err)
	}
	old := *rec
	old.Turns = nil
	for _, turn := range rec.Turns {
		turn.StackWork = nil
		old.Turns = append(old.Turns, turn)
	}
	if _, err := old.Recosted(hosted); err == nil || !strings.Contains(err.Error(), "stored before") {
		t.Errorf("a run without stack work re-costed: %v", err)
	}
}
