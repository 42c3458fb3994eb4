package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"agentloop/api"
	"agentloop/inspect"
	"agentloop/rollout"
	"agentloop/server"
	"agentloop/server/core"
	"agentloop/store"

	"github.com/labstack/echo/v4"
)

// App is one running agentloop server.
type App struct {
	cfg      Config
	log      *slog.Logger
	DB       store.Backend
	Shared   *server.Shared
	V1       *server.Engine
	Baseline *server.Engine
	Echo     *echo.Echo
	// Inspector sees every request both engines finish or reject.
	Inspector *inspect.Inspector

	srv      *http.Server
	ln       net.Listener
	url      string
	shutOnce sync.Once
	shutErr  error
	draining atomic.Bool // Shutdown has begun: /readyz answers 503
	// beforeShutdown runs first (races stop); onShutdown runs after the
	// engines stop and before the store closes.
	beforeShutdown []func(context.Context)
	onShutdown     []func(context.Context)
	conns          *connLimiter // nil without --conn-limit
	probe          *writeProbe  // /readyz's write probe
	engines        server.Engines
}

// New opens the store and builds the engines and routes. Call Serve next.
func New(ctx context.Context, cfg Config, log *slog.Logger) (*App, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if err := checkBind(cfg.Addr, cfg.AllowedHosts); err != nil {
		return nil, err
	}
	if cfg.APIKey != "" && (cfg.SessionTTL <= 0 || cfg.LoginRate <= 0 || cfg.LoginBurst < 1) {
		return nil, fmt.Errorf("with --api-key, --session-ttl and --login-rate must be positive and --login-burst at least 1")
	}
	db, shared, err := OpenStore(ctx, cfg.DB, log)
	if err != nil {
		return nil, err
	}
	if cfg.ReplicaID == "" {
		cfg.ReplicaID = defaultReplicaID(cfg.Addr)
	}
	// A lone process owns every run in its file. Replicas sharing
	// PostgreSQL each end their own, and any run older than a race's time
	// limit, which no replica can still be running.
	staleBefore := time.Now()
	if shared {
		staleBefore = staleBefore.Add(-rollout.DefaultTimeLimit)
	}
	if n, err := db.MarkInterrupted(ctx, cfg.ReplicaID, staleBefore); err != nil {
		db.Close()
		return nil, err
	} else if n > 0 {
		log.Info("runs interrupted by an earlier stop", "runs", n)
	}
	// Background responses end with their replica: this one's (restarted)
	// and any whose heartbeat is as old (docs/protocol.md "Background
	// responses").
	if n, err := db.MarkBackgroundFailed(ctx, cfg.ReplicaID, staleBefore); err != nil {
		db.Close()
		return nil, err
	} else if n > 0 {
		log.Info("background responses failed by an earlier stop", "responses", n)
	}
	if n, err := db.DeleteExpiredSessions(ctx, time.Now()); err != nil {
		db.Close()
		return nil, err
	} else if n > 0 {
		log.Info("expired login sessions deleted", "sessions", n)
	}
	sh, err := server.NewShared(db, cfg.TraceRing, cfg.ReplicaID, log)
	if err != nil {
		db.Close()
		return nil, err
	}
	for _, spec := range cfg.Drills {
		if _, aerr := sh.Drills.Arm(spec); aerr != nil {
			sh.Close()
			db.Close()
			return nil, fmt.Errorf("--drill %s: %s", spec.Drill, aerr.Message)
		}
	}
	// The inspector is always on; Config.Observer (tests) sees the same traces.
	ins := inspect.New(db, log, inspect.Options{})
	sh.Observer = ins
	if cfg.Observer != nil {
		sh.Observer = observers{ins, cfg.Observer}
	}
	if ts, ok := db.(core.TraceStore); shared && ok { // replicas share traces
		sh.Traces.PersistTo(ts, log)
	}
	engines := server.NewEngines(cfg.Config, sh)
	a := &App{cfg: cfg, log: log, DB: db, Shared: sh, Inspector: ins, engines: engines,
		V1: engines.V1, Baseline: engines.Baseline}
	a.Echo = a.routes()
	// The engines have stopped by now: the inspector records what is
	// queued and writes its last batch before the store closes.
	a.OnShutdown(ins.Close)
	a.startRetention()
	return a, nil
}

