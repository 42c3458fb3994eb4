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

// TestSummaryPhrasesItsRows: a summary's lanes carry their label and their
// row of the result table, phrased in Go, so no page phrases them.
func TestSummaryPhrasesItsRows(t *testing.T) {
	cfg := Config{Lanes: []string{LaneHTTP, LaneWS}, Repeats: 3}
	res := map[string][]LaneSummary{
		LaneHTTP: {{Lane: LaneHTTP, Status: StatusPassed, TotalNS: 3.1e9}, {Lane: LaneHTTP, Status: StatusPassed, TotalNS: 2e9}, {Lane: LaneHTTP, Status: StatusPassed, TotalNS: 2.5e9}},
		LaneWS: {{Lane: LaneWS, Status: StatusPassed, TotalNS: 1.5e9, Turns: 30, InputTokens: 1234567, CachedTokens: 1000000, CachedShare: 0.81,
			MedianOverNS: 1_234_000, StackPerTurnNS: 0, APICPUNS: 42e6, RolloutsPerCore: 35.7}},
	}
	s := summarize(cfg, res)
	h, w := s.Lanes[0], s.Lanes[1]
	if s.Medians != "Each lane shows its median of 3 repeats, with the fastest and slowest in brackets." {
		t.Errorf("medians: %q", s.Medians)
	}
	if h.Label != "HTTP" || w.Label != "WebSocket" {
		t.Errorf("labels %q, %q", h.Label, w.Label)
	}
	if h.Shown == nil || w.Shown == nil {
		t.Fatal("a lane has no row")
	}
	if h.Shown.Total != "2.50 s (2.00 s – 3.10 s)" || h.Shown.VsHTTP != "–" || h.Shown.RolloutsPerCore != "–" {
		t.Errorf("http's row: %+v", *h.Shown)
	}
	want := LaneShown{Total: "1.50 s", Turns: "30", Input: "1,234,567", Cached: "1,000,000 (81%)", MedianOverhead: "1.23 ms",
		StackPerTurn: "0 ms", APICPU: "42.0 ms", RolloutsPerCore: "36", VsHTTP: "40% sooner"}
	if *w.Shown != want {
		t.Errorf("ws's row:\n got %+v\nwant %+v", *w.Shown, want)
	}
}
