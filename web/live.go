package web

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"time"

	"agentloop/rollout"

	"github.com/coder/websocket"
	"github.com/labstack/echo/v4"
)

// liveWriteTimeout bounds one frame's write; a page that cannot take a
// small frame in that time is gone.
const liveWriteTimeout = 5 * time.Second

// liveConn is one open feed socket, tracked so Shutdown can close it.
type liveConn struct {
	away chan struct{}
	once sync.Once
}

func (l *liveConn) goingAway() { l.once.Do(func() { close(l.away) }) }

// live is GET /ui/runs/{id}/live: a push-only WebSocket of rollout.Snapshot
// JSON frames, at most 20 Hz (the runner's pace). A run not running in this
// process gets one snapshot built from the store, then a normal close; the
// page reconnects later if that snapshot is not final.
func (p *Playground) live(c echo.Context) error {
	id := c.Param("id")
	sub, leave, ok := p.hub.subscribe(id)
	var stored []byte
	if !ok {
		rec, err := p.runs.LoadRun(c.Request().Context(), id)
		if err != nil {
			return storeError(err, "Run", id)
		}
		if stored, err = json.Marshal(p.liveFrame(storedSnapshot(rec))); err != nil {
			return storeError(err, "Run", id)
		}
	} else {
		defer leave()
	}
	return p.push(c, id, sub, stored, "run ended")
}

// push serves a push-only WebSocket: stored, when set, is the one frame
// sent before a normal close; otherwise every frame of sub until the feed
// ends (closed with ended), the page goes, or the server shuts down.
func (p *Playground) push(c echo.Context, id string, sub *subscriber, stored []byte, ended string) error {
	// Default options: the Origin must match the Host (same site only).
	conn, err := websocket.Accept(c.Response(), c.Request(), nil)
	if err != nil {
		return nil // Accept wrote the HTTP error
	}
	defer conn.CloseNow()
	lc := &liveConn{away: make(chan struct{})}
	p.mu.Lock()
	p.conns[lc] = struct{}{}
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		delete(p.conns, lc)
		p.mu.Unlock()
	}()
	// The socket outlives the request's context; CloseRead answers pings and
	// cancels ctx when the page closes.
	ctx := conn.CloseRead(context.Background())

	write := func(b []byte) error {
		wctx, cancel := context.WithTimeout(ctx, liveWriteTimeout)
		defer cancel()
		return conn.Write(wctx, websocket.MessageText, b)
	}
	if stored != nil {
		if write(stored) == nil {
			conn.Close(websocket.StatusNormalClosure, "stored run")
		}
		return nil
	}
	for {
		select {
		case b, open := <-sub.msgs:
			if !open {
				if sub.slow {
					conn.Close(websocket.StatusPolicyViolation, "too slow to keep up")
				} else {
					conn.Close(websocket.StatusNormalClosure, ended)
				}
				return nil
			}
			if err := write(b); err != nil {
				if !errors.Is(err, context.Canceled) {
					p.log.Debug("live feed write", "feed", id, "err", err)
				}
				return nil
			}
		case <-ctx.Done():
			return nil
		case <-lc.away:
			conn.Close(websocket.StatusGoingAway, "server shutting down")
			return nil
		}
	}
}

// storedSnapshot rebuilds the end state of a race from the store: each
// lane shows its last repeat, as the live view did when the race ended.
func storedSnapshot(rec *rollout.RunRecord) rollout.Snapshot {
	s := rollout.Snapshot{RunID: rec.ID, Status: rec.Status, Config: rec.Config, Summary: rec.Summary}
	names, status := recordLanes(rec)
	for _, name := range names {
		last := -1
		for _, t := range rec.Turns {
			if t.Lane == name && t.Repeat > last {
				last = t.Repeat
			}
		}
		ls := rollout.LaneSnapshot{Lane: name, Label: rollout.LaneLabel(name), Status: status[name].Status, Error: status[name].Error, Repeat: max(last, 0)}
		if ls.Status == "" {
			ls.Status = rec.Status
		}
		for _, t := range rec.Turns {
			if t.Lane != name || t.Repeat != last {
				continue
			}
			ls.Turns = append(ls.Turns, t)
			ls.Tokens += t.OutputTokens
			if t.Index >= 0 {
				ls.Turn = t.Index + 1
			}
			ls.ElapsedNS = max(ls.ElapsedNS, t.DoneNS+t.ToolNS)
		}
		if total := status[name].TotalNS; total > 0 && rec.Config.Repeats <= 1 {
			ls.ElapsedNS = total
		}
		if ls.ElapsedNS > 0 {
			ls.TokensPerSec = float64(ls.Tokens) / (float64(ls.ElapsedNS) / 1e9)
		}
		// Without the race's own clock (a run stored before it was kept),
		// lanes one after another (or taking turns) add up; lanes
		// together last as long as the slowest.
		if rec.Config.Order() != rollout.OrderTogether {
			s.ElapsedNS += ls.ElapsedNS
		} else {
			s.ElapsedNS = max(s.ElapsedNS, ls.ElapsedNS)
		}
		s.ClockNS = max(s.ClockNS, ls.ElapsedNS) // no lane runs: the largest own clock
		s.Lanes = append(s.Lanes, ls)
	}
	if rec.Summary != nil && rec.Summary.ElapsedNS > 0 {
		s.ElapsedNS = rec.Summary.ElapsedNS
	}
	return s
}
