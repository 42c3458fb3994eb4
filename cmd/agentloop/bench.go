package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"agentloop/app"
	"agentloop/bench"
)

func runBench(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		fmt.Fprint(stderr, "Usage: agentloop bench overhead|load [flags]\n")
		return fmt.Errorf("bench: name a benchmark: overhead or load")
	}
	switch args[0] {
	case "overhead":
		return runBenchOverhead(ctx, args[1:], getenv, stdout, stderr)
	case "load":
		return runBenchLoad(ctx, args[1:], getenv, stdout, stderr)
	}
	return fmt.Errorf("bench: unknown benchmark %q", args[0])
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
	a, stop, err := startEngine(ctx, func(c *app.Config) { c.Unmodelled = true })
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
	fmt.Fprintf(stdout, "pre-inference time per request (median of %d, engine-measured, modelled costs 0; tokenizer ≈1.3 µs/token)\n", *repeats)
	bench.FormatOverhead(stdout, rows)
	return nil
}

func runBenchLoad(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	return fmt.Errorf("bench load: not built yet")
}
