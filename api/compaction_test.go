package api

import (
	"strings"
	"testing"
)

// context_management's compaction entry: its threshold, and the 400s for
// what the SDK does not declare.
func TestCompactionParameter(t *testing.T) {
	cases := []struct {
		body string
		want Compaction
		code string
	}{
		{`{"model":"m"}`, Compaction{}, ""},
		{`{"model":"m","context_management":null}`, Compaction{}, ""},
		{`{"model":"m","context_management":[{"type":"compaction","compact_threshold":1000}]}`, Compaction{On: true, Threshold: 1000}, ""},
		{`{"model":"m","context_management":[{"type":"compaction"}]}`, Compaction{On: true}, ""},
		{`{"model":"m","context_management":[{"type":"compaction","compact_threshold":null}]}`, Compaction{On: true}, ""},
		{`{"model":"m","context_management":[{"type":"compaction","compact_threshold":0}]}`, Compaction{}, CodeInvalidValue},
		{`{"model":"m","context_management":[{"type":"compaction","compact_threshold":1.5}]}`, Compaction{}, CodeInvalidValue},
		{`{"model":"m","context_management":[{"type":"summary"}]}`, Compaction{}, CodeInvalidValue},
		{`{"model":"m","context_management":[{"compact_threshold":10}]}`, Compaction{}, CodeMissingRequiredParameter},
		{`{"model":"m","context_management":[{"type":"compaction","every":10}]}`, Compaction{}, CodeUnknownParameter},
	}
	for _, c := range cases {
		if err := ValidateCreate([]byte(c.body)); err != nil {
			if err.Code != c.code {
				t.Errorf("%s: ValidateCreate %+v, want %q", c.body, err, c.code)
			}
			continue
		}
		req, err := DecodeCreate([]byte(c.body))
		if err != nil {
			t.Fatal(err)
		}
		got, err := req.Compaction()
		if (err == nil) != (c.code == "") || (err != nil && err.Code != c.code) || got != c.want {
			t.Errorf("%s: %+v, %v; want %+v, %q", c.body, got, err, c.want, c.code)
		}
	}
}

// A compaction item round-trips in the SDK's shape and needs its blob.
func TestCompactionItemShape(t *testing.T) {
	it, err := DecodeItem([]byte(`{"type":"compaction","id":"cmp_1","encrypted_content":"abc"}`), "input[0]")
	if err != nil || it.Type != TypeCompaction || it.EncryptedContent != "abc" || it.CompactionSummary() != "" {
		t.Fatalf("%+v %v", it, err)
	}
	made := Item{Type: TypeCompaction, ID: "cmp_2", EncryptedContent: "xyz"}
	made.SetCompactionSummary("the summary stays on the server")
	if got := string(made.AppendJSON(nil)); got != `{"id":"cmp_2","type":"compaction","encrypted_content":"xyz"}` {
		t.Fatalf("made compaction item %s", got)
	}
	for body, code := range map[string]string{
		`{"model":"m","input":[{"type":"compaction"}]}`:                       CodeMissingRequiredParameter,
		`{"model":"m","input":[{"type":"compaction","encrypted_content":1}]}`: CodeInvalidType,
	} {
		if err := ValidateCreate([]byte(body)); err == nil || err.Code != code {
			t.Errorf("%s: %v, want %s", body, err, code)
		}
	}
}

// CompactionKept keeps the first system or developer message and the user
// messages.
func TestCompactionKept(t *testing.T) {
	items := []Item{{Type: TypeMessage, Role: "developer"}, {Type: TypeMessage, Role: "user"}, {Type: TypeFunctionCall},
		{Type: TypeFunctionCallOutput}, {Type: TypeMessage, Role: "assistant"}, {Type: TypeMessage, Role: "system"}, {Type: TypeMessage, Role: "user"}, {Type: TypeCompaction}}
	var got []string
	for _, k := range CompactionKept(items) {
		got = append(got, map[bool]string{true: "k", false: "-"}[k])
	}
	if s := strings.Join(got, ""); s != "kk----k-" {
		t.Fatalf("kept %s", s)
	}
}

func FuzzValidateCompact(f *testing.F) {
	f.Add(`{"model":"m","input":"hi"}`)
	f.Add(`{"model":"m","input":[{"role":"user","content":"hi"},{"type":"compaction","encrypted_content":"x"}],"previous_response_id":"resp_1"}`)
	f.Add(`{"model":"m","tools":[]}`)
	f.Fuzz(func(t *testing.T, body string) {
		err := ValidateCompact([]byte(body))
		if err != nil && (err.Status != 400 || err.Type != "invalid_request_error" || err.Message == "") {
			t.Fatalf("refused with %+v", err)
		}
	})
}
