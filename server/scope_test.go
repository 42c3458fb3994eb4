package server_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"agentloop/api"
	"agentloop/internal/wait"
)

// TestScopeMountCarriesKOverHTTPAndWebSocket: /scope/{id}/v1 is /v1 with
// the scope header set; a created scope's K makes the policy call the
// client's function tool for K turns before it answers, and the scope
// keeps the traces of its requests over both transports.
func TestScopeMountCarriesKOverHTTPAndWebSocket(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	status, b := h.post("/api/scopes", `{"tool_turns": 2}`)
	if status != http.StatusCreated {
		t.Fatalf("POST /api/scopes: %d %s", status, b)
	}
	var sc api.Scope
	if err := json.Unmarshal(b, &sc); err != nil || sc.ToolTurns != 2 || sc.Path != "/scope/"+sc.ID+"/v1" {
		t.Fatalf("scope %s (%v)", b, err)
	}
	const tool = `"tools":[{"type":"function","name":"noop","description":"does nothing","parameters":{"type":"object","properties":{}}}]`
	// HTTP: the first request is called, not answered, though "hi" asks
	// for nothing a tool does.
	status, b = h.post(sc.Path+"/responses", `{"model":"burst","input":"hi",`+tool+`}`)
	if status != 200 || !strings.Contains(string(b), `"type":"function_call"`) {
		t.Fatalf("turn 1 in the scope: %d %s", status, b)
	}
	// Outside the scope, the same request is answered.
	if _, b = h.post("/v1/responses", `{"model":"burst","input":"hi",`+tool+`}`); strings.Contains(string(b), `"function_call"`) {
		t.Fatalf("outside the scope, K applied: %s", b)
	}
	// WebSocket on the mount: two outputs in the context reach K.
	c := h.rawWS(sc.Path + "/responses")
	input := `[{"role":"user","content":"hi"},{"type":"function_call","call_id":"a","name":"noop","arguments":"{}"},{"type":"function_call_output","call_id":"a","output":"1"}]`
	send(t, c, `{"type":"response.create","model":"burst","store":false,"input":`+input+`,`+tool+`}`)
	evs := readResponse(t, c)
	if last := evs[len(evs)-1]; last.Type != api.EventCompleted || !strings.Contains(string(last.Raw), `"function_call"`) {
		t.Fatalf("one output of K=2: want a call, got %s", last.Raw)
	}
	input = strings.TrimSuffix(input, "]") + `,{"type":"function_call","call_id":"b","name":"noop","arguments":"{}"},{"type":"function_call_output","call_id":"b","output":"2"}]`
	send(t, c, `{"type":"response.create","model":"burst","store":false,"input":`+input+`,`+tool+`}`)
	evs = readResponse(t, c)
	if last := evs[len(evs)-1]; strings.Contains(string(last.Raw), `"function_call"`) {
		t.Fatalf("K outputs in: want an answer, got %s", last.Raw)
	}
	var got api.Scope
	wait.Until(t, "the scope's three traces", func() bool {
		h.getJSON("/api/scopes/"+sc.ID, &got)
		return len(got.Traces) == 3
	})
	for i, tr := range got.Traces {
		if tr.Scope != sc.ID || tr.Chain == nil || tr.Chain.ToolTurns != 2 {
			t.Fatalf("trace %d: scope %q chain %+v", i, tr.Scope, tr.Chain)
		}
	}
	if tr := got.Traces[2]; tr.Transport != "websocket" || tr.Chain.ToolOutputs != 2 || tr.Chain.InputItems != 5 || tr.Chain.Store {
		t.Fatalf("the WebSocket turn's chain: %s %+v", tr.Transport, tr.Chain)
	}
	// Bad specs name the parameter.
	for _, body := range []string{`{"tool_turns":-1}`, `{"tool_turns":"x"}`, `{"k":1}`} {
		status, b := h.post("/api/scopes", body)
		if status != 400 {
			t.Errorf("%s: %d %s", body, status, b)
		}
	}
}
