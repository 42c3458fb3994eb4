package inference

import (
	"math"
	"slices"
	"strings"
	"testing"

	"agentloop/api"
)

func TestProfileFor(t *testing.T) {
	tests := []struct {
		model    string
		wantName string
		minTPS   float64
		maxTPS   float64
	}{
		{"classic", "classic", 50, 80},
		{"spark", "spark", 800, 1200},
		{"burst", "burst", 3000, 5000},
		{"instant", "instant", 0, 0}, // no pacing
		{"gpt-5.5", "spark", 800, 1200},
		{"", "spark", 800, 1200},
		{"Classic", "spark", 800, 1200}, // names are exact
		{"Instant", "spark", 800, 1200},
		{"custom-250", "custom-250", 250, 250},       // spark at that rate, named after its model
		{"custom-1", "custom-1", 1, 1},               // lower bound
		{"custom-100000", "custom-100000", 1e5, 1e5}, // upper bound
		{"custom-0", "spark", 800, 1200},             // below the bounds: like any unknown name
		{"custom-100001", "spark", 800, 1200},        // above the bounds
		{"custom-", "spark", 800, 1200},
		{"custom-250.5", "spark", 800, 1200},
		{"custom--250", "spark", 800, 1200},
		{"custom-0250", "spark", 800, 1200},
		{"custom-abc", "spark", 800, 1200},
	}
	spark := ProfileFor("spark")
	for _, tt := range tests {
		p := ProfileFor(tt.model)
		if p.Name != tt.wantName || p.DecodeTPS < tt.minTPS || p.DecodeTPS > tt.maxTPS {
			t.Errorf("ProfileFor(%q) = %s at %.0f tok/s, want %s in [%.0f, %.0f]", tt.model, p.Name, p.DecodeTPS, tt.wantName, tt.minTPS, tt.maxTPS)
		}
		if tt.wantName == "spark" || strings.HasPrefix(tt.wantName, "custom-") {
			// A custom rate keeps everything else of spark.
			q := p
			q.Name, q.DecodeTPS = spark.Name, spark.DecodeTPS
			if q != spark {
				t.Errorf("ProfileFor(%q) = %+v: more than the decode rate differs from spark %+v", tt.model, p, spark)
			}
		}
	}
}

func TestProfilesAreKeyedByTheWireNames(t *testing.T) {
	var names []string
	for _, p := range Profiles() {
		names = append(names, p.Name)
		if p.DecodeTPS != api.ModelDecodeTPS(p.Name) {
			t.Errorf("profile %s decodes at %v tok/s, but api says its name stands for %v", p.Name, p.DecodeTPS, api.ModelDecodeTPS(p.Name))
		}
	}
	if !slices.Equal(names, api.ModelNames()) {
		t.Fatalf("profiles %v, want one per api model name %v", names, api.ModelNames())
	}
}

func TestProfilesAreModelled(t *testing.T) {
	ps := Profiles()
	if len(ps) < 4 {
		t.Fatalf("Profiles() = %d profiles, want at least classic, spark, burst and instant", len(ps))
	}
	var modelled []Profile
	for _, p := range ps {
		if p.Name != api.ModelInstant {
			modelled = append(modelled, p)
		}
	}
	for i, p := range modelled {
		if p.DecodeTPS <= 0 || p.PrefillTPS <= p.DecodeTPS || p.BaseTTFT <= 0 || p.MaxBatch <= 0 || p.Jitter <= 0 || p.Jitter >= 0.5 {
			t.Errorf("profile %s is not fully modelled: %+v", p.Name, p)
		}
		if i > 0 && p.DecodeTPS <= modelled[i-1].DecodeTPS {
			t.Errorf("profiles not slowest first: %s after %s", p.Name, modelled[i-1].Name)
		}
	}
	if spark := ProfileFor("spark"); spark.MaxBatch < 512 || spark.BatchSlowdown != 0 {
		t.Errorf("spark must batch at least 512 streams without slowing: %+v", spark)
	}
	ps[0].DecodeTPS = 1 // a copy: callers cannot change the built-ins
	if ProfileFor(ps[0].Name).DecodeTPS == 1 {
		t.Error("Profiles returned the built-in slice itself")
	}
}

func TestInstantProfileModelsNoTime(t *testing.T) {
	p := ProfileFor("instant")
	// Reasoning tokens are counts, not time: instant reasons as the others
	// do, in no time.
	if want := (Profile{Name: "instant", Reasoning: StandardReasoning}); p != want {
		t.Fatalf("instant = %+v, want no modelled cost at all: %+v", p, want)
	}
	if last := Profiles()[len(Profiles())-1]; last.Name != "instant" {
		t.Fatalf("instant is not the fastest (last) profile: %s is", last.Name)
	}
	for seed := range uint64(20) {
		job := Job{Profile: p, PrefillTokens: 100000, OutputTokens: 1000, JitterSeed: seed}
		if job.Prefill() != 0 || job.DecodeRate(1) != 0 || job.DecodeRate(10000) != 0 {
			t.Fatalf("instant job, seed %d: prefill %v, rate %v; want 0, 0", seed, job.Prefill(), job.DecodeRate(1))
		}
	}
	if p.Unmodelled() != p {
		t.Fatal("instant is not already unmodelled")
	}
}

func TestUnmodelledProfile(t *testing.T) {
	p := ProfileFor("classic").Unmodelled()
	job := Job{Profile: p, PrefillTokens: 100000, OutputTokens: 100, JitterSeed: 9}
	if job.Prefill() != 0 || job.DecodeRate(1) != 0 {
		t.Fatalf("unmodelled job: prefill %v, rate %v; want 0, 0", job.Prefill(), job.DecodeRate(1))
	}
	if p.Name != "classic" {
		t.Fatalf("Unmodelled renamed the profile to %q", p.Name)
	}
}

func TestReasoningTokensFollowEffortSeedAndTurn(t *testing.T) {
	for _, p := range append(Profiles(), ProfileFor("custom-250"), ProfileFor("spark").Unmodelled()) {
		if p.Reasoning != StandardReasoning {
			t.Errorf("%s reasons with %+v, want the standard budget", p.Name, p.Reasoning)
		}
		for _, effort := range []string{"", "none", "bogus"} {
			if n := p.ReasoningTokens(effort, 1, 0); n != 0 {
				t.Errorf("%s at effort %q reasons %d tokens, want 0", p.Name, effort, n)
			}
		}
	}
	p := ProfileFor("spark")
	prev := 0
	for _, effort := range api.ReasoningEfforts[1:] {
		mean := p.Reasoning.Mean(effort)
		if mean <= prev {
			t.Errorf("effort %s: mean %d does not exceed the effort below (%d)", effort, mean, prev)
		}
		prev = mean
		seen := map[int]bool{}
		for seed := range int64(30) {
			for turn := range 5 {
				n := p.ReasoningTokens(effort, seed, turn)
				if n != p.ReasoningTokens(effort, seed, turn) {
					t.Fatalf("effort %s seed %d turn %d: two counts", effort, seed, turn)
				}
				lo, hi := float64(mean)*(1-ReasoningSpread), float64(mean)*(1+ReasoningSpread)
				if float64(n) < math.Floor(lo) || float64(n) > math.Ceil(hi) || n < 1 {
					t.Errorf("effort %s: %d tokens, outside [%.0f, %.0f]", effort, n, lo, hi)
				}
				seen[n] = true
			}
		}
		if len(seen) < 10 {
			t.Errorf("effort %s: only %d distinct counts over 150 turns: the seed and turn do not spread it", effort, len(seen))
		}
	}
}
