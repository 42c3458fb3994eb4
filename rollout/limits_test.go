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

	first, err := runner.Start(slowRace, nil)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	behind := ""
	second, err := runner.Start(slowRace, func(s rollout.Snapshot) {
		mu.Lock()
		defer mu.Unlock()
		if s.Status == rollout.StatusQueued && s.WaitingBehind != "" {
			behind = s.WaitingBehind
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	_, err = runner.Start(slowRace, nil)
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
	third, err := runner.Start(slowRace, nil)
	if err != nil {
		t.Fatalf("after the races ended: %v", err)
	}
	runner.Cancel(third)
	waitRun(t, a.DB, third)
}

func TestRaceTimeLimitFailsItsLanes(t *testing.T) {
	a := apptest.Start(t)
	runner := rollout.NewRunner(a.URL(), a.DB, nil)
	runner.TimeLimit = 500 * time.Millisecond
	t.Cleanup(func() { runner.Shutdown(context.Background()) })
	id, err := runner.Start(slowRace, nil)
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
	running, err := runner.Start(slowRace, func(s rollout.Snapshot) {
		for _, l := range s.Lanes {
			if l.Turn >= 1 {
				once.Do(func() { close(underway) })
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	queued, err := runner.Start(slowRace, nil)
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
