package server_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"agentloop/api"
	"agentloop/server/enginetest"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

var weatherTool = responses.ToolParamOfFunction("get_weather", map[string]any{
	"type":                 "object",
	"properties":           map[string]any{"location": map[string]any{"type": "string"}, "unit": map[string]any{"type": "string", "enum": []any{"celsius", "fahrenheit"}}},
	"required":             []string{"location", "unit"},
	"additionalProperties": false,
}, true)

func TestStreamedCreateWithOpenAIGo(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	stream := h.client.Responses.NewStreaming(h.ctx(), responses.ResponseNewParams{Model: "burst",
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("Explain in one paragraph why persistent connections help agent loops.")}})
	var seqs []int64
	var deltas strings.Builder
	var final responses.Response
	for stream.Next() {
		ev := stream.Current()
		seqs = append(seqs, ev.SequenceNumber)
		if ev.Type == "response.output_text.delta" {
			deltas.WriteString(ev.Delta)
		}
		if ev.Type == "response.completed" {
			final = ev.Response
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	for i, s := range seqs {
		if int(s) != i {
			t.Fatalf("sequence numbers %v", seqs)
		}
	}
	if final.Status != "completed" || final.OutputText() == "" || final.OutputText() != deltas.String() {
		t.Fatalf("final %q status %s, deltas %q", final.OutputText(), final.Status, deltas.String())
	}
	u := final.Usage
	if u.InputTokens <= 0 || u.OutputTokens <= 0 || u.TotalTokens != u.InputTokens+u.OutputTokens {
		t.Fatalf("usage %+v", u)
	}
	if final.Model != "burst" || !strings.Contains(final.RawJSON(), `"store":true`) {
		t.Fatalf("echo: model %q in %s", final.Model, final.RawJSON())
	}
}

func TestNonStreamedCreateEchoesUnknownModel(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	r, err := h.client.Responses.New(h.ctx(), responses.ResponseNewParams{Model: "gpt-5.2-experimental",
		Input:    responses.ResponseNewParamsInputUnion{OfString: openai.String("Say hello.")},
		Metadata: map[string]string{"agentloop_seed": "7"}, MaxOutputTokens: openai.Int(400)})
	if err != nil {
		t.Fatal(err)
	}
	if r.Model != "gpt-5.2-experimental" || r.Status != "completed" || r.OutputText() == "" || r.Metadata["agentloop_seed"] != "7" {
		t.Fatalf("got model %q status %q text %q", r.Model, r.Status, r.OutputText())
	}
}

func TestFunctionCallRoundTrip(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ctx := h.ctx()
	first, err := h.client.Responses.New(ctx, responses.ResponseNewParams{Model: "burst", Tools: []responses.ToolUnionParam{weatherTool},
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("What's the weather in Paris?")}})
	if err != nil {
		t.Fatal(err)
	}
	var call responses.ResponseOutputItemUnion
	for _, it := range first.Output {
		if it.Type == "function_call" {
			call = it
		}
	}
	if call.Name != "get_weather" || call.CallID == "" {
		t.Fatalf("no get_weather call in %s", first.RawJSON())
	}
	validateArgs(t, weatherTool.OfFunction.Parameters, call.Arguments.OfString)
	out := responses.ResponseInputItemParamOfFunctionCallOutput(`{"temp_c":21,"sky":"clear"}`)
	out.OfFunctionCallOutput.CallID = openai.String(call.CallID)
	second, err := h.client.Responses.New(ctx, responses.ResponseNewParams{Model: "burst", PreviousResponseID: openai.String(first.ID),
		Tools: []responses.ToolUnionParam{weatherTool}, Input: responses.ResponseNewParamsInputUnion{OfInputItemList: responses.ResponseInputParam{out}}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(second.OutputText(), "21") {
		t.Fatalf("answer does not use the tool output: %q", second.OutputText())
	}
	if second.PreviousResponseID != first.ID {
		t.Fatalf("previous_response_id echo %q", second.PreviousResponseID)
	}
}

func validateArgs(t *testing.T, schema map[string]any, args string) {
	t.Helper()
	c := jsonschema.NewCompiler()
	raw, _ := json.Marshal(schema)
	doc, _ := jsonschema.UnmarshalJSON(strings.NewReader(string(raw)))
	if err := c.AddResource("mem://s", doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile("mem://s")
	if err != nil {
		t.Fatal(err)
	}
	inst, err := jsonschema.UnmarshalJSON(strings.NewReader(args))
	if err != nil {
		t.Fatalf("arguments %q are not JSON: %v", args, err)
	}
	if err := sch.Validate(inst); err != nil {
		t.Fatalf("arguments %s do not satisfy the schema: %v", args, err)
	}
}

func TestThreeTurnChainCachesThePrefix(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ctx := h.ctx()
	long := strings.Repeat("The repository has a service layer, a storage layer and a set of handlers. ", 120)
	var prev string
	var inputs []int64
	var cached []int64
	for turn := range 3 {
		p := responses.ResponseNewParams{Model: "burst", PromptCacheKey: openai.String("chain-test"),
			Input: responses.ResponseNewParamsInputUnion{OfString: openai.String(fmt.Sprintf("Turn %d. %s", turn, long))}}
		if prev != "" {
			p.PreviousResponseID = openai.String(prev)
		}
		r, err := h.client.Responses.New(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		prev = r.ID
		inputs = append(inputs, r.Usage.InputTokens)
		cached = append(cached, r.Usage.InputTokensDetails.CachedTokens)
	}
	if !(inputs[0] < inputs[1] && inputs[1] < inputs[2]) {
		t.Fatalf("input tokens should count the whole growing context: %v", inputs)
	}
	if cached[0] != 0 || cached[2] < 1024 || cached[2]%128 != 0 || cached[2] > inputs[1]+200 {
		t.Fatalf("cached tokens %v for inputs %v", cached, inputs)
	}
	items, err := h.client.Responses.InputItems.List(ctx, prev, responses.InputItemListParams{})
	if err != nil {
		t.Fatal(err)
	}
	if len(items.Data) != 1 || !strings.HasPrefix(items.Data[0].ID, "msg_") {
		t.Fatalf("input_items lists only this response's input, with ids: %+v", items.Data)
	}
}

func TestRetrieveDeleteAndInputItems(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ctx := h.ctx()
	first, err := h.client.Responses.New(ctx, responses.ResponseNewParams{Model: "burst",
		Input: responses.ResponseNewParamsInputUnion{OfInputItemList: responses.ResponseInputParam{
			responses.ResponseInputItemParamOfMessage("first question", responses.EasyInputMessageRoleUser),
			responses.ResponseInputItemParamOfMessage("second question", responses.EasyInputMessageRoleUser),
			responses.ResponseInputItemParamOfMessage("third question", responses.EasyInputMessageRoleUser),
		}}})
	if err != nil {
		t.Fatal(err)
	}
	got, err := h.client.Responses.Get(ctx, first.ID, responses.ResponseGetParams{})
	if err != nil || got.ID != first.ID || got.OutputText() != first.OutputText() {
		t.Fatalf("get: %v %+v", err, got)
	}
	page, err := h.client.Responses.InputItems.List(ctx, first.ID, responses.InputItemListParams{})
	if err != nil {
		t.Fatal(err)
	}
	var texts []string
	for _, it := range page.Data {
		texts = append(texts, it.Content.OfInputItemContentList[0].Text)
	}
	if strings.Join(texts, "|") != "third question|second question|first question" {
		t.Fatalf("input_items default order is desc: %v", texts)
	}
	asc, err := h.client.Responses.InputItems.List(ctx, first.ID, responses.InputItemListParams{Order: responses.InputItemListParamsOrderAsc, Limit: openai.Int(2)})
	if err != nil || len(asc.Data) != 2 || !asc.HasMore || asc.Data[0].Content.OfInputItemContentList[0].Text != "first question" {
		t.Fatalf("asc page: %v %+v", err, asc)
	}
	child, err := h.client.Responses.New(ctx, responses.ResponseNewParams{Model: "burst", PreviousResponseID: openai.String(first.ID),
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("follow-up")}})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.client.Responses.Delete(ctx, first.ID); err != nil {
		t.Fatal(err)
	}
	_, err = h.client.Responses.Get(ctx, first.ID, responses.ResponseGetParams{})
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 404 {
		t.Fatalf("get after delete: %v", err)
	}
	// The child keeps its whole context: it can still be chained from.
	grandchild, err := h.client.Responses.New(ctx, responses.ResponseNewParams{Model: "burst", PreviousResponseID: openai.String(child.ID),
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("and again")}})
	if err != nil {
		t.Fatal(err)
	}
	if grandchild.Usage.InputTokens <= child.Usage.InputTokens {
		t.Fatalf("grandchild context %d should extend the child's %d", grandchild.Usage.InputTokens, child.Usage.InputTokens)
	}
	if err := h.client.Responses.Delete(ctx, first.ID); !errors.As(err, &apiErr) || apiErr.StatusCode != 404 {
		t.Fatalf("second delete: %v", err)
	}
}

func TestItemReferenceExpands(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	status, body := h.post("/v1/responses", `{"model":"burst","input":"Tell me about queues."}`)
	if status != 200 {
		t.Fatalf("%d %s", status, body)
	}
	var first api.Response
	if err := json.Unmarshal(body, &first); err != nil {
		t.Fatal(err)
	}
	msgID := first.Output[0].ID
	status, body = h.post("/v1/responses", fmt.Sprintf(`{"model":"burst","input":[{"role":"user","content":"Tell me about queues."},{"type":"item_reference","id":%q},{"role":"user","content":"More, please."}]}`, msgID))
	if status != 200 {
		t.Fatalf("%d %s", status, body)
	}
	var second api.Response
	json.Unmarshal(body, &second)
	if second.Usage.InputTokens <= first.Usage.InputTokens+first.Usage.OutputTokens {
		t.Fatalf("the reference was not expanded: %d tokens after %d+%d", second.Usage.InputTokens, first.Usage.InputTokens, first.Usage.OutputTokens)
	}
}

func TestHTTPErrors(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *enginetest.Config) { c.MaxBody = 4096 })
	cases := []struct {
		name, method, path, body string
		status                   int
		code, param              string
	}{
		{"unknown previous", "POST", "/v1/responses", `{"model":"burst","previous_response_id":"resp_nope","input":"x"}`, 400, "previous_response_not_found", "previous_response_id"},
		{"invalid json", "POST", "/v1/responses", `{"model":`, 400, "invalid_json", ""},
		{"orphan output", "POST", "/v1/responses", `{"model":"burst","input":[{"type":"function_call_output","call_id":"call_x","output":"1"}]}`, 400, "", "input"},
		{"bad schema", "POST", "/v1/responses", `{"model":"burst","input":"x","tools":[{"type":"function","name":"f","parameters":{"type":"object","properties":{"a":{"type":"strin"}}}}]}`, 400, "invalid_function_parameters", "tools[0].parameters"},
		{"unknown item type", "POST", "/v1/responses", `{"model":"burst","input":[{"type":"computer_call","id":"x"}]}`, 400, "invalid_value", "input[0].type"},
		{"unknown reference", "POST", "/v1/responses", `{"model":"burst","input":[{"type":"item_reference","id":"msg_missing"}]}`, 400, "invalid_value", "input"},
		{"oversize body", "POST", "/v1/responses", `{"model":"burst","input":"` + strings.Repeat("a", 5000) + `"}`, 413, "request_too_large", ""},
		{"get unknown", "GET", "/v1/responses/resp_unknown", "", 404, "", ""},
		{"delete unknown", "DELETE", "/v1/responses/resp_unknown", "", 404, "", ""},
		{"items of unknown", "GET", "/v1/responses/resp_unknown/input_items", "", 404, "", ""},
		{"bad limit", "GET", "/v1/responses/resp_unknown/input_items?limit=500", "", 400, "integer_out_of_range", "limit"},
		{"GET without upgrade", "GET", "/v1/responses", "", 426, "websocket_upgrade_required", ""},
		{"stream_id over HTTP", "POST", "/v1/responses", `{"model":"burst","stream_id":"lane-1","input":"x"}`, 400, "unsupported_parameter", "stream_id"},
		{"background unstored", "POST", "/v1/responses", `{"model":"burst","background":true,"store":false,"input":"x"}`, 400, "invalid_value", "store"},
		{"temperature out of range", "POST", "/baseline/v1/responses", `{"model":"burst","temperature":-1,"input":"x"}`, 400, "decimal_below_min_value", "temperature"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			req, _ := http.NewRequest(c.method, h.url+c.path, strings.NewReader(c.body))
			req.Header.Set("Content-Type", "application/json")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var env struct {
				Error *api.WireError `json:"error"`
			}
			if err := json.NewDecoder(resp.Body).Decode(&env); err != nil || env.Error == nil {
				t.Fatalf("status %d without an error envelope: %v", resp.StatusCode, err)
			}
			if resp.StatusCode != c.status || env.Error.Code != c.code || env.Error.Param != c.param || env.Error.Message == "" {
				t.Fatalf("got %d %+v, want %d code %q param %q", resp.StatusCode, env.Error, c.status, c.code, c.param)
			}
		})
	}
	// The SDK surfaces the same errors.
	_, err := h.client.Responses.New(h.ctx(), responses.ResponseNewParams{Model: "burst", PreviousResponseID: openai.String("resp_gone"),
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("x")}})
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || apiErr.Code != "previous_response_not_found" {
		t.Fatalf("sdk error: %v", err)
	}
}

