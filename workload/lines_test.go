package workload

import (
	"strconv"
	"strings"
	"testing"
)

// TestLinesSkipBlankAndNameTheLine: blank lines are skipped but counted,
// and a line past the limit is refused with its number.
func TestLinesSkipBlankAndNameTheLine(t *testing.T) {
	in := newLines(strings.NewReader("a\n\n  \nb\n"+strings.Repeat("x", 100)+"\nc\n"), 1<<20, 64)
	var got []string
	for in.Scan() {
		got = append(got, string(in.Bytes())+"@"+strconv.Itoa(in.Line()))
	}
	if strings.Join(got, " ") != "a@1 b@4" {
		t.Errorf("lines %q, want a@1 b@4", got)
	}
	err := in.Err()
	if err == nil || !strings.Contains(err.Error(), "line 5: longer than 64 bytes") || !strings.HasPrefix(err.Error(), "workload: ") {
		t.Errorf("err %v, want line 5 too long", err)
	}
	if _, _, err := readCast(strings.NewReader("\n{\"version\":3}\n")); err == nil || !strings.Contains(err.Error(), "line 2: asciinema format version 3") {
		t.Errorf("a header after a blank line: %v", err)
	}
}
