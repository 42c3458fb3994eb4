// Package scenario owns what both sides of a scripted coding-agent rollout
// agree on: the virtual repositories, the tasks, the success checks, the tool
// definitions with the format of their outputs, and the scripted agent's plan.
//
// The engine's scenario policy plays the model by calling [Scenario.Next]; it
// sees only the conversation (tool calls and their real outputs), never the
// workspace. The client runs the tools with [Workspace.Call] against an
// in-memory copy of the repository and judges the end state with
// [Scenario.Check].
//
// The scripted agent is straight-line plan code replayed against the
// history on every call of Next: each tool call it makes is answered from the
// history in order, and the first call the history does not hold yet is the
// next action. So the agent keeps no state between turns, reacts only to real
// outputs (failing test names and locations, search hits, file contents it
// builds patch context from) and is deterministic per seed. Seeds shuffle what
// it explores and pick traits that cycle with the seed (fix one package at a
// time, search too narrowly, misremember a signature so a patch fails and is
// retried from a fresh read).
//
// Rollouts grow the conversation to 60k-100k o200k tokens: the agent
// explores until it has seen a seeded amount of output. quick-fix, a short
// session for a class, reads only what the failures point at and stays
// under half of that. Measured with
// tiktoken-go, the outputs run 3.3 (Go with go test -v) to 3.9 (Python)
// characters per token; the tests assert at least 240,000 characters.
//
// The package imports the standard library only. It never does I/O outside
// its embedded data, never reads clocks or global random sources (every run is
// a pure function of the seed and the tool outputs), and never trusts tool
// arguments: they are decoded strictly and bounded in size.
package scenario
