package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"path/filepath"
	"testing"
)

// TestRebuildingRunsKeepsTheirLanesAndTurns opens a file at schema version
// 2 that holds a run with a lane and a turn: the step that rebuilds runs (to
// allow 'cancelled') must not cascade to them.
func TestRebuildingRunsKeepsTheirLanesAndTurns(t *testing.T) {
	path, raw := fileAt(t, 2)
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

// TestRunsLoseTheirWorkloadCopies opens a file at schema version 7 whose
// runs hold their workload in their config (one also names its stored
// copy) and whose stored workload is indented: after migrating, each run
// names a stored workload, its config holds none, and workloads are
// compact.
func TestRunsLoseTheirWorkloadCopies(t *testing.T) {
	path, raw := fileAt(t, 7)
	const wl = `{"version":1,"source":"hand","turns":[{"input":[{"kind":"user_message","tokens":5}],"output_tokens":3}]}`
	for _, q := range []string{
		`INSERT INTO runs (id, created_at, updated_at, scenario, profile, status, config) VALUES
			('run_inline', 1, 1, 'workload', 'p', 'passed', CAST('{"scenario":"workload","workload":` + wl + `}' AS BLOB)),
			('run_named', 2, 2, 'workload', 'p', 'passed', CAST('{"scenario":"workload","workload":` + wl + `,"workload_id":"wl_named"}' AS BLOB)),
			('run_scenario', 3, 3, 'chat', 'p', 'passed', CAST('{"scenario":"chat"}' AS BLOB)),
			('run_garbled', 4, 4, 'chat', 'p', 'passed', CAST('not json' AS BLOB))`,
		`INSERT INTO workloads (id, created_at, source, turns, json) VALUES ('wl_named', 2, 'hand', 1, CAST('{
  "version": 1
}' AS BLOB))`,
	} {
		if _, err := raw.Exec(q); err != nil {
			t.Fatal(q, err)
		}
	}
	raw.Close()

	db := openAt(t, path)
	ctx := context.Background()
	want := map[string]string{"run_named": "wl_named", "run_scenario": "", "run_garbled": ""}
	for _, id := range []string{"run_inline", "run_named", "run_scenario", "run_garbled"} {
		r, _, err := db.GetRun(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(r.Config, []byte(`"workload":`)) {
			t.Errorf("%s still holds its workload: %s", id, r.Config)
		}
		if w, ok := want[id]; ok && r.WorkloadID != w {
			t.Errorf("%s names workload %q, want %q", id, r.WorkloadID, w)
		}
		if id != "run_inline" {
			continue
		}
		w, err := db.GetWorkload(ctx, r.WorkloadID)
		if err != nil || string(w.JSON) != wl || w.Turns != 1 || w.Source != "hand" || !bytes.Contains(r.Config, []byte(`"workload_id":"`+r.WorkloadID+`"`)) {
			t.Fatalf("the inline workload, stored as %q: %+v %v; config %s", r.WorkloadID, w, err, r.Config)
		}
	}
	if w, err := db.GetWorkload(ctx, "wl_named"); err != nil || string(w.JSON) != `{"version":1}` {
		t.Fatalf("the stored workload, compact: %q %v", w.JSON, err)
	}
}

// fileAt is a new database file migrated up to version, open without the
// store, so a test can put rows of that schema in before the store
// migrates the rest.
func fileAt(t *testing.T, version int) (string, *sql.DB) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "old.db")
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
		if m.Version > version {
			break
		}
		if _, err := raw.Exec(m.SQL); err != nil {
			t.Fatal(m.Name, err)
		}
		raw.Exec(`INSERT INTO schema_migrations VALUES (?, ?, 0)`, m.Version, m.Name)
	}
	return path, raw
}
