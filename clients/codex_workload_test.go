package clients

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"agentloop/inference"
	"agentloop/inspect"
	"agentloop/internal/wait"
	"agentloop/rollout"
	"agentloop/workload"
)

// TestCodexSessionAsWorkload runs one real Codex session over WebSocket
// mode and gets its workload both ways: exported from the inspector and
// imported from Codex's own session file. The two agree (docs/workload.md,
// "The inspector's export and the import, compared"), and each races over
// http-optimized and ws with both lanes passing.
func TestCodexSessionAsWorkload(t *testing.T) {
	t.Parallel()
	codex := findCodex(t)
	eng := startEngine(t)
	run := codex.execSession(t, eng.app.URL(), webSocketMode, false)
	run.requireCompleted(t)

	// Imported: Codex's session file, tokenized with the engine's tokenizer.
	files, _ := filepath.Glob(filepath.Join(run.home, "sessions", "*", "*", "*", "rollout-*.jsonl"))
	if len(files) != 1 {
		t.Fatalf("session files under %s: %v", run.home, files)
	}
	f, err := os.Open(files[0])
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tok, err := inference.NewTokenizer()
	if err != nil {
		t.Fatal(err)
	}
	imported, err := workload.ImportCodex(f, tok.Count)
	if err != nil {
		t.Fatal(err)
	}

	// Exported: the inspector's session, once it holds every response.
	var exported *workload.Workload
	wait.UntilErr(t, "the inspector to hold the WebSocket session with every response", func() error {
		sessions, err := eng.app.Inspector.Sessions(context.Background(), 10)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range sessions {
			if s.Transport == inspect.TransportWebSocket && s.Summary.Turns == len(imported.Turns)+1 { // and the warm-up
				exported = fetchWorkload(t, eng.app.URL()+"/api/sessions/"+s.ID+"/workload")
				return nil
			}
		}
		return fmt.Errorf("no WebSocket session of %d responses: %+v", len(imported.Turns)+1, sessions)
	})
	compareWorkloads(t, exported, imported)

	runner := rollout.NewRunner(eng.app.URL(), eng.app.DB, nil)
	for name, w := range map[string]*workload.Workload{"exported": exported, "imported": imported} {
		_, sum, err := runner.Run(context.Background(), rollout.Config{Workload: w, Profile: codexModel,
			Lanes: []string{rollout.LaneHTTPOptimized, rollout.LaneWS}}, nil)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for _, l := range sum.Lanes {
			if l.Status != rollout.StatusPassed || l.Turns != len(w.Turns) {
				t.Errorf("%s workload, lane %s: %s after %d turns: %s", name, l.Lane, l.Status, l.Turns, l.Error)
			}
		}
	}
}

func fetchWorkload(t *testing.T, url string) *workload.Workload {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %s", url, resp.StatusCode, b)
	}
	w, err := workload.Parse(b)
	if err != nil {
		t.Fatalf("GET %s: %v\n%s", url, err, b)
	}
	return w
}

// compareWorkloads checks the bounds docs/workload.md states: the same
// turns, calls, output and input tokens (both the engine's usage); each new
// input item within the render's framing; instructions and tools together
// within the framing of the first request.
func compareWorkloads(t *testing.T, exported, imported *workload.Workload) {
	t.Helper()
	e, _ := json.Marshal(exported)
	i, _ := json.Marshal(imported)
	t.Logf("exported: %s\nimported: %s", e, i)
	if len(exported.Turns) != len(imported.Turns) {
		t.Fatalf("%d turns exported, %d imported", len(exported.Turns), len(imported.Turns))
	}
	for i := range exported.Turns {
		e, m := exported.Turns[i], imported.Turns[i]
		if e.OutputTokens != m.OutputTokens || e.InputTokens != m.InputTokens || len(e.Calls) != len(m.Calls) || len(e.Input) != len(m.Input) {
			t.Errorf("turn %d: exported %+v, imported %+v", i, e, m)
			continue
		}
		for j := range e.Calls {
			if e.Calls[j] != m.Calls[j] {
				t.Errorf("turn %d call %d: %d argument tokens exported, %d imported", i, j, e.Calls[j].ArgumentTokens, m.Calls[j].ArgumentTokens)
			}
		}
		for j := range e.Input {
			if d := e.Input[j].Tokens - m.Input[j].Tokens; e.Input[j].Kind != m.Input[j].Kind || d < 0 || d > workload.FramingPerItem {
				t.Errorf("turn %d input %d: exported %+v, imported %+v", i, j, e.Input[j], m.Input[j])
			}
		}
	}
	fixed := func(w *workload.Workload) int { return w.InstructionsTokens + w.ToolsTokens }
	bound := workload.FramingFixed + workload.FramingPerItem*(len(imported.Turns[0].Input)+2)
	if d := fixed(exported) - fixed(imported); d < -bound || d > bound {
		t.Errorf("instructions and tools: %d exported, %d imported (bound ±%d)", fixed(exported), fixed(imported), bound)
	}
}
