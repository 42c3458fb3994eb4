package core

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"agentloop/api"
	"agentloop/store"
)

// TraceRing keeps the latest traces, bounded, for every response
// (store:false included).
type TraceRing struct {
	mu   sync.Mutex
	ring []*api.Trace
	next int
	byID map[string]*api.Trace

	// With replicas, traces are also written to a shared store (a
	// TraceStore, through tracePersister); both nil for a lone process.
	store   TraceStore
	persist *tracePersister
}

// NewTraceRing keeps at most size traces.
func NewTraceRing(size int) *TraceRing {
	if size < 1 {
		size = 1
	}
	return &TraceRing{ring: make([]*api.Trace, size), byID: make(map[string]*api.Trace, size)}
}

// Add stores a finished trace, evicting the oldest.
func (r *TraceRing) Add(t *api.Trace) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if old := r.ring[r.next]; old != nil && r.byID[old.ResponseID] == old {
		delete(r.byID, old.ResponseID)
	}
	r.ring[r.next] = t
	r.byID[t.ResponseID] = t
	r.next = (r.next + 1) % len(r.ring)
	if r.persist != nil {
		r.persist.add(t)
	}
}

// Get returns a copy of a trace by response id.
func (r *TraceRing) Get(id string) (api.Trace, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	t, ok := r.byID[id]
	if !ok {
		return api.Trace{}, false
	}
	c := *t
	c.Spans = append([]api.Span(nil), t.Spans...)
	return c, true
}

// TraceStore keeps traces where every replica can read them. With
// PostgreSQL, replicas share one; a lone process keeps its traces in the
// ring only (docs/decisions.md, "Replicas").
type TraceStore interface {
	SaveTraces(ctx context.Context, traces []store.Trace) error
	GetTrace(ctx context.Context, responseID string) (store.Trace, error)
}

// Trace writes are grouped like the store:false ledger: a trace is durable
// within traceFlushEvery of its response's end. The queue is bounded; past
// it a trace stays in the ring only, and is counted.
const (
	traceFlushEvery = 100 * time.Millisecond
	traceQueue      = 4096
	traceBatch      = 256
)

// tracePersister writes finished traces to a TraceStore in the
// background, off every request's path.
type tracePersister struct {
	ts      TraceStore
	log     *slog.Logger
	queue   chan *api.Trace
	dropped atomic.Int64
	done    chan struct{}
	once    sync.Once
}

func newTracePersister(ts TraceStore, log *slog.Logger) *tracePersister {
	p := &tracePersister{ts: ts, log: log, queue: make(chan *api.Trace, traceQueue), done: make(chan struct{})}
	go p.run()
	return p
}

// add queues a finished trace; it never blocks.
func (p *tracePersister) add(t *api.Trace) {
	select {
	case p.queue <- t:
	default:
		p.dropped.Add(1)
	}
}

func (p *tracePersister) run() {
	defer close(p.done)
	tick := time.NewTicker(traceFlushEvery)
	defer tick.Stop()
	batch := make([]store.Trace, 0, traceBatch)
	flush := func() {
		if len(batch) == 0 {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if err := p.ts.SaveTraces(ctx, batch); err != nil {
			p.log.Warn("traces not stored; they stay in this replica's ring", "traces", len(batch), "err", err)
		}
		cancel()
		batch = batch[:0]
	}
	for {
		select {
		case t, ok := <-p.queue:
			if !ok {
				flush()
				return
			}
			b, err := json.Marshal(t)
			if err != nil {
				continue
			}
			batch = append(batch, store.Trace{ResponseID: t.ResponseID, Replica: t.Replica, StartedUnixNS: t.StartedUnixNS, JSON: b})
			if len(batch) == traceBatch {
				flush()
			}
		case <-tick.C:
			flush()
		}
	}
}

// close writes what is queued and stops.
func (p *tracePersister) close() {
	p.once.Do(func() { close(p.queue) })
	<-p.done
}

// PersistTo makes the ring also write every trace it adds to ts, so that
// any replica can answer for it; Close flushes. Call it before serving.
func (r *TraceRing) PersistTo(ts TraceStore, log *slog.Logger) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	r.store, r.persist = ts, newTracePersister(ts, log)
}

// Close writes the traces still queued for the store, if there is one.
func (r *TraceRing) Close() {
	if r.persist != nil {
		r.persist.close()
	}
}

// Lookup finds a trace in the ring, or else in the shared store.
func (r *TraceRing) Lookup(ctx context.Context, id string) (api.Trace, bool, error) {
	if t, ok := r.Get(id); ok || r.store == nil {
		return t, ok, nil
	}
	st, err := r.store.GetTrace(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return api.Trace{}, false, nil
	}
	if err != nil {
		return api.Trace{}, false, err
	}
	var t api.Trace
	if err := json.Unmarshal(st.JSON, &t); err != nil {
		return api.Trace{}, false, err
	}
	return t, true, nil
}
