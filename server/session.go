package server

import (
	"net/http"
	"strings"

	"agentloop/api"
)

// Session keys (docs/decisions.md, "Client sessions are the engine's to
// name"): a client session
// is one WebSocket connection, or the HTTP requests that share a
// prompt_cache_key, or else those of one TCP connection. Drills count
// turns per session and the inspector groups turns by it.
const (
	sessionWebSocket = "ws:"        // + a connection id
	sessionCacheKey  = "http:key:"  // + the prompt_cache_key
	sessionHTTPConn  = "http:conn:" // + the client's address and port
)

// httpSession is the session of an HTTP request with that
// prompt_cache_key (empty when it has none or its body did not decode).
func httpSession(r *http.Request, cacheKey string) string {
	if cacheKey != "" {
		return sessionCacheKey + cacheKey
	}
	return sessionHTTPConn + r.RemoteAddr
}

// newWSSession names a new WebSocket connection.
func newWSSession() string { return sessionWebSocket + api.NewID("conn") }

// IsWebSocketSession says whether a session key names a WebSocket
// connection.
func IsWebSocketSession(key string) bool { return strings.HasPrefix(key, sessionWebSocket) }

// clientOf reads who sent a request from its headers; nil when it says
// nothing.
func clientOf(r *http.Request) *api.Client {
	c := api.Client{UserAgent: r.Header.Get("User-Agent"), Originator: r.Header.Get("Originator"),
		Beta: strings.Join(r.Header.Values("OpenAI-Beta"), ", "), Race: r.Header.Get(api.HeaderRace)}
	if len(c.Race) > api.MaxRaceTag {
		c.Race = c.Race[:api.MaxRaceTag]
	}
	if c == (api.Client{}) {
		return nil
	}
	return &c
}

// Observer sees every request an engine finishes or rejects, through its
// trace, with the session, the client and any error filled in. It is
// called on the request's goroutine after the reply is written, outside
// the measured stages, so it must not block: the inspector queues and
// records asynchronously.
//
// ObserveOpen and ObserveClose bracket what keeps a session live: a
// WebSocket connection from its upgrade until it closes, an HTTP turn from
// the moment its body names its session (after parse) until its trace is
// observed. Each
// ObserveOpen is followed by exactly one ObserveClose of the same key.
type Observer interface {
	ObserveTrace(t *api.Trace)
	ObserveOpen(session string)
	ObserveClose(session string)
}

// observeOpen tells the observer a session's connection or turn opened;
// the returned func tells it that it closed.
func (e *Engine) observeOpen(session string) (closed func()) {
	o := e.sh.Observer
	if o == nil {
		return func() {}
	}
	o.ObserveOpen(session)
	return func() { o.ObserveClose(session) }
}

// observe hands a copy of a finished request's trace to the observer, if
// there is one, with the error that ended the request. The trace ring may
// already hold the original, so it is never changed here.
func (e *Engine) observe(t *trace, aerr *api.Error) {
	o := e.sh.Observer
	if o == nil || aerr == errProcessed {
		return
	}
	c := t.Trace
	if aerr != nil {
		c.Error, c.Status = aerr.Code, aerr.Status
		if c.Error == "" {
			c.Error = aerr.Type
		}
	}
	o.ObserveTrace(&c)
}
