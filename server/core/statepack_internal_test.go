package core

import (
	"slices"
	"testing"
)

// TestPackedStateExpandsToTheSameTokens: an idle state's compact form
// gives back exactly its tokens and instructions, whatever the ids (one
// past 2^24 packs at 4 bytes), a fork expands without touching its
// original, and two states of one prefix share it.
func TestPackedStateExpandsToTheSameTokens(t *testing.T) {
	for _, c := range []struct {
		name      string
		tokens    []int
		prefixLen int
		width     int
	}{
		{"o200k ids", []int{0, 1, 255, 256, 65535, 65536, 199997, 200018, 42}, 3, 3},
		{"an id past 2^24", []int{5, 1 << 24, 7, 1<<31 - 1}, 1, 4},
		{"no prefix", []int{9, 8, 7}, 0, 3},
		{"all prefix", []int{9, 8, 7}, 3, 3},
	} {
		mk := func() *ChainState {
			return &ChainState{id: "resp_1", instructions: "Be brief.", tokens: slices.Clone(c.tokens), prefixLen: c.prefixLen}
		}
		p, q := mk(), mk()
		p.Pack()
		q.Pack()
		if p.tokens != nil || p.instructions != "" || p.packed.width != c.width {
			t.Fatalf("%s: packed state keeps %d tokens, %q, width %d", c.name, len(p.tokens), p.instructions, p.packed.width)
		}
		if p.shared() != q.shared() || p.Footprint().Shared == 0 {
			t.Fatalf("%s: two states of one prefix do not share it", c.name)
		}
		f := p.Fork()
		f.expand()
		f.tokens = append(f.tokens, 1, 2, 3) // a continuation appends
		p.expand()
		if !slices.Equal(p.tokens, c.tokens) || p.instructions != "Be brief." || p.packed != nil {
			t.Fatalf("%s: expanded %v %q, want %v", c.name, p.tokens, p.instructions, c.tokens)
		}
		if !slices.Equal(f.tokens[:len(c.tokens)], c.tokens) {
			t.Fatalf("%s: fork expanded %v", c.name, f.tokens)
		}
	}
	var none *ChainState
	none.Pack()
	hydrated := &ChainState{id: "resp_2"} // from the store: no tokens
	hydrated.Pack()
	if hydrated.packed != nil {
		t.Fatal("a state without tokens was packed")
	}
}

// TestStateBudgetCountsASharedPrefixOnce: states of one prefix count it
// once, for as long as one of them is held.
func TestStateBudgetCountsASharedPrefixOnce(t *testing.T) {
	b := NewStateBudget(0, nil)
	mk := func(own int) *ChainState {
		toks := make([]int, 100+own)
		p := &ChainState{instructions: "shared instructions", tokens: toks, prefixLen: 100}
		p.Pack()
		return p
	}
	p, q := mk(10), mk(20)
	fp, fq := p.Footprint(), q.Footprint()
	hp := b.Hold(p, func() bool { return true })
	hq := b.Hold(q, func() bool { return true })
	if size, _ := b.Size(); size != int64(fp.Own()+fq.Own()+fp.Shared) {
		t.Fatalf("held %d bytes, want %d", size, fp.Own()+fq.Own()+fp.Shared)
	}
	b.Release(hp)
	if size, _ := b.Size(); size != int64(fq.Total()) {
		t.Fatalf("after one release %d bytes, want %d", size, fq.Total())
	}
	b.Release(hq)
	if size, n := b.Size(); size != 0 || n != 0 {
		t.Fatalf("after both %d bytes in %d states", size, n)
	}
}

// BenchmarkExpandPackedState is what a continuation pays to unpack its
// parent: 38,000 tokens, 8,000 of them a shared prefix.
func BenchmarkExpandPackedState(b *testing.B) {
	toks := make([]int, 38000)
	for i := range toks {
		toks[i] = (i * 7919) % 200000
	}
	p := &ChainState{instructions: "Be brief.", tokens: toks, prefixLen: 8000}
	p.Pack()
	b.ResetTimer()
	for b.Loop() {
		c := *p
		c.expand()
	}
}
