package server_test

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"agentloop/api"
	"agentloop/seal"
	"agentloop/workload"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/responses"
)

// compactAt is context_management with a compaction threshold.
func compactAt(threshold int64) []responses.ResponseNewParamsContextManagement {
	return []responses.ResponseNewParamsContextManagement{{Type: "compaction", CompactThreshold: openai.Int(threshold)}}
}

// longToolTurn is a turn whose bulk is a tool output, which compaction
// replaces (the developer and user messages stay).
func longToolTurn(outputTokens int) responses.ResponseInputParam {
	return append(responses.ResponseInputParam{developerText("You are terse."),
		responses.ResponseInputItemParamOfMessage("What's the weather in Lyon?", responses.EasyInputMessageRoleUser)},
		callAndOutput("call_1", outputTokens)...)
}

// asInput is an output item sent back as input, as the SDK received it.
func asInput(it responses.ResponseOutputItemUnion) responses.ResponseInputItemUnionParam {
	return param.Override[responses.ResponseInputItemUnionParam](json.RawMessage(it.RawJSON()))
}

// answered is the next turn's input after resp: an output for each of its
// calls, then a user message.
func answered(resp *responses.Response) responses.ResponseInputParam {
	var in responses.ResponseInputParam
	for _, it := range resp.Output {
		if it.Type == "function_call" {
			out := responses.ResponseInputItemParamOfFunctionCallOutput(`{"temp_c":12}`)
			out.OfFunctionCallOutput.CallID = openai.String(it.CallID)
			in = append(in, out)
		}
	}
	return append(in, responses.ResponseInputItemParamOfMessage("And in Oslo?", responses.EasyInputMessageRoleUser))
}

// compacted checks that a response compacted its context: its first
// output item is a compaction item, its prompt is under threshold, and
// its trace has the modelled compaction span.
func compacted(t *testing.T, h *harness, resp *responses.Response, threshold int64) {
	t.Helper()
	if len(resp.Output) < 2 || resp.Output[0].Type != api.TypeCompaction || resp.Output[0].EncryptedContent == "" ||
		!strings.HasPrefix(resp.Output[0].ID, "cmp_") {
		t.Fatalf("output does not open with a compaction item: %s", resp.RawJSON())
	}
	if resp.Usage.InputTokens >= threshold {
		t.Fatalf("input_tokens %d, not below the threshold %d", resp.Usage.InputTokens, threshold)
	}
	tr, ok := h.sh.Traces.Get(resp.ID)
	if !ok {
		t.Fatal("no trace")
	}
	s, ok := tr.Span(api.StageCompaction)
	if !ok || s.Kind != api.Modelled || s.Tokens <= 0 || !strings.Contains(s.Note, "compacted") {
		t.Fatalf("compaction span %+v", s)
	}
}

// Over HTTP a create past its threshold compacts before it generates; a
// chained continuation (store:true) and a stateless one that appends the
// output as usual both continue from the compacted context.
func TestCompactionOverHTTP(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ctx := h.ctx()
	tools := []responses.ToolUnionParam{weatherTool}
	input := longToolTurn(800)
	first, err := h.client.Responses.New(ctx, responses.ResponseNewParams{Model: "spark", Tools: tools, ContextManagement: compactAt(500),
		Input: responses.ResponseNewParamsInputUnion{OfInputItemList: input}})
	if err != nil {
		t.Fatal(err)
	}
	compacted(t, h, first, 500)
	tr, _ := h.sh.Traces.Get(first.ID)
	if s, _ := tr.Span(api.StageCompaction); s.DurationNS <= 0 {
		t.Fatalf("the compaction pass cost nothing: %+v", s)
	}
	next := answered(first)
	chained, err := h.client.Responses.New(ctx, responses.ResponseNewParams{Model: "spark", Tools: tools, ContextManagement: compactAt(500),
		PreviousResponseID: openai.String(first.ID), Input: responses.ResponseNewParamsInputUnion{OfInputItemList: next}})
	if err != nil {
		t.Fatal(err)
	}
	if chained.Usage.InputTokens >= 500 || chained.Output[0].Type == api.TypeCompaction {
		t.Fatalf("the chained continuation did not continue from the compacted context: %s", chained.RawJSON())
	}
	// Stateless: the whole history, the output appended as usual.
	history := append(responses.ResponseInputParam{}, input...)
	for _, it := range first.Output {
		history = append(history, asInput(it))
	}
	history = append(history, next...)
	stateless, err := h.client.Responses.New(ctx, responses.ResponseNewParams{Model: "spark", Tools: tools, Store: openai.Bool(false),
		ContextManagement: compactAt(500), Input: responses.ResponseNewParamsInputUnion{OfInputItemList: history}})
	if err != nil {
		t.Fatal(err)
	}
	if stateless.Usage.InputTokens != chained.Usage.InputTokens {
		t.Fatalf("stateless input_tokens %d, chained %d: the compaction item does not replace what it compacted", stateless.Usage.InputTokens, chained.Usage.InputTokens)
	}
	st, _ := h.sh.Traces.Get(stateless.ID)
	if s, ok := st.Span(api.StageCompaction); !ok || s.Items != 2 || s.DurationNS != 0 {
		t.Fatalf("compaction span of a history with a compaction item: %+v", s)
	}
}

