package sqlite

import (
	"context"
	"errors"
	"testing"
	"time"

	"agentloop/store"
)

func TestLoginSessions(t *testing.T) {
	db, _ := openTest(t)
	ctx := context.Background()
	live := store.Session{ID: "live", CreatedAt: t0, ExpiresAt: t0.Add(time.Hour)}
	old := store.Session{ID: "old", CreatedAt: t0.Add(-2 * time.Hour), ExpiresAt: t0.Add(-time.Hour)}
	for _, s := range []store.Session{live, old} {
		if err := db.CreateSession(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.CreateSession(ctx, live); !errors.Is(err, store.ErrExists) {
		t.Errorf("same id twice: %v", err)
	}
	got, err := db.GetSession(ctx, "live")
	if err != nil || !got.ExpiresAt.Equal(live.ExpiresAt) || !got.CreatedAt.Equal(live.CreatedAt) {
		t.Fatalf("get: %+v %v", got, err)
	}
	if n, err := db.DeleteExpiredSessions(ctx, t0); err != nil || n != 1 {
		t.Fatalf("sweep: %d %v", n, err)
	}
	if _, err := db.GetSession(ctx, "old"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("expired session after the sweep: %v", err)
	}
	if err := db.DeleteSession(ctx, "live"); err != nil {
		t.Fatal(err)
	}
	if err := db.DeleteSession(ctx, "live"); err != nil {
		t.Errorf("deleting twice: %v", err)
	}
	if _, err := db.GetSession(ctx, "live"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("deleted session: %v", err)
	}
}
