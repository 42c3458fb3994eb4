package core

import (
	"context"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"agentloop/api"
)

func TestMeasuredStagesKeepTheContractOrder(t *testing.T) {
	var pre []string
	for _, s := range preInference {
		if s.Kind == api.Measured {
			pre = append(pre, s.Name)
		}
	}
	want := []string{api.StageParse, api.StageResolve, api.StageLoad, api.StageValidate, api.StageRender, api.StageContextWindow, api.StageSafety}
	if !slices.Equal(pre, want) {
		t.Errorf("pre-inference stages %v, want %v", pre, want)
	}
	if len(postInference) == 0 || postInference[0].Name != api.StageFinalize {
		t.Errorf("post-inference stages %v, want finalize first", postInference)
	}
}

func TestRunStagesRecordsEachSpanAndStopsAtTheFailingOne(t *testing.T) {
	const cost = 5 * time.Millisecond
	ran := 0
	stages := []Stage{
		{"a", api.Measured, func(*Engine, context.Context, *Flight) (StageResult, *api.Error) {
			ran++
			r := StageResult{items: 1, tokens: 2, bytes: 3, note: "x"}
			r.addNote("y")
			return r, nil
		}},
		{"stack_b", api.Modelled, func(*Engine, context.Context, *Flight) (StageResult, *api.Error) {
			ran++
			return StageResult{tokens: 7, cost: cost}, nil
		}},
		{"c", api.Measured, func(*Engine, context.Context, *Flight) (StageResult, *api.Error) {
			ran++
			return StageResult{bytes: 9}, api.BadRequest("", "", "no")
		}},
		{"d", api.Measured, func(*Engine, context.Context, *Flight) (StageResult, *api.Error) {
			ran++
			return StageResult{}, nil
		}},
	}
	start := time.Now()
	fl := &Flight{Trace: traceEngine.newTrace("http", start)}
	// Enough of an engine to wait a modelled stage: its stop and metrics.
	e := New(Config{Name: "v1"}, &Shared{Metrics: NewMetrics("")})
	if err := e.runStages(context.Background(), fl, stages, start); err == nil {
		t.Fatal("no error from the failing stage")
	}
	if ran != 3 {
		t.Fatalf("%d stages ran, want 3", ran)
	}
	sp := fl.Trace.Spans
	if len(sp) != 3 {
		t.Fatalf("spans %+v", sp)
	}
	if a := sp[0]; a.Name != "a" || a.Kind != api.Measured || a.StartNS != 0 || a.Items != 1 || a.Tokens != 2 || a.Bytes != 3 || a.Note != "x; y" {
		t.Errorf("span a %+v", a)
	}
	if b := sp[1]; b.Name != "stack_b" || b.Kind != api.Modelled || b.DurationNS != cost.Nanoseconds() || b.Tokens != 7 {
		t.Errorf("span stack_b %+v", b)
	}
	if c := sp[2]; c.Name != "c" || c.Bytes != 9 || c.StartNS < sp[0].StartNS+sp[0].DurationNS {
		t.Errorf("span c %+v after %+v", c, sp[0])
	}
}

func TestParseFailureRecordsTheParseSpan(t *testing.T) {
	for _, tc := range []struct {
		name  string
		body  string
		admit func(*api.CreateRequest) *api.Error
		want  *api.Error
	}{
		{"not json", `{"model":`, nil, nil},
		{"response.processed", `{"type":"response.processed","model":"spark","input":"hi"}`, func(req *api.CreateRequest) *api.Error {
			if req.Type == api.ClientResponseProcessed {
				return ErrProcessed // as the WebSocket message rules answer it
			}
			return nil
		}, ErrProcessed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			fl := &Flight{Trace: traceEngine.newTrace("websocket", start), body: []byte(tc.body), Via: Via{Admit: tc.admit}}
			err := traceEngine.Prepare(context.Background(), fl)
			if err == nil || (tc.want != nil && err != tc.want) {
				t.Fatalf("error %v, want %v", err, tc.want)
			}
			sp := fl.Trace.Spans
			if len(sp) != 1 || sp[0].Name != api.StageParse || sp[0].Kind != api.Measured || sp[0].Bytes != int64(len(tc.body)) {
				t.Fatalf("spans %+v", sp)
			}
		})
	}
}

