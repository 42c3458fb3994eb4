package rollout

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"agentloop/api"
	"agentloop/apistack"
)

// The race's sentences (the headline, the split of the saving, and what it
// would take) are built here, once, into the run's summary. The race page,
// presenter mode, the permalink, `agentloop race` and the run API all show
// these strings; no page phrases them again.

// StackDocPath is the page that explains the modelled stack and its
// presets; a preset's section is StackDocPath + "#" + its name.
const StackDocPath = "/docs/stack"

// SplitPart is one waterfall group's share of the time WebSocket saved
// against optimized HTTP, from each lane's median repeat. The parts of a
// summary sum exactly to the saving; a part can be negative (WebSocket
// spent more there).
type SplitPart struct {
	Group string `json:"group"` // a Stage* name
	NS    int64  `json:"ns"`
	Kind  string `json:"kind"` // measured or modelled
}

// ReadingSaving is the headline's comparison (ws against http-optimized)
// under one reading's preset, from re-costing the recorded race.
type ReadingSaving struct {
	Reading string  `json:"reading"`
	Preset  string  `json:"preset"`
	Saved   float64 `json:"saved"`
}

// splitGroups are the waterfall's groups in the order a split names them,
// each with how the split calls it and whether it is measured.
var splitGroups = []struct{ name, phrase, kind string }{
	{StageOverhead, "measured engine work", api.Measured},
	{StageAPIStack, "the modelled %s stack", api.Modelled},
	{StagePrefill, "modelled queue and prefill", api.Modelled},
	{StageDecode, "modelled decode", api.Modelled},
	{StageTool, "the tools", api.Measured},
	{StageNetwork, "the network", api.Measured},
	{StageConnect, "connecting", api.Modelled},
	{StageRecovery, "recovering from faults", api.Measured},
}

// describe fills the summary's sentences from the run: the headline, the
// split and what it would take. ranges gives the headline's comparison
// under each reading (nil with a reason when there is none). It is called
// when a race ends and, for a run stored before the sentences were, when
// the run is read.
func (s *Summary) describe(cfg Config, readings []ReadingSaving, noRange string) {
	s.Headline = headline(s, cfg, readings, noRange)
	s.StackDoc = stackDoc(cfg.Stack)
	s.SplitParts, s.Split = nil, ""
	opt, okO := s.lane(LaneHTTPOptimized)
	ws, okW := s.lane(LaneWS)
	if okO && okW && opt.Status == StatusPassed && ws.Status == StatusPassed {
		s.SplitParts = splitSaving(opt, ws, cfg)
		s.Split = splitSentence(opt.TotalNS-ws.TotalNS, s.SplitParts, cfg.Stack)
	}
	s.Readings = readings
	s.WhatItTakes = whatItTakesSentence(s.WhatItWouldTake)
}

func (s *Summary) lane(name string) (LaneSummary, bool) {
	for _, l := range s.Lanes {
		if l.Lane == name {
			return l, true
		}
	}
	return LaneSummary{}, false
}

// Describe builds the run's sentences when its summary has none: a run
// stored before they were kept gets them when it is read. The range across
// the readings comes from re-costing the recorded race under each hosted
// preset.
func (rec *RunRecord) Describe() {
	if rec.Summary == nil || rec.Summary.Headline != "" {
		return
	}
	readings, noRange := rec.ReadingsRange()
	rec.Summary.describe(rec.Config, readings, noRange)
}

// ReadingsRange re-costs the recorded race under each reading's preset
// and returns the share WebSocket saved against optimized HTTP under each.
// A race under lean or a custom stack has no reading, so no range: the
// second result then says why, in words the headline uses.
func (rec *RunRecord) ReadingsRange() ([]ReadingSaving, string) {
	st := rec.Config.Stack
	if rec.Summary == nil {
		return nil, ""
	}
	if _, ok := rec.Summary.SavedVsOptimized[LaneWS]; !ok || !slices.Contains(rec.Config.Lanes, LaneHTTPOptimized) {
		return nil, ""
	}
	if !st.Modelled() {
		return nil, "a lean race models no hosted stack, so it has no range across the readings"
	}
	if apistack.Reading(st.Preset) == "" {
		return nil, "a custom stack has no reading, so no range across the readings"
	}
	var out []ReadingSaving
	for _, r := range apistack.HostedReadings {
		if r.Preset.Preset == st.Preset {
			out = append(out, ReadingSaving{Reading: r.Reading, Preset: r.Preset.Preset, Saved: rec.Summary.SavedVsOptimized[LaneWS]})
			continue
		}
		re, err := rec.Recosted(r.Preset)
		if err != nil {
			return nil, "this run was stored before it kept its stack work, so it has no range across the readings"
		}
		v, ok := re.Summary.SavedVsOptimized[LaneWS]
		if !ok {
			return nil, ""
		}
		out = append(out, ReadingSaving{Reading: r.Reading, Preset: r.Preset.Preset, Saved: v})
	}
	return out, ""
}

