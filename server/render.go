package server

import (
	"bytes"
	"container/list"
	"context"
	"hash/maphash"
	"slices"
	"strconv"
	"sync"

	"agentloop/api"
	"agentloop/inference"
	"agentloop/policy"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

var hashSeed = maphash.MakeSeed()

// renderParts is the text an item renders to before tokenization, in
// three parts: a header naming the speaker, the content, and the end, as a
// chat template would. A long content is tokenized without being copied
// into the joined text (inference.Tokenizer.AppendEncodeWrapped).
func renderParts(it *api.Item) (head, content, end string) {
	switch it.Type {
	case api.TypeMessage:
		return "<|start|>" + it.Role + "<|message|>", it.Text(), "<|end|>"
	case api.TypeFunctionCall:
		return "<|start|>assistant to=functions." + it.Name + "<|message|>", it.Arguments, "<|call|>"
	case api.TypeFunctionCallOutput:
		return "<|start|>functions call_id=" + it.CallID + "<|message|>", it.Text(), "<|end|>"
	default:
		return "<|start|>" + it.Type + "<|message|>", string(it.Raw), "<|end|>"
	}
}

// encodeItem appends the tokens of an item's rendered text to dst.
func (e *Engine) encodeItem(ctx context.Context, dst []int, it *api.Item) ([]int, error) {
	head, content, end := renderParts(it)
	return e.sh.Tokenizer.AppendEncodeWrapped(ctx, dst, head, content, end)
}

func itemHash(partition string, it *api.Item) uint64 {
	var h maphash.Hash
	h.SetSeed(hashSeed)
	h.WriteString(partition)
	h.WriteByte(0)
	h.WriteString(it.Type)
	h.WriteByte(0)
	h.WriteString(it.Role)
	h.WriteByte(0)
	h.WriteString(it.Name)
	h.WriteByte(0)
	h.WriteString(it.CallID)
	h.WriteByte(0)
	switch it.Type {
	case api.TypeMessage:
		for _, p := range it.Content {
			h.WriteString(p.Text)
			h.WriteByte(0)
		}
	case api.TypeFunctionCall:
		h.WriteString(it.Arguments)
	case api.TypeFunctionCallOutput:
		h.Write(it.Output)
	default:
		h.Write(it.Raw)
	}
	return h.Sum64()
}

// tokenCache is the request-level rendered-token cache of /v1: tokens per
// item content, keyed by prompt_cache_key partition, LRU-bounded by tokens.
type tokenCache struct {
	mu        sync.Mutex
	max, size int
	lru       *list.List
	byKey     map[uint64]*list.Element
}

type tokenEntry struct {
	key       uint64
	partition string
	tokens    []int
}

func newTokenCache(maxTokens int) *tokenCache {
	return &tokenCache{max: maxTokens, lru: list.New(), byKey: map[uint64]*list.Element{}}
}

func (c *tokenCache) get(key uint64) ([]int, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.byKey[key]
	if !ok {
		return nil, false
	}
	c.lru.MoveToFront(el)
	return el.Value.(*tokenEntry).tokens, true
}

func (c *tokenCache) put(key uint64, partition string, tokens []int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.byKey[key]; ok || len(tokens) > c.max {
		return
	}
	c.byKey[key] = c.lru.PushFront(&tokenEntry{key: key, partition: partition, tokens: tokens})
	c.size += len(tokens)
	for c.size > c.max {
		old := c.lru.Back()
		ent := old.Value.(*tokenEntry)
		c.lru.Remove(old)
		delete(c.byKey, ent.key)
		c.size -= len(ent.tokens)
	}
}

func (c *tokenCache) reset(partition string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for el := c.lru.Front(); el != nil; {
		next := el.Next()
		ent := el.Value.(*tokenEntry)
		if partition == "" || ent.partition == partition {
			c.lru.Remove(el)
			delete(c.byKey, ent.key)
			c.size -= len(ent.tokens)
		}
		el = next
	}
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
			dst = append(dst, toks...)
			hits++
			continue
		}
		// Encoded in place, and copied for the cache: encoding apart and
		// appending would hold a long item's tokens three times over.
		start := len(dst)
		var err error
		if dst, err = e.encodeItem(ctx, dst, it); err != nil {
			return dst[:start], hits, err
		}
		if len(dst)-start <= e.tokens.max {
			e.tokens.put(key, partition, slices.Clone(dst[start:]))
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

// resolvedModel is the resolved model configuration: the profile, the tools
// decoded and their schemas compiled, and the tools' rendered tokens.
type resolvedModel struct {
	key         uint64
	partition   string
	model       string
	profile     inference.Profile
	toolsRaw    string
	tools       []policy.Tool
	toolTokens  []int
	schemaCount int
}

func (e *Engine) resolveModel(partition string, req *api.CreateRequest) (*resolvedModel, bool, *api.Error) {
	var h maphash.Hash
	h.SetSeed(hashSeed)
	h.WriteString(partition)
	h.WriteByte(0)
	h.WriteString(req.Model)
	h.WriteByte(0)
	h.Write(req.Tools)
	key := h.Sum64()
	if e.models != nil {
		if m, ok := e.models.get(key); ok && m.model == req.Model && m.toolsRaw == string(req.Tools) {
			return m, true, nil
		}
	}
	m, err := e.buildModel(partition, req)
	if err != nil {
		return nil, false, err
	}
	m.key = key
	if e.models != nil {
		e.models.put(m)
	}
	return m, false, nil
}

func (e *Engine) buildModel(partition string, req *api.CreateRequest) (*resolvedModel, *api.Error) {
	profile := inference.ProfileFor(req.Model)
	if e.cfg.Unmodelled {
		profile = profile.Unmodelled()
	}
	tools, err := req.DecodeTools()
	if err != nil {
		return nil, err
	}
	m := &resolvedModel{partition: partition, model: req.Model, profile: profile, toolsRaw: string(req.Tools)}
	compiler := jsonschema.NewCompiler()
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
		default:
			return nil // hosted and custom tools are tolerated, not called
		}
		params := map[string]any{}
		if len(t.Parameters) > 0 && string(t.Parameters) != "null" {
			doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(t.Parameters))
			if err != nil {
				return api.BadRequest("tools", api.CodeInvalidFunctionParameters, "Invalid schema for function '%s': %s.", t.Name, err.Error())
			}
			url := "mem://tools/" + strconv.Itoa(m.schemaCount)
			if err := compiler.AddResource(url, doc); err != nil {
				return api.BadRequest("tools", api.CodeInvalidFunctionParameters, "Invalid schema for function '%s': %s.", t.Name, err.Error())
			}
			if _, err := compiler.Compile(url); err != nil {
				return api.BadRequest("tools", api.CodeInvalidFunctionParameters, "Invalid schema for function '%s': %s.", t.Name, err.Error())
			}
			m.schemaCount++
			if obj, ok := doc.(map[string]any); ok {
				params = obj
			} else {
				return api.BadRequest("tools", api.CodeInvalidFunctionParameters, "Invalid schema for function '%s': the schema must be an object.", t.Name)
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

// configCache is the request-level cache of resolved model configurations.
type configCache struct {
	mu    sync.Mutex
	max   int
	lru   *list.List
	byKey map[uint64]*list.Element
}

func newConfigCache(max int) *configCache {
	return &configCache{max: max, lru: list.New(), byKey: map[uint64]*list.Element{}}
}

func (c *configCache) get(key uint64) (*resolvedModel, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.byKey[key]
	if !ok {
		return nil, false
	}
	c.lru.MoveToFront(el)
	return el.Value.(*resolvedModel), true
}

func (c *configCache) put(m *resolvedModel) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.byKey[m.key]; ok {
		return
	}
	c.byKey[m.key] = c.lru.PushFront(m)
	for c.lru.Len() > c.max {
		old := c.lru.Back()
		c.lru.Remove(old)
		delete(c.byKey, old.Value.(*resolvedModel).key)
	}
}

func (c *configCache) reset(partition string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for el := c.lru.Front(); el != nil; {
		next := el.Next()
		if m := el.Value.(*resolvedModel); partition == "" || m.partition == partition {
			c.lru.Remove(el)
			delete(c.byKey, m.key)
		}
		el = next
	}
}
