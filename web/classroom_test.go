package web

import (
	"slices"
	"strings"
	"testing"

	"agentloop/api"
	"agentloop/apistack"
	"agentloop/rollout"
	"agentloop/views"
)

func TestConfigFieldsListTheDrills(t *testing.T) {
	f := configFields(rollout.Config{Profile: "instant", Stack: apistack.Lean, Drills: []rollout.LaneDrill{
		{Drill: api.DrillEvictCache, Lane: rollout.LaneWS, AfterTurns: 2},
		{Drill: api.DrillHTTP503, Lane: rollout.LaneHTTP, AfterTurns: 1, Times: 3},
	}})
	want := views.Field{Label: "Drills", Value: "evict-cache on WebSocket after 2 turns; http-503 on HTTP after 1 turn (3 times)"}
	if !slices.Contains(f, want) {
		t.Errorf("fields lack %+v: %+v", want, f)
	}
	if slices.ContainsFunc(configFields(rollout.Config{Stack: apistack.Lean}), func(f views.Field) bool { return f.Label == "Drills" }) {
		t.Error("a race without drills lists them")
	}
}

// TestStoredSnapshotElapsed: a stored race shows the clock it showed live
// (Summary.ElapsedNS); a run stored without it adds up lanes run one after
// another, and takes the slowest of lanes run together.
func TestStoredSnapshotElapsed(t *testing.T) {
	rec := &rollout.RunRecord{ID: "run_x", Status: rollout.StatusPassed,
		Config: rollout.Config{Lanes: []string{rollout.LaneHTTP, rollout.LaneWS}, Sequential: true, Repeats: 1},
		Lanes:  []rollout.LaneSummary{{Lane: rollout.LaneHTTP, TotalNS: 3e9}, {Lane: rollout.LaneWS, TotalNS: 1e9}},
	}
	if got := storedSnapshot(rec).ElapsedNS; got != 4e9 {
		t.Errorf("one after another: %d ns, want the sum 4e9", got)
	}
	rec.Config.Sequential, rec.Config.TakeTurns = false, true
	if got := storedSnapshot(rec).ElapsedNS; got != 4e9 {
		t.Errorf("taking turns: %d ns, want the sum 4e9", got)
	}
	rec.Config.TakeTurns = false
	if got := storedSnapshot(rec).ElapsedNS; got != 3e9 {
		t.Errorf("together: %d ns, want the slowest 3e9", got)
	}
	// The race clock of an ended race is its longest lane's own clock.
	if got := storedSnapshot(rec).ClockNS; got != 3e9 {
		t.Errorf("race clock %d ns, want the longest lane's 3e9", got)
	}
	rec.Summary = &rollout.Summary{ElapsedNS: 4.2e9}
	if got := storedSnapshot(rec).ElapsedNS; got != 4.2e9 {
		t.Errorf("with the race's own clock: %d ns, want 4.2e9", got)
	}
}

func TestPresetLabelSaysWhatRuns(t *testing.T) {
	got := presetLabel(rollout.Config{Scenario: "config-migration", Profile: "instant", Lanes: []string{rollout.LaneHTTP, rollout.LaneWS}, Sequential: true, Stack: apistack.Lean})
	for _, want := range []string{"config-migration · instant", "HTTP, WebSocket, one after another", "lean API stack"} {
		if !strings.Contains(got, want) {
			t.Errorf("label %q lacks %q", got, want)
		}
	}
	if got := presetLabel(preset); !strings.Contains(got, "all four lanes, one after another · modelled "+preset.Stack.Preset+" API stack") {
		t.Errorf("the default preset's label: %q", got)
	}
}
