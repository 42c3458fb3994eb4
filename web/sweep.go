package web

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"agentloop/api"
	"agentloop/apistack"
	"agentloop/docs"
	"agentloop/rollout"
	"agentloop/store"
	"agentloop/views"

	"github.com/labstack/echo/v4"
)

// sweepRunsRead bounds how many stored runs the sweep page reads.
const sweepRunsRead = 500

// sweepPage is /sweep: the reference sweep the binary carries first, its
// settings beside the one-click race's (p.preset) and its series in
// words, then the share ws (and prototype) save against optimized HTTP by
// model speed in the stored fair runs (agentloop bench sweep writes them).
func (p *Playground) sweepPage(c echo.Context) error {
	runs, err := p.runs.ListRuns(c.Request().Context(), store.RunFilter{Limit: sweepRunsRead})
	if err != nil {
		return p.storeProblem(c, err, "Could not list runs", "The runs could not be read")
	}
	v := views.Sweep{Charts: sweepCharts(runs)}
	v.Runs, v.Only = countRuns(v.Charts)
	ref, err := loadReferenceSweep()
	if err != nil {
		p.log.Error("reference sweep", "err", err)
	} else {
		v.Reference = ref.view()
		v.Settings = ref.against(p.preset)
	}
	v.Series = sweepSeries(v)
	return render(c, http.StatusOK, views.SweepPage(p.page("Sweep", "sweep"), v))
}

// countRuns counts the runs the charts draw and, when there is one,
// phrases it: one run is a sentence, not a chart.
func countRuns(charts []views.SweepChart) (int, string) {
	ids := map[string]bool{}
	var saved []string
	var at views.SweepPoint
	var ch views.SweepChart
	for _, c := range charts {
		for _, l := range c.Lines {
			for _, pt := range l.Points {
				ids[pt.Run] = true
				at, ch = pt, c
				saved = append(saved, rollout.LaneLabel(l.Lane)+" saved "+pct(pt.Saved))
			}
		}
	}
	if len(ids) != 1 {
		return len(ids), ""
	}
	return 1, fmt.Sprintf("One fair run so far: %s (%s, %s stack, %s tok/s): %s against %s. A chart needs runs at two speeds or more.",
		at.Run, ch.Scenario, ch.Stack, strconv.FormatFloat(at.TPS, 'f', -1, 64), strings.Join(saved, ", "), rollout.LaneLabel(rollout.LaneHTTPOptimized))
}

func pct(v float64) string { return strconv.FormatFloat(100*v, 'f', 0, 64) + "%" }

// sweepSettings are what a series holds equal: a point joins a series
// only with the same scenario, stack, round trip, tool time and bandwidth.
type sweepSettings struct {
	scenario, stack string
	rttMS, toolMS   float64
	bandwidthKbps   int
}

func (s sweepSettings) String() string {
	bw := "unlimited bandwidth"
	if s.bandwidthKbps > 0 {
		bw = strconv.Itoa(s.bandwidthKbps) + " kbit/s"
	}
	return s.stack + " stack · " + fmtMs(s.rttMS) + " round trip · " + fmtMs(s.toolMS) + " tools · " + bw
}

// sweepPoint is one fair run's place on the chart.
type sweepPoint struct {
	settings sweepSettings
	tps      float64
	saved    map[string]float64
	run      string
}

// ranTogether returns the runs whose time spans crossed another's: they
// shared the machine, so neither counts in the sweep. A run's span is
// from its creation (a queued run counts too: it may have run at once) to
// its last update.
func ranTogether(runs []rollout.RunRecord) map[string]bool {
	out := map[string]bool{}
	now := time.Now()
	for i := range runs {
		si, ei := span(runs[i], now)
		for j := i + 1; j < len(runs); j++ {
			sj, ej := span(runs[j], now)
			if si.Before(ej) && sj.Before(ei) {
				out[runs[i].ID], out[runs[j].ID] = true, true
			}
		}
	}
	return out
}

