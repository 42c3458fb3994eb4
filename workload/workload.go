package workload

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Version is the format version this package writes. It reads every
// version from MinVersion on; a workload keeps the version it was written
// in (its canonical form and its id do not change), and only version 2
// holds a turn's reasoning_tokens.
const (
	Version    = 2
	MinVersion = 1
)

// Bounds of a workload. They keep a replay within what one engine context
// holds and a decoder's work within a small multiple of its input.
const (
	MaxTurns          = 1000      // turns per workload
	MaxInputsPerTurn  = 64        // new input items per turn
	MaxCallsPerTurn   = 32        // tool calls per turn (the reply spec fits in 512 metadata characters)
	MaxItemTokens     = 200_000   // tokens of one input item, of one turn's output, of the instructions or the tools
	MaxTotalTokens    = 1_000_000 // every input and output token of the session, instructions and tools included
	MaxToolTimeMs     = 600_000   // client time between two turns: ten minutes
	MaxBytes          = 1 << 20   // an encoded workload, as uploaded and as stored (Canonical): about 100 bytes a turn, so a thousand large turns fit
	MaxSourceLen      = 64        // characters of source
	MaxDescriptionLen = 256       // characters of description
	MaxTools          = 1000      // tool definitions a request offers
)

// Input kinds.
const (
	KindUserMessage = "user_message" // a message the user (or the client on the user's behalf) adds
	KindToolOutput  = "tool_output"  // the output of one of the previous turn's tool calls
)

// Workload is one recorded agent session's shape.
type Workload struct {
	Version int `json:"version"`
	// Source says where the workload came from ("inspector", "codex-0.171.0",
	// "hand"...); Description is free text for people. Neither is replayed.
	Source      string `json:"source,omitempty"`
	Description string `json:"description,omitempty"`
	// InstructionsTokens is the size of the instructions (or the system or
	// developer message) every request carries; ToolsTokens the size of the
	// tool definitions, and Tools how many there are.
	InstructionsTokens int    `json:"instructions_tokens"`
	ToolsTokens        int    `json:"tools_tokens"`
	Tools              int    `json:"tools"`
	Turns              []Turn `json:"turns"`
}

// Turn is one request and its response.
type Turn struct {
	// Input is what the request adds to the conversation, in order.
	Input []Input `json:"input"`
	// InputTokens, when known, is the whole prompt's size as the recording
	// engine's usage counted it. Replays do not need it; comparisons do.
	InputTokens int `json:"input_tokens,omitempty"`
	// OutputTokens counts every output token: the reasoning's, the
	// message's and the calls' arguments (each call at least 1).
	OutputTokens int `json:"output_tokens"`
	// ReasoningTokens, when known (version 2), is the part of OutputTokens
	// the model spent reasoning, as the API's usage counts it
	// (output_tokens_details.reasoning_tokens). It leaves at least one
	// token for the message or the calls.
	ReasoningTokens int    `json:"reasoning_tokens,omitempty"`
	Calls           []Call `json:"calls,omitempty"`
	// ToolTimeMs is the client's time between receiving this turn's
	// response and sending the next request: tool runs and the client's own
	// work. The last turn has none.
	ToolTimeMs float64 `json:"tool_time_ms,omitempty"`
}

// Input is one new input item.
type Input struct {
	Kind   string `json:"kind"`
	Tokens int    `json:"tokens"`
}

// Call is one tool call of a response.
type Call struct {
	ArgumentTokens int `json:"argument_tokens"`
}

// Error is a decoding or validation error; Field names where, in the
// form "turns[3].calls[0].argument_tokens".
type Error struct {
	Field   string
	Message string
}

func (e *Error) Error() string {
	if e.Field == "" {
		return "workload: " + e.Message
	}
	return "workload: " + e.Field + ": " + e.Message
}

func errorf(field, format string, args ...any) *Error {
	return &Error{Field: field, Message: fmt.Sprintf(format, args...)}
}

// Decode reads one workload from r, strictly: unknown fields, a second
// value, sizes out of bounds and impossible sequences are errors that name
// the turn and the field.
func Decode(r io.Reader) (*Workload, error) {
	b, err := io.ReadAll(io.LimitReader(r, MaxBytes+1))
	if err != nil {
		return nil, &Error{Message: "reading: " + err.Error()}
	}
	return Parse(b)
}

