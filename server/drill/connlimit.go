package drill

import (
	"time"

	"agentloop/api"
	"agentloop/server/core"
	"agentloop/server/wsmode"
)

// ConnectionLimit is connection-limit's time form (after_ms) on engine
// e's WebSocket mode: a new connection of the drill's scope reaches its
// limit after_ms after it opened, while every other connection keeps
// --ws-lifetime. The limit ends the connection as the lifetime does, with
// the answer of connection-limit at a create: the error frame
// websocket_connection_limit_reached naming the drill, then close 1000.
// The drill fires when a connection reaches that limit, at most times
// times: a connection that reaches it after the drill is spent or
// disarmed keeps its lifetime.
func ConnectionLimit(d *Drills, e *core.Engine) wsmode.ConnLimit {
	return func(scope, session string) (time.Duration, func() (*api.Error, bool)) {
		if d.idle() {
			return 0, nil
		}
		d.mu.Lock()
		defer d.mu.Unlock()
		for _, dr := range d.armed {
			if dr.Drill != api.DrillConnectionLimit || dr.AfterMS == 0 || dr.Fired >= dr.Times || (dr.Scope != "" && dr.Scope != scope) {
				continue
			}
			id := dr.ID
			return time.Duration(dr.AfterMS) * time.Millisecond, func() (*api.Error, bool) {
				return d.limitReached(id, session, e.Config().WSLifetime)
			}
		}
		return 0, nil
	}
}

// limitReached fires the timed drill id on a connection of session that
// reached its limit, if the drill can still fire.
func (d *Drills) limitReached(id, session string, lifetime time.Duration) (*api.Error, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, dr := range d.armed {
		if dr.ID == id && dr.Fired < dr.Times {
			d.recordLocked(dr, api.DrillFiring{Session: session})
			return drillError(wsmode.ConnectionLimitReached(lifetime), dr.Drill), true
		}
	}
	return nil, false
}
