// Package inspect is the inspector: it watches every request the engines
// finish or reject (their traces, through server.Observer) and groups them
// into client sessions, a WebSocket connection or the HTTP requests sharing
// a prompt_cache_key or a connection (docs/decisions.md, "Client sessions
// are the engine's to name"). For each session it keeps who the client is, its transport,
// its turns (each a waterfall of the engine's measured and modelled
// stages), cache hits and misses, tokens, bytes, errors and drills, and a
// summary: the API overhead, and for an HTTP session an estimate of what
// the same turns would have cost as WebSocket continuations (estimate.go).
//
// Traces arrive through a bounded queue that never blocks: a full queue
// drops the trace and counts it, so the inspector can never slow the
// engine. One goroutine groups them and writes them to the store in
// batches, outside the measured stages. Live and recent sessions stay in
// memory, bounded; older ones are read back from the store.
//
// inspect must never import server or web, never hold request or response
// content (a trace is timings and counts), and never block the caller of
// ObserveTrace.
package inspect
