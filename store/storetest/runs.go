package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"agentloop/store"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func createRun(t *testing.T, db store.Backend, id, scenario, profile string, at time.Time) *store.Run {
	t.Helper()
	r := &store.Run{ID: id, CreatedAt: at, Scenario: scenario, Profile: profile, Config: []byte(`{"repeats":2}`)}
	if err := db.CreateRun(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	return r
}

func spansFor(names ...string) []store.Span {
	var out []store.Span
	for i, n := range names {
		out = append(out, store.Span{ResponseID: "resp_x", Name: n, Kind: "engine", StartNS: int64(100 * (len(names) - i)),
			DurationNS: 50, Items: int64(i), Tokens: 10, Bytes: 1000})
	}
	return out
}

func testRunLifecycle(t *testing.T, h Harness) {
	db := h.Open(t, Options{})
	ctx := context.Background()
	run := createRun(t, db, "run_1", "repo-edit", "fast", t0)
	if run.Status != store.RunQueued || !run.UpdatedAt.Equal(t0) {
		t.Errorf("defaults: status %q updated %v, want queued and %v", run.Status, run.UpdatedAt, t0)
	}
	if err := db.CreateRun(ctx, &store.Run{ID: "run_1", Scenario: "x", Profile: "y"}); !errors.Is(err, store.ErrExists) {
		t.Errorf("duplicate run: got %v, want store.ErrExists", err)
	}

	for _, l := range []store.Lane{
		{RunID: "run_1", Name: "ws", Status: store.RunRunning},
		{RunID: "run_1", Name: "http", Status: store.RunRunning},
		{RunID: "run_1", Name: "ws", Status: store.RunPassed, Summary: []byte(`{"p50_ms":12}`)},
		{RunID: "run_1", Name: "ws", Status: store.RunPassed}, // nil summary keeps the stored one
	} {
		if err := db.SaveLane(ctx, &l); err != nil {
			t.Fatal(err)
		}
	}
	// The first update to running sets StartedAt; later ones keep it.
	if err := db.UpdateRun(ctx, "run_1", store.RunRunning, nil); err != nil {
		t.Fatal(err)
	}
	running, _, err := db.GetRun(ctx, "run_1")
	if err != nil || running.StartedAt.IsZero() || running.StartedAt.Before(t0) {
		t.Fatalf("started at %v (%v)", running.StartedAt, err)
	}
	if err := db.UpdateRun(ctx, "run_1", store.RunPassed, []byte(`{"speedup":1.4}`)); err != nil {
		t.Fatal(err)
	}
	got, lanes, err := db.GetRun(ctx, "run_1")
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != store.RunPassed || string(got.Summary) != `{"speedup":1.4}` || string(got.Config) != `{"repeats":2}` ||
		!got.CreatedAt.Equal(t0) || !got.UpdatedAt.After(t0) || got.Scenario != "repo-edit" || got.Profile != "fast" {
		t.Errorf("run = %+v", *got)
	}
	if !got.StartedAt.Equal(running.StartedAt) || got.WorkloadID != "" {
		t.Errorf("started at %v, then %v; workload %q", running.StartedAt, got.StartedAt, got.WorkloadID)
	}
	wantLanes := []store.Lane{
		{RunID: "run_1", Name: "ws", Status: store.RunPassed, Summary: []byte(`{"p50_ms":12}`)},
		{RunID: "run_1", Name: "http", Status: store.RunRunning},
	}
	if len(lanes) != len(wantLanes) {
		t.Fatalf("lanes = %+v, want %+v", lanes, wantLanes)
	}
	for i, w := range wantLanes {
		if l := lanes[i]; l.RunID != w.RunID || l.Name != w.Name || l.Status != w.Status || !bytes.Equal(l.Summary, w.Summary) {
			t.Errorf("lane %d = %+v, want %+v", i, l, w)
		}
	}

	// Turns saved out of order come back ordered by lane, repeat, index.
	turns := []struct {
		lane          string
		repeat, index int
		spans         []store.Span
	}{
		{"ws", 1, 0, spansFor("decode", "infer")},
		{"ws", 0, 1, spansFor("decode")},
		{"http", 0, 0, spansFor("decode", "load", "infer")},
		{"ws", 0, 0, nil},
	}
	for _, tu := range turns {
		turn := &store.Turn{RunID: "run_1", Lane: tu.lane, Repeat: tu.repeat, Index: tu.index,
			ResponseID: fmt.Sprintf("resp_%s_%d_%d", tu.lane, tu.repeat, tu.index),
			Timings:    []byte(`{"ttfb_ms":3}`), Request: []byte(`{"input":[]}`), Output: []byte(`[]`)}
		if err := db.SaveTurn(ctx, turn, tu.spans); err != nil {
			t.Fatal(err)
		}
	}
	// Saving a turn again replaces its spans.
	if err := db.SaveTurn(ctx, &store.Turn{RunID: "run_1", Lane: "ws", Repeat: 1, Index: 0, ResponseID: "resp_again"}, spansFor("only")); err != nil {
		t.Fatal(err)
	}
	gotTurns, gotSpans, err := db.RunTurns(ctx, "run_1")
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, tu := range gotTurns {
		order = append(order, fmt.Sprintf("%s/%d/%d", tu.Lane, tu.Repeat, tu.Index))
	}
	if got, want := strings.Join(order, " "), "http/0/0 ws/0/0 ws/0/1 ws/1/0"; got != want {
		t.Errorf("turn order %q, want %q", got, want)
	}
	if last := gotTurns[len(gotTurns)-1]; last.ResponseID != "resp_again" || last.Timings != nil {
		t.Errorf("replaced turn = %+v", last)
	}
	if first := gotTurns[0]; string(first.Timings) != `{"ttfb_ms":3}` || string(first.Request) != `{"input":[]}` || string(first.Output) != `[]` {
		t.Errorf("turn blobs = %+v", first)
	}
	var spanOrder []string
	for _, s := range gotSpans {
		spanOrder = append(spanOrder, fmt.Sprintf("%s/%d/%d:%s", s.Lane, s.Repeat, s.TurnIndex, s.Name))
		if s.RunID != "run_1" || s.DurationNS != 50 || s.Tokens != 10 || s.Bytes != 1000 || s.Kind != "engine" {
			t.Errorf("span = %+v", s)
		}
	}
	// Within a turn spans are ordered by start; spansFor starts them in reverse.
	want := "http/0/0:infer http/0/0:load http/0/0:decode ws/0/1:decode ws/1/0:only"
	if got := strings.Join(spanOrder, " "); got != want {
		t.Errorf("span order %q, want %q", got, want)
	}

	if err := db.DeleteRun(ctx, "run_1"); err != nil {
		t.Fatal(err)
	}
	for _, table := range []string{"runs", "lanes", "turns", "spans"} {
		if n := db.Count(t, table); n != 0 {
			t.Errorf("%s: %d rows after deleting the run", table, n)
		}
	}
	if err := db.DeleteRun(ctx, "run_1"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("second delete: got %v, want store.ErrNotFound", err)
	}
}

func testRunsMissing(t *testing.T, h Harness) {
	db := h.Open(t, Options{})
	ctx := context.Background()
	cases := []struct {
		name string
		call func() error
	}{
		{"get", func() error { _, _, err := db.GetRun(ctx, "run_x"); return err }},
		{"turns", func() error { _, _, err := db.RunTurns(ctx, "run_x"); return err }},
		{"update", func() error { return db.UpdateRun(ctx, "run_x", store.RunPassed, nil) }},
		{"lane", func() error {
			return db.SaveLane(ctx, &store.Lane{RunID: "run_x", Name: "ws", Status: store.RunRunning})
		}},
		{"turn", func() error { return db.SaveTurn(ctx, &store.Turn{RunID: "run_x", Lane: "ws"}, spansFor("a")) }},
		{"delete", func() error { return db.DeleteRun(ctx, "run_x") }},
	}
	for _, c := range cases {
		if err := c.call(); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("%s: got %v, want store.ErrNotFound", c.name, err)
		} else if !strings.Contains(err.Error(), "run_x") {
			t.Errorf("%s: error %q does not name the run", c.name, err)
		}
	}
}

