package storetest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"agentloop/store"
)

func testSweep(t *testing.T, h Harness) {
	db := h.Open(t, Options{})
	ctx := context.Background()
	chain := saveChain(t, db) // created at 1700000000 + 0, 1, 2
	// More old responses than one batch holds, so the sweep takes several
	// transactions; and one new response.
	for i := range store.RetentionBatch + 20 {
		r := &store.Response{ID: fmt.Sprintf("resp_old_%d", i), CreatedAt: 1600000000 + int64(i), Model: "m", Snapshot: []byte(`{}`),
			Context: []store.Item{Message(fmt.Sprintf("msg_o%d", i), "user", "old")}}
		if err := db.SaveResponse(ctx, r, store.LedgerRow{Model: "m", Stored: true}); err != nil {
			t.Fatal(err)
		}
	}
	fresh := Child("resp_fresh", chain[2], []store.Item{Message("msg_f", "user", "again")}, nil)
	fresh.CreatedAt = 1800000000
	if err := db.SaveResponse(ctx, fresh, store.LedgerRow{Model: "m", Stored: true}); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	for id, v := range map[string]struct {
		age    time.Duration
		status string
	}{"run_old": {30 * 24 * time.Hour, "passed"}, "run_old_live": {30 * 24 * time.Hour, "running"}, "run_new": {time.Hour, "failed"}} {
		if err := db.CreateRun(ctx, &store.Run{ID: id, CreatedAt: now.Add(-v.age), Scenario: "s", Profile: "p", Status: v.status}); err != nil {
			t.Fatal(err)
		}
	}
	ledger := db.Count(t, "usage_ledger")

	swept, err := db.Sweep(ctx, time.Unix(1750000000, 0))
	if err != nil {
		t.Fatal(err)
	}
	if want := (store.Swept{Responses: store.RetentionBatch + 20 + 3, Runs: 0}); swept.Responses != want.Responses {
		t.Fatalf("swept %+v, want %d responses", swept, want.Responses)
	}
	for _, r := range chain {
		if _, err := db.GetResponse(ctx, r.ID); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("%s older than the cutoff survived: %v", r.ID, err)
		}
	}
	// The child keeps its whole context, although its ancestors are gone.
	got, err := db.GetResponse(ctx, "resp_fresh")
	if err != nil {
		t.Fatal(err)
	}
	sameItems(t, "context of a child of swept responses", got.Context, fresh.Context)
	if n := db.Count(t, "usage_ledger"); n != ledger {
		t.Fatalf("the usage ledger is kept: %d rows, was %d", n, ledger)
	}

	// Runs by their own clock: the old finished run goes, a live one stays.
	swept, err = db.Sweep(ctx, now.Add(-7*24*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if swept.Runs != 1 {
		t.Fatalf("swept %+v, want 1 run", swept)
	}
	for id, want := range map[string]bool{"run_old": false, "run_old_live": true, "run_new": true} {
		_, _, err := db.GetRun(ctx, id)
		if (err == nil) != want {
			t.Errorf("%s: kept %v, want %v", id, err == nil, want)
		}
	}
}
