package inference

// Windows are the context windows an engine serves: each model's
// profile's own (Profile.ContextWindow), or Override for every model when
// it is positive (serve --context-window). The engine holds requests to
// them, and the playground holds workloads and races to the same ones.
type Windows struct{ Override int }

// Of is model's context window; 0 is unbounded.
func (w Windows) Of(model string) int {
	if w.Override > 0 {
		return w.Override
	}
	return ProfileFor(model).ContextWindow
}

// Largest is the built-in model with the largest context window, and that
// window; an unbounded one (instant, the load tests' model) counts only
// when Override bounds it.
func (w Windows) Largest() (model string, window int) {
	for _, p := range Profiles() {
		if n := w.Of(p.Name); n > window {
			model, window = p.Name, n
		}
	}
	return model, window
}
