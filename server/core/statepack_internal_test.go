package core

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"agentloop/api"
	"agentloop/inference"
)

// TestPackedStateExpandsToTheSameTokens: an idle state's compact form
// gives back exactly its tokens and instructions, whatever the ids (one
// past 2^24 packs at 4 bytes), a fork expands without touching its
// original, and two states of one prefix share it; the token cache's
// packed runs append the same tokens.
func TestPackedStateExpandsToTheSameTokens(t *testing.T) {
	for _, c := range []struct {
		name      string
		tokens    []int
		prefixLen int
		width     int
	}{
		{"o200k ids", []int{0, 1, 255, 256, 65535, 65536, 199997, 200018, 42}, 3, 3},
		{"an id past 2^24", []int{5, 1 << 24, 7, 1<<31 - 1}, 1, 4},
		{"no prefix", []int{9, 8, 7}, 0, 3},
		{"all prefix", []int{9, 8, 7}, 3, 3},
	} {
		mk := func() *ChainState {
			return &ChainState{id: "resp_1", instructions: "Be brief.", tokens: slices.Clone(c.tokens), prefixLen: c.prefixLen}
		}
		p, q := mk(), mk()
		p.Pack()
		q.Pack()
		if p.tokens != nil || p.instructions != "" || p.packed.width != c.width {
			t.Fatalf("%s: packed state keeps %d tokens, %q, width %d", c.name, len(p.tokens), p.instructions, p.packed.width)
		}
		if p.shared() != q.shared() || p.Footprint().Shared == 0 {
			t.Fatalf("%s: two states of one prefix do not share it", c.name)
		}
		f := p.Fork()
		f.expand()
		f.tokens = append(f.tokens, 1, 2, 3) // a continuation appends
		p.expand()
		if !slices.Equal(p.tokens, c.tokens) || p.instructions != "Be brief." || p.packed != nil {
			t.Fatalf("%s: expanded %v %q, want %v", c.name, p.tokens, p.instructions, c.tokens)
		}
		if !slices.Equal(f.tokens[:len(c.tokens)], c.tokens) {
			t.Fatalf("%s: fork expanded %v", c.name, f.tokens)
		}
		// The token cache's runs pack the same way.
		run := packRun(c.tokens)
		if got := run.appendTo([]int{-7}); run.len() != len(c.tokens) || run.width != c.width || !slices.Equal(got, append([]int{-7}, c.tokens...)) {
			t.Fatalf("%s: a packed run of %d tokens at %d bytes appends %v", c.name, run.len(), run.width, got)
		}
	}
	var none *ChainState
	none.Pack()
	hydrated := &ChainState{id: "resp_2"} // from the store: no tokens
	hydrated.Pack()
	if hydrated.packed != nil {
		t.Fatal("a state without tokens was packed")
	}
}

// TestStateBudgetCountsASharedPrefixOnce: states of one prefix count it
// once, for as long as one of them is held.
func TestStateBudgetCountsASharedPrefixOnce(t *testing.T) {
	b := NewStateBudget(0, nil)
	mk := func(own int) *ChainState {
		toks := make([]int, 100+own)
		p := &ChainState{instructions: "shared instructions", tokens: toks, prefixLen: 100}
		p.Pack()
		return p
	}
	p, q := mk(10), mk(20)
	fp, fq := p.Footprint(), q.Footprint()
	hp := b.Hold(p, func() bool { return true })
	hq := b.Hold(q, func() bool { return true })
	if size, _ := b.Size(); size != int64(fp.Own()+fq.Own()+fp.Shared) {
		t.Fatalf("held %d bytes, want %d", size, fp.Own()+fq.Own()+fp.Shared)
	}
	b.Release(hp)
	if size, _ := b.Size(); size != int64(fq.Total()) {
		t.Fatalf("after one release %d bytes, want %d", size, fq.Total())
	}
	b.Release(hq)
	if size, n := b.Size(); size != 0 || n != 0 {
		t.Fatalf("after both %d bytes in %d states", size, n)
	}
}

