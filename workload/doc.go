// Package workload is the shape of an agent session without its content:
// per turn, the new input's token counts and kinds, the output's token count
// and tool calls (with their argument sizes), and the client's time between
// receiving a response and sending the next request; plus the size of the
// instructions and of the tools. The format is documented in
// docs/workload.md.
//
// It owns the format, its decoder (strict, bounded, with errors that name
// the turn and the field), the one-token filler that replays use for
// synthetic content, and the reply spec a replayed request carries in its
// metadata (ReplyKey) so that the engine's workload policy answers with the
// recorded sizes.
//
// It owns the importers of recorded sessions too (Codex CLI, mini-swe-agent
// in asciinema, SWE-agent .traj, ATIF, Claude Code): each reads a
// recording, counts its text with a Counter the caller hands in, and keeps
// counts and times only.
//
// A workload never holds prompt, tool or reply content, so it can be shared.
// The package imports the standard library only: inspect, rollout, policy,
// web and cmd all use it.
package workload
