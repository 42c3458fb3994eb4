package workload

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"
)

// CodexVersion is the Codex CLI whose session files ImportCodex reads.
const CodexVersion = "0.171.0"

// Bounds of a Codex session file.
const (
	maxCodexLine  = 16 << 20  // one JSONL line
	maxCodexBytes = 256 << 20 // the whole file
)

// Counter counts a text's tokens (the engine's o200k tokenizer); the
// caller supplies it, so this package needs no tokenizer.
type Counter func(text string) int

// ImportCodex reads a Codex CLI session file (the rollout JSONL under
// $CODEX_HOME/sessions) of Codex CLI CodexVersion and returns its workload:
//
//   - each response is the items Codex recorded since its previous one,
//     closed by the usage record Codex writes for it (token_usage_record),
//     whose usage gives the turn's input_tokens, output_tokens and
//     reasoning_tokens (its reasoning_output_tokens) as the engine counted
//     them;
//   - the session's base instructions and the developer messages before the
//     first response are the instructions;
//   - every other item's text is tokenized with count: user messages, tool
//     outputs, and each call's arguments;
//   - the tool time after a response runs from its usage record to the last
//     input item recorded before the next response, by Codex's timestamps;
//   - the tools are not in the file: their size is what the first
//     response's input_tokens leaves of the instructions and input counted.
//
// A file of another version is refused with an error naming it.
func ImportCodex(r io.Reader, count Counter) (*Workload, error) {
	in := newLines(r, maxCodexBytes, maxCodexLine)
	w := &Workload{Version: Version}
	var (
		version      string
		instructions int
		pending      []Input
		calls        []Call
		lastInput    time.Time // when the last input item was recorded
		lastEnd      time.Time // when the previous response ended
		firstCounted int       // what the first response's input counted
	)
	for in.Scan() {
		line, b := in.Line(), in.Bytes()
		var rec struct {
			Timestamp string          `json:"timestamp"`
			Type      string          `json:"type"`
			Payload   json.RawMessage `json:"payload"`
		}
		if err := json.Unmarshal(b, &rec); err != nil {
			return nil, errorf(fmt.Sprintf("line %d", line), "not a JSON record: %s", err.Error())
		}
		at, _ := time.Parse(time.RFC3339Nano, rec.Timestamp)
		if line == 1 || version == "" {
			if rec.Type != "session_meta" {
				return nil, errorf(fmt.Sprintf("line %d", line), "a Codex session file starts with session_meta, not %q", rec.Type)
			}
			var meta struct {
				CLIVersion       string `json:"cli_version"`
				ID               string `json:"id"`
				BaseInstructions *struct {
					Text string `json:"text"`
				} `json:"base_instructions"`
			}
			if err := json.Unmarshal(rec.Payload, &meta); err != nil {
				return nil, errorf("line 1", "session_meta: %s", err.Error())
			}
			if meta.CLIVersion != CodexVersion {
				return nil, errorf("session_meta.cli_version", "the file was written by Codex CLI %q; agentloop reads the session files of Codex CLI %s", meta.CLIVersion, CodexVersion)
			}
			version = meta.CLIVersion
			w.Source = "codex-" + version
			w.Description = Cut("Codex session "+meta.ID, MaxDescriptionLen)
			if meta.BaseInstructions != nil {
				instructions += count(meta.BaseInstructions.Text)
			}
			continue
		}
		switch rec.Type {
		case "response_item":
			var it struct {
				Type      string          `json:"type"`
				Role      string          `json:"role"`
				Content   json.RawMessage `json:"content"`
				Arguments string          `json:"arguments"`
				Input     string          `json:"input"`
				Output    json.RawMessage `json:"output"`
			}
			if err := json.Unmarshal(rec.Payload, &it); err != nil {
				return nil, errorf(fmt.Sprintf("line %d", line), "response_item: %s", err.Error())
			}
			switch it.Type {
			case "message":
				n := count(contentText(it.Content))
				switch {
				case it.Role == "assistant":
					// Its tokens are in the response's usage.
				case (it.Role == "developer" || it.Role == "system") && len(w.Turns) == 0:
					instructions += n
				default:
					pending = append(pending, Input{Kind: KindUserMessage, Tokens: max(n, 1)})
					lastInput = at
				}
			case "function_call":
				calls = append(calls, Call{ArgumentTokens: max(count(it.Arguments), 1)})
			case "custom_tool_call":
				calls = append(calls, Call{ArgumentTokens: max(count(it.Input), 1)})
			case "function_call_output", "custom_tool_call_output":
				pending = append(pending, Input{Kind: KindToolOutput, Tokens: max(count(contentText(it.Output)), 1)})
				lastInput = at
			}
		case "token_usage_record":
			var u struct {
				Usage struct {
					InputTokens     int `json:"input_tokens"`
					OutputTokens    int `json:"output_tokens"`
					ReasoningTokens int `json:"reasoning_output_tokens"`
				} `json:"usage"`
			}
			if err := json.Unmarshal(rec.Payload, &u); err != nil {
				return nil, errorf(fmt.Sprintf("line %d", line), "token_usage_record: %s", err.Error())
			}
			if len(w.Turns) >= MaxTurns {
				return nil, errorf("turns", "the session has more than %d responses; a workload holds at most %d", MaxTurns, MaxTurns)
			}
			if n := len(w.Turns); n > 0 && !lastEnd.IsZero() && !lastInput.IsZero() {
				w.Turns[n-1].ToolTimeMs = min(max(float64(lastInput.Sub(lastEnd))/float64(time.Millisecond), 0), MaxToolTimeMs)
			}
			t := Turn{Input: pending, InputTokens: u.Usage.InputTokens, OutputTokens: max(u.Usage.OutputTokens, 1),
				ReasoningTokens: u.Usage.ReasoningTokens, Calls: calls}
			if len(w.Turns) == 0 {
				firstCounted = instructions + t.NewInputTokens()
			}
			w.Turns = append(w.Turns, t)
			pending, calls, lastEnd = nil, nil, at
		}
	}
	if err := in.Err(); err != nil {
		return nil, err
	}
	if version == "" {
		return nil, errorf("", "empty; expected a Codex session file")
	}
	if len(w.Turns) == 0 {
		return nil, errorf("turns", "the session holds no response with a usage record")
	}
	w.InstructionsTokens = min(instructions, MaxItemTokens)
	w.ToolsTokens = min(max(w.Turns[0].InputTokens-firstCounted, 0), MaxItemTokens)
	normalize(w)
	if err := w.Validate(); err != nil {
		return nil, err
	}
	return w, nil
}

