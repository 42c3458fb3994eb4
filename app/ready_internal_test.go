package app

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"agentloop/internal/wait"
	"agentloop/store"
)

// readyApp is an app that is not listening, and its readiness probe.
func readyApp(t *testing.T) (*App, func() (int, string)) {
	t.Helper()
	cfg := Defaults()
	cfg.Addr, cfg.DB = "127.0.0.1:0", filepath.Join(t.TempDir(), "ready.db")
	a, err := New(context.Background(), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Shutdown(context.Background()) })
	return a, func() (int, string) {
		rec := httptest.NewRecorder()
		a.Echo.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "http://127.0.0.1/readyz", nil))
		return rec.Code, strings.TrimSpace(rec.Body.String())
	}
}

func TestReadyUntilDrainingOrTheStoreIsGone(t *testing.T) {
	a, probe := readyApp(t)
	if code, body := probe(); code != 200 || body != "ready" {
		t.Fatalf("a new replica: %d %q", code, body)
	}
	a.draining.Store(true)
	if code, body := probe(); code != 503 || body != "draining" {
		t.Fatalf("a draining replica: %d %q", code, body)
	}
	a.draining.Store(false)
	a.DB.Close()
	if code, body := probe(); code != 503 || body != "store unavailable" {
		t.Fatalf("a replica without its store: %d %q", code, body)
	}
}

func TestDefaultReplicaIDIsTheHostAndPort(t *testing.T) {
	id := defaultReplicaID("127.0.0.1:8080")
	if !strings.HasSuffix(id, ":8080") || len(id) <= len(":8080") {
		t.Errorf("replica id %q, want host:8080", id)
	}
}

// failingWrites is a store whose login writes fail as a full disk's do.
type failingWrites struct {
	LoginStore
	failing atomic.Bool
}

func (f *failingWrites) CreateSession(ctx context.Context, s store.Session) error {
	if f.failing.Load() {
		return store.ErrFull
	}
	return f.LoginStore.CreateSession(ctx, s)
}

// /readyz says not ready while the store answers but cannot write, and
// ready again once it can.
func TestNotReadyWhileTheStoreCannotWrite(t *testing.T) {
	a, probe := readyApp(t)
	db := &failingWrites{LoginStore: a.DB}
	db.failing.Store(true)
	a.probe = newWriteProbe(db, a.cfg.ReplicaID)
	if code, body := probe(); code != 503 || body != "store cannot write" {
		t.Fatalf("a store that cannot write: %d %q", code, body)
	}
	db.failing.Store(false)
	wait.Until(t, "ready once the store writes again", func() bool { code, _ := probe(); return code == 200 })
}
