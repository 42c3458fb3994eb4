package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"agentloop/api"
	"agentloop/apistack"
	"agentloop/app"
	"agentloop/corpus"
	"agentloop/inference"
	"agentloop/rollout"
	"agentloop/workload"
)

// Buckets of the saving against turns and against final context.
var (
	turnBuckets    = []int{1, 10, 20, 40}
	contextBuckets = []int{0, 5_000, 10_000, 25_000}
)

// runBenchCorpus is `agentloop bench corpus`: every session of the corpus
// raced once, re-costed at each model speed and stack reading.
func runBenchCorpus(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("agentloop bench corpus", flag.ContinueOnError)
	speeds := fs.String("speeds", "65,250,1000,4000", "decode speeds in tokens/s (spark's prefill and time to first token), as bench sweep")
	toolTime := fs.String("tool-time", "recorded", `"recorded" (each session's recorded tool times) or a fixed time in ms between every two turns`)
	check := fs.Int("check", 0, "also race this many sessions for real at each of --check-speeds, and compare with their re-costing")
	checkSpeeds := fs.String("check-speeds", "1000,4000", "the speeds of --check")
	limit := fs.Int("limit", 0, "race only the first N sessions (0: all)")
	laneFlag := fs.String("lanes", rollout.LaneHTTPOptimized+","+rollout.LaneWS, "the lanes: http-optimized and ws, and http where asked")
	asJSON := fs.Bool("json", false, "print JSON instead of tables")
	db := fs.String("db", "", "the store (default: a temporary SQLite file)")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), "Usage: agentloop bench corpus [flags]\n\nRaces every session of the corpus (corpus/README.md) once over http-optimized and ws, lanes one after another, at instant\nwith no tool time, then re-costs each race arithmetically at each model speed and stack reading (the stack, the model's time,\nthe tool times), and prints the distribution of the share WebSocket mode saves, the saving against turns and final context,\nand where it passes 10%. Raced: the engine's and the transport's time and the stack work. Re-costed: the rest.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args, getenv, stderr); err != nil {
		return err
	}
	tps, err := corpusSpeeds(*speeds, "--speeds")
	if err != nil {
		return err
	}
	ctps, err := corpusSpeeds(*checkSpeeds, "--check-speeds")
	if err != nil {
		return err
	}
	fixed := -1.0
	if *toolTime != "recorded" {
		fixed, err = strconv.ParseFloat(*toolTime, 64)
		if err != nil || fixed < 0 || fixed > workload.MaxToolTimeMs {
			return fmt.Errorf(`--tool-time: %q is neither "recorded" nor a time from 0 to %d ms`, *toolTime, workload.MaxToolTimeMs)
		}
	}
	sessions, err := corpus.Load()
	if err != nil {
		return err
	}
	if *limit > 0 && *limit < len(sessions) {
		sessions = sessions[:*limit]
	}
	a, stop, err := startEngine(ctx, func(c *app.Config) {
		if *db != "" {
			c.DB = *db
		}
	})
	if err != nil {
		return err
	}
	defer stop()
	runner := rollout.NewRunner(a.URL(), a.DB, slog.New(slog.DiscardHandler))
	lanes := splitList(*laneFlag)
	withHTTP := slices.Contains(lanes, rollout.LaneHTTP)
	for _, l := range lanes {
		if l != rollout.LaneHTTP && l != rollout.LaneHTTPOptimized && l != rollout.LaneWS {
			return fmt.Errorf("--lanes: %q; bench corpus races %s, %s and %s", l, rollout.LaneHTTP, rollout.LaneHTTPOptimized, rollout.LaneWS)
		}
	}
	if !slices.Contains(lanes, rollout.LaneHTTPOptimized) || !slices.Contains(lanes, rollout.LaneWS) {
		return fmt.Errorf("--lanes: %q must hold %s and %s", *laneFlag, rollout.LaneHTTPOptimized, rollout.LaneWS)
	}
	// The race's stack models every stage the readings' presets do, so
	// each re-costs from its work.
	raced := apistack.HostedPostSprint
	began := time.Now()
	var results []corpus.SessionResult
	for i, s := range sessions {
		w := s.Workload
		cfg := rollout.Config{Profile: api.ModelInstant, Stack: raced, Lanes: lanes, Sequential: true, Repeats: 1,
			Seed: 1, Workload: w, FixedToolTime: true}
		id, _, err := runner.Run(ctx, cfg, nil)
		if err != nil {
			return fmt.Errorf("%s: %w", s.File, err)
		}
		rec, err := rollout.LoadRun(ctx, a.DB, id)
		if err != nil {
			return err
		}
		r := corpus.SessionResult{File: s.File, Turns: len(w.Turns), FinalContext: corpus.FinalContext(w), Run: id, Saving: map[string]map[int]float64{}}
		if withHTTP {
			r.SavingVsHTTP = map[string]map[int]float64{}
		}
		for _, rd := range apistack.HostedReadings {
			r.Saving[rd.Reading] = map[int]float64{}
			if withHTTP {
				r.SavingVsHTTP[rd.Reading] = map[int]float64{}
			}
			for _, v := range tps {
				tot, err := corpus.Recost(rec, rd.Preset, inference.ProfileFor(api.CustomModelPrefix+strconv.Itoa(v)), w, fixed)
				if err != nil {
					return fmt.Errorf("%s: %w", s.File, err)
				}
				r.Saving[rd.Reading][v] = corpus.Saving(tot[rollout.LaneHTTPOptimized], tot[rollout.LaneWS])
				if withHTTP {
					r.SavingVsHTTP[rd.Reading][v] = corpus.Saving(tot[rollout.LaneHTTP], tot[rollout.LaneWS])
				}
			}
		}
		results = append(results, r)
		if !*asJSON && (i+1)%25 == 0 {
			fmt.Fprintf(stderr, "%d of %d sessions raced (%s)\n", i+1, len(sessions), time.Since(began).Round(time.Second))
		}
	}
	racedIn := time.Since(began)
	var checks []corpus.Check
	if *check > 0 {
		checks, err = corpusChecks(ctx, runner, a.DB, sessions, results, *check, ctps, fixed)
		if err != nil {
			return err
		}
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(corpus.Report{Date: time.Now().UTC().Format(time.DateOnly), Command: strings.Join(append([]string{"agentloop bench corpus"}, args...), " "),
			Sessions: results, Checks: checks, RacedSeconds: racedIn.Seconds()})
	}
	printCorpusBench(stdout, results, tps, checks, racedIn)
	return nil
}

