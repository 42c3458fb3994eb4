package web

import (
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

// sweepPage is /sweep: the share ws (and prototype) save against
// optimized HTTP, by model speed, one series per lane and settings, from
// the stored fair runs (agentloop bench sweep writes them), and the
// reference sweep the binary carries, so that a fresh install shows one.
func (p *Playground) sweepPage(c echo.Context) error {
	runs, err := p.runs.ListRuns(c.Request().Context(), store.RunFilter{Limit: sweepRunsRead})
	if err != nil {
		return p.storeProblem(c, err, "Could not list runs", "The runs could not be read")
	}
	ref, err := referenceSweep()
	if err != nil {
		p.log.Error("reference sweep", "err", err)
	}
	return render(c, http.StatusOK, views.SweepPage(p.page("Sweep", "sweep"), sweepCharts(runs), ref))
}

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
// counts when it passed, ran its lanes one after another, raced ws against
// http-optimized, and ran alone. Runs come newest first.
func sweepCharts(runs []rollout.RunRecord) []views.SweepChart {
	overlapped := ranTogether(runs)
	seen := map[string]bool{}
	var pts []sweepPoint
	for _, r := range runs {
		cfg := r.Config
		if r.Status != rollout.StatusPassed || !cfg.Sequential || r.Summary == nil || overlapped[r.ID] ||
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

// chartPoints draws one chart per scenario, one series per settings and
// lane, points in speed order.
func chartPoints(pts []sweepPoint) []views.SweepChart {
	slices.SortFunc(pts, func(a, b sweepPoint) int {
		if c := strings.Compare(a.settings.scenario, b.settings.scenario); c != 0 {
			return c
		}
		if c := strings.Compare(a.settings.String(), b.settings.String()); c != 0 {
			return c
		}
		return int(a.tps - b.tps)
	})
	var charts []views.SweepChart
	for _, pt := range pts {
		if len(charts) == 0 || charts[len(charts)-1].Scenario != pt.settings.scenario {
			charts = append(charts, views.SweepChart{Scenario: pt.settings.scenario})
		}
		ch := &charts[len(charts)-1]
		for _, lane := range []string{rollout.LaneWS, rollout.LanePrototype} {
			v, ok := pt.saved[lane]
			if !ok {
				continue
			}
			name := pt.settings.stack + " · " + lane
			settings := pt.settings.String()
			i := slices.IndexFunc(ch.Lines, func(l views.SweepLine) bool { return l.Name == name && l.Settings == settings })
			if i < 0 {
				ch.Lines = append(ch.Lines, views.SweepLine{Name: name, Stack: pt.settings.stack, Lane: lane, Settings: settings,
					Class: "series-" + strconv.Itoa(len(ch.Lines)%8)})
				i = len(ch.Lines) - 1
			}
			ch.Lines[i].Points = append(ch.Lines[i].Points, views.SweepPoint{TPS: pt.tps, Saved: v, Run: pt.run})
		}
	}
	// A name says the settings too when two series share a stack and lane.
	for c := range charts {
		for i := range charts[c].Lines {
			l := &charts[c].Lines[i]
			n := 0
			for _, o := range charts[c].Lines {
				if o.Name == l.Name {
					n++
				}
			}
			if n > 1 {
				l.Name += " (" + strings.TrimPrefix(l.Settings, l.Stack+" stack · ") + ")"
			}
		}
		layoutSweep(&charts[c])
	}
	return charts
}

// sweepReference is the committed reference sweep (docs/sweep-reference.json):
// agentloop bench sweep --json's output, with when and how it was made.
type sweepReference struct {
	Date     string `json:"date"`
	Command  string `json:"command"`
	Machine  string `json:"machine"`
	Settings struct {
		RTTMS         float64 `json:"rtt_ms"`
		ToolTimeMS    float64 `json:"tool_time_ms"`
		BandwidthKbps int     `json:"bandwidth_kbps"`
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

// referenceSweep charts the reference sweep the binary carries.
func referenceSweep() (*views.SweepReference, error) {
	var ref sweepReference
	if err := json.Unmarshal(docs.SweepReference(), &ref); err != nil {
		return nil, err
	}
	var pts []sweepPoint
	for _, c := range ref.Cells {
		if c.Status != rollout.StatusPassed {
			continue
		}
		pts = append(pts, sweepPoint{settings: sweepSettings{scenario: c.Scenario, stack: c.Stack, rttMS: ref.Settings.RTTMS,
			toolMS: ref.Settings.ToolTimeMS, bandwidthKbps: ref.Settings.BandwidthKbps}, tps: c.DecodeTPS, saved: c.SavedVsOpt})
	}
	return &views.SweepReference{Date: ref.Date, Command: ref.Command, Machine: ref.Machine, Charts: chartPoints(pts)}, nil
}

// The chart's drawing area, in SVG units: narrow enough that its 14-unit
// labels stay about 11 px on a phone.
var sweepBox = chartBox{w: 480, h: 300, left: 52, right: 14, top: 14, bottom: 44}

// The speed axis's ends, in tokens/s (log scale).
const sweepMinTPS, sweepMaxTPS = 50.0, 5000.0

// layoutSweep places the points: speed on a log scale, the saved share
// from 0 (or the lowest point) to the highest, in steps of 10%.
func layoutSweep(ch *views.SweepChart) {
	lo, hi := 0.0, 0.1
	for _, l := range ch.Lines {
		for _, p := range l.Points {
			lo, hi = math.Min(lo, p.Saved), math.Max(hi, p.Saved)
		}
	}
	lo, hi = math.Floor(lo*10)/10, math.Ceil(hi*10)/10
	frame, xAt, y := sweepBox.frame(lo, hi, 0.1, func(v float64) string { return strconv.Itoa(int(math.Round(v*100))) + "%" })
	x := func(tps float64) float64 {
		return xAt((math.Log10(tps) - math.Log10(sweepMinTPS)) / (math.Log10(sweepMaxTPS) - math.Log10(sweepMinTPS)))
	}
	for _, t := range []float64{65, 250, 1000, 4000} {
		frame.XTicks = append(frame.XTicks, views.ChartTick{At: x(t), Label: strconv.FormatFloat(t, 'f', -1, 64)})
	}
	ch.ChartFrame = frame
	for i := range ch.Lines {
		l := &ch.Lines[i]
		xs, ys := make([]float64, len(l.Points)), make([]float64, len(l.Points))
		for j := range l.Points {
			pt := &l.Points[j]
			pt.X, pt.Y = x(pt.TPS), y(pt.Saved)
			xs[j], ys[j] = pt.X, pt.Y
		}
		l.Path = polyline(xs, ys)
	}
}
