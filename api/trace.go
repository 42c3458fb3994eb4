package api

import (
	"strconv"
	"strings"
	"time"
)

// Stage names of the trace contract, in the order the pipeline runs them
// (docs/decisions.md, "Stage order"): validate follows resolve and load,
// because it needs the parent's context.
const (
	StageParse    = "parse"
	StageResolve  = "resolve"
	StageLoad     = "load"
	StageValidate = "validate"
	StageRender   = "render"
	StageSafety   = "safety"
	StageQueue    = "queue"
	StagePrefill  = "prefill"
	StageGenerate = "generate"
	StageFinalize = "finalize"
	// StageCompaction (modelled: the compaction pass) and
	// StageContextWindow (measured) record a span only when they change
	// the context or refuse it (docs/protocol.md, "Compaction" and
	// "Context windows").
	StageCompaction    = "compaction"
	StageContextWindow = "context_window"
)

// Span kinds: measured is real work on this machine, modelled is simulated.
const (
	Measured = "measured"
	Modelled = "modelled"
)

// Span is one stage of one response, as GET /api/traces/{id} returns it.
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
	// Segment is the segment of a paused and resumed response (the
	// WebSocket prototype) the span belongs to; 0, and omitted, for the
	// first segment and for every other response.
	Segment int `json:"segment,omitempty"`
	// Group is the span's waterfall group, SpanGroup(Name): JSON carries
	// it so that no page decides a group from a span's name. MarshalJSON
	// fills it.
	Group string `json:"group,omitempty"`
}

// MarshalJSON writes the span with its group, field by field as its tags
// say, with the fast encoder's AppendString: every trace the engine keeps
// or serves goes through it. A 15-span trace encodes in about 12 µs and 17
// allocations this way, 17 µs and 32 through json.Marshal of the fields
// (encoding/json's own pass over a Marshaler's output is most of what
// remains).
func (s Span) MarshalJSON() ([]byte, error) {
	b := make([]byte, 0, 160+len(s.Note))
	b = append(b, `{"name":`...)
	b = AppendString(b, s.Name)
	b = append(b, `,"start_ns":`...)
	b = strconv.AppendInt(b, s.StartNS, 10)
	b = append(b, `,"duration_ns":`...)
	b = strconv.AppendInt(b, s.DurationNS, 10)
	b = append(b, `,"kind":`...)
	b = AppendString(b, s.Kind)
	b = append(b, `,"items":`...)
	b = strconv.AppendInt(b, s.Items, 10)
	b = append(b, `,"tokens":`...)
	b = strconv.AppendInt(b, s.Tokens, 10)
	b = append(b, `,"bytes":`...)
	b = strconv.AppendInt(b, s.Bytes, 10)
	if s.Note != "" {
		b = append(b, `,"note":`...)
		b = AppendString(b, s.Note)
	}
	if s.Segment != 0 {
		b = append(b, `,"segment":`...)
		b = strconv.AppendInt(b, int64(s.Segment), 10)
	}
	if g := SpanGroup(s.Name); g != "" {
		b = append(b, `,"group":`...)
		b = AppendString(b, g)
	}
	return append(b, '}'), nil
}

