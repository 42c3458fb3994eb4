package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"unicode/utf8"
)

// CreateRequest is the body of POST /v1/responses and of a WebSocket
// response.create message. Unknown fields are ignored; optional fields the
// engine only echoes stay raw.
type CreateRequest struct {
	Type               string            `json:"type,omitempty"`
	Model              string            `json:"model"`
	Input              json.RawMessage   `json:"input,omitempty"`
	Instructions       *string           `json:"instructions,omitempty"`
	Tools              json.RawMessage   `json:"tools,omitempty"`
	ToolChoice         json.RawMessage   `json:"tool_choice,omitempty"`
	PreviousResponseID string            `json:"previous_response_id,omitempty"`
	Store              *bool             `json:"store,omitempty"`
	Stream             *bool             `json:"stream,omitempty"`
	MaxOutputTokens    *int              `json:"max_output_tokens,omitempty"`
	Metadata           map[string]string `json:"metadata,omitempty"`
	ParallelToolCalls  *bool             `json:"parallel_tool_calls,omitempty"`
	Reasoning          json.RawMessage   `json:"reasoning,omitempty"`
	Include            []string          `json:"include,omitempty"`
	PromptCacheKey     string            `json:"prompt_cache_key,omitempty"`
	Text               json.RawMessage   `json:"text,omitempty"`
	Temperature        *float64          `json:"temperature,omitempty"`
	TopP               *float64          `json:"top_p,omitempty"`
	Truncation         string            `json:"truncation,omitempty"`
	ServiceTier        string            `json:"service_tier,omitempty"`
	User               string            `json:"user,omitempty"`
	SafetyIdentifier   string            `json:"safety_identifier,omitempty"`
	TopLogprobs        *int              `json:"top_logprobs,omitempty"`
	MaxToolCalls       *int              `json:"max_tool_calls,omitempty"`
	Background         *bool             `json:"background,omitempty"`
	Conversation       json.RawMessage   `json:"conversation,omitempty"`
	// ContextManagement is kept raw: compaction reads it (Compaction), and
	// steering whether it is present.
	ContextManagement json.RawMessage `json:"context_management,omitempty"`
	// Generate:false is the WebSocket warmup.
	Generate *bool `json:"generate,omitempty"`
	// StreamID names a WebSocket lane.
	StreamID *string `json:"stream_id,omitempty"`
	// IgnoreEOS, as vLLM-compatible servers accept it: with
	// max_output_tokens, the reply is exactly that many tokens.
	IgnoreEOS bool `json:"ignore_eos,omitempty"`
}

// Streaming reports whether the body asked for SSE.
func (r *CreateRequest) Streaming() bool { return r.Stream != nil && *r.Stream }

// InBackground reports whether the body asked for a background response.
func (r *CreateRequest) InBackground() bool { return r.Background != nil && *r.Background }

// Stored reports the effective store flag; it defaults to true.
func (r *CreateRequest) Stored() bool { return r.Store == nil || *r.Store }

// Generates reports whether the model should run; false is a warmup.
func (r *CreateRequest) Generates() bool { return r.Generate == nil || *r.Generate }

// MaxOutputTokens bounds max_output_tokens, as models' output limits do; it
// also bounds what one request can make the engine hold in memory.
const MaxOutputTokens = 128000

// badJSONMessage is the message the real API gives for a body it cannot parse.
const badJSONMessage = "We could not parse the JSON body of your request. (HINT: This likely means you aren't using your HTTP library correctly. The OpenAI API expects a JSON payload, but what was sent was not valid JSON.)"

