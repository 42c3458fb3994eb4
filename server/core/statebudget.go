package core

import (
	"container/list"
	"runtime/debug"
	"sync"
	"time"
)

// StateBudget is one memory budget for the connection state of both
// engines of a process: the latest response each WebSocket lane keeps for
// its continuation (docs/capacity.md, "The cost of state"). Each kept state
// is counted at its Footprint; past the bound, the state of the least
// recently used idle session is dropped, and that session's next
// continuation gets previous_response_not_found, as an evicted cache does,
// so a correct client recovers with its full context.
//
// Only idle state is in the budget: a continuation takes its parent out
// (Release) before it runs, so a response in flight is never touched.
// Dropping happens outside the budget's lock, through the holder's drop
// func, which drops the state only if its lane still keeps it idle.
type StateBudget struct {
	max     int64 // 0: no bound (the state is still counted)
	metrics *Metrics

	mu     sync.Mutex
	size   int64
	order  list.List         // of *HeldState, the most recently used first
	shared map[sharedKey]int // the states held per shared part

	// After a burst of new state (a thousand sessions opening), the heap
	// holds the burst's garbage (request bodies, decode buffers) and
	// would keep its pages for minutes: once the held state has grown by
	// freeAfterGrowth since the last free and no state has been held for
	// freeAgainAfter, the memory goes back to the system, once, from a
	// timer (never on a request's path). sizeAtFree is the size then, or
	// the lowest since.
	sizeAtFree int64
	settle     *time.Timer
	quiet      time.Duration // freeAgainAfter; a test waits less
	free       func()        // debug.FreeOSMemory; a test counts instead
}

// freeAfterGrowth is the growth of the held state past which its burst's
// end frees memory.
const freeAfterGrowth = 8 << 20

// HeldState is one state in the budget.
type HeldState struct {
	state  *ChainState
	bytes  int64     // its own
	key    sharedKey // what it shares, and its bytes
	shared int64
	el     *list.Element // nil once released or dropped
	// drop lets the state go from its holder, if the holder still keeps
	// it idle; it reports whether it did.
	drop func() bool
}

// NewStateBudget bounds the connection state to max bytes (0: no bound),
// exporting its size, its bound and its drops in m.
func NewStateBudget(max int64, m *Metrics) *StateBudget {
	b := &StateBudget{max: max, metrics: m, shared: map[sharedKey]int{}, quiet: freeAgainAfter, free: debug.FreeOSMemory}
	if m != nil {
		m.watchStates(b)
	}
	return b
}

// Hold counts s, which a lane now keeps idle, and drops the least recently
// used states while the budget is spent, s last. drop lets s go from its
// holder when the budget drops it. A nil budget holds nothing.
func (b *StateBudget) Hold(s *ChainState, drop func() bool) *HeldState {
	if b == nil || s == nil {
		return nil
	}
	f := s.Footprint()
	h := &HeldState{state: s, bytes: int64(f.Own()), key: s.shared(), shared: int64(f.Shared), drop: drop}
	b.mu.Lock()
	h.el = b.order.PushFront(h)
	b.size += h.bytes
	if h.key != (sharedKey{}) {
		if b.shared[h.key] == 0 {
			b.size += h.shared
		}
		b.shared[h.key]++
	}
	var victims []*HeldState
	for b.max > 0 && b.size > b.max {
		v := b.order.Back().Value.(*HeldState)
		b.removeLocked(v)
		victims = append(victims, v)
	}
	if b.size-b.sizeAtFree >= freeAfterGrowth {
		if b.settle == nil {
			b.settle = time.AfterFunc(b.quiet, b.freeSettled)
		} else {
			b.settle.Reset(b.quiet)
		}
	}
	b.mu.Unlock()
	for _, v := range victims {
		if v.drop() && b.metrics != nil {
			b.metrics.stateDrops.Inc()
		}
	}
	return h
}

// Release takes h out of the budget: its state is in use again (a
// continuation took it), replaced, or its connection closed. It does
// nothing for a state already dropped, or a nil h.
func (b *StateBudget) Release(h *HeldState) {
	if b == nil || h == nil {
		return
	}
	b.mu.Lock()
	if h.el != nil {
		b.removeLocked(h)
	}
	b.mu.Unlock()
}

// Touch marks h's state as used now (a fork read it), so it is dropped
// after the states used before it.
func (b *StateBudget) Touch(h *HeldState) {
	if b == nil || h == nil {
		return
	}
	b.mu.Lock()
	if h.el != nil {
		b.order.MoveToFront(h.el)
	}
	b.mu.Unlock()
}

func (b *StateBudget) removeLocked(h *HeldState) {
	b.order.Remove(h.el)
	h.el = nil
	b.size -= h.bytes
	if h.key != (sharedKey{}) {
		if b.shared[h.key]--; b.shared[h.key] == 0 {
			delete(b.shared, h.key)
			b.size -= h.shared
		}
	}
	b.sizeAtFree = min(b.sizeAtFree, b.size)
}

// freeSettled returns memory to the system once a burst of new state has
// settled (the timer Hold arms and re-arms while the burst lasts).
func (b *StateBudget) freeSettled() {
	b.mu.Lock()
	b.sizeAtFree = b.size
	b.mu.Unlock()
	b.free()
}

// Size is the bytes held now, and how many states.
func (b *StateBudget) Size() (bytes int64, states int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.size, b.order.Len()
}

// Max is the bound; 0 when there is none.
func (b *StateBudget) Max() int64 { return b.max }
