package apistack

import (
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"agentloop/api"
)

func TestParseStack(t *testing.T) {
	custom := Hosted
	custom.Preset, custom.HopMS = "custom", 5
	for _, tc := range []struct {
		in      string
		def     Stack
		want    Stack
		wantErr bool
	}{
		{"", Lean, Lean, false},
		{"", Hosted, Hosted, false},
		{"hosted", Lean, Hosted, false},
		{" lean ", Hosted, Lean, false},
		{`{"preset":"hosted","hop_ms":5}`, Lean, custom, false},
		{`{"hop_ms":5}`, Hosted, custom, false},
		{`{"preset":"hosted"}`, Lean, Hosted, false},
		{custom.String(), Lean, custom, false},
		{"heavy", Lean, Stack{}, true},
		{`{"preset":"heavy"}`, Lean, Stack{}, true},
		{`{"hop_ms":-1}`, Lean, Stack{}, true},
		{`{"hop_ms":1e9}`, Lean, Stack{}, true},
		{`{"hops":1}`, Lean, Stack{}, true},
		{`{"hop_ms":"1"}`, Lean, Stack{}, true},
		{`{`, Lean, Stack{}, true},
	} {
		got, err := Parse(tc.in, tc.def, api.HeaderStack)
		if (err != nil) != tc.wantErr {
			t.Errorf("Parse(%q): err %v, want error %v", tc.in, err, tc.wantErr)
			continue
		}
		if err != nil {
			if err.Status != 400 || !strings.HasPrefix(err.Param, api.HeaderStack) {
				t.Errorf("Parse(%q): error %+v, want a 400 naming %s", tc.in, err, api.HeaderStack)
			}
			continue
		}
		if got != tc.want {
			t.Errorf("Parse(%q) = %+v, want %+v", tc.in, got, tc.want)
		}
	}
}

func TestStackFromRequestReadsHeaderThenQuery(t *testing.T) {
	r := httptest.NewRequest("GET", "/v1/responses?agentloop_stack=hosted", nil)
	if s, err := FromRequest(r, Lean); err != nil || s != Hosted {
		t.Fatalf("query alias: %+v %v", s, err)
	}
	r.Header.Set(api.HeaderStack, "lean")
	if s, err := FromRequest(r, Hosted); err != nil || s != Lean {
		t.Fatalf("header wins over the query: %+v %v", s, err)
	}
	if Lean.Modelled() || !Hosted.Modelled() {
		t.Fatal("lean models nothing; hosted models something")
	}
	if Hosted.String() != "hosted" {
		t.Fatalf("a preset's header value is its name, got %q", Hosted.String())
	}
}

func TestStackUnmarshalJSON(t *testing.T) {
	var cfg struct {
		Stack Stack `json:"stack"`
	}
	for in, want := range map[string]Stack{
		`{"stack":"hosted"}`:            Hosted,
		`{"stack":{"hop_ms":2.65}}`:     {Preset: "custom", HopMS: 2.65},
		`{"stack":{"preset":"hosted"}}`: Hosted,
		`{}`:                            {},
	} {
		cfg.Stack = Stack{}
		if err := json.Unmarshal([]byte(in), &cfg); err != nil || cfg.Stack != want {
			t.Errorf("%s: %+v %v, want %+v", in, cfg.Stack, err, want)
		}
	}
	for _, bad := range []string{`{"stack":"heavy"}`, `{"stack":{"hop_ms":-3}}`, `{"stack":7}`} {
		if err := json.Unmarshal([]byte(bad), &cfg); err == nil {
			t.Errorf("%s: accepted", bad)
		}
	}
}

func TestStackCostsFollowTheWork(t *testing.T) {
	s := Hosted
	if s.Classify(0, false) != 0 || Lean.Classify(50_000, true) != 0 {
		t.Fatal("classifying nothing, or with no classifier, costs nothing")
	}
	small, big := s.Classify(1_000, false), s.Classify(50_000, false)
	if !(small > s.Hops(1) && big > small) {
		t.Fatalf("classify cost must grow with tokens: %v %v", small, big)
	}
	if s.Classify(50_000, true) <= big {
		t.Fatal("the pre-sprint classifier is slower")
	}
	if s.StateLoad(10<<20) <= s.StateLoad(1<<10) {
		t.Fatal("state load cost must grow with bytes")
	}
	if s.Hops(2) != 2*s.Hops(1) {
		t.Fatal("hops add up")
	}
}