// observers hands every trace to each observer in turn.
type observers []core.Observer

func (o observers) ObserveTrace(t *api.Trace) {
	for _, x := range o {
		x.ObserveTrace(t)
	}
}

func (o observers) ObserveOpen(session string) {
	for _, x := range o {
		x.ObserveOpen(session)
	}
}

func (o observers) ObserveClose(session string) {
	for _, x := range o {
		x.ObserveClose(session)
	}
}

// Listen binds the configured address (port 0 picks a free port).
func (a *App) Listen() (net.Listener, error) {
	ln, err := net.Listen("tcp", a.cfg.Addr)
	if err != nil {
		return nil, err
	}
	ln = a.limit(ln)
	a.ln = ln
	a.url = "http://" + ln.Addr().String()
	return ln, nil
}

// URL is the base URL once listening.
func (a *App) URL() string { return a.url }

// Serve serves on ln until Shutdown.
func (a *App) Serve(ln net.Listener) error {
	if a.ln == nil {
		ln = a.limit(ln)
		a.ln, a.url = ln, "http://"+ln.Addr().String()
	}
	a.srv = a.httpServer()
	err := a.srv.Serve(ln)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// httpServer is the server of every listener: headers must arrive in time,
// but no write timeout, since the body decides whether a response streams.
func (a *App) httpServer() *http.Server {
	return &http.Server{Handler: a.Echo, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 120 * time.Second,
		ErrorLog: slog.NewLogLogger(a.log.Handler(), slog.LevelDebug), ConnContext: connContext}
}

// limit counts ln's connections per client address, under --conn-limit.
func (a *App) limit(ln net.Listener) net.Listener {
	if a.cfg.ConnLimit <= 0 {
		return ln
	}
	if a.conns == nil {
		a.conns = newConnLimiter(a.cfg.ConnLimit)
	}
	return a.conns.listener(ln)
}

// Start listens and serves in the background; for tests and the race.
func (a *App) Start() error {
	ln, err := a.Listen()
	if err != nil {
		return err
	}
	a.srv = a.httpServer()
	go func() {
		if err := a.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			a.log.Error("serve", "err", err)
		}
	}()
	return nil
}

// OnShutdown registers work that must end before the store closes.
func (a *App) OnShutdown(f func(context.Context)) { a.onShutdown = append(a.onShutdown, f) }

// Shutdown follows docs/decisions.md, "Shutdown order": stop accepting, give in-flight
// streams the grace period, end what remains with a terminal event, close
// WebSockets with 1001, flush the ledger, close the database.
func (a *App) Shutdown(ctx context.Context) error {
	a.shutOnce.Do(func() { a.shutErr = a.shutdown(ctx) })
	return a.shutErr
}

func (a *App) shutdown(ctx context.Context) error {
	a.draining.Store(true)
	grace, cancel := context.WithTimeout(ctx, a.cfg.Grace)
	defer cancel()
	for _, f := range a.beforeShutdown {
		f(grace)
	}
	httpDone := make(chan error, 1)
	if a.srv != nil {
		go func() { httpDone <- a.srv.Shutdown(grace) }()
	} else {
		httpDone <- nil
	}
	var wg sync.WaitGroup
	for _, e := range []*server.Engine{a.V1, a.Baseline} {
		wg.Add(1)
		go func() { defer wg.Done(); e.CloseConnections(grace) }()
	}
	wg.Wait()
	var err error
	select {
	case err = <-httpDone:
	case <-grace.Done():
	}
	if grace.Err() != nil {
		// Grace is over: end every remaining stream with a terminal event.
		a.V1.StopGenerating()
		a.Baseline.StopGenerating()
		last, cancel2 := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
		if a.srv != nil {
			err = a.srv.Shutdown(last)
			if err != nil {
				a.srv.Close()
			}
		}
		cancel2()
	}
	for _, f := range a.onShutdown {
		f(ctx)
	}
	a.V1.Close()
	a.Baseline.Close()
	a.Shared.Close()
	if cerr := a.DB.Close(); cerr != nil && err == nil {
		err = fmt.Errorf("close store: %w", cerr)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		err = nil
	}
	return err
}
