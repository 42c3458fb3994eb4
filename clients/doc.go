// Package clients holds the real-client conformance tests: the Codex CLI
// (`@openai/codex`, pinned in scripts/clients-setup.sh, installed by `make
// test` into .clients/) runs `codex exec` against the engine, started
// in-process on a real port, over WebSocket mode and over HTTP.
//
// Codex runs with a private CODEX_HOME and HOME in temporary directories
// (the user's ~/.codex is never read or written), a read-only sandbox, the
// approval policy "never" and a temporary working directory. The prompt
// makes the engine's chat policy ask for one harmless command, `echo hi`
// (see codexPrompt), so every run has a tool call and a continuation.
//
// Without the CLI the tests skip, saying why; with CI set they fail. The
// package holds tests only; it must never be imported.
package clients
