package rollout

import (
	"context"
	"sync"
	"time"
)

// Lanes that take turns (Config.TakeTurns; docs/decisions.md, "Lanes that
// take turns"): every lane of a repeat runs at once, but only one of them
// works at a time, and each moves on its own clock. The scheduler is a
// conservative discrete-event one: a lane that wants to start its next
// step (a request and the tools after it, everything the runner times as
// the lane's work) waits for the baton, and the baton goes, once every lane
// still running waits for it, to the one whose own clock is furthest behind
// (ties: the lanes' order). So no request overlaps another, no lane shares
// the CPU with another, and the lanes advance together on one race clock.

// baton hands the right to work to one lane of a repeat at a time.
type baton struct {
	mu     sync.Mutex
	now    func() time.Time
	clocks []*laneClock // in the lanes' order
	holder *laneClock
}

// newBaton returns the baton of one repeat and a clock for each lane, in
// the lanes' order. now is the time source (time.Now; a test's fake).
func newBaton(n int, now func() time.Time) (*baton, []*laneClock) {
	b := &baton{now: now}
	for range n {
		b.clocks = append(b.clocks, &laneClock{b: b, mu: &b.mu, now: now, turn: make(chan struct{}, 1)})
	}
	return b, b.clocks
}

// laneClock is one lane's own clock in one repeat: the time since the lane
// began, less the time it waited for the baton or spent aside (bookkeeping
// no lane's work includes). A lane of a race whose lanes do not take
// turns has a clock without a baton: it never waits.
type laneClock struct {
	b   *baton // nil: the lane never waits
	mu  *sync.Mutex
	now func() time.Time

	started, left, waiting, holding bool
	start                           time.Time
	stopped                         time.Duration // waited and aside so far
	since                           time.Time     // start of the current wait or aside
	aside                           bool
	end                             time.Duration // own clock when the lane left
	turn                            chan struct{} // receives the baton
}

// freeClock is the clock of a lane that never waits.
func freeClock() *laneClock { return &laneClock{mu: &sync.Mutex{}, now: time.Now} }

// begin starts the lane's clock now and returns its start.
func (c *laneClock) begin() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.started, c.start = true, c.now()
	return c.start
}

// own is the lane's own clock at t: 0 before it began, its end once it left.
func (c *laneClock) own(t time.Time) time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ownLocked(t)
}

func (c *laneClock) ownLocked(t time.Time) time.Duration {
	switch {
	case !c.started:
		return 0
	case c.left:
		return c.end
	}
	d := t.Sub(c.start) - c.stopped
	if c.waiting || c.aside {
		d -= t.Sub(c.since)
	}
	return max(d, 0)
}

// offset is t on the lane's own clock, as a Turn's offsets are: t must
// be since the lane's last wait, as every time a step records is.
func (c *laneClock) offset(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return c.own(t).Nanoseconds()
}

// running says whether the lane began and has not left.
func (c *laneClock) running() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.started && !c.left
}

// take waits for the baton: at once for a lane that never waits. It
// returns errStopped when ctx ends first.
func (c *laneClock) take(ctx context.Context) error {
	if c.b == nil {
		return nil
	}
	c.mu.Lock()
	if c.holding {
		c.mu.Unlock()
		return nil
	}
	c.waiting, c.since = true, c.now()
	c.b.pass()
	c.mu.Unlock()
	select {
	case <-c.turn:
		return nil
	case <-ctx.Done():
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.waiting {
			c.stopped += c.now().Sub(c.since)
			c.waiting = false
		}
		select {
		case <-c.turn: // handed over meanwhile: hand it on
		default:
		}
		c.release()
		return errStopped
	}
}

// give hands the baton on after a step.
func (c *laneClock) give() {
	if c.b == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.release()
}

// release gives the baton up if the lane holds it; under mu.
func (c *laneClock) release() {
	if c.holding {
		c.holding = false
		c.b.holder = nil
	}
	c.b.pass()
}

// leave ends the lane's clock: it works no more, and the baton passes
// over it from now on. Leaving twice changes nothing.
func (c *laneClock) leave() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.left {
		return
	}
	if !c.started {
		c.started, c.start = true, c.now()
	}
	c.end = c.ownLocked(c.now())
	c.left, c.waiting = true, false
	if c.b != nil {
		c.release()
	}
}

// sideline runs f off the lane's own clock: bookkeeping between steps that
// is no lane's work (the live merge of a turn's trace while the lane holds
// the baton, so that nothing else runs meanwhile).
func (c *laneClock) sideline(f func()) {
	c.mu.Lock()
	c.aside, c.since = true, c.now()
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		c.stopped += c.now().Sub(c.since)
		c.aside = false
		c.mu.Unlock()
	}()
	f()
}

// pass hands the baton to the waiting lane furthest behind, once nobody
// holds it and every lane still running waits for it; under mu.
func (b *baton) pass() {
	if b.holder != nil {
		return
	}
	now := b.now()
	var next *laneClock
	var behind time.Duration
	for _, c := range b.clocks {
		if c.left {
			continue
		}
		if !c.waiting {
			return // it may yet ask with an earlier clock
		}
		if own := c.ownLocked(now); next == nil || own < behind {
			next, behind = c, own
		}
	}
	if next == nil {
		return
	}
	next.stopped += now.Sub(next.since)
	next.waiting, next.holding = false, true
	b.holder = next
	next.turn <- struct{}{}
}

// raceClock is the clock every runner of a repeat is drawn at
// (Snapshot.ClockNS) from its lanes' clocks: lanes taking turns, the
// smallest own clock among those still running; otherwise the largest
// (lanes together: the wall clock; one after another: the running lane's).
// With no lane running, the largest own clock of the repeat.
func raceClock(clocks []*laneClock, takeTurns bool, now time.Time) time.Duration {
	var lo, hi, all time.Duration
	some := false
	for _, c := range clocks {
		own := c.own(now)
		all = max(all, own)
		if !c.running() {
			continue
		}
		if !some || own < lo {
			lo = own
		}
		hi = max(hi, own)
		some = true
	}
	switch {
	case !some:
		return all
	case takeTurns:
		return lo
	}
	return hi
}
