package workload

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestDecodeExample(t *testing.T) {
	b, err := os.ReadFile("testdata/codex-like.json")
	if err != nil {
		t.Fatal(err)
	}
	w, err := Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	if len(w.Turns) != 3 || w.Turns[1].NewInputTokens() != 1200 || w.Turns[1].MessageTokens() != 48 {
		t.Fatalf("decoded %+v", w)
	}
	// Encode and decode give the same workload back.
	var buf bytes.Buffer
	if err := w.Encode(&buf); err != nil {
		t.Fatal(err)
	}
	w2, err := Parse(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(w2) != fmt.Sprint(w) {
		t.Fatalf("round trip:\n%v\n%v", w, w2)
	}
}

func TestDecodeErrorsNameTheField(t *testing.T) {
	turn := `{"input":[{"kind":"user_message","tokens":5}],"output_tokens":3}`
	cases := []struct{ body, want string }{
		{``, "empty"},
		{`{"turns":[]}`, "version: missing"},
		{`{"version":3,"turns":[]}`, "version: version 3 is not supported; this reader takes versions 1 to 2"},
		{`{"version":0,"turns":[]}`, "version: version 0 is not supported"},
		{`{"version":1,"turns":[{"input":[{"kind":"user_message","tokens":5}],"output_tokens":9,"reasoning_tokens":4}]}`, "turns[0].reasoning_tokens: needs version 2"},
		{`{"version":2,"turns":[{"input":[{"kind":"user_message","tokens":5}],"output_tokens":9,"reasoning_tokens":-1}]}`, "turns[0].reasoning_tokens: must be 0 to 200000 tokens, got -1"},
		{`{"version":2,"turns":[{"input":[{"kind":"user_message","tokens":5}],"output_tokens":9,"reasoning_tokens":9}]}`, "turns[0].output_tokens: 9, fewer than the 9 reasoning tokens it includes and 1 for the message or the calls"},
		{`{"version":2,"turns":[{"input":[{"kind":"user_message","tokens":5}],"output_tokens":9,"reasoning_tokens":5,"calls":[{"argument_tokens":5}]}]}`, "turns[0].output_tokens: 9, fewer than the 5 reasoning tokens it includes and 5 for the message or the calls"},
		{`{"version":1,"turns":[]}`, "turns: a workload needs at least one turn"},
		{`{"version":1,"turns":[` + turn + `]} x`, "trailing data"},
		{`{"version":1,"colour":1,"turns":[` + turn + `]}`, "colour: unknown field"},
		{`{"version":1,"turns":[` + turn + `,{"input":[{"kind":"user_message","tokens":"7"}],"output_tokens":3}]}`, "turns[1].input[].tokens: expected int, got string"},
		{`{"version":1,"turns":[` + turn + `,{"input":[{"kind":"user_message","tokens":7}],"output_tokens":3,"cost":1}]}`, "turns[1].cost: unknown field"},
		{`{"version":1,"turns":[{"input":[{"kind":"tool_output","tokens":5}],"output_tokens":3}]}`, "turns[0].input: the first turn has 1 tool outputs"},
		{`{"version":1,"turns":[{"input":[{"kind":"image","tokens":5}],"output_tokens":3}]}`, `turns[0].input[0].kind: unknown kind "image"`},
		{`{"version":1,"turns":[{"input":[{"kind":"user_message","tokens":0}],"output_tokens":3}]}`, "turns[0].input[0].tokens: must be 1 to 200000 tokens, got 0"},
		{`{"version":1,"turns":[{"input":[{"kind":"user_message","tokens":5}],"output_tokens":3,"calls":[{"argument_tokens":9}]}]}`, "turns[0].output_tokens: 3, fewer than the calls' 9"},
		{`{"version":1,"turns":[{"input":[{"kind":"user_message","tokens":5}],"output_tokens":30,"calls":[{"argument_tokens":9}]},` + turn + `]}`, "turns[1].input: 0 tool outputs for the previous turn's 1 calls"},
		{`{"version":1,"turns":[{"input":[{"kind":"user_message","tokens":5}],"output_tokens":3,"tool_time_ms":-1}]}`, "turns[0].tool_time_ms: must be 0 to 600000"},
		{`{"version":1,"instructions_tokens":200001,"turns":[` + turn + `]}`, "instructions_tokens: must be 0 to 200000"},
	}
	for _, c := range cases {
		_, err := Parse([]byte(c.body))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Parse(%.80q) = %v, want an error containing %q", c.body, err, c.want)
		}
	}
}