func testUpdateRunRejectsUnknownStatus(t *testing.T, h Harness) {
	db := h.Open(t, Options{})
	createRun(t, db, "run_1", "s", "p", t0)
	err := db.UpdateRun(context.Background(), "run_1", "exploded", nil)
	if err == nil || errors.Is(err, store.ErrNotFound) {
		t.Fatalf("got %v, want a constraint error", err)
	}
	got, _, err := db.GetRun(context.Background(), "run_1")
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != store.RunQueued {
		t.Errorf("status %q after a rejected update, want queued", got.Status)
	}
}

func testListRuns(t *testing.T, h Harness) {
	db := h.Open(t, Options{})
	ctx := context.Background()
	createRun(t, db, "run_a", "repo-edit", "fast", t0)
	createRun(t, db, "run_b", "repo-edit", "slow", t0.Add(time.Hour))
	createRun(t, db, "run_c", "chat", "fast", t0.Add(2*time.Hour))
	createRun(t, db, "run_d", "repo-edit", "fast", t0.Add(3*time.Hour))
	// Each listed run comes with its lanes, in the order they were first
	// saved, runs in the list's order.
	for _, l := range []store.Lane{{RunID: "run_b", Name: "ws"}, {RunID: "run_d", Name: "http"}, {RunID: "run_b", Name: "http"},
		{RunID: "run_d", Name: "ws", Summary: []byte(`{"total_ns":5}`)}, {RunID: "run_a", Name: "ws"}} {
		if err := db.SaveLane(ctx, &l); err != nil {
			t.Fatal(err)
		}
	}
	laneOrder := map[string]string{"run_d run_c run_b run_a": "run_d/http run_d/ws run_b/ws run_b/http run_a/ws", "run_d run_c": "run_d/http run_d/ws",
		"run_b run_a": "run_b/ws run_b/http run_a/ws"}
	cases := []struct {
		name   string
		filter store.RunFilter
		want   string
	}{
		{"all newest first", store.RunFilter{}, "run_d run_c run_b run_a"},
		{"scenario", store.RunFilter{Scenario: "repo-edit"}, "run_d run_b run_a"},
		{"profile", store.RunFilter{Profile: "fast"}, "run_d run_c run_a"},
		{"scenario and profile", store.RunFilter{Scenario: "repo-edit", Profile: "fast"}, "run_d run_a"},
		{"since is inclusive", store.RunFilter{Since: t0.Add(time.Hour)}, "run_d run_c run_b"},
		{"until is exclusive", store.RunFilter{Until: t0.Add(2 * time.Hour)}, "run_b run_a"},
		{"window", store.RunFilter{Since: t0.Add(time.Hour), Until: t0.Add(3 * time.Hour)}, "run_c run_b"},
		{"limit", store.RunFilter{Limit: 2}, "run_d run_c"},
		{"nothing", store.RunFilter{Scenario: "none"}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			runs, lanes, err := db.ListRuns(ctx, c.filter)
			if err != nil {
				t.Fatal(err)
			}
			var ids, laneIDs []string
			for _, r := range runs {
				ids = append(ids, r.ID)
			}
			for _, l := range lanes {
				laneIDs = append(laneIDs, l.RunID+"/"+l.Name)
			}
			if got := strings.Join(ids, " "); got != c.want {
				t.Errorf("got %q, want %q", got, c.want)
			}
			if want, ok := laneOrder[c.want]; ok && strings.Join(laneIDs, " ") != want {
				t.Errorf("lanes %q, want %q", strings.Join(laneIDs, " "), want)
			}
		})
	}
}

