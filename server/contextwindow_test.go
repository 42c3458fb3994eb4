package server_test

import (
	"errors"
	"strings"
	"testing"

	"agentloop/api"
	"agentloop/server/enginetest"
	"agentloop/workload"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
)

// window sets every model's context window (core.Config.ContextWindow),
// so a test fills it with a few thousand tokens.
func window(n int) func(*enginetest.Config) {
	return func(c *enginetest.Config) { c.Unmodelled, c.ContextWindow = true, n }
}

// contextLengthExceeded asserts err is the hosted API's 400 for a prompt
// over the window, as the SDK reads it.
func contextLengthExceeded(t *testing.T, err error) {
	t.Helper()
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || apiErr.Code != api.CodeContextLengthExceeded ||
		apiErr.Param != "input" || apiErr.Type != "invalid_request_error" {
		t.Fatalf("want a 400 context_length_exceeded on input, got %v", err)
	}
}

func userText(n int) responses.ResponseInputItemUnionParam {
	return responses.ResponseInputItemParamOfMessage(workload.Text(n), responses.EasyInputMessageRoleUser)
}

func developerText(text string) responses.ResponseInputItemUnionParam {
	return responses.ResponseInputItemParamOfMessage(text, responses.EasyInputMessageRoleDeveloper)
}

func callAndOutput(callID string, outputTokens int) []responses.ResponseInputItemUnionParam {
	out := responses.ResponseInputItemParamOfFunctionCallOutput(workload.Text(outputTokens))
	out.OfFunctionCallOutput.CallID = openai.String(callID)
	return []responses.ResponseInputItemUnionParam{
		responses.ResponseInputItemParamOfFunctionCall(`{"location":"Lyon"}`, callID, "get_weather"), out}
}

// The built-in profiles' windows hold a 100k-token session, and refuse a
// prompt over them over HTTP and WebSocket mode, truncation disabled or
// not given; custom-<tps> has spark's window.
func TestContextWindowRefusesAPromptOverIt(t *testing.T) {
	t.Parallel()
	h := newHarness(t, unmodelled)
	ctx := h.ctx()
	for _, model := range []string{"spark", "custom-250"} {
		for _, trunc := range []responses.ResponseNewParamsTruncation{"", responses.ResponseNewParamsTruncationDisabled} {
			_, err := h.client.Responses.New(ctx, responses.ResponseNewParams{Model: model, Truncation: trunc, MaxOutputTokens: openai.Int(16),
				Input: responses.ResponseNewParamsInputUnion{OfInputItemList: responses.ResponseInputParam{userText(128_001)}}})
			contextLengthExceeded(t, err)
		}
	}
	fits, err := h.client.Responses.New(ctx, responses.ResponseNewParams{Model: "spark", MaxOutputTokens: openai.Int(16),
		Input: responses.ResponseNewParamsInputUnion{OfInputItemList: responses.ResponseInputParam{userText(100_000)}}})
	if err != nil {
		t.Fatalf("a 100k-token session does not fit spark's window: %v", err)
	}
	if fits.Usage.InputTokens < 100_000 {
		t.Fatalf("input_tokens %d", fits.Usage.InputTokens)
	}
	conn := h.connect()
	input := responses.ResponseInputParam{userText(128_001)}
	if err := conn.Create(ctx, responses.ResponsesClientEventResponseCreateParam{Model: "spark", Store: openai.Bool(false),
		Input: responses.ResponsesClientEventResponseCreateInputUnionParam{OfResponse: &input}}); err != nil {
		t.Fatal(err)
	}
	_, err = conn.FinalResponse(ctx)
	if e := protocolError(t, err); e.Code != api.CodeContextLengthExceeded || e.Status != 400 || e.Param != "input" {
		t.Fatalf("WebSocket error frame %+v", e)
	}
}

