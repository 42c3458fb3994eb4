package storetest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"agentloop/store"
)

// A database locked by another writer fails writes with store.ErrBusy,
// saying which call failed, while reads go on; once the lock is released
// the same write succeeds.
func testLockedDatabase(t *testing.T, h Harness) {
	db := h.Open(t, Options{LockTimeout: 50 * time.Millisecond})
	ctx := context.Background()
	release := db.Lock(t)

	cases := []struct {
		name string
		op   string
		call func() error
	}{
		{"save response", "store: save response resp_busy:", func() error {
			return db.SaveResponse(ctx, &store.Response{ID: "resp_busy", Snapshot: []byte(`{}`)}, store.LedgerRow{})
		}},
		{"create run", "store: create run run_busy:", func() error {
			return db.CreateRun(ctx, &store.Run{ID: "run_busy", Scenario: "s", Profile: "p"})
		}},
		{"save turn", "store: save turn run_busy/ws/0/0:", func() error {
			return db.SaveTurn(ctx, &store.Turn{RunID: "run_busy", Lane: "ws"}, nil)
		}},
		{"create session", "store: create session:", func() error {
			return db.CreateSession(ctx, store.Session{ID: "s_busy", CreatedAt: time.Now(), ExpiresAt: time.Now().Add(time.Hour)})
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.call()
			if !errors.Is(err, store.ErrBusy) {
				t.Fatalf("got %v, want store.ErrBusy", err)
			}
			if errors.Is(err, store.ErrFull) || errors.Is(err, store.ErrUnavailable) {
				t.Errorf("%v is also store.ErrFull or store.ErrUnavailable", err)
			}
			if !strings.HasPrefix(err.Error(), c.op) {
				t.Errorf("error %q should start with %q", err, c.op)
			}
		})
	}
	// Reads are not blocked by a writer.
	if _, _, err := db.ListRuns(ctx, store.RunFilter{}); err != nil {
		t.Errorf("read while locked: %v", err)
	}
	release()
	if err := db.SaveResponse(ctx, &store.Response{ID: "resp_busy", Snapshot: []byte(`{}`)}, store.LedgerRow{}); err != nil {
		t.Fatalf("save after the lock was released: %v", err)
	}
	if err := db.IntegrityCheck(ctx); err != nil {
		t.Error(err)
	}
}

// A full database fails the save with store.ErrFull and leaves nothing of
// it behind: no response, no new item, no reference, no ledger row, no key
// written back.
func testFullDatabase(t *testing.T, h Harness) {
	db := h.Open(t, Options{})
	ctx := context.Background()
	parent := &store.Response{ID: "resp_parent", Snapshot: []byte(`{}`), Output: []store.Item{Message("msg_a", "assistant", "hi")}}
	if err := db.SaveResponse(ctx, parent, store.LedgerRow{}); err != nil {
		t.Fatal(err)
	}
	db.Fill(t)
	before := map[string]int{}
	tables := []string{"responses", "items", "item_refs", "usage_ledger"}
	for _, tb := range tables {
		before[tb] = db.Count(t, tb)
	}
	big := make([]store.Item, 20)
	for i := range big {
		big[i] = Message(fmt.Sprintf("msg_%d", i), "user", strings.Repeat("x", 4096))
	}
	child := &store.Response{ID: "resp_full", Snapshot: []byte(`{}`), PreviousResponseID: parent.ID,
		Context: append(append([]store.Item{}, parent.Output...), big...), InputStart: 1}
	err := db.SaveResponse(ctx, child, store.LedgerRow{Model: "m"})
	if !errors.Is(err, store.ErrFull) || errors.Is(err, store.ErrBusy) || errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("got %v, want store.ErrFull alone", err)
	}
	if !strings.HasPrefix(err.Error(), "store: save response resp_full:") {
		t.Errorf("error %q does not say which save failed", err)
	}
	if _, err := db.GetResponse(ctx, "resp_full"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("failed response is visible: %v", err)
	}
	for _, tb := range tables {
		if got := db.Count(t, tb); got != before[tb] {
			t.Errorf("%s: %d rows after a failed save, want %d", tb, got, before[tb])
		}
	}
	for i, it := range child.Context[1:] {
		if it.Key != 0 {
			t.Errorf("new item %d got key %d from a failed save", i, it.Key)
		}
	}
	if err := db.IntegrityCheck(ctx); err != nil {
		t.Error(err)
	}
}

// A database that cannot be reached fails with store.ErrUnavailable, never
// taken for a locked or full one: at open, and for every call once an open
// database is cut off.
func testUnreachableDatabase(t *testing.T, h Harness) {
	if h.OpenUnreachable == nil {
		t.Skip("the backend is embedded: there is no server to lose")
	}
	unavailableOnly := func(t *testing.T, what string, err error) {
		t.Helper()
		if !errors.Is(err, store.ErrUnavailable) || errors.Is(err, store.ErrBusy) || errors.Is(err, store.ErrFull) {
			t.Errorf("%s: got %v, want store.ErrUnavailable alone", what, err)
		}
	}
	t.Run("at open", func(t *testing.T) {
		unavailableOnly(t, "open", h.OpenUnreachable(t))
	})
	t.Run("once open", func(t *testing.T) {
		db := h.Open(t, Options{})
		ctx := context.Background()
		chain := saveChain(t, db)
		db.Cut(t)
		cases := []struct {
			name string
			call func() error
		}{
			{"save response", func() error {
				return db.SaveResponse(ctx, Child("resp_4", chain[2], []store.Item{Message("m", "user", "x")}, nil), store.LedgerRow{})
			}},
			{"get response", func() error { _, err := db.GetResponse(ctx, "resp_1"); return err }},
			{"input items", func() error { _, _, err := db.InputItems(ctx, "resp_1", "", 10, "asc"); return err }},
			{"list runs", func() error { _, _, err := db.ListRuns(ctx, store.RunFilter{}); return err }},
			{"create run", func() error { return db.CreateRun(ctx, &store.Run{ID: "run_x", Scenario: "s", Profile: "p"}) }},
			{"get session", func() error { _, err := db.GetSession(ctx, "s"); return err }},
		}
		for _, c := range cases {
			unavailableOnly(t, c.name, c.call())
		}
	})
}
