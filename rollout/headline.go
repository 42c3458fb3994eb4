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
	Group string `json:"group"` // a Stage* name, or SplitNoise
	NS    int64  `json:"ns"`
	Kind  string `json:"kind"` // measured or modelled
}

// SplitNoise is the split part that holds every group whose share of the
// saving is smaller than the machine's noise (Summary.NoiseNS).
const SplitNoise = "noise"

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
// split, the range across the readings and what it would take. readings
// gives the headline's comparison under each reading (nil with a reason
// when there is none). It is called when a race ends and, for a run stored
// before the sentences were, when the run is read.
func (s *Summary) describe(cfg Config, readings []ReadingSaving, noRange string) {
	s.StackDoc = stackDoc(cfg.Stack)
	s.SplitParts, s.Split, s.NoiseNS = nil, "", 0
	opt, okO := s.lane(LaneHTTPOptimized)
	ws, okW := s.lane(LaneWS)
	var raw []SplitPart
	if okO && okW && opt.Status == StatusPassed && ws.Status == StatusPassed {
		raw = splitSaving(opt, ws, cfg)
		noise, how := noiseThreshold(opt, ws)
		s.SplitParts, s.NoiseNS = foldNoise(raw, noise), noise
		s.Split = splitSentence(opt.TotalNS-ws.TotalNS, s.SplitParts, cfg.Stack, noise, how)
	}
	s.Headline = headline(s, cfg, raw)
	s.Readings = readings
	s.Range = rangeSentence(readings, noRange)
	s.WhatItTakes = whatItTakesSentence(s.WhatItWouldTake)
	s.Busy = busySentence(s.Load, s.Repeats)
	s.WorkloadAnswer = WorkloadAnswer(cfg, s)
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

// plainShares are the shares a class says in words rather than as a
// percentage, each within a point of its fraction.
var plainShares = []struct {
	saved float64
	words string
}{
	{3.0 / 4, "in a quarter of the time"},
	{2.0 / 3, "in a third of the time"},
	{1.0 / 2, "in half the time"},
	{1.0 / 3, "a third sooner"},
	{1.0 / 4, "a quarter sooner"},
}

// PlainSooner phrases a saved share as a class says it: 0.5 → "in half
// the time", 1/3 → "a third sooner", 0.42 → "42% sooner", 0 → "at the
// same time", -0.1 → "10% later".
func PlainSooner(saved float64) string {
	for _, p := range plainShares {
		if math.Abs(saved-p.saved) < 0.01 {
			return p.words
		}
	}
	if pct(saved) == 0 {
		return "at the same time"
	}
	return Sooner(saved)
}

// presetWords name the race's preset and its reading, for the headline's
// parentheses.
func presetWords(st apistack.Stack) string {
	switch {
	case st.Preset == "" || !st.Modelled():
		return "preset lean, which models no hosted API stack"
	case apistack.Reading(st.Preset) != "":
		return "preset " + st.Preset + ", " + apistack.Reading(st.Preset) + " reading"
	}
	return "a custom preset, which has no reading"
}

// rangeSentence gives the headline's comparison across the readings, for
// the details: "Across the readings, WebSocket finished from 29% sooner
// (plain) to 41% sooner (derived) than optimized HTTP." With no range it
// says why (noRange), or nothing.
func rangeSentence(readings []ReadingSaving, noRange string) string {
	if len(readings) == 0 {
		if noRange == "" {
			return ""
		}
		return strings.ToUpper(noRange[:1]) + noRange[1:] + "."
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
		return "Under every reading (" + strings.Join(names, ", ") + "), WebSocket finished " + Sooner(lo.Saved) + " than optimized HTTP."
	}
	return "Across the readings, WebSocket finished from " + Sooner(lo.Saved) + " (" + lo.Reading + ") to " + Sooner(hi.Saved) + " (" + hi.Reading + ") than optimized HTTP."
}

func pct(v float64) int { return int(math.Round(v * 100)) }

// headline is the race's two sentences. The first is one a class
// understands: how long WebSocket and optimized HTTP took and the ratio in
// plain words. The second says how much of the saving was measured on this
// machine and how much is a model, naming the preset and its reading in
// parentheses. raw are the saving's parts before noise is folded (nil
// without both lanes passed). Other lanes follow in the result; the range
// across the readings follows in the details. Without both lanes it
// compares WebSocket with HTTP, or says which lane finished first.
func headline(s *Summary, cfg Config, raw []SplitPart) string {
	has := func(l string) bool { return slices.Contains(cfg.Lanes, l) }
	shared := ""
	if cfg.Overlaps() {
		shared = " The lanes ran side by side and shared the CPU."
	}
	medians := ""
	if s.Repeats > 1 {
		medians = fmt.Sprintf(" (medians of %d repeats)", s.Repeats)
	}
	finished := func(a, b LaneSummary, saved float64) string {
		return LaneLabel(a.Lane) + " finished in " + FormatNS(a.TotalNS) + " and " + lowerLabel(b.Lane) + " in " + FormatNS(b.TotalNS) + medians + ": " + PlainSooner(saved) + "."
	}
	ws, okW := s.lane(LaneWS)
	if o, ok := s.SavedVsOptimized[LaneWS]; ok && okW && has(LaneWS) && has(LaneHTTPOptimized) {
		opt, _ := s.lane(LaneHTTPOptimized)
		second := " (" + presetWords(cfg.Stack) + ")"
		if raw != nil {
			second = " " + measuredModelled(opt.TotalNS-ws.TotalNS, raw, cfg.Stack)
		} else {
			second = " The saving was not split" + second + "."
		}
		return finished(ws, opt, o) + second + shared
	}
	if v, ok := s.SavedVsHTTP[LaneWS]; ok && okW && has(LaneWS) && has(LaneHTTP) {
		h, _ := s.lane(LaneHTTP)
		return finished(ws, h, v) + " The race had no optimized HTTP lane to compare with (" + presetWords(cfg.Stack) + ")." + shared
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
	return LaneLabel(best.Lane) + " finished first, in " + FormatNS(best.TotalNS) + medians + ". The race had no WebSocket and optimized HTTP lanes to compare (" + presetWords(cfg.Stack) + ")." + shared
}

// lowerLabel is a lane's label inside a sentence: "optimized HTTP".
func lowerLabel(lane string) string {
	switch lane {
	case LaneHTTPOptimized:
		return "optimized HTTP"
	case LaneHTTPChained:
		return "chained HTTP"
	}
	return LaneLabel(lane)
}

// modelledWhat names what a modelled part of the saving is a model of.
var modelledWhat = map[string]string{
	StageAPIStack: "a hosted API's work", StageConnect: "a hosted API's work", StageRecovery: "a hosted API's work",
	StagePrefill: "the model's inference", StageDecode: "the model's inference",
	StageNetwork: "the network", StageTool: "the tools",
}

// measuredModelled is the headline's second sentence: the saving split
// into what was measured on this machine and what is a model (of a hosted
// API's work, the model's inference, the network or the tools, as the race
// modelled them), named in parentheses by its preset and reading. The two
// add up to the saving as shown.
func measuredModelled(saved int64, raw []SplitPart, st apistack.Stack) string {
	var measured, modelled int64
	var what []string
	for _, g := range splitGroups { // in the split's order
		for _, p := range raw {
			if p.Group != g.name {
				continue
			}
			if p.Kind == api.Measured {
				measured += p.NS
				continue
			}
			modelled += p.NS
			if w := modelledWhat[p.Group]; p.NS != 0 && !slices.Contains(what, w) {
				what = append(what, w)
			}
		}
	}
	step, show := sentenceUnit(saved)
	sign := int64(1)
	if saved < 0 {
		sign = -1
	}
	r := roundToSum([]int64{sign * measured, sign * modelled}, sign*saved, step)
	signed := func(v int64) string {
		if v < 0 {
			return "−" + show(-v)
		}
		return show(v)
	}
	model := "a model"
	switch len(what) {
	case 0:
	case 1:
		model += " of " + what[0]
	default:
		model += " of " + strings.Join(what[:len(what)-1], ", ") + " and " + what[len(what)-1]
	}
	head := "Of the " + show(roundHalfAway(sign*saved, step)) + " saved, "
	if saved < 0 {
		head = "Of the " + show(roundHalfAway(sign*saved, step)) + " WebSocket lost, "
	}
	if modelled == 0 {
		return head + "all was measured on this machine (" + presetWords(st) + ")."
	}
	if r[0] == 0 {
		// What this machine measured rounds away: say so in words rather
		// than as "0.0 s was measured".
		return head + "all is " + model + " (" + presetWords(st) + "); what was measured on this machine comes to less than " + show(step) + "."
	}
	return head + signed(r[0]) + " was measured on this machine and " + signed(r[1]) + " is " + model + " (" + presetWords(st) + ")."
}

// sentenceUnit is the precision a sentence shows a saving at: whole ms
// below a second, tenths of a second above.
func sentenceUnit(saved int64) (int64, func(int64) string) {
	step, unit, decimals, suffix := int64(1_000_000), 1e6, 0, " ms"
	if abs(saved) >= 1e9 {
		step, unit, decimals, suffix = 100_000_000, 1e9, 1, " s"
	}
	return step, func(v int64) string { return strconv.FormatFloat(float64(v)/unit, 'f', decimals, 64) + suffix }
}

// NoiseFloorShare is the least a split part must reach, as a share of
// optimized HTTP's time, to be told apart from the machine's noise when
// the repeats spread less (or there is one repeat).
const NoiseFloorShare = 0.01

// noiseThreshold is the machine's noise for a split: half the wider spread
// of the two lanes' repeats, or NoiseFloorShare of optimized HTTP's time
// when that is larger; how says which, in words.
func noiseThreshold(opt, ws LaneSummary) (int64, string) {
	floor := int64(float64(opt.TotalNS) * NoiseFloorShare)
	spread := max(opt.MaxTotalNS-opt.MinTotalNS, ws.MaxTotalNS-ws.MinTotalNS) / 2
	if spread > floor {
		return spread, "half the wider spread of the lanes' repeats"
	}
	return floor, fmt.Sprintf("%d%% of optimized HTTP's time", pct(NoiseFloorShare))
}

// foldNoise moves the parts smaller than noise (zero parts aside: they show
// nothing) into one "noise" part, last, so that the parts still sum exactly
// to the saving.
func foldNoise(parts []SplitPart, noise int64) []SplitPart {
	var out []SplitPart
	var folded int64
	n := 0
	for _, p := range parts {
		if p.NS != 0 && abs(p.NS) < noise {
			folded += p.NS
			n++
			continue
		}
		out = append(out, p)
	}
	if n > 0 {
		out = append(out, SplitPart{Group: SplitNoise, NS: folded, Kind: api.Measured})
	}
	return out
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

// splitSentence phrases the split: "Of the 8.7 s saved against optimized
// HTTP, 0.8 s is measured engine work, 7.8 s the modelled hosted stack, and
// 0.1 s noise (each part under 250 ms: 1% of optimized HTTP's time)." The
// parts are rounded so that the shown parts add up to the shown total;
// parts that round to nothing are left out. noise and noiseHow state the
// threshold a noise part was folded under.
func splitSentence(saved int64, parts []SplitPart, st apistack.Stack, noise int64, noiseHow string) string {
	step, show := sentenceUnit(saved)
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
		if p.Group == SplitNoise {
			phrase = "noise (the parts under " + FormatNS(noise) + " each, " + noiseHow + ")"
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
// HTTP would need for WebSocket to save the target share, beside what
// optimized HTTP's turns took: the median API overhead (the result table's
// figure) and the mean modelled API stack, each named.
func whatItTakesSentence(x *WhatItWouldTake) string {
	if x == nil {
		return ""
	}
	overhead := "a median API overhead of " + FormatNS(x.MedianOverheadNS)
	if x.MedianOverheadNS == 0 { // stored before the median was kept
		overhead = "a mean API overhead of " + FormatNS(x.OverheadPerTurnNS)
	}
	beside := fmt.Sprintf("optimized HTTP measured %s per turn and a modelled API stack of %s per turn on average, over %d turns",
		overhead, FormatNS(x.StackPerTurnNS), x.Turns)
	p := pct(x.Target)
	if x.Already {
		return fmt.Sprintf("What it would take: WebSocket already saves %d%% or more against optimized HTTP here (%s).", p, beside)
	}
	return fmt.Sprintf("What it would take: for WebSocket to save %d%% against optimized HTTP, each optimized HTTP turn would need %s more API overhead on average (%s).",
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
