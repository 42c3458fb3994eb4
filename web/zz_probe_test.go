package web_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"agentloop/app"
	"agentloop/rollout"
)

func TestProbeRace(t *testing.T) {
	cfg := app.Defaults()
	cfg.Addr = "127.0.0.1:0"
	cfg.DB = filepath.Join(t.TempDir(), "a.db")
	a, err := app.New(context.Background(), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Start(); err != nil {
		t.Fatal(err)
	}
	defer a.Shutdown(context.Background())
	r := rollout.NewRunner(a.URL(), a.DB, nil)
	for _, sc := range rollout.Scenarios() {
		for _, c := range []rollout.Config{{Scenario: sc.Name, Profile: "burst"}, {Scenario: sc.Name, Profile: "spark", RTTms: 20, ToolTimeMs: 50}} {
			start := time.Now()
			id, sum, err := r.Run(context.Background(), c, nil)
			if err != nil {
				t.Log(err)
			}
			t.Logf("%s %s %s: %v", sc.Name, c.Profile, id, time.Since(start))
			for _, l := range sum.Lanes {
				t.Logf("  %s %s %d turns total %v overhead %v", l.Lane, l.Status, l.Turns, time.Duration(l.TotalNS), time.Duration(l.MedianOverNS))
			}
			t.Logf("  saved %v %v", sum.SavedVsHTTP, sum.SavedVsOptimized)
		}
	}
}
