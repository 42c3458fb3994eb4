package rollout

import (
	"strings"
	"testing"

	"agentloop/api"
	"agentloop/apistack"
)

// splitLanes are an optimized HTTP and a WebSocket median whose stages
// differ by group; 250 ms of optimized HTTP's total is in no stage.
func splitLanes() (LaneSummary, LaneSummary) {
	opt := LaneSummary{Lane: LaneHTTPOptimized, Status: StatusPassed, TotalNS: 24_950_000_000, StageNS: map[string]int64{
		StageOverhead: 1_000_000_000, StageAPIStack: 8_000_000_000, StagePrefill: 5_000_000_000, StageDecode: 6_000_000_000,
		StageTool: 2_000_000_000, StageNetwork: 2_700_000_000}}
	ws := LaneSummary{Lane: LaneWS, Status: StatusPassed, TotalNS: 16_250_000_000, StageNS: map[string]int64{
		StageOverhead: 160_000_000, StageAPIStack: 230_000_000, StagePrefill: 5_000_000_000, StageDecode: 6_000_000_000,
		StageTool: 2_260_000_000, StageNetwork: 2_600_000_000}}
	return opt, ws
}

// TestSplitSumsExactlyToTheSaving: the parts, in ns and as shown, add up
// to the saving; a group where WebSocket spent more is a negative part.
func TestSplitSumsExactlyToTheSaving(t *testing.T) {
	opt, ws := splitLanes()
	parts := splitSaving(opt, ws, Config{})
	var sum int64
	for _, p := range parts {
		sum += p.NS
	}
	if saved := opt.TotalNS - ws.TotalNS; sum != saved {
		t.Fatalf("parts sum to %d ns, the saving is %d ns", sum, saved)
	}
	got := splitSentence(opt.TotalNS-ws.TotalNS, parts, apistack.HostedPostSprint, 0, "")
	want := "Of the 8.7 s saved against optimized HTTP, 0.8 s is measured engine work, 7.8 s the modelled hosted-post-sprint stack, −0.3 s the tools, and 0.4 s the network."
	if got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}

// TestRoundToSum: rounded parts always add up to the rounded total, even
// when every part alone would round the other way.
func TestRoundToSum(t *testing.T) {
	for _, tc := range []struct {
		vals  []int64
		total int64
	}{
		{[]int64{140, 140, 140, 140, 140}, 700},
		{[]int64{-260, 960}, 700},
		{[]int64{49, 49, 49}, 147},
		{[]int64{-149, -149}, -298},
	} {
		out := roundToSum(tc.vals, tc.total, 100)
		var sum int64
		for _, v := range out {
			sum += v
			if v%100 != 0 {
				t.Errorf("%v: part %d is not a multiple of the step", tc.vals, v)
			}
		}
		if want := roundHalfAway(tc.total, 100); sum != want {
			t.Errorf("%v: rounded parts %v sum to %d, want %d", tc.vals, out, sum, want)
		}
	}
}

// TestSplitFoldsNoise: the parts smaller than the machine's noise (half
// the wider spread of the repeats, or 1% of optimized HTTP's time) become
// one noise part, the threshold is stated, and the parts still sum exactly
// to the saving.
func TestSplitFoldsNoise(t *testing.T) {
	opt, ws := splitLanes()
	noise, how := noiseThreshold(opt, ws)
	if noise != 249_500_000 || how != "1% of optimized HTTP's time" {
		t.Errorf("one repeat: noise %d (%s), want 1%% of %d", noise, how, opt.TotalNS)
	}
	opt.MinTotalNS, opt.MaxTotalNS = 24_650_000_000, 25_250_000_000
	noise, how = noiseThreshold(opt, ws)
	if noise != 300_000_000 || how != "half the wider spread of the lanes' repeats" {
		t.Errorf("repeats: noise %d (%s), want half of a 600 ms spread", noise, how)
	}
	parts := foldNoise(splitSaving(opt, ws, Config{}), noise)
	var sum int64
	for _, p := range parts {
		sum += p.NS
		if p.NS != 0 && abs(p.NS) < noise && p.Group != SplitNoise {
			t.Errorf("part %s of %d ns is under the noise and was not folded", p.Group, p.NS)
		}
	}
	if saved := opt.TotalNS - ws.TotalNS; sum != saved {
		t.Fatalf("parts sum to %d ns, the saving is %d ns", sum, saved)
	}
	got := splitSentence(opt.TotalNS-ws.TotalNS, parts, apistack.HostedPostSprint, noise, how)
	want := "Of the 8.7 s saved against optimized HTTP, 0.8 s is measured engine work, 7.8 s the modelled hosted-post-sprint stack, 0.4 s the network, " +
		"and −0.3 s noise (the parts under 300 ms each, half the wider spread of the lanes' repeats)."
	if got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}

