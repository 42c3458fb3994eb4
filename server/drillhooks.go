package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"agentloop/api"
)

// The drill hooks (drill.go has the registry): the transports and the
// pipeline call them in one line each, and a hook that acts on the
// connection does so through connection (flight.go), the one interface the
// WebSocket transport gives the pipeline:
//   - refuse-upgrade: upgradeDrill, at the WebSocket handshake;
//   - evict-cache: evictDrill, where load finds the parent in the
//     connection cache;
//   - connection-limit: limitDrill, on a WebSocket create, once prepared;
//   - http-429, http-503: httpDrill, on an HTTP create, once prepared;
//   - drop-mid-stream, stall, slow-first-token: streamDrill wraps the
//     response's sink in generate.

// scopeOf is a request's drill scope: the X-Agentloop-Scope header (on a
// WebSocket, the upgrade's), else its prompt_cache_key.
func (t *trace) scopeOf(partition string) string {
	if t.scope != "" {
		return t.scope
	}
	return partition
}

// fireOn fires a drill of hook on a request and names it in its trace.
func (e *Engine) fireOn(hook drillHook, fl *flight) *api.Drill {
	t := fl.trace
	dr := e.sh.Drills.fire(hook, t.Session, t.scopeOf(fl.parsed.partition), api.DrillFiring{ResponseID: t.ResponseID, Session: t.Session})
	if dr != nil {
		t.Drill = dr.Drill
	}
	return dr
}

// upgradeDrill is refuse-upgrade: the handshake gets 426. after_turns
// counts the upgrade attempts of the scope.
func (e *Engine) upgradeDrill(r *http.Request) *api.Error {
	if e.sh.Drills.idle() {
		return nil
	}
	dr := e.sh.Drills.fire(hookUpgrade, "", api.AgentloopHeader(r, api.HeaderScope), api.DrillFiring{Upgrade: true})
	if dr == nil {
		return nil
	}
	t := e.newTrace("websocket", time.Now())
	t.Session, t.Client, t.Drill = httpClientSessionKey(r, ""), clientOf(r), dr.Drill
	err := drillError(api.Errorf(http.StatusUpgradeRequired, "", api.CodeWebSocketUpgradeRefused,
		"WebSocket mode is not available: send the request over HTTP (POST /responses)."), dr.Drill)
	e.observe(t, err)
	return err
}

// evictDrill is evict-cache: load forgets the connection's cached
// response, so a store:false continuation gets previous_response_not_found.
func (e *Engine) evictDrill(fl *flight) bool {
	return !e.sh.Drills.idle() && e.fireOn(hookEvict, fl) != nil
}

// limitDrill is connection-limit: a prepared WebSocket create is answered
// with websocket_connection_limit_reached, which it returns, and the
// transport closes the connection with 1000.
func (e *Engine) limitDrill(fl *flight) *api.Error {
	if e.sh.Drills.idle() {
		return nil
	}
	dr := e.fireOn(hookWSCreate, fl)
	if dr == nil {
		return nil
	}
	return drillError(connectionLimitReached(e.cfg.WSLifetime), dr.Drill)
}

// httpDrill is http-429 and http-503: a prepared create is answered with
// that status, Retry-After (whole seconds, rounded up) and retry-after-ms.
// It also takes the request's scope header, for the stream drills.
func (e *Engine) httpDrill(fl *flight, r *http.Request) *api.Error {
	fl.trace.scope = api.AgentloopHeader(r, api.HeaderScope)
	if e.sh.Drills.idle() {
		return nil
	}
	dr := e.fireOn(hookHTTPCreate, fl)
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

// streamDrill fires drop-mid-stream, stall or slow-first-token on a
// response that generates and streams, and returns the sink that applies
// it (out itself otherwise).
func (e *Engine) streamDrill(ctx context.Context, fl *flight, out sink) sink {
	if e.sh.Drills.idle() || !fl.parsed.req.Generates() {
		return out
	}
	if _, quiet := out.(discard); quiet {
		return out
	}
	dr := e.fireOn(hookStream, fl)
	if dr == nil {
		return out
	}
	return &drillSink{sink: out, drill: dr.Drill, hold: time.Duration(dr.DurationMS) * time.Millisecond,
		ctx: ctx, stop: e.stopCtx, t: fl.trace, conn: fl.via.conn}
}

// drillSink applies a stream drill to a response's events:
// slow-first-token holds the stream after response.created and
// in_progress, before the generation starts; stall holds it, and
// drop-mid-stream cuts it, at the first event after the first delta.
type drillSink struct {
	sink
	drill     string
	hold      time.Duration
	ctx, stop context.Context
	t         *trace
	conn      connection // the WebSocket connection drop-mid-stream cuts; nil over HTTP
	delta     bool       // a delta has been written
	done      bool       // the drill has acted
}

func (s *drillSink) event(typ string, b []byte) error {
	if !s.done && s.delta && s.drill != api.DrillSlowFirstToken {
		s.done = true
		if err := s.sink.flush(); err != nil {
			return err
		}
		if s.drill == api.DrillDropMidStream {
			if s.conn != nil {
				s.conn.drop()
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
	return s.sink.event(typ, b)
}

func (s *drillSink) flush() error {
	err := s.sink.flush()
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
	s.t.Spans = append(s.t.Spans, api.Span{Name: api.SpanDrill, StartNS: from.Sub(s.t.start).Nanoseconds(),
		DurationNS: time.Since(from).Nanoseconds(), Kind: api.Modelled, Note: s.drill, Segment: s.t.segment})
	if err != nil {
		return fmt.Errorf("drill %s: %w", s.drill, err)
	}
	return nil
}
