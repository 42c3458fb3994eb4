package web

import (
	"net/http"
	"strings"
	"testing"

	"agentloop/api"
	"agentloop/rollout"
)

func sweepRun(id, scenario string, stack api.Stack, tps float64, sequential bool, status string, saved map[string]float64) rollout.RunRecord {
	return rollout.RunRecord{ID: id, Status: status,
		Config: rollout.Config{Scenario: scenario, Profile: api.ModelSpark, DecodeTPS: tps, Stack: stack, Sequential: sequential,
			Lanes: []string{rollout.LaneHTTPOptimized, rollout.LaneWS, rollout.LanePrototype}},
		Summary: &rollout.Summary{SavedVsOptimized: saved}}
}

func TestSweepChartsKeepTheNewestFairRunPerPoint(t *testing.T) {
	lean, hosted := api.StackLean, api.StackHosted
	runs := []rollout.RunRecord{ // newest first, as ListRuns returns them
		sweepRun("r_new", "fix", hosted, 1000, true, rollout.StatusPassed, map[string]float64{"ws": 0.42, "prototype": 0.45}),
		sweepRun("r_old", "fix", hosted, 1000, true, rollout.StatusPassed, map[string]float64{"ws": 0.10}),
		sweepRun("r_unfair", "fix", hosted, 250, false, rollout.StatusPassed, map[string]float64{"ws": 0.9}),
		sweepRun("r_failed", "fix", hosted, 4000, true, rollout.StatusFailed, map[string]float64{"ws": 0.9}),
		sweepRun("r_slow", "fix", hosted, 65, true, rollout.StatusPassed, map[string]float64{"ws": 0.05}),
		sweepRun("r_lean", "fix", lean, 1000, true, rollout.StatusPassed, map[string]float64{"ws": 0.12}),
		sweepRun("r_other", "rename", lean, 0, true, rollout.StatusPassed, map[string]float64{"ws": 0.2}), // spark's own rate
	}
	charts := sweepCharts(runs)
	if len(charts) != 2 || charts[0].Scenario != "fix" || charts[1].Scenario != "rename" {
		t.Fatalf("charts %+v", charts)
	}
	lines := map[string][]float64{}
	for _, l := range charts[0].Lines {
		for _, p := range l.Points {
			lines[l.Name] = append(lines[l.Name], p.Saved)
		}
	}
	want := map[string][]float64{"hosted · ws": {0.05, 0.42}, "hosted · prototype": {0.45}, "lean · ws": {0.12}}
	for name, w := range want {
		got := lines[name]
		if len(got) != len(w) || (len(w) > 0 && (got[0] != w[0] || got[len(got)-1] != w[len(w)-1])) {
			t.Errorf("%s: %v, want %v (all lines %v)", name, got, w, lines)
		}
	}
	if len(lines) != len(want) {
		t.Errorf("lines %v, want only %v: unfair, failed and older runs are left out", lines, want)
	}
	var ws []float64
	for _, l := range charts[0].Lines {
		if l.Name == "hosted · ws" {
			if l.Points[0].X >= l.Points[1].X || l.Points[0].Y <= l.Points[1].Y {
				t.Errorf("faster goes right and a larger share goes up: %+v", l.Points)
			}
			for _, p := range l.Points {
				ws = append(ws, p.TPS)
			}
		}
	}
	if len(ws) != 2 || ws[0] != 65 || ws[1] != 1000 {
		t.Errorf("points in speed order: %v", ws)
	}
	if p := charts[1].Lines[0].Points[0]; p.TPS != 1000 {
		t.Errorf("a run without decode_tps is placed at its profile's rate, got %v", p.TPS)
	}
}

func TestSweepPageRenders(t *testing.T) {
	tp := newTestPlayground(t)
	rec := tp.do(http.MethodGet, "/sweep", "", nil)
	if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `data-testid="sweep-empty"`) {
		t.Fatalf("without fair runs: %d %s", rec.Code, rec.Body.String())
	}
	fair := sweepRun("run_fair", "fix-failing-test", api.StackHosted, 1000, true, rollout.StatusPassed, map[string]float64{"ws": 0.4})
	tp.runs.runs[fair.ID] = &fair
	rec = tp.do(http.MethodGet, "/sweep", "", nil)
	body := rec.Body.String()
	for _, want := range []string{`data-testid="sweep-chart"`, `data-stack="hosted"`, "40%", `href="/runs/run_fair"`} {
		if !strings.Contains(body, want) {
			t.Errorf("the sweep page lacks %q", want)
		}
	}
	checkCSPSafe(t, body)
}
