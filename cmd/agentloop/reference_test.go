package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReferenceRunsOnlyTheClassroomRace: --reference races presenter mode's
// classroom race, so a flag that shapes a race is refused, named, before
// anything runs or is written.
func TestReferenceRunsOnlyTheClassroomRace(t *testing.T) {
	out := filepath.Join(t.TempDir(), "race-reference.json")
	err := run(context.Background(), []string{"race", "--reference", out, "--rtt", "5ms", "--lanes", "ws"}, func(string) string { return "" }, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "--rtt") || !strings.Contains(err.Error(), "--lanes") {
		t.Fatalf("--reference with --rtt and --lanes: %v", err)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("a refused --reference wrote %s (%v)", out, err)
	}
}
