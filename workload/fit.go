package workload

import "unicode/utf8"

// Cut returns s cut to at most n characters, at a character boundary.
// Every cut of text in a workload (a description, a source) goes through
// it, so what is cut still passes Validate.
func Cut(s string, n int) string {
	if n <= 0 {
		return ""
	}
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	i := 0
	for k := 0; k < n; k++ {
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
	}
	return s[:i]
}

// Describe sets w's description to base followed by note, base cut so
// that both fit MaxDescriptionLen (the note, e.g. "; the first 1000 turns",
// is kept whole).
func (w *Workload) Describe(base, note string) {
	note = Cut(note, MaxDescriptionLen)
	w.Description = Cut(base, MaxDescriptionLen-utf8.RuneCountInString(note)) + note
}

// Fit cuts a normalized recording (normalize) to the format's bounds, so
// that an export always decodes: the instructions, tools and source are
// clamped, and the turns stop before the first that would pass MaxTurns
// or MaxTotalTokens (the first turn's inputs shrink to fit instead). It
// returns how many turns it dropped. A turn's
// outputs answer the previous turn's calls, so a prefix of valid turns
// stays valid.
func Fit(w *Workload) (dropped int) {
	w.Source = Cut(w.Source, MaxSourceLen)
	w.Description = Cut(w.Description, MaxDescriptionLen)
	w.InstructionsTokens = min(max(w.InstructionsTokens, 0), MaxItemTokens)
	w.ToolsTokens = min(max(w.ToolsTokens, 0), MaxItemTokens)
	w.Tools = min(max(w.Tools, 0), MaxTools)
	total := w.InstructionsTokens + w.ToolsTokens
	keep := 0
	for keep < len(w.Turns) && keep < MaxTurns {
		t := &w.Turns[keep]
		if keep == 0 {
			// The first turn alone may pass the total: its inputs shrink
			// to what is left (the instructions, tools and one output
			// leave at least 400,000 tokens, one for each input).
			left := MaxTotalTokens - total - t.OutputTokens
			for j := range t.Input {
				t.Input[j].Tokens = min(t.Input[j].Tokens, left-(len(t.Input)-1-j))
				left -= t.Input[j].Tokens
			}
		}
		total += t.NewInputTokens() + t.OutputTokens
		if total > MaxTotalTokens {
			break
		}
		t.ToolTimeMs = min(max(t.ToolTimeMs, 0), MaxToolTimeMs)
		keep++
	}
	dropped = len(w.Turns) - keep
	w.Turns = w.Turns[:keep]
	return dropped
}

// Summary is a workload's size in a few numbers: what a run keeps of the
// workload it raced (the workload itself is stored once, by ID), and what
// a race's caps are checked against.
type Summary struct {
	Source string `json:"source,omitempty"`
	Turns  int    `json:"turns"`
	Calls  int    `json:"calls"`
	// InputTokens are the new input of every turn, instructions and tools
	// excluded; OutputTokens every output token.
	InputTokens  int `json:"input_tokens"`
	OutputTokens int `json:"output_tokens"`
	// ToolTimeMs is the recorded tool time between turns, summed: what a
	// replay waits (the last turn's is never waited).
	ToolTimeMs float64 `json:"tool_time_ms"`
}

// Summarize is w's Summary.
func (w *Workload) Summarize() Summary {
	s := Summary{Source: w.Source, Turns: len(w.Turns)}
	for i := range w.Turns {
		t := &w.Turns[i]
		s.Calls += len(t.Calls)
		s.InputTokens += t.NewInputTokens()
		s.OutputTokens += t.OutputTokens
		if i+1 < len(w.Turns) {
			s.ToolTimeMs += t.ToolTimeMs
		}
	}
	return s
}
