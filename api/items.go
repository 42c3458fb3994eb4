package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"
)

// Item types the official SDKs send (docs/protocol.md, "Requests").
// Anything else is a 400.
const (
	TypeMessage              = "message"
	TypeFunctionCall         = "function_call"
	TypeFunctionCallOutput   = "function_call_output"
	TypeItemReference        = "item_reference"
	TypeReasoning            = "reasoning"
	TypeCustomToolCall       = "custom_tool_call"
	TypeCustomToolCallOutput = "custom_tool_call_output"
	// TypeCompaction: compaction.go.
)

// Part is one content part of a message. Text parts are decoded; every other
// part (images, files, audio) is kept verbatim in Raw.
type Part struct {
	Type string
	Text string
	Raw  json.RawMessage
}

// Item is one input or output item, normalized: a message always has a type
// and a part list, whatever shape the client sent.
type Item struct {
	Type      string
	ID        string
	Status    string
	Role      string
	Content   []Part
	Name      string
	Namespace string
	Arguments string
	CallID    string
	// Output is a function_call_output's output as sent: a JSON string or a
	// list of parts.
	Output json.RawMessage
	Phase  string
	// Summary is a reasoning item's summary parts (summary_text), and
	// EncryptedContent its sealed blob (package seal), "" when it has none.
	// A compaction item's Summary is its opened blob, set by the engine
	// once it has opened it (never read from, nor written to, the wire).
	Summary          []Part
	EncryptedContent string
	// Raw keeps the items a client sent whose shape the engine does not
	// rebuild (reasoning, custom tool calls and their outputs) verbatim; an
	// item the engine made has none and is written from its fields.
	Raw json.RawMessage
}

type wireItem struct {
	Type      string  `json:"type"`
	ID        string  `json:"id"`
	Status    string  `json:"status"`
	Role      string  `json:"role"`
	Content   rawSpan `json:"content"`
	Name      string  `json:"name"`
	Namespace string  `json:"namespace"`
	Arguments string  `json:"arguments"`
	CallID    string  `json:"call_id"`
	Output    rawSpan `json:"output"`
	Phase     string  `json:"phase"`
	// A custom tool call's input; a reasoning item's summary and blob.
	Input            string  `json:"input"`
	Summary          rawSpan `json:"summary"`
	EncryptedContent *string `json:"encrypted_content"`
}

// rawSpan is a JSON value as a slice of the document json.Unmarshal is
// decoding, not a copy of it (json.RawMessage copies): a large field went
// through three copies on its way to an item. It is only for values read
// while that document is unchanged; whatever is kept is copied out.
type rawSpan []byte

func (r *rawSpan) UnmarshalJSON(b []byte) error {
	*r = b
	return nil
}

type wirePart struct {
	Type    string `json:"type"`
	Text    string `json:"text"`
	Refusal string `json:"refusal"`
}

var messageRoles = map[string]bool{"user": true, "assistant": true, "system": true, "developer": true}

