package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"agentloop/api"
	"agentloop/apistack"
	"agentloop/app"
	"agentloop/rollout"
)

func runRace(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	cfg := rollout.Config{}
	fs := flag.NewFlagSet("agentloop race", flag.ContinueOnError)
	fs.StringVar(&cfg.Scenario, "scenario", "", "scenario to run (see --list-scenarios); default: the first")
	fs.StringVar(&cfg.Profile, "profile", api.DefaultModel, "model profile: classic (~65 tok/s), spark (~1000 tok/s), burst (~4000 tok/s), instant (no modelled time)")
	rtt := fs.Duration("rtt", 0, "network round trip added by the latency proxy, e.g. 20ms")
	toolTime := fs.Duration("tool-time", 0, "modelled tool execution time per tool call, e.g. 100ms")
	lanes := fs.String("lanes", strings.Join(rollout.DefaultLanes, ","), "lanes to race: "+strings.Join(rollout.AllLanes, ",")+" (prototype is the experimental long-running response, opt-in)")
	fs.Int64Var(&cfg.Seed, "seed", 1, "scenario seed")
	fs.BoolVar(&cfg.Sequential, "sequential", false, "run lanes one after another (interleaved over repeats) instead of together")
	fs.BoolVar(&cfg.TakeTurns, "take-turns", false, "run lanes at once, one request at a time across the race, each on its own clock (not with --sequential)")
	fs.IntVar(&cfg.Repeats, "repeats", 1, "repeats per lane; the median is reported")
	fs.IntVar(&cfg.BandwidthKbps, "bandwidth", 0, "proxy bandwidth limit per direction in kbit/s (0 = none)")
	cfg.Stack = apistack.Lean
	fs.Var(stackFlag{&cfg.Stack}, "stack", "modelled API stack every lane asks for: "+strings.Join(apistack.PresetNames(), ", ")+", or a JSON object of parameters (docs/stack.md)")
	fs.Float64Var(&cfg.DecodeTPS, "decode-tps", 0, "decode at this rate in tokens/s per stream (model custom-<tps>: spark's profile at that rate; needs --profile spark); 0: the profile's own")
	fs.BoolVar(&cfg.TLS, "tls", false, "serve the in-process engine over TLS (self-signed) so new connections pay real handshakes")
	fs.Var(laneDrillFlag{&cfg.Drills}, "drill", "fault drill on one lane: LANE:NAME[:after=N][:times=K][:for=DURATION], repeatable (README \"Test your client's recovery\"): "+strings.Join(api.DrillNames, ", "))
	workloadSpec := fs.String("workload", "", "replay a workload instead of a scenario: a file (docs/workload.md), or session:ID, an inspector session of --server")
	effort := fs.String("reasoning-effort", "", "run every lane as a reasoning client at this effort (minimal, low, medium, high, xhigh, max), as Codex does: encrypted reasoning replayed each turn; empty: no lane reasons")
	summary := fs.String("reasoning-summary", "", "with --reasoning-effort: ask for a reasoning summary (auto, concise, detailed)")
	fs.BoolVar(&cfg.FixedToolTime, "fixed-tool-time", false, "replay the workload with --tool-time between turns instead of its recorded tool times")
	fs.IntVar(&cfg.CompactThreshold, "compact-threshold", 0, "with --workload: every lane asks for compaction once a prompt passes this many tokens (context_management); 0: none")
	asJSON := fs.Bool("json", false, "print the summary as JSON")
	reference := fs.String("reference", "", "run presenter mode's classroom race in process and write it to this file as the recording the binary carries (docs/race-reference.json); no other race flag goes with it")
	list := fs.Bool("list-scenarios", false, "list the scenarios and exit")
	serverURL := fs.String("server", "", "ask the agentloop server at this URL to run the race (it shows live in the browser)")
	apiKey := fs.String("api-key", "", "API key of --server, if it has one")
	dbPath := fs.String("db", app.DefaultDB, "SQLite database of the in-process engine (without --server)")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), "Usage: agentloop race [flags]\n\nRaces a scripted coding-agent rollout over several transports against the engine and prints each lane's total,\nmedian per-turn overhead and speedup. Exits non-zero if any lane fails its success check.\n\nFlags (each also AGENTLOOP_<NAME>):\n")
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args, getenv, stderr); err != nil {
		return err
	}
	if *list {
		for _, s := range rollout.Scenarios() {
			fmt.Fprintf(stdout, "%-18s %s\n", s.Name, s.Title)
		}
		return nil
	}
	if *reference != "" {
		return recordReference(ctx, fs, *reference, *dbPath, stderr)
	}
	cfg.RTTms = float64(*rtt) / float64(time.Millisecond)
	cfg.ToolTimeMs = float64(*toolTime) / float64(time.Millisecond)
	cfg.Lanes = strings.Split(*lanes, ",")
	if *effort != "" || *summary != "" {
		cfg.Reasoning = &rollout.RaceReasoning{Effort: *effort, Summary: *summary}
	}
	if *workloadSpec != "" {
		w, err := loadWorkload(ctx, *workloadSpec, *serverURL, *apiKey)
		if err != nil {
			return err
		}
		cfg.Workload = w
	}
	if err := rollout.Normalize(&cfg); err != nil {
		if strings.HasPrefix(err.Param, "drills") {
			return fmt.Errorf("--drill: %s", err.Message)
		}
		if strings.HasPrefix(err.Param, "reasoning.") {
			return fmt.Errorf("--reasoning-%s: %s", strings.TrimPrefix(err.Param, "reasoning."), err.Message)
		}
		return err
	}
	var rec *rollout.RunRecord
	var err error
	if *serverURL != "" {
		rec, err = raceOnServer(ctx, strings.TrimRight(*serverURL, "/"), *apiKey, cfg, stderr)
	} else {
		rec, err = raceInProcess(ctx, *dbPath, cfg, stderr)
	}
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rec); err != nil {
			return err
		}
	} else {
		printRace(stdout, rec)
	}
	if rec.Status != rollout.StatusPassed {
		return &exitError{code: 1, err: fmt.Errorf("race %s %s", rec.ID, rec.Status)}
	}
	return nil
}

