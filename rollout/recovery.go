package rollout

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"agentloop/api"
)

// How the agent recovers when an attempt fails, the way a well-behaved
// client does (docs/decisions.md, "Drills fire only when armed"):
//   - previous_response_not_found: retry at once with the full context;
//   - websocket_connection_limit_reached, or a WebSocket that dropped:
//     open a new connection and send the full context;
//   - the WebSocket upgrade refused (426): go on over HTTP, full context;
//   - 429, 5xx, or an HTTP stream that ended without its terminal event:
//     retry after a backoff, or after the server's Retry-After.
//
// Each recovery is recorded on the turn it delayed, with its cost: the
// failed attempt's time and the wait after it.

// Recovery is one failed attempt of a turn and what the agent did.
type Recovery struct {
	Error      string `json:"error"`  // what the attempt met: an error code, a status, "stream dropped"
	Action     string `json:"action"` // ActionFullContext, ActionReconnect, ActionHTTP or ActionRetry
	DurationNS int64  `json:"duration_ns"`
	// Drill is the fault drill the engine named on the error, or in the
	// trace of the response that dropped, if any.
	Drill string `json:"drill,omitempty"`
	// ResponseID is the response a dropped stream was streaming, if known.
	ResponseID string `json:"response_id,omitempty"`
}

// Recovery actions.
const (
	ActionFullContext = "full-context retry"
	ActionReconnect   = "reconnect"
	ActionHTTP        = "http fallback"
	ActionRetry       = "retry"
)

// maxRecoveries bounds the failed attempts of one turn.
const maxRecoveries = 5

// Backoff of a retry without Retry-After: base, doubling, at most cap.
const (
	backoffBase = 50 * time.Millisecond
	backoffCap  = 2 * time.Second
)

// streamDropped is the Error of a recovery from errDropped.
const streamDropped = "stream dropped"

// errDropped marks a stream that ended without its terminal event.
var errDropped = errors.New("stream dropped before its terminal event")

// droppedError is a dropped stream, with the response it was streaming
// if response.created had named it.
type droppedError struct {
	responseID string
	cause      error // nil: the stream ended cleanly but early
}

func (e *droppedError) Error() string {
	s := errDropped.Error()
	if e.responseID != "" {
		s += " (response " + e.responseID + ")"
	}
	if e.cause != nil {
		s += ": " + e.cause.Error()
	}
	return s
}

func (e *droppedError) Unwrap() error { return errDropped }

// errUpgradeRefused marks a WebSocket handshake answered with 426.
var errUpgradeRefused = errors.New("WebSocket upgrade refused")

// httpError reads a non-200 answer's OpenAI error envelope, with the
// headers that matter to a retry.
func httpError(resp *http.Response, body []byte) *api.Error {
	var env struct {
		Error *api.WireError `json:"error"`
	}
	e := &api.Error{Status: resp.StatusCode, Message: string(body)}
	if json.Unmarshal(body, &env) == nil && env.Error != nil {
		e.Type, e.Code, e.Message, e.Param = env.Error.Type, env.Error.Code, env.Error.Message, env.Error.Param
	}
	e.Headers = map[string]string{}
	for _, h := range []string{"Retry-After", "retry-after-ms", api.HeaderDrill} {
		if v := resp.Header.Get(h); v != "" {
			e.Headers[h] = v
		}
	}
	return e
}

// header reads a header of an error, whatever its case.
func header(e *api.Error, name string) string {
	for k, v := range e.Headers {
		if http.CanonicalHeaderKey(k) == http.CanonicalHeaderKey(name) {
			return v
		}
	}
	return ""
}