func TestPlainSooner(t *testing.T) {
	for _, tc := range []struct {
		saved float64
		want  string
	}{
		{0.5, "in half the time"}, {0.495, "in half the time"}, {0.667, "in a third of the time"}, {0.75, "in a quarter of the time"},
		{0.333, "a third sooner"}, {0.25, "a quarter sooner"}, {0.42, "42% sooner"}, {0.002, "at the same time"}, {-0.1, "10% later"},
	} {
		if got := PlainSooner(tc.saved); got != tc.want {
			t.Errorf("PlainSooner(%v) = %q, want %q", tc.saved, got, tc.want)
		}
	}
}

// TestHeadlineComparesWithOptimizedHTTP: the headline's first sentence
// gives WebSocket's and optimized HTTP's times and their ratio in plain
// words (never the larger figure against plain HTTP); the second splits the
// saving into measured and modelled and names the preset and its reading;
// the range across the readings is the details' sentence, and lean and
// custom stacks say plainly that they have no range.
func TestHeadlineComparesWithOptimizedHTTP(t *testing.T) {
	opt, ws := splitLanes()
	s := &Summary{Lanes: []LaneSummary{opt, ws}, SavedVsHTTP: map[string]float64{LaneWS: 0.77},
		SavedVsOptimized: map[string]float64{LaneWS: 1 - float64(ws.TotalNS)/float64(opt.TotalNS)}}
	cfg := Config{Lanes: AllLanes, Sequential: true, Stack: apistack.HostedPostSprint}
	got := headline(s, cfg, splitSaving(opt, ws, cfg))
	want := "WebSocket finished in 16.2 s and optimized HTTP in 24.9 s: 35% sooner. " +
		"Of the 8.7 s saved, 0.9 s was measured on this machine and 7.8 s is a model of a hosted API's work (preset hosted-post-sprint, post-sprint reading)."
	if got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	if strings.Contains(got, "77%") {
		t.Errorf("the headline leads with the plain-HTTP figure: %q", got)
	}
	s.Repeats = 3
	if got := headline(s, cfg, nil); !strings.HasPrefix(got, "WebSocket finished in 16.2 s and optimized HTTP in 24.9 s (medians of 3 repeats): 35% sooner.") {
		t.Errorf("repeats: %q", got)
	}
	readings := []ReadingSaving{{Reading: apistack.ReadingPostSprint, Saved: 0.35}, {Reading: apistack.ReadingPlain, Saved: 0.11}, {Reading: apistack.ReadingDerived, Saved: 0.414}}
	if got, want := rangeSentence(readings, ""), "Across the readings, WebSocket finished from 11% sooner (plain) to 41% sooner (derived) than optimized HTTP."; got != want {
		t.Errorf("range: got %q\nwant %q", got, want)
	}
	lean := Config{Lanes: AllLanes, Sequential: true, Stack: apistack.Lean}
	rec := &RunRecord{Config: lean, Summary: s}
	r, why := rec.ReadingsRange()
	if r != nil || why == "" {
		t.Fatalf("lean: range %v, reason %q; want no range and a reason", r, why)
	}
	if got := rangeSentence(r, why); got != "A lean race models no hosted stack, so it has no range across the readings." {
		t.Errorf("lean range: %q", got)
	}
	if got := headline(s, lean, splitSaving(opt, ws, lean)); !strings.HasSuffix(got, "(preset lean, which models no hosted API stack).") {
		t.Errorf("lean: %q", got)
	}
	custom := apistack.Hosted
	custom.Preset = "custom"
	rec = &RunRecord{Config: Config{Lanes: AllLanes, Stack: custom}, Summary: s}
	if r, why := rec.ReadingsRange(); r != nil || !strings.Contains(why, "custom stack has no reading") {
		t.Errorf("custom: range %v, reason %q", r, why)
	}
	if got := headline(s, Config{Lanes: AllLanes, Stack: apistack.Lean}, nil); !strings.HasSuffix(got, " The lanes ran side by side and shared the CPU.") {
		t.Errorf("side by side: %q", got)
	}
	// Lanes that take turns never overlap: no warning.
	if got := headline(s, Config{Lanes: AllLanes, Stack: apistack.Lean, TakeTurns: true}, nil); strings.Contains(got, "shared the CPU") {
		t.Errorf("taking turns: %q", got)
	}
}

