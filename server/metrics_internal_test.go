package server

import (
	"io"
	"net/http/httptest"
	"strconv"
	"strings"
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
	tr := &trace{Trace: api.Trace{Transport: "http", Engine: "v1",
		Spans: []api.Span{{Name: api.StageStackClassify, Kind: api.Modelled, DurationNS: -2562047 * time.Hour.Nanoseconds()}}}, start: time.Now()}
	m.observe(tr, inference.GenerationTimings{}, 0, "completed")
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	b, _ := io.ReadAll(rec.Body)
	found := false
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "agentloop_stage_duration_seconds_sum{") && strings.Contains(line, `stage="stack_classify"`) {
			found = true
			v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
			if err != nil || v < 0 {
				t.Fatalf("%s: the shared sum went below zero", line)
			}
		}
	}
	if !found {
		t.Fatal("no stack_classify stage sum in /metrics")
	}
}
