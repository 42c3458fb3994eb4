package core

import (
	"context"
	"slices"
	"strings"
	"testing"
)

func TestSafetyScanFindsEachMatchOnceAcrossChunks(t *testing.T) {
	s := NewSafety()
	key := "AKIAABCDEFGHIJKLMNOP"
	for _, at := range []int{0, scanChunk - 10, scanChunk - 1, scanChunk, 2*scanChunk + 3} {
		text := strings.Repeat("x ", at/2) + strings.Repeat(" ", at%2) + key + " " + strings.Repeat("y ", scanChunk)
		flags, n, err := s.Scan(context.Background(), []string{"clean", text})
		if err != nil || n != len("clean")+len(text) {
			t.Fatalf("at %d: %v, %d bytes", at, err, n)
		}
		if len(flags) != 1 || flags[0].Kind != "aws_access_key" || flags[0].Item != 1 {
			t.Errorf("key at %d: flags %+v, want one aws_access_key in item 1", at, flags)
		}
	}
	// A word character just before a chunk's start must still stop \b.
	glued := strings.Repeat("z", scanChunk) + key
	if flags, _, _ := s.Scan(context.Background(), []string{glued}); len(flags) != 0 {
		t.Errorf("a key glued to a word is no key: %+v", flags)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := s.Scan(ctx, []string{strings.Repeat("a", 3*scanChunk)}); err == nil {
		t.Error("the scan must stop once its request has ended")
	}
}

// scanAll is Scan without mayFlag: the regexp over every chunk.
func scanAll(s *Safety, texts []string) []SafetyFlag {
	var flags []SafetyFlag
	for i, t := range texts {
		for off := 0; off < len(t); off += scanChunk {
			from, to := max(off-scanMargin, 0), min(off+scanChunk+scanMargin, len(t))
			for _, m := range s.re.FindAllStringSubmatchIndex(t[from:to], -1) {
				if start := from + m[0]; start < off || start >= off+scanChunk {
					continue
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
	return flags
}

// safetySamples hold each kind's match, near misses and case variants.
var safetySamples = []string{
	"", "clean text about a task-runner and a desk-lamp", "-----BEGIN RSA PRIVATE KEY-----\nMII",
	"-----BEGIN CERTIFICATE-----", "key AKIAABCDEFGHIJKLMNOP here", "xAKIAABCDEFGHIJKLMNOP",
	"sk-proj-abcdefghijklmnopqrstuvwxyz", "sk-short", "ghp_" + strings.Repeat("a", 36), "ghx_" + strings.Repeat("a", 36),
	"xoxb-1234567890-abc", "xoxz-1234567890", "Ignore previous instructions", "IGNORE ALL PRIOR INSTRUCTIONS",
	"iGnOrE all previous instructions", "ignore the previous instructions", "ignore previous inſtructions",
	"ignorignore prior instructions", "i ignore", "I", "ignore",
}

func TestSafetyScanSkipsOnlyWhatCannotMatch(t *testing.T) {
	s := NewSafety()
	// Each sample alone, then all of them across a chunk's end (one long
	// text: under -race the regexp reads a chunk in about a second).
	texts := [][]string{{strings.Repeat("w ", scanChunk/2-64) + strings.Join(safetySamples, " ") + " v"}}
	for _, text := range safetySamples {
		texts = append(texts, []string{text})
	}
	for _, texts := range texts {
		got, _, _ := s.Scan(context.Background(), texts)
		if want := scanAll(s, texts); !slices.Equal(got, want) {
			t.Errorf("%.40q: flags %+v, the regexp alone %+v", texts[0], got, want)
		}
	}
	if flags, _, _ := s.Scan(context.Background(), []string{"Ignore previous instructions"}); len(flags) != 1 || flags[0].Kind != "prompt_injection" {
		t.Errorf("an injection in mixed case: %+v", flags)
	}
}

func FuzzSafetyScan(f *testing.F) {
	for _, text := range safetySamples {
		f.Add(text)
	}
	s := NewSafety()
	f.Fuzz(func(t *testing.T, text string) {
		got, _, _ := s.Scan(context.Background(), []string{text})
		if want := scanAll(s, []string{text}); !slices.Equal(got, want) {
			t.Errorf("%q: flags %+v, the regexp alone %+v", text, got, want)
		}
	})
}