// TestDescribeOnRead: a run stored before its summary kept sentences gets
// them when it is read; one that has them keeps them.
func TestDescribeOnRead(t *testing.T) {
	opt, ws := splitLanes()
	rec := &RunRecord{Config: Config{Lanes: []string{LaneHTTPOptimized, LaneWS}, Sequential: true, Stack: apistack.Lean},
		Summary: &Summary{Lanes: []LaneSummary{opt, ws}, SavedVsOptimized: map[string]float64{LaneWS: 1 - float64(ws.TotalNS)/float64(opt.TotalNS)}}}
	rec.Describe()
	if !strings.HasPrefix(rec.Summary.Headline, "WebSocket finished in 16.2 s and optimized HTTP in 24.9 s: 35% sooner.") || !strings.HasPrefix(rec.Summary.Split, "Of the 8.7 s saved") {
		t.Errorf("headline %q, split %q", rec.Summary.Headline, rec.Summary.Split)
	}
	if len(rec.Summary.SplitParts) == 0 {
		t.Error("no split parts")
	}
	rec.Summary.Headline = "kept"
	rec.Describe()
	if rec.Summary.Headline != "kept" {
		t.Errorf("a stored sentence was rebuilt: %q", rec.Summary.Headline)
	}
}

func TestWhatItTakesSentence(t *testing.T) {
	got := whatItTakesSentence(&WhatItWouldTake{Target: 0.4, Turns: 30, ExtraPerTurnNS: 96_040_000, OverheadPerTurnNS: 3_570_000, MedianOverheadNS: 3_410_000, StackPerTurnNS: 1_500_000})
	want := "What it would take: for WebSocket to save 40% against optimized HTTP, each optimized HTTP turn would need 96.0 ms more API overhead on average " +
		"(optimized HTTP measured a median API overhead of 3.41 ms per turn and a modelled API stack of 1.50 ms per turn on average, over 30 turns)."
	if got != want {
		t.Errorf("got %q\nwant %q", got, want)
	}
	if got := whatItTakesSentence(&WhatItWouldTake{Target: 0.4, Turns: 30, ExtraPerTurnNS: -5, Already: true}); !strings.HasPrefix(got, "What it would take: WebSocket already saves 40% ") {
		t.Errorf("already: %q", got)
	}
}

// TestSplitKindsFollowTheRace: the network is modelled behind a chosen
// round trip and measured on bare loopback; the tools are modelled when a
// tool time is.
func TestSplitKindsFollowTheRace(t *testing.T) {
	opt, ws := splitLanes()
	kinds := func(cfg Config) map[string]string {
		out := map[string]string{}
		for _, p := range splitSaving(opt, ws, cfg) {
			out[p.Group] = p.Kind
		}
		return out
	}
	bare, wide := kinds(Config{}), kinds(Config{RTTms: 40, ToolTimeMs: 100})
	if bare[StageNetwork] != api.Measured || bare[StageTool] != api.Measured {
		t.Errorf("no round trip, no tool time: %v", bare)
	}
	if wide[StageNetwork] != api.Modelled || wide[StageTool] != api.Modelled || wide[StageOverhead] != api.Measured {
		t.Errorf("40 ms round trip, 100 ms tools: %v", wide)
	}
}

// TestMeasuredPartThatRoundsAwayIsSaidInWords: a measured part smaller
// than the sentence's precision is not "0.0 s was measured"; the sentence
// says all is modelled and how small the measured part is.
func TestMeasuredPartThatRoundsAwayIsSaidInWords(t *testing.T) {
	raw := []SplitPart{
		{Group: StageAPIStack, NS: 1_702_200_001, Kind: api.Modelled},
		{Group: StageNetwork, NS: -62_812_119, Kind: api.Modelled},
		{Group: StageOverhead, NS: -34_163_377, Kind: api.Measured},
	}
	got := measuredModelled(1_605_224_505, raw, apistack.HostedPostSprint)
	want := "Of the 1.6 s saved, all is a model of a hosted API's work and the network (preset hosted-post-sprint, post-sprint reading); what was measured on this machine comes to less than 0.1 s."
	if got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	raw[2].NS = 400_000_000 // large enough to show
	if got := measuredModelled(2_039_387_882, raw, apistack.HostedPostSprint); !strings.Contains(got, "0.4 s was measured on this machine and 1.6 s is a model") {
		t.Errorf("a measured part that shows: %q", got)
	}
}
