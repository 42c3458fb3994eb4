package core

import (
	"container/list"
	"crypto/sha256"
	"encoding/json"
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

// lru is a request-level cache: values by key, each in a prompt_cache_key
// partition, the least recently used evicted first once the values' summed
// weight passes max. A value heavier than max is not kept.
type lru[V any] struct {
	mu        sync.Mutex
	max, size int
	weight    func(V) int
	order     *list.List
	byKey     map[uint64]*list.Element
}

type lruEntry[V any] struct {
	key       uint64
	partition string
	value     V
}

func newLRU[V any](max int, weight func(V) int) *lru[V] {
	return &lru[V]{max: max, weight: weight, order: list.New(), byKey: map[uint64]*list.Element{}}
}

func (c *lru[V]) get(key uint64) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.byKey[key]
	if !ok {
		var zero V
		return zero, false
	}
	c.order.MoveToFront(el)
	return el.Value.(*lruEntry[V]).value, true
}

func (c *lru[V]) put(key uint64, partition string, v V) {
	c.mu.Lock()
	defer c.mu.Unlock()
	w := c.weight(v)
	if _, ok := c.byKey[key]; ok || w > c.max {
		return
	}
	c.byKey[key] = c.order.PushFront(&lruEntry[V]{key: key, partition: partition, value: v})
	c.size += w
	for c.size > c.max {
		c.remove(c.order.Back())
	}
}

// reset forgets the partition's values, or every value when partition is "".
func (c *lru[V]) reset(partition string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for el := c.order.Front(); el != nil; {
		next := el.Next()
		if partition == "" || el.Value.(*lruEntry[V]).partition == partition {
			c.remove(el)
		}
		el = next
	}
}

func (c *lru[V]) remove(el *list.Element) {
	ent := el.Value.(*lruEntry[V])
	c.order.Remove(el)
	delete(c.byKey, ent.key)
	c.size -= c.weight(ent.value)
}

// tokenCache is the request-level rendered-token cache of /v1: tokens per
// item content, keyed by prompt_cache_key partition, bounded by tokens,
// each held packed (3 bytes a token, as an idle state's: statepack.go).
type tokenCache = lru[packedTokens]

func newTokenCache(maxTokens int) *tokenCache {
	return newLRU(maxTokens, packedTokens.len)
}

// toolsSum identifies a request's raw "tools" in the caches that are kept
// per tools: their SHA-256, so that a cached entry need not hold a copy of
// tools that may run to megabytes (a tool's description) only to confirm
// that a later request sent the same bytes.
type toolsSum [sha256.Size]byte

func sumTools(raw []byte) toolsSum { return sha256.Sum256(raw) }

// resolvedModel is the resolved model configuration: the profile, the tools
// decoded, and the tools' rendered tokens.
type resolvedModel struct {
	key        uint64
	partition  string
	model      string
	profile    inference.Profile
	toolsSum   toolsSum
	tools      []policy.Tool
	toolTokens []int
}

// serves says whether m was resolved for this partition, model and tools.
func (m *resolvedModel) serves(partition, model string, tools toolsSum) bool {
	return m.partition == partition && m.model == model && m.toolsSum == tools
}

// configCache is the request-level cache of resolved model
// configurations, bounded by their count.
type configCache = lru[*resolvedModel]

func newConfigCache(max int) *configCache {
	return newLRU(max, func(*resolvedModel) int { return 1 })
}

var hashSeed = maphash.MakeSeed()

// checkedTools is a "tools" array that api.CheckTools accepted, and the
// names it offers.
type checkedTools struct {
	sum   toolsSum
	names api.ToolNames
}

// toolChecks keeps api.CheckTools' answers per prompt_cache_key partition
// and raw "tools", so a client that sends the same tools every turn has
// their schemas checked once (the check compiles each schema). It is part
// of the model configuration's caching: an engine without ModelCache (the
// baseline) has none and checks every request. Only accepted tools are
// kept; ResetCaches forgets them with the partition's other caches, so no
// race repeat starts warm.
type toolChecks struct{ cache *lru[checkedTools] }

func newToolChecks(max int) *toolChecks {
	return &toolChecks{cache: newLRU(max, func(checkedTools) int { return 1 })}
}

// check answers as api.CheckTools does for raw, whose sumTools is sum,
// kept per partition; a nil toolChecks (no ModelCache) checks every time.
func (c *toolChecks) check(partition string, sum toolsSum, raw json.RawMessage) (api.ToolNames, *api.Error) {
	if c == nil {
		return api.CheckTools(raw)
	}
	var h maphash.Hash
	h.SetSeed(hashSeed)
	h.WriteString(partition)
	h.WriteByte(0)
	h.Write(sum[:])
	key := h.Sum64()
	if t, ok := c.cache.get(key); ok && t.sum == sum {
		return t.names, nil
	}
	names, err := api.CheckTools(raw)
	if err == nil {
		c.cache.put(key, partition, checkedTools{sum: sum, names: names})
	}
	return names, err
}