// sweepCharts groups the newest fair run per settings and speed. A run
// counts when it passed, ran its lanes without overlap (one after another
// or taking turns), raced ws against
// http-optimized, and ran alone. Runs come newest first.
func sweepCharts(runs []rollout.RunRecord) []views.SweepChart {
	overlapped := ranTogether(runs)
	seen := map[string]bool{}
	var pts []sweepPoint
	for _, r := range runs {
		cfg := r.Config
		if r.Status != rollout.StatusPassed || cfg.Overlaps() || r.Summary == nil || overlapped[r.ID] ||
			!slices.Contains(cfg.Lanes, rollout.LaneHTTPOptimized) || !slices.Contains(cfg.Lanes, rollout.LaneWS) {
			continue
		}
		tps := cfg.DecodeTPS
		if tps == 0 {
			tps = api.ModelDecodeTPS(cfg.Profile)
		}
		if tps <= 0 {
			continue // instant: no speed to place
		}
		st := cfg.Stack
		if st.Preset == "" {
			st = apistack.Lean
		}
		set := sweepSettings{scenario: sweepScenario(cfg), stack: st.String(), rttMS: cfg.RTTms, toolMS: cfg.ToolTimeMs, bandwidthKbps: cfg.BandwidthKbps}
		key := fmt.Sprintf("%#v|%v", set, tps)
		if seen[key] {
			continue
		}
		seen[key] = true
		pts = append(pts, sweepPoint{settings: set, tps: tps, saved: r.Summary.SavedVsOptimized, run: r.ID})
	}
	return chartPoints(pts)
}

// sweepScenario names what a run replayed: its scenario, or its workload,
// since two workloads are no more alike than two scenarios.
func sweepScenario(cfg rollout.Config) string {
	if cfg.Workload == nil && cfg.WorkloadID == "" {
		return cfg.Scenario
	}
	return "workload " + cfg.WorkloadID
}

// sweepChartLanes are the lanes a sweep chart draws, in legend order;
// http-optimized is what their shares are measured against.
var sweepChartLanes = []string{rollout.LaneWS, rollout.LanePrototype}

// sweepVariants name the second and later settings of a chart's lane
// (app.css gives .sweep-ws-b and the like a dash of their own).
var sweepVariants = []string{"", "-b", "-c"}

// chartPoints draws one chart per scenario and stack, one series per lane
// and settings, points in speed order, all on one share axis so that the
// charts compare side by side.
func chartPoints(pts []sweepPoint) []views.SweepChart {
	slices.SortFunc(pts, func(a, b sweepPoint) int {
		if c := strings.Compare(a.settings.scenario, b.settings.scenario); c != 0 {
			return c
		}
		if c := strings.Compare(a.settings.stack, b.settings.stack); c != 0 {
			return c
		}
		if c := strings.Compare(a.settings.String(), b.settings.String()); c != 0 {
			return c
		}
		return cmp.Compare(a.tps, b.tps)
	})
	var charts []views.SweepChart
	settingsOf := []map[string]int{} // per chart: settings → index
	for _, pt := range pts {
		if n := len(charts); n == 0 || charts[n-1].Scenario != pt.settings.scenario || charts[n-1].Stack != pt.settings.stack {
			charts = append(charts, views.SweepChart{Scenario: pt.settings.scenario, Stack: pt.settings.stack})
			settingsOf = append(settingsOf, map[string]int{})
		}
		ch, known := &charts[len(charts)-1], settingsOf[len(charts)-1]
		settings := pt.settings.String()
		k, ok := known[settings]
		if !ok {
			k = len(known)
			known[settings] = k
		}
		for _, lane := range sweepChartLanes {
			v, ok := pt.saved[lane]
			if !ok {
				continue
			}
			i := slices.IndexFunc(ch.Lines, func(l views.SweepLine) bool { return l.Lane == lane && l.Settings == settings })
			if i < 0 {
				ch.Lines = append(ch.Lines, views.SweepLine{Name: rollout.LaneLabel(lane), Stack: pt.settings.stack, Lane: lane, Settings: settings,
					Class: "sweep-" + lane + sweepVariants[k%len(sweepVariants)]})
				i = len(ch.Lines) - 1
				ch.Lines[i].Label = ch.Lines[i].Name
				if k > 0 || len(known) > 1 {
					ch.Lines[i].Label += " " + string(rune('A'+k))
				}
			}
			ch.Lines[i].Points = append(ch.Lines[i].Points, views.SweepPoint{TPS: pt.tps, Saved: v, Run: pt.run})
		}
	}
	// A chart of several settings names each series' settings, and its
	// first settings' labels get their letter too.
	for c := range charts {
		if len(settingsOf[c]) < 2 {
			continue
		}
		for i := range charts[c].Lines {
			l := &charts[c].Lines[i]
			if settingsOf[c][l.Settings] == 0 {
				l.Label = l.Name + " A"
			}
			l.Name = l.Label + " (" + strings.TrimPrefix(l.Settings, l.Stack+" stack · ") + ")"
		}
	}
	layoutSweep(charts)
	return charts
}

