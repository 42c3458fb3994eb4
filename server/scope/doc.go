// Package scope is the report card's scopes (docs/protocol.md, "Scopes"):
// the registry of scopes created through POST /api/scopes, each with its
// tool-turn count K (api.ScopeSpec) that the engine hands the policy as a
// request field, and the traces of its requests, which it keeps as an
// observer of the engine (core.Observer) so that a gauntlet (package
// check) grades what the engine saw, in process or over HTTP alike.
//
// The mount /scope/{id}/v1, /v1 with X-Agentloop-Scope set to id, is the
// server package's (routes.go); a scope need not be created to be
// mounted, but only a created one has a K and keeps traces.
//
// The registry is bounded: at most maxScopes scopes (the oldest goes
// first), each keeping its latest maxTraces traces, and a scope is
// forgotten maxAge after it was created. Only the client that created a
// scope (request.ClientIdentity) reads or deletes it.
package scope
