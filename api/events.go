package api

import (
	"encoding/json"
	"slices"
)

// Stream event types.
const (
	EventCreated          = "response.created"
	EventInProgress       = "response.in_progress"
	EventCompleted        = "response.completed"
	EventIncomplete       = "response.incomplete"
	EventFailed           = "response.failed"
	EventOutputItemAdded  = "response.output_item.added"
	EventOutputItemDone   = "response.output_item.done"
	EventContentPartAdded = "response.content_part.added"
	EventContentPartDone  = "response.content_part.done"
	EventOutputTextDelta  = "response.output_text.delta"
	EventOutputTextDone   = "response.output_text.done"
	EventArgumentsDelta   = "response.function_call_arguments.delta"
	EventArgumentsDone    = "response.function_call_arguments.done"
	EventError            = "error"
	// Custom tool calls and reasoning summaries (docs/protocol.md, "Events
	// and their order").
	EventCustomToolCallInputDelta  = "response.custom_tool_call_input.delta"
	EventCustomToolCallInputDone   = "response.custom_tool_call_input.done"
	EventReasoningSummaryPartAdded = "response.reasoning_summary_part.added"
	EventReasoningSummaryPartDone  = "response.reasoning_summary_part.done"
	EventReasoningSummaryTextDelta = "response.reasoning_summary_text.delta"
	EventReasoningSummaryTextDone  = "response.reasoning_summary_text.done"
	ClientResponseCreate           = "response.create"
	ClientResponseProcessed        = "response.processed"
	// The legacy long-running-response prototype (docs/decisions.md, "The
	// prototype is one response in segments"), served
	// only on a WebSocket opened with OpenAIBetaPrototype: response.done
	// pauses a response after a function call, response.append resumes it.
	EventDone            = "response.done"
	ClientResponseAppend = "response.append"
	OpenAIBetaPrototype  = "responses_websockets=2026-02-04"
)

// TerminalEvents are the event types that end a response's stream. The
// explorer page reads them from here (views/explorer.templ).
var TerminalEvents = []string{EventCompleted, EventFailed, EventIncomplete, EventError}

// IsTerminal reports whether an event type ends a response's stream.
func IsTerminal(typ string) bool { return slices.Contains(TerminalEvents, typ) }

// The Append* functions below are the fast event encoder: each appends one
// event's JSON to b without reflection. Response snapshots are passed in
// already encoded, because they are encoded once per lifecycle event.

func appendHead(b []byte, typ string, seq int) []byte {
	b = append(b, `{"type":"`...)
	b = append(b, typ...)
	b = append(b, `","sequence_number":`...)
	return appendInt(b, int64(seq))
}

// AppendResponseEvent appends created/in_progress/completed/incomplete/failed.
func AppendResponseEvent(b []byte, typ string, seq int, response []byte) []byte {
	b = appendHead(b, typ, seq)
	b = append(b, `,"response":`...)
	b = append(b, response...)
	return append(b, '}')
}

// AppendOutputItemEvent appends output_item.added or output_item.done.
func AppendOutputItemEvent(b []byte, typ string, seq, outputIndex int, item *Item) []byte {
	b = appendHead(b, typ, seq)
	b = append(b, `,"output_index":`...)
	b = appendInt(b, int64(outputIndex))
	b = append(b, `,"item":`...)
	b = item.AppendJSON(b)
	return append(b, '}')
}

func appendItemRef(b []byte, itemID string, outputIndex int) []byte {
	b = append(b, `,"item_id":`...)
	b = AppendString(b, itemID)
	b = append(b, `,"output_index":`...)
	return appendInt(b, int64(outputIndex))
}

// AppendContentPartEvent appends content_part.added or content_part.done for
// an output_text part.
func AppendContentPartEvent(b []byte, typ string, seq int, itemID string, outputIndex, contentIndex int, text string) []byte {
	b = appendHead(b, typ, seq)
	b = appendItemRef(b, itemID, outputIndex)
	b = append(b, `,"content_index":`...)
	b = appendInt(b, int64(contentIndex))
	b = append(b, `,"part":{"type":"output_text","annotations":[],"logprobs":[],"text":`...)
	b = AppendString(b, text)
	return append(b, "}}"...)
}

// AppendTextDelta appends response.output_text.delta: the hot path.
func AppendTextDelta(b []byte, seq int, itemID string, outputIndex, contentIndex int, delta string) []byte {
	b = appendHead(b, EventOutputTextDelta, seq)
	b = appendItemRef(b, itemID, outputIndex)
	b = append(b, `,"content_index":`...)
	b = appendInt(b, int64(contentIndex))
	b = append(b, `,"delta":`...)
	b = AppendString(b, delta)
	return append(b, `,"logprobs":[]}`...)
}

// AppendTextDone appends response.output_text.done.
func AppendTextDone(b []byte, seq int, itemID string, outputIndex, contentIndex int, text string) []byte {
	b = appendHead(b, EventOutputTextDone, seq)
	b = appendItemRef(b, itemID, outputIndex)
	b = append(b, `,"content_index":`...)
	b = appendInt(b, int64(contentIndex))
	b = append(b, `,"text":`...)
	b = AppendString(b, text)
	return append(b, `,"logprobs":[]}`...)
}

// AppendArgumentsDelta appends response.function_call_arguments.delta.
func AppendArgumentsDelta(b []byte, seq int, itemID string, outputIndex int, delta string) []byte {
	b = appendHead(b, EventArgumentsDelta, seq)
	b = appendItemRef(b, itemID, outputIndex)
	b = append(b, `,"delta":`...)
	b = AppendString(b, delta)
	return append(b, '}')
}

