package app_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"agentloop/app"
	"agentloop/app/apptest"
	"agentloop/internal/wait"
	"agentloop/store"
	"agentloop/store/sqlite"
)

func TestRetentionSweepsOldResponsesAtStart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agentloop.db")
	db, err := sqlite.Open(context.Background(), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-30 * 24 * time.Hour).Unix()
	for _, r := range []*store.Response{
		{ID: "resp_old", CreatedAt: old, Model: "spark", Snapshot: []byte(`{}`)},
		{ID: "resp_new", CreatedAt: time.Now().Unix(), Model: "spark", Snapshot: []byte(`{}`)},
	} {
		if err := db.SaveResponse(context.Background(), r, store.LedgerRow{Model: "spark", Stored: true}); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()

	for _, tc := range []struct {
		retention time.Duration
		oldKept   bool
	}{{0, true}, {7 * 24 * time.Hour, false}} {
		a := apptest.Start(t, apptest.DB(path), func(c *app.Config) { c.Retention = tc.retention })
		ctx := context.Background()
		if tc.oldKept {
			// --retention 0 starts no sweep at all: nothing to wait for.
			if _, err := a.DB.GetResponse(ctx, "resp_old"); err != nil {
				t.Fatalf("--retention 0 must keep everything: %v", err)
			}
		} else {
			wait.UntilErr(t, "the sweep to delete the response older than --retention", func() error {
				if _, err := a.DB.GetResponse(ctx, "resp_old"); !errors.Is(err, store.ErrNotFound) {
					return fmt.Errorf("still there: %v", err)
				}
				return nil
			})
		}
		if _, err := a.DB.GetResponse(ctx, "resp_new"); err != nil {
			t.Fatalf("a response newer than --retention was swept: %v", err)
		}
		if err := a.Shutdown(ctx); err != nil {
			t.Fatal(err)
		}
	}
}
