package inference

import (
	"container/list"
	"sync"
)

// BlockTokens is the prefix cache's block size: prefixes are cached and
// matched in whole blocks of this many tokens.
const BlockTokens = 128

// PrefixCache models the accelerator's prefix (KV) cache. It remembers which
// token blocks were already prefilled, chained so that block i only matches
// when blocks 0..i-1 matched too. It is partitioned by prompt_cache_key (the
// empty key is one shared partition) and bounded, least recently used first,
// by the total number of blocks across partitions. Safe for concurrent use.
type PrefixCache struct {
	maxBlocks int

	mu    sync.Mutex
	parts map[string]map[uint64]*list.Element
	lru   *list.List // of *cachedBlock, most recently used at the front
}

type cachedBlock struct {
	key  string
	hash uint64
}

// NewPrefixCache returns a cache holding at most maxBlocks blocks
// (maxBlocks*BlockTokens tokens). maxBlocks <= 0 gives a cache that never
// holds anything.
func NewPrefixCache(maxBlocks int) *PrefixCache {
	return &PrefixCache{
		maxBlocks: maxBlocks,
		parts:     make(map[string]map[uint64]*list.Element),
		lru:       list.New(),
	}
}

// blockHashes returns the chained hash of every whole block of tokens.
func blockHashes(tokens []int) []uint64 {
	n := len(tokens) / BlockTokens
	if n == 0 {
		return nil
	}
	hashes := make([]uint64, n)
	prev := uint64(fnvOffset)
	for b := range n {
		h := prev
		for _, t := range tokens[b*BlockTokens : (b+1)*BlockTokens] {
			h ^= uint64(uint32(t))
			h *= fnvPrime
		}
		h = Splitmix64(h) // chain: the next block starts from this one's hash
		hashes[b] = h
		prev = h
	}
	return hashes
}

// Match returns how many leading tokens of tokens are already cached in the
// key's partition: a multiple of BlockTokens. Matched blocks become most
// recently used.
func (c *PrefixCache) Match(key string, tokens []int) int {
	hashes := blockHashes(tokens)
	c.mu.Lock()
	defer c.mu.Unlock()
	part := c.parts[key]
	if part == nil {
		return 0
	}
	n := 0
	for n < len(hashes) && part[hashes[n]] != nil {
		n++
	}
	c.touchLocked(part, hashes[:n])
	return n * BlockTokens
}

// Insert records every whole block of tokens as cached in the key's partition,
// evicting the least recently used blocks beyond the bound.
func (c *PrefixCache) Insert(key string, tokens []int) {
	if c.maxBlocks <= 0 {
		return
	}
	hashes := blockHashes(tokens)
	if len(hashes) > c.maxBlocks {
		hashes = hashes[:c.maxBlocks] // a prefix longer than the cache keeps its head
	}
	if len(hashes) == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	part := c.parts[key]
	if part == nil {
		part = make(map[uint64]*list.Element)
		c.parts[key] = part
	}
	for _, h := range hashes {
		if part[h] == nil {
			part[h] = c.lru.PushFront(&cachedBlock{key: key, hash: h})
		}
	}
	c.touchLocked(part, hashes)
	for c.lru.Len() > c.maxBlocks {
		c.removeLocked(c.lru.Back())
	}
}

// touchLocked marks the chain's blocks most recently used, the first block
// last, so that eviction takes a chain's tail before its head: a chain that
// lost its head could never match again.
func (c *PrefixCache) touchLocked(part map[uint64]*list.Element, hashes []uint64) {
	for i := len(hashes) - 1; i >= 0; i-- {
		c.lru.MoveToFront(part[hashes[i]])
	}
}

func (c *PrefixCache) removeLocked(e *list.Element) {
	b := c.lru.Remove(e).(*cachedBlock)
	part := c.parts[b.key]
	delete(part, b.hash)
	if len(part) == 0 {
		delete(c.parts, b.key)
	}
}

// Reset empties the key's partition.
func (c *PrefixCache) Reset(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, e := range c.parts[key] {
		c.lru.Remove(e)
	}
	delete(c.parts, key)
}

// ResetAll empties every partition.
func (c *PrefixCache) ResetAll() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.parts = make(map[string]map[uint64]*list.Element)
	c.lru.Init()
}

// Blocks returns the number of cached blocks across partitions.
func (c *PrefixCache) Blocks() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lru.Len()
}

// BillableCached returns the cached_tokens to bill for a matched prefix:
// caching applies to prompts of 1024 tokens or more, in increments of 128.
func BillableCached(prefix int) int {
	if prefix < 1024 {
		return 0
	}
	return prefix / 128 * 128
}
