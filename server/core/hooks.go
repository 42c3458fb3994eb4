package core

import (
	"context"
	"time"

	"agentloop/api"
)

// The hooks: where the layers above the core (the transports, the drills)
// and the features to come add to a flight, without the core naming
// them. A new feature adds a stage or wraps the sink; it does not reopen
// the pipeline.
//
//   - WrapStage and AddStage change this engine's create stage tables
//     (preInference, postInference): the drills wrap load (evict-cache),
//     add a step once a create is prepared (http-429, http-503,
//     connection-limit) and one after billing that counts the response.
//   - WrapSink wraps every streamed response's sink (the stream drills).
//   - OnFinished sees every response Generate ends, however it ended,
//     before its terminal event goes out (the drills' after_turns count).
//   - An Outliving sink keeps its response generating after its request
//     has gone: background responses.
//   - Via.BetweenItems is the point between output items where a response
//     can stop and hand over; steering (steer.go) stops there.
//   - compaction, context_window and reasoning are stage entries, filled
//     by their features (compaction.go, contextwindow.go, reasoning.go);
//     reasoning records no span of its own (the reasoning tokens' decode
//     records the reasoning span).

// Stage entries reserved for the features to come. Each is Unrecorded and
// skips until its feature gives it work; a feature that records a span
// gives its stage a name in api and a kind.
const (
	// StageCompaction replaces older context items with a compaction
	// item once the rendered prompt passes context_management's threshold,
	// after render (compaction.go); a compaction item in the input is
	// opened before render (stepCompactionItems).
	StageCompaction = api.StageCompaction
	// StageContextWindow holds the rendered prompt to the model's context
	// window, after compaction (contextwindow.go).
	StageContextWindow = api.StageContextWindow
	// StageReasoning decides the reasoning the model does before its
	// output, last before the scheduler (reasoning.go).
	StageReasoning = "reasoning"
)

// notYet is the work of a stage entry whose feature is not built: none.
func notYet(*Engine, context.Context, *Flight) (StageResult, *api.Error) {
	return StageResult{skip: true}, nil
}

// Skip is the result of a step that did no work and records no span.
var Skip = StageResult{skip: true}

// WrapStage wraps the stage called name in this engine's create tables.
// Call it before the engine serves.
func (e *Engine) WrapStage(name string, wrap func(StageFunc) StageFunc) {
	for _, table := range [][]Stage{e.pre, e.post} {
		for i := range table {
			if table[i].Name == name {
				table[i].Run = wrap(table[i].Run)
			}
		}
	}
}

// AddStage adds s to this engine's create tables right after the stage
// called after. Call it before the engine serves.
func (e *Engine) AddStage(after string, s Stage) {
	for _, table := range []*[]Stage{&e.pre, &e.post} {
		for i := range *table {
			if (*table)[i].Name == after {
				*table = append((*table)[:i+1], append([]Stage{s}, (*table)[i+1:]...)...)
				return
			}
		}
	}
	panic("core: no stage " + after)
}

// WrapSink wraps the sink of every response this engine streams; the
// last added wraps outermost. Call it before the engine serves.
func (e *Engine) WrapSink(wrap func(ctx context.Context, fl *Flight, out Sink) Sink) {
	e.sinkWraps = append(e.sinkWraps, wrap)
}

// OnFinished calls f with every flight Generate ends, before its terminal
// event goes out. Call it before the engine serves.
func (e *Engine) OnFinished(f func(*Flight)) { e.finished = append(e.finished, f) }

func (e *Engine) wrapSink(ctx context.Context, fl *Flight, out Sink) Sink {
	for _, w := range e.sinkWraps {
		out = w(ctx, fl, out)
	}
	return out
}

// Outliving is a sink whose response keeps generating after its request
// has gone (a background response): Generate runs it under Outlive's
// context instead of the request's.
type Outliving interface {
	Sink
	Outlive(request context.Context) context.Context
}

func outlive(ctx context.Context, out Sink) context.Context {
	if o, ok := out.(Outliving); ok {
		return o.Outlive(ctx)
	}
	return ctx
}

// handOver ends a stream that Via.BetweenItems stopped.
type handOver struct{}

func (handOver) Error() string { return "the response stopped between output items to hand over" }

// Request is the decoded create; nil until parse has succeeded.
func (fl *Flight) Request() *api.CreateRequest { return fl.parsed.req }

// Partition is the request's prompt_cache_key ("" when it has none), set
// even when its input is bad.
func (fl *Flight) Partition() string { return fl.parsed.partition }

// CachedParent says whether the connection cache holds the request's
// parent (findParent's answer).
func (fl *Flight) CachedParent() bool { return fl.found.parent != nil }

// ForgetCachedParent drops the connection cache's answer before load: the
// parent is then looked up in the store.
func (fl *Flight) ForgetCachedParent() { fl.found = parentFound{} }

// ErrProcessed ends the pipeline for a response.processed message, which
// gets no reply.
var ErrProcessed = &api.Error{Status: 204, Message: "response.processed gets no reply."}

// CountInputTokens runs countStages over a create body: its input tokens,
// as the create would report them.
func (e *Engine) CountInputTokens(ctx context.Context, fl *Flight, started time.Time) (int, *api.Error) {
	if aerr := e.runStages(ctx, fl, countStages, started); aerr != nil {
		return 0, aerr
	}
	return len(fl.rendered.tokens), nil
}

// SetBody gives the flight its request body, once read.
func (fl *Flight) SetBody(body []byte) { fl.body = body }
