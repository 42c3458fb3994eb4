package web

import (
	"context"
	"log/slog"
	"runtime"
	"sync"

	"agentloop/api"
	"agentloop/inference"
	"agentloop/rollout"
	"agentloop/store"

	"github.com/labstack/echo/v4"
)

// Races starts races in this process and says which still run there.
// *rollout.Runner implements it. Start hands every live snapshot of the
// race to onSnapshot, the playground's hub, which fans them out.
// client names who starts it (Client.ID): race slots are shared between
// clients (rollout.Runner).
type Races interface {
	Start(client string, cfg rollout.Config, onSnapshot func(rollout.Snapshot)) (runID string, err error)
	Running(runID string) bool
	// Cancel stops a race running (or queued) in this process.
	Cancel(runID string) error
}

// Runs reads and deletes stored runs. StoreRuns adapts a RunDB.
type Runs interface {
	LoadRun(ctx context.Context, id string) (*rollout.RunRecord, error)
	ListRuns(ctx context.Context, f store.RunFilter) ([]rollout.RunRecord, error)
	DeleteRun(ctx context.Context, id string) error
}

var _ Races = (*rollout.Runner)(nil)

// Client is who sent a request, as Identify tells it.
type Client struct {
	// ID names the client: "login:…" for a browser login, "key:…" for a
	// bearer token on a server with --api-key, "addr:…" for an address.
	ID string
	// Keyed says the client holds the server's key (a login made with it,
	// or the key itself): it may cancel or delete any run.
	Keyed bool
}

// Identify says who sent a request: its login; failing that its bearer
// token, only on a server with --api-key (without one any token would be
// a new client); failing that its address. app provides it
// (app/client.go); the fair share of race slots and the cancel rule use it.
type Identify func(c echo.Context) Client

// AddressOf is the client a request's address makes, which Identify falls
// back to (and New uses without an Identify).
func AddressOf(c echo.Context) Client { return Client{ID: "addr:" + c.RealIP()} }

// Budget is the process's in-flight budget of request bodies (the
// engine's, in app): the playground holds each body it reads against it.
type Budget interface {
	// Acquire admits n body bytes, or returns the 503 (with Retry-After)
	// to answer; release is called once the body is no longer held.
	Acquire(n int) (release func(), err *api.Error)
}

// Deps is what the playground needs.
type Deps struct {
	Races Races
	Runs  Runs
	Log   *slog.Logger
	// KeyRequired says the server runs with --api-key (shown in the docs).
	KeyRequired bool
	// Cores the live lanes share, shown on the race view; 0 = runtime.NumCPU.
	Cores int
	// Inspector serves /inspect and /api/sessions; nil leaves them out.
	Inspector Inspector
	// Workloads stores workloads (/api/workloads, a run's workload_id);
	// nil leaves them out.
	Workloads WorkloadDB
	// Checks stores agentloop check's report cards (/api/checks,
	// /check/{id}); nil leaves them out.
	Checks CheckDB
	// Gauntlet lets /check grade a client pointed at the server by hand;
	// nil leaves it out.
	Gauntlet Gauntlet
	// Identify says who sent a request; nil takes the address (AddressOf).
	Identify Identify
	// Budget, when set, holds the request bodies the playground reads.
	Budget Budget
	// CancelSecret signs the cancel tokens of runs started without the
	// server's key; nil draws a random one, so tokens last as long as
	// the process.
	CancelSecret []byte
	// Windows are the served engine's context windows (core.Config.Windows),
	// which a workload upload and the race form are held to; zero: the
	// built-in profiles' own.
	Windows inference.Windows
	// HomePreset, when set, replaces the home page's ready-made race (and
	// presenter mode's classroom race); tests set a short one.
	HomePreset *rollout.Config
}

// Playground serves the pages, the run API and the live feed.
type Playground struct {
	races Races
	runs  Runs
	log   *slog.Logger
	keyed bool
	cores int
	hub   *hub
	// preset is the home page's ready-made race; classroom presenter
	// mode's live race (rollout.Classroom).
	preset, classroom rollout.Config

	inspector  Inspector
	workloads  WorkloadDB
	checks     CheckDB
	gauntlet   Gauntlet
	liveChecks liveChecks
	identify   Identify
	budget     Budget
	windows    inference.Windows
	cancels    cancelTokens
	stopFeed   chan struct{} // closed by Shutdown: the inspector's feed stops
	stopOnce   sync.Once
	feedDone   chan struct{}

	mu    sync.Mutex
	conns map[*liveConn]struct{}
}

