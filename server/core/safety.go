package core

import (
	"context"
	"regexp"
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

var safetyKinds = []struct{ kind, pattern string }{
	{"private_key", `-----BEGIN (?:RSA |EC |OPENSSH |DSA |ENCRYPTED )?PRIVATE KEY-----`},
	{"aws_access_key", `\bAKIA[0-9A-Z]{16}\b`},
	{"openai_api_key", `\bsk-(?:proj-)?[A-Za-z0-9_-]{20,}`},
	{"github_token", `\bgh[pousr]_[A-Za-z0-9]{36}\b`},
	{"slack_token", `\bxox[baprs]-[A-Za-z0-9-]{10,}`},
	{"prompt_injection", `(?i)ignore (?:all )?(?:previous|prior) instructions`},
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
// text is read in chunks, and the scan stops with ctx's error once ctx
// ends.
func (s *Safety) Scan(ctx context.Context, texts []string) (flags []SafetyFlag, bytes int, err error) {
	for i, t := range texts {
		bytes += len(t)
		for off := 0; off < len(t); off += scanChunk {
			if err := ctx.Err(); err != nil {
				return flags, bytes, err
			}
			from, to := max(off-scanMargin, 0), min(off+scanChunk+scanMargin, len(t))
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