func TestStoreFalseIsNotRetrievableOverHTTP(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	status, body := h.post("/v1/responses", `{"model":"burst","input":"hi","store":false}`)
	if status != 200 {
		t.Fatal(status, string(body))
	}
	var r api.Response
	json.Unmarshal(body, &r)
	status, body = h.post("/v1/responses", `{"model":"burst","input":"again","previous_response_id":"`+r.ID+`"}`)
	if status != 400 || decodeError(t, body).Code != "previous_response_not_found" {
		t.Fatalf("chaining a store:false parent over HTTP: %d %s", status, body)
	}
}

func TestMaxOutputTokensAndIgnoreEOS(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	evs := h.sseEvents("/v1/responses", `{"model":"burst","input":"Write a long essay about queues.","stream":true,"max_output_tokens":5}`)
	checkGrammar(t, evs)
	last := evs[len(evs)-1]
	if last.Type != api.EventIncomplete || last.Response.IncompleteDetails == nil || last.Response.IncompleteDetails.Reason != "max_output_tokens" || last.Response.Usage.OutputTokens != 5 {
		t.Fatalf("terminal %s %+v", last.Type, last.Response)
	}
	for _, n := range []int{1, 37, 300} {
		status, body := h.post("/v1/responses", fmt.Sprintf(`{"model":"burst","input":"hi","max_output_tokens":%d,"ignore_eos":true}`, n))
		var r api.Response
		if status != 200 || json.Unmarshal(body, &r) != nil || r.Status != "completed" || r.Usage.OutputTokens != n {
			t.Fatalf("ignore_eos %d: %d %s", n, status, body)
		}
	}
}

func TestTraceCoversEveryStage(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	status, body := h.post("/v1/responses", `{"model":"burst","input":"Here is my key AKIAABCDEFGHIJKLMNOP, keep it safe."}`)
	if status != 200 {
		t.Fatal(status)
	}
	var r api.Response
	json.Unmarshal(body, &r)
	resp, err := http.Get(h.url + "/api/traces/" + r.ID)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var tr api.Trace
	if err := json.NewDecoder(resp.Body).Decode(&tr); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"parse": "measured", "validate": "measured", "resolve": "measured", "load": "measured", "render": "measured",
		"safety": "measured", "queue": "modelled", "prefill": "modelled", "generate": "modelled", "finalize": "measured"}
	for _, s := range tr.Spans {
		if want[s.Name] != s.Kind {
			t.Errorf("span %s kind %s", s.Name, s.Kind)
		}
		delete(want, s.Name)
	}
	if len(want) > 0 || tr.Transport != "http" || tr.Engine != "v1" {
		t.Fatalf("missing spans %v in %+v", want, tr)
	}
	safety, _ := tr.Span("safety")
	if !strings.Contains(safety.Note, "aws_access_key") {
		t.Fatalf("the classifier missed the key: %+v", safety)
	}
}
