package core

import (
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"agentloop/api"
)

// Budget bounds the work in flight across both engines of a process: how
// many requests (HTTP creates and WebSocket messages) and how many bytes of
// their bodies. Past either bound a request gets 503 with Retry-After
// instead of a share of memory the machine does not have.
type Budget struct {
	maxRequests int64
	maxBytes    int64

	mu       sync.Mutex
	requests int64
	bytes    int64
	metrics  *Metrics

	// While big requests are in flight the collector runs sooner (a heap
	// goal of live + bigGCPercent% instead of double), so a request's peak
	// stays a small multiple of its size; when the last one ends, the
	// memory goes back to the system: the heap would keep it for minutes.
	big       int
	gcPercent int
	freeing   atomic.Bool
}

// bigGCPercent is GOGC while big requests are in flight.
const bigGCPercent = 10

// bigRequest is the body size past which a request's end frees memory.
const bigRequest = 8 << 20

// freeAgainAfter is when memory is freed a second time after the last big
// body goes: what held the request a moment longer than its budget share
// (its handler's frame, its trace and records on their way out) is garbage
// by then, and an idle server would not collect it for minutes.
const freeAgainAfter = time.Second

// NewBudget bounds requests and body bytes in flight (0 leaves one
// unbounded), counting refusals in m.
func NewBudget(requests int, bytes int64, m *Metrics) *Budget {
	return &Budget{maxRequests: int64(requests), maxBytes: bytes, metrics: m}
}

// Acquire admits a request of n body bytes, or returns the 503 to answer.
// release must be called once the request has ended.
func (b *Budget) Acquire(n int) (release func(), err *api.Error) {
	if b == nil {
		return func() {}, nil
	}
	b.mu.Lock()
	over := (b.maxRequests > 0 && b.requests+1 > b.maxRequests) ||
		(b.maxBytes > 0 && b.bytes > 0 && b.bytes+int64(n) > b.maxBytes)
	if !over {
		b.requests++
		b.take(n)
	}
	b.mu.Unlock()
	if over {
		if b.metrics != nil {
			b.metrics.budgetRefused()
		}
		e := api.Errorf(503, "", api.CodeServerBusy,
			"The server has as much work in flight as it takes (%d requests, %d body bytes); try again shortly.", b.maxRequests, b.maxBytes)
		e.Headers = map[string]string{"Retry-After": "1"}
		return nil, e
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			b.mu.Lock()
			b.requests--
			b.mu.Unlock()
			b.give(n)
		})
	}, nil
}

// carry counts n more body bytes of a request already admitted (a paused
// response's response.append), which is never refused: refusing would
// change the protocol. A big one runs the collector sooner, as a big
// request does. release must be called once they are no longer needed.
func (b *Budget) carry(n int) (release func()) {
	if b == nil {
		return func() {}
	}
	b.mu.Lock()
	b.take(n)
	b.mu.Unlock()
	var once sync.Once
	return func() { once.Do(func() { b.give(n) }) }
}

// take counts n body bytes in flight; under mu.
func (b *Budget) take(n int) {
	b.bytes += int64(n)
	if n >= bigRequest {
		if b.big++; b.big == 1 {
			b.gcPercent = debug.SetGCPercent(bigGCPercent)
		}
	}
}

// give returns n body bytes; when the last big body goes, so does its
// memory, to the system.
func (b *Budget) give(n int) {
	b.mu.Lock()
	b.bytes -= int64(n)
	last := false
	if n >= bigRequest {
		if b.big--; b.big == 0 {
			debug.SetGCPercent(b.gcPercent)
			last = true
		}
	}
	b.mu.Unlock()
	if last && b.freeing.CompareAndSwap(false, true) {
		go func() {
			debug.FreeOSMemory()
			time.Sleep(freeAgainAfter)
			debug.FreeOSMemory()
			b.freeing.Store(false)
		}()
	}
}
