// Package bench measures the engine from the outside, over real sockets, as
// a client would: the overhead benchmark (the engine's measured
// pre-inference time per request, by path and context size), the load
// generator (concurrent streams, tokens/s, time to first token, inter-token
// gaps), and the floor (the load's writes alone, with no engine: what the
// machine charges for them). It never reaches into the engine: what it
// reports comes from the wire and from the engine's public trace and
// metrics endpoints.
package bench
