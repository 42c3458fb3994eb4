package storetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"agentloop/store"
)

// testCheckReports: a report card is saved under its id, read back whole,
// listed newest first without its JSON, and swept like a run.
func testCheckReports(t *testing.T, h Harness) {
	db := h.Open(t, Options{})
	ctx := context.Background()
	now := time.Now().Truncate(time.Microsecond)
	old := &store.CheckReport{ID: "card_old", CreatedAt: now.Add(-30 * 24 * time.Hour), Client: "codex exec", Passed: 8, NotExercised: 2, JSON: []byte(`{"object":"check.report"}`)}
	fresh := &store.CheckReport{ID: "card_new", CreatedAt: now, Client: "./refclient -mistakes all", Passed: 1, Failed: 7, NotExercised: 2, JSON: []byte(`{"object":"check.report","results":[]}`)}
	for _, r := range []*store.CheckReport{old, fresh} {
		if err := db.SaveCheckReport(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.SaveCheckReport(ctx, fresh); err == nil {
		t.Fatal("saved one id twice")
	}
	got, err := db.GetCheckReport(ctx, "card_new")
	if err != nil {
		t.Fatal(err)
	}
	if !got.CreatedAt.Equal(fresh.CreatedAt) || got.Client != fresh.Client || got.Passed != 1 || got.Failed != 7 || got.NotExercised != 2 || string(got.JSON) != string(fresh.JSON) {
		t.Fatalf("read back %+v", got)
	}
	list, err := db.ListCheckReports(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 || list[0].ID != "card_new" || list[1].ID != "card_old" || list[0].JSON != nil || list[1].Passed != 8 {
		t.Fatalf("listed %+v", list)
	}
	swept, err := db.Sweep(ctx, now.Add(-7*24*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if swept.CheckReports != 1 {
		t.Fatalf("swept %+v", swept)
	}
	if _, err := db.GetCheckReport(ctx, "card_old"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("swept report: %v", err)
	}
	if _, err := db.GetCheckReport(ctx, "card_new"); err != nil {
		t.Fatalf("kept report: %v", err)
	}
}
