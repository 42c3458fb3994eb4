package web

import (
	"agentloop/api"
	"agentloop/rollout"
	"agentloop/views"
)

// reasoningChoices are the race form's reasoning selects (rollout's
// RaceReasoning): the efforts, after "off", and the summaries, after
// "none", with cfg's selected.
func reasoningChoices(r *rollout.RaceReasoning) (efforts, summaries []views.Option) {
	var effort, summary string
	if r != nil {
		effort, summary = r.Effort, r.Summary
	}
	efforts = append(efforts, views.Option{Value: "", Label: "off (no lane reasons)", Selected: effort == ""})
	for _, e := range api.ReasoningEfforts {
		if e != "none" {
			efforts = append(efforts, views.Option{Value: e, Label: e, Selected: e == effort})
		}
	}
	summaries = append(summaries, views.Option{Value: "", Label: "none", Selected: summary == ""})
	for _, s := range api.ReasoningSummaries {
		summaries = append(summaries, views.Option{Value: s, Label: s, Selected: s == summary})
	}
	return efforts, summaries
}

// reasoningField is a run's reasoning option as its settings list shows
// it; ok false for a race without it.
func reasoningField(r *rollout.RaceReasoning) (views.Field, bool) {
	if r == nil {
		return views.Field{}, false
	}
	v := "effort " + r.Effort
	if r.Summary != "" {
		v += ", summary " + r.Summary
	}
	return views.Field{Label: "Reasoning", Value: v + " (every lane, encrypted reasoning replayed)"}, true
}
