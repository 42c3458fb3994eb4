package testbin

import (
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

type build struct {
	once sync.Once
	path string
	err  error
}

var (
	mu     sync.Mutex
	builds = map[string]*build{}
	dir    string // holds every build of this process; Remove deletes it
)

// Path returns the executable of pkg (an import path, such as
// "agentloop/cmd/agentloop"), built on the first call and reused after.
// The executable is named as go build names it: the last element of pkg.
func Path(t testing.TB, pkg string) string {
	t.Helper()
	mu.Lock()
	b, ok := builds[pkg]
	if !ok {
		b = &build{}
		builds[pkg] = b
	}
	if dir == "" {
		d, err := os.MkdirTemp("", "agentloop-testbin-")
		if err != nil {
			mu.Unlock()
			t.Fatal(err)
		}
		dir = d
	}
	root := dir
	mu.Unlock()
	b.once.Do(func() {
		b.path = filepath.Join(root, strings.ReplaceAll(pkg, "/", "_"), path.Base(pkg))
		out, err := exec.Command("go", "build", "-o", b.path, pkg).CombinedOutput()
		if err != nil {
			b.err = fmt.Errorf("go build %s: %v\n%s", pkg, err, out)
		}
	})
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.path
}

// Remove deletes every build of this process; a TestMain calls it after
// m.Run.
func Remove() {
	mu.Lock()
	defer mu.Unlock()
	if dir != "" {
		os.RemoveAll(dir)
	}
}