// BenchmarkExpandPackedState is what a continuation pays to unpack its
// parent: 38,000 tokens, 8,000 of them a shared prefix.
func BenchmarkExpandPackedState(b *testing.B) {
	toks := make([]int, 38000)
	for i := range toks {
		toks[i] = (i * 7919) % 200000
	}
	p := &ChainState{instructions: "Be brief.", tokens: toks, prefixLen: 8000}
	p.Pack()
	b.ResetTimer()
	for b.Loop() {
		c := *p
		c.expand()
	}
}

// TestPackedStateGivesItsTextsBackExactly: a packed state drops the texts
// its tokens give back, and a continuation that takes it gets items equal
// to those it kept, field for field and byte for byte on the wire: a
// message of several parts and non-ASCII text, a function call and its
// output, outputs escaped otherwise than the engine writes them (kept as
// sent), a reasoning item (renders nothing: kept), a compaction item (its
// blob kept, its summary dropped), a custom tool call (its JSON dropped),
// and an item whose text is not valid UTF-8 (its tokens do not give it
// back: it and the items after it keep their text). Packing never touches
// the items it was given, nor a fork's expand its original.
func TestPackedStateGivesItsTextsBackExactly(t *testing.T) {
	tok, err := inference.NewTokenizer()
	if err != nil {
		t.Fatal(err)
	}
	e := &Engine{sh: &Shared{Tokenizer: tok}}
	msg := func(role string, texts ...string) api.Item {
		it := api.Item{Type: api.TypeMessage, ID: "msg_" + role, Role: role}
		for _, s := range texts {
			it.Content = append(it.Content, api.Part{Type: "input_text", Text: s})
		}
		return it
	}
	multi := msg("user", "first part: naïve café 🦀", "", "third: 日本語 \x7f del")
	multi.Content[1] = api.Part{Type: "input_image", Raw: json.RawMessage(`{"type":"input_image","image_url":"https://example.com/a.png"}`)}
	compaction := api.Item{Type: api.TypeCompaction, ID: "cmp_1", EncryptedContent: "sealed-blob"}
	compaction.SetCompactionSummary("The user asked for the weather ✓; Zürich is 22 °C.")
	context := []api.Item{
		msg("developer", "Answer in 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 when asked."),
		multi,
		{Type: api.TypeFunctionCall, ID: "fc_1", Name: "get_weather", CallID: "call_1", Arguments: `{"city":"Zürich","days":[1,2]}`},
		{Type: api.TypeFunctionCallOutput, CallID: "call_1", Output: api.AppendString(nil, "22 °C\n\"sunny\"\ttab")},
		{Type: api.TypeFunctionCallOutput, CallID: "call_1", Output: json.RawMessage(`"\u00e9t\u00e9 escaped"`)},
		{Type: api.TypeFunctionCallOutput, CallID: "call_1", Output: json.RawMessage(`[{"type":"input_text","text":"a part list"}]`)},
		{Type: api.TypeReasoning, ID: "rs_1", Summary: []api.Part{{Type: "summary_text", Text: "thinking 🤔"}}, EncryptedContent: "blob"},
		compaction,
		{Type: "custom_tool_call", ID: "ctc_1", CallID: "call_2", Name: "apply_patch", Raw: json.RawMessage(`{"type":"custom_tool_call","call_id":"call_2","name":"apply_patch","input":"*** ä ***"}`)},
		msg("user", "Bad byte \xff here"),
		msg("user", "kept after it"),
	}
	output := []api.Item{msg("assistant", "Il fait 22 °C à Zürich. 🌤")}
	wrap := func(items []api.Item) []ctxItem {
		out := make([]ctxItem, len(items))
		for i := range items {
			out[i] = ctxItem{Item: items[i], key: int64(i)}
		}
		return out
	}
	wire := func(items []ctxItem) (b []byte) {
		for i := range items {
			b = items[i].AppendJSON(b)
			b = append(b, '\n')
		}
		return b
	}
	for _, c := range []struct {
		name    string
		context []api.Item
		dropped []int32 // the items whose text the packed state drops
	}{
		{"every kind", context, []int32{0, 1, 2, 3, 7, 8}},
		{"all give their text back", context[:9], []int32{0, 1, 2, 3, 7, 8, 9}},
	} {
		ctx, out := wrap(c.context), wrap(output)
		prefix := tok.Encode("<|start|>system<|message|>Be brief.<|end|>")
		toks, _, err := e.renderItems(t.Context(), slices.Clone(prefix), "", ctx)
		if err != nil {
			t.Fatal(err)
		}
		toks, _, _ = e.renderItems(t.Context(), toks, "", out)
		wantTokens, wantWire := slices.Clone(toks), wire(append(slices.Clone(ctx), out...))
		p := &ChainState{id: "resp_1", instructions: "Be brief.", context: ctx, output: out, tokens: toks, prefixLen: len(prefix), tok: tok}
		p.Pack()
		var dropped []int32
		for _, d := range p.packed.dropped {
			dropped = append(dropped, d.item)
			it := &append(slices.Clone(p.context), p.output...)[d.item].Item
			if _, content, _ := renderParts(it); strings.Trim(content, "\n") != "" || len(it.Raw) > 0 { // a message of parts joins them with "\n"
				t.Errorf("%s: packed item %d keeps %q", c.name, d.item, content+string(it.Raw))
			}
		}
		if !slices.Equal(dropped, c.dropped) {
			t.Errorf("%s: texts dropped of items %v, want %v", c.name, dropped, c.dropped)
		}
		if got := wire(append(slices.Clone(ctx), out...)); !bytes.Equal(got, wantWire) {
			t.Fatalf("%s: packing changed the items it was given:\n%s", c.name, got)
		}
		packed := p.Footprint()
		f := p.Fork()
		f.expand()
		if !reflect.DeepEqual(f.context, ctx) || p.Footprint() != packed {
			t.Fatalf("%s: a fork's expand gave %d items back, or changed its original", c.name, len(f.context))
		}
		p.expand()
		if !slices.Equal(p.tokens, wantTokens) {
			t.Fatalf("%s: expanded tokens differ", c.name)
		}
		if !reflect.DeepEqual(p.context, ctx) || !reflect.DeepEqual(p.output, out) {
			t.Fatalf("%s: expanded items differ:\n%s\nwant\n%s", c.name, wire(append(slices.Clone(p.context), p.output...)), wantWire)
		}
		if got := wire(append(slices.Clone(p.context), p.output...)); !bytes.Equal(got, wantWire) {
			t.Fatalf("%s: expanded items write\n%s\nwant\n%s", c.name, got, wantWire)
		}
		// The expanded state renders its items to its tokens again.
		again, _, _ := e.renderItems(t.Context(), slices.Clone(prefix), "", append(slices.Clone(p.context), p.output...))
		if !slices.Equal(again, wantTokens) {
			t.Fatalf("%s: expanded items render otherwise", c.name)
		}
	}
}

