package policy

import "agentloop/scenario"

// NewScenarioPolicy returns the policy that plays the coding agent of a
// scenario rollout. The request must carry the scenario marker (see
// NewRouter); without one it answers with a message saying so.
func NewScenarioPolicy() Policy { return scenarioPolicy{} }

type scenarioPolicy struct{}

func (scenarioPolicy) Respond(req *Request) Reply {
	sc, seed, ok := scenarioOf(req)
	if !ok {
		return Reply{Items: []OutputItem{{Type: OutputMessage,
			Text: "This conversation carries no known agentloop-scenario marker, so there is no rollout to play."}}}
	}
	return playScenario(sc, seed, req)
}

// playScenario rebuilds the rollout's history from the items and asks the
// scripted agent for its next turn. The seed is the marker's, so every
// request of one rollout plays the same agent.
func playScenario(sc *scenario.Scenario, seed int64, req *Request) Reply {
	act := sc.Next(seed, scenarioHistory(req.Items))
	if act.Done || len(act.Calls) == 0 {
		text := act.Text
		if text == "" {
			text = "Done."
		}
		return Reply{Items: []OutputItem{{Type: OutputMessage, Text: text}}}
	}
	items := make([]OutputItem, 0, len(act.Calls)+1)
	if act.Text != "" {
		items = append(items, OutputItem{Type: OutputMessage, Text: act.Text})
	}
	for _, c := range act.Calls {
		items = append(items, OutputItem{Type: OutputFunctionCall, Name: c.Name, Arguments: c.Arguments})
	}
	return Reply{Items: items}
}

// scenarioHistory pairs every tool call with its output by call_id, in call
// order. A call without an output gets "", which keeps later steps aligned.
func scenarioHistory(items []Item) []scenario.Step {
	outputs := make(map[string]string)
	for _, it := range items {
		if isOutput(it) {
			outputs[it.CallID] = it.Output
		}
	}
	var steps []scenario.Step
	for _, it := range items {
		if isCall(it) {
			steps = append(steps, scenario.Step{
				Call:   scenario.ToolCall{Name: it.Name, Arguments: it.Arguments},
				Output: outputs[it.CallID],
			})
		}
	}
	return steps
}
