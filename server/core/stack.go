package core

import (
	"context"

	"agentloop/api"
	"agentloop/apistack"
)

// The modelled API stack's stages (docs/stack.md). Each costs the work it
// does in this request, never the transport: a stage with no work records
// no span, and with the lean stack (or an unmodelled engine) none runs.

func (e *Engine) stackModelled(fl *Flight) bool { return !e.cfg.Unmodelled && fl.stack.Modelled() }

// stackStage is a stack stage's result for the work w, costed by the one
// cost function (apistack.Stack.StageCost); a stage the stack does not model
// records no span.
func (e *Engine) stackStage(fl *Flight, w apistack.Work) (StageResult, *api.Error) {
	if !e.stackModelled(fl) || !fl.stack.Runs(w.Stage, w.PreSprint) {
		return StageResult{skip: true}, nil
	}
	return StageResult{tokens: w.Tokens, bytes: w.Bytes, cost: fl.stack.StageCost(w)}, nil
}

// stackConfigHop is the model-resolution service, called when no cache
// held the resolved model: always on /baseline/v1, on a cold start on /v1.
func (e *Engine) stackConfigHop(_ context.Context, fl *Flight) (StageResult, *api.Error) {
	if !fl.resolved.cold {
		return StageResult{skip: true}, nil
	}
	return e.stackStage(fl, apistack.Work{Stage: api.StageStackConfigHop, PreSprint: e.cfg.PreSprint})
}

// stackSprintHops are the intermediate hops the sprint removed, so only
// the engine before it (/baseline/v1) makes them.
func (e *Engine) stackSprintHops(_ context.Context, fl *Flight) (StageResult, *api.Error) {
	if !e.cfg.PreSprint {
		return StageResult{skip: true}, nil
	}
	return e.stackStage(fl, apistack.Work{Stage: api.StageStackSprintHops, PreSprint: true})
}

// stackStateLoad reads the parent's state from a remote store: paid when
// load hydrated the parent from the store, by its bytes.
func (e *Engine) stackStateLoad(_ context.Context, fl *Flight) (StageResult, *api.Error) {
	if fl.loaded.bytes == 0 {
		return StageResult{skip: true}, nil
	}
	return e.stackStage(fl, apistack.Work{Stage: api.StageStackStateLoad, Bytes: fl.loaded.bytes, PreSprint: e.cfg.PreSprint})
}

// stackClassify runs the hosted safety classifiers over the tokens render
// rendered anew: the whole context, or only the new items after a parent
// built in memory.
func (e *Engine) stackClassify(_ context.Context, fl *Flight) (StageResult, *api.Error) {
	if fl.rendered.freshTokens <= 0 {
		return StageResult{skip: true}, nil
	}
	res, err := e.stackStage(fl, apistack.Work{Stage: api.StageStackClassify, Tokens: fl.rendered.freshTokens, PreSprint: e.cfg.PreSprint})
	if e.cfg.PreSprint {
		res.note = "pre-sprint classifier"
	}
	return res, err
}

// stackBilling records usage with the billing service, wherever finalize
// runs, before the terminal event.
func (e *Engine) stackBilling(_ context.Context, fl *Flight) (StageResult, *api.Error) {
	return e.stackStage(fl, apistack.Work{Stage: api.StageStackBilling, PreSprint: e.cfg.PreSprint})
}

// UseStack sets a request's stack; its trace records it when it models
// anything.
func (e *Engine) UseStack(fl *Flight, s apistack.Stack) {
	fl.stack = s
	if e.stackModelled(fl) {
		fl.Trace.Stack = s.String()
	}
}
