package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"agentloop/store"
	"agentloop/store/storetest"
)

// openTest opens a fresh database file in t.TempDir, closed at cleanup.
func openTest(t testing.TB, tune ...func(*options)) (*DB, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "agentloop.db")
	return openAt(t, path, tune...), path
}

func openAt(t testing.TB, path string, tune ...func(*options)) *DB {
	t.Helper()
	o := defaultOptions()
	o.ledger.Capacity = 1024
	for _, f := range tune {
		f(&o)
	}
	db, err := open(context.Background(), path, storetest.Log(t), o)
	return storetest.Opened(t, db, err)
}

func countRows(t testing.TB, db *DB, table string) int {
	t.Helper()
	var n int
	if err := db.r.QueryRow(`SELECT COUNT(*) FROM ` + table).Scan(&n); err != nil {
		t.Fatalf("count %s: %v", table, err)
	}
	return n
}

// lockWriter opens an independent connection to path and holds the write
// lock until the returned function is called.
func lockWriter(t testing.TB, path string) (release func()) {
	t.Helper()
	other, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(0)")
	if err != nil {
		t.Fatal(err)
	}
	conn, err := other.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(context.Background(), "BEGIN IMMEDIATE"); err != nil {
		t.Fatalf("take the write lock: %v", err)
	}
	released := false
	release = func() {
		if released {
			return
		}
		released = true
		if _, err := conn.ExecContext(context.Background(), "ROLLBACK"); err != nil {
			t.Errorf("release the write lock: %v", err)
		}
		conn.Close()
		other.Close()
	}
	t.Cleanup(release)
	return release
}

