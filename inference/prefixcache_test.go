package inference

import (
	"fmt"
	"sync"
	"testing"
)

// promptTokens returns n tokens whose content depends on variant, so two
// variants share no block.
func promptTokens(n, variant int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = (i*7919 + variant*104729) % 200000
	}
	return out
}

func TestPrefixCacheMatch(t *testing.T) {
	base := promptTokens(1000, 1)
	diverged := append(append([]int(nil), base[:300]...), promptTokens(700, 2)...)
	tests := []struct {
		name     string
		inserted [][]int
		key      string
		query    []int
		want     int
	}{
		{"empty cache", nil, "", base, 0},
		{"whole blocks only", [][]int{base}, "", base, 896},
		{"longer query extends past the cached part", [][]int{base[:500]}, "", base, 384},
		{"shorter query", [][]int{base}, "", base[:300], 256},
		{"divergence inside block 2", [][]int{base}, "", diverged, 256},
		{"another key's partition", [][]int{base}, "other", base, 0},
		{"short prompt", [][]int{base[:100]}, "", base[:100], 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := NewPrefixCache(1000)
			for _, toks := range tt.inserted {
				c.Insert("", toks)
			}
			if got := c.Match(tt.key, tt.query); got != tt.want {
				t.Fatalf("Match = %d, want %d", got, tt.want)
			}
		})
	}
}

func TestPrefixCacheChainsBlocks(t *testing.T) {
	// Block 1 of b equals block 1 of a, but block 0 differs: a chained hash
	// must not match block 1 on its own.
	a := promptTokens(256, 1)
	b := append(promptTokens(128, 2), a[128:]...)
	c := NewPrefixCache(100)
	c.Insert("k", a)
	if got := c.Match("k", b); got != 0 {
		t.Fatalf("Match = %d for a prompt whose first block differs, want 0", got)
	}
}

func TestPrefixCacheResetAndBound(t *testing.T) {
	c := NewPrefixCache(10)
	c.Insert("a", promptTokens(640, 1)) // 5 blocks
	c.Insert("b", promptTokens(640, 2))
	if got := c.Blocks(); got != 10 {
		t.Fatalf("Blocks = %d, want 10", got)
	}
	c.Match("a", promptTokens(640, 1)) // a is now the most recently used
	c.Insert("c", promptTokens(384, 3))
	if got := c.Blocks(); got != 10 {
		t.Fatalf("Blocks = %d after overflow, want the bound 10", got)
	}
	if got := c.Match("a", promptTokens(640, 1)); got != 640 {
		t.Fatalf("recently used partition lost blocks: Match = %d, want 640", got)
	}
	if got := c.Match("b", promptTokens(640, 2)); got != 256 {
		t.Fatalf("evicted partition: Match = %d, want its head 256 (tail evicted first)", got)
	}
	c.Reset("a")
	if got := c.Match("a", promptTokens(640, 1)); got != 0 {
		t.Fatalf("Match after Reset = %d, want 0", got)
	}
	if got := c.Match("c", promptTokens(384, 3)); got != 384 {
		t.Fatalf("Reset of a touched c: Match = %d, want 384", got)
	}
	c.ResetAll()
	if got := c.Blocks(); got != 0 {
		t.Fatalf("Blocks after ResetAll = %d", got)
	}
	disabled := NewPrefixCache(0)
	disabled.Insert("", promptTokens(1024, 1))
	if got := disabled.Match("", promptTokens(1024, 1)); got != 0 {
		t.Fatalf("a cache of 0 blocks matched %d tokens", got)
	}
}

func TestPrefixCacheConcurrentUse(t *testing.T) {
	c := NewPrefixCache(64)
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			key := fmt.Sprint(w % 3)
			toks := promptTokens(128*(w+1), w%3)
			for range 50 {
				c.Insert(key, toks)
				if got := c.Match(key, toks); got%BlockTokens != 0 || got > len(toks) {
					t.Errorf("Match = %d for %d tokens", got, len(toks))
				}
			}
			if w == 0 {
				c.ResetAll()
			}
		})
	}
	wg.Wait()
	if c.Blocks() > 64 {
		t.Fatalf("Blocks = %d, beyond the bound", c.Blocks())
	}
}

func TestBillableCached(t *testing.T) {
	tests := []struct{ prefix, want int }{
		{0, 0}, {1023, 0}, {1024, 1024}, {1100, 1024}, {1151, 1024}, {1152, 1152}, {100000, 99968},
	}
	for _, tt := range tests {
		if got := BillableCached(tt.prefix); got != tt.want {
			t.Errorf("BillableCached(%d) = %d, want %d", tt.prefix, got, tt.want)
		}
	}
}

func BenchmarkPrefixCacheMatch(b *testing.B) {
	c := NewPrefixCache(1 << 16)
	toks := promptTokens(100000, 1)
	c.Insert("lane", toks)
	for b.Loop() {
		c.Match("lane", toks)
	}
}
