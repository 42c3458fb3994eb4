// Package policy decides what the simulated model says or calls. The engine
// hands it a flattened conversation (Request: instructions, items, function
// and custom tools, tool_choice, text format, seed) and gets back the output
// items (Reply) before any token is scheduled.
//
// It owns:
//   - the Policy interface and its Request, Item, Tool and Reply types;
//   - the chat policy: text that refers to the question, tool calls whose
//     arguments satisfy the tool's JSON Schema (a documented subset), custom
//     tool calls whose input fits the tool's grammar (regex or a Lark
//     subset), structured outputs (text.format json_schema or json_object)
//     from the same generator as tool arguments, answers that use the tool
//     outputs, question hints, and exact-length replies for load tests
//     (ignore_eos);
//   - the scenario policy, which plays the scripted coding agent of a
//     package scenario rollout;
//   - the workload policy, which answers a replayed workload's request
//     with exactly the reply its metadata carries (workload.ReplyKey);
//   - the router that picks between them: the reply key, then the
//     "agentloop-scenario:" marker, then chat; for a request that reasons
//     it adds the reasoning summary's text to whichever answered
//     (reasoning.go). How many reasoning tokens a reply took is the
//     engine's to decide, unless a replayed workload turn recorded it
//     (Reply.ReasoningTokens).
//
// It uses inference's tokenizer to count and split what it writes, and
// inference's hashes for its choices, so the same seed gives the same run.
//
// The engine's resolve stage builds Tool values for custom tools too
// (Type ToolCustom, Grammar from format {type: "grammar"}), and its
// policy.Request carries Format from text.format (the schema as
// api.CheckSchema accepted it) and custom_tool_call_output items with
// their Output; it streams an OutputCustomToolCall's Arguments as its
// input.
//
// A policy decides content only, never time: it must never sleep, read a
// clock or a global random source, pace tokens, or know about profiles,
// transports, HTTP, SQL or sockets. Respond is a pure function of the
// request and safe for concurrent use. It must never import server, store,
// rollout or web.
package policy
