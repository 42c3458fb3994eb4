package apistack

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strings"
	"time"

	"agentloop/api"
)

// Stack names the modelled work of a hosted API around the model: the
// parameters of the stack_* stages. Each cost is a function of the work a
// stage does (tokens classified, hops made, bytes loaded), never of the
// transport. The zero value models nothing. docs/stack.md cites each figure.
type Stack struct {
	// Preset is the preset the parameters started from ("lean", "hosted"),
	// or "custom" once any parameter was set on its own.
	Preset string `json:"preset"`
	// HopMS is one service hop inside the hosted API's data centre.
	HopMS float64 `json:"hop_ms"`
	// ClassifyTPS is the post-sprint safety classifier's rate over the
	// tokens it classifies (/v1); ClassifyTPSBaseline the pre-sprint rate
	// (/baseline/v1). 0 models no classifier. A classification also makes
	// one hop.
	ClassifyTPS         float64 `json:"classify_tps"`
	ClassifyTPSBaseline float64 `json:"classify_tps_baseline"`
	// StateLoadMS is one read of stored conversation state from a remote
	// store; StateLoadMBps the rate at which its bytes arrive.
	StateLoadMS   float64 `json:"state_load_ms"`
	StateLoadMBps float64 `json:"state_load_mbps"`
	// ConfigHops are made when the resolved-model configuration is not
	// cached; SprintHops by the engine before the sprint (/baseline/v1);
	// BillingHops by every finalize.
	ConfigHops  float64 `json:"config_hops"`
	SprintHops  float64 `json:"sprint_hops"`
	BillingHops float64 `json:"billing_hops"`
}

// A reading is a stated assumption about the baseline of the announced
// per-request figures (WebSocket mode: −80% API overhead per round trip and
// −50% time to first token; the sprint: −45% time to first token). Each
// hosted preset belongs to one, and a headline names it. docs/stack.md
// records each preset's reading, fit and residuals.
const (
	// ReadingPlain: every announced figure is against pre-sprint HTTP
	// (the http lane).
	ReadingPlain = "plain"
	// ReadingPostSprint: WebSocket's figures are against post-sprint HTTP
	// (http-optimized), the sprint's against pre-sprint HTTP (http).
	ReadingPostSprint = "post-sprint"
	// ReadingDerived: no fit; the classifier rates are derived from
	// hardware figures and an assumed utilisation.
	ReadingDerived = "derived"
)

// Stack presets. lean models nothing. The hosted presets share every cited
// parameter and differ in the classifier rates: hosted derives them,
// hosted-plain and hosted-post-sprint fit them to the announced figures
// under their reading (agentloop bench calibrate --fit).
var (
	Lean   = Stack{Preset: "lean"}
	Hosted = Stack{Preset: "hosted", HopMS: 2.65, ClassifyTPS: 130_000, ClassifyTPSBaseline: 25_000,
		StateLoadMS: 5, StateLoadMBps: 1250, ConfigHops: 1, SprintHops: 1, BillingHops: 1}
	// The classifier rates fitted under each reading by agentloop bench
	// calibrate --fit (docs/stack.md, "Calibration record": the fit, its
	// run and its residuals); every other parameter is hosted's.
	HostedPlain = Stack{Preset: "hosted-plain", HopMS: 2.65, ClassifyTPS: 489_000, ClassifyTPSBaseline: 130_000,
		StateLoadMS: 5, StateLoadMBps: 1250, ConfigHops: 1, SprintHops: 1, BillingHops: 1}
	HostedPostSprint = Stack{Preset: "hosted-post-sprint", HopMS: 2.65, ClassifyTPS: 110_000, ClassifyTPSBaseline: 43_700,
		StateLoadMS: 5, StateLoadMBps: 1250, ConfigHops: 1, SprintHops: 1, BillingHops: 1}
)

// Presets in display order.
var Presets = []Stack{Lean, HostedPostSprint, HostedPlain, Hosted}

// DefaultRace is the stack the one-click race and the race form start
// from: the preset fitted under the post-sprint reading, whose baseline is
// http-optimized, the HTTP anyone calling the API has today.
var DefaultRace = HostedPostSprint

