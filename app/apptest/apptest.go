package apptest

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"agentloop/apistack"
	"agentloop/app"
	"agentloop/rollout"
	"agentloop/store/sqlite/sqlitetest"
)

// Grace is the shutdown grace period of a test app, shorter than serve's
// so that a test that leaves a stream running ends quickly.
const Grace = 2 * time.Second

// Start starts the app and shuts it down in t.Cleanup, reporting a failed
// shutdown. It listens on 127.0.0.1:0 with a migrated database in
// t.TempDir() (sqlitetest.Path); opts edit the configuration after those
// defaults.
func Start(t testing.TB, opts ...func(*app.Config)) *app.App {
	t.Helper()
	cfg := app.Defaults()
	cfg.Addr, cfg.DB, cfg.Grace = "127.0.0.1:0", sqlitetest.Path(t), Grace
	for _, o := range opts {
		o(&cfg)
	}
	log := Logger(t)
	a, err := app.New(context.Background(), cfg, log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), cfg.Grace+30*time.Second)
		defer cancel()
		if err := a.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
	})
	if err := a.Start(); err != nil {
		t.Fatal(err)
	}
	return a
}

// DB puts the app's database at path, for a test that reopens it.
func DB(path string) func(*app.Config) {
	return func(c *app.Config) { c.DB = path }
}

// ShortRace sets the home page's ready-made race (and presenter mode's
// form) to a short one: the cheapest scenario (quick-fix: the fewest
// turns and the smallest context, so the least to re-render on HTTP) on
// the instant profile, no round trip or tool time, HTTP, optimized HTTP
// and WebSocket one after another, under the post-sprint hosted stack.
// Its modelled stages cost no CPU, and they give WebSocket a saving to
// show: on the lean stack a race this short is a toss-up on this machine,
// and a lost race has no saving bar.
func ShortRace(c *app.Config) {
	c.HomePreset = &rollout.Config{Scenario: "quick-fix", Profile: "instant", Lanes: []string{rollout.LaneHTTP, rollout.LaneHTTPOptimized, rollout.LaneWS},
		Seed: 1, Repeats: 1, Sequential: true, Stack: apistack.HostedPostSprint}
}

// Logger returns a logger that writes warnings and errors through t.Log
// while the test runs, and drops them once it has ended: the app's
// goroutines may log after its last cleanup, when t.Log would panic.
func Logger(t testing.TB) *slog.Logger {
	w := &testWriter{t: t}
	t.Cleanup(w.stop)
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

type testWriter struct {
	mu    sync.Mutex
	t     testing.TB
	ended bool
}

func (w *testWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.ended {
		w.t.Log(strings.TrimRight(string(p), "\n"))
	}
	return len(p), nil
}

func (w *testWriter) stop() {
	w.mu.Lock()
	w.ended = true
	w.mu.Unlock()
}
