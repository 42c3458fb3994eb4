package wait

import (
	"fmt"
	"testing"
	"time"
)

// Deadline is how long Until waits before it fails: long enough for a
// loaded 2-core machine under the race detector, so a failure means the
// state never came.
const Deadline = 30 * time.Second

// Until polls cond until it returns true, failing t after Deadline with
// what was awaited. Polling starts at 1 ms and backs off to 50 ms.
func Until(t testing.TB, what string, cond func() bool) {
	t.Helper()
	UntilErr(t, what, func() error {
		if cond() {
			return nil
		}
		return errNotYet
	})
}

// UntilErr polls check until it returns nil, failing t after Deadline with
// what was awaited and check's last error, which says the state it saw.
func UntilErr(t testing.TB, what string, check func() error) {
	t.Helper()
	if err := Poll(Deadline, check); err != nil {
		t.Fatalf("timed out waiting for %s: %v", what, err)
	}
}

// Poll calls check until it returns nil or d has passed, and returns its
// last error (nil once it held). It is Until's loop, for callers outside a
// test (a helper binary, a benchmark's set-up).
func Poll(d time.Duration, check func() error) error {
	deadline := time.Now().Add(d)
	pause := time.Millisecond
	for {
		err := check()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return err
		}
		time.Sleep(pause)
		pause = min(2*pause, 50*time.Millisecond)
	}
}

var errNotYet = fmt.Errorf("the condition still did not hold")