// DecodeItem decodes and validates one input item. param names the item's
// place for error messages, e.g. "input[3]".
func DecodeItem(raw json.RawMessage, param string) (Item, *Error) {
	var w wireItem
	if err := json.Unmarshal(raw, &w); err != nil {
		return Item{}, BadRequest(param, CodeInvalidType, "Invalid '%s': expected an object (%s).", param, jsonProblem(err))
	}
	it := Item{Type: w.Type, ID: w.ID, Status: w.Status, Role: w.Role, Name: w.Name, Namespace: w.Namespace,
		Arguments: w.Arguments, CallID: w.CallID, Phase: w.Phase}
	switch w.Type {
	case "", TypeMessage:
		it.Type = TypeMessage
		if !messageRoles[w.Role] {
			return Item{}, BadRequest(param+".role", CodeInvalidValue,
				"Invalid value: '%s'. Supported values are: 'user', 'assistant', 'system', and 'developer'.", w.Role)
		}
		parts, err := decodeContent(json.RawMessage(w.Content), w.Role, param+".content")
		if err != nil {
			return Item{}, err
		}
		it.Content = parts
	case TypeFunctionCall:
		if w.Name == "" {
			return Item{}, BadRequest(param+".name", CodeMissingRequiredParameter, "Missing required parameter: '%s.name'.", param)
		}
		if w.CallID == "" {
			return Item{}, BadRequest(param+".call_id", CodeMissingRequiredParameter, "Missing required parameter: '%s.call_id'.", param)
		}
	case TypeFunctionCallOutput:
		if w.CallID == "" {
			return Item{}, BadRequest(param+".call_id", CodeMissingRequiredParameter, "Missing required parameter: '%s.call_id'.", param)
		}
		out := bytes.TrimSpace(w.Output)
		if len(out) == 0 || (out[0] != '"' && out[0] != '[') {
			return Item{}, BadRequest(param+".output", CodeInvalidType,
				"Invalid type for '%s.output': expected a string or an array of content parts.", param)
		}
		it.Output = append(json.RawMessage(nil), out...)
	case TypeItemReference:
		if w.ID == "" {
			return Item{}, BadRequest(param+".id", CodeMissingRequiredParameter, "Missing required parameter: '%s.id'.", param)
		}
	case TypeReasoning, TypeCustomToolCall, TypeCustomToolCallOutput, TypeCompaction:
		// Decoded leniently, as before: ValidateCreate holds them to the
		// SDK's shapes (validate.go).
		it.Raw = append(json.RawMessage(nil), bytes.TrimSpace(raw)...)
		switch w.Type {
		case TypeCustomToolCall:
			it.Arguments = w.Input
		case TypeCustomToolCallOutput:
			if out := bytes.TrimSpace(w.Output); len(out) > 0 && (out[0] == '"' || out[0] == '[') {
				it.Output = append(json.RawMessage(nil), out...)
			}
		case TypeCompaction:
			if w.EncryptedContent != nil {
				it.EncryptedContent = *w.EncryptedContent
			}
		case TypeReasoning:
			if w.EncryptedContent != nil {
				it.EncryptedContent = *w.EncryptedContent
			}
			var parts []wirePart
			if json.Unmarshal(w.Summary, &parts) == nil {
				for _, p := range parts {
					it.Summary = append(it.Summary, Part{Type: p.Type, Text: p.Text})
				}
			}
		}
	default:
		return Item{}, BadRequest(param+".type", CodeInvalidValue,
			"Invalid value: '%s'. Supported values are: 'message', 'function_call', 'function_call_output', 'item_reference', 'reasoning', 'custom_tool_call', 'custom_tool_call_output', and 'compaction'.", w.Type)
	}
	return it, nil
}

func decodeContent(raw json.RawMessage, role, param string) ([]Part, *Error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] == 'n' {
		return nil, BadRequest(param, CodeMissingRequiredParameter, "Missing required parameter: '%s'.", param)
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, BadRequest(param, CodeInvalidType, "Invalid '%s': %s.", param, jsonProblem(err))
		}
		typ := "input_text"
		if role == "assistant" {
			typ = "output_text"
		}
		return []Part{{Type: typ, Text: s}}, nil
	}
	var raws []json.RawMessage
	if err := json.Unmarshal(raw, &raws); err != nil {
		return nil, BadRequest(param, CodeInvalidType, "Invalid type for '%s': expected a string or an array of content parts.", param)
	}
	parts := make([]Part, 0, len(raws))
	for i, pr := range raws {
		var wp wirePart
		if err := json.Unmarshal(pr, &wp); err != nil {
			return nil, BadRequest(fmt.Sprintf("%s[%d]", param, i), CodeInvalidType, "Invalid content part: expected an object.")
		}
		switch wp.Type {
		case "input_text", "output_text", "text", "summary_text", "reasoning_text":
			parts = append(parts, Part{Type: wp.Type, Text: wp.Text})
		case "refusal":
			parts = append(parts, Part{Type: wp.Type, Text: wp.Refusal, Raw: append(json.RawMessage(nil), pr...)})
		case "":
			return nil, BadRequest(fmt.Sprintf("%s[%d].type", param, i), CodeMissingRequiredParameter, "Missing required parameter: '%s[%d].type'.", param, i)
		default:
			parts = append(parts, Part{Type: wp.Type, Raw: append(json.RawMessage(nil), bytes.TrimSpace(pr)...)})
		}
	}
	return parts, nil
}

// Text is the item's readable text: a message's text parts joined, a call's
// name and arguments, a tool output's text. It is what the model reads.
func (it *Item) Text() string {
	switch it.Type {
	case TypeMessage:
		if len(it.Content) == 1 {
			return it.Content[0].Text
		}
		var sb strings.Builder
		for i, p := range it.Content {
			if i > 0 {
				sb.WriteByte('\n')
			}
			sb.WriteString(p.Text)
		}
		return sb.String()
	case TypeFunctionCall:
		return it.Arguments
	case TypeFunctionCallOutput:
		return OutputText(it.Output)
	case TypeCompaction:
		return it.CompactionSummary()
	default:
		return string(it.Raw)
	}
}

