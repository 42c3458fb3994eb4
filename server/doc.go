// Package server is the Responses engine as it serves: it builds each
// engine from its layers (New, the one constructor app and the engine's
// tests use) and mounts its routes (Register). The layers are packages
// here, each using only those beneath it:
//
//   - core: the pipeline (flight, stage tables, stages, generate, the
//     streamer), the caches, chains, traces, metrics and the in-flight
//     budget. It imports no HTTP, Echo or WebSocket package (a test keeps
//     it so) and asks no request which transport it came on.
//   - request: what both transports read from an HTTP request before its
//     body (who sent it, its client-session key, whether it upgrades).
//   - httpapi: HTTP+SSE (POST /responses, the stored responses, models,
//     input_tokens, the traces route, the metrics handler).
//   - wsmode: WebSocket mode: connections, lanes and their queues, the
//     batched socket writer, the message rules.
//   - drill: the fault drills: the registry, its API, and decorators
//     that enter an engine's stage table, wrap its sink or wrap the
//     WebSocket handler; the core has no drill call sites.
//   - scope: the report card's scopes (/api/scopes): each scope's
//     tool-turn count K, which the core hands the policy through
//     core.Shared.ToolTurns, and the traces of its requests; the mount
//     /scope/{id}/v1 is /v1 with the scope header set (routes.go).
//
// A transport reaches the core through core.Sink (the events of a
// response) and, for WebSocket mode, core.Conn (the connection cache and
// the queue, which the lane implements). A WebSocket create reads top
// down: wsmode (read, route to a lane, handle) → core (Prepare, Generate)
// → api.
//
// The honesty rule binds every line here: no stage asks which transport it
// serves. A WebSocket continuation is faster only because the connection
// cache already holds what the other paths must rebuild. Modelled costs come
// from apistack and are applied the same way to every request.
//
// server never imports a store backend (store/sqlite), a database driver or
// web; core declares the narrow Store interface it needs, in the types of
// the driver-free store package, and answers a failed store call with
// api.StoreError, which reads why a store call failed. The handlers return
// *api.Error and never write an error response themselves: the process's
// Echo error handler does.
package server
