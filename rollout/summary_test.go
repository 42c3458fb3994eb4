package rollout

import "testing"

// TestSummarizeSpread: with repeats, a lane shows its median repeat and
// the spread of its totals; a single run has no spread.
func TestSummarizeSpread(t *testing.T) {
	cfg := Config{Lanes: []string{LaneHTTP, LaneWS}, Repeats: 3}
	res := map[string][]LaneSummary{
		LaneHTTP: {{Lane: LaneHTTP, Status: StatusPassed, TotalNS: 300}, {Lane: LaneHTTP, Status: StatusPassed, TotalNS: 100}, {Lane: LaneHTTP, Status: StatusPassed, TotalNS: 200}},
		LaneWS:   {{Lane: LaneWS, Status: StatusPassed, TotalNS: 50}},
	}
	s := summarize(cfg, res)
	h := s.Lanes[0]
	if h.TotalNS != 200 || h.MinTotalNS != 100 || h.MaxTotalNS != 300 {
		t.Errorf("http: total %d, spread %d–%d; want 200, 100–300", h.TotalNS, h.MinTotalNS, h.MaxTotalNS)
	}
	if w := s.Lanes[1]; w.MinTotalNS != 0 || w.MaxTotalNS != 0 {
		t.Errorf("ws ran once, yet has a spread %d–%d", w.MinTotalNS, w.MaxTotalNS)
	}
}
