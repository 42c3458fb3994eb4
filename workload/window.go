package workload

// FirstOverWindow is the first turn whose prompt, when the session is
// replayed whole, passes a context window of window tokens, and that
// prompt; turn is -1 when every turn fits (or window is 0, unbounded). The
// prompt is the sum of its parts: the instructions, the tools, every
// earlier turn's input and output, and the turn's own input; the engine's
// framing adds a few tokens per item on top (InputFraming bounds it).
func (w *Workload) FirstOverWindow(window int) (turn, tokens int) {
	if window <= 0 {
		return -1, 0
	}
	n := w.InstructionsTokens + w.ToolsTokens
	for i := range w.Turns {
		n += w.Turns[i].NewInputTokens()
		if n > window {
			return i, n
		}
		n += w.Turns[i].OutputTokens
	}
	return -1, 0
}

// FirstTurnOverWindow is FirstOverWindow for a session that compacts: the
// first turn whose own request cannot fit a window of window tokens even
// with everything before it compacted away (the instructions, the tools
// and its own input), and that request's tokens; -1 when every turn fits.
func (w *Workload) FirstTurnOverWindow(window int) (turn, tokens int) {
	if window <= 0 {
		return -1, 0
	}
	for i := range w.Turns {
		if n := w.InstructionsTokens + w.ToolsTokens + w.Turns[i].NewInputTokens(); n > window {
			return i, n
		}
	}
	return -1, 0
}
