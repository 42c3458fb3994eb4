package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"slices"
	"time"

	"agentloop/api"
	"agentloop/app"
	"agentloop/rollout"
)

// calibrationFigure is one per-request figure of the check: each lane's
// value at the scenario's median context, and what the field announced.
type calibrationFigure struct {
	Figure    string             `json:"figure"`
	MS        map[string]float64 `json:"ms"`
	WSvsHTTP  float64            `json:"ws_vs_http"`
	WSvsOpt   float64            `json:"ws_vs_http_optimized"`
	OptVsHTTP float64            `json:"http_optimized_vs_http"`
	Announced string             `json:"announced"`
}

// runBenchCalibrate checks a stack against the announced per-request
// figures: one fair race, then each lane's trace at the median turn.
func runBenchCalibrate(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("agentloop bench calibrate", flag.ContinueOnError)
	stack := api.StackHosted
	fs.Var(stackFlag{&stack}, "stack", "the stack to check: a preset's name or a JSON object of parameters")
	scenarioName := fs.String("scenario", "fix-failing-test", "scenario")
	profile := fs.String("profile", "spark", "model profile")
	seed := fs.Int64("seed", 1, "scenario seed")
	asJSON := fs.Bool("json", false, "print JSON")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), "Usage: agentloop bench calibrate [flags]\n\nRuns http, http-optimized and ws one after another under a modelled stack, then compares, at the median turn, the engine's per-request API overhead and time to first token with the announced per-request figures (docs/stack.md).\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args, getenv, stderr); err != nil {
		return err
	}
	a, stop, err := startEngine(ctx, func(c *app.Config) { c.Stack = stack })
	if err != nil {
		return err
	}
	defer stop()
	lanes := []string{rollout.LaneHTTP, rollout.LaneHTTPOptimized, rollout.LaneWS}
	cfg := rollout.Config{Scenario: *scenarioName, Profile: *profile, Lanes: lanes, Seed: *seed, Sequential: true, Repeats: 1}
	id, _, err := rollout.NewRunner(a.URL(), a.DB, nil).Run(ctx, cfg, nil)
	if err != nil {
		return err
	}
	rec, err := rollout.LoadRun(ctx, a.DB, id)
	if err != nil {
		return err
	}
	overhead, ttft := map[string]float64{}, map[string]float64{}
	contextTokens := 0
	for _, lane := range lanes {
		var turns []rollout.Turn
		for _, t := range rec.Turns {
			if t.Lane == lane {
				turns = append(turns, t)
			}
		}
		if len(turns) == 0 {
			return fmt.Errorf("lane %s has no turns", lane)
		}
		slices.SortFunc(turns, func(x, y rollout.Turn) int { return x.Index - y.Index })
		mid := turns[len(turns)/2]
		tr, ok := a.Shared.Traces.Get(mid.ResponseID)
		if !ok {
			return fmt.Errorf("no trace for %s", mid.ResponseID)
		}
		o, f := perRequest(tr)
		overhead[lane], ttft[lane] = ms(o), ms(f)
		if lane == rollout.LaneWS {
			contextTokens = mid.InputTokens
		}
	}
	figures := []calibrationFigure{
		figure("API overhead per round trip", overhead, "ws −80% vs http (per-roundtrip overhead)"),
		figure("time to first token (engine)", ttft, "ws −50% vs http; the sprint alone −45% (http-optimized vs http)"),
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(map[string]any{"run": id, "stack": stack, "context_tokens": contextTokens, "figures": figures})
	}
	fmt.Fprintf(stdout, "stack %s, %s, %s, median turn (%d context tokens), run %s\n\n", stack.String(), *scenarioName, *profile, contextTokens, id)
	fmt.Fprintln(stdout, "| figure | http | http-optimized | ws | ws vs http | ws vs http-optimized | http-optimized vs http | announced |")
	fmt.Fprintln(stdout, "|---|---|---|---|---|---|---|---|")
	for _, f := range figures {
		fmt.Fprintf(stdout, "| %s | %.1f ms | %.1f ms | %.1f ms | %+.0f%% | %+.0f%% | %+.0f%% | %s |\n", f.Figure,
			f.MS[rollout.LaneHTTP], f.MS[rollout.LaneHTTPOptimized], f.MS[rollout.LaneWS], 100*f.WSvsHTTP, 100*f.WSvsOpt, 100*f.OptVsHTTP, f.Announced)
	}
	return nil
}

// perRequest is a trace's API overhead (the measured stages and the
// modelled stack) and its time to first token (every span before decoding).
func perRequest(tr api.Trace) (overhead, ttft time.Duration) {
	for _, s := range tr.Spans {
		d := time.Duration(s.DurationNS)
		stack := api.IsStackStage(s.Name)
		if api.IsOverhead(s.Name) || stack {
			overhead += d
		}
		if s.Name != api.StageGenerate && s.Name != api.StageFinalize && s.Name != api.StageStackBilling {
			ttft += d
		}
	}
	return overhead, ttft
}

func figure(name string, v map[string]float64, announced string) calibrationFigure {
	change := func(a, b float64) float64 {
		if b == 0 {
			return 0
		}
		return a/b - 1
	}
	return calibrationFigure{Figure: name, MS: v, Announced: announced,
		WSvsHTTP:  change(v[rollout.LaneWS], v[rollout.LaneHTTP]),
		WSvsOpt:   change(v[rollout.LaneWS], v[rollout.LaneHTTPOptimized]),
		OptVsHTTP: change(v[rollout.LaneHTTPOptimized], v[rollout.LaneHTTP])}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
