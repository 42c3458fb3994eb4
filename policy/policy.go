package policy

import (
	"strings"

	"agentloop/inference"
	"agentloop/scenario"
	"agentloop/workload"
)

// Item is one input item as a policy sees it: the engine flattens the wire
// shapes into this. Type is "message", "function_call", "function_call_output",
// "reasoning", "custom_tool_call" or "custom_tool_call_output". For messages
// Text holds all text parts joined; for custom tool calls Arguments holds the
// raw input.
type Item struct {
	Type, Role, Text, Name, Arguments, CallID, Output, Namespace string
}

// Tool is a function or custom tool offered to the model. The engine drops
// hosted tools before a policy sees the request.
type Tool struct {
	// Type is ToolFunction ("" means it too) or ToolCustom.
	Type                         string
	Name, Description, Namespace string
	Parameters                   map[string]any // a function's JSON Schema of the arguments
	// Grammar is a custom tool's input format when it is a grammar
	// (format {type: "grammar", syntax, definition}); nil for free text.
	Grammar *Grammar
}

// Tool types.
const (
	ToolFunction = "function"
	ToolCustom   = "custom"
)

// Grammar is a custom tool's grammar: Syntax is "lark" or "regex".
type Grammar struct {
	Syntax, Definition string
}

// TextFormat is the request's text.format: what a message must be.
type TextFormat struct {
	// Type is FormatText ("" means it too), FormatJSONObject or
	// FormatJSONSchema.
	Type string
	// Schema (json_schema) is the decoded schema; api.CheckSchema has
	// accepted it. Name and Strict are as the request gave them.
	Schema map[string]any
	Name   string
	Strict bool
}

// Text format types, as text.format.type spells them.
const (
	FormatText       = "text"
	FormatJSONObject = "json_object"
	FormatJSONSchema = "json_schema"
)

// Request is what a policy decides on.
type Request struct {
	Instructions string
	Items        []Item
	Tools        []Tool
	// ToolChoice is "auto" (or ""), "none", "required", or the name of a
	// tool (function or custom) that must be called.
	ToolChoice string
	// Format is text.format; the zero value is plain text.
	Format      TextFormat
	Seed        int64
	ExactTokens int // > 0: reply with a message of exactly this many tokens (load tests: ignore_eos)
	// Metadata is the request's metadata; a replayed workload's turn
	// carries its reply there (workload.ReplyKey).
	Metadata map[string]string
	// Reasoning: the request asks for a reasoning phase (reasoning.effort),
	// so the reply carries a ReasoningSummary.
	Reasoning bool
	// ToolTurns is K, the tool turns of the request's scope (the report
	// card's, api.ScopeSpec): while the context holds fewer than K tool
	// outputs, the chat policy calls one of the function tools (the best
	// match for the task, else the first) instead of answering; 0: as
	// usual.
	ToolTurns int
}

// Output item types.
const (
	OutputMessage        = "message"
	OutputFunctionCall   = "function_call"
	OutputCustomToolCall = "custom_tool_call"
)

// OutputItem is one item the model emits: a message, a function call or a
// custom tool call (whose Arguments are its input text).
type OutputItem struct {
	Type                             string // OutputMessage, OutputFunctionCall or OutputCustomToolCall
	Text, Name, Namespace, Arguments string
	// Pieces, when set, are the token pieces of what the item streams (Text
	// for a message, Arguments for a call), one per token, so the engine
	// need not tokenize it again.
	Pieces []string
	// Filler, in an exact-length reply (Request.ExactTokens), is the number
	// of filler tokens that follow Text and Pieces. They are written only
	// as they stream (AppendFiller), so a long reply is held as its head
	// and a count, not as its text. The first is trimmed when Text is
	// empty.
	Filler int
}