// HostedReadings are the readings a headline gives its range over, each
// with its preset, in display order.
var HostedReadings = []struct {
	Reading string
	Preset  Stack
}{{ReadingPostSprint, HostedPostSprint}, {ReadingPlain, HostedPlain}, {ReadingDerived, Hosted}}

// Reading returns the reading of a preset by name ("" for lean, a
// custom stack or an unknown name).
func Reading(preset string) string {
	for _, r := range HostedReadings {
		if r.Preset.Preset == preset {
			return r.Reading
		}
	}
	return ""
}

// Preset returns the preset of that name.
func Preset(name string) (Stack, bool) {
	i := slices.IndexFunc(Presets, func(s Stack) bool { return s.Preset == name })
	if i < 0 {
		return Stack{}, false
	}
	return Presets[i], true
}

// PresetNames lists the presets' names.
func PresetNames() []string {
	names := make([]string, len(Presets))
	for i, s := range Presets {
		names[i] = s.Preset
	}
	return names
}

// Modelled says whether the stack models any cost at all.
func (s Stack) Modelled() bool {
	c := s
	c.Preset = ""
	return c != Stack{}
}

// Parse reads a stack choice: empty keeps def, a preset name selects
// it, and a JSON object sets parameters on top of its "preset" (def when
// absent). Bad values get a 400 that names param.
func Parse(v string, def Stack, param string) (Stack, *api.Error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return def, nil
	}
	if !strings.HasPrefix(v, "{") {
		s, ok := Preset(v)
		if !ok {
			return Stack{}, api.BadRequest(param, api.CodeInvalidValue, "Unknown stack '%s'; use one of %s, or a JSON object of parameters.",
				v, strings.Join(PresetNames(), ", "))
		}
		return s, nil
	}
	var head struct {
		Preset *string `json:"preset"`
	}
	if err := json.Unmarshal([]byte(v), &head); err != nil {
		return Stack{}, api.BadRequest(param, api.CodeInvalidValue, "The stack is not a valid JSON object: %s", err.Error())
	}
	base := def
	// "custom" and "" (a zero Stack marshalled) start from def too.
	if head.Preset != nil && *head.Preset != "custom" && *head.Preset != "" {
		p, ok := Preset(*head.Preset)
		if !ok {
			return Stack{}, api.BadRequest(param, api.CodeInvalidValue, "Unknown stack preset '%s'; use one of %s.",
				*head.Preset, strings.Join(PresetNames(), ", "))
		}
		base = p
	}
	s := base
	dec := json.NewDecoder(bytes.NewReader([]byte(v)))
	dec.DisallowUnknownFields()
	if err := dec.Decode((*stackFields)(&s)); err != nil {
		return Stack{}, api.BadRequest(param, api.CodeInvalidValue, "The stack has a bad parameter: %s", err.Error())
	}
	if s.Preset == "" {
		s.Preset = base.Preset
	}
	if s != base {
		s.Preset = "custom"
	} else {
		s.Preset = base.Preset
	}
	if err := s.Validate(param); err != nil {
		return Stack{}, err
	}
	return s, nil
}

// FromRequest reads the request's stack from the header or its query
// alias; def applies when neither is set.
func FromRequest(r *http.Request, def Stack) (Stack, *api.Error) {
	return Parse(api.AgentloopHeader(r, api.HeaderStack), def, api.HeaderStack)
}

// StageCeiling is the longest any modelled stack stage may take. The
// ranges of Params keep every stage under it for the largest request
// the engine accepts (MaxTokens, MaxBytes); a stage that would
// exceed it anyway (a chain whose stored context outgrew one request) is
// capped at it, so no duration ever overflows (docs/stack.md, "Ranges").
const StageCeiling = 30 * time.Minute

// The largest work one request brings to a stage: the engine's largest
// body (32 MiB, server.Defaults' MaxBody), read as one token per byte (a
// token is at least one byte) for the classifier and as bytes of stored
// state for the state load.
const (
	MaxTokens = 32 << 20
	MaxBytes  = 32 << 20
)

