package storetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"agentloop/store"
)

// testWorkloads: a workload is saved once under its id (saving it again
// refreshes its time), read back whole, listed newest first without its
// JSON, deleted, and swept like a run.
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
	again := *fresh
	again.CreatedAt = now.Add(-time.Hour) // an earlier time never moves it back
	if err := db.SaveWorkload(ctx, &again); err != nil {
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

// testWorkloadReferences: retention and DeleteWorkload keep a workload a
// kept run names; once the run goes (swept or deleted), so may the
// workload. Saving a workload again counts its retention from then.
func testWorkloadReferences(t *testing.T, h Harness) {
	db := h.Open(t, Options{})
	ctx := context.Background()
	now := time.Now().Truncate(time.Microsecond)
	month := now.Add(-30 * 24 * time.Hour)
	for _, id := range []string{"wl_kept", "wl_free", "wl_saved_again", "wl_of_old_run"} {
		if err := db.SaveWorkload(ctx, &store.Workload{ID: id, CreatedAt: month, Source: "hand", Turns: 1, JSON: []byte(`{}`)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.SaveWorkload(ctx, &store.Workload{ID: "wl_saved_again", CreatedAt: now, Source: "hand", Turns: 1, JSON: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	for _, r := range []*store.Run{
		{ID: "run_new", CreatedAt: now, Scenario: "workload", Profile: "p", Status: store.RunPassed, WorkloadID: "wl_kept"},
		{ID: "run_old", CreatedAt: month, Scenario: "workload", Profile: "p", Status: store.RunPassed, WorkloadID: "wl_of_old_run"},
	} {
		if err := db.CreateRun(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	got, _, err := db.GetRun(ctx, "run_new")
	if err != nil || got.WorkloadID != "wl_kept" {
		t.Fatalf("run names workload %q (%v)", got.WorkloadID, err)
	}
	if err := db.DeleteWorkload(ctx, "wl_kept"); !errors.Is(err, store.ErrInUse) {
		t.Fatalf("deleting a workload a run names: %v", err)
	}
	swept, err := db.Sweep(ctx, now.Add(-7*24*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	// The old run goes, and its workload with it; the free one goes; the
	// kept run's and the one saved again stay.
	if swept.Runs != 1 || swept.Workloads != 2 {
		t.Fatalf("swept %+v", swept)
	}
	for id, kept := range map[string]bool{"wl_kept": true, "wl_saved_again": true, "wl_free": false, "wl_of_old_run": false} {
		_, err := db.GetWorkload(ctx, id)
		if kept && err != nil || !kept && !errors.Is(err, store.ErrNotFound) {
			t.Errorf("%s after the sweep: %v", id, err)
		}
	}
	if err := db.DeleteRun(ctx, "run_new"); err != nil {
		t.Fatal(err)
	}
	if err := db.DeleteWorkload(ctx, "wl_kept"); err != nil {
		t.Fatalf("deleting a workload no run names any more: %v", err)
	}
}
