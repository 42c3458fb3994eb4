package api

import (
	"encoding/json"
	"net/http/httptest"
	"testing"
	"time"
)

func TestParseStack(t *testing.T) {
	custom := StackHosted
	custom.Preset, custom.HopMS = "custom", 5
	for _, tc := range []struct {
		in      string
		def     Stack
		want    Stack
		wantErr bool
	}{
		{"", StackLean, StackLean, false},
		{"", StackHosted, StackHosted, false},
		{"hosted", StackLean, StackHosted, false},
		{" lean ", StackHosted, StackLean, false},
		{`{"preset":"hosted","hop_ms":5}`, StackLean, custom, false},
		{`{"hop_ms":5}`, StackHosted, custom, false},
		{`{"preset":"hosted"}`, StackLean, StackHosted, false},
		{custom.String(), StackLean, custom, false},
		{"heavy", StackLean, Stack{}, true},
		{`{"preset":"heavy"}`, StackLean, Stack{}, true},
		{`{"hop_ms":-1}`, StackLean, Stack{}, true},
		{`{"hop_ms":1e9}`, StackLean, Stack{}, true},
		{`{"hops":1}`, StackLean, Stack{}, true},
		{`{"hop_ms":"1"}`, StackLean, Stack{}, true},
		{`{`, StackLean, Stack{}, true},
	} {
		got, err := ParseStack(tc.in, tc.def, HeaderStack)
		if (err != nil) != tc.wantErr {
			t.Errorf("ParseStack(%q): err %v, want error %v", tc.in, err, tc.wantErr)
			continue
		}
		if err != nil {
			if err.Status != 400 || err.Param != HeaderStack {
				t.Errorf("ParseStack(%q): error %+v, want a 400 naming %s", tc.in, err, HeaderStack)
			}
			continue
		}
		if got != tc.want {
			t.Errorf("ParseStack(%q) = %+v, want %+v", tc.in, got, tc.want)
		}
	}
}

func TestStackFromRequestReadsHeaderThenQuery(t *testing.T) {
	r := httptest.NewRequest("GET", "/v1/responses?agentloop_stack=hosted", nil)
	if s, err := StackFromRequest(r, StackLean); err != nil || s != StackHosted {
		t.Fatalf("query alias: %+v %v", s, err)
	}
	r.Header.Set(HeaderStack, "lean")
	if s, err := StackFromRequest(r, StackHosted); err != nil || s != StackLean {
		t.Fatalf("header wins over the query: %+v %v", s, err)
	}
	if StackLean.Modelled() || !StackHosted.Modelled() {
		t.Fatal("lean models nothing; hosted models something")
	}
	if StackHosted.String() != "hosted" {
		t.Fatalf("a preset's header value is its name, got %q", StackHosted.String())
	}
}

func TestStackUnmarshalJSON(t *testing.T) {
	var cfg struct {
		Stack Stack `json:"stack"`
	}
	for in, want := range map[string]Stack{
		`{"stack":"hosted"}`:            StackHosted,
		`{"stack":{"hop_ms":2.65}}`:     {Preset: "custom", HopMS: 2.65},
		`{"stack":{"preset":"hosted"}}`: StackHosted,
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
	s := StackHosted
	if s.Classify(0, false) != 0 || StackLean.Classify(50_000, true) != 0 {
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

// TestStageCostIsTheStagesCost: StageCost gives each stage its cost
// function's value for the recorded work, and nothing for a stage the
// stack does not model.
func TestStageCostIsTheStagesCost(t *testing.T) {
	s := StackHosted
	for _, c := range []struct {
		w    StackWork
		want time.Duration
	}{
		{StackWork{Stage: StageStackClassify, Tokens: 30_000}, s.Classify(30_000, false)},
		{StackWork{Stage: StageStackClassify, Tokens: 30_000, PreSprint: true}, s.Classify(30_000, true)},
		{StackWork{Stage: StageStackStateLoad, Bytes: 1 << 20}, s.StateLoad(1 << 20)},
		{StackWork{Stage: StageStackConfigHop}, s.Hops(s.ConfigHops)},
		{StackWork{Stage: StageStackSprintHops, PreSprint: true}, s.Hops(s.SprintHops)},
		{StackWork{Stage: StageStackBilling}, s.Hops(s.BillingHops)},
	} {
		if got := s.StageCost(c.w); got != c.want || got <= 0 {
			t.Errorf("%+v costs %v, want %v", c.w, got, c.want)
		}
		if got := StackLean.StageCost(c.w); got != 0 || StackLean.Runs(c.w.Stage, c.w.PreSprint) {
			t.Errorf("lean costs %+v %v", c.w, got)
		}
	}
	noBilling := s
	noBilling.BillingHops = 0
	if noBilling.Runs(StageStackBilling, false) || !noBilling.Runs(StageStackClassify, true) {
		t.Error("Runs follows the parameters")
	}
}
