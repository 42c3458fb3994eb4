package core

import (
	"context"
	"encoding/json"
	"hash/maphash"
	"strconv"

	"agentloop/api"
	"agentloop/inference"
	"agentloop/policy"
)

// renderParts is the text an item renders to before tokenization, in
// three parts: a header naming the speaker, the content, and the end, as a
// chat template would. A long content is tokenized without being copied
// into the joined text (inference.Tokenizer.AppendEncodeWrapped).
func renderParts(it *api.Item) (head, content, end string) {
	if rendersNothing(it) {
		return "", "", ""
	}
	switch it.Type {
	case api.TypeMessage:
		return "<|start|>" + it.Role + "<|message|>", it.Text(), "<|end|>"
	case api.TypeFunctionCall:
		return "<|start|>assistant to=functions." + it.Name + "<|message|>", it.Arguments, "<|call|>"
	case api.TypeFunctionCallOutput:
		return "<|start|>functions call_id=" + it.CallID + "<|message|>", it.Text(), "<|end|>"
	case api.TypeCompaction:
		return "<|start|>compaction<|message|>", it.CompactionSummary(), "<|end|>" // the summary the blob seals
	default:
		return "<|start|>" + it.Type + "<|message|>", string(it.Raw), "<|end|>"
	}
}

// encodeItem appends the tokens of an item's rendered text to dst.
func (e *Engine) encodeItem(ctx context.Context, dst []int, it *api.Item) ([]int, error) {
	head, content, end := renderParts(it)
	return e.sh.Tokenizer.AppendEncodeWrapped(ctx, dst, head, content, end)
}

// renderItems appends the tokens of items to dst, through the token cache
// when the engine has one. It returns the tokens appended and cache hits;
// it stops with ctx's error once ctx ends, between items or within a long
// one.
func (e *Engine) renderItems(ctx context.Context, dst []int, partition string, items []ctxItem) ([]int, int, error) {
	return e.renderItemsCounted(ctx, dst, partition, items, nil)
}

// renderItemsCounted is renderItems that also writes each item's token
// count into counts (len(items), or nil), for the trace's Shape.
func (e *Engine) renderItemsCounted(ctx context.Context, dst []int, partition string, items []ctxItem, counts []int) ([]int, int, error) {
	hits := 0
	if e.tokens != nil {
		defer func() { e.sh.Metrics.cacheLookups("token", hits, len(items)-hits) }()
	}
	for i := range items {
		it := &items[i].Item
		if counts != nil {
			counts[i] = len(dst) // made a count after the loop
		}
		if e.tokens == nil {
			var err error
			if dst, err = e.encodeItem(ctx, dst, it); err != nil {
				return dst, hits, err
			}
			continue
		}
		key := itemHash(partition, it)
		if toks, ok := e.tokens.get(key); ok {
			dst = toks.appendTo(dst)
			hits++
			continue
		}
		// Encoded in place, and packed for the cache: encoding apart and
		// appending would hold a long item's tokens three times over.
		start := len(dst)
		var err error
		if dst, err = e.encodeItem(ctx, dst, it); err != nil {
			return dst[:start], hits, err
		}
		if len(dst)-start <= e.tokens.max {
			e.tokens.put(key, partition, packRun(dst[start:]))
		}
	}
	for i := range counts {
		end := len(dst)
		if i+1 < len(counts) {
			end = counts[i+1]
		}
		counts[i] = end - counts[i]
	}
	return dst, hits, nil
}

func (e *Engine) resolveModel(partition string, req *api.CreateRequest, tools toolsSum, toolsChecked bool) (*resolvedModel, bool, *api.Error) {
	var h maphash.Hash
	h.SetSeed(hashSeed)
	h.WriteString(partition)
	h.WriteByte(0)
	h.WriteString(req.Model)
	h.WriteByte(0)
	h.Write(tools[:])
	key := h.Sum64()
	if e.models != nil {
		if m, ok := e.models.get(key); ok && m.serves(partition, req.Model, tools) {
			return m, true, nil
		}
	}
	m, err := e.buildModel(partition, req, tools, toolsChecked)
	if err != nil {
		return nil, false, err
	}
	m.key = key
	if e.models != nil {
		e.models.put(m.key, m.partition, m)
	}
	return m, false, nil
}

// buildModel resolves the profile and the tools; toolsChecked says parse
// has already held the tools to api.CheckTools (a create), so only
// input_tokens, which decodes leniently, is checked here.
func (e *Engine) buildModel(partition string, req *api.CreateRequest, sum toolsSum, toolsChecked bool) (*resolvedModel, *api.Error) {
	profile := inference.ProfileFor(req.Model)
	profile.ContextWindow = e.cfg.Windows().Of(req.Model)
	if e.cfg.Unmodelled {
		profile = profile.Unmodelled()
	}
	tools, err := req.DecodeTools()
	if err != nil {
		return nil, err
	}
	if !toolsChecked {
		if _, err := e.checks.check(partition, sum, req.Tools); err != nil {
			return nil, err
		}
	}
	m := &resolvedModel{partition: partition, model: req.Model, profile: profile, toolsSum: sum}
	var rendered []byte
	var add func(t api.Tool, ns string, param string) *api.Error
	add = func(t api.Tool, ns, param string) *api.Error {
		switch t.Type {
		case "namespace":
			for j, inner := range t.Tools {
				if err := add(inner, t.Name, param+".tools["+strconv.Itoa(j)+"]"); err != nil {
					return err
				}
			}
			return nil
		case "function":
		case "custom":
			tool := policy.Tool{Type: policy.ToolCustom, Name: t.Name, Description: t.Description, Namespace: ns}
			if f := t.Format; f != nil && f.Type == api.CustomFormatGrammar {
				tool.Grammar = &policy.Grammar{Syntax: f.Syntax, Definition: f.Definition}
			}
			m.tools = append(m.tools, tool)
			rendered = append(rendered, "<|tool|>"...)
			rendered = append(rendered, t.Name...)
			rendered = append(rendered, ' ')
			rendered = append(rendered, t.Description...)
			if f := t.Format; f != nil {
				rendered = append(rendered, ' ')
				rendered = append(rendered, f.Definition...)
			}
			return nil
		default:
			return nil // hosted tools are tolerated, not called
		}
		params := map[string]any{}
		if len(t.Parameters) > 0 && string(t.Parameters) != "null" {
			// api.CheckTools has checked the schema (in parse, or above).
			if err := json.Unmarshal(t.Parameters, &params); err != nil {
				return api.BadRequest(param+".parameters", api.CodeInvalidFunctionParameters, "Invalid schema for function '%s': the schema must be an object.", t.Name)
			}
		}
		m.tools = append(m.tools, policy.Tool{Name: t.Name, Description: t.Description, Namespace: ns, Parameters: params})
		rendered = append(rendered, "<|tool|>"...)
		rendered = append(rendered, t.Name...)
		rendered = append(rendered, ' ')
		rendered = append(rendered, t.Description...)
		rendered = append(rendered, ' ')
		rendered = append(rendered, t.Parameters...)
		return nil
	}
	for i, t := range tools {
		if err := add(t, "", "tools["+strconv.Itoa(i)+"]"); err != nil {
			return nil, err
		}
	}
	m.toolTokens = e.sh.Tokenizer.Encode(string(rendered))
	return m, nil
}
