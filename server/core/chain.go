package core

import (
	"agentloop/api"
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
	id       string
	response *api.Response
	context  []ctxItem // the full input context
	output   []ctxItem
	stored   bool

	// Present only for state this engine built in memory: the resolved
	// model, the instructions, and the rendered tokens of context+output.
	// A state hydrated from the store has none of them.
	model        *resolvedModel
	instructions string
	tokens       []int
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
	return &c
}

// ID is the id of the response this state continues from.
func (p *ChainState) ID() string { return p.id }
