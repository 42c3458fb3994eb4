package api

import (
	"encoding/json"
	"reflect"
	"testing"
)

// TestResponseFieldsAsTheSDKDeclares: a Response has access_programs
// (required, nullable), and no user or usage while they are unset (both
// optional, not nullable), in the openai npm package's Response type.
func TestResponseFieldsAsTheSDKDeclares(t *testing.T) {
	fields := func(r *Response) map[string]json.RawMessage {
		t.Helper()
		var m map[string]json.RawMessage
		if err := json.Unmarshal(MarshalResponse(r), &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	m := fields(NewResponse("resp_1", 0, &CreateRequest{Model: "spark"}))
	if v, ok := m["access_programs"]; !ok || string(v) != "null" {
		t.Errorf("access_programs %q (present %v), want null", v, ok)
	}
	for _, k := range []string{"user", "usage"} {
		if v, ok := m[k]; ok {
			t.Errorf("%s is %s while unset, want it absent", k, v)
		}
	}
	r := NewResponse("resp_2", 0, &CreateRequest{Model: "spark", User: "u1"})
	r.Usage = &Usage{InputTokens: 3, TotalTokens: 3}
	m = fields(r)
	if string(m["user"]) != `"u1"` || m["usage"] == nil {
		t.Errorf("user %s, usage %s: want both once set", m["user"], m["usage"])
	}
}

// TestResponseEchoesFunctionToolsAsTheSDKDeclares: a function tool sent
// without parameters or strict is echoed with them null (FunctionTool
// declares both, nullable); every other tool, and every field sent, is
// echoed as sent.
func TestResponseEchoesFunctionToolsAsTheSDKDeclares(t *testing.T) {
	cases := []struct{ sent, echoed string }{
		{`[{"type":"function","name":"now"}]`, `[{"type":"function","name":"now","parameters":null,"strict":null}]`},
		{`[{"type":"function","name":"now","strict":false}]`, `[{"type":"function","name":"now","strict":false,"parameters":null}]`},
		{`[{"type":"function","name":"now","parameters":{"type":"object"}}]`, `[{"type":"function","name":"now","parameters":{"type":"object"},"strict":null}]`},
		{`[{"type":"custom","name":"patch"},{"type":"function","name":"now","description":"d"}]`,
			`[{"type":"custom","name":"patch"},{"type":"function","name":"now","description":"d","parameters":null,"strict":null}]`},
		{`[{"type":"function","name":"f","parameters":null,"strict":true}]`, `[{"type":"function","name":"f","parameters":null,"strict":true}]`},
		{`[ {"type":"custom","name":"patch"} ]`, `[ {"type":"custom","name":"patch"} ]`},
	}
	for _, c := range cases {
		r := NewResponse("resp_1", 0, &CreateRequest{Model: "spark", Tools: json.RawMessage(c.sent)})
		if string(r.Tools) != c.echoed {
			t.Errorf("tools %s echoed as %s, want %s", c.sent, r.Tools, c.echoed)
		}
	}
}

// FuzzEchoTools: for any well-formed tools array, the echo is valid JSON
// and is the tools sent, each function tool with parameters and strict
// added as null where it had none.
func FuzzEchoTools(f *testing.F) {
	for _, s := range []string{
		`[{"type":"function","name":"now"}]`,
		`[{"type":"function","name":"now","parameters":{"type":"object","properties":{"a":{"type":"string"}}},"strict":true}]`,
		` [ {"type" : "function" , "name":"a\"}" , "strict":null } , {"type":"custom","name":"p"} ] `,
		`[{"typ\u0065":"function","para\u006deters":{}}]`,
		`[{"type":"namespace","name":"ns","tools":[{"type":"function","name":"f"}]},{"type":"web_search"}]`,
		`[]`, `null`, `[1,"function",[{}],{}]`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, sent string) {
		var got, want any
		if json.Unmarshal([]byte(sent), &want) != nil {
			return // not a value json.Unmarshal accepts
		}
		echoed := echoTools(json.RawMessage(sent))
		if err := json.Unmarshal(echoed, &got); err != nil {
			t.Fatalf("echo of %s is not JSON: %s", sent, echoed)
		}
		if tools, ok := want.([]any); ok {
			for _, tool := range tools {
				if m, ok := tool.(map[string]any); ok && m["type"] == "function" {
					for _, k := range []string{"parameters", "strict"} {
						if _, ok := m[k]; !ok {
							m[k] = nil
						}
					}
				}
			}
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("tools %s echoed as %s", sent, echoed)
		}
	})
}
