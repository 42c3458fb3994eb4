package drill

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"agentloop/api"
	"agentloop/server/core"
	"agentloop/server/request"
	"agentloop/server/wsmode"

	"github.com/labstack/echo/v4"
)

// The drill decorators (drill.go has the registry). The core calls none of
// them: Install enters them in an engine's stage table and wraps its sink,
// and RefuseUpgrade wraps the WebSocket handler.
//   - refuse-upgrade: RefuseUpgrade, at the WebSocket handshake;
//   - evict-cache: wraps load, which then misses the connection cache;
//   - connection-limit, http-429, http-503: a step once a create is
//     prepared (stepPrepared), by the transport it came on;
//   - connection-limit with after_ms: ConnectionLimit gives a new
//     connection of its scope that limit (connlimit.go);
//   - drop-mid-stream, stall, slow-first-token: wrap a streamed
//     response's sink;
//   - after_turns: OnFinished counts each finished response.

// stepPrepared is the step the drills add once a create is prepared; it
// records no span.
const stepPrepared = "drill_prepared"

// Install makes the drills of d act on engine e.
func Install(e *core.Engine, d *Drills) {
	e.WrapStage(api.StageLoad, func(load core.StageFunc) core.StageFunc {
		return func(e *core.Engine, ctx context.Context, fl *core.Flight) (core.StageResult, *api.Error) {
			evicted := fl.Request().PreviousResponseID != "" && fl.CachedParent() && !d.idle() && d.fireOn(hookEvict, fl) != nil
			if evicted {
				fl.ForgetCachedParent() // evict-cache: the connection forgets its cached response
			}
			res, err := load(e, ctx, fl)
			if err != nil && evicted {
				drillError(err, api.DrillEvictCache)
			}
			return res, err
		}
	})
	e.AddStage(core.StageReasoning, core.Stage{Name: stepPrepared, Kind: core.Unrecorded,
		Run: func(e *core.Engine, _ context.Context, fl *core.Flight) (core.StageResult, *api.Error) {
			return core.Skip, d.prepared(e, fl)
		}})
	e.OnFinished(func(fl *core.Flight) { d.finished(fl.Trace.Session) })
	e.WrapSink(func(ctx context.Context, fl *core.Flight, out core.Sink) core.Sink {
		return d.streamSink(ctx, e, fl, out)
	})
}

// fireOn fires a drill of hook on a request and names it in its trace.
func (d *Drills) fireOn(hook drillHook, fl *core.Flight) *api.Drill {
	t := fl.Trace
	dr := d.fire(hook, t.Session, t.ScopeOf(fl.Partition()), api.DrillFiring{ResponseID: t.ResponseID, Session: t.Session})
	if dr != nil {
		t.Drill = dr.Drill
	}
	return dr
}

// RefuseUpgrade is refuse-upgrade: the handshake gets 426, or the
// drill's status (405 or 404, as some gateways answer). after_turns
// counts the upgrade attempts of the scope.
func RefuseUpgrade(d *Drills, e *core.Engine, next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		if d.idle() || !request.IsUpgrade(r) {
			return next(c)
		}
		scope := api.AgentloopHeader(r, api.HeaderScope)
		dr := d.fire(hookUpgrade, "", scope, api.DrillFiring{Upgrade: true})
		if dr == nil {
			return next(c)
		}
		fl := e.NewFlight("websocket", time.Now(), nil)
		t := fl.Trace
		t.SetScope(scope)
		t.Session, t.Client, t.Drill = request.HTTPClientSessionKey(r, ""), request.ClientOf(r), dr.Drill
		status := dr.Status
		if status == 0 {
			status = http.StatusUpgradeRequired
		}
		err := drillError(api.Errorf(status, "", api.CodeWebSocketUpgradeRefused,
			"WebSocket mode is not available: send the request over HTTP (POST /responses)."), dr.Drill)
		e.Observe(t, err)
		return err
	}
}

