package api

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// strictWeather is a strict function tool that follows every strict rule.
const strictWeather = `{"type":"function","name":"get_weather","strict":true,"parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"],"additionalProperties":false}}`

func TestValidateCreateRefusesAsTheHostedAPIDoes(t *testing.T) {
	cases := []struct {
		name, body  string
		code, param string
		message     string // a part of the message
	}{
		{"unknown top-level parameter", `{"model":"m","input":"hi","temprature":0.5}`, CodeUnknownParameter, "temprature", "Unknown parameter: 'temprature'."},
		{"unknown reasoning field", `{"model":"m","reasoning":{"effort":"low","budget":3}}`, CodeUnknownParameter, "reasoning.budget", "Unknown parameter"},
		{"truncation enum", `{"model":"m","truncation":"sometimes"}`, CodeInvalidValue, "truncation", "Invalid value: 'sometimes'. Supported values are: 'auto' and 'disabled'."},
		{"service tier enum", `{"model":"m","service_tier":"gold"}`, CodeInvalidValue, "service_tier", "'gold'"},
		{"reasoning effort enum", `{"model":"m","reasoning":{"effort":"extreme"}}`, CodeInvalidValue, "reasoning.effort", "'extreme'"},
		{"reasoning summary enum", `{"model":"m","reasoning":{"summary":"long"}}`, CodeInvalidValue, "reasoning.summary", "'long'"},
		{"text format type enum", `{"model":"m","text":{"format":{"type":"xml"}}}`, CodeInvalidValue, "text.format.type", "Supported values are: 'text', 'json_object', and 'json_schema'."},
		{"tool_choice string enum", `{"model":"m","tool_choice":"sometimes"}`, CodeInvalidValue, "tool_choice", "'none', 'auto', and 'required'"},
		{"include enum", `{"model":"m","include":["reasoning.everything"]}`, CodeInvalidValue, "include[0]", "'reasoning.everything'"},
		{"text wrongly typed", `{"model":"m","text":"json"}`, CodeInvalidType, "text", "Invalid type for 'text': expected an object, but got a string instead."},
		{"reasoning wrongly typed", `{"model":"m","reasoning":"high"}`, CodeInvalidType, "reasoning", "expected one of an object or null, but got a string"},
		{"tool_choice wrongly typed", `{"model":"m","tool_choice":3}`, CodeInvalidType, "tool_choice", "expected one of a string or an object, but got an integer"},
		{"max_output_tokens a decimal", `{"model":"m","max_output_tokens":1.5}`, CodeInvalidType, "max_output_tokens", "expected one of an integer or null, but got a number"},
		{"model missing", `{"input":"hi"}`, CodeMissingRequiredParameter, "model", "Missing required parameter: 'model'."},
		{"tool_choice names an unknown function", `{"model":"m","tools":[` + strictWeather + `],"tool_choice":{"type":"function","name":"get_time"}}`, CodeInvalidValue, "tool_choice", "'get_time'"},
		{"tool_choice names a function as custom", `{"model":"m","tools":[` + strictWeather + `],"tool_choice":{"type":"custom","name":"get_weather"}}`, CodeInvalidValue, "tool_choice", "no custom tool"},
		{"tool_choice function without name", `{"model":"m","tools":[` + strictWeather + `],"tool_choice":{"type":"function"}}`, CodeMissingRequiredParameter, "tool_choice.name", ""},
		{"tool_choice unknown object type", `{"model":"m","tool_choice":{"type":"robot"}}`, CodeInvalidValue, "tool_choice.type", "'robot'"},
		{"call without output, then a user message", `{"model":"m","input":[{"role":"user","content":"weather?"},{"type":"function_call","call_id":"c1","name":"get_weather","arguments":"{}"},{"role":"user","content":"and now?"}]}`, "", "input", "No tool output found for function call c1."},
		{"custom tool output without its call", `{"model":"m","input":[{"role":"user","content":"go"},{"type":"custom_tool_call_output","call_id":"c9","output":"done"}]}`, "", "input", "No tool call found for custom tool call output with call_id c9."},
		{"function output answering a custom call", `{"model":"m","input":[{"type":"custom_tool_call","call_id":"c1","name":"patch","input":"x"},{"type":"function_call_output","call_id":"c1","output":"ok"}]}`, "", "input", "No tool call found for function call output with call_id c1."},
		{"unknown content part type", `{"model":"m","input":[{"role":"user","content":[{"type":"input_video","url":"x"}]}]}`, CodeInvalidValue, "input[0].content[0].type", "Supported values are: 'input_text', 'input_image', and 'input_file'."},
		{"output text in a user message", `{"model":"m","input":[{"role":"user","content":[{"type":"output_text","text":"x"}]}]}`, CodeInvalidValue, "input[0].content[0].type", "'output_text'"},
		{"input image in an assistant message", `{"model":"m","input":[{"role":"assistant","content":[{"type":"input_image","image_url":"x"}]}]}`, CodeInvalidValue, "input[0].content[0].type", "'output_text', 'refusal', and 'input_text'"},
		{"strict schema without additionalProperties false", `{"model":"m","text":{"format":{"type":"json_schema","name":"person","strict":true,"schema":{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}}}}`, CodeInvalidJSONSchema, "text.format.schema", "Invalid schema for response_format 'person': In context=(), 'additionalProperties' is required to be supplied and to be false."},
		{"strict function schema missing a required key", `{"model":"m","tools":[{"type":"function","name":"f","strict":true,"parameters":{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"string"}},"required":["a"],"additionalProperties":false}}]}`, CodeInvalidFunctionParameters, "tools[0].parameters", "Invalid schema for function 'f': In context=(), 'required' is required to be supplied and to be an array including every key in properties. Missing 'b'."},
		{"strict nested object", `{"model":"m","text":{"format":{"type":"json_schema","name":"p","strict":true,"schema":{"type":"object","properties":{"home":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}},"required":["home"],"additionalProperties":false}}}}`, CodeInvalidJSONSchema, "text.format.schema", "In context=('properties', 'home'), 'additionalProperties'"},
		{"strict unsupported keyword", `{"model":"m","text":{"format":{"type":"json_schema","name":"p","strict":true,"schema":{"type":"object","properties":{"a":{"allOf":[{"type":"string"}]}},"required":["a"],"additionalProperties":false}}}}`, CodeInvalidJSONSchema, "text.format.schema", "In context=('properties', 'a'), 'allOf' is not permitted."},
		{"strict root anyOf", `{"model":"m","text":{"format":{"type":"json_schema","name":"p","strict":true,"schema":{"anyOf":[{"type":"string"}]}}}}`, CodeInvalidJSONSchema, "text.format.schema", `schema must be a JSON Schema of 'type: "object"', got 'type: "None"'.`},
		{"strict array without items", `{"model":"m","text":{"format":{"type":"json_schema","name":"p","strict":true,"schema":{"type":"object","properties":{"tags":{"type":"array"}},"required":["tags"],"additionalProperties":false}}}}`, CodeInvalidJSONSchema, "text.format.schema", "In context=('properties', 'tags'), array schema missing items."},
		{"strict dangling ref", `{"model":"m","text":{"format":{"type":"json_schema","name":"p","strict":true,"schema":{"type":"object","properties":{"a":{"$ref":"#/$defs/A"}},"required":["a"],"additionalProperties":false}}}}`, CodeInvalidJSONSchema, "text.format.schema", ""},
		{"json_schema without a schema", `{"model":"m","text":{"format":{"type":"json_schema","name":"p"}}}`, CodeMissingRequiredParameter, "text.format.schema", ""},
		{"json_schema without a name", `{"model":"m","text":{"format":{"type":"json_schema","schema":{"type":"object"}}}}`, CodeMissingRequiredParameter, "text.format.name", ""},
		{"json_object without the word", `{"model":"m","input":"list three cities","text":{"format":{"type":"json_object"}}}`, CodeInvalidValue, "text.format", "must contain the word 'json'"},
		{"function name with spaces", `{"model":"m","tools":[{"type":"function","name":"get weather","parameters":{"type":"object","properties":{}}}]}`, CodeInvalidValue, "tools[0].name", "Invalid 'tools[0].name': string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'."},
		{"function name too long", `{"model":"m","tools":[{"type":"function","name":"` + strings.Repeat("a", 65) + `"}]}`, CodeStringAboveMaxLength, "tools[0].name", "maximum length 64"},
		{"custom tool name with a dot", `{"model":"m","tools":[{"type":"custom","name":"a.b"}]}`, CodeInvalidValue, "tools[0].name", "does not match pattern"},
		{"unknown tool type", `{"model":"m","tools":[{"type":"telepathy"}]}`, CodeInvalidValue, "tools[0].type", "'telepathy'"},
		{"function parameters not an object schema", `{"model":"m","tools":[{"type":"function","name":"f","parameters":{"type":"string"}}]}`, CodeInvalidFunctionParameters, "tools[0].parameters", `got 'type: "string"'`},
		{"function tool unknown field", `{"model":"m","tools":[{"type":"function","name":"f","paramters":{}}]}`, CodeUnknownParameter, "tools[0].paramters", ""},
		{"custom grammar without definition", `{"model":"m","tools":[{"type":"custom","name":"c","format":{"type":"grammar","syntax":"regex"}}]}`, CodeMissingRequiredParameter, "tools[0].format.definition", ""},
		{"custom regex that does not compile", `{"model":"m","tools":[{"type":"custom","name":"c","format":{"type":"grammar","syntax":"regex","definition":"(a"}}]}`, CodeInvalidValue, "tools[0].format.definition", "does not compile"},
		{"custom grammar syntax enum", `{"model":"m","tools":[{"type":"custom","name":"c","format":{"type":"grammar","syntax":"ebnf","definition":"x"}}]}`, CodeInvalidValue, "tools[0].format.syntax", "'lark' and 'regex'"},
		{"namespace holding a hosted tool", `{"model":"m","tools":[{"type":"namespace","name":"ns","tools":[{"type":"web_search"}]}]}`, CodeInvalidValue, "tools[0].tools[0].type", "'function' and 'custom'"},
		{"reasoning item without summary", `{"model":"m","input":[{"type":"reasoning","encrypted_content":"x"}]}`, CodeMissingRequiredParameter, "input[0].summary", ""},
		{"reasoning summary part of another type", `{"model":"m","input":[{"type":"reasoning","summary":[{"type":"text","text":"x"}]}]}`, CodeInvalidValue, "input[0].summary[0].type", "'summary_text'"},
		{"custom tool call without input", `{"model":"m","input":[{"type":"custom_tool_call","call_id":"c","name":"n"}]}`, CodeMissingRequiredParameter, "input[0].input", ""},
		{"unknown item type", `{"model":"m","input":[{"type":"telegram"}]}`, CodeInvalidValue, "input[0].type", ""},
		{"conversation object without id", `{"model":"m","conversation":{}}`, CodeMissingRequiredParameter, "conversation.id", ""},
		{"context_management entry without type", `{"model":"m","context_management":[{"compact_threshold":1000}]}`, CodeMissingRequiredParameter, "context_management[0].type", ""},
		{"a WebSocket message of another type", `{"type":"response.append","model":"m"}`, CodeInvalidValue, "type", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := ValidateCreate([]byte(c.body))
			if err == nil {
				t.Fatalf("accepted %s", c.body)
			}
			if err.Status != 400 || err.Type != "invalid_request_error" || err.Code != c.code || err.Param != c.param || !strings.Contains(err.Message, c.message) {
				t.Fatalf("got %d %s code=%q param=%q %q\nwant 400 invalid_request_error code=%q param=%q message containing %q",
					err.Status, err.Type, err.Code, err.Param, err.Message, c.code, c.param, c.message)
			}
		})
	}
}