// Trace is the engine's record of one response: timings and counts, never
// content. Transport is recorded for display only; no stage reads it.
type Trace struct {
	ResponseID string `json:"response_id"`
	Transport  string `json:"transport"`
	Engine     string `json:"engine"`
	// Replica is the id of the process that served the response, when
	// replicas share a store.
	Replica string `json:"replica,omitempty"`
	// Stack is the modelled API stack the response ran under (a preset's
	// name, or its parameters as JSON); empty when nothing was modelled.
	Stack         string `json:"stack,omitempty"`
	StartedUnixNS int64  `json:"started_unix_ns"`
	Spans         []Span `json:"spans"`
	// Session names the client session the response belongs to: a
	// WebSocket connection, or the HTTP requests sharing a
	// prompt_cache_key, or else a TCP connection (server/request/request.go).
	Session string `json:"session,omitempty"`
	// Client is who sent the request, as its headers say.
	Client *Client `json:"client,omitempty"`
	// Drill names the fault drill that fired on this response, if any.
	Drill string `json:"drill,omitempty"`
	// SteeredBy are the steering submissions the response took
	// (response.steer), and SteeredFrom the response a successor
	// continues with them: the two traces of a hand-over name each other's
	// steering ids (docs/protocol.md, "Steering").
	SteeredBy   []string `json:"steered_by,omitempty"`
	SteeredFrom string   `json:"steered_from,omitempty"`
	// Error is the code of the error that ended the request, if any, and
	// Status its HTTP status (or the status of the WebSocket error frame).
	Error  string `json:"error,omitempty"`
	Status int    `json:"status,omitempty"`
	// Usage is the response's token counts (input, cached, output), once
	// finalize has settled them; nil for a request that never got there.
	Usage *Usage `json:"usage,omitempty"`
	// Shape is what a workload needs of the request and its response:
	// sizes and kinds, never content (docs/workload.md).
	Shape *Shape `json:"shape,omitempty"`
	// Scope is the request's X-Agentloop-Scope (on a WebSocket, the
	// upgrade's), or the scope of its /scope/{id}/v1 mount; empty without one.
	Scope string `json:"scope,omitempty"`
	// Chain is how a create chains, for the report card's grading
	// (package check); nil for a request that never decoded as one.
	Chain *Chain `json:"chain,omitempty"`
}

// Chain is how a create chained: ids and counts, never content.
type Chain struct {
	PreviousResponseID string `json:"previous_response_id,omitempty"`
	// Store is the request's store (true when it left it out).
	Store bool `json:"store"`
	// InputItems counts the request's own input items, ModelItems those
	// of them the model wrote (function and custom tool calls, reasoning,
	// assistant messages): on a continuation, items the previous response
	// already holds.
	InputItems int `json:"input_items"`
	ModelItems int `json:"model_items"`
	// ToolOutputs counts the tool outputs in the whole context the model
	// saw (the parent's included); set once the context is built.
	ToolOutputs int `json:"tool_outputs"`
	// ToolTurns is the scope's K the policy read (0: none).
	ToolTurns int `json:"tool_turns,omitempty"`
}

// Shape is a request's and its response's sizes, for workloads.
type Shape struct {
	// InstructionsTokens is the rendered instructions' size when this
	// request rendered them anew, -1 when a cached parent held them.
	InstructionsTokens int `json:"instructions_tokens"`
	ToolsTokens        int `json:"tools_tokens"`
	Tools              int `json:"tools"`
	// New is the request's new input: the items after the last one the
	// model wrote (all of them on a first request), the latest
	// MaxShapeItems at most, each with its rendered tokens.
	New []ShapeItem `json:"new,omitempty"`
	// Generated is false for a warm-up (generate:false).
	Generated bool `json:"generated"`
	// Calls are the response's function calls' argument tokens.
	Calls []int `json:"calls,omitempty"`
}

// ShapeItem is one input item's kind and rendered tokens. Kind is
// "tool_output", or a message's role ("user", "developer", "system"), or
// the item's type.
type ShapeItem struct {
	Kind   string `json:"kind"`
	Tokens int    `json:"tokens"`
}

// MaxShapeItems bounds a trace's Shape.New.
const MaxShapeItems = 64

// Client is who sent a request: its User-Agent, the originator header
// (Codex sends one) and the OpenAI-Beta header. Headers, never content.
type Client struct {
	UserAgent  string `json:"user_agent,omitempty"`
	Originator string `json:"originator,omitempty"`
	Beta       string `json:"beta,omitempty"`
	// Race is the X-Agentloop-Race header the playground's own races send,
	// "RUN_ID/LANE", so the inspector can tell their sessions apart.
	Race string `json:"race,omitempty"`
}

// HeaderRace tags a request of the playground's own races (Client.Race).
const HeaderRace = "X-Agentloop-Race"

// MaxRaceTag bounds Client.Race, a header any client may send.
const MaxRaceTag = 128

// IsPreInference says whether a stage lies between the first byte of the
// request and the moment it is ready for the scheduler: parse through safety.
func IsPreInference(stage string) bool {
	switch stage {
	case StageParse, StageValidate, StageResolve, StageLoad, StageRender, StageContextWindow, StageSafety:
		return true
	}
	return false
}

// IsOverhead says whether a stage is the API's own work on a request: the
// pre-inference stages and finalize.
func IsOverhead(stage string) bool {
	return IsPreInference(stage) || stage == StageFinalize
}

