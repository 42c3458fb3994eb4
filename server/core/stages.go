package core

import (
	"context"
	"time"

	"agentloop/api"
)

// Stage is one step of the pipeline and the span it records. A measured
// stage's span is the wall time of run; a modelled stage (a hop of a
// modelled API stack) reports its duration as StageResult.cost.
type Stage struct {
	Name string
	Kind string // api.Measured, api.Modelled, or Unrecorded
	Run  StageFunc
}

// StageFunc is a stage's work on a flight.
type StageFunc func(e *Engine, ctx context.Context, fl *Flight) (StageResult, *api.Error)

// Unrecorded is the kind of a step that records no span (it always
// reports Skip): its time falls in the next stage's span. An error it
// returns still ends the flight.
const Unrecorded = ""

// StageResult is what a stage reports for its span.
type StageResult struct {
	items, tokens, bytes int
	note                 string
	cost                 time.Duration // a modelled stage's duration
	skip                 bool          // the stage did no work and records no span
}

// addNote appends s to the span's note.
func (r *StageResult) addNote(s string) {
	if r.note != "" {
		r.note += "; "
	}
	r.note += s
}

// runStages runs stages in order and records each one's span, a failing
// stage's included; it stops at the first error. The first span starts at
// from, and each next one where the one before it ended.
func (e *Engine) runStages(ctx context.Context, fl *Flight, stages []Stage, from time.Time) *api.Error {
	for i := range stages {
		s := &stages[i]
		res, err := s.Run(e, ctx, fl)
		if res.skip {
			if err != nil {
				return err
			}
			continue
		}
		if s.Kind == api.Modelled && err == nil {
			// A stage cut short records what it really waited.
			res.cost, err = e.waitModelled(ctx, s.Name, res.cost)
		}
		from = fl.Trace.record(s, from, &res)
		if err != nil {
			return err
		}
		if s.Name == api.StageParse && fl.Via.OnParsed != nil {
			fl.Via.OnParsed()
			from = time.Now()
		}
	}
	return nil
}

// spansPerRequest is how many spans a request records at most outside
// the prototype: one per recorded stage of preInference and
// postInference, and queue, prefill and generate. A test holds it to the
// stage tables; it only sizes the trace's first allocation.
const spansPerRequest = 17

// NewFlight begins the flight of a request of transport that arrived at
// start, with its body.
func (e *Engine) NewFlight(transport string, start time.Time, body []byte) *Flight {
	return &Flight{Trace: e.newTrace(transport, start), body: body}
}

// newTrace begins the trace of a request that arrived at start.
func (e *Engine) newTrace(transport string, start time.Time) *Trace {
	return &Trace{Trace: api.Trace{Transport: transport, Engine: e.cfg.Name, Replica: e.sh.Replica,
		StartedUnixNS: start.UnixNano(), Spans: make([]api.Span, 0, spansPerRequest)}, start: start}
}

// record appends a stage's span, which began at from: a measured span ends
// now, a modelled one lasts the cost the stage reported. It returns now.
func (t *Trace) record(s *Stage, from time.Time, r *StageResult) time.Time {
	now := time.Now()
	d := now.Sub(from)
	if s.Kind == api.Modelled {
		d = r.cost
	}
	t.Spans = append(t.Spans, api.Span{Name: s.Name, StartNS: from.Sub(t.start).Nanoseconds(), DurationNS: d.Nanoseconds(),
		Kind: s.Kind, Items: int64(r.items), Tokens: int64(r.tokens), Bytes: int64(r.bytes), Note: r.note, Segment: t.segment})
	return now
}

// waitModelled spends a modelled stage's time, unless the request ends
// first: its client goes away, or the engine stops (shutdown's grace is
// over). It returns the time really waited, which is what a stage cut
// short records (a dropped request never counts a wait it did not make).
func (e *Engine) waitModelled(ctx context.Context, stage string, d time.Duration) (time.Duration, *api.Error) {
	if d <= 0 {
		return 0, nil
	}
	waiting := e.sh.Metrics.waiting.WithLabelValues(stage)
	waiting.Inc()
	defer waiting.Dec()
	start := time.Now()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return d, nil
	case <-ctx.Done():
		return min(time.Since(start), d), clientGone()
	case <-e.stopCtx.Done():
		return min(time.Since(start), d), shuttingDown()
	}
}

// clientGone is the error of a request whose client went away during a
// stage; nobody reads it, but the trace and the metrics record it.
func clientGone() *api.Error {
	return api.Errorf(499, "", api.CodeClientClosed, "The client went away before the response was ready.")
}

// shuttingDown is the answer to a request the engine stopped before its
// response began: a 503 to retry, elsewhere (another replica, or this one
// restarted).
func shuttingDown() *api.Error {
	e := api.Errorf(503, "", api.CodeServerError, "The server is shutting down; retry the request.")
	e.Headers = map[string]string{"Retry-After": "1"}
	return e
}
