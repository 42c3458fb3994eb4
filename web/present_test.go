package web

import (
	"slices"
	"testing"

	"agentloop/rollout"
	"agentloop/views"
)

func TestHeadline(t *testing.T) {
	all := rollout.AllLanes
	sum := func(vsHTTP, vsOpt map[string]float64, lanes ...rollout.LaneSummary) *rollout.Summary {
		return &rollout.Summary{SavedVsHTTP: vsHTTP, SavedVsOptimized: vsOpt, Lanes: lanes}
	}
	cases := []struct {
		name         string
		s            *rollout.Summary
		lanes        []string
		head, detail string
	}{
		{"all lanes", sum(map[string]float64{"ws": 0.364}, map[string]float64{"ws": 0.27}), all,
			"WebSocket finished 36% sooner than HTTP", "and 27% sooner than optimized HTTP (request caches on)."},
		{"slower", sum(map[string]float64{"ws": -0.05}, nil), []string{"http", "ws"}, "WebSocket finished 5% later than HTTP", ""},
		{"against optimized only", sum(nil, map[string]float64{"ws": 0.2}), []string{"http-optimized", "ws"}, "WebSocket finished 20% sooner than optimized HTTP", ""},
		{"no websocket", sum(map[string]float64{"http-chained": 0.1}, nil,
			rollout.LaneSummary{Lane: "http", TotalNS: 2e9}, rollout.LaneSummary{Lane: "http-chained", TotalNS: 1.5e9}), []string{"http", "http-chained"},
			"HTTP chained finished first, in 1.50 s", ""},
		{"nothing finished", sum(nil, nil, rollout.LaneSummary{Lane: "ws"}), []string{"ws"}, "No lane finished.", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h, d := headline(tc.s, tc.lanes)
			if h != tc.head || d != tc.detail {
				t.Errorf("got %q / %q, want %q / %q", h, d, tc.head, tc.detail)
			}
		})
	}
}

func TestFormats(t *testing.T) {
	for _, tc := range []struct {
		got, want string
	}{
		{fmtNS(0), "0 ms"},
		{fmtNS(1500), "1.50 µs"},
		{fmtNS(3_570_000), "3.57 ms"},
		{fmtNS(96_040_000), "96.0 ms"},
		{fmtNS(425_600_000), "426 ms"},
		{fmtNS(6_601_000_000), "6.60 s"},
		{fmtInt(0), "0"},
		{fmtInt(999), "999"},
		{fmtInt(1_123_689), "1,123,689"},
		{fmtInt(-12_345), "-12,345"},
		{fmtBytes(512), "512 B"},
		{fmtBytes(381 << 10), "381 KiB"},
		{fmtBytes(4_110_000), "3.92 MiB"},
		{sooner(0.404), "40% sooner"},
		{sooner(-0.126), "13% later"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}

func TestProfileOptionsAreTheBuiltinModels(t *testing.T) {
	want := []views.Option{
		{Value: "classic", Label: "classic (65 tok/s)"},
		{Value: "spark", Label: "spark (1,000 tok/s)", Selected: true},
		{Value: "burst", Label: "burst (4,000 tok/s)"},
		{Value: "instant", Label: "instant (no modelled time)"},
	}
	if got := profileOptions("spark"); !slices.Equal(got, want) {
		t.Fatalf("profileOptions = %+v\nwant %+v", got, want)
	}
	if got := groupThousands(100000); got != "100,000" {
		t.Fatalf("groupThousands(100000) = %q", got)
	}
}
