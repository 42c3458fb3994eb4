package rollout_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"agentloop/app"
	"agentloop/app/apptest"
	"agentloop/inference"
	"agentloop/rollout"
	"agentloop/workload"
)

// longSession is the synthetic 300k-token session of testdata, the first
// turns of it when turns > 0.
func longSession(t *testing.T, turns int) *workload.Workload {
	t.Helper()
	b, err := os.ReadFile("testdata/long-session.json")
	if err != nil {
		t.Fatal(err)
	}
	w, err := workload.Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	if turns > 0 {
		w.Turns = w.Turns[:turns]
		w.Turns[turns-1].Calls = nil // the last turn answers, as a session's end does
	}
	return w
}

// replayPasses races cfg's workload on an app of its own, checks that
// every lane replayed every turn, and returns the app and the stored run.
func replayPasses(t *testing.T, cfg rollout.Config) (*app.App, *rollout.RunRecord) {
	t.Helper()
	a := apptest.Start(t)
	runner := rollout.NewRunner(a.URL(), a.DB, nil)
	id, sum, err := runner.Run(context.Background(), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range sum.Lanes {
		if l.Status != rollout.StatusPassed || l.Turns != len(cfg.Workload.Turns) {
			t.Fatalf("lane %s %s after %d turns: %s", l.Lane, l.Status, l.Turns, l.Error)
		}
	}
	rec, err := rollout.LoadRun(context.Background(), a.DB, id)
	if err != nil {
		t.Fatal(err)
	}
	return a, rec
}

// A race holds a workload to its model's context window, names the turn
// that passes it, and takes compact_threshold for a workload race only.
func TestRaceIsHeldToTheContextWindow(t *testing.T) {
	w := longSession(t, 0)
	turn, n := w.FirstOverWindow(128_000)
	if turn < 0 {
		t.Fatal("the long session fits spark's window whole")
	}
	cases := []struct {
		name  string
		cfg   rollout.Config
		param string
		says  string
	}{
		{"whole, over spark's window", rollout.Config{Workload: w, Profile: "spark"}, "workload", fmt.Sprintf("turns[%d] of the workload reaches %d tokens", turn, n)},
		{"custom-<tps> has spark's window", rollout.Config{Workload: w, Profile: "spark", DecodeTPS: 250}, "workload", fmt.Sprintf("turns[%d]", turn)},
		{"compaction on a scenario race", rollout.Config{Scenario: "fix-failing-test", CompactThreshold: 1000}, "compact_threshold", "workload race"},
		{"a threshold past the window", rollout.Config{Workload: w, Profile: "spark", CompactThreshold: 200_000}, "compact_threshold", "context window"},
		{"a negative threshold", rollout.Config{Workload: w, Profile: "classic", CompactThreshold: -1}, "compact_threshold", "from 1"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := c.cfg
			err := rollout.Normalize(&cfg)
			if err == nil || err.Param != c.param || !strings.Contains(err.Message, c.says) {
				t.Fatalf("Normalize: %v, want a 400 on %s saying %q", err, c.param, c.says)
			}
		})
	}
	for _, cfg := range []rollout.Config{{Workload: w, Profile: "classic"}, {Workload: w, Profile: "spark", CompactThreshold: 100_000}} {
		if err := rollout.Normalize(&cfg); err != nil {
			t.Fatalf("%s, compact_threshold %d: %v", cfg.Profile, cfg.CompactThreshold, err)
		}
	}
	// At upload, a workload no model's window holds is refused, naming the
	// turn that passes the largest.
	big := longSession(t, 0)
	for i := 1; i < len(big.Turns); i++ {
		big.Turns[i].Input[0].Tokens = 3000
	}
	if err := big.Validate(); err != nil {
		t.Fatal(err)
	}
	turn, _ = big.FirstOverWindow(400_000)
	if err := rollout.CheckWorkloadFits(big, inference.Windows{}); err == nil || !strings.Contains(err.Message, fmt.Sprintf("turns[%d]", turn)) {
		t.Fatalf("upload of a workload past every window: %v", err)
	}
	if err := rollout.CheckWorkloadFits(w, inference.Windows{}); err != nil {
		t.Fatalf("the long session fits classic's window: %v", err)
	}
}

