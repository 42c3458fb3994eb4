// Package server is the Responses engine: the HTTP+SSE and WebSocket
// transports, the request pipeline (parse, resolve, load, validate, render,
// safety, queue, prefill, generate, finalize: pipeline.go's stage lists are
// the order), the connection-scoped cache
// and the request-level caches, and traces.
//
// The honesty rule binds every line here: no stage asks which transport it
// serves. A WebSocket continuation is faster only because the connection
// cache already holds what the other paths must rebuild. Modelled costs come
// from inference and are applied the same way to every request.
//
// server never imports a store backend (store/sqlite), a database driver or
// web; it declares the narrow Store interface it needs, in the types of the
// driver-free store package, and tells a busy store from a full one with
// errors.Is(err, store.ErrBusy) and store.ErrFull. Its HTTP handlers return
// *api.Error and never write an error response themselves: the process's
// Echo error handler does.
package server