// stackDoc links a stack to its explanation: the preset's section of
// /docs/stack, or the page for lean and custom stacks.
func stackDoc(st apistack.Stack) string {
	if apistack.Reading(st.Preset) != "" {
		return StackDocPath + "#" + st.Preset
	}
	return StackDocPath
}

// Sooner phrases a saved share: 0.4 → "40% sooner", -0.1 → "10% later".
func Sooner(saved float64) string {
	pct := int(math.Round(math.Abs(saved) * 100))
	if saved < 0 {
		return fmt.Sprintf("%d%% later", pct)
	}
	return fmt.Sprintf("%d%% sooner", pct)
}

// stackWords names the race's stack and its reading in the headline.
func stackWords(st apistack.Stack) string {
	switch {
	case st.Preset == "" || !st.Modelled():
		return "under the lean stack (nothing modelled)"
	case apistack.Reading(st.Preset) != "":
		return "under the modelled " + st.Preset + " stack (" + apistack.Reading(st.Preset) + " reading)"
	}
	return "under a custom modelled stack"
}

// rangeWords gives the headline's comparison across the readings:
// "29% (plain) to 41% (derived) across the readings".
func rangeWords(readings []ReadingSaving) string {
	if len(readings) == 0 {
		return ""
	}
	lo, hi := readings[0], readings[0]
	for _, r := range readings[1:] {
		if r.Saved < lo.Saved {
			lo = r
		}
		if r.Saved > hi.Saved {
			hi = r
		}
	}
	var names []string
	for _, r := range readings {
		names = append(names, r.Reading)
	}
	if pct(lo.Saved) == pct(hi.Saved) {
		return Sooner(lo.Saved) + " under every reading (" + strings.Join(names, ", ") + ")"
	}
	return "from " + Sooner(lo.Saved) + " (" + lo.Reading + ") to " + Sooner(hi.Saved) + " (" + hi.Reading + ") across the readings"
}

func pct(v float64) int { return int(math.Round(v * 100)) }

// headline is the race's one sentence: WebSocket against optimized HTTP,
// the stack and its reading, and the same comparison across the readings.
// Other lanes follow in the result, never here. Without both lanes it says
// which lane finished first.
func headline(s *Summary, cfg Config, readings []ReadingSaving, noRange string) string {
	has := func(l string) bool { return slices.Contains(cfg.Lanes, l) }
	shared := ""
	if !cfg.Sequential && len(cfg.Lanes) > 1 {
		shared = " The lanes ran side by side and shared the CPU."
	}
	if o, ok := s.SavedVsOptimized[LaneWS]; ok && has(LaneWS) && has(LaneHTTPOptimized) {
		h := "WebSocket finished " + Sooner(o) + " than optimized HTTP " + stackWords(cfg.Stack)
		switch {
		case len(readings) > 0:
			h += "; " + rangeWords(readings) + "."
		case noRange != "":
			h += "; " + noRange + "."
		default:
			h += "."
		}
		return h + shared
	}
	if v, ok := s.SavedVsHTTP[LaneWS]; ok && has(LaneWS) && has(LaneHTTP) {
		return "WebSocket finished " + Sooner(v) + " than HTTP " + stackWords(cfg.Stack) + "; the race had no optimized HTTP lane to compare with." + shared
	}
	var best *LaneSummary
	for i := range s.Lanes {
		l := &s.Lanes[i]
		if l.TotalNS > 0 && (best == nil || l.TotalNS < best.TotalNS) {
			best = l
		}
	}
	if best == nil {
		return "No lane finished."
	}
	return LaneLabel(best.Lane) + " finished first, in " + FormatNS(best.TotalNS) + ", " + stackWords(cfg.Stack) + "." + shared
}

// splitSaving splits opt.TotalNS − ws.TotalNS into the waterfall's groups
// from each lane's median repeat. What no stage holds (the client's time
// between turns) counts with the network, the client's time beyond the
// engine's stages, so the parts sum exactly to the saving.
func splitSaving(opt, ws LaneSummary, cfg Config) []SplitPart {
	saved := opt.TotalNS - ws.TotalNS
	var parts []SplitPart
	var sum int64
	network := -1
	for _, g := range splitGroups {
		d := opt.StageNS[g.name] - ws.StageNS[g.name]
		_, inO := opt.StageNS[g.name]
		_, inW := ws.StageNS[g.name]
		if !inO && !inW && g.name != StageNetwork {
			continue
		}
		if g.name == StageNetwork {
			network = len(parts)
		}
		parts = append(parts, SplitPart{Group: g.name, NS: d, Kind: groupKind(g.name, g.kind, cfg)})
		sum += d
	}
	parts[network].NS += saved - sum
	return parts
}

// groupKind is a split part's kind as this race recorded it: the network
// is modelled behind a chosen round trip (networkKind), and the tools are
// modelled when a tool time is (it dwarfs the tools' own work).
func groupKind(group, kind string, cfg Config) string {
	switch {
	case group == StageNetwork:
		return networkKind(cfg)
	case group == StageTool && cfg.ToolTimeMs > 0:
		return api.Modelled
	}
	return kind
}

