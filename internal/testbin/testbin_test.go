package testbin

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestPathBuildsOnceAndRuns: the first call builds an executable that
// runs, the second returns the same file without building again, and a
// package that does not exist fails the test with go build's words.
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
	ft := &fakeT{TB: t}
	func() {
		defer func() { recover() }()
		Path(ft, "agentloop/internal/testbin/nonexistent")
	}()
	if !strings.Contains(ft.fatal, "go build agentloop/internal/testbin/nonexistent") {
		t.Errorf("a missing package: %q", ft.fatal)
	}
}

func TestMain(m *testing.M) {
	code := m.Run()
	Remove()
	os.Exit(code)
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
