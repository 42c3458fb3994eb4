package api

import (
	"regexp"
	"strings"
	"testing"
)

// The page's copy of the stream_id rule, StreamIDPattern, accepts exactly
// what ValidStreamID accepts.
func TestStreamIDPatternIsValidStreamID(t *testing.T) {
	re := regexp.MustCompile(StreamIDPattern)
	ids := []string{"", "a", "lane-1", "A.b_c-9", "has space", "é", "a/b", "a\"b", "{", "\x00",
		strings.Repeat("x", MaxStreamIDLen), strings.Repeat("x", MaxStreamIDLen+1)}
	for c := 0; c < 128; c++ {
		ids = append(ids, string(rune(c)), "a"+string(rune(c)))
	}
	for _, id := range ids {
		if re.MatchString(id) != ValidStreamID(id) {
			t.Errorf("%q: the pattern says %v, ValidStreamID %v", id, re.MatchString(id), ValidStreamID(id))
		}
	}
}

func FuzzStreamIDPatternIsValidStreamID(f *testing.F) {
	re := regexp.MustCompile(StreamIDPattern)
	f.Add("lane-1")
	f.Add("a b")
	f.Fuzz(func(t *testing.T, id string) {
		if re.MatchString(id) != ValidStreamID(id) {
			t.Fatalf("%q: the pattern says %v, ValidStreamID %v", id, re.MatchString(id), ValidStreamID(id))
		}
	})
}