// FullText returns the whole text of an item with filler: what it streams.
func (o *OutputItem) FullText() string {
	text := o.Text
	if o.Type == OutputFunctionCall || o.Type == OutputCustomToolCall {
		text = o.Arguments
	}
	if o.Filler == 0 {
		return text
	}
	return string(AppendFiller([]byte(text), 0, o.Filler, text == ""))
}

// Reply is everything the model emits for one response, in order.
type Reply struct {
	Items []OutputItem
	// ReasoningSummary is the summary of the reasoning done before Items,
	// written when the request reasons (Request.Reasoning): the text only;
	// how many reasoning tokens it took is the engine's to decide.
	ReasoningSummary string
	ReasoningTokens  int // the reasoning tokens a replayed workload turn recorded; 0: the engine decides
}

// Policy decides what the model says or calls. Respond must be deterministic
// for a request (including its Seed) and safe for concurrent use.
type Policy interface {
	Respond(req *Request) Reply
}

// NewRouter returns the policy the engine runs: the workload policy when the
// request's metadata carries a replayed turn's reply (workload.ReplyKey),
// the scenario policy when the conversation carries an
// "agentloop-scenario: NAME seed: N" marker naming a known scenario (in its
// first developer or system message, or in the instructions), the chat
// policy otherwise.
func NewRouter(tok *inference.Tokenizer) Policy {
	return &router{chat: NewChatPolicy(tok)}
}

type router struct {
	chat Policy
}

func (r *router) Respond(req *Request) Reply {
	return withReasoningSummary(req, r.pick(req))
}

func (r *router) pick(req *Request) Reply {
	if spec, ok := req.Metadata[workload.ReplyKey]; ok {
		return playWorkload(spec, req)
	}
	if sc, seed, ok := scenarioOf(req); ok {
		return playScenario(sc, seed, req)
	}
	return r.chat.Respond(req)
}

// scenarioOf finds the rollout a request belongs to, if any.
func scenarioOf(req *Request) (*scenario.Scenario, int64, bool) {
	for _, text := range markerCandidates(req) {
		if name, seed, ok := scenario.ParseMarker(text); ok {
			if sc, ok := scenario.Lookup(name); ok {
				return sc, seed, true
			}
		}
	}
	return nil, 0, false
}

// markerCandidates returns the texts that may carry a scenario marker: the
// first developer or system message, then the instructions.
func markerCandidates(req *Request) []string {
	var out []string
	for _, it := range req.Items {
		if it.Type == "message" && (it.Role == "developer" || it.Role == "system") {
			out = append(out, it.Text)
			break
		}
	}
	if req.Instructions != "" {
		out = append(out, req.Instructions)
	}
	return out
}

// lastUserText returns the text of the conversation's last user message.
func lastUserText(items []Item) string {
	for i := len(items) - 1; i >= 0; i-- {
		if items[i].Type == "message" && items[i].Role == "user" {
			return strings.TrimSpace(items[i].Text)
		}
	}
	return ""
}

func isCall(it Item) bool { return it.Type == "function_call" || it.Type == "custom_tool_call" }
func isOutput(it Item) bool {
	return it.Type == "function_call_output" || it.Type == "custom_tool_call_output"
}

// answeredCall is a tool call and the output the client returned for it.
type answeredCall struct {
	Name, Arguments, Output string
}

// trailingOutputs returns the tool outputs that end the conversation, each
// with its call, or nil when the last item is not a tool output.
func trailingOutputs(items []Item) []answeredCall {
	start := len(items)
	for start > 0 && isOutput(items[start-1]) {
		start--
	}
	if start == len(items) {
		return nil
	}
	var out []answeredCall
	for _, o := range items[start:] {
		ac := answeredCall{Output: o.Output}
		for i := start - 1; i >= 0; i-- {
			if isCall(items[i]) && items[i].CallID == o.CallID {
				ac.Name, ac.Arguments = items[i].Name, items[i].Arguments
				break
			}
		}
		out = append(out, ac)
	}
	return out
}
