package api

import (
	"encoding/json"
	"testing"
)

// FuzzDecodeConversationBody: every body the Conversations API decodes
// gets a 400 with a message or items that re-encode to valid JSON, and
// metadata within its limits.
func FuzzDecodeConversationBody(f *testing.F) {
	f.Add([]byte(`{"items":[{"role":"user","content":"hi"}],"metadata":{"k":"v"}}`))
	f.Add([]byte(`{"metadata":null}`))
	f.Add([]byte(``))
	f.Add([]byte(`{"items":[{"type":"function_call","call_id":"c","name":"f","arguments":"{}"}]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, decode := range []func([]byte) (*ConversationBody, *Error){DecodeConversationCreate, DecodeConversationUpdate, DecodeConversationItems} {
			b, e := decode(body)
			if e != nil {
				if e.Status != 400 || e.Message == "" {
					t.Fatalf("bad error %+v", e)
				}
				continue
			}
			if len(b.Items) > MaxConversationItems || checkMetadata(b.Metadata) != nil {
				t.Fatalf("accepted %d items, metadata %v", len(b.Items), b.Metadata)
			}
			for i := range b.Items {
				if out := b.Items[i].AppendJSON(nil); !json.Valid(out) {
					t.Fatalf("item %d re-encodes to invalid JSON: %s", i, out)
				}
			}
		}
	})
}

// FuzzConversationRef: a create's conversation is an id or a 400.
func FuzzConversationRef(f *testing.F) {
	f.Add([]byte(`"conv_1"`))
	f.Add([]byte(`{"id":"conv_1"}`))
	f.Add([]byte(`{"id":""}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		id, e := ConversationRef(raw)
		if e != nil && (e.Status != 400 || id != "") {
			t.Fatalf("bad error %+v with id %q", e, id)
		}
	})
}

func TestConversationBodies(t *testing.T) {
	for _, tc := range []struct {
		body   string
		decode func([]byte) (*ConversationBody, *Error)
		param  string
	}{
		{`{"items":[]}`, DecodeConversationItems, "items"},
		{`{}`, DecodeConversationItems, "items"},
		{`{"items":[{"type":"item_reference","id":"msg_1"}]}`, DecodeConversationCreate, "items"},
		{`{"metadata":{"a":1}}`, DecodeConversationCreate, "metadata"},
		{`[]`, DecodeConversationCreate, ""},
	} {
		if _, e := tc.decode([]byte(tc.body)); e == nil || e.Status != 400 || e.Param != tc.param {
			t.Errorf("%s: %+v, want a 400 at %q", tc.body, e, tc.param)
		}
	}
	if b, e := DecodeConversationCreate(nil); e != nil || len(b.Items) != 0 {
		t.Errorf("an empty create: %+v, %v", b, e)
	}
	if id, e := ConversationRef([]byte(`{"id":"conv_9"}`)); e != nil || id != "conv_9" {
		t.Errorf("object reference: %q, %v", id, e)
	}
}