// A race with compact_threshold compacts on every lane: each turn's prompt
// stays under the threshold, and the stateless lane, pruning its history
// at the compaction item, sends as little as it must.
func TestRaceCompactsALongWorkload(t *testing.T) {
	t.Parallel()
	const threshold = 20_000
	w := longSession(t, 30)
	_, rec := replayPasses(t, rollout.Config{Workload: w, Profile: "instant", Seed: 3, CompactThreshold: threshold,
		Lanes: []string{rollout.LaneHTTPOptimized, rollout.LaneHTTPChained, rollout.LaneWS}})
	last := map[string]rollout.Turn{}
	compactions := map[string]int{}
	for _, tn := range rec.Turns {
		if tn.InputTokens > threshold {
			t.Fatalf("%s turn %d: input_tokens %d over the threshold", tn.Lane, tn.Index, tn.InputTokens)
		}
		if p, ok := last[tn.Lane]; ok && tn.InputTokens < p.InputTokens {
			compactions[tn.Lane]++
		}
		last[tn.Lane] = tn
	}
	for _, lane := range []string{rollout.LaneHTTPOptimized, rollout.LaneHTTPChained, rollout.LaneWS} {
		if compactions[lane] == 0 {
			t.Errorf("lane %s never compacted", lane)
		}
	}
	// 30 turns of 2,000-token outputs is about 60k tokens of history; the
	// stateless lane's last request carries only what compaction left.
	if b := last[rollout.LaneHTTPOptimized].BytesSent; b > int64(threshold*len(workload.Filler)+64<<10) {
		t.Errorf("the stateless lane's last request sent %d bytes: its history was not pruned", b)
	}
}

// An engine served with one context window for every model (serve
// --context-window) holds uploads and races to it, not to the profiles'
// own: a workload classic's 400k window holds is refused at 50k, a
// threshold past 50k too, and the runner reads the windows it was given.
func TestRaceIsHeldToTheServedWindows(t *testing.T) {
	w := longSession(t, 0)
	served := inference.Windows{Override: 50_000}
	if err := rollout.CheckWorkloadFits(w, inference.Windows{}); err != nil {
		t.Fatalf("the long session fits classic's window: %v", err)
	}
	turn, _ := w.FirstOverWindow(50_000)
	if err := rollout.CheckWorkloadFits(w, served); err == nil || !strings.Contains(err.Message, fmt.Sprintf("turns[%d]", turn)) {
		t.Fatalf("upload to a 50k-token engine: %v", err)
	}
	for _, c := range []struct {
		cfg   rollout.Config
		param string
	}{
		{rollout.Config{Workload: w, Profile: "classic"}, "workload"},
		{rollout.Config{Workload: w, Profile: "classic", CompactThreshold: 60_000}, "compact_threshold"},
	} {
		cfg := c.cfg
		if err := rollout.Normalize(&cfg); err != nil {
			t.Fatalf("built-in windows, compact_threshold %d: %v", c.cfg.CompactThreshold, err)
		}
		cfg = c.cfg
		if err := rollout.NormalizeFor(&cfg, served); err == nil || err.Param != c.param {
			t.Fatalf("served 50k windows, compact_threshold %d: %v, want a 400 on %s", c.cfg.CompactThreshold, err, c.param)
		}
		runner := rollout.NewRunner("http://127.0.0.1:1", nil, nil)
		runner.Windows = served
		if _, _, err := runner.Run(context.Background(), c.cfg, nil); err == nil {
			t.Fatalf("the runner of a 50k-token engine ran compact_threshold %d", c.cfg.CompactThreshold)
		}
	}
}