func raceInProcess(ctx context.Context, dbPath string, cfg rollout.Config, stderr io.Writer) (*rollout.RunRecord, error) {
	acfg := app.Defaults()
	acfg.Addr, acfg.DB = "127.0.0.1:0", dbPath
	a, err := app.New(ctx, acfg, nil)
	if err != nil {
		return nil, err
	}
	defer a.Shutdown(context.Background())
	var url string
	runner := (*rollout.Runner)(nil)
	if cfg.TLS {
		tlsURL, clientTLS, err := a.StartTLS()
		if err != nil {
			return nil, err
		}
		url = tlsURL
		runner = rollout.NewRunner(url, a.DB, nil)
		runner.TLS = clientTLS
	} else {
		if err := a.Start(); err != nil {
			return nil, err
		}
		url = a.URL()
		runner = rollout.NewRunner(url, a.DB, nil)
	}
	fmt.Fprintf(stderr, "engine on %s; racing %s on %s (rtt %.0fms, tool time %.0fms, stack %s, lanes %s)\n", url, cfg.Scenario, cfg.Model(),
		cfg.RTTms, cfg.ToolTimeMs, cfg.Stack.String(), strings.Join(cfg.Lanes, ","))
	id, _, err := runner.Run(ctx, cfg, nil)
	if id == "" {
		return nil, err
	}
	return rollout.LoadRun(context.WithoutCancel(ctx), a.DB, id)
}

// raceOnServer asks a running server to run the race, then follows it.
func raceOnServer(ctx context.Context, base, key string, cfg rollout.Config, stderr io.Writer) (*rollout.RunRecord, error) {
	body, _ := json.Marshal(cfg)
	do := func(method, path string, body []byte) ([]byte, int, error) {
		req, err := http.NewRequestWithContext(ctx, method, base+path, bytes.NewReader(body))
		if err != nil {
			return nil, 0, err
		}
		req.Header.Set("Content-Type", "application/json")
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return nil, 0, err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return b, resp.StatusCode, err
	}
	b, status, err := do("POST", "/api/runs", body)
	if err != nil {
		return nil, err
	}
	if status != http.StatusOK && status != http.StatusCreated && status != http.StatusAccepted {
		return nil, fmt.Errorf("POST /api/runs: %d %s", status, b)
	}
	var started struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(b, &started); err != nil || started.ID == "" {
		return nil, fmt.Errorf("POST /api/runs: unexpected answer %s", b)
	}
	fmt.Fprintf(stderr, "race %s started; watch it live at %s/race?run=%s\n", started.ID, base, started.ID)
	for {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
		b, status, err := do("GET", "/api/runs/"+started.ID, nil)
		if err != nil {
			return nil, err
		}
		if status != http.StatusOK {
			return nil, fmt.Errorf("GET /api/runs/%s: %d %s", started.ID, status, b)
		}
		var rec rollout.RunRecord
		if err := json.Unmarshal(b, &rec); err != nil {
			return nil, err
		}
		if rollout.Ended(rec.Status) {
			return &rec, nil
		}
	}
}