// Over WebSocket mode the connection cache holds the compacted state: the
// next continuation sends and renders only its new items. Moved to HTTP,
// the same store:false chain gets previous_response_not_found.
func TestCompactionOverWebSocket(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ctx := h.ctx()
	conn := h.connect()
	tools := []responses.ToolUnionParam{weatherTool}
	input := longToolTurn(800)
	cm := []responses.ResponsesClientEventResponseCreateContextManagementParam{{Type: "compaction", CompactThreshold: openai.Int(500)}}
	if err := conn.Create(ctx, responses.ResponsesClientEventResponseCreateParam{Model: "spark", Store: openai.Bool(false), Tools: tools,
		ContextManagement: cm, Input: responses.ResponsesClientEventResponseCreateInputUnionParam{OfResponse: &input}}); err != nil {
		t.Fatal(err)
	}
	first, err := conn.FinalResponse(ctx)
	if err != nil {
		t.Fatal(err)
	}
	compacted(t, h, first, 500)
	next := answered(first)
	if err := conn.Create(ctx, responses.ResponsesClientEventResponseCreateParam{Model: "spark", Store: openai.Bool(false), Tools: tools,
		ContextManagement: cm, PreviousResponseID: openai.String(first.ID),
		Input: responses.ResponsesClientEventResponseCreateInputUnionParam{OfResponse: &next}}); err != nil {
		t.Fatal(err)
	}
	second, err := conn.FinalResponse(ctx)
	if err != nil {
		t.Fatal(err)
	}
	tr, _ := h.sh.Traces.Get(second.ID)
	load, _ := tr.Span(api.StageLoad)
	render, _ := tr.Span(api.StageRender)
	if !strings.Contains(load.Note, "connection cache") || render.Items != int64(len(next)) || second.Usage.InputTokens >= 500 {
		t.Fatalf("the continuation after a compaction: load %+v, render %+v, input_tokens %d", load, render, second.Usage.InputTokens)
	}
	// The field's bug: the continuation moved to HTTP keeps
	// previous_response_id, and a store:false chain was never stored.
	_, err = h.client.Responses.New(ctx, responses.ResponseNewParams{Model: "spark", Tools: tools, Store: openai.Bool(false),
		ContextManagement: compactAt(500), PreviousResponseID: openai.String(second.ID),
		Input: responses.ResponseNewParamsInputUnion{OfInputItemList: answered(second)}})
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || apiErr.Code != api.CodePreviousResponseNotFound {
		t.Fatalf("a store:false WebSocket chain continued over HTTP: %v", err)
	}
}

