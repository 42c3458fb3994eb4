package rollout_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"agentloop/api"
	"agentloop/apistack"
	"agentloop/app/apptest"
	"agentloop/rollout"
)

func TestNormalizeStackAndDecodeTPS(t *testing.T) {
	c := rollout.Config{}
	if err := rollout.Normalize(&c); err != nil || c.Stack != apistack.Lean || c.DecodeTPS != 0 || c.Model() != "spark" {
		t.Fatalf("defaults: stack %+v decode %g model %s (%v)", c.Stack, c.DecodeTPS, c.Model(), err)
	}
	for _, body := range []string{`{"stack":"hosted"}`, `{"stack":{"preset":"hosted","hop_ms":3}}`, `{"decode_tps":250}`, `{"profile":"spark","decode_tps":100000}`} {
		var c rollout.Config
		if err := json.Unmarshal([]byte(body), &c); err != nil {
			t.Fatalf("%s: %v", body, err)
		}
		if err := rollout.Normalize(&c); err != nil {
			t.Errorf("%s refused: %v", body, err)
		}
	}
	var c2 rollout.Config
	if err := json.Unmarshal([]byte(`{"stack":{"preset":"hosted","hop_ms":3},"decode_tps":250}`), &c2); err != nil {
		t.Fatal(err)
	}
	if c2.Stack.Preset != "custom" || c2.Stack.HopMS != 3 || c2.Stack.ClassifyTPS != apistack.Hosted.ClassifyTPS {
		t.Errorf("stack object: %+v", c2.Stack)
	}
	if err := rollout.Normalize(&c2); err != nil || c2.Model() != "custom-250" {
		t.Errorf("decode_tps 250 sends model %q (%v)", c2.Model(), err)
	}
	for _, bad := range []rollout.Config{
		{DecodeTPS: -1}, {DecodeTPS: 0.5}, {DecodeTPS: 100001}, {DecodeTPS: 250.5},
		{Profile: "burst", DecodeTPS: 250}, {Profile: "instant", DecodeTPS: 250},
		{Stack: apistack.Stack{Preset: "custom", HopMS: -1}},
	} {
		if err := rollout.Normalize(&bad); err == nil || err.Status != 400 {
			t.Errorf("%+v accepted", bad)
		} else if p := derefParam(err); p != "decode_tps" && p != "stack.hop_ms" {
			t.Errorf("%+v refused naming %q", bad, derefParam(err))
		}
	}
	for _, body := range []string{`{"stack":"turbo"}`, `{"stack":{"preset":"nope"}}`, `{"stack":{"hop_ms":-3}}`, `{"stack":{"hops":3}}`} {
		var c rollout.Config
		if err := json.Unmarshal([]byte(body), &c); err == nil {
			t.Errorf("%s decoded", body)
		}
	}
}

func derefParam(e *api.Error) string { return e.Param }

// TestRaceWithTheHostedStack: every lane sends the race's stack (the HTTP
// lane on each request, the WebSocket on its upgrade), so every turn carries
// a modelled api_stack stage, and the summary says where the time went.
func TestRaceWithTheHostedStack(t *testing.T) {
	t.Parallel() // a whole race on its own engine: overlaps the other slow races of this package
	a := apptest.Start(t)
	runner := rollout.NewRunner(a.URL(), a.DB, nil)
	cfg := rollout.Config{Workload: shortWorkload(t), Profile: "instant", Lanes: []string{rollout.LaneHTTPOptimized, rollout.LaneWS},
		Stack: apistack.Hosted, Sequential: true}
	id, sum, err := runner.Run(context.Background(), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range sum.Lanes {
		if l.Status != rollout.StatusPassed {
			t.Fatalf("lane %s %s: %s", l.Lane, l.Status, l.Error)
		}
		if l.StageNS[rollout.StageAPIStack] <= 0 || l.StackPerTurnNS <= 0 {
			t.Errorf("lane %s: api_stack %d ns, %d ns per turn", l.Lane, l.StageNS[rollout.StageAPIStack], l.StackPerTurnNS)
		}
		if l.APICPUNS <= 0 || l.OverheadPerTurnNS <= 0 || l.RolloutsPerCore <= 0 {
			t.Errorf("lane %s: api cpu %d ns, overhead per turn %d ns, rollouts per core %g", l.Lane, l.APICPUNS, l.OverheadPerTurnNS, l.RolloutsPerCore)
		}
		if want := float64(l.TotalNS) / float64(l.APICPUNS); l.RolloutsPerCore != want {
			t.Errorf("lane %s: rollouts per core %g, want total/api cpu = %g", l.Lane, l.RolloutsPerCore, want)
		}
		if len(l.TopStages) != 2 || l.TopStages[0].NS < l.TopStages[1].NS || l.TopStages[0].Share <= 0 {
			t.Errorf("lane %s: top stages %+v", l.Lane, l.TopStages)
		}
		if !strings.Contains(sum.TimeWent, rollout.LaneLabel(l.Lane)+": ") || strings.Contains(sum.TimeWent, l.Lane+":") {
			t.Errorf("time went %q does not name lane %s by its label", sum.TimeWent, l.Lane)
		}
	}
	w := sum.WhatItWouldTake
	if w == nil {
		t.Fatal("no what-it-would-take")
	}
	var opt, ws rollout.LaneSummary
	for _, l := range sum.Lanes {
		switch l.Lane {
		case rollout.LaneHTTPOptimized:
			opt = l
		case rollout.LaneWS:
			ws = l
		}
	}
	if w.Turns != opt.Turns || w.StackPerTurnNS != opt.StackPerTurnNS || w.OverheadPerTurnNS != opt.OverheadPerTurnNS {
		t.Errorf("what it would take %+v against http-optimized %+v", w, opt)
	}
	// x solves (T_opt + n·x − T_ws) / (T_opt + n·x) = 0.4.
	tt := float64(opt.TotalNS) + float64(w.Turns)*float64(w.ExtraPerTurnNS)
	if got := (tt - float64(ws.TotalNS)) / tt; got < 0.399 || got > 0.401 {
		t.Errorf("the extra %d ns per turn makes ws save %.4f, not 0.4", w.ExtraPerTurnNS, got)
	}
	rec, err := rollout.LoadRun(context.Background(), a.DB, id)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Config.Stack != apistack.Hosted {
		t.Errorf("stored stack %+v", rec.Config.Stack)
	}
	stacked := map[string]int{}
	for _, turn := range rec.Turns {
		for _, st := range turn.Stages {
			if st.Name == rollout.StageAPIStack && st.DurationNS > 0 {
				if st.Kind != "modelled" {
					t.Errorf("api_stack is %s", st.Kind)
				}
				stacked[turn.Lane]++
			}
		}
	}
	for _, l := range cfg.Lanes {
		if stacked[l] == 0 {
			t.Errorf("lane %s: no turn carries an api_stack stage", l)
		}
	}
}
