package web

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"agentloop/api"
	"agentloop/apistack"
	"agentloop/rollout"
	"agentloop/views"
	"agentloop/workload"
)

// laneLabel names a lane as the headline does (rollout.LaneLabel).
func laneLabel(name string) string { return rollout.LaneLabel(name) }

// stages is the waterfall legend (api.WaterfallGroups), in the order bars
// are drawn.
var stages = legend(api.GroupPending)

// raceStages adds what the live view draws before a lane's traces merge.
var raceStages = legend()

// sessionStages are the groups of an inspected session's turns: the
// engine's spans only, no client side.
var sessionStages = legend(api.GroupConnect, api.GroupNetwork, api.GroupTool, api.GroupRecovery, api.GroupPending)

// groupsJSON is api.WaterfallGroups for the charts (views.Race.Groups).
var groupsJSON = func() string {
	b, _ := json.Marshal(api.WaterfallGroups)
	return string(b)
}()

// legend lists the waterfall groups a legend names, but those left out.
func legend(leftOut ...string) []views.Stage {
	var out []views.Stage
	for _, g := range api.WaterfallGroups {
		if g.Legend == "" || slices.Contains(leftOut, g.Name) {
			continue
		}
		kind := ""
		if g.Modelled {
			kind = api.Modelled
		}
		out = append(out, views.Stage{Name: g.Name, Label: g.Legend, Kind: kind})
	}
	return out
}

// profileOptions offers api's built-in model names, each with its rate:
// "spark (1,000 tok/s)".
func profileOptions(selected string) []views.Option {
	models := api.BuiltinModels()
	out := make([]views.Option, 0, len(models))
	for _, m := range models {
		label := m.Name + " (no modelled time)"
		if m.DecodeTPS > 0 {
			label = m.Name + " (" + groupThousands(int64(m.DecodeTPS)) + " tok/s)"
		}
		out = append(out, views.Option{Value: m.Name, Label: label, Selected: m.Name == selected})
	}
	return out
}

// groupThousands writes n ≥ 0 with a comma between groups of three digits.
func groupThousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

func scenarioOptions(selected string) []views.Option {
	var out []views.Option
	for _, s := range rollout.Scenarios() {
		label := s.Name
		if s.Title != "" {
			label = s.Name + ": " + s.Title
		}
		out = append(out, views.Option{Value: s.Name, Label: label, Description: s.Description, Selected: s.Name == selected})
	}
	return out
}

// raceLimits are the race form's limits: rollout's, which Normalize checks
// (the compaction threshold's maximum, the served engine's largest window,
// is set per playground).
var raceLimits = views.RaceLimits{MaxRTTms: strconv.Itoa(rollout.MaxRTTms), MaxToolTimeMs: strconv.Itoa(rollout.MaxToolTimeMs),
	MaxRepeats: strconv.Itoa(rollout.MaxRepeats), MinDecodeTPS: strconv.Itoa(api.MinCustomTPS), MaxDecodeTPS: strconv.Itoa(api.MaxCustomTPS),
	MaxDrillTimes: strconv.Itoa(rollout.MaxDrillTimes)}

// laneCard is a lane's card on the race page, named and explained.
func laneCard(lane, status string) views.LaneCard {
	return views.LaneCard{Name: lane, Label: laneLabel(lane), How: rollout.LaneHow(lane), Status: status}
}

func laneChoices(checked []string) []views.LaneChoice {
	out := make([]views.LaneChoice, 0, len(rollout.AllLanes))
	for _, l := range rollout.AllLanes {
		out = append(out, views.LaneChoice{Name: l, Label: laneLabel(l), How: rollout.LaneHow(l),
			Checked: len(checked) == 0 || slices.Contains(checked, l)})
	}
	return out
}

// fmtNS formats a duration in ns with three significant digits.
func fmtNS(ns int64) string { return rollout.FormatNS(ns) }

func trimFloat(v float64) string { return rollout.TrimFloat(v) }

// fmtInt writes n with thousands separators.
func fmtInt(n int64) string { return rollout.FormatInt(n) }

