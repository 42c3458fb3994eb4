package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"time"

	"agentloop/api"
	"agentloop/apistack"
	"agentloop/app"
	"agentloop/rollout"
)

// The lanes of the per-request check: pre-sprint HTTP, post-sprint HTTP
// and WebSocket mode.
var calibrationLanes = []string{rollout.LaneHTTP, rollout.LaneHTTPOptimized, rollout.LaneWS}

// request is one lane's request at one turn, as its trace recorded it:
// the parts the stack does not touch, and the stack work it did, so its
// figures can be costed under any stack (apistack.Stack.StageCost).
type request struct {
	ResponseID string
	// overhead is the measured API overhead (parse..safety + finalize);
	// beforeToken every span before decoding (queue and prefill
	// included) but finalize; both without the stack.
	overhead, beforeToken time.Duration
	work                  []apistack.Work
	repeat                int
}

// calibrationRow is one turn index, with each lane's request at it.
type calibrationRow struct {
	Index int
	Lanes map[string]request
}

// A per-request figure of a request under a stack.
type perRequestFigure struct {
	Name string
	of   func(request, apistack.Stack) time.Duration
}

var (
	// figureOverhead is the API overhead per round trip: the measured
	// overhead and every stack stage.
	figureOverhead = perRequestFigure{"API overhead per round trip", func(r request, st apistack.Stack) time.Duration {
		d := r.overhead
		for _, w := range r.work {
			d += st.StageCost(w)
		}
		return d
	}}
	// figureTTFT is the engine's time to first token: every span before
	// decoding, so every stack stage but billing (which follows finalize).
	figureTTFT = perRequestFigure{"time to first token (engine)", func(r request, st apistack.Stack) time.Duration {
		d := r.beforeToken
		for _, w := range r.work {
			if w.Stage != api.StageStackBilling {
				d += st.StageCost(w)
			}
		}
		return d
	}}
)

// comparison is a figure of one lane against a baseline lane, turn by
// turn; Announced is the field's figure for it (−0.8 = 80% less), 0 when
// none was announced.
type comparison struct {
	Figure    perRequestFigure
	Lane      string
	Baseline  string
	Announced float64
}

// changes is the lane's change against its baseline at each row: x/base − 1.
func (c comparison) changes(rows []calibrationRow, st apistack.Stack) []float64 {
	out := make([]float64, 0, len(rows))
	for _, r := range rows {
		x, base := c.Figure.of(r.Lanes[c.Lane], st), c.Figure.of(r.Lanes[c.Baseline], st)
		if base > 0 {
			out = append(out, float64(x)/float64(base)-1)
		}
	}
	return out
}

// The announced per-request figures: WebSocket mode's −80% API overhead
// per round trip and −50% time to first token, the sprint's −45% time to
// first token (docs/stack.md cites them).
const (
	announcedWSOverhead = -0.80
	announcedWSTTFT     = -0.50
	announcedSprintTTFT = -0.45
)

// readingComparisons are the announced figures as a reading takes them:
// each against its stated baseline lane (apistack.ReadingPlain,
// apistack.ReadingPostSprint).
func readingComparisons(reading string) ([]comparison, bool) {
	wsBase := ""
	switch reading {
	case apistack.ReadingPlain:
		wsBase = rollout.LaneHTTP
	case apistack.ReadingPostSprint:
		wsBase = rollout.LaneHTTPOptimized
	default:
		return nil, false
	}
	return []comparison{
		{figureOverhead, rollout.LaneWS, wsBase, announcedWSOverhead},
		{figureTTFT, rollout.LaneWS, wsBase, announcedWSTTFT},
		{figureTTFT, rollout.LaneHTTPOptimized, rollout.LaneHTTP, announcedSprintTTFT},
	}, true
}

// checkComparisons are every pair the check reports, announced or not.
var checkComparisons = []comparison{
	{figureOverhead, rollout.LaneWS, rollout.LaneHTTP, 0},
	{figureOverhead, rollout.LaneWS, rollout.LaneHTTPOptimized, 0},
	{figureOverhead, rollout.LaneHTTPOptimized, rollout.LaneHTTP, 0},
	{figureTTFT, rollout.LaneWS, rollout.LaneHTTP, 0},
	{figureTTFT, rollout.LaneWS, rollout.LaneHTTPOptimized, 0},
	{figureTTFT, rollout.LaneHTTPOptimized, rollout.LaneHTTP, 0},
}

