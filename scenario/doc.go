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
// The package imports the standard library only. It never does I/O outside
// its embedded data, never reads clocks or global random sources (every run is
// a pure function of the seed and the tool outputs), and never trusts tool
// arguments: they are decoded strictly and bounded in size.
package scenario
