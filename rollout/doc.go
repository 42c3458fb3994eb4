// Package rollout is the client side of an agent: it runs a scenario's
// tools on an in-memory workspace, talks to the engine over one of several
// transports (stateless HTTP, chained HTTP, WebSocket mode, and the opt-in
// prototype lane: one long-running WebSocket response in segments, see
// docs/protocol.md, "The prototype"), through a latency proxy that delays
// real bytes, and records every turn's timing merged with the engine's
// trace. The race runs lanes side by side, one after another, or taking
// turns (turns.go: at once, one step at a time, each lane on its own
// clock), and stores everything through the RunStore interface (either
// store backend, in a process). A race hands its live snapshots to one
// observer; fanning them out to readers is the caller's.
//
// rollout owns the race's sentences (headline.go): the headline, the split
// of the saving into the waterfall's groups, and "what it would take". They
// are built once, into the run's summary, and every page, the CLI and the
// run API show them as stored; a run stored without them gets them when it
// is read (LoadRun). Estimate says beforehand how long a race will take
// (estimate.go), and Classroom is presenter mode's short race.
//
// It also holds a race to its model's context window, and a workload
// upload to the largest (window.go: CheckWorkloadFits), reading the
// windows the engine serves (inference.Windows; Runner.Windows);
// compact_threshold makes a race's
// lanes ask for compaction.
//
// rollout talks to the engine only over sockets: it must never import the
// server package, call the engine in-process, or import a store backend.
package rollout
