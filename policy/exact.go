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

// exactPieces writes a reply of exactly n tokens: the head of base, cut on
// a token boundary, continued with filler words. It returns the head, its
// token pieces and the number of filler tokens that follow it: the filler
// is not written here, but by AppendFiller as the reply streams, so a reply
// of 128,000 tokens is held as a short head and a count. basePieces are
// base's pieces when the caller knows them (nil: base is tokenized here).
// Re-tokenizing a concatenation can merge tokens across the join, so every
// candidate cut is counted, and cuts that do not hold are moved back.
func exactPieces(tok *inference.Tokenizer, base string, basePieces []string, n int) (head string, pieces []string, filler int) {
	if n <= 0 {
		return "", nil, 0
	}
	pieces = basePieces
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
			return head, pieces[:k:k], n - k
		}
		// Filler words start their own chunk of the split pattern, so only
		// the join can merge tokens: counting the head's last few pieces
		// with the first filler word checks it without tokenizing the rest.
		from := max(0, k-8)
		join := strings.Join(pieces[from:k], "")
		// A cut inside a chunk could re-tokenize differently, so the head's
		// end must count the same on its own, too.
		if tok.Count(join) == k-from && (k == n || tok.Count(join+fillerWords[0]) == k-from+1) {
			return head, pieces[:k:k], n - k
		}
		k--
	}
	// Filler alone always holds: its first word without the leading space.
	// The words repeat, so one round and the next word check every join.
	check := min(n, len(fillerWords)+1)
	if tok.Count(string(AppendFiller(nil, 0, check, true))) != check {
		// Not reachable with the filler words above; keep the contract visible.
		panic("policy: filler text does not count exactly")
	}
	return "", nil, n
}

// AppendFiller appends the filler tokens from up to to (counted from the
// filler's start) of an exact-length reply. trimmed drops the first
// token's leading space: a reply whose head is empty starts with the
// filler (see OutputItem.Filler).
func AppendFiller(dst []byte, from, to int, trimmed bool) []byte {
	for i := from; i < to; i++ {
		dst = append(dst, FillerPiece(i, trimmed)...)
	}
	return dst
}

// FillerPiece returns filler token i of an exact-length reply.
func FillerPiece(i int, trimmed bool) string {
	w := fillerWords[i%len(fillerWords)]
	if i == 0 && trimmed {
		w = strings.TrimPrefix(w, " ")
	}
	return w
}

func endsInSpace(s string) bool {
	if s == "" {
		return false
	}
	r := []rune(s[max(0, len(s)-4):])
	return unicode.IsSpace(r[len(r)-1])
}
