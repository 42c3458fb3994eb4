package core

import (
	"context"
	"errors"
	"time"

	"agentloop/api"
	"agentloop/store"
)

// Conversations (docs/protocol.md "Conversations"): a create that names a
// conversation starts its context from the conversation's items, and once
// it completes (or ends incomplete) its input and output items are
// appended to the conversation, on either transport.

// storeTimeout bounds a write that must finish after its client has gone:
// a response's own record, its conversation's items, a background
// response's state.
const storeTimeout = 10 * time.Second

// ConversationStore is what conversations need of the store; every
// backend implements it (store.Backend).
type ConversationStore interface {
	CreateConversation(ctx context.Context, c *store.Conversation, items []store.Item) error
	GetConversation(ctx context.Context, id string) (*store.Conversation, error)
	UpdateConversation(ctx context.Context, id string, metadata []byte) (*store.Conversation, error)
	DeleteConversation(ctx context.Context, id string) error
	AppendConversationItems(ctx context.Context, id string, items []store.Item) error
	ConversationItems(ctx context.Context, id string, p store.ConversationPage) ([]store.Item, bool, error)
	GetConversationItem(ctx context.Context, id, itemID string) (store.Item, error)
	DeleteConversationItem(ctx context.Context, id, itemID string) error
}

// Conversations is the engine's conversation store; nil when its store
// keeps none.
func (e *Engine) Conversations() ConversationStore {
	cs, _ := e.sh.Store.(ConversationStore)
	return cs
}

// ConversationItems gives items the id and status they are listed with
// (as a stored response's input items get them) and returns them as the
// store keeps them.
func ConversationItems(items []api.Item) []store.Item {
	out := make([]store.Item, len(items))
	for i := range items {
		giveIdentity(&items[i])
		out[i] = store.Item{ItemID: items[i].ID, Type: items[i].Type, JSON: storedJSON(&items[i])}
	}
	return out
}

// loadConversation is load's work for a create that names a conversation:
// its items, in order, are the context the request's input follows.
func (e *Engine) loadConversation(ctx context.Context, fl *Flight) (StageResult, *api.Error) {
	id, aerr := api.ConversationRef(fl.parsed.req.Conversation)
	if aerr != nil || id == "" {
		return StageResult{}, aerr
	}
	cs := e.Conversations()
	if cs == nil {
		return StageResult{}, api.ConversationNotFound(id)
	}
	items, _, err := cs.ConversationItems(ctx, id, store.ConversationPage{Limit: -1, Order: "asc"})
	if errors.Is(err, store.ErrNotFound) {
		return StageResult{}, api.ConversationNotFound(id)
	}
	if err != nil {
		e.sh.Log.Error("load conversation", "id", id, "err", err)
		return StageResult{}, api.StoreError(err, "The conversation could not be read")
	}
	p := &ChainState{context: make([]ctxItem, len(items))}
	n := 0
	for i, si := range items {
		n += len(si.JSON)
		it, derr := api.DecodeItem(si.JSON, "conversation")
		if derr != nil {
			return StageResult{items: i, bytes: n}, api.ServerError("Conversation %s holds an unreadable item.", id)
		}
		p.context[i] = ctxItem{Item: it}
	}
	fl.loaded.parent, fl.loaded.bytes, fl.loaded.conversation = p, n, id
	return StageResult{items: len(items), bytes: n, note: "conversation"}, nil
}

// appendToConversation appends a kept response's own input and its output
// to the conversation it names, before its terminal event goes out.
func (e *Engine) appendToConversation(ctx context.Context, fl *Flight, output []ctxItem) error {
	id := fl.loaded.conversation
	if id == "" {
		return nil
	}
	input := fl.built.context[fl.built.inputStart:]
	items := make([]api.Item, 0, len(input)+len(fl.seg.earlier)+len(output))
	for _, part := range [][]ctxItem{input, fl.seg.earlier, output} {
		for i := range part {
			giveIdentity(&part[i].Item) // the context keeps the id the conversation lists
			items = append(items, part[i].Item)
		}
	}
	// The response exists: appending finishes even if the client has gone.
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), storeTimeout)
	defer cancel()
	err := e.Conversations().AppendConversationItems(sctx, id, ConversationItems(items))
	if err != nil {
		e.sh.Log.Error("append to conversation", "id", id, "response", fl.response.ID, "err", err)
	}
	return err
}