// TextPrefix is Text()[:n] (all of it when shorter), without decoding a
// long tool output whole when its first n bytes are its raw bytes.
func (it *Item) TextPrefix(n int) string {
	if out := it.Output; it.Type == TypeFunctionCallOutput && len(out) > n+2 && out[0] == '"' && out[len(out)-1] == '"' {
		if inner := out[1 : len(out)-1]; bytes.IndexByte(inner, '\\') < 0 && utf8.Valid(inner) {
			return string(inner[:n])
		}
	}
	text := it.Text()
	return text[:min(n, len(text))]
}

// OutputText returns a function_call_output's output as text: the string
// itself, or the text parts of a part list joined by newlines.
func OutputText(out json.RawMessage) string {
	if len(out) == 0 {
		return ""
	}
	if out[0] == '"' {
		// A valid string without escapes is its bytes between the quotes:
		// one copy instead of the decoder's two (a tool output may be
		// many megabytes).
		if n := len(out); n >= 2 && out[n-1] == '"' {
			if inner := out[1 : n-1]; bytes.IndexByte(inner, '\\') < 0 && utf8.Valid(inner) {
				return string(inner)
			}
		}
		var s string
		if json.Unmarshal(out, &s) == nil {
			return s
		}
		return ""
	}
	var parts []wirePart
	if json.Unmarshal(out, &parts) != nil {
		return string(out)
	}
	var sb strings.Builder
	for i, p := range parts {
		if i > 0 {
			sb.WriteByte('\n')
		}
		sb.WriteString(p.Text)
	}
	return sb.String()
}

// MarshalJSON writes the item in its canonical wire shape.
func (it Item) MarshalJSON() ([]byte, error) { return it.AppendJSON(nil), nil }

// UnmarshalJSON decodes an item leniently (client side: Response.output).
func (it *Item) UnmarshalJSON(b []byte) error {
	dec, err := DecodeItem(b, "item")
	if err != nil {
		return err
	}
	*it = dec
	return nil
}

// AppendJSON appends the item's canonical wire JSON.
func (it *Item) AppendJSON(b []byte) []byte {
	switch it.Type {
	case TypeMessage:
		b = append(b, '{')
		b = appendIDField(b, it.ID)
		b = append(b, `"type":"message"`...)
		if it.Status != "" {
			b = append(b, `,"status":`...)
			b = AppendString(b, it.Status)
		}
		b = append(b, `,"role":`...)
		b = AppendString(b, it.Role)
		if it.Phase != "" {
			b = append(b, `,"phase":`...)
			b = AppendString(b, it.Phase)
		}
		b = append(b, `,"content":[`...)
		for i := range it.Content {
			if i > 0 {
				b = append(b, ',')
			}
			b = it.Content[i].AppendJSON(b)
		}
		return append(b, "]}"...)
	case TypeFunctionCall:
		b = it.appendHead(b, it.Status)
		b = appendField(b, "arguments", it.Arguments)
		b = appendField(b, "call_id", it.CallID)
		b = it.appendName(b)
		return append(b, '}')
	case TypeFunctionCallOutput:
		b = append(b, '{')
		b = appendIDField(b, it.ID)
		b = append(b, `"type":"function_call_output","call_id":`...)
		b = AppendString(b, it.CallID)
		b = append(b, `,"output":`...)
		if len(it.Output) == 0 {
			b = append(b, `""`...)
		} else {
			b = append(b, it.Output...)
		}
		if it.Status != "" {
			b = append(b, `,"status":`...)
			b = AppendString(b, it.Status)
		}
		return append(b, '}')
	case TypeItemReference:
		b = append(b, `{"type":"item_reference","id":`...)
		b = AppendString(b, it.ID)
		return append(b, '}')
	case TypeReasoning, TypeCustomToolCall, TypeCustomToolCallOutput, TypeCompaction:
		if len(it.Raw) > 0 {
			return append(b, it.Raw...)
		}
		return it.appendMade(b, false)
	default:
		if len(it.Raw) > 0 {
			return append(b, it.Raw...)
		}
		b = append(b, `{"type":`...)
		b = AppendString(b, it.Type)
		return append(b, '}')
	}
}

