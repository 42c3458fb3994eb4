package api

import (
	"slices"
	"testing"
)

func TestReasoningOf(t *testing.T) {
	for _, c := range []struct {
		body string
		want Reasoning
	}{
		{`{"model":"m"}`, Reasoning{}},
		{`{"model":"m","reasoning":null}`, Reasoning{}},
		{`{"model":"m","reasoning":{"effort":"low"}}`, Reasoning{Effort: "low"}},
		{`{"model":"m","reasoning":{"effort":"high","summary":"detailed"}}`, Reasoning{Effort: "high", Summary: "detailed"}},
		{`{"model":"m","reasoning":{"summary":"auto"}}`, Reasoning{Effort: DefaultReasoningEffort, Summary: "auto"}},
		{`{"model":"m","reasoning":{"generate_summary":"concise"}}`, Reasoning{Effort: DefaultReasoningEffort, Summary: "concise"}},
		{`{"model":"m","reasoning":{"effort":"none","summary":"auto"}}`, Reasoning{Effort: "none", Summary: "auto"}},
		{`{"model":"m","reasoning":{"effort":null,"summary":null}}`, Reasoning{}},
	} {
		req, err := DecodeCreate([]byte(c.body))
		if err != nil {
			t.Fatal(err)
		}
		if got := req.ReasoningOf(); got != c.want {
			t.Errorf("%s: %+v, want %+v", c.body, got, c.want)
		}
	}
	if (Reasoning{Effort: "none"}).Reasons() || (Reasoning{}).Reasons() || !(Reasoning{Effort: "minimal"}).Reasons() {
		t.Error("Reasons: only an effort other than none reasons")
	}
}

// FuzzReasoningOf: a create that passes ValidateCreate reads as an effort
// and a summary the SDK declares (or none), whatever else it holds.
func FuzzReasoningOf(f *testing.F) {
	for _, s := range []string{
		`{"model":"m","reasoning":{"effort":"low","summary":"auto"}}`,
		`{"model":"m","reasoning":{"generate_summary":"detailed","context":"all_turns"}}`,
		`{"model":"m","reasoning":{"effort":"extreme"}}`,
		`{"model":"m","reasoning":"high"}`,
		`{"model":"m","reasoning":{"effort":1}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		req, err := DecodeCreate(body)
		if err != nil {
			return
		}
		r := req.ReasoningOf() // never panics, whatever the body
		if ValidateCreate(body) != nil {
			return
		}
		if r.Effort != "" && !slices.Contains(ReasoningEfforts, r.Effort) {
			t.Fatalf("%s: effort %q", body, r.Effort)
		}
		if r.Summary != "" && !slices.Contains(ReasoningSummaries, r.Summary) {
			t.Fatalf("%s: summary %q", body, r.Summary)
		}
	})
}
