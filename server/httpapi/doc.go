// Package httpapi is the engine's HTTP+SSE transport: POST /responses
// (streamed as server-sent events or answered whole, or queued in the
// background: background.go), the stored responses' routes (their
// cancel and resumed streams too), the Conversations API
// (conversations.go), models, input_tokens, GET /api/traces/:id and the
// metrics handler. It reaches the core through its exported API and
// core.Sink.
package httpapi
