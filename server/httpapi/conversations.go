package httpapi

import (
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"agentloop/api"
	"agentloop/server/core"
	"agentloop/store"

	"github.com/labstack/echo/v4"
)

// The Conversations API's routes (docs/protocol.md "Conversations").

// conversations is the engine's conversation store, or the 404 a server
// without one answers for id.
func (h *API) conversations(id string) (core.ConversationStore, *api.Error) {
	cs := h.e.Conversations()
	if cs == nil {
		return nil, api.ConversationNotFound(id)
	}
	return cs, nil
}

// conversationError is a store error on conversation id's routes.
func conversationError(err error, id string) *api.Error {
	if errors.Is(err, store.ErrNotFound) {
		return api.ConversationNotFound(id)
	}
	return storeError(err)
}

// writeConversation answers with a conversation object.
func writeConversation(c echo.Context, cv *store.Conversation) error {
	return c.JSON(http.StatusOK, api.Conversation{ID: cv.ID, Object: "conversation", CreatedAt: cv.CreatedAt, Metadata: cv.Metadata})
}

// metadataJSON is metadata as the store keeps it.
func metadataJSON(m map[string]string) []byte {
	b, _ := json.Marshal(m)
	return b
}

// CreateConversation is POST /conversations.
func (h *API) CreateConversation(c echo.Context) error {
	body, aerr := h.readLimited(c)
	if aerr != nil {
		return aerr
	}
	b, aerr := api.DecodeConversationCreate(body)
	if aerr != nil {
		return aerr
	}
	id := api.NewID("conv")
	cs, aerr := h.conversations(id)
	if aerr != nil {
		return aerr
	}
	cv := &store.Conversation{ID: id, CreatedAt: time.Now().Unix(), Metadata: metadataJSON(b.Metadata)}
	if err := cs.CreateConversation(c.Request().Context(), cv, core.ConversationItems(b.Items)); err != nil {
		return storeError(err)
	}
	return writeConversation(c, cv)
}

// GetConversation is GET /conversations/:id.
func (h *API) GetConversation(c echo.Context) error {
	id := c.Param("id")
	cs, aerr := h.conversations(id)
	if aerr != nil {
		return aerr
	}
	cv, err := cs.GetConversation(c.Request().Context(), id)
	if err != nil {
		return conversationError(err, id)
	}
	return writeConversation(c, cv)
}

// UpdateConversation is POST /conversations/:id: its metadata.
func (h *API) UpdateConversation(c echo.Context) error {
	id := c.Param("id")
	body, aerr := h.readLimited(c)
	if aerr != nil {
		return aerr
	}
	b, aerr := api.DecodeConversationUpdate(body)
	if aerr != nil {
		return aerr
	}
	cs, aerr := h.conversations(id)
	if aerr != nil {
		return aerr
	}
	cv, err := cs.UpdateConversation(c.Request().Context(), id, metadataJSON(b.Metadata))
	if err != nil {
		return conversationError(err, id)
	}
	return writeConversation(c, cv)
}

// DeleteConversation is DELETE /conversations/:id.
func (h *API) DeleteConversation(c echo.Context) error {
	id := c.Param("id")
	cs, aerr := h.conversations(id)
	if aerr != nil {
		return aerr
	}
	if err := cs.DeleteConversation(c.Request().Context(), id); err != nil {
		return conversationError(err, id)
	}
	return c.JSON(http.StatusOK, api.ConversationDeleted{ID: id, Object: "conversation.deleted", Deleted: true})
}

// ConversationItems is GET /conversations/:id/items, a page at a time.
func (h *API) ConversationItems(c echo.Context) error {
	id := c.Param("id")
	page, aerr := pageOf(c)
	if aerr != nil {
		return aerr
	}
	cs, aerr := h.conversations(id)
	if aerr != nil {
		return aerr
	}
	items, more, err := cs.ConversationItems(c.Request().Context(), id, store.ConversationPage{After: page.after, Limit: page.limit, Order: page.order})
	if errors.Is(err, store.ErrNotFound) && page.after != "" {
		if _, gerr := cs.GetConversation(c.Request().Context(), id); gerr == nil {
			return api.ConversationItemNotFound(id, page.after)
		}
	}
	if err != nil {
		return conversationError(err, id)
	}
	return c.Blob(http.StatusOK, echo.MIMEApplicationJSON, appendItemList(nil, items, more))
}

// AddConversationItems is POST /conversations/:id/items.
func (h *API) AddConversationItems(c echo.Context) error {
	id := c.Param("id")
	body, aerr := h.readLimited(c)
	if aerr != nil {
		return aerr
	}
	b, aerr := api.DecodeConversationItems(body)
	if aerr != nil {
		return aerr
	}
	cs, aerr := h.conversations(id)
	if aerr != nil {
		return aerr
	}
	items := core.ConversationItems(b.Items)
	if err := cs.AppendConversationItems(c.Request().Context(), id, items); err != nil {
		return conversationError(err, id)
	}
	return c.Blob(http.StatusOK, echo.MIMEApplicationJSON, appendItemList(nil, items, false))
}

// ConversationItem is GET /conversations/:id/items/:item_id.
func (h *API) ConversationItem(c echo.Context) error {
	id, itemID := c.Param("id"), c.Param("item_id")
	cs, aerr := h.conversations(id)
	if aerr != nil {
		return aerr
	}
	it, err := cs.GetConversationItem(c.Request().Context(), id, itemID)
	if err != nil {
		return h.itemError(c, cs, err, id, itemID)
	}
	return c.Blob(http.StatusOK, echo.MIMEApplicationJSON, it.JSON)
}

// DeleteConversationItem is DELETE /conversations/:id/items/:item_id: it
// answers with the conversation.
func (h *API) DeleteConversationItem(c echo.Context) error {
	id, itemID := c.Param("id"), c.Param("item_id")
	cs, aerr := h.conversations(id)
	if aerr != nil {
		return aerr
	}
	ctx := c.Request().Context()
	if err := cs.DeleteConversationItem(ctx, id, itemID); err != nil {
		return h.itemError(c, cs, err, id, itemID)
	}
	cv, err := cs.GetConversation(ctx, id)
	if err != nil {
		return conversationError(err, id)
	}
	return writeConversation(c, cv)
}

// itemError is a store error on an item's routes: a missing item of a
// conversation that exists is the item's 404, else the conversation's.
func (h *API) itemError(c echo.Context, cs core.ConversationStore, err error, id, itemID string) *api.Error {
	if !errors.Is(err, store.ErrNotFound) {
		return storeError(err)
	}
	if _, gerr := cs.GetConversation(c.Request().Context(), id); gerr != nil {
		return conversationError(gerr, id)
	}
	return api.ConversationItemNotFound(id, itemID)
}