// splitSentence phrases the split: "Of the 8.7 s saved, 0.8 s is measured
// engine work, 7.8 s the modelled hosted stack, and 0.1 s the network."
// The parts are rounded so that the shown parts add up to the shown total;
// parts that round to nothing are left out.
func splitSentence(saved int64, parts []SplitPart, st apistack.Stack) string {
	step := int64(1_000_000) // 1 ms
	unit, decimals := 1e6, 0
	suffix := " ms"
	if abs(saved) >= 1e9 {
		step, unit, decimals, suffix = 100_000_000, 1e9, 1, " s"
	}
	sign := int64(1)
	verb := "saved"
	if saved < 0 {
		sign, verb = -1, "lost"
	}
	ns := make([]int64, len(parts))
	for i, p := range parts {
		ns[i] = sign * p.NS
	}
	rounded := roundToSum(ns, sign*saved, step)
	show := func(v int64) string {
		return strconv.FormatFloat(float64(v)/unit, 'f', decimals, 64) + suffix
	}
	stackName := "hosted"
	if st.Preset != "" {
		stackName = st.Preset
	}
	var words []string
	for i, p := range parts {
		if rounded[i] == 0 {
			continue
		}
		phrase := ""
		for _, g := range splitGroups {
			if g.name == p.Group {
				phrase = g.phrase
			}
		}
		if strings.Contains(phrase, "%s") {
			phrase = fmt.Sprintf(phrase, stackName)
		}
		v := show(rounded[i])
		if rounded[i] < 0 {
			v = "−" + show(-rounded[i])
		}
		if len(words) == 0 {
			words = append(words, v+" is "+phrase)
		} else {
			words = append(words, v+" "+phrase)
		}
	}
	total := roundHalfAway(sign*saved, step)
	head := "Of the " + show(total) + " " + verb
	if saved < 0 {
		head = "Of the " + show(total) + " WebSocket lost against optimized HTTP"
	} else {
		head += " against optimized HTTP"
	}
	switch len(words) {
	case 0:
		return head + ", no group holds a part that shows at this precision."
	case 1:
		return head + ", " + words[0] + "."
	case 2:
		return head + ", " + words[0] + " and " + words[1] + "."
	}
	return head + ", " + strings.Join(words[:len(words)-1], ", ") + ", and " + words[len(words)-1] + "."
}

// roundToSum rounds each value to a multiple of step so that the rounded
// values add up to total rounded the same way (largest remainders first).
func roundToSum(vals []int64, total, step int64) []int64 {
	target := roundHalfAway(total, step) / step
	out := make([]int64, len(vals))
	rem := make([]int64, len(vals))
	var sum int64
	for i, v := range vals {
		q := floorDiv(v, step)
		out[i], rem[i] = q, v-q*step
		sum += q
	}
	order := make([]int, len(vals))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		switch {
		case rem[a] > rem[b]:
			return -1
		case rem[a] < rem[b]:
			return 1
		}
		return 0
	})
	for d := target - sum; d > 0 && len(order) > 0; d-- {
		out[order[0]]++
		order = order[1:]
	}
	for d := target - sum; d < 0 && len(order) > 0; d++ { // cannot happen, but never leave a wrong sum
		last := order[len(order)-1]
		out[last]--
		order = order[:len(order)-1]
	}
	for i := range out {
		out[i] *= step
	}
	return out
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

func roundHalfAway(v, step int64) int64 {
	if v < 0 {
		return -roundHalfAway(-v, step)
	}
	return (v + step/2) / step * step
}

func abs(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}

// whatItTakesSentence phrases the extra API overhead per turn optimized
// HTTP would need for WebSocket to save the target share.
func whatItTakesSentence(x *WhatItWouldTake) string {
	if x == nil {
		return ""
	}
	beside := fmt.Sprintf("optimized HTTP measured %s of API overhead and a modelled API stack of %s per turn, over %d turns",
		FormatNS(x.OverheadPerTurnNS), FormatNS(x.StackPerTurnNS), x.Turns)
	p := pct(x.Target)
	if x.Already {
		return fmt.Sprintf("What it would take: WebSocket already saves %d%% or more against optimized HTTP here (%s).", p, beside)
	}
	return fmt.Sprintf("What it would take: for WebSocket to save %d%% against optimized HTTP, each optimized HTTP turn would need %s more API overhead (%s).",
		p, FormatNS(x.ExtraPerTurnNS), beside)
}

// FormatNS formats a duration in ns with three significant digits.
func FormatNS(ns int64) string {
	d := float64(ns)
	switch {
	case ns <= 0:
		return "0 ms"
	case d >= 1e9:
		return TrimFloat(d/1e9) + " s"
	case d >= 1e6:
		return TrimFloat(d/1e6) + " ms"
	default:
		return TrimFloat(d/1e3) + " µs"
	}
}

// TrimFloat writes v with three significant digits (two decimals below 10).
func TrimFloat(v float64) string {
	switch {
	case v >= 100:
		return strconv.FormatFloat(math.Round(v), 'f', 0, 64)
	case v >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	default:
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
}
