package api

// Scopes (docs/protocol.md, "Scopes"): a scope is a label a client's
// requests carry, through the X-Agentloop-Scope header (HeaderScope), its
// query alias, or the mount /scope/{id}/v1, which is /v1 with the header
// set to id, over HTTP and WebSocket alike. A client pointed at the mount
// needs no header: its base URL carries the scope. A scope created through
// POST /api/scopes also carries the policy's tool-turn count K and keeps
// the traces of its requests for grading (package check).

// ScopePath is the mount of scope id's engine: OPENAI_BASE_URL for a
// client in that scope is the server's URL followed by it.
func ScopePath(id string) string { return "/scope/" + id + "/v1" }

// ScopeSpec creates a scope: POST /api/scopes's body.
type ScopeSpec struct {
	// ToolTurns is K: in the scope, while the context holds fewer than K
	// tool outputs, the policy calls one of the client's function tools
	// (the best match for the task, else the first) instead of answering.
	ToolTurns int `json:"tool_turns"`
}

// Scope is a scope as GET /api/scopes/{id} returns it, with the traces of
// its requests, oldest first.
type Scope struct {
	ID     string `json:"id"`
	Object string `json:"object"` // "scope"
	ScopeSpec
	// Path is the scope's mount, ScopePath(ID).
	Path          string `json:"path"`
	Owner         string `json:"owner,omitempty"`
	CreatedUnixNS int64  `json:"created_unix_ns"`
	// Traces are the scope's requests as the engine observed them;
	// TracesDropped counts the oldest that no longer fit.
	Traces        []Trace `json:"traces"`
	TracesDropped int     `json:"traces_dropped,omitempty"`
	// InFlight counts the HTTP requests and WebSocket connections on the
	// scope's mount that have not ended: while it is above 0, traces may
	// still come. A request's trace is kept before it ends.
	InFlight int `json:"in_flight"`
}
