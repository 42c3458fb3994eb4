package api

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
)

// largeCreate is a Codex create (testdata/codex/http-1.json, its tools
// included) whose input is a long session: 300 turns of a user message, a
// reasoning item, a function call and its 4 KB output, and a custom tool
// call with its output, about 1.5 MB in all.
func largeCreate(tb testing.TB) []byte {
	body, err := os.ReadFile("testdata/codex/http-1.json")
	if err != nil {
		tb.Fatal(err)
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil {
		tb.Fatal(err)
	}
	output, _ := json.Marshal(strings.Repeat("line of tool output\n", 200))
	var items []string
	for i := range 300 {
		items = append(items,
			fmt.Sprintf(`{"type":"message","role":"user","content":[{"type":"input_text","text":"turn %d: run the tests"}]}`, i),
			`{"type":"reasoning","summary":[{"type":"summary_text","text":"thinking"}],"encrypted_content":null}`,
			fmt.Sprintf(`{"type":"function_call","name":"exec_command","arguments":"{\"cmd\":\"go test\"}","call_id":"call_%d"}`, i),
			fmt.Sprintf(`{"type":"function_call_output","call_id":"call_%d","output":%s}`, i, output),
			fmt.Sprintf(`{"type":"custom_tool_call","name":"apply_patch","input":"*** Begin Patch","call_id":"ctc_%d"}`, i),
			fmt.Sprintf(`{"type":"custom_tool_call_output","call_id":"ctc_%d","output":"ok"}`, i),
			`{"type":"message","role":"assistant","content":[{"type":"output_text","text":"done"}]}`)
	}
	top["input"] = json.RawMessage("[" + strings.Join(items, ",") + "]")
	large, err := json.Marshal(top)
	if err != nil {
		tb.Fatal(err)
	}
	return large
}

// BenchmarkValidateLargeCreate measures the strict check of a large
// create (largeCreate) with the tools' checks cached, as the engine's
// parse stage calls it.
func BenchmarkValidateLargeCreate(b *testing.B) {
	benchValidateWithCachedTools(b, largeCreate(b))
}

// benchValidateWithCachedTools measures ValidateCreateWith on body with
// its tools checked once beforehand.
func benchValidateWithCachedTools(b *testing.B, body []byte) {
	var top struct{ Tools json.RawMessage }
	if err := json.Unmarshal(body, &top); err != nil {
		b.Fatal(err)
	}
	names, e := CheckTools(top.Tools)
	if e != nil {
		b.Fatal(e)
	}
	cached := func(json.RawMessage) (ToolNames, *Error) { return names, nil }
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if e := ValidateCreateWith(body, cached); e != nil {
			b.Fatal(e)
		}
	}
}

// TestSplitArray: splitArray gives the elements encoding/json gives, for
// well-formed arrays with nesting, strings holding brackets, commas,
// quotes and escapes, and spacing anywhere.
func TestSplitArray(t *testing.T) {
	for _, raw := range []string{`[]`, ` [ ] `, `[1]`, `[ 1 , "a,b" , {"x":[1,2,{"y":"]}"}]} , [[]] , "\"],[\\" , null ]`,
		"[\n\t{\"a\":\"\\u005d\"},\r\n\"\\\\\",true]", `[{"type":"message","content":[{"type":"input_text","text":"}{]["}]}]`} {
		var want []json.RawMessage
		if err := json.Unmarshal([]byte(raw), &want); err != nil {
			t.Fatalf("%s: %v", raw, err)
		}
		got := splitArray([]byte(raw))
		if len(got) != len(want) {
			t.Fatalf("%s: %d elements, want %d: %q", raw, len(got), len(want), got)
		}
		for i := range got {
			if string(got[i]) != string(want[i]) {
				t.Errorf("%s: element %d is %q, want %q", raw, i, got[i], want[i])
			}
		}
	}
}

// FuzzSplitArray: for every array encoding/json accepts, splitArray gives
// the same elements.
func FuzzSplitArray(f *testing.F) {
	f.Add(`[ 1 , "a,b" , {"x":[1,2,{"y":"]}"}]} , [[]] , "\"],[\\" , null ]`)
	f.Add(`[{"type":"message","content":[{"type":"input_text","text":"}{]["}]}]`)
	f.Fuzz(func(t *testing.T, raw string) {
		var want []json.RawMessage
		if json.Unmarshal([]byte(raw), &want) != nil || !strings.HasPrefix(strings.TrimSpace(raw), "[") {
			return // not an array (ValidateCreate splits only arrays)
		}
		got := splitArray([]byte(raw))
		if len(got) != len(want) {
			t.Fatalf("%d elements, want %d: %q", len(got), len(want), got)
		}
		for i := range got {
			if string(got[i]) != string(want[i]) {
				t.Fatalf("element %d is %q, want %q", i, got[i], want[i])
			}
		}
	})
}
