package rollout

import (
	"slices"
	"strings"

	"agentloop/api"
)

// RaceReasoning is a race's opt-in reasoning (Config.Reasoning): every
// lane runs as a reasoning client in Codex's shape, race-wide
// (docs/decisions.md, "Reasoning in races is race-wide"). Each request
// asks for this effort and summary with include
// ["reasoning.encrypted_content"], and the agent replays the reasoning
// items it got back: the stateless HTTP lanes resend them every turn
// (store:false), the chained lane and WebSocket mode continue from a
// response that holds them (the store, the connection cache). So the race
// shows what resending reasoning costs. The reasoning tokens of a turn
// depend only on the profile, the effort, the seed and the turn, so every
// lane reasons the same.
type RaceReasoning struct {
	// Effort is reasoning.effort: one of api.ReasoningEfforts but "none".
	Effort string `json:"effort"`
	// Summary is reasoning.summary: "" for none, or one of
	// api.ReasoningSummaries.
	Summary string `json:"summary,omitempty"`
}

// validate checks the option; the error is a 400.
func (r *RaceReasoning) validate() *api.Error {
	efforts := slices.DeleteFunc(slices.Clone(api.ReasoningEfforts), func(e string) bool { return e == "none" })
	if !slices.Contains(efforts, r.Effort) {
		return api.BadRequest("reasoning.effort", api.CodeInvalidValue, "Invalid value: '%s'. Supported values are: %s.", r.Effort, strings.Join(efforts, ", "))
	}
	if r.Summary != "" && !slices.Contains(api.ReasoningSummaries, r.Summary) {
		return api.BadRequest("reasoning.summary", api.CodeInvalidValue, "Invalid value: '%s'. Supported values are: %s.", r.Summary, strings.Join(api.ReasoningSummaries, ", "))
	}
	return nil
}

// addTo makes a create body a reasoning client's, as Codex sends it.
func (r *RaceReasoning) addTo(body map[string]any) {
	reasoning := map[string]string{"effort": r.Effort}
	if r.Summary != "" {
		reasoning["summary"] = r.Summary
	}
	body["reasoning"] = reasoning
	body["include"] = []string{api.IncludeReasoningEncryptedContent}
}
