package postgres

import (
	"context"
	"testing"

	"agentloop/store"
	"agentloop/store/postgres/pgtest"
	"agentloop/store/storetest"

	"github.com/jackc/pgx/v5"
)

// Every test's database starts migrated: a copy of one migrated once.
func TestMain(m *testing.M) {
	pgtest.Main(m, pgtest.Prepare(func(ctx context.Context, dsn string) error {
		db, err := Open(ctx, dsn, nil)
		if err != nil {
			return err
		}
		return db.Close()
	}))
}

// TestContract runs the store contract against PostgreSQL, each test in a
// database of its own in the throwaway cluster.
func TestContract(t *testing.T) {
	storetest.Run(t, storetest.Harness{
		Open: openContract,
		OpenUnreachable: func(t testing.TB) error {
			db, err := open(context.Background(), pgtest.Unreachable(t), storetest.Log(t), defaultOptions())
			if err == nil {
				db.Close()
			}
			return err
		},
	})
}

func openContract(t testing.TB, so storetest.Options) *storetest.Database {
	so = so.WithDefaults()
	o := defaultOptions()
	if so.LockTimeout > 0 {
		o.lockTimeout = so.LockTimeout
	}
	o.ledger = so.Ledger
	dsn := pgtest.Database(t)
	db := openAt(t, dsn, o)
	return &storetest.Database{
		Backend: db,
		Reopen:  func(t testing.TB) store.Backend { return openAt(t, dsn, o) },
		Count:   func(t testing.TB, table string) int { return countRows(t, db, table) },
		Lock:    func(t testing.TB) func() { return lockTables(t, dsn) },
		Fill:    func(t testing.TB) { fill(t, db) },
		Cut:     func(t testing.TB) { pgtest.Cut(t, dsn) },
	}
}

// openAt opens the database at dsn, closed at cleanup.
func openAt(t testing.TB, dsn string, o options) *DB {
	t.Helper()
	db, err := open(context.Background(), dsn, storetest.Log(t), o)
	return storetest.Opened(t, db, err)
}

func countRows(t testing.TB, db *DB, table string) int {
	t.Helper()
	var n int
	if err := db.pool.QueryRow(context.Background(), `SELECT COUNT(*) FROM `+pgx.Identifier{table}.Sanitize()).Scan(&n); err != nil {
		t.Fatalf("count %s: %v", table, err)
	}
	return n
}

// writtenTables are every table a call of the contract writes.
const writtenTables = `responses, items, item_refs, usage_ledger, runs, lanes, turns, spans, login_sessions`

// lockTables holds, from a connection of its own, a lock on every table
// that lets others read but not write, until release: what another writer
// holding its locks too long looks like.
func lockTables(t testing.TB, dsn string) (release func()) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `LOCK TABLE `+writtenTables+` IN EXCLUSIVE MODE`); err != nil {
		t.Fatalf("take the write locks: %v", err)
	}
	released := false
	release = func() {
		if released {
			return
		}
		released = true
		if err := tx.Rollback(ctx); err != nil {
			t.Errorf("release the write locks: %v", err)
		}
		conn.Close(ctx)
	}
	t.Cleanup(release)
	return release
}

// fill makes every insert into responses fail as a full disk does, with
// SQLSTATE 53100 (disk_full): PostgreSQL cannot be made to fill a disk
// here, so a trigger raises what it would.
func fill(t testing.TB, db *DB) {
	t.Helper()
	_, err := db.pool.Exec(context.Background(), `
		CREATE FUNCTION disk_full() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN
			RAISE EXCEPTION 'could not extend file: No space left on device' USING ERRCODE = '53100';
		END $$;
		CREATE TRIGGER disk_full BEFORE INSERT ON responses FOR EACH ROW EXECUTE FUNCTION disk_full();`)
	if err != nil {
		t.Fatal(err)
	}
}

// BenchmarkSaveResponse measures a stored save on the chained-HTTP path
// (storetest.BenchmarkSaveResponse), over the throwaway cluster's socket.
func BenchmarkSaveResponse(b *testing.B) {
	storetest.BenchmarkSaveResponse(b, storetest.Harness{Open: openContract})
}

func BenchmarkGetResponse(b *testing.B) {
	storetest.BenchmarkGetResponse(b, storetest.Harness{Open: openContract})
}
