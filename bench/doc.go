// Package bench measures the engine from the outside, over real sockets, as
// a client would: the overhead benchmark (the engine's measured
// pre-inference time per request, by path and context size) and the load
// generator (concurrent streams, tokens/s, time to first token, inter-token
// gaps). It never reaches into the engine: what it reports comes from the
// wire and from the engine's public trace and metrics endpoints.
package bench
