package core

import (
	"sync/atomic"
	"testing"
	"time"

	"agentloop/internal/wait"
)

// TestStateBudgetDropsTheLeastRecentlyUsed: past the bound, the oldest
// state goes first; a touched one goes after the others; a released one
// (taken by a continuation) is never dropped; a drop its holder refuses
// (the state is in use again) is not counted.
func TestStateBudgetDropsTheLeastRecentlyUsed(t *testing.T) {
	m := NewMetrics("")
	state := func(n int) *ChainState { return &ChainState{tokens: make([]int, 0, n)} }
	one := state(10).Footprint().Total()
	b := NewStateBudget(int64(3*one), m)
	var dropped []string
	hold := func(name string, keep bool) *HeldState {
		return b.Hold(state(10), func() bool { dropped = append(dropped, name); return !keep })
	}
	// a's holder will refuse its drop: a is in use again by then.
	a, _, c := hold("a", true), hold("b", false), hold("c", false)
	b.Touch(a)       // a is used: b is now the least recently used
	b.Release(c)     // c is taken by a continuation: out of the budget
	hold("d", false) // 3 held: a, b, d
	hold("e", true)  // drops b
	hold("f", false) // drops a, whose holder refuses (in use again)
	if want := []string{"b", "a"}; len(dropped) != 2 || dropped[0] != want[0] || dropped[1] != want[1] {
		t.Fatalf("dropped %v, want %v", dropped, want)
	}
	if got := gathered(t, m, "agentloop_connection_state_drops_total"); got != 1 {
		t.Fatalf("%v drops counted, want 1", got)
	}
	if size, n := b.Size(); n != 3 || size != int64(3*one) {
		t.Fatalf("%d states of %d bytes held, want 3 of %d", n, size, 3*one)
	}
	var none *StateBudget
	none.Release(none.Hold(state(1), nil)) // no budget: nothing held
}

// gathered is the value of a metric with one series.
func gathered(t *testing.T, m *Metrics, name string) float64 {
	t.Helper()
	families, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() == name {
			mt := f.GetMetric()[0]
			if c := mt.GetCounter(); c != nil {
				return c.GetValue()
			}
			return mt.GetGauge().GetValue()
		}
	}
	t.Fatalf("no %s among the metrics", name)
	return 0
}

// TestStateBudgetFreesMemoryOnceABurstSettles: held state that grows by
// freeAfterGrowth frees memory once its burst has settled, and only state
// grown past that again frees again; state that comes and goes below it
// never does.
func TestStateBudgetFreesMemoryOnceABurstSettles(t *testing.T) {
	b := NewStateBudget(0, nil)
	var frees atomic.Int32
	// The burst lasts as long as its states keep coming: a quiet spell
	// longer than the test makes sure the timer cannot fire within it,
	// however slow the machine; the last state re-arms it short.
	b.free, b.quiet = func() { frees.Add(1) }, time.Hour
	state := func(bytes int) *ChainState { return &ChainState{tokens: make([]int, 0, bytes/8)} }
	small := b.Hold(state(freeAfterGrowth/4), func() bool { return true })
	b.Release(small) // came and went: no burst
	for range 3 {
		b.Hold(state(freeAfterGrowth/2), func() bool { return true }) // the burst: 1.5× the growth
	}
	b.mu.Lock()
	b.quiet = 10 * time.Millisecond
	b.mu.Unlock()
	b.Hold(state(8), func() bool { return true }) // the burst's last state
	wait.Until(t, "the burst's memory freed", func() bool { return frees.Load() == 1 })
	b.mu.Lock()
	settled := b.sizeAtFree == b.size
	b.mu.Unlock()
	if !settled {
		t.Fatal("the free did not note the size it freed at")
	}
	b.Hold(state(freeAfterGrowth/2), func() bool { return true })
	b.Hold(state(freeAfterGrowth/2), func() bool { return true }) // grown past it again
	wait.Until(t, "the second burst's memory freed", func() bool { return frees.Load() == 2 })
}