// Each parameter's range is enforced with a 400 naming it: below Min (a
// rate that would make one request wait hours), above Max, and values that
// overflowed the duration before (1e-300).
func TestStackRangesRefuseWithTheParameterNamed(t *testing.T) {
	for _, tc := range []struct {
		in, param string
	}{
		{`{"classify_tps":1e-300}`, "classify_tps"},
		{`{"classify_tps":0.001}`, "classify_tps"},
		{`{"classify_tps_baseline":19999}`, "classify_tps_baseline"},
		{`{"classify_tps":2e9}`, "classify_tps"},
		{`{"state_load_mbps":0.5}`, "state_load_mbps"},
		{`{"hop_ms":10001}`, "hop_ms"},
		{`{"hop_ms":-1}`, "hop_ms"},
		{`{"billing_hops":101}`, "billing_hops"},
		{`{"config_hops":1e308}`, "config_hops"},
	} {
		_, err := Parse(tc.in, Hosted, api.HeaderStack)
		if err == nil {
			t.Errorf("%s: accepted", tc.in)
			continue
		}
		if err.Status != 400 || err.Param != api.HeaderStack+"."+tc.param || !strings.Contains(err.Message, tc.param) {
			t.Errorf("%s: %+v, want a 400 naming %s", tc.in, err, tc.param)
		}
	}
	// 0 turns a rate's work off; Min and Max themselves are in range.
	for _, p := range Params {
		for _, v := range []float64{p.FormMin(), p.Min, p.Max} {
			in := fmt.Sprintf(`{"%s":%g}`, p.Key, v)
			if _, err := Parse(in, Hosted, api.HeaderStack); err != nil {
				t.Errorf("%s: %v", in, err)
			}
		}
	}
	var cfg struct {
		Stack Stack `json:"stack"`
	}
	err := json.Unmarshal([]byte(`{"stack":{"classify_tps":0.001}}`), &cfg)
	if ae, ok := err.(*api.Error); !ok || ae.Param != "stack.classify_tps" {
		t.Fatalf("the run API's stack: %v, want a 400 naming stack.classify_tps", err)
	}
}

// Every parameter at the worst end of its range, with the largest request
// the engine accepts, keeps every stage under StageCeiling, and no
// parameter, validated or not, makes a duration negative.
func TestStackRangesKeepStagesUnderTheCeiling(t *testing.T) {
	worst := Stack{}
	for _, p := range Params {
		v := p.Max
		if p.Off { // a rate is worst at its slowest
			v = p.Min
		}
		*p.get(&worst) = v
	}
	if err := worst.Validate("stack"); err != nil {
		t.Fatal(err)
	}
	stages := map[string]time.Duration{
		api.StageStackClassify:   max(worst.Classify(MaxTokens, false), worst.Classify(MaxTokens, true)),
		api.StageStackStateLoad:  worst.StateLoad(MaxBytes),
		api.StageStackConfigHop:  worst.Hops(worst.ConfigHops),
		api.StageStackSprintHops: worst.Hops(worst.SprintHops),
		api.StageStackBilling:    worst.Hops(worst.BillingHops),
	}
	for name, d := range stages {
		if d <= 0 || d >= StageCeiling {
			t.Errorf("%s at the worst of the ranges: %v, want under %v", name, d, StageCeiling)
		}
	}
	wild := Stack{HopMS: 1e300, ClassifyTPS: 1e-300, ClassifyTPSBaseline: 1e-300, StateLoadMS: 1e300, StateLoadMBps: 1e-300}
	for _, d := range []time.Duration{wild.Classify(MaxTokens, false), wild.Classify(1, true),
		wild.StateLoad(MaxBytes), wild.Hops(1e300)} {
		if d < 0 || d > StageCeiling {
			t.Errorf("an unvalidated stack: %v, want between 0 and %v", d, StageCeiling)
		}
	}
}

// TestStageCostIsTheStagesCost: StageCost gives each stage its cost
// function's value for the recorded work, and nothing for a stage the
// stack does not model.
func TestStageCostIsTheStagesCost(t *testing.T) {
	s := Hosted
	for _, c := range []struct {
		w    Work
		want time.Duration
	}{
		{Work{Stage: api.StageStackClassify, Tokens: 30_000}, s.Classify(30_000, false)},
		{Work{Stage: api.StageStackClassify, Tokens: 30_000, PreSprint: true}, s.Classify(30_000, true)},
		{Work{Stage: api.StageStackStateLoad, Bytes: 1 << 20}, s.StateLoad(1 << 20)},
		{Work{Stage: api.StageStackConfigHop}, s.Hops(s.ConfigHops)},
		{Work{Stage: api.StageStackSprintHops, PreSprint: true}, s.Hops(s.SprintHops)},
		{Work{Stage: api.StageStackBilling}, s.Hops(s.BillingHops)},
	} {
		if got := s.StageCost(c.w); got != c.want || got <= 0 {
			t.Errorf("%+v costs %v, want %v", c.w, got, c.want)
		}
		if got := Lean.StageCost(c.w); got != 0 || Lean.Runs(c.w.Stage, c.w.PreSprint) {
			t.Errorf("lean costs %+v %v", c.w, got)
		}
	}
	noBilling := s
	noBilling.BillingHops = 0
	if noBilling.Runs(api.StageStackBilling, false) || !noBilling.Runs(api.StageStackClassify, true) {
		t.Error("Runs follows the parameters")
	}
}
