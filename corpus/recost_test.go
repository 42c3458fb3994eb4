package corpus_test

import (
	"context"
	"testing"
	"time"

	"agentloop/api"
	"agentloop/apistack"
	"agentloop/app/apptest"
	"agentloop/corpus"
	"agentloop/inference"
	"agentloop/rollout"
)

// TestModelTime: spark at 1000 tokens/s (custom-1000) spends its 80 ms base
// time, 20,000 uncached tokens a second and 1,000 output tokens a second;
// a warm-up, which generates nothing, still pays the base and its prefill.
func TestModelTime(t *testing.T) {
	p := inference.ProfileFor(api.CustomModelPrefix + "1000")
	for _, c := range []struct {
		uncached, output int
		want             time.Duration
	}{
		{0, 0, 80 * time.Millisecond},
		{2000, 0, 180 * time.Millisecond},
		{2000, 500, 680 * time.Millisecond},
		{0, 1000, 1080 * time.Millisecond},
	} {
		if got := corpus.ModelTime(p, c.uncached, c.output); got != c.want {
			t.Errorf("%d uncached, %d out: %v, want %v", c.uncached, c.output, got, c.want)
		}
	}
	if got := corpus.ModelTime(inference.ProfileFor(api.ModelInstant), 5000, 500); got != 0 {
		t.Errorf("instant: %v", got)
	}
}

func TestSaving(t *testing.T) {
	for _, c := range []struct {
		ref, lane time.Duration
		want      float64
	}{{100, 75, 0.25}, {100, 125, -0.25}, {0, 5, 0}} {
		if got := corpus.Saving(c.ref, c.lane); got != c.want {
			t.Errorf("corpus.Saving(%v, %v) = %v, want %v", c.ref, c.lane, got, c.want)
		}
	}
}

// TestRecostAddsTheModelAndTheTools races one corpus session at instant
// with no tool time and checks Recost's arithmetic on the record: under the
// race's own stack and instant it gives the race's totals; a fixed tool
// time adds it once between every two turns of each lane (the warm-up has
// none); a model adds ModelTime for every request, the warm-up included.
func TestRecostAddsTheModelAndTheTools(t *testing.T) {
	sessions, err := corpus.Load()
	if err != nil {
		t.Fatal(err)
	}
	w := sessions[0].Workload
	a := apptest.Start(t)
	runner := rollout.NewRunner(a.URL(), a.DB, apptest.Logger(t))
	st := apistack.HostedPostSprint
	cfg := rollout.Config{Profile: api.ModelInstant, Stack: st, Lanes: []string{rollout.LaneHTTPOptimized, rollout.LaneWS},
		Sequential: true, Repeats: 1, Seed: 1, Workload: w, FixedToolTime: true}
	id, sum, err := runner.Run(context.Background(), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := rollout.LoadRun(context.Background(), a.DB, id)
	if err != nil {
		t.Fatal(err)
	}
	instant := inference.ProfileFor(api.ModelInstant)
	same, err := corpus.Recost(rec, st, instant, w, 0)
	if err != nil {
		t.Fatal(err)
	}
	tools, err := corpus.Recost(rec, st, instant, w, 1000)
	if err != nil {
		t.Fatal(err)
	}
	spark := inference.ProfileFor(api.ModelSpark)
	model, err := corpus.Recost(rec, st, spark, w, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range sum.Lanes {
		var modelled time.Duration
		for _, tu := range rec.Turns {
			if tu.Lane == l.Lane {
				modelled += corpus.ModelTime(spark, tu.InputTokens-tu.CachedTokens, tu.OutputTokens)
			}
		}
		raced := time.Duration(l.TotalNS)
		if same[l.Lane] != raced || tools[l.Lane]-raced != time.Duration(len(w.Turns)-1)*time.Second || model[l.Lane]-raced != modelled {
			t.Errorf("%s: raced %v, re-costed %v, with tools %v, with spark %v (+%v)", l.Lane, raced, same[l.Lane], tools[l.Lane], model[l.Lane], modelled)
		}
	}
	if _, err := corpus.Recost(rec, apistack.HostedPlain, instant, w, -1); err != nil {
		t.Errorf("another reading: %v", err)
	}
}
