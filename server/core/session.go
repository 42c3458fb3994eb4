package core

import "agentloop/api"

// Observer sees every request an engine finishes or rejects, through its
// trace, with the session, the client and any error filled in. It is
// called on the request's goroutine after the reply is written, outside
// the measured stages, so it must not block: the inspector queues and
// records asynchronously.
//
// ObserveOpen and ObserveClose bracket what keeps a session live: a
// WebSocket connection from its upgrade until it closes, an HTTP request from
// the moment its body names its session (after parse) until its trace is
// observed. Each
// ObserveOpen is followed by exactly one ObserveClose of the same key.
type Observer interface {
	ObserveTrace(t *api.Trace)
	ObserveOpen(session string)
	ObserveClose(session string)
}
