package policy

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"agentloop/api"
)

// structuredSchemas cover what a structured output may ask for; the strict
// ones follow api.CheckSchema's strict rules.
var structuredSchemas = []struct {
	name, schema string
	strict       bool
}{
	{"person, strict, every supported feature", `{
		"type": "object",
		"$defs": {"Place": {"type": "object", "properties": {"city": {"type": "string"}, "country": {"type": ["string", "null"]}}, "required": ["city", "country"], "additionalProperties": false}},
		"properties": {
			"name": {"type": "string", "pattern": "^[A-Z][a-z]{2,8}$"},
			"kind": {"type": "string", "enum": ["person", "robot", "cat"]},
			"version": {"const": 2},
			"born": {"type": "string", "format": "date"},
			"seen": {"type": "string", "format": "date-time"},
			"id": {"type": "string", "format": "uuid"},
			"site": {"type": "string", "format": "uri"},
			"email": {"type": ["string", "null"], "format": "email"},
			"age": {"type": "integer", "minimum": 18, "maximum": 99},
			"score": {"type": "number", "exclusiveMinimum": 0, "maximum": 1},
			"home": {"$ref": "#/$defs/Place"},
			"tags": {"type": "array", "items": {"type": "string", "enum": ["a", "b", "c"]}, "maxItems": 5},
			"contact": {"anyOf": [
				{"type": "object", "properties": {"phone": {"type": "string", "pattern": "^\\+[0-9]{6,10}$"}}, "required": ["phone"], "additionalProperties": false},
				{"type": "string", "format": "email"},
				{"type": "null"}
			]}
		},
		"required": ["name", "kind", "version", "born", "seen", "id", "site", "email", "age", "score", "home", "tags", "contact"],
		"additionalProperties": false
	}`, true},
	{"recursive tree, strict", `{
		"type": "object",
		"$defs": {"Node": {"type": "object", "properties": {"label": {"type": "string"}, "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}}}, "required": ["label", "children"], "additionalProperties": false}},
		"properties": {"root": {"$ref": "#/$defs/Node"}},
		"required": ["root"],
		"additionalProperties": false
	}`, true},
	{"optional properties, not strict", `{
		"type": "object",
		"properties": {
			"title": {"type": "string", "minLength": 3},
			"summary": {"type": "string"},
			"rating": {"type": "integer", "minimum": 1, "maximum": 5},
			"links": {"type": "array", "items": {"type": "string", "format": "uri"}, "minItems": 1},
			"author": {"type": "object", "properties": {"name": {"type": "string"}, "handle": {"type": "string"}}, "required": ["name"]},
			"choice": {"oneOf": [{"type": "integer"}, {"type": "boolean"}]}
		},
		"required": ["title"]
	}`, false},
}

// seedsForCoverage is how many seeds the coverage tests try: with a fair
// coin per optional property, one is missed with odds 2⁻⁶⁴.
const seedsForCoverage = 64

func structuredReply(t *testing.T, p Policy, schema map[string]any, seed int64) string {
	t.Helper()
	reply := p.Respond(&Request{Items: userAsks("Describe Ada, born 1815-12-10, reach her at ada@example.com."), Seed: seed,
		Format: TextFormat{Type: FormatJSONSchema, Schema: schema, Name: "out"}})
	if len(reply.Items) != 1 || reply.Items[0].Type != OutputMessage {
		t.Fatalf("reply %+v, want one message", reply.Items)
	}
	return reply.Items[0].Text
}

func TestStructuredOutputsValidateAndCoverTheSchema(t *testing.T) {
	p := newChat(t)
	for _, c := range structuredSchemas {
		t.Run(c.name, func(t *testing.T) {
			schema := schemaOf(t, c.schema)
			if err := api.CheckSchema(schema, c.strict, false); err != nil {
				t.Fatalf("api.CheckSchema refuses the test schema: %v", err)
			}
			sch := compileAsserting(t, c.schema) // formats too
			seen := map[string]bool{}            // what the instances showed, as paths
			for seed := range int64(seedsForCoverage) {
				out := structuredReply(t, p, schema, seed)
				if again := structuredReply(t, p, schema, seed); again != out {
					t.Fatalf("seed %d: two replies differ:\n%s\n%s", seed, out, again)
				}
				v := validateArguments(t, sch, out)
				record(seen, "", v)
			}
			for _, want := range coverageWanted[c.name] {
				if !seen[want] {
					t.Errorf("over %d seeds no instance showed %s; seen: %s", seedsForCoverage, want, keysOf(seen))
				}
			}
		})
	}
}

