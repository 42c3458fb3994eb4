package server_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"agentloop/api"
)

var update = flag.Bool("update", false, "rewrite the golden files")

var (
	idPattern   = regexp.MustCompile(`\b(resp|msg|fc|fco|rs|ctc|cmp)_[0-9a-f]{48}\b|\bcall_[A-Za-z0-9]{24}\b`)
	timePattern = regexp.MustCompile(`"(created_at|completed_at)":[0-9]+`)
	// A sealed blob has a random nonce: the golden keeps its length.
	sealedPattern = regexp.MustCompile(`"encrypted_content":"[A-Za-z0-9+/=]*"`)
)

// normalize replaces ids by stable names in order of appearance and
// zeroes timestamps, so streams compare across runs.
func normalize(events [][]byte) []byte {
	names := map[string]string{}
	counts := map[string]int{}
	var out bytes.Buffer
	for _, ev := range events {
		ev = idPattern.ReplaceAllFunc(ev, func(id []byte) []byte {
			if n, ok := names[string(id)]; ok {
				return []byte(n)
			}
			prefix := string(id[:bytes.IndexByte(id, '_')])
			counts[prefix]++
			names[string(id)] = prefix + "_" + strconv.Itoa(counts[prefix])
			return []byte(names[string(id)])
		})
		ev = timePattern.ReplaceAll(ev, []byte(`"$1":0`))
		ev = sealedPattern.ReplaceAllFunc(ev, func(b []byte) []byte {
			return []byte(`"encrypted_content":"sealed, ` + strconv.Itoa(len(b)-len(`"encrypted_content":""`)) + ` bytes"`)
		})
		var pretty bytes.Buffer
		json.Compact(&pretty, ev)
		out.Write(pretty.Bytes())
		out.WriteByte('\n')
	}
	return out.Bytes()
}

func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./server -run Golden -update)", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s differs from the golden file; got:\n%s", name, got)
	}
}

func rawEvents(evs []*api.Event) [][]byte {
	out := make([][]byte, len(evs))
	for i, ev := range evs {
		out[i] = ev.Raw
	}
	return out
}

func TestGoldenEventStreams(t *testing.T) {
	t.Parallel()
	h := newHarness(t, unmodelled)
	weather := `[{"type":"function","name":"get_weather","description":"Weather for a city","strict":true,"parameters":{"type":"object","properties":{"location":{"type":"string"}},"required":["location"],"additionalProperties":false}}]`
	cases := []struct{ name, body string }{
		{"sse_text.jsonl", `{"model":"spark","input":"Say hello to the golden file.","stream":true,"metadata":{"agentloop_seed":"1"}}`},
		{"sse_function_call.jsonl", `{"model":"spark","input":"What's the weather in Paris?","tools":` + weather + `,"stream":true}`},
		{"sse_incomplete.jsonl", `{"model":"spark","input":"Write a long story.","max_output_tokens":3,"stream":true,"store":false}`},
		{"sse_custom_tool_call.jsonl", `{"model":"spark","input":"Patch the greeting.","tools":[{"type":"custom","name":"apply_patch","description":"Apply a patch"}],"tool_choice":{"type":"custom","name":"apply_patch"},"stream":true,"metadata":{"agentloop_seed":"1"}}`},
		{"sse_custom_tool_grammar.jsonl", `{"model":"spark","input":"Pick a colour.","tools":[{"type":"custom","name":"colour","format":{"type":"grammar","syntax":"regex","definition":"(red|green|blue)"}}],"tool_choice":{"type":"custom","name":"colour"},"stream":true,"metadata":{"agentloop_seed":"1"}}`},
		{"sse_custom_tool_output.jsonl", `{"model":"spark","input":[{"role":"user","content":"Patch the greeting."},{"type":"custom_tool_call","call_id":"call_1","name":"apply_patch","input":"*** Begin Patch"},{"type":"custom_tool_call_output","call_id":"call_1","output":"Done."}],"tools":[{"type":"custom","name":"apply_patch"}],"stream":true,"metadata":{"agentloop_seed":"1"}}`},
		{"sse_reasoning_summary.jsonl", `{"model":"spark","input":"Say hello to the reasoning golden file.","reasoning":{"effort":"minimal","summary":"auto"},"stream":true,"metadata":{"agentloop_seed":"1"}}`},
		{"sse_reasoning_encrypted.jsonl", `{"model":"spark","input":"What's the weather in Paris?","tools":` + weather + `,"reasoning":{"effort":"minimal"},"include":["reasoning.encrypted_content"],"store":false,"stream":true,"metadata":{"agentloop_seed":"1"}}`},
		{"sse_json_schema.jsonl", `{"model":"spark","input":"Name a city.","text":{"format":{"type":"json_schema","name":"city","strict":true,"schema":{"type":"object","properties":{"name":{"type":"string"},"population":{"type":"integer"}},"required":["name","population"],"additionalProperties":false}}},"stream":true,"metadata":{"agentloop_seed":"1"}}`},
		// A background response's stream: created and queued while it
		// waits, then the rest (docs/protocol.md "Background responses").
		{"sse_background.jsonl", `{"model":"spark","input":"Say hello to the golden file.","background":true,"stream":true,"metadata":{"agentloop_seed":"1"}}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			evs := h.sseEvents("/v1/responses", c.body)
			checkGrammar(t, evs)
			checkGolden(t, c.name, normalize(rawEvents(evs)))
		})
	}
	t.Run("ws_warmup_continuation_error.jsonl", func(t *testing.T) {
		c := h.rawWS("/v1/responses")
		var frames [][]byte
		send(t, c, `{"type":"response.create","model":"spark","store":false,"generate":false,"input":[{"type":"message","role":"developer","content":"You are terse."}]}`)
		warm := readResponse(t, c)
		frames = append(frames, rawEvents(warm)...)
		send(t, c, `{"type":"response.create","model":"spark","store":false,"previous_response_id":"`+warm[len(warm)-1].Response.ID+`","input":"Hi."}`)
		frames = append(frames, rawEvents(readResponse(t, c))...)
		send(t, c, `{"type":"response.create","model":"spark","previous_response_id":"resp_missing","input":"x"}`)
		frames = append(frames, readEvent(t, c).Raw)
		checkGolden(t, "ws_warmup_continuation_error.jsonl", normalize(frames))
	})
}