// figureStats sums a comparison up over every compared turn: the change
// at the median turn, the mean, and the spread.
type figureStats struct {
	Figure     string  `json:"figure"`
	Lane       string  `json:"lane"`
	Baseline   string  `json:"baseline"`
	MedianTurn float64 `json:"median_turn"`
	Mean       float64 `json:"mean"`
	Min        float64 `json:"min"`
	Max        float64 `json:"max"`
	SD         float64 `json:"sd"`
	// LaneMS and BaselineMS are the figure's mean over the turns.
	LaneMS     float64 `json:"lane_ms"`
	BaselineMS float64 `json:"baseline_ms"`
	// Announced is the field's figure under the reading (fits only);
	// MeanResidual the mean of change − announced, RMS its root mean
	// square over the turns.
	Announced    float64 `json:"announced,omitempty"`
	MeanResidual float64 `json:"mean_residual,omitempty"`
	RMS          float64 `json:"rms,omitempty"`
}

func (c comparison) stats(rows []calibrationRow, st apistack.Stack) figureStats {
	ch := c.changes(rows, st)
	s := figureStats{Figure: c.Figure.Name, Lane: c.Lane, Baseline: c.Baseline, Announced: c.Announced}
	if len(ch) == 0 {
		return s
	}
	s.MedianTurn = ch[len(ch)/2]
	s.Min, s.Max = slices.Min(ch), slices.Max(ch)
	var sq, res2 float64
	for _, v := range ch {
		s.Mean += v / float64(len(ch))
	}
	for _, v := range ch {
		sq += (v - s.Mean) * (v - s.Mean)
		res2 += (v - c.Announced) * (v - c.Announced)
	}
	s.SD = math.Sqrt(sq / float64(len(ch)))
	if c.Announced != 0 {
		s.MeanResidual = s.Mean - c.Announced
		s.RMS = math.Sqrt(res2 / float64(len(ch)))
	}
	for _, r := range rows {
		s.LaneMS += ms(c.Figure.of(r.Lanes[c.Lane], st)) / float64(len(rows))
		s.BaselineMS += ms(c.Figure.of(r.Lanes[c.Baseline], st)) / float64(len(rows))
	}
	return s
}

// calibration is one race of the check's lanes under a stack, read turn
// by turn.
type calibration struct {
	Run      string           `json:"run"`
	Stack    apistack.Stack   `json:"stack"`
	Scenario string           `json:"scenario"`
	Profile  string           `json:"profile"`
	Repeats  int              `json:"repeats"`
	Indices  []int            `json:"turns"` // the turn indices compared, the same in every lane
	Figures  []figureStats    `json:"figures"`
	Fits     []*fitResult     `json:"fits,omitempty"`
	Rows     []calibrationRow `json:"-"`
}

// calibrate races the check's lanes one after another under st (every
// lane asks for it), repeats times, and reads each turn's trace: the same
// turn index in every lane, the WebSocket's warm-up left out. A turn's
// measured parts are the median over the repeats; its stack work is the
// same in every repeat (it follows the scenario), so the first one's
// stands.
func calibrate(ctx context.Context, a *app.App, st apistack.Stack, scenarioName, profile string, seed int64, repeats int) (*calibration, error) {
	cfg := rollout.Config{Scenario: scenarioName, Profile: profile, Lanes: calibrationLanes, Seed: seed, Sequential: true, Repeats: repeats, Stack: st}
	id, _, err := rollout.NewRunner(a.URL(), a.DB, nil).Run(ctx, cfg, nil)
	if err != nil {
		return nil, err
	}
	rec, err := rollout.LoadRun(ctx, a.DB, id)
	if err != nil {
		return nil, err
	}
	byIndex := map[int]map[string][]request{}
	for _, t := range rec.Turns {
		if t.Index < 0 || t.ResponseID == "" || t.Error != "" { // the warm-up is no turn
			continue
		}
		tr, ok := a.Shared.Traces.Get(t.ResponseID)
		if !ok {
			return nil, fmt.Errorf("no trace for %s", t.ResponseID)
		}
		if byIndex[t.Index] == nil {
			byIndex[t.Index] = map[string][]request{}
		}
		r := requestOf(&tr)
		r.repeat = t.Repeat
		byIndex[t.Index][t.Lane] = append(byIndex[t.Index][t.Lane], r)
	}
	c := &calibration{Run: id, Stack: st, Scenario: scenarioName, Profile: profile, Repeats: repeats}
	for i, lanes := range byIndex {
		if len(lanes) != len(calibrationLanes) {
			continue
		}
		row := calibrationRow{Index: i, Lanes: map[string]request{}}
		for lane, reqs := range lanes {
			row.Lanes[lane] = medianRequest(reqs)
		}
		c.Rows = append(c.Rows, row)
	}
	if len(c.Rows) == 0 {
		return nil, fmt.Errorf("run %s: no turn index that every lane reached", id)
	}
	slices.SortFunc(c.Rows, func(x, y calibrationRow) int { return x.Index - y.Index })
	for _, r := range c.Rows {
		c.Indices = append(c.Indices, r.Index)
	}
	for _, cmp := range checkComparisons {
		c.Figures = append(c.Figures, cmp.stats(c.Rows, st))
	}
	return c, nil
}

