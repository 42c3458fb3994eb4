// Package httpapi is the engine's HTTP+SSE transport: POST /responses
// (streamed as server-sent events or answered whole), the stored
// responses' routes, models, input_tokens, GET /api/traces/:id and the
// metrics handler. It reaches the core through its exported API and
// core.Sink.
package httpapi
