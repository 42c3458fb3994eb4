package api

import (
	"encoding/json"
	"slices"
)

// SpanReasoning is the modelled span of a response's reasoning tokens:
// decoded at the model's speed between prefill and generate, in the
// decode group (SpanGroup).
const SpanReasoning = "reasoning"

// Reasoning is what a create's reasoning object asks for: the effort ("" or
// "none": no reasoning phase) and the summary ("" when none is asked;
// "auto", "concise" or "detailed"). parse has held the object to the SDK's
// declaration (params.go).
type Reasoning struct {
	Effort  string
	Summary string
}

// DefaultReasoningEffort is the effort of a create that asks for a
// reasoning summary and names no effort: the hosted reasoning models'
// default.
const DefaultReasoningEffort = "medium"

// ReasoningOf reads the create's reasoning object. generate_summary, the
// SDK's deprecated spelling, counts as summary.
func (r *CreateRequest) ReasoningOf() Reasoning {
	if len(r.Reasoning) == 0 {
		return Reasoning{}
	}
	var w struct {
		Effort          *string `json:"effort"`
		Summary         *string `json:"summary"`
		GenerateSummary *string `json:"generate_summary"`
	}
	if json.Unmarshal(r.Reasoning, &w) != nil {
		return Reasoning{}
	}
	var out Reasoning
	if w.Summary != nil {
		out.Summary = *w.Summary
	} else if w.GenerateSummary != nil {
		out.Summary = *w.GenerateSummary
	}
	if w.Effort != nil {
		out.Effort = *w.Effort
	} else if out.Summary != "" {
		out.Effort = DefaultReasoningEffort
	}
	return out
}

// Reasons says whether the create asks for a reasoning phase.
func (r Reasoning) Reasons() bool { return r.Effort != "" && r.Effort != "none" }

// Includes says whether the create's include lists what.
func (r *CreateRequest) Includes(what string) bool { return slices.Contains(r.Include, what) }
