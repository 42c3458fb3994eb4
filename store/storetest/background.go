package storetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"agentloop/store"
)

func background(id, replica, client string) *store.Background {
	now := time.Now()
	return &store.Background{ID: id, CreatedAt: now, Replica: replica, Client: client, Status: "queued", Heartbeat: now,
		Snapshot: []byte(`{"id":"` + id + `","status":"queued"}`), FailedSnapshot: []byte(`{"id":"` + id + `","status":"failed"}`)}
}

// testBackgroundLifecycle: a background response moves queued →
// in_progress → terminal, and a terminal one moves no more; its events
// are read back after any sequence number; the cancel flag set on one
// connection is seen by the heartbeat of the running replica.
func testBackgroundLifecycle(t *testing.T, h Harness) {
	db := h.Open(t, Options{})
	ctx := context.Background()
	b := background("resp_b1", "r1", "addr:1")
	if err := db.CreateBackground(ctx, b, 0); err != nil {
		t.Fatal(err)
	}
	if err := db.CreateBackground(ctx, b, 0); !errors.Is(err, store.ErrExists) {
		t.Errorf("second create: %v, want ErrExists", err)
	}
	if err := db.UpdateBackground(ctx, "resp_b1", "in_progress", []byte(`{"status":"in_progress"}`), []byte(`{"status":"failed","n":1}`)); err != nil {
		t.Fatal(err)
	}
	if err := db.UpdateBackground(ctx, "resp_b1", "bogus", nil, nil); err == nil {
		t.Error("an unknown status was stored")
	}
	events := []store.BackgroundEvent{{Seq: 0, Type: "response.created", Data: []byte(`{"a":0}`)},
		{Seq: 1, Type: "response.queued", Data: []byte(`{"a":1}`)}, {Seq: 2, Type: "response.in_progress", Data: []byte(`{"a":2}`)}}
	if err := db.AppendBackgroundEvents(ctx, "resp_b1", events[:2]); err != nil {
		t.Fatal(err)
	}
	if err := db.AppendBackgroundEvents(ctx, "resp_b1", events[2:]); err != nil {
		t.Fatal(err)
	}
	got, err := db.BackgroundEvents(ctx, "resp_b1", 0, 100)
	if err != nil || len(got) != 2 || got[0].Seq != 1 || got[1].Type != "response.in_progress" || string(got[1].Data) != `{"a":2}` {
		t.Fatalf("events after 0 = %+v, %v", got, err)
	}
	if got, _ := db.BackgroundEvents(ctx, "resp_b1", -1, 1); len(got) != 1 || got[0].Seq != 0 {
		t.Errorf("first event = %+v", got)
	}
	st, err := db.RequestCancel(ctx, "resp_b1")
	if err != nil || !st.CancelRequested || st.Status != "in_progress" {
		t.Fatalf("cancel = %+v, %v", st, err)
	}
	cancelled, err := db.BackgroundHeartbeat(ctx, "r1", []string{"resp_b1", "resp_none"}, time.Now())
	if err != nil || len(cancelled) != 1 || cancelled[0] != "resp_b1" {
		t.Fatalf("heartbeat = %v, %v", cancelled, err)
	}
	if err := db.UpdateBackground(ctx, "resp_b1", "cancelled", []byte(`{"status":"cancelled"}`), nil); err != nil {
		t.Fatal(err)
	}
	if err := db.UpdateBackground(ctx, "resp_b1", "completed", []byte(`{}`), nil); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a terminal response moved on: %v", err)
	}
	st, err = db.GetBackground(ctx, "resp_b1")
	if err != nil || st.Status != "cancelled" || string(st.Snapshot) != `{"status":"cancelled"}` || st.Open() {
		t.Fatalf("get = %+v, %v", st, err)
	}
	if st, err := db.RequestCancel(ctx, "resp_b1"); err != nil || st.Status != "cancelled" {
		t.Errorf("cancel of a finished response = %+v, %v", st, err)
	}
	if err := db.DeleteBackground(ctx, "resp_b1"); err != nil {
		t.Fatal(err)
	}
	if n := db.Count(t, "background_events"); n != 0 {
		t.Errorf("%d events left after the delete", n)
	}
	if _, err := db.GetBackground(ctx, "resp_b1"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("deleted: %v, want ErrNotFound", err)
	}
	if _, err := db.RequestCancel(ctx, "resp_b1"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("cancel of a deleted response: %v, want ErrNotFound", err)
	}
}