// sweepReference is the committed reference sweep (docs/sweep-reference.json):
// agentloop bench sweep --json's output, with when and how it was made.
type sweepReference struct {
	Date     string `json:"date"`
	Command  string `json:"command"`
	Machine  string `json:"machine"`
	Settings struct {
		RTTMS         float64  `json:"rtt_ms"`
		ToolTimeMS    float64  `json:"tool_time_ms"`
		BandwidthKbps int      `json:"bandwidth_kbps"`
		Profile       string   `json:"profile"`
		Lanes         []string `json:"lanes"`
		Sequential    bool     `json:"sequential"`
	} `json:"settings"`
	Cells []struct {
		Stack      string             `json:"stack"`
		Scenario   string             `json:"scenario"`
		DecodeTPS  float64            `json:"decode_tps"`
		Repeats    int                `json:"repeats"`
		Status     string             `json:"status"`
		SavedVsOpt map[string]float64 `json:"saved_vs_http_optimized"`
	} `json:"cells"`
}

// loadReferenceSweep reads the reference sweep the binary carries.
func loadReferenceSweep() (sweepReference, error) {
	var ref sweepReference
	err := json.Unmarshal(docs.SweepReference(), &ref)
	return ref, err
}

// view charts the reference's passed cells.
func (ref sweepReference) view() *views.SweepReference {
	var pts []sweepPoint
	for _, c := range ref.Cells {
		if c.Status != rollout.StatusPassed {
			continue
		}
		pts = append(pts, sweepPoint{settings: sweepSettings{scenario: c.Scenario, stack: c.Stack, rttMS: ref.Settings.RTTMS,
			toolMS: ref.Settings.ToolTimeMS, bandwidthKbps: ref.Settings.BandwidthKbps}, tps: c.DecodeTPS, saved: c.SavedVsOpt})
	}
	return &views.SweepReference{Date: ref.Date, Command: ref.Command, Machine: ref.Machine, Charts: chartPoints(pts)}
}