// A compaction item opens only where it was made: one changed, sealed
// under another key, or sealed as another kind gets the hosted API's 400,
// over HTTP and WebSocket mode.
func TestCompactionItemsOpenOnlyHere(t *testing.T) {
	t.Parallel()
	h := newHarness(t, unmodelled)
	ctx := h.ctx()
	first, err := h.client.Responses.New(ctx, responses.ResponseNewParams{Model: "spark", ContextManagement: compactAt(100),
		Input: responses.ResponseNewParamsInputUnion{OfInputItemList: longToolTurn(300)}, Tools: []responses.ToolUnionParam{weatherTool}})
	if err != nil {
		t.Fatal(err)
	}
	blob := first.Output[0].EncryptedContent
	raw, _ := base64.StdEncoding.DecodeString(blob)
	raw[len(raw)-1] ^= 1
	var other seal.Key
	other[0] = 7
	bad := map[string]string{
		"changed":      base64.StdEncoding.EncodeToString(raw),
		"another key":  seal.New(other).Seal(seal.KindCompaction, []byte("a summary")),
		"another kind": seal.New(h.sh.SealKey).Seal(seal.KindReasoning, []byte("a summary")),
	}
	conn := h.connect()
	for name, b := range bad {
		input := responses.ResponseInputParam{responses.ResponseInputItemParamOfCompaction(b),
			responses.ResponseInputItemParamOfMessage("Go on.", responses.EasyInputMessageRoleUser)}
		_, err := h.client.Responses.New(ctx, responses.ResponseNewParams{Model: "spark", Input: responses.ResponseNewParamsInputUnion{OfInputItemList: input}})
		var apiErr *openai.Error
		if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || apiErr.Code != api.CodeInvalidEncryptedContent {
			t.Fatalf("%s blob over HTTP: %v", name, err)
		}
		if err := conn.Create(ctx, responses.ResponsesClientEventResponseCreateParam{Model: "spark", Store: openai.Bool(false),
			Input: responses.ResponsesClientEventResponseCreateInputUnionParam{OfResponse: &input}}); err != nil {
			t.Fatal(err)
		}
		_, err = conn.FinalResponse(ctx)
		if e := protocolError(t, err); e.Code != api.CodeInvalidEncryptedContent {
			t.Fatalf("%s blob over WebSocket mode: %+v", name, e)
		}
	}
	// Its own blob opens, on either transport.
	input := responses.ResponseInputParam{responses.ResponseInputItemParamOfCompaction(blob),
		responses.ResponseInputItemParamOfMessage("Go on.", responses.EasyInputMessageRoleUser)}
	if _, err := h.client.Responses.New(ctx, responses.ResponseNewParams{Model: "spark", Input: responses.ResponseNewParamsInputUnion{OfInputItemList: input}}); err != nil {
		t.Fatal(err)
	}
	if err := conn.Create(ctx, responses.ResponsesClientEventResponseCreateParam{Model: "spark", Store: openai.Bool(false),
		Input: responses.ResponsesClientEventResponseCreateInputUnionParam{OfResponse: &input}}); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.FinalResponse(ctx); err != nil {
		t.Fatal(err)
	}
}

// POST /v1/responses/compact answers as the hosted API does: the user
// messages, then one compaction item, which a create takes back.
func TestStandaloneCompact(t *testing.T) {
	t.Parallel()
	h := newHarness(t, unmodelled)
	ctx := h.ctx()
	input := longToolTurn(800)
	out, err := h.client.Responses.Compact(ctx, responses.ResponseCompactParams{Model: "spark",
		Input: responses.ResponseCompactParamsInputUnion{OfResponseInputItemArray: input}})
	if err != nil {
		t.Fatal(err)
	}
	if out.Object != "response.compaction" || len(out.Output) != 2 || out.Output[0].Role != "user" ||
		out.Output[1].Type != api.TypeCompaction || out.Usage.InputTokens < 800 || out.Usage.OutputTokens >= out.Usage.InputTokens {
		t.Fatalf("compacted response %s", out.RawJSON())
	}
	again := responses.ResponseInputParam{asInput(out.Output[0]), asInput(out.Output[1]),
		responses.ResponseInputItemParamOfMessage("And in Oslo?", responses.EasyInputMessageRoleUser)}
	resp, err := h.client.Responses.New(ctx, responses.ResponseNewParams{Model: "spark",
		Input: responses.ResponseNewParamsInputUnion{OfInputItemList: again}})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Usage.InputTokens >= 800 {
		t.Fatalf("input_tokens %d from a compacted history", resp.Usage.InputTokens)
	}
	// input_tokens counts the compaction item as the create does.
	count := `{"model":"spark","input":[` + out.Output[0].RawJSON() + `,` + out.Output[1].RawJSON() + `,{"role":"user","content":"And in Oslo?"}]}`
	if status, body := h.post("/v1/responses/input_tokens", count); status != 200 ||
		!strings.Contains(string(body), fmt.Sprintf(`"input_tokens":%d}`, resp.Usage.InputTokens)) {
		t.Fatalf("input_tokens of a compacted history: %d %s, the create's %d", status, body, resp.Usage.InputTokens)
	}
	// A stored response's context, by previous_response_id.
	if _, err := h.client.Responses.Compact(ctx, responses.ResponseCompactParams{Model: "spark", PreviousResponseID: openai.String(resp.ID)}); err != nil {
		t.Fatal(err)
	}
	// Only the SDK's compact parameters.
	if status, body := h.post("/v1/responses/compact", `{"model":"spark","input":"hi","tools":[]}`); status != 400 || decodeError(t, body).Code != api.CodeUnknownParameter {
		t.Fatalf("compact with tools: %d %s", status, body)
	}
	if status, body := h.post("/v1/responses/compact", `{"input":"hi"}`); status != 400 || decodeError(t, body).Code != api.CodeMissingRequiredParameter {
		t.Fatalf("compact without a model: %d %s", status, body)
	}
}