// traceEngine is just enough of an engine to begin traces.
var traceEngine = &Engine{cfg: Config{Name: "v1"}, sh: &Shared{}, pre: preInference}

// A modelled stage cut short records what it really waited, never its
// full cost: its client gone (499), or the engine stopping (503 with
// Retry-After, the answer of a request stopped before its response began).
func TestAModelledStageCutShortRecordsItsRealWait(t *testing.T) {
	const cost = time.Hour
	stages := []Stage{{api.StageStackClassify, api.Modelled, func(*Engine, context.Context, *Flight) (StageResult, *api.Error) {
		return StageResult{tokens: 7, cost: cost}, nil
	}}}
	gone, cancel := context.WithCancel(context.Background())
	cancel()
	stopped := New(Config{Name: "v1"}, &Shared{Metrics: NewMetrics("")})
	stopped.StopGenerating()
	for _, tc := range []struct {
		name   string
		e      *Engine
		ctx    context.Context
		status int
		retry  bool
	}{
		{"client gone", New(Config{Name: "v1"}, &Shared{Metrics: NewMetrics("")}), gone, 499, false},
		{"engine stopping", stopped, context.Background(), 503, true},
	} {
		start := time.Now()
		fl := &Flight{Trace: traceEngine.newTrace("http", start)}
		err := tc.e.runStages(tc.ctx, fl, stages, start)
		if err == nil || err.Status != tc.status || (err.Headers["Retry-After"] != "") != tc.retry {
			t.Errorf("%s: %+v, want %d (Retry-After %v)", tc.name, err, tc.status, tc.retry)
		}
		if sp := fl.Trace.Spans; len(sp) != 1 || sp[0].DurationNS >= cost.Nanoseconds() || sp[0].DurationNS < 0 {
			t.Errorf("%s: spans %+v, want the real wait, not %v", tc.name, sp, cost)
		}
	}
}

// The trace's first allocation holds every span a request records: one
// per recorded stage, and queue, prefill and generate.
func TestSpansPerRequestCountsTheStages(t *testing.T) {
	n := 3
	for _, s := range append(append([]Stage{}, preInference...), postInference...) {
		if s.Kind != Unrecorded {
			n++
		}
	}
	if n != spansPerRequest {
		t.Fatalf("the stage tables record %d spans a request; spansPerRequest is %d", n, spansPerRequest)
	}
}

// A modelled stage waits its whole cost and records exactly it. The
// bubble's clock is the stage's: an hour's cost passes at once, and the
// span and the clock agree to the nanosecond.
func TestAModelledStageWaitsItsCost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const cost = time.Hour
		stages := []Stage{{api.StageStackBilling, api.Modelled, func(*Engine, context.Context, *Flight) (StageResult, *api.Error) {
			return StageResult{cost: cost}, nil
		}}}
		e := New(Config{Name: "v1"}, &Shared{Metrics: NewMetrics("")})
		start := time.Now()
		fl := &Flight{Trace: e.newTrace("http", start)}
		if err := e.runStages(context.Background(), fl, stages, start); err != nil {
			t.Fatal(err)
		}
		if sp := fl.Trace.Spans; len(sp) != 1 || sp[0].DurationNS != cost.Nanoseconds() || sp[0].StartNS != 0 {
			t.Fatalf("spans %+v, want one of %v from the start", sp, cost)
		}
		if waited := time.Since(start); waited != cost {
			t.Fatalf("waited %v, want %v", waited, cost)
		}
	})
}