// Param is one parameter of the modelled stack: how the header, the
// run API and the form spell it, how to read it, and its range. It is data,
// so that the form and the docs can be built from the same table.
type Param struct {
	Key   string // the JSON key: "hop_ms"
	Label string // how a form labels it: "hop (ms)"
	Unit  string // "ms", "tok/s", "MB/s" or "hops"
	// Min and Max bound it. Off says 0 is accepted too, below Min: a rate
	// of 0 models no such work at all.
	Min, Max float64
	Off      bool
	get      func(*Stack) *float64
}

// Get is the parameter's value in s.
func (p Param) Get(s Stack) float64 { return *p.get(&s) }

// Set sets the parameter in s to v, unchecked (Validate checks).
func (p Param) Set(s *Stack, v float64) { *p.get(s) = v }

// FormMin is the smallest value a form may offer: 0 when it turns the
// work off, else Min.
func (p Param) FormMin() float64 {
	if p.Off {
		return 0
	}
	return p.Min
}

// Params are the stack's parameters with their ranges, in display
// order. With the largest request (MaxTokens, MaxBytes), the
// extremes make: classify 10 s + 32 Mi tokens ÷ 20,000 tok/s ≈ 28 min;
// state load 10 s + 32 MiB ÷ 1 MB/s ≈ 44 s; hops 100 × 10 s ≈ 17 min; all
// under StageCeiling (TestStackRangesKeepStagesUnderTheCeiling).
var Params = []Param{
	{Key: "hop_ms", Label: "hop (ms)", Unit: "ms", Max: 10_000, get: func(s *Stack) *float64 { return &s.HopMS }},
	{Key: "classify_tps", Label: "classifier tok/s (/v1)", Unit: "tok/s", Min: 20_000, Max: 1e9, Off: true,
		get: func(s *Stack) *float64 { return &s.ClassifyTPS }},
	{Key: "classify_tps_baseline", Label: "classifier tok/s (/baseline/v1)", Unit: "tok/s", Min: 20_000, Max: 1e9, Off: true,
		get: func(s *Stack) *float64 { return &s.ClassifyTPSBaseline }},
	{Key: "state_load_ms", Label: "state load (ms)", Unit: "ms", Max: 10_000, get: func(s *Stack) *float64 { return &s.StateLoadMS }},
	{Key: "state_load_mbps", Label: "state load MB/s", Unit: "MB/s", Min: 1, Max: 1e6, Off: true,
		get: func(s *Stack) *float64 { return &s.StateLoadMBps }},
	{Key: "config_hops", Label: "config hops", Unit: "hops", Max: 100, get: func(s *Stack) *float64 { return &s.ConfigHops }},
	{Key: "sprint_hops", Label: "sprint hops", Unit: "hops", Max: 100, get: func(s *Stack) *float64 { return &s.SprintHops }},
	{Key: "billing_hops", Label: "billing hops", Unit: "hops", Max: 100, get: func(s *Stack) *float64 { return &s.BillingHops }},
}

// Validate checks every parameter against its range in Params; the
// 400 names the parameter (param + "." + its key) and its range.
func (s Stack) Validate(param string) *api.Error {
	for _, p := range Params {
		v := p.Get(s)
		if math.IsNaN(v) || v > p.Max || (v < p.Min && !(p.Off && v == 0)) {
			rng := fmt.Sprintf("between %g and %g %s", p.Min, p.Max, p.Unit)
			if p.Off {
				rng += " (or 0 for none)"
			}
			return api.BadRequest(param+"."+p.Key, api.CodeInvalidValue, "Stack parameter %s must be %s; got %g.", p.Key, rng, v)
		}
	}
	return nil
}

// stackFields decodes a Stack's fields without its UnmarshalJSON.
type stackFields Stack

// UnmarshalJSON takes a preset name or an object of parameters on top of a
// preset (lean when it names none), as the run API's config does.
func (s *Stack) UnmarshalJSON(b []byte) error {
	v := string(b)
	if len(b) > 0 && b[0] == '"' {
		if err := json.Unmarshal(b, &v); err != nil {
			return err
		}
	}
	got, err := Parse(v, Lean, "stack")
	if err != nil {
		return err
	}
	*s = got
	return nil
}

