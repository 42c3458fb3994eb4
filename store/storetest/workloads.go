package storetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"agentloop/store"
)

// testWorkloads: a workload is saved once under its id, read back whole,
// listed newest first without its JSON, deleted, and swept like a run.
func testWorkloads(t *testing.T, h Harness) {
	db := h.Open(t, Options{})
	ctx := context.Background()
	now := time.Now().Truncate(time.Microsecond)
	old := &store.Workload{ID: "wl_old", CreatedAt: now.Add(-30 * 24 * time.Hour), Source: "codex-0.171.0", Turns: 3, JSON: []byte(`{"version":1}`)}
	fresh := &store.Workload{ID: "wl_new", CreatedAt: now, Source: "inspector", Turns: 12, JSON: []byte(`{"version":1,"turns":[]}`)}
	for _, w := range []*store.Workload{old, fresh} {
		if err := db.SaveWorkload(ctx, w); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.SaveWorkload(ctx, fresh); !errors.Is(err, store.ErrExists) {
		t.Fatalf("saving an id twice: %v", err)
	}
	got, err := db.GetWorkload(ctx, "wl_new")
	if err != nil {
		t.Fatal(err)
	}
	if !got.CreatedAt.Equal(fresh.CreatedAt) || got.Source != fresh.Source || got.Turns != 12 || string(got.JSON) != string(fresh.JSON) {
		t.Fatalf("read back %+v", got)
	}
	list, err := db.ListWorkloads(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 || list[0].ID != "wl_new" || list[1].ID != "wl_old" || list[0].JSON != nil {
		t.Fatalf("listed %+v", list)
	}
	swept, err := db.Sweep(ctx, now.Add(-7*24*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if swept.Workloads != 1 {
		t.Fatalf("swept %+v", swept)
	}
	if _, err := db.GetWorkload(ctx, "wl_old"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("swept workload: %v", err)
	}
	if err := db.DeleteWorkload(ctx, "wl_new"); err != nil {
		t.Fatal(err)
	}
	if err := db.DeleteWorkload(ctx, "wl_new"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("deleting twice: %v", err)
	}
}
