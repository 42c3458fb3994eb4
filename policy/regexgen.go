package policy

import (
	"regexp/syntax"
	"strings"
	"unicode"

	"agentloop/inference"
)

// matchingString returns a short string that pattern matches whole,
// chosen by h, and whether it could build one. It serves a string
// schema's pattern and a custom tool's regex grammar.
//
// Supported: literals, character classes (a letter, digit or symbol is
// picked from the class's first ranges), ., alternation (h picks the
// branch), groups, and repetition (the minimum, plus up to two more as h
// says, within the maximum; * and + stay short). Anchors (^ $ \A \z) and
// word boundaries produce nothing, so a pattern whose match depends on
// them (such as a\bb) may get a string it does not match: the caller
// checks the result.
func matchingString(pattern string, h uint64) (string, bool) {
	re, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return "", false
	}
	g := &regexGen{h: h}
	g.gen(re.Simplify(), 0)
	return g.b.String(), !g.failed
}

type regexGen struct {
	b      strings.Builder
	h      uint64
	n      uint64 // choices made, to vary each one
	failed bool
}

// maxRegexOutput bounds the generated string (a{1000000} asks for more).
const maxRegexOutput = 4096

func (g *regexGen) choose(k int) int {
	if k <= 1 {
		return 0
	}
	g.n++
	return int(inference.Splitmix64(g.h^g.n*0x9e3779b97f4a7c15) % uint64(k))
}

func (g *regexGen) gen(re *syntax.Regexp, depth int) {
	if depth > 100 || g.b.Len() > maxRegexOutput {
		g.failed = true
		return
	}
	switch re.Op {
	case syntax.OpLiteral:
		for _, r := range re.Rune {
			if re.Flags&syntax.FoldCase != 0 {
				r = unicode.ToLower(r)
			}
			g.b.WriteRune(r)
		}
	case syntax.OpCharClass:
		g.b.WriteRune(g.classRune(re.Rune))
	case syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		g.b.WriteByte("abcxyz"[g.choose(6)])
	case syntax.OpCapture:
		g.gen(re.Sub[0], depth+1)
	case syntax.OpConcat:
		for _, s := range re.Sub {
			g.gen(s, depth+1)
		}
	case syntax.OpAlternate:
		g.gen(re.Sub[g.choose(len(re.Sub))], depth+1)
	case syntax.OpStar, syntax.OpPlus, syntax.OpQuest, syntax.OpRepeat:
		lo, hi := re.Min, re.Max
		switch re.Op {
		case syntax.OpStar:
			lo, hi = 0, 2
		case syntax.OpPlus:
			lo, hi = 1, 3
		case syntax.OpQuest:
			lo, hi = 0, 1
		}
		if hi < 0 || hi > lo+2 {
			hi = lo + 2
		}
		for i, n := 0, lo+g.choose(hi-lo+1); i < n && !g.failed; i++ {
			g.gen(re.Sub[0], depth+1)
		}
	case syntax.OpEmptyMatch, syntax.OpBeginLine, syntax.OpEndLine, syntax.OpBeginText, syntax.OpEndText,
		syntax.OpWordBoundary, syntax.OpNoWordBoundary:
	default:
		g.failed = true
	}
}

// classRune picks a rune of a class given as ranges (lo, hi pairs),
// preferring a printable ASCII one.
func (g *regexGen) classRune(ranges []rune) rune {
	var printable [][2]rune
	for i := 0; i+1 < len(ranges); i += 2 {
		lo, hi := max(ranges[i], 0x21), min(ranges[i+1], 0x7e)
		if lo <= hi {
			printable = append(printable, [2]rune{lo, hi})
		}
	}
	if len(printable) > 0 {
		r := printable[g.choose(len(printable))]
		return r[0] + rune(g.choose(int(min(r[1]-r[0]+1, 26))))
	}
	if len(ranges) >= 2 {
		return ranges[0]
	}
	g.failed = true
	return 'x'
}