// medianRequest is the first repeat's request with the median measured
// parts over the repeats.
func medianRequest(reqs []request) request {
	slices.SortFunc(reqs, func(x, y request) int { return x.repeat - y.repeat })
	r := reqs[0]
	median := func(of func(request) time.Duration) time.Duration {
		v := make([]time.Duration, len(reqs))
		for i, q := range reqs {
			v[i] = of(q)
		}
		slices.Sort(v)
		return v[len(v)/2]
	}
	r.overhead = median(func(q request) time.Duration { return q.overhead })
	r.beforeToken = median(func(q request) time.Duration { return q.beforeToken })
	return r
}

// requestOf splits a trace into what the stack does not touch and the
// stack work.
func requestOf(tr *api.Trace) request {
	r := request{ResponseID: tr.ResponseID}
	for _, s := range tr.Spans {
		d := time.Duration(s.DurationNS)
		switch api.SpanGroup(s.Name) {
		case api.GroupAPIStack:
			r.work = append(r.work, apistack.WorkOf(tr, s))
		case api.GroupDecode:
		case api.GroupOverhead:
			r.overhead += d
			if s.Name != api.StageFinalize {
				r.beforeToken += d
			}
		default: // queue, prefill
			r.beforeToken += d
		}
	}
	return r
}

// runBenchCalibrate checks a stack against the announced per-request
// figures, or with --fit solves its classifier rates from them.
func runBenchCalibrate(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("agentloop bench calibrate", flag.ContinueOnError)
	stack := apistack.Hosted
	fs.Var(stackFlag{&stack}, "stack", "the stack every lane runs under: a preset's name or a JSON object of parameters")
	fit := fs.String("fit", "", "solve the classifier rates (classify_tps, classify_tps_baseline) from the announced per-request figures under this reading: "+apistack.ReadingPlain+" or "+apistack.ReadingPostSprint+" (or both, comma-separated, from the one race); the other parameters stay as --stack gives them")
	scenarioName := fs.String("scenario", "fix-failing-test", "scenario")
	profile := fs.String("profile", api.DefaultModel, "model profile")
	seed := fs.Int64("seed", 1, "scenario seed")
	repeats := fs.Int("repeats", 3, "repeats; each turn's measured parts are the median over them")
	asJSON := fs.Bool("json", false, "print JSON")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `Usage: agentloop bench calibrate [flags]

Races http, http-optimized and ws one after another, every lane under --stack, then compares the
engine's per-request API overhead and time to first token turn by turn: the same turn index in every
lane (the WebSocket's warm-up left out), each turn's measured parts the median over --repeats. It prints each comparison at the median turn, its mean and
its spread over all turns (docs/stack.md, "The per-request check").

With --fit READING it solves the two classifier rates by least squares over every turn, so that the
announced per-request figures hold as READING takes them:
  plain        WebSocket's −80% overhead and −50% TTFT against http, the sprint's −45% TTFT against http
  post-sprint  WebSocket's −80% and −50% against http-optimized, the sprint's −45% against http
It prints the fitted rates and each figure's residuals. The fit re-costs the one race's recorded stack
work for each candidate (a stack stage's cost is a function of its work), so it never races again; it
uses the per-request figures only, never an end-to-end one (docs/stack.md, "The fit").

Flags:
`)
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args, getenv, stderr); err != nil {
		return err
	}
	var readings []string
	if *fit != "" {
		readings = strings.Split(*fit, ",")
		for _, r := range readings {
			if _, ok := readingComparisons(r); !ok {
				return fmt.Errorf("--fit: unknown reading %q; use %s or %s", r, apistack.ReadingPlain, apistack.ReadingPostSprint)
			}
		}
		if !stack.Runs(api.StageStackClassify, false) || !stack.Runs(api.StageStackClassify, true) {
			return fmt.Errorf("--fit needs a stack that classifies on both engines, so the race records the tokens classified; %s does not", stack.String())
		}
	}
	a, stop, err := startEngine(ctx, nil)
	if err != nil {
		return err
	}
	defer stop()
	fmt.Fprintf(stderr, "racing %s on %s under stack %s (lanes %s, one after another)\n", *scenarioName, *profile, stack.String(), strings.Join(calibrationLanes, ","))
	c, err := calibrate(ctx, a, stack, *scenarioName, *profile, *seed, *repeats)
	if err != nil {
		return err
	}
	for _, r := range readings {
		targets, _ := readingComparisons(r)
		c.Fits = append(c.Fits, fitReading(c.Rows, stack, r, targets))
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(c)
	}
	printCalibration(stdout, c)
	return nil
}

