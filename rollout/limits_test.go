package rollout_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"agentloop/api"
	"agentloop/app/apptest"
	"agentloop/internal/wait"
	"agentloop/rollout"
)

// waitRun polls the stored run until it has ended.
func waitRun(t *testing.T, db rollout.RunReader, id string) *rollout.RunRecord {
	t.Helper()
	var rec *rollout.RunRecord
	wait.UntilErr(t, "run "+id+" to end", func() error {
		var err error
		if rec, err = rollout.LoadRun(context.Background(), db, id); err != nil {
			return err
		}
		if !rollout.Ended(rec.Status) {
			return fmt.Errorf("status %s", rec.Status)
		}
		return nil
	})
	return rec
}

func checkLanes(t *testing.T, rec *rollout.RunRecord, want string) {
	t.Helper()
	if len(rec.Lanes) == 0 {
		t.Fatalf("run %s has no lanes", rec.ID)
	}
	for _, l := range rec.Lanes {
		if l.Status != want {
			t.Errorf("run %s (%s): lane %s is %s, want %s", rec.ID, rec.Status, l.Lane, l.Status, want)
		}
	}
}

// A slow race: classic decodes at about 65 tokens/s, so it runs for a
// minute unless it is stopped.
var slowRace = rollout.Config{Profile: "classic", Lanes: []string{"ws", "http"}}

