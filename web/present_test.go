package web

import (
	"slices"
	"strings"
	"testing"

	"agentloop/api"
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
		{"nothing finished", sum(nil, nil, rollout.LaneSummary{Lane: "ws"}), []string{"ws"}, "No lane finished", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h, d := headline(tc.s, rollout.Config{Lanes: tc.lanes, Sequential: true, Stack: api.StackLean})
			if h != tc.head || d != tc.detail {
				t.Errorf("got %q / %q, want %q / %q", h, d, tc.head, tc.detail)
			}
		})
	}
}

// TestHeadlineSaysSharedCPUAndStack: the sentence itself says when the
// lanes shared the CPU, and names a modelled stack (DECISIONS.md).
func TestHeadlineSaysSharedCPUAndStack(t *testing.T) {
	s := &rollout.Summary{SavedVsHTTP: map[string]float64{"ws": 0.364}, SavedVsOptimized: map[string]float64{"ws": 0.27},
		Lanes: []rollout.LaneSummary{{Lane: "ws", TotalNS: 1e9}}}
	custom := api.StackHosted
	custom.Preset, custom.HopMS = "custom", 3
	for _, tc := range []struct {
		name string
		cfg  rollout.Config
		want string
	}{
		{"together, hosted", rollout.Config{Lanes: rollout.AllLanes, Stack: api.StackHosted},
			"WebSocket finished 36% sooner than HTTP with a modelled hosted API stack — lanes ran side by side and shared the CPU"},
		{"sequential, hosted", rollout.Config{Lanes: rollout.AllLanes, Stack: api.StackHosted, Sequential: true},
			"WebSocket finished 36% sooner than HTTP with a modelled hosted API stack"},
		{"together, lean", rollout.Config{Lanes: rollout.AllLanes, Stack: api.StackLean},
			"WebSocket finished 36% sooner than HTTP — lanes ran side by side and shared the CPU"},
		{"custom stack", rollout.Config{Lanes: rollout.AllLanes, Stack: custom, Sequential: true},
			"WebSocket finished 36% sooner than HTTP with a modelled custom API stack"},
		{"one lane shares nothing", rollout.Config{Lanes: []string{"ws"}, Stack: api.StackHosted},
			"WebSocket finished first, in 1.00 s with a modelled hosted API stack"},
	} {
		if h, _ := headline(s, tc.cfg); h != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, h, tc.want)
		}
	}
}

func TestWhatItWouldTake(t *testing.T) {
	got := whatItWouldTake(&rollout.WhatItWouldTake{Target: 0.4, Turns: 30, ExtraPerTurnNS: 96_040_000, OverheadPerTurnNS: 3_570_000, StackPerTurnNS: 1_500_000})
	want := "What it would take: for WebSocket to save 40% against optimized HTTP, each optimized HTTP turn would need 96.0 ms more API overhead " +
		"(optimized HTTP measured 3.57 ms of API overhead and a modelled API stack of 1.50 ms per turn, over 30 turns)."
	if got != want {
		t.Errorf("got %q\nwant %q", got, want)
	}
	if got := whatItWouldTake(&rollout.WhatItWouldTake{Target: 0.4, Turns: 30, ExtraPerTurnNS: -5, Already: true}); got == "" || got[:48] != "What it would take: WebSocket already saves 40% " {
		t.Errorf("already: %q", got)
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

func TestConfigFieldsShowTheStack(t *testing.T) {
	f := configFields(rollout.Config{Profile: "spark", DecodeTPS: 250, Stack: api.StackHosted})
	for _, want := range []views.Field{{Label: "API stack", Value: "hosted (modelled)"}, {Label: "Stack hop (ms)", Value: "2.65"},
		{Label: "Stack classifier tok/s (/v1)", Value: "130000"}, {Label: "Decode rate", Value: "250 tok/s (model custom-250)"}} {
		if !slices.Contains(f, want) {
			t.Errorf("fields lack %+v: %+v", want, f)
		}
	}
}

func TestTotalWithSpread(t *testing.T) {
	if got := totalWithSpread(rollout.LaneSummary{TotalNS: 1.2e9}); got != "1.20 s" {
		t.Errorf("single run: %q", got)
	}
	if got := totalWithSpread(rollout.LaneSummary{TotalNS: 1.2e9, MinTotalNS: 1.1e9, MaxTotalNS: 1.31e9}); got != "1.20 s (1.10 s – 1.31 s)" {
		t.Errorf("repeats: %q", got)
	}
}

func TestRunRowShowsTheSpread(t *testing.T) {
	r := *fixtureRun("run_x")
	r.Config.Repeats, r.Summary.Repeats = 3, 3
	r.Summary.Lanes[0].MinTotalNS, r.Summary.Lanes[0].MaxTotalNS = 0.9e9, 1.1e9
	r.Summary.Lanes[1].MinTotalNS, r.Summary.Lanes[1].MaxTotalNS = 0.5e9, 0.7e9
	row := runRow(r)
	if want := "40% sooner (medians of 3 repeats: HTTP 1.00 s (900 ms – 1.10 s), WebSocket 600 ms (500 ms – 700 ms))"; row.Saving != want {
		t.Errorf("saving %q, want %q", row.Saving, want)
	}
	if !strings.Contains(row.Settings, "3 repeats") {
		t.Errorf("settings %q", row.Settings)
	}
}
