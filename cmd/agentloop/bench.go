package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"

	"agentloop/api"
	"agentloop/apistack"
	"agentloop/app"
	"agentloop/bench"
	"agentloop/rollout"
)

// benchmarks are bench's subcommands, in the order usage names them.
var benchmarks = []struct {
	name string
	run  func(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error
}{
	{"overhead", runBenchOverhead},
	{"load", runBenchLoad},
	{"floor", runBenchFloor},
	{"state", runBenchState},
	{"matrix", runBenchMatrix},
	{"sweep", runBenchSweep},
	{"calibrate", runBenchCalibrate},
	{"sensitivity", runBenchSensitivity},
	{"corpus", runBenchCorpus},
	{"classroom", runBenchClassroom},
}

// benchmarkNames is "overhead|load|…", for usage and errors.
func benchmarkNames() string {
	names := make([]string, len(benchmarks))
	for i, b := range benchmarks {
		names[i] = b.name
	}
	return strings.Join(names, "|")
}

func runBench(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		fmt.Fprintf(stderr, "Usage: agentloop bench %s [flags]\n", benchmarkNames())
		return fmt.Errorf("bench: name a benchmark: %s", benchmarkNames())
	}
	for _, b := range benchmarks {
		if b.name == args[0] {
			return b.run(ctx, args[1:], getenv, stdout, stderr)
		}
	}
	return fmt.Errorf("bench: unknown benchmark %q; the benchmarks are %s", args[0], benchmarkNames())
}

// startEngine starts an in-process server on a free loopback port with a
// temporary database, for benchmarks that are not pointed at a server.
func startEngine(ctx context.Context, tweak func(*app.Config)) (*app.App, func(), error) {
	dir, err := os.MkdirTemp("", "agentloop-bench-")
	if err != nil {
		return nil, nil, err
	}
	cfg := app.Defaults()
	cfg.Addr = "127.0.0.1:0"
	cfg.DB = filepath.Join(dir, "bench.db")
	if tweak != nil {
		tweak(&cfg)
	}
	a, err := app.New(ctx, cfg, nil)
	if err != nil {
		os.RemoveAll(dir)
		return nil, nil, err
	}
	if err := a.Start(); err != nil {
		a.Shutdown(context.Background())
		os.RemoveAll(dir)
		return nil, nil, err
	}
	return a, func() { a.Shutdown(context.Background()); os.RemoveAll(dir) }, nil
}

func runBenchOverhead(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("agentloop bench overhead", flag.ContinueOnError)
	sizes := fs.String("sizes", "1000,10000,50000,100000", "context sizes in tokens")
	repeats := fs.Int("repeats", 7, "measured requests per path and size (the median is reported)")
	asJSON := fs.Bool("json", false, "print JSON instead of a table")
	db := fs.String("db", "", "the store: a postgres:// URL measures the chained path on PostgreSQL (default: a temporary SQLite file)")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), "Usage: agentloop bench overhead [flags]\n\nMeasures the engine's pre-inference time (parse through safety) per request, with modelled costs at zero,\nfor full-history HTTP (/baseline/v1 and /v1), HTTP chained with previous_response_id, and a WebSocket continuation.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args, getenv, stderr); err != nil {
		return err
	}
	var ns []int
	for _, s := range strings.Split(*sizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 100 {
			return fmt.Errorf("--sizes: %q is not a token count", s)
		}
		ns = append(ns, n)
	}
	a, stop, err := startEngine(ctx, func(c *app.Config) {
		c.Unmodelled = true
		if *db != "" {
			c.DB = *db
		}
	})
	if err != nil {
		return err
	}
	defer stop()
	rows, err := bench.Overhead(ctx, bench.OverheadConfig{BaseURL: a.URL(), Sizes: ns, Repeats: *repeats})
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rows)
	}
	fmt.Fprintf(stdout, "pre-inference time per request (median of %d, engine-measured, modelled costs 0; tokenizer %.2f µs/token here)\n", *repeats, bench.TokenizerCost().Seconds()*1e6)
	bench.FormatOverhead(stdout, rows)
	return nil
}

