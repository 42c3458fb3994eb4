package server

import "agentloop/api"

// shape is what a workload needs of this request and its response
// (api.Shape): the rendered sizes render counted, and each function call's
// argument tokens as streamed. Counts only, never content; it walks the
// items once, so it costs next to nothing in finalize.
func (tu *turn) shape() *api.Shape {
	s := &api.Shape{InstructionsTokens: tu.instructionsTokens, Tools: len(tu.model.tools),
		ToolsTokens: len(tu.model.toolTokens), Generated: tu.req.Generates()}
	from := len(tu.context)
	for from > 0 && !modelWrote(&tu.context[from-1].Item) {
		from--
	}
	from = max(from, tu.fresh, len(tu.context)-api.MaxShapeItems)
	for i := from; i < len(tu.context); i++ {
		it := &tu.context[i].Item
		kind := it.Type
		switch it.Type {
		case api.TypeMessage:
			kind = it.Role
		case api.TypeFunctionCallOutput, "custom_tool_call_output":
			kind = "tool_output"
		}
		n := 0
		if j := i - tu.fresh; j < len(tu.itemTokens) {
			n = tu.itemTokens[j]
		}
		s.New = append(s.New, api.ShapeItem{Kind: kind, Tokens: n})
	}
	g := &tu.stream
	for i := range g.items {
		if g.items[i].item.Type == api.TypeFunctionCall && (i < g.cur || (i == g.cur && g.sent == g.total)) {
			s.Calls = append(s.Calls, len(g.items[i].pieces))
		}
	}
	return s
}

// modelWrote says an item is the model's: what came after it is a
// request's new input.
func modelWrote(it *api.Item) bool {
	switch it.Type {
	case api.TypeMessage:
		return it.Role == "assistant"
	case api.TypeFunctionCall, "reasoning", "custom_tool_call":
		return true
	}
	return false
}
