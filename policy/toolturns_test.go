package policy

import "testing"

// TestToolTurnsKeepsCallingUntilKOutputs: a scope's K makes the chat
// policy call a function tool, even one that matches nothing in the task,
// until the context holds K tool outputs, and then answer.
func TestToolTurnsKeepsCallingUntilKOutputs(t *testing.T) {
	c := NewChatPolicy(newTestTokenizer(t))
	tools := []Tool{
		{Type: ToolCustom, Name: "apply_patch"},
		{Name: "shell", Description: "Runs a command", Parameters: schemaOf(t, `{"type":"object","properties":{"command":{"type":"string"}},"required":["command"]}`)},
		{Name: "read_weather", Description: "Reads the weather", Parameters: schemaOf(t, `{"type":"object","properties":{}}`)},
	}
	items := []Item{{Type: "message", Role: "user", Text: "hello there"}}
	const k = 3
	for turn := 0; turn <= k; turn++ {
		r := c.Respond(&Request{Items: items, Tools: tools, ToolTurns: k, Seed: 1})
		if len(r.Items) != 1 {
			t.Fatalf("turn %d: %d items", turn, len(r.Items))
		}
		got := r.Items[0]
		if turn == k {
			if got.Type != OutputMessage {
				t.Fatalf("after %d outputs: %s, want an answer", k, got.Type)
			}
			break
		}
		if got.Type != OutputFunctionCall || got.Name != "shell" {
			t.Fatalf("turn %d: %s %s, want a call of the first function tool", turn, got.Type, got.Name)
		}
		items = append(items, Item{Type: "function_call", Name: got.Name, CallID: "c"}, Item{Type: "function_call_output", CallID: "c", Output: "ok"})
	}
	// The best match wins over the first.
	r := c.Respond(&Request{Items: []Item{{Type: "message", Role: "user", Text: "what is the weather"}}, Tools: tools, ToolTurns: 1})
	if r.Items[0].Name != "read_weather" {
		t.Fatalf("called %s, want the best match read_weather", r.Items[0].Name)
	}
	// No function tool: K changes nothing.
	r = c.Respond(&Request{Items: []Item{{Type: "message", Role: "user", Text: "hi"}}, Tools: tools[:1], ToolTurns: 2})
	if r.Items[0].Type != OutputMessage {
		t.Fatalf("without a function tool: %s", r.Items[0].Type)
	}
	// tool_choice none still wins.
	r = c.Respond(&Request{Items: []Item{{Type: "message", Role: "user", Text: "hi"}}, Tools: tools, ToolChoice: "none", ToolTurns: 2})
	if r.Items[0].Type != OutputMessage {
		t.Fatalf("tool_choice none: %s", r.Items[0].Type)
	}
}