func TestRacesAreCappedQueuedAndCancellable(t *testing.T) {
	a := apptest.Start(t)
	runner := rollout.NewRunner(a.URL(), a.DB, nil)
	runner.MaxRunning, runner.MaxQueued = 1, 1
	t.Cleanup(func() { runner.Shutdown(context.Background()) })

	first, err := runner.Start("client", slowRace, nil)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	behind := ""
	second, err := runner.Start("client", slowRace, func(s rollout.Snapshot) {
		mu.Lock()
		defer mu.Unlock()
		if s.Status == rollout.StatusQueued && s.WaitingBehind != "" {
			behind = s.WaitingBehind
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	_, err = runner.Start("client", slowRace, nil)
	var ae *api.Error
	if !errors.As(err, &ae) || ae.Status != 429 || ae.Headers["Retry-After"] == "" {
		t.Fatalf("a race past the queue: %v, want 429 with Retry-After", err)
	}
	// The queued race says what it waits behind.
	wait.Until(t, "the queued race to say it waits behind "+first, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return behind == first
	})
	// Cancelling the queued race ends it without running; cancelling the
	// running one stops it. Both end cancelled, with every lane cancelled.
	if err := runner.Cancel(second); err != nil {
		t.Fatal(err)
	}
	checkLanes(t, waitRun(t, a.DB, second), rollout.StatusCancelled)
	if err := runner.Cancel(first); err != nil {
		t.Fatal(err)
	}
	rec := waitRun(t, a.DB, first)
	if rec.Status != rollout.StatusCancelled {
		t.Fatalf("cancelled run ended %s", rec.Status)
	}
	checkLanes(t, rec, rollout.StatusCancelled)
	if err := runner.Cancel(first); !errors.As(err, &ae) || ae.Status != 409 {
		t.Fatalf("cancelling an ended run: %v, want 409", err)
	}
	// The slots are free again.
	third, err := runner.Start("client", slowRace, nil)
	if err != nil {
		t.Fatalf("after the races ended: %v", err)
	}
	runner.Cancel(third)
	waitRun(t, a.DB, third)
}

// statuses keeps the last status each race's snapshots told.
type statuses struct {
	mu sync.Mutex
	of map[string]string
}

func (s *statuses) observe(snap rollout.Snapshot) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.of[snap.RunID] = snap.Status
}

func (s *statuses) get(id string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.of[id]
}

func (s *statuses) is(id, status string) bool { return s.get(id) == status }

// One client holding its share of race slots leaves another client's race
// to start at once; its own races past its share wait, a freed slot goes
// to the client served longest ago, and past its share of the queue it
// gets a 429.
func TestRaceSlotsAreSharedBetweenClients(t *testing.T) {
	a := apptest.Start(t)
	runner := rollout.NewRunner(a.URL(), a.DB, nil)
	t.Cleanup(func() { runner.Shutdown(context.Background()) })
	seen := &statuses{of: map[string]string{}}
	start := func(client string) string {
		t.Helper()
		id, err := runner.Start(client, slowRace, seen.observe)
		if err != nil {
			t.Fatalf("client %s: %v", client, err)
		}
		return id
	}
	hog := start("hog")
	wait.Until(t, "the hog's first race runs", func() bool { return seen.is(hog, rollout.StatusRunning) })
	var hogQueued []string
	for range rollout.DefaultMaxRunningPerClient + rollout.DefaultMaxQueuedPerClient - 1 {
		hogQueued = append(hogQueued, start("hog"))
	}
	_, err := runner.Start("hog", slowRace, nil)
	var ae *api.Error
	if !errors.As(err, &ae) || ae.Status != 429 || ae.Code != api.CodeTooManyRaces || ae.Headers["Retry-After"] == "" {
		t.Fatalf("a race past the client's share: %v, want 429 too_many_races with Retry-After", err)
	}
	other := start("other")
	wait.Until(t, "another client's race runs at once", func() bool { return seen.is(other, rollout.StatusRunning) })
	late := start("late")
	wait.Until(t, "the late client's race waits", func() bool { return seen.is(late, rollout.StatusQueued) })
	for _, id := range hogQueued {
		if !seen.is(id, rollout.StatusQueued) {
			t.Fatalf("the hog's race %s is %q past its share, want queued", id, seen.get(id))
		}
	}
	// The hog's slot frees: the late client, never served, takes it.
	if err := runner.Cancel(hog); err != nil {
		t.Fatal(err)
	}
	wait.Until(t, "the late client's race runs", func() bool { return seen.is(late, rollout.StatusRunning) })
	if !seen.is(hogQueued[0], rollout.StatusQueued) {
		t.Fatalf("the hog's next race is %q, want still queued", seen.get(hogQueued[0]))
	}
}

func TestRaceTimeLimitFailsItsLanes(t *testing.T) {
	a := apptest.Start(t)
	runner := rollout.NewRunner(a.URL(), a.DB, nil)
	runner.TimeLimit = 500 * time.Millisecond
	t.Cleanup(func() { runner.Shutdown(context.Background()) })
	id, err := runner.Start("client", slowRace, nil)
	if err != nil {
		t.Fatal(err)
	}
	rec := waitRun(t, a.DB, id)
	if rec.Status != rollout.StatusFailed {
		t.Fatalf("a race past its time limit ended %s", rec.Status)
	}
	checkLanes(t, rec, rollout.StatusFailed)
}

func TestShutdownInterruptsRunningAndQueuedRaces(t *testing.T) {
	a := apptest.Start(t)
	runner := rollout.NewRunner(a.URL(), a.DB, nil)
	runner.MaxRunning = 1
	underway := make(chan struct{})
	var once sync.Once
	running, err := runner.Start("client", slowRace, func(s rollout.Snapshot) {
		for _, l := range s.Lanes {
			if l.Turn >= 1 {
				once.Do(func() { close(underway) })
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	queued, err := runner.Start("client", slowRace, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Stop once the first race's lanes are mid-rollout.
	select {
	case <-underway:
	case <-time.After(30 * time.Second):
		t.Fatal("the race never got under way")
	}
	runner.Shutdown(context.Background())
	for _, id := range []string{running, queued} {
		rec := waitRun(t, a.DB, id)
		if rec.Status != rollout.StatusInterrupted {
			t.Fatalf("%s ended %s at shutdown", id, rec.Status)
		}
		checkLanes(t, rec, rollout.StatusInterrupted)
	}
}

func TestNormalizeBoundsBandwidth(t *testing.T) {
	for _, kbps := range []int{1, rollout.MinBandwidthKbps - 1, -5, 20_000_000} {
		c := rollout.Config{BandwidthKbps: kbps}
		if err := rollout.Normalize(&c); err == nil || err.Param != "bandwidth_kbps" {
			t.Errorf("bandwidth_kbps %d accepted", kbps)
		}
	}
	for _, kbps := range []int{0, rollout.MinBandwidthKbps, 50000} {
		c := rollout.Config{BandwidthKbps: kbps}
		if err := rollout.Normalize(&c); err != nil {
			t.Errorf("bandwidth_kbps %d refused: %v", kbps, err)
		}
	}
}
