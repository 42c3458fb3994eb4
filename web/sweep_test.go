package web

import (
	"html"
	"maps"
	"math"
	"net/http"
	"regexp"
	"slices"
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

// turns makes r a race whose lanes took turns.
func turns(id string, r rollout.RunRecord) rollout.RunRecord {
	r.ID, r.Config.Sequential, r.Config.TakeTurns = id, false, true
	return r
}

func TestSweepChartsKeepTheNewestFairRunPerPoint(t *testing.T) {
	lean, hosted := apistack.Lean, apistack.Hosted
	runs := []rollout.RunRecord{ // newest first, as ListRuns returns them
		sweepRun("r_new", "fix", hosted, 1000, true, rollout.StatusPassed, map[string]float64{"ws": 0.42, "prototype": 0.45}),
		sweepRun("r_old", "fix", hosted, 1000, true, rollout.StatusPassed, map[string]float64{"ws": 0.10}),
		sweepRun("r_unfair", "fix", hosted, 250, false, rollout.StatusPassed, map[string]float64{"ws": 0.9}),
		sweepRun("r_failed", "fix", hosted, 4000, true, rollout.StatusFailed, map[string]float64{"ws": 0.9}),
		turns("r_turns", sweepRun("", "fix", hosted, 4000, false, rollout.StatusPassed, map[string]float64{"ws": 0.48})), // no overlap: fair
		sweepRun("r_slow", "fix", hosted, 65, true, rollout.StatusPassed, map[string]float64{"ws": 0.05}),
		sweepRun("r_lean", "fix", lean, 1000, true, rollout.StatusPassed, map[string]float64{"ws": 0.12}),
		sweepRun("r_other", "rename", lean, 0, true, rollout.StatusPassed, map[string]float64{"ws": 0.2}), // spark's own rate
	}
	charts := sweepCharts(runs)
	var names []string
	for _, ch := range charts {
		names = append(names, ch.Scenario+"/"+ch.Stack)
	}
	// One chart per scenario and stack, all on one share axis.
	if strings.Join(names, ",") != "fix/hosted,fix/lean,rename/lean" {
		t.Fatalf("charts %v, want fix/hosted, fix/lean, rename/lean", names)
	}
	lines := map[string][]float64{}
	for _, ch := range charts[:2] {
		for _, l := range ch.Lines {
			for _, p := range l.Points {
				lines[ch.Stack+" · "+l.Name] = append(lines[ch.Stack+" · "+l.Name], p.Saved)
			}
		}
		if ch.YTicks[len(ch.YTicks)-1] != charts[0].YTicks[len(charts[0].YTicks)-1] {
			t.Errorf("%s's share axis ends at %v, the first chart's at %v", ch.Stack, ch.YTicks, charts[0].YTicks)
		}
	}
	want := map[string][]float64{"hosted · WebSocket": {0.05, 0.42, 0.48}, "hosted · Prototype": {0.45}, "lean · WebSocket": {0.12}}
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
		if l.Lane == rollout.LaneWS {
			if l.Points[0].X >= l.Points[1].X || l.Points[0].Y <= l.Points[1].Y {
				t.Errorf("faster goes right and a larger share goes up: %+v", l.Points)
			}
			for _, p := range l.Points {
				ws = append(ws, p.TPS)
			}
			if l.Label != "WebSocket" || l.EndX != l.Points[len(l.Points)-1].X || l.LabelX <= charts[0].X1 {
				t.Errorf("the line is named at its end, right of the plot: %+v", l.EndLabel)
			}
		}
	}
	if len(ws) != 3 || ws[0] != 65 || ws[1] != 1000 || ws[2] != 4000 {
		t.Errorf("points in speed order: %v", ws)
	}
	if p := charts[2].Lines[0].Points[0]; p.TPS != 1000 {
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
// sweep the binary carries first, labelled with its date and command, its
// axes titled, its lines named at their ends and explained in words, its
// settings beside the one-click race's; then "your runs", empty.
func TestSweepPageShowsTheReference(t *testing.T) {
	loaded, err := loadReferenceSweep()
	ref := loaded.view()
	if err != nil || len(ref.Charts) == 0 || ref.Date == "" || ref.Command == "" {
		t.Fatalf("reference %+v, %v", ref, err)
	}
	tp := newTestPlayground(t)
	body := tp.do(http.MethodGet, "/sweep", "", nil).Body.String()
	for _, want := range []string{`data-testid="sweep-reference"`, "Reference sweep, " + ref.Date, "agentloop bench sweep", `data-testid="sweep-legend"`,
		"unlimited bandwidth", ">decode speed (tokens/s, log scale)</text>", ">saved vs HTTP optimized (%)</text>",
		`class="end-label"`, `>WebSocket</text>`, `>Prototype</text>`, `data-testid="sweep-series"`, `data-testid="sweep-settings"`,
		"The first design of WebSocket mode", "hosted-post-sprint stack", "lean stack", `data-testid="sweep-empty"`} {
		if !strings.Contains(body, want) {
			t.Errorf("a fresh /sweep lacks %q", want)
		}
	}
	for _, lane := range []string{">ws<", ">prototype<", ">http-optimized<"} {
		if strings.Contains(body, lane) {
			t.Errorf("/sweep names a lane by its id %q, not its label", lane)
		}
	}
	if r, y := strings.Index(body, `data-testid="sweep-reference"`), strings.Index(body, `data-testid="sweep-yours"`); r < 0 || y < r {
		t.Errorf("the reference (at %d) comes before your runs (at %d)", r, y)
	}
}

// TestSweepSettingsBesideTheRace: the settings table reads the one-click
// race's values from the playground's preset, and says why each setting
// that differs does; a setting that is the same says so.
func TestSweepSettingsBesideTheRace(t *testing.T) {
	race := preset
	race.RTTms, race.ToolTimeMs = 7, 0
	tp := newTestPlayground(t, func(d *Deps) { d.HomePreset = &race })
	body := tp.do(http.MethodGet, "/sweep", "", nil).Body.String()
	_, table, _ := strings.Cut(body, `data-testid="sweep-settings"`)
	table, _, _ = strings.Cut(table, "</table>")
	rows := map[string]string{}
	for _, tr := range strings.Split(table, "<tr")[2:] {
		name := regexp.MustCompile(`<th scope="row">([^<]*)</th>`).FindStringSubmatch(tr)
		if name != nil {
			rows[name[1]] = html.UnescapeString(tr)
		}
	}
	for name, want := range map[string][]string{
		"Round trip":         {"0 ms", "7 ms", `data-differs="true"`, "Differs.", "same time to every lane"},
		"Tool time per call": {"0 ms", `data-differs="false"`, "The same."},
		"Scenario":           {race.Scenario, `data-differs="false"`},
		"Model speed":        {"spark's prefill", "decoding at 65, 250, 1000 and 4000 tokens/s", race.Profile + " as it is", `data-differs="true"`},
		"API stack":          {"lean and hosted-post-sprint", race.Stack.String(), "whose chart is the one titled"},
		"Lanes, in order":    {"HTTP optimized, WebSocket, Prototype", "HTTP, HTTP optimized, HTTP chained, WebSocket", "Only the sweep races Prototype.", "Only the race races HTTP and HTTP chained."},
		"Lanes run":          {"one after another", `data-differs="false"`},
	} {
		tr, ok := rows[name]
		if !ok {
			t.Errorf("no row %q in %v", name, slices.Collect(maps.Keys(rows)))
			continue
		}
		for _, w := range want {
			if !strings.Contains(tr, w) {
				t.Errorf("%s: lacks %q in %s", name, w, tr)
			}
		}
	}
}

// TestSweepPageRenders: one fair run is a sentence, not a one-dot chart;
// two runs are a chart.
func TestSweepPageRenders(t *testing.T) {
	tp := newTestPlayground(t)
	rec := tp.do(http.MethodGet, "/sweep", "", nil)
	if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `data-testid="sweep-empty"`) {
		t.Fatalf("without fair runs: %d %s", rec.Code, rec.Body.String())
	}
	fair := sweepRun("run_fair", "fix-failing-test", apistack.Hosted, 1000, true, rollout.StatusPassed, map[string]float64{"ws": 0.4})
	tp.runs.runs[fair.ID] = &fair
	body := tp.do(http.MethodGet, "/sweep", "", nil).Body.String()
	_, yours, _ := strings.Cut(body, `data-testid="sweep-yours"`)
	for _, want := range []string{`data-testid="sweep-one"`, "One fair run so far: run_fair (fix-failing-test, hosted stack, 1000 tok/s): WebSocket saved 40% against HTTP optimized.", `href="/runs/run_fair"`} {
		if !strings.Contains(yours, want) {
			t.Errorf("with one run, your runs lack %q", want)
		}
	}
	if strings.Contains(yours, `data-testid="sweep-chart"`) {
		t.Error("one run drew a chart")
	}
	slow := sweepRun("run_slow", "fix-failing-test", apistack.Hosted, 250, true, rollout.StatusPassed, map[string]float64{"ws": 0.3})
	slow.CreatedAt, slow.UpdatedAt = fair.CreatedAt.Add(-time.Hour), fair.CreatedAt.Add(-time.Hour)
	tp.runs.runs[slow.ID] = &slow
	body = tp.do(http.MethodGet, "/sweep", "", nil).Body.String()
	_, yours, _ = strings.Cut(body, `data-testid="sweep-yours"`)
	for _, want := range []string{`data-testid="sweep-chart"`, `data-stack="hosted"`, "40%", "30%", `href="/runs/run_fair"`, `href="/runs/run_slow"`} {
		if !strings.Contains(yours, want) {
			t.Errorf("with two runs, your runs lack %q", want)
		}
	}
	if strings.Contains(yours, `data-testid="sweep-one"`) {
		t.Error("two runs still say there is one")
	}
	checkCSPSafe(t, body)
}

// TestSpreadLabels: labels that would collide are spread at least the gap
// apart around where they were wanted, inside the plot, in their order; a
// label with room keeps its place.
func TestSpreadLabels(t *testing.T) {
	for _, tc := range []struct {
		name string
		want []float64
	}{
		{"apart", []float64{20, 100, 200}},
		{"seven at one value", []float64{150, 150, 150, 150, 150, 150, 150}},
		{"seven and one below", []float64{150, 150, 250, 150, 150, 150, 150, 150}},
		{"at the bottom", []float64{245, 248, 248}},
		{"at the top", []float64{12, 10, 14}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const gap, top, bottom = 17.0, 10.0, 250.0
			got := spreadLabels(tc.want, gap, top, bottom)
			for i := range got {
				if got[i] < top-1e-9 || got[i] > bottom+1e-9 {
					t.Errorf("label %d at %v, outside [%v, %v]", i, got[i], top, bottom)
				}
				for j := range got {
					if i != j && math.Abs(got[i]-got[j]) < gap-1e-9 {
						t.Errorf("labels %d and %d at %v and %v, closer than %v", i, j, got[i], got[j], gap)
					}
					if tc.want[i] < tc.want[j] && got[i] > got[j] {
						t.Errorf("labels %d and %d swapped: %v", i, j, got)
					}
				}
			}
			if tc.name == "apart" && !slices.Equal(got, tc.want) {
				t.Errorf("labels with room moved: %v, want %v", got, tc.want)
			}
		})
	}
}