// Parse is Decode of bytes in memory.
func Parse(b []byte) (*Workload, error) {
	if len(b) > MaxBytes {
		return nil, errorf("", "larger than %d bytes", MaxBytes)
	}
	var top struct {
		Version            *int              `json:"version"`
		Source             string            `json:"source"`
		Description        string            `json:"description"`
		InstructionsTokens int               `json:"instructions_tokens"`
		ToolsTokens        int               `json:"tools_tokens"`
		Tools              int               `json:"tools"`
		Turns              []json.RawMessage `json:"turns"`
	}
	if err := strict(b, &top); err != nil {
		return nil, err
	}
	if top.Version == nil {
		return nil, errorf("version", "missing; %s", readable)
	}
	if err := checkVersion(*top.Version); err != nil {
		return nil, err
	}
	if len(top.Turns) > MaxTurns {
		return nil, errorf("turns", "%d turns; a workload holds at most %d", len(top.Turns), MaxTurns)
	}
	w := &Workload{Version: *top.Version, Source: top.Source, Description: top.Description,
		InstructionsTokens: top.InstructionsTokens, ToolsTokens: top.ToolsTokens, Tools: top.Tools,
		Turns: make([]Turn, len(top.Turns))}
	for i, raw := range top.Turns {
		if err := strict(raw, &w.Turns[i]); err != nil {
			var e *Error
			if errors.As(err, &e) {
				e.Field = join(fmt.Sprintf("turns[%d]", i), e.Field)
			}
			return nil, err
		}
	}
	if err := exactNames(b); err != nil {
		return nil, err
	}
	if err := w.Validate(); err != nil {
		return nil, err
	}
	if _, err := w.Canonical(); err != nil {
		return nil, err
	}
	return w, nil
}

// ParseStored is Parse of a workload a store kept: a copy stored before
// workloads were stored in their compact form (indented, or as
// PostgreSQL's jsonb text) is compacted first, so whatever was accepted
// decodes again.
func ParseStored(b []byte) (*Workload, error) {
	if len(b) > MaxBytes {
		var buf bytes.Buffer
		if json.Compact(&buf, b) == nil {
			b = buf.Bytes()
		}
	}
	return Parse(b)
}

// strict decodes one JSON value into v, refusing unknown fields and
// trailing data, and names the field of a type error.
func strict(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var te *json.UnmarshalTypeError
		var se *json.SyntaxError
		switch {
		case errors.As(err, &te):
			return errorf(fieldPath(te.Field), "expected %s, got %s", te.Type.Kind(), te.Value)
		case errors.As(err, &se):
			return errorf("", "invalid JSON at byte %d: %s", se.Offset, se.Error())
		case strings.HasPrefix(err.Error(), "json: unknown field "):
			name, _ := strconv.Unquote(strings.TrimPrefix(err.Error(), "json: unknown field "))
			return errorf(name, "unknown field")
		case errors.Is(err, io.EOF):
			return errorf("", "empty; expected a JSON object")
		}
		return errorf("", "invalid JSON: %s", err.Error())
	}
	if dec.More() {
		return errorf("", "trailing data after the JSON object")
	}
	return nil
}

// fieldPath turns encoding/json's "input.tokens" into "input[].tokens";
// encoding/json does not say which element.
func fieldPath(f string) string {
	parts := strings.Split(f, ".")
	for i, p := range parts[:max(len(parts)-1, 0)] {
		if p == "input" || p == "calls" || p == "turns" {
			parts[i] = p + "[]"
		}
	}
	return strings.Join(parts, ".")
}

func join(a, b string) string {
	if b == "" {
		return a
	}
	return a + "." + b
}

