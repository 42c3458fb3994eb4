package enginetest

import (
	"context"
	"errors"
	"log/slog"
	"net/http/httptest"
	"testing"
	"time"

	"agentloop/api"
	"agentloop/server"
	"agentloop/server/core"
	"agentloop/store/sqlite"
	"agentloop/store/sqlite/sqlitetest"

	"github.com/labstack/echo/v4"
)

// Config is an engine test's configuration: the engines' own, and what
// the process adds around them.
type Config struct {
	core.Config
	// Observer sees every request both engines finish or reject; nil:
	// none.
	Observer core.Observer
	// DB is the SQLite file; "" puts a migrated one in t.TempDir()
	// (sqlitetest.Path).
	DB string
	// Replica labels the traces and metrics, as app's replica id does.
	Replica string
	// BeforeServing, when set, is called with the engines before they
	// serve: where a test adds its hooks (core's OnFinished and the rest).
	BeforeServing func(server.Engines)
}

// Engines is the engine under test, serving on URL.
type Engines struct {
	server.Engines
	URL  string
	DB   *sqlite.DB
	Path string // the SQLite file
}

// Start starts both engines over a migrated SQLite store in t.TempDir() (or
// Config.DB) and an httptest server, built by server.NewEngines as app
// builds them, and stops them in t.Cleanup as app shuts down. opts edit
// the configuration after the flag defaults.
func Start(t testing.TB, opts ...func(*Config)) *Engines {
	t.Helper()
	cfg := Config{Config: core.Defaults(""), Replica: "enginetest"}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.DB == "" {
		cfg.DB = sqlitetest.Path(t)
	}
	log := slog.New(slog.DiscardHandler)
	db, err := sqlite.Open(context.Background(), cfg.DB, log)
	if err != nil {
		t.Fatal(err)
	}
	sh, err := server.NewShared(db, 10000, cfg.Replica, log)
	if err != nil {
		db.Close()
		t.Fatal(err)
	}
	sh.Observer = cfg.Observer
	es := server.NewEngines(cfg.Config, sh)
	if cfg.BeforeServing != nil {
		cfg.BeforeServing(es)
	}
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.HTTPErrorHandler = writeError
	es.Register(e)
	srv := httptest.NewServer(e)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		for _, eng := range []*server.Engine{es.V1, es.Baseline} {
			eng.CloseConnections(ctx)
		}
		if ctx.Err() != nil {
			es.V1.StopGenerating()
			es.Baseline.StopGenerating()
		}
		srv.CloseClientConnections()
		srv.Close()
		es.V1.Close()
		es.Baseline.Close()
		sh.Close()
		if err := db.Close(); err != nil {
			t.Errorf("close store: %v", err)
		}
	})
	return &Engines{Engines: es, URL: srv.URL, DB: db, Path: cfg.DB}
}

// writeError writes a handler's *api.Error as the process's error handler
// does (api.WriteHTTPError); the engines' routes return no other error.
func writeError(err error, c echo.Context) {
	if c.Response().Committed {
		return
	}
	var ae *api.Error
	if !errors.As(err, &ae) {
		ae = api.ServerError("The server had an error while processing your request.")
	}
	_ = api.WriteHTTPError(c.Response(), ae)
}
