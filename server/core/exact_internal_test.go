package core

import (
	"bytes"
	"fmt"
	"testing"

	"agentloop/api"
	"agentloop/inference"
	"agentloop/policy"
)

// recorder is a sink that keeps every event.
type recorder struct{ events [][]byte }

func (r *recorder) Event(_ string, b []byte) error {
	r.events = append(r.events, bytes.Clone(b))
	return nil
}
func (r *recorder) Flush() error { return nil }

// An exact-length reply held as its head and a filler count streams the
// same events, and settles to the same item, as the reply written out in
// full (its pieces expanded up front, as before), however its tokens are
// released and wherever max_output_tokens cuts it.
func TestExactReplyStreamsAsWrittenOut(t *testing.T) {
	tok, err := inference.NewTokenizer()
	if err != nil {
		t.Fatal(err)
	}
	e := &Engine{sh: &Shared{Tokenizer: tok}}
	chat := policy.NewChatPolicy(tok)
	for _, q := range []string{"Tell me about continuous batching.", "🦀🦀 crabs 日本語", ""} {
		for _, n := range []int{1, 2, 13, 40, 300} {
			reply := chat.Respond(&policy.Request{Items: []policy.Item{{Type: "message", Role: "user", Text: q}}, ExactTokens: n, Seed: 7})
			held := reply.Items[0]
			// The same reply written out, as the policy gave it before.
			full := policy.OutputItem{Type: held.Type, Text: held.FullText(), Pieces: append([]string(nil), held.Pieces...)}
			for i := range held.Filler {
				full.Pieces = append(full.Pieces, policy.FillerPiece(i, held.Text == ""))
			}
			for _, limit := range []int{n, n - 1, 1} {
				for _, step := range []int{1, 3, n} {
					name := fmt.Sprintf("%q n=%d limit=%d step=%d", q, n, limit, step)
					got, gotItem := streamReply(t, e, policy.Reply{Items: []policy.OutputItem{held}}, limit, step)
					want, wantItem := streamReply(t, e, policy.Reply{Items: []policy.OutputItem{full}}, limit, step)
					if !bytes.Equal(got, want) {
						t.Fatalf("%s: held reply streams\n%s\nwritten out\n%s", name, got, want)
					}
					if !bytes.Equal(gotItem, wantItem) {
						t.Fatalf("%s: held reply settles to\n%s\nwritten out\n%s", name, gotItem, wantItem)
					}
				}
			}
		}
	}
}

// streamReply plans a reply under max_output_tokens limit, streams it
// releasing step tokens at a time, and returns its events and its settled
// output, with ids made stable.
func streamReply(t *testing.T, e *Engine, reply policy.Reply, limit, step int) (events, output []byte) {
	fl := &Flight{parsed: parseOut{req: &api.CreateRequest{MaxOutputTokens: &limit}}}
	items, total, _ := e.plan(fl, reply)
	for i := range items {
		items[i].item.ID = fmt.Sprintf("msg_%d", i)
	}
	rec := &recorder{}
	st := &streamer{out: rec, items: items}
	for released := 0; released < total; {
		released = min(released+step, total)
		if err := st.advance(released); err != nil {
			t.Fatal(err)
		}
	}
	g := &streamed{items: items, total: total, sent: st.sent, cur: st.cur}
	for _, it := range g.keptOutput() {
		output = it.AppendJSON(output)
	}
	return bytes.Join(rec.events, []byte("\n")), output
}
