package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"time"

	"agentloop/api"
	"agentloop/apistack"
	"agentloop/app"
	"agentloop/rollout"
	"agentloop/workload"
)

// sweepCell is one fair race of the sweep: a stack, a scenario (its
// context size) and a decode speed.
type sweepCell struct {
	Stack         string             `json:"stack"`
	Scenario      string             `json:"scenario"`
	ContextTokens int                `json:"context_tokens"` // the largest context a turn sent
	DecodeTPS     int                `json:"decode_tps"`
	Repeats       int                `json:"repeats"`
	Run           string             `json:"run"`
	Status        string             `json:"status"`
	TotalMS       map[string]int64   `json:"total_ms"`
	SavedVsOpt    map[string]float64 `json:"saved_vs_http_optimized"`
}

// runBenchSweep races the lanes over model speeds, stacks and context
// sizes, one lane after another, and prints the share that ws and
// prototype save against optimized HTTP.
func runBenchSweep(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("agentloop bench sweep", flag.ContinueOnError)
	scenarios := fs.String("scenarios", "fix-failing-test,rename-api", "scenarios, one per context size")
	speeds := fs.String("speeds", "65,250,1000,4000", "decode speeds in tokens/s (spark's prefill and time to first token)")
	stacks := fs.String("stacks", strings.Join(apistack.PresetNames(), ","), "stack presets")
	lanes := fs.String("lanes", strings.Join(sweepLanes(), ","), "lanes; http-optimized is the reference")
	repeats := fs.Int("repeats", 3, "repeats per cell above --slow")
	slow := fs.Int("slow", 250, "at this speed or slower, one repeat per cell")
	seed := fs.Int64("seed", 1, "scenario seed")
	db := fs.String("db", app.DefaultDB, "SQLite database the races are stored in (the playground's /sweep page reads them)")
	workloadFile := fs.String("workload", "", "replay this workload (docs/workload.md) instead of the scenarios; the prototype lane is left out")
	asJSON := fs.Bool("json", false, "print JSON")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), "Usage: agentloop bench sweep [flags]\n\nRuns fair races (lanes one after another, interleaved over repeats) over model speeds, stacks and context sizes, and prints each lane's median time and the share ws and prototype save against http-optimized.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args, getenv, stderr); err != nil {
		return err
	}
	laneList := splitList(*lanes)
	if len(laneList) < 2 || laneList[0] != rollout.LaneHTTPOptimized {
		return fmt.Errorf("--lanes must start with %s, the reference", rollout.LaneHTTPOptimized)
	}
	scenarioList := splitList(*scenarios)
	var wl *workload.Workload
	if *workloadFile != "" {
		var err error
		if wl, err = loadWorkload(ctx, *workloadFile, "", ""); err != nil {
			return err
		}
		scenarioList = []string{rollout.WorkloadScenario}
		laneList = slices.DeleteFunc(laneList, func(l string) bool { return l == rollout.LanePrototype })
	}
	var tpsList []int
	for _, s := range splitList(*speeds) {
		n, err := strconv.Atoi(s)
		if err != nil || n < api.MinCustomTPS || n > api.MaxCustomTPS {
			return fmt.Errorf("--speeds: %q is not a decode rate from %d to %d", s, api.MinCustomTPS, api.MaxCustomTPS)
		}
		tpsList = append(tpsList, n)
	}
	var stackList []apistack.Stack
	for _, s := range splitList(*stacks) {
		st, err := apistack.Parse(s, apistack.Lean, "--stacks")
		if err != nil {
			return fmt.Errorf("--stacks: %s", err.Message)
		}
		stackList = append(stackList, st)
	}
	a, stop, err := startEngine(ctx, func(c *app.Config) { c.DB = *db })
	if err != nil {
		return err
	}
	defer stop()
	runner := rollout.NewRunner(a.URL(), a.DB, slog.New(slog.DiscardHandler))
	if !*asJSON {
		fmt.Fprintf(stdout, "| stack | scenario | context | tok/s | %s | %s |\n|---|---|---|---|%s%s\n", strings.Join(laneList, " | "),
			strings.Join(savedHeads(laneList), " | "), strings.Repeat("---|", len(laneList)), strings.Repeat("---|", len(laneList)-1))
	}
	// base is what every cell shares: spark's profile at each speed, lanes
	// one after another, no round trip, tool time or bandwidth limit.
	base := rollout.Config{Profile: api.ModelSpark, Lanes: laneList, Seed: *seed, Sequential: true, Workload: wl}
	var cells []sweepCell
	for _, st := range stackList {
		for _, sc := range scenarioList {
			for _, tps := range tpsList {
				n := *repeats
				if tps <= *slow {
					n = 1
				}
				cfg := base
				cfg.Scenario, cfg.DecodeTPS, cfg.Stack, cfg.Repeats = sc, float64(tps), st, n
				id, sum, err := runner.Run(ctx, cfg, nil)
				if err != nil {
					return fmt.Errorf("%s %s %d tok/s: %w", st.Preset, sc, tps, err)
				}
				c := sweepCell{Stack: st.String(), Scenario: sc, DecodeTPS: tps, Repeats: n, Run: id, Status: rollout.StatusPassed,
					TotalMS: map[string]int64{}, SavedVsOpt: map[string]float64{}}
				for _, l := range sum.Lanes {
					c.TotalMS[l.Lane] = time.Duration(l.TotalNS).Milliseconds()
					if l.Status != rollout.StatusPassed {
						c.Status = l.Status
					}
					if v, ok := sum.SavedVsOptimized[l.Lane]; ok && l.Lane != rollout.LaneHTTPOptimized {
						c.SavedVsOpt[l.Lane] = v
					}
				}
				if rec, err := rollout.LoadRun(ctx, a.DB, id); err == nil {
					for _, t := range rec.Turns {
						c.ContextTokens = max(c.ContextTokens, t.InputTokens)
					}
				}
				cells = append(cells, c)
				if !*asJSON {
					var totals, saved []string
					for _, l := range laneList {
						totals = append(totals, fmt.Sprintf("%.2fs", float64(c.TotalMS[l])/1000))
						if l != rollout.LaneHTTPOptimized {
							saved = append(saved, fmt.Sprintf("%.0f%%", 100*c.SavedVsOpt[l]))
						}
					}
					fmt.Fprintf(stdout, "| %s | %s | %dk | %d | %s | %s |\n", st.Preset, sc, (c.ContextTokens+500)/1000, tps,
						strings.Join(totals, " | "), strings.Join(saved, " | "))
				}
			}
		}
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		// The settings every cell shares, as /sweep reads them from the
		// reference file (docs/sweep-reference.json).
		settings := map[string]any{"rtt_ms": base.RTTms, "tool_time_ms": base.ToolTimeMs, "bandwidth_kbps": base.BandwidthKbps,
			"profile": base.Profile, "lanes": base.Lanes, "sequential": base.Sequential}
		return enc.Encode(map[string]any{"settings": settings, "cells": cells, "rises_with_speed": risesWithSpeed(cells)})
	}
	fmt.Fprintln(stdout)
	for k, ok := range risesWithSpeed(cells) {
		fmt.Fprintf(stdout, "%s: the share ws saves rises with model speed: %v\n", k, ok)
	}
	return nil
}

// sweepLanes are the sweep's default lanes: the reference first.
func sweepLanes() []string {
	out := []string{rollout.LaneHTTPOptimized}
	for _, l := range rollout.AllLanes {
		if l == rollout.LaneWS || l == rollout.LanePrototype {
			out = append(out, l)
		}
	}
	return out
}

func savedHeads(lanes []string) []string {
	var out []string
	for _, l := range lanes[1:] {
		out = append(out, l+" saves")
	}
	return out
}

// risesWithSpeed says, per stack and scenario, whether the share ws saves
// never falls as the decode speed rises (cells are in speed order).
func risesWithSpeed(cells []sweepCell) map[string]bool {
	out := map[string]bool{}
	last := map[string]float64{}
	for _, c := range cells {
		k := c.Stack + " " + c.Scenario
		v := c.SavedVsOpt[rollout.LaneWS]
		if _, seen := out[k]; !seen {
			out[k] = true
		} else if v < last[k] {
			out[k] = false
		}
		last[k] = v
	}
	return out
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
