package api

import (
	"bytes"
	"encoding/json"
	"net/http"
	"unicode/utf8"
)

// Conversation is the Conversations API's conversation object.
type Conversation struct {
	ID        string          `json:"id"`
	Object    string          `json:"object"` // "conversation"
	CreatedAt int64           `json:"created_at"`
	Metadata  json.RawMessage `json:"metadata"`
}

// ConversationDeleted is the body of DELETE /v1/conversations/{id}.
type ConversationDeleted struct {
	ID      string `json:"id"`
	Object  string `json:"object"` // "conversation.deleted"
	Deleted bool   `json:"deleted"`
}

// MaxConversationItems is how many items one create or items create adds
// at most, as the SDK's ConversationCreateParams and ItemCreateParams say.
const MaxConversationItems = 20

// The bodies the Conversations API takes (the SDK's ConversationCreateParams,
// ConversationUpdateParams and ItemCreateParams).
var (
	conversationCreateFields = map[string]param{
		"items":    {kinds: kArray | kNull},
		"metadata": {kinds: kObject | kNull},
	}
	conversationUpdateFields = map[string]param{
		"metadata": {kinds: kObject | kNull, required: true},
	}
	conversationItemsFields = map[string]param{
		"items": {kinds: kArray, required: true},
	}
)

// ConversationBody is a decoded create, update or items create.
type ConversationBody struct {
	Items    []Item
	Metadata map[string]string
}

// DecodeConversationCreate decodes POST /v1/conversations; an empty body
// is an empty create (the Node SDK's create() sends none).
func DecodeConversationCreate(body []byte) (*ConversationBody, *Error) {
	return decodeConversationBody(body, conversationCreateFields, true)
}

// DecodeConversationUpdate decodes POST /v1/conversations/{id}: its
// metadata (null clears it).
func DecodeConversationUpdate(body []byte) (*ConversationBody, *Error) {
	return decodeConversationBody(body, conversationUpdateFields, false)
}

// DecodeConversationItems decodes POST /v1/conversations/{id}/items: one
// to MaxConversationItems items.
func DecodeConversationItems(body []byte) (*ConversationBody, *Error) {
	b, err := decodeConversationBody(body, conversationItemsFields, false)
	if err == nil && len(b.Items) == 0 {
		err = BadRequest("items", CodeArrayBelowMinLength, "Invalid 'items': empty array. Expected an array with minimum length 1, but got an empty array instead.")
	}
	return b, err
}

func decodeConversationBody(body []byte, fields map[string]param, emptyOK bool) (*ConversationBody, *Error) {
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 && emptyOK {
		trimmed = []byte(`{}`)
	}
	if !utf8.Valid(trimmed) || len(trimmed) == 0 || trimmed[0] != '{' {
		return nil, BadRequest("", CodeInvalidJSON, badJSONMessage)
	}
	var obj map[string]rawSpan
	if err := json.Unmarshal(trimmed, &obj); err != nil {
		return nil, BadRequest("", CodeInvalidJSON, "%s (%s)", badJSONMessage, err.Error())
	}
	if err := checkObject(obj, "", fields); err != nil {
		return nil, err
	}
	out := &ConversationBody{Metadata: map[string]string{}}
	if raw := obj["metadata"]; kindOf(raw) == kObject {
		if err := json.Unmarshal(raw, &out.Metadata); err != nil {
			return nil, BadRequest("metadata", CodeInvalidType, "Invalid type for 'metadata': expected an object of strings.")
		}
		if err := checkMetadata(out.Metadata); err != nil {
			return nil, err
		}
	}
	if raw := obj["items"]; kindOf(raw) == kArray {
		items, err := decodeItemList(raw, "items")
		if err != nil {
			return nil, err
		}
		if len(items) > MaxConversationItems {
			return nil, BadRequest("items", CodeArrayAboveMaxLength, "Invalid 'items': array too long. Expected an array with maximum length %d, but got an array with length %d instead.", MaxConversationItems, len(items))
		}
		for i := range items {
			if items[i].Type == TypeItemReference {
				return nil, BadRequest("items", CodeInvalidValue, "Invalid 'items[%d]': an item_reference cannot be added to a conversation.", i)
			}
		}
		out.Items = items
	}
	return out, nil
}

// ConversationRef is the id a create's conversation names: its id as a
// string, or an object {"id": …} (ValidateCreate has checked the shape).
func ConversationRef(raw json.RawMessage) (string, *Error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var id string
	if raw[0] == '{' {
		var ref struct {
			ID string `json:"id"`
		}
		if err := json.Unmarshal(raw, &ref); err != nil {
			return "", BadRequest("conversation", CodeInvalidType, "Invalid type for 'conversation': expected a string or an object with an 'id'.")
		}
		id = ref.ID
	} else if err := json.Unmarshal(raw, &id); err != nil {
		return "", BadRequest("conversation", CodeInvalidType, "Invalid type for 'conversation': expected a string or an object with an 'id'.")
	}
	if id == "" {
		return "", BadRequest("conversation", CodeStringBelowMinLength, "Invalid 'conversation': the conversation's id is empty.")
	}
	return id, nil
}

// ConversationNotFound is the 404 for an unknown conversation, on its
// own routes and in a create.
func ConversationNotFound(id string) *Error {
	return Errorf(http.StatusNotFound, "", "", "Conversation with id '%s' not found.", id)
}

// ConversationItemNotFound is the 404 for an unknown item of a
// conversation.
func ConversationItemNotFound(conversation, item string) *Error {
	return Errorf(http.StatusNotFound, "", "", "Item with id '%s' not found in conversation '%s'.", item, conversation)
}
