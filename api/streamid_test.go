package api

import (
	"encoding/json"
	"maps"
	"strings"
	"testing"
)

func TestValidStreamID(t *testing.T) {
	for _, s := range []string{"a", "agent_a", "A-1.b_2", strings.Repeat("x", MaxStreamIDLen)} {
		if !ValidStreamID(s) {
			t.Errorf("%q refused", s)
		}
	}
	for _, s := range []string{"", "a b", "a/b", "é", "a\x00", strings.Repeat("x", MaxStreamIDLen+1)} {
		if ValidStreamID(s) {
			t.Errorf("%q accepted", s)
		}
	}
}

func TestAppendWithStreamID(t *testing.T) {
	ev := AppendResponseEvent(nil, EventCreated, 0, []byte(`{"id":"resp_1"}`))
	got := string(AppendWithStreamID(nil, ev, "agent_a"))
	if want := `{"type":"response.created","stream_id":"agent_a","sequence_number":0,"response":{"id":"resp_1"}}`; got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	if got := string(AppendWithStreamID(nil, []byte(`{"x":1}`), "b")); got != `{"stream_id":"b","x":1}` {
		t.Fatalf("an event not opening with its type: %s", got)
	}
}

// FuzzAppendWithStreamID: for any JSON object and valid id, the result is
// the same object plus stream_id.
func FuzzAppendWithStreamID(f *testing.F) {
	f.Add([]byte(`{"type":"response.output_text.delta","sequence_number":3,"delta":"hi"}`), "agent_a")
	f.Add([]byte(`{"type":"error","status":400,"error":{"code":"x"}}`), "a.b-c_d")
	f.Add([]byte(`{"x":1,"type":"t"}`), "z")
	f.Add([]byte(`{"type":"a\"b","n":1}`), "q")
	f.Fuzz(func(t *testing.T, event []byte, id string) {
		var in map[string]json.RawMessage
		if !ValidStreamID(id) || json.Unmarshal(event, &in) != nil || in == nil || len(event) == 0 || event[0] != '{' {
			return
		}
		if _, ok := in["stream_id"]; ok {
			return
		}
		for k := range in {
			if strings.EqualFold(k, "stream_id") {
				return // encoding/json would match either key
			}
		}
		out := AppendWithStreamID(nil, event, id)
		var got map[string]json.RawMessage
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatalf("%s -> %s: %v", event, out, err)
		}
		if string(got["stream_id"]) != `"`+id+`"` {
			t.Fatalf("stream_id %s, want %q", got["stream_id"], id)
		}
		delete(got, "stream_id")
		if !maps.EqualFunc(in, got, func(a, b json.RawMessage) bool { return string(a) == string(b) }) {
			t.Fatalf("%s -> %s changed the object", event, out)
		}
	})
}
