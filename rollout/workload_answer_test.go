package rollout

import (
	"testing"

	"agentloop/api"
	"agentloop/apistack"
)

func TestWorkloadAnswer(t *testing.T) {
	sum := &Summary{Lanes: []LaneSummary{
		{Lane: LaneHTTPOptimized, Status: StatusPassed, TotalNS: 10e9, StageNS: map[string]int64{StageAPIStack: 2e9}},
		{Lane: LaneWS, Status: StatusPassed, TotalNS: 7e9, StageNS: map[string]int64{StageAPIStack: 0.5e9}},
	}}
	cfg := Config{Scenario: WorkloadScenario, Profile: api.ModelSpark, DecodeTPS: 1000, Stack: apistack.HostedPostSprint}
	want := "Your workload: WebSocket mode would finish 30% sooner than optimized HTTP at 1000 tok/s, under hosted-post-sprint; 19% under lean."
	if got := WorkloadAnswer(cfg, sum); got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	// With repeats, the answer gives the range across them, each repeat
	// of one lane against the same repeat of the other.
	sum.Lanes[0].RepeatTotalsNS = []int64{10e9, 9e9, 11e9}
	sum.Lanes[1].RepeatTotalsNS = []int64{7e9, 7.2e9, 6.6e9}
	want = "Your workload: WebSocket mode would finish 30% sooner than optimized HTTP at 1000 tok/s, under hosted-post-sprint (the median of 3 repeats; from 20% sooner to 40% sooner across them); 19% under lean."
	if got := WorkloadAnswer(cfg, sum); got != want {
		t.Errorf("repeats: got  %q\nwant %q", got, want)
	}
	sum.Lanes[0].RepeatTotalsNS, sum.Lanes[1].RepeatTotalsNS = nil, nil
	cfg.Stack, cfg.DecodeTPS = apistack.Lean, 0
	sum.Lanes[1].TotalNS = 10.4e9
	if got, want := WorkloadAnswer(cfg, sum), "Your workload: WebSocket mode would finish 4% later than optimized HTTP at spark, under lean."; got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	cfg.Scenario = "fix-failing-test"
	if got := WorkloadAnswer(cfg, sum); got != "" {
		t.Errorf("a scenario race: %q", got)
	}
}
