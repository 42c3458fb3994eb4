package server_test

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"agentloop/api"
	"agentloop/server/enginetest"

	"github.com/coder/websocket"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
)

// A create must name its model, over both transports: the response would
// otherwise echo an empty model.
func TestCreateWithoutModelIsRefused(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	for _, base := range []string{"/v1", "/baseline/v1"} {
		for _, body := range []string{`{"input":"hi"}`, `{"model":"","input":"hi","stream":true}`} {
			status, b := h.post(base+"/responses", body)
			e := decodeError(t, b)
			if status != 400 || e.Code != "missing_required_parameter" || e.Param != "model" || e.Message != "Missing required parameter: 'model'." {
				t.Fatalf("POST %s/responses %s: %d %+v", base, body, status, e)
			}
		}
	}
	c := h.rawWS("/v1/responses")
	for _, frame := range []string{
		`{"type":"response.create","input":"hi"}`,
		`{"type":"response.create","generate":false,"input":"warm"}`,
	} {
		send(t, c, frame)
		ev := readEvent(t, c)
		if e := ev.AsError(); e == nil || e.Status != 400 || e.Code != "missing_required_parameter" || e.Param != "model" {
			t.Fatalf("%s: %s", frame, ev.Raw)
		}
	}
	// The socket stays usable.
	send(t, c, `{"type":"response.create","model":"instant","input":"hi"}`)
	if evs := readResponse(t, c); evs[len(evs)-1].Type != api.EventCompleted {
		t.Fatalf("after the errors: %s", evs[len(evs)-1].Raw)
	}
}

// POST /responses/input_tokens counts what a create with the same body
// would report as usage.input_tokens, a parent's context included.
func TestInputTokensCountsTheCreatesPrompt(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ctx := h.ctx()
	for _, base := range []string{"/v1/", "/baseline/v1/"} {
		t.Run(base, func(t *testing.T) {
			client := openai.NewClient(option.WithBaseURL(h.url+base), option.WithAPIKey("sk-test"), option.WithMaxRetries(0))
			tools := []responses.ToolUnionParam{weatherTool}
			first, err := client.Responses.New(ctx, responses.ResponseNewParams{Model: "burst", Tools: tools,
				Instructions: openai.String("Be brief."),
				Input:        responses.ResponseNewParamsInputUnion{OfString: openai.String("What's the weather in Lyon?")}})
			if err != nil {
				t.Fatal(err)
			}
			count, err := client.Responses.InputTokens.Count(ctx, responses.InputTokenCountParams{Model: openai.String("burst"), Tools: tools,
				Instructions: openai.String("Be brief."),
				Input:        responses.InputTokenCountParamsInputUnion{OfString: openai.String("What's the weather in Lyon?")}})
			if err != nil {
				t.Fatal(err)
			}
			if count.InputTokens != first.Usage.InputTokens || count.Object != "response.input_tokens" {
				t.Fatalf("counted %d (%q), the create used %d", count.InputTokens, count.Object, first.Usage.InputTokens)
			}
			// With a parent: its context and output count; no model needed.
			// Its function calls are answered before the next user turn.
			var next []responses.ResponseInputItemUnionParam
			for _, it := range first.Output {
				if it.Type == "function_call" {
					out := responses.ResponseInputItemParamOfFunctionCallOutput(`{"temp_c":12}`)
					out.OfFunctionCallOutput.CallID = openai.String(it.CallID)
					next = append(next, out)
				}
			}
			next = append(next, responses.ResponseInputItemParamOfMessage("And in Oslo?", responses.EasyInputMessageRoleUser))
			follow := responses.InputTokenCountParams{PreviousResponseID: openai.String(first.ID), Tools: tools,
				Input: responses.InputTokenCountParamsInputUnion{OfResponseInputItemArray: next}}
			chained, err := client.Responses.InputTokens.Count(ctx, follow)
			if err != nil {
				t.Fatal(err)
			}
			if chained.InputTokens <= first.Usage.InputTokens+first.Usage.OutputTokens-20 {
				t.Fatalf("a continuation counted %d, its parent had %d+%d", chained.InputTokens, first.Usage.InputTokens, first.Usage.OutputTokens)
			}
			second, err := client.Responses.New(ctx, responses.ResponseNewParams{Model: "burst", PreviousResponseID: openai.String(first.ID), Tools: tools,
				Input: responses.ResponseNewParamsInputUnion{OfInputItemList: next}})
			if err != nil {
				t.Fatal(err)
			}
			if second.Usage.InputTokens != chained.InputTokens {
				t.Fatalf("counted %d, the continuation used %d", chained.InputTokens, second.Usage.InputTokens)
			}
		})
	}
	// The exact body, and the errors of a create.
	status, b := h.post("/v1/responses/input_tokens", `{"input":"hi"}`)
	if status != 200 || !strings.HasPrefix(string(b), `{"object":"response.input_tokens","input_tokens":`) {
		t.Fatalf("%d %s", status, b)
	}
	status, b = h.post("/v1/responses/input_tokens", `{"previous_response_id":"resp_gone","input":"hi"}`)
	if e := decodeError(t, b); status != 400 || e.Code != "previous_response_not_found" {
		t.Fatalf("%d %s", status, b)
	}
}