// PreInference is the time from the first byte to scheduler-ready.
func (t *Trace) PreInference() time.Duration { return t.sum(IsPreInference) }

// Overhead is the API's own work: pre-inference plus finalize.
func (t *Trace) Overhead() time.Duration { return t.sum(IsOverhead) }

func (t *Trace) sum(in func(string) bool) time.Duration {
	var d int64
	for _, s := range t.Spans {
		if in(s.Name) {
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

// Waterfall groups: the parts a response's time is drawn and split in, on
// every page and in a race's split. SpanGroup puts each engine span in one;
// a race adds what the client sees beyond the engine (connect, network,
// tool) and what a fault cost it (recovery).
const (
	GroupConnect      = "connect"
	GroupOverhead     = "overhead"      // measured API work: parse..safety and finalize
	GroupAPIStack     = "api_stack"     // the modelled API stack: the stack_* spans
	GroupQueuePrefill = "queue_prefill" // modelled queue and prefill
	GroupDecode       = "decode"        // modelled generation
	GroupNetwork      = "network"
	GroupTool         = "tool"
	// GroupRecovery is time a fault cost: a race's failed attempts and
	// waits, and the time a drill held a stream (SpanDrill).
	GroupRecovery = "recovery"
)

// SpanGroup is the waterfall group of an engine span, by its name: the one
// place that decides it, for the race's merge, the inspector and the pages
// (each span a page gets carries it as "group"). A name of no group gives "".
func SpanGroup(name string) string {
	switch {
	case IsOverhead(name):
		return GroupOverhead
	case IsStackStage(name):
		return GroupAPIStack
	case name == StageQueue || name == StagePrefill || name == StageCompaction:
		return GroupQueuePrefill
	case name == StageGenerate || name == SpanReasoning:
		return GroupDecode
	case name == SpanDrill:
		return GroupRecovery
	}
	return ""
}

// WaterfallGroup is how a page names a group: Label in a table or a
// tooltip, Legend in the waterfall's legend (empty: not in the legend).
// Modelled groups are always modelled time, drawn hatched.
type WaterfallGroup struct {
	Name     string `json:"name"`
	Label    string `json:"label"`
	Legend   string `json:"legend,omitempty"`
	Modelled bool   `json:"modelled,omitempty"`
}

// GroupPending is what the live race draws before a turn's trace arrives
// (the time to the first token, not yet split), and GroupOther what no
// group holds (the client's own work, waiting).
const (
	GroupPending = "pending"
	GroupOther   = "other"
)

// WaterfallGroups are the groups in the order a turn meets them.
var WaterfallGroups = []WaterfallGroup{
	{Name: GroupConnect, Label: "Connect", Legend: "connect"},
	{Name: GroupOverhead, Label: "API overhead", Legend: "API overhead (measured)"},
	{Name: GroupAPIStack, Label: "API stack", Legend: "API stack (modelled)", Modelled: true},
	{Name: GroupQueuePrefill, Label: "Queue + prefill", Legend: "queue + prefill", Modelled: true},
	{Name: GroupDecode, Label: "Decode", Legend: "decode", Modelled: true},
	{Name: GroupNetwork, Label: "Network", Legend: "network"},
	{Name: GroupTool, Label: "Tool", Legend: "tool"},
	{Name: GroupRecovery, Label: "Recovery", Legend: "recovery (a fault drill: failed attempts, backoff, a held stream)"},
	{Name: GroupPending, Label: "Waiting for the first token", Legend: "waiting for the first token (split once the engine trace arrives)"},
	{Name: GroupOther, Label: "Other (client, waiting)"},
}

// Stack stage names: modelled spans of the hosted API's own work.
const (
	StageStackClassify   = "stack_classify"
	StageStackStateLoad  = "stack_state_load"
	StageStackConfigHop  = "stack_config_hop"
	StageStackSprintHops = "stack_sprint_hops"
	StageStackBilling    = "stack_billing"
)

// IsStackStage says whether a span is a stage of the modelled API stack.
func IsStackStage(name string) bool { return strings.HasPrefix(name, "stack_") }

// EngineBaseline is the trace's engine name of /baseline/v1, the engine
// before the sprint, which pays the pre-sprint stack costs.
const EngineBaseline = "baseline"
