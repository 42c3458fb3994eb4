package core

import (
	"context"
	"strconv"

	"agentloop/api"
	"agentloop/inference"
)

// Context windows (docs/protocol.md, "Context windows"). Each model's
// profile has a context window (inference.Profile.ContextWindow, or
// Config.ContextWindow for every model): the most prompt tokens a request
// may hold, counted as usage counts input_tokens (instructions, tools and
// the whole context, a WebSocket continuation's cached context included).
// A prompt over it is refused with context_length_exceeded, unless the
// request asks for truncation "auto": then whole items are dropped from
// the oldest end until it fits. The instructions and the first system or
// developer message stay, a tool call goes together with its outputs, and
// the latest item stays; if that is still too much, the request is
// refused all the same.

// Windows are the context windows this configuration serves, the one
// source the playground's workload and race checks read too.
func (c Config) Windows() inference.Windows { return inference.Windows{Override: c.ContextWindow} }

// fitWindow is the context_window stage. It records a span only when it
// drops items (how many, and their tokens) or refuses the request.
func (e *Engine) fitWindow(ctx context.Context, fl *Flight) (StageResult, *api.Error) {
	window := fl.resolved.model.profile.ContextWindow
	n := len(fl.rendered.tokens)
	if window <= 0 || n <= window {
		return Skip, nil
	}
	over := StageResult{tokens: n, note: strconv.Itoa(n) + " tokens, over the " + strconv.Itoa(window) + "-token window"}
	if fl.parsed.req.Truncation != "auto" {
		return over, api.ContextLengthExceeded()
	}
	instructions := fl.instructionsText()
	if fl.rendered.fresh != 0 {
		// Extending a cached parent counted only the new items: count
		// every item's tokens to choose what to drop.
		if _, _, err := e.renderWhole(ctx, fl, instructions); err != nil {
			return over, clientGone()
		}
	}
	drop, freed := oldestToDrop(fl.built.context, fl.rendered.itemTokens, n-window)
	if drop == nil {
		return over, api.ContextLengthExceeded()
	}
	kept := make([]ctxItem, 0, len(fl.built.context))
	inputStart := 0
	for i := range fl.built.context {
		if drop[i] {
			continue
		}
		kept = append(kept, fl.built.context[i])
		if i < fl.built.inputStart {
			inputStart++
		}
	}
	dropped := len(fl.built.context) - len(kept)
	fl.built.context, fl.built.inputStart = kept, inputStart
	if _, _, err := e.renderWhole(ctx, fl, instructions); err != nil {
		return over, clientGone()
	}
	return StageResult{items: dropped, tokens: freed,
		note: "truncation auto: dropped the oldest " + strconv.Itoa(dropped) + " items (" + strconv.Itoa(freed) +
			" tokens) to fit the " + strconv.Itoa(window) + "-token window"}, nil
}

// oldestToDrop chooses the items truncation drops to free need tokens:
// the oldest first, each call with its outputs, never the first system or
// developer message nor the last item. It returns nil when even that does
// not free enough.
func oldestToDrop(items []ctxItem, tokens []int, need int) (drop []bool, freed int) {
	if len(items) == 0 {
		return nil, 0
	}
	drop = make([]bool, len(items))
	system := -1
	for i := range items {
		if it := &items[i]; it.Type == api.TypeMessage && (it.Role == "system" || it.Role == "developer") {
			system = i
			break
		}
	}
	for i := 0; i < len(items)-1 && freed < need; i++ {
		if i == system || drop[i] {
			continue
		}
		drop[i] = true
		freed += tokens[i]
		it := &items[i]
		if it.Type != api.TypeFunctionCall && it.Type != api.TypeCustomToolCall {
			continue
		}
		for j := i + 1; j < len(items); j++ {
			if o := &items[j]; !drop[j] && o.CallID == it.CallID &&
				(o.Type == api.TypeFunctionCallOutput || o.Type == api.TypeCustomToolCallOutput) {
				drop[j] = true
				freed += tokens[j]
			}
		}
	}
	if freed < need || drop[len(items)-1] {
		return nil, 0
	}
	return drop, freed
}