func TestValidateCreateAccepts(t *testing.T) {
	cases := []struct{ name, body string }{
		{"minimal", `{"model":"m","input":"hi"}`},
		{"every enum at a valid value", `{"model":"m","truncation":"auto","service_tier":"flex","reasoning":{"effort":"xhigh","summary":"detailed"},"text":{"format":{"type":"text"},"verbosity":"low"},"tool_choice":"required","include":["reasoning.encrypted_content"],"prompt_cache_retention":"24h"}`},
		{"nulls where the SDK allows them", `{"model":"m","truncation":null,"service_tier":null,"reasoning":null,"instructions":null,"previous_response_id":null,"max_output_tokens":null,"include":null,"conversation":null}`},
		{"agentloop's own parameters", `{"type":"response.create","model":"m","generate":false,"stream_id":"lane-1","ignore_eos":true,"max_output_tokens":16}`},
		{"long-sessions parameters", `{"model":"m","background":true,"conversation":"conv_1","context_management":[{"type":"compaction","compact_threshold":20000}]}`},
		{"conversation as an object", `{"model":"m","conversation":{"id":"conv_1"}}`},
		{"forced function", `{"model":"m","tools":[` + strictWeather + `],"tool_choice":{"type":"function","name":"get_weather"}}`},
		{"forced namespaced function", `{"model":"m","tools":[{"type":"namespace","name":"ns","tools":[{"type":"function","name":"f","parameters":{"type":"object","properties":{}}}]}],"tool_choice":{"type":"function","name":"ns.f"}}`},
		{"forced custom tool with a grammar", `{"model":"m","tools":[{"type":"custom","name":"id_maker","format":{"type":"grammar","syntax":"regex","definition":"ID-[0-9]{4}"}}],"tool_choice":{"type":"custom","name":"id_maker"}}`},
		{"allowed tools", `{"model":"m","tools":[` + strictWeather + `],"tool_choice":{"type":"allowed_tools","mode":"required","tools":[{"type":"function","name":"get_weather"}]}}`},
		{"function without parameters", `{"model":"m","tools":[{"type":"function","name":"ping","parameters":null,"strict":false}]}`},
		{"non-strict schema with anything JSON Schema allows", `{"model":"m","text":{"format":{"type":"json_schema","name":"loose","schema":{"type":"object","properties":{"a":{"type":"string","minLength":2,"default":"xx"}},"allOf":[{"required":["a"]}]}}}}`},
		{"strict schema with every supported feature", `{"model":"m","text":{"format":{"type":"json_schema","name":"full","strict":true,"schema":` + fullStrictSchema + `}}}`},
		{"json_object asked for in the instructions", `{"model":"m","instructions":"Answer in JSON.","input":"three cities","text":{"format":{"type":"json_object"}}}`},
		{"json_object asked for in a string input", `{"model":"m","input":"three cities, as JSON","text":{"format":{"type":"json_object"}}}`},
		{"calls answered in any order, with the model's text between", `{"model":"m","input":[{"role":"user","content":"go"},{"type":"reasoning","summary":[]},{"type":"function_call","call_id":"a","name":"f","arguments":"{}"},{"role":"assistant","content":[{"type":"output_text","text":"working"}]},{"type":"custom_tool_call","call_id":"b","name":"g","input":"x"},{"type":"custom_tool_call_output","call_id":"b","output":"ok"},{"type":"function_call_output","call_id":"a","output":[{"type":"input_text","text":"ok"}]},{"role":"user","content":"thanks"}]}`},
		{"a continuation's output answers its parent's call", `{"model":"m","previous_response_id":"resp_1","input":[{"type":"function_call_output","call_id":"c1","output":"ok"}]}`},
		{"an item reference may be the call", `{"model":"m","input":[{"type":"item_reference","id":"fc_1"},{"type":"function_call_output","call_id":"c1","output":"ok"}]}`},
		{"reasoning as Codex replays it", `{"model":"m","input":[{"type":"reasoning","summary":[{"type":"summary_text","text":"Thinking"}],"content":null,"encrypted_content":"gAAAAB"}]}`},
		{"every part type for users", `{"model":"m","input":[{"role":"user","content":[{"type":"input_text","text":"a"},{"type":"input_image","image_url":"data:","detail":"auto"},{"type":"input_file","file_id":"f"}]}]}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if err := ValidateCreate([]byte(c.body)); err != nil {
				t.Fatalf("refused: %v (param %q)", err, err.Param)
			}
		})
	}
}

// fullStrictSchema uses every feature a strict schema may: nested
// objects, $defs and $ref, anyOf, nullable types, enums, const, formats,
// patterns and bounds.
const fullStrictSchema = `{
	"type": "object",
	"$defs": {"Place": {"type": "object", "properties": {"city": {"type": "string"}, "country": {"type": ["string", "null"]}}, "required": ["city", "country"], "additionalProperties": false}},
	"properties": {
		"name": {"type": "string", "pattern": "^[A-Z][a-z]+$"},
		"kind": {"type": "string", "enum": ["person", "robot"]},
		"version": {"const": 2},
		"born": {"type": "string", "format": "date"},
		"email": {"type": ["string", "null"], "format": "email"},
		"age": {"type": "integer", "minimum": 0, "maximum": 150},
		"home": {"$ref": "#/$defs/Place"},
		"tags": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 5},
		"contact": {"anyOf": [{"type": "object", "properties": {"phone": {"type": "string"}}, "required": ["phone"], "additionalProperties": false}, {"type": "null"}]}
	},
	"required": ["name", "kind", "version", "born", "email", "age", "home", "tags", "contact"],
	"additionalProperties": false
}`

// TestCodexRequestsAreAccepted holds the creates Codex 0.171.0 sent (over
// HTTP and WebSocket mode; recorded by clients'
// TestCodexRequestsPassStrictValidation, long texts elided) to
// ValidateCreate, and a reasoning turn as Codex replays it.
func TestCodexRequestsAreAccepted(t *testing.T) {
	files, err := filepath.Glob("testdata/codex/*.json")
	if err != nil || len(files) < 4 {
		t.Fatalf("recorded Codex requests: %v, %v", files, err)
	}
	for _, f := range files {
		body, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if e := ValidateCreate(body); e != nil {
			t.Errorf("%s refused: %v (param %q)", f, e, e.Param)
		}
		if !strings.Contains(f, "http-1") {
			continue
		}
		// The same turn with the reasoning item Codex replays before its
		// call (store:false, include reasoning.encrypted_content).
		var req map[string]any
		if err := json.Unmarshal(body, &req); err != nil {
			t.Fatal(err)
		}
		input := req["input"].([]any)
		reasoning := map[string]any{"type": "reasoning", "summary": []any{map[string]any{"type": "summary_text", "text": "**Running echo**"}}, "encrypted_content": "AQAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"}
		at := len(input) - 2
		input = append(input[:at], append([]any{reasoning}, input[at:]...)...)
		req["input"] = input
		withReasoning, _ := json.Marshal(req)
		if e := ValidateCreate(withReasoning); e != nil {
			t.Errorf("%s with a reasoning item refused: %v (param %q)", f, e, e.Param)
		}
	}
}

func TestCheckCallPairsAcrossAParent(t *testing.T) {
	parent := []Item{
		{Type: TypeMessage, Role: "user"},
		{Type: TypeFunctionCall, CallID: "c1", Name: "f"},
	}
	if err := CheckCallPairs(append(parent, Item{Type: TypeFunctionCallOutput, CallID: "c1"}), 2); err != nil {
		t.Fatalf("an output answering the parent's call: %v", err)
	}
	err := CheckCallPairs(append(parent, Item{Type: TypeMessage, Role: "user"}), 2)
	if err == nil || err.Message != "No tool output found for function call c1." || err.Param != "input" {
		t.Fatalf("a user message after the parent's unanswered call: %v", err)
	}
}

func TestInvalidEncryptedContent(t *testing.T) {
	e := InvalidEncryptedContent("gAAAAABnXYZ1234567890DQ==")
	if e.Status != 400 || e.Code != CodeInvalidEncryptedContent || e.Param != "" ||
		e.Message != "The encrypted content gAAA...DQ== could not be verified. Reason: Encrypted content could not be decrypted or parsed." {
		t.Fatalf("got %+v", e)
	}
}

// FuzzValidateCreate: no body makes ValidateCreate panic, and what it
// refuses it refuses with a 400 invalid_request_error.
func FuzzValidateCreate(f *testing.F) {
	f.Add(`{"model":"m","input":"hi"}`)
	f.Add(`{"model":"m","tools":[` + strictWeather + `],"tool_choice":{"type":"function","name":"get_weather"}}`)
	f.Add(`{"model":"m","text":{"format":{"type":"json_schema","name":"full","strict":true,"schema":` + fullStrictSchema + `}}}`)
	f.Add(`{"model":"m","input":[{"type":"reasoning","summary":[]},{"type":"custom_tool_call","call_id":"b","name":"g","input":"x"},{"type":"custom_tool_call_output","call_id":"b","output":"ok"}]}`)
	f.Add(`{"model":1,"text":{"format":{"type":"json_schema","name":"x","strict":true,"schema":{"type":"object","properties":{"a":{"$ref":"#"}},"required":["a"],"additionalProperties":false}}}}`)
	f.Fuzz(func(t *testing.T, body string) {
		err := ValidateCreate([]byte(body))
		if err != nil && (err.Status != 400 || err.Type != "invalid_request_error" || err.Message == "") {
			t.Fatalf("refused with %+v", err)
		}
	})
}

// BenchmarkValidateCreate measures the strict check of a Codex create
// (testdata/codex/http-1.json, about 16 KB with its tools' schemas), next
// to DecodeCreate and DecodeInput, the parse stage's work today.
func BenchmarkValidateCreate(b *testing.B) {
	body, err := os.ReadFile("testdata/codex/http-1.json")
	if err != nil {
		b.Fatal(err)
	}
	b.Run("ValidateCreate", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			if e := ValidateCreate(body); e != nil {
				b.Fatal(e)
			}
		}
	})
	b.Run("DecodeCreate+DecodeInput", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			req, e := DecodeCreate(body)
			if e != nil {
				b.Fatal(e)
			}
			if _, e := req.DecodeInput(); e != nil {
				b.Fatal(e)
			}
		}
	})
}

func BenchmarkValidateCreateWithCachedTools(b *testing.B) {
	body, err := os.ReadFile("testdata/codex/http-1.json")
	if err != nil {
		b.Fatal(err)
	}
	benchValidateWithCachedTools(b, body)
}

func TestToolChoiceName(t *testing.T) {
	cases := []struct{ raw, want string }{
		{``, "auto"}, {`"none"`, "none"}, {`"required"`, "required"},
		{`{"type":"function","name":"get_weather"}`, "get_weather"},
		{`{"type":"custom","name":"apply_patch"}`, "apply_patch"},
		{`{"type":"allowed_tools","mode":"required","tools":[]}`, "required"},
		{`{"type":"file_search"}`, "auto"},
	}
	for _, c := range cases {
		req := CreateRequest{ToolChoice: json.RawMessage(c.raw)}
		if got := req.ToolChoiceName(); got != c.want {
			t.Errorf("%s: %q, want %q", c.raw, got, c.want)
		}
	}
}
