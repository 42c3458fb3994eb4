package server

import (
	"sync"
	"time"

	"agentloop/api"
)

// trace is a Trace being recorded: the wire shape plus the clock it is
// recorded against.
type trace struct {
	api.Trace
	start   time.Time
	segment int    // the prototype's segment being recorded; spans carry it
	scope   string // the request's drill scope header (drill.go)
}

// newTrace begins the trace of a request that arrived at start.
func (e *Engine) newTrace(transport string, start time.Time) *trace {
	// One span per stage; queue, prefill and generate are the other three.
	n := len(preInference) + 3 + len(postInference)
	return &trace{Trace: api.Trace{Transport: transport, Engine: e.cfg.Name, Replica: e.sh.Replica,
		StartedUnixNS: start.UnixNano(), Spans: make([]api.Span, 0, n)}, start: start}
}

// record appends a stage's span, which began at from: a measured span ends
// now, a modelled one lasts the cost the stage reported. It returns now.
func (t *trace) record(s *stage, from time.Time, r *stageResult) time.Time {
	now := time.Now()
	d := now.Sub(from)
	if s.kind == api.Modelled {
		d = r.cost
	}
	t.Spans = append(t.Spans, api.Span{Name: s.name, StartNS: from.Sub(t.start).Nanoseconds(), DurationNS: d.Nanoseconds(),
		Kind: s.kind, Items: int64(r.items), Tokens: int64(r.tokens), Bytes: int64(r.bytes), Note: r.note, Segment: t.segment})
	return now
}

func (t *trace) model(name string, from, to time.Time, tokens int) {
	if to.Before(from) {
		to = from
	}
	t.Spans = append(t.Spans, api.Span{Name: name, StartNS: from.Sub(t.start).Nanoseconds(), DurationNS: to.Sub(from).Nanoseconds(),
		Kind: api.Modelled, Tokens: int64(tokens), Segment: t.segment})
}

// TraceRing keeps the latest traces, bounded, for every response
// (store:false included).
type TraceRing struct {
	mu   sync.Mutex
	ring []*api.Trace
	next int
	byID map[string]*api.Trace

	// With replicas, traces are also written to a shared store
	// (tracestore.go); both nil for a lone process.
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
