package storetest

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"

	"agentloop/store"
)

// Log sends a backend's log to t.Log, at debug level.
func Log(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// Opened fails the test when a backend's open did, and closes db at
// cleanup otherwise.
func Opened[DB io.Closer](t testing.TB, db DB, err error) DB {
	t.Helper()
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() {
		if err := db.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return db
}

// RefusesNewerSchema checks the open of a database whose schema a newer
// binary wrote: it must fail, saying so.
func RefusesNewerSchema(t testing.TB, db io.Closer, err error) {
	t.Helper()
	if err == nil {
		db.Close()
		t.Fatal("open of a database from a newer binary succeeded")
	}
	if !strings.Contains(err.Error(), "newer") {
		t.Errorf("error %q does not say the schema is newer", err)
	}
}

// Corruption breaks a database one way, with SQL run past the store;
// IntegrityCheck must then fail naming Want.
type Corruption struct{ Name, SQL, Want string }

// IntegrityCatches runs each corruption on a fresh database holding one
// saved response: IntegrityCheck passes before it and fails after. open
// returns the database and a way to run SQL on it.
func IntegrityCatches(t *testing.T, cases []Corruption, open func(t testing.TB) (db store.Backend, exec func(query string) error)) {
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			db, exec := open(t)
			ctx := context.Background()
			r := &store.Response{ID: "resp_1", Snapshot: []byte(`{}`), Context: []store.Item{Message("msg_1", "user", "hi")}}
			if err := db.SaveResponse(ctx, r, store.LedgerRow{}); err != nil {
				t.Fatal(err)
			}
			if err := db.IntegrityCheck(ctx); err != nil {
				t.Fatalf("before corruption: %v", err)
			}
			if err := exec(c.SQL); err != nil {
				t.Fatal(err)
			}
			err := db.IntegrityCheck(ctx)
			if err == nil || !strings.Contains(err.Error(), c.Want) {
				t.Errorf("got %v, want an error mentioning %q", err, c.Want)
			}
		})
	}
}
