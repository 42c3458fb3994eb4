package core

import (
	"unsafe"

	"agentloop/api"
	"agentloop/inference"
)

// ctxItem is an item of a reconstructed context; key is its store key once
// it has been stored (0 before).
type ctxItem struct {
	api.Item
	key int64
}

// ChainState is everything known about a finished response that a
// continuation needs: what the connection cache holds for WebSocket, and
// what a store load rebuilds (without tokens) for everyone else.
type ChainState struct {
	id        string
	createdAt int64     // the response's created_at
	context   []ctxItem // the full input context
	output    []ctxItem
	stored    bool

	// Present only for state this engine built in memory: the resolved
	// model, the instructions, and the rendered tokens of context+output,
	// whose first prefixLen are the instructions' and the tools'. A state
	// hydrated from the store has none of them. While the connection
	// cache keeps the state idle, packed holds the tokens and the
	// instructions in their compact form instead (statepack.go).
	model        *resolvedModel
	instructions string
	tokens       []int
	prefixLen    int
	packed       *tokenPack
	// tok decodes the items' texts the packed form drops (statepack.go);
	// nil packs the tokens only.
	tok *inference.Tokenizer
}

func (p *ChainState) contextOrNil() []ctxItem {
	if p == nil {
		return nil
	}
	return p.context
}

func (p *ChainState) outputOrNil() []ctxItem {
	if p == nil {
		return nil
	}
	return p.output
}

// Fork copies a cached response for a continuation on another lane: the
// request appends to its tokens, which must not
// reach the original, still its own lane's latest response.
func (p *ChainState) Fork() *ChainState {
	c := *p
	c.tokens = p.tokens[:len(p.tokens):len(p.tokens)]
	return &c // a packed original's copy shares its packed form, which expand never changes
}

// Footprint is the memory a kept state holds, by part, in bytes: what the
// state budget counts (statebudget.go).
type Footprint struct {
	Tokens int // the rendered tokens' ids: the slice's capacity, or packed
	Text   int // the items' text, arguments, outputs and blobs, and the instructions
	Items  int // the items' fixed parts: per-item metadata
	// Shared is what a packed state shares with every state of the same
	// instructions and tools (the rendered prefix and the instructions),
	// held once in the process; Tokens and Text leave it out.
	Shared int
}

// Own is what the state holds for itself alone.
func (f Footprint) Own() int { return f.Tokens + f.Text + f.Items }

// Total is every part, the shared one included.
func (f Footprint) Total() int { return f.Own() + f.Shared }

// Footprint measures what p holds for its continuation.
func (p *ChainState) Footprint() Footprint {
	f := Footprint{Tokens: cap(p.tokens) * int(unsafe.Sizeof(int(0))), Text: len(p.instructions)}
	if tp := p.packed; tp != nil {
		f.Tokens = cap(tp.rest)
		f.Shared = len(tp.prefix.Value()) + len(tp.instructions.Value())
		f.Items += cap(tp.dropped) * int(unsafe.Sizeof(droppedText{}))
		for _, d := range tp.dropped {
			f.Items += cap(d.parts) * 4
		}
	}
	for _, items := range [][]ctxItem{p.context, p.output} {
		f.Items += cap(items) * int(unsafe.Sizeof(ctxItem{}))
		for i := range items {
			it := &items[i].Item
			f.Text += len(it.ID) + len(it.Raw) + len(it.Output) + len(it.Arguments) + len(it.EncryptedContent) + len(it.CallID) + len(it.Name)
			f.Items += cap(it.Content) * int(unsafe.Sizeof(api.Part{}))
			for _, part := range it.Content {
				f.Text += len(part.Text) + len(part.Raw)
			}
			f.Items += cap(it.Summary) * int(unsafe.Sizeof(api.Part{}))
			for _, part := range it.Summary {
				f.Text += len(part.Text) + len(part.Raw)
			}
		}
	}
	return f
}

// shared is what a packed state shares with others; the zero key when it
// is not packed.
func (p *ChainState) shared() sharedKey {
	if tp := p.packed; tp != nil {
		return sharedKey{prefix: tp.prefix, instructions: tp.instructions}
	}
	return sharedKey{}
}

// ID is the id of the response this state continues from.
func (p *ChainState) ID() string { return p.id }