// recoveryFor says how to recover from err, the wait before the next
// attempt (attempt counts from 1), and what to record. ok is false when
// the error is not one a client recovers from.
func recoveryFor(err error, attempt int) (rec Recovery, wait time.Duration, ok bool) {
	backoff := min(backoffBase<<(attempt-1), backoffCap)
	var ae *api.Error
	switch {
	case errors.Is(err, errUpgradeRefused):
		return Recovery{Error: "upgrade refused (426)", Action: ActionHTTP, Drill: drillOf(err)}, 0, true
	case errors.Is(err, errDropped):
		rec = Recovery{Error: streamDropped, Action: ActionRetry}
		var de *droppedError
		if errors.As(err, &de) {
			rec.ResponseID = de.responseID
		}
		return rec, backoff, true
	case errors.As(err, &ae):
		rec = Recovery{Error: ae.Code, Drill: header(ae, api.HeaderDrill)}
		if rec.Error == "" {
			rec.Error = strconv.Itoa(ae.Status)
		}
		switch {
		case ae.Code == api.CodePreviousResponseNotFound:
			rec.Action = ActionFullContext
			return rec, 0, true
		case ae.Code == api.CodeWebSocketConnectionLimitReached:
			rec.Action = ActionReconnect
			return rec, 0, true
		case ae.Status == http.StatusTooManyRequests || ae.Status >= 500:
			rec.Action = ActionRetry
			if hint, ok := retryAfter(ae); ok {
				backoff = hint
			}
			return rec, backoff, true
		}
	}
	return Recovery{}, 0, false
}

// retryAfter reads the server's hint: retry-after-ms, else Retry-After in
// seconds. It is capped, so a hostile hint cannot park a lane.
func retryAfter(e *api.Error) (time.Duration, bool) {
	if v := header(e, "retry-after-ms"); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms >= 0 {
			return min(time.Duration(ms*float64(time.Millisecond)), time.Minute), true
		}
	}
	if v := header(e, "Retry-After"); v != "" {
		if s, err := strconv.Atoi(v); err == nil && s >= 0 {
			return min(time.Duration(s)*time.Second, time.Minute), true
		}
	}
	return 0, false
}

// drillOf finds the drill an upgrade refusal named.
func drillOf(err error) string {
	var ue *upgradeError
	if errors.As(err, &ue) {
		return ue.drill
	}
	return ""
}

// upgradeError is a refused WebSocket handshake.
type upgradeError struct {
	status int
	drill  string
}

func (e *upgradeError) Error() string { return fmt.Sprintf("WebSocket upgrade refused: %d", e.status) }
func (e *upgradeError) Unwrap() error { return errUpgradeRefused }

// attempt sends one request (a warm-up when warm) and recovers from the
// failures a client should survive. It returns the result and the
// recoveries it made, or (nil, nil, nil) for a warm-up that a fallback to
// HTTP made pointless.
func (l *laneRun) attempt(ctx context.Context, req *Request, warm bool) (*Result, []Recovery, time.Time, error) {
	var recs []Recovery
	first := time.Now()
	for n := 1; ; n++ {
		start := time.Now()
		var res *Result
		var err error
		if w, ok := l.tr.(*wsTransport); ok && warm {
			res, err = w.Warmup(ctx, *req)
		} else if warm {
			return nil, recs, first, nil
		} else {
			res, err = l.tr.Turn(ctx, *req)
		}
		if err == nil {
			return res, recs, first, nil
		}
		if ctx.Err() != nil {
			return nil, recs, first, errStopped
		}
		rec, wait, ok := recoveryFor(err, n)
		if !ok || n > maxRecoveries {
			return nil, recs, first, err
		}
		if err := l.recover(ctx, req, &rec, wait); err != nil {
			return nil, recs, first, err
		}
		rec.DurationNS = time.Since(start).Nanoseconds()
		recs = append(recs, rec)
	}
}

// recover does what rec says before the next attempt.
func (l *laneRun) recover(ctx context.Context, req *Request, rec *Recovery, wait time.Duration) error {
	if wait > 0 {
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return errStopped
		}
	}
	w, isWS := l.tr.(*wsTransport)
	switch {
	case rec.Action == ActionFullContext:
		req.Previous = ""
	case rec.Action == ActionHTTP:
		l.fallBack()
		req.Previous = ""
	case rec.Action == ActionReconnect || (isWS && rec.Error == streamDropped): // a dropped WebSocket is gone
		rec.Action = ActionReconnect
		req.Previous = "" // a new connection holds no cached response
		if err := w.reconnect(ctx); err != nil {
			if !errors.Is(err, errUpgradeRefused) {
				return err
			}
			rec.Action = ActionHTTP // the new connection was refused: go on over HTTP
			l.fallBack()
		}
	}
	return nil
}

// fallBack moves a WebSocket lane to HTTP (full context, store:false, /v1).
func (l *laneRun) fallBack() {
	if w, ok := l.tr.(*wsTransport); ok {
		l.tr.Close()
		l.tr = w.httpFallback()
	}
}
