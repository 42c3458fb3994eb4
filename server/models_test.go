package server_test

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"slices"
	"testing"

	"agentloop/api"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
)

// getJSON GETs path and decodes the body into v, returning the status.
func (h *harness) getJSON(path string, v any) int {
	h.t.Helper()
	resp, err := http.Get(h.url + path)
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" && ct != "application/json; charset=UTF-8" {
		h.t.Fatalf("GET %s: content type %q", path, ct)
	}
	if err := json.Unmarshal(b, v); err != nil {
		h.t.Fatalf("GET %s: %d %s: %v", path, resp.StatusCode, b, err)
	}
	return resp.StatusCode
}

func TestModelsListsTheBuiltinNames(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	want := []string{"classic", "spark", "burst", "instant"}
	for _, base := range []string{"/v1", "/baseline/v1"} {
		t.Run(base, func(t *testing.T) {
			var list struct {
				Object string           `json:"object"`
				Data   []map[string]any `json:"data"`
			}
			if status := h.getJSON(base+"/models", &list); status != 200 || list.Object != "list" {
				t.Fatalf("GET %s/models: %d object %q", base, status, list.Object)
			}
			var ids []string
			for _, m := range list.Data {
				ids = append(ids, m["id"].(string))
				if len(m) != 4 || m["object"] != "model" || m["created"] != float64(0) || m["owned_by"] != "agentloop" {
					t.Errorf("model object %v, want id, object model, created 0, owned_by agentloop", m)
				}
			}
			if !slices.Equal(ids, want) {
				t.Fatalf("listed %v, want %v", ids, want)
			}
			for _, id := range []string{"instant", "custom-250"} {
				var m api.Model
				if status := h.getJSON(base+"/models/"+id, &m); status != 200 || m.ID != id || m.Object != "model" || m.OwnedBy != "agentloop" {
					t.Fatalf("GET %s/models/%s: %d %+v", base, id, status, m)
				}
			}
			for _, id := range []string{"gpt-nope", "custom-0", "Spark"} {
				var env struct {
					Error *api.WireError `json:"error"`
				}
				status := h.getJSON(base+"/models/"+id, &env)
				if status != 404 || env.Error == nil || env.Error.Code != "model_not_found" || env.Error.Type != "invalid_request_error" || env.Error.Message == "" {
					t.Fatalf("GET %s/models/%s: %d %+v, want an OpenAI-shaped 404", base, id, status, env.Error)
				}
			}
		})
	}

	// The SDK reads the same shapes.
	page, err := h.client.Models.List(h.ctx())
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, m := range page.Data {
		ids = append(ids, m.ID)
	}
	if !slices.Equal(ids, want) {
		t.Fatalf("SDK listed %v, want %v", ids, want)
	}
	if m, err := h.client.Models.Get(h.ctx(), "burst"); err != nil || m.ID != "burst" || m.OwnedBy != "agentloop" {
		t.Fatalf("SDK get burst: %+v, %v", m, err)
	}
	_, err = h.client.Models.Get(h.ctx(), "gpt-nope")
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 404 || apiErr.Code != "model_not_found" {
		t.Fatalf("SDK get of an unknown model: %v", err)
	}
}

func TestInstantAndCustomSpeedsComplete(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	for _, model := range []string{"instant", "custom-250"} {
		t.Run(model, func(t *testing.T) {
			r, err := h.client.Responses.New(h.ctx(), responses.ResponseNewParams{Model: model,
				Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("Say hello.")}})
			if err != nil {
				t.Fatal(err)
			}
			if r.Model != model || r.Status != "completed" || r.OutputText() == "" || r.Usage.OutputTokens <= 0 {
				t.Fatalf("got model %q status %q text %q usage %+v", r.Model, r.Status, r.OutputText(), r.Usage)
			}
			var tr api.Trace
			if status := h.getJSON("/api/traces/"+r.ID, &tr); status != 200 {
				t.Fatalf("trace of %s: %d", r.ID, status)
			}
			prefill, _ := tr.Span(api.StagePrefill)
			gen, _ := tr.Span(api.StageGenerate)
			if instant := prefill.DurationNS == 0 && gen.DurationNS == 0; instant != (model == "instant") {
				t.Fatalf("%s: modelled prefill %d ns and generate %d ns; instant models neither, custom-250 both", model, prefill.DurationNS, gen.DurationNS)
			}
		})
	}
	// Streamed, with every token due at once: still one delta stream in order.
	evs := h.sseEvents("/v1/responses", `{"model":"instant","input":"Write a long essay about queues.","stream":true,"max_output_tokens":300,"ignore_eos":true}`)
	checkGrammar(t, evs)
	last := evs[len(evs)-1]
	if last.Type != api.EventCompleted || last.Response.Model != "instant" || last.Response.Usage.OutputTokens != 300 {
		t.Fatalf("terminal %s %+v", last.Type, last.Response)
	}
}
