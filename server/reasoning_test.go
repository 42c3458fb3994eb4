package server_test

import (
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"agentloop/api"
	"agentloop/seal"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"
)

const reasoningTools = `[{"type":"function","name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"],"additionalProperties":false},"strict":true}]`

// reasoningSeen is what a client read of one reasoning response: the
// summary's events, the reasoning item as output_item.done carried it,
// and the usage.
type reasoningSeen struct {
	partsAdded, partsDone int
	deltas, done          string
	item                  responses.ResponseReasoningItem
	reasoningTokens       int64
	outputTokens          int64
	inputTokens           int64
	responseID            string
	output                []api.Item // the output items, as output_item.done carried them
}

// summaryEvent reads one event of a reasoning summary (the SSE and the
// WebSocket clients type their events apart): delta and text are the
// event's, when it has them.
func (s *reasoningSeen) summaryEvent(typ, delta, text string) {
	switch typ {
	case "response.reasoning_summary_part.added":
		s.partsAdded++
	case "response.reasoning_summary_part.done":
		s.partsDone++
	case "response.reasoning_summary_text.delta":
		s.deltas += delta
	case "response.reasoning_summary_text.done":
		s.done = text
	}
}

// check holds what a client saw to the hosted API's shape: a summary whose
// deltas make its done text, a sealed item, and reasoning tokens among the
// output tokens.
func (s reasoningSeen) check(t *testing.T) {
	t.Helper()
	if s.partsAdded != 1 || s.partsDone != 1 || s.deltas == "" || s.deltas != s.done {
		t.Errorf("summary events: %d parts added, %d done, deltas %q, done %q", s.partsAdded, s.partsDone, s.deltas, s.done)
	}
	if !strings.HasPrefix(s.item.ID, "rs_") || len(s.item.Summary) != 1 || s.item.Summary[0].Text != s.done || s.item.EncryptedContent == "" {
		t.Errorf("reasoning item %+v: want an rs_ id, the summary and encrypted_content", s.item)
	}
	if s.item.EncryptedContent != "" && len(s.item.EncryptedContent) != seal.BlobLen(int(s.reasoningTokens)) {
		t.Errorf("encrypted_content of %d bytes for %d reasoning tokens, want %d", len(s.item.EncryptedContent), s.reasoningTokens, seal.BlobLen(int(s.reasoningTokens)))
	}
	if s.reasoningTokens <= 0 || s.outputTokens <= s.reasoningTokens {
		t.Errorf("usage: %d reasoning tokens of %d output tokens", s.reasoningTokens, s.outputTokens)
	}
}

func reasoningParams() (shared.ReasoningParam, []responses.ResponseIncludable) {
	return shared.ReasoningParam{Effort: shared.ReasoningEffortLow, Summary: shared.ReasoningSummaryDetailed},
		[]responses.ResponseIncludable{responses.ResponseIncludableReasoningEncryptedContent}
}