func corpusSpeeds(list, flagName string) ([]int, error) {
	var out []int
	for _, s := range splitList(list) {
		n, err := strconv.Atoi(s)
		if err != nil || n < api.MinCustomTPS || n > api.MaxCustomTPS {
			return nil, fmt.Errorf("%s: %q is not a decode rate from %d to %d", flagName, s, api.MinCustomTPS, api.MaxCustomTPS)
		}
		out = append(out, n)
	}
	return out, nil
}

// corpusChecks races n sessions for real (their recorded tool times, the
// post-sprint preset, at each speed) and re-costs their instant races: the
// sessions with the least model and tool time among those of 8 turns or
// more, so that the check stays short.
func corpusChecks(ctx context.Context, runner *rollout.Runner, db rollout.RunReader, sessions []corpus.Session, results []corpus.SessionResult, n int, speeds []int, fixed float64) ([]corpus.Check, error) {
	idx := make([]int, 0, len(sessions))
	for i, s := range sessions {
		if len(s.Workload.Turns) >= 8 {
			idx = append(idx, i)
		}
	}
	cost := func(i int) float64 {
		s := sessions[i].Workload.Summarize()
		return float64(s.OutputTokens)/1000*1000 + s.ToolTimeMs // output at 1000 tok/s, in ms
	}
	sort.SliceStable(idx, func(a, b int) bool { return cost(idx[a]) < cost(idx[b]) })
	// The cheapest of each agent in turn, so that every agent is checked.
	byAgent := map[string][]int{}
	var agents []string
	for _, i := range idx {
		a := sessions[i].Attribution.Agent
		if len(byAgent[a]) == 0 {
			agents = append(agents, a)
		}
		byAgent[a] = append(byAgent[a], i)
	}
	idx = idx[:0]
	for k := 0; len(idx) < n && k < len(sessions); k++ {
		for _, a := range agents {
			if k < len(byAgent[a]) && len(idx) < n {
				idx = append(idx, byAgent[a][k])
			}
		}
	}
	st := apistack.HostedPostSprint
	var out []corpus.Check
	for _, i := range idx {
		s := sessions[i]
		rec, err := rollout.LoadRun(ctx, db, results[i].Run)
		if err != nil {
			return nil, err
		}
		for _, v := range speeds {
			cfg := rollout.Config{Profile: api.ModelSpark, DecodeTPS: float64(v), Stack: st, Lanes: []string{rollout.LaneHTTPOptimized, rollout.LaneWS},
				Sequential: true, Repeats: 1, Seed: 1, Workload: s.Workload, FixedToolTime: fixed >= 0, ToolTimeMs: max(fixed, 0)}
			id, sum, err := runner.Run(ctx, cfg, nil)
			if err != nil {
				return nil, fmt.Errorf("check %s: %w", s.File, err)
			}
			tot, err := corpus.Recost(rec, st, inference.ProfileFor(api.CustomModelPrefix+strconv.Itoa(v)), s.Workload, fixed)
			if err != nil {
				return nil, err
			}
			c := corpus.Check{File: s.File, Speed: v, Run: id, RealMS: map[string]int64{}, RecostMS: map[string]int64{}}
			real := map[string]time.Duration{}
			for _, l := range sum.Lanes {
				real[l.Lane] = time.Duration(l.TotalNS)
				c.RealMS[l.Lane] = real[l.Lane].Milliseconds()
				c.RecostMS[l.Lane] = tot[l.Lane].Milliseconds()
			}
			c.RealSave = corpus.Saving(real[rollout.LaneHTTPOptimized], real[rollout.LaneWS])
			c.RecostSav = corpus.Saving(tot[rollout.LaneHTTPOptimized], tot[rollout.LaneWS])
			out = append(out, c)
		}
	}
	return out, nil
}

