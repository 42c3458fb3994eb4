package core

import (
	"bytes"
	"slices"
	"unique"
	"unsafe"

	"agentloop/api"
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
//   - the instructions' text is interned with it;
//   - an item's text that its rendered tokens give back byte for byte is
//     dropped (droppedText): o200k is a byte-level BPE, so the tokens of
//     "<|start|>user<|message|>" + text + "<|end|>" decode to exactly that,
//     and the state keeps where they sit instead. Packing checks each
//     item's tokens against its text before dropping it (MatchLen), so a
//     text the tokens would not give back exactly (invalid UTF-8, a
//     function_call_output's JSON escaped otherwise than api.AppendString
//     does, an item the tokens do not follow) stays as received.
//
// Everything else of an item stays (ids, roles, names, call ids, a
// reasoning item's summary and blob, a compaction item's blob: nothing
// renders them). A continuation gets the items whole again: the policy,
// the tool-call checks and a store:true continuation's persist read their
// text. Packing runs when the connection cache keeps the state, after the
// terminal event; expanding runs in the continuation's pre-inference
// time, before resolve (within the resolve span).

// tokenPack is a state's tokens and instructions while it is idle.
type tokenPack struct {
	prefix       unique.Handle[string] // the shared prefix's tokens, packed
	prefixLen    int                   // its tokens
	rest         []byte                // the other tokens, packed
	width        int                   // bytes a token: 3, or 4 when an id is 2^24 or more
	n            int                   // every token
	instructions unique.Handle[string]
	dropped      []droppedText // by item, in order
}

// droppedText is an item whose text the packed state dropped: where its
// rendered tokens sit, from which expand decodes the text back.
type droppedText struct {
	item  int32 // the item's index in context, then output
	start int32 // its first token in the state's tokens
	n     int32 // its tokens
	// parts is each content part's length in bytes when a message has
	// several (its rendered text joins them with '\n'); nil otherwise.
	parts []int32
}

// sharedKey names what a packed state shares with others, for the state
// budget to count once.
type sharedKey struct {
	prefix, instructions unique.Handle[string]
}

// Pack puts an idle state in its compact form; the state stays whole
// (expand gives back the same tokens, instructions and items). A state with no
// tokens (hydrated from the store) or already packed is left as it is.
// The state must be the caller's alone: the connection cache calls it
// before it keeps the state.
func (p *ChainState) Pack() {
	if p == nil || p.tokens == nil || p.packed != nil {
		return
	}
	width := packWidth(p.tokens)
	n := max(min(p.prefixLen, len(p.tokens)), 0)
	tp := &tokenPack{prefixLen: n, width: width, n: len(p.tokens), instructions: unique.Make(p.instructions)}
	tp.prefix = unique.Make(string(packTokens(make([]byte, 0, width*n), p.tokens[:n], width)))
	tp.rest = packTokens(make([]byte, 0, width*(len(p.tokens)-n)), p.tokens[n:], width)
	if p.tok != nil {
		tp.dropped = p.dropTexts(p.tokens[n:], n)
	}
	p.packed, p.tokens, p.instructions = tp, nil, ""
}

// dropTexts replaces p's items by copies without the texts their tokens
// give back, and says where those tokens are. toks are the items' rendered
// tokens, in order, the first at start in the state's tokens. It stops at
// the first item its tokens do not follow; the items it replaces are
// copies, so whoever else holds the originals (the response, the trace)
// keeps them whole.
func (p *ChainState) dropTexts(toks []int, start int) []droppedText {
	var dropped []droppedText
	at, idx := 0, 0
	for _, items := range []*[]ctxItem{&p.context, &p.output} {
		var copied []ctxItem
		followed := true
		for i := range *items {
			it := &(*items)[i].Item
			head, content, end := renderParts(it)
			n, ok := p.tok.MatchLen(toks[at:], head, content, end)
			if !ok {
				followed = false
				break
			}
			if d, bare, ok := withoutText(it, content); ok {
				if copied == nil {
					copied = append([]ctxItem(nil), *items...)
				}
				copied[i].Item = bare
				d.item, d.start, d.n = int32(idx+i), int32(start+at), int32(n)
				dropped = append(dropped, d)
			}
			at += n
		}
		if copied != nil {
			*items = copied
		}
		if !followed {
			break
		}
		idx += len(*items)
	}
	return dropped
}

// withoutText is it without the text its rendered content is, content;
// ok is false when it has none to drop, or its text is not exactly what
// the content gives back (restore would not rebuild it).
func withoutText(it *api.Item, content string) (d droppedText, bare api.Item, ok bool) {
	bare = *it
	switch it.Type {
	case api.TypeReasoning:
		return d, bare, false // renders nothing
	case api.TypeMessage:
		if len(it.Content) == 0 {
			return d, bare, false
		}
		bare.Content = make([]api.Part, len(it.Content))
		for i, part := range it.Content {
			part.Text = ""
			bare.Content[i] = part
		}
		if len(it.Content) > 1 {
			d.parts = make([]int32, len(it.Content))
			for i, part := range it.Content {
				d.parts[i] = int32(len(part.Text))
			}
		}
	case api.TypeFunctionCall:
		bare.Arguments = ""
	case api.TypeFunctionCallOutput:
		if !bytes.Equal(api.AppendString(nil, content), it.Output) {
			return d, bare, false // a part list, or a string escaped otherwise
		}
		bare.Output = nil
	case api.TypeCompaction:
		if len(it.Summary) != 1 || it.Summary[0].Type != "summary_text" || it.Summary[0].Raw != nil {
			return d, bare, false
		}
		bare.Summary = nil
	default:
		bare.Raw = nil
	}
	return d, bare, content != ""
}

// restoreTexts gives the items of a state just expanded the texts its
// packed form dropped, decoded from its tokens, in new item slices (a
// fork's original keeps its own).
func (p *ChainState) restoreTexts(dropped []droppedText) {
	if len(dropped) == 0 {
		return
	}
	p.context, p.output = slices.Clone(p.context), slices.Clone(p.output)
	for _, d := range dropped {
		var it *api.Item
		if i := int(d.item); i < len(p.context) {
			it = &p.context[i].Item
		} else {
			it = &p.output[i-len(p.context)].Item
		}
		head, _, end := renderParts(it)
		rendered := p.tok.AppendDecode(nil, p.tokens[d.start:d.start+d.n])
		raw := rendered[len(head) : len(rendered)-len(end)]
		if it.Type != api.TypeMessage && it.Type != api.TypeFunctionCall && it.Type != api.TypeFunctionCallOutput && it.Type != api.TypeCompaction {
			it.Raw = raw
			continue
		}
		content := unsafe.String(unsafe.SliceData(raw), len(raw)) // rendered is this item's alone, never written again
		switch it.Type {
		case api.TypeMessage:
			parts := slices.Clone(it.Content)
			if d.parts == nil {
				parts[0].Text = content
			} else {
				off := 0
				for i, n := range d.parts {
					parts[i].Text = content[off : off+int(n)]
					off += int(n) + 1 // and the '\n' between
				}
			}
			it.Content = parts
		case api.TypeFunctionCall:
			it.Arguments = content
		case api.TypeFunctionCallOutput:
			it.Output = api.AppendString(nil, content)
		case api.TypeCompaction:
			it.SetCompactionSummary(content)
		}
	}
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
	p.restoreTexts(tp.dropped)
}

// packWidth is the bytes a token packs at for toks: 3 (o200k's ids are
// below 2^24), or 4 when an id is not.
func packWidth(toks []int) int {
	for _, t := range toks {
		if t < 0 || t >= 1<<24 {
			return 4
		}
	}
	return 3
}

// packedTokens is a run of tokens packed on their own: the request-level
// token cache's values (caches.go).
type packedTokens struct {
	b     []byte
	width int
}

func packRun(toks []int) packedTokens {
	width := packWidth(toks)
	return packedTokens{b: packTokens(make([]byte, 0, width*len(toks)), toks, width), width: width}
}

// len is the tokens packed.
func (r packedTokens) len() int { return len(r.b) / r.width }

// appendTo appends the tokens to dst.
func (r packedTokens) appendTo(dst []int) []int {
	n := len(dst)
	dst = slices.Grow(dst, r.len())[:n+r.len()]
	unpack(dst[n:], r.b, r.width)
	return dst
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
