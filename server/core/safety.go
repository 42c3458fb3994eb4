package core

import (
	"context"
	"regexp"
	"strings"
)

// Safety is the classifier every request's new text passes through. It is a
// real scan whose cost grows with what it reads: it finds credentials that
// leak into tool outputs (private keys, cloud and API keys, tokens) and
// prompt-injection phrasing. Flags are recorded in the trace; they do not
// block the request, as a monitoring classifier would not.
type Safety struct{ re *regexp.Regexp }

// SafetyFlag is one finding.
type SafetyFlag struct {
	Kind string
	Item int // index of the item among those scanned
}

// safetyKinds are the classifier's patterns, each with the literals one of
// which every match of it contains (lower-case ASCII, matched in any case,
// where the pattern is case-insensitive: none of its letters folds to a
// non-ASCII rune). A text holding none of them is clean without the regexp.
var safetyKinds = []struct {
	kind, pattern string
	literals      []string
	anyCase       bool
}{
	{"private_key", `-----BEGIN (?:RSA |EC |OPENSSH |DSA |ENCRYPTED )?PRIVATE KEY-----`, []string{"-----BEGIN "}, false},
	{"aws_access_key", `\bAKIA[0-9A-Z]{16}\b`, []string{"AKIA"}, false},
	{"openai_api_key", `\bsk-(?:proj-)?[A-Za-z0-9_-]{20,}`, []string{"sk-"}, false},
	{"github_token", `\bgh[pousr]_[A-Za-z0-9]{36}\b`, []string{"ghp_", "gho_", "ghu_", "ghs_", "ghr_"}, false},
	{"slack_token", `\bxox[baprs]-[A-Za-z0-9-]{10,}`, []string{"xox"}, false},
	{"prompt_injection", `(?i)ignore (?:all )?(?:previous|prior) instructions`, []string{"ignore "}, true},
}

// mayFlag reports whether s holds one of the kinds' literals: without one
// no pattern matches s. It reads s at the speed of strings.Index, which
// the regexp, trying six patterns at every byte, is far from.
func mayFlag(s string) bool {
	for _, k := range safetyKinds {
		for _, lit := range k.literals {
			if k.anyCase && containsAnyCase(s, lit) || !k.anyCase && strings.Contains(s, lit) {
				return true
			}
		}
	}
	return false
}

// containsAnyCase reports whether s contains lit (lower-case ASCII) with
// its letters in either case.
func containsAnyCase(s, lit string) bool {
	lower, upper := lit[0], lit[0]-('a'-'A')
	nextLower, nextUpper := -1, -1 // where each case of lit[0] next occurs at or after from; len(s) for nowhere
	for from := 0; from+len(lit) <= len(s); {
		if nextLower < from {
			nextLower = indexFrom(s, from, lower)
		}
		if nextUpper < from {
			nextUpper = indexFrom(s, from, upper)
		}
		i := min(nextLower, nextUpper)
		if i+len(lit) > len(s) {
			return false
		}
		if strings.EqualFold(s[i:i+len(lit)], lit) {
			return true
		}
		from = i + 1
	}
	return false
}

// indexFrom is the index of the first b in s at or after from, or len(s).
func indexFrom(s string, from int, b byte) int {
	if i := strings.IndexByte(s[from:], b); i >= 0 {
		return from + i
	}
	return len(s)
}

// NewSafety compiles the classifier.
func NewSafety() *Safety {
	pattern := ""
	for i, k := range safetyKinds {
		if i > 0 {
			pattern += "|"
		}
		pattern += "(" + k.pattern + ")"
	}
	return &Safety{re: regexp.MustCompile(pattern)}
}

// scanChunk is how much of a text one regexp pass reads; scanMargin is
// read on both sides of it so that a match across the cut (no pattern is
// longer) is found once, and \b sees the byte before the chunk.
const (
	scanChunk  = 64 << 10
	scanMargin = 256
)

// Scan classifies texts and returns the flags and the bytes read. A long
// text is read in chunks, each through the regexp only when it holds one
// of the patterns' literals (mayFlag), and the scan stops with ctx's
// error once ctx ends.
func (s *Safety) Scan(ctx context.Context, texts []string) (flags []SafetyFlag, bytes int, err error) {
	for i, t := range texts {
		bytes += len(t)
		for off := 0; off < len(t); off += scanChunk {
			if err := ctx.Err(); err != nil {
				return flags, bytes, err
			}
			from, to := max(off-scanMargin, 0), min(off+scanChunk+scanMargin, len(t))
			if !mayFlag(t[from:to]) {
				continue
			}
			for _, m := range s.re.FindAllStringSubmatchIndex(t[from:to], -1) {
				if start := from + m[0]; start < off || start >= off+scanChunk {
					continue // the neighbouring chunk's
				}
				for g := range safetyKinds {
					if m[2+2*g] >= 0 {
						flags = append(flags, SafetyFlag{Kind: safetyKinds[g].kind, Item: i})
						break
					}
				}
			}
		}
	}
	return flags, bytes, nil
}