// Validate checks a workload's bounds and sequence: sizes in range, every
// tool call answered by one tool output in the next turn, every other turn
// opened by a user message.
func (w *Workload) Validate() error {
	if err := checkVersion(w.Version); err != nil {
		return err
	}
	if utf8.RuneCountInString(w.Source) > MaxSourceLen {
		return errorf("source", "at most %d characters", MaxSourceLen)
	}
	if utf8.RuneCountInString(w.Description) > MaxDescriptionLen {
		return errorf("description", "at most %d characters", MaxDescriptionLen)
	}
	if err := tokens("instructions_tokens", w.InstructionsTokens, 0); err != nil {
		return err
	}
	if err := tokens("tools_tokens", w.ToolsTokens, 0); err != nil {
		return err
	}
	if w.Tools < 0 || w.Tools > MaxTools {
		return errorf("tools", "must be 0 to %d, got %d", MaxTools, w.Tools)
	}
	if len(w.Turns) == 0 {
		return errorf("turns", "a workload needs at least one turn")
	}
	if len(w.Turns) > MaxTurns {
		return errorf("turns", "%d turns; a workload holds at most %d", len(w.Turns), MaxTurns)
	}
	total := w.InstructionsTokens + w.ToolsTokens
	for i := range w.Turns {
		t := &w.Turns[i]
		at := func(f string) string { return fmt.Sprintf("turns[%d].%s", i, f) }
		if len(t.Input) == 0 {
			return errorf(at("input"), "a turn needs at least one new input item")
		}
		if len(t.Input) > MaxInputsPerTurn {
			return errorf(at("input"), "%d items; at most %d", len(t.Input), MaxInputsPerTurn)
		}
		outputs := 0
		for j, in := range t.Input {
			f := at(fmt.Sprintf("input[%d]", j))
			switch in.Kind {
			case KindToolOutput:
				outputs++
			case KindUserMessage:
			default:
				return errorf(f+".kind", "unknown kind %q; expected %q or %q", in.Kind, KindUserMessage, KindToolOutput)
			}
			if err := tokens(f+".tokens", in.Tokens, 1); err != nil {
				return err
			}
			total += in.Tokens
		}
		calls := 0
		if i > 0 {
			calls = len(w.Turns[i-1].Calls)
		}
		if outputs != calls {
			if i == 0 {
				return errorf(at("input"), "the first turn has %d tool outputs; no call came before it", outputs)
			}
			return errorf(at("input"), "%d tool outputs for the previous turn's %d calls", outputs, calls)
		}
		if calls == 0 && t.Input[0].Kind != KindUserMessage {
			return errorf(at("input[0].kind"), "a turn that answers no calls starts with a %q", KindUserMessage)
		}
		if t.InputTokens < 0 || t.InputTokens > MaxTotalTokens {
			return errorf(at("input_tokens"), "must be 0 to %d, got %d", MaxTotalTokens, t.InputTokens)
		}
		if err := tokens(at("output_tokens"), t.OutputTokens, 1); err != nil {
			return err
		}
		if len(t.Calls) > MaxCallsPerTurn {
			return errorf(at("calls"), "%d calls; at most %d", len(t.Calls), MaxCallsPerTurn)
		}
		args := 0
		for j, c := range t.Calls {
			if err := tokens(at(fmt.Sprintf("calls[%d].argument_tokens", j)), c.ArgumentTokens, 1); err != nil {
				return err
			}
			args += c.ArgumentTokens
		}
		if args > t.OutputTokens {
			return errorf(at("output_tokens"), "%d, fewer than the calls' %d argument tokens it includes", t.OutputTokens, args)
		}
		if t.ReasoningTokens != 0 && w.Version < 2 {
			return errorf(at("reasoning_tokens"), "needs version 2; version %d has no reasoning tokens", w.Version)
		}
		if t.ReasoningTokens < 0 || t.ReasoningTokens > MaxItemTokens {
			return errorf(at("reasoning_tokens"), "must be 0 to %d tokens, got %d", MaxItemTokens, t.ReasoningTokens)
		}
		if visible := max(args, 1); t.ReasoningTokens > t.OutputTokens-visible {
			return errorf(at("output_tokens"), "%d, fewer than the %d reasoning tokens it includes and %d for the message or the calls", t.OutputTokens, t.ReasoningTokens, visible)
		}
		total += t.OutputTokens
		if !(t.ToolTimeMs >= 0 && t.ToolTimeMs <= MaxToolTimeMs) { // NaN fails too
			return errorf(at("tool_time_ms"), "must be 0 to %d", MaxToolTimeMs)
		}
		if total > MaxTotalTokens {
			return errorf(fmt.Sprintf("turns[%d]", i), "the session reaches %d tokens here; a workload holds at most %d", total, MaxTotalTokens)
		}
	}
	return nil
}

// readable names the versions this reader takes, for its errors.
var readable = fmt.Sprintf("this reader takes versions %d to %d", MinVersion, Version)

func checkVersion(v int) error {
	if v < MinVersion || v > Version {
		return errorf("version", "version %d is not supported; %s", v, readable)
	}
	return nil
}

func tokens(field string, n, least int) error {
	if n < least || n > MaxItemTokens {
		return errorf(field, "must be %d to %d tokens, got %d", least, MaxItemTokens, n)
	}
	return nil
}

// Encode writes w in its canonical form (Canonical) and a newline: the
// file a permalink serves, which Parse takes back.
func (w *Workload) Encode(out io.Writer) error {
	b, err := w.Canonical()
	if err != nil {
		return err
	}
	_, err = out.Write(append(b, '\n'))
	return err
}

// Canonical is w's one stored form: compact JSON, fields in the format's
// order. It is at most MaxBytes, or an error says so: Parse refuses a
// workload whose canonical form would not fit (a number written 1e5 in
// the upload takes six bytes here), so whatever was accepted can be stored,
// served and uploaded again.
func (w *Workload) Canonical() ([]byte, error) {
	b, err := json.Marshal(w)
	if err != nil {
		return nil, &Error{Message: "encoding: " + err.Error()}
	}
	if len(b) > MaxBytes {
		return nil, errorf("", "its compact form takes %d bytes, more than %d", len(b), MaxBytes)
	}
	return b, nil
}

// ID is the content address of a workload's canonical form (Canonical):
// the same workload always gets the same id, so storing it twice keeps
// one copy.
func ID(canonical []byte) string {
	sum := sha256.Sum256(canonical)
	return "wl_" + hex.EncodeToString(sum[:16])
}

// NewInputTokens is the tokens turn i adds to the conversation.
func (t *Turn) NewInputTokens() int {
	n := 0
	for _, in := range t.Input {
		n += in.Tokens
	}
	return n
}

// MessageTokens is the output's message part: what the reasoning and the
// calls' arguments leave of OutputTokens.
func (t *Turn) MessageTokens() int {
	n := t.OutputTokens - t.ReasoningTokens
	for _, c := range t.Calls {
		n -= c.ArgumentTokens
	}
	return max(n, 0)
}

// UnmarshalJSON decodes a workload embedded in other JSON (a run's config)
// with Parse's strictness and bounds.
func (w *Workload) UnmarshalJSON(b []byte) error {
	p, err := Parse(b)
	if err != nil {
		return err
	}
	*w = *p
	return nil
}
