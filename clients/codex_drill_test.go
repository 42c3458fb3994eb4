package clients

import (
	"context"
	"testing"
	"time"

	"agentloop/api"
	"agentloop/app"
	"agentloop/inspect"
)

// armed arms drills at the engine's start, as serve --drill does.
func armed(specs ...api.DrillSpec) func(*app.Config) {
	return func(c *app.Config) { c.Drills = specs }
}

// inspectedDrill waits until the inspector shows a turn that drill hit,
// and returns that turn's session.
func inspectedDrill(t *testing.T, in *inspect.Inspector, drill string) *inspect.Session {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		changed := in.Changed()
		sessions, err := in.Sessions(ctx, 100)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range sessions {
			if s.Summary.Drills == 0 {
				continue
			}
			full, err := in.Session(ctx, s.ID)
			if err != nil {
				t.Fatal(err)
			}
			for _, tu := range full.Turns {
				if tu.Drill == drill {
					return full
				}
			}
		}
		select {
		case <-changed:
		case <-ctx.Done():
			t.Fatalf("the inspector shows no turn that %s hit", drill)
		}
	}
}

// TestCodexRecoversFromAnEvictedCache arms evict-cache after Codex's
// second turn: its continuation gets previous_response_not_found, and
// Codex still completes, resending the whole conversation. The inspector
// shows the turn the drill hit.
func TestCodexRecoversFromAnEvictedCache(t *testing.T) {
	t.Parallel()
	codex := findCodex(t)
	eng := startEngine(t, armed(api.DrillSpec{Drill: api.DrillEvictCache, AfterTurns: 2}))
	run := codex.exec(t, eng.app.URL(), webSocketMode)
	s := inspectedDrill(t, eng.app.Inspector, api.DrillEvictCache)
	traces := eng.finishedTraces(t)
	logTraces(t, traces)
	run.requireCompleted(t)

	hit := -1
	for i, tr := range traces {
		if tr.Drill == api.DrillEvictCache {
			if hit >= 0 || tr.Error != "previous_response_not_found" {
				t.Fatalf("trace %d: drill %s error %q", i, tr.Drill, tr.Error)
			}
			hit = i
		}
	}
	if hit < 0 || hit == len(traces)-1 {
		t.Fatalf("the drill hit trace %d of %d: nothing after it recovered", hit, len(traces))
	}
	if last := traces[len(traces)-1]; last.Error != "" || last.ResponseID == "" {
		t.Fatalf("the last response failed: %+v", last)
	}
	var turn *inspect.Turn
	for i := range s.Turns {
		if s.Turns[i].Drill == api.DrillEvictCache {
			turn = &s.Turns[i]
		}
	}
	if turn == nil || turn.Error != "previous_response_not_found" || s.Summary.Drills != 1 || s.Summary.Errors < 1 {
		t.Fatalf("inspected session %s: turn %+v, summary %+v", s.ID, turn, s.Summary)
	}
}

// TestCodexFallsBackToHTTPWhenTheUpgradeIsRefused refuses every WebSocket
// upgrade: Codex completes over HTTP.
func TestCodexFallsBackToHTTPWhenTheUpgradeIsRefused(t *testing.T) {
	t.Parallel()
	codex := findCodex(t)
	eng := startEngine(t, armed(api.DrillSpec{Drill: api.DrillRefuseUpgrade, Times: 1000}))
	run := codex.exec(t, eng.app.URL(), webSocketMode)
	inspectedDrill(t, eng.app.Inspector, api.DrillRefuseUpgrade)
	traces := eng.finishedTraces(t)
	logTraces(t, traces)
	run.requireCompleted(t)

	var refused, answered int
	for i, tr := range traces {
		switch {
		case tr.Drill == api.DrillRefuseUpgrade:
			if tr.Status != 426 {
				t.Errorf("trace %d: a refused upgrade with status %d", i, tr.Status)
			}
			refused++
		case tr.Transport == "http" && tr.Error == "" && tr.ResponseID != "":
			answered++
		default:
			t.Errorf("trace %d: %s error %q: neither a refused upgrade nor an HTTP response", i, tr.Transport, tr.Error)
		}
	}
	if refused == 0 || answered < 2 {
		t.Fatalf("%d upgrades refused, %d responses over HTTP", refused, answered)
	}
}
