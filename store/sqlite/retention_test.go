package sqlite

import (
	"database/sql"
	"testing"
)

func TestNewDatabaseVacuumsIncrementally(t *testing.T) {
	db, path := openTest(t)
	var mode int
	if err := db.r.QueryRow(`PRAGMA auto_vacuum`).Scan(&mode); err != nil || mode != 2 {
		t.Fatalf("auto_vacuum %d (%v), want 2 (incremental)", mode, err)
	}
	db.Close()
	// Reopening keeps the mode without rebuilding.
	db = openAt(t, path)
	if err := db.r.QueryRow(`PRAGMA auto_vacuum`).Scan(&mode); err != nil || mode != 2 {
		t.Fatalf("after reopen auto_vacuum %d (%v)", mode, err)
	}
}

func TestOlderDatabaseIsConvertedToIncrementalVacuum(t *testing.T) {
	path := t.TempDir() + "/old.db"
	raw, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Exec(`CREATE TABLE leftover (x INTEGER)`); err != nil {
		t.Fatal(err)
	}
	var mode int
	raw.QueryRow(`PRAGMA auto_vacuum`).Scan(&mode)
	raw.Close()
	if mode != 0 {
		t.Fatalf("a plain file starts with auto_vacuum %d", mode)
	}
	db := openAt(t, path)
	if err := db.r.QueryRow(`PRAGMA auto_vacuum`).Scan(&mode); err != nil || mode != 2 {
		t.Fatalf("auto_vacuum %d (%v) after opening an older file, want 2", mode, err)
	}
}