func testMarkInterrupted(t *testing.T, h Harness) {
	db := h.Open(t, Options{})
	ctx := context.Background()
	create := func(id, status, replica string, created time.Time) {
		t.Helper()
		r := &store.Run{ID: id, CreatedAt: created, Scenario: "s", Profile: "p", Status: status, Replica: replica}
		if err := db.CreateRun(ctx, r); err != nil {
			t.Fatal(err)
		}
		if err := db.SaveLane(ctx, &store.Lane{RunID: id, Name: "ws", Status: status}); err != nil {
			t.Fatal(err)
		}
	}
	statuses := []string{store.RunQueued, store.RunRunning, store.RunPassed, store.RunFailed, store.RunInterrupted}
	for _, s := range statuses {
		create("run_"+s, s, "replica-1", t0)
	}
	// Another replica's live race is not this replica's to end; a race
	// older than any time limit is stale whichever replica ran it.
	create("run_other_live", store.RunRunning, "replica-2", t0)
	create("run_other_stale", store.RunRunning, "replica-2", t0.Add(-2*time.Hour))
	n, err := db.MarkInterrupted(ctx, "replica-1", t0.Add(-time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if n != 3 {
		t.Errorf("MarkInterrupted = %d, want 3", n)
	}
	want := map[string]string{"run_" + store.RunQueued: store.RunInterrupted, "run_" + store.RunRunning: store.RunInterrupted,
		"run_" + store.RunPassed: store.RunPassed, "run_" + store.RunFailed: store.RunFailed,
		"run_" + store.RunInterrupted: store.RunInterrupted,
		"run_other_live":              store.RunRunning, "run_other_stale": store.RunInterrupted}
	for id, status := range want {
		run, lanes, err := db.GetRun(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if run.Status != status || len(lanes) != 1 || lanes[0].Status != status {
			t.Errorf("%s: now %q with lanes %+v, want %q", id, run.Status, lanes, status)
		}
		if want := map[bool]string{true: "replica-2", false: "replica-1"}[strings.HasPrefix(id, "run_other")]; run.Replica != want {
			t.Errorf("%s: replica %q, want %q", id, run.Replica, want)
		}
	}
	if n, err := db.MarkInterrupted(ctx, "replica-1", t0.Add(-time.Hour)); err != nil || n != 0 {
		t.Errorf("second MarkInterrupted = %d, %v; want 0", n, err)
	}
}

// A turn with its spans is all or nothing.
func testSaveTurnIsAtomic(t *testing.T, h Harness) {
	db := h.Open(t, Options{})
	ctx := context.Background()
	createRun(t, db, "run_1", "s", "p", t0)
	good := &store.Turn{RunID: "run_1", Lane: "ws", ResponseID: "resp_good"}
	if err := db.SaveTurn(ctx, good, spansFor("decode", "infer")); err != nil {
		t.Fatal(err)
	}
	bad := spansFor("decode", "broken", "infer")
	bad[1].DurationNS = -1 // violates the schema's CHECK, midway through the spans

	cases := []struct {
		name string
		turn *store.Turn
	}{
		{"new turn", &store.Turn{RunID: "run_1", Lane: "ws", Index: 1, ResponseID: "resp_bad"}},
		{"replacing a turn", &store.Turn{RunID: "run_1", Lane: "ws", Index: 0, ResponseID: "resp_bad"}},
	}
	for _, c := range cases {
		err := db.SaveTurn(ctx, c.turn, bad)
		if err == nil {
			t.Fatalf("%s: a span with a negative duration was accepted", c.name)
		}
		if !strings.Contains(err.Error(), "store: save turn run_1/ws/0/") {
			t.Errorf("%s: error %q does not say which turn", c.name, err)
		}
		turns, spans, err := db.RunTurns(ctx, "run_1")
		if err != nil {
			t.Fatal(err)
		}
		if len(turns) != 1 || turns[0].ResponseID != "resp_good" || len(spans) != 2 {
			t.Errorf("%s: after a failed save: turns %+v, %d spans; want only the good turn and its 2 spans", c.name, turns, len(spans))
		}
	}
}

func testLoginSessions(t *testing.T, h Harness) {
	db := h.Open(t, Options{})
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
