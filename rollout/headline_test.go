package rollout_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"agentloop/apistack"
	"agentloop/app/apptest"
	"agentloop/rollout"
)

// TestRaceStoresItsHeadline: a race under the post-sprint preset stores its
// headline, its split (the parts summing exactly to what WebSocket saved
// against optimized HTTP, median repeat) and the range across the three
// readings, from re-costing the race; a run stored before summaries kept
// sentences gets the same sentences when it is read.
func TestRaceStoresItsHeadline(t *testing.T) {
	t.Parallel() // a whole race on its own engine
	a := apptest.Start(t)
	ctx := context.Background()
	cfg := rollout.Config{Workload: shortWorkload(t), Profile: "instant", Sequential: true, Seed: 1, Repeats: 1,
		Lanes: []string{rollout.LaneHTTPOptimized, rollout.LaneWS}, Stack: apistack.HostedPostSprint}
	id, sum, err := rollout.NewRunner(a.URL(), a.DB, nil).Run(ctx, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(sum.Headline, "WebSocket finished in ") || !strings.Contains(sum.Headline, " and optimized HTTP in ") ||
		!strings.Contains(sum.Headline, " was measured on this machine and ") || !strings.HasSuffix(sum.Headline, "(preset hosted-post-sprint, post-sprint reading).") {
		t.Errorf("headline %q", sum.Headline)
	}
	if len(sum.Readings) != len(apistack.HostedReadings) || !strings.Contains(sum.Range, "(plain)") {
		t.Errorf("readings %+v, range %q", sum.Readings, sum.Range)
	}
	var opt, ws rollout.LaneSummary
	for _, l := range sum.Lanes {
		switch l.Lane {
		case rollout.LaneHTTPOptimized:
			opt = l
		case rollout.LaneWS:
			ws = l
		}
	}
	var parts int64
	for _, p := range sum.SplitParts {
		parts += p.NS
	}
	if parts != opt.TotalNS-ws.TotalNS || sum.Split == "" {
		t.Errorf("split parts sum to %d ns, saving %d ns (%q)", parts, opt.TotalNS-ws.TotalNS, sum.Split)
	}
	if sum.StackDoc != "/docs/stack#hosted-post-sprint" {
		t.Errorf("stack doc %q", sum.StackDoc)
	}
	t.Logf("headline: %s", sum.Headline)
	t.Logf("split: %s", sum.Split)
	t.Logf("range: %s", sum.Range)

	// The same run, stored as a run before this change: no sentences.
	r, _, err := a.DB.GetRun(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	var old map[string]any
	if err := json.Unmarshal(r.Summary, &old); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"headline", "split", "split_parts", "noise_threshold_ns", "readings", "range", "stack_doc", "what_it_takes"} {
		delete(old, k)
	}
	b, _ := json.Marshal(old)
	if err := a.DB.UpdateRun(ctx, id, r.Status, b); err != nil {
		t.Fatal(err)
	}
	if r, _, _ := a.DB.GetRun(ctx, id); strings.Contains(string(r.Summary), "headline") {
		t.Fatal("the stored summary still has its headline")
	}
	rec, err := rollout.LoadRun(ctx, a.DB, id)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Summary.Headline != sum.Headline || rec.Summary.Split != sum.Split || rec.Summary.Range != sum.Range {
		t.Errorf("read back:\n%q\n%q\nraced:\n%q\n%q", rec.Summary.Headline, rec.Summary.Split, sum.Headline, sum.Split)
	}
}
