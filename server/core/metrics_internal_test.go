package core

import (
	"testing"
	"time"

	"agentloop/api"
	"agentloop/inference"
)

// The stage histogram is shared by every client: no span, however it was
// recorded, takes its sum below zero (a negative modelled duration once
// did, for everyone).
func TestStageMetricsNeverCountBelowZero(t *testing.T) {
	m := NewMetrics("")
	tr := &Trace{Trace: api.Trace{Transport: "http", Engine: "v1",
		Spans: []api.Span{{Name: api.StageStackClassify, Kind: api.Modelled, DurationNS: -2562047 * time.Hour.Nanoseconds()}}}, start: time.Now()}
	m.observe(tr, inference.GenerationTimings{}, 0, "completed")
	families, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, f := range families {
		if f.GetName() != "agentloop_stage_duration_seconds" {
			continue
		}
		for _, mt := range f.GetMetric() {
			for _, l := range mt.GetLabel() {
				if l.GetName() == "stage" && l.GetValue() == api.StageStackClassify {
					found = true
					if v := mt.GetHistogram().GetSampleSum(); v < 0 {
						t.Fatalf("the shared sum went below zero: %g", v)
					}
				}
			}
		}
	}
	if !found {
		t.Fatal("no stack_classify stage sum among the metrics")
	}
}
