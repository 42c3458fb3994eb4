package clients

import (
	"testing"

	"agentloop/server/request"
)

// codexBeta is the OpenAI-Beta header Codex sends on its WebSocket upgrade.
const codexBeta = "responses_websockets=2026-02-06"

// TestCodexCompletesOverWebSocket runs Codex in WebSocket mode: it warms
// the connection up (generate:false), sends the prompt as a continuation of
// the warm-up, runs the command the engine asks for and sends its output as
// a continuation of that, all on one connection. The drills that hit a
// continuation (evict-cache after the second turn) rely on those three
// responses.
func TestCodexCompletesOverWebSocket(t *testing.T) {
	t.Parallel()
	codex := findCodex(t)
	eng := startEngine(t)
	run := codex.exec(t, eng.app.URL(), webSocketMode)
	traces := eng.finishedTraces(t)
	logTraces(t, traces)
	run.requireCompleted(t)

	if len(traces) < 3 {
		t.Fatalf("the engine saw %d responses, want at least 3 (warm-up, tool call, answer)", len(traces))
	}
	session := traces[0].Session
	if !request.IsWebSocketSession(session) {
		t.Fatalf("session %q is not a WebSocket connection", session)
	}
	for i, tr := range traces {
		if tr.Session != session || tr.Transport != "websocket" || tr.Error != "" {
			t.Errorf("trace %d: %s session %q error %q, want websocket on %q without error", i, tr.Transport, tr.Session, tr.Error, session)
		}
	}
	requireCodexClient(t, traces, codex.version, codexBeta)
}

// TestCodexCompletesOverHTTP runs Codex with WebSocket mode off: one
// POST /v1/responses per turn, each with the whole conversation, grouped
// into one session by the prompt_cache_key Codex sends (its thread id).
func TestCodexCompletesOverHTTP(t *testing.T) {
	t.Parallel()
	codex := findCodex(t)
	eng := startEngine(t)
	run := codex.exec(t, eng.app.URL(), httpOnly)
	traces := eng.finishedTraces(t)
	logTraces(t, traces)
	run.requireCompleted(t)

	if len(traces) < 2 {
		t.Fatalf("the engine saw %d responses, want at least 2 (tool call, answer)", len(traces))
	}
	session := "http:key:" + run.threadID()
	for i, tr := range traces {
		if tr.Session != session || tr.Transport != "http" || tr.Error != "" {
			t.Errorf("trace %d: %s session %q error %q, want http on %q without error", i, tr.Transport, tr.Session, tr.Error, session)
		}
	}
	requireCodexClient(t, traces, codex.version, "")
}