// AppendArgumentsDone appends response.function_call_arguments.done with
// the call's name, which the SDKs' types require.
func AppendArgumentsDone(b []byte, seq int, itemID string, outputIndex int, name, arguments string) []byte {
	b = appendHead(b, EventArgumentsDone, seq)
	b = appendItemRef(b, itemID, outputIndex)
	b = append(b, `,"name":`...)
	b = AppendString(b, name)
	b = append(b, `,"arguments":`...)
	b = AppendString(b, arguments)
	return append(b, '}')
}

// AppendCustomToolCallInputDelta appends
// response.custom_tool_call_input.delta.
func AppendCustomToolCallInputDelta(b []byte, seq int, itemID string, outputIndex int, delta string) []byte {
	b = appendHead(b, EventCustomToolCallInputDelta, seq)
	b = appendItemRef(b, itemID, outputIndex)
	b = append(b, `,"delta":`...)
	b = AppendString(b, delta)
	return append(b, '}')
}

// AppendCustomToolCallInputDone appends response.custom_tool_call_input.done
// with the whole input.
func AppendCustomToolCallInputDone(b []byte, seq int, itemID string, outputIndex int, input string) []byte {
	b = appendHead(b, EventCustomToolCallInputDone, seq)
	b = appendItemRef(b, itemID, outputIndex)
	b = append(b, `,"input":`...)
	b = AppendString(b, input)
	return append(b, '}')
}

// appendSummaryRef appends the item, output index and summary index a
// reasoning summary event refers to.
func appendSummaryRef(b []byte, itemID string, outputIndex, summaryIndex int) []byte {
	b = appendItemRef(b, itemID, outputIndex)
	b = append(b, `,"summary_index":`...)
	return appendInt(b, int64(summaryIndex))
}

// AppendReasoningSummaryPartEvent appends
// response.reasoning_summary_part.added or .done for the summary part at
// summaryIndex, holding text (empty when added).
func AppendReasoningSummaryPartEvent(b []byte, typ string, seq int, itemID string, outputIndex, summaryIndex int, text string) []byte {
	b = appendHead(b, typ, seq)
	b = appendSummaryRef(b, itemID, outputIndex, summaryIndex)
	b = append(b, `,"part":`...)
	b = appendSummaryPart(b, text)
	return append(b, '}')
}

// AppendReasoningSummaryTextDelta appends
// response.reasoning_summary_text.delta.
func AppendReasoningSummaryTextDelta(b []byte, seq int, itemID string, outputIndex, summaryIndex int, delta string) []byte {
	b = appendHead(b, EventReasoningSummaryTextDelta, seq)
	b = appendSummaryRef(b, itemID, outputIndex, summaryIndex)
	b = append(b, `,"delta":`...)
	b = AppendString(b, delta)
	return append(b, '}')
}

// AppendReasoningSummaryTextDone appends response.reasoning_summary_text.done.
func AppendReasoningSummaryTextDone(b []byte, seq int, itemID string, outputIndex, summaryIndex int, text string) []byte {
	b = appendHead(b, EventReasoningSummaryTextDone, seq)
	b = appendSummaryRef(b, itemID, outputIndex, summaryIndex)
	b = append(b, `,"text":`...)
	b = AppendString(b, text)
	return append(b, '}')
}

// Event is a decoded server event, for clients. Fields not relevant to an
// event's type stay zero.
type Event struct {
	Type           string          `json:"type"`
	SequenceNumber int             `json:"sequence_number"`
	Response       *Response       `json:"response"`
	OutputIndex    int             `json:"output_index"`
	ContentIndex   int             `json:"content_index"`
	ItemID         string          `json:"item_id"`
	Item           json.RawMessage `json:"item"`
	Delta          string          `json:"delta"`
	Text           string          `json:"text"`
	Arguments      string          `json:"arguments"`
	Name           string          `json:"name"` // function_call_arguments.done
	// Input is a custom tool call's input (custom_tool_call_input.done).
	Input string `json:"input"`
	// SummaryIndex and Part: reasoning summary events.
	SummaryIndex int             `json:"summary_index"`
	Part         json.RawMessage `json:"part"`
	StreamID     string          `json:"stream_id"`
	// Request-level WebSocket errors are nested with a status; in-stream
	// errors are flat (Code, Message, Param at the top).
	Status  int             `json:"status"`
	Error   *WireError      `json:"error"`
	Code    string          `json:"code"`
	Message string          `json:"message"`
	Param   string          `json:"param"`
	Raw     json.RawMessage `json:"-"`
}

// WireError is the JSON body of an error.
type WireError struct {
	Type    string            `json:"type"`
	Code    string            `json:"code"`
	Message string            `json:"message"`
	Param   string            `json:"param"`
	Headers map[string]string `json:"headers,omitempty"`
}

// DecodeEvent decodes one server event.
func DecodeEvent(b []byte) (*Event, error) {
	var ev Event
	if err := json.Unmarshal(b, &ev); err != nil {
		return nil, err
	}
	ev.Raw = b
	return &ev, nil
}

// AsError returns the event's error, nested or flat, or nil.
func (ev *Event) AsError() *Error {
	if ev.Type != EventError {
		return nil
	}
	if ev.Error != nil {
		return &Error{Status: ev.Status, Type: ev.Error.Type, Code: ev.Error.Code, Message: ev.Error.Message, Param: ev.Error.Param,
			Headers: ev.Error.Headers}
	}
	return &Error{Status: ev.Status, Type: "server_error", Code: ev.Code, Message: ev.Message, Param: ev.Param}
}
