package policy

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"agentloop/scenario"
)

// transcript is a rollout as the client sends it: the developer message, the
// task, then every reply item and tool output in order.
type transcript struct {
	items []Item
	calls int
}

func (tr *transcript) add(reply Reply, ws *scenario.Workspace, t *testing.T) (done bool) {
	t.Helper()
	var outputs []Item
	for _, it := range reply.Items {
		switch it.Type {
		case OutputMessage:
			tr.items = append(tr.items, Item{Type: "message", Role: "assistant", Text: it.Text})
		case OutputFunctionCall:
			tr.calls++
			id := fmt.Sprintf("call_%d", tr.calls)
			tr.items = append(tr.items, Item{Type: "function_call", Name: it.Name, Arguments: it.Arguments, CallID: id})
			out, err := ws.Call(it.Name, it.Arguments)
			if err != nil {
				t.Fatalf("the scenario policy sent a call its workspace rejects: %s(%s): %v", it.Name, it.Arguments, err)
			}
			outputs = append(outputs, Item{Type: "function_call_output", CallID: id, Output: out})
		default:
			t.Fatalf("unexpected output item type %q", it.Type)
		}
	}
	tr.items = append(tr.items, outputs...)
	return len(outputs) == 0
}

// playRollout runs a scenario through policy as the agent client would, for
// at most maxTurns turns. Every third reply is checked against the scripted
// agent's action (replaying a rollout costs as much as playing it).
func playRollout(t *testing.T, policy Policy, sc *scenario.Scenario, seed int64, viaInstructions bool, maxTurns int) (*transcript, Reply) {
	t.Helper()
	tr := &transcript{}
	req := &Request{Seed: 99} // the marker's seed wins over the request's
	if viaInstructions {
		req.Instructions = sc.DeveloperMessage(seed)
	} else {
		tr.items = append(tr.items, Item{Type: "message", Role: "developer", Text: sc.DeveloperMessage(seed)})
	}
	tr.items = append(tr.items, Item{Type: "message", Role: "user", Text: sc.Task})
	ws := sc.NewWorkspace()
	var reply Reply
	for turn := 0; turn < maxTurns; turn++ {
		req.Items = tr.items
		reply = policy.Respond(req)
		if turn%3 == 0 {
			// The reply must be exactly the scripted agent's next action.
			if want := sc.Next(seed, scenarioHistory(tr.items)); !sameAction(reply, want) {
				t.Fatalf("turn %d: reply %+v does not play action %+v", turn, reply, want)
			}
		}
		if tr.add(reply, ws, t) {
			return tr, reply
		}
	}
	return tr, reply
}

func sameAction(r Reply, a scenario.Action) bool {
	var calls []scenario.ToolCall
	text := ""
	for _, it := range r.Items {
		if it.Type == OutputFunctionCall {
			calls = append(calls, scenario.ToolCall{Name: it.Name, Arguments: it.Arguments})
		} else {
			text = it.Text
		}
	}
	if a.Done {
		return len(calls) == 0 && text == a.Text
	}
	return reflect.DeepEqual(calls, a.Calls) && text == a.Text
}

func TestScenarioPolicyPlaysRollouts(t *testing.T) {
	router := NewRouter(newTestTokenizer(t))
	for _, sc := range scenario.All() {
		t.Run(sc.Name, func(t *testing.T) {
			a, last := playRollout(t, router, sc, 7, false, 60)
			if a.calls == 0 {
				t.Fatal("the rollout made no tool calls")
			}
			if len(last.Items) != 1 || last.Items[0].Type != OutputMessage || last.Items[0].Text == "" {
				t.Fatalf("the rollout did not end with one final message: %+v", last)
			}
			b, _ := playRollout(t, NewScenarioPolicy(), sc, 7, true, 4)
			if !reflect.DeepEqual(a.items[1:len(b.items)+1], b.items) { // a starts with the developer message
				t.Fatal("the same seed gave different rollouts (router with a developer message vs scenario policy with instructions)")
			}
		})
	}
}

func TestScenarioHistoryPairsByCallID(t *testing.T) {
	items := []Item{
		{Type: "message", Role: "user", Text: "go"},
		{Type: "function_call", Name: "read_file", Arguments: `{"path":"a"}`, CallID: "c1"},
		{Type: "function_call", Name: "read_file", Arguments: `{"path":"b"}`, CallID: "c2"},
		{Type: "function_call_output", CallID: "c2", Output: "B"},
		{Type: "function_call_output", CallID: "c1", Output: "A"},
		{Type: "reasoning"},
		{Type: "custom_tool_call", Name: "apply_patch", Arguments: "*** Begin Patch", CallID: "c3"},
		{Type: "custom_tool_call_output", CallID: "c3", Output: "Done!"},
		{Type: "function_call", Name: "run_tests", Arguments: `{}`, CallID: "c4"},
	}
	got := scenarioHistory(items)
	want := []scenario.Step{
		{Call: scenario.ToolCall{Name: "read_file", Arguments: `{"path":"a"}`}, Output: "A"},
		{Call: scenario.ToolCall{Name: "read_file", Arguments: `{"path":"b"}`}, Output: "B"},
		{Call: scenario.ToolCall{Name: "apply_patch", Arguments: "*** Begin Patch"}, Output: "Done!"},
		{Call: scenario.ToolCall{Name: "run_tests", Arguments: `{}`}, Output: ""},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("scenarioHistory = %+v\nwant %+v", got, want)
	}
}

func TestRouterFallsBackToChat(t *testing.T) {
	router := NewRouter(newTestTokenizer(t))
	sc := scenario.All()[0]
	tests := []struct {
		name         string
		instructions string
		items        []Item
		wantScenario bool
	}{
		{"no marker", "", userAsks("What is a KV cache?"), false},
		{"unknown scenario", "agentloop-scenario: no-such-rollout seed: 1", userAsks("What is a KV cache?"), false},
		{"marker in a later developer message", "", append(append(userAsks("hi"),
			Item{Type: "message", Role: "developer", Text: "You are helpful."}),
			Item{Type: "message", Role: "developer", Text: sc.DeveloperMessage(1)}), false},
		{"marker in a user message", "", userAsks(sc.DeveloperMessage(1)), false},
		{"system message", "", []Item{{Type: "message", Role: "system", Text: sc.DeveloperMessage(3)}, {Type: "message", Role: "user", Text: sc.Task}}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := &Request{Instructions: tt.instructions, Items: tt.items, Seed: 1}
			got := router.Respond(req)
			_, seed, isScenario := scenarioOf(req)
			if isScenario != tt.wantScenario {
				t.Fatalf("scenarioOf = %v, want %v", isScenario, tt.wantScenario)
			}
			chat := NewChatPolicy(newTestTokenizer(t)).Respond(req)
			if tt.wantScenario {
				if !sameAction(got, sc.Next(seed, nil)) {
					t.Fatalf("router reply %+v is not the scenario's first action", got)
				}
				return
			}
			if !reflect.DeepEqual(got, chat) {
				t.Fatalf("router reply %+v, want the chat policy's %+v", got, chat)
			}
		})
	}
	if got := NewScenarioPolicy().Respond(&Request{Items: userAsks("hi")}); len(got.Items) != 1 || !strings.Contains(got.Items[0].Text, "marker") {
		t.Fatalf("scenario policy without a marker: %+v", got)
	}
}
