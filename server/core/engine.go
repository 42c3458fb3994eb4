package core

import (
	"context"
	"log/slog"
	"slices"
	"sync/atomic"
	"time"

	"agentloop/api"
	"agentloop/apistack"
	"agentloop/inference"
	"agentloop/policy"
	"agentloop/seal"
)

// Config holds one engine's settings, declared only here: app.Config embeds
// it, and cmd/agentloop's flags set it. Two engines share one Shared: /v1
// with the request-level caches on, /baseline/v1 with them off.
type Config struct {
	Name string // "v1" or "baseline"
	// TokenCache caches rendered tokens per item content across requests.
	TokenCache bool
	// ModelCache caches the resolved model configuration across requests.
	ModelCache bool
	// Unmodelled turns every modelled cost off (the overhead benchmark).
	Unmodelled bool
	// ContextWindow, when positive, is every model's context window in
	// place of its profile's (inference.Profile.ContextWindow).
	ContextWindow int
	// PreSprint marks the engine before the field's HTTP sprint
	// (/baseline/v1): it pays the sprint's removed hops and classifies at
	// the pre-sprint rate of the modelled stack.
	PreSprint bool
	// Stack is the modelled API stack of requests that choose none.
	Stack apistack.Stack
	// InflightRequests and InflightBytes bound the creates (and their body
	// bytes) in flight across both engines; past them, 503 + Retry-After.
	InflightRequests int
	InflightBytes    int64
	// BackgroundRunning bounds the background responses one engine
	// generates at once; later ones wait queued. BackgroundQueued bounds
	// a client's queued ones; past it, 429 (background.go). 0: no bound.
	BackgroundRunning int
	BackgroundQueued  int
	// StateBytes bounds the connection state both engines keep for
	// continuations (statebudget.go); past it the least recently used
	// idle session's state is dropped. 0: no bound.
	StateBytes int64

	MaxBody      int64
	WSReadLimit  int64
	WSQueue      int
	WSQueueBytes int64
	WSLifetime   time.Duration
	WriteStall   time.Duration
}

// Defaults are the flag defaults, the only place they are written
// (docs/decisions.md, "One configuration").
func Defaults(name string) Config {
	return Config{
		Name: name, TokenCache: true, ModelCache: true,
		MaxBody: 32 << 20, WSReadLimit: 16 << 20, WSQueue: 64, WSQueueBytes: 64 << 20,
		WSLifetime: 60 * time.Minute, WriteStall: 30 * time.Second, Stack: apistack.Lean,
		InflightRequests: 4096, InflightBytes: 64 << 20, StateBytes: 3 << 30, BackgroundRunning: 64, BackgroundQueued: 16,
	}
}

// Shared is what both engines of one process share: one simulated
// accelerator, one prefix cache, one tokenizer, the store and the traces.
type Shared struct {
	Store     Store
	Scheduler *inference.Scheduler
	Prefix    *inference.PrefixCache
	Tokenizer *inference.Tokenizer
	Policy    policy.Policy
	Traces    *TraceRing
	Metrics   *Metrics
	Budget    *Budget // nil: unbounded
	// States bounds the connection state both engines keep
	// (statebudget.go); nil: none counted nor bounded.
	States  *StateBudget
	Log     *slog.Logger
	Replica string // this process's replica id, in traces and metrics
	// SealKey seals and opens the reasoning and compaction blobs this
	// engine hands out (seal). NewShared draws a random one; app replaces
	// it with the key kept in the store or given by --seal-key.
	SealKey seal.Key
	// Observer sees every finished or rejected request (session.go);
	// nil: none. Set it before serving.
	Observer Observer
	// ToolTurns gives a scope's tool-turn count K (api.ScopeSpec), which
	// the policy reads as a request field; nil or 0: the policy as usual.
	ToolTurns func(scope string) int

	sealers atomic.Pointer[sealerFor] // the Sealer of SealKey (reasoning.go)
}