func runBenchLoad(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("agentloop bench load", flag.ContinueOnError)
	transport := fs.String("transport", "ws", "ws (repeated creates on one WebSocket per client) or sse (HTTP keep-alive)")
	conns := fs.Int("conns", 64, "concurrent clients, one connection and one stream at a time each")
	profile := fs.String("profile", api.DefaultModel, "the model to request; for agentloop, the profile: classic, spark, burst, instant (no modelled time: the engine's own maximum) or custom-<tps> (spark at that decode rate)")
	duration := fs.Duration("duration", 10*time.Second, "how long clients start new streams; streams in flight then finish")
	ramp := fs.Duration("ramp", time.Second, "spread the clients' first requests over this time")
	outputTokens := fs.Int("output-tokens", 1000, "tokens per reply: max_output_tokens with ignore_eos")
	input := fs.String("input", "", "the prompt (default: a request for a long story)")
	targetTPS := fs.Float64("target-tps", 0, "per-stream tokens/s the 95% target is measured against (default: the profile's decode rate)")
	server := fs.String("server", "", "base URL of a running engine (e.g. http://127.0.0.1:8080); without it an engine starts in this process")
	apiKey := fs.String("api-key", "", "the server's API key, sent as Authorization: Bearer")
	idle := fs.Bool("idle", false, "open --conns idle WebSocket connections, hold them for --duration, report memory per connection")
	traces := fs.Bool("traces", true, "after the run, compare each stream's wire rate with the rate the engine released it at (agentloop's /api/traces)")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of this process during the load; with an in-process engine, client goroutines carry the label agentloop_bench=client")
	asJSON := fs.Bool("json", false, "print JSON instead of text")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `Usage: agentloop bench load --transport ws|sse --conns N --profile P --duration D [flags]

Opens N concurrent streaming clients that each request replies of exactly --output-tokens tokens
(ignore_eos), one after another, and reports tokens/s per stream and in total, time to first token,
inter-token gaps (a delta of k tokens counts k tokens and k-1 zero gaps), errors, and the engine's
CPU and memory from its /metrics. With --idle it holds idle WebSocket connections instead.

Without --server the engine runs in this process and shares its cores and its process metrics with
the clients. The fairer measurement runs the engine in its own process:
  agentloop serve --addr 127.0.0.1:8080 --db /tmp/load.db &
  agentloop bench load --server http://127.0.0.1:8080 --transport ws --conns 256 --profile spark --duration 20s

Flags (each also AGENTLOOP_<NAME>):
`)
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args, getenv, stderr); err != nil {
		return err
	}
	if *transport != "ws" && *transport != "sse" {
		return fmt.Errorf("--transport: %q: want ws or sse", *transport)
	}
	if *conns < 1 || *outputTokens < 1 || *duration <= 0 {
		return fmt.Errorf("--conns and --output-tokens must be at least 1 and --duration positive")
	}
	base, shared := strings.TrimRight(*server, "/"), false
	if base == "" {
		a, stop, err := startEngine(ctx, nil)
		if err != nil {
			return err
		}
		defer stop()
		base, shared = a.URL(), true
		fmt.Fprintln(stderr, "bench load: the engine runs in this process; its CPU and memory include the clients (use --server for the fairer measurement)")
	}
	var header http.Header
	if *apiKey != "" {
		header = http.Header{"Authorization": {"Bearer " + *apiKey}}
	}
	if *cpuProfile != "" {
		stop, err := startCPUProfile(*cpuProfile)
		if err != nil {
			return err
		}
		defer stop()
	}
	if *idle {
		rep, err := bench.Idle(ctx, bench.IdleConfig{BaseURL: base, Conns: *conns, Hold: *duration, Model: *profile,
			Header: header, SharedProcess: shared})
		if err != nil {
			return err
		}
		if *asJSON {
			return printLoadJSON(stdout, rep)
		}
		bench.FormatIdle(stdout, rep)
		return nil
	}
	rep, err := bench.Load(ctx, bench.LoadConfig{BaseURL: base, Transport: *transport, Conns: *conns, Model: *profile,
		Duration: *duration, Ramp: min(*ramp, *duration/2), OutputTokens: *outputTokens, Input: *input, TargetTPS: *targetTPS,
		Header: header, SharedProcess: shared, EngineTraces: *traces})
	if err != nil {
		return err
	}
	if *asJSON {
		return printLoadJSON(stdout, rep)
	}
	bench.FormatLoad(stdout, rep)
	return nil
}

func runBenchFloor(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("agentloop bench floor", flag.ContinueOnError)
	conns := fs.Int("conns", 256, "loopback connections")
	rate := fs.Float64("rate", 1000, "frames per second per connection (spark: 1000)")
	frameBytes := fs.Int("frame-bytes", 193, "bytes per frame (193: a spark response.output_text.delta of one word, framed)")
	duration := fs.Duration("duration", 10*time.Second, "how long to write")
	oneWriter := fs.Bool("one-writer", false, "write every connection from the tick's loop instead of a goroutine per connection woken per tick")
	readersOf := fs.String("readers-of", "", "internal: be the reading side of a floor run on this address")
	asJSON := fs.Bool("json", false, "print JSON instead of text")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `Usage: agentloop bench floor [--conns N] [--rate R] [--duration D] [--json]

The cheapest way to stream bench load's pattern on this machine, with no engine: N loopback
connections, each sent R small frames per second, released on the engine's tick and written by a
goroutine per connection in one write(2) per tick. The readers run in another process. Read the
engine's CPU per token (bench load) against the writer's CPU per frame here, taken in the same window.

Flags (each also AGENTLOOP_<NAME>):
`)
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args, getenv, stderr); err != nil {
		return err
	}
	if *readersOf != "" {
		return bench.FloorRead(*readersOf, *conns, stdout)
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	rep, err := bench.Floor(ctx, bench.FloorConfig{Conns: *conns, Rate: *rate, FrameBytes: *frameBytes, Duration: *duration,
		OneWriter: *oneWriter, Readers: func(addr string, conns int) *exec.Cmd {
			return exec.Command(self, "bench", "floor", "--readers-of", addr, "--conns", strconv.Itoa(conns))
		}})
	if err != nil {
		return err
	}
	if *asJSON {
		return printLoadJSON(stdout, rep)
	}
	bench.FormatFloor(stdout, rep)
	return nil
}

func printLoadJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func runBenchMatrix(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("agentloop bench matrix", flag.ContinueOnError)
	scenarioName := fs.String("scenario", "fix-failing-test", "the standard scenario")
	profiles := fs.String("profiles", "classic,spark,burst", "profiles")
	rtts := fs.String("rtts", "0ms,20ms,80ms", "round trips")
	repeats := fs.Int("repeats", 3, "repeats per cell (lanes run one after another, interleaved; the median is reported)")
	seed := fs.Int64("seed", 1, "scenario seed")
	stack := apistack.Lean
	fs.Var(stackFlag{&stack}, "stack", "modelled API stack every lane asks for: "+strings.Join(apistack.PresetNames(), ", ")+", or a JSON object of parameters (docs/stack.md)")
	asJSON := fs.Bool("json", false, "print JSON")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), "Usage: agentloop bench matrix [flags]\n\nRuns the race for every profile and round trip, lanes one after another, and prints each lane's median end-to-end time.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args, getenv, stderr); err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "agentloop-matrix-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	type cell struct {
		Profile string            `json:"profile"`
		Stack   string            `json:"stack"`
		RTT     string            `json:"rtt"`
		Run     string            `json:"run"`
		Status  string            `json:"status"`
		TotalMS map[string]int64  `json:"total_ms"`
		Saved   map[string]string `json:"saved_vs_http"`
		SavedO  map[string]string `json:"saved_vs_http_optimized"`
	}
	var cells []cell
	a, stop, err := startEngine(ctx, func(c *app.Config) { c.DB = filepath.Join(dir, "matrix.db") })
	if err != nil {
		return err
	}
	defer stop()
	runner := rollout.NewRunner(a.URL(), a.DB, nil)
	if !*asJSON {
		fmt.Fprintf(stdout, "modelled API stack: %s\n\n", stack.String())
		fmt.Fprintf(stdout, "| profile | rtt | %s | ws vs http | ws vs http-optimized |\n|---|---|%s---|---|\n",
			strings.Join(rollout.AllLanes, " | "), strings.Repeat("---|", len(rollout.AllLanes)))
	}
	for _, p := range strings.Split(*profiles, ",") {
		for _, r := range strings.Split(*rtts, ",") {
			d, err := time.ParseDuration(strings.TrimSpace(r))
			if err != nil {
				return fmt.Errorf("--rtts: %w", err)
			}
			cfg := rollout.Config{Scenario: *scenarioName, Profile: strings.TrimSpace(p), RTTms: float64(d) / float64(time.Millisecond),
				Lanes: rollout.AllLanes, Seed: *seed, Sequential: true, Repeats: *repeats, Stack: stack}
			id, sum, err := runner.Run(ctx, cfg, nil)
			if err != nil {
				return fmt.Errorf("%s rtt %s: %w", p, r, err)
			}
			c := cell{Profile: cfg.Profile, Stack: stack.String(), RTT: r, Run: id, Status: rollout.StatusPassed, TotalMS: map[string]int64{}, Saved: map[string]string{}, SavedO: map[string]string{}}
			var cols []string
			for _, l := range sum.Lanes {
				c.TotalMS[l.Lane] = time.Duration(l.TotalNS).Milliseconds()
				cols = append(cols, fmt.Sprintf("%.2fs", time.Duration(l.TotalNS).Seconds()))
				if l.Status != rollout.StatusPassed {
					c.Status = l.Status
				}
				c.Saved[l.Lane] = savedText(sum.SavedVsHTTP, l.Lane)
				c.SavedO[l.Lane] = savedText(sum.SavedVsOptimized, l.Lane)
			}
			cells = append(cells, c)
			if !*asJSON {
				fmt.Fprintf(stdout, "| %s | %s | %s | %s | %s |\n", cfg.Profile, r, strings.Join(cols, " | "), c.Saved["ws"], c.SavedO["ws"])
			}
		}
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(cells)
	}
	return nil
}

// startCPUProfile profiles this process into path until stop is called.
func startCPUProfile(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}
