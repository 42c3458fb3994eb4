package server_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"agentloop/api"
)

// strictCases are creates the hosted API answers with a 400 (docs/protocol.md,
// "Strict validation"); the engine answers each alike over HTTP and as a
// WebSocket error frame.
var strictCases = []struct {
	name, body, code, param string
}{
	{"unknown parameter", `{"model":"x","input":"hi","temprature":1}`, "unknown_parameter", "temprature"},
	{"invalid enum", `{"model":"x","input":"hi","truncation":"sometimes"}`, "invalid_value", "truncation"},
	{"unknown forced function", `{"model":"x","input":"hi","tools":[{"type":"function","name":"f","parameters":{"type":"object","properties":{}}}],"tool_choice":{"type":"function","name":"g"}}`, "invalid_value", "tool_choice"},
	{"function name with spaces", `{"model":"x","input":"hi","tools":[{"type":"function","name":"get weather"}]}`, "invalid_value", "tools[0].name"},
	{"call left without its output", `{"model":"x","input":[{"type":"function_call","call_id":"c1","name":"f","arguments":"{}"},{"role":"user","content":"next"}]}`, "", "input"},
	{"custom output with no call", `{"model":"x","input":[{"type":"custom_tool_call_output","call_id":"c1","output":"ok"}]}`, "", "input"},
	{"strict schema without additionalProperties", `{"model":"x","input":"hi","text":{"format":{"type":"json_schema","name":"r","strict":true,"schema":{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]}}}}`, "invalid_json_schema", "text.format.schema"},
}

func TestStrictValidationOverHTTP(t *testing.T) {
	t.Parallel()
	h := newHarness(t, unmodelled)
	for _, tc := range strictCases {
		t.Run(tc.name, func(t *testing.T) {
			status, b := h.post("/v1/responses", tc.body)
			e := decodeError(t, b)
			if status != 400 || e.Code != tc.code || e.Param != tc.param {
				t.Fatalf("%d %s, want 400 code %q param %q", status, b, tc.code, tc.param)
			}
		})
	}
}

func TestStrictValidationOverWebSocket(t *testing.T) {
	t.Parallel()
	h := newHarness(t, unmodelled)
	c := h.rawWS("/v1/responses")
	for _, tc := range strictCases {
		t.Run(tc.name, func(t *testing.T) {
			send(t, c, `{"type":"response.create",`+tc.body[1:])
			e := readEvent(t, c).AsError()
			if e == nil || e.Status != 400 || e.Code != tc.code || e.Param != tc.param {
				t.Fatalf("error frame %+v, want 400 code %q param %q", e, tc.code, tc.param)
			}
		})
	}
	// The connection stays usable.
	send(t, c, `{"type":"response.create","model":"x","input":"hi"}`)
	if evs := readResponse(t, c); evs[len(evs)-1].Type != "response.completed" {
		t.Fatalf("after the refusals: %s", evs[len(evs)-1].Type)
	}
}

// Retrieving a response that was not created in the background with
// stream=true gets the 400 docs/protocol.md lists, not its JSON.
func TestRetrieveStreamOfAForegroundResponse(t *testing.T) {
	t.Parallel()
	h := newHarness(t, unmodelled)
	status, b := h.post("/v1/responses", `{"model":"x","input":"hi"}`)
	if status != 200 {
		t.Fatalf("%d %s", status, b)
	}
	id := decodeResponseID(t, b)
	for _, q := range []string{"?stream=true", "?stream=false", ""} {
		resp, err := http.Get(h.url + "/v1/responses/" + id + q)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if q == "?stream=true" {
			if e := decodeError(t, body); resp.StatusCode != 400 || e.Param != "stream" || e.Code != "invalid_value" {
				t.Fatalf("stream=true: %d %s", resp.StatusCode, body)
			}
		} else if resp.StatusCode != 200 {
			t.Fatalf("%q: %d %s", q, resp.StatusCode, body)
		}
	}
}

func decodeResponseID(t *testing.T, b []byte) string {
	t.Helper()
	var r struct{ ID string }
	if err := json.Unmarshal(b, &r); err != nil || r.ID == "" {
		t.Fatalf("no response id in %s", b)
	}
	return r.ID
}

// A forced custom tool is called over WebSocket mode with its input events,
// and its output, sent back on the continuation, answers the call.
func TestCustomToolCallAndOutputOverWebSocket(t *testing.T) {
	t.Parallel()
	h := newHarness(t, unmodelled)
	c := h.rawWS("/v1/responses")
	send(t, c, `{"type":"response.create","model":"x","store":false,"input":"Patch the greeting.","tools":[{"type":"custom","name":"apply_patch"}],"tool_choice":{"type":"custom","name":"apply_patch"}}`)
	evs := readResponse(t, c)
	checkGrammar(t, evs)
	var done *api.Event
	for _, ev := range evs {
		if ev.Type == api.EventCustomToolCallInputDone {
			done = ev
		}
	}
	last := evs[len(evs)-1]
	if done == nil || last.Type != api.EventCompleted || len(last.Response.Output) != 1 || last.Response.Output[0].Type != api.TypeCustomToolCall {
		t.Fatalf("no custom tool call: %s", last.Raw)
	}
	call := last.Response.Output[0]
	if call.Arguments == "" || call.Arguments != done.Input || call.CallID == "" {
		t.Fatalf("call %+v, input done %q", call, done.Input)
	}
	send(t, c, `{"type":"response.create","model":"x","store":false,"previous_response_id":"`+last.Response.ID+`","tools":[{"type":"custom","name":"apply_patch"}],"input":[{"type":"custom_tool_call_output","call_id":"`+call.CallID+`","output":"Applied."}]}`)
	next := readResponse(t, c)
	if ev := next[len(next)-1]; ev.Type != api.EventCompleted || !strings.Contains(string(ev.Raw), "Applied.") {
		t.Fatalf("the output was not read: %s", ev.Raw)
	}
	// An output that answers no call is refused.
	send(t, c, `{"type":"response.create","model":"x","store":false,"previous_response_id":"`+next[len(next)-1].Response.ID+`","input":[{"type":"custom_tool_call_output","call_id":"call_none","output":"x"}]}`)
	if e := readEvent(t, c).AsError(); e == nil || e.Status != 400 || e.Param != "input" {
		t.Fatalf("an unanswered output: %+v", e)
	}
}
