package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"agentloop/rollout"
)

// runBenchClassroom races the classroom's live race (rollout.Classroom:
// presenter mode's start) end to end on an in-process engine, --runs
// times, and prints each run's wall time, each lane's own-clock total and
// the headline, then the median wall time beside the estimate the page
// shows beforehand (docs/decisions.md, "Lanes that take turns").
func runBenchClassroom(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("agentloop bench classroom", flag.ContinueOnError)
	runs := fs.Int("runs", 3, "races to run; the median wall time is reported")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), "Usage: agentloop bench classroom [--runs N]\n\nRaces presenter mode's classroom race (the quick-fix scenario on burst, the one-click race's stack, the four\nlanes taking turns, one repeat) on an in-process engine and prints each race's wall time, each lane's total on\nits own clock and the headline, then the median wall time and the estimate the page shows.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args, getenv, stderr); err != nil {
		return err
	}
	if *runs < 1 {
		return fmt.Errorf("bench classroom: --runs must be 1 or more")
	}
	cfg := rollout.Classroom
	if err := rollout.Normalize(&cfg); err != nil {
		return err
	}
	a, stop, err := startEngine(ctx, nil)
	if err != nil {
		return err
	}
	defer stop()
	runner := rollout.NewRunner(a.URL(), a.DB, nil)
	est := rollout.Estimate(cfg)
	fmt.Fprintf(stdout, "classroom race: %s on %s, stack %s, rtt %gms, tool time %gms, lanes %s %s, %d repeat\n",
		cfg.Scenario, cfg.Profile, cfg.Stack.Preset, cfg.RTTms, cfg.ToolTimeMs, strings.Join(cfg.Lanes, ","), cfg.Order(), cfg.Repeats)
	var walls []time.Duration
	for i := range *runs {
		start := time.Now()
		id, sum, err := runner.Run(ctx, cfg, nil)
		wall := time.Since(start)
		if err != nil {
			return fmt.Errorf("race %d: %w", i+1, err)
		}
		walls = append(walls, wall)
		var lanes []string
		for _, l := range sum.Lanes {
			if l.Status != rollout.StatusPassed {
				return fmt.Errorf("race %d (%s): lane %s %s: %s", i+1, id, l.Lane, l.Status, l.Error)
			}
			lanes = append(lanes, fmt.Sprintf("%s %s", l.Lane, rollout.FormatNS(l.TotalNS)))
		}
		fmt.Fprintf(stdout, "race %d (%s): wall %s; own clocks: %s\n  %s\n", i+1, id, rollout.FormatNS(wall.Nanoseconds()), strings.Join(lanes, ", "), sum.Headline)
		if sum.Busy != "" {
			fmt.Fprintf(stdout, "  %s\n", sum.Busy)
		}
	}
	slices.Sort(walls)
	fmt.Fprintf(stdout, "median wall of %d: %s (min %s, max %s); the page estimates %s (%s)\n", len(walls),
		rollout.FormatNS(walls[len(walls)/2].Nanoseconds()), rollout.FormatNS(walls[0].Nanoseconds()), rollout.FormatNS(walls[len(walls)-1].Nanoseconds()),
		rollout.EstimateWords(est), rollout.FormatNS(est.Nanoseconds()))
	return nil
}
