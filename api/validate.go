package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// jsonKind is a set of JSON value types.
type jsonKind uint8

const (
	kString  jsonKind = 1 << iota
	kNumber           // any number, integers included
	kInteger          // a number without fraction or exponent
	kBool
	kObject
	kArray
	kNull
)

// kindOf returns the type of a JSON value (an integer is kNumber|kInteger).
func kindOf(raw []byte) jsonKind {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return 0
	}
	switch raw[0] {
	case '"':
		return kString
	case '{':
		return kObject
	case '[':
		return kArray
	case 't', 'f':
		return kBool
	case 'n':
		return kNull
	}
	if bytes.ContainsAny(raw, ".eE") {
		return kNumber
	}
	return kNumber | kInteger
}

// describe names the types of k as the API's messages do ("a number"
// covers integers).
func (k jsonKind) describe() string {
	var names []string
	for _, n := range []struct {
		k    jsonKind
		name string
	}{{kString, "a string"}, {kNumber, "a number"}, {kInteger, "an integer"}, {kBool, "a boolean"}, {kObject, "an object"}, {kArray, "an array"}, {kNull, "null"}} {
		if k&n.k == 0 || (n.k == kInteger && k&kNumber != 0) {
			continue
		}
		names = append(names, n.name)
	}
	switch len(names) {
	case 0:
		return "nothing"
	case 1:
		return names[0]
	}
	return "one of " + strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// param is what a create parameter (or a field inside one) may hold.
type param struct {
	kinds    jsonKind
	enum     []string         // allowed strings
	fields   map[string]param // an object's fields; nil: any fields
	each     *param           // an array's elements
	required bool             // as a field: it must be present
}

// check checks raw against p at path.
func (p param) check(raw []byte, path string) *Error {
	got := kindOf(raw)
	if got&p.kinds == 0 { // an integer is also a number
		return invalidType(path, p.kinds, got)
	}
	switch {
	case got == kString && p.enum != nil:
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return BadRequest(path, CodeInvalidValue, "Invalid '%s': %s.", path, err.Error())
		}
		if !slices.Contains(p.enum, s) {
			return InvalidValue(path, s, p.enum)
		}
	case got == kObject && p.fields != nil:
		return checkFields(raw, path, p.fields)
	case got == kArray && p.each != nil:
		var elems []rawSpan
		if err := json.Unmarshal(raw, &elems); err != nil {
			return BadRequest(path, CodeInvalidJSON, "Invalid '%s': %s.", path, err.Error())
		}
		for i, e := range elems {
			if err := p.each.check(e, fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkFields checks an object's fields: none unknown, each of its type,
// the required ones present. Fields are checked in name order, so the
// first problem reported does not depend on map order.
func checkFields(raw []byte, path string, fields map[string]param) *Error {
	var obj map[string]rawSpan
	if err := json.Unmarshal(raw, &obj); err != nil {
		return BadRequest(path, CodeInvalidJSON, "Invalid '%s': %s.", path, err.Error())
	}
	return checkObject(obj, path, fields)
}

// checkObject is checkFields of an object already split into its fields.
func checkObject(obj map[string]rawSpan, path string, fields map[string]param) *Error {
	for _, k := range sortedKeys(obj) {
		f, ok := fields[k]
		if !ok {
			return UnknownParameter(join(path, k))
		}
		if err := f.check(obj[k], join(path, k)); err != nil {
			return err
		}
	}
	for _, k := range sortedKeys(fields) {
		if _, ok := obj[k]; !ok && fields[k].required {
			return MissingParameter(join(path, k))
		}
	}
	return nil
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func invalidType(path string, want, got jsonKind) *Error {
	return BadRequest(path, CodeInvalidType, "Invalid type for '%s': expected %s, but got %s instead.", path, want.describe(), (got&^kInteger | got&kInteger).describeGot())
}

// describeGot names the one type a value has.
func (k jsonKind) describeGot() string {
	switch {
	case k&kInteger != 0:
		return "an integer"
	case k == 0:
		return "nothing"
	}
	return k.describe()
}

// UnknownParameter is the 400 for a parameter the API does not take.
func UnknownParameter(path string) *Error {
	return BadRequest(path, CodeUnknownParameter, "Unknown parameter: '%s'.", path)
}

// InvalidValue is the 400 for a string outside its enum.
func InvalidValue(path, got string, supported []string) *Error {
	quoted := make([]string, len(supported))
	for i, s := range supported {
		quoted[i] = "'" + s + "'"
	}
	list := quoted[0]
	switch n := len(quoted); {
	case n == 2:
		list = quoted[0] + " and " + quoted[1]
	case n > 2:
		list = strings.Join(quoted[:n-1], ", ") + ", and " + quoted[n-1]
	}
	return BadRequest(path, CodeInvalidValue, "Invalid value: '%s'. Supported values are: %s.", got, list)
}

var functionName = regexp.MustCompile(functionNamePattern)

// checkToolName holds a tool's name to the rule: 1 to 64 letters, digits,
// underscores and hyphens.
func checkToolName(name, path string) *Error {
	switch {
	case name == "":
		return BadRequest(path, CodeStringBelowMinLength, "Invalid '%s': string too short. Expected a string with minimum length 1, but got an empty string instead.", path)
	case len(name) > functionNameMax:
		return BadRequest(path, CodeStringAboveMaxLength, "Invalid '%s': string too long. Expected a string with maximum length %d, but got a string with length %d instead.", path, functionNameMax, len(name))
	case !functionName.MatchString(name):
		return BadRequest(path, CodeInvalidValue, "Invalid '%s': string does not match pattern. Expected a string that matches the pattern '%s'.", path, functionNamePattern)
	}
	return nil
}

// ValidateCreate checks a create body as strictly as the hosted API does
// (docs/protocol.md, "Strict validation") and returns its 400, or nil:
//   - every top-level parameter is one createParams lists, of its type,
//     with enum values from the SDK's;
//   - text.format, reasoning and tool_choice hold the SDK's shapes; a
//     json_schema format names a schema that CheckSchema accepts;
//   - every tool has a known type; function and custom tools have names
//     matching the rule, function parameters pass CheckSchema; a forced
//     tool_choice names a tool of the request;
//   - every input item decodes (DecodeItem), holds content parts allowed
//     for its role, and reasoning and custom tool items hold the SDK's
//     fields; tool calls and outputs pair up (CheckCallPairs) when the
//     input is the whole context (no previous_response_id, conversation
//     or item_reference).
//
// It is meant for the engine's parse stage, right after DecodeCreate; the
// check of a continuation's pairing against its parent's items is
// CheckCallPairs, called once the context is built (validate).
//
// Most of its time is the tools' schemas (compiling each); an engine that
// resolves the same tools again and again calls ValidateCreateWith with a
// cached CheckTools instead.
func ValidateCreate(body []byte) *Error { return ValidateCreateWith(body, CheckTools) }

// ValidateCreateWith is ValidateCreate with the tools checked by
// checkTools, which must answer as CheckTools does for the same "tools"
// (the engine's resolve stage may keep its answers per tools, as it keeps
// the resolved model).
//
// It decodes the body once: its top level as spans of the body (never
// copies), the input split into its items' spans without a second decode
// (splitArray), each item once (DecodeItem); only the items DecodeItem
// keeps raw (reasoning, custom tool calls and their outputs) are read
// again, from that copy, for their fields.
func ValidateCreateWith(body []byte, checkTools func(tools json.RawMessage) (ToolNames, *Error)) *Error {
	var top map[string]rawSpan
	if err := json.Unmarshal(bytes.TrimSpace(body), &top); err != nil {
		return BadRequest("", CodeInvalidJSON, badJSONMessage)
	}
	if err := checkObject(top, "", createParams); err != nil {
		return err
	}
	if _, ok := top["model"]; !ok {
		return MissingParameter("model")
	}
	tools, err := checkTools(json.RawMessage(top["tools"]))
	if err != nil {
		return err
	}
	if err := checkToolChoice(json.RawMessage(top["tool_choice"]), tools); err != nil {
		return err
	}
	format, err := checkTextFormat(json.RawMessage(top["text"]))
	if err != nil {
		return err
	}
	items, err := checkInput(json.RawMessage(top["input"]))
	if err != nil {
		return err
	}
	whole := isNull(json.RawMessage(top["previous_response_id"])) && isNull(json.RawMessage(top["conversation"]))
	for _, it := range items {
		whole = whole && it.Type != TypeItemReference
	}
	if whole {
		if err := CheckCallPairs(items, 0); err != nil {
			return err
		}
		if format == TextFormatJSONObject && !mentionsJSON(json.RawMessage(top["instructions"]), json.RawMessage(top["input"]), items) {
			return BadRequest("text.format", CodeInvalidValue,
				"Response input messages must contain the word 'json' in some form to use 'text.format' of type 'json_object'.")
		}
	}
	return nil
}

func isNull(raw json.RawMessage) bool { return len(raw) == 0 || kindOf(raw) == kNull }

// ToolNames are the names a request's tools offer, for tool_choice: a
// function inside a namespace by its name and as namespace.name.
type ToolNames struct {
	Functions, Custom map[string]bool
}

// wireTool is one entry of "tools" as ValidateCreate reads it.
type wireTool struct {
	Type       string            `json:"type"`
	Name       string            `json:"name"`
	Parameters json.RawMessage   `json:"parameters"`
	Strict     *bool             `json:"strict"`
	Format     *CustomFormat     `json:"format"`
	Tools      []json.RawMessage `json:"tools"`
}

// CheckTools checks "tools" (ValidateCreate's rules for tools) and returns
// the names they offer.
func CheckTools(raw json.RawMessage) (ToolNames, *Error) {
	rt := ToolNames{Functions: map[string]bool{}, Custom: map[string]bool{}}
	if isNull(raw) {
		return rt, nil
	}
	var list []json.RawMessage
	if err := json.Unmarshal(raw, &list); err != nil {
		return rt, BadRequest("tools", CodeInvalidType, "Invalid type for 'tools': expected an array of tool objects.")
	}
	for i, tr := range list {
		if err := checkTool(tr, fmt.Sprintf("tools[%d]", i), "", &rt, true); err != nil {
			return rt, err
		}
	}
	return rt, nil
}

func checkTool(raw json.RawMessage, path, namespace string, rt *ToolNames, top bool) *Error {
	if kindOf(raw) != kObject {
		return invalidType(path, kObject, kindOf(raw))
	}
	var t wireTool
	if err := json.Unmarshal(raw, &t); err != nil {
		return BadRequest(path, CodeInvalidType, "Invalid '%s': %s.", path, jsonProblem(err))
	}
	if t.Type == "" {
		return MissingParameter(path + ".type")
	}
	allowed := toolTypes
	if !top {
		allowed = []string{"function", "custom"} // a namespace holds these (NamespaceTool)
	}
	if !slices.Contains(allowed, t.Type) {
		return InvalidValue(path+".type", t.Type, allowed)
	}
	qualified := t.Name
	if namespace != "" {
		qualified = namespace + "." + t.Name
	}
	switch t.Type {
	case "function":
		if err := checkFields(raw, path, functionToolFields); err != nil {
			return err
		}
		if err := checkToolName(t.Name, path+".name"); err != nil {
			return err
		}
		if !isNull(t.Parameters) {
			var schema any
			if err := json.Unmarshal(t.Parameters, &schema); err != nil {
				return BadRequest(path+".parameters", CodeInvalidFunctionParameters, "Invalid schema for function '%s': %s.", t.Name, err.Error())
			}
			if err := CheckSchema(schema, t.Strict != nil && *t.Strict, true); err != nil {
				return BadRequest(path+".parameters", CodeInvalidFunctionParameters, "Invalid schema for function '%s': %s.", t.Name, err.Error())
			}
		}
		rt.Functions[t.Name], rt.Functions[qualified] = true, true
	case "custom":
		if err := checkFields(raw, path, customToolFields); err != nil {
			return err
		}
		if err := checkToolName(t.Name, path+".name"); err != nil {
			return err
		}
		if f := t.Format; f != nil && f.Type == CustomFormatGrammar {
			if err := checkGrammar(f, path+".format"); err != nil {
				return err
			}
		}
		rt.Custom[t.Name], rt.Custom[qualified] = true, true
	case "namespace":
		if err := checkFields(raw, path, namespaceToolFields); err != nil {
			return err
		}
		if err := checkToolName(t.Name, path+".name"); err != nil {
			return err
		}
		for j, inner := range t.Tools {
			if err := checkTool(inner, fmt.Sprintf("%s.tools[%d]", path, j), t.Name, rt, false); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkGrammar checks a custom tool's grammar format: a syntax and a
// definition; a regex must compile (Go's RE2 syntax). A lark grammar is
// taken as it is (docs/protocol.md, "Custom tools").
func checkGrammar(f *CustomFormat, path string) *Error {
	if f.Syntax == "" {
		return MissingParameter(path + ".syntax")
	}
	if f.Definition == "" {
		return MissingParameter(path + ".definition")
	}
	if f.Syntax == GrammarRegex {
		if _, err := regexp.Compile(f.Definition); err != nil {
			return BadRequest(path+".definition", CodeInvalidValue, "Invalid '%s.definition': the regex does not compile (%s).", path, err.Error())
		}
	}
	return nil
}

// wireToolChoice is an object tool_choice.
type wireToolChoice struct {
	Type        string          `json:"type"`
	Name        *string         `json:"name"`
	Mode        *string         `json:"mode"`
	Tools       json.RawMessage `json:"tools"`
	ServerLabel *string         `json:"server_label"`
}

func checkToolChoice(raw json.RawMessage, rt ToolNames) *Error {
	if isNull(raw) {
		return nil
	}
	if kindOf(raw) == kString {
		return param{kinds: kString, enum: ToolChoiceModes}.check(raw, "tool_choice")
	}
	var tc wireToolChoice
	if err := json.Unmarshal(raw, &tc); err != nil {
		return BadRequest("tool_choice", CodeInvalidType, "Invalid 'tool_choice': %s.", jsonProblem(err))
	}
	if tc.Type == "" {
		return MissingParameter("tool_choice.type")
	}
	if !slices.Contains(toolChoiceTypes, tc.Type) {
		return InvalidValue("tool_choice.type", tc.Type, toolChoiceTypes)
	}
	switch tc.Type {
	case "function", "custom":
		if tc.Name == nil {
			return MissingParameter("tool_choice.name")
		}
		offered := rt.Functions
		if tc.Type == "custom" {
			offered = rt.Custom
		}
		if !offered[*tc.Name] {
			return BadRequest("tool_choice", CodeInvalidValue, "Tool choice '%s' not found in 'tools' parameter: no %s tool is named '%s'.", tc.Type, tc.Type, *tc.Name)
		}
	case "allowed_tools":
		if tc.Mode == nil {
			return MissingParameter("tool_choice.mode")
		}
		if !slices.Contains([]string{"auto", "required"}, *tc.Mode) {
			return InvalidValue("tool_choice.mode", *tc.Mode, []string{"auto", "required"})
		}
		if kindOf(tc.Tools) != kArray {
			return MissingParameter("tool_choice.tools")
		}
	case "mcp":
		if tc.ServerLabel == nil {
			return MissingParameter("tool_choice.server_label")
		}
	}
	return nil
}

// checkTextFormat checks a json_schema format's name and schema and
// returns the format's type ("" without one).
func checkTextFormat(raw json.RawMessage) (string, *Error) {
	if isNull(raw) {
		return "", nil
	}
	var text struct {
		Format *struct {
			Type   string          `json:"type"`
			Name   *string         `json:"name"`
			Schema json.RawMessage `json:"schema"`
			Strict *bool           `json:"strict"`
		} `json:"format"`
	}
	if err := json.Unmarshal(raw, &text); err != nil || text.Format == nil {
		return "", nil // the table has checked the types
	}
	f := text.Format
	if f.Type != TextFormatJSONSchema {
		return f.Type, nil
	}
	if f.Name == nil {
		return "", MissingParameter("text.format.name")
	}
	if err := checkToolName(*f.Name, "text.format.name"); err != nil {
		return "", err
	}
	if isNull(f.Schema) {
		return "", MissingParameter("text.format.schema")
	}
	var schema any
	if err := json.Unmarshal(f.Schema, &schema); err != nil {
		return "", BadRequest("text.format.schema", CodeInvalidJSONSchema, "Invalid schema for response_format '%s': %s.", *f.Name, err.Error())
	}
	if err := CheckSchema(schema, f.Strict != nil && *f.Strict, false); err != nil {
		return "", BadRequest("text.format.schema", CodeInvalidJSONSchema, "Invalid schema for response_format '%s': %s.", *f.Name, err.Error())
	}
	return f.Type, nil
}

// wireStrictItem holds the fields of a reasoning or custom tool item that
// DecodeItem does not hold the SDK's shapes to, read from the item's Raw.
type wireStrictItem struct {
	Input            rawSpan `json:"input"`
	Output           rawSpan `json:"output"`
	Summary          rawSpan `json:"summary"`
	EncryptedContent rawSpan `json:"encrypted_content"`
	Name             rawSpan `json:"name"`
}

// checkInput decodes the input items and holds each to its SDK shape.
func checkInput(raw json.RawMessage) ([]Item, *Error) {
	if isNull(raw) || kindOf(raw) == kString {
		return nil, nil
	}
	raws := splitArray(raw)
	items := make([]Item, len(raws))
	for i, r := range raws {
		path := fmt.Sprintf("input[%d]", i)
		it, err := DecodeItem(json.RawMessage(r), path)
		if err != nil {
			return nil, err
		}
		if err := checkItemShape(&it, path); err != nil {
			return nil, err
		}
		items[i] = it
	}
	return items, nil
}

// splitArray returns the elements of a JSON array as spans of it. raw must
// be well-formed (a value of a document json.Unmarshal accepted), so only
// strings and nesting need following: no second decode of the input.
func splitArray(raw []byte) []rawSpan {
	raw = bytes.TrimSpace(raw)
	var out []rawSpan
	for i := skipSpace(raw, 1); i < len(raw)-1; {
		end := skipValue(raw, i)
		out = append(out, raw[i:end])
		if i = skipSpace(raw, end); i < len(raw) && raw[i] == ',' {
			i = skipSpace(raw, i+1)
		}
	}
	return out
}

func checkItemShape(it *Item, path string) *Error {
	var w wireStrictItem
	if len(it.Raw) > 0 {
		_ = json.Unmarshal(it.Raw, &w) // DecodeItem read it already
	}
	switch it.Type {
	case TypeMessage:
		// A string content is one part DecodeItem typed for the role
		// (input_text, or output_text for the assistant): both allowed.
		allowed := inputPartTypes
		if it.Role == "assistant" {
			allowed = assistantPartTypes
		}
		for j, p := range it.Content {
			if !slices.Contains(allowed, p.Type) {
				return InvalidValue(fmt.Sprintf("%s.content[%d].type", path, j), p.Type, allowed)
			}
		}
	case TypeCustomToolCall:
		for _, f := range []struct {
			name string
			raw  json.RawMessage
		}{{"call_id", nil}, {"name", json.RawMessage(w.Name)}, {"input", json.RawMessage(w.Input)}} {
			if f.name == "call_id" {
				if it.CallID == "" {
					return MissingParameter(path + ".call_id")
				}
				continue
			}
			if len(f.raw) == 0 {
				return MissingParameter(path + "." + f.name)
			}
			if kindOf(f.raw) != kString {
				return invalidType(path+"."+f.name, kString, kindOf(f.raw))
			}
		}
	case TypeCustomToolCallOutput:
		if it.CallID == "" {
			return MissingParameter(path + ".call_id")
		}
		if len(w.Output) == 0 {
			return MissingParameter(path + ".output")
		}
		if k := kindOf(w.Output); k != kString && k != kArray {
			return invalidType(path+".output", kString|kArray, k)
		}
	case TypeCompaction:
		if len(w.EncryptedContent) == 0 {
			return MissingParameter(path + ".encrypted_content")
		}
		if k := kindOf(w.EncryptedContent); k != kString {
			return invalidType(path+".encrypted_content", kString, k)
		}
	case TypeReasoning:
		if len(w.Summary) == 0 {
			return MissingParameter(path + ".summary")
		}
		if kindOf(w.Summary) != kArray {
			return invalidType(path+".summary", kArray, kindOf(w.Summary))
		}
		var parts []struct {
			Type string          `json:"type"`
			Text json.RawMessage `json:"text"`
		}
		if err := json.Unmarshal(w.Summary, &parts); err != nil {
			return BadRequest(path+".summary", CodeInvalidType, "Invalid '%s.summary': expected an array of summary parts.", path)
		}
		for j, p := range parts {
			pp := fmt.Sprintf("%s.summary[%d]", path, j)
			if p.Type != "summary_text" {
				return InvalidValue(pp+".type", p.Type, []string{"summary_text"})
			}
			if kindOf(p.Text) != kString {
				return invalidType(pp+".text", kString, kindOf(p.Text))
			}
		}
		if k := kindOf(w.EncryptedContent); len(w.EncryptedContent) > 0 && k != kString && k != kNull {
			return invalidType(path+".encrypted_content", kString|kNull, k)
		}
	}
	return nil
}

// CheckCallPairs checks a context's tool calls and outputs, in order, as
// the hosted API does: every function_call_output (custom_tool_call_output)
// answers an earlier function_call (custom_tool_call) with its call_id,
// and no call is left without its output when a user, system or developer
// message follows it.
// context is the whole context the model will read (a parent's items,
// then the request's input); items before inputStart came from the parent,
// and param paths count input items from there (input[i]).
//
// The engine's validate stage calls it once the context is built.
func CheckCallPairs(context []Item, inputStart int) *Error {
	type call struct {
		kind string
		at   int
	}
	pending := map[string]call{} // call_id → the unanswered call
	var order []string           // pending call ids, oldest first
	calls := map[string]string{} // call_id → its call's type, answered or not
	for i := range context {
		it := &context[i]
		switch it.Type {
		case TypeFunctionCall, TypeCustomToolCall:
			if _, ok := pending[it.CallID]; !ok {
				order = append(order, it.CallID)
			}
			pending[it.CallID] = call{it.Type, i}
			calls[it.CallID] = it.Type
		case TypeFunctionCallOutput, TypeCustomToolCallOutput:
			want := TypeFunctionCall
			what := "function call output"
			if it.Type == TypeCustomToolCallOutput {
				want, what = TypeCustomToolCall, "custom tool call output"
			}
			if calls[it.CallID] != want {
				return BadRequest("input", "", "No tool call found for %s with call_id %s.", what, it.CallID)
			}
			delete(pending, it.CallID)
		case TypeMessage:
			if it.Role == "assistant" {
				continue // the model's own text may sit between its calls and their outputs
			}
			for _, id := range order {
				c, ok := pending[id]
				if !ok {
					continue
				}
				what := "function call"
				if c.kind == TypeCustomToolCall {
					what = "custom tool call"
				}
				return BadRequest("input", "", "No tool output found for %s %s.", what, id)
			}
			order = order[:0]
		}
	}
	return nil
}

// mentionsJSON reports whether the instructions, a string input or a
// message of the input say "json" in some form, as a json_object format
// needs.
func mentionsJSON(instructions, input json.RawMessage, items []Item) bool {
	for _, raw := range []json.RawMessage{instructions, input} {
		var s string
		if json.Unmarshal(raw, &s) == nil && strings.Contains(strings.ToLower(s), "json") {
			return true
		}
	}
	for i := range items {
		if items[i].Type == TypeMessage && strings.Contains(strings.ToLower(items[i].Text()), "json") {
			return true
		}
	}
	return false
}
