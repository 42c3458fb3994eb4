package server_test

import (
	"bufio"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"agentloop/api"
	"agentloop/internal/wait"
	"agentloop/server/httpapi"
)

// scrape reads the engine's /metrics into series name (with labels as
// written) → value.
func (h *harness) scrape() map[string]float64 {
	h.t.Helper()
	rec := httptest.NewRecorder()
	httpapi.MetricsHandler(h.sh.Metrics).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusOK {
		h.t.Fatalf("/metrics: %d", rec.Code)
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(rec.Body)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			h.t.Fatalf("bad sample line %q", line)
		}
		out[withoutReplica(h.t, line[:i], h.sh.Replica)] = v
	}
	return out
}

// withoutReplica checks that a series carries this replica's label, and
// returns it without that label.
func withoutReplica(t testing.TB, series, replica string) string {
	t.Helper()
	label := `replica="` + replica + `"`
	for _, form := range []struct{ from, to string }{{"{" + label + "}", ""}, {label + ",", ""}, {"," + label, ""}} {
		if strings.Contains(series, form.from) {
			return strings.Replace(series, form.from, form.to, 1)
		}
	}
	t.Fatalf("series %s has no %s label", series, label)
	return series
}

func TestMetricsCoverRequestsLatenciesConnectionsCachesAndStages(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	// One streamed HTTP request, one rejected, and a WebSocket create with
	// a continuation that hits the connection cache and, being longer than
	// a prefix-cache block, the prefix cache.
	checkGrammar(t, h.sseEvents("/v1/responses", `{"model":"burst","input":"Tell me about queues.","stream":true,"store":false}`))
	if status, _ := h.post("/v1/responses", `{"model":"burst"`); status != 400 {
		t.Fatalf("broken body: %d", status)
	}
	c := h.rawWS("/v1/responses")
	send(t, c, `{"type":"response.create","model":"burst","store":false,"input":"First turn.","max_output_tokens":200,"ignore_eos":true}`)
	first := readResponse(t, c)
	send(t, c, `{"type":"response.create","model":"burst","store":false,"previous_response_id":"`+first[0].Response.ID+`","input":"Second turn."}`)
	if last := readResponse(t, c); last[len(last)-1].Type != api.EventCompleted {
		t.Fatalf("continuation ended with %s", last[len(last)-1].Type)
	}

	m := h.scrape()
	cases := []struct {
		series string
		min    float64
	}{
		{`agentloop_requests_total{engine="v1",status="completed",transport="http"}`, 1},
		{`agentloop_requests_total{engine="v1",status="completed",transport="websocket"}`, 2},
		{`agentloop_requests_total{engine="v1",status="400",transport="http"}`, 1},
		{`agentloop_time_to_first_token_seconds_count{transport="http"}`, 1},
		{`agentloop_time_to_first_token_seconds_count{transport="websocket"}`, 2},
		{`agentloop_inter_token_latency_seconds_count{transport="websocket"}`, 199},
		{`agentloop_inter_token_latency_seconds_bucket{transport="websocket",le="+Inf"}`, 199},
		{`agentloop_time_per_output_token_seconds_count{transport="websocket"}`, 1},
		{`agentloop_e2e_request_latency_seconds_count{transport="http"}`, 1},
		{`agentloop_e2e_request_latency_seconds_count{transport="websocket"}`, 2},
		{`agentloop_active_websocket_connections`, 1},
		{`agentloop_cache_lookups_total{cache="connection",result="hit"}`, 1},
		{`agentloop_cache_lookups_total{cache="token",result="miss"}`, 1},
		{`agentloop_cache_lookups_total{cache="prefix",result="hit"}`, 1},
		{`agentloop_prefix_cache_queries_total`, 1},
		{`agentloop_prefix_cache_hits_total`, 1},
		{`agentloop_generation_tokens_total`, 200},
		{`process_resident_memory_bytes`, 1},
		{`process_cpu_seconds_total`, 0},
		{`go_goroutines`, 1},
	}
	for _, stage := range []string{"parse", "validate", "resolve", "load", "render", "safety", "finalize"} {
		cases = append(cases, struct {
			series string
			min    float64
		}{`agentloop_stage_duration_seconds_count{kind="measured",stage="` + stage + `",transport="websocket"}`, 2})
	}
	for _, stage := range []string{"queue", "prefill", "generate"} {
		cases = append(cases, struct {
			series string
			min    float64
		}{`agentloop_stage_duration_seconds_count{kind="modelled",stage="` + stage + `",transport="http"}`, 1})
	}
	for _, c := range cases {
		v, ok := m[c.series]
		if !ok {
			t.Errorf("missing %s", c.series)
			continue
		}
		if v < c.min {
			t.Errorf("%s = %v, want at least %v", c.series, v, c.min)
		}
	}
	// Nothing is generating any more: the running gauges come back to zero
	// (a response's terminal event goes out just before its gauge drops).
	for _, tr := range []string{"http", "websocket"} {
		s := `agentloop_requests_running{transport="` + tr + `"}`
		wait.UntilErr(t, s+" back to 0", func() error {
			if v, ok := m[s]; !ok || v != 0 {
				m = h.scrape()
				return fmt.Errorf("%s = %v (present %v), want 0", s, v, ok)
			}
			return nil
		})
	}
}