// coverageWanted lists, per schema, what some seed must show: every
// optional property, every anyOf (oneOf) branch by its JSON type, both
// sides of a nullable type, and arrays holding items.
var coverageWanted = map[string][]string{
	"person, strict, every supported feature": {
		"/email:string", "/email:null", "/home/country:string", "/home/country:null",
		"/contact:object", "/contact:string", "/contact:null", "/tags/0:string",
	},
	"recursive tree, strict": {"/root/children/0:object", "/root/children/0/children/0:object"},
	"optional properties, not strict": {
		"/summary:string", "/rating:number", "/links/0:string", "/author:object", "/author/handle:string",
		"/choice:number", "/choice:bool",
	},
}

// record notes each value's path and JSON type ("/a/0:string").
func record(seen map[string]bool, path string, v any) {
	switch v := v.(type) {
	case map[string]any:
		seen[path+":object"] = true
		for k, x := range v {
			record(seen, path+"/"+k, x)
		}
	case []any:
		seen[path+":array"] = true
		for i, x := range v {
			record(seen, fmt.Sprintf("%s/%d", path, i), x)
		}
	case string:
		seen[path+":string"] = true
	case bool:
		seen[path+":bool"] = true
	case nil:
		seen[path+":null"] = true
	default:
		seen[path+":number"] = true
	}
}

func keysOf(m map[string]bool) string {
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return strings.Join(keys, " ")
}

func TestStructuredOutputArraysAreNeverEmpty(t *testing.T) {
	p := newChat(t)
	schema := schemaOf(t, `{"type":"object","properties":{"items":{"type":"array","items":{"type":"integer"}}},"required":["items"],"additionalProperties":false}`)
	lengths := map[int]bool{}
	for seed := range int64(seedsForCoverage) {
		var v struct{ Items []int }
		if err := json.Unmarshal([]byte(structuredReply(t, p, schema, seed)), &v); err != nil {
			t.Fatal(err)
		}
		if len(v.Items) == 0 {
			t.Fatalf("seed %d: an empty array", seed)
		}
		lengths[len(v.Items)] = true
	}
	if len(lengths) < 2 {
		t.Errorf("every seed gave arrays of one length %v", lengths)
	}
}

func TestJSONObjectFormat(t *testing.T) {
	p := newChat(t)
	for seed := range int64(8) {
		reply := p.Respond(&Request{Items: userAsks("List three cities as JSON."), Seed: seed, Format: TextFormat{Type: FormatJSONObject}})
		var v map[string]any
		if err := json.Unmarshal([]byte(reply.Items[0].Text), &v); err != nil || len(v) == 0 {
			t.Fatalf("seed %d: %q is not a JSON object: %v", seed, reply.Items[0].Text, err)
		}
	}
}

func TestPlainRequestsKeepTheirAnswers(t *testing.T) {
	p := newChat(t)
	req := &Request{Items: userAsks("How do I bake bread?"), Seed: 3}
	plain := p.Respond(req)
	req.Format = TextFormat{Type: FormatText}
	if got := p.Respond(req); got.Items[0].Text != plain.Items[0].Text {
		t.Fatalf("text format changed the answer:\n%s\n%s", got.Items[0].Text, plain.Items[0].Text)
	}
}

