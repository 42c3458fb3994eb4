package policy

import (
	"strings"
	"unicode"

	"agentloop/inference"
)

// fillerWords continue a reply to an exact length. Each is one o200k token
// and, led by a space, its own chunk of the encoding's split pattern, so
// appending one adds exactly one token whatever precedes it (tests check).
var fillerWords = []string{
	" The", " model", " keeps", " writing", " so", " the", " stream", " reaches",
	" its", " requested", " length", ".",
}

// exactText returns text of exactly n tokens: the head of base, cut on a token
// boundary, continued with filler words. Re-tokenizing a concatenation can
// merge tokens across the join, so every candidate is counted, and cuts that
// do not hold are moved back.
func exactText(tok *inference.Tokenizer, base string, n int) string {
	text, _ := exactPieces(tok, base, nil, n)
	return text
}

// exactPieces is exactText with the text's token pieces, so that the engine
// can stream them without tokenizing the text again. basePieces are base's
// pieces when the caller knows them (nil: base is tokenized here).
func exactPieces(tok *inference.Tokenizer, base string, basePieces []string, n int) (string, []string) {
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
		// A head ending in a partial rune or in whitespace would merge with
		// what follows; step back to a cleaner cut.
		if pieces[k-1] == "" || endsInSpace(head) {
			k--
			continue
		}
		// The whole base, ending in a non-space: its pieces are its own,
		// and the first filler word, led by a space, starts a chunk of the
		// split pattern after it, so nothing can merge across the join.
		if k == len(pieces) {
			return head + filler(n-k), append(pieces[:k:k], fillerPieces(n-k, false)...)
		}
		// Filler words start their own chunk of the split pattern, so only
		// the join can merge tokens: counting the head's last few pieces
		// with the first filler word checks it without tokenizing the rest.
		from := max(0, k-8)
		join := strings.Join(pieces[from:k], "")
		// A cut inside a chunk could re-tokenize differently, so the head's
		// end must count the same on its own, too.
		if tok.Count(join) == k-from && (k == n || tok.Count(join+fillerWords[0]) == k-from+1) {
			return head + filler(n-k), append(pieces[:k:k], fillerPieces(n-k, false)...)
		}
		k--
	}
	// Filler alone always holds: its first word without the leading space.
	text := strings.TrimPrefix(filler(n), " ")
	if tok.Count(text) != n {
		// Not reachable with the filler words above; keep the contract visible.
		panic("policy: filler text does not count exactly")
	}
	return text, fillerPieces(n, true)
}

// fillerPieces returns the pieces of filler(n), the first without its
// leading space when trimmed.
func fillerPieces(n int, trimmed bool) []string {
	out := make([]string, n)
	for i := range n {
		out[i] = fillerWords[i%len(fillerWords)]
	}
	if trimmed && n > 0 {
		out[0] = strings.TrimPrefix(out[0], " ")
	}
	return out
}

func endsInSpace(s string) bool {
	if s == "" {
		return false
	}
	r := []rune(s[max(0, len(s)-4):])
	return unicode.IsSpace(r[len(r)-1])
}

// filler returns n filler tokens.
func filler(n int) string {
	var b strings.Builder
	for i := range n {
		b.WriteString(fillerWords[i%len(fillerWords)])
	}
	return b.String()
}