// AppendListedJSON appends the item as the store keeps it and input_items
// lists it (the SDK's ResponseItem types): a custom tool item is written
// anew from its fields, with its id and status, rather than as the client
// sent it.
func (it *Item) AppendListedJSON(b []byte) []byte {
	if it.Type == TypeCustomToolCall || it.Type == TypeCustomToolCallOutput {
		return it.appendMade(b, true)
	}
	return it.AppendJSON(b)
}

// appendMade writes a reasoning item, custom tool call or custom tool
// call output the engine made, in the SDK's shapes (ResponseReasoningItem,
// ResponseCustomToolCall, ResponseCustomToolCallOutput, and with listed
// ResponseCustomToolCallItem); field names as the openai npm package's
// type declarations name them. A custom tool call has a status only when
// listed: ResponseCustomToolCall, the output item, declares none.
func (it *Item) appendMade(b []byte, listed bool) []byte {
	status := it.Status
	if it.Type == TypeCustomToolCall && !listed {
		status = ""
	}
	b = it.appendHead(b, status)
	switch it.Type {
	case TypeReasoning:
		b = append(b, `,"summary":[`...)
		for i := range it.Summary {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendSummaryPart(b, it.Summary[i].Text)
		}
		b = append(b, ']')
		if it.EncryptedContent != "" {
			b = appendField(b, "encrypted_content", it.EncryptedContent)
		}
	case TypeCompaction:
		b = appendField(b, "encrypted_content", it.EncryptedContent)
	case TypeCustomToolCall:
		b = appendField(b, "call_id", it.CallID)
		b = appendField(b, "input", it.Arguments)
		b = it.appendName(b)
	case TypeCustomToolCallOutput:
		b = appendField(b, "call_id", it.CallID)
		b = append(b, `,"output":`...)
		if len(it.Output) == 0 {
			b = append(b, `""`...)
		} else {
			b = append(b, it.Output...)
		}
	}
	return append(b, '}')
}

// appendHead opens an item: {"id":…,"type":…[,"status":…].
func (it *Item) appendHead(b []byte, status string) []byte {
	b = append(b, '{')
	b = appendIDField(b, it.ID)
	b = append(b, `"type":`...)
	b = AppendString(b, it.Type)
	if status != "" {
		b = appendField(b, "status", status)
	}
	return b
}

// appendName appends a call's name, and its namespace when it has one.
func (it *Item) appendName(b []byte) []byte {
	b = appendField(b, "name", it.Name)
	if it.Namespace != "" {
		b = appendField(b, "namespace", it.Namespace)
	}
	return b
}

// appendField appends ,"key":"value".
func appendField(b []byte, key, value string) []byte {
	b = append(b, ',', '"')
	b = append(b, key...)
	b = append(b, '"', ':')
	return AppendString(b, value)
}

// appendSummaryPart writes a reasoning summary part.
func appendSummaryPart(b []byte, text string) []byte {
	b = append(b, `{"type":"summary_text","text":`...)
	b = AppendString(b, text)
	return append(b, '}')
}

func appendIDField(b []byte, id string) []byte {
	if id == "" {
		return b
	}
	b = append(b, `"id":`...)
	b = AppendString(b, id)
	return append(b, ',')
}

// AppendJSON appends the part's wire JSON. output_text parts always carry
// annotations and logprobs, as the SDKs expect.
func (p *Part) AppendJSON(b []byte) []byte {
	if len(p.Raw) > 0 {
		return append(b, p.Raw...)
	}
	b = append(b, `{"type":`...)
	b = AppendString(b, p.Type)
	if p.Type == "output_text" {
		b = append(b, `,"annotations":[],"logprobs":[]`...)
	}
	b = append(b, `,"text":`...)
	b = AppendString(b, p.Text)
	return append(b, '}')
}

// MarshalJSON lets encoding/json write parts.
func (p Part) MarshalJSON() ([]byte, error) { return p.AppendJSON(nil), nil }

func jsonProblem(err error) string {
	var te *json.UnmarshalTypeError
	if ok := asTypeError(err, &te); ok {
		if te.Field != "" {
			return fmt.Sprintf("'%s' has the wrong type, expected %s", te.Field, te.Type)
		}
		return fmt.Sprintf("expected %s, got %s", te.Type, te.Value)
	}
	return err.Error()
}