// Paths and methods an engine does not serve get OpenAI's 404, never
// Echo's 405 or a page.
func TestUnknownRoutesGetOpenAIs404(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	for _, tc := range []struct{ method, path string }{
		{"GET", "/v1/nothing"},
		{"POST", "/v1/chat/completions"},
		{"PUT", "/v1/responses"},
		{"PATCH", "/baseline/v1/responses"},
		{"POST", "/v1/responses/resp_x"},
		{"PUT", "/v1/responses/resp_x/input_items"},
		{"POST", "/v1/models"},
		{"DELETE", "/baseline/v1/models/spark"},
		{"GET", "/v1/responses/input_tokens/x"},
		{"GET", "/v1"},
		{"GET", "/baseline/v1/"},
	} {
		req, _ := http.NewRequest(tc.method, h.url+tc.path, strings.NewReader(`{}`))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		e := decodeError(t, b)
		want := "Invalid URL (" + tc.method + " " + tc.path + ")"
		if resp.StatusCode != 404 || e.Type != "invalid_request_error" || e.Message != want || e.Code != "" ||
			!strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
			t.Fatalf("%s %s: %d %s", tc.method, tc.path, resp.StatusCode, b)
		}
	}
	// The SDK reads it as an API error.
	err := h.client.Get(h.ctx(), "nothing/here", nil, nil)
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 404 || apiErr.Message != "Invalid URL (GET /v1/nothing/here)" {
		t.Fatalf("SDK: %v", err)
	}
}

// The lifetime limit's message says the limit as the real API does.
func TestWebSocketLifetimeLimitMessage(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *enginetest.Config) { c.WSLifetime = 300 * time.Millisecond })
	c := h.rawWS("/v1/responses")
	ev := readEvent(t, c)
	e := ev.AsError()
	if e == nil || e.Message != "Responses websocket connection limit reached (300ms). Create a new websocket connection to continue." {
		t.Fatalf("got %s", ev.Raw)
	}
	if _, _, err := c.Read(h.ctx()); websocket.CloseStatus(err) != websocket.StatusNormalClosure {
		t.Fatalf("close after the limit: %v", err)
	}
}

// Every built-in model, and a custom speed, is a model object at
// /models/{id} on both engines, as the SDK reads it.
func TestEveryModelHasItsObject(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	for _, base := range []string{"/v1/", "/baseline/v1/"} {
		client := openai.NewClient(option.WithBaseURL(h.url+base), option.WithAPIKey("sk-test"), option.WithMaxRetries(0))
		for _, id := range append(api.ModelNames(), "custom-250", "custom-100000") {
			m, err := client.Models.Get(h.ctx(), id)
			if err != nil || m.ID != id || m.Object != "model" || m.OwnedBy != "agentloop" {
				t.Fatalf("%smodels/%s: %+v, %v", base, id, m, err)
			}
		}
		for _, id := range []string{"gpt-5.2", "custom-100001", "CLASSIC"} {
			_, err := client.Models.Get(h.ctx(), id)
			var apiErr *openai.Error
			if !errors.As(err, &apiErr) || apiErr.StatusCode != 404 || apiErr.Code != "model_not_found" || apiErr.Param != "model" {
				t.Fatalf("%smodels/%s: %v", base, id, err)
			}
		}
	}
}