func printRace(w io.Writer, rec *rollout.RunRecord) {
	c := rec.Config
	profile := c.Profile
	if c.DecodeTPS > 0 {
		profile = c.Model() + " (" + c.Profile + " at " + strconv.FormatFloat(c.DecodeTPS, 'f', -1, 64) + " tok/s)"
	}
	stack := c.Stack.Preset
	if stack == "" {
		stack = apistack.Lean.Preset
	} else if stack == "custom" {
		stack = c.Stack.String()
	}
	if c.Reasoning != nil {
		profile += ", reasoning " + c.Reasoning.Effort
	}
	order := "  (sequential)"
	switch {
	case c.TakeTurns:
		order = "  (lanes taking turns, each on its own clock)"
	case c.Overlaps():
		order = "  (lanes side by side, sharing the CPU)"
	}
	fmt.Fprintf(w, "run %s  scenario %s  profile %s  stack %s  rtt %.0fms  tool time %.0fms  repeats %d%s\n", rec.ID, c.Scenario, profile, stack,
		c.RTTms, c.ToolTimeMs, c.Repeats, order)
	fmt.Fprintf(w, "%-15s %-7s %10s %6s %12s %11s %9s %9s %11s %14s %9s %14s\n", "lane", "status", "total", "turns", "med.overhead", "stack/turn", "cached",
		"uploaded", "vs http", "vs http-opt", "API CPU", "rollouts/core")
	if rec.Summary == nil {
		return
	}
	// The cells are the summary's phrased rows, as every page shows them.
	rec.Summary.Show()
	for _, l := range rec.Summary.Lanes {
		sh := l.Shown
		fmt.Fprintf(w, "%-15s %-7s %10s %6s %12s %11s %8.0f%% %9s %11s %14s %9s %14s\n", l.Lane, l.Status,
			rollout.FormatNS(l.TotalNS), sh.Turns, sh.MedianOverhead, sh.StackPerTurn,
			100*l.CachedShare, bytesText(l.BytesSent), sh.VsHTTP, savedText(rec.Summary.SavedVsOptimized, l.Lane),
			sh.APICPU, sh.RolloutsPerCore)
		if c.Repeats > 1 && l.MaxTotalNS > 0 {
			fmt.Fprintf(w, "    total is the median of %d repeats, the fastest and slowest in brackets: %s\n", c.Repeats, sh.Total)
		}
		if l.Error != "" {
			fmt.Fprintf(w, "    error: %s\n", l.Error)
		}
	}
	printDrills(w, rec)
	s := rec.Summary
	// The summary's own sentences, as every page shows them.
	if s.Headline != "" {
		fmt.Fprintln(w, s.Headline)
	}
	if s.Split != "" {
		fmt.Fprintln(w, s.Split)
	}
	if s.Range != "" {
		fmt.Fprintln(w, s.Range)
	}
	if s.Busy != "" {
		fmt.Fprintln(w, s.Busy)
	}
	if a := rollout.WorkloadAnswer(c, s); a != "" {
		fmt.Fprintln(w, a)
	}
	if s.TimeWent != "" {
		fmt.Fprintln(w, s.TimeWent)
	}
	fmt.Fprintln(w, "API CPU: the engine's measured API work (parse..safety + finalize) summed over the rollout; rollouts/core = lane total / API CPU,")
	fmt.Fprintln(w, "  how many such rollouts one core's API work could serve concurrently (modelled stages use no CPU here).")
	if s.WhatItTakes != "" {
		fmt.Fprintln(w, s.WhatItTakes)
	}
}

// printDrills says, for each turn a drill hit, what fired and how the
// lane recovered.
func printDrills(w io.Writer, rec *rollout.RunRecord) {
	if len(rec.Config.Drills) == 0 {
		return
	}
	fired := 0
	for _, t := range rec.Turns {
		if len(t.Drills) == 0 {
			continue
		}
		fired++
		var actions []string
		for _, r := range t.Recoveries {
			actions = append(actions, r.Error+" → "+r.Action)
		}
		fmt.Fprintf(w, "drill %s fired on %s turn %d (repeat %d): %s, recovery %s\n", strings.Join(t.Drills, ","), t.Lane, t.Index+1, t.Repeat+1,
			strings.Join(actions, "; "), time.Duration(t.RecoveryNS).Round(10*time.Microsecond))
	}
	if fired == 0 {
		fmt.Fprintln(w, "drills: none fired")
	}
}

func savedText(m map[string]float64, lane string) string {
	if v, ok := m[lane]; ok {
		return rollout.Sooner(v)
	}
	return "–"
}

func bytesText(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1fMiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.0fKiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%dB", n)
}