func printCalibration(w io.Writer, c *calibration) {
	fmt.Fprintf(w, "stack %s, %s, %s, run %s: %d turns compared (turn %d to %d, the same index in every lane; each the median of %d repeats)\n\n",
		c.Stack.String(), c.Scenario, c.Profile, c.Run, len(c.Indices), c.Indices[0], c.Indices[len(c.Indices)-1], c.Repeats)
	fmt.Fprintln(w, "| figure | lane vs baseline | lane (mean) | baseline (mean) | median turn | mean | spread (min … max) | sd |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|")
	for _, f := range c.Figures {
		fmt.Fprintf(w, "| %s | %s vs %s | %.1f ms | %.1f ms | %+.1f%% | %+.1f%% | %+.0f%% … %+.0f%% | %.1f pt |\n", f.Figure, f.Lane, f.Baseline,
			f.LaneMS, f.BaselineMS, 100*f.MedianTurn, 100*f.Mean, 100*f.Min, 100*f.Max, 100*f.SD)
	}
	fmt.Fprintln(w, "\nannounced: ws −80% API overhead per round trip and −50% time to first token; the sprint −45% time to first token (docs/stack.md).")
	for _, f := range c.Fits {
		fmt.Fprintf(w, "\nfit under reading %s (least squares over %d turns × %d figures):\n\n", f.Reading, len(c.Indices), len(f.Residuals))
		fmt.Fprintf(w, "  classify_tps          %.0f  (solved: %.0f)\n", f.Stack.ClassifyTPS, f.Solved.ClassifyTPS)
		fmt.Fprintf(w, "  classify_tps_baseline %.0f  (solved: %.0f)\n", f.Stack.ClassifyTPSBaseline, f.Solved.ClassifyTPSBaseline)
		if f.AtBound != "" {
			fmt.Fprintf(w, "  %s\n", f.AtBound)
		}
		fmt.Fprintf(w, "  the stack: %s\n\n", f.Stack.String())
		fmt.Fprintln(w, "| figure | lane vs baseline | announced | median turn | mean | spread (min … max) | mean residual | RMS residual |")
		fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|")
		for _, r := range f.Residuals {
			fmt.Fprintf(w, "| %s | %s vs %s | %+.0f%% | %+.1f%% | %+.1f%% | %+.0f%% … %+.0f%% | %+.1f pt | %.1f pt |\n", r.Figure, r.Lane, r.Baseline,
				100*r.Announced, 100*r.MedianTurn, 100*r.Mean, 100*r.Min, 100*r.Max, 100*r.MeanResidual, 100*r.RMS)
		}
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