// DecodeCreate decodes a create body. It validates the envelope only; the
// input items are decoded by DecodeInput so that each path decodes exactly
// the items it has.
func DecodeCreate(body []byte) (*CreateRequest, *Error) {
	if !utf8.Valid(body) {
		return nil, BadRequest("", CodeInvalidJSON, "The request body is not valid UTF-8.")
	}
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return nil, BadRequest("", CodeInvalidJSON, badJSONMessage)
	}
	var req CreateRequest
	if err := json.Unmarshal(trimmed, &req); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return nil, BadRequest(te.Field, CodeInvalidType, "Invalid type for '%s': expected %s, but got %s.", te.Field, te.Type, te.Value)
		}
		return nil, BadRequest("", CodeInvalidJSON, "%s (%s)", badJSONMessage, err.Error())
	}
	if e := req.validateEnvelope(); e != nil {
		return nil, e
	}
	return &req, nil
}

// checkMetadata holds metadata to the hosted API's limits: 16 keys of at
// most 64 characters, values of at most 512.
func checkMetadata(m map[string]string) *Error {
	if len(m) > 16 {
		return BadRequest("metadata", CodeInvalidValue, "Invalid 'metadata': too many properties. Expected at most 16 properties, but got %d.", len(m))
	}
	for k, v := range m {
		if len(k) > 64 {
			return BadRequest("metadata", CodeInvalidValue, "Invalid 'metadata': keys must be at most 64 characters long.")
		}
		if len(v) > 512 {
			return BadRequest("metadata", CodeInvalidValue, "Invalid 'metadata': values must be at most 512 characters long.")
		}
	}
	return nil
}

func (r *CreateRequest) validateEnvelope() *Error {
	if e := checkMetadata(r.Metadata); e != nil {
		return e
	}
	if r.MaxOutputTokens != nil && *r.MaxOutputTokens < 1 {
		return BadRequest("max_output_tokens", CodeIntegerBelowMinValue, "Invalid 'max_output_tokens': integer below minimum value. Expected a value >= 1, but got %d instead.", *r.MaxOutputTokens)
	}
	if r.MaxOutputTokens != nil && *r.MaxOutputTokens > MaxOutputTokens {
		return BadRequest("max_output_tokens", CodeIntegerAboveMaxValue, "Invalid 'max_output_tokens': integer above maximum value. Expected a value <= %d, but got %d instead.", MaxOutputTokens, *r.MaxOutputTokens)
	}
	for _, f := range []struct {
		name     string
		v        *float64
		min, max float64
	}{{"temperature", r.Temperature, 0, 2}, {"top_p", r.TopP, 0, 1}} {
		if e := checkRange(f.name, "decimal", f.v, f.min, f.max); e != nil {
			return e
		}
	}
	for _, f := range []struct {
		name     string
		v        *int
		min, max int
	}{{"top_logprobs", r.TopLogprobs, 0, 20}, {"max_tool_calls", r.MaxToolCalls, 1, math.MaxInt32}} {
		if f.v == nil {
			continue
		}
		v := float64(*f.v)
		if e := checkRange(f.name, "integer", &v, float64(f.min), float64(f.max)); e != nil {
			return e
		}
	}
	if r.PreviousResponseID != "" && len(r.Conversation) > 0 && string(r.Conversation) != "null" {
		return BadRequest("previous_response_id", CodeInvalidValue, "Parameters 'previous_response_id' and 'conversation' cannot be used together.")
	}
	return nil
}

// DecodeInput decodes the request's input: a string is one user message.
// It lets go of the raw input once decoded (a second call finds none): the
// items hold what they need, and for a large field the raw copy kept for
// the whole turn was a body's worth of memory.
func (r *CreateRequest) DecodeInput() ([]Item, *Error) {
	raw := bytes.TrimSpace(r.Input)
	r.Input = nil
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, BadRequest("input", CodeInvalidType, "Invalid 'input': %s.", err.Error())
		}
		return []Item{{Type: TypeMessage, Role: "user", Content: []Part{{Type: "input_text", Text: s}}}}, nil
	}
	if raw[0] != '[' {
		return nil, BadRequest("input", CodeInvalidType, "Invalid type for 'input': expected a string or an array of input items.")
	}
	return decodeItemList(raw, "input")
}

