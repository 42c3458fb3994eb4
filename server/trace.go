package server

import (
	"time"

	"agentloop/api"
)

// trace is a Trace being recorded: the wire shape plus the clock it is
// recorded against.
type trace struct {
	api.Trace
	start   time.Time
	segment int    // the prototype's segment being recorded; spans carry it
	scope   string // the request's drill scope header (drillhooks.go)
}

// modelledSpan appends a modelled span (queue, prefill, generate) from from
// to to, never negative.
func (t *trace) modelledSpan(name string, from, to time.Time, tokens int) {
	if to.Before(from) {
		to = from
	}
	t.Spans = append(t.Spans, api.Span{Name: name, StartNS: from.Sub(t.start).Nanoseconds(), DurationNS: to.Sub(from).Nanoseconds(),
		Kind: api.Modelled, Tokens: int64(tokens), Segment: t.segment})
}
