package app

import (
	"fmt"
	"testing"
	"time"
)

// TestThrottleMemoryIsBounded: a throttle tracks at most its bound of
// addresses, dropping idle ones (whose bucket has refilled) first.
func TestThrottleMemoryIsBounded(t *testing.T) {
	now := time.Unix(1000, 0)
	th := newThrottle(1, 2, 100)
	for i := range 1000 {
		th.fail(fmt.Sprintf("10.0.%d.%d", i/256, i%256), now)
		if n := th.len(); n > 100 {
			t.Fatalf("%d addresses tracked after %d, bound 100", n, i+1)
		}
	}
	// A busy address survives a wave of new ones once the old ones idle.
	th = newThrottle(1, 2, 3)
	for range 3 {
		th.fail("busy", now)
	}
	if th.wait("busy", now) <= 0 {
		t.Fatal("busy address not throttled")
	}
	th.fail("a", now.Add(-time.Minute))
	th.fail("b", now.Add(-time.Minute))
	th.fail("c", now)
	if th.wait("busy", now) <= 0 {
		t.Fatal("the busy address was evicted instead of the idle ones")
	}
	if th.len() > 3 {
		t.Fatalf("%d addresses", th.len())
	}
	// A full bucket is a fresh one: waiting ends.
	if w := th.wait("busy", now.Add(10*time.Second)); w != 0 {
		t.Fatalf("still waiting after the refill: %v", w)
	}
}

func TestTakeChargesEveryRequestAndSaysHowLongToWait(t *testing.T) {
	th := newThrottle(1, 2, 3)
	now := time.Now()
	if th.take("a", now) != 0 || th.take("a", now) != 0 {
		t.Fatal("the burst goes through")
	}
	if w := th.take("a", now); w <= 0 || w > time.Second {
		t.Fatalf("past the burst: wait %v, want up to a second", w)
	}
	if th.take("a", now.Add(time.Second)) != 0 {
		t.Fatal("a token comes back after a second")
	}
	for i := range 10 {
		th.take(fmt.Sprintf("x%d", i), now.Add(time.Hour))
	}
	if len(th.addrs) > 3 {
		t.Fatalf("%d addresses tracked, bound 3", len(th.addrs))
	}
}
