// Package drill is the fault drills (docs/decisions.md, "Drills fire only
// when armed"): faults the engine
// injects only when armed, through --drill or /api/drills, to test how a
// client recovers. A drill applies to the whole server, both engines. It
// fires once a session has had after_turns responses finished since that
// drill was armed (each drill counts from its own arming, while it can
// still fire), at most times times, and only on requests of its scope when
// it has one. Each firing is recorded on the
// drill and in the trace of the request it hit.
//
// The registry is drill.go, its API under /api/drills drillapi.go, and the
// decorators that make a drill act hooks.go: each enters an engine's stage
// table, wraps a response's sink or wraps the WebSocket handler, so the
// core never calls a drill.
package drill