// String is the header value that selects exactly this stack.
func (s Stack) String() string {
	if p, ok := Preset(s.Preset); ok && p == s {
		return s.Preset
	}
	b, _ := json.Marshal(stackFields(s))
	return string(b)
}

// stageTime is a modelled stage's duration of secs seconds, capped at
// StageCeiling: no parameter or amount of work overflows it.
func stageTime(secs float64) time.Duration {
	if !(secs > 0) { // NaN too
		return 0
	}
	if secs >= StageCeiling.Seconds() {
		return StageCeiling
	}
	return time.Duration(secs * float64(time.Second))
}

// Hops is the time of n service hops.
func (s Stack) Hops(n float64) time.Duration { return stageTime(n * s.HopMS / 1e3) }

// Classify is the time to classify tokens: one hop to the classifier plus
// the tokens at the pre- or post-sprint rate. Nothing to classify, or no
// classifier modelled, costs nothing.
func (s Stack) Classify(tokens int, preSprint bool) time.Duration {
	rate := s.ClassifyTPS
	if preSprint {
		rate = s.ClassifyTPSBaseline
	}
	if tokens <= 0 || rate <= 0 {
		return 0
	}
	return stageTime(s.HopMS/1e3 + float64(tokens)/rate)
}

// StateLoad is the time to load stored conversation state of n bytes.
func (s Stack) StateLoad(bytes int) time.Duration {
	secs := s.StateLoadMS / 1e3
	if s.StateLoadMBps > 0 {
		secs += float64(bytes) / (s.StateLoadMBps * 1e6)
	}
	return stageTime(secs)
}

// Work is the work one stack stage did for one request, as its span
// records it. A stage's cost is a function of this work alone, so a
// recorded request can be costed again under another stack (re-costing).
type Work struct {
	Stage string `json:"stage"`
	// Tokens classified (stack_classify); Bytes of state loaded
	// (stack_state_load).
	Tokens int `json:"tokens,omitempty"`
	Bytes  int `json:"bytes,omitempty"`
	// PreSprint: the request ran on the engine before the sprint
	// (/baseline/v1), which classifies at the pre-sprint rate.
	PreSprint bool `json:"pre_sprint,omitempty"`
}

// WorkOf is the work a stack span of a trace records.
func WorkOf(tr *api.Trace, sp api.Span) Work {
	return Work{Stage: sp.Name, Tokens: int(sp.Tokens), Bytes: int(sp.Bytes), PreSprint: tr.Engine == api.EngineBaseline}
}

// StageCost is the time a stack stage takes for its work under s: the one
// place a stage's cost is computed, by the engine as it runs the stage and
// by re-costing a recorded run. A stage s does not run costs nothing.
func (s Stack) StageCost(w Work) time.Duration {
	if !s.Runs(w.Stage, w.PreSprint) {
		return 0
	}
	switch w.Stage {
	case api.StageStackClassify:
		return s.Classify(w.Tokens, w.PreSprint)
	case api.StageStackStateLoad:
		return s.StateLoad(w.Bytes)
	case api.StageStackConfigHop:
		return s.Hops(s.ConfigHops)
	case api.StageStackSprintHops:
		return s.Hops(s.SprintHops)
	case api.StageStackBilling:
		return s.Hops(s.BillingHops)
	}
	return 0
}

// Runs says whether s models the stage at all (on the pre- or post-sprint
// engine): a stage s does not run records no span, so its work is not known
// from a request raced under s.
func (s Stack) Runs(stage string, preSprint bool) bool {
	switch stage {
	case api.StageStackClassify:
		if preSprint {
			return s.ClassifyTPSBaseline > 0
		}
		return s.ClassifyTPS > 0
	case api.StageStackStateLoad:
		return s.StateLoadMS > 0 || s.StateLoadMBps > 0
	case api.StageStackConfigHop:
		return s.ConfigHops > 0
	case api.StageStackSprintHops:
		return s.SprintHops > 0
	case api.StageStackBilling:
		return s.BillingHops > 0
	}
	return false
}

// Stages are the stack's stages, in the order a request runs them.
var Stages = []string{api.StageStackConfigHop, api.StageStackSprintHops, api.StageStackStateLoad, api.StageStackClassify, api.StageStackBilling}
