package server_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"agentloop/api"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/conversations"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"
)

func userMessage(text string) responses.ResponseInputItemUnionParam {
	return responses.ResponseInputItemParamOfMessage(text, responses.EasyInputMessageRoleUser)
}

// listAll walks a conversation's items a page of limit at a time, as the
// SDK's auto-pager does, in order.
func listAll(t *testing.T, client openai.Client, id string, limit int64, order conversations.ItemListParamsOrder) []conversations.ConversationItemUnion {
	t.Helper()
	pager := client.Conversations.Items.ListAutoPaging(t.Context(), id, conversations.ItemListParams{Limit: openai.Int(limit), Order: order})
	var items []conversations.ConversationItemUnion
	for pager.Next() {
		items = append(items, pager.Current())
		if len(items) > 100 {
			t.Fatal("paging does not end")
		}
	}
	if err := pager.Err(); err != nil {
		t.Fatal(err)
	}
	return items
}

// TestConversationsCRUD: the Conversations API through openai-go: create
// with items and metadata, retrieve, update, list (every page walk
// returns every item once), add, retrieve and delete items, delete; what
// is gone gets the 404.
func TestConversationsCRUD(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ctx := h.ctx()
	c, err := h.client.Conversations.New(ctx, conversations.ConversationNewParams{
		Items:    []responses.ResponseInputItemUnionParam{userMessage("one"), userMessage("two")},
		Metadata: shared.Metadata{"topic": "demo"}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(c.ID, "conv_") || c.Object != "conversation" || c.CreatedAt == 0 {
		t.Fatalf("created %+v", c)
	}
	got, err := h.client.Conversations.Get(ctx, c.ID)
	if err != nil || got.ID != c.ID || !strings.Contains(got.RawJSON(), `"topic":"demo"`) {
		t.Fatalf("get: %+v, %v", got, err)
	}
	if got, err = h.client.Conversations.Update(ctx, c.ID, conversations.ConversationUpdateParams{Metadata: shared.Metadata{"topic": "new"}}); err != nil ||
		!strings.Contains(got.RawJSON(), `"topic":"new"`) {
		t.Fatalf("update: %+v, %v", got, err)
	}
	added, err := h.client.Conversations.Items.New(ctx, c.ID, conversations.ItemNewParams{
		Items: []responses.ResponseInputItemUnionParam{userMessage("three"), userMessage("four"), userMessage("five")}})
	if err != nil || len(added.Data) != 3 || added.LastID != added.Data[2].ID {
		t.Fatalf("add items: %+v, %v", added, err)
	}
	for _, limit := range []int64{1, 2, 100} {
		for _, order := range []conversations.ItemListParamsOrder{"", "asc"} {
			items := listAll(t, h.client, c.ID, limit, order)
			if len(items) != 5 {
				t.Fatalf("limit %d order %q: %d items, want 5", limit, order, len(items))
			}
			seen := map[string]bool{}
			for _, it := range items {
				if it.ID == "" || seen[it.ID] || it.Type != "message" || it.Status != "completed" {
					t.Fatalf("limit %d order %q: item %+v (seen %v)", limit, order, it, seen[it.ID])
				}
				seen[it.ID] = true
			}
			first := textOf(items[0])
			if want := map[conversations.ItemListParamsOrder]string{"": "five", "asc": "one"}[order]; first != want {
				t.Errorf("order %q starts with %q, want %q", order, first, want)
			}
		}
	}
	item, err := h.client.Conversations.Items.Get(ctx, c.ID, added.Data[0].ID, conversations.ItemGetParams{})
	if err != nil || item.ID != added.Data[0].ID || textOf(*item) != "three" {
		t.Fatalf("get item: %+v, %v", item, err)
	}
	after, err := h.client.Conversations.Items.Delete(ctx, c.ID, added.Data[0].ID)
	if err != nil || after.ID != c.ID {
		t.Fatalf("delete item: %+v, %v", after, err)
	}
	if _, err := h.client.Conversations.Items.Get(ctx, c.ID, added.Data[0].ID, conversations.ItemGetParams{}); statusOf(t, err) != 404 {
		t.Errorf("deleted item: %v", err)
	}
	if n := len(listAll(t, h.client, c.ID, 2, "")); n != 4 {
		t.Errorf("%d items after a delete, want 4", n)
	}
	del, err := h.client.Conversations.Delete(ctx, c.ID)
	if err != nil || !del.Deleted || del.Object != "conversation.deleted" {
		t.Fatalf("delete: %+v, %v", del, err)
	}
	if _, err := h.client.Conversations.Get(ctx, c.ID); statusOf(t, err) != 404 {
		t.Errorf("deleted conversation: %v", err)
	}
	if _, err := h.client.Conversations.Items.New(ctx, c.ID, conversations.ItemNewParams{Items: []responses.ResponseInputItemUnionParam{userMessage("x")}}); statusOf(t, err) != 404 {
		t.Errorf("add to a deleted conversation: %v", err)
	}
}

// TestConversationRequestsAreChecked: the bodies are held to the SDK's
// params (unknown ones, too many items, metadata past its limits).
func TestConversationRequestsAreChecked(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	many := `{"items":[` + strings.TrimSuffix(strings.Repeat(`{"role":"user","content":"x"},`, 21), ",") + `]}`
	for _, tc := range []struct {
		name, path, body, code, param string
	}{
		{"unknown parameter", "/v1/conversations", `{"title":"x"}`, api.CodeUnknownParameter, "title"},
		{"too many items", "/v1/conversations", many, api.CodeArrayAboveMaxLength, "items"},
		{"bad item", "/v1/conversations", `{"items":[{"type":"computer_call"}]}`, api.CodeInvalidValue, "items[0].type"},
		{"metadata too big", "/v1/conversations", `{"metadata":{"` + strings.Repeat("k", 65) + `":"v"}}`, api.CodeInvalidValue, "metadata"},
		{"update without metadata", "/v1/conversations/conv_x", `{}`, api.CodeMissingRequiredParameter, "metadata"},
	} {
		status, body := h.post(tc.path, tc.body)
		var e struct {
			Error struct{ Code, Param string }
		}
		if status != 400 || json.Unmarshal(body, &e) != nil || e.Error.Code != tc.code || e.Error.Param != tc.param {
			t.Errorf("%s: %d %s", tc.name, status, body)
		}
	}
}

// TestCreateWithConversation: a create naming a conversation (by id or as
// an object) starts from its items and appends its own input and output;
// together with previous_response_id it gets the hosted API's 400, and an
// unknown conversation its 404.
func TestCreateWithConversation(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ctx := h.ctx()
	c, err := h.client.Conversations.New(ctx, conversations.ConversationNewParams{
		Items: []responses.ResponseInputItemUnionParam{userMessage("my name is Ada")}})
	if err != nil {
		t.Fatal(err)
	}
	first, err := h.client.Responses.New(ctx, responses.ResponseNewParams{Model: "instant",
		Conversation: responses.ResponseNewParamsConversationUnion{OfString: openai.String(c.ID)},
		Input:        responses.ResponseNewParamsInputUnion{OfString: openai.String("hello")}})
	if err != nil {
		t.Fatal(err)
	}
	items := listAll(t, h.client, c.ID, 100, "asc")
	if len(items) != 2+len(first.Output) || textOf(items[1]) != "hello" || items[2].ID != first.Output[0].ID {
		t.Fatalf("after the first response: %d items", len(items))
	}
	second, err := h.client.Responses.New(ctx, responses.ResponseNewParams{Model: "instant",
		Conversation: responses.ResponseNewParamsConversationUnion{OfConversationObject: &responses.ResponseConversationParam{ID: c.ID}},
		Input:        responses.ResponseNewParamsInputUnion{OfString: openai.String("again")}})
	if err != nil {
		t.Fatal(err)
	}
	if second.Usage.InputTokens <= first.Usage.InputTokens {
		t.Errorf("the second response's context (%d tokens) did not hold the first's (%d)", second.Usage.InputTokens, first.Usage.InputTokens)
	}
	// A response's own input items are its own, not the conversation's.
	own, err := h.client.Responses.InputItems.List(ctx, second.ID, responses.InputItemListParams{})
	if err != nil || len(own.Data) != 1 {
		t.Fatalf("input items of the second response: %+v, %v", own, err)
	}
	if n := len(listAll(t, h.client, c.ID, 3, "")); n != 3+len(first.Output)+len(second.Output) {
		t.Errorf("after two responses: %d items", n)
	}

	_, err = h.client.Responses.New(ctx, responses.ResponseNewParams{Model: "instant",
		Conversation:       responses.ResponseNewParamsConversationUnion{OfString: openai.String(c.ID)},
		PreviousResponseID: openai.String(second.ID),
		Input:              responses.ResponseNewParamsInputUnion{OfString: openai.String("x")}})
	var e *openai.Error
	if !errors.As(err, &e) || e.StatusCode != 400 || e.Param != "previous_response_id" {
		t.Errorf("conversation with previous_response_id: %v", err)
	}
	_, err = h.client.Responses.New(ctx, responses.ResponseNewParams{Model: "instant",
		Conversation: responses.ResponseNewParamsConversationUnion{OfString: openai.String("conv_unknown")},
		Input:        responses.ResponseNewParamsInputUnion{OfString: openai.String("x")}})
	if !errors.As(err, &e) || e.StatusCode != 404 || !strings.Contains(e.Message, "conv_unknown") {
		t.Errorf("unknown conversation: %v", err)
	}
}

// TestConversationOverWebSocket: over WebSocket mode a create naming a
// conversation does what it does over HTTP (docs/protocol.md
// "Conversations"): its context starts from the conversation's items, and
// its input and output are appended.
func TestConversationOverWebSocket(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ctx := h.ctx()
	c, err := h.client.Conversations.New(ctx, conversations.ConversationNewParams{
		Items: []responses.ResponseInputItemUnionParam{userMessage("first")}})
	if err != nil {
		t.Fatal(err)
	}
	ws := h.rawWS("/v1/responses")
	send(t, ws, `{"type":"response.create","model":"instant","store":false,"conversation":"`+c.ID+`","input":"over the socket"}`)
	evs := readResponse(t, ws)
	if last := evs[len(evs)-1]; last.Type != api.EventCompleted {
		t.Fatalf("ended with %s", last.Type)
	}
	items := listAll(t, h.client, c.ID, 100, "asc")
	if len(items) < 3 || textOf(items[1]) != "over the socket" || items[2].Role != "assistant" {
		t.Fatalf("after a WebSocket response: %d items", len(items))
	}
	send(t, ws, `{"type":"response.create","model":"instant","conversation":"conv_unknown","input":"x"}`)
	if e := readEvent(t, ws).AsError(); e == nil || e.Status != 404 {
		t.Fatalf("unknown conversation over WebSocket: %+v", e)
	}
}

// textOf is a conversation message's first text.
func textOf(it conversations.ConversationItemUnion) string {
	m := it.AsMessage()
	if len(m.Content) == 0 {
		return ""
	}
	return m.Content[0].Text
}
