package api

import (
	"bytes"
	"encoding/json"
)

// Response is the Responses API Response object.
type Response struct {
	ID                 string             `json:"id"`
	Object             string             `json:"object"`
	CreatedAt          int64              `json:"created_at"`
	Status             string             `json:"status"`
	AccessPrograms     *AccessPrograms    `json:"access_programs"`
	Background         bool               `json:"background"`
	CompletedAt        *int64             `json:"completed_at"`
	Error              *ResponseError     `json:"error"`
	IncompleteDetails  *IncompleteDetails `json:"incomplete_details"`
	Instructions       *string            `json:"instructions"`
	MaxOutputTokens    *int               `json:"max_output_tokens"`
	MaxToolCalls       *int               `json:"max_tool_calls"`
	Model              string             `json:"model"`
	Output             []Item             `json:"output"`
	ParallelToolCalls  bool               `json:"parallel_tool_calls"`
	PreviousResponseID *string            `json:"previous_response_id"`
	PromptCacheKey     *string            `json:"prompt_cache_key"`
	Reasoning          json.RawMessage    `json:"reasoning"`
	SafetyIdentifier   *string            `json:"safety_identifier"`
	ServiceTier        string             `json:"service_tier"`
	// Store is sent as the hosted API sends it, though the SDKs' Response
	// types do not declare it (conformance/deviations_test.go).
	Store       bool              `json:"store"`
	Temperature float64           `json:"temperature"`
	Text        json.RawMessage   `json:"text"`
	ToolChoice  json.RawMessage   `json:"tool_choice"`
	Tools       json.RawMessage   `json:"tools"`
	TopLogprobs int               `json:"top_logprobs"`
	TopP        float64           `json:"top_p"`
	Truncation  string            `json:"truncation"`
	Usage       *Usage            `json:"usage,omitempty"`
	User        *string           `json:"user,omitempty"`
	Metadata    map[string]string `json:"metadata"`
}

// AccessPrograms is the Cyber access program a response ran under. The
// engine serves the implicit Standard program, which the hosted API
// writes as a null access_programs, so a Response's is always nil.
type AccessPrograms struct {
	Cyber string `json:"cyber"`
}

// ResponseError is a failed response's error.
type ResponseError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// IncompleteDetails says why a response stopped early.
type IncompleteDetails struct {
	Reason string `json:"reason"`
}

// Usage is token accounting over the whole reconstructed context.
type Usage struct {
	InputTokens         int                 `json:"input_tokens"`
	InputTokensDetails  InputTokensDetails  `json:"input_tokens_details"`
	OutputTokens        int                 `json:"output_tokens"`
	OutputTokensDetails OutputTokensDetails `json:"output_tokens_details"`
	TotalTokens         int                 `json:"total_tokens"`
}

// InputTokensDetails carries cached and cache-write counts; the newest SDK
// schemas require cache_write_tokens and its details.
type InputTokensDetails struct {
	CachedTokens            int                     `json:"cached_tokens"`
	CacheWriteTokens        int                     `json:"cache_write_tokens"`
	CacheWriteTokensDetails CacheWriteTokensDetails `json:"cache_write_tokens_details"`
}

// CacheWriteTokensDetails is always zero here.
type CacheWriteTokensDetails struct {
	TTL30mTokens int `json:"ttl_30m_tokens"`
	TTL12hTokens int `json:"ttl_12h_tokens"`
}

// OutputTokensDetails carries the reasoning tokens among output_tokens
// (docs/protocol.md, "Reasoning items").
type OutputTokensDetails struct {
	ReasoningTokens int `json:"reasoning_tokens"`
}

// NewResponse fills the echoed request parameters and the defaults of a
// Response that is about to start.
func NewResponse(id string, createdAt int64, req *CreateRequest) *Response {
	r := &Response{
		ID: id, Object: "response", CreatedAt: createdAt, Status: "in_progress",
		Instructions: req.Instructions, MaxOutputTokens: req.MaxOutputTokens, MaxToolCalls: req.MaxToolCalls,
		Model: req.Model, Output: []Item{}, ParallelToolCalls: true,
		Reasoning: json.RawMessage(`{"effort":null,"summary":null}`), ServiceTier: "default",
		Store: req.Stored(), Temperature: 1, Text: json.RawMessage(`{"format":{"type":"text"},"verbosity":"medium"}`),
		ToolChoice: json.RawMessage(`"auto"`), Tools: json.RawMessage(`[]`), TopP: 1, Truncation: "disabled",
		Metadata: map[string]string{},
	}
	if req.Background != nil {
		r.Background = *req.Background
	}
	if req.ParallelToolCalls != nil {
		r.ParallelToolCalls = *req.ParallelToolCalls
	}
	if req.PreviousResponseID != "" {
		r.PreviousResponseID = &req.PreviousResponseID
	}
	if req.PromptCacheKey != "" {
		r.PromptCacheKey = &req.PromptCacheKey
	}
	if len(req.Reasoning) > 0 && string(req.Reasoning) != "null" {
		r.Reasoning = req.Reasoning
	}
	if req.SafetyIdentifier != "" {
		r.SafetyIdentifier = &req.SafetyIdentifier
	}
	if req.ServiceTier != "" {
		r.ServiceTier = req.ServiceTier
	}
	if req.Temperature != nil {
		r.Temperature = *req.Temperature
	}
	if len(req.Text) > 0 && string(req.Text) != "null" {
		r.Text = req.Text
	}
	if len(req.ToolChoice) > 0 && string(req.ToolChoice) != "null" {
		r.ToolChoice = req.ToolChoice
	}
	if len(req.Tools) > 0 && string(req.Tools) != "null" {
		r.Tools = echoTools(req.Tools)
	}
	if req.TopLogprobs != nil {
		r.TopLogprobs = *req.TopLogprobs
	}
	if req.TopP != nil {
		r.TopP = *req.TopP
	}
	if req.Truncation != "" {
		r.Truncation = req.Truncation
	}
	if req.User != "" {
		r.User = &req.User
	}
	for k, v := range req.Metadata {
		r.Metadata[k] = v
	}
	return r
}

