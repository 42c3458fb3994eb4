package core

import (
	"unique"
)

// A kept state's compact form while it is idle (docs/capacity.md, "The
// cost of state"). A continuation needs the rendered tokens as []int, 8
// bytes a token, to append its new items' tokens to; an idle state holds
// them packed instead:
//   - the prefix every session of one agent shares, the rendered
//     instructions and tools, is interned (package unique): one copy in
//     the process however many sessions hold it, freed by the collector
//     once none does;
//   - the rest, 3 bytes a token (o200k's ids are below 2^24; a token past
//     that packs the whole state at 4 bytes a token);
//   - the instructions' text is interned with it.
//
// The items stay as they are: a continuation reads their text (the
// policy, the tool-call checks, a store:true continuation's persist).
// Packing runs when the connection cache keeps the state, after the
// terminal event; expanding runs in the continuation's pre-inference
// time, before resolve.

// tokenPack is a state's tokens and instructions while it is idle.
type tokenPack struct {
	prefix       unique.Handle[string] // the shared prefix's tokens, packed
	prefixLen    int                   // its tokens
	rest         []byte                // the other tokens, packed
	width        int                   // bytes a token: 3, or 4 when an id is 2^24 or more
	n            int                   // every token
	instructions unique.Handle[string]
}

// sharedKey names what a packed state shares with others, for the state
// budget to count once.
type sharedKey struct {
	prefix, instructions unique.Handle[string]
}

// Pack puts an idle state in its compact form; the state stays whole
// (expand gives back the same tokens and instructions). A state with no
// tokens (hydrated from the store) or already packed is left as it is.
// The state must be the caller's alone: the connection cache calls it
// before it keeps the state.
func (p *ChainState) Pack() {
	if p == nil || p.tokens == nil || p.packed != nil {
		return
	}
	width := 3
	for _, t := range p.tokens {
		if t < 0 || t >= 1<<24 {
			width = 4
			break
		}
	}
	n := max(min(p.prefixLen, len(p.tokens)), 0)
	tp := &tokenPack{prefixLen: n, width: width, n: len(p.tokens), instructions: unique.Make(p.instructions)}
	tp.prefix = unique.Make(string(packTokens(make([]byte, 0, width*n), p.tokens[:n], width)))
	tp.rest = packTokens(make([]byte, 0, width*(len(p.tokens)-n)), p.tokens[n:], width)
	p.packed, p.tokens, p.instructions = tp, nil, ""
}

// expand gives a packed state its tokens and instructions back, with room
// for a continuation's new items; it does nothing to a state not packed.
// A fork's copy expands without touching the packed form it shares with
// its original.
func (p *ChainState) expand() {
	tp := p.packed
	if tp == nil {
		return
	}
	toks := make([]int, tp.n, tp.n+tp.n/8+256)
	prefix := tp.prefix.Value()
	unpack(toks[:tp.prefixLen], prefix, tp.width)
	unpack(toks[tp.prefixLen:], tp.rest, tp.width)
	p.tokens, p.instructions, p.packed = toks, tp.instructions.Value(), nil
}

func packTokens(dst []byte, toks []int, width int) []byte {
	for _, t := range toks {
		dst = append(dst, byte(t), byte(t>>8), byte(t>>16))
		if width == 4 {
			dst = append(dst, byte(t>>24))
		}
	}
	return dst
}

// unpack fills dst with the len(dst) tokens packed in b: the session's
// own bytes, or the interned prefix's string without copying it.
func unpack[B ~string | ~[]byte](dst []int, b B, width int) {
	if width == 3 {
		b = b[:3*len(dst)]
		for i := range dst {
			dst[i] = int(b[3*i]) | int(b[3*i+1])<<8 | int(b[3*i+2])<<16
		}
		return
	}
	b = b[:4*len(dst)]
	for i := range dst {
		dst[i] = int(b[4*i]) | int(b[4*i+1])<<8 | int(b[4*i+2])<<16 | int(b[4*i+3])<<24
	}
}