// The openai-go typed client reads a reasoning response over HTTP,
// streamed and not: the reasoning item first with its summary and
// encrypted_content, the summary events, and reasoning_tokens. The trace
// records the reasoning tokens as their own span, in the decode group.
func TestReasoningOverHTTPWithOpenAIGo(t *testing.T) {
	t.Parallel()
	h := newHarness(t, unmodelled)
	ctx := h.ctx()
	reasoning, include := reasoningParams()
	params := responses.ResponseNewParams{Model: "spark", Reasoning: reasoning, Include: include, Store: openai.Bool(false),
		Metadata: map[string]string{"agentloop_seed": "7"},
		Input:    responses.ResponseNewParamsInputUnion{OfString: openai.String("Think, then say hello.")}}
	stream := h.client.Responses.NewStreaming(ctx, params)
	var seen reasoningSeen
	for stream.Next() {
		ev := stream.Current()
		seen.summaryEvent(ev.Type, ev.Delta, ev.Text)
		switch ev.Type {
		case "response.output_item.done":
			if ev.Item.Type == "reasoning" {
				if ev.OutputIndex != 0 {
					t.Errorf("the reasoning item is output %d, want 0: before the message", ev.OutputIndex)
				}
				seen.item = ev.Item.AsReasoning()
			}
		case "response.completed":
			u := ev.Response.Usage
			seen.reasoningTokens, seen.outputTokens, seen.responseID = u.OutputTokensDetails.ReasoningTokens, u.OutputTokens, ev.Response.ID
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	seen.check(t)

	resp, err := h.client.Responses.New(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Usage.OutputTokensDetails.ReasoningTokens != seen.reasoningTokens || len(resp.Output) < 2 || resp.Output[0].Type != "reasoning" ||
		resp.Output[0].AsReasoning().EncryptedContent == "" || resp.Output[0].AsReasoning().Summary[0].Text != seen.done {
		t.Fatalf("JSON create: %d reasoning tokens (streamed: %d), output %+v", resp.Usage.OutputTokensDetails.ReasoningTokens, seen.reasoningTokens, resp.Output)
	}

	tr, ok := h.sh.Traces.Get(seen.responseID)
	if !ok {
		t.Fatalf("no trace of %s", seen.responseID)
	}
	names := ""
	for _, s := range tr.Spans {
		names += s.Name + " "
		if s.Name == api.SpanReasoning && (s.Tokens != seen.reasoningTokens || s.Kind != api.Modelled || api.SpanGroup(s.Name) != api.GroupDecode) {
			t.Errorf("reasoning span %+v: want %d tokens, modelled, in the decode group", s, seen.reasoningTokens)
		}
		if s.Name == api.StageGenerate && s.Tokens != seen.outputTokens-seen.reasoningTokens {
			t.Errorf("generate span of %d tokens, want the %d output tokens after the reasoning", s.Tokens, seen.outputTokens-seen.reasoningTokens)
		}
	}
	if !strings.Contains(names, "prefill reasoning generate") {
		t.Errorf("spans %s: want prefill, reasoning, generate in order", names)
	}
}

// The openai-go WebSocket client reads the same: the summary events, the
// sealed item and reasoning_tokens. A continuation keeps the reasoning
// item in the connection cache: it counts the same input tokens as an
// HTTP client that resends it (a reasoning item renders to no tokens), and
// both reason the same tokens for the same turn.
func TestReasoningOverWebSocketWithOpenAIGo(t *testing.T) {
	t.Parallel()
	h := newHarness(t, unmodelled)
	ctx := h.ctx()
	conn := h.connect()
	reasoning, include := reasoningParams()
	user := `{"role":"user","content":"What's the weather in Paris?"}`
	create := func(body string) reasoningSeen {
		t.Helper()
		if err := conn.SendRaw(ctx, json.RawMessage(body)); err != nil {
			t.Fatal(err)
		}
		var seen reasoningSeen
		for {
			ev, err := conn.Recv(ctx)
			if err != nil {
				t.Fatal(err)
			}
			seen.summaryEvent(ev.Type, ev.AsResponseReasoningSummaryTextDelta().Delta, ev.AsResponseReasoningSummaryTextDone().Text)
			switch ev.Type {
			case "response.output_item.done":
				it := ev.AsResponseOutputItemDone().Item
				if it.Type == "reasoning" {
					seen.item = it.AsReasoning()
				}
				dec, aerr := api.DecodeItem(json.RawMessage(it.RawJSON()), "item")
				if aerr != nil {
					t.Fatal(aerr)
				}
				seen.output = append(seen.output, dec)
			case "error":
				t.Fatalf("error frame: %s", ev.RawJSON())
			case "response.completed":
				r := ev.AsResponseCompleted().Response
				seen.reasoningTokens, seen.outputTokens, seen.inputTokens, seen.responseID =
					r.Usage.OutputTokensDetails.ReasoningTokens, r.Usage.OutputTokens, r.Usage.InputTokens, r.ID
				return seen
			}
		}
	}
	rb, _ := json.Marshal(reasoning)
	ib, _ := json.Marshal(include)
	common := `"model":"spark","store":false,"tools":` + reasoningTools + `,"reasoning":` + string(rb) + `,"include":` + string(ib) + `,"metadata":{"agentloop_seed":"3"}`
	first := create(`{"type":"response.create",` + common + `,"tool_choice":"required","input":[` + user + `]}`)
	first.check(t)
	// The typed create parameter carries the same fields.
	_ = responses.ResponsesClientEventResponseCreateParam{Reasoning: reasoning, Include: include}

	out := first.output
	var call api.Item
	for _, it := range out {
		if it.Type == api.TypeFunctionCall {
			call = it
		}
	}
	output := `{"type":"function_call_output","call_id":"` + call.CallID + `","output":"18°C"}`
	second := create(`{"type":"response.create",` + common + `,"previous_response_id":"` + first.responseID + `","input":[` + output + `]}`)
	second.check(t)

	// Over HTTP the client resends everything, the reasoning item included.
	resend := []string{user}
	for _, it := range out {
		resend = append(resend, string(it.AppendJSON(nil)))
	}
	resend = append(resend, output)
	status, b := h.post("/v1/responses", `{`+common+`,"input":[`+strings.Join(resend, ",")+`]}`)
	var overHTTP api.Response
	if status != 200 || json.Unmarshal(b, &overHTTP) != nil {
		t.Fatalf("the HTTP resend: %d %s", status, b)
	}
	if int64(overHTTP.Usage.InputTokens) != second.inputTokens || int64(overHTTP.Usage.OutputTokensDetails.ReasoningTokens) != second.reasoningTokens {
		t.Fatalf("HTTP resend: %d input and %d reasoning tokens; WebSocket continuation: %d and %d",
			overHTTP.Usage.InputTokens, overHTTP.Usage.OutputTokensDetails.ReasoningTokens, second.inputTokens, second.reasoningTokens)
	}
}

// tamper flips one byte inside a blob.
func tamper(blob string) string {
	raw, _ := base64.StdEncoding.DecodeString(blob)
	raw[len(raw)/2] ^= 1
	return base64.StdEncoding.EncodeToString(raw)
}

// sealedTurn runs a first turn that reasons with encrypted_content and
// returns its reasoning item's JSON.
func sealedTurn(t *testing.T, h *harness) api.Item {
	t.Helper()
	status, b := h.post("/v1/responses", `{"model":"spark","input":"hi","reasoning":{"effort":"minimal"},"include":["reasoning.encrypted_content"],"store":false}`)
	var r api.Response
	if status != 200 || json.Unmarshal(b, &r) != nil || len(r.Output) == 0 || r.Output[0].Type != api.TypeReasoning || r.Output[0].EncryptedContent == "" {
		t.Fatalf("first turn: %d %s", status, b)
	}
	return r.Output[0]
}

// withBlob is a create whose input replays a reasoning item carrying blob.
func withBlob(blob string) string {
	item := api.Item{Type: api.TypeReasoning, ID: "rs_replayed", EncryptedContent: blob}
	return `{"model":"spark","store":false,"input":[{"role":"user","content":"hi"},` + string(item.AppendJSON(nil)) +
		`,{"role":"assistant","content":"Hello."},{"role":"user","content":"again"}]}`
}

// A reasoning item sent back opens only if this server sealed it,
// unchanged: a tampered blob, another server's, or one sealed as another
// kind is the hosted API's 400 invalid_encrypted_content, param null, over
// HTTP and as a WebSocket error frame (on the default lane and on a
// stream_id lane) that leaves the connection usable.
func TestReasoningBlobsOpenOnlyHere(t *testing.T) {
	t.Parallel()
	h := newHarness(t, unmodelled)
	own := sealedTurn(t, h).EncryptedContent
	other := newHarness(t, unmodelled)
	foreign := sealedTurn(t, other).EncryptedContent
	var k seal.Key
	copy(k[:], h.sh.SealKey[:])
	wrongKind := seal.New(k).Seal(seal.KindCompaction, seal.ReasoningPayload("x", 3))

	if status, b := h.post("/v1/responses", withBlob(own)); status != 200 {
		t.Fatalf("its own blob: %d %s", status, b)
	}
	bad := map[string]string{"tampered": tamper(own), "another server's": foreign, "another kind": wrongKind, "not base64": "gAAAA...DQ=="}
	for name, blob := range bad {
		t.Run(name+" over HTTP", func(t *testing.T) {
			status, b := h.post("/v1/responses", withBlob(blob))
			e := decodeError(t, b)
			if status != 400 || e.Code != api.CodeInvalidEncryptedContent || e.Param != "" || e.Type != "invalid_request_error" {
				t.Fatalf("%d %s, want 400 %s with param null", status, b, api.CodeInvalidEncryptedContent)
			}
		})
	}
	c := h.rawWS("/v1/responses")
	for name, blob := range bad {
		for _, lane := range []string{"", `"stream_id":"agent_a",`} {
			t.Run(name+" over WebSocket "+lane, func(t *testing.T) {
				send(t, c, `{"type":"response.create",`+lane+withBlob(blob)[1:])
				ev := readEvent(t, c)
				e := ev.AsError()
				if e == nil || e.Status != 400 || e.Code != api.CodeInvalidEncryptedContent || e.Param != "" {
					t.Fatalf("frame %s, want a 400 %s error frame", ev.Raw, api.CodeInvalidEncryptedContent)
				}
				if lane != "" && ev.StreamID != "agent_a" {
					t.Fatalf("a lane's error frame without its stream_id: %s", ev.Raw)
				}
			})
		}
	}
	// The connection stays usable, and its own blob opens on it.
	send(t, c, `{"type":"response.create",`+withBlob(own)[1:])
	if evs := readResponse(t, c); evs[len(evs)-1].Type != api.EventCompleted {
		t.Fatalf("after the refusals: %s", evs[len(evs)-1].Raw)
	}
}

// A stream_id lane carries the reasoning events like any other, each with
// its stream_id, in the order the default lane sends them.
func TestReasoningOnAStreamIDLane(t *testing.T) {
	t.Parallel()
	h := newHarness(t, unmodelled)
	c := h.rawWS("/v1/responses")
	send(t, c, `{"type":"response.create","stream_id":"agent_a","model":"spark","store":false,"input":"hi","reasoning":{"effort":"low","summary":"concise"},"include":["reasoning.encrypted_content"]}`)
	evs := readResponse(t, c)
	checkGrammar(t, evs)
	var types []string
	for _, ev := range evs {
		if ev.StreamID != "agent_a" {
			t.Fatalf("an event without the lane's stream_id: %s", ev.Raw)
		}
		types = append(types, ev.Type)
	}
	want := "response.created response.in_progress response.output_item.added response.reasoning_summary_part.added response.reasoning_summary_text.delta response.reasoning_summary_text.done response.reasoning_summary_part.done response.output_item.done response.output_item.added"
	if got := strings.Join(types, " "); !strings.HasPrefix(got, want) {
		t.Fatalf("events %s, want them to begin %s", got, want)
	}
	if r := evs[len(evs)-1].Response; r.Usage.OutputTokensDetails.ReasoningTokens <= 0 {
		t.Fatalf("no reasoning tokens: %s", evs[len(evs)-1].Raw)
	}
}

// max_output_tokens counts reasoning tokens, as the hosted API does: a
// limit below the reasoning ends the response incomplete, its reasoning
// item cut to the limit and marked incomplete, with no message.
func TestMaxOutputTokensCutsReasoning(t *testing.T) {
	t.Parallel()
	h := newHarness(t, unmodelled)
	status, b := h.post("/v1/responses", `{"model":"spark","input":"hi","max_output_tokens":16,"reasoning":{"effort":"high"},"include":["reasoning.encrypted_content"],"store":false}`)
	var r api.Response
	if status != 200 || json.Unmarshal(b, &r) != nil {
		t.Fatalf("%d %s", status, b)
	}
	if r.Status != "incomplete" || len(r.Output) != 1 || r.Output[0].Type != api.TypeReasoning || r.Output[0].Status != "incomplete" ||
		r.Usage.OutputTokens != 16 || r.Usage.OutputTokensDetails.ReasoningTokens != 16 || len(r.Output[0].EncryptedContent) != seal.BlobLen(16) {
		t.Fatalf("cut at 16 tokens: %s", b)
	}
}

// No reasoning without an effort: the defaults are unchanged (the golden
// streams hold them), and effort "none" reasons not at all.
func TestNoReasoningWithoutAnEffort(t *testing.T) {
	t.Parallel()
	h := newHarness(t, unmodelled)
	for _, body := range []string{
		`{"model":"spark","input":"hi","include":["reasoning.encrypted_content"]}`,
		`{"model":"spark","input":"hi","reasoning":{"effort":"none","summary":"auto"}}`,
		`{"model":"spark","input":"hi","reasoning":null}`,
	} {
		status, b := h.post("/v1/responses", body)
		var r api.Response
		if status != 200 || json.Unmarshal(b, &r) != nil || r.Output[0].Type != api.TypeMessage || r.Usage.OutputTokensDetails.ReasoningTokens != 0 {
			t.Fatalf("%s: %d %s", body, status, b)
		}
	}
	// A summary with no effort reasons at the hosted default, medium.
	status, b := h.post("/v1/responses", `{"model":"spark","input":"hi","reasoning":{"summary":"auto"}}`)
	var r api.Response
	if status != 200 || json.Unmarshal(b, &r) != nil || r.Output[0].Type != api.TypeReasoning || len(r.Output[0].Summary) != 1 {
		t.Fatalf("summary without effort: %d %s", status, b)
	}
}

// FuzzReasoningInputItem sends a reasoning item with any summary and
// encrypted_content: the engine answers 200 (its own blob, or none), or a
// 400 in the OpenAI shape, never anything else.
func FuzzReasoningInputItem(f *testing.F) {
	f.Add(`[{"type":"summary_text","text":"Plan"}]`, "")
	f.Add(`[]`, "gAAAAABnXYZ1234567890DQ==")
	f.Add(`null`, "AQID")
	f.Add(`[{"type":"summary_text"}]`, strings.Repeat("A", 200))
	base := fuzzEngine(f)
	client := &http.Client{Timeout: 30 * time.Second}
	f.Fuzz(func(t *testing.T, summary, blob string) {
		b, _ := json.Marshal(blob)
		body := `{"model":"instant","store":false,"input":[{"type":"reasoning","summary":` + summary + `,"encrypted_content":` + string(b) + `},{"role":"user","content":"hi"}]}`
		r, err := client.Post(base+"/v1/responses", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp, _ := io.ReadAll(r.Body)
		r.Body.Close()
		status := r.StatusCode
		switch {
		case status == 200:
			if blob != "" && json.Valid([]byte(summary)) {
				t.Fatalf("a blob this server never sealed was accepted: %q", blob)
			}
		case status == 400:
			if e := decodeError(t, resp); e.Message == "" {
				t.Fatalf("400 without a message: %s", resp)
			}
		default:
			t.Fatalf("status %d for %s: %s", status, body, resp)
		}
	})
}

// A reasoning item sent back is never tokenized as text, and the safety
// classifiers (the measured one and the modelled stack_classify) do not
// read it: a turn that replays one renders, classifies and counts exactly
// what the same turn without it does.
func TestReplayedReasoningIsNotText(t *testing.T) {
	t.Parallel()
	h := newHarness(t) // modelled: the hosted stack's classifier runs
	blob := sealedTurn(t, h).EncryptedContent
	post := func(body string) (api.Response, api.Trace) {
		t.Helper()
		req, _ := http.NewRequest("POST", h.url+"/v1/responses", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set(api.HeaderStack, "hosted")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		var r api.Response
		if res.StatusCode != 200 || json.Unmarshal(b, &r) != nil {
			t.Fatalf("%d %s", res.StatusCode, b)
		}
		tr, ok := h.sh.Traces.Get(r.ID)
		if !ok {
			t.Fatalf("no trace of %s", r.ID)
		}
		return r, tr
	}
	with, withTrace := post(strings.Replace(withBlob(blob), `"spark"`, `"instant"`, 1))
	without, withoutTrace := post(`{"model":"instant","store":false,"input":[{"role":"user","content":"hi"},{"role":"assistant","content":"Hello."},{"role":"user","content":"again"}]}`)
	if with.Usage.InputTokens != without.Usage.InputTokens {
		t.Fatalf("input tokens with a replayed reasoning item %d, without %d", with.Usage.InputTokens, without.Usage.InputTokens)
	}
	for _, name := range []string{api.StageStackClassify, api.StageSafety} {
		a, okA := withTrace.Span(name)
		b, okB := withoutTrace.Span(name)
		if !okA || !okB || a.Tokens != b.Tokens || a.Items != b.Items || a.Bytes != b.Bytes {
			t.Errorf("%s span with the reasoning item %+v, without %+v: want the same work", name, a, b)
		}
	}
}

// A replayed workload turn that recorded reasoning tokens reasons exactly
// that many, effort or not, so its output tokens are the recording's.
func TestReplayedWorkloadTurnReasonsAsRecorded(t *testing.T) {
	t.Parallel()
	h := newHarness(t, unmodelled)
	for _, extra := range []string{``, `,"reasoning":{"effort":"high"}`} {
		status, b := h.post("/v1/responses", `{"model":"spark","input":"hi","store":false,"metadata":{"agentloop_reply":"output=30;reasoning=12"}`+extra+`}`)
		var r api.Response
		if status != 200 || json.Unmarshal(b, &r) != nil {
			t.Fatalf("%d %s", status, b)
		}
		if r.Usage.OutputTokens != 30 || r.Usage.OutputTokensDetails.ReasoningTokens != 12 || len(r.Output) != 2 || r.Output[0].Type != api.TypeReasoning {
			t.Fatalf("reasoning%s: %s", extra, b)
		}
	}
}