// decodeItemList decodes a JSON array of input items, each error naming
// param[i].
func decodeItemList(raw []byte, param string) ([]Item, *Error) {
	var raws []rawSpan
	if err := json.Unmarshal(raw, &raws); err != nil {
		return nil, BadRequest(param, CodeInvalidType, "Invalid '%s': %s.", param, err.Error())
	}
	items := make([]Item, len(raws))
	for i, ir := range raws {
		it, e := DecodeItem(json.RawMessage(ir), fmt.Sprintf("%s[%d]", param, i))
		if e != nil {
			return nil, e
		}
		items[i] = it
	}
	return items, nil
}

// Tool is one entry of "tools". Function tools are decoded; namespace tools
// carry their inner tools; hosted tools are kept only for the echo.
type Tool struct {
	Type        string          `json:"type"`
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
	Strict      *bool           `json:"strict"`
	Tools       []Tool          `json:"tools"`
	// Format is a custom tool's input format (CheckTools has checked it).
	Format *CustomFormat `json:"format"`
}

// CustomFormat is a custom tool's format: text, or a grammar with its
// syntax (GrammarLark, GrammarRegex) and definition.
type CustomFormat struct {
	Type       string `json:"type"`
	Syntax     string `json:"syntax"`
	Definition string `json:"definition"`
}

// DecodeTools decodes "tools". Schemas are compiled elsewhere.
func (r *CreateRequest) DecodeTools() ([]Tool, *Error) {
	raw := bytes.TrimSpace(r.Tools)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var tools []Tool
	if err := json.Unmarshal(raw, &tools); err != nil {
		return nil, BadRequest("tools", CodeInvalidType, "Invalid 'tools': expected an array of tool objects (%s).", jsonProblem(err))
	}
	for i, t := range tools {
		switch t.Type {
		case "function", "custom":
			if t.Name == "" {
				return nil, BadRequest(fmt.Sprintf("tools[%d].name", i), CodeMissingRequiredParameter, "Missing required parameter: 'tools[%d].name'.", i)
			}
		case "":
			return nil, BadRequest(fmt.Sprintf("tools[%d].type", i), CodeMissingRequiredParameter, "Missing required parameter: 'tools[%d].type'.", i)
		}
	}
	return tools, nil
}

// ToolChoiceName returns "auto", "none", "required", or the forced
// function's or custom tool's name.
func (r *CreateRequest) ToolChoiceName() string {
	raw := bytes.TrimSpace(r.ToolChoice)
	if len(raw) == 0 || string(raw) == "null" {
		return "auto"
	}
	if raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) == nil && s != "" {
			return s
		}
		return "auto"
	}
	var obj struct {
		Type string `json:"type"`
		Name string `json:"name"`
		Mode string `json:"mode"`
	}
	if json.Unmarshal(raw, &obj) != nil {
		return "auto"
	}
	switch {
	case (obj.Type == "function" || obj.Type == "custom") && obj.Name != "":
		return obj.Name
	case obj.Type == "allowed_tools" && obj.Mode == "required":
		return "required"
	}
	return "auto"
}

func asTypeError(err error, target **json.UnmarshalTypeError) bool { return errors.As(err, target) }

// checkRange refuses a number outside [min, max] as the API does, naming
// the parameter and its kind ("decimal" or "integer").
func checkRange(name, kind string, v *float64, min, max float64) *Error {
	switch {
	case v == nil:
		return nil
	case math.IsNaN(*v) || *v < min:
		return BadRequest(name, kind+"_below_min_value", "Invalid '%s': %s below minimum value. Expected a value >= %g, but got %g instead.", name, kind, min, *v)
	case *v > max:
		return BadRequest(name, kind+"_above_max_value", "Invalid '%s': %s above maximum value. Expected a value <= %g, but got %g instead.", name, kind, max, *v)
	}
	return nil
}