func fmtBytes(n int64) string {
	switch {
	case n >= 1<<20:
		return trimFloat(float64(n)/(1<<20)) + " MiB"
	case n >= 1<<10:
		return trimFloat(float64(n)/(1<<10)) + " KiB"
	default:
		return fmtInt(n) + " B"
	}
}

func fmtMs(v float64) string {
	return strconv.FormatFloat(v, 'f', -1, 64) + " ms"
}

func fmtTime(t time.Time) string { return t.Local().Format("2006-01-02 15:04:05") }

// sooner phrases a saved share: 0.4 → "40% sooner", -0.1 → "10% later".
func sooner(saved float64) string { return rollout.Sooner(saved) }

// sameRaceLinks are the run's config under lean and under each reading's
// preset, other than its own stack: the same race, one click away.
func sameRaceLinks(cfg rollout.Config) []views.SameRace {
	var out []views.SameRace
	add := func(st apistack.Stack, label string) {
		if st.Preset == cfg.Stack.Preset || (st.Preset == apistack.Lean.Preset && !cfg.Stack.Modelled()) {
			return
		}
		c := cfg
		c.Stack = st
		b, _ := json.Marshal(c)
		out = append(out, views.SameRace{Label: label, Config: string(b)})
	}
	add(apistack.Lean, "The same race, lean")
	for _, r := range apistack.HostedReadings {
		add(r.Preset, "The same race, "+r.Preset.Preset+" ("+r.Reading+" reading)")
	}
	return out
}

func summaryView(s *rollout.Summary, cfg rollout.Config, cores int) *views.Summary {
	if s == nil {
		return nil
	}
	v := &views.Summary{Headline: s.Headline, Split: s.Split, Detail: s.Range, Busy: s.Busy, StackDoc: s.StackDoc, Note: fairness(cfg, cores, true), WhatItWouldTake: s.WhatItTakes,
		SameRace: sameRaceLinks(cfg)}
	// The rows' cells are the summary's own, phrased once in rollout
	// (Summary.Show), here on a copy so that a summary built without them
	// gets them too.
	shown := *s
	shown.Lanes = slices.Clone(s.Lanes)
	shown.Show()
	v.TimeWent = shown.TimeWent // with the lanes' labels, a stored run's too
	if shown.Medians != "" {
		v.Note += " " + shown.Medians
	}
	for _, l := range shown.Lanes {
		v.Rows = append(v.Rows, views.SummaryRow{Lane: l.Lane, Label: laneLabel(l.Lane), Status: l.Status, Total: l.Shown.Total,
			Turns: l.Shown.Turns, Input: l.Shown.Input, Cached: l.Shown.Cached,
			Output: fmtInt(int64(l.OutputTokens)), BytesSent: fmtBytes(l.BytesSent), MedianOverhead: l.Shown.MedianOverhead,
			StackPerTurn: l.Shown.StackPerTurn, APICPU: l.Shown.APICPU, RolloutsPerCore: l.Shown.RolloutsPerCore,
			SavedVsHTTP: l.Shown.VsHTTP, Error: l.Error})
	}
	return v
}

// fairness says how the lanes shared the machine.
func fairness(cfg rollout.Config, cores int, past bool) string {
	if cfg.Sequential {
		if past {
			return "The lanes ran one after another, so none competed with another for the CPU."
		}
		return "The lanes run one after another, so none competes with another for the CPU."
	}
	if cfg.TakeTurns {
		if past {
			return "The lanes took turns, one request at a time, each on its own clock, so none competed with another for the CPU."
		}
		return "The lanes take turns, one request at a time, each on its own clock, so none competes with another for the CPU."
	}
	if past {
		return fmt.Sprintf("The lanes ran together and shared the %d cores of this machine; for fair timing, run them one after another.", cores)
	}
	return fmt.Sprintf("The lanes run together and share the %d cores of this machine; for fair timing, run them one after another.", cores)
}

