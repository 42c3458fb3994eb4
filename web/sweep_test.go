package web

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"agentloop/api"
	"agentloop/apistack"
	"agentloop/rollout"
)

func sweepRun(id, scenario string, stack apistack.Stack, tps float64, sequential bool, status string, saved map[string]float64) rollout.RunRecord {
	return rollout.RunRecord{ID: id, Status: status,
		Config: rollout.Config{Scenario: scenario, Profile: api.ModelSpark, DecodeTPS: tps, Stack: stack, Sequential: sequential,
			Lanes: []string{rollout.LaneHTTPOptimized, rollout.LaneWS, rollout.LanePrototype}},
		Summary: &rollout.Summary{SavedVsOptimized: saved}}
}

func TestSweepChartsKeepTheNewestFairRunPerPoint(t *testing.T) {
	lean, hosted := apistack.Lean, apistack.Hosted
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

// TestSweepSeriesJoinOnlyEqualSettings: a run with another tool time (or
// round trip, or bandwidth) starts a series of its own instead of moving a
// point, and runs that overlapped each other never count.
func TestSweepSeriesJoinOnlyEqualSettings(t *testing.T) {
	hosted := apistack.Hosted
	at := time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC)
	timed := func(r rollout.RunRecord, start, end time.Duration) rollout.RunRecord {
		r.CreatedAt, r.UpdatedAt = at.Add(start), at.Add(end)
		return r
	}
	presenter := sweepRun("r_presenter", "fix", hosted, 1000, true, rollout.StatusPassed, map[string]float64{"ws": 0.46})
	presenter.Config.ToolTimeMs = 50
	runs := []rollout.RunRecord{ // newest first
		timed(sweepRun("r_overlap_b", "fix", hosted, 250, true, rollout.StatusPassed, map[string]float64{"ws": 0.9}), 50*time.Minute, 52*time.Minute),
		timed(sweepRun("r_overlap_a", "fix", hosted, 250, true, rollout.StatusPassed, map[string]float64{"ws": 0.8}), 49*time.Minute, 51*time.Minute),
		timed(presenter, 40*time.Minute, 41*time.Minute),
		timed(sweepRun("r_sweep", "fix", hosted, 1000, true, rollout.StatusPassed, map[string]float64{"ws": 0.42}), 30*time.Minute, 31*time.Minute),
		timed(sweepRun("r_sweep_slow", "fix", hosted, 65, true, rollout.StatusPassed, map[string]float64{"ws": 0.2}), 20*time.Minute, 21*time.Minute),
	}
	charts := sweepCharts(runs)
	if len(charts) != 1 {
		t.Fatalf("charts %+v", charts)
	}
	// Runs of two workloads never share a chart, though both replay
	// rollout.WorkloadScenario.
	var replays []rollout.RunRecord
	for i, id := range []string{"wl_a", "wl_b"} {
		r := timed(sweepRun("r_"+id, rollout.WorkloadScenario, hosted, 1000, true, rollout.StatusPassed, map[string]float64{"ws": 0.1}),
			time.Duration(i)*time.Minute, time.Duration(i)*time.Minute+time.Second)
		r.Config.WorkloadID = id
		replays = append(replays, r)
	}
	if wl := sweepCharts(replays); len(wl) != 2 || wl[0].Scenario == wl[1].Scenario {
		t.Fatalf("two workloads' charts: %+v", wl)
	}
	got := map[string][]string{}
	for _, l := range charts[0].Lines {
		if l.Lane != rollout.LaneWS {
			continue
		}
		for _, p := range l.Points {
			got[l.Settings] = append(got[l.Settings], p.Run)
		}
		if l.Class == "" {
			t.Errorf("%s has no colour of its own", l.Name)
		}
	}
	want := map[string][]string{
		"hosted stack · 0 ms round trip · 0 ms tools · unlimited bandwidth":  {"r_sweep_slow", "r_sweep"},
		"hosted stack · 0 ms round trip · 50 ms tools · unlimited bandwidth": {"r_presenter"},
	}
	if len(got) != len(want) {
		t.Fatalf("series %v, want %v", got, want)
	}
	for k, w := range want {
		if strings.Join(got[k], ",") != strings.Join(w, ",") {
			t.Errorf("%s: %v, want %v", k, got[k], w)
		}
	}
}

// TestSweepPageShowsTheReference: a fresh install shows the reference
// sweep the binary carries, labelled with its date and command.
func TestSweepPageShowsTheReference(t *testing.T) {
	ref, err := referenceSweep()
	if err != nil || len(ref.Charts) == 0 || ref.Date == "" || ref.Command == "" {
		t.Fatalf("reference %+v, %v", ref, err)
	}
	tp := newTestPlayground(t)
	body := tp.do(http.MethodGet, "/sweep", "", nil).Body.String()
	for _, want := range []string{`data-testid="sweep-reference"`, "Reference sweep, " + ref.Date, "agentloop bench sweep", `data-testid="sweep-legend"`, "unlimited bandwidth"} {
		if !strings.Contains(body, want) {
			t.Errorf("a fresh /sweep lacks %q", want)
		}
	}
}

func TestSweepPageRenders(t *testing.T) {
	tp := newTestPlayground(t)
	rec := tp.do(http.MethodGet, "/sweep", "", nil)
	if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `data-testid="sweep-empty"`) {
		t.Fatalf("without fair runs: %d %s", rec.Code, rec.Body.String())
	}
	fair := sweepRun("run_fair", "fix-failing-test", apistack.Hosted, 1000, true, rollout.StatusPassed, map[string]float64{"ws": 0.4})
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
