package inference

import "testing"

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
		{"gpt-5.5", "spark", 800, 1200},
		{"", "spark", 800, 1200},
		{"Classic", "spark", 800, 1200}, // names are exact
	}
	for _, tt := range tests {
		p := ProfileFor(tt.model)
		if p.Name != tt.wantName || p.DecodeTPS < tt.minTPS || p.DecodeTPS > tt.maxTPS {
			t.Errorf("ProfileFor(%q) = %s at %.0f tok/s, want %s in [%.0f, %.0f]", tt.model, p.Name, p.DecodeTPS, tt.wantName, tt.minTPS, tt.maxTPS)
		}
	}
}

func TestProfilesAreModelled(t *testing.T) {
	ps := Profiles()
	if len(ps) < 3 {
		t.Fatalf("Profiles() = %d profiles, want at least classic, spark and burst", len(ps))
	}
	for i, p := range ps {
		if p.DecodeTPS <= 0 || p.PrefillTPS <= p.DecodeTPS || p.BaseTTFT <= 0 || p.MaxBatch <= 0 || p.Jitter <= 0 || p.Jitter >= 0.5 {
			t.Errorf("profile %s is not fully modelled: %+v", p.Name, p)
		}
		if i > 0 && p.DecodeTPS <= ps[i-1].DecodeTPS {
			t.Errorf("profiles not slowest first: %s after %s", p.Name, ps[i-1].Name)
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