func configFields(cfg rollout.Config) []views.Field {
	lanes := make([]string, 0, len(cfg.Lanes))
	for _, l := range cfg.Lanes {
		lanes = append(lanes, laneLabel(l))
	}
	f := []views.Field{
		{Label: "Scenario", Value: cfg.Scenario},
	}
	if w := cfg.WorkloadSummary; w != nil {
		f = append(f, views.Field{Label: "Workload", Value: workloadWords(*w)})
	}
	f = append(f, []views.Field{
		{Label: "Profile", Value: cfg.Profile},
		{Label: "Round trip", Value: fmtMs(cfg.RTTms)},
		{Label: "Tool time", Value: fmtMs(cfg.ToolTimeMs)},
		{Label: "Lanes", Value: strings.Join(lanes, ", ")},
		{Label: "Order", Value: laneOrder(cfg)},
		{Label: "Seed", Value: strconv.FormatInt(cfg.Seed, 10)},
		{Label: "Repeats", Value: strconv.Itoa(max(cfg.Repeats, 1))},
	}...)
	if cfg.DecodeTPS > 0 {
		f = append(f, views.Field{Label: "Decode rate", Value: trimFloat(cfg.DecodeTPS) + " tok/s (model " + cfg.Model() + ")"})
	}
	if rf, ok := reasoningField(cfg.Reasoning); ok {
		f = append(f, rf)
	}
	f = append(f, stackFields(cfg.Stack)...)
	if cfg.BandwidthKbps > 0 {
		f = append(f, views.Field{Label: "Bandwidth", Value: strconv.Itoa(cfg.BandwidthKbps) + " kbit/s"})
	}
	if cfg.TLS {
		f = append(f, views.Field{Label: "TLS", Value: "on"})
	}
	if len(cfg.Drills) > 0 {
		f = append(f, views.Field{Label: "Drills", Value: drillSchedule(cfg.Drills)})
	}
	return f
}

// workloadWords says what a run's workload holds: "1,000 turns (412 tool
// calls) from codex-0.171.0: 52,000 tokens in, 9,800 out, 14 min of tool
// time".
func workloadWords(w workload.Summary) string {
	s := fmtInt(int64(w.Turns)) + " turns (" + fmtInt(int64(w.Calls)) + " tool calls)"
	if w.Source != "" {
		s += " from " + w.Source
	}
	return s + ": " + fmtInt(int64(w.InputTokens)) + " tokens in, " + fmtInt(int64(w.OutputTokens)) + " out, " +
		fmtNS(int64(w.ToolTimeMs*float64(time.Millisecond))) + " of tool time"
}

