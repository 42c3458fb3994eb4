package policy

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"agentloop/inference"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

func newTestTokenizer(tb testing.TB) *inference.Tokenizer {
	tb.Helper()
	tok, err := inference.NewTokenizer()
	if err != nil {
		tb.Fatalf("NewTokenizer: %v", err)
	}
	return tok
}

// schemaOf decodes a JSON Schema the way the engine does (encoding/json).
func schemaOf(t testing.TB, text string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(text), &m); err != nil {
		t.Fatalf("bad test schema: %v\n%s", err, text)
	}
	return m
}

// compileSchema compiles a tool schema the way the engine validates tools.
func compileSchema(t testing.TB, text string) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(text))
	if err != nil {
		t.Fatalf("bad test schema: %v", err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("tool.json", doc); err != nil {
		t.Fatalf("AddResource: %v", err)
	}
	sch, err := c.Compile("tool.json")
	if err != nil {
		t.Fatalf("Compile: %v\n%s", err, text)
	}
	return sch
}

// validateArguments fails unless args is a JSON object that satisfies sch.
func validateArguments(t testing.TB, sch *jsonschema.Schema, args string) map[string]any {
	t.Helper()
	v, err := jsonschema.UnmarshalJSON(strings.NewReader(args))
	if err != nil {
		t.Fatalf("arguments are not JSON: %v: %s", err, args)
	}
	if err := sch.Validate(v); err != nil {
		t.Fatalf("arguments %s do not validate: %v", args, err)
	}
	obj, ok := v.(map[string]any)
	if !ok {
		t.Fatalf("arguments %s are not an object", args)
	}
	return obj
}

const weatherSchema = `{"type":"object","properties":{
	"location":{"type":"string","description":"City name"},
	"unit":{"type":"string","enum":["celsius","fahrenheit"]}},
	"required":["location"],"additionalProperties":false}`

var argumentSchemas = []struct {
	name   string
	schema string
}{
	{"weather", weatherSchema},
	{"strict all required", `{"type":"object","additionalProperties":false,"required":["city","days","unit","include_hourly"],
		"properties":{"city":{"type":"string"},"days":{"type":"integer","minimum":1,"maximum":14},
		"unit":{"type":["string","null"],"enum":["c","f",null]},"include_hourly":{"type":"boolean"}}}`},
	{"numbers and bounds", `{"type":"object","required":["a","b","c","d","e","f"],"properties":{
		"a":{"type":"integer","minimum":10,"maximum":12},
		"b":{"type":"number","exclusiveMinimum":0,"exclusiveMaximum":1},
		"c":{"type":"number","minimum":0.5,"multipleOf":0.25},
		"d":{"type":"integer","multipleOf":7,"minimum":50},
		"e":{"type":"number","maximum":-3},
		"f":{"type":"integer","exclusiveMaximum":0}}}`},
	{"multipleOf a tenth", `{"type":"object","required":["x"],"properties":{"x":{"type":"number","multipleOf":0.1,"minimum":0.25,"maximum":0.45}}}`},
	{"string lengths", `{"type":"object","required":["short","long","code"],"properties":{
		"short":{"type":"string","maxLength":3},
		"long":{"type":"string","minLength":40},
		"code":{"type":"string","minLength":2,"maxLength":2}}}`},
	{"formats", `{"type":"object","required":["when","day","email","site","id","ip"],"properties":{
		"when":{"type":"string","format":"date-time"},"day":{"type":"string","format":"date"},
		"email":{"type":"string","format":"email"},"site":{"type":"string","format":"uri"},
		"id":{"type":"string","format":"uuid"},"ip":{"type":"string","format":"ipv4"}}}`},
	{"arrays", `{"type":"object","required":["tags","cities","matrix","picks"],"properties":{
		"tags":{"type":"array","items":{"type":"string"},"minItems":3,"maxItems":5,"uniqueItems":true},
		"cities":{"type":"array","items":{"type":"string"}},
		"matrix":{"type":"array","items":{"type":"array","items":{"type":"integer","minimum":1},"minItems":2},"minItems":2},
		"picks":{"type":"array","items":{"enum":["x","y","z"]},"minItems":3,"uniqueItems":true}}}`},
	{"nested objects", `{"type":"object","required":["order"],"properties":{"order":{"type":"object",
		"required":["customer","items","shipping"],"properties":{
		"customer":{"type":"object","required":["name","email"],"properties":{"name":{"type":"string"},"email":{"type":"string","format":"email"}}},
		"items":{"type":"array","minItems":1,"items":{"type":"object","required":["sku","qty"],"properties":{"sku":{"type":"string"},"qty":{"type":"integer","minimum":1}}}},
		"shipping":{"type":"object","required":["express"],"properties":{"express":{"type":"boolean"},"notes":{"type":"string"}}}}}}}`},
	{"refs and defs", `{"type":"object","$defs":{"place":{"type":"object","required":["name","lat","lon"],
		"properties":{"name":{"type":"string"},"lat":{"type":"number","minimum":-90,"maximum":90},"lon":{"type":"number","minimum":-180,"maximum":180}}}},
		"required":["from","to"],"properties":{"from":{"$ref":"#/$defs/place"},"to":{"$ref":"#/$defs/place"}}}`},
	{"recursive tree", `{"$ref":"#/$defs/node","$defs":{"node":{"type":"object","required":["label","children"],
		"properties":{"label":{"type":"string"},"children":{"type":"array","items":{"$ref":"#/$defs/node"}}}}}}`},
	{"anyOf oneOf allOf", `{"type":"object","required":["v","w","x"],"properties":{
		"v":{"anyOf":[{"type":"null"},{"type":"integer","minimum":3}]},
		"w":{"oneOf":[{"type":"string","maxLength":5},{"type":"integer"}]},
		"x":{"allOf":[{"type":"object","required":["a"],"properties":{"a":{"type":"string"}}},{"required":["b"],"properties":{"b":{"type":"boolean"}}}]}}}`},
	{"const enum and defaults", `{"type":"object","required":["kind","level","mode","n"],"properties":{
		"kind":{"const":"fixed"},"level":{"enum":[1,2,3]},"mode":{"type":"string","enum":["fast","slow"],"default":"slow"},
		"n":{"type":"integer","default":4,"minimum":0}}}`},
	{"min and max properties", `{"type":"object","minProperties":2,"maxProperties":3,"properties":{
		"a":{"type":"string"},"b":{"type":"integer"},"c":{"type":"boolean"},"d":{"type":"number"}}}`},
	{"no properties", `{"type":"object","properties":{}}`},
	{"draft-4 exclusive bounds", `{"$schema":"http://json-schema.org/draft-04/schema#","type":"object","required":["p"],
		"properties":{"p":{"type":"integer","minimum":0,"exclusiveMinimum":true,"maximum":2,"exclusiveMaximum":true}}}`},
}

var argumentQuestions = []string{
	"What's the weather in Paris and Tokyo on 2026-03-01?",
	"Email ada@example.org the report at https://example.org/r/7 about \"quarterly numbers\" within 3 days",
	"hello",
	"",
	"Read src/main.go and fix the bug in line 42, then run `go test ./...`",
	"Réserve une table à Montréal pour 4 personnes 🍽️",
}

func TestArgumentsSatisfySchemas(t *testing.T) {
	for _, tt := range argumentSchemas {
		t.Run(tt.name, func(t *testing.T) {
			sch := compileSchema(t, tt.schema)
			params := schemaOf(t, tt.schema)
			for qi, q := range argumentQuestions {
				for seed := range uint64(6) {
					args := argumentsFor(params, q, inference.HashStrings(seed, q))
					validateArguments(t, sch, args)
					if qi == 0 && seed == 0 {
						t.Logf("%s", args)
					}
				}
			}
		})
	}
}

func TestArgumentsUseTheQuestion(t *testing.T) {
	tests := []struct {
		question, schema string
		want             map[string]string // property → its JSON encoding
	}{
		{"Weather in Paris?", weatherSchema, map[string]string{"location": `"Paris"`}},
		{"What's the weather like in New York City today, in fahrenheit?", weatherSchema,
			map[string]string{"location": `"New York City"`, "unit": `"fahrenheit"`}},
		{"Tokyo weather please", weatherSchema, map[string]string{"location": `"Tokyo"`}},
		{`Search for "continuous batching" papers`, `{"type":"object","required":["query"],"properties":{"query":{"type":"string"}}}`,
			map[string]string{"query": `"continuous batching"`}},
		{"Show me the 7 latest issues", `{"type":"object","required":["limit"],"properties":{"limit":{"type":"integer","maximum":50}}}`,
			map[string]string{"limit": `7`}},
		{"Open docs/guide.md", `{"type":"object","required":["path"],"properties":{"path":{"type":"string"}}}`,
			map[string]string{"path": `"docs/guide.md"`}},
		{"Compare Paris and Lisbon", `{"type":"object","required":["cities"],"properties":{"cities":{"type":"array","items":{"type":"string"}}}}`,
			map[string]string{"cities": `["Paris","Lisbon"]`}},
	}
	for _, tt := range tests {
		t.Run(tt.question, func(t *testing.T) {
			args := validateArguments(t, compileSchema(t, tt.schema), argumentsFor(schemaOf(t, tt.schema), tt.question, 1))
			for k, want := range tt.want {
				got, _ := json.Marshal(args[k])
				if string(got) != want {
					t.Errorf("%s = %s, want %s (all: %v)", k, got, want, args)
				}
			}
		})
	}
}

func newChat(t testing.TB) Policy {
	return NewChatPolicy(newTestTokenizer(t))
}

func userAsks(text string) []Item {
	return []Item{{Type: "message", Role: "user", Text: text}}
}

var weatherTools = []Tool{
	{Name: "get_weather", Description: "Get the current weather for a location.", Parameters: nil},
	{Name: "search_web", Description: "Search the web for pages about a query.", Parameters: nil},
	{Name: "read_file", Description: "Read a file of the repository.", Parameters: nil},
}

func init() {
	var w, s, r map[string]any
	_ = json.Unmarshal([]byte(weatherSchema), &w)
	_ = json.Unmarshal([]byte(`{"type":"object","properties":{"query":{"type":"string"}},"required":["query"]}`), &s)
	_ = json.Unmarshal([]byte(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`), &r)
	weatherTools[0].Parameters, weatherTools[1].Parameters, weatherTools[2].Parameters = w, s, r
}

func TestChatPolicyDecidesToCall(t *testing.T) {
	chat := newChat(t)
	tests := []struct {
		name       string
		question   string
		tools      []Tool
		toolChoice string
		wantCall   string // "" = a message
	}{
		{"matching noun", "Weather in Paris?", weatherTools, "auto", "get_weather"},
		{"matching verb", "Can you search for Go release notes?", weatherTools, "", "search_web"},
		{"verb in another form", "Please read the files in cmd/", weatherTools, "auto", "read_file"},
		{"nothing matches", "Tell me a joke about cats.", weatherTools, "auto", ""},
		{"none never calls", "Weather in Paris?", weatherTools, "none", ""},
		{"required calls the best tool", "Look up the Go release notes online", weatherTools, "required", "search_web"},
		{"required without a match calls the first", "Tell me a joke.", weatherTools, "required", "get_weather"},
		{"forced function", "Weather in Paris?", weatherTools, "read_file", "read_file"},
		{"no tools", "Weather in Paris?", nil, "auto", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reply := chat.Respond(&Request{Items: userAsks(tt.question), Tools: tt.tools, ToolChoice: tt.toolChoice, Seed: 3})
			if len(reply.Items) != 1 {
				t.Fatalf("reply has %d items, want 1: %+v", len(reply.Items), reply)
			}
			it := reply.Items[0]
			if tt.wantCall == "" {
				if it.Type != OutputMessage || it.Text == "" {
					t.Fatalf("want a message, got %+v", it)
				}
				return
			}
			if it.Type != OutputFunctionCall || it.Name != tt.wantCall {
				t.Fatalf("want a call to %s, got %+v", tt.wantCall, it)
			}
			for _, tool := range tt.tools {
				if tool.Name == it.Name {
					raw, _ := json.Marshal(tool.Parameters)
					validateArguments(t, compileSchema(t, string(raw)), it.Arguments)
				}
			}
		})
	}
}

func TestChatPolicyAnswersFromToolOutput(t *testing.T) {
	chat := newChat(t)
	tests := []struct {
		name    string
		output  string
		mention []string
	}{
		{"json object", `{"temperature":18,"conditions":"light rain","humidity":0.81}`, []string{"18", `"light rain"`, "0.81", "get_weather"}},
		{"json list", `[{"title":"Go 1.26 released"},{"title":"other"}]`, []string{"2 result", "get_weather"}},
		{"plain text", "Sunny, 24°C\nwind 5 km/h", []string{"Sunny, 24°C"}},
		{"empty", "", []string{"nothing"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			items := append(userAsks("Weather in Paris?"),
				Item{Type: "function_call", Name: "get_weather", CallID: "call_1", Arguments: `{"location":"Paris"}`},
				Item{Type: "function_call_output", CallID: "call_1", Output: tt.output})
			reply := chat.Respond(&Request{Items: items, Tools: weatherTools, ToolChoice: "auto"})
			if len(reply.Items) != 1 || reply.Items[0].Type != OutputMessage {
				t.Fatalf("want one message after the tool output, got %+v", reply)
			}
			for _, m := range tt.mention {
				if !strings.Contains(reply.Items[0].Text, m) {
					t.Errorf("answer %q does not mention %s", reply.Items[0].Text, m)
				}
			}
		})
	}
}

func TestChatPolicyText(t *testing.T) {
	tok := newTestTokenizer(t)
	chat := NewChatPolicy(tok)
	lengths := map[int]bool{}
	for seed := range int64(40) {
		q := fmt.Sprintf("How do I profile a Go program number %d?", seed%4)
		req := &Request{Items: userAsks(q), Seed: seed}
		a, b := chat.Respond(req), chat.Respond(req)
		if len(a.Items) != 1 || a.Items[0].Type != OutputMessage {
			t.Fatalf("want one message, got %+v", a)
		}
		text := a.Items[0].Text
		if text != b.Items[0].Text {
			t.Fatalf("seed %d: two replies differ", seed)
		}
		if !strings.Contains(text, "How do I profile a Go program") {
			t.Fatalf("reply %q does not refer to the question", text)
		}
		n := tok.Count(text)
		// The reply carries pieces built from the sentence bank's, tokenized
		// once; they must be what tokenizing the whole reply gives.
		if got := a.Items[0].Pieces; !slices.Equal(got, tok.Pieces(text)) {
			t.Fatalf("seed %d: carried pieces %q differ from the tokenizer's %q", seed, got, tok.Pieces(text))
		}
		if n < 5 || n > maxChatTokens+40 {
			t.Fatalf("reply of %d tokens: %q", n, text)
		}
		lengths[n] = true
	}
	if len(lengths) < 5 {
		t.Fatalf("only %d distinct reply lengths over 40 seeds", len(lengths))
	}
	if got := chat.Respond(&Request{}); len(got.Items) != 1 || got.Items[0].Text == "" {
		t.Fatalf("empty request: %+v", got)
	}
	// Questions whose quoted topic ends in odd characters: the opening's
	// pieces and the sentences' still join into the reply's own.
	for i, q := range []string{"日本語のテキスト🦀", "tabs\tand \x7f del?", "ends in a quote\"", "a b c d e f g h i j k l m n o p q r s t", "\xff\xfe broken"} {
		got := chat.Respond(&Request{Items: userAsks(q), Seed: int64(i)})
		text := got.Items[0].Text
		if p := got.Items[0].Pieces; p != nil && !slices.Equal(p, tok.Pieces(text)) {
			t.Fatalf("%q: carried pieces %q differ from the tokenizer's %q", q, p, tok.Pieces(text))
		}
	}
}

func TestExactTokens(t *testing.T) {
	tok := newTestTokenizer(t)
	chat := NewChatPolicy(tok)
	questions := []string{
		"Tell me about continuous batching.",
		"🦀🦀 crabs 日本語 𝔘𝔫𝔦𝔠𝔬𝔡𝔢   trailing spaces   ",
		"",
	}
	for _, q := range questions {
		for _, n := range []int{1, 2, 3, 7, 16, 64, 150, 151, 500, 2048} {
			reply := chat.Respond(&Request{Items: userAsks(q), Tools: weatherTools, ToolChoice: "required", ExactTokens: n, Seed: int64(n)})
			if len(reply.Items) != 1 || reply.Items[0].Type != OutputMessage {
				t.Fatalf("ExactTokens %d: want one message, got %+v", n, reply)
			}
			it := &reply.Items[0]
			text := it.FullText()
			if got := tok.Count(text); got != n {
				t.Fatalf("ExactTokens %d for %q: text has %d tokens: %q", n, q, got, text)
			}
			if got := len(tok.Pieces(text)); got != n {
				t.Fatalf("ExactTokens %d: %d pieces", n, got)
			}
			// The reply carries its pieces, so the engine does not tokenize
			// it again; they must be the tokenizer's own.
			if got := expandPieces(it); !slices.Equal(got, tok.Pieces(text)) {
				t.Fatalf("ExactTokens %d: carried pieces %q differ from the tokenizer's", n, got)
			}
		}
	}
}

func TestFillerWordsAreSingleTokens(t *testing.T) {
	tok := newTestTokenizer(t)
	for _, w := range fillerWords {
		if n := tok.Count(w); n != 1 {
			t.Errorf("filler %q is %d tokens", w, n)
		}
		prevs := []string{"word", "end.", "🦀", "42", ")", "x" + w, "it's"}
		if !strings.HasPrefix(w, " ") {
			prevs = []string{"length"} // punctuation only ever follows a filler word
		}
		for _, prev := range prevs {
			if got, want := tok.Count(prev+w), tok.Count(prev)+1; got != want {
				t.Errorf("%q + %q = %d tokens, want %d", prev, w, got, want)
			}
		}
	}
}

func FuzzArguments(f *testing.F) {
	for _, s := range argumentSchemas {
		f.Add(s.schema, argumentQuestions[0])
	}
	f.Add(`{"$ref":"#","properties":{"a":{"$ref":"#"},"b":{"$ref":"#"}},"required":["a","b"]}`, "x")
	f.Add(`{"allOf":[{"$ref":"#"}]}`, "")
	f.Add(`{"allOf":[{"$ref":"#"},{"$ref":"#"},{"$ref":"#"},{"$ref":"#"},{"$ref":"#"}],"properties":{"a":{"$ref":"#"},"b":{"$ref":"#"}},"required":["a","b"]}`, "x")
	f.Add(`{"anyOf":[{"$ref":"#"},{"$ref":"#"}],"items":{"$ref":"#"},"minItems":4096}`, "")
	f.Fuzz(func(t *testing.T, schema, question string) {
		var m map[string]any
		if json.Unmarshal([]byte(schema), &m) != nil {
			return
		}
		args := argumentsFor(m, question, 7)
		if !json.Valid([]byte(args)) || len(args) > 8<<20 {
			t.Fatalf("arguments are not JSON or too large (%d bytes)", len(args))
		}
		if out := structuredOutput(m, question, 7); !json.Valid([]byte(out)) || len(out) > 8<<20 {
			t.Fatalf("structured output is not JSON or too large (%d bytes)", len(out))
		}
	})
}

func BenchmarkChatPolicyCall(b *testing.B) {
	chat := newChat(b)
	req := &Request{Items: userAsks("What's the weather like in New York City today?"), Tools: weatherTools}
	for b.Loop() {
		chat.Respond(req)
	}
}
