package policy

import (
	"strings"
	"testing"
)

// The router gives a reply to a request that reasons the summary of its
// reasoning, whichever policy answered: it says what was decided (the
// tool it calls, or a direct answer), is the same for the same request,
// and is absent when the request does not reason.
func TestReasoningSummaryNamesTheDecision(t *testing.T) {
	router := NewRouter(newTestTokenizer(t))
	weather := Tool{Name: "get_weather", Parameters: map[string]any{"type": "object",
		"properties": map[string]any{"city": map[string]any{"type": "string"}}, "required": []any{"city"}}}
	call := &Request{Items: []Item{{Type: "message", Role: "user", Text: "Weather in Paris?"}}, Tools: []Tool{weather},
		ToolChoice: "required", Seed: 1, Reasoning: true}
	answer := &Request{Items: []Item{{Type: "message", Role: "user", Text: "Say hello."}}, Seed: 1, Reasoning: true}
	after := &Request{Items: []Item{{Type: "message", Role: "user", Text: "Weather in Paris?"},
		{Type: "function_call", Name: "get_weather", CallID: "c1", Arguments: `{"city":"Paris"}`},
		{Type: "function_call_output", CallID: "c1", Output: "18°C"}}, Tools: []Tool{weather}, Seed: 1, Reasoning: true}
	for _, c := range []struct {
		name string
		req  *Request
		want []string
	}{
		{"a forced call", call, []string{"**Calling `get_weather`**", "the request"}},
		{"a direct answer", answer, []string{"**Answering directly**"}},
		{"after a tool output", after, []string{"the tool output"}},
	} {
		got := router.Respond(c.req).ReasoningSummary
		for _, w := range c.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: summary %q lacks %q", c.name, got, w)
			}
		}
		if again := router.Respond(c.req).ReasoningSummary; again != got {
			t.Errorf("%s: two summaries for one request: %q, %q", c.name, got, again)
		}
		plain := *c.req
		plain.Reasoning = false
		if r := router.Respond(&plain); r.ReasoningSummary != "" || r.ReasoningTokens != 0 {
			t.Errorf("%s: a request that does not reason got %q, %d tokens", c.name, r.ReasoningSummary, r.ReasoningTokens)
		}
	}
	if got := joinAnd([]string{"a", "b", "c"}); got != "a, b and c" {
		t.Errorf("joinAnd = %q", got)
	}
}
