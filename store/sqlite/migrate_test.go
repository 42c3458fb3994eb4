package sqlite

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
)

// TestRebuildingRunsKeepsTheirLanesAndTurns opens a file at schema version
// 2 that holds a run with a lane and a turn: the step that rebuilds runs (to
// allow 'cancelled') must not cascade to them.
func TestRebuildingRunsKeepsTheirLanesAndTurns(t *testing.T) {
	path := filepath.Join(t.TempDir(), "v2.db")
	raw, err := sql.Open("sqlite", "file:"+path+"?_pragma=foreign_keys(1)")
	if err != nil {
		t.Fatal(err)
	}
	ms, err := steps()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Exec(`CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		if m.Version > 2 {
			break
		}
		if _, err := raw.Exec(m.SQL); err != nil {
			t.Fatal(m.Name, err)
		}
		raw.Exec(`INSERT INTO schema_migrations VALUES (?, ?, 0)`, m.Version, m.Name)
	}
	for _, q := range []string{
		`INSERT INTO runs (id, created_at, updated_at, scenario, profile, status) VALUES ('run_a', 1, 1, 's', 'p', 'passed')`,
		`INSERT INTO lanes (run_id, name, status) VALUES ('run_a', 'ws', 'passed')`,
		`INSERT INTO turns (run_id, lane, repeat, idx) VALUES ('run_a', 'ws', 0, 0)`,
	} {
		if _, err := raw.Exec(q); err != nil {
			t.Fatal(q, err)
		}
	}
	raw.Close()

	db := openAt(t, path)
	for _, table := range []string{"runs", "lanes", "turns"} {
		if n := countRows(t, db, table); n != 1 {
			t.Fatalf("%s: %d rows after the rebuild, want 1", table, n)
		}
	}
	if err := db.UpdateRun(context.Background(), "run_a", "cancelled", nil); err != nil {
		t.Fatalf("a run may now end cancelled: %v", err)
	}
	var fk int
	if err := db.w.QueryRow(`PRAGMA foreign_keys`).Scan(&fk); err != nil || fk != 1 {
		t.Fatalf("foreign keys are back on after migrating: %d %v", fk, err)
	}
	// Deleting the run still cascades through the rebuilt table.
	if err := db.DeleteRun(context.Background(), "run_a"); err != nil {
		t.Fatal(err)
	}
	if n := countRows(t, db, "lanes"); n != 0 {
		t.Fatalf("lanes of a deleted run: %d", n)
	}
}
