package core

import (
	"context"
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
