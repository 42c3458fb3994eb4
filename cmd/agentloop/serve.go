package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"syscall"

	"agentloop/api"
	"agentloop/apistack"
	"agentloop/app"
)

// serverFlags registers the flags of a server process on fs.
func serverFlags(fs *flag.FlagSet, cfg *app.Config) {
	fs.StringVar(&cfg.Addr, "addr", cfg.Addr, "address to listen on; port 0 picks a free port")
	fs.StringVar(&cfg.DB, "db", cfg.DB, "SQLite database file, created on first run, or a postgres:// URL (shared by replicas)")
	fs.StringVar(&cfg.APIKey, "api-key", cfg.APIKey, "when set, every route needs it: Authorization: Bearer KEY (SDKs) or a login session's cookie (pages)")
	fs.DurationVar(&cfg.SessionTTL, "session-ttl", cfg.SessionTTL, "with --api-key: a browser login lasts this long (from login, not sliding)")
	fs.Float64Var(&cfg.LoginRate, "login-rate", cfg.LoginRate, "with --api-key: wrong keys allowed per second per client address, after --login-burst")
	fs.IntVar(&cfg.LoginBurst, "login-burst", cfg.LoginBurst, "with --api-key: wrong keys allowed at once per client address")
	fs.Var(listFlag{&cfg.AllowedHosts}, "allowed-hosts", "extra hostnames clients may use (comma-separated); required with a wildcard --addr")
	fs.Var(byteSize{&cfg.MaxBody}, "max-body", "largest HTTP request body; larger gets 413")
	fs.Var(byteSize{&cfg.WSReadLimit}, "ws-read-limit", "largest WebSocket message; larger closes with 1009")
	fs.IntVar(&cfg.WSQueue, "ws-queue", cfg.WSQueue, "response.create messages queued per WebSocket before websocket_queue_full")
	fs.Var(byteSize{&cfg.WSQueueBytes}, "ws-queue-bytes", "bytes of queued response.create bodies per WebSocket before websocket_queue_full")
	fs.DurationVar(&cfg.WSLifetime, "ws-lifetime", cfg.WSLifetime, "WebSocket connection lifetime; then websocket_connection_limit_reached")
	fs.DurationVar(&cfg.WriteStall, "write-stall", cfg.WriteStall, "abort a connection whose write has stalled this long")
	fs.IntVar(&cfg.TraceRing, "trace-ring", cfg.TraceRing, "engine traces kept in memory")
	fs.DurationVar(&cfg.Grace, "grace", cfg.Grace, "shutdown grace period for in-flight streams")
	fs.DurationVar(&cfg.BodyTimeout, "body-timeout", cfg.BodyTimeout, "drop a request body that stops arriving for this long (0 = never)")
	fs.StringVar(&cfg.ReplicaID, "replica-id", "", "this process's id among replicas sharing one store, in traces and metrics (default: the host name and the port)")
	fs.StringVar(&cfg.SealKey, "seal-key", "", "key that seals reasoning items' encrypted_content: 32 bytes as base64 or 64 hex digits (default: one made once and kept in the store, shared by replicas)")
	fs.DurationVar(&cfg.Retention, "retention", cfg.Retention, "delete stored responses, runs and sessions older than this, in small transactions (0 keeps everything)")
	fs.BoolVar(&cfg.TokenCache, "token-cache", cfg.TokenCache, "/v1: cache rendered tokens per item content across requests")
	fs.BoolVar(&cfg.ModelCache, "model-cache", cfg.ModelCache, "/v1: cache the resolved model configuration across requests")
	fs.IntVar(&cfg.ContextWindow, "context-window", cfg.ContextWindow, "every model's context window in tokens, in place of its profile's (docs/protocol.md, \"Context windows\"); 0: each profile's own")
	fs.Var(stackFlag{&cfg.Stack}, "stack", "modelled API stack of requests that choose none: "+strings.Join(apistack.PresetNames(), ", ")+", or a JSON object of parameters (docs/stack.md)")
	fs.IntVar(&cfg.InflightRequests, "inflight-requests", cfg.InflightRequests, "creates in flight across both engines before 503 + Retry-After (0 = no bound)")
	fs.IntVar(&cfg.BackgroundRunning, "background-running", cfg.BackgroundRunning, "background responses each engine generates at once; later ones wait queued (0 = no bound)")
	fs.IntVar(&cfg.BackgroundQueued, "background-queued", cfg.BackgroundQueued, "background responses a client may have queued, across replicas, before 429 (0 = no bound)")
	fs.Var(byteSize{&cfg.InflightBytes}, "inflight-bytes", "create body bytes in flight across both engines before 503 + Retry-After (0 = no bound)")
	fs.Var(byteSize{&cfg.StateBytes}, "state-bytes", "connection state (the WebSocket caches' previous responses) held across both engines; past it the least recently used idle session's state is dropped (0 = no bound; docs/capacity.md, \"The cost of state\")")
	fs.Float64Var(&cfg.RateLimit, "rate-limit", cfg.RateLimit, "requests per second per client address (0 = off)")
	fs.IntVar(&cfg.RateBurst, "rate-burst", cfg.RateBurst, "burst of --rate-limit")
	fs.IntVar(&cfg.ConnLimit, "conn-limit", cfg.ConnLimit, "concurrent connections per client address (0 = off)")
	fs.Var(drillFlag{&cfg.Drills}, "drill", "arm a fault drill at start: NAME[:after=N][:times=K][:for=DURATION][:lifetime=DURATION][:status=426|405|404][:scope=S], repeatable (README \"Test your client's recovery\"): "+strings.Join(api.DrillNames, ", "))
}

