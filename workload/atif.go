package workload

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// ATIFMajor is the Agent Trajectory Interchange Format (Harbor's,
// Terminal-Bench's) whose trajectories ImportATIF reads: "ATIF-v1.x".
const ATIFMajor = "ATIF-v1."

// ImportATIF reads an ATIF trajectory (one JSON object: schema_version,
// agent, steps) and returns its workload:
//
//   - system steps before the first agent step are the instructions;
//   - each agent step is a response: its metrics give input_tokens
//     (prompt_tokens), output_tokens (completion_tokens) and
//     reasoning_tokens (metrics.extra.reasoning_tokens) where the agent
//     recorded them, else its message, reasoning_content and calls are
//     counted; its tool_calls are its calls (their arguments counted);
//   - its observation's results are the next request's tool outputs (one
//     a call; a result of no call is a user message), user steps user
//     messages.
//
// An ATIF step has one timestamp, and an agent step holds both the
// model's answer and the tools' run: the tool time cannot be told from
// the model's, so the workload has none and its description says so.
func ImportATIF(r io.Reader, count Counter) (*Workload, error) {
	b, err := readJSONFile(r)
	if err != nil {
		return nil, err
	}
	var traj struct {
		SchemaVersion string `json:"schema_version"`
		SessionID     string `json:"session_id"`
		Agent         struct {
			Name      string `json:"name"`
			Version   string `json:"version"`
			ModelName string `json:"model_name"`
		} `json:"agent"`
		Steps []json.RawMessage `json:"steps"`
	}
	if err := json.Unmarshal(b, &traj); err != nil {
		return nil, errorf("", "not an ATIF trajectory (a JSON object with schema_version, agent and steps): %s", err.Error())
	}
	if !strings.HasPrefix(traj.SchemaVersion, ATIFMajor) {
		return nil, errorf("schema_version", "%q; agentloop reads %sx", traj.SchemaVersion, ATIFMajor)
	}
	w := &Workload{Version: Version, Source: Cut("atif:"+traj.Agent.Name+"-"+traj.Agent.Version, MaxSourceLen)}
	var (
		pending []Input
		agents  int
	)
	for i, raw := range traj.Steps {
		var s struct {
			Source           string `json:"source"`
			Message          string `json:"message"`
			ReasoningContent string `json:"reasoning_content"`
			ToolCalls        []struct {
				ToolCallID string          `json:"tool_call_id"`
				Arguments  json.RawMessage `json:"arguments"`
			} `json:"tool_calls"`
			Observation *struct {
				Results []struct {
					SourceCallID string `json:"source_call_id"`
					Content      string `json:"content"`
				} `json:"results"`
			} `json:"observation"`
			Metrics *struct {
				PromptTokens     int `json:"prompt_tokens"`
				CompletionTokens int `json:"completion_tokens"`
				Extra            struct {
					ReasoningTokens int `json:"reasoning_tokens"`
				} `json:"extra"`
			} `json:"metrics"`
		}
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, errorf(fmt.Sprintf("steps[%d]", i), "not an ATIF step: %s", err.Error())
		}
		switch s.Source {
		case "system":
			if agents == 0 {
				w.InstructionsTokens += count(s.Message)
				continue
			}
			pending = append(pending, Input{Kind: KindUserMessage, Tokens: max(count(s.Message), 1)})
		case "user":
			pending = append(pending, Input{Kind: KindUserMessage, Tokens: max(count(s.Message), 1)})
		case "agent":
			agents++
			if len(w.Turns) >= MaxTurns {
				return nil, errorf(fmt.Sprintf("steps[%d]", i), "more than %d agent steps; a workload holds at most %d", MaxTurns, MaxTurns)
			}
			if len(pending) == 0 {
				// ATIF lets an agent step follow another: the loop went on
				// without new input. A request adds at least one item.
				pending = []Input{{Kind: KindUserMessage, Tokens: 1}}
			}
			t := Turn{Input: pending}
			counted := count(s.Message)
			reasoning := count(s.ReasoningContent)
			calls := map[string]bool{}
			for _, c := range s.ToolCalls {
				n := max(count(rawText(c.Arguments)), 1)
				t.Calls = append(t.Calls, Call{ArgumentTokens: n})
				counted += n
				calls[c.ToolCallID] = true
			}
			t.OutputTokens = max(counted+reasoning, 1)
			t.ReasoningTokens = reasoning
			if m := s.Metrics; m != nil {
				t.InputTokens = m.PromptTokens
				if m.CompletionTokens > 0 {
					t.OutputTokens = m.CompletionTokens
					t.ReasoningTokens = m.Extra.ReasoningTokens
				}
			}
			w.Turns = append(w.Turns, t)
			pending = nil
			if s.Observation != nil {
				// Answers first, in the calls' order; then what answers no call.
				var others []Input
				for _, res := range s.Observation.Results {
					in := Input{Kind: KindToolOutput, Tokens: max(count(res.Content), 1)}
					if !calls[res.SourceCallID] || res.SourceCallID == "" {
						in.Kind = KindUserMessage
						others = append(others, in)
						continue
					}
					pending = append(pending, in)
				}
				pending = append(pending, others...)
			}
		default:
			return nil, errorf(fmt.Sprintf("steps[%d].source", i), "unknown source %q; expected system, user or agent", s.Source)
		}
	}
	if len(w.Turns) == 0 {
		return nil, errorf("steps", "no agent step: the trajectory holds no response")
	}
	base := "ATIF " + traj.Agent.Name + " " + traj.Agent.Version
	if traj.Agent.ModelName != "" {
		base += ", " + traj.Agent.ModelName
	}
	w.Describe(base+", session "+traj.SessionID, "; no tool times: ATIF has one timestamp a step")
	normalize(w)
	Fit(w)
	if err := w.Validate(); err != nil {
		return nil, err
	}
	return w, nil
}
