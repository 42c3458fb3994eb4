package policy

import (
	"fmt"
	"testing"
)

// BenchmarkReplyTokenization measures what a reply costs the policy before
// the engine streams it: writing the text and its token pieces. Each op is
// one reply, with a different question each time so that nothing about one
// request helps the next. exact-1000 is the load test's reply
// (max_output_tokens 1000 with ignore_eos); chat is a free-form reply.
func BenchmarkReplyTokenization(b *testing.B) {
	tok := newTestTokenizer(b)
	chat := NewChatPolicy(tok)
	questions := make([]string, 64)
	for i := range questions {
		questions[i] = fmt.Sprintf("Write a long story about lighthouse keeper number %d and the sea.", i)
	}
	for _, bc := range []struct {
		name  string
		exact int
	}{{"exact-1000", 1000}, {"chat", 0}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			tokens := 0
			for i := 0; b.Loop(); i++ {
				reply := chat.Respond(&Request{Items: userAsks(questions[i%len(questions)]), Seed: int64(i), ExactTokens: bc.exact})
				it := reply.Items[0]
				pieces := it.Pieces
				if pieces == nil && it.Filler == 0 {
					pieces = tok.Pieces(it.Text) // as the engine does for a reply without pieces
				}
				tokens += len(pieces) + it.Filler // the filler is written as it streams
			}
			if tokens == 0 {
				b.Fatal("no pieces")
			}
		})
	}
}
