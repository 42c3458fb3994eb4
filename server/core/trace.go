package core

import (
	"time"

	"agentloop/api"
)

// trace is a Trace being recorded: the wire shape plus the clock it is
// recorded against.
type Trace struct {
	api.Trace
	start   time.Time
	segment int // the prototype's segment being recorded; spans carry it
}

// SetScope records the request's X-Agentloop-Scope header (on a
// WebSocket, the upgrade's).
func (t *Trace) SetScope(scope string) { t.Scope = scope }

// ScopeOf is a request's scope: its X-Agentloop-Scope header, else its
// prompt_cache_key (partition).
func (t *Trace) ScopeOf(partition string) string {
	if t.Scope != "" {
		return t.Scope
	}
	return partition
}

// Modelled appends a modelled span of a layer above the core (a drill's
// hold), from from until now, with its note.
func (t *Trace) Modelled(name string, from time.Time, note string) {
	t.Spans = append(t.Spans, api.Span{Name: name, StartNS: from.Sub(t.start).Nanoseconds(),
		DurationNS: time.Since(from).Nanoseconds(), Kind: api.Modelled, Note: note, Segment: t.segment})
}

// modelledSpan appends a modelled span (queue, prefill, generate) from from
// to to, never negative.
func (t *Trace) modelledSpan(name string, from, to time.Time, tokens int) {
	if to.Before(from) {
		to = from
	}
	t.Spans = append(t.Spans, api.Span{Name: name, StartNS: from.Sub(t.start).Nanoseconds(), DurationNS: to.Sub(from).Nanoseconds(),
		Kind: api.Modelled, Tokens: int64(tokens), Segment: t.segment})
}
