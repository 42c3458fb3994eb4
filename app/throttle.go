package app

import (
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// throttle is a token bucket per client address: the login throttle
// charges failed key attempts only (a client with the right key never
// spends a token), the request rate limit charges every request. Its
// memory is bounded: past maxAddrs addresses, those idle long enough for
// their bucket to be full again are dropped (a full bucket is a fresh one),
// and if none is, an arbitrary one.
type throttle struct {
	limit    rate.Limit
	burst    int
	maxAddrs int

	mu    sync.Mutex
	addrs map[string]*throttled
}

type throttled struct {
	lim  *rate.Limiter
	last time.Time
}

// throttleAddrs bounds the addresses a throttle tracks.
const throttleAddrs = 10000

func newThrottle(perSecond float64, burst, maxAddrs int) *throttle {
	return &throttle{limit: rate.Limit(perSecond), burst: max(burst, 1), maxAddrs: max(maxAddrs, 1),
		addrs: map[string]*throttled{}}
}

// wait is how long addr must wait before its next attempt; 0 = go ahead.
func (t *throttle) wait(addr string, now time.Time) time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	e := t.addrs[addr]
	if e == nil {
		return 0
	}
	tokens := e.lim.TokensAt(now)
	if tokens >= 1 {
		return 0
	}
	return time.Duration((1 - tokens) / float64(t.limit) * float64(time.Second))
}

// fail charges a failed attempt to addr.
func (t *throttle) fail(addr string, now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	e := t.entry(addr, now)
	e.lim.AllowN(now, 1)
	e.last = now
}

// take charges one request to addr if it has a token, and otherwise says
// how long until it will: 0 means go ahead.
func (t *throttle) take(addr string, now time.Time) time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	e := t.entry(addr, now)
	e.last = now
	if e.lim.AllowN(now, 1) {
		return 0
	}
	return time.Duration((1 - e.lim.TokensAt(now)) / float64(t.limit) * float64(time.Second))
}

// entry is addr's bucket, made (evicting idle ones past maxAddrs) if new.
func (t *throttle) entry(addr string, now time.Time) *throttled {
	e := t.addrs[addr]
	if e == nil {
		if len(t.addrs) >= t.maxAddrs {
			t.evict(now)
		}
		e = &throttled{lim: rate.NewLimiter(t.limit, t.burst)}
		t.addrs[addr] = e
	}
	return e
}

// evict drops the idle addresses, or one arbitrary address if none is.
func (t *throttle) evict(now time.Time) {
	refill := time.Duration(float64(t.burst) / float64(t.limit) * float64(time.Second))
	for a, e := range t.addrs {
		if now.Sub(e.last) >= refill {
			delete(t.addrs, a)
		}
	}
	if len(t.addrs) < t.maxAddrs {
		return
	}
	for a := range t.addrs {
		delete(t.addrs, a)
		return
	}
}

// len is the number of addresses tracked (tests).
func (t *throttle) len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.addrs)
}
