package server

import (
	"context"
	"log/slog"

	"agentloop/api"

	"agentloop/server/core"
	"agentloop/server/drill"
	"agentloop/server/httpapi"
	"agentloop/server/scope"
	"agentloop/server/wsmode"

	"github.com/labstack/echo/v4"
)

// Shared is what both engines of one process share: the core's parts
// (one simulated accelerator, the caches, the store, the traces, the
// metrics), the armed drills and the report card's scopes.
type Shared struct {
	*core.Shared
	Drills *drill.Drills
	Scopes *scope.Scopes
}

// NewShared builds the shared parts around a store.
//
// replica names this process among replicas sharing one store; it labels
// traces and every metric (empty: a lone process, no label).
func NewShared(st core.Store, traceRing int, replica string, log *slog.Logger) (*Shared, error) {
	sh, err := core.NewShared(st, traceRing, replica, log)
	if err != nil {
		return nil, err
	}
	scopes := scope.New()
	sh.ToolTurns = scopes.ToolTurns
	return &Shared{Shared: sh, Drills: drill.NewDrills(sh.Metrics.Registry(), replica), Scopes: scopes}, nil
}

// Engine is one Responses API engine as it serves: the core, its drills,
// and its two transports.
type Engine struct {
	*core.Engine
	drills *drill.Drills
	http   *httpapi.API
	ws     *wsmode.Server
}

// New builds an engine over shared parts: the one constructor app and
// the engine's tests (enginetest) use.
func New(cfg core.Config, sh *Shared) *Engine {
	c := core.New(cfg, sh.Shared)
	drill.Install(c, sh.Drills)
	ws := wsmode.New(c)
	ws.LimitConnections(drill.ConnectionLimit(sh.Drills, c))
	return &Engine{Engine: c, drills: sh.Drills, http: httpapi.New(c), ws: ws}
}

// Connections reports how many WebSocket connections are open.
func (e *Engine) Connections() int { return e.ws.Connections() }

// CloseConnections is the WebSocket part of graceful shutdown: it refuses
// new connections, lets each connection finish the response in flight
// (within ctx), then closes them all with 1001.
func (e *Engine) CloseConnections(ctx context.Context) { e.ws.CloseConnections(ctx) }

// Close stops the engine's background work, background responses
// included.
func (e *Engine) Close() {
	e.ws.Close()
	e.http.Close()
}

// Engines is one process's two engines over one Shared: /v1, with the
// request-level caches on, and /baseline/v1, the engine before the
// sprint, with them off.
type Engines struct {
	Shared       *Shared
	V1, Baseline *Engine
}

// NewEngines builds both engines from one configuration, and the
// in-flight budget they share: what app serves and enginetest tests.
//
// The scopes observe every trace before the observer set on sh (if any).
func NewEngines(cfg core.Config, sh *Shared) Engines {
	sh.Observer = scopeObserver{sh.Scopes, sh.Observer}
	sh.Budget = core.NewBudget(cfg.InflightRequests, cfg.InflightBytes, sh.Metrics)
	sh.States = core.NewStateBudget(cfg.StateBytes, sh.Metrics)
	engineCfg := func(name string, caches bool) core.Config {
		c := cfg
		c.Name = name
		c.TokenCache, c.ModelCache = caches && c.TokenCache, caches && c.ModelCache
		c.PreSprint = !caches
		return c
	}
	return Engines{Shared: sh, V1: New(engineCfg("v1", true), sh), Baseline: New(engineCfg(api.EngineBaseline, false), sh)}
}

// scopeObserver hands a trace to the scopes, then to the process's
// observer.
type scopeObserver struct {
	scopes *scope.Scopes
	next   core.Observer
}

func (o scopeObserver) ObserveTrace(t *api.Trace) {
	o.scopes.ObserveTrace(t)
	if o.next != nil {
		o.next.ObserveTrace(t)
	}
}

func (o scopeObserver) ObserveOpen(session string) {
	if o.next != nil {
		o.next.ObserveOpen(session)
	}
}

func (o scopeObserver) ObserveClose(session string) {
	if o.next != nil {
		o.next.ObserveClose(session)
	}
}

// Register mounts both engines (/v1, /baseline/v1), /v1 again under each
// scope (/scope/{id}/v1, routes.go), the traces, drills and scopes APIs
// under /api, and /metrics on e.
func (es Engines) Register(e *echo.Echo) {
	es.V1.Register(e.Group("/v1"))
	es.V1.Register(e.Group("/scope/:scope/v1", scoped(es.Shared.Scopes)))
	scope.Register(e.Group("/api"), es.Shared.Scopes)
	es.Baseline.Register(e.Group("/baseline/v1"))
	httpapi.RegisterTraces(e.Group("/api"), es.Shared.Traces)
	drill.Register(e.Group("/api"), es.Shared.Drills)
	e.GET("/metrics", echo.WrapHandler(httpapi.MetricsHandler(es.Shared.Metrics)))
}
