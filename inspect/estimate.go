package inspect

import (
	"strings"

	"agentloop/api"
	"agentloop/apistack"
)

// EstimateMethod says how the WebSocket estimate of an HTTP session is
// computed; the page and the JSON show it next to the figures.
const EstimateMethod = "Estimate, not a measurement: each HTTP turn that continues the previous one " +
	"is replayed as a WebSocket continuation on a connection-cache hit. Its new items are its context " +
	"minus the previous turn's context and output, and its new tokens likewise. Parse, validate and " +
	"safety are scaled to the new items, and render to the new tokens, at this turn's own measured " +
	"time per item and per token. Resolve and load take the mean time of the WebSocket cache hits " +
	"the inspector saw recently (0 when it saw none). stack_classify is recomputed for the new tokens " +
	"with the turn's own stack; the state load and the config hop drop. Inference, finalize and " +
	"billing stay as measured. A first turn, a rejected one, or one whose context did not grow from " +
	"the previous turn counts as it was."

// Estimate is what an HTTP session's turns would have cost as WebSocket
// continuations: its API overhead and modelled stack, against the actual.
type Estimate struct {
	Label  string `json:"label"`
	Method string `json:"method"`
	// Continuations counts the turns estimated as continuations.
	Continuations int   `json:"continuations"`
	OverheadNS    int64 `json:"overhead_ns"`
	StackNS       int64 `json:"stack_ns"`
	// SavedNS is actual overhead+stack minus the estimate's.
	SavedNS int64 `json:"saved_ns"`
}

func newEstimate() *Estimate { return &Estimate{Label: "estimate", Method: EstimateMethod} }

func (e *Estimate) add(t *Turn) {
	est := t.Estimate
	if est == nil || !est.Continuation {
		e.OverheadNS += t.OverheadNS
		e.StackNS += t.StackNS
		return
	}
	e.Continuations++
	e.OverheadNS += est.OverheadNS
	e.StackNS += est.StackNS
	e.SavedNS += t.OverheadNS + t.StackNS - est.OverheadNS - est.StackNS
}

// TurnEstimate is one HTTP turn as a WebSocket continuation.
type TurnEstimate struct {
	// Continuation is false when the turn counts as it was (see
	// EstimateMethod); the figures then equal the actual ones.
	Continuation bool  `json:"continuation"`
	NewItems     int64 `json:"new_items"`
	NewTokens    int64 `json:"new_tokens"`
	OverheadNS   int64 `json:"overhead_ns"`
	StackNS      int64 `json:"stack_ns"`
	// WSSamples is how many WebSocket cache hits resolve and load were
	// taken from.
	WSSamples int `json:"ws_samples"`
}

// estimateTurn estimates t as a WebSocket continuation of prev (the
// session's previous answered turn, nil for none), with resolve and load
// costed from ref.
func estimateTurn(t, prev *Turn, ref *reference) *TurnEstimate {
	e := &TurnEstimate{OverheadNS: t.OverheadNS, StackNS: t.StackNS}
	if t.Error != "" || prev == nil {
		return e
	}
	render, ok := spanOf(t, api.StageRender)
	prevRender, ok2 := spanOf(prev, api.StageRender)
	if !ok || !ok2 || render.Items == 0 {
		return e
	}
	prevOut, _ := spanOf(prev, api.StageFinalize)
	newItems := render.Items - prevRender.Items - prevOut.Items
	newTokens := render.Tokens - prevRender.Tokens - prevOut.Tokens
	if newItems < 0 || newTokens < 0 || strings.Contains(render.Note, "appended to cached tokens") {
		return e // a new conversation, or already a continuation
	}
	resolveNS, loadNS, samples := ref.means()
	e.Continuation, e.NewItems, e.NewTokens, e.WSSamples = true, newItems, newTokens, samples
	e.OverheadNS, e.StackNS = 0, 0
	for _, s := range t.Spans {
		d := s.DurationNS
		switch s.Name {
		case api.StageParse, api.StageValidate, api.StageSafety:
			d = scale(d, newItems, s.Items)
		case api.StageRender:
			d = scale(d, newTokens, s.Tokens)
		case api.StageResolve:
			d = resolveNS
		case api.StageLoad:
			d = loadNS
		case api.StageStackStateLoad, api.StageStackConfigHop:
			d = 0
		case api.StageStackClassify:
			d = classifyNS(t.Stack, s, newTokens)
		}
		switch api.SpanGroup(s.Name) {
		case api.GroupOverhead:
			e.OverheadNS += d
		case api.GroupAPIStack:
			e.StackNS += d
		}
	}
	return e
}

// scale is d for n units of work, at d's own rate for of units.
func scale(d, n, of int64) int64 {
	if of <= 0 || n >= of {
		return d
	}
	return d * n / of
}

// classifyNS is the modelled classifier's time for tokens, from the
// turn's own stack (apistack.Stack.Classify); a stack that does not parse
// scales the span instead.
func classifyNS(stack string, s api.Span, tokens int64) int64 {
	st, err := apistack.Parse(stack, apistack.Lean, "stack")
	if err != nil || !st.Modelled() {
		return scale(s.DurationNS, tokens, s.Tokens)
	}
	return st.Classify(int(tokens), strings.Contains(s.Note, "pre-sprint")).Nanoseconds()
}

func spanOf(t *Turn, name string) (api.Span, bool) {
	for _, s := range t.Spans {
		if s.Name == name && s.Segment == 0 {
			return s, true
		}
	}
	return api.Span{}, false
}

// referenceSize is how many recent WebSocket cache hits the reference
// keeps.
const referenceSize = 64

// reference keeps what resolve and load cost on recent WebSocket
// continuations that hit the connection cache.
type reference struct {
	resolve, load ring
}

type ring struct {
	v    [referenceSize]int64
	n    int
	next int
}

func (r *ring) add(d int64) {
	r.v[r.next] = d
	r.next = (r.next + 1) % referenceSize
	r.n = min(r.n+1, referenceSize)
}

func (r *ring) mean() int64 {
	if r.n == 0 {
		return 0
	}
	var sum int64
	for i := range r.n {
		sum += r.v[i]
	}
	return sum / int64(r.n)
}

// observe takes a WebSocket turn's cache hits as samples.
func (r *reference) observe(t *Turn) {
	if t.Error != "" {
		return
	}
	res, ok1 := spanOf(t, api.StageResolve)
	load, ok2 := spanOf(t, api.StageLoad)
	if ok1 && ok2 && res.Note == "connection cache" && load.Note == "connection cache" {
		r.resolve.add(res.DurationNS)
		r.load.add(load.DurationNS)
	}
}

func (r *reference) means() (resolveNS, loadNS int64, samples int) {
	return r.resolve.mean(), r.load.mean(), r.resolve.n
}
