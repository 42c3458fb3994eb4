package wsmode

import (
	"context"
	"sync"
	"time"
)

// Why a connection ends.
type connEnd int

const (
	endGone    connEnd = iota // the client went away
	endDrained                // the server drains the connection
	endExpired                // the connection's lifetime is over
)

// liveConn is an open WebSocket connection as its engine's registry sees
// it (wsConn, ws.go): enough to drain it at shutdown and to abort it when
// a write stalls.
type liveConn interface {
	// end ends the connection, once, for the first reason given.
	end(why connEnd)
	// drop closes the socket at once, with no close frame.
	drop()
	// writingSince is when the current write(2) began, in unix nanos; 0
	// when the socket is idle.
	writingSince() int64
}

// connSet is an engine's open WebSocket connections, and its one
// write-stall watchdog.
type connSet struct {
	mu      sync.Mutex
	conns   map[liveConn]struct{}
	closing bool // shutdown began: no connection joins
	stalls  *stallWatch
}

func newConnSet(stallLimit time.Duration) *connSet {
	return &connSet{conns: map[liveConn]struct{}{}, stalls: newStallWatch(stallLimit)}
}

// add registers a connection; it fails once the engine is closing.
func (s *connSet) add(c liveConn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return false
	}
	s.conns[c] = struct{}{}
	return true
}

func (s *connSet) remove(c liveConn) {
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
}

func (s *connSet) isClosing() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closing
}

func (s *connSet) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns)
}

// closeAll refuses new connections from now on and returns those open.
func (s *connSet) closeAll() []liveConn {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closing = true
	conns := make([]liveConn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	return conns
}

// each calls f on every open connection, under the registry's lock.
func (s *connSet) each(f func(liveConn)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.conns {
		f(c)
	}
}

// dropAll closes every connection still open at once.
func (s *connSet) dropAll() { s.each(liveConn.drop) }

// waitFor waits at most d for every connection to go.
func (s *connSet) waitFor(d time.Duration) bool {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	return s.wait(ctx.Done())
}

// wait waits until every connection is gone (true) or until stop fires
// (false).
func (s *connSet) wait(stop <-chan struct{}) bool {
	for s.count() > 0 {
		select {
		case <-stop:
			return false
		case <-time.After(10 * time.Millisecond):
		}
	}
	return true
}

// stallWatch is the one write-stall watchdog of an engine: once started,
// it calls abort with the time and the stall limit at every tick, to abort
// any connection whose current write has not finished within the limit.
type stallWatch struct {
	limit time.Duration
	once  sync.Once
	done  chan struct{}
	stops sync.Once
}

func newStallWatch(limit time.Duration) *stallWatch {
	return &stallWatch{limit: limit, done: make(chan struct{})}
}

func (s *stallWatch) start(abort func(now time.Time, limit time.Duration)) {
	if s.limit <= 0 {
		return
	}
	s.once.Do(func() {
		tick := min(max(s.limit/4, 10*time.Millisecond), time.Second)
		go func() {
			t := time.NewTicker(tick)
			defer t.Stop()
			for {
				select {
				case <-s.done:
					return
				case now := <-t.C:
					abort(now, s.limit)
				}
			}
		}()
	})
}

func (s *stallWatch) stop() { s.stops.Do(func() { close(s.done) }) }