// TestTenThousandTurnsRefused: a long session is refused with a clear
// error before its turns are decoded, never a crash.
func TestTenThousandTurnsRefused(t *testing.T) {
	turn := `{"input":[{"kind":"user_message","tokens":5}],"output_tokens":3}`
	body := `{"version":1,"turns":[` + strings.TrimSuffix(strings.Repeat(turn+",", 10000), ",") + `]}`
	_, err := Parse([]byte(body))
	if err == nil || !strings.Contains(err.Error(), "turns: 10000 turns; a workload holds at most 1000") {
		t.Fatalf("err = %v", err)
	}
	// The session total is bounded too.
	big := `{"input":[{"kind":"user_message","tokens":200000}],"output_tokens":1}`
	body = `{"version":1,"turns":[` + strings.TrimSuffix(strings.Repeat(big+",", 6), ",") + `]}`
	if _, err := Parse([]byte(body)); err == nil || !strings.Contains(err.Error(), "turns[4]: the session reaches") {
		t.Fatalf("err = %v", err)
	}
}

// TestVersionOneStillDecodes: a version 1 workload decodes, keeps its
// version, and re-encodes byte for byte (so its id does not change); a
// version 2 workload with reasoning tokens round-trips them.
func TestVersionOneStillDecodes(t *testing.T) {
	v1 := `{"version":1,"source":"hand","instructions_tokens":10,"tools_tokens":5,"tools":1,"turns":[{"input":[{"kind":"user_message","tokens":3}],"output_tokens":4}]}`
	w, err := Parse([]byte(v1))
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := w.Canonical(); w.Version != 1 || string(b) != v1 {
		t.Fatalf("version %d, canonical %s", w.Version, b)
	}
	v2 := `{"version":2,"instructions_tokens":0,"tools_tokens":0,"tools":0,"turns":[{"input":[{"kind":"user_message","tokens":3}],"output_tokens":40,"reasoning_tokens":25,"calls":[{"argument_tokens":10}],"tool_time_ms":5},` +
		`{"input":[{"kind":"tool_output","tokens":7}],"output_tokens":4}]}`
	w, err = Parse([]byte(v2))
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := w.Canonical(); string(b) != v2 {
		t.Fatalf("canonical %s", b)
	}
	first := &w.Turns[0]
	if first.ReasoningTokens != 25 || first.MessageTokens() != 5 {
		t.Fatalf("turn %+v: message %d", first, first.MessageTokens())
	}
	if r := ReplyOf(first); r.String() != "output=40;reasoning=25;calls=10" || r.MessageTokens() != 5 {
		t.Fatalf("reply %q, message %d", r.String(), r.MessageTokens())
	}
}

