package testbin

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestPathBuildsOnceAndRuns: the first call builds an executable that
// runs, the second returns the same file without building again, a new
// process (here, the process's builds forgotten) finds it up to date and
// leaves it as it is, and a package that does not exist fails the test
// with go build's words.
func TestPathBuildsOnceAndRuns(t *testing.T) {
	p := Path(t, "agentloop/check/internal/refclient")
	fi, err := os.Stat(p)
	if err != nil || fi.Mode()&0o111 == 0 {
		t.Fatalf("%s: %v, not an executable", p, err)
	}
	if again := Path(t, "agentloop/check/internal/refclient"); again != p {
		t.Errorf("second call %s, want %s", again, p)
	}
	if fi2, _ := os.Stat(p); !fi2.ModTime().Equal(fi.ModTime()) {
		t.Error("the second call built again")
	}
	out, _ := exec.Command(p, "-h").CombinedOutput()
	if !strings.Contains(string(out), "-mistakes") {
		t.Errorf("the built client's usage does not name -mistakes:\n%s", out)
	}

	// Another process: go build finds the executable up to date and does
	// not replace it (a new link would be a new file).
	mu.Lock()
	builds = map[string]*build{}
	mu.Unlock()
	if again := Path(t, "agentloop/check/internal/refclient"); again != p {
		t.Errorf("another process's call %s, want %s", again, p)
	}
	if fi3, err := os.Stat(p); err != nil || !os.SameFile(fi, fi3) {
		t.Errorf("another process linked the executable again (%v)", err)
	}

	ft := &fakeT{TB: t}
	func() {
		defer func() { recover() }()
		Path(ft, "agentloop/internal/testbin/nonexistent")
	}()
	if !strings.Contains(ft.fatal, "go build agentloop/internal/testbin/nonexistent") {
		t.Errorf("a missing package: %q", ft.fatal)
	}
}

// fakeT records Fatal instead of ending the test.
type fakeT struct {
	testing.TB
	fatal string
}

func (f *fakeT) Helper() {}
func (f *fakeT) Fatal(args ...any) {
	for _, a := range args {
		if e, ok := a.(error); ok {
			f.fatal += e.Error()
		}
	}
	panic("fatal")
}
