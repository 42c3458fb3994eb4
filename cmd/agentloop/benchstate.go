package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime"
	"runtime/pprof"
	"strings"
	"time"

	"agentloop/app"
	"agentloop/bench"
)

// runBenchState is `agentloop bench state`: the cost of state (docs/capacity.md,
// "The cost of state").
func runBenchState(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("agentloop bench state", flag.ContinueOnError)
	sessions := fs.Int("sessions", 1000, "WebSocket sessions to open and hold idle")
	shared := fs.Int("shared-tokens", 8000, "tokens of instructions every session sends (an agent's)")
	unique := fs.Int("unique-tokens", 30000, "tokens of each session's own input")
	model := fs.String("model", "instant", "the model of every create")
	parallel := fs.Int("parallel", 4, "sessions opening at once")
	settle := fs.Duration("settle", 5*time.Second, "how long the idle sessions' RSS must hold within 1% to count as settled")
	server := fs.String("server", "", "base URL of a running engine; without it an engine starts in this process")
	apiKey := fs.String("api-key", "", "the server's API key, sent as Authorization: Bearer")
	var stateBytes int64
	fs.Var(byteSize{&stateBytes}, "state-bytes", "without --server: the engine's --state-bytes (default: serve's)")
	heapProfile := fs.String("heapprofile", "", "without --server: write a heap profile (after a collection) while every session is held")
	asJSON := fs.Bool("json", false, "print JSON instead of text")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `Usage: agentloop bench state [flags]

Opens N WebSocket sessions, each one response.create of shared instructions plus an input of its own
(store:false), then holds them idle with their connections open, and reports what the engine holds per
session and per cached token (heap after a collection with an in-process engine, RSS, and the engine's
own count of its connection state), the state budget's drops, and the newest and oldest sessions'
continuations: pre-inference time and cached tokens, or previous_response_not_found and the recovery
with the full context.

The fairer RSS figure runs the engine in its own process:
  agentloop serve --addr 127.0.0.1:8080 --db /tmp/state.db &
  agentloop bench state --server http://127.0.0.1:8080 --sessions 1000

Flags (each also AGENTLOOP_<NAME>):
`)
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args, getenv, stderr); err != nil {
		return err
	}
	cfg := bench.StateConfig{BaseURL: strings.TrimRight(*server, "/"), Sessions: *sessions, SharedTokens: *shared,
		UniqueTokens: *unique, Model: *model, Parallel: *parallel, Settle: *settle}
	if *apiKey != "" {
		cfg.Header = http.Header{"Authorization": {"Bearer " + *apiKey}}
	}
	if cfg.BaseURL == "" {
		a, stop, err := startEngine(ctx, func(c *app.Config) {
			if stateBytes > 0 {
				c.StateBytes = stateBytes
			}
		})
		if err != nil {
			return err
		}
		defer stop()
		cfg.BaseURL, cfg.SharedProcess = a.URL(), true
		cfg.HeapAfterGC = heapAfterGC
		if *heapProfile != "" {
			cfg.Held = func() {
				if err := writeHeapProfile(*heapProfile); err != nil {
					fmt.Fprintln(stderr, "bench state: heap profile:", err)
				}
			}
		}
		fmt.Fprintln(stderr, "bench state: the engine runs in this process; its RSS includes the clients (use --server for the engine alone)")
	}
	rep, err := bench.State(ctx, cfg)
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	bench.FormatState(stdout, rep)
	return nil
}

// heapAfterGC is the live heap after a full collection.
func heapAfterGC() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

func writeHeapProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	runtime.GC()
	return pprof.Lookup("heap").WriteTo(f, 0)
}
