package web

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"agentloop/api"
	"agentloop/apistack"
	"agentloop/rollout"
	"agentloop/store"
	"agentloop/store/sqlite"
	"agentloop/workload"
)

// BenchmarkListsOfWorkloadRaces: 1,000 stored runs, each raced on its own
// distinct 1 MiB workload (stored once, named by the run), and one of
// them with 4 lanes of 1,000 turns: the run list API, /runs, /sweep and
// the permalink. Run by hand:
//
//	go test -run XXX -bench ListsOfWorkloadRaces -benchtime 5x ./web/
func BenchmarkListsOfWorkloadRaces(b *testing.B) {
	ctx := context.Background()
	db, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "runs.db"), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	base := largeWorkload(b, 0)
	w, _ := workload.Parse([]byte(base))
	sum := w.Summarize()
	lanes := rollout.DefaultLanes
	summary := &rollout.Summary{Repeats: 1, Sequential: true, SavedVsOptimized: map[string]float64{rollout.LaneWS: 0.2},
		SavedVsHTTP: map[string]float64{rollout.LaneWS: 0.3}}
	for _, l := range lanes {
		summary.Lanes = append(summary.Lanes, rollout.LaneSummary{Lane: l, Status: rollout.StatusPassed, TotalNS: 9e9, Turns: 1000,
			StageNS: map[string]int64{rollout.StageDecode: 5e9, rollout.StageTool: 3e9}})
	}
	sumJSON, _ := json.Marshal(summary)
	start := time.Now().Add(-48 * time.Hour)
	var last string
	for i := range 1000 {
		// A distinct workload: its description differs.
		body := strings.Replace(base, `"source":"bench"`, fmt.Sprintf(`"source":"bench","description":"copy %d"`, i), 1)
		id := workload.ID([]byte(body))
		if err := db.SaveWorkload(ctx, &store.Workload{ID: id, CreatedAt: start, Source: "bench", Turns: 1000, JSON: []byte(body)}); err != nil {
			b.Fatal(err)
		}
		cfg := rollout.Config{Scenario: rollout.WorkloadScenario, Profile: api.ModelSpark, Lanes: lanes, Sequential: true, Repeats: 1, Seed: 1,
			Stack: apistack.Lean, DecodeTPS: float64(100 * (1 + i%20)), WorkloadID: id, WorkloadSummary: &sum}
		cfgJSON, _ := json.Marshal(cfg)
		at := start.Add(time.Duration(i) * time.Minute)
		last = fmt.Sprintf("run_%04d", i)
		if err := db.CreateRun(ctx, &store.Run{ID: last, CreatedAt: at, UpdatedAt: at.Add(30 * time.Second), StartedAt: at.Add(time.Second),
			Scenario: cfg.Scenario, Profile: cfg.Profile, Status: rollout.StatusPassed, Config: cfgJSON, Summary: sumJSON, WorkloadID: id}); err != nil {
			b.Fatal(err)
		}
		for _, l := range summary.Lanes {
			lj, _ := json.Marshal(l)
			if err := db.SaveLane(ctx, &store.Lane{RunID: last, Name: l.Lane, Status: l.Status, Summary: lj}); err != nil {
				b.Fatal(err)
			}
		}
	}
	// The newest run holds its lanes' 1,000 turns each.
	for _, l := range lanes {
		for i := range 1000 {
			t := rollout.Turn{Lane: l, Index: i, ResponseID: fmt.Sprintf("resp_%s_%d", l, i), SentNS: int64(i) * 9e6, DoneNS: int64(i)*9e6 + 5e6,
				OutputTokens: 30, InputTokens: 1000 + 30*i, Stages: []rollout.StageTime{{Name: rollout.StageDecode, DurationNS: 3e6, Kind: api.Modelled},
					{Name: rollout.StageTool, DurationNS: 1e6, Kind: api.Modelled}}}
			tj, _ := json.Marshal(t)
			if err := db.SaveTurn(ctx, &store.Turn{RunID: last, Lane: l, Index: i, ResponseID: t.ResponseID, Timings: tj, Output: []byte(`{}`)},
				[]store.Span{{Name: api.StageGenerate, Kind: api.Modelled, DurationNS: 3e6, Tokens: 30}}); err != nil {
				b.Fatal(err)
			}
		}
	}
	tp := &testPlayground{pg: New(Deps{Races: &fakeRaces{running: map[string]bool{}}, Runs: StoreRuns(db), Workloads: db}), e: newEcho()}
	tp.pg.Register(tp.e)
	for _, c := range []struct{ name, target string }{
		{"api-runs-1000", "/api/runs?limit=1000"},
		{"runs-page", "/runs"},
		{"sweep", "/sweep"},
		{"permalink", "/runs/" + last},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			size := 0
			for b.Loop() {
				rec := tp.do(http.MethodGet, c.target, "", nil)
				if rec.Code != 200 {
					b.Fatalf("%s: %d %.300s", c.target, rec.Code, rec.Body)
				}
				size = rec.Body.Len()
			}
			b.ReportMetric(float64(size), "body-bytes")
		})
	}
}
