package core

import (
	"strconv"
	"strings"

	"agentloop/api"
	"agentloop/inference"
	"agentloop/policy"
)

// plan turns the policy's reply into output items with ids and pieces, cut
// at max_output_tokens.
func (e *Engine) plan(fl *Flight, reply policy.Reply) (items []plannedItem, total int, truncated bool) {
	limit := -1
	if fl.parsed.req.MaxOutputTokens != nil {
		limit = max(*fl.parsed.req.MaxOutputTokens-fl.seg.sent, 0) // a resumed segment gets what is left
	}
	if fl.reasoning.on || reply.ReasoningTokens > 0 {
		p, ok, cut := e.planReasoning(fl, &reply, limit)
		if ok {
			items, total = append(items, p), p.tokenCount()
		}
		if cut {
			return items, total, true
		}
	}
	for _, out := range reply.Items {
		var it api.Item
		var text string
		switch out.Type {
		case "function_call":
			it = api.Item{Type: api.TypeFunctionCall, ID: api.NewID("fc"), Status: "completed", Name: out.Name,
				Namespace: out.Namespace, CallID: api.NewCallID(), Arguments: out.Arguments}
			text = out.Arguments
		case policy.OutputCustomToolCall:
			it = api.Item{Type: api.TypeCustomToolCall, ID: api.NewID("ctc"), Status: "completed", Name: out.Name,
				Namespace: out.Namespace, CallID: api.NewCallID(), Arguments: out.Arguments}
			text = out.Arguments
		default:
			it = api.Item{Type: api.TypeMessage, ID: api.NewID("msg"), Status: "completed", Role: "assistant",
				Content: []api.Part{{Type: "output_text", Text: out.Text}}}
			text = out.Text
		}
		p := plannedItem{item: it, pieces: out.Pieces}
		if it.Type == api.TypeMessage {
			p.filler = out.Filler // only a message is written to an exact length
		}
		if p.filler == 0 {
			if len(p.pieces) == 0 {
				p.pieces = e.sh.Tokenizer.Pieces(text)
			}
			if len(p.pieces) == 0 {
				p.pieces = []string{""}
			}
		}
		if limit >= 0 && total+p.tokenCount() > limit {
			keep := limit - total
			p.filler = max(min(p.filler, keep-len(p.pieces)), 0)
			p.pieces = p.pieces[:min(keep, len(p.pieces))]
			truncated = true
			p.item.Status = "incomplete"
			if p.filler == 0 {
				cut := strings.Join(p.pieces, "")
				if p.item.Type != api.TypeMessage {
					p.item.Arguments = cut
				} else {
					p.item.Content[0].Text = cut
				}
			}
			if p.tokenCount() == 0 {
				break
			}
		}
		items = append(items, p)
		total += p.tokenCount()
		if truncated {
			break
		}
	}
	return items, total, truncated
}

func jitterSeed(fl *Flight) uint64 {
	last := ""
	if n := len(fl.built.context); n > 0 {
		last = fl.built.context[n-1].TextPrefix(256)
	}
	return inference.JitterSeed(fl.parsed.seed, strconv.Itoa(len(fl.built.context)), last)
}