func TestOpenCreatesFileAndMigrationsAreIdempotent(t *testing.T) {
	ms, err := steps()
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) == 0 {
		t.Fatal("no embedded migrations")
	}
	// A directory that does not exist yet: the first run creates it.
	path := filepath.Join(t.TempDir(), "nested", "dir", "agentloop.db")
	for n := 1; n <= 3; n++ {
		db, err := openUnmanaged(t, path)
		if err != nil {
			t.Fatalf("open #%d: %v", n, err)
		}
		if got := countRows(t, db, "schema_migrations"); got != len(ms) {
			t.Errorf("open #%d: %d schema_migrations rows, want %d", n, got, len(ms))
		}
		// The schema is usable after every open.
		if got := countRows(t, db, "responses"); got != n-1 {
			t.Errorf("open #%d: %d responses, want %d", n, got, n-1)
		}
		r := &store.Response{ID: fmt.Sprintf("resp_%d", n), Snapshot: []byte(`{}`)}
		if err := db.SaveResponse(context.Background(), r, store.LedgerRow{}); err != nil {
			t.Fatal(err)
		}
		if err := db.IntegrityCheck(context.Background()); err != nil {
			t.Error(err)
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat(path); err != nil {
		t.Errorf("database file: %v", err)
	}
}

// openUnmanaged opens path without a cleanup: the caller closes it.
func openUnmanaged(t testing.TB, path string) (*DB, error) {
	return open(context.Background(), path, storetest.Log(t), defaultOptions())
}

func TestOpenRefusesNewerSchema(t *testing.T) {
	db, path := openTest(t)
	if _, err := db.w.Exec(`INSERT INTO schema_migrations (version, name, applied_at) VALUES (9999, 'future.sql', 0)`); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db2, err := openUnmanaged(t, path)
	storetest.RefusesNewerSchema(t, db2, err)
}

func TestPragmasOnBothPools(t *testing.T) {
	db, _ := openTest(t, func(o *options) { o.busyTimeout = 1234 * time.Millisecond })
	ctx := context.Background()
	pools := []struct {
		name      string
		pool      *sql.DB
		conns     int
		queryOnly int
	}{
		{"writer", db.w, 1, 0},
		{"reader", db.r, 4, 1},
	}
	for _, p := range pools {
		t.Run(p.name, func(t *testing.T) {
			if got := p.pool.Stats().MaxOpenConnections; got != p.conns {
				t.Errorf("max open connections %d, want %d", got, p.conns)
			}
			// Hold every connection of the pool at once, so each is checked.
			var conns []*sql.Conn
			for range p.conns {
				c, err := p.pool.Conn(ctx)
				if err != nil {
					t.Fatal(err)
				}
				conns = append(conns, c)
			}
			defer func() {
				for _, c := range conns {
					c.Close()
				}
			}()
			for i, c := range conns {
				for _, want := range []struct {
					pragma string
					value  string
				}{
					{"journal_mode", "wal"},
					{"foreign_keys", "1"},
					{"busy_timeout", "1234"},
					{"synchronous", "1"}, // NORMAL
					{"query_only", fmt.Sprint(p.queryOnly)},
				} {
					var got string
					if err := c.QueryRowContext(ctx, "PRAGMA "+want.pragma).Scan(&got); err != nil {
						t.Fatalf("conn %d: PRAGMA %s: %v", i, want.pragma, err)
					}
					if got != want.value {
						t.Errorf("conn %d: PRAGMA %s = %q, want %q", i, want.pragma, got, want.value)
					}
				}
			}
		})
	}
}

// The writer must BEGIN IMMEDIATE: it takes the write lock at BEGIN, so a
// busy database fails there and not at a lock upgrade mid-transaction.
func TestWriterBeginsImmediate(t *testing.T) {
	db, path := openTest(t)
	tx, err := db.w.Begin()
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	other, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(0)")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	_, err = other.Exec("BEGIN IMMEDIATE; ROLLBACK;")
	if !isBusy(err) {
		t.Fatalf("a second writer during our empty transaction got %v, want SQLITE_BUSY", err)
	}
}

func TestErrorClassifiers(t *testing.T) {
	cases := []struct {
		name       string
		err        error
		busy, full bool
	}{
		{"nil", nil, false, false},
		{"plain", errors.New("database is locked"), false, false},
		{"not found", store.ErrNotFound, false, false},
		{"already busy", fmt.Errorf("store: save: %w", store.ErrBusy), true, false},
		{"already full", fmt.Errorf("store: save: %w", store.ErrFull), false, true},
	}
	for _, c := range cases {
		if got := isBusy(c.err) || isFull(c.err); got {
			t.Errorf("%s: not a driver error, but isBusy or isFull says so", c.name)
		}
		got := classify(c.err)
		if got != c.err {
			t.Errorf("%s: classify changed %v into %v", c.name, c.err, got)
		}
		if b := errors.Is(got, store.ErrBusy); b != c.busy {
			t.Errorf("%s: store.ErrBusy = %v, want %v", c.name, b, c.busy)
		}
		if f := errors.Is(got, store.ErrFull); f != c.full {
			t.Errorf("%s: store.ErrFull = %v, want %v", c.name, f, c.full)
		}
	}
}

func TestDataSourceNameEscapesPath(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a dir?with#odd%chars")
	db := openAt(t, filepath.Join(dir, "x.db"))
	if err := db.SaveResponse(context.Background(), &store.Response{ID: "resp_1", Snapshot: []byte(`{}`)}, store.LedgerRow{}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "x.db")); err != nil {
		t.Errorf("database not at the path given: %v", err)
	}
}

func TestIntegrityCheckFindsBadReferenceCounts(t *testing.T) {
	cases := []storetest.Corruption{
		{Name: "count too high", SQL: `UPDATE item_refs SET refs = refs + 1 WHERE key = (SELECT MIN(key) FROM item_refs)`, Want: "listed by 1 responses, counted 2"},
		{Name: "count missing", SQL: `DELETE FROM item_refs WHERE key = (SELECT MIN(key) FROM item_refs)`, Want: "counted -1"},
		{Name: "item missing", SQL: `PRAGMA foreign_keys = OFF; DELETE FROM items WHERE key = (SELECT MIN(key) FROM items); PRAGMA foreign_keys = ON;`, Want: "missing items"},
	}
	storetest.IntegrityCatches(t, cases, func(t testing.TB) (store.Backend, func(string) error) {
		db, _ := openTest(t)
		return db, func(q string) error {
			_, err := db.w.Exec(q)
			return err
		}
	})
}