// New builds the playground.
func New(d Deps) *Playground {
	if d.Log == nil {
		d.Log = slog.New(slog.DiscardHandler)
	}
	if d.Cores <= 0 {
		d.Cores = runtime.NumCPU()
	}
	p := &Playground{races: d.Races, runs: d.Runs, log: d.Log, keyed: d.KeyRequired, cores: d.Cores,
		preset: preset, classroom: rollout.Classroom, inspector: d.Inspector, workloads: d.Workloads, stopFeed: make(chan struct{}), feedDone: make(chan struct{}), conns: map[*liveConn]struct{}{}}
	if d.HomePreset != nil {
		p.preset, p.classroom = *d.HomePreset, *d.HomePreset
	}
	p.checks, p.gauntlet = d.Checks, d.Gauntlet
	p.identify = d.Identify
	if p.identify == nil {
		p.identify = AddressOf
	}
	p.budget, p.windows = d.Budget, d.Windows
	p.cancels = newCancelTokens(d.CancelSecret)
	p.hub = newHub(func(id string) bool {
		if isInspectFeed(id) {
			return p.inspector != nil
		}
		return d.Races.Running(id)
	}, p.liveFrame, d.Log, subscriberBuffer)
	if p.inspector != nil {
		go p.inspectFeed()
	} else {
		close(p.feedDone)
	}
	return p
}

// Register mounts every playground route on e.
func (p *Playground) Register(e *echo.Echo) {
	e.GET("/", p.home)
	e.GET("/docs", p.docs)
	e.GET("/docs/stack", p.stackDocPage)
	e.GET("/race", p.race)
	e.GET("/explorer", p.explorer)
	e.GET("/runs", p.runsPage)
	e.GET("/runs/:id", p.runPage)
	e.GET("/sweep", p.sweepPage)
	e.GET("/corpus", p.corpusPage)
	e.GET("/api/corpus/*", p.corpusWorkload)
	e.GET("/static/*", serveStatic)
	e.GET("/favicon.ico", favicon)

	api := e.Group("/api/runs")
	api.POST("", p.startRun, SameOriginJSON, p.heldBody(maxRunBody))
	api.GET("", p.listRuns)
	api.GET("/:id", p.getRun)
	api.DELETE("/:id", p.deleteRun, SameOrigin)
	api.POST("/:id/cancel", p.cancelRun, SameOriginJSON)

	e.GET("/ui/runs/:id/live", p.live)
	e.GET("/ui/runs/:id/overlaps", p.overlaps)

	if p.inspector != nil {
		p.registerInspector(e)
	}
	if p.workloads != nil {
		p.registerWorkloads(e)
	}
	if p.checks != nil {
		p.registerChecks(e)
	}
	if p.gauntlet != nil {
		p.registerCheckLive(e)
	}
}

// Shutdown stops the races (when Races can), then closes every live feed
// with 1001 (going away): http.Server.Shutdown does not wait for WebSockets.
func (p *Playground) Shutdown(ctx context.Context) {
	if s, ok := p.races.(interface{ Shutdown(context.Context) }); ok {
		s.Shutdown(ctx)
	}
	p.stopOnce.Do(func() { close(p.stopFeed) })
	<-p.feedDone
	p.mu.Lock()
	conns := make([]*liveConn, 0, len(p.conns))
	for c := range p.conns {
		conns = append(conns, c)
	}
	p.mu.Unlock()
	for _, c := range conns {
		c.goingAway()
	}
}

// RunDB is the store StoreRuns reads and deletes runs in. Every store
// backend implements it (checked in app).
type RunDB interface {
	rollout.RunReader
	DeleteRun(ctx context.Context, id string) error
}

// StoreRuns reads runs from db the way rollout stores them.
func StoreRuns(db RunDB) Runs { return storeRuns{db} }

type storeRuns struct{ db RunDB }

func (s storeRuns) LoadRun(ctx context.Context, id string) (*rollout.RunRecord, error) {
	return rollout.LoadRun(ctx, s.db, id)
}

func (s storeRuns) ListRuns(ctx context.Context, f store.RunFilter) ([]rollout.RunRecord, error) {
	return rollout.ListRuns(ctx, s.db, f)
}

func (s storeRuns) DeleteRun(ctx context.Context, id string) error { return s.db.DeleteRun(ctx, id) }

// Deferred builds the Races on first use. The runner needs the server's own
// URL, which is known only once the server listens, after the routes exist.
func Deferred(build func() Races) Races { return &deferred{build: build} }

type deferred struct {
	build func() Races
	once  sync.Once
	mu    sync.Mutex
	races Races
}

func (d *deferred) get() Races {
	d.once.Do(func() {
		r := d.build()
		d.mu.Lock()
		d.races = r
		d.mu.Unlock()
	})
	return d.races
}

func (d *deferred) Start(client string, cfg rollout.Config, onSnapshot func(rollout.Snapshot)) (string, error) {
	return d.get().Start(client, cfg, onSnapshot)
}

func (d *deferred) Running(id string) bool { return d.get().Running(id) }

func (d *deferred) Cancel(id string) error { return d.get().Cancel(id) }

// Shutdown shuts the built Races down; nothing was started if none was built.
func (d *deferred) Shutdown(ctx context.Context) {
	d.mu.Lock()
	r := d.races
	d.mu.Unlock()
	if s, ok := r.(interface{ Shutdown(context.Context) }); ok {
		s.Shutdown(ctx)
	}
}