// BenchmarkExpandPackedStateWithText is BenchmarkExpandPackedState with an
// item's text to decode back: the bench's session, 8,000 tokens of
// instructions and one input message of about 30,000 tokens.
func BenchmarkExpandPackedStateWithText(b *testing.B) {
	tok, err := inference.NewTokenizer()
	if err != nil {
		b.Fatal(err)
	}
	e := &Engine{sh: &Shared{Tokenizer: tok}}
	var sb strings.Builder
	for i := 0; sb.Len() < 110_000; i++ {
		fmt.Fprintf(&sb, "sess000001 %05d: func (s *Service) handle%05d(ctx context.Context, req *Request) error { return nil }\n", i, i)
	}
	ctx := []ctxItem{{Item: api.Item{Type: api.TypeMessage, Role: "user", Content: []api.Part{{Type: "input_text", Text: sb.String()}}}}}
	toks, _, _ := e.renderItems(b.Context(), make([]int, 8000), "", ctx)
	p := &ChainState{instructions: "Be brief.", context: ctx, tokens: toks, prefixLen: 8000, tok: tok}
	p.Pack()
	if len(p.packed.dropped) != 1 {
		b.Fatal("the message's text was not dropped")
	}
	b.ReportMetric(float64(len(toks)), "tokens")
	b.ResetTimer()
	for b.Loop() {
		c := *p
		c.expand()
	}
}