// drillSchedule lists a race's drills: "evict-cache on WebSocket after 2
// turns (twice)".
func drillSchedule(drills []rollout.LaneDrill) string {
	parts := make([]string, 0, len(drills))
	for _, d := range drills {
		s := d.Drill + " on " + laneLabel(d.Lane) + " after " + strconv.Itoa(d.AfterTurns) + " turns"
		if d.AfterTurns == 1 {
			s = d.Drill + " on " + laneLabel(d.Lane) + " after 1 turn"
		}
		if d.Times > 1 {
			s += " (" + strconv.Itoa(d.Times) + " times)"
		}
		if d.DurationMS > 0 {
			s += ", " + fmtMs(float64(d.DurationMS))
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, "; ")
}

func turnView(t rollout.Turn) views.TurnView {
	title := "Turn " + strconv.Itoa(t.Index+1)
	if t.Index < 0 {
		title = "Warm-up (generate: false)"
	}
	timing := "sent at +" + fmtNS(t.SentNS) + " · took " + fmtNS(t.DoneNS-t.SentNS)
	if t.ToolNS > 0 {
		timing += " · tools " + fmtNS(t.ToolNS)
	}
	tokens := "in " + fmtInt(int64(t.InputTokens))
	if t.CachedTokens > 0 {
		tokens += " (cached " + fmtInt(int64(t.CachedTokens)) + ")"
	}
	tokens += " · out " + fmtInt(int64(t.OutputTokens))
	v := views.TurnView{Title: title, Repeat: t.Repeat, ResponseID: t.ResponseID, Timing: timing, Tokens: tokens, Text: t.Text, Error: t.Error}
	for _, c := range t.Calls {
		v.Calls = append(v.Calls, views.CallView{Name: c.Name, Arguments: c.Arguments, CallID: c.CallID, Output: c.Output})
	}
	return v
}

func runDetail(rec *rollout.RunRecord, permalink string, cores int) views.RunDetail {
	d := views.RunDetail{ID: rec.ID, Status: rec.Status, Created: fmtTime(rec.CreatedAt), CreatedISO: rec.CreatedAt.UTC().Format(time.RFC3339),
		Config: configFields(rec.Config), Summary: summaryView(rec.Summary, rec.Config, cores),
		RaceHref: "/race?run=" + rec.ID, ExportHref: "/api/runs/" + rec.ID, Permalink: permalink,
		Repeats: max(rec.Config.Repeats, 1), Stages: stages, Groups: groupsJSON}
	names, status := recordLanes(rec)
	for _, name := range names {
		lt := views.LaneTranscript{Name: name, Label: laneLabel(name), Status: status[name].Status, Error: status[name].Error}
		for _, t := range rec.Turns {
			if t.Lane == name {
				lt.Turns = append(lt.Turns, turnView(t))
			}
		}
		d.Lanes = append(d.Lanes, lt)
	}
	return d
}

// recordLanes returns a stored run's lanes in the order the race named
// them (the stored lanes' order for a run kept without its config's), and
// each lane's summary by name.
func recordLanes(rec *rollout.RunRecord) ([]string, map[string]rollout.LaneSummary) {
	status := map[string]rollout.LaneSummary{}
	for _, l := range rec.Lanes {
		status[l.Lane] = l
	}
	names := rec.Config.Lanes
	if len(names) == 0 {
		for _, l := range rec.Lanes {
			names = append(names, l.Lane)
		}
	}
	return names, status
}

func runRow(r rollout.RunRecord) views.RunRow {
	lanes := make([]string, 0, len(r.Config.Lanes))
	for _, l := range r.Config.Lanes {
		lanes = append(lanes, laneLabel(l))
	}
	return views.RunRow{ID: r.ID, Href: "/runs/" + r.ID, RaceHref: "/race?run=" + r.ID,
		Created: fmtTime(r.CreatedAt), CreatedISO: r.CreatedAt.UTC().Format(time.RFC3339),
		Scenario: r.Config.Scenario, Profile: r.Config.Profile, Status: r.Status, Lanes: strings.Join(lanes, ", "),
		Settings: runSettings(r.Config), Saving: listSaving(r)}
}

// listSaving is WebSocket's saving in the runs list, against the baseline
// the headline uses (optimized HTTP), or against HTTP for a run without
// it; "–" when the run has neither comparison.
func listSaving(r rollout.RunRecord) string {
	s := r.Summary
	if s == nil {
		return "–"
	}
	base, saved, than := rollout.LaneHTTPOptimized, s.SavedVsOptimized, " than optimized HTTP"
	if _, ok := saved[rollout.LaneWS]; !ok || !slices.Contains(r.Config.Lanes, base) {
		base, saved, than = rollout.LaneHTTP, s.SavedVsHTTP, " than HTTP"
	}
	v, ok := saved[rollout.LaneWS]
	if !ok || !slices.Contains(r.Config.Lanes, base) {
		return "–"
	}
	out := sooner(v) + than
	// With repeats, the medians compared and their spread.
	if s.Repeats > 1 {
		var parts []string
		for _, l := range s.Lanes {
			if l.Lane == base || l.Lane == rollout.LaneWS {
				parts = append(parts, laneLabel(l.Lane)+" "+rollout.TotalWithSpread(l))
			}
		}
		out += " (medians of " + strconv.Itoa(s.Repeats) + " repeats: " + strings.Join(parts, ", ") + ")"
	}
	return out
}

// runSettings is a run's setup in one line, for comparing runs in a list:
// "20 ms round trip · 50 ms tools · hosted stack · one after another".
func runSettings(cfg rollout.Config) string {
	stack := cfg.Stack.Preset
	if stack == "" {
		stack = apistack.Lean.Preset // a run stored before races chose a stack
	}
	s := fmtMs(cfg.RTTms) + " round trip · " + fmtMs(cfg.ToolTimeMs) + " tools · " + stack + " stack · " + laneOrder(cfg)
	if cfg.Repeats > 1 {
		s += " · " + strconv.Itoa(cfg.Repeats) + " repeats"
	}
	return s
}

// stackFields shows the stack a run used: its preset and every parameter.
func stackFields(st apistack.Stack) []views.Field {
	if st.Preset == "" {
		st = apistack.Lean // a run stored before races chose a stack
	}
	name := st.Preset
	if st.Modelled() {
		name += " (modelled)"
	} else {
		name += " (nothing modelled)"
	}
	f := []views.Field{{Label: "API stack", Value: name}}
	for _, p := range apistack.Params {
		f = append(f, views.Field{Label: "Stack " + p.Label, Value: strconv.FormatFloat(p.Get(st), 'f', -1, 64)})
	}
	return f
}

// stackChoices fills the race form's stack select (the presets, and
// "custom" when the run shown used one), one input per parameter with the
// chosen stack's values, and the presets' parameters as JSON for race.js.
func stackChoices(st apistack.Stack) ([]views.Option, []views.StackParam, string) {
	if st.Preset == "" {
		st = apistack.Lean
	}
	var opts []views.Option
	for _, p := range apistack.Presets {
		desc := "models nothing: today's engine"
		if p.Modelled() {
			desc = "classifiers, state loads, service hops and billing of a hosted API, " + readingWords(p.Preset) + " (explained at /docs/stack)"
		}
		opts = append(opts, views.Option{Value: p.Preset, Label: p.Preset, Description: desc, Selected: p.Preset == st.Preset})
	}
	if _, ok := apistack.Preset(st.Preset); !ok {
		opts = append(opts, views.Option{Value: st.Preset, Label: st.Preset, Description: "the parameters below", Selected: true})
	}
	params := make([]views.StackParam, 0, len(apistack.Params))
	for _, p := range apistack.Params {
		// The input's limits are the parameter's range (apistack.Params);
		// the run API refuses a value between 0 and Min of a rate.
		params = append(params, views.StackParam{Key: p.Key, Label: p.Label, Value: strconv.FormatFloat(p.Get(st), 'f', -1, 64),
			Min: strconv.FormatFloat(p.FormMin(), 'f', -1, 64), Max: strconv.FormatFloat(p.Max, 'f', -1, 64)})
	}
	presets := map[string]apistack.Stack{}
	for _, p := range apistack.Presets {
		presets[p.Preset] = p
	}
	b, _ := json.Marshal(presets)
	return opts, params, string(b)
}

// readingWords says which reading a hosted preset belongs to.
func readingWords(preset string) string {
	switch r := apistack.Reading(preset); r {
	case apistack.ReadingDerived:
		return "derived from hardware figures"
	case "":
		return "custom"
	default:
		return "fitted under the " + r + " reading"
	}
}

// laneOrder says how a race's lanes ran: together, one after another or
// taking turns.
func laneOrder(cfg rollout.Config) string { return cfg.Order() }

// presenter fills presenter mode's parts of the race page: the lanes'
// lines (step 1) and the race its start posts, the classroom's
// (p.classroom, which the carried recording ran too: RecordedRace).
func (p *Playground) presenter(v *views.Race, cfg rollout.Config) {
	v.Story = story(cfg.Lanes)
	b, _ := json.Marshal(p.classroom)
	v.Preset = string(b)
}

// laneLine is presenter mode's line for each lane: what travels each
// turn and what the server does with it.
var laneLine = map[string]string{
	rollout.LaneHTTP:          "sends the whole conversation every turn; all read again.",
	rollout.LaneHTTPOptimized: "sends it all too; the server's caches re-read it faster.",
	rollout.LaneHTTPChained:   "sends only what is new; the server loads the stored rest.",
	rollout.LaneWS:            "sends only what is new; the open connection keeps the rest.",
	rollout.LanePrototype:     "one long response that takes each tool's output in.",
}

// story is presenter mode's first step for the race's lanes, in their
// order.
func story(lanes []string) []views.StoryLane {
	out := make([]views.StoryLane, 0, len(lanes))
	for _, l := range lanes {
		out = append(out, views.StoryLane{Name: l, Label: laneLabel(l), Story: laneLine[l]})
	}
	return out
}
