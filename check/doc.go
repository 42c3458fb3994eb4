// Package check is the report card (README.md, "Grade your client"): it
// owns the gauntlet, the checks with their stable ids, and their grading.
//
// For each check, Run creates a scope of its own on the server (package
// server/scope: the mount /scope/{id}/v1 with the policy's tool-turn
// count K), arms the check's drill in that scope, starts the client's
// command with OPENAI_BASE_URL set to the scope's mount, waits for it to
// exit within a time limit, then reads the traces the engine kept for the
// scope and the drill's firings, and grades them (grade.go). Checks
// without a drill share one run. A verdict comes only from what the
// engine observed, never from what the client says or prints: pass, fail,
// or not_exercised when the client never reached what the check tests
// (it finished before the drill fired, offered no function tool, or never
// used the transport the check is about). Drills fire on turn counts (the
// connection-limit check's idle limit excepted, which is a time by
// nature); K keeps the session going past the drill's turn.
//
// Run speaks to the server over HTTP only (/api/scopes, /api/drills), so
// it grades against a server in this process or a remote one alike; the
// playground's /check grades one check live with the same Grade
// functions. report.go writes the report as text, JSON and JUnit XML;
// record.go turns it into the store's record and reads a posted one
// back strictly. The reference client the tests grade, one that does each
// thing right and, with -mistakes, the field's mistakes, is
// check/internal/refclient.
package check