// distinct lists the values in first-seen order.
func distinct[T comparable](vs []T) []T {
	var out []T
	for _, v := range vs {
		if !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}

// andList joins "a", "a and b", "a, b and c".
func andList(vs []string) string {
	if len(vs) < 2 {
		return strings.Join(vs, "")
	}
	return strings.Join(vs[:len(vs)-1], ", ") + " and " + vs[len(vs)-1]
}

func laneLabels(lanes []string) []string {
	out := make([]string, len(lanes))
	for i, l := range lanes {
		out[i] = rollout.LaneLabel(l)
	}
	return out
}

// lanesRun says how a race's lanes ran (rollout.Config.Order).
func lanesRun(cfg rollout.Config) string {
	if cfg.Overlaps() {
		return rollout.OrderTogether + ", sharing the CPU"
	}
	return cfg.Order()
}

func bandwidth(kbps int) string {
	if kbps > 0 {
		return strconv.Itoa(kbps) + " kbit/s"
	}
	return "unlimited"
}

// against sets the reference's settings beside the race's, one row per
// setting, and says why each that differs does.
func (ref sweepReference) against(race rollout.Config) []views.SweepSetting {
	var scenarios, stacks []string
	var speeds []float64
	for _, c := range ref.Cells {
		scenarios, stacks, speeds = append(scenarios, c.Scenario), append(stacks, c.Stack), append(speeds, c.DecodeTPS)
	}
	scenarios, stacks, speeds = distinct(scenarios), distinct(stacks), distinct(speeds)
	slices.Sort(speeds)
	speedList := make([]string, len(speeds))
	for i, v := range speeds {
		speedList[i] = strconv.FormatFloat(v, 'f', -1, 64)
	}
	raceTPS := race.DecodeTPS
	if raceTPS == 0 {
		raceTPS = api.ModelDecodeTPS(race.Profile)
	}
	raceStack := race.Stack
	if raceStack.Preset == "" {
		raceStack = apistack.Lean
	}
	set := ref.Settings
	stackWhy := "The sweep draws the engine alone and with the modelled hosted API stack, to show what the API's own work adds; the race runs one stack"
	if slices.Contains(stacks, raceStack.String()) {
		stackWhy += ", whose chart is the one titled " + raceStack.String() + "."
	} else {
		stackWhy += ", which the sweep did not race."
	}
	var onlyRef, onlyRace []string
	for _, l := range set.Lanes {
		if !slices.Contains(race.Lanes, l) {
			onlyRef = append(onlyRef, rollout.LaneLabel(l))
		}
	}
	for _, l := range race.Lanes {
		if !slices.Contains(set.Lanes, l) {
			onlyRace = append(onlyRace, rollout.LaneLabel(l))
		}
	}
	lanesWhy := "The sweep races " + rollout.LaneLabel(rollout.LaneHTTPOptimized) + " first, since its shares are measured against it, then only the lanes it compares with it."
	if len(onlyRef) > 0 {
		lanesWhy += " Only the sweep races " + andList(onlyRef) + "."
	}
	if len(onlyRace) > 0 {
		lanesWhy += " Only the race races " + andList(onlyRace) + "."
	}
	// Each row with why it would differ; Why stays only where it does.
	rows := []views.SweepSetting{
		{Name: "Scenario", Reference: andList(scenarios), Race: sweepScenario(race),
			Why: "Another scenario sends another history, so its shares differ from the chart's."},
		{Name: "Model speed", Reference: set.Profile + "'s prefill and time to first token, decoding at " + andList(speedList) + " tokens/s",
			Race: race.Profile + " as it is, decoding at " + strconv.FormatFloat(raceTPS, 'f', -1, 64) + " tokens/s",
			Why:  "The sweep changes only the decode speed, to show how the share moves with it; the race runs one model as it is, at one point of the speed axis."},
		{Name: "API stack", Reference: andList(stacks), Race: raceStack.String(), Why: stackWhy},
		{Name: "Round trip", Reference: fmtMs(set.RTTMS), Race: fmtMs(race.RTTms),
			Why: "The sweep leaves the network out, so that only the API's work and the model's speed remain. A round trip adds about the same time to every lane's turns, so the race's shares are smaller than the chart's at the same speed."},
		{Name: "Tool time per call", Reference: fmtMs(set.ToolTimeMS), Race: fmtMs(race.ToolTimeMs),
			Why: "Tool time is the agent's own work between turns, the same on every lane: the sweep leaves it out, so its shares are larger than the race's."},
		{Name: "Bandwidth", Reference: bandwidth(set.BandwidthKbps), Race: bandwidth(race.BandwidthKbps),
			Why: "A limited bandwidth slows most the lanes that resend the whole history, so it moves the shares."},
		{Name: "Lanes, in order", Reference: strings.Join(laneLabels(set.Lanes), ", "), Race: strings.Join(laneLabels(race.Lanes), ", "), Why: lanesWhy},
		{Name: "Lanes run", Reference: lanesRun(rollout.Config{Sequential: set.Sequential, Lanes: set.Lanes}), Race: lanesRun(race),
			Why: "Lanes that run together share the machine's cores, so the sweep never counts such a run."},
	}
	for i := range rows {
		if rows[i].Reference == rows[i].Race {
			rows[i].Why = ""
		}
	}
	return rows
}

// sweepSeries says in words what each lane and each stack the charts draw
// is; http-optimized, the line at 0%, comes last.
func sweepSeries(v views.Sweep) []views.SweepSeries {
	var lanes, stacks []string
	charts := v.Charts
	if v.Reference != nil {
		charts = append(slices.Clone(v.Reference.Charts), charts...)
	}
	for _, ch := range charts {
		stacks = append(stacks, ch.Stack)
		for _, l := range ch.Lines {
			lanes = append(lanes, l.Lane)
		}
	}
	lanes, stacks = distinct(lanes), distinct(stacks)
	base := rollout.LaneLabel(rollout.LaneHTTPOptimized)
	var out []views.SweepSeries
	for _, lane := range sweepChartLanes {
		if !slices.Contains(lanes, lane) {
			continue
		}
		text := "The share of " + base + "'s time it saves: " + rollout.LaneHow(lane) + "."
		if lane == rollout.LanePrototype {
			text = "The first design of WebSocket mode, which the hosted API does not offer: one response that pauses at each tool call and resumes when its output is appended (" +
				rollout.LaneHow(lane) + "). It shows how much more a resumed response could save."
		}
		out = append(out, views.SweepSeries{Name: rollout.LaneLabel(lane), Class: "sweep-" + lane, Text: text})
	}
	for _, st := range stacks {
		preset, ok := apistack.Preset(st)
		text := "The engine alone: nothing is modelled around the model."
		if !ok || preset.Modelled() {
			text = "The engine plus a hosted API's modelled work around the model (classifier, hops, stored state, billing)"
			if r := apistack.Reading(st); r != "" {
				text += ", fitted under the " + r + " reading"
			}
			text += "."
		}
		out = append(out, views.SweepSeries{Name: st + " stack", Text: text})
	}
	out = append(out, views.SweepSeries{Name: base, Text: "The line at 0%, which each share is measured against: " + rollout.LaneHow(rollout.LaneHTTPOptimized) + "."})
	return out
}

// The chart's drawing area, in SVG units: narrow enough that its 14-unit
// labels stay readable on a phone, with room on the right for each lane's
// name at its line's end.
var sweepBox = chartBox{w: 420, h: 300, left: 58, right: 110, top: 14, bottom: 52}

// The speed axis's ends, in tokens/s (log scale).
const sweepMinTPS, sweepMaxTPS = 50.0, 5000.0

// layoutSweep places the points: speed on a log scale, the saved share
// from 0 (or the lowest point) to the highest of all the charts, in steps
// of 10%; each line gets its name at its right end.
func layoutSweep(charts []views.SweepChart) {
	lo, hi := 0.0, 0.1
	for _, ch := range charts {
		for _, l := range ch.Lines {
			for _, p := range l.Points {
				lo, hi = math.Min(lo, p.Saved), math.Max(hi, p.Saved)
			}
		}
	}
	lo, hi = math.Floor(lo*10)/10, math.Ceil(hi*10)/10
	for c := range charts {
		ch := &charts[c]
		frame, xAt, y := sweepBox.frame(lo, hi, 0.1, func(v float64) string { return strconv.Itoa(int(math.Round(v*100))) + "%" })
		x := func(tps float64) float64 {
			return xAt((math.Log10(tps) - math.Log10(sweepMinTPS)) / (math.Log10(sweepMaxTPS) - math.Log10(sweepMinTPS)))
		}
		for _, t := range []float64{65, 250, 1000, 4000} {
			frame.XTicks = append(frame.XTicks, views.ChartTick{At: x(t), Label: strconv.FormatFloat(t, 'f', -1, 64)})
		}
		frame.XTitle = "decode speed (tokens/s, log scale)"
		frame.YTitle = "saved vs " + rollout.LaneLabel(rollout.LaneHTTPOptimized) + " (%)"
		ch.ChartFrame = frame
		labels := make([]*views.EndLabel, len(ch.Lines))
		for i := range ch.Lines {
			l := &ch.Lines[i]
			xs, ys := make([]float64, len(l.Points)), make([]float64, len(l.Points))
			for j := range l.Points {
				pt := &l.Points[j]
				pt.X, pt.Y = x(pt.TPS), y(pt.Saved)
				xs[j], ys[j] = pt.X, pt.Y
			}
			l.Path = polyline(xs, ys)
			last := l.Points[len(l.Points)-1]
			l.EndX, l.EndY = last.X, last.Y
			labels[i] = &l.EndLabel
		}
		endLabels(labels, frame.X1+endLabelIndent, frame.Y0, frame.Y1)
	}
}