func printCorpusBench(out io.Writer, results []corpus.SessionResult, speeds []int, checks []corpus.Check, racedIn time.Duration) {
	fmt.Fprintf(out, "%d sessions raced once (instant, lanes one after another, no tool time) in %s; re-costed at each speed and reading\n\n", len(results), racedIn.Round(time.Second))
	for _, against := range []string{rollout.LaneHTTPOptimized, rollout.LaneHTTP} {
		if against == rollout.LaneHTTP && (len(results) == 0 || results[0].SavingVsHTTP == nil) {
			continue
		}
		fmt.Fprintf(out, "share WebSocket mode saves against %s: median (p10, p90)\n", against)
		fmt.Fprintf(out, "| reading | %s |\n|---|%s\n", joinInts(speeds, " tok/s | ")+" tok/s", strings.Repeat("---|", len(speeds)))
		for _, rd := range apistack.HostedReadings {
			var cells []string
			for _, v := range speeds {
				var sv []float64
				for _, s := range results {
					m := s.Saving
					if against == rollout.LaneHTTP {
						m = s.SavingVsHTTP
					}
					sv = append(sv, m[rd.Reading][v])
				}
				slices.Sort(sv)
				cells = append(cells, fmt.Sprintf("%.0f%% (%.0f%%, %.0f%%)", 100*corpus.Percentile(sv, .5), 100*corpus.Percentile(sv, .1), 100*corpus.Percentile(sv, .9)))
			}
			fmt.Fprintf(out, "| %s (%s) | %s |\n", rd.Reading, rd.Preset.Preset, strings.Join(cells, " | "))
		}
		fmt.Fprintln(out)
	}
	headline := apistack.HostedReadings[0]
	for _, by := range []struct {
		name    string
		buckets []int
		of      func(corpus.SessionResult) int
	}{{"turns", turnBuckets, func(s corpus.SessionResult) int { return s.Turns }}, {"final context (tokens)", contextBuckets, func(s corpus.SessionResult) int { return s.FinalContext }}} {
		fmt.Fprintf(out, "median saving against http-optimized by %s, %s reading\n| %s | sessions | %s |\n|---|---|%s\n", by.name, headline.Reading, by.name, joinInts(speeds, " tok/s | ")+" tok/s", strings.Repeat("---|", len(speeds)))
		pays := map[int]string{}
		for b, lo := range by.buckets {
			hi := -1
			if b+1 < len(by.buckets) {
				hi = by.buckets[b+1]
			}
			in := func(s corpus.SessionResult) bool { v := by.of(s); return v >= lo && (hi < 0 || v < hi) }
			label := fmt.Sprintf("%d+", lo)
			if hi >= 0 {
				label = fmt.Sprintf("%d–%d", lo, hi-1)
			}
			n := 0
			for _, s := range results {
				if in(s) {
					n++
				}
			}
			var cells []string
			for _, v := range speeds {
				if n == 0 {
					cells = append(cells, "–")
					continue
				}
				m := corpus.Percentile(savings(results, headline.Reading, v, in), .5)
				cells = append(cells, fmt.Sprintf("%.0f%%", 100*m))
				switch {
				case m <= 0.10:
					pays[v] = "" // it must stay past 10% from there on
				case pays[v] == "":
					pays[v] = label
				}
			}
			fmt.Fprintf(out, "| %s | %d | %s |\n", label, n, strings.Join(cells, " | "))
		}
		for _, v := range speeds {
			if pays[v] == "" {
				fmt.Fprintf(out, "at %d tok/s the median saving is not past 10%% in the last bucket of %s\n", v, by.name)
				continue
			}
			fmt.Fprintf(out, "at %d tok/s the median saving passes 10%% from %s %s on\n", v, by.name, pays[v])
		}
		fmt.Fprintln(out)
	}
	if len(checks) == 0 {
		return
	}
	fmt.Fprintf(out, "re-costing checked against races run for real (%s, recorded tool times)\n| session | tok/s | http-optimized real / re-costed | ws real / re-costed | saving real / re-costed |\n|---|---|---|---|---|\n", apistack.HostedPostSprint.Preset)
	var worstLane, worstSave float64
	var laneErrs, saveErrs []float64
	for _, c := range checks {
		fmt.Fprintf(out, "| %s | %d | %d / %d ms | %d / %d ms | %.1f%% / %.1f%% |\n", c.File, c.Speed,
			c.RealMS[rollout.LaneHTTPOptimized], c.RecostMS[rollout.LaneHTTPOptimized], c.RealMS[rollout.LaneWS], c.RecostMS[rollout.LaneWS], 100*c.RealSave, 100*c.RecostSav)
		for _, l := range []string{rollout.LaneHTTPOptimized, rollout.LaneWS} {
			if c.RealMS[l] > 0 {
				e := abs(float64(c.RecostMS[l]-c.RealMS[l])) / float64(c.RealMS[l])
				worstLane = max(worstLane, e)
				laneErrs = append(laneErrs, e)
			}
		}
		worstSave = max(worstSave, abs(c.RecostSav-c.RealSave))
		saveErrs = append(saveErrs, abs(c.RecostSav-c.RealSave))
	}
	slices.Sort(laneErrs)
	slices.Sort(saveErrs)
	fmt.Fprintf(out, "error of the re-costing: median %.1f%% of a lane's time (largest %.1f%%), median %.1f points of saving (largest %.1f)\n",
		100*corpus.Percentile(laneErrs, .5), 100*worstLane, 100*corpus.Percentile(saveErrs, .5), 100*worstSave)
}

func savings(results []corpus.SessionResult, reading string, speed int, in func(corpus.SessionResult) bool) []float64 {
	var v []float64
	for _, s := range results {
		if in(s) {
			v = append(v, s.Saving[reading][speed])
		}
	}
	slices.Sort(v)
	return v
}

func joinInts(v []int, sep string) string {
	s := make([]string, len(v))
	for i, n := range v {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, sep)
}

func abs(x float64) float64 { return max(x, -x) }