// prepared fires the drill of a prepared create by its transport:
// connection-limit on a WebSocket answers with
// websocket_connection_limit_reached (the transport then closes the
// connection with 1000); http-429 and http-503 answer with that status,
// Retry-After (whole seconds, rounded up) and retry-after-ms.
func (d *Drills) prepared(e *core.Engine, fl *core.Flight) *api.Error {
	if d.idle() {
		return nil
	}
	if fl.Trace.Transport == "websocket" {
		dr := d.fireOn(hookWSCreate, fl)
		if dr == nil {
			return nil
		}
		return drillError(wsmode.ConnectionLimitReached(e.Config().WSLifetime), dr.Drill)
	}
	dr := d.fireOn(hookHTTPCreate, fl)
	if dr == nil {
		return nil
	}
	var err *api.Error
	if dr.Drill == api.DrillHTTP429 {
		err = api.Errorf(http.StatusTooManyRequests, "", api.CodeRateLimitExceeded, "Rate limit reached for requests. Please try again later.")
	} else {
		err = api.Errorf(http.StatusServiceUnavailable, "", api.CodeServerError, "The engine is overloaded. Please try again later.")
	}
	hint := time.Duration(dr.DurationMS) * time.Millisecond
	err = drillError(err, dr.Drill)
	err.Headers["Retry-After"] = strconv.Itoa(int((hint + time.Second - 1) / time.Second))
	err.Headers["retry-after-ms"] = strconv.FormatInt(dr.DurationMS, 10)
	return err
}

// errDrillDropped ends a stream that drop-mid-stream cut.
var errDrillDropped = errors.New("stream dropped by the drop-mid-stream drill")

// streamSink fires drop-mid-stream, stall or slow-first-token on a
// response that generates and streams, and returns the sink that applies
// it (out itself otherwise).
func (d *Drills) streamSink(ctx context.Context, e *core.Engine, fl *core.Flight, out core.Sink) core.Sink {
	if d.idle() || !fl.Request().Generates() {
		return out
	}
	if _, quiet := out.(core.Discard); quiet {
		return out
	}
	dr := d.fireOn(hookStream, fl)
	if dr == nil {
		return out
	}
	return &drillSink{Sink: out, drill: dr.Drill, hold: time.Duration(dr.DurationMS) * time.Millisecond,
		ctx: ctx, stop: e.Stopping(), t: fl.Trace, conn: fl.Via.Conn}
}

// drillSink applies a stream drill to a response's events:
// slow-first-token holds the stream after response.created and
// in_progress, before the generation starts; stall holds it, and
// drop-mid-stream cuts it, at the first event after the first delta.
type drillSink struct {
	core.Sink
	drill     string
	hold      time.Duration
	ctx, stop context.Context
	t         *core.Trace
	conn      core.Conn // the WebSocket connection drop-mid-stream cuts; nil over HTTP
	delta     bool      // a delta has been written
	done      bool      // the drill has acted
}

func (s *drillSink) Event(typ string, b []byte) error {
	if !s.done && s.delta && s.drill != api.DrillSlowFirstToken {
		s.done = true
		if err := s.Sink.Flush(); err != nil {
			return err
		}
		if s.drill == api.DrillDropMidStream {
			if s.conn != nil {
				s.conn.Drop()
			}
			return errDrillDropped
		}
		if err := s.wait(); err != nil {
			return err
		}
	}
	if typ == api.EventOutputTextDelta || typ == api.EventArgumentsDelta {
		s.delta = true
	}
	return s.Sink.Event(typ, b)
}

func (s *drillSink) Flush() error {
	err := s.Sink.Flush()
	if err == nil && !s.done && s.drill == api.DrillSlowFirstToken {
		s.done = true
		err = s.wait()
	}
	return err
}

// wait holds the stream for the drill's duration, recorded as a modelled
// span named after the drill; the client going away or the engine
// stopping ends it early.
func (s *drillSink) wait() error {
	from := time.Now()
	tm := time.NewTimer(s.hold)
	defer tm.Stop()
	var err error
	select {
	case <-tm.C:
	case <-s.ctx.Done():
		err = s.ctx.Err()
	case <-s.stop.Done():
	}
	s.t.Modelled(api.SpanDrill, from, s.drill)
	if err != nil {
		return fmt.Errorf("drill %s: %w", s.drill, err)
	}
	return nil
}