func TestReplySpec(t *testing.T) {
	for _, r := range []Reply{{OutputTokens: 1}, {OutputTokens: 120, ArgumentTokens: []int{35, 80}},
		{OutputTokens: 120, ReasoningTokens: 5, ArgumentTokens: []int{35, 80}}, {OutputTokens: 9, ReasoningTokens: 8}} {
		got, err := ParseReply(r.String())
		if err != nil || fmt.Sprint(got) != fmt.Sprint(r) {
			t.Fatalf("ParseReply(%q) = %v, %v", r.String(), got, err)
		}
	}
	// The largest reply fits the API's 512-character metadata value.
	r := Reply{OutputTokens: MaxItemTokens, ReasoningTokens: MaxItemTokens / 2}
	for range MaxCallsPerTurn {
		r.ArgumentTokens = append(r.ArgumentTokens, MaxItemTokens/2/MaxCallsPerTurn)
	}
	if n := len(r.String()); n > 512 {
		t.Fatalf("largest reply spec is %d characters", n)
	}
	if _, err := ParseReply(r.String()); err != nil {
		t.Fatalf("largest reply spec: %v", err)
	}
	for _, bad := range []string{"", "output=0", "output=5;calls=6", "output=5;calls=", "out=5", "output=5;calls=1,x",
		"output=5;reasoning=5", "output=5;reasoning=0", "output=5;reasoning=", "output=5;reasoning=3;calls=3", "output=9;calls=1;reasoning=2"} {
		if _, err := ParseReply(bad); err == nil {
			t.Errorf("ParseReply(%q) succeeded", bad)
		}
	}
}

