package server_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"agentloop/inference"
	"agentloop/workload"
)

// TestWorkloadFillerIsOneToken: a replaying client writes n tokens of
// synthetic content as n fillers without a tokenizer, which holds only if
// the filler is one o200k token and repeats never merge, whatever comes
// before them in a message.
func TestWorkloadFillerIsOneToken(t *testing.T) {
	t.Parallel()
	tok, err := inference.NewTokenizer()
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{1, 2, 3, 17, 1000, 4099} {
		if got := tok.Count(workload.Text(n)); got != n {
			t.Errorf("%d fillers count %d tokens", n, got)
		}
		for _, lead := range []string{"x", "hello.", "{\"a\":1}", "end\n"} {
			if got := tok.Count(lead + workload.Text(n)); got != tok.Count(lead)+n {
				t.Errorf("%q then %d fillers count %d, want %d", lead, n, got, tok.Count(lead)+n)
			}
		}
	}
}

// TestWorkloadReplyIsExact: a request carrying a turn's reply gets exactly
// those output tokens in usage, as a message of the rest and the calls.
func TestWorkloadReplyIsExact(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	tools := `[{"type":"function","name":"replay","description":"x","parameters":{"type":"object"}}]`
	for _, r := range []workload.Reply{{OutputTokens: 1}, {OutputTokens: 57}, {OutputTokens: 40, ArgumentTokens: []int{3, 37}},
		{OutputTokens: 120, ArgumentTokens: []int{35, 80}}} {
		body := fmt.Sprintf(`{"model":"instant","input":%q,"tools":%s,"store":false,"metadata":{%q:%q}}`,
			workload.Text(10), tools, workload.ReplyKey, r.String())
		status, b := h.post("/v1/responses", body)
		if status != 200 {
			t.Fatalf("%d %s", status, b)
		}
		var resp struct {
			Output []struct{ Type, Arguments string } `json:"output"`
			Usage  struct {
				InputTokens  int `json:"input_tokens"`
				OutputTokens int `json:"output_tokens"`
			} `json:"usage"`
		}
		if err := json.Unmarshal(b, &resp); err != nil {
			t.Fatal(err)
		}
		if resp.Usage.OutputTokens != r.OutputTokens {
			t.Errorf("%s: output_tokens %d", r, resp.Usage.OutputTokens)
		}
		var calls []int
		for _, o := range resp.Output {
			if o.Type == "function_call" {
				calls = append(calls, len(o.Arguments)/len(workload.Filler))
			}
		}
		if fmt.Sprint(calls) != fmt.Sprint(r.ArgumentTokens) && !(len(calls) == 0 && len(r.ArgumentTokens) == 0) {
			t.Errorf("%s: calls with %v argument tokens", r, calls)
		}
	}
}
