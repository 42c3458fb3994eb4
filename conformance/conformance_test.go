package conformance

import (
	"encoding/json"
	"testing"
)

// TestTheSDKTypesTakeEverythingTheEngineSends: every capture of the
// matrix (capture_test.go) is what the openai npm package's declarations
// (tsc --strict) and openai-go's typed structs say it is.
func TestTheSDKTypesTakeEverythingTheEngineSends(t *testing.T) {
	t.Parallel()
	cs := captureAll(t)
	counts := map[string]int{}
	for _, c := range cs {
		counts[c.typ]++
	}
	t.Logf("%d captures: %v", len(cs), counts)
	checkCoverage(t, cs)
	t.Run("openai-go", func(t *testing.T) {
		clean := withoutDeviations(t, cs, false)
		checkGo(t, clean)
		checkGoCatchesMutations(t, clean)
	})
	t.Run("typescript", func(t *testing.T) { checkTypeScript(t, withoutDeviations(t, cs, true)) })
}

// shapes are the event and item types the matrix must produce over every
// transport that streams, so that the checks cover them.
var shapes = []string{
	"response.created", "response.in_progress", "response.output_item.added", "response.output_item.done",
	"response.content_part.added", "response.content_part.done", "response.output_text.delta", "response.output_text.done",
	"response.function_call_arguments.delta", "response.function_call_arguments.done",
	"response.custom_tool_call_input.delta", "response.custom_tool_call_input.done",
	"response.completed", "response.incomplete",
	"message", "function_call", "custom_tool_call",
}

// checkCoverage fails when a transport's captures lack one of shapes
// (an event's type, or an output item's), or the WebSocket an error frame.
func checkCoverage(t *testing.T, cs []capture) {
	seen := map[string]map[string]bool{typeStreamEvent: {}, typeServerEvent: {}}
	for _, c := range cs {
		if seen[c.typ] == nil {
			continue
		}
		var ev struct {
			Type string
			Item *struct{ Type string }
		}
		if err := json.Unmarshal(c.json, &ev); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		seen[c.typ][ev.Type] = true
		if ev.Item != nil {
			seen[c.typ][ev.Item.Type] = true
		}
	}
	for typ, got := range seen {
		for _, s := range shapes {
			if !got[s] {
				t.Errorf("no %s in the matrix shows %q", typ, s)
			}
		}
	}
	if !seen[typeServerEvent]["error"] {
		t.Error("no WebSocket error frame in the matrix")
	}
}
