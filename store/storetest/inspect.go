package storetest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"agentloop/store"
)

func inspectSession(id string, updated time.Time, turns int) store.InspectSession {
	return store.InspectSession{ID: id, Key: "http:key:" + id, Transport: "http", UserAgent: "ua/1", Originator: "codex_exec", Race: "run_1/ws",
		Beta: "responses=v1", CreatedAt: updated.Add(-time.Minute), UpdatedAt: updated, Turns: turns, Summary: []byte(`{"turns":` + fmt.Sprint(turns) + `}`)}
}

func testInspectSessionsRoundTripAndUpsert(t *testing.T, h Harness) {
	db := h.Open(t, Options{})
	ctx := context.Background()
	now := time.Unix(1_800_000_000, 123)
	s := inspectSession("sess_a", now, 1)
	turn := store.InspectTurn{SessionID: s.ID, Index: 0, ResponseID: "resp_1", CreatedAt: now, Turn: []byte(`{"index":0}`)}
	if err := db.SaveInspect(ctx, []store.InspectSession{s}, []store.InspectTurn{turn}); err != nil {
		t.Fatal(err)
	}
	// A later batch rewrites the session and adds a turn; a turn sent again
	// is kept as first stored.
	s2 := s
	s2.UpdatedAt, s2.Turns, s2.Summary = now.Add(time.Second), 2, []byte(`{"turns":2}`)
	again := turn
	again.Turn = []byte(`{"changed":true}`)
	second := store.InspectTurn{SessionID: s.ID, Index: 1, ResponseID: "resp_2", CreatedAt: now.Add(time.Second), Turn: []byte(`{"index":1}`)}
	if err := db.SaveInspect(ctx, []store.InspectSession{s2}, []store.InspectTurn{again, second}); err != nil {
		t.Fatal(err)
	}
	got, turns, err := db.LoadInspectSession(ctx, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Turns != 2 || string(got.Summary) != `{"turns":2}` || !got.UpdatedAt.Equal(s2.UpdatedAt) || !got.CreatedAt.Equal(s.CreatedAt) ||
		got.Key != s.Key || got.UserAgent != "ua/1" || got.Originator != "codex_exec" || got.Beta != "responses=v1" || got.Race != "run_1/ws" {
		t.Fatalf("session = %+v", got)
	}
	if len(turns) != 2 || string(turns[0].Turn) != `{"index":0}` || turns[1].ResponseID != "resp_2" || turns[1].Index != 1 {
		t.Fatalf("turns = %+v", turns)
	}
	if _, _, err := db.LoadInspectSession(ctx, "sess_missing"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("missing session: %v, want ErrNotFound", err)
	}
	// A turn of a session never saved breaks the foreign key: the batch
	// fails whole, and nothing of it is kept.
	orphan := store.InspectTurn{SessionID: "sess_none", Index: 0, CreatedAt: now, Turn: []byte(`{}`)}
	if err := db.SaveInspect(ctx, []store.InspectSession{inspectSession("sess_b", now, 1)}, []store.InspectTurn{orphan}); err == nil {
		t.Fatal("a turn without its session was saved")
	}
	if _, _, err := db.LoadInspectSession(ctx, "sess_b"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a failed batch left its session: %v", err)
	}
}

func testListInspectSessionsNewestFirst(t *testing.T, h Harness) {
	db := h.Open(t, Options{})
	ctx := context.Background()
	base := time.Unix(1_800_000_000, 0)
	var all []store.InspectSession
	for i := range 5 {
		all = append(all, inspectSession(fmt.Sprintf("sess_%d", i), base.Add(time.Duration(i)*time.Second), i))
	}
	if err := db.SaveInspect(ctx, all, nil); err != nil {
		t.Fatal(err)
	}
	got, err := db.ListInspectSessions(ctx, 3)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[0].ID != "sess_4" || got[1].ID != "sess_3" || got[2].ID != "sess_2" {
		t.Fatalf("listed %+v", got)
	}
}

func testSweepDeletesIdleInspectSessionsWithTheirTurns(t *testing.T, h Harness) {
	db := h.Open(t, Options{})
	ctx := context.Background()
	now := time.Now()
	var sessions []store.InspectSession
	var turns []store.InspectTurn
	// More idle sessions than one batch, so the sweep takes several
	// transactions, and one active session.
	for i := range store.RetentionBatch + 5 {
		s := inspectSession(fmt.Sprintf("sess_old_%d", i), now.Add(-30*24*time.Hour), 1)
		sessions = append(sessions, s)
		turns = append(turns, store.InspectTurn{SessionID: s.ID, CreatedAt: s.UpdatedAt, Turn: []byte(`{}`)})
	}
	active := inspectSession("sess_active", now, 1)
	sessions = append(sessions, active)
	turns = append(turns, store.InspectTurn{SessionID: active.ID, CreatedAt: now, Turn: []byte(`{}`)})
	if err := db.SaveInspect(ctx, sessions, turns); err != nil {
		t.Fatal(err)
	}
	swept, err := db.Sweep(ctx, now.Add(-7*24*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if swept.Sessions != store.RetentionBatch+5 {
		t.Fatalf("swept %+v, want %d sessions", swept, store.RetentionBatch+5)
	}
	if n := db.Count(t, "inspect_sessions"); n != 1 {
		t.Fatalf("%d sessions left, want the active one", n)
	}
	if n := db.Count(t, "inspect_turns"); n != 1 {
		t.Fatalf("%d turns left, want the active session's one", n)
	}
	if _, _, err := db.LoadInspectSession(ctx, active.ID); err != nil {
		t.Fatalf("the active session was swept: %v", err)
	}
}