// testBackgroundQueuedCap: a client's queued responses are capped; one
// that starts running frees its place, and other clients are not held.
func testBackgroundQueuedCap(t *testing.T, h Harness) {
	db := h.Open(t, Options{})
	ctx := context.Background()
	for _, id := range []string{"resp_q1", "resp_q2"} {
		if err := db.CreateBackground(ctx, background(id, "r1", "addr:1"), 2); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.CreateBackground(ctx, background("resp_q3", "r1", "addr:1"), 2); !errors.Is(err, store.ErrTooMany) {
		t.Fatalf("third queued: %v, want ErrTooMany", err)
	}
	if err := db.CreateBackground(ctx, background("resp_o1", "r1", "addr:2"), 2); err != nil {
		t.Fatalf("another client: %v", err)
	}
	if err := db.UpdateBackground(ctx, "resp_q1", "in_progress", []byte(`{}`), nil); err != nil {
		t.Fatal(err)
	}
	if err := db.CreateBackground(ctx, background("resp_q3", "r1", "addr:1"), 2); err != nil {
		t.Fatalf("after one started: %v", err)
	}
}

// testMarkBackgroundFailed: at start-up a replica's open responses, and
// those of a replica whose heartbeat is stale, become failed with their
// failed snapshot, whole; a live replica's and finished ones stay.
func testMarkBackgroundFailed(t *testing.T, h Harness) {
	db := h.Open(t, Options{})
	ctx := context.Background()
	old := background("resp_stale", "dead", "c")
	old.Heartbeat = time.Now().Add(-time.Hour)
	for _, b := range []*store.Background{background("resp_mine", "me", "c"), old, background("resp_live", "other", "c"), background("resp_done", "me", "c")} {
		if err := db.CreateBackground(ctx, b, 0); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.UpdateBackground(ctx, "resp_done", "completed", []byte(`{"status":"completed"}`), nil); err != nil {
		t.Fatal(err)
	}
	n, err := db.MarkBackgroundFailed(ctx, "me", time.Now().Add(-time.Minute))
	if err != nil || n != 2 {
		t.Fatalf("marked %d, %v; want 2", n, err)
	}
	for id, want := range map[string]string{"resp_mine": "failed", "resp_stale": "failed", "resp_live": "queued", "resp_done": "completed"} {
		b, err := db.GetBackground(ctx, id)
		if err != nil || b.Status != want {
			t.Errorf("%s = %+v, %v; want %s", id, b, err, want)
			continue
		}
		if want == "failed" && string(b.Snapshot) != string(b.FailedSnapshot) {
			t.Errorf("%s: snapshot %s, want its failed snapshot %s", id, b.Snapshot, b.FailedSnapshot)
		}
	}
}

// testSweepDeletesFinishedBackground: retention deletes finished
// background responses created before the cutoff, with their events, and
// keeps open ones, which are running or will be marked failed.
func testSweepDeletesFinishedBackground(t *testing.T, h Harness) {
	db := h.Open(t, Options{})
	ctx := context.Background()
	for _, id := range []string{"resp_done", "resp_open"} {
		b := background(id, "r1", "c")
		b.CreatedAt = time.Now().Add(-time.Hour)
		if err := db.CreateBackground(ctx, b, 0); err != nil {
			t.Fatal(err)
		}
		if err := db.AppendBackgroundEvents(ctx, id, []store.BackgroundEvent{{Seq: 0, Type: "response.created", Data: []byte(`{}`)}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.UpdateBackground(ctx, "resp_done", "completed", []byte(`{}`), nil); err != nil {
		t.Fatal(err)
	}
	swept, err := db.Sweep(ctx, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if swept.Background != 1 {
		t.Errorf("swept %d background responses, want 1", swept.Background)
	}
	if _, err := db.GetBackground(ctx, "resp_open"); err != nil {
		t.Errorf("the open one: %v", err)
	}
	if n := db.Count(t, "background_events"); n != 1 {
		t.Errorf("%d events left, want the open one's", n)
	}
}
