package sqlitetest_test

import (
	"bytes"
	"context"
	"database/sql"
	"log/slog"
	"path/filepath"
	"testing"

	"agentloop/store/sqlite"
	"agentloop/store/sqlite/sqlitetest"
)

// Each test's copy is a database of its own, at the newest schema: opening
// it applies no migration.
func TestPathIsAMigratedDatabaseOfItsOwn(t *testing.T) {
	steps, err := filepath.Glob("../migrations/*.sql")
	if err != nil || len(steps) == 0 {
		t.Fatalf("no migrations found: %v", err)
	}
	a, b := sqlitetest.Path(t), sqlitetest.Path(t)
	if a == b {
		t.Fatalf("two tests share %s", a)
	}
	var log bytes.Buffer
	db, err := sqlite.Open(context.Background(), a, slog.New(slog.NewTextHandler(&log, nil)))
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	if log.Len() > 0 {
		t.Fatalf("opening the copy logged:\n%s", &log)
	}
	for _, path := range []string{a, b} {
		raw, err := sql.Open("sqlite", "file:"+path)
		if err != nil {
			t.Fatal(err)
		}
		var n int
		if err := raw.QueryRow(`SELECT COUNT(*) FROM schema_migrations`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		raw.Close()
		if n != len(steps) {
			t.Fatalf("%s has %d migrations applied, want %d", path, n, len(steps))
		}
	}
}
