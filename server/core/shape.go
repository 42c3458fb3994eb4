package core

import "agentloop/api"

// shape is what a workload needs of this request and its response
// (api.Shape): the rendered sizes render counted, and each function call's
// argument tokens as streamed. Counts only, never content; it walks the
// items once, so it costs next to nothing in finalize.
func (fl *Flight) shape() *api.Shape {
	s := &api.Shape{InstructionsTokens: fl.rendered.instructionsTokens, Tools: len(fl.resolved.model.tools),
		ToolsTokens: len(fl.resolved.model.toolTokens), Generated: fl.parsed.req.Generates()}
	from := len(fl.built.context)
	for from > 0 && !modelWrote(&fl.built.context[from-1].Item) {
		from--
	}
	from = max(from, fl.rendered.fresh, len(fl.built.context)-api.MaxShapeItems)
	for i := from; i < len(fl.built.context); i++ {
		it := &fl.built.context[i].Item
		kind := it.Type
		switch it.Type {
		case api.TypeMessage:
			kind = it.Role
		case api.TypeFunctionCallOutput, "custom_tool_call_output":
			kind = "tool_output"
		}
		n := 0
		if j := i - fl.rendered.fresh; j < len(fl.rendered.itemTokens) {
			n = fl.rendered.itemTokens[j]
		}
		s.New = append(s.New, api.ShapeItem{Kind: kind, Tokens: n})
	}
	g := &fl.stream
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
