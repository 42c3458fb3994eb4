package server

import (
	"sync"
	"time"
)

// Stage names of the trace contract (DECISIONS.md).
const (
	StageParse    = "parse"
	StageValidate = "validate"
	StageResolve  = "resolve"
	StageLoad     = "load"
	StageRender   = "render"
	StageSafety   = "safety"
	StageQueue    = "queue"
	StagePrefill  = "prefill"
	StageGenerate = "generate"
	StageFinalize = "finalize"
)

// Span kinds: measured is real work on this machine, modelled is simulated.
const (
	Measured = "measured"
	Modelled = "modelled"
)

// Span is one stage of one response.
type Span struct {
	Name       string `json:"name"`
	StartNS    int64  `json:"start_ns"`
	DurationNS int64  `json:"duration_ns"`
	Kind       string `json:"kind"`
	Items      int64  `json:"items"`
	Tokens     int64  `json:"tokens"`
	Bytes      int64  `json:"bytes"`
	// Note says what the stage found, e.g. a cache hit or safety flags.
	Note string `json:"note,omitempty"`
}

// Trace is the engine's record of one response. Transport is recorded for
// display only; no stage reads it.
type Trace struct {
	ResponseID    string `json:"response_id"`
	Transport     string `json:"transport"`
	Engine        string `json:"engine"`
	StartedUnixNS int64  `json:"started_unix_ns"`
	Spans         []Span `json:"spans"`

	start time.Time
}

func newTrace(transport, engine string, start time.Time) *Trace {
	return &Trace{Transport: transport, Engine: engine, StartedUnixNS: start.UnixNano(), start: start, Spans: make([]Span, 0, 10)}
}

// measure records a measured span that began at from and ends now.
func (t *Trace) measure(name string, from time.Time, items, tokens, bytes int) time.Time {
	now := time.Now()
	t.Spans = append(t.Spans, Span{Name: name, StartNS: from.Sub(t.start).Nanoseconds(), DurationNS: now.Sub(from).Nanoseconds(),
		Kind: Measured, Items: int64(items), Tokens: int64(tokens), Bytes: int64(bytes)})
	return now
}

func (t *Trace) model(name string, from, to time.Time, tokens int) {
	if to.Before(from) {
		to = from
	}
	t.Spans = append(t.Spans, Span{Name: name, StartNS: from.Sub(t.start).Nanoseconds(), DurationNS: to.Sub(from).Nanoseconds(),
		Kind: Modelled, Tokens: int64(tokens)})
}

func (t *Trace) note(s string) {
	if n := len(t.Spans); n > 0 {
		if t.Spans[n-1].Note != "" {
			t.Spans[n-1].Note += "; "
		}
		t.Spans[n-1].Note += s
	}
}

// PreInference is the measured time from the first byte to scheduler-ready:
// parse through safety.
func (t *Trace) PreInference() time.Duration {
	var d int64
	for _, s := range t.Spans {
		switch s.Name {
		case StageParse, StageValidate, StageResolve, StageLoad, StageRender, StageSafety:
			d += s.DurationNS
		}
	}
	return time.Duration(d)
}

// Span returns the named span, if any.
func (t *Trace) Span(name string) (Span, bool) {
	for _, s := range t.Spans {
		if s.Name == name {
			return s, true
		}
	}
	return Span{}, false
}

// TraceRing keeps the latest traces, bounded, for every response
// (store:false included).
type TraceRing struct {
	mu   sync.Mutex
	ring []*Trace
	next int
	byID map[string]*Trace
}

// NewTraceRing keeps at most size traces.
func NewTraceRing(size int) *TraceRing {
	if size < 1 {
		size = 1
	}
	return &TraceRing{ring: make([]*Trace, size), byID: make(map[string]*Trace, size)}
}

// Add stores a finished trace, evicting the oldest.
func (r *TraceRing) Add(t *Trace) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if old := r.ring[r.next]; old != nil && r.byID[old.ResponseID] == old {
		delete(r.byID, old.ResponseID)
	}
	r.ring[r.next] = t
	r.byID[t.ResponseID] = t
	r.next = (r.next + 1) % len(r.ring)
}

// Get returns a copy of a trace by response id.
func (r *TraceRing) Get(id string) (Trace, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	t, ok := r.byID[id]
	if !ok {
		return Trace{}, false
	}
	c := *t
	c.Spans = append([]Span(nil), t.Spans...)
	return c, true
}
