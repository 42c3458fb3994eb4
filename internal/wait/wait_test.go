package wait

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

func TestPollReturnsOnceTheStateHolds(t *testing.T) {
	var calls atomic.Int32
	err := Poll(time.Minute, func() error {
		if calls.Add(1) < 3 {
			return errors.New("not yet")
		}
		return nil
	})
	if err != nil || calls.Load() != 3 {
		t.Fatalf("Poll = %v after %d calls; want nil after 3", err, calls.Load())
	}
}

func TestPollReturnsTheLastStateWhenTimeRunsOut(t *testing.T) {
	n := 0
	err := Poll(5*time.Millisecond, func() error { n++; return errors.New("state " + string(rune('0'+n%10))) })
	if err == nil || n < 2 {
		t.Fatalf("Poll = %v after %d calls; want the last error after several calls", err, n)
	}
}

// fakeTB records a Fatalf without stopping the test.
type fakeTB struct {
	testing.TB
	failed string
}

func (f *fakeTB) Helper() {}
func (f *fakeTB) Fatalf(format string, args ...any) {
	f.failed = format
}

func TestUntilHoldsWithoutFailing(t *testing.T) {
	f := &fakeTB{TB: t}
	Until(f, "true", func() bool { return true })
	if f.failed != "" {
		t.Fatalf("Until failed on a condition that held: %s", f.failed)
	}
}
