package sqlite

import (
	"fmt"
	"path/filepath"
	"testing"

	"agentloop/store"
	"agentloop/store/storetest"
)

// TestContract runs the store contract against SQLite, each test in a file
// of its own.
func TestContract(t *testing.T) {
	storetest.Run(t, storetest.Harness{Open: openContract})
}

func openContract(t testing.TB, so storetest.Options) *storetest.Database {
	so = so.WithDefaults()
	o := defaultOptions()
	if so.LockTimeout > 0 {
		o.busyTimeout = so.LockTimeout
	}
	o.ledger = so.Ledger
	path := filepath.Join(t.TempDir(), "agentloop.db")
	db := openAt(t, path, func(x *options) { *x = o })
	return &storetest.Database{
		Backend: db,
		Reopen:  func(t testing.TB) store.Backend { return openAt(t, path, func(x *options) { *x = o }) },
		Count:   func(t testing.TB, table string) int { return countRows(t, db, table) },
		Lock:    func(t testing.TB) func() { return lockWriter(t, path) },
		// max_page_count reached stands in for a full disk; the writer
		// pool has one connection, so the limit sticks to it.
		Fill: func(t testing.TB) {
			var pages int
			if err := db.w.QueryRow("PRAGMA page_count").Scan(&pages); err != nil {
				t.Fatal(err)
			}
			if _, err := db.w.Exec(fmt.Sprintf("PRAGMA max_page_count = %d", pages+2)); err != nil {
				t.Fatal(err)
			}
		},
	}
}