// echoTools is a request's tools as a Response echoes them: a function
// tool sent without parameters or strict gets them as null, since the
// SDKs' FunctionTool declares both (nullable) on a Response. Everything
// else is echoed as sent. raw must be well-formed (a value json.Unmarshal
// accepted): it is read in one pass, as splitArray reads input, since a
// client such as Codex sends kilobytes of tools with every create.
func echoTools(sent json.RawMessage) json.RawMessage {
	raw := bytes.TrimSpace(sent)
	if len(raw) < 2 || raw[0] != '[' {
		return sent
	}
	tools := splitArray(raw)
	gaps := make([]string, len(tools))
	patched := false
	for i, t := range tools {
		gaps[i] = functionToolGaps(t)
		patched = patched || gaps[i] != ""
	}
	if !patched {
		return sent
	}
	out := make([]byte, 0, len(raw)+len(tools)*len(`,"parameters":null,"strict":null`))
	out = append(out, '[')
	for i, t := range tools {
		if i > 0 {
			out = append(out, ',')
		}
		if gaps[i] == "" {
			out = append(out, t...)
			continue
		}
		out = append(out, t[:len(t)-1]...) // the object without its '}'
		out = append(out, gaps[i]...)
		out = append(out, '}')
	}
	return append(out, ']')
}

// functionToolGaps returns the fields to append to a function tool sent
// without parameters or strict (,"parameters":null and ,"strict":null),
// or "" when it has both or is not a function tool.
func functionToolGaps(tool []byte) string {
	if len(tool) == 0 || tool[0] != '{' {
		return ""
	}
	function, parameters, strict := false, false, false
	for key, value := range topFields(tool) {
		switch unquote(key) {
		case "type":
			function = unquote(value) == "function"
		case "parameters":
			parameters = true
		case "strict":
			strict = true
		}
	}
	if !function {
		return ""
	}
	gaps := ""
	if !parameters {
		gaps += `,"parameters":null`
	}
	if !strict {
		gaps += `,"strict":null`
	}
	return gaps
}

// DeletedResponse is the body of DELETE /v1/responses/{id}.
type DeletedResponse struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Deleted bool   `json:"deleted"`
}

// ItemList is the body of GET /v1/responses/{id}/input_items.
type ItemList struct {
	Object  string  `json:"object"`
	Data    []Item  `json:"data"`
	FirstID *string `json:"first_id"`
	LastID  *string `json:"last_id"`
	HasMore bool    `json:"has_more"`
}

// longInstructions is where MarshalResponse stops letting encoding/json
// buffer the instructions (it grows a buffer by doubling, then copies it).
const longInstructions = 64 << 10

// instructionsMark stands in for long instructions while the rest of a
// response is marshalled; nothing else in a response can hold it.
const instructionsMark = "\x00agentloop:instructions\x00"

// MarshalResponse is json.Marshal(r), except that long instructions are
// appended once, escaped, into a buffer sized for them: a response echoes
// its instructions, and a 30 MiB string otherwise cost three copies.
func MarshalResponse(r *Response) []byte {
	if r.Instructions == nil || len(*r.Instructions) < longInstructions {
		b, _ := json.Marshal(r)
		return b
	}
	c := *r
	mark := instructionsMark
	c.Instructions = &mark
	b, _ := json.Marshal(&c)
	enc, _ := json.Marshal(mark)
	i := bytes.Index(b, enc)
	if i < 0 {
		b, _ = json.Marshal(r)
		return b
	}
	in := *r.Instructions
	out := make([]byte, 0, len(b)+len(in)+len(in)/16+64)
	out = append(out, b[:i]...)
	out = AppendString(out, in)
	return append(out, b[i+len(enc):]...)
}
