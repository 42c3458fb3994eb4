// Package server is the Responses engine: the HTTP+SSE and WebSocket
// transports, the request pipeline (parse, resolve, load, validate, render,
// safety, queue, prefill, generate, finalize, with the modelled stack's
// stages among them), the connection-scoped cache and the request-level
// caches, and traces.
//
// A flight is one request through the pipeline, from its first byte to its
// terminal event (flight.go); "turn" is rollout's word, an agent's turn,
// and is not used here. Each stage writes its own group of the flight's
// fields, and reads only the groups of the stages before it.
//
// The files form layers, each using only those beneath it: the leaves
// (caches, traces, metrics, the drill registry, the connection registry,
// the WebSocket message rules); then what a flight carries (chain.go,
// stream.go, lanes.go with the queues, flight.go); the engine
// (engine.go); the stage runner and the stages (stages.go, render.go,
// stack.go, drillhooks.go, pipeline.go); then generation (prototype.go,
// generate.go); and on top the ways in: ws.go, http.go and routes.go. The
// WebSocket transport gives the pipeline one small interface, connection, which the
// lane implements; the drill and prototype hooks use it and add no
// methods to the transport's types.
//
// The honesty rule binds every line here: no stage asks which transport it
// serves. A WebSocket continuation is faster only because the connection
// cache already holds what the other paths must rebuild. Modelled costs come
// from inference and are applied the same way to every request.
//
// server never imports a store backend (store/sqlite), a database driver or
// web; it declares the narrow Store interface it needs, in the types of the
// driver-free store package, and answers a failed store call with
// api.StoreError, which reads why a store call failed. Its HTTP handlers return
// *api.Error and never write an error response themselves: the process's
// Echo error handler does.
package server
