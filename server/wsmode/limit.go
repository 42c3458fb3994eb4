package wsmode

import (
	"sync"
	"time"

	"agentloop/api"
)

// The connection's limit: --ws-lifetime from its start, or a shorter one
// a ConnLimit gives it (the connection-limit drill's after_ms). Either way
// the connection ends as a lifetime does (wsConn.end, endExpired): the
// response in flight finishes, the limit's error frame goes out, and the
// connection closes with 1000.

// ConnLimit gives a new connection of scope (its upgrade's
// X-Agentloop-Scope) and session a shorter limit: after, from the
// connection's start. reached is asked when it falls due: it returns the
// error frame the connection ends with, or false when the limit no
// longer applies (its drill was disarmed or spent meanwhile), and the
// connection then keeps its lifetime. A nil reached gives no limit.
type ConnLimit func(scope, session string) (after time.Duration, reached func() (*api.Error, bool))

// LimitConnections makes f give each new connection its limit. Call it
// before the server serves.
func (s *Server) LimitConnections(f ConnLimit) { s.limit = f }

// connTimer is a connection's limit timer: the shorter limit's, then,
// when that no longer applies, the lifetime's rest.
type connTimer struct {
	mu      sync.Mutex
	t       *time.Timer
	stopped bool
}

// startLimit arms the connection's limit and returns what stops it.
func (wc *wsConn) startLimit(lifetime time.Duration) (stop func()) {
	opened := time.Now()
	ct := &connTimer{}
	var after time.Duration
	var reached func() (*api.Error, bool)
	if wc.s.limit != nil {
		after, reached = wc.s.limit(wc.scope, wc.sessionKey)
	}
	if reached == nil || after >= lifetime {
		ct.t = time.AfterFunc(lifetime, func() { wc.end(endExpired) })
		return ct.stop
	}
	ct.t = time.AfterFunc(after, func() {
		if err, ok := reached(); ok {
			wc.limitErr = err
			wc.end(endExpired)
			return
		}
		ct.mu.Lock()
		defer ct.mu.Unlock()
		if !ct.stopped {
			ct.t = time.AfterFunc(lifetime-time.Since(opened), func() { wc.end(endExpired) })
		}
	})
	return ct.stop
}

func (ct *connTimer) stop() {
	ct.mu.Lock()
	defer ct.mu.Unlock()
	ct.stopped = true
	ct.t.Stop()
}
