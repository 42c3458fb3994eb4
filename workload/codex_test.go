package workload

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

// words is a stand-in counter: the real one is the engine's tokenizer
// (cmd/agentloop's test uses it).
func words(s string) int { return len(strings.Fields(s)) }

// TestImportCodex reads a session file Codex CLI 0.171.0 wrote against the
// engine: one prompt, one exec_command call, its output, the answer.
func TestImportCodex(t *testing.T) {
	b, err := os.ReadFile("testdata/codex-0.171.0.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	w, err := ImportCodex(bytes.NewReader(b), words)
	if err != nil {
		t.Fatal(err)
	}
	if w.Source != "codex-0.171.0" || len(w.Turns) != 2 || w.InstructionsTokens == 0 || w.ToolsTokens == 0 {
		t.Fatalf("%+v", w)
	}
	first, second := w.Turns[0], w.Turns[1]
	// The usage records give the engine's counts.
	if first.InputTokens != 7899 || first.OutputTokens != 6 || second.InputTokens != 8000 || second.OutputTokens != 33 {
		t.Errorf("usage: %+v %+v", first, second)
	}
	if len(first.Calls) != 1 || len(first.Input) != 2 || first.Input[0].Kind != KindUserMessage ||
		len(second.Input) != 1 || second.Input[0].Kind != KindToolOutput || len(second.Calls) != 0 {
		t.Errorf("turns: %+v", w.Turns)
	}
	// Codex ran echo between the two: its tool time is in the file.
	if first.ToolTimeMs <= 0 {
		t.Errorf("tool time %v", first.ToolTimeMs)
	}
}

// TestImportCodexFillsReasoningTokens: a usage record's
// reasoning_output_tokens (0 in the fixture: the engine it recorded did not
// reason) becomes its turn's reasoning_tokens, part of output_tokens, in a
// version 2 workload.
func TestImportCodexFillsReasoningTokens(t *testing.T) {
	b, err := os.ReadFile("testdata/codex-0.171.0.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	// The second response's usage record: 33 output tokens, 20 of them
	// reasoning.
	const usage = `"usage":{"input_tokens":8000,"cached_input_tokens":7808,"cache_write_input_tokens":0,"output_tokens":33,"reasoning_output_tokens":0`
	reasoned := bytes.Replace(b, []byte(usage), []byte(strings.Replace(usage, `"reasoning_output_tokens":0`, `"reasoning_output_tokens":20`, 1)), 1)
	if bytes.Equal(reasoned, b) {
		t.Fatal("the fixture's second usage record was not found")
	}
	for _, c := range []struct {
		file []byte
		want int
	}{{b, 0}, {reasoned, 20}} {
		w, err := ImportCodex(bytes.NewReader(c.file), words)
		if err != nil {
			t.Fatal(err)
		}
		second := w.Turns[1]
		if w.Version != 2 || w.Turns[0].ReasoningTokens != 0 || second.ReasoningTokens != c.want || second.OutputTokens != 33 {
			t.Fatalf("version %d, turns %+v", w.Version, w.Turns)
		}
		if got := ReplyOf(&second).MessageTokens(); got != 33-c.want {
			t.Errorf("message tokens %d, want %d", got, 33-c.want)
		}
	}
}

func TestImportCodexRefusesAnotherVersion(t *testing.T) {
	b, _ := os.ReadFile("testdata/codex-0.171.0.jsonl")
	other := bytes.Replace(b, []byte(`"cli_version":"0.171.0"`), []byte(`"cli_version":"0.172.3"`), 1)
	if bytes.Equal(other, b) {
		t.Fatal("the fixture's version was not found")
	}
	_, err := ImportCodex(bytes.NewReader(other), words)
	if err == nil || !strings.Contains(err.Error(), `Codex CLI "0.172.3"`) || !strings.Contains(err.Error(), "0.171.0") {
		t.Fatalf("err = %v", err)
	}
	for _, c := range []struct{ body, want string }{
		{"", "empty"},
		{"{", "line 1: not a JSON record"},
		{`{"type":"response_item","payload":{}}`, "starts with session_meta"},
		{`{"type":"session_meta","payload":{"cli_version":"0.171.0"}}`, "no response with a usage record"},
	} {
		if _, err := ImportCodex(strings.NewReader(c.body), words); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.body, err, c.want)
		}
	}
}

func FuzzImportCodex(f *testing.F) {
	b, _ := os.ReadFile("testdata/codex-0.171.0.jsonl")
	f.Add(b)
	f.Add([]byte(`{"type":"session_meta","payload":{"cli_version":"0.171.0"}}` + "\n" +
		`{"type":"response_item","payload":{"type":"function_call_output","output":"x"}}` + "\n" +
		`{"type":"token_usage_record","payload":{"usage":{"input_tokens":5,"output_tokens":-3}}}`))
	f.Add([]byte(`{"type":"session_meta","payload":{"cli_version":"0.171.0"}}` + "\n" +
		`{"type":"response_item","payload":{"type":"function_call","arguments":"{}"}}` + "\n" +
		`{"type":"token_usage_record","payload":{"usage":{"input_tokens":5,"output_tokens":4,"reasoning_output_tokens":4}}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		w, err := ImportCodex(bytes.NewReader(b), words)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "workload: ") {
				t.Fatalf("error without the package's prefix: %v", err)
			}
			return
		}
		if err := w.Validate(); err != nil {
			t.Fatalf("imported an invalid workload: %v", err)
		}
	})
}
