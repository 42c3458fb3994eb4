package policy

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"agentloop/inference"
)

// expandPieces returns every token piece an item streams, its filler
// written out.
func expandPieces(it *OutputItem) []string {
	out := slices.Clone(it.Pieces)
	for i := range it.Filler {
		out = append(out, FillerPiece(i, it.Text == ""))
	}
	return out
}

// An exact-length reply held as a head and a filler count expands to the
// text and pieces the reply was written out as before (oldExactPieces, the
// expansion this replaced), so its stream and its stored text are the
// same.
func TestExactReplyExpandsAsBefore(t *testing.T) {
	tok := newTestTokenizer(t)
	chat := NewChatPolicy(tok).(*chatPolicy)
	questions := []string{
		"Tell me about continuous batching.",
		"🦀🦀 crabs 日本語 𝔘𝔫𝔦𝔠𝔬𝔡𝔢   trailing spaces   ",
		"",
		"Write a long story about lighthouse keeper number 7 and the sea.",
	}
	for _, q := range questions {
		for _, n := range []int{1, 2, 3, 7, 12, 13, 16, 64, 150, 151, 500, 2048} {
			req := &Request{Items: userAsks(q), ExactTokens: n, Seed: int64(n)}
			reply := chat.Respond(req)
			it := &reply.Items[0]
			h := inference.HashStrings(uint64(req.Seed), req.Instructions, lastUserText(req.Items), fmt.Sprint(len(req.Items)))
			base, basePieces := chat.compose(req, lastUserText(req.Items), h)
			wantText, wantPieces := oldExactPieces(tok, base, basePieces, n)
			if got := it.FullText(); got != wantText {
				t.Fatalf("ExactTokens %d for %q: text %q, before %q", n, q, got, wantText)
			}
			if got := expandPieces(it); !slices.Equal(got, wantPieces) {
				t.Fatalf("ExactTokens %d for %q: pieces %q, before %q", n, q, got, wantPieces)
			}
			if got := len(it.Pieces); got > len(basePieces) {
				t.Fatalf("ExactTokens %d: the reply holds %d pieces, more than its head", n, got)
			}
		}
	}
	// Filler alone (no head to keep) expands as before too.
	for _, n := range []int{1, 2, 12, 13, 100} {
		head, pieces, filler := exactPieces(tok, "", nil, n)
		it := &OutputItem{Type: OutputMessage, Text: head, Pieces: pieces, Filler: filler}
		wantText, wantPieces := oldExactPieces(tok, "", nil, n)
		if it.FullText() != wantText || !slices.Equal(expandPieces(it), wantPieces) {
			t.Fatalf("filler alone, %d: %q %q, before %q %q", n, it.FullText(), expandPieces(it), wantText, wantPieces)
		}
	}
}

// oldExactPieces is the expansion exactPieces replaced, kept verbatim to
// prove the held form equal: it wrote the whole text and all its pieces.
func oldExactPieces(tok *inference.Tokenizer, base string, basePieces []string, n int) (string, []string) {
	if n <= 0 {
		return "", nil
	}
	pieces := basePieces
	if pieces == nil {
		pieces = tok.Pieces(base)
	}
	k := min(n, len(pieces))
	for tries := 0; k > 0 && tries < 16; tries++ {
		head := strings.Join(pieces[:k], "")
		if pieces[k-1] == "" || endsInSpace(head) {
			k--
			continue
		}
		if k == len(pieces) {
			return head + oldFiller(n-k), append(pieces[:k:k], oldFillerPieces(n-k, false)...)
		}
		from := max(0, k-8)
		join := strings.Join(pieces[from:k], "")
		if tok.Count(join) == k-from && (k == n || tok.Count(join+fillerWords[0]) == k-from+1) {
			return head + oldFiller(n-k), append(pieces[:k:k], oldFillerPieces(n-k, false)...)
		}
		k--
	}
	text := strings.TrimPrefix(oldFiller(n), " ")
	if tok.Count(text) != n {
		panic("policy: filler text does not count exactly")
	}
	return text, oldFillerPieces(n, true)
}

func oldFillerPieces(n int, trimmed bool) []string {
	out := make([]string, n)
	for i := range n {
		out[i] = fillerWords[i%len(fillerWords)]
	}
	if trimmed && n > 0 {
		out[0] = strings.TrimPrefix(out[0], " ")
	}
	return out
}

func oldFiller(n int) string {
	var b strings.Builder
	for i := range n {
		b.WriteString(fillerWords[i%len(fillerWords)])
	}
	return b.String()
}
