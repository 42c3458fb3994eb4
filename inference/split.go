package inference

import (
	"strings"
	"sync"
	"sync/atomic"
)

// The codec splits text with a backtracking regexp before it merges each
// piece; on ASCII text, which is most of what agents send, asciiPieces
// cuts the same pieces by hand, and each piece's tokens come from the
// codec once (pieceTokens). TestASCIIPiecesMatchTheCodec and
// FuzzASCIIPieces hold both to the codec.

// Character classes of o200k's split pattern, for ASCII bytes.
const (
	classPunct   = iota // none of the others: [^\s\p{L}\p{N}]
	classUpper          // \p{Lu}
	classLower          // \p{Ll}
	classDigit          // \p{N}
	classSpace          // \s but \r and \n
	classNewline        // \r, \n
)

var asciiClass = func() (c [128]byte) {
	for b := range c {
		switch {
		case 'A' <= b && b <= 'Z':
			c[b] = classUpper
		case 'a' <= b && b <= 'z':
			c[b] = classLower
		case '0' <= b && b <= '9':
			c[b] = classDigit
		case b == '\r' || b == '\n':
			c[b] = classNewline
		case b == ' ' || b == '\t' || b == '\v' || b == '\f':
			c[b] = classSpace
		}
	}
	return c
}()

func isASCII(s string) bool { return indexNonASCII(s, 0) < 0 }

// indexNonASCII is the index of the first byte of s at or after from
// that is not ASCII, or -1.
func indexNonASCII(s string, from int) int {
	for i := from; i < len(s); i++ {
		if s[i] >= 0x80 {
			return i
		}
	}
	return -1
}

// isCut reports whether the split pattern starts a piece at s[i] whatever
// precedes it and ends one before it whatever follows: s[i] is a space
// between two ASCII bytes that are not \s. No piece holds a space and the
// non-space before it, and nothing before s[i] looks past it.
func isCut(s string, i int) bool {
	if i <= 0 || i+1 >= len(s) || s[i] != ' ' {
		return false
	}
	a, b := s[i-1], s[i+1]
	return a < 0x80 && b < 0x80 && asciiClass[a] != classSpace && asciiClass[a] != classNewline &&
		asciiClass[b] != classSpace && asciiClass[b] != classNewline
}

// appendMixed appends the tokens of s: its ASCII stretches through
// appendASCII, and each stretch around non-ASCII text, from the cut
// before it to the cut after it, through the codec.
func (t *Tokenizer) appendMixed(dst []int, s string) []int {
	for s != "" {
		k := indexNonASCII(s, 0)
		if k < 0 {
			return t.appendASCII(dst, s)
		}
		from := k
		for from > 0 && !isCut(s, from) {
			from--
		}
		dst = t.appendASCII(dst, s[:from])
		to := k + 1
		for to < len(s) && !isCut(s, to) {
			to++
		}
		ids, _, _ := t.codec.Encode(s[from:to])
		for _, id := range ids {
			dst = append(dst, int(id))
		}
		s = s[to:]
	}
	return dst
}

// asciiPieces calls yield for each piece the codec's split pattern
//
//	[^\r\n\p{L}\p{N}]?[\p{Lu}…]*[\p{Ll}…]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?
//	|[^\r\n\p{L}\p{N}]?[\p{Lu}…]+[\p{Ll}…]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?
//	|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+
//
// cuts the ASCII text s into, in order. Every byte starts some
// alternative, so the pieces cover s.
func asciiPieces(s string, yield func(piece string)) {
	class := func(i int) byte {
		if i < len(s) {
			return asciiClass[s[i]]
		}
		return 255
	}
	run := func(i int, c byte) int { // the end of the run of class c from i
		for i < len(s) && asciiClass[s[i]] == c {
			i++
		}
		return i
	}
	spaceRun := func(i int) int {
		for i < len(s) && (asciiClass[s[i]] == classSpace || asciiClass[s[i]] == classNewline) {
			i++
		}
		return i
	}
	for i := 0; i < len(s); {
		c := class(i)
		end := -1
		// The letter alternatives, with their optional leading byte.
		j := i
		if c == classPunct || c == classSpace {
			j = i + 1
		}
		if k := class(j); k == classUpper || k == classLower {
			end = run(run(j, classUpper), classLower)
			end = contraction(s, end)
		}
		if end < 0 {
			switch c {
			case classDigit:
				end = min(run(i, classDigit), i+3)
			case classPunct:
				end = afterPunct(s, run(i, classPunct))
			case classSpace, classNewline:
				if c == classSpace && s[i] == ' ' && class(i+1) == classPunct {
					end = afterPunct(s, run(i+1, classPunct))
					break
				}
				e := spaceRun(i)
				for k := e - 1; k >= i; k-- { // \s*[\r\n]+: up to the last newline
					if asciiClass[s[k]] == classNewline {
						end = k + 1
						break
					}
				}
				if end < 0 { // \s+(?!\S), else \s+
					end = e
					if e < len(s) && e-i > 1 {
						end = e - 1
					}
				}
			}
		}
		yield(s[i:end])
		i = end
	}
}

// afterPunct extends a run of punctuation ending at i by [\r\n/]*.
func afterPunct(s string, i int) int {
	for i < len(s) && (s[i] == '\r' || s[i] == '\n' || s[i] == '/') {
		i++
	}
	return i
}

// contraction extends letters ending at i by (?i:'s|'t|'re|'ve|'m|'ll|'d).
func contraction(s string, i int) int {
	if i+1 >= len(s) || s[i] != '\'' {
		return i
	}
	lower := func(k int) byte {
		if k < len(s) {
			return s[k] | 0x20
		}
		return 0
	}
	switch lower(i + 1) {
	case 's', 't', 'm', 'd':
		return i + 2
	case 'r', 'v':
		if lower(i+2) == 'e' {
			return i + 3
		}
	case 'l':
		if lower(i+2) == 'l' {
			return i + 3
		}
	}
	return i
}

// pieceTokens remembers the tokens of short pieces: words, numbers and
// spaces recur, so most pieces are merged once per process. It stops
// growing at maxPieces.
var pieceTokens struct {
	m sync.Map // string → []int
	n atomic.Int64
}

const (
	maxPieces     = 1 << 16
	maxPieceBytes = 32
)

// appendASCII appends the tokens of the ASCII text s to dst.
func (t *Tokenizer) appendASCII(dst []int, s string) []int {
	asciiPieces(s, func(piece string) {
		if len(piece) <= maxPieceBytes {
			if v, ok := pieceTokens.m.Load(piece); ok {
				dst = append(dst, v.([]int)...)
				return
			}
		}
		start := len(dst)
		ids, _, _ := t.codec.Encode(piece)
		for _, id := range ids {
			dst = append(dst, int(id))
		}
		// The key is cloned: a piece keeps its whole text alive.
		if len(piece) <= maxPieceBytes && pieceTokens.n.Load() < maxPieces {
			if _, loaded := pieceTokens.m.LoadOrStore(strings.Clone(piece), append([]int(nil), dst[start:]...)); !loaded {
				pieceTokens.n.Add(1)
			}
		}
	})
	return dst
}
