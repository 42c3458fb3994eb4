package server

import (
	"container/list"
	"hash/maphash"
	"sync"

	"agentloop/api"
	"agentloop/inference"
	"agentloop/policy"
)

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

var hashSeed = maphash.MakeSeed()
