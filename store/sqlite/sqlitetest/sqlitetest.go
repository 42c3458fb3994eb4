package sqlitetest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"agentloop/store/sqlite"
)

// migrated is the file of a database sqlite.Open created and migrated,
// once per test binary, after its close folded the write-ahead log in.
var migrated = sync.OnceValues(func() ([]byte, error) {
	dir, err := os.MkdirTemp("", "agentloop-sqlitetest-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "agentloop.db")
	db, err := sqlite.Open(context.Background(), path, nil)
	if err != nil {
		return nil, err
	}
	if err := db.Close(); err != nil {
		return nil, err
	}
	if fi, err := os.Stat(path + "-wal"); err == nil && fi.Size() > 0 {
		return nil, fmt.Errorf("%s-wal holds %d bytes after the close", path, fi.Size())
	}
	return os.ReadFile(path)
})

// Path returns the path of a new file in t.TempDir() that holds an empty,
// migrated database.
func Path(t testing.TB) string {
	t.Helper()
	b, err := migrated()
	if err != nil {
		t.Fatalf("sqlitetest: migrate the database every test copies: %v", err)
	}
	path := filepath.Join(t.TempDir(), "agentloop.db")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}
