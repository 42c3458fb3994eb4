package api

import (
	"encoding/json"
	"reflect"
	"sort"
	"testing"
)

// TestNewShapesMatchTheSDK holds the custom tool and reasoning items and
// events to the field names the openai npm package (7.59.0) declares: ResponseCustomToolCall
// (an output item: no status), ResponseCustomToolCallItem (input_items: with its status),
// ResponseCustomToolCallOutput, ResponseReasoningItem and the
// ResponseCustomToolCallInput* and ResponseReasoningSummary* events.
func TestNewShapesMatchTheSDK(t *testing.T) {
	call := Item{Type: TypeCustomToolCall, ID: "ctc_1", Status: "completed", CallID: "call_1", Name: "apply_patch", Arguments: "*** Begin Patch"}
	output := Item{Type: TypeCustomToolCallOutput, ID: "ctco_1", CallID: "call_1", Output: json.RawMessage(`"done"`)}
	reasoning := Item{Type: TypeReasoning, ID: "rs_1", Summary: []Part{{Type: "summary_text", Text: "Thinking"}}, EncryptedContent: "AQID"}
	bare := Item{Type: TypeReasoning, ID: "rs_2"}
	cases := []struct {
		name string
		json []byte
		keys []string
	}{
		{"custom_tool_call", call.AppendJSON(nil), []string{"call_id", "id", "input", "name", "type"}},
		{"custom_tool_call listed", call.AppendListedJSON(nil), []string{"call_id", "id", "input", "name", "status", "type"}},
		{"custom_tool_call_output", output.AppendJSON(nil), []string{"call_id", "id", "output", "type"}},
		{"reasoning", reasoning.AppendJSON(nil), []string{"encrypted_content", "id", "summary", "type"}},
		{"reasoning without summary or blob", bare.AppendJSON(nil), []string{"id", "summary", "type"}},
		{"custom_tool_call_input.delta", AppendCustomToolCallInputDelta(nil, 4, "ctc_1", 1, "*** "), []string{"delta", "item_id", "output_index", "sequence_number", "type"}},
		{"custom_tool_call_input.done", AppendCustomToolCallInputDone(nil, 5, "ctc_1", 1, "*** Begin Patch"), []string{"input", "item_id", "output_index", "sequence_number", "type"}},
		{"reasoning_summary_part.added", AppendReasoningSummaryPartEvent(nil, EventReasoningSummaryPartAdded, 2, "rs_1", 0, 0, ""), []string{"item_id", "output_index", "part", "sequence_number", "summary_index", "type"}},
		{"reasoning_summary_part.done", AppendReasoningSummaryPartEvent(nil, EventReasoningSummaryPartDone, 6, "rs_1", 0, 0, "Thinking"), []string{"item_id", "output_index", "part", "sequence_number", "summary_index", "type"}},
		{"reasoning_summary_text.delta", AppendReasoningSummaryTextDelta(nil, 3, "rs_1", 0, 0, "Think"), []string{"delta", "item_id", "output_index", "sequence_number", "summary_index", "type"}},
		{"reasoning_summary_text.done", AppendReasoningSummaryTextDone(nil, 5, "rs_1", 0, 0, "Thinking"), []string{"item_id", "output_index", "sequence_number", "summary_index", "text", "type"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var m map[string]any
			if err := json.Unmarshal(c.json, &m); err != nil {
				t.Fatalf("not JSON: %v\n%s", err, c.json)
			}
			var keys []string
			for k := range m {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			if !reflect.DeepEqual(keys, c.keys) {
				t.Fatalf("fields %v, want %v\n%s", keys, c.keys, c.json)
			}
			if part, ok := m["part"].(map[string]any); ok && part["type"] != "summary_text" {
				t.Fatalf("part %v, want a summary_text part", part)
			}
		})
	}
	// The events decode for clients.
	ev, err := DecodeEvent(AppendReasoningSummaryTextDone(nil, 5, "rs_1", 0, 2, "Thinking"))
	if err != nil || ev.SummaryIndex != 2 || ev.Text != "Thinking" {
		t.Fatalf("decoded %+v, %v", ev, err)
	}
	ev, err = DecodeEvent(AppendCustomToolCallInputDone(nil, 5, "ctc_1", 1, "x"))
	if err != nil || ev.Input != "x" || ev.ItemID != "ctc_1" {
		t.Fatalf("decoded %+v, %v", ev, err)
	}
}

// TestDecodeItemReadsNewFields: a client's reasoning and custom tool items
// keep their bytes and give the engine their fields.
func TestDecodeItemReadsNewFields(t *testing.T) {
	raw := `{"type":"reasoning","summary":[{"type":"summary_text","text":"Plan"}],"encrypted_content":"AQID"}`
	it, err := DecodeItem(json.RawMessage(raw), "input[0]")
	if err != nil || it.EncryptedContent != "AQID" || len(it.Summary) != 1 || it.Summary[0].Text != "Plan" || string(it.AppendJSON(nil)) != raw {
		t.Fatalf("reasoning: %+v, %v", it, err)
	}
	raw = `{"type":"custom_tool_call","call_id":"c","name":"n","input":"ls"}`
	it, err = DecodeItem(json.RawMessage(raw), "input[0]")
	if err != nil || it.Arguments != "ls" || it.CallID != "c" || string(it.AppendJSON(nil)) != raw {
		t.Fatalf("custom call: %+v, %v", it, err)
	}
	raw = `{"type":"custom_tool_call_output","call_id":"c","output":"done"}`
	it, err = DecodeItem(json.RawMessage(raw), "input[0]")
	if err != nil || OutputText(it.Output) != "done" || string(it.AppendJSON(nil)) != raw {
		t.Fatalf("custom output: %+v, %v", it, err)
	}
}
