package rollout

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"agentloop/internal/wait"
)

// fakeTime is a clock a test moves by hand.
type fakeTime struct {
	mu sync.Mutex
	t  time.Time
}

func (f *fakeTime) now() time.Time { f.mu.Lock(); defer f.mu.Unlock(); return f.t }
func (f *fakeTime) advance(d time.Duration) {
	f.mu.Lock()
	f.t = f.t.Add(d)
	f.mu.Unlock()
}

// TestBatonGoesToTheLaneFurthestBehind runs three lanes of scripted step
// lengths on a fake clock: each step starts only with the baton, which
// goes to the lane whose own clock is furthest behind (ties: lane order).
func TestBatonGoesToTheLaneFurthestBehind(t *testing.T) {
	ft := &fakeTime{t: time.Unix(1000, 0)}
	start := ft.now()
	steps := map[string][]time.Duration{"a": {5, 5, 5}, "b": {2, 2, 2, 2, 2, 2}, "c": {12}}
	lanes := []string{"a", "b", "c"}
	_, clocks := newBaton(len(lanes), ft.now)
	var mu sync.Mutex
	var order []string
	var raceClocks []time.Duration
	inFlight, most := 0, 0
	var wg sync.WaitGroup
	for i, lane := range lanes {
		wg.Go(func() {
			c := clocks[i]
			defer c.leave()
			c.begin()
			for _, d := range steps[lane] {
				if err := c.take(context.Background()); err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				inFlight++
				most = max(most, inFlight)
				order = append(order, lane)
				// The lane that works is the one furthest behind.
				for j, o := range clocks {
					if j != i && o.running() && o.own(ft.now()) < c.own(ft.now()) {
						t.Errorf("%s works at %v while %s is behind at %v", lane, c.own(ft.now()), lanes[j], o.own(ft.now()))
					}
				}
				mu.Unlock()
				ft.advance(d * time.Second)
				mu.Lock()
				inFlight--
				raceClocks = append(raceClocks, raceClock(clocks, true, ft.now()))
				mu.Unlock()
				c.give()
			}
		})
	}
	wg.Wait()
	if got, want := strings.Join(order, ""), "abcbbabbab"; got != want {
		t.Errorf("turns %s, want %s", got, want)
	}
	if most != 1 {
		t.Errorf("%d lanes worked at once", most)
	}
	// Each lane's own clock counts its steps only, never its waits; the
	// wall clock counts every step once.
	var all time.Duration
	for i, lane := range lanes {
		var sum time.Duration
		for _, d := range steps[lane] {
			sum += d * time.Second
		}
		all += sum
		if got := clocks[i].own(ft.now()); got != sum {
			t.Errorf("lane %s own clock %v, want %v", lane, got, sum)
		}
	}
	if wall := ft.now().Sub(start); wall != all {
		t.Errorf("wall %v, want %v", wall, all)
	}
	if !slices.IsSorted(raceClocks) {
		t.Errorf("the race clock went back: %v", raceClocks)
	}
	if got, want := raceClock(clocks, true, ft.now()), 15*time.Second; got != want {
		t.Errorf("race clock at the end %v, want the longest lane's %v", got, want)
	}
}

// TestBatonWaitsForEveryLane: the baton is not handed out while a lane
// that has not asked yet could still ask with an earlier clock, and a lane
// whose context ends stops waiting and hands the baton on.
func TestBatonWaitsForEveryLane(t *testing.T) {
	ft := &fakeTime{t: time.Unix(1000, 0)}
	_, clocks := newBaton(2, ft.now)
	a, b := clocks[0], clocks[1]
	a.begin()
	got := make(chan error, 1)
	go func() { got <- a.take(context.Background()) }()
	// b has not begun: a may not start.
	wait.Until(t, "a waits for the baton", func() bool {
		a.mu.Lock()
		defer a.mu.Unlock()
		return a.waiting
	})
	select {
	case <-got:
		t.Fatal("a got the baton before b asked")
	default:
	}
	b.begin()
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error, 1)
	ft.advance(time.Second) // a waits, its own clock stays at 0; b works a second
	go func() { stopped <- b.take(ctx) }()
	if err := <-got; err != nil { // a is behind
		t.Fatal(err)
	}
	if own := a.own(ft.now()); own != 0 {
		t.Errorf("a's own clock %v after waiting; want 0", own)
	}
	cancel() // b gives up waiting
	if err := <-stopped; !errors.Is(err, errStopped) {
		t.Fatalf("b's take: %v", err)
	}
	b.leave()
	a.give()
	// With b gone, a takes the baton again at once.
	if err := a.take(context.Background()); err != nil {
		t.Fatal(err)
	}
	a.leave()
}

// TestSidelineIsOffTheClock: time spent aside does not count.
func TestSidelineIsOffTheClock(t *testing.T) {
	ft := &fakeTime{t: time.Unix(1000, 0)}
	c := &laneClock{mu: &sync.Mutex{}, now: ft.now}
	c.begin()
	ft.advance(3 * time.Second)
	c.sideline(func() { ft.advance(time.Minute) })
	ft.advance(2 * time.Second)
	if got := c.own(ft.now()); got != 5*time.Second {
		t.Fatalf("own clock %v, want 5s", got)
	}
}