// truncation:"auto" drops whole items from the oldest end until the
// prompt fits: the first developer message stays, a call goes with its
// output, and usage and the trace say what went.
func TestTruncationAutoDropsWholeItemsFromTheOldestEnd(t *testing.T) {
	t.Parallel()
	h := newHarness(t, window(1000))
	ctx := h.ctx()
	marker := developerText("You are terse.")
	cases := []struct {
		name    string
		input   responses.ResponseInputParam
		dropped int64
	}{
		{"a message", append(append(responses.ResponseInputParam{marker, userText(400)}, callAndOutput("call_1", 300)...), userText(300)), 1},
		{"a call with its output", append(append(responses.ResponseInputParam{marker}, callAndOutput("call_1", 500)...), userText(400)), 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			resp, err := h.client.Responses.New(ctx, responses.ResponseNewParams{Model: "spark", Tools: []responses.ToolUnionParam{weatherTool},
				Truncation: responses.ResponseNewParamsTruncationAuto, Input: responses.ResponseNewParamsInputUnion{OfInputItemList: c.input}})
			if err != nil {
				t.Fatal(err)
			}
			if resp.Usage.InputTokens > 1000 || resp.Usage.InputTokens < 300 {
				t.Fatalf("input_tokens %d after truncation to a 1000-token window", resp.Usage.InputTokens)
			}
			tr, ok := h.sh.Traces.Get(resp.ID)
			if !ok {
				t.Fatal("no trace")
			}
			s, ok := tr.Span(api.StageContextWindow)
			if !ok || s.Items != c.dropped || s.Tokens <= 0 || !strings.Contains(s.Note, "dropped") {
				t.Fatalf("context_window span %+v, want %d items dropped", s, c.dropped)
			}
			// The developer message stayed: it is the first item the
			// stored response's input lists.
			items, err := h.client.Responses.InputItems.List(ctx, resp.ID, responses.InputItemListParams{Order: responses.InputItemListParamsOrderAsc})
			if err != nil {
				t.Fatal(err)
			}
			if len(items.Data) == 0 || items.Data[0].Role != "developer" {
				t.Fatalf("the developer message did not stay: %+v", items.Data)
			}
		})
	}
	// Only the latest item left, and still too much: refused all the same.
	_, err := h.client.Responses.New(ctx, responses.ResponseNewParams{Model: "spark", Truncation: responses.ResponseNewParamsTruncationAuto,
		Input: responses.ResponseNewParamsInputUnion{OfInputItemList: responses.ResponseInputParam{marker, userText(1200)}}})
	contextLengthExceeded(t, err)
}

// A WebSocket continuation's prompt counts the context the connection
// cache holds, not only the new items it sends.
func TestWebSocketContinuationCountsTheCachedContext(t *testing.T) {
	t.Parallel()
	h := newHarness(t, window(1000))
	ctx := h.ctx()
	conn := h.connect()
	first := responses.ResponseInputParam{userText(700)}
	if err := conn.Create(ctx, responses.ResponsesClientEventResponseCreateParam{Model: "spark", Store: openai.Bool(false), MaxOutputTokens: openai.Int(8),
		Input: responses.ResponsesClientEventResponseCreateInputUnionParam{OfResponse: &first}}); err != nil {
		t.Fatal(err)
	}
	prev, err := conn.FinalResponse(ctx)
	if err != nil {
		t.Fatal(err)
	}
	next := responses.ResponseInputParam{userText(400)}
	if err := conn.Create(ctx, responses.ResponsesClientEventResponseCreateParam{Model: "spark", Store: openai.Bool(false),
		PreviousResponseID: openai.String(prev.ID), Input: responses.ResponsesClientEventResponseCreateInputUnionParam{OfResponse: &next}}); err != nil {
		t.Fatal(err)
	}
	_, err = conn.FinalResponse(ctx)
	if e := protocolError(t, err); e.Code != api.CodeContextLengthExceeded {
		t.Fatalf("a continuation over the window with its cached context: %+v", e)
	}
}