func FuzzDecode(f *testing.F) {
	b, _ := os.ReadFile("testdata/codex-like.json")
	f.Add(b)
	f.Add([]byte(`{"version":1,"turns":[{"input":[{"kind":"user_message","tokens":5}],"output_tokens":3}]}`))
	f.Add([]byte(`{"version":2,"turns":[{"input":[{"kind":"user_message","tokens":5}],"output_tokens":9,"reasoning_tokens":4,"calls":[{"argument_tokens":2}]}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		w, err := Parse(b)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "workload: ") {
				t.Fatalf("error without the package's prefix: %v", err)
			}
			return
		}
		// A workload that decodes is valid, re-encodes (compact, within the
		// size limit) and decodes the same.
		var buf bytes.Buffer
		if err := w.Encode(&buf); err != nil {
			t.Fatal(err)
		}
		if buf.Len() > MaxBytes+1 {
			t.Fatalf("encoded in %d bytes", buf.Len())
		}
		w2, err := Parse(buf.Bytes())
		if err != nil || fmt.Sprint(w2) != fmt.Sprint(w) {
			t.Fatalf("round trip: %v", err)
		}
		for i := range w.Turns {
			s := ReplyOf(&w.Turns[i]).String()
			if len(s) > 512 {
				t.Fatalf("reply spec of %d characters", len(s))
			}
			if _, err := ParseReply(s); err != nil {
				t.Fatalf("reply spec %q: %v", s, err)
			}
		}
	})
}

// TestFieldNamesMatchExactly: encoding/json matches field names without
// regard to case; the format does not.
func TestFieldNamesMatchExactly(t *testing.T) {
	turn := `{"input":[{"kind":"user_message","tokens":5}],"output_tokens":3}`
	for _, c := range []struct{ body, want string }{
		{`{"VERSION":1,"turns":[` + turn + `]}`, "VERSION: unknown field"},
		{`{"version":1,"Turns":[` + turn + `]}`, "Turns: unknown field"},
		{`{"version":1,"turns":[{"input":[{"Kind":"user_message","tokens":5}],"output_tokens":3}]}`, "Kind: unknown field"},
		{`{"version":1,"turns":[{"input":[{"kind":"user_message","tokens":5}],"Output_Tokens":3}]}`, "Output_Tokens: unknown field"},
		{`{"version":1,"turns":[{"input":[{"kind":"user_message","tokens":5}],"output_tokens":3,"calls":[{"argument_tokenſ":1}]}]}`, "unknown field"},
	} {
		if _, err := Parse([]byte(c.body)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Parse(%s) = %v, want %q", c.body, err, c.want)
		}
	}
	// An escaped name is the same name.
	if _, err := Parse([]byte(`{"\u0076ersion":1,"turns":[` + turn + `]}`)); err != nil {
		t.Errorf("escaped name: %v", err)
	}
}

// TestCanonicalFitsWhatWasAccepted: a workload is stored and served in
// its compact form; an upload whose compact form would pass the size limit
// (short number forms re-encoded longer) is refused, so anything accepted
// can be served and uploaded again. The same workload gets the same id.
func TestCanonicalFitsWhatWasAccepted(t *testing.T) {
	// Right under the size limit, with tool times written short (1e5)
	// that the compact form writes long (100000).
	const item = `{"kind":"user_message","tokens":1}`
	build := func(items []int) string {
		var b strings.Builder
		b.WriteString(`{"version":1,"turns":[`)
		for i, n := range items {
			if i > 0 {
				b.WriteString(",")
			}
			b.WriteString(`{"input":[` + strings.TrimSuffix(strings.Repeat(item+",", n), ",") + `],"output_tokens":1,"tool_time_ms":1e5}`)
		}
		b.WriteString(`]}`)
		return b.String()
	}
	items := make([]int, MaxTurns)
	for i := range items {
		items[i] = 1
	}
	size := len(build(items))
	for i := 0; size+len(item)+1 <= MaxBytes; i = (i + 1) % MaxTurns {
		items[i]++
		size += len(item) + 1
	}
	body := build(items)
	if len(body) > MaxBytes {
		t.Fatalf("test body of %d bytes", len(body))
	}
	_, err := Parse([]byte(body))
	if err == nil || !strings.Contains(err.Error(), "compact form") {
		t.Fatalf("a workload whose compact form passes the limit: %v", err)
	}
	// Written as the compact form writes it, it is accepted, and its
	// compact form decodes to the same id.
	for i := range 100 {
		items[i]--
	}
	w, err := Parse([]byte(strings.ReplaceAll(build(items), "1e5", "100000")))
	if err != nil {
		t.Fatal(err)
	}
	c, err := w.Canonical()
	if err != nil || len(c) > MaxBytes || bytes.Contains(c, []byte("\n")) {
		t.Fatalf("canonical: %v, %d bytes", err, len(c))
	}
	again, err := Parse(c)
	if err != nil {
		t.Fatalf("the canonical form does not decode: %v", err)
	}
	c2, _ := again.Canonical()
	if ID(c2) != ID(c) || !strings.HasPrefix(ID(c), "wl_") {
		t.Fatalf("ids differ: %s %s", ID(c2), ID(c))
	}
}

func TestCutAtCharacters(t *testing.T) {
	s := strings.Repeat("é", 300)
	c := Cut(s, MaxDescriptionLen)
	if !utf8.ValidString(c) || utf8.RuneCountInString(c) != MaxDescriptionLen {
		t.Fatalf("cut to %d characters, valid %v", utf8.RuneCountInString(c), utf8.ValidString(c))
	}
	w := &Workload{Version: Version, Turns: []Turn{{Input: []Input{{Kind: KindUserMessage, Tokens: 1}}, OutputTokens: 1}}}
	w.Describe("session sess_1 (ws, "+strings.Repeat("ü", 300)+")", "; the first 1000 turns")
	if err := w.Validate(); err != nil || !strings.HasSuffix(w.Description, "; the first 1000 turns") {
		t.Fatalf("%v %q", err, w.Description)
	}
}

// TestStoredCopiesDecode: a workload stored indented before workloads
// were stored compact decodes, even past the size limit.
func TestStoredCopiesDecode(t *testing.T) {
	turn := `{"input": [{"kind": "user_message", "tokens": 5}], "output_tokens": 3}`
	body := `{"version": 1, "turns": [` + strings.Repeat(turn+",\n          ", 999) + turn + `]}`
	body = strings.Repeat(" ", MaxBytes-len(body)+1) + body
	if _, err := Parse([]byte(body)); err == nil {
		t.Fatal("a file past the limit decoded")
	}
	if w, err := ParseStored([]byte(body)); err != nil || len(w.Turns) != 1000 {
		t.Fatalf("stored copy: %v", err)
	}
}