func TestMatchingString(t *testing.T) {
	cases := []string{
		`ID-[0-9]{4}`, `[a-z]+@[a-z]+\.com`, `(yes|no|maybe)`, `^\d{3}-\d{4}$`, `a*b+c?`, `[^a-c]{2,}`,
		`(?i)hello`, `[A-Z][a-z]{2,8}`, `x{0}y`, `\w+\s\w+`, `[\p{Greek}]`, `.{5}`, `(ab|cd){3}`, `\+[0-9]{6,10}`,
	}
	for _, pattern := range cases {
		t.Run(pattern, func(t *testing.T) {
			whole := regexp.MustCompile(`^(?:` + pattern + `)$`)
			outs := map[string]bool{}
			for h := range uint64(16) {
				s, ok := matchingString(pattern, h)
				if !ok || !whole.MatchString(s) {
					t.Fatalf("h=%d: %q (ok %v) does not match %s", h, s, ok, pattern)
				}
				outs[s] = true
			}
			t.Logf("%d different strings", len(outs))
		})
	}
	if _, ok := matchingString(`(a`, 0); ok {
		t.Error("a regex that does not parse gave a string")
	}
}

func TestLarkInput(t *testing.T) {
	cases := []struct {
		name, grammar string
		valid         *regexp.Regexp // what every input must look like
	}{
		{"arithmetic", `
start: expr
expr: term (("+" | "-") term)*
term: NUMBER | "(" expr ")"
%import common.NUMBER
%import common.WS
%ignore WS`, regexp.MustCompile(`^[0-9()+\- ]+$`)},
		{"literals only", `start: "apply" | "revert"`, regexp.MustCompile(`^(apply|revert)$`)},
		{"regex terminal and optional", `start: "GET " PATH ["?" QUERY]
PATH: /\/[a-z]{1,8}/
QUERY: /[a-z]+=[0-9]+/`, regexp.MustCompile(`^GET /[a-z]{1,8}(\?[a-z]+=[0-9]+)?$`)},
		{"repetition bounds", `start: "a"~2..3 "b"+`, regexp.MustCompile(`^a{2,3}b+$`)},
		{"recursion ends", `start: list
list: "[" [item ("," item)*] "]"
item: list | CNAME
%import common.CNAME`, regexp.MustCompile(`^[\[\],a-z_0-9]+$`)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for h := range uint64(16) {
				in := larkInput(c.grammar, h)
				if !c.valid.MatchString(in) {
					t.Fatalf("h=%d: %q does not fit", h, in)
				}
			}
		})
	}
}

func TestCustomTools(t *testing.T) {
	p := newChat(t)
	tools := []Tool{
		{Type: ToolCustom, Name: "make_id", Description: "Make an identifier.", Grammar: &Grammar{Syntax: "regex", Definition: `ID-[0-9]{4}`}},
		{Type: ToolCustom, Name: "run_shell", Description: "Run a shell command."},
		{Type: ToolCustom, Name: "calc", Description: "Calculate an expression.", Grammar: &Grammar{Syntax: "lark", Definition: "start: NUMBER \"+\" NUMBER\n%import common.NUMBER"}},
	}
	cases := []struct {
		name, question, choice string
		want                   string // the tool called, "" for none
		input                  *regexp.Regexp
	}{
		{"forced grammar tool", "Please make an identifier for me.", "make_id", "make_id", regexp.MustCompile(`^ID-[0-9]{4}$`)},
		{"forced lark tool", "Add them.", "calc", "calc", regexp.MustCompile(`^[0-9]+\+[0-9]+$`)},
		{"picked free-text tool", "Run the command `ls -la` in a shell.", "auto", "run_shell", regexp.MustCompile("^ls -la$")},
		{"a grammar tool is never picked", "Make an identifier, an ID please.", "auto", "", nil},
		{"required skips grammar tools", "Hello there.", "required", "run_shell", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			reply := p.Respond(&Request{Items: userAsks(c.question), Tools: tools, ToolChoice: c.choice, Seed: 5})
			item := reply.Items[0]
			if c.want == "" {
				if item.Type != OutputMessage {
					t.Fatalf("called %s", item.Name)
				}
				return
			}
			if item.Type != OutputCustomToolCall || item.Name != c.want {
				t.Fatalf("reply %+v, want a custom_tool_call of %s", item, c.want)
			}
			if c.input != nil && !c.input.MatchString(item.Arguments) {
				t.Fatalf("input %q does not match %s", item.Arguments, c.input)
			}
			if item.FullText() != item.Arguments {
				t.Fatalf("FullText %q, want the input", item.FullText())
			}
		})
	}
	// A custom tool's output is answered like a function's.
	items := append(userAsks("Run `ls`."),
		Item{Type: "custom_tool_call", Name: "run_shell", CallID: "c1", Arguments: "ls"},
		Item{Type: "custom_tool_call_output", CallID: "c1", Output: "README.md"})
	reply := p.Respond(&Request{Items: items, Tools: tools, Seed: 5})
	if reply.Items[0].Type != OutputMessage || !strings.Contains(reply.Items[0].Text, "run_shell") {
		t.Fatalf("after a custom tool's output: %+v", reply.Items[0])
	}
}

