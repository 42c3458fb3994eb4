package workload

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// maxJSONBytes bounds a one-document recording (a .traj file, an ATIF
// trajectory).
const maxJSONBytes = 256 << 20

// ImportSWEAgent reads a SWE-agent trajectory (a .traj file: a JSON object
// whose history is the messages the model read and wrote, and whose
// trajectory is the steps the agent ran) and returns its workload:
//
//   - the system message and the demonstrations (is_demo) before the task
//     are the instructions;
//   - each assistant message is a response; its tool_calls are its calls
//     (their arguments counted), or, when the agent parsed its command
//     from the text, its action is one call (the action is part of the
//     text, so the output is the text);
//   - a tool message, or the user message that follows a response with a
//     command, is that command's output; other user messages are user
//     messages.
//
// A .traj file has no timestamps. Its steps' execution_time, where
// SWE-agent wrote it, is the time the environment took to run the step's
// action: the i-th step's is the i-th response's tool time. Without it the
// workload's description says "no tool times". The file has no usage
// either, so input_tokens are left out.
func ImportSWEAgent(r io.Reader, count Counter) (*Workload, error) {
	b, err := readJSONFile(r)
	if err != nil {
		return nil, err
	}
	var traj struct {
		History []struct {
			Role      string          `json:"role"`
			Content   json.RawMessage `json:"content"`
			Action    *string         `json:"action"`
			IsDemo    json.RawMessage `json:"is_demo"`
			ToolCalls []struct {
				Function struct {
					Arguments json.RawMessage `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"history"`
		Trajectory []struct {
			ExecutionTime json.RawMessage `json:"execution_time"`
		} `json:"trajectory"`
	}
	if err := json.Unmarshal(b, &traj); err != nil {
		return nil, errorf("", "not a SWE-agent trajectory (a JSON object with history and trajectory): %s", err.Error())
	}
	if len(traj.History) == 0 {
		return nil, errorf("history", "empty; a SWE-agent trajectory's history holds the messages")
	}
	w := &Workload{Version: Version, Source: "swe-agent"}
	var (
		pending   []Input
		lastCalls int
		sawTask   bool
	)
	for i, m := range traj.History {
		text := contentText(m.Content)
		switch m.Role {
		case "system":
			if !sawTask {
				w.InstructionsTokens += count(text)
				continue
			}
			pending = append(pending, Input{Kind: KindUserMessage, Tokens: max(count(text), 1)})
		case "user", "tool":
			if !sawTask && demo(m.IsDemo) {
				w.InstructionsTokens += count(text)
				continue
			}
			kind := KindUserMessage
			if lastCalls > 0 {
				kind = KindToolOutput
				lastCalls--
			}
			sawTask = true
			pending = append(pending, Input{Kind: kind, Tokens: max(count(text), 1)})
		case "assistant":
			if !sawTask && demo(m.IsDemo) {
				w.InstructionsTokens += count(text)
				continue
			}
			if len(w.Turns) >= MaxTurns {
				return nil, errorf(fmt.Sprintf("history[%d]", i), "more than %d responses; a workload holds at most %d", MaxTurns, MaxTurns)
			}
			t := Turn{Input: pending, OutputTokens: count(text)}
			for _, c := range m.ToolCalls {
				args := rawText(c.Function.Arguments)
				n := max(count(args), 1)
				t.Calls = append(t.Calls, Call{ArgumentTokens: n})
				t.OutputTokens += n
			}
			if len(t.Calls) == 0 && m.Action != nil && strings.TrimSpace(*m.Action) != "" {
				t.Calls = []Call{{ArgumentTokens: max(count(*m.Action), 1)}}
			}
			t.OutputTokens = max(t.OutputTokens, 1)
			lastCalls = len(t.Calls)
			sawTask = true
			w.Turns = append(w.Turns, t)
			pending = nil
		default:
			return nil, errorf(fmt.Sprintf("history[%d].role", i), "unknown role %q; expected system, user, assistant or tool", m.Role)
		}
	}
	if len(w.Turns) == 0 {
		return nil, errorf("history", "no assistant message: the trajectory holds no response")
	}
	timed := 0
	for i, s := range traj.Trajectory {
		sec, ok := seconds(s.ExecutionTime)
		if !ok || i >= len(w.Turns) {
			continue
		}
		w.Turns[i].ToolTimeMs = min(sec*1000, MaxToolTimeMs)
		timed++
	}
	note := "; no timestamps: tool time is its execution_time"
	if timed == 0 {
		note = "; no timestamps, no tool times"
	}
	w.Describe("SWE-agent", note)
	normalize(w)
	Fit(w)
	if err := w.Validate(); err != nil {
		return nil, err
	}
	return w, nil
}

// demo reads an is_demo flag, written true or "True".
func demo(raw json.RawMessage) bool {
	s := strings.Trim(string(raw), `"`)
	return strings.EqualFold(s, "true")
}

// rawText is a JSON value as a model reads or writes it: a string's
// contents, anything else compact (as a call's arguments are sent).
func rawText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var b bytes.Buffer
	if json.Compact(&b, raw) == nil {
		return b.String()
	}
	return string(raw)
}

// seconds reads a duration in seconds written as a number or a string; a
// negative or absent one is not a time.
func seconds(raw json.RawMessage) (float64, bool) {
	s := strings.Trim(string(raw), `"`)
	if s == "" || s == "null" {
		return 0, false
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || !(f >= 0 && f <= 1e9) {
		return 0, false
	}
	return f, true
}

// readJSONFile reads a whole-file JSON recording (a .traj, an ATIF
// trajectory), refusing one larger than maxJSONBytes.
func readJSONFile(r io.Reader) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, maxJSONBytes+1))
	if err != nil {
		return nil, &Error{Message: "reading: " + err.Error()}
	}
	if len(b) > maxJSONBytes {
		return nil, errorf("", "larger than %d bytes", maxJSONBytes)
	}
	return b, nil
}
