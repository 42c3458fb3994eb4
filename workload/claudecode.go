package workload

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"
)

// ImportClaudeCode reads a Claude Code session file (the JSONL under
// ~/.claude/projects: one record a line) and returns its workload:
//
//   - each assistant message (Claude Code writes one record per content
//     block, all with the message's id) is a response; its usage gives
//     input_tokens (input, cache creation and cache read together) and
//     output_tokens, its thinking blocks are counted as reasoning_tokens,
//     its tool_use blocks are its calls (their input counted);
//   - a user record's tool_result blocks are the next request's tool
//     outputs, its text user messages;
//   - the records of subagents (isSidechain) and the summaries are not the
//     session's requests and are skipped;
//   - the system prompt and the tools are not in the file: the tools'
//     size is what the first response's input_tokens leaves of the input
//     counted, and the instructions are counted in it.
//
// Tool time is the client's own time from a command's start to the end of
// its output: from the record of the response's last block (the call,
// written as it is run) to the record of the last tool result that
// answers it, by Claude Code's timestamps. A response that asked for no
// tool is followed by a person's time, not a tool's: it has none.
func ImportClaudeCode(r io.Reader, count Counter) (*Workload, error) {
	in := newLines(r, maxCodexBytes, maxCodexLine)
	w := &Workload{Version: Version, Source: "claude-code"}
	var (
		records      int
		pending      []Input
		lastID       string    // the message id of the last response
		lastAt       time.Time // when its last block was recorded
		resultAt     time.Time // when the last tool result was recorded
		model        string
		session      string
		firstCounted int
	)
	closeTurn := func() {
		if n := len(w.Turns); n > 0 && len(w.Turns[n-1].Calls) > 0 && !lastAt.IsZero() && resultAt.After(lastAt) {
			w.Turns[n-1].ToolTimeMs = min(float64(resultAt.Sub(lastAt))/float64(time.Millisecond), MaxToolTimeMs)
		}
	}
	for in.Scan() {
		line, b := in.Line(), in.Bytes()
		var rec struct {
			Type        string `json:"type"`
			Timestamp   string `json:"timestamp"`
			IsSidechain bool   `json:"isSidechain"`
			SessionID   string `json:"sessionId"`
			Version     string `json:"version"`
			Message     *struct {
				ID      string          `json:"id"`
				Role    string          `json:"role"`
				Model   string          `json:"model"`
				Content json.RawMessage `json:"content"`
				Usage   *struct {
					InputTokens              int `json:"input_tokens"`
					CacheCreationInputTokens int `json:"cache_creation_input_tokens"`
					CacheReadInputTokens     int `json:"cache_read_input_tokens"`
					OutputTokens             int `json:"output_tokens"`
				} `json:"usage"`
			} `json:"message"`
		}
		if err := json.Unmarshal(b, &rec); err != nil {
			return nil, errorf(fmt.Sprintf("line %d", line), "not a JSON record: %s", err.Error())
		}
		records++
		if rec.IsSidechain || rec.Message == nil || (rec.Type != "user" && rec.Type != "assistant") {
			continue
		}
		if rec.Version != "" && w.Source == "claude-code" {
			w.Source = Cut("claude-code-"+rec.Version, MaxSourceLen)
		}
		if session == "" {
			session = rec.SessionID
		}
		at, _ := time.Parse(time.RFC3339Nano, rec.Timestamp)
		blocks, text := claudeBlocks(rec.Message.Content)
		if blocks == nil && text == "" && len(rec.Message.Content) > 0 && string(rec.Message.Content) != `""` && string(rec.Message.Content) != "null" && string(rec.Message.Content) != "[]" {
			return nil, errorf(fmt.Sprintf("line %d", line), "message.content is neither text nor content blocks")
		}
		switch rec.Type {
		case "user":
			if text != "" {
				pending = append(pending, Input{Kind: KindUserMessage, Tokens: max(count(text), 1)})
			}
			for _, bl := range blocks {
				switch bl.Type {
				case "tool_result":
					pending = append(pending, Input{Kind: KindToolOutput, Tokens: max(count(blockText(bl.Content)), 1)})
					resultAt = at
				case "text":
					pending = append(pending, Input{Kind: KindUserMessage, Tokens: max(count(bl.Text), 1)})
				}
			}
		case "assistant":
			if rec.Message.Model != "" && rec.Message.Model != "<synthetic>" {
				model = rec.Message.Model
			}
			id := rec.Message.ID
			n := len(w.Turns)
			if n == 0 || id == "" || id != lastID || len(pending) > 0 {
				if len(w.Turns) >= MaxTurns {
					return nil, errorf(fmt.Sprintf("line %d", line), "more than %d responses; a workload holds at most %d", MaxTurns, MaxTurns)
				}
				closeTurn()
				if len(pending) == 0 {
					pending = []Input{{Kind: KindUserMessage, Tokens: 1}}
				}
				w.Turns = append(w.Turns, Turn{Input: pending})
				pending, lastID = nil, id
				n++
			}
			t := &w.Turns[n-1]
			lastAt = at
			for _, bl := range blocks {
				switch bl.Type {
				case "text":
					t.OutputTokens += count(bl.Text)
				case "thinking":
					r := count(bl.Thinking)
					t.OutputTokens += r
					t.ReasoningTokens += r
				case "tool_use":
					a := max(count(rawText(bl.Input)), 1)
					t.Calls = append(t.Calls, Call{ArgumentTokens: a})
					t.OutputTokens += a
				}
			}
			if text != "" {
				t.OutputTokens += count(text)
			}
			if u := rec.Message.Usage; u != nil {
				t.InputTokens = u.InputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens
				t.OutputTokens = max(t.OutputTokens, u.OutputTokens)
			}
			if n == 1 {
				firstCounted = t.NewInputTokens()
			}
		}
	}
	if err := in.Err(); err != nil {
		return nil, err
	}
	if records == 0 {
		return nil, errorf("", "empty; expected a Claude Code session file")
	}
	if len(w.Turns) == 0 {
		return nil, errorf("turns", "the session holds no assistant message")
	}
	closeTurn()
	w.ToolsTokens = min(max(w.Turns[0].InputTokens-firstCounted, 0), MaxItemTokens)
	base := "Claude Code session " + session
	if model != "" {
		base += ", " + model
	}
	w.Describe(base, "; tool time from a call's record to its last result's")
	normalize(w)
	Fit(w)
	if err := w.Validate(); err != nil {
		return nil, err
	}
	return w, nil
}

// claudeBlock is one content block of a Claude Code message.
type claudeBlock struct {
	Type     string          `json:"type"`
	Text     string          `json:"text"`
	Thinking string          `json:"thinking"`
	Input    json.RawMessage `json:"input"`
	Content  json.RawMessage `json:"content"`
}

// claudeBlocks reads a message's content: a string, or content blocks.
func claudeBlocks(raw json.RawMessage) ([]claudeBlock, string) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return nil, s
	}
	var blocks []claudeBlock
	if json.Unmarshal(raw, &blocks) == nil {
		return blocks, ""
	}
	return nil, ""
}

// blockText is a tool result's content: a string, or text blocks.
func blockText(raw json.RawMessage) string {
	blocks, s := claudeBlocks(raw)
	var b strings.Builder
	b.WriteString(s)
	for _, bl := range blocks {
		b.WriteString(bl.Text)
	}
	return b.String()
}
