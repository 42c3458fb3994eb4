package core

import (
	"context"
	"encoding/json"
	"time"

	"agentloop/api"
	"agentloop/apistack"
	"agentloop/inference"
	"agentloop/policy"
)

// flight is one request through the pipeline, from its first byte to its
// terminal event. ("Turn" is rollout's word, an agent's turn; here the unit
// is a request, whichever agent turn it serves.)
//
// Its fields are grouped by the stage that writes them, in the order the
// stages run (pipeline.go): a stage reads only the groups above its own,
// so the order one stage relies on shows here. The transport fills in the
// first group; each later group is written by its stage, and in a paused
// prototype response by that stage's append step and by the pause that
// adds the sampled output (prototype.go).
type Flight struct {
	// Set by the transport before the pipeline runs.
	Trace *Trace
	body  []byte         // the request, until parse has decoded it
	Via   Via            // what the transport adds to the pipeline
	stack apistack.Stack // the modelled API stack this request runs under

	parsed    parseOut     // parse (and, in a paused prototype response, parseAppend)
	found     parentFound  // findParent: the connection cache's answer, decided once
	resolved  resolveOut   // resolve
	loaded    loadOut      // load
	built     validateOut  // validate
	rendered  renderOut    // render
	managed   managedOut   // compaction and context_window (compaction.go)
	safety    []SafetyFlag // classify
	reasoning reasoningOut // reasoning (reasoning.go)

	response *api.Response // generate: the response being built
	stream   streamed      // generate: how streaming ended, for finalize
	outcome  Outcome       // finalize

	// The prototype (prototype.go): what one segment of a paused response
	// carries to the next.
	seg segments

	// queued is set for a background response: its id, and the events
	// that went out while it was queued (background.go).
	queued *queuedStart
}

// Via is what the transport a request came on gives the pipeline.
type Via struct {
	// Admit applies a transport's own rules to the decoded envelope, within
	// parse (WebSocket: the message type; HTTP: what it does not serve).
	Admit func(*api.CreateRequest) *api.Error
	// OnParsed, when set, runs once parse has succeeded, between its span
	// and the next (outside every span): HTTP reports its request in
	// flight there, once the body has named its session.
	OnParsed func()
	// Conn is the WebSocket connection the request came on, as the
	// pipeline and its hooks see it; nil over HTTP.
	Conn Conn
	// Prototype: the connection asked for the prototype, so a response
	// pauses after a sampled function call (prototype.go).
	Prototype bool
	// BetweenItems, when set, is asked after each output item closes
	// whether the response stops there and hands over (hooks.go).
	BetweenItems func(fl *Flight) bool
	// Steering, when set, takes response.steer input while the response
	// is in flight (steer.go).
	Steering *Steering
}

// Conn is all the pipeline, the drills and the prototype ask of a
// WebSocket connection: its cache, its socket and its queue. The lane a
// request runs on implements it (server/wsmode/lanes.go), so no hook adds
// methods to the transport's types.
type Conn interface {
	// ParentFor is the connection cache's answer to previous_response_id:
	// the cached response it continues, or nil, whether the cache held
	// a response to compare against at all, and whether the state budget
	// dropped the one it names (statebudget.go).
	ParentFor(id string) (parent *ChainState, held, dropped bool)
	// Drop closes the socket at once, with no close frame (the
	// drop-mid-stream drill).
	Drop()
	// NextMessage waits for the connection's next queued message, for a
	// paused prototype response; why says how the wait ended.
	NextMessage(ctx, stop context.Context, expired <-chan time.Time) (msg Message, why WaitEnd)
	// SendError writes a request-level error frame on the request's lane.
	SendError(err *api.Error)
}

// Message is one message a connection queued: its body, when its first
// byte arrived, and the error it gets instead of running, if any.
type Message struct {
	Body    []byte
	Started time.Time
	Reply   *api.Error
}

// WaitEnd says how waiting for the next message ended.
type WaitEnd int

const (
	WaitMessage WaitEnd = iota
	WaitGone            // the client went away
	WaitStopped         // the engine is stopping
	WaitExpired         // the pause outlived its limit
)

// parseOut is what parse decoded.
type parseOut struct {
	req       *api.CreateRequest
	items     []api.Item // the request's new input items
	partition string     // the prompt_cache_key; set even if the input is bad
	seed      int64
	toolsSum  toolsSum // of req.Tools, for the caches kept per tools
	// toolsChecked: parse held the tools to api.CheckTools, so resolve
	// need not again (input_tokens decodes without parse's rules).
	toolsChecked bool
}

// parentFound is findParent's one decision about previous_response_id:
// whether the connection cache holds the parent. resolve and load read it
// and never compare the id again.
type parentFound struct {
	parent *ChainState // the connection cache's hit, or nil
	// held: the connection cache held a response when asked (a miss is
	// counted only then).
	held bool
	// dropped: the state budget dropped the parent named (its load span
	// says so, for the inspector).
	dropped bool
}

