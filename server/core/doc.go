// Package core is the Responses engine's pipeline, with no transport in
// it: it imports no net/http, Echo or WebSocket package
// (TestCoreImportsNoTransport keeps it so).
//
// A flight is one request through the pipeline, from its first byte to its
// terminal event (flight.go); "turn" is rollout's word, an agent's turn,
// and is not used here. Each stage writes its own group of the flight's
// fields, and reads only the groups of the stages before it.
//
// The files form layers, each using only those beneath it: the leaves
// (caches, traces, metrics, the budget, safety); then what a flight
// carries (chain.go, stream.go, flight.go), with a kept state's compact
// form while the connection cache holds it idle (statepack.go) and the one
// memory budget for all connection state (statebudget.go); the engine (engine.go); the
// stage runner and the stages (stages.go, render.go, stack.go,
// pipeline.go, reasoning.go); then generation (prototype.go, generate.go); and the
// hooks (hooks.go), where the layers above add stages, wrap the sink and
// reach a flight.
//
// Two features sit on the hooks: background responses (background.go, an
// Outliving sink whose state, cancel flag and events are in the store)
// and conversations (conversation.go, load's work when a create names one,
// and finalize's append to it).
//
// The hooks the features to come use, so they add stages rather than
// reopen the layers (hooks.go): an Outliving sink keeps a response
// generating after its request has gone (background responses);
// Via.BetweenItems is the point between output items where a response can
// stop and hand over, which steering uses (steer.go, Via.Steering). The
// create's stage table's entries for the long-session and reasoning
// features are filled in: compaction (compaction.go: the input's
// compaction items opened before render, the compaction stage after it,
// POST /responses/compact's Compact), the context window
// (contextwindow.go) and reasoning (last before the scheduler;
// reasoning.go), which decides whether a create reasons.
//
// A transport hands the core a Flight with its Via (its rules, and for
// WebSocket mode its Conn), runs Prepare and Generate, and receives the
// events through a Sink. The prototype's stages are pipeline stages and
// live here; it waits for its next message through Conn.
package core