func runServe(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	cfg := app.Defaults()
	fs := flag.NewFlagSet("agentloop serve", flag.ContinueOnError)
	serverFlags(fs, &cfg)
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the server process, from start to shutdown, to this file (go tool pprof reads it)")
	ephemeral := fs.Bool("ephemeral", false, "a test fixture: a store in a temporary directory removed on exit, --addr 127.0.0.1:0 unless given, the URL alone as the first line of standard output; exits on SIGTERM, SIGINT or the end of standard input when it is a pipe or a socket (README \"Use it as a test fixture\")")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), "Usage: agentloop [serve] [flags]\n\nRuns the Responses engine (/v1, and /baseline/v1 without request-level caches) and the playground on one port.\n\nFlags (each also AGENTLOOP_<NAME>):\n")
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args, getenv, stderr); err != nil {
		return err
	}
	if *ephemeral {
		release, err := ephemeralStore(fs, &cfg)
		if err != nil {
			return err
		}
		defer release() // after the shutdown below has closed the store
		var stop context.CancelFunc
		ctx, stop = untilStdinEnds(ctx)
		defer stop()
	}
	if *cpuProfile != "" {
		stop, err := startCPUProfile(*cpuProfile)
		if err != nil {
			return err
		}
		defer stop()
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	a, err := app.New(ctx, cfg, log)
	if err != nil {
		return err
	}
	ln, err := a.Listen()
	if err != nil {
		a.Shutdown(context.Background())
		if errors.Is(err, syscall.EADDRINUSE) {
			return fmt.Errorf("%s is already in use (another agentloop, or another program): pick another port with --addr 127.0.0.1:9090 or AGENTLOOP_ADDR=127.0.0.1:9090, or --addr 127.0.0.1:0 for any free one (%w)", cfg.Addr, err)
		}
		return err
	}
	if *ephemeral {
		fmt.Fprintln(stdout, a.URL())
	} else {
		fmt.Fprintf(stdout, "listening on %s\n", a.URL())
	}
	errc := make(chan error, 1)
	go func() { errc <- a.Serve(ln) }()
	select {
	case err = <-errc:
		a.Shutdown(context.Background())
		return err
	case <-ctx.Done():
	}
	log.Info("shutting down", "grace", cfg.Grace)
	return a.Shutdown(context.Background())
}