// resolveOut is the resolved model configuration.
type resolveOut struct {
	model *resolvedModel
	cold  bool // no cache held it: the config hop is paid
}

// loadOut is the parent, wherever load found it.
type loadOut struct {
	parent *ChainState
	bytes  int // the bytes of a parent loaded from the store (the state-load hop's work)
	// conversation is the conversation the request continues, whose items
	// are the parent's context, and to which its input and output are
	// appended (conversation.go); "" when it names none.
	conversation string
}

// validateOut is the reconstructed context, every reference resolved and
// every tool output checked.
type validateOut struct {
	context    []ctxItem
	inputStart int // the first item of this request's own input
	// appended is the first item the latest response.append added (the
	// prototype's validateAppend); render reads from it.
	appended int
}

// renderOut is the rendered prompt and what rendering it cost.
type renderOut struct {
	tokens []int
	fresh  int // the first context item rendered anew, and so classified
	// freshTokens are the tokens rendered (and so classified) anew.
	freshTokens int
	// For the trace's Shape: each context item's rendered tokens from
	// fresh on, and the instructions' (-1 when a parent held them).
	itemTokens         []int
	instructionsTokens int
	// prefixLen is how many of tokens are the instructions' and the
	// tools', the prefix sessions of one agent share (statepack.go).
	prefixLen int
}

// instructionsText is the request's instructions, "" when it has none.
func (fl *Flight) instructionsText() string {
	if fl.parsed.req.Instructions != nil {
		return *fl.parsed.req.Instructions
	}
	return ""
}

// freshFrom is the index of the first context item this engine has not
// already rendered and classified: the new input after an in-memory parent,
// or 0 when the whole context must be processed.
func (fl *Flight) freshFrom() int {
	if fl.loaded.parent != nil && fl.loaded.parent.tokens != nil {
		return fl.built.inputStart
	}
	return 0
}

// policyRequest is what the model sees; toolTurns, when set, gives a
// scope's K (Shared.ToolTurns).
func (fl *Flight) policyRequest(toolTurns func(scope string) int) *policy.Request {
	pr := &policy.Request{Tools: fl.resolved.model.tools, ToolChoice: fl.parsed.req.ToolChoiceName(), Seed: fl.parsed.seed, Metadata: fl.parsed.req.Metadata}
	if fl.parsed.req.Instructions != nil {
		pr.Instructions = *fl.parsed.req.Instructions
	}
	pr.Items = make([]policy.Item, len(fl.built.context))
	outputs := 0
	for i := range fl.built.context {
		it := &fl.built.context[i].Item
		if it.Type == api.TypeFunctionCallOutput || it.Type == api.TypeCustomToolCallOutput {
			outputs++
		}
		pr.Items[i] = policy.Item{Type: it.Type, Role: it.Role, Name: it.Name, Arguments: it.Arguments,
			CallID: it.CallID, Namespace: it.Namespace}
		switch it.Type {
		case api.TypeMessage:
			pr.Items[i].Text = it.Text()
		case api.TypeFunctionCallOutput:
			pr.Items[i].Output = it.Text()
		case api.TypeCustomToolCallOutput:
			pr.Items[i].Output = api.OutputText(it.Output)
		}
	}
	pr.Format = textFormat(fl.parsed.req.Text)
	pr.Reasoning = fl.reasoning.on
	if fl.parsed.req.IgnoreEOS && fl.parsed.req.MaxOutputTokens != nil {
		pr.ExactTokens = *fl.parsed.req.MaxOutputTokens
	}
	if toolTurns != nil && fl.Trace.Scope != "" {
		pr.ToolTurns = toolTurns(fl.Trace.Scope)
	}
	if c := fl.Trace.Chain; c != nil {
		c.ToolOutputs, c.ToolTurns = outputs, pr.ToolTurns
	}
	return pr
}

// segments is what a prototype response carries from one segment to the
// next.
type segments struct {
	held    *inference.Generation // the paused segment, keeping its batch slot
	earlier []ctxItem             // output items of the segments before the current one
	sent    int                   // output tokens those segments streamed
	input   int                   // prompt tokens prefilled by all segments so far
}

// textFormat is the request's text.format for the policy (parse has
// checked it against the hosted API's rules); plain text without one.
func textFormat(text json.RawMessage) policy.TextFormat {
	var t struct {
		Format *struct {
			Type   string         `json:"type"`
			Name   string         `json:"name"`
			Schema map[string]any `json:"schema"`
			Strict *bool          `json:"strict"`
		} `json:"format"`
	}
	if len(text) == 0 || json.Unmarshal(text, &t) != nil || t.Format == nil {
		return policy.TextFormat{}
	}
	f := t.Format
	return policy.TextFormat{Type: f.Type, Name: f.Name, Schema: f.Schema, Strict: f.Strict != nil && *f.Strict}
}
