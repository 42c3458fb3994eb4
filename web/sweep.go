package web

import (
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"agentloop/api"
	"agentloop/rollout"
	"agentloop/store"
	"agentloop/views"

	"github.com/labstack/echo/v4"
)

// sweepRunsRead bounds how many stored runs the sweep page reads.
const sweepRunsRead = 500

// sweepPage is /sweep: the share ws (and prototype) save against
// optimized HTTP, by model speed, one line per stack, from the stored
// fair runs (agentloop bench sweep writes them).
func (p *Playground) sweepPage(c echo.Context) error {
	runs, err := p.runs.ListRuns(c.Request().Context(), store.RunFilter{Limit: sweepRunsRead})
	if err != nil {
		p.log.Error("list runs", "err", err)
		return p.problem(c, http.StatusInternalServerError, "Could not list runs", "The server had an error while reading runs.")
	}
	return render(c, http.StatusOK, views.SweepPage(p.page("Sweep", "sweep"), sweepCharts(runs)))
}

// sweepPoint is one fair run's place on the chart.
type sweepPoint struct {
	scenario, stack string
	tps             float64
	saved           map[string]float64
	run             string
}

// sweepCharts groups the newest fair run per scenario, stack and speed.
// A run counts when it passed, ran its lanes one after another, and raced
// ws against http-optimized. Runs come newest first.
func sweepCharts(runs []rollout.RunRecord) []views.SweepChart {
	seen := map[string]bool{}
	var pts []sweepPoint
	for _, r := range runs {
		cfg := r.Config
		if r.Status != rollout.StatusPassed || !cfg.Sequential || r.Summary == nil ||
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
		stack := cfg.Stack.Preset
		if stack == "" {
			stack = api.StackLean.Preset
		}
		key := cfg.Scenario + "|" + stack + "|" + strconv.FormatFloat(tps, 'f', -1, 64)
		if seen[key] {
			continue
		}
		seen[key] = true
		pts = append(pts, sweepPoint{scenario: cfg.Scenario, stack: stack, tps: tps, saved: r.Summary.SavedVsOptimized, run: r.ID})
	}
	slices.SortFunc(pts, func(a, b sweepPoint) int {
		if c := strings.Compare(a.scenario, b.scenario); c != 0 {
			return c
		}
		if c := strings.Compare(a.stack, b.stack); c != 0 {
			return c
		}
		return int(a.tps - b.tps)
	})
	var charts []views.SweepChart
	for _, pt := range pts {
		if len(charts) == 0 || charts[len(charts)-1].Scenario != pt.scenario {
			charts = append(charts, views.SweepChart{Scenario: pt.scenario})
		}
		ch := &charts[len(charts)-1]
		for _, lane := range []string{rollout.LaneWS, rollout.LanePrototype} {
			v, ok := pt.saved[lane]
			if !ok {
				continue
			}
			name := pt.stack + " · " + lane
			i := slices.IndexFunc(ch.Lines, func(l views.SweepLine) bool { return l.Name == name })
			if i < 0 {
				ch.Lines = append(ch.Lines, views.SweepLine{Name: name, Stack: pt.stack, Lane: lane})
				i = len(ch.Lines) - 1
			}
			ch.Lines[i].Points = append(ch.Lines[i].Points, views.SweepPoint{TPS: pt.tps, Saved: v, Run: pt.run})
		}
	}
	for i := range charts {
		layoutSweep(&charts[i])
	}
	return charts
}

// The chart's drawing area, in SVG units.
const (
	sweepW, sweepH           = 640.0, 320.0
	sweepLeft, sweepRight    = 56.0, 16.0
	sweepTop, sweepBottom    = 16.0, 40.0
	sweepMinTPS, sweepMaxTPS = 50.0, 5000.0
)

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
	x := func(tps float64) float64 {
		f := (math.Log10(tps) - math.Log10(sweepMinTPS)) / (math.Log10(sweepMaxTPS) - math.Log10(sweepMinTPS))
		return sweepLeft + f*(sweepW-sweepLeft-sweepRight)
	}
	y := func(v float64) float64 {
		return sweepTop + (hi-v)/(hi-lo)*(sweepH-sweepTop-sweepBottom)
	}
	ch.W, ch.H = sweepW, sweepH
	ch.X0, ch.X1, ch.Y0, ch.Y1 = sweepLeft, sweepW-sweepRight, sweepTop, sweepH-sweepBottom
	for _, t := range []float64{65, 250, 1000, 4000} {
		ch.XTicks = append(ch.XTicks, views.SweepTick{At: x(t), Label: strconv.FormatFloat(t, 'f', -1, 64)})
	}
	for v := lo; v <= hi+1e-9; v += 0.1 {
		ch.YTicks = append(ch.YTicks, views.SweepTick{At: y(v), Label: strconv.Itoa(int(math.Round(v*100))) + "%"})
	}
	for i := range ch.Lines {
		l := &ch.Lines[i]
		var path []string
		for j := range l.Points {
			pt := &l.Points[j]
			pt.X, pt.Y = x(pt.TPS), y(pt.Saved)
			path = append(path, strconv.FormatFloat(pt.X, 'f', 1, 64)+","+strconv.FormatFloat(pt.Y, 'f', 1, 64))
		}
		l.Path = strings.Join(path, " ")
	}
}