func FuzzMatchingString(f *testing.F) {
	f.Add(`ID-[0-9]{4}`, uint64(1))
	f.Add(`(a|b)*c{2,5}[^x-z]`, uint64(9))
	f.Add(`a{1000}{1000}`, uint64(0))
	f.Fuzz(func(t *testing.T, pattern string, h uint64) {
		s, ok := matchingString(pattern, h)
		if len(s) > 2*maxRegexOutput {
			t.Fatalf("%d bytes for %q", len(s), pattern)
		}
		_ = ok
	})
}

func FuzzLarkInput(f *testing.F) {
	f.Add("start: expr\nexpr: NUMBER (\"+\" expr)?\n%import common.NUMBER", uint64(3))
	f.Add("start: a\na: a a | \"x\"", uint64(1))
	f.Add("start: /[a-z]+/~3..9", uint64(2))
	f.Fuzz(func(t *testing.T, grammar string, h uint64) {
		if in := larkInput(grammar, h); len(in) > 64*maxRegexOutput {
			t.Fatalf("%d bytes", len(in))
		}
	})
}

// TestArgumentsOfAToolWithoutParametersAreAnObject: a function tool with no
// parameters (the engine hands the policy an empty schema) gets "{}", not a
// JSON string.
func TestArgumentsOfAToolWithoutParametersAreAnObject(t *testing.T) {
	p := newChat(t)
	for _, params := range []map[string]any{nil, {}} {
		reply := p.Respond(&Request{Items: userAsks("What is the weather?"), Seed: 1,
			Tools: []Tool{{Name: "weather", Description: "Get the weather.", Parameters: params}}, ToolChoice: "weather"})
		if got := reply.Items[0].Arguments; got != "{}" {
			t.Errorf("parameters %v: arguments %s, want {}", params, got)
		}
	}
}

// FuzzStructuredOutput: for every schema api.CheckSchema accepts as
// strict, the structured output is JSON, the same twice, and of the root's
// type. It validates whenever the schema can be met within maxSchemaDepth
// and the generator's subset; the fuzzer finds schemas that cannot (an
// object that requires itself, minimum above maximum, a const of another
// type), so validation is asserted on the seeds only, with formats
// asserted.
func FuzzStructuredOutput(f *testing.F) {
	seeds := map[string]bool{}
	for _, c := range structuredSchemas {
		if c.strict {
			f.Add(c.schema, int64(1))
			seeds[c.schema] = true
		}
	}
	f.Fuzz(func(t *testing.T, text string, seed int64) {
		var schema map[string]any
		if json.Unmarshal([]byte(text), &schema) != nil || api.CheckSchema(schema, true, false) != nil {
			return
		}
		out, capped := generateJSON(schema, "Describe Ada.", uint64(seed), true)
		if again, _ := generateJSON(schema, "Describe Ada.", uint64(seed), true); again != out {
			t.Fatalf("two outputs differ:\n%s\n%s", out, again)
		}
		var v map[string]any
		if err := json.Unmarshal([]byte(out), &v); err != nil {
			t.Fatalf("not a JSON object: %v: %s", err, out)
		}
		if !seeds[text] {
			return
		}
		if capped {
			t.Fatalf("a seed schema was cut at maxSchemaDepth: %s", out)
		}
		inst, _ := jsonschema.UnmarshalJSON(strings.NewReader(out))
		if err := compileAsserting(t, text).Validate(inst); err != nil {
			t.Fatalf("%s does not validate: %v", out, err)
		}
	})
}

// compileAsserting compiles a schema with its formats asserted.
func compileAsserting(t testing.TB, text string) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	if err := c.AddResource("out.json", doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile("out.json")
	if err != nil {
		t.Fatal(err)
	}
	return sch
}