// contentText is the text of a message's content (a string, or parts with
// "text"), or of a tool output (a string, or content items).
func contentText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) == nil {
		var b strings.Builder
		for _, p := range parts {
			b.WriteString(p.Text)
		}
		return b.String()
	}
	return ""
}

// normalize makes a recorded sequence follow the format's rules without
// losing tokens: a tool output with no call left to answer counts as a
// user message, a call never answered gives its arguments to the message,
// a turn that answers no call starts with a user message, and sizes stay
// within bounds (the reasoning tokens, part of the output, leave it at
// least one token besides them; a version 1 workload has none).
// Importers of other recordings use it too.
func normalize(w *Workload) {
	for i := range w.Turns {
		t := &w.Turns[i]
		calls := 0
		if i > 0 {
			calls = len(w.Turns[i-1].Calls)
		}
		outputs := 0
		for j := range t.Input {
			t.Input[j].Tokens = min(max(t.Input[j].Tokens, 1), MaxItemTokens)
			if t.Input[j].Kind != KindToolOutput {
				continue
			}
			if outputs == calls {
				t.Input[j].Kind = KindUserMessage
				continue
			}
			outputs++
		}
		if outputs < calls {
			w.Turns[i-1].Calls = w.Turns[i-1].Calls[:outputs]
		}
		if len(t.Input) == 0 || (outputs == 0 && t.Input[0].Kind != KindUserMessage) {
			t.Input = append([]Input{{Kind: KindUserMessage, Tokens: 1}}, t.Input...)
		}
		if len(t.Input) > MaxInputsPerTurn {
			extra := 0
			cut := len(t.Input) - MaxInputsPerTurn + 1
			for _, in := range t.Input[:cut] {
				extra += in.Tokens
			}
			t.Input = append([]Input{{Kind: KindUserMessage, Tokens: min(extra, MaxItemTokens)}}, t.Input[cut:]...)
		}
		if len(t.Calls) > MaxCallsPerTurn {
			t.Calls = t.Calls[:MaxCallsPerTurn]
		}
		args := 0
		for j := range t.Calls {
			t.Calls[j].ArgumentTokens = min(t.Calls[j].ArgumentTokens, MaxItemTokens)
			args += t.Calls[j].ArgumentTokens
		}
		if w.Version < 2 {
			t.ReasoningTokens = 0
		}
		t.ReasoningTokens = min(max(t.ReasoningTokens, 0), max(MaxItemTokens-max(args, 1), 0))
		t.OutputTokens = min(max(t.OutputTokens, args+t.ReasoningTokens, t.ReasoningTokens+1), MaxItemTokens)
		t.InputTokens = min(max(t.InputTokens, 0), MaxTotalTokens)
	}
}

// Normalize is normalize for importers outside this package (the
// inspector's export): see ImportCodex.
func Normalize(w *Workload) { normalize(w) }
