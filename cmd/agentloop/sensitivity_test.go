package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"agentloop/api"
	"agentloop/apistack"
	"agentloop/rollout"
)

// checkBenchSensitivity re-costs one short instant race (TestCalibrate's,
// raced under st): at ×1 every parameter gives the race's own saving;
// parameters of /baseline/v1 only leave ws against http-optimized alone;
// hop_ms moves it exactly as the hops each lane made say; a faster
// post-sprint classifier shrinks it.
func checkBenchSensitivity(t *testing.T, rec *rollout.RunRecord, st apistack.Stack) {
	ctx := context.Background()
	file := filepath.Join(t.TempDir(), "race.json")
	b, _ := json.Marshal(rec)
	if err := os.WriteFile(file, b, 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := run(ctx, []string{"bench", "sensitivity", "--run", file, "--json"}, func(string) string { return "" }, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	var s sensitivity
	if err := json.Unmarshal(out.Bytes(), &s); err != nil {
		t.Fatal(err)
	}
	raced := rec.Summary.SavedVsOptimized[rollout.LaneWS]
	rows := map[string][]float64{}
	for _, r := range s.Rows {
		rows[r.Param] = r.Savings
		if len(r.Savings) != 5 || r.Savings[2] != raced {
			t.Errorf("%s: savings %v, the race saved %g", r.Param, r.Savings, raced)
		}
	}
	if len(rows) != len(apistack.Params) {
		t.Fatalf("rows %v", rows)
	}
	for _, p := range []string{"classify_tps_baseline", "sprint_hops"} { // only /baseline/v1 pays them
		for _, v := range rows[p] {
			if v != raced {
				t.Errorf("%s moves the saving: %v", p, rows[p])
			}
		}
	}
	c := rows["classify_tps"]
	for i := 1; i < len(c); i++ {
		if c[i] >= c[i-1] {
			t.Errorf("a faster post-sprint classifier must shrink the saving: %v", c)
		}
	}
	// hop_ms ×k adds (k−1)·hop_ms per hop a lane made.
	total, hops := map[string]float64{}, map[string]float64{}
	for _, l := range rec.Summary.Lanes {
		total[l.Lane] = float64(l.TotalNS)
	}
	for _, turn := range rec.Turns {
		for _, w := range turn.StackWork {
			switch w.Stage {
			case api.StageStackClassify:
				hops[turn.Lane]++
			case api.StageStackConfigHop:
				hops[turn.Lane] += st.ConfigHops
			case api.StageStackSprintHops:
				hops[turn.Lane] += st.SprintHops
			case api.StageStackBilling:
				hops[turn.Lane] += st.BillingHops
			}
		}
	}
	for i, f := range s.Factors {
		extra := (f - 1) * st.HopMS * 1e6
		want := 1 - (total[rollout.LaneWS]+extra*hops[rollout.LaneWS])/(total[rollout.LaneHTTPOptimized]+extra*hops[rollout.LaneHTTPOptimized])
		if got := rows["hop_ms"][i]; math.Abs(got-want) > 1e-6 {
			t.Errorf("hop_ms ×%g: saving %.6f, the hops say %.6f", f, got, want)
		}
	}
	if s.Dominant == "" {
		t.Error("no dominant parameter")
	}
	out.Reset()
	if err := run(ctx, []string{"bench", "sensitivity", "--run", file}, func(string) string { return "" }, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "| parameter | ×¼ | ×½ | ×1 | ×2 | ×4 |") || !strings.Contains(out.String(), "\n| classify_tps | ") {
		t.Errorf("table:\n%s", out.String())
	}
}
