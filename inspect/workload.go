package inspect

import (
	"errors"
	"fmt"
	"time"

	"agentloop/api"
	"agentloop/workload"
)

// Workload turns a session into a workload (docs/workload.md) from the
// sizes its traces recorded (api.Shape): each generating request is a
// turn; a warm-up's input (generate:false) joins the next turn's; the
// developer and system messages before the first turn count as
// instructions. The tool time after a turn is measured at the server: from
// the end of the response to the start of the next request, so it holds
// the round trip the session's own transport saw. A failed request is left
// out (its retry is the turn). A session past the format's bounds (1,000
// turns, 1,000,000 tokens) is cut to its first turns that fit, and the
// description says so; text is cut at character boundaries, so an export
// always decodes.
//
// Where the recorded sequence breaks the format's rules (a tool output
// without its call, a call never answered), the workload keeps the tokens
// and fixes the kinds: an extra output counts as a user message, and an
// unanswered call's arguments count as the message's.
func Workload(s *Session) (*workload.Workload, error) {
	w := &workload.Workload{Version: workload.Version, Source: "inspector"}
	instructions := -1
	var pending []workload.Input
	var lastEnd int64
	for i := range s.Turns {
		t := &s.Turns[i]
		sh := t.Shape
		if sh == nil || t.Error != "" {
			continue
		}
		if instructions < 0 && sh.InstructionsTokens >= 0 {
			instructions = sh.InstructionsTokens
			w.ToolsTokens, w.Tools = sh.ToolsTokens, sh.Tools
		}
		for _, it := range sh.New {
			n := max(it.Tokens, 1)
			switch {
			case it.Kind == "tool_output":
				pending = append(pending, workload.Input{Kind: workload.KindToolOutput, Tokens: n})
			case (it.Kind == "developer" || it.Kind == "system") && len(w.Turns) == 0:
				instructions = max(instructions, 0) + n
			default:
				pending = append(pending, workload.Input{Kind: workload.KindUserMessage, Tokens: n})
			}
		}
		if !sh.Generated {
			continue
		}
		if len(w.Turns) > workload.MaxTurns {
			break // Fit keeps at most MaxTurns; one more says there were more
		}
		if n := len(w.Turns); n > 0 {
			gap := time.Duration(t.StartedUnixNS - lastEnd)
			w.Turns[n-1].ToolTimeMs = min(max(float64(gap)/float64(time.Millisecond), 0), workload.MaxToolTimeMs)
		}
		turn := workload.Turn{Input: pending, InputTokens: t.InputTokens, OutputTokens: max(t.OutputTokens, 1)}
		pending = nil
		for _, a := range sh.Calls {
			turn.Calls = append(turn.Calls, workload.Call{ArgumentTokens: max(a, 1)})
		}
		w.Turns = append(w.Turns, turn)
		lastEnd = t.StartedUnixNS + t.DurationNS
	}
	if len(w.Turns) == 0 {
		return nil, errors.New("the session has no finished turn that generated output")
	}
	w.InstructionsTokens = max(instructions, 0)
	workload.Normalize(w)
	note := ""
	if workload.Fit(w) > 0 {
		// Cut to the format's bounds (turns or tokens), said in the
		// description, which keeps the note whole.
		note = fmt.Sprintf("; the first %d turns", len(w.Turns))
	}
	w.Describe(fmt.Sprintf("session %s (%s, %s)", s.ID, s.Transport, clientName(s.Client)), note)
	if err := w.Validate(); err != nil {
		return nil, err
	}
	return w, nil
}

func clientName(c api.Client) string {
	switch {
	case c.Originator != "":
		return c.Originator
	case c.UserAgent != "":
		return c.UserAgent
	}
	return "unknown client"
}
