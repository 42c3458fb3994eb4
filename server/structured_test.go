package server_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// order is what the structured-output tests ask for: nested objects, an
// enum, an array, and a nullable field, in strict mode.
type order struct {
	Customer struct {
		Name  string `json:"name"`
		Email string `json:"email"`
	} `json:"customer"`
	Size  string   `json:"size"`
	Items []string `json:"items"`
	Note  *string  `json:"note"`
}

var orderSchema = map[string]any{
	"type": "object",
	"properties": map[string]any{
		"customer": map[string]any{"type": "object", "properties": map[string]any{
			"name": map[string]any{"type": "string"}, "email": map[string]any{"type": "string", "format": "email"}},
			"required": []any{"name", "email"}, "additionalProperties": false},
		"size":  map[string]any{"type": "string", "enum": []any{"small", "large"}},
		"items": map[string]any{"type": "array", "items": map[string]any{"type": "string"}},
		"note":  map[string]any{"type": []any{"string", "null"}},
	},
	"required":             []any{"customer", "size", "items", "note"},
	"additionalProperties": false,
}

// checkOrder parses a structured output into an order through
// encoding/json and holds it to orderSchema.
func checkOrder(t *testing.T, text string) {
	t.Helper()
	var o order
	if err := json.Unmarshal([]byte(text), &o); err != nil {
		t.Fatalf("output is not the struct's JSON: %v: %s", err, text)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("mem://order.json", orderSchema); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("mem://order.json")
	if err != nil {
		t.Fatal(err)
	}
	inst, err := jsonschema.UnmarshalJSON(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Validate(inst); err != nil {
		t.Fatalf("output does not validate against the schema: %v: %s", err, text)
	}
}

func orderFormat() responses.ResponseTextConfigParam {
	f := responses.ResponseFormatTextConfigParamOfJSONSchema("order", orderSchema)
	f.OfJSONSchema.Strict = openai.Bool(true)
	return responses.ResponseTextConfigParam{Format: f}
}

func TestStructuredOutputOverHTTP(t *testing.T) {
	t.Parallel()
	h := newHarness(t, unmodelled)
	ctx := h.ctx()
	for seed := range 3 {
		params := responses.ResponseNewParams{Model: "spark", Text: orderFormat(),
			Metadata: map[string]string{"agentloop_seed": string(rune('1' + seed))},
			Input:    responses.ResponseNewParamsInputUnion{OfString: openai.String("Take the order.")}}
		resp, err := h.client.Responses.New(ctx, params)
		if err != nil {
			t.Fatal(err)
		}
		checkOrder(t, resp.OutputText())
		// Streamed, the deltas concatenate to the same JSON.
		stream := h.client.Responses.NewStreaming(ctx, params)
		var deltas, done strings.Builder
		for stream.Next() {
			ev := stream.Current()
			switch ev.Type {
			case "response.output_text.delta":
				deltas.WriteString(ev.Delta)
			case "response.output_text.done":
				done.WriteString(ev.Text)
			}
		}
		if err := stream.Err(); err != nil {
			t.Fatal(err)
		}
		if deltas.String() != done.String() || done.String() != resp.OutputText() {
			t.Fatalf("deltas %q, done %q, the create's output %q", deltas.String(), done.String(), resp.OutputText())
		}
	}
	// json_object gives a JSON object.
	resp, err := h.client.Responses.New(ctx, responses.ResponseNewParams{Model: "spark",
		Text:  responses.ResponseTextConfigParam{Format: responses.ResponseFormatTextConfigUnionParam{OfJSONObject: &shared.ResponseFormatJSONObjectParam{}}},
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("Answer in JSON.")}})
	if err != nil {
		t.Fatal(err)
	}
	var obj map[string]any
	if err := json.Unmarshal([]byte(resp.OutputText()), &obj); err != nil {
		t.Fatalf("json_object output is not an object: %v: %s", err, resp.OutputText())
	}
}

func TestStructuredOutputOverWebSocket(t *testing.T) {
	t.Parallel()
	h := newHarness(t, unmodelled)
	ctx := h.ctx()
	conn := h.connect()
	if err := conn.Create(ctx, responses.ResponsesClientEventResponseCreateParam{Model: "spark", Store: openai.Bool(false), Text: orderFormat(),
		Input: responses.ResponsesClientEventResponseCreateInputUnionParam{OfString: openai.String("Take the order.")}}); err != nil {
		t.Fatal(err)
	}
	resp, err := conn.FinalResponse(ctx)
	if err != nil {
		t.Fatal(err)
	}
	checkOrder(t, resp.OutputText())
}