// NewShared builds the shared parts around a store.
//
// replica names this process among replicas sharing one store; it labels
// traces and every metric (empty: a lone process, no label).
func NewShared(st Store, traceRing int, replica string, log *slog.Logger) (*Shared, error) {
	tok, err := inference.NewTokenizer()
	if err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	key, err := seal.NewKey()
	if err != nil {
		return nil, err
	}
	m := NewMetrics(replica)
	sched := inference.NewScheduler()
	m.watchSlots(sched)
	return &Shared{
		Store: st, Scheduler: sched, Prefix: inference.NewPrefixCache(1 << 20),
		Tokenizer: tok, Policy: policy.NewRouter(tok), Traces: NewTraceRing(traceRing),
		Metrics: m, Log: log, Replica: replica, SealKey: key,
	}, nil
}

// Close stops the scheduler and writes the traces still queued for a
// shared store.
func (s *Shared) Close() {
	s.Scheduler.Close()
	s.Traces.Close()
}

// Engine is one Responses API engine.
type Engine struct {
	cfg    Config
	sh     *Shared
	safety *Safety
	tokens *tokenCache  // nil when TokenCache is off
	models *configCache // nil when ModelCache is off
	checks *toolChecks  // api.CheckTools' answers per partition and raw tools; nil when ModelCache is off

	// The stage tables a create runs (pipeline.go, generate.go), which
	// the layers above may extend (hooks.go), and the sink wrappers they
	// add.
	pre, post []Stage
	sinkWraps []func(ctx context.Context, fl *Flight, out Sink) Sink
	finished  []func(*Flight)

	// stopCtx ends when in-flight generations must end (StopGenerating).
	stopCtx context.Context
	stopAll context.CancelFunc
}

// New returns an engine over shared parts.
func New(cfg Config, sh *Shared) *Engine {
	e := &Engine{cfg: cfg, sh: sh, safety: NewSafety(), pre: slices.Clone(preInference), post: slices.Clone(postInference)}
	e.stopCtx, e.stopAll = context.WithCancel(context.Background())
	if cfg.TokenCache {
		e.tokens = newTokenCache(8 << 20)
	}
	if cfg.ModelCache {
		e.models = newConfigCache(4096)
		e.checks = newToolChecks(1024)
	}
	return e
}

// ResetCaches empties the request-level caches for one prompt_cache_key
// partition ("" empties all), so that no race repeat starts warm.
func (e *Engine) ResetCaches(partition string) {
	if e.tokens != nil {
		e.tokens.reset(partition)
	}
	if e.models != nil {
		e.models.reset(partition)
	}
	if e.checks != nil {
		e.checks.cache.reset(partition)
	}
	if partition == "" {
		e.sh.Prefix.ResetAll()
	} else {
		e.sh.Prefix.Reset(partition)
	}
}

// Config is the engine's configuration.
func (e *Engine) Config() Config { return e.cfg }

// Shared is what the engine shares with the process's other engine.
func (e *Engine) Shared() *Shared { return e.sh }

// Stopping ends when in-flight generations must end (StopGenerating).
func (e *Engine) Stopping() context.Context { return e.stopCtx }

// Rejected counts a request of transport refused with status.
func (e *Engine) Rejected(transport string, status int) {
	e.sh.Metrics.Rejected(transport, e.cfg.Name, status)
}

// StopGenerating ends every in-flight generation with a terminal
// response.failed event: the last step of a graceful shutdown's grace.
func (e *Engine) StopGenerating() { e.stopAll() }

// observeOpen tells the observer a client session's connection or HTTP request opened;
// the returned func tells it that it closed.
func (e *Engine) ObserveOpen(session string) (closed func()) {
	o := e.sh.Observer
	if o == nil {
		return func() {}
	}
	o.ObserveOpen(session)
	return func() { o.ObserveClose(session) }
}

// observe hands a copy of a finished request's trace to the observer, if
// there is one, with the error that ended the request. The trace ring may
// already hold the original, so it is never changed here.
func (e *Engine) Observe(t *Trace, aerr *api.Error) {
	o := e.sh.Observer
	if o == nil {
		return
	}
	c := t.Trace
	if aerr != nil {
		c.Error, c.Status = aerr.Code, aerr.Status
		if c.Error == "" {
			c.Error = aerr.Type
		}
	}
	o.ObserveTrace(&c)
}