// The compaction item's events, and a WebSocket continuation after it.
func TestGoldenCompactionStreams(t *testing.T) {
	t.Parallel()
	h := newHarness(t, unmodelled)
	norm := normalize // a blob shows as its size (golden_test.go)
	turn := `[{"role":"developer","content":"You are terse."},{"role":"user","content":"What's the weather in Lyon?"},` +
		`{"type":"function_call","call_id":"call_1","name":"get_weather","arguments":"{}"},{"type":"function_call_output","call_id":"call_1","output":"` + workload.Text(300) + `"}]`
	cm := `"context_management":[{"type":"compaction","compact_threshold":250}],"metadata":{"agentloop_seed":"1"}`
	t.Run("sse_compaction.jsonl", func(t *testing.T) {
		evs := h.sseEvents("/v1/responses", `{"model":"spark","stream":true,"input":`+turn+`,`+cm+`}`)
		checkGrammar(t, evs)
		checkGolden(t, "sse_compaction.jsonl", norm(rawEvents(evs)))
	})
	t.Run("ws_compaction_continuation.jsonl", func(t *testing.T) {
		c := h.rawWS("/v1/responses")
		send(t, c, `{"type":"response.create","model":"spark","store":false,"input":`+turn+`,`+cm+`}`)
		first := readResponse(t, c)
		frames := rawEvents(first)
		send(t, c, `{"type":"response.create","model":"spark","store":false,"previous_response_id":"`+first[len(first)-1].Response.ID+`","input":"And in Oslo?",`+cm+`}`)
		frames = append(frames, rawEvents(readResponse(t, c))...)
		checkGolden(t, "ws_compaction_continuation.jsonl", norm(frames))
	})
}

// A context of kept items only (the developer and user messages) has
// nothing to compact: the create generates from it as it is.
func TestCompactionNeedsSomethingToReplace(t *testing.T) {
	t.Parallel()
	h := newHarness(t, unmodelled)
	resp, err := h.client.Responses.New(h.ctx(), responses.ResponseNewParams{Model: "spark", ContextManagement: compactAt(100),
		Input: responses.ResponseNewParamsInputUnion{OfInputItemList: responses.ResponseInputParam{developerText("You are terse."), userText(300)}}})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Output[0].Type == api.TypeCompaction || resp.Usage.InputTokens < 300 {
		t.Fatalf("compacted what it keeps: %s", resp.RawJSON())
	}
}

// The prototype's response.append opens a compaction item too: a blob
// that does not open is refused, and the response stays paused.
func TestPrototypeAppendOpensCompactionItems(t *testing.T) {
	t.Parallel()
	h := newHarness(t, unmodelled)
	c := h.protoWS("/v1/responses")
	send(t, c, protoCreate)
	first := readSegment(t, c)
	call := first[len(first)-1].Response.Output[0]
	output := `{"type":"function_call_output","call_id":"` + call.CallID + `","output":"{\"temp_c\":17}"}`
	send(t, c, `{"type":"response.append","input":[`+output+`,{"type":"compaction","encrypted_content":"AAAA"}]}`)
	if ev := readEvent(t, c); ev.Type != api.EventError || ev.Error == nil || ev.Error.Code != api.CodeInvalidEncryptedContent {
		t.Fatalf("a foreign compaction item in an append: got %s", ev.Raw)
	}
	send(t, c, `{"type":"response.append","input":[`+output+`]}`)
	if second := readSegment(t, c); second[len(second)-1].Type != api.EventCompleted {
		t.Fatalf("the response did not stay paused: %s", second[len(second)-1].Raw)
	}
}
