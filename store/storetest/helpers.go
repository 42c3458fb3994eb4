package storetest

import (
	"io"
	"log/slog"
	"strings"
	"testing"
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
