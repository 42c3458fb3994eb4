package server_test

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"agentloop/api"
	"agentloop/internal/wait"
)

// TestContinuationOfDroppedTextsAnswersAsKeptOnes: a WebSocket session's
// idle state drops the texts its tokens give back (server/core,
// statepack.go), so its continuation decodes them; it must answer exactly
// as the same turns whose texts were kept (over HTTP, from the store),
// and persist the same context: the same input tokens and output, byte
// for byte once ids are set aside, including the turn after, rendered
// anew from what the continuation persisted. The
// parent holds non-ASCII and multi-byte text in a message of two parts, a
// function call, its output (escaped), and a reasoning item.
func TestContinuationOfDroppedTextsAnswersAsKeptOnes(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	var prose strings.Builder
	for i := 0; prose.Len() < 24_000; i++ {
		fmt.Fprintf(&prose, "Line %d: the handler reads the configuration file, then retries the request with backoff (café, 日本, 🦀, \"quotes\").\n", i)
	}
	input, _ := json.Marshal([]any{
		map[string]any{"type": "message", "role": "developer", "content": "Réponds en 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 si on te le demande."},
		map[string]any{"type": "message", "role": "user", "content": []map[string]string{
			{"type": "input_text", "text": prose.String()}, {"type": "input_text", "text": "Zweiter Teil: Grüße ✓"}}},
		map[string]any{"type": "function_call", "call_id": "call_1", "name": "get_weather", "arguments": `{"city":"Zürich"}`},
		map[string]any{"type": "function_call_output", "call_id": "call_1", "output": "22 °C\n\"sunny\"\ttab ☀"},
	})
	common := `"model":"instant","reasoning":{"effort":"minimal","summary":"concise"},"max_output_tokens":64,"metadata":{"agentloop_seed":"5"}`
	create := func(store bool, prev, input string) string {
		body := `{` + common + `,"store":` + fmt.Sprint(store) + `,"input":` + input
		if prev != "" {
			body += `,"previous_response_id":"` + prev + `"`
		}
		return body + `}`
	}
	overHTTP := func(body string) *api.Response {
		t.Helper()
		status, b := h.post("/v1/responses", body)
		if status != 200 {
			t.Fatalf("HTTP create: %d %s", status, b)
		}
		var r api.Response
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatal(err)
		}
		return &r
	}
	// Over the socket: the parent (store:false) is kept only by the
	// connection, texts dropped; its continuation (store:true) decodes
	// them and persists the whole context; the next turn, over HTTP, is
	// rendered anew from what was persisted.
	c := h.rawWS("/v1/responses")
	send(t, c, `{"type":"response.create",`+create(false, "", string(input))[1:])
	evs := readResponse(t, c)
	socket := []*api.Response{evs[len(evs)-1].Response}
	if socket[0].Status != "completed" || socket[0].Output[0].Type != api.TypeReasoning {
		t.Fatalf("parent %s, output %+v", socket[0].Status, socket[0].Output)
	}
	wait.Until(t, "the parent's state held", func() bool { _, n := h.sh.States.Size(); return n == 1 })
	if held, _ := h.sh.States.Size(); held >= int64(prose.Len()) {
		t.Fatalf("the idle state holds %d bytes for %d bytes of text: its text was not dropped", held, prose.Len())
	}
	next := `[{"type":"message","role":"user","content":"Weiter, bitte — 続けて 🙏"}]`
	send(t, c, `{"type":"response.create",`+create(true, socket[0].ID, next)[1:])
	evs = readResponse(t, c)
	socket = append(socket, evs[len(evs)-1].Response)
	last := `[{"type":"message","role":"user","content":"Und dann? ✓"}]`
	socket = append(socket, overHTTP(create(true, socket[1].ID, last)))
	// The same turns over HTTP, every text kept as sent.
	kept := []*api.Response{overHTTP(create(true, "", string(input)))}
	kept = append(kept, overHTTP(create(true, kept[0].ID, next)))
	kept = append(kept, overHTTP(create(true, kept[1].ID, last)))

	out := func(r *api.Response) (b []byte) {
		for i := range r.Output {
			b = r.Output[i].AppendJSON(b)
		}
		return itemIDs.ReplaceAll(b, nil)
	}
	for turn := range socket {
		a, b := socket[turn], kept[turn]
		if a.Usage.InputTokens != b.Usage.InputTokens || a.Usage.OutputTokens != b.Usage.OutputTokens {
			t.Fatalf("turn %d: usage over the socket %+v, texts kept %+v", turn, a.Usage, b.Usage)
		}
		if a, b := out(a), out(b); string(a) != string(b) {
			t.Fatalf("turn %d: output over the socket:\n%.600s\ntexts kept:\n%.600s", turn, a, b)
		}
	}
}

// itemIDs are the output items' ids, which differ between two responses.
var itemIDs = regexp.MustCompile(`"id":"[^"]*",?`)
